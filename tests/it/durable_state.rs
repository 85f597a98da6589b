//! What a restarted `switchboard serve` finds again in its database, on
//! SQLite and on PostgreSQL: the A2A tasks (status, history, artifacts,
//! owner), their stream events (numbered, resumable with Last-Event-ID),
//! and the circuit breakers with what they count. "Restarted" is a second
//! runtime over a second connection to the same database.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use switchboard::protocol::a2a::types::TaskState;
use switchboard::protocol::{DelegationError, DelegationRequest, ErrorCode};
use switchboard::resilience::{BreakerConfig, BreakerState};
use switchboard::store::sql::WriteStats;
use switchboard::store::{A2aTaskQuery, A2aTaskRecord, SqlStore, Store, a2a_keep};
use switchboard::{AgentOutput, Runtime};

use crate::a2a::{ALICE, BOB, error_code, message, router_for, rpc, team_config};
use crate::db;
use crate::http::call;
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
        assert!(db.store.put_a2a_task(&clean(working.clone())).await.unwrap());
        drop(one);

        let store = reopen(&db).await;
        let two = router_for(Runtime::builder().config(team_config()).store(store.clone()).build().unwrap()).await;
        let got = rpc(&two, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
        assert_eq!(got["result"]["status"]["state"], "TASK_STATE_WORKING", "{name}: left as stored: {got}");
        // the code that resumes its tree sets the outcome; the service reads it on the next call
        assert!(
            a2a_keep::set_task_status(
                store.as_ref(),
                &switchboard::store::TaskKeeper::new(switchboard::redact::SealKey::random()),
                &id,
                TaskState::Completed,
                "Resumed."
            )
            .await
            .unwrap()
        );
        let got = rpc(&two, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
        assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {got}");
        assert_eq!(got["result"]["status"]["message"]["parts"][0]["text"], "Resumed.");
        assert_eq!(error_code(&rpc(&two, "a2a-conformance", BOB, "GetTask", json!({"id": id})).await), -32001);
    }
}

