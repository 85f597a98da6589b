//! Ids belong to whoever made them, on every store (memory, SQLite,
//! PostgreSQL): a request id another caller already used names that
//! caller's delegation, and an envelope that reuses it (for another user,
//! for the same user, refused or not, while the tree waits or while it
//! runs) is refused with `ID_CONFLICT` and changes nothing of it; an
//! approval and a cancel of one waiting tree have one winner.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use switchboard::pipeline::{Door, Envelope};
use switchboard::protocol::{DelegationRequest, ErrorCode, RequestId, Status};
use switchboard::store::{ApprovalState, StepState, Store};
use switchboard::{Principal, Runtime};

use crate::db;
use crate::store::every_store;
use crate::support::{slug, user};
use crate::team::{Runs, runtime_on, served_config, to_boss};

fn team(store: Arc<dyn Store>, runs: &Arc<Runs>, second_hangs: bool) -> Runtime {
    let asks: &[&str] = if second_hangs { &["first", "second"] } else { &["first", "mailer"] };
    runtime_on(store, &served_config(asks), runs, second_hangs)
}

/// The gateway (a tree root for every user) sends an envelope to `target`
/// for `for_user` under the request id `id`, through the HTTP door.
async fn gateway_reuses(rt: &Runtime, id: RequestId, target: &str, for_user: &str) -> Option<ErrorCode> {
    let mut req = DelegationRequest::new(slug("gateway"), slug(target), user(for_user), "Do the report", "");
    req.request_id = id;
    let r = rt.enter(Door::Http, &Principal::Agent(slug("gateway")), Envelope::new(req)).await;
    r.error_code()
}

#[tokio::test]
async fn a_reused_request_id_is_refused_and_the_waiting_tree_it_names_is_untouched() {
    let dbs = db::both().await;
    for (name, store) in every_store(&dbs) {
        let runs = Arc::new(Runs::default());
        let rt = team(store.clone(), &runs, false);
        let alice = Principal::User(user("alice"));
        let root = RequestId::new();
        let r = rt.ask(&user("alice"), "Do the report and mail it", to_boss(root)).await.unwrap();
        assert_eq!(r.status, Status::NeedsApproval, "{name}: {}", r.answer);
        let step = store.step(root).await.unwrap().unwrap();
        assert_eq!(step.state, StepState::Waiting, "{name}");
        let steps = store.tree_steps(root).await.unwrap();
        let records = store.delegation_tree(root).await.unwrap();

        // for another user, for alice herself, and a refused one (the gateway may not call first)
        assert_eq!(gateway_reuses(&rt, root, "boss", "bob").await, Some(ErrorCode::IdConflict), "{name}");
        assert_eq!(gateway_reuses(&rt, root, "boss", "alice").await, Some(ErrorCode::IdConflict), "{name}");
        assert_eq!(gateway_reuses(&rt, root, "first", "alice").await, Some(ErrorCode::DelegationNotAllowed), "{name}");
        // a child's id too: it names alice's tree's node
        let child = steps.iter().find(|s| s.target == "mailer").unwrap().request_id;
        assert_eq!(gateway_reuses(&rt, child, "boss", "alice").await, Some(ErrorCode::IdConflict), "{name}");
        assert_eq!(store.tree_steps(root).await.unwrap(), steps, "{name}: alice's steps are as they were");
        assert_eq!(store.delegation_tree(root).await.unwrap(), records, "{name}: and her records");
        assert_eq!(runs.first.load(Ordering::SeqCst), 1, "{name}: nothing ran for the reused ids");

        // her approval still resumes her tree, once
        let a = rt.approvals(&alice, true).await.unwrap().pop().unwrap();
        rt.decide(&alice, &a.id, true, None).await.unwrap();
        let done = rt.resume_tree(root).await.unwrap();
        assert_eq!((done.status, done.result.as_str()), (Status::Success, "one + sent"), "{name}: {:?}", done.error);
        assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "{name}");
        let tree = store.delegation_tree(root).await.unwrap();
        assert!(tree.iter().all(|r| r.user_id == user("alice")), "{name}: {tree:?}");
        assert!(tree.iter().all(|r| r.status == "success"), "{name}: {tree:?}");
    }
}

#[tokio::test]
async fn a_reused_root_id_is_refused_while_its_tree_runs_and_leaves_it_running() {
    let dbs = db::both().await;
    for (name, store) in every_store(&dbs) {
        let runs = Arc::new(Runs::default());
        let rt = team(store.clone(), &runs, true);
        let root = RequestId::new();
        let started = runs.second_started.notified();
        let running = {
            let rt = rt.clone();
            tokio::spawn(async move { rt.ask(&user("alice"), "Do the two steps", to_boss(root)).await })
        };
        tokio::time::timeout(Duration::from_secs(20), started).await.expect("second started");
        assert_eq!(gateway_reuses(&rt, root, "boss", "alice").await, Some(ErrorCode::IdConflict), "{name}");
        // naming her live tree as the root of a new envelope is the same conflict
        let mut join = DelegationRequest::new(slug("gateway"), slug("boss"), user("alice"), "Join in", "");
        join.root_request_id = Some(root);
        let r = rt.enter(Door::Http, &Principal::Agent(slug("gateway")), Envelope::new(join)).await;
        assert_eq!(r.error_code(), Some(ErrorCode::IdConflict), "{name}: {:?}", r.error);
        assert_eq!(runs.first.load(Ordering::SeqCst), 1, "{name}");
        let top = store.step(root).await.unwrap().unwrap();
        assert_eq!((top.state, top.caller.as_str()), (StepState::Running, "user:alice"), "{name}");
        // her tree is still hers to cancel, and ends as cancelled
        assert!(rt.cancel_tree(&Principal::User(user("alice")), root).await.unwrap() >= 2, "{name}");
        let r = tokio::time::timeout(Duration::from_secs(20), running).await.unwrap().unwrap().unwrap();
        assert_eq!(r.response.error_code(), Some(ErrorCode::Cancelled), "{name}");
    }
}

