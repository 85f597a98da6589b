//! [`McpServer`]: the MCP handler over the runtime.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::conformance::Fixtures;
use super::tools::{self, AskAgentArgs, AskArgs, DelegateArgs, NoArgs, TraceArgs};
use crate::auth::Principal;
use crate::pipeline::{AskOptions, AskResponse, Door, Envelope, Turn};
use crate::protocol::{
    AgentSlug, Constraints, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Mode, RequestId,
    SessionId, UserId,
};
use crate::runtime::{Admission, Runtime, TreeView};
use crate::store::DelegationRecord;
use crate::telemetry::Event;

/// The URI of the team resource.
const AGENTS_URI: &str = "switchboard://agents";
/// The prefix of a tree resource: `switchboard://trees/{id}`.
const TREES_PREFIX: &str = "switchboard://trees/";

/// Switchboard's MCP server: every tool and resource goes through the
/// runtime as the request's principal. On stdio that principal is fixed
/// (the configured user); on HTTP it is the bearer token's, which the
/// HTTP layer put in the request's extensions.
#[derive(Clone)]
pub(crate) struct McpServer {
    runtime: Runtime,
    principal: Option<Principal>,
    /// Stdio or streamable HTTP.
    door: Door,
    /// The conformance suite's fixtures, only with `[mcp] conformance_fixtures`.
    fixtures: Option<Arc<Fixtures>>,
    /// Over HTTP in a server: the server's admission, for the tools that
    /// run a tree (a call over `[server] max_in_flight` is refused at once,
    /// JSON-RPC -32000 with `AGENT_UNAVAILABLE`).
    admission: Option<Admission>,
}

/// The JSON-RPC error of a call turned away by `admission`: -32000, with the stable code.
fn busy(admission: &Admission) -> ErrorData {
    let data = json!({"code": ErrorCode::AgentUnavailable, "retry_after_s": 1});
    ErrorData::new(rmcp::model::ErrorCode(-32000), admission.refusal(), Some(data))
}

impl McpServer {
    /// A server whose every request is `principal`'s (stdio).
    pub(crate) fn for_principal(runtime: Runtime, principal: Principal) -> Self {
        let fixtures = fixtures_for(&runtime);
        Self { runtime, principal: Some(principal), door: Door::McpStdio, fixtures, admission: None }
    }

    /// A server that takes each request's principal from its HTTP request
    /// (set by [`super::http_service`]'s authentication), its tree-running
    /// calls admitted by `admission` when given.
    pub(super) fn over_http(runtime: Runtime, admission: Option<Admission>) -> Self {
        let fixtures = fixtures_for(&runtime);
        Self { runtime, principal: None, door: Door::McpHttp, fixtures, admission }
    }

    fn principal(&self, ctx: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
        if let Some(p) = &self.principal {
            return Ok(p.clone());
        }
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("the request carries no authenticated principal", None))
    }
}

/// Serves MCP on stdin/stdout as `principal` until the client closes the
/// stream. Nothing else may write to stdout meanwhile (logs go to stderr).
pub(crate) async fn serve_stdio(runtime: Runtime, principal: Principal) -> Result<(), String> {
    let service = McpServer::for_principal(runtime, principal)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    service.waiting().await.map_err(|e| format!("the MCP session ended with an error: {e}"))?;
    Ok(())
}

/// A fresh fixture state when the configuration enables the fixtures.
fn fixtures_for(runtime: &Runtime) -> Option<Arc<Fixtures>> {
    runtime.config().mcp.conformance_fixtures.then(|| Arc::new(Fixtures::default()))
}

/// `method` is only served with the conformance fixtures on.
fn not_served(method: &str) -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}"), None)
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// The tool's arguments as `T`, or -32602 naming what is wrong.
fn args<T: DeserializeOwned>(tool: &str, arguments: Option<Map<String, Value>>) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| invalid(format!("invalid arguments for tool '{tool}': {e}")))
}

fn slug(field: &str, s: &str) -> Result<AgentSlug, ErrorData> {
    AgentSlug::parse(s).map_err(|e| invalid(format!("{field}: {}", e.0)))
}

fn non_empty(field: &str, s: &str) -> Result<(), ErrorData> {
    if s.trim().is_empty() { Err(invalid(format!("{field} is empty"))) } else { Ok(()) }
}