/// A team whose `down` agent is unreachable (a fault: it opens for
/// everyone) and whose `picky` agent fails alice's requests only.
pub(crate) fn breaker_team(cool_down_ms: u64, store: Arc<dyn Store>) -> Runtime {
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

pub(crate) fn ask(to: &str, who: &str, objective: &str) -> DelegationRequest {
    DelegationRequest::new(slug("caller"), slug(to), user(who), objective, "")
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

// ---- A2A stream events: durable, numbered, resumable (Last-Event-ID) ----

const EVENTS_TEAM: &str = r#"
[limits]
deadline_ms = 60000

[[agents]]
slug = "mailer"
name = "Mailer"
requires_approval = ["send_email"]

[[agents]]
slug = "slow"
name = "Slow"

[auth]
user_tokens = { "alice" = "ev-alice" }
"#;
const EV_ALICE: &str = "ev-alice";

/// What the agents of [`events_team`] share across "processes".
#[derive(Default)]
struct Slow {
    started: tokio::sync::Notify,
}

/// `mailer` asks for approval before it sends; `slow` hangs when `hangs`
/// (the process "dies" there), else answers.
fn events_team(store: Arc<dyn Store>, slow: &Arc<Slow>, hangs: bool) -> Runtime {
    let slow = slow.clone();
    Runtime::builder()
        .config(switchboard::config::Config::from_toml(EVENTS_TEAM).unwrap())
        .store(store)
        .agent(
            "mailer",
            agent(|ctx, task| async move {
                ctx.approve("send_email", &task.objective).await?;
                Ok(AgentOutput::new("sent", "sent"))
            }),
        )
        .agent(
            "slow",
            agent(move |_ctx, _task| {
                let slow = slow.clone();
                async move {
                    slow.started.notify_waiters();
                    if hangs {
                        std::future::pending::<()>().await;
                    }
                    Ok(AgentOutput::new("slow done", "slow done"))
                }
            }),
        )
        .build()
        .unwrap()
}

/// A service over `db` with [`EVENTS_TEAM`]'s `slow` agent alone, which
/// says it `started`, then waits for a permit of `gate` before it answers;
/// and the database as `other` process opens it.
struct Gated {
    r: Router,
    gate: Arc<tokio::sync::Semaphore>,
    started: Arc<tokio::sync::Notify>,
    other: Arc<dyn Store>,
}

async fn gated(db: &db::Db) -> Gated {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let started = Arc::new(tokio::sync::Notify::new());
    let runtime = gated_team(db.dyn_store(), gate.clone(), started.clone());
    Gated { r: router_for(runtime).await, gate, started, other: reopen(db).await }
}

fn gated_team(store: Arc<dyn Store>, gate: Arc<tokio::sync::Semaphore>, started: Arc<tokio::sync::Notify>) -> Runtime {
    let mut config = switchboard::config::Config::from_toml(EVENTS_TEAM).unwrap();
    config.agents.retain(|a| a.slug.as_str() == "slow");
    Runtime::builder()
        .config(config)
        .store(store)
        .agent(
            "slow",
            agent(move |_ctx, _task| {
                let (gate, started) = (gate.clone(), started.clone());
                async move {
                    started.notify_one();
                    gate.acquire().await.unwrap().forget();
                    Ok(AgentOutput::new("gated done", "gated done"))
                }
            }),
        )
        .build()
        .unwrap()
}

/// The writer's counts once `enough` holds for them (waiting up to 5 s):
/// a commit is counted right after it returns, so a reader may see its rows
/// a moment before.
async fn counted(db: &db::Db, enough: impl Fn(&WriteStats) -> bool) -> WriteStats {
    let mut stats = db.store.write_stats();
    for _ in 0..500 {
        if enough(&stats) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        stats = db.store.write_stats();
    }
    stats
}

/// The one task sent to `slow` in `context`, as `store` finds it once it is
/// on file (waiting up to 5 s for it).
async fn slow_task_on_file(store: &dyn Store, context: &str) -> A2aTaskRecord {
    let query = A2aTaskQuery {
        owner: None,
        agent: "slow".into(),
        context_id: Some(context.to_string()),
        state: None,
        updated_after: None,
        offset: 0,
        limit: 10,
    };
    for _ in 0..500 {
        let mut found = store.a2a_tasks(&query).await.unwrap().tasks;
        if !found.is_empty() {
            assert_eq!(found.len(), 1, "one task in context {context}: {found:?}");
            return found.remove(0);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no task in context {context} is on file")
}

/// A blocking SendMessage writes its task before its agent runs, and its
/// delegation's end after, in commits that do not sync the log: its caller
/// hears of the task only when the task's last version is written, whose
/// synced commit syncs them too. A non-blocking send, whose caller hears of
/// the task at once, syncs it before it answers, and its delegation's end
/// syncs. Either way another process reads the task, working, while its
/// agent works, and the task's end syncs.
#[tokio::test]
async fn a_blocking_sends_task_is_synced_by_its_end_and_a_non_blocking_ones_before_the_answer() {
    for db in db::both().await {
        let name = db.name;
        let Gated { r, gate, started, other } = gated(&db).await;
        for (n, blocking) in [(1, true), (2, false)] {
            let context = format!("gated-{name}-{n}");
            let mut msg = message(&format!("gated-{n}"), "work");
            msg["contextId"] = json!(context);
            let mut params = json!({ "message": msg });
            if !blocking {
                params["configuration"] = json!({"returnImmediately": true});
            }
            let before = db.store.write_stats();
            let send = tokio::spawn({
                let r = r.clone();
                async move { rpc(&r, "slow", EV_ALICE, "SendMessage", params).await }
            });
            // a non-blocking send answers with the task while its agent waits
            let (answered, send) = if blocking { (None, Some(send)) } else { (Some(send.await.unwrap()), None) };
            started.notified().await;
            // the task, as another process finds it while the agent works
            let on_file = slow_task_on_file(other.as_ref(), &context).await;
            assert_eq!(on_file.state, "TASK_STATE_WORKING", "{name}: blocking {blocking}");
            let id = on_file.id;
            // both starts counted (the step's and the task's: one commit or two)
            let working = counted(&db, |w| w.writes - before.writes >= 2).await;
            assert_eq!(working.writes - before.writes, 2, "{name}: blocking {blocking}: the two starts");
            // synced before the agent ran: nothing for a blocking send (the task's start and the
            // step's wait for the end's sync), the task for a non-blocking one (its caller has it)
            assert_eq!(working.synced - before.synced, u64::from(!blocking), "{name}: blocking {blocking}");
            gate.add_permits(1);
            let state = match answered {
                None => {
                    let answer = send.expect("a blocking send answers at its end").await.unwrap();
                    let task = &answer["result"]["task"];
                    assert_eq!(task["id"], id.as_str(), "{name}: {answer}");
                    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "gated done", "{name}: {answer}");
                    task["status"]["state"].clone()
                }
                Some(answer) => {
                    assert_eq!(answer["result"]["task"]["id"], id.as_str(), "{name}: {answer}");
                    let mut got = Value::Null;
                    for _ in 0..500 {
                        got = rpc(&r, "slow", EV_ALICE, "GetTask", json!({"id": id})).await;
                        if got["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    got["result"]["status"]["state"].clone()
                }
            };
            // the delegation's end, then the task's last version: for a blocking send only the
            // second syncs (and syncs the first with it); for any other, both. (A non-blocking
            // send's GetTask may read the task's end before its commit is counted.)
            let end = counted(&db, |w| w.commits - working.commits >= 2).await;
            let (commits, synced) = (end.commits - working.commits, end.synced - working.synced);
            assert_eq!((commits, synced), (2, 2 - u64::from(blocking)), "{name}: blocking {blocking}");
            let stored = other.a2a_task(&id).await.unwrap().unwrap();
            assert_eq!(stored.state, "TASK_STATE_COMPLETED", "{name}: blocking {blocking}: {state}");
        }
    }
}

/// A blocking send cancelled while its agent works: the cancel writes the
/// task's end first, so the turn's own end writes nothing of the task, and
/// the send syncs before it answers `canceled` (its delegation's end went
/// without a sync of its own). Another process then reads the task canceled
/// and the delegation on file, cancelled.
#[tokio::test]
async fn a_blocking_send_cancelled_while_its_agent_works_answers_canceled_with_its_end_on_file() {
    for db in db::both().await {
        let name = db.name;
        let Gated { r, gate, started, other } = gated(&db).await;
        let mut msg = message("gated-cancel", "work");
        msg["contextId"] = json!(format!("gated-cancel-{name}"));
        let send = tokio::spawn({
            let r = r.clone();
            async move { rpc(&r, "slow", EV_ALICE, "SendMessage", json!({ "message": msg })).await }
        });
        started.notified().await;
        let id = slow_task_on_file(other.as_ref(), &format!("gated-cancel-{name}")).await.id;
        let cancelled = rpc(&r, "slow", EV_ALICE, "CancelTask", json!({"id": id})).await;
        assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{name}: {cancelled}");
        let answer = tokio::time::timeout(Duration::from_secs(30), send).await.expect("the send answers").unwrap();
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_CANCELED", "{name}: {answer}");
        assert_eq!(other.a2a_task(&id).await.unwrap().unwrap().state, "TASK_STATE_CANCELED", "{name}");
        let request: switchboard::protocol::RequestId = id.parse().unwrap();
        let mut tree = Vec::new();
        for _ in 0..500 {
            tree = other.delegation_tree(request).await.unwrap();
            if !tree.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(tree.len(), 1, "{name}: the delegation's end is on file");
        assert_eq!(tree[0].error_code.as_deref(), Some("CANCELLED"), "{name}: {:?}", tree[0]);
        gate.add_permits(1);
    }
}

/// SubscribeToTask over JSON-RPC (`rest`: over HTTP+JSON), with a `Last-Event-ID`.
fn subscribe_request(slug: &str, task: &str, last_event_id: Option<&str>, rest: bool) -> Request<Body> {
    subscribe_as(EV_ALICE, slug, task, last_event_id, rest)
}

fn subscribe_as(token: &str, slug: &str, task: &str, last_event_id: Option<&str>, rest: bool) -> Request<Body> {
    let (uri, body) = if rest {
        (format!("/a2a/{slug}/tasks/{task}:subscribe"), String::new())
    } else {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": task}});
        (format!("/a2a/{slug}"), body.to_string())
    };
    let mut b = Request::post(uri)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {token}"));
    if let Some(id) = last_event_id {
        b = b.header("last-event-id", id);
    }
    b.body(Body::from(body)).unwrap()
}

/// SSE frames as (the `id:` line's number, the data's JSON-RPC result or HTTP+JSON body).
fn numbered_frames(body: &[u8]) -> Vec<(Option<u64>, Value)> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        let id = frame.lines().find_map(|l| l.strip_prefix("id:")).map(|n| n.trim().parse::<u64>().unwrap());
        let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) else { continue };
        let v: Value = serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{e}: {data}"));
        out.push((id, v.get("result").cloned().unwrap_or(v)));
    }
    out
}

fn state_of(event: &Value) -> &str {
    event["statusUpdate"]["status"]["state"]
        .as_str()
        .or_else(|| event["task"]["status"]["state"].as_str())
        .unwrap_or("")
}

/// A subscription that waits for live events, read to its end (bounded).
async fn subscribed(r: &Router, req: Request<Body>) -> Vec<(Option<u64>, Value)> {
    let reply = tokio::time::timeout(Duration::from_secs(20), call(r, req)).await.expect("the stream ended");
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    numbered_frames(&reply.body)
}

#[tokio::test]
async fn a2a_events_survive_a_restart_and_last_event_id_gets_exactly_the_missed_ones_then_live_ones() {
    for db in db::both().await {
        let name = db.name;
        let slow = Arc::new(Slow::default());
        let one = router_for(events_team(db.dyn_store(), &slow, false)).await;
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage",
            "params": {"message": message("ev-1", "Mail the report to the team")}});
        let req = Request::post("/a2a/mailer")
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .header("authorization", format!("Bearer {EV_ALICE}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        let sent = numbered_frames(&call(&one, req).await.body);
        // the task (no id), then its events numbered 1, 2, ...; the last one waits for the approval
        assert_eq!(sent[0].0, None, "{name}: {sent:?}");
        let task = sent[0].1["task"]["id"].as_str().unwrap().to_string();
        let events: Vec<(u64, Value)> = sent[1..].iter().map(|(id, v)| (id.expect("numbered"), v.clone())).collect();
        let n = events.len() as u64;
        assert!(n >= 2, "{name}: working, then input-required: {sent:?}");
        assert_eq!(events.iter().map(|e| e.0).collect::<Vec<_>>(), (1..=n).collect::<Vec<_>>(), "{name}");
        assert_eq!(state_of(&events[0].1), "TASK_STATE_WORKING", "{name}");
        assert_eq!(state_of(&events[n as usize - 1].1), "TASK_STATE_INPUT_REQUIRED", "{name}");
        drop(one);

        // the restart: a client that saw only event 1 gets 2..=n, as they were sent, then the stream ends
        let store = reopen(&db).await;
        let rt = events_team(store.clone(), &slow, false);
        let two = router_for(rt.clone()).await;
        let resumed = subscribed(&two, subscribe_request("mailer", &task, Some("1"), false)).await;
        assert_eq!(resumed[0].0, None, "{name}: the task first");
        assert_eq!(state_of(&resumed[0].1), "TASK_STATE_INPUT_REQUIRED", "{name}: as it is now");
        assert_eq!(
            resumed[1..].iter().map(|(id, v)| (id.unwrap(), v.clone())).collect::<Vec<_>>(),
            events[1..],
            "{name}"
        );
        // over HTTP+JSON too: only the newest one
        let last = subscribed(&two, subscribe_request("mailer", &task, Some(&(n - 1).to_string()), true)).await;
        assert_eq!(last.len(), 2, "{name}: {last:?}");
        assert_eq!((last[1].0, &last[1].1), (Some(n), &events[n as usize - 1].1), "{name}");

        // live: a client up to date waits; the approval resumes the tree; its end comes as event n + 1, once
        let live = tokio::spawn({
            let (two, task) = (two.clone(), task.clone());
            async move { subscribed(&two, subscribe_request("mailer", &task, Some(&n.to_string()), false)).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let alice = switchboard::Principal::User(user("alice"));
        let approval = rt.approvals(&alice, true).await.unwrap().pop().expect("a pending approval");
        rt.decide(&alice, &approval.id, true, None).await.unwrap();
        rt.resume_tree(approval.root_id).await.unwrap();
        let got = live.await.unwrap();
        assert_eq!(got.len(), 3, "{name}: the task, then the tree's answer and the end: {got:?}");
        assert_eq!((got[1].0, got[2].0), (Some(n + 1), Some(n + 2)), "{name}");
        assert_eq!(got[1].1["artifactUpdate"]["artifact"]["parts"][0]["text"], "sent", "{name}: {got:?}");
        assert_eq!(state_of(&got[2].1), "TASK_STATE_COMPLETED", "{name}: {got:?}");
        let stored = store.a2a_events(&task, 0, 100).await.unwrap();
        assert_eq!(stored.iter().map(|e| e.seq as u64).collect::<Vec<_>>(), (1..=n + 2).collect::<Vec<_>>(), "{name}");
        // a terminal task is not subscribed to (A2A 1.0: UnsupportedOperationError), with or without Last-Event-ID
        let done = call(&two, subscribe_request("mailer", &task, Some("1"), false)).await.json();
        assert_eq!(error_code(&done), -32004, "{name}: {done}");
    }
}

#[tokio::test]
async fn a_working_task_cut_off_by_a_restart_streams_its_end_once_its_tree_resumes() {
    for db in db::both().await {
        let name = db.name;
        let slow = Arc::new(Slow::default());
        let first = events_team(db.dyn_store(), &slow, true);
        let one = router_for(first.clone()).await;
        let started = slow.started.notified();
        let sent = rpc(
            &one,
            "slow",
            EV_ALICE,
            "SendMessage",
            json!({"message": message("ev-2", "Take your time"), "configuration": {"returnImmediately": true}}),
        )
        .await;
        let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {sent}")).to_string();
        tokio::time::timeout(Duration::from_secs(10), started).await.expect("slow started");
        let store = db.dyn_store();
        eventually("the working event on file", async || store.a2a_event_seq(&task).await.unwrap() >= 1).await;
        // the process "dies" with the turn in flight: its lease ends with it
        // (its agent hangs on in this test process, so its end is declared)
        drop(one);
        first.release_lease().await;

        let store = reopen(&db).await;
        let rt = events_team(store.clone(), &slow, false);
        let two = router_for(rt.clone()).await;
        let live = tokio::spawn({
            let (two, task) = (two.clone(), task.clone());
            async move { subscribed(&two, subscribe_request("slow", &task, Some("0"), false)).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let found = rt.resume_open_trees().await.unwrap();
        assert!(found.resumed.iter().any(|id| id.to_string() == task), "{name}: {:?}", found.resumed);
        let got = live.await.unwrap();
        assert_eq!(state_of(&got[0].1), "TASK_STATE_WORKING", "{name}: the task as stored: {got:?}");
        assert_eq!(got[1..].iter().map(|e| e.0.unwrap()).collect::<Vec<_>>(), [1, 2, 3], "{name}: {got:?}");
        assert_eq!(state_of(&got[1].1), "TASK_STATE_WORKING", "{name}");
        assert_eq!(got[2].1["artifactUpdate"]["artifact"]["parts"][0]["text"], "slow done", "{name}: {got:?}");
        let end = &got[3].1["statusUpdate"]["status"];
        assert_eq!(end["state"], "TASK_STATE_COMPLETED", "{name}: {got:?}");
        assert_eq!(end["message"]["parts"][0]["text"], "slow done", "{name}");
        let read = rpc(&two, "slow", EV_ALICE, "GetTask", json!({"id": task})).await;
        assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {read}");
        assert_eq!(read["result"]["artifacts"][0]["parts"][0]["text"], "slow done", "{name}: the answer's artifact");
    }
}

#[tokio::test]
async fn a_last_event_id_that_is_not_one_of_the_tasks_is_invalid_params_never_a_panic() {
    for db in db::both().await {
        let name = db.name;
        let slow = Arc::new(Slow::default());
        let r = router_for(events_team(db.dyn_store(), &slow, false)).await;
        let sent = rpc(&r, "mailer", EV_ALICE, "SendMessage", json!({"message": message("ev-3", "Mail it")})).await;
        let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {sent}")).to_string();
        assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{name}");
        for bad in ["abc", "-1", "1.5", "99999", "18446744073709551616", "\u{7f}x"] {
            let Ok(req) = std::panic::catch_unwind(|| subscribe_request("mailer", &task, Some(bad), false)) else {
                continue; // not even a header value
            };
            let got = call(&r, req).await.json();
            assert_eq!(error_code(&got), -32602, "{name}: {bad}: {got}");
            assert!(got["error"]["message"].as_str().unwrap().contains("Last-Event-ID"), "{name}: {got}");
            let rest = call(&r, subscribe_request("mailer", &task, Some(bad), true)).await;
            assert_eq!(rest.status, 400, "{name}: {bad}: {}", String::from_utf8_lossy(&rest.body));
        }
        // an empty one is no Last-Event-ID: the task as it is now, then what comes
        let waiting = tokio::spawn({
            let (r, task) = (r.clone(), task.clone());
            async move { call(&r, subscribe_request("mailer", &task, Some(""), false)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "{name}: a live subscription");
        waiting.abort();
    }
}

#[tokio::test]
async fn a_subscriber_of_one_process_gets_the_events_another_process_stored() {
    for db in db::both().await {
        let name = db.name;
        let a = router_for(Runtime::builder().config(team_config()).store(db.dyn_store()).build().unwrap()).await;
        let b = router_for(Runtime::builder().config(team_config()).store(reopen(&db).await).build().unwrap()).await;
        let waiting = rpc(
            &a,
            "a2a-conformance",
            ALICE,
            "SendMessage",
            json!({"message": message("tck-input-required-1", "start")}),
        )
        .await;
        let id = waiting["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {waiting}")).to_string();
        let n = db.store.a2a_event_seq(&id).await.unwrap() as u64;
        assert!(n >= 2, "{name}: working, then input-required");
        // a client of process b, up to date, waits for what comes
        let live = tokio::spawn({
            let (b, id) = (b.clone(), id.clone());
            async move { subscribed(&b, subscribe_as(ALICE, "a2a-conformance", &id, Some(&n.to_string()), true)).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        // the next turn runs in process a
        let mut more = message("tck-complete-task-2", "here you go");
        more["taskId"] = json!(id);
        let done = rpc(&a, "a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
        assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {done}");
        let got = live.await.unwrap();
        let stored = db.store.a2a_events(&id, n as i64, 100).await.unwrap();
        assert!(!stored.is_empty(), "{name}");
        let expected: Vec<(u64, Value)> =
            stored.iter().map(|e| (e.seq as u64, serde_json::to_value(e.to_event().unwrap()).unwrap())).collect();
        let seen: Vec<(u64, Value)> = got[1..].iter().map(|(id, v)| (id.unwrap(), v.clone())).collect();
        assert_eq!(seen, expected, "{name}: every event process a stored, in order, once");
        assert_eq!(state_of(&seen.last().unwrap().1), "TASK_STATE_COMPLETED", "{name}");
        // process b wrote no end of its own (the turn's process did), also after the grace it leaves it
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert_eq!(db.store.a2a_events(&id, n as i64, 100).await.unwrap(), stored, "{name}: no second end");
        let read = rpc(&b, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
        assert_eq!(read["result"]["status"], done["result"]["task"]["status"], "{name}: {read}");
    }
}

// ---- breaker counts short of opening ----

#[tokio::test]
async fn four_failures_before_a_restart_and_one_after_open_the_breaker() {
    for db in db::both().await {
        let name = db.name;
        let team = |store| {
            builder(&[("caller", &["down"], &[]), ("down", &[], &[])])
                .store(store)
                .breaker(BreakerConfig { consecutive_failures: 5, cool_down_ms: 600_000, ..BreakerConfig::default() })
                .agent(
                    "down",
                    agent(|_, _| async { Err(DelegationError::new(ErrorCode::AgentUnavailable, "unreachable")) }),
                )
                .build()
                .unwrap()
        };
        // one attempt per delegation: one failure each
        let once = |who: &str, objective: &str| {
            let mut req = ask("down", who, objective);
            req.retry_policy = Some(serde_json::from_value(json!({"enabled": false})).unwrap());
            req
        };
        let one = team(db.dyn_store());
        for n in 0..4 {
            one.delegate(&operator(), once("carol", &format!("down {n}"))).await;
        }
        assert_eq!(one.breaker_state(&slug("down")), BreakerState::Closed, "{name}");
        let store = db.dyn_store();
        eventually("four failures on file", async || {
            store.breakers().await.unwrap().iter().any(|b| b.user.is_none() && b.consecutive == 4)
        })
        .await;
        let on_file = store.breakers().await.unwrap();
        let down = on_file.iter().find(|b| b.user.is_none()).unwrap();
        assert_eq!((down.state.as_str(), down.run_faults, down.counters.recent.len()), ("closed", 4, 4), "{name}");
        drop(one);

        let two = team(reopen(&db).await);
        let fifth = two.delegate(&operator(), once("dave", "down after the restart")).await;
        assert_eq!(fifth.error_code(), Some(ErrorCode::AgentUnavailable), "{name}");
        eventually("open after the fifth", async || two.breaker_state(&slug("down")) == BreakerState::Open).await;
        let refused = two.delegate(&operator(), ask("down", "erin", "down again")).await;
        assert!(refused.error.unwrap().message.contains("circuit breaker for 'down' is open"), "{name}");
    }
}

/// The store's commits are on `/metrics`, read from its writer at each
/// scrape: what `scripts/bench.sh` divides by the delegations served to
/// count syncs per delegation (and, on SQLite, the pages its log took). A runtime on the in-memory store, which
/// writes nothing to disk, has no such series.
#[tokio::test]
async fn the_stores_commits_and_syncs_are_on_metrics() {
    fn counter(text: &str, name: &str) -> u64 {
        let line = text.lines().find(|l| l.starts_with(&format!("switchboard_{name}_total "))).unwrap_or_else(|| {
            panic!("no switchboard_{name}_total in:\n{text}");
        });
        line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a count")
    }
    for db in db::both().await {
        let name = db.name;
        let rt = Runtime::builder().config(team_config()).store(db.dyn_store()).build().unwrap();
        let before = db.store.write_stats();
        let r = rt.delegate(&operator(), request("prime-boss", "tag-ai", "Categorize: Starbucks 4.50")).await;
        assert!(r.error.is_none(), "{name}: {:?}", r.error);
        let done = counted(&db, |w| w.synced > before.synced).await;
        assert!(done.synced > before.synced, "{name}: a delegation synced the log");
        let text = rt.metrics_text();
        let now = db.store.write_stats();
        for (metric, from, to) in [
            ("store_writes", done.writes, now.writes),
            ("store_commits", done.commits, now.commits),
            ("store_synced_commits", done.synced, now.synced),
        ] {
            let v = counter(&text, metric);
            assert!((from..=to).contains(&v), "{name}: {metric} {v}, the store counted {from}..={to}");
        }
        assert!(text.contains("# TYPE switchboard_store_synced_commits counter"), "{name}: {text}");
        // the pages written to SQLite's log; PostgreSQL's are its server's, not counted
        match (done.log_pages, now.log_pages) {
            (Some(from), Some(to)) => {
                let v = counter(&text, "store_log_pages");
                assert!(from > 0 && (from..=to).contains(&v), "{name}: log pages {v}, the store counted {from}..={to}");
            }
            _ => assert!(!text.contains("switchboard_store_log_pages"), "{name}: {text}"),
        }
    }
    let memory = Runtime::builder().config(team_config()).build().unwrap();
    let _ = memory.delegate(&operator(), request("prime-boss", "tag-ai", "Categorize: Starbucks 4.50")).await;
    assert!(!memory.metrics_text().contains("switchboard_store_"), "the in-memory store has no commits");
}

/// What a top-level delegation costs SQLite's log, in pages (the store's
/// own count, `switchboard_store_log_pages_total`), to an agent that does
/// no work of its own: one at a time, so each is two commits of its own
/// (its step's start, then its records), and each commit writes one leaf
/// of every table and index its rows go into. Its own id is its root's: it
/// goes into the keys of its tree step and its record, which every write
/// needs (one id, one owner), and into no index of roots and no index of
/// the audit log's requests (three pages each time it did: 23.4 pages per
/// delegation before migration 16, 20.2 after). Under load an index keyed
/// by a caller's random id costs a page per delegation however many share
/// a commit, so the same three are most of what 64 connections save
/// (docs/PERFORMANCE.md).
#[tokio::test]
async fn a_top_level_delegation_writes_its_ids_into_no_index_of_roots() {
    let db = db::sqlite().await;
    let config = switchboard::config::Config::from_toml(
        "[[agents]]\nslug = \"boss\"\nname = \"Boss\"\nmay_delegate_to = [\"echo\"]\nbackend = { kind = \"builtin\", name = \"echo\" }\n\n\
         [[agents]]\nslug = \"echo\"\nname = \"Echo\"\nbackend = { kind = \"builtin\", name = \"echo\" }\n",
    )
    .unwrap();
    let rt = Runtime::builder().config(config).store(db.dyn_store()).build().unwrap();
    let ask = |n: usize| request("boss", "echo", &format!("Echo {n}"));
    for n in 0..200 {
        assert!(rt.delegate(&operator(), ask(n)).await.error.is_none());
    }
    let before = counted(&db, |w| w.commits >= 400).await;
    let n = 50;
    for i in 0..n {
        assert!(rt.delegate(&operator(), ask(1000 + i)).await.error.is_none());
    }
    let after = counted(&db, |w| w.commits >= before.commits + 2 * n as u64).await;
    assert_eq!(after.commits - before.commits, 2 * n as u64, "two commits each");
    let pages = after.log_pages.unwrap() - before.log_pages.expect("SQLite counts its log's pages");
    let per = pages as f64 / n as f64;
    eprintln!("log pages per top-level delegation: {per:.2}");
    assert!(per <= 21.5, "{per:.2} log pages per top-level delegation");
}
