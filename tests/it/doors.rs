//! The door matrix: one table of hostile cases, sent through every door the
//! runtime has (native HTTP, the OpenAI-compatible API, A2A over JSON-RPC,
//! HTTP+JSON and gRPC, MCP over HTTP and stdio, the queue worker, the
//! command line, the library), each in that door's own wire form, with the
//! official wire shapes and real servers on 127.0.0.1. Every door that can
//! express a case must give the same verdict (the stable code, read back
//! from the door's wire form as its specification maps it), and nothing of
//! alice's may change. A door in `Door::ALL` without a driver here fails
//! the test: a new door cannot skip the table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::config::Config;
use switchboard::lineage::{Claims, KeyRing, Link};
use switchboard::pipeline::{Door, Envelope, Turn};
use switchboard::protocol::a2a::grpc::pb::a2a_service_client::A2aServiceClient;
use switchboard::protocol::a2a::grpc::{ErrorInfo, RpcStatus, pb, to_proto};
use switchboard::protocol::a2a::rails::{LINEAGE_EXTENSION, RAILS_EXTENSION};
use switchboard::protocol::{DelegationRequest, ErrorCode, RequestId, SessionId, UserId};
use switchboard::server::AppState;
use switchboard::store::{SqlStore, Store};
use switchboard::{AskOptions, Principal, Runtime};

use crate::support::{slug, user};

const ALICE: &str = "door-alice";
const BOB: &str = "door-bob";
const COURIER: &str = "door-courier";
const TRUSTED: &str = "door-trusted";
const ADMIN: &str = "door-admin";
/// `[limits] max_input_bytes` here: the oversize case sends more.
const MAX_INPUT: usize = 8 * 1024;

/// The hostile cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Case {
    /// No token at all.
    NoCredentials,
    /// A token nobody issued.
    WrongCredentials,
    /// A body that is not the door's wire form.
    Malformed,
    /// Input past the limit.
    Oversize,
    /// An agent that is no tree root for bob starts a tree for him without lineage.
    UnsignedRoot,
    /// A lineage token signed by a key nobody trusts here.
    ForgedLineage,
    /// A lineage token of a trusted peer whose deadline has passed.
    ExpiredLineage,
    /// A trusted peer's valid token, sent again with another envelope.
    ReusedLineage,
    /// An envelope asking for tools its origin does not have.
    ToolsGrow,
    /// An envelope one hop from the depth limit.
    Depth,
    /// An envelope whose chain already ran the target with this objective.
    Cycle,
    /// Bob reads alice's tree (or task).
    OtherUsersTree,
    /// Bob continues alice's session.
    OtherUsersSession,
    /// Bob cancels alice's tree (or task).
    ActOnOtherUsersTree,
    /// An envelope reusing the request id of alice's tree.
    IdReuse,
    /// A protocol version this runtime does not speak.
    UnsupportedVersion,
}

impl Case {
    const ALL: [Case; 16] = [
        Self::NoCredentials,
        Self::WrongCredentials,
        Self::Malformed,
        Self::Oversize,
        Self::UnsignedRoot,
        Self::ForgedLineage,
        Self::ExpiredLineage,
        Self::ReusedLineage,
        Self::ToolsGrow,
        Self::Depth,
        Self::Cycle,
        Self::OtherUsersTree,
        Self::OtherUsersSession,
        Self::ActOnOtherUsersTree,
        Self::IdReuse,
        Self::UnsupportedVersion,
    ];

    /// The verdict every door must give.
    fn verdict(self) -> ErrorCode {
        match self {
            Self::NoCredentials | Self::WrongCredentials | Self::ForgedLineage => ErrorCode::Unauthenticated,
            Self::Malformed | Self::Oversize => ErrorCode::InvalidRequest,
            Self::UnsignedRoot => ErrorCode::LineageInvalid,
            Self::ExpiredLineage => ErrorCode::DeadlineExceeded,
            Self::ReusedLineage => ErrorCode::LineageMismatch,
            Self::ToolsGrow => ErrorCode::ToolNotAllowed,
            Self::Depth => ErrorCode::DepthLimit,
            Self::Cycle => ErrorCode::CycleDetected,
            Self::OtherUsersTree => ErrorCode::NotFound,
            Self::OtherUsersSession | Self::ActOnOtherUsersTree => ErrorCode::UserMismatch,
            Self::IdReuse => ErrorCode::IdConflict,
            Self::UnsupportedVersion => ErrorCode::UnsupportedVersion,
        }
    }

    /// Where a door's specification maps the verdict to a code of its own.
    fn verdict_at(self, door: Door) -> ErrorCode {
        match (self, door) {
            // A2A answers another owner's task as one that does not exist (TaskNotFoundError)
            (Self::ActOnOtherUsersTree, Door::A2aJsonRpc | Door::A2aRest | Door::A2aGrpc) => ErrorCode::NotFound,
            // the OpenAI API's key is a user's: a service token is no credential there
            (Self::UnsignedRoot, Door::OpenAi) => ErrorCode::Unauthenticated,
            _ => self.verdict(),
        }
    }
}

/// What a door answered: a stable code, or that the work ran.
type Answer = Result<(), String>;

/// The world every door reaches: one team on one SQLite file, served on
/// 127.0.0.1, with a tree, a session and an A2A task of alice's.
struct World {
    dir: tempfile::TempDir,
    db: String,
    config: PathBuf,
    rt: Runtime,
    base: String,
    addr: std::net::SocketAddr,
    /// A trusted peer's keys, and an untrusted key that says it is that peer.
    peer: KeyRing,
    impostor: KeyRing,
    here: String,
    alice_root: RequestId,
    alice_session: SessionId,
    alice_task: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn team(lineage: &str, peer_key: &str) -> String {
    format!(
        r#"
[limits]
max_input_bytes = {MAX_INPUT}

[prime]
agent = "front"

[[agents]]
slug = "front"
name = "Front"
backend = {{ kind = "builtin", name = "tag-ai" }}
may_delegate_to = ["worker"]
tools_allowed = ["categorize"]

[[agents]]
slug = "worker"
name = "Worker"
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["categorize"]

[[agents]]
slug = "courier"
name = "Courier"
backend = {{ kind = "builtin", name = "tag-ai" }}
may_delegate_to = ["worker"]
tools_allowed = ["categorize"]

[[agents]]
slug = "trusted"
name = "Trusted"
backend = {{ kind = "builtin", name = "tag-ai" }}
may_delegate_to = ["worker"]
tools_allowed = ["categorize"]

[auth]
service_tokens = {{ courier = "{COURIER}", trusted = "{TRUSTED}" }}
user_tokens = {{ alice = "{ALICE}", bob = "{BOB}" }}
admin_tokens = ["{ADMIN}"]
service_roots = {{ trusted = ["alice"] }}

{lineage}
[[trust]]
name = "peer"
public_key = "{peer_key}"
may_call = ["worker"]
may_start_trees = true
"#
    )
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("doors.db").display());
    world_on(dir, db).await
}