/// A tool result: the JSON as structured content and as text.
fn structured(value: Value, is_error: bool) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(value);
    r
}

/// A refusal (or any error before a tree exists) as a tool error with its stable code.
fn refusal(e: &DelegationError) -> CallToolResult {
    structured(json!({"error": {"code": e.code, "message": e.message}, "status": "refused"}), true)
}

/// Whether `principal` may see a tree made of `records` (as `GET /v1/delegations/{id}`).
fn may_see(principal: &Principal, records: &[DelegationRecord]) -> bool {
    match principal {
        Principal::Admin => true,
        Principal::Agent(a) => records.iter().any(|r| r.origin == a.as_str() || r.target == a.as_str()),
        p => p.user().is_some_and(|u| records.iter().all(|r| &r.user_id == u)),
    }
}

/// A turn's outcome as a tool result: ran (even if it failed) with its tree,
/// or refused. A failure is a tool error too, with the whole response.
fn turn_result(r: Result<AskResponse, DelegationError>) -> CallToolResult {
    match r {
        Ok(r) => {
            let error = r
                .response
                .error
                .as_ref()
                .filter(|e| !matches!(e.code, ErrorCode::NeedsInput | ErrorCode::NeedsApproval));
            let is_error = error.is_some();
            let mut v = json!({
                "answer": r.answer,
                "status": r.status,
                "root_id": r.request_id,
                "session_id": r.session_id,
                "response": r.response,
                "tree": r.tree,
            });
            if let Some(e) = error {
                v["error"] = json!({"code": e.code, "message": e.message});
            }
            structured(v, is_error)
        }
        Err(e) => refusal(&e),
    }
}

impl McpServer {
    /// The tree rooted at `root` as `principal` may see it.
    async fn tree_for(&self, principal: &Principal, root: RequestId) -> Result<Option<TreeView>, DelegationError> {
        let records = self.runtime.store().delegation_tree(root).await?;
        if records.is_empty() || !may_see(principal, &records) {
            return Ok(None);
        }
        Ok(TreeView::from_records(&records))
    }

    fn agents_json(&self) -> Value {
        let agents: Vec<Value> = self.runtime.team_summary().into_iter().map(|(_, summary)| summary).collect();
        json!({ "agents": agents })
    }

    /// An envelope from an agent (or an operator) for `user_id`: the user
    /// must be named, since a service token belongs to no user.
    fn envelope(
        &self,
        principal: &Principal,
        target: AgentSlug,
        user_id: Option<&str>,
        objective: String,
        input: String,
    ) -> Result<DelegationRequest, ErrorData> {
        let origin = match principal {
            Principal::Agent(a) => a.clone(),
            _ => self.runtime.entry_agent().map_err(|e| invalid(e.message))?,
        };
        let user =
            user_id.ok_or_else(|| invalid("user_id is required with a service token: the user the work is for"))?;
        let user = UserId::parse(user).map_err(|e| invalid(format!("user_id: {}", e.0)))?;
        Ok(DelegationRequest::new(origin, target, user, objective, input))
    }

