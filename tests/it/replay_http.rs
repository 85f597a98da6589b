//! Replays and resumed trees over HTTP, on a real server on 127.0.0.1 over
//! SQLite and PostgreSQL: the tree's user replays it at
//! `POST /v1/trees/{id}/replay` (identical, and kept: `GET …/replays` lists
//! it); another user, a service token, a malformed body or id and an
//! unknown tree are refused with stable codes and keep nothing; a tree cut
//! off mid-run cannot be replayed until a restarted server resumed it, and
//! then its journal (`GET …/steps`) says it was resumed once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::Runtime;
use switchboard::protocol::RequestId;
use switchboard::server::AppState;
use switchboard::store::Store;

use super::approvals_http::{Client, serve};
use crate::db::{self, Db};

pub(crate) use crate::team::{ADMIN, ALICE, BOB, GATEWAY, Runs};

fn config() -> String {
    crate::team::served_config(&["first", "second"])
}

/// The scripted team (`team.rs`) on `db` under this file's configuration:
/// boss asks first, then second; `second_hangs` makes second wait forever.
pub(crate) fn runtime(db: &Db, runs: &Arc<Runs>, second_hangs: bool) -> Runtime {
    crate::team::runtime(db, &config(), runs, second_hangs)
}

/// A tree of alice's cut off mid-run (see `team::cut_off_mid_tree`): its steps stay open.
pub(crate) async fn cut_off_mid_tree(db: &Db, runs: &Arc<Runs>) -> RequestId {
    crate::team::cut_off_mid_tree(db, &config(), runs, "Do the report").await
}