/// [`world`] on the database at `db` (SQLite or PostgreSQL).
async fn world_on(dir: tempfile::TempDir, db: String) -> World {
    let (lineage, _) = crate::service::lineage_keys(dir.path(), "here");
    let peer = KeyRing::open(&dir.path().join("peer-keys"), "peer", 0).unwrap();
    let impostor = KeyRing::open(&dir.path().join("impostor-keys"), "peer", 0).unwrap();
    let toml = team(&lineage, &peer.public_keys()[0].public_key);
    let config = dir.path().join("doors.toml");
    std::fs::write(&config, &toml).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&db).await.unwrap());
    let rt = Runtime::builder().config(Config::from_toml(&toml).unwrap()).store(store).build().unwrap();
    let auth = rt.config().auth.clone();
    let state = Arc::new(AppState::new(rt.clone()));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(switchboard::server::serve(state, listener, Duration::from_millis(200), async move {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    // alice's tree and session (a turn at /v1/chat), and her A2A task
    let chat = http()
        .post(format!("{base}/v1/chat"))
        .bearer_auth(ALICE)
        .json(&json!({"message": "Categorize this", "input": "2025-10-01 Starbucks 4.50"}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status().as_u16(), 200);
    let chat: Value = chat.json().await.unwrap();
    let alice_root: RequestId = chat["request_id"].as_str().unwrap().parse().unwrap();
    let alice_session: SessionId = chat["session_id"].as_str().unwrap().parse().unwrap();
    let sent =
        jsonrpc(&base, "worker", Some(ALICE), "SendMessage", json!({"message": message("2025-10-02 Uber 23.10")}))
            .await
            .1;
    let alice_task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    World {
        dir,
        db,
        config,
        rt,
        base,
        addr,
        peer,
        impostor,
        here: "here".into(),
        alice_root,
        alice_session,
        alice_task,
        _stop: stop,
    }
}

fn http() -> reqwest::Client {
    switchboard::util::install_tls();
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(30)).build().unwrap()
}

fn message(text: &str) -> Value {
    json!({"role": "ROLE_USER", "messageId": RequestId::new(), "parts": [{"text": text}]})
}

// ── what each case sends, door by door ────────────────────────────────────

/// The envelope a case sends (None: the case is not an envelope).
fn envelope(w: &World, case: Case) -> Option<(Principal, DelegationRequest, Option<String>)> {
    let trusted = Principal::Agent(slug("trusted"));
    let for_alice =
        |objective: &str| DelegationRequest::new(slug("trusted"), slug("worker"), user("alice"), objective, "");
    Some(match case {
        Case::UnsignedRoot => (
            Principal::Agent(slug("courier")),
            DelegationRequest::new(slug("courier"), slug("worker"), user("bob"), "Tag bob's coffee", "Starbucks 4.50"),
            None,
        ),
        Case::ToolsGrow => {
            let mut r = for_alice("Tag it");
            r.tools = Some(vec!["categorize".into(), "delete_everything".into()]);
            (trusted, r, None)
        }
        Case::Depth => {
            let mut r = for_alice("Tag it, deep");
            (r.current_depth, r.constraints.max_depth) = (1, 2);
            (trusted, r, None)
        }
        Case::Cycle => {
            let mut r = for_alice("Tag it again");
            r.current_depth = 1;
            r.constraints.max_depth = 5;
            let hash = switchboard::protocol::request::objective_hash("Tag it again");
            r.chain = vec![
                switchboard::protocol::ChainLink { agent: slug("worker"), objective_hash: hash.clone() },
                switchboard::protocol::ChainLink { agent: slug("trusted"), objective_hash: hash },
            ];
            (trusted, r, None)
        }
        Case::IdReuse => {
            let mut r = for_alice("Tag it under her id");
            r.request_id = w.alice_root;
            (trusted, r, None)
        }
        Case::UnsupportedVersion => {
            let mut r = for_alice("Tag it in version 9");
            r.protocol_version = "9.0".into();
            (trusted, r, None)
        }
        Case::ForgedLineage | Case::ExpiredLineage | Case::ReusedLineage => {
            let mut r = DelegationRequest::new(slug("trusted"), slug("worker"), user("bob"), "Tag it, signed", "");
            let (ring, deadline_ms, claimed) = match case {
                Case::ForgedLineage => (&w.impostor, switchboard::lineage::now_ms() + 60_000, r.request_id),
                Case::ExpiredLineage => (&w.peer, switchboard::lineage::now_ms() - 60_000, r.request_id),
                _ => (&w.peer, switchboard::lineage::now_ms() + 60_000, RequestId::new()),
            };
            let claims = Claims {
                tree: claimed,
                parent: None,
                request: claimed,
                user: UserId::parse("bob").unwrap(),
                depth: 0,
                max_depth: 2,
                fan_out: 3,
                deadline_ms,
                budget: 1000,
                tools: vec!["categorize".into()],
                path: vec![Link::new(slug("trusted"), slug("worker"), "Tag it, signed")],
                issuer: "peer".into(),
                audience: w.here.clone(),
            };
            let token = ring.mint_root(claims).unwrap().encode();
            r.constraints.max_tokens = 1000;
            (trusted, r, Some(token))
        }
        _ => return None,
    })
}

/// An envelope's rails extension (A2A), as the envelope states them.
fn rails(req: &DelegationRequest) -> Value {
    let mut r = json!({
        "requestId": req.request_id, "rootId": req.root_id(), "origin": req.origin_employee, "user": req.user_id,
        "depth": req.current_depth, "maxDepth": req.constraints.max_depth, "deadlineMs": req.constraints.deadline_ms,
        "maxTokens": req.constraints.max_tokens, "priority": "normal",
        "chain": req.chain.iter().map(|l| json!({"agent": l.agent, "objectiveHash": l.objective_hash})).collect::<Vec<_>>(),
    });
    if let Some(tools) = &req.tools {
        r["tools"] = json!(tools);
    }
    if let Some(p) = req.parent_request_id {
        r["parentId"] = json!(p);
    }
    r
}

/// The A2A message of an envelope (rails, and the lineage extension with a token).
fn a2a_message(req: &DelegationRequest, lineage: Option<&str>) -> Value {
    let mut m = message(&req.objective);
    let mut meta = serde_json::Map::new();
    meta.insert(RAILS_EXTENSION.into(), rails(req));
    if let Some(t) = lineage {
        meta.insert(LINEAGE_EXTENSION.into(), json!({"token": t}));
        m["extensions"] = json!([LINEAGE_EXTENSION]);
    }
    m["metadata"] = Value::Object(meta);
    m
}

/// The token of a principal at the network doors.
fn token(p: &Principal) -> &'static str {
    match p {
        Principal::Agent(a) if a.as_str() == "courier" => COURIER,
        Principal::Agent(_) => TRUSTED,
        Principal::User(u) if u.as_str() == "bob" => BOB,
        Principal::User(_) => ALICE,
        _ => ADMIN,
    }
}

// ── reading a verdict back from each wire form ────────────────────────────

/// An A2A error's ErrorInfo (JSON) as our code: the `code` it carries, or its reason.
fn a2a_info_code(info: &Value) -> Option<String> {
    if let Some(c) = info["metadata"]["code"].as_str() {
        return Some(c.to_string());
    }
    let reason = info["reason"].as_str()?;
    Some(
        match reason {
            "TASK_NOT_FOUND" => "NOT_FOUND",
            "JSON_PARSE_ERROR" | "INVALID_REQUEST" | "INVALID_PARAMS" | "EXTENSION_SUPPORT_REQUIRED" => {
                "INVALID_REQUEST"
            }
            "VERSION_NOT_SUPPORTED" => "UNSUPPORTED_VERSION",
            other => other,
        }
        .to_string(),
    )
}

/// A task the send made: its state and, when it did not complete, the code the rails extension names.
fn task_code(task: &Value) -> Answer {
    match task["status"]["state"].as_str() {
        Some("TASK_STATE_COMPLETED") => Ok(()),
        _ => Err(task["metadata"][RAILS_EXTENSION]["code"]
            .as_str()
            .map_or_else(|| format!("task {task}"), str::to_string)),
    }
}

/// An HTTP answer: 2xx ran; an error body's code (Switchboard's `{"error":{"code"}}`, AIP-193's
/// ErrorInfo, JSON-RPC's error data), or the status when the body says nothing more.
fn http_code(status: u16, body: &Value) -> Answer {
    if let Some(task) = body.get("task").or_else(|| body["result"].get("task")) {
        return task_code(task);
    }
    if (200..300).contains(&status) && body.get("error").is_none() {
        return Ok(());
    }
    let e = &body["error"];
    if let Some(c) = e["code"].as_str() {
        return Err(c.to_string());
    }
    for info in e["details"].as_array().into_iter().chain(e["data"].as_array()).flatten() {
        if let Some(c) = a2a_info_code(info) {
            return Err(c);
        }
    }
    Err(match status {
        401 => "UNAUTHENTICATED".into(),
        400 | 413 => "INVALID_REQUEST".into(),
        404 => "NOT_FOUND".into(),
        s => format!("HTTP {s}: {body}"),
    })
}

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn bearer(req: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
    match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// The credential a case presents at a network door (None: no header).
fn credential(case: Case, fallback: &'static str) -> Option<&'static str> {
    match case {
        Case::NoCredentials => None,
        Case::WrongCredentials => Some("nobody-issued-this"),
        _ => Some(fallback),
    }
}

fn oversize() -> String {
    "x".repeat(80 * 1024)
}

// ── the doors ─────────────────────────────────────────────────────────────

/// `POST /v1/delegate`, `/v1/chat`, `GET /v1/delegations/{id}`, `POST /v1/trees/{id}/cancel`.
async fn native(w: &World, case: Case) -> Option<Answer> {
    let c = http();
    if let Some((who, req, lineage)) = envelope(w, case) {
        let mut b = c
            .post(format!("{}/v1/delegate", w.base))
            .bearer_auth(token(&who))
            .header("x-agent-request-id", req.request_id.to_string())
            .header("x-agent-origin", req.origin_employee.as_str())
            .json(&req);
        if let Some(t) = lineage {
            b = b.header("x-switchboard-lineage", t);
        }
        let (s, v) = send(b).await;
        return Some(http_code(s, &v));
    }
    let (s, v) = match case {
        Case::NoCredentials | Case::WrongCredentials => {
            send(bearer(c.post(format!("{}/v1/chat", w.base)), credential(case, BOB)).json(&json!({"message": "hi"})))
                .await
        }
        Case::Malformed => send(c.post(format!("{}/v1/chat", w.base)).bearer_auth(BOB).body("{\"message\": ")).await,
        Case::Oversize => {
            send(c.post(format!("{}/v1/chat", w.base)).bearer_auth(BOB).json(&json!({"message": oversize()}))).await
        }
        Case::OtherUsersTree => {
            send(c.get(format!("{}/v1/delegations/{}", w.base, w.alice_root)).bearer_auth(BOB)).await
        }
        Case::OtherUsersSession => {
            let body = json!({"message": "and what else?", "session_id": w.alice_session});
            send(c.post(format!("{}/v1/chat", w.base)).bearer_auth(BOB).json(&body)).await
        }
        Case::ActOnOtherUsersTree => {
            send(c.post(format!("{}/v1/trees/{}/cancel", w.base, w.alice_root)).bearer_auth(BOB)).await
        }
        _ => return None,
    };
    Some(http_code(s, &v))
}

/// `POST /v1/chat/completions`.
async fn openai(w: &World, case: Case) -> Option<Answer> {
    let url = format!("{}/v1/chat/completions", w.base);
    let body = |text: String| json!({"model": "front", "messages": [{"role": "user", "content": text}]});
    let c = http();
    let (s, v) = match case {
        Case::NoCredentials | Case::WrongCredentials => {
            send(bearer(c.post(&url), credential(case, BOB)).json(&body("hi".into()))).await
        }
        Case::Malformed => send(c.post(&url).bearer_auth(BOB).body("{\"messages\": 7}")).await,
        Case::Oversize => send(c.post(&url).bearer_auth(BOB).json(&body(oversize()))).await,
        Case::UnsignedRoot => send(c.post(&url).bearer_auth(COURIER).json(&body("for bob".into()))).await,
        Case::OtherUsersSession => {
            send(
                c.post(&url)
                    .bearer_auth(BOB)
                    .header("x-session-id", w.alice_session.to_string())
                    .json(&body("more".into())),
            )
            .await
        }
        _ => return None,
    };
    Some(http_code(s, &v))
}

async fn jsonrpc(base: &str, agent: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    send(bearer(http().post(format!("{base}/a2a/{agent}")).header("a2a-version", "1.0"), token).json(&body)).await
}

/// The A2A-Version a case sends (A2A's version is the binding's, not the envelope's).
fn a2a_version(case: Case) -> &'static str {
    if case == Case::UnsupportedVersion { "9.9" } else { "1.0" }
}

/// A2A over JSON-RPC (`POST /a2a/{agent}`).
async fn a2a_jsonrpc(w: &World, case: Case) -> Option<Answer> {
    if case == Case::UnsupportedVersion {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("hi")}});
        let b = http().post(format!("{}/a2a/worker", w.base)).header("a2a-version", a2a_version(case));
        let (s, v) = send(b.bearer_auth(BOB).json(&body)).await;
        return Some(http_code(s, &v));
    }
    if let Some((who, req, lineage)) = envelope(w, case) {
        let params = json!({"message": a2a_message(&req, lineage.as_deref())});
        let (s, v) = jsonrpc(&w.base, "worker", Some(token(&who)), "SendMessage", params).await;
        return Some(http_code(s, &v));
    }
    let (s, v) = match case {
        Case::NoCredentials | Case::WrongCredentials => {
            let params = json!({"message": message("hi")});
            jsonrpc(&w.base, "worker", credential(case, BOB), "SendMessage", params).await
        }
        Case::Malformed => {
            let b = http().post(format!("{}/a2a/worker", w.base)).header("a2a-version", "1.0").bearer_auth(BOB);
            send(b.body("{\"jsonrpc\": \"2.0\", \"id\": 1, ")).await
        }
        Case::Oversize => {
            jsonrpc(&w.base, "worker", Some(BOB), "SendMessage", json!({"message": message(&oversize())})).await
        }
        Case::OtherUsersTree => jsonrpc(&w.base, "worker", Some(BOB), "GetTask", json!({"id": w.alice_task})).await,
        Case::ActOnOtherUsersTree => {
            jsonrpc(&w.base, "worker", Some(BOB), "CancelTask", json!({"id": w.alice_task})).await
        }
        _ => return None,
    };
    Some(http_code(s, &v))
}

