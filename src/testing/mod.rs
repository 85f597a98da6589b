//! What Switchboard's own tests are built from, for testing your agents the
//! same way (feature `test-util`, off by default):
//!
//! - [`ScriptedAgent`]: a team member that answers from a script (a queue
//!   of replies, or a function of the task) and keeps every task it was
//!   handed, with where it stood in the tree;
//! - [`FnAgent`] ([`agent`]): a team member whose behaviour is an async
//!   closure over its context and task, for one that delegates;
//! - [`ScriptedModel`]: a [`ChatModel`] that replies in order and keeps
//!   every request (the prompts, the tools offered), for `llm` agents and
//!   Prime's LLM planner ([`RuntimeBuilder::chat_model`]);
//! - [`builder`] ([`config`]): a runtime in one call from a table of agents
//!   (who may delegate to whom, which tools), in memory, no network;
//! - [`Planner`]: Prime's rule planner alone, to see which specialists a
//!   message would reach from your agents' `examples` (or to time it);
//! - [`pdf_text`] and [`sample_pdf`]: the finance team's PDF reading alone,
//!   on a page of a chosen size (to time it).
//!
//! ```toml
//! [dev-dependencies]
//! switchboard = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! ```
//! use switchboard::protocol::{AgentSlug, DelegationRequest, UserId};
//! use switchboard::testing::{ScriptedAgent, builder};
//! use switchboard::{AgentOutput, Principal, Status};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchboard::DelegationError> {
//! let worker = ScriptedAgent::new().reply(AgentOutput::new("done", "42"));
//! let runtime = builder(&[("boss", &["worker"], &[]), ("worker", &[], &[])])
//!     .agent("worker", worker.clone())
//!     .build()?;
//! let req = DelegationRequest::new(AgentSlug::parse("boss")?, AgentSlug::parse("worker")?,
//!                                  UserId::parse("ada")?, "Answer", "the question");
//! let r = runtime.delegate(&Principal::Admin, req).await;
//! assert_eq!((r.status, r.result.as_str()), (Status::Success, "42"));
//! assert_eq!(worker.received()[0].task.input, "the question");
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::agent::{Agent, AgentContext, AgentOutput, ChatModel, Lineage, Task};
use crate::config::Config;
use crate::protocol::{DelegationError, ErrorCode};
use crate::runtime::{Runtime, RuntimeBuilder};
use crate::store::MemoryStore;

/// A lock that a panicking test elsewhere did not spoil: what it guards is
/// only ever pushed to or popped from.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One task a [`ScriptedAgent`] was handed, as the runtime handed it.
///
/// ```
/// # use switchboard::testing::{Received, ScriptedAgent};
/// # fn look(helper: &ScriptedAgent) {
/// let first: &Received = &helper.received()[0];
/// assert_eq!(first.task.objective, "Categorize these");
/// assert_eq!(first.lineage.as_ref().map(|l| l.origin.as_str()), Some("bookkeeper"));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Received {
    /// The task: objective, input (PII tokenized unless the agent may see
    /// it), handoff, facts, history, attempt.
    pub task: Task,
    /// The depth the agent ran at.
    pub depth: u32,
    /// Where the delegation stood in its tree (origin, root, ancestors,
    /// remaining deadline and budget, effective tools); None outside a runtime.
    pub lineage: Option<Lineage>,
}

type AnswerFn = dyn Fn(&Task) -> Result<AgentOutput, DelegationError> + Send + Sync;

enum Script {
    /// Replies in order; once they are gone, a failure that says so.
    Queue(Mutex<VecDeque<Result<AgentOutput, DelegationError>>>),
    /// The same function for every task.
    Answer(Box<AnswerFn>),
}

