//! Durable trees, in process and on real databases (SQLite and PostgreSQL):
//! a tree cut off mid-run resumes on a second runtime over the same store
//! without running a finished step again; its deadline keeps counting
//! across the cut; a node that needs a person's approval pauses its tree,
//! which waits in the store and resumes when the person answers; a
//! cancelled tree stays cancelled.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use switchboard::Principal;
use switchboard::protocol::{ErrorCode, RequestId, Status};
use switchboard::store::{ApprovalState, StepState, Store};

use crate::db::{self, Db};
use crate::support::{clean, user};
use crate::team::{Runs, cut_off_mid_tree, runtime, to_boss};

const CONFIG: &str = r#"
[limits]
deadline_ms = 20000

[[agents]]
slug = "boss"
name = "Boss"
may_delegate_to = ["first", "second", "mailer"]

[[agents]]
slug = "first"
name = "First"

[[agents]]
slug = "second"
name = "Second"

[[agents]]
slug = "mailer"
name = "Mailer"
requires_approval = ["send_email"]
"#;

/// Waits (bounded) until the top step `root` has ended.
async fn ended(store: &Arc<dyn Store>, root: RequestId) -> switchboard::store::TreeStep {
    for _ in 0..400 {
        if let Some(step) = store.step(root).await.unwrap().filter(|s| s.state.is_terminal()) {
            return step;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("tree {root} did not end");
}

fn record_of<'a>(
    tree: &'a [switchboard::store::DelegationRecord],
    target: &str,
) -> &'a switchboard::store::DelegationRecord {
    tree.iter().find(|r| r.target == target).unwrap_or_else(|| panic!("no {target} in {tree:?}"))
}

#[tokio::test]
async fn a_tree_cut_off_mid_run_resumes_on_restart_without_running_a_finished_step_again() {
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let root = cut_off_mid_tree(&db, CONFIG, &runs, "Do the two steps").await;
        assert_eq!((runs.first.load(Ordering::SeqCst), runs.second.load(Ordering::SeqCst)), (1, 0), "{}", db.name);
        let store = db.dyn_store();
        let steps = store.tree_steps(root).await.unwrap();
        let state = |target: &str| steps.iter().find(|s| s.target == target).map(|s| s.state);
        assert_eq!(state("boss"), Some(StepState::Running), "{}: {steps:?}", db.name);
        assert_eq!(state("first"), Some(StepState::Done), "{}", db.name);
        assert_eq!(state("second"), Some(StepState::Running), "{}", db.name);
        let first = steps.iter().find(|s| s.target == "first").unwrap();
        assert_eq!(first.attempts, 1, "{}", db.name);
        let top = steps.iter().find(|s| s.target == "boss").unwrap();
        assert!(first.budget > 0 && first.budget < top.budget, "{}: {} of {}", db.name, first.budget, top.budget);
        assert!(top.deadline_at > top.created_at, "{}", db.name);
        assert!(top.request.contains("Do the two steps") && first.request.is_empty(), "{}", db.name);

        // the restart (a moment later): another runtime on the same database
        tokio::time::sleep(Duration::from_millis(20)).await;
        let rt = runtime(&db, CONFIG, &runs, false);
        let found = rt.resume_open_trees().await.unwrap();
        assert_eq!(found.resumed, vec![root], "{}", db.name);
        let top = ended(&store, root).await;
        assert_eq!(top.state, StepState::Done, "{}: {top:?}", db.name);
        let answer: serde_json::Value = serde_json::from_str(top.response.as_deref().unwrap()).unwrap();
        assert_eq!(answer["result"], "one + two", "{}", db.name);
        // first finished before the cut and was answered from the journal; second ran once, here
        assert_eq!((runs.first.load(Ordering::SeqCst), runs.second.load(Ordering::SeqCst)), (1, 1), "{}", db.name);
        // the resumed tree kept its clock reading: "today" is the day it started
        assert_eq!(*runs.second_now.lock().unwrap(), Some(top.created_at), "{}", db.name);
        let tree = store.delegation_tree(root).await.unwrap();
        assert_eq!(record_of(&tree, "boss").status, "success", "{}", db.name);
        assert_eq!(record_of(&tree, "second").status, "success", "{}", db.name);
        // one finished step, one record of its success: nothing ran twice
        let audit = store.audit_log().await.unwrap();
        let first_id = record_of(&tree, "first").request_id;
        let successes = audit.iter().filter(|a| a.record.request_id == first_id && a.record.outcome == "success");
        assert_eq!(successes.count(), 1, "{}", db.name);
        assert!(store.verify_audit().await.unwrap().valid, "{}", db.name);
        // resumed once: a second restart finds nothing open
        let again = runtime(&db, CONFIG, &runs, false).resume_open_trees().await.unwrap();
        assert!(again.resumed.is_empty() && again.expired.is_empty(), "{}: {again:?}", db.name);
        assert_eq!(store.step(root).await.unwrap().unwrap().resumes, 1, "{}: the resume is on file", db.name);
    }
}

