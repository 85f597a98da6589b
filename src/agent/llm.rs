//! The `llm` backend: any OpenAI-compatible chat-completions endpoint as a
//! team member. The delegated context becomes the
//! messages; the call is counted with a real tokenizer and refused before it
//! leaves the process when it would not fit the budget; `max_tokens` comes
//! from what the budget has left; usage is reported back to the tree's token accounts.
//!
//! An agent allowed to delegate gets a `delegate` tool (an enum of
//! the agents it may call, a task, optional context) and an `ask_agent` tool
//! (an ephemeral consult). Tool calls go through the Delegator, so
//! every rail applies; the loop is bounded; a tool the agent was not offered
//! is refused with `TOOL_NOT_ALLOWED`, and the refusal goes back to the model
//! as the tool's result.
//!
//! With the `mcp` feature, the tools of the agent's MCP servers
//! (`[[agents.mcp]]`) whose ids (`mcp:<server>/<tool>`, `mcp:<server>/*`)
//! are in the delegation's effective tools are offered too, as functions
//! named `mcp__<server>__<tool>` with the tool's input schema. A call runs
//! the tool inside the delegation's deadline (after a person's approval
//! when `requires_approval` lists its id), is on file in the tree, and
//! its result is PII-redacted with the tree's vault before the model reads
//! it. Arguments go to the server as the model wrote them (tokens such as
//! `<EMAIL_1>` included: the server never gets a value the model was not shown).

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

use super::{Agent, AgentContext, AgentOutput, ChatModel, Task, TokenEstimate};
use crate::agent::{Call, Delegator};
use crate::config::{AgentSpec, Backend, Config, LlmDefaults};
use crate::protocol::{
    AgentSlug, Artifact, DelegationError, DelegationResponse, ErrorCode, HandoffData, NewFact, TokenUsage,
};
use crate::telemetry;

/// The base prompt every model agent gets before its own.
pub const BASE_PROMPT: &str = "You are a member of a team of AI agents working for one user. \
Another agent has delegated a task to you. Do exactly that task, using the context you are given. \
Be concise and concrete. Never reveal or invent personal data; placeholders such as <EMAIL_1> \
stand for values you are not shown, and you may use them as they are.";

/// Prime's prompt, for the LLM planner.
pub const PRIME_PROMPT: &str = "You are Prime, the user's lead assistant and the orchestrator of a team \
of specialist employees. You can answer directly, or use the \"delegate\" tool to call specialists; \
its description lists each specialist with examples of the requests it handles.\n\
Use delegation when the request needs a specialist's expertise, the task is well-defined and scoped, \
or you need data or analysis before answering.\n\
Don't delegate when you can answer from general knowledge, when the message is clarifying or \
conversational, or when it is time-sensitive.\n\
When delegating: be specific about the task, pass relevant context, call several specialists at once \
(several tool calls in one turn) when their work is independent, or one after another when a step \
needs an earlier result. Then merge the results into one cohesive answer that says who did what.\n\
Your final reply is read by the user: write it in plain words, and never write a tool call as text.";

const DEFAULT_MAX_COMPLETION: u32 = 512;
const DEFAULT_TOOL_ROUNDS: u32 = 6;
/// A call that could not produce at least this many tokens is not worth sending.
const MIN_COMPLETION: u32 = 16;
/// Largest reply read from a model server.
const MAX_REPLY: usize = 8 * 1024 * 1024;

/// An agent backed by an OpenAI-compatible chat-completions endpoint; it gets `delegate` and `ask_agent` tools when it may delegate.
pub struct LlmAgent {
    /// Where its requests go: the endpoint over HTTP, or the model the embedder gave the builder.
    chat: Arc<dyn ChatModel>,
    model: String,
    system_prompt: String,
    max_completion: u32,
    temperature: Option<f32>,
    json_mode: bool,
    tool_rounds: u32,
    /// (slug, description) of the agents this one may call.
    targets: Vec<(AgentSlug, String)>,
    tokenizer: &'static CoreBPE,
    /// The MCP servers its tools may come from.
    #[cfg(feature = "mcp")]
    mcp: super::mcp::McpServers,
}

impl std::fmt::Debug for LlmAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAgent").finish_non_exhaustive()
    }
}

/// The functions offered to the model in one delegation.
struct Offered {
    /// Every function, in the chat API's shape.
    tools: Vec<Value>,
    /// The MCP tools among them, by function name.
    #[cfg(feature = "mcp")]
    mcp: Vec<(String, super::mcp::McpTool)>,
}

impl Offered {
    fn new(tools: Vec<Value>) -> Self {
        Self {
            tools,
            #[cfg(feature = "mcp")]
            mcp: Vec::new(),
        }
    }

    fn has(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t["function"]["name"] == name)
    }
}

/// The function name a model calls an MCP tool by: `mcp__<server>__<tool>`,
/// within the chat API's `[a-zA-Z0-9_-]{1,64}`.
#[cfg(feature = "mcp")]
fn mcp_function_name(tool: &super::mcp::McpTool) -> String {
    let raw = format!("mcp__{}__{}", tool.server, tool.name);
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).take(64).collect()
}

