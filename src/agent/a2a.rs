//! The `a2a` agent backend: a remote A2A agent as a team member.
//!
//! It resolves the remote's agent card (the configured URL, or
//! `{url}/.well-known/agent-card.json`), picks its JSON-RPC interface (else
//! HTTP+JSON), sends `SendStreamingMessage` (or `SendMessage` when the card
//! says streaming is off) and follows the task to its end. The message
//! carries the rails extension built from the proxy node's lineage, so a
//! Switchboard on the other side keeps depth, chain, deadline and budget;
//! a failed, rejected or canceled task comes back with our error code. When
//! our deadline passes or the delegation is cancelled, it sends
//! `CancelTask`, best effort.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Map, Value, json};

use crate::agent::{Agent, AgentContext, AgentOutput, Task as WorkTask};
use crate::config::{AgentSpec, Backend, Config};
use crate::protocol::a2a::error::{self as a2a_error, A2aError};
use crate::protocol::a2a::rails::{RAILS_EXTENSION, Rails};
use crate::protocol::a2a::types::{
    AgentCard, Artifact as A2aArtifact, Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus, base64_decode,
};
use crate::protocol::{Artifact, ArtifactKind, DelegationError, ErrorCode, Status, TokenUsage};
use crate::telemetry;

/// Largest answer or event read from a remote.
const MAX_BODY: usize = 8 * 1024 * 1024;
/// How often a task that a blocking send left running is polled.
const POLL: Duration = Duration::from_millis(200);

/// The agent for a spec with an `a2a` backend.
pub fn for_spec(spec: &AgentSpec, _config: &Config) -> Result<Arc<dyn Agent>, DelegationError> {
    let Backend::A2a { url, token_env } = &spec.backend else {
        return Err(DelegationError::invalid(format!("agent '{}' does not have an a2a backend", spec.slug)));
    };
    let agent = A2aAgent::new(url, token_env.as_deref())
        .map_err(|e| DelegationError::invalid(format!("agent '{}': {}", spec.slug, e.message)))?;
    Ok(Arc::new(agent))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    HttpJson,
}

/// The interface chosen from the card.
#[derive(Debug, Clone)]
struct Endpoint {
    url: String,
    binding: Binding,
    streaming: bool,
}

/// A remote A2A agent.
pub struct A2aAgent {
    sender: Sender,
    card_url: String,
    endpoint: tokio::sync::Mutex<Option<Endpoint>>,
}

/// What every request needs: the HTTP client and the bearer token.
#[derive(Clone)]
struct Sender {
    client: reqwest::Client,
    token: Option<String>,
}