/// A team member that answers from a script and keeps what it was handed.
/// Clones share the script and the record: give one to the runtime, keep
/// one to look at.
///
/// ```
/// use switchboard::testing::ScriptedAgent;
/// use switchboard::{Agent, AgentContext, AgentOutput, DelegationError, ErrorCode, Task};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let flaky = ScriptedAgent::new()
///     .fail(DelegationError::new(ErrorCode::AgentUnavailable, "busy"))
///     .reply(AgentOutput::new("done", "ok"));
/// let ctx = AgentContext::detached(Vec::<String>::new());
/// assert!(flaky.run(&ctx, &Task::new("Do it", "")).await.is_err());
/// assert_eq!(flaky.run(&ctx, &Task::new("Do it", "")).await.unwrap().result, "ok");
/// assert!(flaky.run(&ctx, &Task::new("Do it", "")).await.is_err(), "the script is spent");
/// assert_eq!(flaky.runs(), 3);
/// # }
/// ```
#[derive(Clone)]
pub struct ScriptedAgent {
    script: Arc<Script>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Default for ScriptedAgent {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ScriptedAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let script = match &*self.script {
            Script::Queue(q) => format!("{} replies left", lock(q).len()),
            Script::Answer(_) => "a function".to_string(),
        };
        f.debug_struct("ScriptedAgent").field("script", &script).field("runs", &self.runs()).finish()
    }
}

impl ScriptedAgent {
    /// An agent with no replies yet: add them with [`reply`](Self::reply)
    /// and [`fail`](Self::fail). A task past the last reply fails with
    /// `AGENT_FAILED`.
    pub fn new() -> Self {
        Self::with(Script::Queue(Mutex::default()))
    }

    /// An agent that answers every task with `answer(task)`.
    ///
    /// ```
    /// use switchboard::AgentOutput;
    /// use switchboard::testing::ScriptedAgent;
    ///
    /// let shout = ScriptedAgent::answering(|task| Ok(AgentOutput::new("shouted", task.text().to_uppercase())));
    /// ```
    pub fn answering(answer: impl Fn(&Task) -> Result<AgentOutput, DelegationError> + Send + Sync + 'static) -> Self {
        Self::with(Script::Answer(Box::new(answer)))
    }

    /// An agent that answers every task at once: summary `did: <objective>`,
    /// its input as the result (what [`builder`] gives every agent).
    ///
    /// ```
    /// # use switchboard::testing::ScriptedAgent;
    /// # use switchboard::{Agent, AgentContext, Task};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let out = ScriptedAgent::echo().run(&AgentContext::detached(Vec::<String>::new()), &Task::new("Sort", "b a")).await;
    /// assert_eq!(out.unwrap().summary, "did: Sort");
    /// # }
    /// ```
    pub fn echo() -> Self {
        Self::answering(|task| Ok(AgentOutput::new(format!("did: {}", task.objective), task.input.clone())))
    }

    fn with(script: Script) -> Self {
        Self { script: Arc::new(script), received: Arc::default() }
    }

    /// This agent with `output` as its next reply (on an agent made by
    /// [`answering`](Self::answering) or [`echo`](Self::echo), the function
    /// answers and the reply is ignored).
    pub fn reply(self, output: AgentOutput) -> Self {
        self.push(Ok(output))
    }

    /// This agent with `error` as its next reply.
    pub fn fail(self, error: DelegationError) -> Self {
        self.push(Err(error))
    }

    fn push(self, reply: Result<AgentOutput, DelegationError>) -> Self {
        if let Script::Queue(q) = &*self.script {
            lock(q).push_back(reply);
        }
        self
    }

    /// Every task it was handed so far, oldest first (retries included).
    pub fn received(&self) -> Vec<Received> {
        lock(&self.received).clone()
    }

    /// How many times it ran.
    pub fn runs(&self) -> usize {
        lock(&self.received).len()
    }
}

#[async_trait]
impl Agent for ScriptedAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let lineage = ctx.delegator().ok().map(|d| d.lineage());
        lock(&self.received).push(Received { task: task.clone(), depth: ctx.depth(), lineage });
        match &*self.script {
            Script::Queue(q) => lock(q).pop_front().unwrap_or_else(|| {
                Err(DelegationError::new(ErrorCode::AgentFailed, "the scripted agent has no reply left"))
            }),
            Script::Answer(answer) => answer(task),
        }
    }
}

/// A team member whose behaviour is an async closure over its context and
/// task (made by [`agent`]): for one that delegates through
/// `ctx.delegator()`.
pub struct FnAgent<F>(pub F);

impl<F> fmt::Debug for FnAgent<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnAgent")
    }
}

#[async_trait]
impl<F, Fut> Agent for FnAgent<F>
where
    F: Fn(AgentContext, Task) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentOutput, DelegationError>> + Send + 'static,
{
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        (self.0)(ctx.clone(), task.clone()).await
    }
}