    /// Runs `work` (the tree rooted at `root`) as a task of its own, once
    /// the admission (if any) lets it in, where it runs admitted work: progress
    /// goes to the client while it runs, and the request's cancellation
    /// cancels the tree (the task still records it, as cancelled).
    async fn run_tree<T: Send + 'static>(
        &self,
        ctx: &RequestContext<RoleServer>,
        principal: &Principal,
        root: RequestId,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, ErrorData> {
        let place = match &self.admission {
            Some(a) => Some(a.enter().ok_or_else(|| busy(a))?),
            None => None,
        };
        // the place is held until the tree ends, even if the client has gone on
        let work = tracing::Instrument::in_current_span(async move {
            let _place = place;
            work.await
        });
        let events = self.runtime.subscribe();
        let done = tokio_util::sync::CancellationToken::new();
        let progress = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            tokio::spawn(forward_progress(events, root, token, peer, done.clone()))
        });
        let mut task = match &self.admission {
            Some(a) => a.spawn(work),
            None => tokio::spawn(work),
        };
        let outcome = tokio::select! {
            done = &mut task => done.map_err(|e| ErrorData::internal_error(format!("the tool's task failed: {e}"), None)),
            () = ctx.ct.cancelled() => {
                if self.runtime.cancel_tree(principal, root).await.is_err() {
                    self.runtime.cancel(root);
                }
                // the tree ends (cancelled) and is recorded; the client has gone on
                task.await.map_err(|e| ErrorData::internal_error(format!("the tool's task failed: {e}"), None))
            }
        };
        // the tree's last events go out before its result
        done.cancel();
        if let Some(p) = progress {
            let _ = p.await;
        }
        outcome
    }

    async fn tool_delegate(
        &self,
        ctx: &RequestContext<RoleServer>,
        principal: Principal,
        a: DelegateArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let target = slug("target", &a.target)?;
        non_empty("objective", &a.objective)?;
        if principal.user().is_some() {
            if a.user_id.is_some() || a.deadline_ms.is_some() || a.max_tokens.is_some() {
                return Err(invalid(
                    "user_id, deadline_ms and max_tokens are for service tokens; a user's turn has the configured limits",
                ));
            }
            let root = RequestId::new();
            let mut hints = Vec::new();
            if let Some(note) = a.task_note.filter(|n| !n.trim().is_empty()) {
                hints.push(format!("task note: {note}"));
            }
            let opts = AskOptions {
                input: a.input,
                agent: Some(target),
                request_id: Some(root),
                context_hints: hints,
                ..AskOptions::default()
            };
            let (rt, door, caller) = (self.runtime.clone(), self.door, principal.clone());
            let turn = Turn::ask(a.objective, opts);
            let r = self.run_tree(ctx, &principal, root, async move { rt.enter(door, &caller, turn).await }).await?;
            return Ok(turn_result(r));
        }
        let mut req =
            self.envelope(&principal, target, a.user_id.as_deref(), a.objective, a.input.unwrap_or_default())?;
        req.task_note = a.task_note;
        let limits = self.runtime.config().limits;
        req.constraints = Constraints {
            max_tokens: a.max_tokens.unwrap_or(req.constraints.max_tokens),
            max_depth: req.constraints.max_depth,
            deadline_ms: a.deadline_ms.unwrap_or(req.constraints.deadline_ms).min(limits.max_deadline_ms),
        };
        self.run_envelope(ctx, principal, req).await
    }

    async fn run_envelope(
        &self,
        ctx: &RequestContext<RoleServer>,
        principal: Principal,
        req: DelegationRequest,
    ) -> Result<CallToolResult, ErrorData> {
        let root = req.request_id;
        let (rt, door, caller) = (self.runtime.clone(), self.door, principal.clone());
        let envelope = Envelope::new(req);
        let response: DelegationResponse =
            self.run_tree(ctx, &principal, root, async move { rt.enter(door, &caller, envelope).await }).await?;
        if let Some(e) = response.error.as_ref().filter(|_| response.execution.is_none()) {
            return Ok(refusal(e));
        }
        let tree = self.tree_for(&principal, root).await.ok().flatten();
        let error =
            response.error.as_ref().filter(|e| !matches!(e.code, ErrorCode::NeedsInput | ErrorCode::NeedsApproval));
        let mut v = json!({
            "answer": response.result,
            "status": response.status,
            "root_id": root,
            "response": response,
            "tree": tree,
        });
        if let Some(s) = response.child_session_id {
            v["session_id"] = json!(s);
        }
        let is_error = error.is_some();
        if let Some(e) = error {
            v["error"] = json!({"code": e.code, "message": e.message});
        }
        Ok(structured(v, is_error))
    }

    async fn tool_ask(
        &self,
        ctx: &RequestContext<RoleServer>,
        principal: Principal,
        a: AskArgs,
    ) -> Result<CallToolResult, ErrorData> {
        non_empty("message", &a.message)?;
        let session = a
            .session_id
            .as_deref()
            .map(|s| {
                s.parse::<SessionId>().map_err(|e: crate::protocol::IdError| invalid(format!("session_id: {}", e.0)))
            })
            .transpose()?;
        if principal.user().is_none() {
            return Ok(refusal(&DelegationError::new(
                ErrorCode::Unauthenticated,
                "ask takes a user's token (the user talks to Prime); agents use delegate",
            )));
        }
        let root = RequestId::new();
        let opts = AskOptions { session, request_id: Some(root), ..AskOptions::default() };
        let (rt, door, caller) = (self.runtime.clone(), self.door, principal.clone());
        let turn = Turn::ask(a.message, opts);
        let r = self.run_tree(ctx, &principal, root, async move { rt.enter(door, &caller, turn).await }).await?;
        Ok(turn_result(r))
    }

    async fn tool_ask_agent(
        &self,
        ctx: &RequestContext<RoleServer>,
        principal: Principal,
        a: AskAgentArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let target = slug("target", &a.target)?;
        non_empty("question", &a.question)?;
        if principal.user().is_some() {
            if a.user_id.is_some() {
                return Err(invalid("user_id is for service tokens; a user consults as themselves"));
            }
            let root = RequestId::new();
            let opts = AskOptions { agent: Some(target), request_id: Some(root), ..AskOptions::default() };
            let (rt, door, caller) = (self.runtime.clone(), self.door, principal.clone());
            let turn = Turn::consult(a.question, opts);
            let r = self.run_tree(ctx, &principal, root, async move { rt.enter(door, &caller, turn).await }).await?;
            return Ok(turn_result(r));
        }
        let mut req = self.envelope(&principal, target, a.user_id.as_deref(), a.question, String::new())?;
        req.mode = Mode::Ephemeral;
        self.run_envelope(ctx, principal, req).await
    }

    async fn trace(&self, principal: Principal, a: TraceArgs) -> Result<CallToolResult, ErrorData> {
        let root: RequestId =
            a.root_id.trim().parse().map_err(|e: crate::protocol::IdError| invalid(format!("root_id: {}", e.0)))?;
        match self.tree_for(&principal, root).await {
            Ok(Some(tree)) => Ok(structured(json!({ "tree": tree }), false)),
            Ok(None) => Ok(refusal(&DelegationError::new(
                ErrorCode::NotFound,
                format!("no delegation {root} that you may see"),
            ))),
            Err(e) => Ok(refusal(&e)),
        }
    }
}