/// A2A over HTTP+JSON (`/a2a/{agent}/message:send`, `/a2a/{agent}/tasks/{id}`).
async fn a2a_rest(w: &World, case: Case) -> Option<Answer> {
    let c = http();
    let url = |path: &str| format!("{}/a2a/worker{path}", w.base);
    let v1 = |b: reqwest::RequestBuilder| b.header("a2a-version", a2a_version(case));
    if case == Case::UnsupportedVersion {
        let (s, v) =
            send(v1(c.post(url("/message:send"))).bearer_auth(BOB).json(&json!({"message": message("hi")}))).await;
        return Some(http_code(s, &v));
    }
    if let Some((who, req, lineage)) = envelope(w, case) {
        let body = json!({"message": a2a_message(&req, lineage.as_deref())});
        let (s, v) = send(v1(c.post(url("/message:send"))).bearer_auth(token(&who)).json(&body)).await;
        return Some(http_code(s, &v));
    }
    let (s, v) = match case {
        Case::NoCredentials | Case::WrongCredentials => {
            send(
                bearer(v1(c.post(url("/message:send"))), credential(case, BOB))
                    .json(&json!({"message": message("hi")})),
            )
            .await
        }
        Case::Malformed => send(v1(c.post(url("/message:send"))).bearer_auth(BOB).body("{\"message\": [")).await,
        Case::Oversize => {
            send(v1(c.post(url("/message:send"))).bearer_auth(BOB).json(&json!({"message": message(&oversize())})))
                .await
        }
        Case::OtherUsersTree => send(v1(c.get(url(&format!("/tasks/{}", w.alice_task)))).bearer_auth(BOB)).await,
        Case::ActOnOtherUsersTree => {
            send(v1(c.post(url(&format!("/tasks/{}:cancel", w.alice_task)))).bearer_auth(BOB)).await
        }
        _ => return None,
    };
    Some(http_code(s, &v))
}