/// An agent whose behaviour is `f`.
///
/// ```
/// use switchboard::testing::agent;
/// use switchboard::{AgentOutput, Call};
///
/// // asks `worker` and answers with what came back
/// let boss = agent(|ctx, task| async move {
///     let r = ctx.delegator()?.delegate(Call::to("worker", "Do this")?.input(task.input)).await;
///     match r.error {
///         Some(e) => Err(e),
///         None => Ok(AgentOutput::new("asked the worker", r.result)),
///     }
/// });
/// ```
pub fn agent<F, Fut>(f: F) -> FnAgent<F>
where
    F: Fn(AgentContext, Task) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentOutput, DelegationError>> + Send + 'static,
{
    FnAgent(f)
}

/// An assistant message with `content`, as a chat-completions model writes it.
///
/// ```
/// assert_eq!(switchboard::testing::assistant_text("Hi")["content"], "Hi");
/// ```
pub fn assistant_text(content: &str) -> Value {
    json!({"role": "assistant", "content": content})
}

/// An assistant message that calls `calls` (function name, arguments), as a
/// chat-completions model writes it; the calls' ids are `call_0`, `call_1` …
///
/// ```
/// use serde_json::json;
///
/// let m = switchboard::testing::assistant_tool_calls(&[("delegate", json!({"employee": "tag-ai", "task": "Tag it"}))]);
/// assert_eq!(m["tool_calls"][0]["function"]["name"], "delegate");
/// ```
pub fn assistant_tool_calls(calls: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

/// One reply of a [`ScriptedModel`].
///
/// ```
/// use switchboard::testing::{ModelReply, ScriptedModel};
/// use switchboard::{DelegationError, ErrorCode};
///
/// // down once (the agent's retry gets the answer)
/// let model = ScriptedModel::new()
///     .reply(ModelReply::Fail(DelegationError::new(ErrorCode::AgentUnavailable, "503")))
///     .text("Here it is.");
/// assert_eq!(model.left(), 2);
/// ```
#[derive(Debug, Clone)]
pub enum ModelReply {
    /// An assistant message ([`assistant_text`], [`assistant_tool_calls`]).
    Message(Value),
    /// The call fails with this error (an unreachable or overloaded model: `AGENT_UNAVAILABLE`).
    Fail(DelegationError),
}

/// A [`ChatModel`] that replies from a script, in order, and keeps every
/// request it was sent. Each reply reports 100 prompt and 20 completion
/// tokens; a request past the last reply fails with `AGENT_FAILED`. Clones
/// share the script and the record.
///
/// ```
/// use switchboard::protocol::{AgentSlug, DelegationRequest, UserId};
/// use switchboard::testing::{ScriptedAgent, ScriptedModel};
/// use switchboard::{Config, Principal, Runtime, Status};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), switchboard::DelegationError> {
/// let model = ScriptedModel::new().text("Dear Alex, sorry for the delay.");
/// let config = Config::from_toml(r#"
///     [[agents]]
///     slug = "caller"
///     name = "Caller"
///     may_delegate_to = ["writer"]
///
///     [[agents]]
///     slug = "writer"
///     name = "Writer"
///     backend = { kind = "llm" }
/// "#)?;
/// let runtime = Runtime::builder()
///     .config(config)
///     .chat_model(model.clone())
///     .agent("caller", ScriptedAgent::echo()) // a builtin named "caller" does not exist
///     .build()?;
/// let req = DelegationRequest::new(AgentSlug::parse("caller")?, AgentSlug::parse("writer")?,
///                                  UserId::parse("ada")?, "Draft an apology to Alex", "");
/// let r = runtime.delegate(&Principal::Admin, req).await;
/// assert_eq!((r.status, r.result.as_str()), (Status::Success, "Dear Alex, sorry for the delay."), "{r:?}");
/// assert!(model.prompts()[0].contains("Draft an apology to Alex"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ScriptedModel {
    replies: Arc<Mutex<VecDeque<ModelReply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("left", &self.left())
            .field("requests", &lock(&self.requests).len())
            .finish()
    }
}

