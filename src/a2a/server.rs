//! A2A server: agent cards, JSON-RPC and HTTP+JSON bindings for every agent.
//!
//! | route | what |
//! |---|---|
//! | `GET /a2a/{slug}/.well-known/agent-card.json` | the agent card (no token needed) |
//! | `POST /a2a/{slug}` | JSON-RPC 2.0: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` |
//! | `POST /a2a/{slug}/message:send`, `…/message:stream` | HTTP+JSON: send, stream (SSE) |
//! | `GET /a2a/{slug}/tasks`, `…/tasks/{id}` | list, get |
//! | `POST /a2a/{slug}/tasks/{id}:cancel`, `GET\|POST …/tasks/{id}:subscribe` | cancel, subscribe (SSE) |
//!
//! Every request but the card's names the protocol version (`A2A-Version:
//! 1.0` header or `?A2A-Version=1.0`) and a bearer token: a user's token
//! talks to the agent as that user (a fresh tree at depth 0), an agent's
//! service token delegates as that agent with the rails extension.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::Stream;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::service::{self, ListQuery, Mode, Sent};
use crate::auth::Principal;
use crate::config::AgentSpec;
use crate::protocol::a2a::error::{A2aError, Kind};
use crate::protocol::a2a::rails::RAILS_EXTENSION;
use crate::protocol::a2a::types::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
    SendMessageRequest, StreamResponse, Task,
};
use crate::protocol::{AgentSlug, UserId};
use crate::server::AppState;

/// The A2A routes, merged into the service's router.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/a2a/{slug}/.well-known/agent-card.json", get(card))
        .route("/a2a/{slug}", post(jsonrpc))
        .route("/a2a/{slug}/", post(jsonrpc))
        .route("/a2a/{slug}/{*rest}", any(rest))
}

/// The service's own URL as the caller reached it.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).filter(|h| {
        !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
    });
    let proto = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .filter(|p| *p == "https" || *p == "http")
        .unwrap_or("http");
    format!("{proto}://{}", host.unwrap_or("127.0.0.1"))
}

/// The card of `spec`, served at `base`.
pub fn agent_card(spec: &AgentSpec, base: &str, anonymous: bool) -> AgentCard {
    let url = format!("{base}/a2a/{}", spec.slug);
    let interface = |binding: &str| AgentInterface {
        url: url.clone(),
        protocol_binding: binding.into(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.into(),
    };
    let mut tags: Vec<String> = spec.keywords.iter().take(8).cloned().collect();
    if let Some(d) = &spec.domain {
        tags.insert(0, d.clone());
    }
    let description = if spec.description.trim().is_empty() {
        format!("{} (Switchboard agent)", spec.name)
    } else {
        spec.description.clone()
    };
    let mut skills: Vec<AgentSkill> = spec
        .capabilities
        .iter()
        .map(|c| AgentSkill {
            id: c.clone(),
            name: c.replace(['_', '-'], " "),
            description: format!("{}: {}", spec.name, c.replace(['_', '-'], " ")),
            tags: std::iter::once(c.clone()).chain(tags.iter().cloned()).collect(),
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        })
        .collect();
    if skills.is_empty() {
        skills.push(AgentSkill {
            id: spec.slug.to_string(),
            name: spec.name.clone(),
            description: description.clone(),
            tags: if tags.is_empty() { vec![spec.slug.to_string()] } else { tags },
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        });
    }
    let mut schemes = Map::new();
    schemes.insert(
        "bearer".into(),
        json!({"httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "description": "A Switchboard token: a user's token talks to the agent as that user; an agent's service token delegates as that agent and must carry the rails extension."
        }}),
    );
    let mut requirements = vec![json!({"schemes": {"bearer": {"list": []}}})];
    if anonymous {
        // this service lets unauthenticated calls act as its configured anonymous user
        requirements.push(json!({"schemes": {}}));
    }
    AgentCard {
        name: spec.name.clone(),
        description,
        supported_interfaces: vec![interface("JSONRPC"), interface("HTTP+JSON")],
        provider: Some(AgentProvider { url: base.into(), organization: "Switchboard".into() }),
        version: env!("CARGO_PKG_VERSION").into(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![AgentExtension {
                uri: RAILS_EXTENSION.into(),
                description:
                    "Switchboard's delegation rails (request/root/parent ids, origin, user, depth, max depth, \
                              chain, remaining deadline and token budget, tools, priority) in message metadata; \
                              required with a service token, absent for users (a fresh tree at depth 0)"
                        .into(),
                required: false,
                params: None,
            }],
            extended_agent_card: Some(false),
        },
        security_schemes: schemes,
        security_requirements: requirements,
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills,
    }
}