/// A gRPC status as our code: the ErrorInfo's `code`, or its reason, or the status.
fn grpc_code(s: &tonic::Status) -> String {
    use prost::Message as _;
    if let Ok(status) = RpcStatus::decode(s.details()) {
        for any in status.details.iter().filter(|a| a.type_url.ends_with("google.rpc.ErrorInfo")) {
            if let Ok(info) = ErrorInfo::decode(any.value.as_ref()) {
                let json = json!({"reason": info.reason, "metadata": info.metadata});
                if let Some(c) = a2a_info_code(&json) {
                    return c;
                }
            }
        }
    }
    match s.code() {
        tonic::Code::Unauthenticated => "UNAUTHENTICATED".into(),
        tonic::Code::InvalidArgument | tonic::Code::OutOfRange | tonic::Code::ResourceExhausted => {
            "INVALID_REQUEST".into()
        }
        tonic::Code::NotFound => "NOT_FOUND".into(),
        other => format!("gRPC {other:?}: {}", s.message()),
    }
}

fn grpc_request<T>(body: T, token: Option<&str>) -> tonic::Request<T> {
    versioned_request(body, token, "1.0")
}

fn versioned_request<T>(body: T, token: Option<&str>, version: &'static str) -> tonic::Request<T> {
    use tonic::metadata::MetadataValue;
    let mut r = tonic::Request::new(body);
    r.metadata_mut().insert("a2a-version", MetadataValue::from_static(version));
    if let Some(t) = token {
        r.metadata_mut().insert("authorization", MetadataValue::try_from(format!("Bearer {t}")).unwrap());
    }
    r
}