#[tokio::test]
async fn a_deadline_keeps_counting_across_a_restart() {
    let config = CONFIG.replace("deadline_ms = 20000", "deadline_ms = 600");
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let root = cut_off_mid_tree(&db, &config, &runs, "Do the two steps").await;
        // down for longer than the tree had left
        tokio::time::sleep(Duration::from_millis(700)).await;
        let rt = runtime(&db, &config, &runs, false);
        let found = rt.resume_open_trees().await.unwrap();
        assert_eq!((found.resumed.len(), found.expired.clone()), (0, vec![root]), "{}", db.name);
        let taken = |what| crate::replicas::taken_over(&rt, what);
        assert_eq!((taken("tree"), taken("expired_tree")), (0, 1), "{}", db.name);
        let store = db.dyn_store();
        let top = store.step(root).await.unwrap().unwrap();
        assert_eq!(top.state, StepState::Failed, "{}", db.name);
        let tree = store.delegation_tree(root).await.unwrap();
        assert_eq!(record_of(&tree, "boss").error_code.as_deref(), Some("DEADLINE_EXCEEDED"), "{}", db.name);
        // the clock did not restart: nothing ran again
        assert_eq!((runs.first.load(Ordering::SeqCst), runs.second.load(Ordering::SeqCst)), (1, 0), "{}", db.name);
        assert!(store.verify_audit().await.unwrap().valid, "{}", db.name);
    }
}

#[tokio::test]
async fn an_approval_deep_in_a_tree_pauses_it_across_a_restart_and_resumes_it_once() {
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let alice = Principal::User(user("alice"));
        let root = RequestId::new();
        let r =
            runtime(&db, CONFIG, &runs, false).ask(&user("alice"), "Do it and mail it", to_boss(root)).await.unwrap();
        assert_eq!(r.status, Status::NeedsApproval, "{}: {}", db.name, r.answer);
        assert_eq!(r.response.error_code(), Some(ErrorCode::NeedsApproval), "{}", db.name);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{}", db.name);

        // a restart in between changes nothing
        let rt = runtime(&db, CONFIG, &runs, false);
        let found = rt.resume_open_trees().await.unwrap();
        assert_eq!((found.resumed.len(), found.waiting.clone()), (0, vec![root]), "{}", db.name);
        let pending = rt.approvals(&alice, true).await.unwrap();
        assert_eq!(pending.len(), 1, "{}", db.name);
        let a = &pending[0];
        assert!(r.answer.contains(&a.id), "{}: the pause names its approval: {}", db.name, r.answer);
        assert_eq!((a.agent.as_str(), a.action.as_str(), a.root_id), ("mailer", "send_email", root), "{}", db.name);
        assert!(!a.summary.contains("alex@example.com") && a.summary.contains("<EMAIL_1>"), "{}", a.summary);

        // bad answers change nothing
        let bob = Principal::User(user("bob"));
        assert!(rt.approvals(&bob, true).await.unwrap().is_empty(), "{}", db.name);
        let code = |r: Result<_, switchboard::protocol::DelegationError>| r.map(drop).unwrap_err().code;
        assert_eq!(code(rt.decide(&bob, &a.id, true, None).await), ErrorCode::UserMismatch, "{}", db.name);
        assert_eq!(code(rt.decide(&alice, "apr-0000", true, None).await), ErrorCode::NotFound, "{}", db.name);
        assert_eq!(rt.resume_tree(RequestId::new()).await.unwrap_err().code, ErrorCode::NotFound, "{}", db.name);
        assert_eq!(rt.approvals(&alice, true).await.unwrap().len(), 1, "{}", db.name);

        let decided = rt.decide(&alice, &a.id, true, Some("go ahead")).await.unwrap();
        assert_eq!(decided.state, ApprovalState::Approved, "{}", db.name);
        assert_eq!(code(rt.decide(&alice, &a.id, false, None).await), ErrorCode::AlreadyDecided, "{}", db.name);
        let done = rt.resume_tree(root).await.unwrap();
        assert_eq!(done.status, Status::Success, "{}: {:?}", db.name, done.error);
        assert_eq!(done.result, "one + two + sent", "{}", db.name);
        // sent once; the steps before the pause ran once
        let counts = [&runs.first, &runs.second, &runs.sent].map(|c| c.load(Ordering::SeqCst));
        assert_eq!(counts, [1, 1, 1], "{}", db.name);
        assert_eq!(rt.resume_tree(root).await.unwrap_err().code, ErrorCode::AlreadyDecided, "{}", db.name);
        let tree = db.dyn_store().delegation_tree(root).await.unwrap();
        assert_eq!(record_of(&tree, "boss").status, "success", "{}", db.name);
        assert_eq!(record_of(&tree, "mailer").status, "success", "{}", db.name);
        assert!(db.dyn_store().verify_audit().await.unwrap().valid, "{}", db.name);

        // a rejection: the mailer ends without sending
        let root = RequestId::new();
        let r = rt.ask(&user("alice"), "Do it and mail it", to_boss(root)).await.unwrap();
        assert_eq!(r.status, Status::NeedsApproval, "{}", db.name);
        let a = rt.approvals(&alice, true).await.unwrap().pop().unwrap();
        rt.decide(&alice, &a.id, false, Some("not today")).await.unwrap();
        let done = rt.resume_tree(root).await.unwrap();
        assert!(done.result.ends_with("mail: APPROVAL_REJECTED"), "{}: {}", db.name, done.result);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "{}: nothing more was sent", db.name);
    }
}