fn member_spec(state: &AppState, slug: &str) -> Option<Arc<AgentSpec>> {
    let slug = AgentSlug::parse(slug).ok()?;
    state.runtime.registry().get(&slug).map(|m| m.spec.clone())
}

fn no_agent(slug: &str) -> A2aError {
    let shown: String = slug.chars().take(64).collect();
    A2aError::new(Kind::MethodNotFound, format!("no agent '{shown}' is registered here; GET /v1/agents lists the team"))
}

fn anonymous_user(state: &AppState) -> Option<UserId> {
    state.runtime.config().a2a.anonymous_user.as_deref().and_then(|u| UserId::parse(u).ok())
}

/// `GET /a2a/{slug}/.well-known/agent-card.json`.
async fn card(State(state): State<Arc<AppState>>, Path(slug): Path<String>, headers: HeaderMap) -> Response {
    let Some(spec) = member_spec(&state, &slug) else { return rest_error(&no_agent(&slug)) };
    let card = agent_card(&spec, &base_url(&headers), anonymous_user(&state).is_some());
    let body = serde_json::to_vec(&card).unwrap_or_default();
    let etag = format!("\"{}\"", &hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body))[..16]);
    let fresh = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
    let mut res = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&CARDS_SINCE.format("%a, %d %b %Y %H:%M:%S GMT").to_string()) {
        h.insert(header::LAST_MODIFIED, v);
    }
    res
}

/// Cards change only with the configuration, which is read at start.
static CARDS_SINCE: std::sync::LazyLock<chrono::DateTime<chrono::Utc>> = std::sync::LazyLock::new(chrono::Utc::now);

/// The protocol version the request names: `A2A-Version` header or query
/// parameter; empty means 0.3 (§3.6.2), which this server does not speak.
fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<(), A2aError> {
    let from_query = || {
        Query::<std::collections::HashMap<String, String>>::try_from_uri(uri)
            .ok()
            .and_then(|q| q.0.iter().find(|(k, _)| k.eq_ignore_ascii_case("a2a-version")).map(|(_, v)| v.clone()))
    };
    let version = match headers.get("a2a-version") {
        Some(v) => v.to_str().map(|s| s.trim().to_string()).unwrap_or_default(),
        None => from_query().unwrap_or_default(),
    };
    let shown: String = version.chars().take(20).collect();
    let mut parts = version.split('.');
    let (major, minor) = (parts.next(), parts.next());
    let ok = major == Some("1") && minor == Some("0") && parts.next().is_none_or(|p| p.parse::<u32>().is_ok());
    if ok {
        return Ok(());
    }
    let asked = if version.is_empty() { "none (taken as 0.3)".to_string() } else { format!("'{shown}'") };
    Err(A2aError::new(
        Kind::VersionNotSupported,
        format!("A2A-Version {asked} is not supported; this agent speaks A2A {PROTOCOL_VERSION}: send 'A2A-Version: {PROTOCOL_VERSION}'"),
    )
    .with("supportedVersions", PROTOCOL_VERSION))
}

/// The caller: its bearer token, or the configured anonymous user when it sends none.
async fn principal(state: &AppState, headers: &HeaderMap) -> Result<Principal, A2aError> {
    if headers.get(header::AUTHORIZATION).is_none()
        && let Some(user) = anonymous_user(state)
    {
        return Ok(Principal::User(user));
    }
    state.principal(headers, None).await.map_err(|e| A2aError::new(Kind::Unauthenticated, e.error.message))
}

/// JSON (or no declared type) is accepted; anything else is refused.
fn check_content_type(headers: &HeaderMap) -> Result<(), A2aError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else { return Ok(()) };
    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or("").trim();
    if mime == "application/json" || mime.ends_with("+json") {
        Ok(())
    } else {
        Err(A2aError::new(
            Kind::ContentTypeNotSupported,
            format!(
                "Content-Type '{}' is not supported; send application/json",
                mime.chars().take(60).collect::<String>()
            ),
        ))
    }
}

fn read_body(raw: Result<Bytes, BytesRejection>) -> Result<Bytes, A2aError> {
    raw.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            A2aError::new(Kind::InvalidRequest, "the request body is too large")
        } else {
            A2aError::new(Kind::InvalidRequest, format!("the request body could not be read: {r}"))
        }
    })
}