/// A2A over gRPC (tonic, the generated client).
async fn a2a_grpc(w: &World, case: Case) -> Option<Answer> {
    let channel =
        tonic::transport::Channel::from_shared(format!("http://{}", w.addr)).unwrap().connect().await.unwrap();
    let mut client = A2aServiceClient::new(channel);
    let send_of =
        |m: Value| -> pb::SendMessageRequest { to_proto(&json!({"tenant": "worker", "message": m})).unwrap() };
    let sent = |r: Result<tonic::Response<pb::SendMessageResponse>, tonic::Status>| -> Answer {
        match r {
            Ok(resp) => {
                let v = switchboard::protocol::a2a::grpc::json_of(resp.get_ref()).unwrap();
                match v.get("task") {
                    Some(task) => task_code(task),
                    None => Ok(()),
                }
            }
            Err(s) => Err(grpc_code(&s)),
        }
    };
    if case == Case::UnsupportedVersion {
        // A2A 1.0.0's table: VersionNotSupportedError is UNIMPLEMENTED on gRPC (the TCK's GRPC-ERR-002)
        let r = client.send_message(versioned_request(send_of(message("hi")), Some(BOB), a2a_version(case))).await;
        return Some(match r {
            Err(s) if s.code() == tonic::Code::Unimplemented => Err(grpc_code(&s)),
            Err(s) => Err(format!("gRPC {:?} (the table says UNIMPLEMENTED): {}", s.code(), grpc_code(&s))),
            Ok(_) => Ok(()),
        });
    }
    if let Some((who, req, lineage)) = envelope(w, case) {
        let r =
            client.send_message(grpc_request(send_of(a2a_message(&req, lineage.as_deref())), Some(token(&who)))).await;
        return Some(sent(r));
    }
    Some(match case {
        Case::NoCredentials | Case::WrongCredentials => {
            sent(client.send_message(grpc_request(send_of(message("hi")), credential(case, BOB))).await)
        }
        Case::Malformed => {
            // a SendMessageRequest whose message has no parts and no role: not the wire form
            let bad = pb::SendMessageRequest {
                tenant: "worker".into(),
                message: Some(pb::Message::default()),
                ..Default::default()
            };
            sent(client.send_message(grpc_request(bad, Some(BOB))).await)
        }
        Case::Oversize => sent(client.send_message(grpc_request(send_of(message(&oversize())), Some(BOB))).await),
        Case::OtherUsersTree => {
            let get = pb::GetTaskRequest { tenant: "worker".into(), id: w.alice_task.clone(), history_length: None };
            match client.get_task(grpc_request(get, Some(BOB))).await {
                Ok(_) => Ok(()),
                Err(s) => Err(grpc_code(&s)),
            }
        }
        Case::ActOnOtherUsersTree => {
            let cancel =
                pb::CancelTaskRequest { tenant: "worker".into(), id: w.alice_task.clone(), ..Default::default() };
            match client.cancel_task(grpc_request(cancel, Some(BOB))).await {
                Ok(_) => Ok(()),
                Err(s) => Err(grpc_code(&s)),
            }
        }
        _ => return None,
    })
}

/// JSON-RPC's own codes: a body that is not a request, or params that are not the method's.
fn jsonrpc_code(code: i64) -> Option<String> {
    matches!(code, -32700 | -32600 | -32602).then(|| "INVALID_REQUEST".to_string())
}

/// An MCP tool call's result as a verdict: its structured error's code, or ran.
fn mcp_result(r: Result<rmcp::model::CallToolResult, rmcp::service::ServiceError>) -> Answer {
    match r {
        Ok(result) if result.is_error == Some(true) => {
            let v = result.structured_content.unwrap_or_default();
            Err(v["error"]["code"].as_str().map_or_else(|| format!("tool error {v}"), str::to_string))
        }
        Ok(_) => Ok(()),
        Err(rmcp::service::ServiceError::McpError(e)) => Err(e
            .data
            .as_ref()
            .and_then(|d| d["code"].as_str().map(str::to_string))
            .unwrap_or_else(|| jsonrpc_code(e.code.0.into()).unwrap_or_else(|| format!("{e:?}")))),
        // the transport's own answer (a body over the limit: 413 with Switchboard's error body)
        Err(e) => {
            let text = format!("{e:?}");
            Err(ErrorCode::ALL
                .into_iter()
                .find(|c| text.contains(&format!("\\\"code\\\":\\\"{}\\\"", c.as_str())))
                .map_or(text, |c| c.as_str().to_string()))
        }
    }
}

fn tool(name: &'static str, args: Value) -> rmcp::model::CallToolRequestParams {
    rmcp::model::CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
}

/// The MCP calls a case makes as `who` (None: the case has no MCP form).
fn mcp_call(w: &World, case: Case) -> Option<(&'static str, rmcp::model::CallToolRequestParams)> {
    Some(match case {
        Case::UnsignedRoot => {
            (COURIER, tool("delegate", json!({"target": "worker", "objective": "Tag bob's coffee", "user_id": "bob"})))
        }
        Case::OtherUsersTree => (BOB, tool("trace", json!({"root_id": w.alice_root}))),
        Case::OtherUsersSession => {
            (BOB, tool("ask", json!({"message": "and what else?", "session_id": w.alice_session})))
        }
        Case::Oversize => {
            (BOB, tool("delegate", json!({"target": "worker", "objective": "Tag it", "input": oversize()})))
        }
        _ => return None,
    })
}

