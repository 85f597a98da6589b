//! The response envelope, `DelegationResponse`, with the execution,
//! verifier, fallback and learning reports (docs/DESIGN.md#the-envelope).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::Verdict;
use super::error::{DelegationError, ErrorCode};
use super::ids::{AgentSlug, RequestId, SessionId};
use super::request::Reference;

/// What a target agent answered, or why it did not.
///
/// ```
/// use switchboard::protocol::{AgentSlug, DelegationResponse, ErrorCode, RequestId, Status};
/// use switchboard::DelegationError;
///
/// let refused = DelegationResponse::failed(
///     RequestId::new(),
///     AgentSlug::parse("tag-ai")?,
///     DelegationError::from_code(ErrorCode::DepthLimit),
/// );
/// assert_eq!(refused.status, Status::Failed);
/// assert!(!refused.is_success());
/// assert_eq!(refused.error_code(), Some(ErrorCode::DepthLimit));
/// # Ok::<(), switchboard::DelegationError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationResponse {
    /// Envelope version the response is written in, e.g. "1.0".
    #[serde(default = "current_version")]
    pub protocol_version: String,
    /// The id of the request this answers.
    pub request_id: RequestId,
    /// The agent that answered (the discovered one when the request said `auto`).
    pub target_employee: AgentSlug,
    /// Whether the delegation succeeded, partly succeeded or failed.
    pub status: Status,

    /// One to three sentences.
    #[serde(default)]
    pub summary: String,
    /// The full answer.
    #[serde(default)]
    pub result: String,
    /// Structured data produced alongside the text (tables, JSON, links, ids, files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,

    /// Facts the runtime should remember about the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_facts: Vec<NewFact>,
    /// Sources the agent consulted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_sources: Vec<UsedSource>,

    /// Tokens used by the delegation and its whole subtree, so a caller can reconcile its token budget.
    #[serde(default)]
    pub token_usage: TokenUsage,
    /// Milliseconds the delegation took, retries included.
    #[serde(default)]
    pub duration_ms: u64,
    /// The target's session that holds the exchange; None when none was created (an ephemeral consult, a refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<SessionId>,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// The agent needs more from the user before the task is done (e.g. a question, a goal falling behind).
    #[serde(default)]
    pub requires_followup: bool,

    /// Why the delegation failed; None on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DelegationError>,
    /// Attempts, seeds tried and time taken; None when the delegation was refused before running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    /// The verifier's verdict on the output; None when no checks applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<Verdict>,
    /// What to do instead after a final failure; None on success or when there is no advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// What the seeds taught the runtime; None unless a seeded agent passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<Learned>,
    /// The attempts that did not pass, oldest first, with what each lacked
    /// and the output that was rejected; empty when the first attempt passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptReport>,
}

/// One attempt that did not pass: what it tried, why it was rejected and
/// what it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptReport {
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The seed (variant) it used; None for an agent without seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Why it was rejected.
    pub error: DelegationError,
    /// The verifier's verdict on its output, when the output failed its checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The output that was rejected (at most [`AttemptReport::OUTPUT_CHARS`]
    /// characters); None when it produced none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl AttemptReport {
    /// How much of a rejected output is kept.
    pub const OUTPUT_CHARS: usize = 2000;

    /// What the attempt lacked, in a phrase: the failed checks with what was
    /// found (`max_120_words (actual: 134)`), or the error.
    pub fn lacked(&self) -> String {
        match &self.verdict {
            Some(v) if !v.passed => v
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| match &c.actual {
                    Some(Value::String(a)) => format!("{} (actual: {a})", c.name),
                    Some(a) => format!("{} (actual: {a})", c.name),
                    None => c.name.clone(),
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => format!("{}: {}", self.error.code, self.error.message),
        }
    }
}

fn current_version() -> String {
    super::version::CURRENT.to_string()
}

impl DelegationResponse {
    /// A failed response carrying `error`.
    pub fn failed(request_id: RequestId, target: AgentSlug, error: DelegationError) -> Self {
        Self {
            protocol_version: current_version(),
            request_id,
            target_employee: target,
            status: Status::Failed,
            summary: String::new(),
            result: String::new(),
            artifacts: Vec::new(),
            new_facts: Vec::new(),
            used_sources: Vec::new(),
            token_usage: TokenUsage::default(),
            duration_ms: 0,
            child_session_id: None,
            confidence: None,
            requires_followup: false,
            error: Some(error),
            execution: None,
            verifier: None,
            fallback: None,
            learned: None,
            attempts: Vec::new(),
        }
    }

    /// Whether the status is `success`.
    pub fn is_success(&self) -> bool {
        self.status == Status::Success
    }