/// What a refused call to `name` is on file as: an MCP tool's id when the
/// name is one (`mcp:crm/delete_everything`), else `tool:<name>`.
fn refused_as(name: &str) -> String {
    let name: String = name.chars().take(64).collect();
    match name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => format!("mcp:{server}/{tool}"),
        _ => format!("tool:{name}"),
    }
}

/// Examples of an agent's requests shown to a model that may delegate to it.
const ROSTER_EXAMPLES: usize = 3;

/// What a delegating model is told about an agent: its description and a
/// few of its configured examples (the same ones Prime's rule planner learns from).
fn roster_line(a: &AgentSpec) -> String {
    let mut line = if a.description.is_empty() { a.name.clone() } else { a.description.clone() };
    let examples: Vec<String> = a.examples.iter().take(ROSTER_EXAMPLES).map(|e| format!("\"{e}\"")).collect();
    if !examples.is_empty() {
        let _ = write!(line, " For example: {}.", examples.join("; "));
    }
    line
}

fn tokenizer_for(model: &str) -> &'static CoreBPE {
    // o200k for the newer OpenAI models; cl100k otherwise (for other model
    // families it is an approximation, on the generous side for English)
    let m = model.to_ascii_lowercase();
    if m.starts_with("gpt-4o")
        || m.starts_with("gpt-4.1")
        || m.starts_with("gpt-5")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
    {
        tiktoken_rs::o200k_base_singleton()
    } else {
        tiktoken_rs::cl100k_base_singleton()
    }
}

impl LlmAgent {
    /// The agent `spec` with an `llm` backend; unset fields come from `[llm]`.
    /// With `chat`, its requests go to that model instead of the endpoint
    /// (no `base_url` or API key is needed then).
    pub fn from_spec(
        spec: &AgentSpec,
        config: &Config,
        chat: Option<Arc<dyn ChatModel>>,
    ) -> Result<Self, DelegationError> {
        let Backend::Llm { base_url, model, api_key_env, max_completion_tokens, temperature, json_mode, tool_rounds } =
            &spec.backend
        else {
            return Err(DelegationError::invalid(format!("agent '{}' has no llm backend", spec.slug)));
        };
        let d = &config.llm;
        let prompt = if spec.system_prompt.is_empty() {
            format!("{BASE_PROMPT}\n\nYou are {}: {}", spec.name, spec.description)
        } else {
            format!("{BASE_PROMPT}\n\n{}", spec.system_prompt)
        };
        Self::build(
            spec,
            config,
            LlmDefaults {
                base_url: base_url.clone().or_else(|| d.base_url.clone()),
                model: model.clone().or_else(|| d.model.clone()),
                api_key_env: api_key_env.clone().or_else(|| d.api_key_env.clone()),
                max_completion_tokens: max_completion_tokens.or(d.max_completion_tokens),
                tool_rounds: tool_rounds.or(d.tool_rounds),
            },
            prompt,
            *temperature,
            *json_mode,
            chat,
        )
    }

    /// Prime with the LLM planner: the model in `[llm]` (or `chat`), Prime's prompt.
    pub fn prime(spec: &AgentSpec, config: &Config, chat: Option<Arc<dyn ChatModel>>) -> Result<Self, DelegationError> {
        let prompt = if spec.system_prompt.is_empty() { PRIME_PROMPT.to_string() } else { spec.system_prompt.clone() };
        Self::build(spec, config, config.llm.clone(), prompt, None, false, chat)
    }

    fn build(
        spec: &AgentSpec,
        config: &Config,
        s: LlmDefaults,
        system_prompt: String,
        temperature: Option<f32>,
        json_mode: bool,
        chat: Option<Arc<dyn ChatModel>>,
    ) -> Result<Self, DelegationError> {
        let bad = |what: &str| DelegationError::invalid(format!("agent '{}': {what}", spec.slug));
        let (chat, model) = match chat {
            // the embedder's model: no endpoint, no key; the name it goes by unless one is set
            Some(chat) => {
                let model = s.model.unwrap_or_else(|| chat.name().to_string());
                (chat, model)
            }
            None => {
                let base = s.base_url.ok_or_else(|| bad("no base_url (set it on the agent or in [llm])"))?;
                if !(base.starts_with("http://") || base.starts_with("https://")) {
                    return Err(bad(&format!("base_url '{base}' must start with http:// or https://")));
                }
                let model = s.model.ok_or_else(|| bad("no model (set it on the agent or in [llm])"))?;
                let api_key = match &s.api_key_env {
                    Some(var) => Some(
                        std::env::var(var)
                            .map_err(|_| bad(&format!("the environment variable {var} (its API key) is not set")))?,
                    ),
                    None => None,
                };
                let http = HttpModel {
                    client: crate::util::http_client().map_err(DelegationError::invalid)?,
                    endpoint: format!("{}/chat/completions", base.trim_end_matches('/')),
                    api_key,
                };
                (Arc::new(http) as Arc<dyn ChatModel>, model)
            }
        };
        let targets = config
            .agents
            .iter()
            .filter(|a| a.slug != spec.slug && spec.may_delegate_to(&a.slug))
            .map(|a| (a.slug.clone(), roster_line(a)))
            .collect();
        #[cfg(not(feature = "mcp"))]
        if !spec.mcp.is_empty() {
            return Err(bad("[[agents.mcp]] needs Switchboard built with the `mcp` feature"));
        }
        Ok(Self {
            #[cfg(feature = "mcp")]
            mcp: super::mcp::McpServers::new(&spec.mcp).map_err(|e| bad(&e.message))?,
            chat,
            tokenizer: tokenizer_for(&model),
            model,
            system_prompt,
            max_completion: s.max_completion_tokens.unwrap_or(DEFAULT_MAX_COMPLETION).max(MIN_COMPLETION),
            temperature,
            json_mode,
            tool_rounds: s.tool_rounds.unwrap_or(DEFAULT_TOOL_ROUNDS).clamp(1, 32),
            targets,
        })
    }