impl A2aAgent {
    /// `url`: the agent card's URL, or the agent's base URL.
    pub fn new(url: &str, token_env: Option<&str>) -> Result<Self, DelegationError> {
        let url = url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(DelegationError::invalid(format!(
                "a2a backend url '{url}' must start with http:// or https://"
            )));
        }
        let card_url = if url.ends_with(".json") {
            url.to_string()
        } else {
            format!("{}/.well-known/agent-card.json", url.trim_end_matches('/'))
        };
        let token = token_env
            .map(|var| {
                std::env::var(var).map_err(|_| {
                    DelegationError::invalid(format!(
                        "the environment variable {var} (the remote A2A agent's bearer token) is not set"
                    ))
                })
            })
            .transpose()?;
        Ok(Self {
            sender: Sender { client: crate::util::http_client().map_err(DelegationError::invalid)?, token },
            card_url,
            endpoint: tokio::sync::Mutex::new(None),
        })
    }

    fn unavailable(&self, what: impl std::fmt::Display) -> DelegationError {
        DelegationError::new(ErrorCode::AgentUnavailable, format!("A2A agent {}: {what}", self.card_url))
    }

    fn request(&self, method: reqwest::Method, url: &str, timeout: Duration) -> reqwest::RequestBuilder {
        self.sender.request(method, url, timeout)
    }

    /// The card's interface, fetched once (again after a transport failure).
    async fn endpoint(&self, timeout: Duration) -> Result<Endpoint, DelegationError> {
        let mut cached = self.endpoint.lock().await;
        if let Some(e) = cached.as_ref() {
            return Ok(e.clone());
        }
        let res = self
            .request(reqwest::Method::GET, &self.card_url, timeout)
            .send()
            .await
            .map_err(|e| self.unavailable(format!("the agent card could not be fetched: {e}")))?;
        let status = res.status();
        let body = read_limited(res).await.map_err(|e| self.unavailable(e))?;
        if !status.is_success() {
            return Err(self.unavailable(format!("the agent card answered HTTP {status}")));
        }
        let card: AgentCard = serde_json::from_slice(&body).map_err(|e| {
            DelegationError::new(ErrorCode::AgentFailed, format!("{} is not an A2A agent card: {e}", self.card_url))
        })?;
        let pick = |binding: &str| {
            card.supported_interfaces.iter().find(|i| {
                i.protocol_binding == binding && (i.protocol_version.is_empty() || i.protocol_version.starts_with("1."))
            })
        };
        let (interface, binding) = match (pick("JSONRPC"), pick("HTTP+JSON")) {
            (Some(i), _) => (i, Binding::JsonRpc),
            (None, Some(i)) => (i, Binding::HttpJson),
            _ => {
                return Err(DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("{} offers no A2A 1.0 JSON-RPC or HTTP+JSON interface", self.card_url),
                ));
            }
        };
        let e = Endpoint {
            url: interface.url.trim_end_matches('/').to_string(),
            binding,
            streaming: card.capabilities.streaming.unwrap_or(false),
        };
        *cached = Some(e.clone());
        Ok(e)
    }

    async fn forget_endpoint(&self) {
        *self.endpoint.lock().await = None;
    }

    fn operation(&self, ep: &Endpoint, method: &str, params: Value, timeout: Duration) -> reqwest::RequestBuilder {
        self.sender.operation(ep, method, params, timeout)
    }

    /// One non-streaming call: the result object, or the remote's error as ours.
    async fn call(
        &self,
        ep: &Endpoint,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, DelegationError> {
        let res = self.operation(ep, method, params, timeout).send().await.map_err(|e| self.transport_error(e))?;
        let status = res.status();
        let body = read_limited(res).await.map_err(|e| self.unavailable(e))?;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            let snippet = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            let code = if status.is_server_error() { ErrorCode::AgentUnavailable } else { ErrorCode::AgentFailed };
            DelegationError::new(code, format!("A2A agent answered HTTP {status} without JSON: {snippet:?}"))
        })?;
        match ep.binding {
            Binding::JsonRpc => {
                if let Some(err) = value.get("error") {
                    return Err(remote_error(err, status.as_u16()));
                }
                value.get("result").cloned().ok_or_else(|| {
                    DelegationError::new(
                        ErrorCode::AgentFailed,
                        "A2A agent's JSON-RPC answer has neither result nor error",
                    )
                })
            }
            Binding::HttpJson => {
                if !status.is_success() {
                    return Err(remote_error(value.get("error").unwrap_or(&value), status.as_u16()));
                }
                Ok(value)
            }
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> DelegationError {
        if e.is_timeout() {
            DelegationError::new(
                ErrorCode::DeadlineExceeded,
                format!("A2A agent {} did not answer in time", self.card_url),
            )
        } else {
            self.unavailable(format!("unreachable: {e}"))
        }
    }

    /// SendStreamingMessage, folding events until the turn ends.
    async fn stream(
        &self,
        ep: &Endpoint,
        params: Value,
        timeout: Duration,
        progress: &Progress,
    ) -> Result<(), DelegationError> {
        let res = self
            .operation(ep, "SendStreamingMessage", params, timeout)
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = res.status();
        let is_sse = res
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if !is_sse {
            let body = read_limited(res).await.map_err(|e| self.unavailable(e))?;
            let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let err = value.get("error").cloned().unwrap_or(value);
            return Err(remote_error(&err, status.as_u16()));
        }
        let mut res = res;
        let mut buf: Vec<u8> = Vec::new();
        let mut data = String::new();
        loop {
            let chunk = res.chunk().await.map_err(|e| {
                if e.is_timeout() {
                    DelegationError::new(ErrorCode::DeadlineExceeded, "the A2A stream did not end in time")
                } else {
                    self.unavailable(format!("the stream broke off: {e}"))
                }
            })?;
            let Some(chunk) = chunk else { return Ok(()) };
            buf.extend_from_slice(&chunk);
            if buf.len() > MAX_BODY {
                return Err(self.unavailable("an event is larger than 8 MiB"));
            }
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                let line = String::from_utf8_lossy(&line);
                let line = line.trim_end_matches(['\n', '\r']);
                if line.is_empty() {
                    if !data.is_empty() {
                        let event = std::mem::take(&mut data);
                        if self.event(ep, &event, progress)? {
                            return Ok(());
                        }
                    }
                } else if let Some(d) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(d.strip_prefix(' ').unwrap_or(d));
                }
            }
        }
    }

    /// One SSE event; true when the turn has ended.
    fn event(&self, ep: &Endpoint, data: &str, progress: &Progress) -> Result<bool, DelegationError> {
        let value: Value = serde_json::from_str(data).map_err(|e| {
            DelegationError::new(ErrorCode::AgentFailed, format!("A2A agent sent an event that is not JSON: {e}"))
        })?;
        let payload = match ep.binding {
            Binding::JsonRpc => {
                if let Some(err) = value.get("error") {
                    return Err(remote_error(err, 200));
                }
                value.get("result").cloned().unwrap_or(Value::Null)
            }
            Binding::HttpJson => {
                if let Some(err) = value.get("error") {
                    return Err(remote_error(err, 200));
                }
                value
            }
        };
        let ev: StreamResponse = serde_json::from_value(payload).map_err(|e| {
            DelegationError::new(
                ErrorCode::AgentFailed,
                format!("A2A agent sent an event that is not a StreamResponse: {e}"),
            )
        })?;
        Ok(progress.apply(ev))
    }
}