fn params<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, A2aError> {
    serde_json::from_value(value).map_err(|e| A2aError::invalid_params(format!("invalid {what} params: {e}")))
}

/// The HTTP+JSON binding's error response (AIP-193).
fn rest_error(e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut res = json_response(status, e.rest_body());
    if e.kind == Kind::Unauthenticated {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    res
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn rpc_error(id: &Value, e: &A2aError) -> Response {
    let status = match e.kind {
        Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
        Kind::PermissionDenied => StatusCode::FORBIDDEN,
        _ => StatusCode::OK,
    };
    let mut res = json_response(status, e.jsonrpc_response(id));
    if e.kind == Kind::Unauthenticated {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    res
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskIdParams {
    id: String,
    #[serde(default, alias = "history_length")]
    history_length: Option<i32>,
}

fn check_id(id: &str) -> Result<(), A2aError> {
    if id.is_empty() || id.len() > 256 {
        return Err(A2aError::invalid_params("id must be a task id of 1 to 256 characters"));
    }
    Ok(())
}

/// `POST /a2a/{slug}`: JSON-RPC 2.0.
async fn jsonrpc(
    State(state): State<Arc<AppState>>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let null = Value::Null;
    let raw = match read_body(raw) {
        Ok(b) => b,
        Err(e) => return rpc_error(&null, &e),
    };
    if let Err(e) = check_content_type(&headers) {
        return rpc_error(&null, &e);
    }
    let body: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => return rpc_error(&null, &A2aError::new(Kind::ParseError, format!("the body is not JSON: {e}"))),
    };
    let Value::Object(mut obj) = body else {
        return rpc_error(
            &null,
            &A2aError::new(Kind::InvalidRequest, "a JSON-RPC request is one object (batches are not supported)"),
        );
    };
    let id = obj.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return rpc_error(&null, &A2aError::new(Kind::InvalidRequest, "id must be a string, a number or null"));
    }
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return rpc_error(&id, &A2aError::new(Kind::InvalidRequest, "\"jsonrpc\" must be \"2.0\""));
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return rpc_error(
            &id,
            &A2aError::new(Kind::InvalidRequest, "\"method\" must be a string such as \"SendMessage\""),
        );
    };
    let p = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return rpc_error(&id, &A2aError::invalid_params("params must be an object")),
    };
    match dispatch_rpc(&state, &slug, &headers, &uri, &method, p, &id).await {
        Ok(r) => r,
        Err(e) => rpc_error(&id, &e),
    }
}

const METHODS: [&str; 6] =
    ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"];
const PUSH_METHODS: [&str; 4] = [
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
];

async fn dispatch_rpc(
    state: &Arc<AppState>,
    slug: &str,
    headers: &HeaderMap,
    uri: &Uri,
    method: &str,
    p: Value,
    id: &Value,
) -> Result<Response, A2aError> {
    let known = METHODS.contains(&method) || PUSH_METHODS.contains(&method) || method == "GetExtendedAgentCard";
    if !known {
        let shown: String = method.chars().take(60).collect();
        return Err(A2aError::new(
            Kind::MethodNotFound,
            format!("method '{shown}' does not exist; A2A 1.0 methods are {}", METHODS.join(", ")),
        ));
    }
    check_version(headers, uri)?;
    let spec = member_spec(state, slug).ok_or_else(|| no_agent(slug))?;
    let who = principal(state, headers).await?;
    let svc = service::for_state(state);
    let rt = &state.runtime;
    let ok = |result: Value| json_response(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            let req: SendMessageRequest = params(p, method)?;
            let mode = if method == "SendStreamingMessage" {
                Mode::Stream
            } else if req.configuration.as_ref().is_some_and(|c| c.return_immediately) {
                Mode::NonBlocking
            } else {
                Mode::Blocking
            };
            Ok(match svc.send(rt, &who, &spec.slug, req, mode).await? {
                Sent::Task(t) => ok(json!({"task": t})),
                Sent::Message(m) => ok(json!({"message": m})),
                Sent::Stream(t, rx) => sse(t, rx, Some(id.clone()), false),
            })
        }
        "GetTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            Ok(ok(serde_json::to_value(svc.get(&who, &spec.slug, &q.id, q.history_length)?).unwrap_or_default()))
        }
        "ListTasks" => {
            let q: ListQuery = params(p, method)?;
            Ok(ok(serde_json::to_value(svc.list(&who, &spec.slug, &q)?).unwrap_or_default()))
        }
        "CancelTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            Ok(ok(serde_json::to_value(svc.cancel(rt, &who, &spec.slug, &q.id)?).unwrap_or_default()))
        }
        "SubscribeToTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            let (t, rx) = svc.subscribe(&who, &spec.slug, &q.id)?;
            Ok(sse(t, rx, Some(id.clone()), true))
        }
        "GetExtendedAgentCard" => Err(unsupported_extended_card()),
        _ => Err(push_unsupported()),
    }
}