    fn count(&self, text: &str) -> u32 {
        u32::try_from(self.tokenizer.encode_ordinary(text).len()).unwrap_or(u32::MAX)
    }

    /// Tokens of a request's messages and tools (with a few per message for
    /// the chat format's framing).
    fn prompt_tokens(&self, messages: &[Value], tools: &[Value]) -> u32 {
        let mut n: u32 = 3;
        for m in messages {
            n = n.saturating_add(4);
            if let Some(c) = m["content"].as_str() {
                n = n.saturating_add(self.count(c));
            }
            if let Some(calls) = m.get("tool_calls") {
                n = n.saturating_add(self.count(&calls.to_string()));
            }
        }
        if !tools.is_empty() {
            n = n.saturating_add(self.count(&Value::Array(tools.to_vec()).to_string()));
        }
        n
    }

    /// The delegated context as chat messages.
    fn messages(&self, task: &Task) -> Vec<Value> {
        let mut system = self.system_prompt.clone();
        if !task.facts.is_empty() {
            system.push_str("\n\nWhat is known about the user:");
            for f in &task.facts {
                let _ = write!(system, "\n- {f}");
            }
        }
        if self.json_mode {
            system.push_str(
                "\n\nReply with one JSON object: {\"result\": your full answer, \"summary\": one sentence, \
                 \"facts\": [lasting facts about the user, if any], \"artifacts\": [structured data, if any]}.",
            );
        } else {
            system.push_str(
                "\n\nIf you learned lasting facts about the user, or produced structured data, end your answer with \
                 a fenced ```json block: {\"summary\": \"...\", \"facts\": [\"...\"], \"artifacts\": [...]}.",
            );
        }
        let mut messages = vec![json!({"role": "system", "content": system})];
        for h in &task.history {
            let role = if h.role == "assistant" { "assistant" } else { "user" };
            messages.push(json!({"role": role, "content": h.content}));
        }
        let mut user = format!("Objective: {}", task.objective);
        if !task.handoff.is_empty() {
            let _ = write!(
                user,
                "\n\nContext from the delegating agent:\n{}",
                serde_json::to_string(&task.handoff).unwrap_or_default()
            );
        }
        if let Some(note) = &task.task_note {
            let _ = write!(user, "\n\nTask note:\n{note}");
        }
        if !task.input.trim().is_empty() {
            let _ = write!(user, "\n\nInput:\n{}", task.input);
        }
        if !task.rejected.is_empty() {
            // a retry names what was rejected, so the model changes its approach
            user.push_str("\n\nEarlier answers to this task were rejected:");
            for (i, why) in task.rejected.iter().enumerate() {
                let _ = write!(user, "\n- attempt {}: {why}", i + 1);
            }
            user.push_str("\nAnswer differently so that this answer meets every requirement.");
        }
        messages.push(json!({"role": "user", "content": user}));
        messages
    }

    /// The tools this agent is offered: delegation tools it is allowed to use.
    fn tools(&self, ctx: &AgentContext) -> Vec<Value> {
        if self.targets.is_empty() || ctx.delegator().is_err() {
            return Vec::new();
        }
        let names: Vec<&str> = self.targets.iter().map(|(s, _)| s.as_str()).collect();
        let roster: String = self.targets.iter().map(|(s, d)| format!("\n- {s}: {d}")).collect();
        let mut tools = Vec::new();
        if ctx.effective_tools().contains("delegate") {
            tools.push(json!({"type": "function", "function": {
                "name": "delegate",
                "description": format!("Delegate a task to another AI employee and get its result.{roster}"),
                "parameters": {"type": "object", "properties": {
                    "employee": {"type": "string", "enum": names, "description": "Target employee slug"},
                    "task": {"type": "string", "description": "Clear, specific task for the employee"},
                    "context": {"type": "object", "description": "Additional context to pass (facts, references, etc.)"}
                }, "required": ["employee", "task"]}
            }}));
        }
        if ctx.effective_tools().contains("ask_agent") {
            tools.push(json!({"type": "function", "function": {
                "name": "ask_agent",
                "description": format!("Consult another AI agent for specialized knowledge; the consult is not saved in its history.{roster}"),
                "parameters": {"type": "object", "properties": {
                    "agent": {"type": "string", "enum": names, "description": "Agent to consult"},
                    "question": {"type": "string", "description": "Question or request for the agent"},
                    "context": {"type": "string", "description": "Why you are asking"}
                }, "required": ["agent", "question"]}
            }}));
        }
        tools
    }

