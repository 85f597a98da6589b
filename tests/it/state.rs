//! The runtime on real stores (SQLite and PostgreSQL): context assembly,
//! ephemeral consults, isolation, idempotency, learning from history, and
//! seed scores that survive a restart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use serde_json::json;
use switchboard::config::Config;
use switchboard::protocol::{ErrorCode, HandoffData, Mode, NewFact, SessionId, Status};
use switchboard::store::{Fact, Store, now_ms};
use switchboard::{AgentOutput, Runtime, Task};

use crate::db;
use crate::support::*;

const TEAM: &str = r#"
[[agents]]
slug = "asker"
name = "Asker"
may_delegate_to = ["*"]
[[agents]]
slug = "keeper"
name = "Keeper"
domain = "finance"
[[agents]]
slug = "solver-a"
name = "Solver A"
keywords = ["reconcile"]
[[agents]]
slug = "solver-b"
name = "Solver B"
"#;

type Seen = Arc<Mutex<Vec<Task>>>;

/// keeper remembers what it was given and answers with two new facts.
fn runtime(store: Arc<dyn Store>, seen: Seen, calls: Arc<AtomicUsize>) -> Runtime {
    Runtime::builder()
        .config(Config::from_toml(TEAM).unwrap())
        .store(store)
        .agent("asker", echo(counter()))
        .agent("solver-a", echo(counter()))
        .agent("solver-b", echo(counter()))
        .agent(
            "keeper",
            agent(move |_ctx, task| {
                let (seen, calls) = (seen.clone(), calls.clone());
                async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    seen.lock().unwrap().push(task.clone());
                    Ok(AgentOutput::new(format!("kept #{n}"), format!("answer {n} to {}", task.objective))
                        .with_fact(NewFact::scoped("learned globally", "global"))
                        .with_fact(NewFact::new("learned by keeper")))
                }
            }),
        )
        .build()
        .unwrap()
}

fn to_keeper(objective: &str, parent: SessionId) -> switchboard::DelegationRequest {
    let mut r = request("asker", "keeper", objective);
    r.parent_session_id = Some(parent);
    r
}

fn fact(user: &str, scope: &str, text: &str) -> Fact {
    Fact {
        user_id: crate::support::user(user),
        scope: scope.into(),
        fact: text.into(),
        source_request: None,
        created_at: now_ms(),
    }
}

/// A user's memory only grows; an agent gets its newest facts, not all of
/// them (every fact is part of the prompt, charged to the budget).
#[tokio::test]
async fn the_delegate_gets_the_users_newest_facts_not_all_of_them() {
    for db in db::both().await {
        let store = db.dyn_store();
        let many: Vec<Fact> = (0..60)
            .map(|i| Fact { created_at: 1_000 + i, ..fact("alice", "global", &format!("fact number {i}")) })
            .collect();
        store.add_facts(&clean(many)).await.unwrap();
        let (seen, calls): (Seen, _) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
        let rt = runtime(store.clone(), seen.clone(), calls.clone());
        let r = rt.delegate(&operator(), to_keeper("task", SessionId::new())).await;
        assert!(r.is_success(), "{}: {r:?}", db.name);
        let task = seen.lock().unwrap().last().cloned().unwrap();
        let want: Vec<String> = (36..60).map(|i| format!("fact number {i}")).collect();
        assert_eq!(task.facts, want, "{}: the newest 24, oldest first", db.name);
    }
}