impl Sender {
    fn request(&self, method: reqwest::Method, url: &str, timeout: Duration) -> reqwest::RequestBuilder {
        let mut b = self
            .client
            .request(method, url)
            .header("A2A-Version", crate::protocol::a2a::types::PROTOCOL_VERSION)
            .header("A2A-Extensions", RAILS_EXTENSION)
            .timeout(timeout.max(Duration::from_millis(1)));
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        for (k, v) in telemetry::trace_headers() {
            b = b.header(k, v);
        }
        b
    }

    /// Sends one operation; for JSON-RPC wrapped as a request.
    fn operation(&self, ep: &Endpoint, method: &str, params: Value, timeout: Duration) -> reqwest::RequestBuilder {
        match ep.binding {
            Binding::JsonRpc => self.request(reqwest::Method::POST, &ep.url, timeout)
                .header(CONTENT_TYPE, "application/json")
                .body(json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(), "method": method, "params": params}).to_string()),
            Binding::HttpJson => {
                let id = params.get("id").and_then(Value::as_str).map(urlencode).unwrap_or_default();
                let (verb, path) = match method {
                    "SendMessage" => (reqwest::Method::POST, "/message:send".to_string()),
                    "SendStreamingMessage" => (reqwest::Method::POST, "/message:stream".to_string()),
                    "GetTask" => (reqwest::Method::GET, format!("/tasks/{id}")),
                    _ => (reqwest::Method::POST, format!("/tasks/{id}:cancel")),
                };
                let b = self.request(verb.clone(), &format!("{}{path}", ep.url), timeout);
                if verb == reqwest::Method::POST {
                    let body = if method == "CancelTask" { json!({}) } else { params };
                    b.header(CONTENT_TYPE, "application/json").body(body.to_string())
                } else {
                    b
                }
            }
        }
    }
}

/// What is known of the remote task so far; shared with the cancel guard.
#[derive(Default)]
struct Progress {
    inner: Mutex<ProgressInner>,
}

#[derive(Default)]
struct ProgressInner {
    task_id: Option<String>,
    status: Option<TaskStatus>,
    artifacts: Vec<A2aArtifact>,
    metadata: Option<Map<String, Value>>,
    reply: Option<Message>,
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, ProgressInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn task_id(&self) -> Option<String> {
        self.lock().task_id.clone()
    }