    /// The MCP tools this delegation may use, from the servers that may
    /// have one (connected on first use); a server that cannot be reached
    /// fails the attempt (`AGENT_UNAVAILABLE`).
    #[cfg(feature = "mcp")]
    async fn mcp_tools(&self, ctx: &AgentContext, offered: &mut Offered) -> Result<(), DelegationError> {
        if self.mcp.is_empty() {
            return Ok(());
        }
        let listed = tokio::select! {
            r = self.mcp.allowed_tools(ctx.effective_tools(), ctx.remaining()) => r?,
            () = ctx.cancellation().cancelled() => {
                return Err(DelegationError::new(ErrorCode::Cancelled, "cancelled while listing MCP tools"));
            }
        };
        for tool in listed {
            let name = mcp_function_name(&tool);
            if offered.has(&name) {
                continue; // two tools whose names differ only in characters a function name cannot hold
            }
            let mut parameters = tool.input_schema.clone();
            if !parameters.is_object() || parameters.get("type").is_none() {
                parameters = json!({"type": "object", "properties": {}});
            }
            let about = if tool.description.is_empty() { tool.name.clone() } else { tool.description.clone() };
            offered.tools.push(json!({"type": "function", "function": {
                "name": name,
                "description": format!("{about} (MCP tool {})", tool.id()),
                "parameters": parameters,
            }}));
            offered.mcp.push((name, tool));
        }
        Ok(())
    }

    /// Runs one MCP tool: the rail again, a person's approval when the
    /// agent's `requires_approval` lists the tool's id (`NEEDS_APPROVAL`
    /// stops the attempt: the delegation pauses, and runs again once a
    /// person answers), the call inside the deadline and the cancellation, a
    /// record in the tree, the result redacted.
    #[cfg(feature = "mcp")]
    async fn run_mcp(
        &self,
        ctx: &AgentContext,
        d: Option<&Delegator>,
        tool: &super::mcp::McpTool,
        args: serde_json::Map<String, Value>,
    ) -> Result<Value, DelegationError> {
        let id = tool.id();
        let started = tokio::time::Instant::now();
        let allowed = tool.allowed_in(ctx.effective_tools());
        let approved = match allowed {
            true => ctx.approve(&id, &format!("{id} {}", Value::Object(args.clone()))).await,
            false => Ok(()),
        };
        if let Err(e) = &approved
            && e.code == ErrorCode::NeedsApproval
        {
            return Err(e.clone());
        }
        let outcome = match self.mcp.get(&tool.server) {
            _ if !allowed => Err(DelegationError::new(
                ErrorCode::ToolNotAllowed,
                format!("tool '{id}' is not in this agent's effective tools"),
            )),
            _ if approved.is_err() => approved.map(|()| super::mcp::McpResult::default()),
            None => Err(DelegationError::new(ErrorCode::AgentFailed, format!("no MCP server '{}'", tool.server))),
            Some(server) => {
                let within = server.call_timeout().min(ctx.remaining());
                tokio::select! {
                    r = server.call(&tool.name, args, within) => r,
                    () = ctx.cancellation().cancelled() => {
                        Err(DelegationError::new(ErrorCode::Cancelled, format!("cancelled while {id} ran")))
                    }
                }
            }
        };
        let on_file = match &outcome {
            Ok(r) if r.is_error => Err(DelegationError::new(ErrorCode::AgentFailed, format!("{id} reported an error"))),
            Ok(_) => Ok(()),
            Err(e) => Err(e.clone()),
        };
        if let Some(d) = d {
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match &on_file {
                Err(e) if e.code == ErrorCode::ToolNotAllowed => d.record_denied(&id, e).await,
                _ => d.record_tool(&id, on_file.as_ref().map(|_| ()), ms).await,
            }
        }
        // what the server said passes the tree's PII redaction before the model reads it
        let mut v = match outcome {
            Ok(r) => r.to_json(),
            Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
        };
        ctx.redact_json(&mut v);
        Ok(v)
    }