/// Sends `notifications/progress` for the tree rooted at `root`: one step per
/// delegation that starts, retries or ends in it. Once `done` fires, what the
/// bus still holds is sent, then it returns.
async fn forward_progress(
    mut events: tokio::sync::broadcast::Receiver<Event>,
    root: RequestId,
    token: ProgressToken,
    peer: rmcp::Peer<RoleServer>,
    done: tokio_util::sync::CancellationToken,
) {
    let mut step = 0u32;
    let mut draining = false;
    loop {
        let next = if draining {
            match events.try_recv() {
                Ok(e) => Ok(e),
                Err(TryRecvError::Lagged(_)) => continue,
                Err(_) => return,
            }
        } else {
            tokio::select! {
                e = events.recv() => e,
                () = done.cancelled() => {
                    draining = true;
                    continue;
                }
            }
        };
        let message = match next {
            Ok(e) if e.root_id() == root => match &e {
                Event::Started { target, depth, .. } => format!("{target} started (depth {depth}, tree {root})"),
                Event::Retry { target, attempt, error_code, .. } => {
                    format!("{target}: attempt {attempt} failed ({error_code}); retrying")
                }
                Event::Finished { target, status, .. } => format!("{target} finished: {status}"),
                _ => continue,
            },
            Ok(_) | Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        step += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(step)).with_message(message);
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}

/// A result from its JSON, marked complete (`resultType`, which 2026-07-28
/// requires; rmcp drops it for peers on older revisions).
fn complete<T: DeserializeOwned>(mut value: Value, what: &str) -> Result<T, ErrorData> {
    value["resultType"] = json!("complete");
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(format!("{what}: {e}"), None))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder().enable_tools().enable_resources().build();
        if self.fixtures.is_some() {
            Fixtures::capabilities(&mut caps);
        }
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("switchboard", env!("CARGO_PKG_VERSION")).with_title("Switchboard"))
            .with_instructions(
                "Switchboard runs a team of AI agents with rails (depth, budget, deadline, tools, PII, audit). \
                 Use list_agents to see the team, ask to talk to Prime, delegate to give one agent a task, \
                 ask_agent for a consult that is not saved, and trace to see a delegation tree.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools: Vec<Value> = tools::all()
            .into_iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "inputSchema": t.input,
                    "outputSchema": t.output,
                    "annotations": {"title": t.title, "readOnlyHint": t.read_only, "openWorldHint": false},
                })
            })
            .collect();
        if self.fixtures.is_some() {
            tools.extend(Fixtures::tools());
        }
        complete(json!({ "tools": tools }), "the tool list")
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = self.principal(&context)?;
        let name = request.name.as_ref();
        let arguments = request.arguments;
        if let Some(fixtures) = &self.fixtures
            && let Some(result) = fixtures.call_tool(name, arguments.clone(), &context).await
        {
            return Ok(result?.into());
        }
        let result = match name {
            "delegate" => self.tool_delegate(&context, principal, args(name, arguments)?).await?,
            "ask" => self.tool_ask(&context, principal, args(name, arguments)?).await?,
            "ask_agent" => self.tool_ask_agent(&context, principal, args(name, arguments)?).await?,
            "list_agents" => {
                let NoArgs {} = args(name, arguments)?;
                structured(self.agents_json(), false)
            }
            "trace" => self.trace(principal, args(name, arguments)?).await?,
            other => {
                let shown: String = other.chars().take(64).collect();
                return Err(invalid(format!(
                    "unknown tool '{shown}'; the tools are delegate, ask, ask_agent, list_agents, trace"
                )));
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = vec![json!({
            "uri": AGENTS_URI,
            "name": "agents",
            "title": "The team",
            "description": "Every agent of this Switchboard, as list_agents shows them.",
            "mimeType": "application/json"
        })];
        if self.fixtures.is_some() {
            resources.extend(Fixtures::resources());
        }
        complete(json!({ "resources": resources }), "the resource list")
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut templates = vec![json!({
            "uriTemplate": "switchboard://trees/{id}",
            "name": "tree",
            "title": "A delegation tree",
            "description": "The stored tree of a delegation (any request id in it); only your own trees.",
            "mimeType": "application/json"
        })];
        if self.fixtures.is_some() {
            templates.extend(Fixtures::templates());
        }
        complete(json!({ "resourceTemplates": templates }), "the resource templates")
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let principal = self.principal(&context)?;
        let uri = request.uri;
        if self.fixtures.is_some()
            && let Some(result) = Fixtures::read_resource(&uri)
        {
            return Ok(result?.into());
        }
        let shown: String = uri.chars().take(128).collect();
        let value = if uri == AGENTS_URI {
            self.agents_json()
        } else if let Some(id) = uri.strip_prefix(TREES_PREFIX) {
            let not_found = || ErrorData::resource_not_found(format!("no tree {shown} that you may see"), None);
            let root: RequestId = id.parse().map_err(|_| not_found())?;
            match self.tree_for(&principal, root).await {
                Ok(Some(tree)) => json!(tree),
                Ok(None) => return Err(not_found()),
                Err(e) => {
                    return Err(ErrorData::internal_error(format!("the tree could not be read: {}", e.message), None));
                }
            }
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {shown}; the resources are {AGENTS_URI} and {TREES_PREFIX}{{id}}"),
                None,
            ));
        };
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let result: ReadResourceResult = complete(
            json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}),
            "the resource",
        )?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        if self.fixtures.is_none() {
            return Err(not_served("prompts/list"));
        }
        complete(json!({ "prompts": Fixtures::prompts() }), "the prompt list")
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if self.fixtures.is_none() {
            return Err(not_served("prompts/get"));
        }
        Ok(Fixtures::get_prompt(&request)?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        if self.fixtures.is_none() {
            return Err(not_served("completion/complete"));
        }
        Fixtures::complete(&request)
    }

    #[allow(deprecated)] // logging is legacy in 2026-07-28; the suite's scenarios are on 2025-11-25
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(fixtures) = &self.fixtures else { return Err(not_served("logging/setLevel")) };
        fixtures.set_level(request.level);
        Ok(())
    }

    #[allow(deprecated)] // resources/subscribe is legacy in 2026-07-28; the suite's scenarios are on 2025-11-25
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(fixtures) = &self.fixtures else { return Err(not_served("resources/subscribe")) };
        fixtures.subscribe(&request.uri, true);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(fixtures) = &self.fixtures else { return Err(not_served("resources/unsubscribe")) };
        fixtures.subscribe(&request.uri, false);
        Ok(())
    }
}