    /// Folds one response in; true when the turn has ended.
    fn apply(&self, ev: StreamResponse) -> bool {
        let mut p = self.lock();
        match ev {
            StreamResponse::Task(t) => {
                p.task_id = Some(t.id.clone());
                if let Some(a) = t.artifacts {
                    p.artifacts = a;
                }
                if t.metadata.is_some() {
                    p.metadata = t.metadata;
                }
                let ends = t.status.state.ends_turn();
                p.status = Some(t.status);
                ends
            }
            StreamResponse::Message(m) => {
                p.reply = Some(m);
                true
            }
            StreamResponse::StatusUpdate(s) => {
                p.task_id.get_or_insert(s.task_id);
                if s.metadata.is_some() {
                    p.metadata = s.metadata;
                }
                let ends = s.status.state.ends_turn();
                p.status = Some(s.status);
                ends
            }
            StreamResponse::ArtifactUpdate(a) => {
                p.task_id.get_or_insert(a.task_id);
                match p.artifacts.iter_mut().find(|x| x.artifact_id == a.artifact.artifact_id) {
                    Some(x) if a.append => x.parts.extend(a.artifact.parts),
                    Some(x) => *x = a.artifact,
                    None => p.artifacts.push(a.artifact),
                }
                false
            }
        }
    }

    fn ended(&self) -> bool {
        let p = self.lock();
        p.reply.is_some() || p.status.as_ref().is_some_and(|s| s.state.ends_turn())
    }
}

/// Sends CancelTask when the call is dropped (deadline, cancellation)
/// before the remote task ended.
struct CancelGuard {
    armed: Option<(Sender, Endpoint)>,
    progress: Arc<Progress>,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some((sender, ep)) = self.armed.take() else { return };
        let Some(id) = self.progress.task_id().filter(|_| !self.progress.ended()) else { return };
        let request = sender.operation(&ep, "CancelTask", json!({"id": id}), Duration::from_secs(2));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = request.send().await;
            });
        }
    }
}

/// A JSON-RPC error object or an AIP-193 error as our error.
fn remote_error(err: &Value, http_status: u16) -> DelegationError {
    let message = err.get("message").and_then(Value::as_str).unwrap_or("the remote A2A agent refused the request");
    let kind = err.get("code").and_then(Value::as_i64).and_then(a2a_error::jsonrpc_kind);
    let reason = err
        .get("details")
        .or_else(|| err.get("data"))
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|x| x.get("reason").and_then(Value::as_str)));
    let code = match (kind, reason, http_status) {
        (_, Some("UNAUTHENTICATED"), _) | (_, _, 401) => ErrorCode::Unauthenticated,
        (_, Some("PERMISSION_DENIED"), _) | (_, _, 403) => ErrorCode::PermissionDenied,
        (Some(k), _, _) => A2aError::new(k, "").code(),
        (_, _, s) if s >= 500 => ErrorCode::AgentUnavailable,
        _ => ErrorCode::AgentFailed,
    };
    // a remote Switchboard's own code, when it names one
    let code = err
        .get("data")
        .or_else(|| err.get("details"))
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|x| x.pointer("/metadata/code").and_then(Value::as_str)))
        .and_then(ErrorCode::parse)
        .unwrap_or(code);
    DelegationError::new(code, format!("A2A agent: {message}"))
}

async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!("the answer is larger than {MAX_BODY} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The `Task` or `Message` inside a SendMessage result.
fn send_result(v: Value) -> Result<StreamResponse, DelegationError> {
    serde_json::from_value(v).map_err(|e| {
        DelegationError::new(
            ErrorCode::AgentFailed,
            format!("A2A agent's SendMessage result is neither a task nor a message: {e}"),
        )
    })
}

fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n")
}