    /// Runs one tool call (a delegation through the delegator, or an MCP
    /// tool); the answer goes back to the model. An error stops the
    /// attempt: an MCP tool that waits for a person's approval.
    async fn run_tool(
        &self,
        ctx: &AgentContext,
        offered: &Offered,
        d: Option<&Delegator>,
        name: &str,
        args: &str,
    ) -> Result<Value, DelegationError> {
        // every refusal is on file before it goes back to the model
        let refuse = |code: ErrorCode, message: String| async move {
            let e = DelegationError::new(code, message);
            if let Some(d) = d {
                d.record_denied(&refused_as(name), &e).await;
            }
            json!({"error": {"code": e.code, "message": e.message}})
        };
        if !offered.has(name) {
            return Ok(refuse(ErrorCode::ToolNotAllowed, format!("tool '{name}' is not available to this agent")).await);
        }
        let args: Value = match serde_json::from_str(args) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Ok(
                    refuse(ErrorCode::InvalidRequest, format!("the arguments of {name} must be a JSON object")).await
                );
            }
        };
        #[cfg(feature = "mcp")]
        if let Some((_, tool)) = offered.mcp.iter().find(|(f, _)| f == name) {
            let Value::Object(args) = args else { return Ok(Value::Null) };
            return self.run_mcp(ctx, d, tool, args).await;
        }
        #[cfg(not(feature = "mcp"))]
        let _ = ctx;
        let Some(d) = d else {
            return Ok(
                refuse(ErrorCode::DelegationNotAllowed, format!("{name} needs a runtime to delegate through")).await
            );
        };
        let (target, task, ephemeral) = match name {
            "delegate" => (&args["employee"], &args["task"], false),
            _ => (&args["agent"], &args["question"], true),
        };
        let (Some(target), Some(task)) = (target.as_str(), task.as_str()) else {
            return Ok(refuse(ErrorCode::InvalidRequest, format!("{name} needs a target agent and a task")).await);
        };
        let mut call = match Call::to(target, task) {
            Ok(c) => c.input(task),
            Err(e) => return Ok(refuse(e.code, e.message).await),
        };
        match &args["context"] {
            Value::Object(m) => call = call.handoff(HandoffData { extra: m.clone(), ..HandoffData::default() }),
            Value::String(s) if !s.is_empty() => call = call.input(format!("{task}\n\nContext: {s}")),
            _ => {}
        }
        if ephemeral {
            call = call.ephemeral();
        }
        Ok(tool_result(&d.delegate(call).await))
    }
}

/// What a delegation looks like to the model that asked for it.
fn tool_result(r: &DelegationResponse) -> Value {
    let mut v = json!({
        "employee": r.target_employee,
        "status": r.status,
        "summary": r.summary,
        "details": r.result,
        "data": r.artifacts.iter().map(|a| &a.value).collect::<Vec<_>>(),
    });
    if let Some(e) = &r.error {
        v["error"] = json!({"code": e.code, "message": e.message});
    }
    v
}

/// A tool call written out as text (`functions.delegate: {…}`,
/// `{"name": "delegate", …}`, `<tool_call>`), which small models produce
/// instead of calling the tool.
static TOOL_CALL_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bfunctions?\.\w+\s*[:(]|["']?(?:name|function)["']?\s*:\s*["'](?:delegate|ask_agent)\b|</?tool_call>|</?function\b|\b(?:delegate|ask_agent)\s*\(\s*[{"']|["']employee["']\s*:"#)
        .expect("valid regex")
});
/// Markup escaped for HTML (`&#34;`, `&quot;`): text meant for a page, not an answer.
static ESCAPED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)&(?:#\d{2,5}|#x[0-9a-f]{2,4}|quot|lt|gt|amp|apos);").expect("valid regex"));

fn trigrams(text: &str) -> std::collections::HashSet<String> {
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    words.windows(3).map(|w| w.join(" ")).collect()
}

/// Why a model's final reply is not an answer, if it is not: empty, a tool
/// call written out as text, escaped markup, or the `prompt` (the system
/// and user messages it was sent) echoed back.
pub fn unusable(reply: &str, prompt: &[&str]) -> Option<String> {
    let reply = reply.trim();
    if reply.is_empty() {
        return Some("the reply is empty".into());
    }
    if let Some(m) = TOOL_CALL_TEXT.find(reply) {
        return Some(format!("the reply is a tool call written out as text ('{}')", m.as_str()));
    }
    if let Some(m) = ESCAPED.find(reply) {
        return Some(format!("the reply is escaped markup ('{}')", m.as_str()));
    }
    let said = trigrams(reply);
    if said.len() >= 6 {
        let asked: std::collections::HashSet<String> = prompt.iter().flat_map(|p| trigrams(p)).collect();
        let echoed = said.iter().filter(|t| asked.contains(*t)).count();
        if echoed * 10 >= said.len() * 8 {
            return Some(format!("the reply echoes the prompt ({echoed} of its {} word triples)", said.len()));
        }
    }
    None
}

/// What the specialists returned in this conversation (the `tool`
/// messages), as an answer: the model's own reply was no answer.
fn from_results(messages: &[Value], why: &str) -> Option<AgentOutput> {
    let results: Vec<Value> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str(m["content"].as_str()?).ok())
        .filter(|r: &Value| matches!(r["status"].as_str(), Some("success" | "partial")))
        .collect();
    if results.is_empty() {
        return None;
    }
    let mut text = String::from("Here is what the team found:");
    for r in &results {
        let _ = write!(
            text,
            "\n• {}: {}",
            r["employee"].as_str().unwrap_or("?"),
            r["summary"].as_str().unwrap_or_default()
        );
    }
    let mut out = AgentOutput::new(format!("answered from the specialists' results ({why})"), text);
    out.artifacts = results.into_iter().map(|r| Artifact::json("specialist", r)).collect();
    Some(out)
}

