//! What an agent is: one async method from a task (and its context) to an
//! output. The backends here (`llm`, `http`, `a2a`, `command`) and the
//! built-in team implement [`Agent`]; the pipeline wraps every call in the
//! rails. An agent delegates through its [`Delegator`], whose calls go to a
//! [`Dispatch`] (the pipeline): nothing here knows the runtime.

#[cfg(feature = "a2a")]
pub mod a2a;
pub mod command;
mod delegator;
#[cfg(feature = "remote")]
pub mod http;
#[cfg(feature = "llm")]
pub mod llm;
#[cfg(feature = "mcp")]
pub mod mcp;
mod model;
pub mod money;
mod off_thread;
#[cfg(feature = "queue")]
pub mod queue;
pub mod reads;
pub mod tokens;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::config::ToolSet;
pub use delegator::{Call, Delegator, Dispatch, Lineage, Scope};
pub use model::ChatModel;
pub use money::{Money, MoneyView, NewEntry, Written};
pub use off_thread::OffThread;
pub use reads::{MoneyCall, Reads, StepReads, Tape};

use crate::protocol::{
    AgentSlug, Artifact, DelegationError, ErrorCode, HandoffData, NewFact, RequestId, Status, TokenUsage, UsedSource,
    UserId,
};

/// The work handed to an agent: the (redacted) request plus the context the
/// runtime assembled for it.
#[derive(Debug, Clone, Default)]
pub struct Task {
    /// The delegation's id; None when the task is run outside a runtime.
    pub request_id: Option<RequestId>,
    /// The agent the task is for; None outside a runtime.
    pub agent: Option<AgentSlug>,
    /// The user the task is done for; None outside a runtime.
    pub user_id: Option<UserId>,
    /// What the agent is asked to do, in one sentence.
    pub objective: String,
    /// The material to work on; PII is replaced by tokens such as `<EMAIL_1>` unless the agent is trusted with it.
    pub input: String,
    /// Hints from the caller (the request's `context_hints`).
    pub context_hints: Vec<String>,
    /// Facts, references and earlier results handed over by the caller.
    pub handoff: HandoffData,
    /// The request's Task Note, if it had one.
    pub task_note: Option<String>,
    /// Memory facts: global, the agent's own and its domain's.
    pub facts: Vec<String>,
    /// The last messages of the agent's session with this user, oldest first.
    pub history: Vec<HistoryMessage>,
    /// The variant a seeded agent should use (docs/DESIGN.md#retries-seeds-and-verification).
    pub seed: Option<u64>,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// What the earlier attempts of this task lacked, oldest first (`output
    /// failed checks: max_120_words (actual: 134)`); empty on the first
    /// attempt. A retry should change its approach accordingly.
    pub rejected: Vec<String>,
    /// How many completion tokens this attempt may produce.
    pub max_completion_tokens: u32,
}

impl Task {
    /// A task with just an objective and an input; handy for tests and direct use.
    pub fn new(objective: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            objective: objective.into(),
            input: input.into(),
            attempt: 1,
            max_completion_tokens: 1024,
            ..Self::default()
        }
    }

    /// The text an agent should work on: the input, or the objective when the input is empty.
    pub fn text(&self) -> &str {
        if self.input.trim().is_empty() { &self.objective } else { &self.input }
    }

    /// The request as one text: the objective, then the input unless the
    /// input repeats it (a message passed whole, objective first sentence
    /// and all).
    pub fn request_text(&self) -> String {
        request_text(&self.objective, &self.input)
    }

    /// What a stateless agent reads: [`Task::request_text`] after the
    /// earlier messages it answers.
    pub fn conversation_text(&self) -> String {
        self.with_earlier_asks(&self.request_text())
    }

    /// The user's earlier messages that this one answers, oldest first:
    /// walking back from the newest, each user message the agent answered
    /// with a question. Empty when the last answer was not a question. A
    /// stateless agent reads them with the new message (see
    /// [`Task::with_earlier_asks`]).
    pub fn answering(&self) -> Vec<&str> {
        let mut earlier = Vec::new();
        let mut rest = self.history.as_slice();
        while let [init @ .., user, answer] = rest {
            if user.role != "user" || answer.role != "assistant" || !answer.asked {
                break;
            }
            earlier.push(user.content.as_str());
            rest = init;
        }
        earlier.reverse();
        earlier
    }

    /// `text` after the earlier messages it answers (one per line), or
    /// `text` alone when it answers none. An earlier message `text` already
    /// holds (a caller that combined them first) is not repeated.
    pub fn with_earlier_asks(&self, text: &str) -> String {
        let mut all: Vec<&str> = self.answering().into_iter().filter(|m| !text.contains(m.trim())).collect();
        all.push(text);
        all.join("\n")
    }

    /// The previous delegates' results (a chain's earlier steps), if any.
    pub fn intermediate_results(&self) -> Option<&serde_json::Value> {
        self.handoff.intermediate_results.as_ref()
    }
}

