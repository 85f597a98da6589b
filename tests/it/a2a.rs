//! A2A 1.0: server conformance paths and interop with the official a2a-sdk.
//!
//! Through `app()` (no socket): the agent card, each JSON-RPC method and
//! HTTP+JSON route, the errors, SSE frames, the rails extension across the
//! hop, and cancel cascading to a child in flight. With real processes: the
//! `a2a` backend against a second `switchboard serve`, the a2a-sdk client
//! against our agents, and an a2a-sdk echo agent as a team member.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use switchboard::Call;
use switchboard::config::Config;
use switchboard::protocol::a2a::RAILS_EXTENSION;
use switchboard::protocol::{DelegationError, ErrorCode, RequestId};
use switchboard::server::{AppState, app};
use switchboard::{AgentOutput, Runtime};

use crate::http::{Reply, call};
use crate::service::{Server, free_port, get_json, post_delegate};
use crate::support::agent;

pub(crate) const ALICE: &str = "a2a-alice";
pub(crate) const BOB: &str = "a2a-bob";
const CALLER: &str = "a2a-caller";
const ADMIN: &str = "a2a-admin";

/// The built-in team, the conformance agent, and tokens.
pub(crate) fn team_config() -> Config {
    let mut c = Config::from_toml(&format!(
        "{}\n[[agents]]\nslug = \"a2a-conformance\"\nname = \"Conformance\"\nbackend = {{ kind = \"builtin\", name = \"a2a-conformance\" }}\n",
        switchboard::config::DEFAULT_TOML
    ))
    .unwrap();
    c.auth.user_tokens = [("alice".to_string(), ALICE.to_string()), ("bob".into(), BOB.into())].into();
    c.auth.service_tokens = [("prime-boss".to_string(), CALLER.to_string())].into();
    c.auth.admin_tokens = vec![ADMIN.into()];
    c
}

pub(crate) async fn router_for(runtime: Runtime) -> Router {
    let auth = runtime.config().auth.clone();
    let state = Arc::new(AppState::new(runtime));
    state.tokens.load_config(&auth).await.unwrap();
    app(state)
}

async fn team() -> (Router, Runtime) {
    let rt = Runtime::builder().config(team_config()).build().unwrap();
    (router_for(rt.clone()).await, rt)
}

fn rpc_request(slug: &str, token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post(format!("/a2a/{slug}"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .header("host", "agents.test:7420");
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(body.into()).unwrap()
}

pub(crate) async fn rpc(r: &Router, slug: &str, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    call(r, rpc_request(slug, Some(token), body)).await.json()
}

pub(crate) fn message(id: &str, text: &str) -> Value {
    json!({"role": "ROLE_USER", "messageId": id, "parts": [{"text": text}]})
}

async fn rest(r: &Router, method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
    let mut b = Request::builder().method(method).uri(path).header("a2a-version", "1.0");
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    let req = match body {
        Some(v) => b.header("content-type", "application/json").body(Body::from(v.to_string())).unwrap(),
        None => b.body(Body::empty()).unwrap(),
    };
    call(r, req).await
}

/// SSE frames: each `data: <json>` followed by a blank line.
fn frames(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        // (an `id:` line is the event's number, for Last-Event-ID: durable_state.rs tests it)
        let lines: Vec<&str> = frame.lines().filter(|l| !l.starts_with(':') && !l.starts_with("id:")).collect();
        if lines.is_empty() {
            continue; // a keep-alive comment
        }
        assert_eq!(lines.len(), 1, "one data line per event: {frame:?}");
        let data = lines[0].strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {frame:?}"));
        out.push(serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}")));
    }
    out
}

pub(crate) fn error_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no JSON-RPC error: {v}"))
}