#[tokio::test]
async fn a_cancelled_tree_stays_cancelled() {
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let alice = Principal::User(user("alice"));
        // a tree waiting for approval
        let rt = runtime(&db, CONFIG, &runs, false);
        let waiting = RequestId::new();
        rt.ask(&user("alice"), "Do it and mail it", to_boss(waiting)).await.unwrap();
        let approval = rt.approvals(&alice, true).await.unwrap().pop().unwrap();
        let code = |r: Result<u64, switchboard::protocol::DelegationError>| r.unwrap_err().code;
        assert_eq!(code(rt.cancel_tree(&Principal::User(user("bob")), waiting).await), ErrorCode::UserMismatch);
        assert!(rt.cancel_tree(&alice, waiting).await.unwrap() >= 2, "{}: the root and the mailer", db.name);
        assert_eq!(code(rt.cancel_tree(&alice, waiting).await), ErrorCode::AlreadyDecided, "{}", db.name);
        let closed = db.dyn_store().approval(&approval.id).await.unwrap().unwrap();
        assert_eq!(closed.state, ApprovalState::Rejected, "{}", db.name);
        let decide = rt.decide(&alice, &approval.id, true, None).await.map(drop).unwrap_err();
        assert_eq!(decide.code, ErrorCode::AlreadyDecided, "{}", db.name);
        let tree = db.dyn_store().delegation_tree(waiting).await.unwrap();
        assert_eq!(record_of(&tree, "boss").error_code.as_deref(), Some("CANCELLED"), "{}", db.name);
        assert_eq!(record_of(&tree, "mailer").error_code.as_deref(), Some("CANCELLED"), "{}: every open step", db.name);

        // a tree running in this process
        let running = cut_off_mid_tree_then_cancel(&db, &runs, &alice).await;
        // a restart starts neither again
        let found = runtime(&db, CONFIG, &runs, false).resume_open_trees().await.unwrap();
        assert!(!found.resumed.contains(&running) && !found.waiting.contains(&waiting), "{}: {found:?}", db.name);
        assert_eq!(runs.second.load(Ordering::SeqCst), 1, "{}: only the first tree's second ran", db.name);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{}", db.name);
    }
}

/// Starts a tree whose second agent hangs and cancels it through the runtime while it runs.
async fn cut_off_mid_tree_then_cancel(db: &Db, runs: &Arc<Runs>, alice: &Principal) -> RequestId {
    let rt = runtime(db, CONFIG, runs, true);
    let root = RequestId::new();
    let started = runs.second_started.notified();
    let ask = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.ask(&user("alice"), "Do the two steps", to_boss(root)).await })
    };
    tokio::time::timeout(Duration::from_secs(10), started).await.expect("second started");
    assert!(rt.cancel_tree(alice, root).await.unwrap() >= 2);
    let r = tokio::time::timeout(Duration::from_secs(10), ask).await.expect("the tree stops").unwrap().unwrap();
    assert_eq!(r.response.error_code(), Some(ErrorCode::Cancelled), "{}: {:?}", db.name, r.response.error);
    let steps = db.dyn_store().tree_steps(root).await.unwrap();
    assert!(steps.iter().all(|s| s.state.is_terminal()), "{}: {steps:?}", db.name);
    root
}