/// A request's objective, then its input unless the input repeats it (a
/// message passed whole, objective first sentence and all): the request as
/// the agent reads it, and as its session keeps it.
pub fn request_text(objective: &str, input: &str) -> String {
    let (objective, input) = (objective.trim(), input.trim());
    if input.is_empty() || objective.is_empty() {
        format!("{objective}{input}")
    } else if input.contains(objective) {
        input.to_string()
    } else {
        format!("{objective}\n{input}")
    }
}

/// One earlier message of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryMessage {
    /// Who wrote it: `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
    /// The agent answered with a question (status `needs_input`): the
    /// user's next message may be the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asked: bool,
}

/// What an agent produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOutput {
    /// One to three sentences.
    pub summary: String,
    /// The full answer.
    pub result: String,
    /// Structured data produced alongside the text.
    pub artifacts: Vec<Artifact>,
    /// Facts the runtime should remember about the user.
    pub new_facts: Vec<NewFact>,
    /// Sources the agent consulted.
    pub used_sources: Vec<UsedSource>,
    /// Reported usage; when None the runtime counts the prompt and the result.
    pub token_usage: Option<TokenUsage>,
    /// 0 to 100.
    pub confidence: Option<u8>,
    /// The agent needs more from the user before the task is done.
    pub requires_followup: bool,
    /// Set by orchestrating agents when only some of their delegates succeeded.
    pub status: Option<Status>,
}

impl AgentOutput {
    /// An output with a summary and a full answer, and nothing else.
    pub fn new(summary: impl Into<String>, result: impl Into<String>) -> Self {
        Self { summary: summary.into(), result: result.into(), ..Self::default() }
    }

    /// Adds an artifact.
    pub fn with_artifact(mut self, artifact: Artifact) -> Self {
        self.artifacts.push(artifact);
        self
    }

    /// Adds a fact to remember.
    pub fn with_fact(mut self, fact: NewFact) -> Self {
        self.new_facts.push(fact);
        self
    }

    /// Sets the confidence, capped at 100.
    pub fn with_confidence(mut self, confidence: u8) -> Self {
        self.confidence = Some(confidence.min(100));
        self
    }
}

/// The tokens a call is expected to use, checked against the budget before dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEstimate {
    /// Tokens of the prompt.
    pub prompt: u32,
    /// Tokens the completion is expected to take.
    pub completion: u32,
}

impl TokenEstimate {
    /// Prompt plus completion, saturating.
    pub fn total(&self) -> u32 {
        self.prompt.saturating_add(self.completion)
    }
}

/// One team member: given a task, it answers, or delegates further
/// through its context and merges what comes back.
///
/// ```
/// use async_trait::async_trait;
/// use switchboard::{Agent, AgentContext, AgentOutput, DelegationError, Task};
///
/// /// Answers with the number of words it was given.
/// struct Counter;
///
/// #[async_trait]
/// impl Agent for Counter {
///     async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
///         let words = task.text().split_whitespace().count();
///         if words == 0 {
///             return Err(DelegationError::invalid("nothing to count: send some text"));
///         }
///         Ok(AgentOutput::new(format!("{words} words"), words.to_string()))
///     }
/// }
/// ```
///
/// A runtime runs it behind every rail: see the crate's front page, or
/// [`crate::testing`] (feature `test-util`) to test it the way ours are.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// Does the work. Nested delegations go through `ctx.delegator()`; tools are
    /// used only after `ctx.use_tool(name)` allows them.
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError>;

    /// The tokens this task is expected to use. The default counts the prompt
    /// with the approximate counter and expects a modest completion
    /// ([`tokens::EXPECTED_COMPLETION`]); model backends override it with a real
    /// tokenizer and their `max_tokens`.
    fn estimate_tokens(&self, task: &Task) -> TokenEstimate {
        TokenEstimate { prompt: tokens::task_prompt_tokens(task), completion: tokens::EXPECTED_COMPLETION }
    }

    /// The seeds of a seeded agent's variants, in default order.
    /// Empty for agents that are not seeded.
    fn seeds(&self) -> &[u64] {
        &[]
    }

    /// Attempts this agent should get when the configuration does not say.
    /// Orchestrators answer 1: a retry would re-run a whole plan whose
    /// delegates retry on their own.
    fn default_attempts(&self) -> Option<u32> {
        None
    }

    /// Whether the same task always gets the same answer (a parser, a
    /// calculation). Such an agent is retried only with a changed approach
    /// (its next seed, more time), never with the same task again.
    fn deterministic(&self) -> bool {
        false
    }
}