impl ScriptedModel {
    /// A model with no replies yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// This model with `reply` next.
    pub fn reply(self, reply: ModelReply) -> Self {
        lock(&self.replies).push_back(reply);
        self
    }

    /// This model answering `content` next.
    pub fn text(self, content: &str) -> Self {
        self.reply(ModelReply::Message(assistant_text(content)))
    }

    /// This model calling `calls` (function name, arguments) next: `delegate`
    /// (`{"employee", "task"}`), `ask_agent` (`{"agent", "question"}`) or an
    /// agent's MCP tool.
    pub fn tool_calls(self, calls: &[(&str, Value)]) -> Self {
        self.reply(ModelReply::Message(assistant_tool_calls(calls)))
    }

    /// Every request it was sent, oldest first: the chat-completions body
    /// (`model`, `messages`, `max_tokens`, `tools` …).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.requests).clone()
    }

    /// What each request showed the model: its messages' text, one a line
    /// (`role: content`), oldest request first.
    pub fn prompts(&self) -> Vec<String> {
        lock(&self.requests)
            .iter()
            .map(|r| {
                let messages = r["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
                let lines: Vec<String> = messages
                    .iter()
                    .map(|m| format!("{}: {}", m["role"].as_str().unwrap_or("?"), m["content"].as_str().unwrap_or("")))
                    .collect();
                lines.join("\n")
            })
            .collect()
    }

    /// How many replies are left.
    pub fn left(&self) -> usize {
        lock(&self.replies).len()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn complete(&self, request: &Value, _timeout: Duration) -> Result<Value, DelegationError> {
        lock(&self.requests).push(request.clone());
        let next = lock(&self.replies).pop_front();
        match next {
            Some(ModelReply::Message(message)) => Ok(json!({
                "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": request["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            })),
            Some(ModelReply::Fail(e)) => Err(e),
            None => Err(DelegationError::new(ErrorCode::AgentFailed, "the scripted model has no reply left")),
        }
    }

    fn name(&self) -> &str {
        "scripted"
    }
}

/// A configuration declaring exactly `agents`, each a row `(slug,
/// may_delegate_to, tools_allowed)`, with the default limits; no built-in
/// team, no Prime. Panics on a row that is not a valid agent (a test's
/// mistake).
///
/// ```
/// use switchboard::testing::config;
///
/// let config = config(&[("boss", &["worker"], &[]), ("worker", &[], &["categorize"])]);
/// assert_eq!(config.agents.len(), 2);
/// ```
pub fn config(agents: &[(&str, &[&str], &[&str])]) -> Config {
    let mut toml = String::new();
    for (slug, may, tools) in agents {
        toml.push_str(&format!(
            "[[agents]]\nslug = \"{slug}\"\nname = \"{slug}\"\nmay_delegate_to = {may:?}\ntools_allowed = {tools:?}\n\n"
        ));
    }
    Config::from_toml(&toml).unwrap_or_else(|e| panic!("the test's agents are not a valid team: {}", e.message))
}

/// A runtime builder over [`config`]`(agents)` with an in-memory store, in
/// which every agent is a [`ScriptedAgent::echo`] until the test gives it
/// its own (`.agent(slug, …)`). Nothing in it opens a connection.
///
/// ```
/// use switchboard::testing::{ScriptedAgent, builder};
///
/// let mine = ScriptedAgent::echo();
/// let runtime = builder(&[("mine", &[], &[])]).agent("mine", mine.clone()).build()?;
/// # Ok::<(), switchboard::DelegationError>(())
/// ```
pub fn builder(agents: &[(&str, &[&str], &[&str])]) -> RuntimeBuilder {
    let builder = Runtime::builder().config(config(agents)).store(Arc::new(MemoryStore::new()));
    agents.iter().fold(builder, |b, (slug, _, _)| b.agent(slug, ScriptedAgent::echo()))
}

/// Prime's rule planner on its own, with no runtime: which specialists a
/// message would reach, as Prime would plan it with no model configured.
/// For checking that your agents' `examples` route the requests you expect
/// (and for timing the router).
///
/// ```
/// let config = switchboard::Config::builtin();
/// let planner = switchboard::testing::Planner::new(&config, "prime-boss")?;
/// assert_eq!(planner.route("What was my biggest expense in October?"), ["crystal-analytics"]);
/// # Ok::<(), switchboard::DelegationError>(())
/// ```
pub struct Planner(crate::orchestrate::planner::RulePlanner);

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner").finish_non_exhaustive()
    }
}

impl Planner {
    /// The planner of `prime` (an agent of `config`) over the agents it may delegate to.
    pub fn new(config: &Config, prime: &str) -> Result<Self, DelegationError> {
        crate::orchestrate::planner::RulePlanner::new(config, prime).map(Self)
    }

    /// Learns the router from the agents' examples now (it is otherwise
    /// learned on the first message).
    pub fn learn(&self) {
        self.0.router();
    }

    /// The specialists a message reaches, in the order the plan names them
    /// (empty: Prime answers or asks itself).
    pub fn route(&self, message: &str) -> Vec<String> {
        self.0.plan(message, &[]).agents().into_iter().map(|a| a.to_string()).collect()
    }
}

/// A one-page PDF that shows `n` four-digit strings, all on one line
/// (`across`) or each on a line of its own: a page of a given size, to time
/// [`pdf_text`] on (`cargo bench --bench overhead -- documents`; feature `cli`,
/// which reads documents).
#[cfg(feature = "cli")]
pub fn sample_pdf(n: usize, across: bool) -> Vec<u8> {
    use crate::team::finance::document::samples;
    samples::pdf_of(samples::shown_strings(n, 4, across))
}

/// The text the finance team reads from a PDF's bytes (its text layer, laid
/// out in lines and columns), stopping once the text passes `max_text`
/// bytes; the error says why a file gives no text (feature `cli`).
#[cfg(feature = "cli")]
pub fn pdf_text(bytes: &[u8], max_text: usize) -> Result<String, String> {
    crate::team::finance::document::to_text("sample.pdf", bytes, max_text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::protocol::{AgentSlug, DelegationRequest, Status, UserId};

    fn request(from: &str, to: &str) -> DelegationRequest {
        let slug = |s: &str| AgentSlug::parse(s).unwrap();
        DelegationRequest::new(slug(from), slug(to), UserId::parse("alice").unwrap(), "Do it", "the input")
    }

    #[tokio::test]
    async fn a_scripted_agent_replies_in_order_and_keeps_what_it_was_handed() {
        let worker = ScriptedAgent::new().reply(AgentOutput::new("one", "1")).reply(AgentOutput::new("two", "2"));
        let rt = builder(&[("boss", &["worker"], &[]), ("worker", &[], &[])])
            .agent("worker", worker.clone())
            .build()
            .unwrap();
        for want in ["1", "2"] {
            let r = rt.delegate(&Principal::Admin, request("boss", "worker")).await;
            assert_eq!((r.status, r.result.as_str()), (Status::Success, want), "{r:?}");
        }
        let r = rt.delegate(&Principal::Admin, request("boss", "worker")).await;
        assert_eq!(r.error.expect("spent").code, ErrorCode::AgentFailed);
        let seen = worker.received();
        assert!(seen.len() >= 3, "{seen:?}");
        assert_eq!(seen[0].task.input, "the input");
        assert_eq!(seen[0].depth, 1);
        let lineage = seen[0].lineage.as_ref().expect("in a runtime");
        assert_eq!(lineage.origin.as_str(), "boss");
        assert_eq!(lineage.agent.as_str(), "worker");
    }

    #[tokio::test]
    async fn a_scripted_model_replies_in_order_keeps_the_requests_and_says_when_it_is_spent() {
        let model = ScriptedModel::new()
            .text("first")
            .reply(ModelReply::Fail(DelegationError::new(ErrorCode::AgentUnavailable, "down")));
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let reply = model.complete(&body, Duration::from_secs(1)).await.unwrap();
        assert_eq!(reply["choices"][0]["message"]["content"], "first");
        assert_eq!(reply["model"], "m");
        assert_eq!(model.complete(&body, Duration::from_secs(1)).await.unwrap_err().code, ErrorCode::AgentUnavailable);
        assert_eq!(model.complete(&body, Duration::from_secs(1)).await.unwrap_err().code, ErrorCode::AgentFailed);
        assert_eq!(model.prompts(), ["user: hi", "user: hi", "user: hi"]);
        assert_eq!(model.left(), 0);
    }
}
