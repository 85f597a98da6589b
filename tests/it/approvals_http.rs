//! Durable trees over HTTP, on a real server on 127.0.0.1 over SQLite and
//! PostgreSQL: a tree that pauses for a person's approval is answered at
//! `POST /v1/approvals/{id}` and finishes in the background; wrong callers,
//! second answers, unknown ids and malformed bodies get stable codes and
//! change nothing; a waiting tree is cancelled once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::Runtime;
use switchboard::server::{AppState, app};

use crate::db::{self, Db};

pub(crate) use crate::team::{ADMIN, ALICE, BOB, GATEWAY, Runs};

/// The scripted team (`team.rs`) on `db` under this file's configuration:
/// boss asks first, then (when the objective says "mail") the mailer.
pub(crate) fn runtime(db: &Db, runs: &Arc<Runs>) -> Runtime {
    crate::team::runtime(db, &crate::team::served_config(&["first", "mailer"]), runs, false)
}

/// Serves `runtime` on a free port of 127.0.0.1 (until the test's runtime ends); its address.
pub(crate) async fn serve(runtime: Runtime) -> String {
    let auth = runtime.config().auth.clone();
    let state = Arc::new(AppState::new(runtime));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app(state)).await });
    addr
}

pub(crate) struct Client {
    http: reqwest::Client,
    addr: String,
}

impl Client {
    pub(crate) fn new(addr: &str) -> Self {
        switchboard::util::install_tls();
        let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(30)).build().unwrap();
        Self { http, addr: addr.to_string() }
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> (u16, Value) {
        let r = req.send().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}")))
    }

    pub(crate) async fn get(&self, token: Option<&str>, path: &str) -> (u16, Value) {
        let mut req = self.http.get(format!("http://{}{path}", self.addr));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req, &format!("GET {path}")).await
    }

    /// POSTs `body` as it is (so that malformed JSON can be sent).
    pub(crate) async fn post_raw(&self, token: &str, path: &str, body: &str) -> (u16, Value) {
        let req = self
            .http
            .post(format!("http://{}{path}", self.addr))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.to_string());
        self.send(req, &format!("POST {path}")).await
    }

    pub(crate) async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        self.post_raw(token, path, &body.to_string()).await
    }

    /// Polls the journal of tree `root` until its top step has ended (bounded).
    pub(crate) async fn ended(&self, token: &str, root: &str) -> Value {
        let mut last = Value::Null;
        for _ in 0..400 {
            let (status, steps) = self.get(Some(token), &format!("/v1/trees/{root}/steps")).await;
            assert_eq!(status, 200, "{steps}");
            if matches!(steps["state"].as_str(), Some("done" | "failed" | "cancelled")) {
                return steps;
            }
            last = steps;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("tree {root} did not end: {last}");
    }
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

fn step<'a>(steps: &'a Value, target: &str) -> &'a Value {
    steps["steps"].as_array().unwrap().iter().find(|s| s["target"] == target).unwrap_or_else(|| panic!("{steps}"))
}