/// What an agent may do while it runs: delegate (through the runtime only),
/// use tools from its effective set, notice cancellation and its deadline.
#[derive(Clone)]
pub struct AgentContext {
    delegator: Option<Delegator>,
    tools: Arc<ToolSet>,
    cancel: CancellationToken,
    deadline: Instant,
    depth: u32,
    money: Option<Money>,
    /// The tree's clock reading (epoch ms), when the runtime pinned one.
    clock_ms: Option<i64>,
    /// The tree's PII vault, when the runtime runs this agent in a tree.
    vault: Option<crate::rails::SharedVault>,
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext").finish_non_exhaustive()
    }
}

impl AgentContext {
    pub(crate) fn new(
        delegator: Option<Delegator>,
        tools: Arc<ToolSet>,
        cancel: CancellationToken,
        deadline: Instant,
        depth: u32,
    ) -> Self {
        Self { delegator, tools, cancel, deadline, depth, money: None, clock_ms: None, vault: None }
    }

    /// This context with its tree's PII vault (see [`AgentContext::redact`]).
    pub(crate) fn with_vault(mut self, vault: crate::rails::SharedVault) -> Self {
        self.vault = Some(vault);
        self
    }

    /// `text` as a model may see it: each PII value (an email, a phone
    /// number …) replaced by its tree's token, `<EMAIL_1>`, the same token
    /// the tree uses everywhere, so the real value comes back to the user at
    /// the edge like any other. For what an agent brings in from outside the
    /// tree (an MCP tool's result) before a model reads it. Outside a
    /// runtime the tokens go to a throwaway vault: nothing restores them.
    pub fn redact(&self, text: &str) -> String {
        self.in_vault(|vault| crate::redact::Redactor::new().redact(text, vault))
    }