#[tokio::test]
async fn every_agent_has_a_card_with_a2a_required_fields_and_the_rails_extension() {
    let (r, _) = team().await;
    let req =
        Request::get("/a2a/tag-ai/.well-known/agent-card.json").header("host", "agents.test:7420").body(Body::empty());
    let res = call(&r, req.unwrap()).await;
    assert_eq!(res.status, 200);
    let card = res.json();
    assert_eq!(card["name"], "Tag");
    assert!(!card["description"].as_str().unwrap().is_empty());
    assert!(!card["version"].as_str().unwrap().is_empty());
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let bindings: Vec<&str> = interfaces.iter().map(|i| i["protocolBinding"].as_str().unwrap()).collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    for i in &interfaces[..2] {
        assert_eq!(i["url"], "http://agents.test:7420/a2a/tag-ai");
        assert_eq!(i["protocolVersion"], "1.0");
    }
    // gRPC: host:port, the agent as the tenant
    assert_eq!(interfaces[2]["url"], "agents.test:7420");
    assert_eq!(interfaces[2]["tenant"], "tag-ai");
    assert_eq!(interfaces[2]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    let ext = &card["capabilities"]["extensions"][0];
    assert_eq!(ext["uri"], RAILS_EXTENSION);
    assert_eq!(ext["required"], false);
    let lineage = &card["capabilities"]["extensions"][1];
    assert_eq!(lineage["uri"], switchboard::protocol::a2a::LINEAGE_EXTENSION, "{card}");
    assert_eq!(lineage["required"], false);
    assert_eq!(card["defaultInputModes"][0], "text/plain");
    assert_eq!(card["defaultOutputModes"][0], "text/plain");
    let skills = card["skills"].as_array().unwrap();
    assert!(skills.iter().any(|s| s["id"] == "categorization"), "skills come from capabilities: {skills:?}");
    assert!(skills.iter().all(|s| !s["tags"].as_array().unwrap().is_empty()));
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
    assert_eq!(card["securityRequirements"].as_array().unwrap().len(), 1, "no anonymous access by default");
    let missing = call(&r, Request::get("/a2a/nobody/.well-known/agent-card.json").body(Body::empty()).unwrap()).await;
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"]["message"].as_str().unwrap().contains("nobody"));
}

#[tokio::test]
async fn json_rpc_send_get_list_cancel_stream_and_subscribe() {
    let (r, _) = team().await;
    let sent =
        rpc(&r, "tag-ai", ALICE, "SendMessage", json!({"message": message("m-1", "2025-10-01 Starbucks 4.50")})).await;
    assert_eq!(sent["id"], 7);
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let id = task["id"].as_str().unwrap().to_string();
    let context = task["contextId"].as_str().unwrap().to_string();
    // a new context's id is time-ordered, as the task's is: the store's index of contexts appends it
    for made in [&id, &context] {
        let version = uuid::Uuid::parse_str(made).map(|u| u.get_version_num());
        assert_eq!(version, Ok(7), "{made}: a UUID v7");
    }
    assert!(task["artifacts"][0]["parts"][0]["text"].as_str().unwrap().contains("Dining - Coffee"));
    assert_eq!(task["history"].as_array().unwrap().len(), 2, "the user's message and the agent's");
    assert!(task["status"]["timestamp"].as_str().unwrap().ends_with('Z'));

    let got = rpc(&r, "tag-ai", ALICE, "GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(got["result"]["id"], id.as_str());
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    let got = rpc(&r, "tag-ai", ALICE, "GetTask", json!({"id": id, "historyLength": 0})).await;
    assert!(got["result"].get("history").is_none());
    // another user cannot see it; another agent's endpoint does not have it
    assert_eq!(error_code(&rpc(&r, "tag-ai", BOB, "GetTask", json!({"id": id})).await), -32001);
    assert_eq!(error_code(&rpc(&r, "byte-doc", ALICE, "GetTask", json!({"id": id})).await), -32001);

    let list = rpc(&r, "tag-ai", ALICE, "ListTasks", json!({"contextId": context})).await;
    assert_eq!(list["result"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(list["result"]["nextPageToken"], "");
    assert_eq!(list["result"]["totalSize"], 1);
    assert!(list["result"]["tasks"][0].get("artifacts").is_none(), "artifacts only with includeArtifacts");
    assert_eq!(rpc(&r, "tag-ai", BOB, "ListTasks", json!({})).await["result"]["totalSize"], 0);

    // a terminal task takes no more messages and cannot be canceled
    let mut again = message("m-2", "more");
    again["taskId"] = json!(id);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "SendMessage", json!({"message": again})).await), -32004);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "CancelTask", json!({"id": id})).await), -32002);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "SubscribeToTask", json!({"id": id})).await), -32004);

    // the same context continues the same session
    let mut follow = message("m-3", "2025-10-02 Uber 12.00");
    follow["contextId"] = json!(context);
    let second = rpc(&r, "tag-ai", ALICE, "SendMessage", json!({"message": follow})).await;
    assert_eq!(second["result"]["task"]["contextId"], context.as_str());
    assert_ne!(second["result"]["task"]["id"], id.as_str());

    // non-blocking: the task comes back working; subscribe; cancel
    let slow = rpc(
        &r,
        "a2a-conformance",
        ALICE,
        "SendMessage",
        json!({"message": message("test-resubscribe-message-id-1", "wait"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let slow_task = &slow["result"]["task"];
    assert_eq!(slow_task["status"]["state"], "TASK_STATE_WORKING");
    let slow_id = slow_task["id"].as_str().unwrap().to_string();
    let sub = tokio::spawn({
        let r = r.clone();
        let body =
            json!({"jsonrpc": "2.0", "id": "s", "method": "SubscribeToTask", "params": {"id": slow_id}}).to_string();
        async move { call(&r, rpc_request("a2a-conformance", Some(ALICE), body)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled = rpc(&r, "a2a-conformance", ALICE, "CancelTask", json!({"id": slow_id})).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    let sub = tokio::time::timeout(Duration::from_secs(5), sub).await.unwrap().unwrap();
    let events = frames(&sub.body);
    assert_eq!(events[0]["result"]["task"]["id"], slow_id.as_str(), "a subscription starts with the task");
    assert_eq!(events.last().unwrap()["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED");

    // input-required, then the next turn completes the same task
    let waiting =
        rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-input-required-1", "start")}))
            .await;
    assert_eq!(waiting["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let mut more = message("tck-complete-task-2", "here you go");
    more["taskId"] = waiting["result"]["task"]["id"].clone();
    let done = rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(done["result"]["task"]["id"], waiting["result"]["task"]["id"]);
    assert_eq!(done["result"]["task"]["history"].as_array().unwrap().len(), 4);
    let direct =
        rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-message-response-1", "hi")}))
            .await;
    assert_eq!(direct["result"]["message"]["parts"][0]["text"], "Direct message response");
    assert_eq!(direct["result"]["message"]["role"], "ROLE_AGENT");
    let rejected =
        rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-reject-task-1", "no")})).await;
    assert_eq!(rejected["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED");
}

#[tokio::test]
async fn two_services_in_one_process_share_only_what_their_stores_share() {
    // the same configuration and tokens, two stores: no task is kept outside the service's own runtime
    let (one, two) = (
        router_for(Runtime::builder().config(team_config()).build().unwrap()).await,
        router_for(Runtime::builder().config(team_config()).build().unwrap()).await,
    );
    let sent =
        rpc(&one, "tag-ai", ALICE, "SendMessage", json!({"message": message("m-two", "2025-10-01 Starbucks 4.50")}))
            .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    let here = rpc(&one, "tag-ai", ALICE, "GetTask", json!({"id": id})).await;
    assert_eq!(here["result"]["id"], id.as_str(), "{here}");
    let there = rpc(&two, "tag-ai", ALICE, "GetTask", json!({"id": id})).await;
    assert_eq!(error_code(&there), -32001, "the other service has no such task: {there}");
    let listed = rpc(&two, "tag-ai", ALICE, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let listed = rpc(&one, "tag-ai", ALICE, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(1), "{listed}");

    // two services over one store (replicas over one database) answer for each other's tasks
    let rt = Runtime::builder().config(team_config()).build().unwrap();
    let (three, four) = (router_for(rt.clone()).await, router_for(rt).await);
    let sent =
        rpc(&three, "tag-ai", ALICE, "SendMessage", json!({"message": message("m-3", "2025-10-01 Starbucks 4.50")}))
            .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    let there = rpc(&four, "tag-ai", ALICE, "GetTask", json!({"id": id})).await;
    assert_eq!(there["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{there}");
    assert_eq!(error_code(&rpc(&four, "tag-ai", BOB, "GetTask", json!({"id": id})).await), -32001);
}

#[tokio::test]
async fn streams_are_sse_data_frames_of_stream_responses_that_end_at_a_terminal_state() {
    let (r, _) = team().await;
    let body = json!({"jsonrpc": "2.0", "id": "s-1", "method": "SendStreamingMessage",
                      "params": {"message": message("tck-stream-artifact-chunked-1", "go")}})
    .to_string();
    let res = call(&r, rpc_request("a2a-conformance", Some(ALICE), body)).await;
    assert_eq!(res.status, 200);
    let events = frames(&res.body);
    for e in &events {
        assert_eq!(e["jsonrpc"], "2.0");
        assert_eq!(e["id"], "s-1");
    }
    let kinds: Vec<String> =
        events.iter().map(|e| e["result"].as_object().unwrap().keys().next().unwrap().clone()).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]);
    assert_eq!(events[0]["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(events[1]["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
    assert_eq!(events[3]["result"]["artifactUpdate"]["append"], true);
    assert_eq!(events[3]["result"]["artifactUpdate"]["lastChunk"], true);
    assert_eq!(events[4]["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    let id = events[0]["result"]["task"]["id"].as_str().unwrap();
    let task = rpc(&r, "a2a-conformance", ALICE, "GetTask", json!({"id": id})).await;
    assert_eq!(task["result"]["artifacts"][0]["parts"].as_array().unwrap().len(), 2, "chunks appended: {task}");

    // HTTP+JSON: the same frames without the JSON-RPC envelope
    let res = rest(
        &r,
        "POST",
        "/a2a/tag-ai/message:stream",
        Some(ALICE),
        Some(json!({"message": message("r-1", "2025-10-01 Starbucks 4.50")})),
    )
    .await;
    assert_eq!(res.status, 200);
    let events = frames(&res.body);
    assert!(events[0]["task"]["id"].is_string());
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        events.iter().any(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Dining")))
    );
}

#[tokio::test]
async fn http_json_routes_and_aip193_errors() {
    let (r, _) = team().await;
    let sent = rest(
        &r,
        "POST",
        "/a2a/tag-ai/message:send",
        Some(ALICE),
        Some(json!({"message": message("h-1", "2025-10-01 Starbucks 4.50")})),
    )
    .await;
    assert_eq!(sent.status, 200);
    let task = sent.json()["task"].clone();
    let id = task["id"].as_str().unwrap();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let got = rest(&r, "GET", &format!("/a2a/tag-ai/tasks/{id}?historyLength=1"), Some(ALICE), None).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["history"].as_array().unwrap().len(), 1);
    let list = rest(
        &r,
        "GET",
        &format!("/a2a/tag-ai/tasks?contextId={}&includeArtifacts=true", task["contextId"].as_str().unwrap()),
        Some(ALICE),
        None,
    )
    .await;
    assert_eq!(list.json()["tasks"][0]["id"], id);
    assert!(list.json()["tasks"][0]["artifacts"].is_array());
    // the version may come as a query parameter instead of the header
    let q = call(
        &r,
        Request::get(format!("/a2a/tag-ai/tasks/{id}?A2A-Version=1.0"))
            .header("authorization", format!("Bearer {ALICE}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(q.status, 200);

    let check = |res: &Reply, status: u16, reason: &str| {
        assert_eq!(res.status.as_u16(), status, "{}", String::from_utf8_lossy(&res.body));
        let body = res.json();
        assert_eq!(body["error"]["code"], status);
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
        assert_eq!(body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(body["error"]["details"][0]["reason"], reason);
    };
    check(
        &rest(&r, "POST", &format!("/a2a/tag-ai/tasks/{id}:cancel"), Some(ALICE), Some(json!({}))).await,
        409,
        "TASK_NOT_CANCELABLE",
    );
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks/nope", Some(ALICE), None).await, 404, "TASK_NOT_FOUND");
    check(
        &rest(&r, "POST", "/a2a/tag-ai/tasks/nope:cancel", Some(ALICE), Some(json!({}))).await,
        404,
        "TASK_NOT_FOUND",
    );
    check(&rest(&r, "POST", "/a2a/tag-ai/tasks/nope:subscribe", Some(ALICE), None).await, 404, "TASK_NOT_FOUND");
    check(
        &rest(
            &r,
            "POST",
            &format!("/a2a/tag-ai/tasks/{id}/pushNotificationConfigs"),
            Some(ALICE),
            Some(json!({"url": "http://127.0.0.1/hook"})),
        )
        .await,
        400,
        "INVALID_PARAMS",
    );
    // (push configs and the extended card in full: a2a_push.rs)
    let extended = rest(&r, "GET", "/a2a/tag-ai/extendedAgentCard", Some(ALICE), None).await;
    assert_eq!(extended.json()["capabilities"]["extendedAgentCard"], true);
    check(&rest(&r, "POST", "/a2a/tag-ai/message:send", Some(ALICE), Some(json!({}))).await, 400, "INVALID_PARAMS");
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks?pageSize=abc", Some(ALICE), None).await, 400, "INVALID_PARAMS");
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks?pageSize=0", Some(ALICE), None).await, 400, "INVALID_PARAMS");
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks?status=DONE", Some(ALICE), None).await, 400, "INVALID_PARAMS");
    check(&rest(&r, "GET", "/a2a/tag-ai/message:send", Some(ALICE), None).await, 404, "METHOD_NOT_FOUND");
    check(&rest(&r, "GET", "/a2a/tag-ai/whatever", Some(ALICE), None).await, 404, "METHOD_NOT_FOUND");
    check(&rest(&r, "GET", "/a2a/nobody/tasks", Some(ALICE), None).await, 404, "METHOD_NOT_FOUND");
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks", None, None).await, 401, "UNAUTHENTICATED");
    check(&rest(&r, "GET", "/a2a/tag-ai/tasks", Some("forged"), None).await, 401, "UNAUTHENTICATED");
    let no_version = call(
        &r,
        Request::get("/a2a/tag-ai/tasks")
            .header("authorization", format!("Bearer {ALICE}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    check(&no_version, 400, "VERSION_NOT_SUPPORTED");
    let text = call(
        &r,
        Request::post("/a2a/tag-ai/message:send")
            .header("a2a-version", "1.0")
            .header("authorization", format!("Bearer {ALICE}"))
            .header("content-type", "text/plain")
            .body(Body::from("hello"))
            .unwrap(),
    )
    .await;
    check(&text, 415, "CONTENT_TYPE_NOT_SUPPORTED");
    let garbage = call(
        &r,
        Request::post("/a2a/tag-ai/message:send")
            .header("a2a-version", "1.0")
            .header("authorization", format!("Bearer {ALICE}"))
            .header("content-type", "application/json")
            .body(Body::from("{not json"))
            .unwrap(),
    )
    .await;
    check(&garbage, 400, "JSON_PARSE_ERROR");
}

#[tokio::test]
async fn json_rpc_errors_use_a2a_and_json_rpc_codes_and_never_panic() {
    let (r, _) = team().await;
    let raw = |slug: &str, token: Option<&str>, body: &str| call(&r, rpc_request(slug, token, body.to_string()));
    assert_eq!(error_code(&raw("tag-ai", Some(ALICE), "{nope").await.json()), -32700);
    assert_eq!(error_code(&raw("tag-ai", Some(ALICE), "[1,2]").await.json()), -32600);
    assert_eq!(
        error_code(&raw("tag-ai", Some(ALICE), r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).await.json()),
        -32600
    );
    assert_eq!(
        error_code(&raw("tag-ai", Some(ALICE), r#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#).await.json()),
        -32600
    );
    assert_eq!(error_code(&raw("tag-ai", Some(ALICE), r#"{"jsonrpc":"2.0","id":1,"method":7}"#).await.json()), -32600);
    assert_eq!(
        error_code(
            &raw("tag-ai", Some(ALICE), r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#).await.json()
        ),
        -32602
    );
    let e = rpc(&r, "tag-ai", ALICE, "message/send", json!({})).await;
    assert_eq!(error_code(&e), -32601);
    assert_eq!(e["id"], 7);
    for (params, what) in [
        (json!({}), "message missing"),
        (json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}), "messageId missing"),
        (json!({"message": {"role": "ROLE_USER", "messageId": "x", "parts": []}}), "no parts"),
        (json!({"message": {"role": "ROLE_AGENT", "messageId": "x", "parts": [{"text": "x"}]}}), "agent role"),
        (
            json!({"message": {"role": "ROLE_USER", "messageId": "x", "parts": [{"text": "x", "url": "y"}]}}),
            "two contents",
        ),
        (json!({"message": {"role": "ROLE_USER", "messageId": "x", "parts": [{"raw": "!!"}]}}), "bad base64"),
        (json!({"message": {"role": "ROLE_BOSS", "messageId": "x", "parts": [{"text": "x"}]}}), "unknown role"),
        (json!({"message": message("x", "y"), "configuration": {"historyLength": -1}}), "negative history"),
    ] {
        assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "SendMessage", params).await), -32602, "{what}");
    }
    let e = rpc(&r, "tag-ai", ALICE, "GetTask", json!({"id": "nope"})).await;
    assert_eq!(error_code(&e), -32001);
    assert_eq!(e["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(e["error"]["data"][0]["domain"], "a2a-protocol.org");
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "GetTask", json!({})).await), -32602);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "CancelTask", json!({"id": "nope"})).await), -32001);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "SubscribeToTask", json!({"id": "nope"})).await), -32001);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "ListTasks", json!({"pageSize": 1000})).await), -32602);
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "ListTasks", json!({"pageToken": "garbage"})).await), -32602);
    for m in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        assert_eq!(
            error_code(&rpc(&r, "tag-ai", ALICE, m, json!({"taskId": "t", "id": "c", "url": "https://x"})).await),
            -32001,
            "{m}"
        );
    }
    let push_in_send = json!({"message": message("p", "x"), "configuration": {"taskPushNotificationConfig": {"url": "http://10.1.2.3/x"}}});
    assert_eq!(error_code(&rpc(&r, "tag-ai", ALICE, "SendMessage", push_in_send).await), -32602);
    let extended = rpc(&r, "tag-ai", ALICE, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(extended["result"]["capabilities"]["extendedAgentCard"], true, "{extended}");

    // versions: none (0.3), an unknown one; a patch version is fine
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string();
    for (version, code) in
        [(None, -32009), (Some("0.3"), -32009), (Some("99.0"), -32009), (Some("1.1"), -32009), (Some("1.0.2"), 0)]
    {
        let mut b = Request::post("/a2a/tag-ai")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {ALICE}"));
        if let Some(v) = version {
            b = b.header("a2a-version", v);
        }
        let v = call(&r, b.body(Body::from(body.clone())).unwrap()).await.json();
        if code == 0 {
            assert!(v["result"]["tasks"].is_array(), "{version:?}: {v}");
        } else {
            assert_eq!(error_code(&v), code, "{version:?}");
        }
    }
    // authentication
    let res = raw("tag-ai", None, &body).await;
    assert_eq!(res.status, 401);
    assert_eq!(error_code(&res.json()), -32000);
    assert_eq!(raw("tag-ai", Some("forged"), &body).await.status, 401);
    let admin = rpc(&r, "tag-ai", ADMIN, "SendMessage", json!({"message": message("a", "x")})).await;
    assert_eq!(admin["error"]["data"][0]["reason"], "PERMISSION_DENIED");
    // content type, unknown agent
    let text = call(
        &r,
        Request::post("/a2a/tag-ai")
            .header("content-type", "text/plain")
            .header("a2a-version", "1.0")
            .body(Body::from("x"))
            .unwrap(),
    )
    .await;
    assert_eq!(error_code(&text.json()), -32005);
    assert_eq!(error_code(&rpc(&r, "nobody", ALICE, "ListTasks", json!({})).await), -32601);
    // a trailing slash is the same endpoint
    let slash = call(
        &r,
        Request::post("/a2a/tag-ai/")
            .header("a2a-version", "1.0")
            .header("authorization", format!("Bearer {ALICE}"))
            .body(Body::from(body.clone()))
            .unwrap(),
    )
    .await;
    assert!(slash.json()["result"]["tasks"].is_array());
}

fn rails(depth: u32, max_depth: u32, extra: Value) -> Value {
    let mut r = json!({
        "requestId": RequestId::new(), "rootId": RequestId::new(), "parentId": RequestId::new(),
        "origin": "caller", "user": "alice", "depth": depth, "maxDepth": max_depth,
        "deadlineMs": 5000, "maxTokens": 1000, "priority": "normal",
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    r
}

fn with_rails(id: &str, text: &str, rails: Value) -> Value {
    let mut m = message(id, text);
    m["metadata"] = json!({RAILS_EXTENSION: rails});
    m
}

/// A team for the rails: `caller` (a service token) may call `worker` and
/// `slow`; `worker` answers at once, `slow` takes two seconds.
async fn rails_team() -> (Router, Runtime) {
    let mut config = switchboard::config::Config::from_toml(
        r#"
[[agents]]
slug = "caller"
name = "Caller"
may_delegate_to = ["*"]
tools_allowed = ["t1"]

[[agents]]
slug = "worker"
name = "Worker"
tools_allowed = ["t1"]

[[agents]]
slug = "slow"
name = "Slow"
"#,
    )
    .unwrap();
    config.auth.service_tokens = [("caller".to_string(), CALLER.to_string())].into();
    config.auth.user_tokens = [("alice".to_string(), ALICE.to_string())].into();
    // a caller trusted to start trees: its rails are kept as it declares them
    config.auth.service_roots = Some([("caller".to_string(), vec!["*".to_string()])].into());
    let rt = Runtime::builder()
        .config(config)
        .agent("caller", agent(|_, _| async { Ok(AgentOutput::new("caller", "")) }))
        .agent(
            "worker",
            agent(|ctx, task| async move { Ok(AgentOutput::new(format!("depth {}", ctx.depth()), task.objective)) }),
        )
        .agent(
            "slow",
            agent(|_, _| async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Ok(AgentOutput::new("late", "late"))
            }),
        )
        .build()
        .unwrap();
    (router_for(rt.clone()).await, rt)
}

fn ext(task: &Value) -> &Value {
    &task["metadata"][RAILS_EXTENSION]
}

#[tokio::test]
async fn the_rails_travel_in_message_metadata_and_hold_across_the_hop() {
    let (r, rt) = rails_team().await;
    // a user's call has no rails: a fresh tree at depth 0
    let plain = rpc(&r, "worker", ALICE, "SendMessage", json!({"message": message("u-1", "hello")})).await;
    let task = &plain["result"]["task"];
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "depth 0");
    let id: RequestId = task["id"].as_str().unwrap().parse().unwrap();
    let records = rt.store().delegation_tree(id).await.unwrap();
    assert_eq!((records[0].depth, records[0].origin.as_str(), records[0].root_id), (0, "user", id));

    // an agent's call with the rails runs inside the caller's tree, one deeper
    let rails_ok = rails(0, 3, json!({"tools": ["t1"]}));
    let sent =
        rpc(&r, "worker", CALLER, "SendMessage", json!({"message": with_rails("a-1", "work", rails_ok.clone())})).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "depth 1");
    assert_eq!(task["id"], rails_ok["requestId"], "the task is the hop's own delegation");
    let id: RequestId = task["id"].as_str().unwrap().parse().unwrap();
    let rec = &rt.store().delegation_tree(id).await.unwrap()[0];
    assert_eq!(rec.root_id.to_string(), rails_ok["rootId"].as_str().unwrap());
    assert_eq!(rec.parent_id.map(|p| p.to_string()).as_deref(), rails_ok["parentId"].as_str());
    assert_eq!(rec.origin, "caller");
    assert!(ext(task)["tokenUsage"]["total"].as_u64().unwrap() > 0, "usage goes back for the caller's token budget");

    // depth: the caller already runs at 1 of 2, so the target would be at 2
    let deep = rpc(
        &r,
        "worker",
        CALLER,
        "SendMessage",
        json!({"message": with_rails("a-2", "work", rails(1, 2, json!({}))) }),
    )
    .await;
    let task = &deep["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{deep}");
    assert_eq!(ext(task)["code"], "DEPTH_LIMIT");
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("Return results to parent"));

    // cycle: the target already stands in the chain with this objective
    let hash = hex_prefix("work");
    let cyc = rails(
        1,
        4,
        json!({"chain": [{"agent": "worker", "objectiveHash": hash}, {"agent": "caller", "objectiveHash": "00000000"}]}),
    );
    let cycle = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": with_rails("a-3", "work", cyc)})).await;
    assert_eq!(ext(&cycle["result"]["task"])["code"], "CYCLE_DETECTED", "{cycle}");

    // budget: one token cannot pay for the call
    let poor = rpc(
        &r,
        "worker",
        CALLER,
        "SendMessage",
        json!({"message": with_rails("a-4", "work", rails(0, 3, json!({"maxTokens": 1})))}),
    )
    .await;
    assert_eq!(poor["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED");
    assert_eq!(ext(&poor["result"]["task"])["code"], "TOKEN_BUDGET_EXCEEDED");

    // deadline: what is left of the caller's deadline is the target's
    let started = Instant::now();
    let late = rpc(
        &r,
        "slow",
        CALLER,
        "SendMessage",
        json!({"message": with_rails("a-5", "work", rails(0, 3, json!({"deadlineMs": 300})))}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_millis(1500), "the deadline came from the rails");
    assert_eq!(late["result"]["task"]["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(ext(&late["result"]["task"])["code"], "DEADLINE_EXCEEDED");

    // tools never grow across the hop
    let tools = rpc(
        &r,
        "worker",
        CALLER,
        "SendMessage",
        json!({"message": with_rails("a-6", "work", rails(0, 3, json!({"tools": ["t2"]})))}),
    )
    .await;
    assert_eq!(ext(&tools["result"]["task"])["code"], "TOOL_NOT_ALLOWED");

    // the rails must name the caller, and be well-formed
    let spoof = rpc(
        &r,
        "worker",
        CALLER,
        "SendMessage",
        json!({"message": with_rails("a-7", "work", rails(0, 3, json!({"origin": "worker"})))}),
    )
    .await;
    assert_eq!(spoof["error"]["data"][0]["reason"], "UNAUTHENTICATED");
    for garbage in [
        json!("x"),
        json!({"requestId": "nope"}),
        json!(rails(0, 3, json!({"deadlineMs": 0}))),
        json!(rails(0, 3, json!({"depth": -1}))),
    ] {
        let e = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": with_rails("a-8", "work", garbage)})).await;
        assert_eq!(error_code(&e), -32602, "{e}");
        assert!(e["error"]["message"].as_str().unwrap().contains(RAILS_EXTENSION));
    }
    // an agent without the rails is told what is missing
    let bare = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": message("a-9", "work")})).await;
    assert_eq!(error_code(&bare), -32008);
    // a request id is one delegation
    let twice =
        rpc(&r, "worker", CALLER, "SendMessage", json!({"message": with_rails("a-10", "work", rails_ok)})).await;
    assert_eq!(error_code(&twice), -32602);
}

fn hex_prefix(objective: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(objective.as_bytes())[..4])
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn cancelling_a_task_cancels_its_child_delegation_in_flight() {
    let mut config = switchboard::config::Config::from_toml(
        "[[agents]]\nslug = \"boss\"\nname = \"Boss\"\nmay_delegate_to = [\"child\"]\n\n[[agents]]\nslug = \"child\"\nname = \"Child\"\n",
    )
    .unwrap();
    config.auth.user_tokens = [("alice".to_string(), ALICE.to_string())].into();
    let started = Arc::new(tokio::sync::Notify::new());
    let cancelled = Arc::new(AtomicBool::new(false));
    let (s, c) = (started.clone(), cancelled.clone());
    let rt = Runtime::builder()
        .config(config)
        .agent(
            "boss",
            agent(|ctx, _| async move {
                let r = ctx.delegator()?.delegate(Call::to("child", "wait for me")?).await;
                Ok(AgentOutput::new(format!("child said {:?}", r.status), ""))
            }),
        )
        .agent(
            "child",
            agent(move |ctx, _| {
                let (s, c) = (s.clone(), c.clone());
                async move {
                    // the child's work stops: it sees its token cancelled, or its
                    // future is dropped with its parent's
                    let _stopped = SetOnDrop(c);
                    s.notify_one();
                    ctx.cancellation().cancelled().await;
                    Err(DelegationError::from_code(ErrorCode::Cancelled))
                }
            }),
        )
        .build()
        .unwrap();
    let r = router_for(rt.clone()).await;
    let sent = rpc(
        &r,
        "boss",
        ALICE,
        "SendMessage",
        json!({"message": message("c-1", "delegate and wait"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    tokio::time::timeout(Duration::from_secs(5), started.notified()).await.expect("the child starts");
    let res = rpc(&r, "boss", ALICE, "CancelTask", json!({"id": id})).await;
    assert_eq!(res["result"]["status"]["state"], "TASK_STATE_CANCELED", "{res}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cancelled.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the child in flight was not cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // the tree records the child as cancelled
    let root: RequestId = id.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let records = rt.store().delegation_tree(root).await.unwrap();
        let child = records.iter().find(|r| r.target == "child");
        if let Some(child) = child.filter(|c| c.error_code.is_some()) {
            assert_eq!(child.error_code.as_deref(), Some("CANCELLED"));
            assert_eq!(child.parent_id, Some(root));
            break;
        }
        assert!(Instant::now() < deadline, "no record of the cancelled child: {records:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        rpc(&r, "boss", ALICE, "GetTask", json!({"id": id})).await["result"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
}

/// The server team (B) for the process tests: the built-in team, the
/// conformance agent, a slow command agent, tokens.
pub(crate) fn remote_team() -> String {
    format!(
        r#"{}
[[agents]]
slug = "a2a-conformance"
name = "Conformance"
backend = {{ kind = "builtin", name = "a2a-conformance" }}

[[agents]]
slug = "slow"
name = "Slow"
tools_allowed = ["categorize"]
backend = {{ kind = "command", command = "sh", args = ["-c", "sleep 20; echo '{{\"summary\":\"late\",\"result\":\"late\"}}'"] }}

[auth]
service_tokens = {{ "prime-boss" = "b-prime" }}
user_tokens = {{ "alice" = "b-alice" }}
"#,
        switchboard::config::DEFAULT_TOML.replacen(
            "may_delegate_to = [\"byte-doc\"",
            "may_delegate_to = [\"slow\", \"byte-doc\"",
            1
        )
    )
}

/// A team (A) whose extra agents are remote A2A agents. Their tools bound
/// what the remote may use: the rails carry the effective tools.
pub(crate) fn proxy_team(agents: &[(&str, &str)]) -> String {
    let mut extra = String::new();
    let mut slugs = String::new();
    for (slug, url) in agents {
        extra.push_str(&format!(
            "\n[[agents]]\nslug = \"{slug}\"\nname = \"{slug}\"\nbackend = {{ kind = \"a2a\", url = \"{url}\", token_env = \"A2A_REMOTE_TOKEN\" }}\ntools_allowed = [\"categorize\"]\nlimits = {{ max_attempts = 1 }}\n"
        ));
        slugs.push_str(&format!("\"{slug}\", "));
    }
    format!(
        "{}{extra}\n[auth]\nservice_tokens = {{ \"prime-boss\" = \"a-prime\" }}\n",
        switchboard::config::DEFAULT_TOML.replacen(
            "may_delegate_to = [\"byte-doc\"",
            &format!("may_delegate_to = [{slugs}\"byte-doc\""),
            1
        )
    )
}

pub(crate) fn envelope(target: &str, objective: &str, input: &str, deadline_ms: u64) -> Value {
    let mut e = crate::service::envelope("prime-boss", target, objective, input);
    e["constraints"] = json!({"deadline_ms": deadline_ms});
    e
}

#[tokio::test]
async fn the_a2a_backend_calls_another_switchboard_and_cancels_the_remote_task() {
    let b = Server::start(Some(&remote_team()), Some("memory:"), "127.0.0.1:0", &[], 1000);
    let a = Server::start(
        Some(&proxy_team(&[
            ("remote-tag", &format!("{}/a2a/tag-ai", b.url)),
            ("remote-slow", &format!("{}/a2a/slow/.well-known/agent-card.json", b.url)),
        ])),
        Some("memory:"),
        "127.0.0.1:0",
        &[("A2A_REMOTE_TOKEN", "b-prime")],
        1000,
    );
    let (status, body) =
        post_delegate(&a.url, "a-prime", &envelope("remote-tag", "Categorize", "2025-10-01 Starbucks 4.50", 10_000))
            .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"].as_str().unwrap().contains("Dining - Coffee"), "{body}");
    assert!(body["token_usage"]["total"].as_u64().unwrap() > 0);
    // on B, the task ran as prime-boss's delegation inside A's tree
    let tasks = get_json(&format!("{}/a2a/tag-ai/tasks?A2A-Version=1.0", b.url), "b-prime").await;
    let task = &tasks["tasks"][0];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{tasks}");
    let tree = get_json(&format!("{}/v1/delegations/{}", b.url, task["id"].as_str().unwrap()), "b-prime").await;
    assert_eq!(tree["agent"], "tag-ai");
    assert_eq!(tree["origin"], "prime-boss");

    // A's deadline passes: A answers DEADLINE_EXCEEDED, and B's task ends too
    let started = Instant::now();
    let (status, body) = post_delegate(&a.url, "a-prime", &envelope("remote-slow", "Take your time", "", 1500)).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "DEADLINE_EXCEEDED");
    assert!(started.elapsed() < Duration::from_secs(5));
    wait_for_remote(&b.url, |s| s == "TASK_STATE_CANCELED" || s == "TASK_STATE_FAILED", 0).await;

    // cancelling A's task cancels the proxy node, whose a2a backend cancels B's task
    let rails = rails(0, 2, json!({"origin": "prime-boss", "deadlineMs": 15000, "tools": ["categorize"]}));
    let sent = a2a_post(
        &a.url,
        "remote-slow",
        "a-prime",
        "SendMessage",
        json!({
            "message": with_rails("x-1", "Take your time again", rails), "configuration": {"returnImmediately": true}
        }),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    wait_for_remote(&b.url, |s| s == "TASK_STATE_WORKING", 1).await;
    let cancelled = a2a_post(&a.url, "remote-slow", "a-prime", "CancelTask", json!({"id": id})).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    let started = Instant::now();
    wait_for_remote(&b.url, |s| s == "TASK_STATE_CANCELED", 1).await;
    assert!(started.elapsed() < Duration::from_secs(5), "B's own deadline (15 s) did not end it: the cancel did");
}

async fn a2a_post(url: &str, slug: &str, token: &str, method: &str, params: Value) -> Value {
    switchboard::util::http_client()
        .unwrap()
        .post(format!("{url}/a2a/{slug}"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until the B's `slow` task number `nth` (oldest first) is in a state `ok` accepts.
pub(crate) async fn wait_for_remote(b: &str, ok: impl Fn(&str) -> bool, nth: usize) {
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let tasks = get_json(&format!("{b}/a2a/slow/tasks?A2A-Version=1.0"), "b-prime").await;
        let list = tasks["tasks"].as_array().cloned().unwrap_or_default();
        let state = list.iter().rev().nth(nth).and_then(|t| t["status"]["state"].as_str()).unwrap_or("").to_string();
        if ok(&state) {
            return;
        }
        assert!(Instant::now() < deadline, "B's slow task {nth} is not there yet: {tasks}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether python3 has the a2a-sdk (with its HTTP server) and uvicorn.
fn sdk_available() -> bool {
    crate::support::python_has("a2a.client, a2a.server.routes, uvicorn, starlette", "'a2a-sdk[http-server]' uvicorn")
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test]
async fn the_official_a2a_sdk_client_sends_streams_gets_and_cancels() {
    if !sdk_available() {
        return;
    }
    let server = Server::start(Some(&remote_team()), Some("memory:"), "127.0.0.1:0", &[], 1000);
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("python3").args([&fixture("a2a_sdk_client.py"), &server.url, "b-alice"]).output(),
    )
    .await
    .expect("the SDK client finishes")
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let b = &v[binding];
        assert_eq!(b["send_state"], "TASK_STATE_COMPLETED", "{binding}: {b}");
        assert!(b["send_artifacts"][0].as_str().unwrap().contains("Dining - Coffee"));
        assert_eq!(b["get_same_id"], true);
        assert_eq!(b["get_state"], "TASK_STATE_COMPLETED");
        let kinds: Vec<&str> = b["stream_kinds"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"task"));
        assert!(kinds.contains(&"artifact_update"));
        assert_eq!(b["stream_states"].as_array().unwrap().last().unwrap(), "TASK_STATE_COMPLETED");
        assert_eq!(b["started_state"], "TASK_STATE_WORKING");
        assert_eq!(b["cancel_state"], "TASK_STATE_CANCELED");
        assert_eq!(b["missing"], "TaskNotFoundError");
    }
}

/// An a2a-sdk echo agent on a free port, killed when dropped.
pub(crate) struct EchoAgent {
    child: std::process::Child,
    pub url: String,
}

impl Drop for EchoAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn echo_agent() -> EchoAgent {
    echo_agent_with(false).await
}

/// The a2a-sdk echo agent; `grpc`: also over gRPC (a second port, in its card).
pub(crate) async fn echo_agent_with(grpc: bool) -> EchoAgent {
    let port = free_port();
    let mut args = vec![fixture("a2a_echo_agent.py"), port.to_string()];
    if grpc {
        args.push(free_port().to_string());
    }
    let child = std::process::Command::new("python3")
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let agent = EchoAgent { child, url: format!("http://127.0.0.1:{port}") };
    let client = switchboard::util::http_client().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let card = client.get(format!("{}/.well-known/agent-card.json", agent.url)).send().await;
        if card.is_ok_and(|c| c.status().is_success()) {
            return agent;
        }
        assert!(Instant::now() < deadline, "the echo agent did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_a2a_sdk_agent_is_a_team_member_and_receives_the_rails() {
    if !sdk_available() {
        return;
    }
    let echo = echo_agent().await;
    let a = Server::start(
        Some(&proxy_team(&[("echo", &echo.url)])),
        Some("memory:"),
        "127.0.0.1:0",
        &[("A2A_REMOTE_TOKEN", "unused")],
        1000,
    );
    let env = envelope("echo", "Say hello", "some input", 10_000);
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["result"], "echo: Say hello | some input");
    assert_eq!(body["summary"], "echoed");
    let received = &body["artifacts"].as_array().unwrap().iter().find(|a| a["label"] == "received").unwrap()["value"];
    let rails = &received["metadata"][RAILS_EXTENSION];
    assert_eq!(rails["user"], "alice");
    assert_eq!(rails["origin"], "prime-boss");
    assert_eq!(rails["depth"], 0.0);
    assert_eq!(rails["rootId"], env["request_id"]);
    assert_eq!(rails["parentId"], env["request_id"], "the hop is a child of the proxy node");
    assert_ne!(rails["requestId"], env["request_id"]);
    assert!(rails["deadlineMs"].as_f64().unwrap() > 0.0 && rails["deadlineMs"].as_f64().unwrap() <= 10_000.0);
    assert!(rails["maxTokens"].as_f64().unwrap() > 0.0);
    assert_eq!(received["extensions"][0], RAILS_EXTENSION);
}

#[tokio::test]
async fn the_lineage_extension_is_required_once_declared_and_its_token_is_verified() {
    use switchboard::protocol::a2a::LINEAGE_EXTENSION;
    let (r, rt) = rails_team().await;
    // a peer that declares the extension must send its token
    let mut m = with_rails("l-1", "work", rails(0, 3, json!({})));
    m["extensions"] = json!([RAILS_EXTENSION, LINEAGE_EXTENSION]);
    let v = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": m})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("carries no token"), "{v}");
    // a token that is not one is refused before anything runs, and audited
    let mut m = with_rails("l-2", "work", rails(0, 3, json!({})));
    m["metadata"][LINEAGE_EXTENSION] = json!({"token": "bm90IGEgdG9rZW4"});
    let v = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": m})).await;
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{v}");
    assert_eq!(task["metadata"][RAILS_EXTENSION]["code"], "LINEAGE_INVALID", "{v}");
    let log = rt.store().audit_log().await.unwrap();
    let last = &log.last().unwrap().record;
    assert_eq!((last.outcome.as_str(), last.error_code.as_deref()), ("refused", Some("LINEAGE_INVALID")));
    assert!(log.iter().all(|e| e.record.target != "worker" || e.record.outcome == "refused"), "worker never ran");
    // malformed extension metadata is invalid params
    let mut m = with_rails("l-3", "work", rails(0, 3, json!({})));
    m["metadata"][LINEAGE_EXTENSION] = json!("just a string");
    let v = rpc(&r, "worker", CALLER, "SendMessage", json!({"message": m})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

/// A peer whose stream breaks off after it took the task: the turn goes on
/// there, so the backend follows the task with GetTask and answers with its
/// end. On main that was a failed attempt (AGENT_UNAVAILABLE), the remote's
/// answer was lost and a retry sent the message again.
#[tokio::test]
async fn a_stream_that_breaks_off_after_the_peer_took_the_task_is_followed_to_its_end() {
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use std::sync::atomic::AtomicUsize;
    let (sends, gets) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({
        "name": "flaky peer",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
    });
    let (s, g) = (sends.clone(), gets.clone());
    let peer = Router::new().route("/.well-known/agent-card.json", get(move || async move { axum::Json(card) })).route(
        "/",
        post(move |axum::Json(body): axum::Json<Value>| {
            let (s, g) = (s.clone(), g.clone());
            async move {
                let task = |state: &str| {
                    let mut t = json!({"id": "t-1", "contextId": "c-1", "status": {"state": state}});
                    if state == "TASK_STATE_COMPLETED" {
                        t["artifacts"] = json!([{"artifactId": "a-1", "parts": [{"text": "done remotely"}]}]);
                    }
                    t
                };
                let id = body["id"].clone();
                match body["method"].as_str() {
                    Some("SendStreamingMessage") => {
                        s.fetch_add(1, Ordering::SeqCst);
                        let first = json!({"jsonrpc": "2.0", "id": id, "result": {"task": task("TASK_STATE_WORKING")}});
                        use futures::StreamExt;
                        let sent = futures::stream::iter([Ok::<_, std::io::Error>(format!("data: {first}\n\n"))]);
                        // once the event is out, the connection drops
                        let drop = futures::stream::once(async {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            Err(std::io::Error::other("the connection drops"))
                        });
                        let mut res = Body::from_stream(sent.chain(drop)).into_response();
                        res.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
                        res
                    }
                    Some("GetTask") => {
                        g.fetch_add(1, Ordering::SeqCst);
                        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": task("TASK_STATE_COMPLETED")}))
                            .into_response()
                    }
                    _ => axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}))
                        .into_response(),
                }
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, peer).await });

    let toml = format!(
        "[[agents]]\nslug = \"boss\"\nname = \"boss\"\nmay_delegate_to = [\"far\"]\n\n\
         [[agents]]\nslug = \"far\"\nname = \"far\"\nbackend = {{ kind = \"a2a\", url = \"{url}\" }}\n"
    );
    let boss = agent(|_ctx, _task| async { Ok(AgentOutput::new("boss", "boss")) });
    let rt = Runtime::builder().config(Config::from_toml(&toml).unwrap()).agent("boss", boss).build().unwrap();
    let r = rt.delegate(&crate::support::operator(), crate::support::request("boss", "far", "Do it")).await;
    assert!(r.is_success(), "{:?}", r.error);
    assert!(r.result.contains("done remotely"), "{}", r.result);
    assert_eq!(sends.load(Ordering::SeqCst), 1, "the message was sent once");
    assert!(gets.load(Ordering::SeqCst) >= 1, "the task was followed with GetTask");
}
