//! What a restarted `switchboard serve` finds again in its database, on
//! SQLite and on PostgreSQL: the A2A tasks (status, history, artifacts,
//! owner) and the circuit breakers that were open. "Restarted" is a second
//! runtime over a second connection to the same database.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard::protocol::a2a::types::TaskState;
use switchboard::protocol::{DelegationError, DelegationRequest, ErrorCode};
use switchboard::resilience::{BreakerConfig, BreakerState};
use switchboard::store::{A2aTaskRecord, SqlStore, Store, a2a_state};
use switchboard::{AgentOutput, Runtime};

use crate::a2a::{ALICE, BOB, error_code, message, router_for, rpc, team_config};
use crate::db;
use crate::support::*;

/// The same database, opened again as a restarted process would.
async fn reopen(db: &db::Db) -> Arc<dyn Store> {
    Arc::new(SqlStore::connect(&db.url).await.unwrap())
}

#[tokio::test]
async fn a2a_tasks_survive_a_restart_with_their_history_state_and_owner() {
    for db in db::both().await {
        let name = db.name;
        let one = router_for(Runtime::builder().config(team_config()).store(db.dyn_store()).build().unwrap()).await;
        let sent =
            rpc(&one, "tag-ai", ALICE, "SendMessage", json!({"message": message("d-1", "2025-10-01 Starbucks 4.50")}))
                .await;
        let done = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {sent}")).to_string();
        let context = sent["result"]["task"]["contextId"].as_str().unwrap().to_string();
        let waiting = rpc(
            &one,
            "a2a-conformance",
            ALICE,
            "SendMessage",
            json!({"message": message("tck-input-required-1", "start")}),
        )
        .await;
        assert_eq!(waiting["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{name}: {waiting}");
        let waiting = waiting["result"]["task"]["id"].as_str().unwrap().to_string();
        drop(one);

        // the restart: a new runtime and service over a new connection
        let store = reopen(&db).await;
        let two = router_for(Runtime::builder().config(team_config()).store(store.clone()).build().unwrap()).await;
        let got = rpc(&two, "tag-ai", ALICE, "GetTask", json!({"id": done})).await;
        let task = &got["result"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {got}");
        assert_eq!(task["contextId"], context.as_str());
        assert_eq!(task["history"].as_array().map(Vec::len), Some(2), "{name}: the user's message and the agent's");
        assert_eq!(task["history"][0]["messageId"], "d-1");
        assert!(task["artifacts"][0]["parts"][0]["text"].as_str().unwrap().contains("Dining - Coffee"), "{got}");
        let last = rpc(&two, "tag-ai", ALICE, "GetTask", json!({"id": done, "historyLength": 1})).await;
        assert_eq!(last["result"]["history"].as_array().map(Vec::len), Some(1), "{name}: {last}");

        // the owner check, as before the restart
        assert_eq!(error_code(&rpc(&two, "tag-ai", BOB, "GetTask", json!({"id": done})).await), -32001, "{name}");
        assert_eq!(error_code(&rpc(&two, "byte-doc", ALICE, "GetTask", json!({"id": done})).await), -32001);
        assert_eq!(rpc(&two, "tag-ai", BOB, "ListTasks", json!({})).await["result"]["totalSize"], 0, "{name}");
        assert_eq!(error_code(&rpc(&two, "tag-ai", BOB, "CancelTask", json!({"id": done})).await), -32001);
        let listed = rpc(&two, "tag-ai", ALICE, "ListTasks", json!({"contextId": context, "historyLength": 5})).await;
        assert_eq!(listed["result"]["totalSize"], 1, "{name}: {listed}");
        assert_eq!(listed["result"]["tasks"][0]["id"], done.as_str());
        assert_eq!(listed["result"]["tasks"][0]["history"].as_array().map(Vec::len), Some(2));
        // known, and finished: not "no such task"
        assert_eq!(error_code(&rpc(&two, "tag-ai", ALICE, "SubscribeToTask", json!({"id": done})).await), -32004);

        // a task waiting for input takes its next turn in the restarted process
        let mut more = message("tck-complete-task-2", "here you go");
        more["taskId"] = json!(waiting);
        let finished = rpc(&two, "a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
        assert_eq!(finished["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {finished}");
        assert_eq!(finished["result"]["task"]["history"].as_array().map(Vec::len), Some(4), "{name}");

        // a new task in the old context continues the old session
        let mut follow = message("d-2", "2025-10-02 Uber 12.00");
        follow["contextId"] = json!(context);
        let second = rpc(&two, "tag-ai", ALICE, "SendMessage", json!({"message": follow})).await;
        let second_id = second["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {second}"));
        let (a, b) = (store.a2a_task(&done).await.unwrap().unwrap(), store.a2a_task(second_id).await.unwrap().unwrap());
        assert!(
            a.session_id.is_some() && a.session_id == b.session_id,
            "{name}: {:?} {:?}",
            a.session_id,
            b.session_id
        );
    }
}

#[tokio::test]
async fn a_task_cut_short_by_a_restart_keeps_its_stored_state_until_it_is_set() {
    for db in db::both().await {
        let name = db.name;
        // what a process that died mid-turn left behind: a working task
        let rt = Runtime::builder().config(team_config()).store(db.dyn_store()).build().unwrap();
        let one = router_for(rt).await;
        let sent = rpc(
            &one,
            "a2a-conformance",
            ALICE,
            "SendMessage",
            json!({"message": message("tck-input-required-1", "start")}),
        )
        .await;
        let id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {sent}")).to_string();
        let stored = db.store.a2a_task(&id).await.unwrap().unwrap();
        let mut task = stored.to_task().unwrap();
        task.status.state = TaskState::Working;
        let agent = switchboard::protocol::AgentSlug::parse(&stored.agent).unwrap();
        let working = A2aTaskRecord::new(&task, &stored.owner, &agent, stored.session_id, stored.seq + 1);
        assert!(db.store.put_a2a_task(&working).await.unwrap());
        drop(one);

        let store = reopen(&db).await;
        let two = router_for(Runtime::builder().config(team_config()).store(store.clone()).build().unwrap()).await;
        let got = rpc(&two, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
        assert_eq!(got["result"]["status"]["state"], "TASK_STATE_WORKING", "{name}: left as stored: {got}");
        // the code that resumes its tree sets the outcome; the service reads it on the next call
        assert!(a2a_state::set_task_status(store.as_ref(), &id, TaskState::Completed, "Resumed.").await.unwrap());
        let got = rpc(&two, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
        assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {got}");
        assert_eq!(got["result"]["status"]["message"]["parts"][0]["text"], "Resumed.");
        assert_eq!(error_code(&rpc(&two, "a2a-conformance", BOB, "GetTask", json!({"id": id})).await), -32001);
    }
}

/// A team whose `down` agent is unreachable (a fault: it opens for
/// everyone) and whose `picky` agent fails alice's requests only.
fn breaker_team(cool_down_ms: u64, store: Arc<dyn Store>) -> Runtime {
    builder(&[("caller", &["down", "picky"], &[]), ("down", &[], &[]), ("picky", &[], &[])])
        .store(store)
        .breaker(BreakerConfig { consecutive_failures: 3, cool_down_ms, probes: 1, ..BreakerConfig::default() })
        .agent("down", agent(|_, _| async { Err(DelegationError::new(ErrorCode::AgentUnavailable, "unreachable")) }))
        .agent(
            "picky",
            agent(|_, task| async move {
                if task.user_id.as_ref().is_some_and(|u| u.as_str() == "alice") {
                    Err(DelegationError::new(ErrorCode::AgentFailed, "cannot read that"))
                } else {
                    Ok(AgentOutput::new("fine", "fine"))
                }
            }),
        )
        .build()
        .unwrap()
}

fn ask(to: &str, who: &str, objective: &str) -> DelegationRequest {
    DelegationRequest::new(slug("caller"), slug(to), user(who), objective, "")
}

/// Waits (a bounded number of turns) until `done` holds; the breakers load and write in a task of their own.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never: {what}");
}

#[tokio::test]
async fn an_open_breaker_is_open_after_a_restart_and_each_users_own_stays_theirs() {
    for db in db::both().await {
        let name = db.name;
        let one = breaker_team(600_000, db.dyn_store());
        for n in 0..3 {
            one.delegate(&operator(), ask("down", "carol", &format!("down {n}"))).await;
            one.delegate(&operator(), ask("picky", "alice", &format!("picky {n}"))).await;
        }
        assert!(one.delegate(&operator(), ask("picky", "bob", "picky for bob")).await.is_success());
        assert_eq!(one.breaker_state(&slug("down")), BreakerState::Open, "{name}");
        assert_eq!(one.user_breaker_state(&slug("picky"), &user("alice")), BreakerState::Open, "{name}");
        assert_eq!(one.breaker_state(&slug("picky")), BreakerState::Closed, "{name}: alice alone can't");
        let store = db.dyn_store();
        eventually("both breakers on file", async || store.breakers().await.unwrap().len() >= 3).await;

        let two = breaker_team(600_000, reopen(&db).await);
        eventually("down's breaker reloaded", async || two.breaker_state(&slug("down")) == BreakerState::Open).await;
        assert_eq!(two.user_breaker_state(&slug("picky"), &user("alice")), BreakerState::Open, "{name}");
        assert_eq!(two.user_breaker_state(&slug("picky"), &user("bob")), BreakerState::Closed, "{name}");
        assert_eq!(two.breaker_state(&slug("picky")), BreakerState::Closed, "{name}");
        let refused = two.delegate(&operator(), ask("down", "bob", "down again")).await;
        assert_eq!(refused.error_code(), Some(ErrorCode::AgentUnavailable), "{name}");
        assert!(refused.error.unwrap().message.contains("circuit breaker for 'down' is open"), "{name}");
        let resting = two.delegate(&operator(), ask("picky", "alice", "picky again")).await;
        assert!(resting.error.unwrap().message.contains("resting for you"), "{name}");
        assert!(two.delegate(&operator(), ask("picky", "bob", "bob after the restart")).await.is_success(), "{name}");

        // reloaded after its cool-down (0 ms here): half-open, by the same rule as a running breaker
        let three = breaker_team(0, reopen(&db).await);
        eventually("down half-open", async || three.breaker_state(&slug("down")) == BreakerState::HalfOpen).await;
    }
}