    /// Every string in `value`, redacted as [`AgentContext::redact`] does.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        self.in_vault(|vault| crate::redact::Redactor::new().redact_json(value, vault));
    }

    fn in_vault<T>(&self, f: impl FnOnce(&mut crate::redact::Vault) -> T) -> T {
        match &self.vault {
            Some(v) => f(&mut crate::util::lock(v)),
            None => f(&mut crate::redact::Vault::default()),
        }
    }

    /// This context with its tree's clock reading (epoch ms).
    pub(crate) fn with_clock(mut self, epoch_ms: Option<i64>) -> Self {
        self.clock_ms = epoch_ms;
        self
    }

    /// What "now" is for this task: when its tree started (a tree resumed
    /// after a restart, or replayed, keeps the time it started at), or the
    /// wall clock outside a runtime. Agents that read "last month" or "this
    /// year" count from it, so a replay answers as the original did.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock_ms.and_then(chrono::DateTime::from_timestamp_millis).unwrap_or_else(chrono::Utc::now)
    }

    /// The local date of [`AgentContext::now`].
    pub fn today(&self) -> chrono::NaiveDate {
        self.now().with_timezone(&chrono::Local).date_naive()
    }

    /// This context with the money records of the user it runs for.
    pub fn with_money(mut self, money: Money) -> Self {
        self.money = Some(money);
        self
    }

    /// A context outside any runtime (no delegation), with the given tools.
    /// For running an agent on its own, as unit tests do.
    pub fn detached<I, S>(tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            delegator: None,
            tools: Arc::new(tools.into_iter().map(Into::into).collect()),
            cancel: CancellationToken::new(),
            deadline: Instant::now() + Duration::from_secs(3600),
            depth: 0,
            money: None,
            clock_ms: None,
            vault: None,
        }
    }

    /// The handle through which this agent delegates. Every call through it
    /// carries this agent's lineage, so the rails apply without effort.
    pub fn delegator(&self) -> Result<&Delegator, DelegationError> {
        self.delegator.as_ref().ok_or_else(|| {
            DelegationError::new(
                ErrorCode::DelegationNotAllowed,
                "this agent runs outside a runtime and cannot delegate",
            )
        })
    }

    /// Allows the use of `tool` if it is in the effective tools, else `TOOL_NOT_ALLOWED`.
    pub fn use_tool(&self, tool: &str) -> Result<(), DelegationError> {
        if self.tools.contains(tool) {
            Ok(())
        } else {
            Err(DelegationError::new(
                ErrorCode::ToolNotAllowed,
                format!(
                    "tool '{tool}' is not in this agent's effective tools {:?}; do the work without it",
                    self.tools
                ),
            ))
        }
    }

    /// Waits for nobody: asks whether a person approved `action` (a tool
    /// with a side effect, `send_email`), when this agent's config lists it
    /// under `requires_approval`. Call it right before the side effect and
    /// return its error as is: `NEEDS_APPROVAL` pauses the delegation (and
    /// its tree) until a person answers; on resume the agent runs again and
    /// this returns Ok, or `APPROVAL_REJECTED` if they said no. `summary`
    /// says what would be done. Outside a runtime there is no one to ask: Ok.
    pub async fn approve(&self, action: &str, summary: &str) -> Result<(), DelegationError> {
        match &self.delegator {
            Some(d) => d.approval(action, summary).await,
            None => Ok(()),
        }
    }

    /// Whether `tool` is in the effective tools (to choose a way of working
    /// without being refused; [`AgentContext::use_tool`] is the rail).
    pub fn has_tool(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// Whether this delegation has the user's money records (not a consult, not outside a runtime).
    pub fn has_money(&self) -> bool {
        self.money.is_some()
    }

    /// Whether this delegation may read the user's money records: it has one and the tool `money.read`.
    pub fn can_read_money(&self) -> bool {
        self.money.is_some() && self.has_tool(money::READ)
    }

    /// Whether this delegation may write the user's money records: it has one and the tool `money.write`.
    pub fn can_write_money(&self) -> bool {
        self.money.is_some() && self.has_tool(money::WRITE)
    }

    fn money_for(&self, tool: &str) -> Result<&Money, DelegationError> {
        self.use_tool(tool)?;
        self.money.as_ref().ok_or_else(money::no_money)
    }

    /// The user's transactions, goals and debts (tool `money.read`).
    pub async fn read_money(&self) -> Result<MoneyView, DelegationError> {
        self.money_for(money::READ)?.read().await
    }

    /// Keeps transactions found in `source` in the user's money records (tool
    /// `money.write`); ones it already has are reported, not added twice.
    pub async fn write_money(&self, found: &[NewEntry], source: &str) -> Result<Written, DelegationError> {
        self.money_for(money::WRITE)?.write(found, source).await
    }

    /// Sets the category and/or note of the user's entry `id` (tool
    /// `money.write`); false when the user has no such entry.
    pub async fn correct_money(
        &self,
        id: &str,
        category: Option<&str>,
        note: Option<&str>,
    ) -> Result<bool, DelegationError> {
        self.money_for(money::WRITE)?.update(id, category, note).await
    }

    /// Keeps a goal or debt (`kind`) of the user under `name` (tool `money.write`).
    pub async fn save_plan(&self, kind: &str, name: &str, body: serde_json::Value) -> Result<(), DelegationError> {
        self.money_for(money::WRITE)?.put_plan(kind, name, body).await
    }

    /// The tools this agent may use in this delegation.
    pub fn effective_tools(&self) -> &ToolSet {
        &self.tools
    }

    /// Cancelled when the delegation's deadline passes or its caller cancels.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// When this delegation's time is up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The depth this agent runs at (Prime answering a user runs at 0).
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(role: &str, content: &str, asked: bool) -> HistoryMessage {
        HistoryMessage { role: role.into(), content: content.into(), asked }
    }

    #[test]
    fn a_message_answers_the_questions_asked_just_before_it() {
        let mut task = Task::new("The card is 19.99%", "");
        assert!(task.answering().is_empty());
        task.history = vec![
            said("user", "What is APR?", false),
            said("assistant", "APR is ...", false),
            said("user", "I owe 2500 on a card", false),
            said("assistant", "What is its rate?", true),
            said("user", "it's a Visa", false),
            said("assistant", "And its rate?", true),
        ];
        assert_eq!(task.answering(), ["I owe 2500 on a card", "it's a Visa"], "back to the last plain answer");
        assert_eq!(task.conversation_text(), "I owe 2500 on a card\nit's a Visa\nThe card is 19.99%");
        // a caller that combined them already is not repeated
        assert_eq!(
            task.with_earlier_asks("I owe 2500 on a card\nit's a Visa\nx"),
            "I owe 2500 on a card\nit's a Visa\nx"
        );
        task.history.push(said("user", "thanks", false));
        task.history.push(said("assistant", "You're welcome", false));
        assert!(task.answering().is_empty(), "the last answer was not a question");
    }

    #[test]
    fn the_request_text_holds_a_repeated_objective_once() {
        assert_eq!(Task::new("Plan it", "").request_text(), "Plan it");
        assert_eq!(
            Task::new("I owe 9000", "I owe 9000. And 2500 on a card").request_text(),
            "I owe 9000. And 2500 on a card"
        );
        assert_eq!(Task::new("Plan debt payoff", "I owe 9000").request_text(), "Plan debt payoff\nI owe 9000");
        assert_eq!(Task::new("", "I owe 9000").request_text(), "I owe 9000");
    }
}
