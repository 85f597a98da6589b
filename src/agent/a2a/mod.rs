//! The `a2a` agent backend: a remote A2A agent as a team member.
//!
//! It resolves the remote's agent card (the configured URL, or
//! `{url}/.well-known/agent-card.json`), picks its JSON-RPC interface (else
//! HTTP+JSON, else gRPC with the `grpc` feature; `transport` in the config
//! names one), sends `SendStreamingMessage` (or `SendMessage` when the card
//! says streaming is off) and follows the task to its end. The message
//! carries the rails extension built from the proxy node's lineage, so a
//! Switchboard on the other side keeps depth, chain, deadline and budget;
//! a failed, rejected or canceled task comes back with our error code. A
//! stream that breaks off once the remote has the task is not a failure:
//! the turn goes on there, and the task is followed with `GetTask` (the
//! message is not sent again). When
//! our deadline passes or the delegation is cancelled, it sends
//! `CancelTask`, best effort.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::agent::{Agent, AgentContext, AgentOutput, Task as WorkTask};
use crate::config::{A2aTransport, AgentSpec, Backend, Config};
use crate::protocol::a2a::rails::{LINEAGE_EXTENSION, RAILS_EXTENSION, Rails, put_lineage};
use crate::protocol::a2a::types::{AgentCard, Message, Part, Role, StreamResponse, Task};
use crate::protocol::{AgentSlug, DelegationError, ErrorCode};
use crate::telemetry;

#[cfg(feature = "grpc")]
mod grpc;
mod progress;
use progress::{Progress, outcome, remote_error, send_result};

/// Largest answer or event read from a remote.
const MAX_BODY: usize = 8 * 1024 * 1024;
/// Most bytes read from one event stream.
const MAX_STREAM: usize = 8 * MAX_BODY;
/// What of a task id goes into an HTTP+JSON path as is: RFC 3986's unreserved characters.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
/// How often a task that a blocking send left running is polled.
const POLL: Duration = Duration::from_millis(200);

/// The agent for a spec with an `a2a` backend.
pub fn for_spec(spec: &AgentSpec, _config: &Config) -> Result<Arc<dyn Agent>, DelegationError> {
    let Backend::A2a { url, token_env, .. } = &spec.backend else {
        return Err(DelegationError::invalid(format!("agent '{}' does not have an a2a backend", spec.slug)));
    };
    let mut agent = A2aAgent::new(url, token_env.as_deref())
        .map_err(|e| DelegationError::invalid(format!("agent '{}': {}", spec.slug, e.message)))?;
    if let Backend::A2a { transport: Some(t), .. } = &spec.backend {
        if *t == A2aTransport::Grpc && !cfg!(feature = "grpc") {
            return Err(DelegationError::invalid(format!(
                "agent '{}': backend.transport 'grpc' needs a build with the grpc feature",
                spec.slug
            )));
        }
        agent.transport = Some(*t);
    }
    if let Backend::A2a { peer: Some(peer), agent: remote, .. } = &spec.backend {
        agent.peer = Some((peer.clone(), remote.clone().unwrap_or_else(|| spec.slug.clone())));
    }
    Ok(Arc::new(agent))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    HttpJson,
    #[cfg(feature = "grpc")]
    Grpc,
}

/// The interface chosen from the card.
#[derive(Debug, Clone)]
struct Endpoint {
    url: String,
    binding: Binding,
    streaming: bool,
    /// The gRPC interface's channel and tenant, for [`Binding::Grpc`].
    #[cfg(feature = "grpc")]
    grpc: Option<grpc::GrpcPeer>,
}