    /// The error code, when the delegation did not succeed.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// The first artifact's value with the given label, if any.
    pub fn artifact(&self, label: &str) -> Option<&Value> {
        self.artifacts.iter().find(|a| a.label.as_deref() == Some(label)).map(|a| &a.value)
    }
}

/// How a delegation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// The agent answered in full.
    Success,
    /// Some branches of a parallel delegation failed; the others' results are kept.
    Partial,
    /// Nothing usable came back; `error` says why.
    Failed,
    /// The input did not hold what the task needs: `result` is the question
    /// for the user and `error` is `NEEDS_INPUT` with the same question. Not
    /// a failure of the agent.
    NeedsInput,
    /// Paused: the delegation (or one below it) waits for a person to
    /// approve an action; `error` is `NEEDS_APPROVAL` naming the approval.
    /// The tree resumes where it stopped once a person answers.
    NeedsApproval,
}

impl Status {
    /// The wire spelling: `success`, `partial`, `failed`, `needs_input` or `needs_approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Partial => "partial",
            Self::Failed => "failed",
            Self::NeedsInput => "needs_input",
            Self::NeedsApproval => "needs_approval",
        }
    }
}

/// Structured data produced by an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// What the value is (the JSON field `type`).
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// The data itself.
    pub value: Value,
    /// A name to find it by; None when unnamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Artifact {
    /// A JSON artifact with a label.
    pub fn json(label: impl Into<String>, value: Value) -> Self {
        Self { kind: ArtifactKind::Json, value, label: Some(label.into()) }
    }
}

/// The kind of an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ArtifactKind {
    /// Tabular data.
    Table,
    /// Any JSON value.
    Json,
    /// A link.
    Url,
    /// An identifier of a record.
    Id,
    /// A file reference.
    File,
}

/// A fact to remember about the user. On the wire either a plain string (scoped
/// to the answering agent) or `{"fact", "scope"}` with scope `global`,
/// `agent:<slug>` or `domain:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "NewFactWire")]
pub struct NewFact {
    /// The fact, in one sentence.
    pub fact: String,
    /// Where it applies: `global`, `agent:<slug>` or `domain:<name>`; None scopes it to the answering agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl NewFact {
    /// A fact scoped to the answering agent.
    pub fn new(fact: impl Into<String>) -> Self {
        Self { fact: fact.into(), scope: None }
    }

    /// A fact with an explicit scope.
    pub fn scoped(fact: impl Into<String>, scope: impl Into<String>) -> Self {
        Self { fact: fact.into(), scope: Some(scope.into()) }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NewFactWire {
    Plain(String),
    Scoped {
        fact: String,
        #[serde(default)]
        scope: Option<String>,
    },
}

impl From<NewFactWire> for NewFact {
    fn from(w: NewFactWire) -> Self {
        match w {
            NewFactWire::Plain(fact) => Self { fact, scope: None },
            NewFactWire::Scoped { fact, scope } => Self { fact, scope },
        }
    }
}

/// A source the agent consulted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsedSource {
    /// Which source it was.
    #[serde(flatten)]
    pub reference: Reference,
    /// How much the source mattered to the answer; None when not scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
}

/// Tokens used: prompt, completion and their sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens sent to the model.
    #[serde(default)]
    pub prompt: u32,
    /// Tokens the model produced.
    #[serde(default)]
    pub completion: u32,
    /// Prompt plus completion.
    #[serde(default)]
    pub total: u32,
}

impl TokenUsage {
    /// Usage with `total` computed as the sum.
    pub fn new(prompt: u32, completion: u32) -> Self {
        Self { prompt, completion, total: prompt.saturating_add(completion) }
    }

    /// Adds another usage to this one, saturating.
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt = self.prompt.saturating_add(other.prompt);
        self.completion = self.completion.saturating_add(other.completion);
        self.total = self.total.saturating_add(other.total);
    }
}

/// How the runtime executed the delegation (`execution`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    /// Attempts made, the first included.
    pub attempts: u32,
    /// The seeds (variants) tried, in order; empty for an agent without seeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds_tried: Vec<u64>,
    /// Milliseconds the delegation took, retries included.
    pub duration_ms: u64,
}

/// What the caller should do after a final failure (`fallback`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// `handle_directly`, `clarify_task_note`, `retry_later`, `use_partial_result`,
    /// `ask_user` (the question is in `error.message`).
    pub recommended: String,
    /// Why, in a sentence the caller can act on.
    pub reasoning: String,
}

/// What the runtime learned from this delegation (`learned`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    /// The seed that passed had no score for this kind of task before.
    pub new_seed: bool,
    /// The passing seed's score was raised for this kind of task.
    pub seed_promoted: bool,
    /// The verifier's score for the passing output, 0.0 to 1.0 (1.0 without checks).
    pub confidence: f64,
}