/// The task's end as our output or error.
fn outcome(progress: &Progress) -> Result<AgentOutput, DelegationError> {
    let p = progress.lock();
    let ext = p.metadata.as_ref().and_then(|m| m.get(RAILS_EXTENSION)).cloned().unwrap_or(Value::Null);
    let usage: Option<TokenUsage> = ext.get("tokenUsage").and_then(|u| serde_json::from_value(u.clone()).ok());
    if let Some(m) = &p.reply {
        let text = text_of(&m.parts);
        return Ok(AgentOutput { summary: text.clone(), result: text, token_usage: usage, ..AgentOutput::default() });
    }
    let Some(status) = &p.status else {
        return Err(DelegationError::new(ErrorCode::AgentFailed, "the A2A agent's stream ended before it sent a task"));
    };
    let status_text = status.message.as_ref().map(|m| text_of(&m.parts)).unwrap_or_default();
    let named = ext.get("code").and_then(Value::as_str).and_then(ErrorCode::parse);
    let fail = |fallback: ErrorCode, what: &str| {
        let code = named.unwrap_or(fallback);
        let text = status_text.strip_prefix(&format!("{code}: ")).unwrap_or(&status_text);
        let text = if text.is_empty() { format!("the remote A2A task {what}") } else { text.to_string() };
        Err(DelegationError::new(code, text))
    };
    match status.state {
        TaskState::Completed | TaskState::InputRequired => {}
        TaskState::Failed => return fail(ErrorCode::AgentFailed, "failed"),
        TaskState::Rejected => return fail(ErrorCode::PermissionDenied, "was rejected"),
        TaskState::Canceled => return fail(ErrorCode::Cancelled, "was canceled"),
        TaskState::AuthRequired => return fail(ErrorCode::AgentFailed, "needs authorization we cannot give"),
        s => return fail(ErrorCode::AgentFailed, &format!("ended in state {}", s.as_str())),
    }
    let mut texts = Vec::new();
    let mut artifacts = Vec::new();
    for a in &p.artifacts {
        let label = a.name.clone().unwrap_or_else(|| a.artifact_id.clone());
        let mut rest: Vec<&Part> = Vec::new();
        for part in &a.parts {
            match &part.text {
                Some(t) => texts.push(t.clone()),
                None => rest.push(part),
            }
        }
        match rest.as_slice() {
            [] => {}
            [one] if one.data.is_some() => artifacts.push(Artifact::json(label, one.data.clone().unwrap_or_default())),
            [one] if one.url.is_some() => artifacts.push(Artifact {
                kind: ArtifactKind::Url,
                value: Value::String(one.url.clone().unwrap_or_default()),
                label: Some(label),
            }),
            [one] if one.raw.as_deref().and_then(base64_decode).is_some() => artifacts.push(Artifact {
                kind: ArtifactKind::File,
                value: serde_json::to_value(one).unwrap_or_default(),
                label: Some(label),
            }),
            _ => artifacts.push(Artifact::json(
                format!("{}{}", crate::protocol::a2a::NATIVE_LABEL, a.artifact_id),
                serde_json::to_value(a).unwrap_or_default(),
            )),
        }
    }
    let result = if texts.is_empty() { status_text.clone() } else { texts.join("\n") };
    Ok(AgentOutput {
        summary: if status_text.is_empty() { result.lines().next().unwrap_or("").to_string() } else { status_text },
        result,
        artifacts,
        token_usage: usage,
        requires_followup: status.state == TaskState::InputRequired,
        status: (ext.get("status").and_then(Value::as_str) == Some("partial")).then_some(Status::Partial),
        ..AgentOutput::default()
    })
}

#[async_trait]
impl Agent for A2aAgent {
    async fn run(&self, ctx: &AgentContext, task: &WorkTask) -> Result<AgentOutput, DelegationError> {
        let lineage = ctx.delegator()?.lineage();
        let mut req = lineage.forward(lineage.agent.clone(), task);
        // our retries of this hop must not make a remote Switchboard do the work twice
        req.idempotency_key.get_or_insert_with(|| format!("hop-{}", lineage.request_id));
        let rails = Rails::from_request(&req);
        let mut parts = vec![Part::text(task.objective.clone())];
        if !task.input.trim().is_empty() {
            parts.push(Part::text(task.input.clone()));
        }
        let message = Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: lineage.session.map(|s| s.to_string()),
            task_id: None,
            role: Role::User,
            parts,
            metadata: Some(rails.to_metadata()),
            extensions: vec![RAILS_EXTENSION.to_string()],
            reference_task_ids: Vec::new(),
        };
        let remaining = ctx.remaining();
        let ep = self.endpoint(remaining).await?;
        let progress = Arc::new(Progress::default());
        // armed from the start: the task id arrives with the first event
        let mut guard = CancelGuard { armed: Some((self.sender.clone(), ep.clone())), progress: progress.clone() };
        let params = json!({"message": message});