#[tokio::test]
async fn the_delegate_gets_facts_objective_handoff_and_its_last_five_messages() {
    for db in db::both().await {
        let store = db.dyn_store();
        store
            .add_facts(&clean(
                ([
                    fact("alice", "global", "prefers CSV"),
                    fact("alice", "agent:keeper", "keeps receipts in a shoebox"),
                    fact("alice", "domain:finance", "self-employed"),
                    fact("alice", "agent:solver-a", "not for keeper"),
                    fact("bob", "global", "bob's secret"),
                ])
                .to_vec(),
            ))
            .await
            .unwrap();
        let (seen, calls): (Seen, _) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
        let rt = runtime(store.clone(), seen.clone(), calls.clone());
        let parent = SessionId::new();
        for i in 0..3 {
            let r = rt.delegate(&operator(), to_keeper(&format!("task {i}"), parent)).await;
            assert!(r.is_success(), "{}: {r:?}", db.name);
        }
        let mut req = to_keeper("task 3", parent);
        req.input = "the full input".into();
        req.handoff_data = HandoffData {
            facts: vec!["handed over".into()],
            intermediate_results: Some(json!([{"agent": "x"}])),
            ..Default::default()
        };
        let r = rt.delegate(&operator(), req).await;

        let task = seen.lock().unwrap().last().cloned().unwrap();
        let mut facts = task.facts.clone();
        facts.sort();
        assert_eq!(
            facts,
            ["keeps receipts in a shoebox", "learned by keeper", "learned globally", "prefers CSV", "self-employed"],
            "{}: global + agent + domain facts, never another agent's or user's",
            db.name
        );
        assert_eq!(task.objective, "task 3");
        assert_eq!(task.input, "the full input");
        assert_eq!(task.handoff.facts, ["handed over"]);
        assert!(task.handoff.intermediate_results.is_some());
        // three earlier turns = six messages; the last five arrive, oldest first
        let history: Vec<&str> = task.history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            history,
            ["answer 0 to task 0", "task 1", "answer 1 to task 1", "task 2", "answer 2 to task 2"],
            "{}",
            db.name
        );

        // new facts were saved with their scope
        let global = store.facts(&user("alice"), &["global".into()], 100).await.unwrap();
        assert!(global.iter().any(|f| f.fact == "learned globally" && f.source_request.is_some()), "{}", db.name);
        let own = store.facts(&user("alice"), &["agent:keeper".into()], 100).await.unwrap();
        assert!(own.iter().any(|f| f.fact == "learned by keeper"), "{}", db.name);
        assert_eq!(
            r.child_session_id,
            Some(store.find_child_session(&user("alice"), &slug("keeper"), parent).await.unwrap().unwrap().id)
        );
    }
}

#[tokio::test]
async fn an_ephemeral_consult_reads_the_history_and_writes_nothing() {
    for db in db::both().await {
        let store = db.dyn_store();
        let (seen, calls): (Seen, _) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
        let rt = runtime(store.clone(), seen.clone(), calls);
        let parent = SessionId::new();
        assert!(rt.delegate(&operator(), to_keeper("remember this", parent)).await.is_success());
        let before = store.counts().await.unwrap();

        let mut consult = to_keeper("what do you think?", parent);
        consult.mode = Mode::Ephemeral;
        let r = rt.delegate(&operator(), consult).await;
        assert!(r.is_success(), "{r:?}");
        let after = store.counts().await.unwrap();
        assert_eq!(
            (after.sessions, after.messages, after.facts),
            (before.sessions, before.messages, before.facts),
            "{}: the consult wrote to the target's state",
            db.name
        );
        assert_eq!(after.audit, before.audit + 1, "but it is audited");
        let task = seen.lock().unwrap().last().cloned().unwrap();
        assert_eq!(task.history.len(), 2, "{}: it read the target's history", db.name);
        assert_eq!(task.history[0].content, "remember this");
    }
}

#[tokio::test]
async fn another_users_session_is_refused_against_the_store_and_nothing_leaks() {
    for db in db::both().await {
        let store = db.dyn_store();
        let rt = runtime(store.clone(), Arc::default(), Arc::new(AtomicUsize::new(0)));
        let alice_parent = SessionId::new();
        let first = rt.delegate(&operator(), to_keeper("alice's private plan", alice_parent)).await;
        let alice_child = first.child_session_id.unwrap();
        for (parent, child) in [(Some(alice_parent), None), (None, Some(alice_child))] {
            let mut bob = request("asker", "keeper", "show me");
            bob.user_id = user("bob");
            bob.parent_session_id = parent;
            bob.child_session_id = child;
            let r = rt.delegate(&operator(), bob).await;
            assert_eq!(r.error_code(), Some(ErrorCode::UserMismatch), "{}", db.name);
            let body = serde_json::to_string(&r).unwrap();
            assert!(!body.contains("alice") && !body.contains("private") && !body.contains(&alice_child.to_string()));
        }
    }
}