#[tokio::test]
async fn an_ended_tree_named_as_a_root_by_another_caller_is_refused() {
    let dbs = db::both().await;
    for (name, store) in every_store(&dbs) {
        let runs = Arc::new(Runs::default());
        let rt = team(store.clone(), &runs, false);
        let root = RequestId::new();
        let r = rt.ask(&user("alice"), "Do the report", to_boss(root)).await.unwrap();
        assert_eq!(r.status, Status::Success, "{name}");
        let records = store.delegation_tree(root).await.unwrap();
        let mut join = DelegationRequest::new(slug("gateway"), slug("boss"), user("alice"), "Join in", "");
        join.root_request_id = Some(root);
        let r = rt.enter(Door::Http, &Principal::Agent(slug("gateway")), Envelope::new(join)).await;
        assert_eq!(r.error_code(), Some(ErrorCode::IdConflict), "{name}: {:?}", r.error);
        assert_eq!(store.delegation_tree(root).await.unwrap(), records, "{name}: nothing joined her tree");
        // the gateway's own tree is its own to go on with
        let own = RequestId::new();
        let mut first = DelegationRequest::new(slug("gateway"), slug("boss"), user("alice"), "Mine", "");
        first.request_id = own;
        let gateway = Principal::Agent(slug("gateway"));
        assert!(rt.enter(Door::Http, &gateway, Envelope::new(first)).await.is_success(), "{name}");
        let mut next = DelegationRequest::new(slug("gateway"), slug("boss"), user("alice"), "Mine, again", "");
        next.root_request_id = Some(own);
        let r = rt.enter(Door::Http, &gateway, Envelope::new(next)).await;
        assert!(r.is_success(), "{name}: {:?}", r.error);
    }
}

/// Approve and cancel of one waiting tree, at the same moment: the store
/// orders them (the decision and the tree's next state are one
/// compare-and-set), the tree ends cancelled either way (a cancel after
/// the decision cancels the tree it resumed), and nothing is sent: not by
/// the tree, and not by a live replay of it later.
#[tokio::test]
async fn approve_and_cancel_of_one_waiting_tree_have_one_winner_and_no_replay_sends_what_was_cancelled() {
    use switchboard::pipeline::ReplayMode;
    let dbs = db::both().await;
    for (name, store) in every_store(&dbs) {
        let alice = Principal::User(user("alice"));
        let mut seen = std::collections::BTreeSet::new();
        for round in 0..6 {
            let runs = Arc::new(Runs::default());
            let rt = team(store.clone(), &runs, false);
            let root = RequestId::new();
            let r = rt.ask(&user("alice"), "Do the report and mail it", to_boss(root)).await.unwrap();
            assert_eq!(r.status, Status::NeedsApproval, "{name}");
            let a = rt.approvals(&alice, true).await.unwrap().into_iter().find(|a| a.root_id == root).unwrap();
            let (decided, cancelled) = if round % 2 == 0 {
                tokio::join!(rt.decide(&alice, &a.id, true, None), rt.cancel_tree(&alice, root))
            } else {
                let (c, d) = tokio::join!(rt.cancel_tree(&alice, root), rt.decide(&alice, &a.id, true, None));
                (d, c)
            };
            assert!(cancelled.is_ok(), "{name}: a cancel of an open tree goes through: {cancelled:?}");
            match &decided {
                Ok(approved) => {
                    seen.insert("decision first");
                    assert_eq!(approved.state, ApprovalState::Approved, "{name}");
                }
                Err(e) => {
                    seen.insert("cancel first");
                    assert_eq!(e.code, ErrorCode::AlreadyDecided, "{name}: {e:?}");
                    let closed = store.approval(&a.id).await.unwrap().unwrap();
                    assert_eq!(closed.state, ApprovalState::Rejected, "{name}: closed with the tree");
                }
            }
            let resumed = rt.resume_tree(root).await.map(drop).unwrap_err();
            assert_eq!(resumed.code, ErrorCode::AlreadyDecided, "{name}: the tree has ended: {resumed:?}");
            assert_eq!(store.step(root).await.unwrap().unwrap().state, StepState::Cancelled, "{name}");
            assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{name}: nothing was sent");
            let report = rt.replay_for(&alice, root, ReplayMode::Live).await.unwrap();
            assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{name}: a live replay sends nothing: {}", report.render());
        }
        eprintln!("{name}: {seen:?}");
    }
}