/// The structured part of a final answer: a JSON object (json mode), or the
/// last fenced ```json block of a text answer.
fn parse_answer(content: &str, json_mode: bool) -> Result<AgentOutput, DelegationError> {
    let bad = |why: String| {
        DelegationError::new(ErrorCode::AgentFailed, format!("the model's reply is not what was asked: {why}"))
    };
    let (text, data): (String, Option<Value>) = if json_mode {
        let v: Value =
            serde_json::from_str(content.trim()).map_err(|e| bad(format!("a JSON object was asked for ({e})")))?;
        if !v.is_object() {
            return Err(bad("a JSON object was asked for".into()));
        }
        let text = v["result"].as_str().or_else(|| v["answer"].as_str()).unwrap_or_default().to_string();
        (text, Some(v))
    } else if let Some(start) = content.rfind("```json") {
        let rest = &content[start + 7..];
        let end = rest.find("```").ok_or_else(|| bad("its ```json block is not closed".into()))?;
        let v: Value = serde_json::from_str(rest[..end].trim())
            .map_err(|e| bad(format!("its ```json block does not parse ({e})")))?;
        let text = format!("{}{}", &content[..start], &rest[end + 3..]).trim().to_string();
        (text, Some(v))
    } else {
        (content.trim().to_string(), None)
    };
    let mut out = AgentOutput::new(String::new(), text);
    if let Some(v) = data {
        if let Some(s) = v["summary"].as_str() {
            out.summary = s.to_string();
        }
        for f in v["facts"].as_array().or_else(|| v["new_facts"].as_array()).into_iter().flatten() {
            match f {
                Value::String(s) => out.new_facts.push(NewFact::new(s.clone())),
                Value::Object(o) => {
                    if let Some(fact) = o.get("fact").and_then(Value::as_str) {
                        let scope = o.get("scope").and_then(Value::as_str).map(str::to_string);
                        out.new_facts.push(NewFact { fact: fact.to_string(), scope });
                    }
                }
                _ => return Err(bad("facts must be strings or {\"fact\", \"scope\"} objects".into())),
            }
        }
        for (i, a) in v["artifacts"].as_array().into_iter().flatten().enumerate() {
            out.artifacts.push(Artifact::json(format!("artifact-{}", i + 1), a.clone()));
        }
        if out.result.is_empty() && json_mode {
            return Err(bad("the JSON object has no \"result\"".into()));
        }
    }
    if out.result.is_empty() && out.artifacts.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if out.summary.is_empty() {
        let first = out.result.split(['\n', '.']).map(str::trim).find(|s| !s.is_empty()).unwrap_or("answered");
        out.summary = first.chars().take(200).collect();
    }
    Ok(out)
}

/// The model behind an OpenAI-compatible endpoint, over HTTP.
struct HttpModel {
    client: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
}

#[async_trait]
impl ChatModel for HttpModel {
    async fn complete(&self, body: &Value, timeout: Duration) -> Result<Value, DelegationError> {
        let mut http = self.client.post(&self.endpoint).timeout(timeout.max(Duration::from_millis(1))).json(body);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        for (k, v) in telemetry::trace_headers() {
            http = http.header(k, v);
        }
        let res = http.send().await.map_err(|e| {
            if e.is_timeout() {
                DelegationError::new(
                    ErrorCode::DeadlineExceeded,
                    format!("the model at {} did not answer in time", self.endpoint),
                )
            } else {
                DelegationError::new(
                    ErrorCode::AgentUnavailable,
                    format!("the model at {} is unreachable: {e}", self.endpoint),
                )
            }
        })?;
        let status = res.status();
        let retry_after = res
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(3600.0)));
        let mut res = res;
        let mut bytes = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| {
            DelegationError::new(ErrorCode::AgentUnavailable, format!("the model's answer broke off: {e}"))
        })? {
            if bytes.len() + chunk.len() > MAX_REPLY {
                return Err(DelegationError::new(ErrorCode::AgentFailed, "the model's answer is larger than 8 MiB"));
            }
            bytes.extend_from_slice(&chunk);
        }
        let snippet = || String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        if status.as_u16() == 429 {
            let e = DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!("the model is rate limited (429): {}", snippet()),
            );
            return Err(match retry_after {
                Some(d) => e.retry_after(d),
                None => e,
            });
        }
        if status.is_server_error() {
            return Err(DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!("the model server failed ({status}): {}", snippet()),
            ));
        }
        if !status.is_success() {
            return Err(DelegationError::new(
                ErrorCode::AgentFailed,
                format!("the model server refused the request ({status}): {}", snippet()),
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            DelegationError::new(
                ErrorCode::AgentFailed,
                format!("the model server's reply is not JSON ({e}): {}", snippet()),
            )
        })
    }

    fn name(&self) -> &str {
        &self.endpoint
    }
}