/// MCP over streamable HTTP (the rmcp client).
async fn mcp_http(w: &World, case: Case) -> Option<Answer> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let url = format!("{}/mcp", w.base);
    match case {
        Case::NoCredentials | Case::WrongCredentials | Case::Malformed => {
            // the transport itself: a request without a valid token, or that is not JSON-RPC
            let mut b = http()
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json");
            let body = if case == Case::Malformed {
                b = b.bearer_auth(BOB);
                "{\"jsonrpc\": \"2.0\", \"method\": ".to_string()
            } else {
                b = bearer(b, credential(case, BOB));
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()
            };
            let (s, v) = send(b.body(body)).await;
            // JSON-RPC's parse error is the wire's INVALID_REQUEST
            return Some(match v["error"]["code"].as_i64().and_then(jsonrpc_code) {
                Some(c) => Err(c),
                None => http_code(s, &v),
            });
        }
        _ => {}
    }
    let (who, call) = mcp_call(w, case)?;
    switchboard::util::install_tls();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(who.to_string());
    let client =
        rmcp::model::ClientConfig::default().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let r = mcp_result(client.call_tool(call).await);
    let _ = client.cancel().await;
    Some(r)
}

/// MCP over stdio: `switchboard mcp --user bob` on the same database, through rmcp's child-process transport.
async fn mcp_stdio(w: &World, case: Case) -> Option<Answer> {
    use rmcp::ServiceExt;
    use rmcp::transport::TokioChildProcess;
    let (who, call) = mcp_call(w, case)?;
    if who != BOB {
        return None; // stdio acts as one user: it has no service token to present
    }
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    cmd.current_dir(w.dir.path()).env_remove("SWITCHBOARD_CONFIG").env_remove("SWITCHBOARD_DATABASE_URL");
    cmd.arg("--config").arg(&w.config).args(["--database-url", &w.db, "mcp", "--user", "bob"]);
    let transport = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().unwrap().0;
    let client = rmcp::model::ClientConfig::default().serve(transport).await.unwrap();
    let r = mcp_result(client.call_tool(call).await);
    let _ = client.cancel().await;
    Some(r)
}

/// The command line on the same database: `--json` answers read back.
fn cli(w: &World, case: Case) -> Option<Answer> {
    let big = w.dir.path().join("big.txt");
    let args: Vec<String> = match case {
        Case::Malformed => vec!["ask".into(), "--user".into(), "not a user id!".into(), "hello".into()],
        Case::Oversize => {
            std::fs::write(&big, "2025-10-01 Starbucks 4.50\n".repeat(MAX_INPUT / 10)).unwrap();
            vec![
                "ask".into(),
                "--user".into(),
                "bob".into(),
                "--file".into(),
                big.display().to_string(),
                "tag this".into(),
            ]
        }
        Case::Depth => ["delegate", "--from", "trusted", "--to", "worker", "--user", "alice", "--objective", "Tag it"]
            .into_iter()
            .map(String::from)
            .chain(["--depth", "1", "--max-depth", "2"].map(String::from))
            .collect(),
        Case::OtherUsersSession => ["ask", "--user", "bob", "--session", &w.alice_session.to_string(), "more"]
            .into_iter()
            .map(String::from)
            .collect(),
        _ => return None,
    };
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(w.dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_DATABASE_URL")
        .arg("--config")
        .arg(&w.config)
        .args(["--database-url", &w.db, "--json"])
        .args(&args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Some(Ok(()));
    }
    // a refused or failed run prints its error (--json); a usage error exits 2 with a message
    let v: Value = serde_json::from_str(&stdout)
        .ok()
        .or_else(|| stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()))
        .unwrap_or(Value::Null);
    Some(Err(match v["error"]["code"].as_str() {
        Some(c) => c.to_string(),
        None if out.status.code() == Some(2) => "INVALID_REQUEST".into(),
        None => format!("exit {:?}: {stdout} {stderr}", out.status.code()),
    }))
}

/// The library: `Runtime::enter` on a runtime over the same store.
async fn library(w: &World, case: Case) -> Option<Answer> {
    let rt = &w.rt;
    let bob = Principal::User(user("bob"));
    if let Some((who, req, lineage)) = envelope(w, case) {
        let r = rt.enter(Door::Library, &who, Envelope::new(req).lineage(lineage)).await;
        return Some(r.error.map_or(Ok(()), |e| Err(e.code.as_str().to_string())));
    }
    let turn = |message: &str, opts: AskOptions| Turn::ask(message.to_string(), opts);
    let r = match case {
        Case::Oversize => {
            let opts = AskOptions { input: Some(oversize()), ..Default::default() };
            rt.enter(Door::Library, &bob, turn("tag this", opts)).await.map(drop)
        }
        Case::OtherUsersSession => {
            let opts = AskOptions { session: Some(w.alice_session), ..Default::default() };
            rt.enter(Door::Library, &bob, turn("more", opts)).await.map(drop)
        }
        Case::ActOnOtherUsersTree => rt.cancel_tree(&bob, w.alice_root).await.map(drop),
        _ => return None,
    };
    Some(r.map_err(|e| e.code.as_str().to_string()))
}