#[tokio::test]
async fn a_paused_tree_is_approved_over_http_and_finishes_in_the_background() {
    for db in db::both().await {
        let name = db.name;
        let runs = Arc::new(Runs::default());
        let c = Client::new(&serve(runtime(&db, &runs)).await);

        let (status, chat) = c.post(ALICE, "/v1/chat", json!({ "message": "Do the report and mail it" })).await;
        assert_eq!((status, chat["status"].as_str()), (202, Some("needs_approval")), "{name}: {chat}");
        let root = chat["request_id"].as_str().unwrap().to_string();
        let ids = chat["approvals"].as_array().unwrap_or_else(|| panic!("{name}: no approvals in {chat}"));
        assert_eq!(ids.len(), 1, "{name}: {chat}");
        let id = ids[0].as_str().unwrap().to_string();
        assert!(chat["answer"].as_str().unwrap().contains(&id), "{name}: the answer names it: {chat}");
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{name}");

        // who sees it
        let (status, mine) = c.get(Some(ALICE), "/v1/approvals").await;
        assert_eq!(status, 200, "{name}: {mine}");
        let list = mine["approvals"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{name}: {mine}");
        let a = &list[0];
        assert_eq!((a["id"].as_str(), a["root_id"].as_str()), (Some(id.as_str()), Some(root.as_str())), "{name}");
        assert_eq!(
            (&a["agent"], &a["action"], &a["state"]),
            (&json!("mailer"), &json!("send_email"), &json!("pending"))
        );
        let summary = a["summary"].as_str().unwrap();
        assert!(summary.contains("<EMAIL_1>") && !summary.contains("alex@example.com"), "{name}: {summary}");
        let (_, bobs) = c.get(Some(BOB), "/v1/approvals?state=all").await;
        assert_eq!(bobs["approvals"], json!([]), "{name}");
        let (_, admins) = c.get(Some(ADMIN), "/v1/approvals").await;
        assert_eq!(admins["approvals"].as_array().map(Vec::len), Some(1), "{name}: {admins}");
        for (token, path, want) in [
            (Some(GATEWAY), "/v1/approvals", (401, "UNAUTHENTICATED")),
            (None, "/v1/approvals", (401, "UNAUTHENTICATED")),
            (Some(ALICE), "/v1/approvals?state=decided", (400, "INVALID_REQUEST")),
            (Some(ALICE), "/v1/approvals?user=bob", (400, "INVALID_REQUEST")),
            (Some(BOB), &format!("/v1/trees/{root}/steps"), (404, "NOT_FOUND")),
            (Some(ALICE), "/v1/trees/not-a-tree/steps", (400, "INVALID_REQUEST")),
        ] {
            let (status, body) = c.get(token, path).await;
            assert_eq!((status, code(&body)), want, "{name}: {path}: {body}");
        }

        // the journal: the root and the mailer wait, first is done; bodies redacted
        let (status, steps) = c.get(Some(ALICE), &format!("/v1/trees/{root}/steps")).await;
        assert_eq!((status, steps["state"].as_str()), (200, Some("waiting")), "{name}: {steps}");
        assert_eq!(step(&steps, "mailer")["state"], "waiting", "{name}");
        assert_eq!(step(&steps, "first")["state"], "done", "{name}");
        assert_eq!(step(&steps, "mailer")["parent_id"].as_str(), Some(root.as_str()), "{name}");
        assert!(
            step(&steps, "boss")["deadline_at"].as_i64().unwrap()
                > step(&steps, "boss")["created_at"].as_i64().unwrap()
        );
        assert_eq!(step(&steps, "boss")["request"]["objective"], "Do the report and mail it", "{name}: {steps}");
        assert_eq!(step(&steps, "mailer")["request"], Value::Null, "{name}: a child's envelope is not kept");
        let waiting = step(&steps, "mailer")["response"]["error"]["message"].as_str().unwrap_or_default();
        assert!(waiting.contains(&id) && waiting.contains("<EMAIL_1>"), "{name}: {steps}");
        assert!(!steps.to_string().contains("alex@example.com"), "{name}: {steps}");
        assert_eq!(steps["approvals"][0]["id"].as_str(), Some(id.as_str()), "{name}");

        // wrong answers change nothing
        let path = format!("/v1/approvals/{id}");
        let (status, body) = c.post(BOB, &path, json!({ "decision": "approve" })).await;
        assert_eq!((status, code(&body)), (403, "USER_MISMATCH"), "{name}: {body}");
        let (status, body) = c.post(GATEWAY, &path, json!({ "decision": "approve" })).await;
        assert_eq!((status, code(&body)), (401, "UNAUTHENTICATED"), "{name}: {body}");
        for (body, field) in [
            (r#"{"decision":"yes"}"#, "'decision'"),
            (r#"{"decision":"approve","because":"x"}"#, "'because'"),
            (r#"{"reason":"fine"}"#, "'decision'"),
            (r#"{"decision":"approve","reason":["x"]}"#, "'reason'"),
            (r#"{"decision":"#, "JSON"),
        ] {
            let (status, reply) = c.post_raw(ALICE, &path, body).await;
            assert_eq!((status, code(&reply)), (400, "INVALID_REQUEST"), "{name}: {body}: {reply}");
            assert!(reply["error"]["message"].as_str().unwrap().contains(field), "{name}: {body}: {reply}");
        }
        let (_, still) = c.get(Some(ALICE), "/v1/approvals").await;
        assert_eq!(still["approvals"][0]["state"], "pending", "{name}: {still}");
        let (_, steps) = c.get(Some(ALICE), &format!("/v1/trees/{root}/steps")).await;
        assert_eq!(steps["state"], "waiting", "{name}");
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{name}");

        // alice approves: answered at once, the tree finishes in the background
        let (status, body) = c.post(ALICE, &path, json!({ "decision": "approve", "reason": "go ahead" })).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!((&body["approval"]["state"], &body["resumed"]), (&json!("approved"), &json!(true)), "{name}");
        assert_eq!(
            (&body["approval"]["reason"], &body["approval"]["decided_by"]),
            (&json!("go ahead"), &json!("user:alice"))
        );
        let steps = c.ended(ALICE, &root).await;
        assert_eq!(steps["state"], "done", "{name}: {steps}");
        assert!(steps["steps"].as_array().unwrap().iter().all(|s| s["state"] == "done"), "{name}: {steps}");
        assert_eq!(step(&steps, "boss")["response"]["result"], "one + sent", "{name}: {steps}");
        assert_eq!((runs.first.load(Ordering::SeqCst), runs.sent.load(Ordering::SeqCst)), (1, 1), "{name}: once each");
        let (status, tree) = c.get(Some(ALICE), &format!("/v1/delegations/{root}")).await;
        assert_eq!((status, tree["status"].as_str()), (200, Some("success")), "{name}: {tree}");

        // after the answer
        let (status, body) = c.post(ALICE, &path, json!({ "decision": "reject" })).await;
        assert_eq!((status, code(&body)), (409, "ALREADY_DECIDED"), "{name}: {body}");
        let (status, body) =
            c.post(ALICE, "/v1/approvals/apr-0000000000000000", json!({ "decision": "approve" })).await;
        assert_eq!((status, code(&body)), (404, "NOT_FOUND"), "{name}: {body}");
        let (_, pending) = c.get(Some(ALICE), "/v1/approvals").await;
        assert_eq!(pending["approvals"], json!([]), "{name}");
        let (_, all) = c.get(Some(ALICE), "/v1/approvals?state=all").await;
        assert_eq!(all["approvals"][0]["state"], "approved", "{name}: {all}");
        assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "{name}: nothing more was sent");
        // an ended tree is not cancelled
        let (status, body) = c.post(ALICE, &format!("/v1/trees/{root}/cancel"), json!({})).await;
        assert_eq!((status, code(&body)), (409, "ALREADY_DECIDED"), "{name}: {body}");
    }
}

#[tokio::test]
async fn a_rejection_over_http_ends_the_node_without_its_side_effect() {
    let db = db::sqlite().await;
    let runs = Arc::new(Runs::default());
    let c = Client::new(&serve(runtime(&db, &runs)).await);
    let (_, chat) = c.post(ALICE, "/v1/chat", json!({ "message": "Do the report and mail it" })).await;
    let (root, id) = (chat["request_id"].as_str().unwrap(), chat["approvals"][0].as_str().unwrap());
    let (status, body) = c.post(ADMIN, &format!("/v1/approvals/{id}"), json!({ "decision": "reject" })).await;
    assert_eq!((status, &body["approval"]["state"]), (200, &json!("rejected")), "{body}");
    assert_eq!(body["approval"]["decided_by"], "admin", "an admin answers anyone's");
    let steps = c.ended(ALICE, root).await;
    assert_eq!(step(&steps, "boss")["response"]["result"], "one + mail: APPROVAL_REJECTED", "{steps}");
    assert_eq!(runs.sent.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_waiting_tree_is_cancelled_once_over_http() {
    for db in db::both().await {
        let name = db.name;
        let runs = Arc::new(Runs::default());
        let c = Client::new(&serve(runtime(&db, &runs)).await);
        // paused through /v1/delegate: 202 with the response
        let root = uuid::Uuid::new_v4().to_string();
        let envelope = json!({
            "request_id": root, "origin_employee": "gateway", "target_employee": "boss", "user_id": "alice",
            "objective": "Do the report and mail it", "input": "",
            "constraints": { "max_depth": 3, "deadline_ms": 30000 },
        });
        let r = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("http://{}/v1/delegate", c.addr))
            .bearer_auth(GATEWAY)
            .header("x-agent-request-id", &root)
            .header("x-agent-origin", "gateway")
            .json(&envelope)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        assert_eq!((status, body["status"].as_str()), (202, Some("needs_approval")), "{name}: {body}");
        let (_, pending) = c.get(Some(ALICE), "/v1/approvals").await;
        let id = pending["approvals"][0]["id"].as_str().unwrap_or_else(|| panic!("{name}: {pending}")).to_string();

        let cancel = format!("/v1/trees/{root}/cancel");
        let (status, body) = c.post(BOB, &cancel, json!({})).await;
        assert_eq!((status, code(&body)), (403, "USER_MISMATCH"), "{name}: {body}");
        let (_, steps) = c.get(Some(ALICE), &format!("/v1/trees/{root}/steps")).await;
        assert_eq!(steps["state"], "waiting", "{name}: bob's try changed nothing");
        // the agent that sent the tree may cancel it, and sees its outline (no bodies)
        let (status, outline) = c.get(Some(GATEWAY), &format!("/v1/trees/{root}/steps")).await;
        assert_eq!(status, 200, "{name}: {outline}");
        assert!(outline["steps"][0].get("request").is_none(), "{name}: {outline}");
        let (status, body) = c.post(GATEWAY, &cancel, json!({})).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert!(body["cancelled_steps"].as_u64().unwrap() >= 2, "{name}: the root and the mailer: {body}");
        let (status, body) = c.post(ALICE, &cancel, json!({})).await;
        assert_eq!((status, code(&body)), (409, "ALREADY_DECIDED"), "{name}: {body}");

        let (_, steps) = c.get(Some(ALICE), &format!("/v1/trees/{root}/steps")).await;
        assert_eq!((&steps["state"], &step(&steps, "mailer")["state"]), (&json!("cancelled"), &json!("cancelled")));
        assert_eq!(steps["approvals"][0]["state"], "rejected", "{name}: its approval is closed: {steps}");
        let (status, body) = c.post(ALICE, &format!("/v1/approvals/{id}"), json!({ "decision": "approve" })).await;
        assert_eq!((status, code(&body)), (409, "ALREADY_DECIDED"), "{name}: {body}");
        let (_, tree) = c.get(Some(ALICE), &format!("/v1/delegations/{root}")).await;
        assert_eq!(tree["error_code"], "CANCELLED", "{name}: {tree}");

        let unknown = format!("/v1/trees/{}/cancel", uuid::Uuid::new_v4());
        let (status, body) = c.post(ALICE, &unknown, json!({})).await;
        assert_eq!((status, code(&body)), (404, "NOT_FOUND"), "{name}: {body}");
        let (status, body) = c.post(ALICE, "/v1/trees/x/cancel", json!({})).await;
        assert_eq!((status, code(&body)), (400, "INVALID_REQUEST"), "{name}: {body}");
        assert_eq!(runs.sent.load(Ordering::SeqCst), 0, "{name}");
    }
}