#[async_trait]
impl Agent for LlmAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let mut usage = TokenUsage::default();
        // tokens the server counted are spent even when the attempt fails after them
        self.rounds(ctx, task, &mut usage).await.map_err(|e| if usage.total > 0 { e.spent(usage) } else { e })
    }

    fn estimate_tokens(&self, task: &Task) -> TokenEstimate {
        let prompt = self.prompt_tokens(&self.messages(task), &[]);
        // a call that cannot produce a useful answer does not fit
        let completion = self.max_completion.min(task.max_completion_tokens).max(MIN_COMPLETION);
        TokenEstimate { prompt, completion }
    }
}

impl LlmAgent {
    /// The model's rounds (tool calls, then an answer), adding each reply's usage to `usage`.
    async fn rounds(
        &self,
        ctx: &AgentContext,
        task: &Task,
        usage: &mut TokenUsage,
    ) -> Result<AgentOutput, DelegationError> {
        let mut messages = self.messages(task);
        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
        let mut offered = Offered::new(self.tools(ctx));
        #[cfg(feature = "mcp")]
        self.mcp_tools(ctx, &mut offered).await?;
        let tools = offered.tools.clone();
        let delegator = ctx.delegator().ok();
        let mut corrected = false;
        for round in 0..=self.tool_rounds {
            let prompt = self.prompt_tokens(&messages, &tools);
            // what is left for this agent's own calls (children's use is already in the tree's token accounts)
            let left = delegator.map_or(u32::MAX, |d| d.remaining_tokens()).saturating_sub(usage.total);
            let room = left.saturating_sub(prompt);
            if room < MIN_COMPLETION {
                return Err(DelegationError::new(
                    ErrorCode::TokenBudgetExceeded,
                    format!(
                        "Estimated tokens ({}) exceeds budget ({left}). Simplify task or increase budget.",
                        prompt + MIN_COMPLETION
                    ),
                ));
            }
            let mut body = json!({
                "model": self.model,
                "messages": messages,
                "max_tokens": self.max_completion.min(room),
            });
            if let Some(t) = self.temperature {
                body["temperature"] = json!(t);
            }
            if self.json_mode {
                body["response_format"] = json!({"type": "json_object"});
            }
            // the last round may not call tools: the model must answer
            if !tools.is_empty() && round < self.tool_rounds {
                body["tools"] = Value::Array(tools.clone());
                body["tool_choice"] = json!("auto");
            }
            let reply = self.chat.complete(&body, ctx.remaining()).await?;
            let u = &reply["usage"];
            let reported = TokenUsage::new(
                u["prompt_tokens"].as_u64().map_or(prompt, |v| v as u32),
                u["completion_tokens"].as_u64().unwrap_or(0) as u32,
            );
            usage.add(reported);
            let message = &reply["choices"][0]["message"];
            if !message.is_object() {
                return Err(DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("the model server's reply has no choices[0].message: {}", truncate(&reply.to_string())),
                ));
            }
            let calls = message["tool_calls"].as_array().filter(|c| !c.is_empty());
            let Some(calls) = calls else {
                let content = message["content"].as_str().unwrap_or_default();
                let prompt: Vec<&str> = messages
                    .iter()
                    .filter(|m| m["role"] == "system" || m["role"] == "user")
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                let why = if self.json_mode { None } else { unusable(content, &prompt) };
                let Some(why) = why else {
                    let mut out = parse_answer(content, self.json_mode)?;
                    out.token_usage = Some(*usage);
                    return Ok(out);
                };
                // not an answer: asked once more, then answered from what the
                // specialists returned, else a failure that says so
                if !corrected && round < self.tool_rounds {
                    corrected = true;
                    messages.push(json!({"role": "assistant", "content": content}));
                    messages.push(json!({"role": "user", "content": format!(
                        "That reply is not an answer: {why}. Answer the request in plain words for the user; \
                         do not write tool calls as text."
                    )}));
                    continue;
                }
                if let Some(mut out) = from_results(&messages, &why) {
                    out.token_usage = Some(*usage);
                    return Ok(out);
                }
                return Err(DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("the model gave no usable answer: {why}"),
                ));
            };
            if delegator.is_none() && tools.is_empty() {
                return Err(DelegationError::new(ErrorCode::AgentFailed, "the model called tools outside a runtime"));
            }
            if round == self.tool_rounds {
                break;
            }
            // content as a string, empty when the model only called tools: a
            // null is refused by servers such as llama-cpp-python (500)
            let said = message["content"].as_str().unwrap_or_default();
            messages.push(json!({"role": "assistant", "content": said, "tool_calls": calls}));
            // the calls of one turn run side by side; the fan-out rail applies to them
            let offered = &offered;
            let results = futures::future::join_all(calls.iter().map(|c| {
                let name = c["function"]["name"].as_str().unwrap_or_default().to_string();
                let args = c["function"]["arguments"].as_str().unwrap_or("{}").to_string();
                async move { self.run_tool(ctx, offered, delegator, &name, &args).await }
            }))
            .await;
            let mut stop = None;
            for (c, r) in calls.iter().zip(results) {
                match r {
                    Ok(r) => messages.push(json!({"role": "tool", "tool_call_id": c["id"], "content": r.to_string()})),
                    Err(e) => stop = stop.or(Some(e)),
                }
            }
            if let Some(e) = stop {
                return Err(e);
            }
        }
        Err(DelegationError::new(
            ErrorCode::AgentFailed,
            format!("the model kept calling tools after {} rounds without answering", self.tool_rounds),
        ))
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(200).collect()
}