        let result = if ep.streaming {
            self.stream(&ep, params, remaining, &progress).await
        } else {
            let v = self
                .call(
                    &ep,
                    "SendMessage",
                    json!({"message": message, "configuration": {"returnImmediately": false}}),
                    remaining,
                )
                .await;
            v.and_then(send_result).map(|ev| {
                progress.apply(ev);
            })
        };
        if let Err(e) = result {
            if e.code == ErrorCode::AgentUnavailable {
                self.forget_endpoint().await;
            }
            return Err(e);
        }
        // a remote that left the task running: poll it to its end
        while !progress.ended() {
            let Some(id) = progress.task_id() else { break };
            tokio::time::sleep(POLL).await;
            let v = self.call(&ep, "GetTask", json!({"id": id}), ctx.remaining()).await?;
            let t: Task = serde_json::from_value(v).map_err(|e| {
                DelegationError::new(ErrorCode::AgentFailed, format!("A2A agent's GetTask answer is not a task: {e}"))
            })?;
            progress.apply(StreamResponse::Task(t));
        }
        guard.armed = None;
        outcome(&progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_errors_keep_a_switchboard_code_and_map_a2a_codes() {
        let e = remote_error(&json!({"code": -32001, "message": "Task not found"}), 200);
        assert_eq!(e.code, ErrorCode::AgentFailed);
        let e = remote_error(&json!({"code": -32602, "message": "bad"}), 200);
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        let e = remote_error(&json!({"code": -32000, "message": "no", "data": [{"reason": "UNAUTHENTICATED"}]}), 401);
        assert_eq!(e.code, ErrorCode::Unauthenticated);
        let e = remote_error(&json!({"code": 503, "message": "down"}), 503);
        assert_eq!(e.code, ErrorCode::AgentUnavailable);
        let e = remote_error(&json!({"code": -32602, "data": [{"metadata": {"code": "USER_MISMATCH"}}]}), 200);
        assert_eq!(e.code, ErrorCode::UserMismatch);
    }

    #[test]
    fn a_rejected_task_comes_back_with_the_code_it_names() {
        let p = Progress::default();
        let mut meta = Map::new();
        meta.insert(RAILS_EXTENSION.into(), json!({"code": "DEPTH_LIMIT"}));
        p.apply(StreamResponse::Task(Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::now(
                TaskState::Rejected,
                Some(Message::agent_text("DEPTH_LIMIT: Delegation depth limit reached (2/2).", None, None)),
            ),
            artifacts: None,
            history: None,
            metadata: Some(meta),
        }));
        let err = outcome(&p).unwrap_err();
        assert_eq!(err.code, ErrorCode::DepthLimit);
        assert_eq!(err.message, "Delegation depth limit reached (2/2).");
    }

    #[test]
    fn bad_urls_and_missing_tokens_are_configuration_errors() {
        assert!(A2aAgent::new("ftp://x", None).is_err());
        let err = A2aAgent::new("http://127.0.0.1:1", Some("SWITCHBOARD_SURELY_UNSET_A2A_VAR")).err().unwrap();
        assert!(err.message.contains("SWITCHBOARD_SURELY_UNSET_A2A_VAR"));
        let a = A2aAgent::new("http://127.0.0.1:1/a2a/x/", None).unwrap();
        assert_eq!(a.card_url, "http://127.0.0.1:1/a2a/x/.well-known/agent-card.json");
        let a = A2aAgent::new("http://h/card.json", None).unwrap();
        assert_eq!(a.card_url, "http://h/card.json");
    }
}