fn push_unsupported() -> A2aError {
    A2aError::new(
        Kind::PushNotificationNotSupported,
        "this agent does not send push notifications (capabilities.pushNotifications is false); use SendStreamingMessage, SubscribeToTask or GetTask",
    )
}

fn unsupported_extended_card() -> A2aError {
    A2aError::new(
        Kind::UnsupportedOperation,
        "this agent has no extended agent card (capabilities.extendedAgentCard is false); the public card is complete",
    )
}

/// A stream of A2A responses as Server-Sent Events, one `data:` line each:
/// for JSON-RPC (`id` set) each wrapped as a JSON-RPC response. The stream
/// closes after the event that ends the turn (terminal or interrupted
/// state); a subscription's first snapshot closes it only when terminal.
fn sse(first: Task, rx: broadcast::Receiver<StreamResponse>, id: Option<Value>, subscription: bool) -> Response {
    let frame = move |ev: &StreamResponse| -> SseEvent {
        let body = match &id {
            Some(id) => json!({"jsonrpc": "2.0", "id": id, "result": ev}),
            None => serde_json::to_value(ev).unwrap_or_default(),
        };
        SseEvent::default().data(body.to_string())
    };
    let done_at_start = first.status.state.is_terminal() || (!subscription && first.status.state.ends_turn());
    let first = StreamResponse::Task(first);
    // (the first event still to send, the receiver, whether the stream is done)
    let stream = futures::stream::unfold((Some(first), rx, done_at_start), move |(first, mut rx, done)| {
        let frame = frame.clone();
        async move {
            if let Some(f) = first {
                return Some((Ok::<_, Infallible>(frame(&f)), (None, rx, done)));
            }
            if done {
                return None;
            }
            loop {
                match rx.recv().await {
                    Ok(ev) => {
                        let end = service::ends_stream(&ev);
                        return Some((Ok(frame(&ev)), (None, rx, end)));
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    });
    sse_response(stream)
}

fn sse_response(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> Response {
    let mut res = Sse::new(stream).keep_alive(KeepAlive::new().interval(service::KEEP_ALIVE)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// A query parameter by its camelCase name, or by its proto (snake_case) name.
fn param<'a>(q: &'a std::collections::HashMap<String, String>, name: &str) -> Option<&'a String> {
    q.get(name).or_else(|| {
        let snake: String = name
            .chars()
            .flat_map(|c| if c.is_ascii_uppercase() { vec!['_', c.to_ascii_lowercase()] } else { vec![c] })
            .collect();
        q.get(&snake)
    })
}

/// Query parameters of the HTTP+JSON binding, as strings.
fn query(uri: &Uri) -> Result<std::collections::HashMap<String, String>, A2aError> {
    Query::<std::collections::HashMap<String, String>>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| A2aError::invalid_params(format!("the query string is malformed: {e}")))
}

fn int_param(q: &std::collections::HashMap<String, String>, name: &str) -> Result<Option<i32>, A2aError> {
    param(q, name)
        .map(|v| v.parse::<i32>().map_err(|_| A2aError::invalid_params(format!("{name} must be an integer"))))
        .transpose()
}

/// `/a2a/{slug}/…`: the HTTP+JSON binding.
async fn rest(
    State(state): State<Arc<AppState>>,
    Path((slug, rest)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    match dispatch_rest(&state, &slug, &rest, &method, &headers, &uri, raw).await {
        Ok(r) => r,
        Err(e) => rest_error(&e),
    }
}

enum Route<'a> {
    Send,
    Stream,
    List,
    Get(&'a str),
    Cancel(&'a str),
    Subscribe(&'a str),
    Push,
    ExtendedCard,
}

fn route<'a>(path: &'a str, method: &Method) -> Result<Route<'a>, A2aError> {
    let path = path.trim_end_matches('/');
    let not_allowed = || {
        A2aError::new(
            Kind::MethodNotFound,
            format!("{method} is not allowed on {}", path.chars().take(80).collect::<String>()),
        )
    };
    let (route, allowed): (Route<'a>, &[Method]) = match path {
        "message:send" => (Route::Send, &[Method::POST]),
        "message:stream" => (Route::Stream, &[Method::POST]),
        "tasks" => (Route::List, &[Method::GET]),
        "extendedAgentCard" => (Route::ExtendedCard, &[Method::GET]),
        p if p.starts_with("tasks/") => {
            let rest = &p["tasks/".len()..];
            if rest.contains("/pushNotificationConfigs") {
                (Route::Push, &[Method::GET, Method::POST, Method::DELETE])
            } else if let Some(id) = rest.strip_suffix(":cancel") {
                (Route::Cancel(id), &[Method::POST])
            } else if let Some(id) = rest.strip_suffix(":subscribe") {
                (Route::Subscribe(id), &[Method::GET, Method::POST])
            } else if !rest.contains('/') {
                (Route::Get(rest), &[Method::GET])
            } else {
                return Err(A2aError::new(
                    Kind::MethodNotFound,
                    "no such A2A resource; see the agent card's interfaces",
                ));
            }
        }
        _ => return Err(A2aError::new(Kind::MethodNotFound, "no such A2A resource; see the agent card's interfaces")),
    };
    if !allowed.contains(method) {
        return Err(not_allowed());
    }
    Ok(route)
}

#[allow(clippy::too_many_arguments)]
async fn dispatch_rest(
    state: &Arc<AppState>,
    slug: &str,
    path: &str,
    method: &Method,
    headers: &HeaderMap,
    uri: &Uri,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, A2aError> {
    let route = route(path, method)?;
    check_version(headers, uri)?;
    let spec = member_spec(state, slug).ok_or_else(|| no_agent(slug))?;
    let who = principal(state, headers).await?;
    let svc = service::for_state(state);
    let rt = &state.runtime;
    let ok = |v: Value| json_response(StatusCode::OK, v);
    match route {
        Route::Send | Route::Stream => {
            check_content_type(headers)?;
            let raw = read_body(raw)?;
            let body: Value = serde_json::from_slice(&raw)
                .map_err(|e| A2aError::new(Kind::ParseError, format!("the body is not JSON: {e}")))?;
            if !body.is_object() {
                return Err(A2aError::invalid_params("the body must be a SendMessageRequest object"));
            }
            let req: SendMessageRequest = params(body, "SendMessageRequest")?;
            let mode = match route {
                Route::Stream => Mode::Stream,
                _ if req.configuration.as_ref().is_some_and(|c| c.return_immediately) => Mode::NonBlocking,
                _ => Mode::Blocking,
            };
            Ok(match svc.send(rt, &who, &spec.slug, req, mode).await? {
                Sent::Task(t) => ok(json!({"task": t})),
                Sent::Message(m) => ok(json!({"message": m})),
                Sent::Stream(t, rx) => sse(t, rx, None, false),
            })
        }
        Route::Get(id) => {
            check_id(id)?;
            let q = query(uri)?;
            Ok(ok(serde_json::to_value(svc.get(&who, &spec.slug, id, int_param(&q, "historyLength")?)?)
                .unwrap_or_default()))
        }
        Route::List => {
            let q = query(uri)?;
            let bool_param = |name: &str| -> Result<Option<bool>, A2aError> {
                param(&q, name)
                    .map(|v| match v.as_str() {
                        "true" => Ok(true),
                        "false" => Ok(false),
                        _ => Err(A2aError::invalid_params(format!("{name} must be true or false"))),
                    })
                    .transpose()
            };
            let list = ListQuery {
                context_id: param(&q, "contextId").cloned(),
                status: param(&q, "status").map(|s| service::parse_state(s)).transpose()?,
                page_size: int_param(&q, "pageSize")?,
                page_token: param(&q, "pageToken").cloned(),
                history_length: int_param(&q, "historyLength")?,
                status_timestamp_after: param(&q, "statusTimestampAfter").cloned(),
                include_artifacts: bool_param("includeArtifacts")?,
            };
            Ok(ok(serde_json::to_value(svc.list(&who, &spec.slug, &list)?).unwrap_or_default()))
        }
        Route::Cancel(id) => {
            check_id(id)?;
            Ok(ok(serde_json::to_value(svc.cancel(rt, &who, &spec.slug, id)?).unwrap_or_default()))
        }
        Route::Subscribe(id) => {
            check_id(id)?;
            let (t, rx) = svc.subscribe(&who, &spec.slug, id)?;
            Ok(sse(t, rx, None, true))
        }
        Route::Push => Err(push_unsupported()),
        Route::ExtendedCard => Err(unsupported_extended_card()),
    }
}
