//! Deterministic replay (issue 17): a recorded tree runs again from its
//! journal and is shown identical, changing nothing in the store; `--live`
//! runs today's agents and names the node whose answer changed; a tree
//! whose journal is incomplete is refused with `RECORD_INCOMPLETE`; the
//! command works on the real binary across processes.

use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::Executor;
use switchboard::agent::Call;
use switchboard::config::Config;
use switchboard::pipeline::{ReplayMode, ReplayReport};
use switchboard::protocol::{ErrorCode, RequestId, Status};
use switchboard::store::Store;
use switchboard::{AgentOutput, AskOptions, Runtime};

use crate::db::{self, Db};
use crate::support::{agent, slug, user};

fn receipt() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("receipt.txt");
    std::fs::read_to_string(path).unwrap()
}

/// What a store holds, every table a replay could touch.
async fn state(store: &Arc<dyn Store>, root: RequestId) -> String {
    let steps = store.tree_steps(root).await.unwrap();
    let approvals = store.approvals(None, false).await.unwrap();
    format!("{:?} steps={steps:?} approvals={approvals:?}", store.counts().await.unwrap())
}

fn node<'a>(report: &'a ReplayReport, agent: &str) -> &'a switchboard::pipeline::ReplayedNode {
    report.nodes.iter().find(|n| n.agent == agent).unwrap_or_else(|| panic!("no {agent} in {report:?}"))
}

#[tokio::test]
async fn a_tree_of_the_built_in_team_replays_identical_and_changes_nothing() {
    for db in db::both().await {
        let store = db.dyn_store();
        let rt = Runtime::builder().store(store.clone()).build().unwrap();
        let opts = AskOptions { input: Some(receipt()), ..Default::default() };
        let r = rt.ask(&user("alice"), "Upload this receipt and categorize it", opts).await.unwrap();
        assert_eq!(r.status, Status::Success, "{}: {}", db.name, r.answer);
        let before = state(&store, r.request_id).await;

        for mode in [ReplayMode::Recorded, ReplayMode::Live] {
            let report = rt.replay(r.request_id, mode).await.unwrap();
            assert!(report.identical, "{}: {mode:?}\n{}", db.name, report.render());
            let agents: Vec<&str> = report.nodes.iter().map(|n| n.agent.as_str()).collect();
            assert_eq!(agents, ["prime-boss", "byte-doc", "tag-ai"], "{}", db.name);
            assert_eq!(report.nodes.iter().map(|n| n.depth).collect::<Vec<_>>(), [0, 1, 1], "{}", db.name);
            // built-in agents ran again: nothing was answered from the record
            assert!(report.nodes.iter().all(|n| !n.from_record && n.replayed.is_some()), "{report:?}");
            assert_eq!(node(&report, "tag-ai").replayed.as_ref().unwrap().status, "success");
            assert!(report.render().ends_with("identical\n"), "{}", report.render());
            assert_eq!(report.recorded_at, store.step(r.request_id).await.unwrap().unwrap().created_at);
        }
        // nothing in the store changed: no record, audit entry, session, step or approval
        assert_eq!(state(&store, r.request_id).await, before, "{}", db.name);
        assert!(store.verify_audit().await.unwrap().valid, "{}", db.name);
    }
}