/// An LLM agent for `spec` (talking to `chat` when given).
pub fn for_spec(
    spec: &AgentSpec,
    config: &Config,
    chat: Option<Arc<dyn ChatModel>>,
) -> Result<Arc<dyn Agent>, DelegationError> {
    Ok(Arc::new(LlmAgent::from_spec(spec, config, chat)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_yield_their_facts_artifacts_and_summary() {
        let text = "Your budget is fine.\n\n```json\n{\"summary\": \"Budget ok\", \"facts\": [\"saves monthly\", {\"fact\": \"in Canada\", \"scope\": \"global\"}], \"artifacts\": [{\"total\": 3}]}\n```";
        let out = parse_answer(text, false).unwrap();
        assert_eq!(out.result, "Your budget is fine.");
        assert_eq!(out.summary, "Budget ok");
        assert_eq!(out.new_facts, [NewFact::new("saves monthly"), NewFact::scoped("in Canada", "global")]);
        assert_eq!(out.artifacts[0].value, json!({"total": 3}));
        let plain = parse_answer("Hello there. More text.", false).unwrap();
        assert_eq!(plain.summary, "Hello there");
    }

    #[test]
    fn a_reply_that_is_not_what_was_asked_is_agent_failed_with_the_reason() {
        for (reply, json_mode, why) in [
            ("not json", true, "JSON object was asked for"),
            ("[1,2]", true, "JSON object was asked for"),
            ("{\"summary\": \"x\"}", true, "no \"result\""),
            ("ok ```json {broken ```", false, "does not parse"),
            ("ok ```json {\"a\":1}", false, "not closed"),
            ("", false, "empty"),
            ("x ```json {\"facts\": [1]} ```", false, "facts must be"),
        ] {
            let err = parse_answer(reply, json_mode).unwrap_err();
            assert_eq!(err.code, ErrorCode::AgentFailed);
            assert!(err.message.contains(why), "{reply}: {}", err.message);
        }
    }

    #[test]
    fn a_tool_call_in_text_escaped_markup_an_empty_reply_or_the_prompt_echoed_is_not_an_answer() {
        let prompt = ["You are Prime, the user's lead assistant.", "Objective: How much did I spend on coffee?"];
        for (reply, why) in [
            ("functions.delegate: { &#34;employee&#34;: &#34;tag-ai&#34; }", "tool call"),
            ("{\"name\": \"delegate\", \"arguments\": {\"employee\": \"crystal-analytics\"}}", "tool call"),
            ("<tool_call>{\"employee\": \"tag-ai\"}</tool_call>", "tool call"),
            ("Your total is &quot;$12&quot;", "escaped markup"),
            ("   ", "empty"),
            ("You are Prime, the user's lead assistant. Objective: How much did I spend on coffee?", "echoes"),
        ] {
            let got = unusable(reply, &prompt);
            assert!(got.as_deref().is_some_and(|g| g.contains(why)), "{reply}: {got:?}");
        }
        for reply in ["You spent $12.40 on coffee in October, at Starbucks twice.", "Hello! How can I help?"] {
            assert_eq!(unusable(reply, &prompt), None, "{reply}");
        }
    }

    #[test]
    fn a_delegating_model_sees_each_agents_description_and_examples() {
        let mut spec = AgentSpec::new("crystal", "Crystal").unwrap().described("Spending analysis.");
        spec = spec.with_examples([
            "how much did I spend on coffee?",
            "my top categories",
            "where can I cut back",
            "more",
        ]);
        assert_eq!(
            roster_line(&spec),
            "Spending analysis. For example: \"how much did I spend on coffee?\"; \"my top categories\"; \"where can I cut back\"."
        );
        assert_eq!(roster_line(&AgentSpec::new("bare", "Bare").unwrap()), "Bare");
    }

    #[test]
    fn a_real_tokenizer_counts_tokens() {
        let t = tokenizer_for("gpt-4o-mini");
        assert_eq!(t.encode_ordinary("hello world").len(), 2);
        assert!(tokenizer_for("llama3").encode_ordinary("The quick brown fox").len() >= 4);
    }
}