/// Serves `runtime` as `switchboard serve` does: at start it resumes the
/// trees a restart cut off (and the test's runtime ends it). Its address.
pub(crate) async fn serve_restarted(runtime: Runtime) -> String {
    let auth = runtime.config().auth.clone();
    let state = Arc::new(AppState::new(runtime));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(switchboard::server::serve(state, listener, Duration::from_secs(1), std::future::pending()));
    addr
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

fn replays(body: &Value) -> &Vec<Value> {
    body["replays"].as_array().unwrap_or_else(|| panic!("no replays in {body}"))
}

#[tokio::test]
async fn the_owner_replays_a_tree_over_http_and_the_replay_is_kept() {
    for db in db::both().await {
        let name = db.name;
        let runs = Arc::new(Runs::default());
        let c = Client::new(&serve(runtime(&db, &runs, false)).await);
        let (status, chat) = c.post(ALICE, "/v1/chat", json!({ "message": "Do the report" })).await;
        assert_eq!((status, chat["status"].as_str()), (200, Some("success")), "{name}: {chat}");
        let root = chat["request_id"].as_str().unwrap().to_string();
        let (replay, list) = (format!("/v1/trees/{root}/replay"), format!("/v1/trees/{root}/replays"));
        let (status, none) = c.get(Some(ALICE), &list).await;
        assert_eq!((status, replays(&none).len()), (200, 0), "{name}: {none}");

        // the owner, with an empty body: recorded, identical, kept
        let (status, report) = c.post_raw(ALICE, &replay, "").await;
        assert_eq!(status, 200, "{name}: {report}");
        assert_eq!(
            (&report["identical"], &report["mode"], &report["differing"]),
            (&json!(true), &json!("recorded"), &json!(0))
        );
        assert_eq!(report["root_id"].as_str(), Some(root.as_str()), "{name}");
        let agents: Vec<&str> =
            report["nodes"].as_array().unwrap().iter().map(|n| n["agent"].as_str().unwrap()).collect();
        assert_eq!(agents, ["boss", "first", "second"], "{name}: {report}");
        assert!(report["nodes"].as_array().unwrap().iter().all(|n| n["same"] == true), "{name}: {report}");
        let (status, kept) = c.get(Some(ALICE), &list).await;
        assert_eq!((status, replays(&kept).len()), (200, 1), "{name}: {kept}");
        let r = &replays(&kept)[0];
        assert_eq!(
            (&r["mode"], &r["identical"], &r["differing"], &r["nodes"], &r["run_by"]),
            (&json!("recorded"), &json!(true), &json!(0), &json!(3), &json!("user:alice")),
            "{name}: {r}"
        );
        assert!(r["id"].as_str().is_some_and(|id| !id.is_empty()) && r["created_at"].as_i64().unwrap() > 0, "{r}");
        assert_eq!(r["report"]["nodes"], report["nodes"], "{name}: the whole report is kept");

        // an admin replays anyone's tree, live; newest first
        let (status, live) = c.post(ADMIN, &replay, json!({ "mode": "live" })).await;
        assert_eq!((status, &live["mode"], &live["identical"]), (200, &json!("live"), &json!(true)), "{name}: {live}");
        let (_, kept) = c.get(Some(ADMIN), &list).await;
        let modes: Vec<(&str, &str)> =
            replays(&kept).iter().map(|r| (r["mode"].as_str().unwrap(), r["run_by"].as_str().unwrap())).collect();
        assert_eq!(modes, [("live", "admin"), ("recorded", "user:alice")], "{name}: {kept}");

        // refused, and nothing kept
        let unknown = RequestId::new();
        let child = report["nodes"][1]["request_id"].as_str().unwrap().to_string();
        for (token, path, body, want, names) in [
            (BOB, replay.clone(), r#"{"mode":"recorded"}"#, (403, "USER_MISMATCH"), ""),
            (BOB, replay.clone(), r#"{"mode":"live"}"#, (403, "USER_MISMATCH"), ""),
            (GATEWAY, replay.clone(), "", (401, "UNAUTHENTICATED"), ""),
            (ALICE, replay.clone(), r#"{"mode":"again"}"#, (400, "INVALID_REQUEST"), "'mode'"),
            (ALICE, replay.clone(), r#"{"mode":7}"#, (400, "INVALID_REQUEST"), "'mode'"),
            (ALICE, replay.clone(), r#"{"mode":"live","nodes":["boss"]}"#, (400, "INVALID_REQUEST"), "'nodes'"),
            (ALICE, replay.clone(), r#"{"mode":"#, (400, "INVALID_REQUEST"), "JSON"),
            (ALICE, replay.clone(), r#""live""#, (400, "INVALID_REQUEST"), "JSON object"),
            (ALICE, format!("/v1/trees/{unknown}/replay"), "", (404, "NOT_FOUND"), ""),
            (ALICE, format!("/v1/trees/{child}/replay"), "", (404, "NOT_FOUND"), "not a tree's root"),
            (ALICE, "/v1/trees/not-a-tree/replay".into(), "", (400, "INVALID_REQUEST"), "tree id"),
        ] {
            let (status, reply) = c.post_raw(token, &path, body).await;
            assert_eq!((status, code(&reply)), want, "{name}: {path} {body}: {reply}");
            assert!(reply["error"]["message"].as_str().unwrap().contains(names), "{name}: {body}: {reply}");
        }
        for (token, path, want) in [
            (Some(BOB), list.clone(), (403, "USER_MISMATCH")),
            (Some(GATEWAY), list.clone(), (401, "UNAUTHENTICATED")),
            (None, list.clone(), (401, "UNAUTHENTICATED")),
            (Some(ALICE), format!("/v1/trees/{unknown}/replays"), (404, "NOT_FOUND")),
            (Some(ALICE), "/v1/trees/x/replays".into(), (400, "INVALID_REQUEST")),
        ] {
            let (status, reply) = c.get(token, &path).await;
            assert_eq!((status, code(&reply)), want, "{name}: GET {path}: {reply}");
        }
        let (_, kept) = c.get(Some(ALICE), &list).await;
        assert_eq!(replays(&kept).len(), 2, "{name}: the refusals kept nothing: {kept}");
        let root_id: RequestId = root.parse().unwrap();
        assert_eq!(db.store.replays(root_id).await.unwrap().len(), 2, "{name}");
        assert!(db.store.replays(unknown).await.unwrap().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn steps_say_a_restart_resumed_the_tree_and_it_replays_once_it_ended() {
    for db in db::both().await {
        let name = db.name;
        let runs = Arc::new(Runs::default());
        let root = cut_off_mid_tree(&db, &runs).await;
        assert_eq!((runs.first.load(Ordering::SeqCst), runs.second.load(Ordering::SeqCst)), (1, 0), "{name}");

        // a server on the same database that has not resumed it: the tree is open, not replayable
        let c = Client::new(&serve(runtime(&db, &runs, false)).await);
        let steps_path = format!("/v1/trees/{root}/steps");
        let (status, steps) = c.get(Some(ALICE), &steps_path).await;
        assert_eq!((status, steps["state"].as_str(), steps["resumed"].as_u64()), (200, Some("running"), Some(0)));
        let (status, reply) = c.post_raw(ALICE, &format!("/v1/trees/{root}/replay"), "").await;
        assert_eq!((status, code(&reply)), (422, "RECORD_INCOMPLETE"), "{name}: {reply}");
        assert!(db.store.replays(root).await.unwrap().is_empty(), "{name}: nothing kept");

        // the restart: a server that resumes open trees at start
        let c = Client::new(&serve_restarted(runtime(&db, &runs, false)).await);
        let steps = c.ended(ALICE, &root.to_string()).await;
        assert_eq!((steps["state"].as_str(), steps["resumed"].as_u64()), (Some("done"), Some(1)), "{name}: {steps}");
        for s in steps["steps"].as_array().unwrap() {
            let want = u64::from(s["request_id"].as_str() == Some(root.to_string().as_str()));
            assert_eq!(s["resumes"].as_u64(), Some(want), "{name}: only the top step was resumed: {steps}");
        }
        assert_eq!(
            (runs.first.load(Ordering::SeqCst), runs.second.load(Ordering::SeqCst)),
            (1, 1),
            "{name}: first did not run again"
        );
        // the resumed tree replays identical
        let (status, report) = c.post(ALICE, &format!("/v1/trees/{root}/replay"), json!({ "mode": "recorded" })).await;
        assert_eq!((status, &report["identical"]), (200, &json!(true)), "{name}: {report}");
        let (_, kept) = c.get(Some(ALICE), &format!("/v1/trees/{root}/replays")).await;
        assert_eq!(replays(&kept).len(), 1, "{name}: {kept}");
    }
}