/// The queue: jobs published straight onto a worker's subject (NATS on
/// 127.0.0.1:4222), read back from the dead letters the worker files.
async fn queue(case: Case, world: &crate::queue::World) -> Option<Answer> {
    let js = crate::queue::jetstream().await;
    let subject = format!("sb.work.{}", world.agent);
    let deadline = (switchboard::store::now_ms() + 60_000).to_string();
    let (lineage, body) = match case {
        Case::UnsignedRoot => (None, serde_json::to_vec(&world.ask("Tag the unsigned one", 30_000)).unwrap()),
        Case::Malformed => (Some("AQA".to_string()), b"{not json".to_vec()),
        Case::ForgedLineage => {
            let impostor = KeyRing::generate("caller").unwrap();
            let req = world.ask("Tag the forged one", 30_000);
            let claims = Claims {
                tree: req.request_id,
                parent: None,
                request: req.request_id,
                user: req.user_id.clone(),
                depth: 0,
                max_depth: 2,
                fan_out: 3,
                deadline_ms: switchboard::lineage::now_ms() + 60_000,
                budget: 1000,
                tools: Vec::new(),
                path: vec![Link::new(req.origin_employee.clone(), req.target_employee.clone(), &req.objective)],
                issuer: "caller".into(),
                audience: "workers".into(),
            };
            (Some(impostor.mint_root(claims).unwrap().encode()), serde_json::to_vec(&req).unwrap())
        }
        _ => return None,
    };
    let before = crate::queue::dead_letters(&world.agent).await.len();
    let mut h = async_nats::HeaderMap::new();
    h.insert("Switchboard-Deadline-At", deadline.as_str());
    h.insert("Nats-Msg-Id", uuid::Uuid::new_v4().to_string().as_str());
    if let Some(t) = &lineage {
        h.insert("Switchboard-Lineage", t.as_str());
    }
    js.publish_with_headers(subject, h, body.into()).await.unwrap().await.unwrap();
    for _ in 0..80 {
        let dead = crate::queue::dead_letters(&world.agent).await;
        if let Some((reason, _)) = dead.get(before) {
            // "unsigned: …", "malformed envelope: …", "its lineage was refused (CODE): …"
            return Some(Err(if reason.starts_with("unsigned") {
                "LINEAGE_INVALID".into()
            } else if reason.starts_with("malformed") {
                "INVALID_REQUEST".into()
            } else if let Some(code) = reason.split('(').nth(1).and_then(|r| r.split(')').next()) {
                code.to_string()
            } else {
                reason.clone()
            }));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Some(Ok(()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_gives_the_same_verdict_for_every_hostile_case() {
    let w = world().await;
    let before_tree = w.rt.store().delegation_tree(w.alice_root).await.unwrap();
    let before_steps = w.rt.store().tree_steps(w.alice_root).await.unwrap();
    let queue_world = crate::queue::nats_up().then(|| crate::queue::World::new("qdoors"));
    let _worker = queue_world.as_ref().map(|q| q.worker("w1", "0.01", 2));

    let mut table: BTreeMap<(&'static str, Case), Answer> = BTreeMap::new();
    let mut drivers = Vec::new();
    for door in Door::ALL {
        // a door without a driver fails here: every door has a row
        drivers.push(door);
        for case in Case::ALL {
            let answer = match door {
                Door::Http => native(&w, case).await,
                Door::OpenAi => openai(&w, case).await,
                Door::A2aJsonRpc => a2a_jsonrpc(&w, case).await,
                Door::A2aRest => a2a_rest(&w, case).await,
                Door::A2aGrpc => a2a_grpc(&w, case).await,
                Door::McpHttp => mcp_http(&w, case).await,
                Door::McpStdio => mcp_stdio(&w, case).await,
                Door::Cli => cli(&w, case),
                Door::Library => library(&w, case).await,
                Door::Queue => match &queue_world {
                    Some(q) => queue(case, q).await,
                    None => None,
                },
                other => panic!("door {other} has no driver in tests/it/doors.rs: give it a row of the table"),
            };
            if let Some(a) = answer {
                table.insert((door.as_str(), case), a);
            }
        }
    }
    // the table, as a person reads it
    let mut report = String::new();
    for case in Case::ALL {
        report.push_str(&format!("{case:?} (expect {}):", case.verdict()));
        for door in Door::ALL {
            if let Some(a) = table.get(&(door.as_str(), case)) {
                report.push_str(&format!(" {}={}", door, a.as_ref().err().map_or("ran", String::as_str)));
            }
        }
        report.push('\n');
    }
    eprintln!("{report}");
    let mut wrong = Vec::new();
    for ((door, case), answer) in &table {
        let door = Door::ALL.into_iter().find(|d| d.as_str() == *door).unwrap();
        let want = case.verdict_at(door).as_str().to_string();
        if answer.as_ref().err() != Some(&want) {
            wrong.push(format!("{door} {case:?}: want {want}, got {answer:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} cells disagree:\n{}\n\n{report}", wrong.len(), wrong.join("\n"));
    // every case reached more than one door; every door (the queue's, where NATS runs) has rows
    for case in Case::ALL {
        let doors = table.keys().filter(|(_, c)| *c == case).count();
        assert!(doors >= 2, "{case:?} reached {doors} door(s)");
    }
    for door in drivers {
        let rows = table.keys().filter(|(d, _)| *d == door.as_str()).count();
        if door != Door::Queue || queue_world.is_some() {
            assert!(rows >= 3, "door {door} has {rows} row(s)");
        }
    }
    // and nothing of alice's changed
    assert_eq!(w.rt.store().delegation_tree(w.alice_root).await.unwrap(), before_tree);
    assert_eq!(w.rt.store().tree_steps(w.alice_root).await.unwrap(), before_steps);
    let _ = (Path::new("."), ALICE);
}

// ── nothing raw is stored, whichever door it came through ─────────────────

/// What a person sends that the store must never hold as it is.
const RAW: [&str; 10] = [
    "maya.r@example.com",
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "5500\u{a0}0000\u{a0}0000\u{a0}0004",
    "5500000000000004",
    "234.56.7891",
    "4111111111111111",
    "123-45-6789",
    "(415) 555-2671",
    "push-secret-7f3a9c",
];

/// A message holding every raw value (the card twice, in two spellings).
fn raw_message(door: &str) -> String {
    format!(
        "Categorize for {door}: 2025-10-01 Starbucks 4.50 paid with 4111 1111 1111 1111 \
         (also 4111-1111-1111-1111, and 5500\u{a0}0000\u{a0}0000\u{a0}0004 from a PDF), receipt to \
         maya.r@example.com, call (415) 555-2671, ssn 123-45-6789 (hers 234.56.7891)"
    )
}

/// Every row of every table, each as text.
async fn every_row(w: &World) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(path) = w.db.strip_prefix("sqlite://") {
        let conn = rusqlite::Connection::open(path).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for t in tables {
            let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    let mut row = String::new();
                    for i in 0..n {
                        use rusqlite::types::ValueRef;
                        match r.get_ref(i)? {
                            ValueRef::Text(b) | ValueRef::Blob(b) => row.push_str(&String::from_utf8_lossy(b)),
                            ValueRef::Integer(v) => row.push_str(&v.to_string()),
                            ValueRef::Real(v) => row.push_str(&v.to_string()),
                            ValueRef::Null => {}
                        }
                        row.push('|');
                    }
                    Ok(row)
                })
                .unwrap();
            out.extend(rows.map(|r| (t.clone(), r.unwrap())));
        }
    } else {
        use sqlx::Row;
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&w.db).await.unwrap();
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        for t in tables {
            let sql = format!("SELECT row_to_json(t)::text FROM \"{t}\" t");
            for row in sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&pool).await.unwrap() {
                out.push((t.clone(), row.get::<String, _>(0)));
            }
        }
    }
    out
}

/// Sends the raw values through every door (a user's turn at each that
/// takes one, an agent's envelope at the native and A2A doors, a push
/// config's credentials), then reads every table of the database: none
/// holds a raw value, on SQLite and on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_door_leaves_a_raw_value_in_any_table() {
    let mut dbs = vec![];
    let dir = tempfile::tempdir().unwrap();
    dbs.push((dir, None));
    if let Some(pg) = crate::db::postgres().await {
        dbs.push((tempfile::tempdir().unwrap(), Some(pg)));
    }
    for (dir, pg) in dbs {
        let db = match &pg {
            Some(p) => p.url.clone(),
            None => format!("sqlite://{}", dir.path().join("raw.db").display()),
        };
        let w = world_on(dir, db).await;
        let c = http();
        // native: a user's turn and an agent's envelope
        let (s, v) = send(c.post(format!("{}/v1/chat", w.base)).bearer_auth(ALICE).json(&json!({
            "message": "Categorize this", "input": raw_message("chat")
        })))
        .await;
        assert_eq!(s, 200, "{v}");
        let mut env = DelegationRequest::new(slug("trusted"), slug("worker"), user("alice"), "Categorize", "");
        env.input = raw_message("delegate");
        // a map keyed by what a person sent: a key is a text too
        env.handoff_data.extra.insert(
            "accounts".into(),
            json!({"4111 1111 1111 1111": {"limit": 900}, "maya.r@example.com": "work", "123-45-6789": true}),
        );
        let (s, v) = send(
            c.post(format!("{}/v1/delegate", w.base))
                .bearer_auth(TRUSTED)
                .header("x-agent-request-id", env.request_id.to_string())
                .header("x-agent-origin", "trusted")
                .json(&env),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        // the OpenAI-compatible API
        let body = json!({"model": "front", "messages": [{"role": "user", "content": raw_message("openai")}]});
        let (s, v) = send(c.post(format!("{}/v1/chat/completions", w.base)).bearer_auth(ALICE).json(&body)).await;
        assert_eq!(s, 200, "{v}");
        // A2A: a user's message over JSON-RPC and HTTP+JSON (with a push config), an agent's over gRPC
        let (s, v) = jsonrpc(
            &w.base,
            "worker",
            Some(ALICE),
            "SendMessage",
            json!({"message": message(&raw_message("jsonrpc"))}),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        let push = json!({"url": "https://hooks.example.org/push", "token": "push-secret-7f3a9c"});
        let body =
            json!({"message": message(&raw_message("rest")), "configuration": {"taskPushNotificationConfig": push}});
        let (s, v) = send(
            c.post(format!("{}/a2a/worker/message:send", w.base))
                .header("a2a-version", "1.0")
                .bearer_auth(ALICE)
                .json(&body),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        let channel =
            tonic::transport::Channel::from_shared(format!("http://{}", w.addr)).unwrap().connect().await.unwrap();
        let mut grpc = A2aServiceClient::new(channel);
        let mut req = DelegationRequest::new(slug("trusted"), slug("worker"), user("alice"), "Categorize", "");
        req.objective = raw_message("grpc");
        let send_req: pb::SendMessageRequest =
            to_proto(&json!({"tenant": "worker", "message": a2a_message(&req, None)})).unwrap();
        grpc.send_message(grpc_request(send_req, Some(TRUSTED))).await.unwrap();
        // MCP over HTTP and stdio, the command line, the library
        let calls = [(ALICE, tool("ask", json!({"message": raw_message("mcp")})))];
        for (who, call) in calls {
            use rmcp::ServiceExt;
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let config =
                StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", w.base)).auth_header(who.to_string());
            let client = rmcp::model::ClientConfig::default()
                .serve(StreamableHttpClientTransport::from_config(config))
                .await
                .unwrap();
            assert!(mcp_result(client.call_tool(call).await).is_ok());
            let _ = client.cancel().await;
        }
        {
            use rmcp::ServiceExt;
            use rmcp::transport::TokioChildProcess;
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
            cmd.current_dir(w.dir.path()).env_remove("SWITCHBOARD_CONFIG").env_remove("SWITCHBOARD_DATABASE_URL");
            cmd.arg("--config").arg(&w.config).args(["--database-url", &w.db, "mcp", "--user", "bob"]);
            let transport = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().unwrap().0;
            let client = rmcp::model::ClientConfig::default().serve(transport).await.unwrap();
            assert!(mcp_result(client.call_tool(tool("ask", json!({"message": raw_message("stdio")}))).await).is_ok());
            let _ = client.cancel().await;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .current_dir(w.dir.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_DATABASE_URL")
            .arg("--config")
            .arg(&w.config)
            .args(["--database-url", &w.db, "ask", "--user", "bob", &raw_message("cli")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        w.rt.ask(&user("alice"), &raw_message("library"), AskOptions::default()).await.unwrap();
        // every table, every row
        let rows = every_row(&w).await;
        assert!(rows.len() > 40, "{} rows", rows.len());
        let leaks: Vec<String> = rows
            .iter()
            .flat_map(|(t, r)| {
                RAW.iter().filter(|raw| r.contains(*raw)).map(move |raw| format!("{t}: {raw} in {r:.300}"))
            })
            .collect();
        let name = if pg.is_some() { "postgres" } else { "sqlite" };
        assert!(leaks.is_empty(), "{name}: {} raw values stored:\n{}", leaks.len(), leaks.join("\n"));
        drop(pg);
    }
}