/// A built-in agent that read the user's money records replays from what it read
/// then (kept with its step), not from the store as it is now: the money records
/// grows after the tree, and the replay is still identical. The replay's
/// report is kept beside the tree; another user may not replay it.
#[tokio::test]
async fn a_tree_that_read_money_records_replays_from_what_it_read_then() {
    for db in db::both().await {
        let store = db.dyn_store();
        let rt = Runtime::builder().store(store.clone()).build().unwrap();
        let alice = user("alice");
        let turn = |message: &'static str, input: Option<&'static str>| {
            let opts = AskOptions { input: input.map(str::to_string), ..Default::default() };
            let rt = rt.clone();
            let alice = alice.clone();
            async move { rt.ask(&alice, message, opts).await.unwrap() }
        };
        let statement = "Date,Description,Amount\n10/01/2026,Starbucks,-4.50\n10/02/2026,Starbucks,-5.40\n";
        let kept = turn("Here's my bank statement", Some(statement)).await;
        assert_eq!(kept.status, Status::Success, "{}: {}", db.name, kept.answer);
        let asked = turn("What did I spend at Starbucks?", None).await;
        assert!(asked.answer.contains("$9.90"), "{}: {}", db.name, asked.answer);

        // what the agent read is on file with its step
        let steps = store.tree_steps(asked.request_id).await.unwrap();
        let read: Vec<&str> = steps.iter().filter_map(|s| s.reads.as_deref()).collect();
        assert!(
            read.iter().any(|r| r.contains("\"call\":\"read\"") && r.contains("Starbucks")),
            "{}: {read:?}",
            db.name
        );

        // later the money records holds more: a replay still answers as the tree did
        let more = "Date,Description,Amount\n10/03/2026,Starbucks,-7.00\n";
        assert_eq!(turn("Here's another statement", Some(more)).await.status, Status::Success, "{}", db.name);
        assert!(turn("What did I spend at Starbucks?", None).await.answer.contains("$16.90"), "{}", db.name);
        let owner = switchboard::auth::Principal::User(alice.clone());
        for mode in [ReplayMode::Recorded, ReplayMode::Live] {
            let report = rt.replay_for(&owner, asked.request_id, mode).await.unwrap();
            assert!(report.identical, "{}: {mode:?}\n{}", db.name, report.render());
        }
        let kept = store.replays(asked.request_id).await.unwrap();
        assert_eq!(kept.len(), 2, "{}: both replays are on file", db.name);
        assert!(kept.iter().all(|r| r.identical && r.run_by == "user:alice" && r.user_id == alice), "{kept:?}");
        assert_eq!((kept[0].mode.as_str(), kept[1].mode.as_str()), ("live", "recorded"), "{}: newest first", db.name);
        let report: serde_json::Value = serde_json::from_str(&kept[0].report).unwrap();
        assert_eq!(report["root_id"], asked.request_id.to_string());

        // another user's replay is refused and leaves no record
        let bob = switchboard::auth::Principal::User(user("bob"));
        let e = rt.replay_for(&bob, asked.request_id, ReplayMode::Recorded).await.map(drop).unwrap_err();
        assert_eq!(e.code, ErrorCode::UserMismatch, "{}", e.message);
        assert_eq!(store.replays(asked.request_id).await.unwrap().len(), 2, "{}", db.name);
    }
}

const CONFIG: &str = r#"
[[agents]]
slug = "boss"
name = "Boss"
may_delegate_to = ["first", "second", "third"]

[[agents]]
slug = "first"
name = "First"

[[agents]]
slug = "second"
name = "Second"
[agents.backend]
kind = "command"
command = "true"

[[agents]]
slug = "third"
name = "Third"
"#;

/// A runtime on `db` whose boss calls first and second (and third when
/// `extra`), and answers how many answers it got; `second` answers `said`
/// and counts its runs in `ran` (it stands for a model: backend `command`).
fn runtime(db: &Db, said: &'static str, ran: &Arc<AtomicUsize>, extra: bool) -> Runtime {
    let ran = ran.clone();
    Runtime::builder()
        .config(Config::from_toml(CONFIG).unwrap())
        .store(db.dyn_store())
        .agent(
            "boss",
            agent(move |ctx, _task| async move {
                let d = ctx.delegator()?;
                let mut got = 0;
                let mut calls = vec!["first", "second"];
                if extra {
                    calls.push("third");
                }
                for to in calls {
                    if d.delegate(Call::new(slug(to), format!("step {to}"))).await.status == Status::Success {
                        got += 1;
                    }
                }
                Ok(AgentOutput::new("done", format!("{got} answers")))
            }),
        )
        .agent("first", agent(|_ctx, _task| async { Ok(AgentOutput::new("one", "one")) }))
        .agent(
            "second",
            agent(move |_ctx, _task| {
                let ran = ran.clone();
                async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok(AgentOutput::new("two", format!("line a\n{said}\nline c")))
                }
            }),
        )
        .agent("third", agent(|_ctx, _task| async { Ok(AgentOutput::new("three", "three")) }))
        .build()
        .unwrap()
}

fn to_boss() -> AskOptions {
    AskOptions { agent: Some(slug("boss")), ..Default::default() }
}