/// A remote A2A agent.
pub struct A2aAgent {
    sender: Sender,
    card_url: String,
    endpoint: tokio::sync::Mutex<Option<Endpoint>>,
    /// The remote Switchboard's lineage name and the agent's slug there:
    /// messages carry a lineage token for it.
    peer: Option<(String, AgentSlug)>,
    /// The binding the configuration names, if any.
    transport: Option<A2aTransport>,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent").finish_non_exhaustive()
    }
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
            peer: None,
            transport: None,
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
        let wanted: &[(&str, Binding)] = match self.transport {
            Some(A2aTransport::Jsonrpc) => &[("JSONRPC", Binding::JsonRpc)],
            Some(A2aTransport::HttpJson) => &[("HTTP+JSON", Binding::HttpJson)],
            #[cfg(feature = "grpc")]
            Some(A2aTransport::Grpc) => &[("GRPC", Binding::Grpc)],
            #[cfg(not(feature = "grpc"))]
            Some(A2aTransport::Grpc) => &[],
            None => &[
                ("JSONRPC", Binding::JsonRpc),
                ("HTTP+JSON", Binding::HttpJson),
                #[cfg(feature = "grpc")]
                ("GRPC", Binding::Grpc),
            ],
        };
        let Some((interface, binding)) = wanted.iter().find_map(|(name, b)| pick(name).map(|i| (i, *b))) else {
            let names: Vec<&str> = wanted.iter().map(|(n, _)| *n).collect();
            return Err(DelegationError::new(
                ErrorCode::AgentFailed,
                format!("{} offers no A2A 1.0 interface of {}", self.card_url, names.join(", ")),
            ));
        };
        let e = Endpoint {
            url: interface.url.trim_end_matches('/').to_string(),
            binding,
            streaming: card.capabilities.streaming.unwrap_or(false),
            #[cfg(feature = "grpc")]
            grpc: match binding {
                Binding::Grpc => Some(grpc::GrpcPeer::new(&interface.url, &interface.tenant)?),
                _ => None,
            },
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
        #[cfg(feature = "grpc")]
        if let Some(g) = &ep.grpc {
            return g.call(method, params, self.sender.token.as_deref(), timeout).await;
        }
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
            // answered by the gRPC peer above
            #[cfg(feature = "grpc")]
            Binding::Grpc => Ok(value),
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
        #[cfg(feature = "grpc")]
        if let Some(g) = &ep.grpc {
            return self.grpc_stream(g, params, timeout, progress).await;
        }
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
        // the whole stream is bounded, so a peer that never ends an event can't grow the buffer forever
        let mut read = 0usize;
        let broke_off = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let broke = broke_off.clone();
        let bytes = res.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(|e| {
                if e.is_timeout() {
                    DelegationError::new(ErrorCode::DeadlineExceeded, "the A2A stream did not end in time")
                } else {
                    broke.store(true, std::sync::atomic::Ordering::Relaxed);
                    DelegationError::new(ErrorCode::AgentUnavailable, format!("the A2A stream broke off: {e}"))
                }
            })?;
            read += chunk.len();
            if read > MAX_STREAM {
                return Err(DelegationError::new(
                    ErrorCode::AgentUnavailable,
                    format!("the A2A stream sent more than {MAX_STREAM} bytes"),
                ));
            }
            Ok(chunk)
        });
        let mut events = std::pin::pin!(bytes.eventsource());
        while let Some(event) = events.next().await {
            let event = match event {
                // the remote has the task: the turn goes on there; `run` follows it with GetTask
                Err(EventStreamError::Transport(e))
                    if broke_off.load(std::sync::atomic::Ordering::Relaxed) && progress.task_id().is_some() =>
                {
                    tracing::warn!(card = %self.card_url, "{}; following the task with GetTask", e.message);
                    return Ok(());
                }
                other => other.map_err(|e| match e {
                    EventStreamError::Transport(e) => e,
                    other => self.unavailable(format!("sent a stream that is not Server-Sent Events: {other}")),
                })?,
            };
            if event.data.len() > MAX_BODY {
                return Err(self.unavailable(format!("sent an event larger than {MAX_BODY} bytes")));
            }
            if !event.data.is_empty() && self.event(ep, &event.data, progress)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// SendStreamingMessage over gRPC, folding events until the turn ends; a
    /// stream that breaks off once the remote has the task is followed with
    /// GetTask by `run`, as over SSE.
    #[cfg(feature = "grpc")]
    async fn grpc_stream(
        &self,
        g: &grpc::GrpcPeer,
        params: Value,
        timeout: Duration,
        progress: &Progress,
    ) -> Result<(), DelegationError> {
        let mut events = g.stream(params, self.sender.token.as_deref(), timeout).await?;
        loop {
            let event = match events.message().await {
                Ok(Some(event)) => event,
                Ok(None) => return Ok(()),
                Err(s) => {
                    let e = g.failed(&s);
                    if e.code == ErrorCode::AgentUnavailable && progress.task_id().is_some() {
                        tracing::warn!(card = %self.card_url, "{}; following the task with GetTask", e.message);
                        return Ok(());
                    }
                    return Err(e);
                }
            };
            let ev: StreamResponse = serde_json::from_value(grpc::as_json(&event)?).map_err(|e| {
                DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("A2A agent sent a gRPC event that is not a StreamResponse: {e}"),
                )
            })?;
            if progress.apply(ev) {
                return Ok(());
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
            // gRPC's events are read by `grpc_stream`, never as SSE
            #[cfg(feature = "grpc")]
            Binding::Grpc => value,
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
            // gRPC calls go through the endpoint's GrpcPeer; this request is never sent
            #[cfg(feature = "grpc")]
            Binding::Grpc => self.request(reqwest::Method::POST, &ep.url, timeout),
            Binding::JsonRpc => self.request(reqwest::Method::POST, &ep.url, timeout)
                .header(CONTENT_TYPE, "application/json")
                .body(json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(), "method": method, "params": params}).to_string()),
            Binding::HttpJson => {
                let id = params.get("id").and_then(Value::as_str).map(|id| utf8_percent_encode(id, PATH_SEGMENT).to_string()).unwrap_or_default();
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
        #[cfg(feature = "grpc")]
        if let (Some(g), Ok(handle)) = (ep.grpc.clone(), tokio::runtime::Handle::try_current()) {
            let token = sender.token.clone();
            handle.spawn(async move {
                let _ = g.call("CancelTask", json!({"id": id}), token.as_deref(), Duration::from_secs(2)).await;
            });
            return;
        }
        let request = sender.operation(&ep, "CancelTask", json!({"id": id}), Duration::from_secs(2));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = request.send().await;
            });
        }
    }
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

#[async_trait]
impl Agent for A2aAgent {
    async fn run(&self, ctx: &AgentContext, task: &WorkTask) -> Result<AgentOutput, DelegationError> {
        let lineage = ctx.delegator()?.lineage();
        let mut req = lineage.forward(lineage.agent.clone(), task);
        // our retries of this hop must not make a remote Switchboard do the work twice
        req.idempotency_key.get_or_insert_with(|| format!("hop-{}", lineage.request_id));
        let rails = Rails::from_request(&req);
        let mut metadata = rails.to_metadata();
        let mut extensions = vec![RAILS_EXTENSION.to_string()];
        if let Some((peer, remote)) = &self.peer {
            // the token names the agent as the remote knows it
            let mut there = req.clone();
            there.target_employee = remote.clone();
            if let Some(token) = ctx.delegator()?.relay_token(&there, peer)? {
                put_lineage(&mut metadata, token);
                extensions.push(LINEAGE_EXTENSION.to_string());
            }
        }
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
            metadata: Some(metadata),
            extensions,
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