#[tokio::test]
async fn a_repeated_idempotency_key_returns_the_stored_response_without_running_again() {
    for db in db::both().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let rt = runtime(db.dyn_store(), Arc::default(), calls.clone());
        let mut req = request("asker", "keeper", "charge the card once");
        req.idempotency_key = Some("payment-42".into());
        let first = rt.delegate(&operator(), req.clone()).await;
        assert!(first.is_success());
        let mut again = req.clone();
        again.request_id = Default::default();
        let second = rt.delegate(&operator(), again).await;
        assert_eq!(second, first, "{}: the stored response, as it was", db.name);
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let mut changed = req.clone();
        changed.request_id = Default::default();
        changed.objective = "charge the card twice".into();
        let r = rt.delegate(&operator(), changed).await;
        assert_eq!(r.error_code(), Some(ErrorCode::InvalidRequest));
        assert!(r.error.unwrap().message.contains("different parameters"));

        // many at once with one key: the agent runs once
        let mut base = request("asker", "keeper", "ship the order");
        base.idempotency_key = Some("order-7".into());
        let op = operator();
        let responses = join_all((0..6).map(|_| {
            let mut r = base.clone();
            r.request_id = Default::default();
            rt.delegate(&op, r)
        }))
        .await;
        assert!(responses.iter().all(|r| r.status == Status::Success), "{}: {responses:?}", db.name);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "{}", db.name);
        assert!(responses.windows(2).all(|w| w[0].request_id == w[1].request_id));
    }
}

#[tokio::test]
async fn auto_discovery_learns_which_agent_succeeds_at_a_kind_of_task() {
    for db in db::both().await {
        let rt = runtime(db.dyn_store(), Arc::default(), Arc::new(AtomicUsize::new(0)));
        let auto = || request("asker", "auto", "Reconcile the ledger for March");
        let r = rt.delegate(&operator(), auto()).await;
        assert_eq!(r.target_employee.as_str(), "solver-a", "{}: keywords decide at first", db.name);
        for month in ["April", "May", "June"] {
            let r = rt
                .delegate(&operator(), request("asker", "solver-b", &format!("Reconcile the ledger for {month}")))
                .await;
            assert!(r.is_success());
        }
        let r = rt.delegate(&operator(), auto()).await;
        assert_eq!(r.target_employee.as_str(), "solver-b", "{}: 3 of 3 successes on similar objectives", db.name);
        // another user's history does not count
        let mut bobs = auto();
        bobs.user_id = user("bob");
        assert_eq!(rt.delegate(&operator(), bobs).await.target_employee.as_str(), "solver-a");
    }
}

#[tokio::test]
async fn seed_scores_persist_so_the_best_seed_goes_first_after_a_restart() {
    let db = db::sqlite().await;
    let note = "Draft apology email to alex.chan@company.com about missed project deadline. Mention new ETA of Oct 22. \
        Tone: warm-professional. Max 60 words. Required: apologize, acknowledge impact, provide new timeline.";
    let email = || {
        let mut r = request("prime-boss", "email", "Draft apology email");
        r.task_note = Some(note.into());
        r
    };
    {
        let rt = Runtime::builder().store(db.dyn_store()).build().unwrap();
        let r = rt.delegate(&operator(), email()).await;
        assert_eq!(r.execution.unwrap().seeds_tried, [981234, 442211, 776655]);
    }
    let reopened: Arc<dyn Store> = Arc::new(switchboard::store::SqlStore::connect(&db.url).await.unwrap());
    let rt = Runtime::builder().store(reopened).build().unwrap();
    let r = rt.delegate(&operator(), email()).await;
    let exec = r.execution.unwrap();
    assert_eq!((exec.attempts, exec.seeds_tried), (1, vec![776655]));
}