/// A decision or a cancel that takes nothing leaves no transaction open on
/// PostgreSQL: a dropped transaction's rollback waits for its connection's
/// next use, and until then the pooled connection holds its table locks (a
/// `DROP SCHEMA` or a migration waits behind it; the journal test hung on it).
#[tokio::test]
async fn a_decision_or_cancel_that_takes_nothing_holds_no_lock() {
    use sqlx::Executor;
    let Some(db) = db::postgres().await else { return };
    let store = db.dyn_store();
    assert!(store.decide_approval("nobody-asked", ApprovalState::Approved, "x", None, "r").await.unwrap().is_none());
    // looked at from another thread at once, without letting this runtime run anything
    // first (as a Drop that cleans up does): what the calls left is what it finds
    let url = db.url.clone();
    let locked = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let other = sqlx::AnyPool::connect(&url).await.unwrap();
            let mut tx = other.begin().await.unwrap();
            let mut locked = Vec::new();
            for table in ["tree_steps", "approvals"] {
                let lock = format!("LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE NOWAIT");
                if let Err(e) = tx.execute(sqlx::AssertSqlSafe(lock)).await {
                    locked.push(format!("{table}: {e}"));
                    break; // the transaction is aborted
                }
            }
            locked
        })
    })
    .join()
    .unwrap();
    assert!(locked.is_empty(), "still locked: {locked:?}");
}