#[tokio::test]
async fn a_changed_agent_is_the_one_node_a_live_replay_names_and_a_recorded_replay_does_not_run_it() {
    for db in db::both().await {
        let ran = Arc::new(AtomicUsize::new(0));
        let r = runtime(&db, "two", &ran, false).ask(&user("alice"), "Do the steps", to_boss()).await.unwrap();
        assert_eq!((r.status, r.answer.as_str()), (Status::Success, "2 answers"), "{}", db.name);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let before = state(&db.dyn_store(), r.request_id).await;

        // today the model behind `second` says something else
        let today = runtime(&db, "TWO", &ran, false);
        let recorded = today.replay(r.request_id, ReplayMode::Recorded).await.unwrap();
        assert!(recorded.identical, "{}: {}", db.name, recorded.render());
        assert!(node(&recorded, "second").from_record && !node(&recorded, "first").from_record, "{recorded:?}");
        assert_eq!(ran.load(Ordering::SeqCst), 1, "{}: a recorded replay asks no model", db.name);

        let live = today.replay(r.request_id, ReplayMode::Live).await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2, "{}: a live replay does", db.name);
        assert!(!live.identical, "{}", db.name);
        assert_eq!(live.differing, 1, "{}: {}", db.name, live.render());
        let changed: Vec<&str> = live.nodes.iter().filter(|n| !n.same).map(|n| n.agent.as_str()).collect();
        assert_eq!(changed, ["second"], "{}", db.name);
        assert_eq!(node(&live, "second").differences, ["result:", "- two", "+ TWO"], "{}", db.name);
        let text = live.render();
        assert!(text.contains("DIFFERENT") && text.ends_with("1 of 3 nodes differ\n"), "{text}");

        // a call made now that was not made then is listed as added
        let more = runtime(&db, "two", &ran, true).replay(r.request_id, ReplayMode::Live).await.unwrap();
        let added: Vec<(&str, bool)> =
            more.nodes.iter().filter(|n| !n.same).map(|n| (n.agent.as_str(), n.recorded.is_none())).collect();
        assert_eq!(added, [("boss", false), ("third", true)], "{}: {}", db.name, more.render());
        assert!(more.render().contains("added"), "{}", more.render());

        assert_eq!(state(&db.dyn_store(), r.request_id).await, before, "{}: replays change nothing", db.name);
    }
}

#[tokio::test]
async fn a_tree_whose_journal_is_incomplete_is_refused_and_nothing_changes() {
    let db = db::sqlite().await;
    let store = db.dyn_store();
    let ran = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&db, "two", &ran, false);
    let code = |r: Result<ReplayReport, switchboard::DelegationError>| r.map(drop).unwrap_err();

    let unknown = code(rt.replay(RequestId::new(), ReplayMode::Recorded).await);
    assert_eq!(unknown.code, ErrorCode::NotFound, "{}", unknown.message);

    let r = rt.ask(&user("alice"), "Do the steps", to_boss()).await.unwrap();
    let child = store.tree_steps(r.request_id).await.unwrap().into_iter().find(|s| s.target == "second").unwrap();
    let not_root = code(rt.replay(child.request_id, ReplayMode::Recorded).await);
    assert_eq!(not_root.code, ErrorCode::NotFound);
    assert!(not_root.message.contains(&r.request_id.to_string()), "names the root: {}", not_root.message);

    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    // a step that never got its answer
    let sql = format!("UPDATE tree_steps SET response = NULL WHERE request_id = '{}'", child.request_id);
    pool.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
    let before = state(&store, r.request_id).await;
    let e = code(rt.replay(r.request_id, ReplayMode::Recorded).await);
    assert_eq!(e.code, ErrorCode::RecordIncomplete, "{}", e.message);
    assert!(e.message.contains(&child.request_id.to_string()) && e.message.contains("second"), "{}", e.message);
    assert_eq!(state(&store, r.request_id).await, before);

    // a tree as it was before the journal: delegation records, no steps
    pool.execute("DELETE FROM tree_steps").await.unwrap();
    let before = state(&store, r.request_id).await;
    for mode in [ReplayMode::Recorded, ReplayMode::Live] {
        let e = code(rt.replay(r.request_id, mode).await);
        assert_eq!(e.code, ErrorCode::RecordIncomplete, "{}", e.message);
        assert!(e.message.contains("no journal steps"), "{}", e.message);
    }
    assert_eq!(state(&store, r.request_id).await, before, "nothing changes state");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "nothing ran");
}

fn bin(db_url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("SWITCHBOARD_CONFIG").env_remove("SWITCHBOARD_USER").env_remove("RUST_LOG");
    c.env("SWITCHBOARD_DATABASE_URL", db_url);
    c
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_command_replays_a_tree_an_earlier_process_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("switchboard.db").display());
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("receipt.txt");
    let o = bin(&url)
        .args(["ask", "--json", "--file", file.to_str().unwrap(), "Upload this receipt and categorize it"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = v["request_id"].as_str().unwrap().to_string();

    let o = bin(&url).args(["replay", &id]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("byte-doc") && out.contains("tag-ai"), "{out}");
    assert!(out.trim_end().ends_with("identical"), "{out}");

    let o = bin(&url).args(["replay", "--json", "--live", &id]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["identical"].as_bool(), v["mode"].as_str()), (Some(true), Some("live")), "{v}");
    assert_eq!(v["nodes"].as_array().unwrap().len(), 3, "{v}");

    // an unknown tree and a malformed id: a clear error with its code, never a panic
    let o = bin(&url).args(["replay", &RequestId::new().to_string()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2 /* usage: an id that names nothing */), "{}", text(&o));
    assert!(text(&o).contains("NOT_FOUND"), "{}", text(&o));
    let o = bin(&url).args(["replay", "not-an-id"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