/// The journal's store methods on every backend: an approval is decided
/// once however many answer at the same moment; open steps are the
/// unfinished ones that came in at the top; cancelling counts what it closed.
#[tokio::test]
async fn the_journal_holds_on_every_store() {
    use switchboard::store::{Approval, MemoryStore, TreeStep};
    let mut stores: Vec<(&str, Arc<dyn Store>, Option<Db>)> = vec![("memory", Arc::new(MemoryStore::new()), None)];
    for db in db::both().await {
        stores.push((db.name, db.dyn_store(), Some(db)));
    }
    for (name, store, _db) in stores {
        let root = RequestId::new();
        let step = |id: RequestId, parent: Option<RequestId>, entry: &str, state: StepState| TreeStep {
            parent_id: parent,
            ..crate::support::tree_step(id, root, entry, state)
        };
        let child = RequestId::new();
        store.put_step(&clean((step(root, None, "user", StepState::Running)).clone())).await.unwrap();
        store.put_step(&clean((step(child, Some(root), "child", StepState::Running)).clone())).await.unwrap();
        store.put_step(&clean((step(RequestId::new(), None, "delegation", StepState::Done)).clone())).await.unwrap();
        let open: Vec<RequestId> = store.open_steps().await.unwrap().iter().map(|s| s.request_id).collect();
        assert!(open.contains(&root) && !open.contains(&child), "{name}: {open:?}");
        // a later write replaces the state, not the first write's time
        let mut later = step(child, Some(root), "child", StepState::Done);
        (later.created_at, later.attempts, later.reads) = (5, 2, Some(r#"{"facts":["x"]}"#.into()));
        store.put_step(&clean(later.clone())).await.unwrap();
        let got = store.step(child).await.unwrap().unwrap();
        assert_eq!((got.state, got.attempts, got.created_at), (StepState::Done, 2, 1), "{name}");
        assert_eq!(got.reads.as_deref(), Some(r#"{"facts":["x"]}"#), "{name}");
        // a resume is counted; a later write that does not know of it keeps the count (and the reads)
        store
            .put_step(&clean((TreeStep { resumes: 2, ..step(root, None, "user", StepState::Running) }).clone()))
            .await
            .unwrap();
        store.put_step(&clean((step(root, None, "user", StepState::Running)).clone())).await.unwrap();
        assert_eq!(store.step(root).await.unwrap().unwrap().resumes, 2, "{name}");
        // a late write of its start (its envelope) does not move it back from its end
        let late = TreeStep { request: "{\"late\":1}".into(), ..step(child, Some(root), "child", StepState::Running) };
        store.put_step(&clean(late.clone())).await.unwrap();
        let got = store.step(child).await.unwrap().unwrap();
        assert_eq!((got.state, got.attempts, got.request.as_str()), (StepState::Done, 2, "{\"late\":1}"), "{name}");
        assert!(got.reads.is_some(), "{name}: a write without reads keeps them");
        // and an empty envelope keeps the stored one
        store.put_step(&clean((TreeStep { request: String::new(), ..got.clone() }).clone())).await.unwrap();
        assert_eq!(store.step(child).await.unwrap().unwrap().request, "{\"late\":1}", "{name}");

        let asked = Approval {
            id: Approval::id_for(child, "send_email"),
            root_id: root,
            request_id: child,
            user_id: user("alice"),
            agent: "mailer".into(),
            action: "send_email".into(),
            summary: "Mail <EMAIL_1>".into(),
            state: ApprovalState::Pending,
            reason: None,
            decided_by: None,
            created_at: 1,
            decided_at: None,
        };
        let first = store.ask_approval(&clean(asked.clone())).await.unwrap();
        assert_eq!(
            store.ask_approval(&clean((Approval { summary: "other".into(), ..asked.clone() }).clone())).await.unwrap(),
            first
        );
        // a decision needs its tree waiting: a running one takes none
        let early = store.decide_approval(&asked.id, ApprovalState::Approved, "early", None, "r0").await.unwrap();
        assert!(early.is_none(), "{name}: {early:?}");
        store.put_step(&clean((step(root, None, "user", StepState::Waiting)).clone())).await.unwrap();
        let answers = futures::future::join_all((0..12).map(|i| {
            let store = store.clone();
            let id = asked.id.clone();
            async move {
                let state = if i % 2 == 0 { ApprovalState::Approved } else { ApprovalState::Rejected };
                store.decide_approval(&id, state, &format!("person {i}"), None, &format!("replica-{i}")).await.unwrap()
            }
        }))
        .await;
        assert_eq!(answers.iter().flatten().count(), 1, "{name}: decided once");
        let kept = store.approval(&asked.id).await.unwrap().unwrap();
        assert_ne!(kept.state, ApprovalState::Pending, "{name}");
        // the decision took the tree for its replica, in the same transaction
        let winner = kept.decided_by.as_deref().unwrap().replace("person ", "replica-");
        let taken = store.step(root).await.unwrap().unwrap();
        assert_eq!((taken.state, taken.owner.as_deref()), (StepState::Running, Some(winner.as_str())), "{name}");
        assert!(store.approvals(Some(&user("alice")), true).await.unwrap().is_empty(), "{name}");
        assert!(store.approvals(Some(&user("bob")), false).await.unwrap().is_empty(), "{name}");
        assert_eq!(store.approvals(None, false).await.unwrap().len(), 1, "{name}");

        assert_eq!(store.cancel_tree(root, "admin").await.unwrap(), 1, "{name}: the root; the child had ended");
        assert_eq!(store.step(root).await.unwrap().unwrap().state, StepState::Cancelled, "{name}");
        assert!(!store.open_steps().await.unwrap().iter().any(|s| s.root_id == root), "{name}");
        assert_eq!(store.cancel_tree(root, "admin").await.unwrap(), 0, "{name}: an ended tree is not cancelled again");

        // a cancel first: the tree's pending approval is rejected with it, and a decision after takes nothing
        let waiting = RequestId::new();
        let mailer = RequestId::new();
        store
            .put_step(&clean(
                (TreeStep { root_id: waiting, ..step(waiting, None, "user", StepState::Waiting) }).clone(),
            ))
            .await
            .unwrap();
        let pending =
            Approval { id: Approval::id_for(mailer, "send_email"), root_id: waiting, request_id: mailer, ..asked };
        store.ask_approval(&clean(pending.clone())).await.unwrap();
        assert_eq!(store.cancel_tree(waiting, "user:alice").await.unwrap(), 1, "{name}");
        let closed = store.approval(&pending.id).await.unwrap().unwrap();
        assert_eq!(
            (closed.state, closed.decided_by.as_deref()),
            (ApprovalState::Rejected, Some("user:alice")),
            "{name}"
        );
        let late = store.decide_approval(&pending.id, ApprovalState::Approved, "late", None, "r1").await.unwrap();
        assert!(late.is_none(), "{name}: {late:?}");
        assert_eq!(store.step(waiting).await.unwrap().unwrap().state, StepState::Cancelled, "{name}");
    }
}

/// Over A2A: a tree that pauses for approval is an `input-required` task
/// naming the approval; once a person approves and the tree resumes, the
/// task reads completed with the tree's answer (also through a second
/// service on the same database, as after a restart); CancelTask on a paused
/// task cancels its tree in the store.
#[tokio::test]
async fn over_a2a_a_paused_tree_is_input_required_then_completes_or_cancels_for_good() {
    use crate::a2a::{message, router_for, rpc};
    use serde_json::json;
    let config = format!("{CONFIG}\n[auth]\nuser_tokens = {{ \"alice\" = \"dur-alice\" }}\n");
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let rt = runtime(&db, &config, &runs, false);
        let r = router_for(rt.clone()).await;
        let sent =
            rpc(&r, "boss", "dur-alice", "SendMessage", json!({"message": message("m-1", "Do it and mail it")})).await;
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{}: {sent}", db.name);
        let alice = Principal::User(user("alice"));
        let approval = rt.approvals(&alice, true).await.unwrap().pop().expect("a pending approval");
        let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(&approval.id), "{}: {text}", db.name);
        rt.decide(&alice, &approval.id, true, None).await.unwrap();
        rt.resume_tree(approval.root_id).await.unwrap();
        // a second service on the same database, as after a restart, and this one
        let other = router_for(runtime(&db, &config, &runs, false)).await;
        for router in [&other, &r] {
            let got = rpc(router, "boss", "dur-alice", "GetTask", json!({"id": task["id"]})).await;
            assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{}: {got}", db.name);
            let text = got["result"]["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
            assert_eq!(text, "one + two + sent", "{}", db.name);
        }
        assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "{}", db.name);

        // a paused task cancelled: its tree is cancelled in the store
        let sent =
            rpc(&r, "boss", "dur-alice", "SendMessage", json!({"message": message("m-2", "Do it and mail it")})).await;
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{}", db.name);
        let approval = rt.approvals(&alice, true).await.unwrap().pop().unwrap();
        let cancelled = rpc(&r, "boss", "dur-alice", "CancelTask", json!({"id": task["id"]})).await;
        assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{}: {cancelled}", db.name);
        let steps = db.dyn_store().tree_steps(approval.root_id).await.unwrap();
        assert!(steps.iter().all(|s| s.state.is_terminal()), "{}: {steps:?}", db.name);
        let closed = db.dyn_store().approval(&approval.id).await.unwrap().unwrap();
        assert_eq!(closed.state, ApprovalState::Rejected, "{}", db.name);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "{}", db.name);
    }
}

/// Nobody answers: once the tree's deadline passes, the server's sweep
/// (`expire_overdue`) ends it `DEADLINE_EXCEEDED`, the approval is expired,
/// a late answer changes nothing and nothing is sent.
#[tokio::test]
async fn a_pause_nobody_answers_ends_at_the_trees_deadline() {
    // long enough for the turn to pause on a loaded 2-core machine before it passes
    let config = CONFIG.replace("deadline_ms = 20000", "deadline_ms = 2000");
    for db in db::both().await {
        let runs = Arc::new(Runs::default());
        let alice = Principal::User(user("alice"));
        let rt = runtime(&db, &config, &runs, false);
        let root = RequestId::new();
        let r = rt.ask(&user("alice"), "Do it and mail it", to_boss(root)).await.unwrap();
        assert_eq!(r.status, Status::NeedsApproval, "{}", db.name);
        let approval = rt.approvals(&alice, true).await.unwrap().pop().unwrap();
        assert!(rt.expire_overdue().await.unwrap().is_empty(), "{}: not yet", db.name);
        tokio::time::sleep(Duration::from_millis(2100)).await;
        assert_eq!(rt.expire_overdue().await.unwrap(), vec![root], "{}", db.name);
        let store = db.dyn_store();
        assert_eq!(store.approval(&approval.id).await.unwrap().unwrap().state, ApprovalState::Expired, "{}", db.name);
        let late = rt.decide(&alice, &approval.id, true, None).await.map(drop).unwrap_err();
        assert_eq!(late.code, ErrorCode::AlreadyDecided, "{}", db.name);
        let tree = store.delegation_tree(root).await.unwrap();
        assert_eq!(record_of(&tree, "boss").error_code.as_deref(), Some("DEADLINE_EXCEEDED"), "{}", db.name);
        assert_eq!(record_of(&tree, "mailer").error_code.as_deref(), Some("DEADLINE_EXCEEDED"), "{}", db.name);
        assert!(store.tree_steps(root).await.unwrap().iter().all(|s| s.state.is_terminal()), "{}", db.name);
        assert_eq!(rt.resume_tree(root).await.unwrap_err().code, ErrorCode::AlreadyDecided, "{}", db.name);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{}", db.name);
    }
}
