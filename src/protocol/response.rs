//! The response envelope: seeds/000's `DelegationResponse` with seeds/001's
//! execution, verifier, fallback and learning reports.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::Verdict;
use super::error::{DelegationError, ErrorCode};
use super::ids::{AgentSlug, RequestId, SessionId};
use super::request::Reference;

/// What a target agent answered, or why it did not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationResponse {
    #[serde(default = "current_version")]
    pub protocol_version: String,
    pub request_id: RequestId,
    pub target_employee: AgentSlug,
    pub status: Status,

    /// One to three sentences.
    #[serde(default)]
    pub summary: String,
    /// The full answer.
    #[serde(default)]
    pub result: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_facts: Vec<NewFact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_sources: Vec<UsedSource>,

    #[serde(default)]
    pub token_usage: TokenUsage,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<SessionId>,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    #[serde(default)]
    pub requires_followup: bool,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DelegationError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<Learned>,
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
        }
    }

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    Success,
    /// Some branches of a parallel delegation failed; the others' results are kept.
    Partial,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }
}

/// Structured data produced by an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Artifact {
    pub fn json(label: impl Into<String>, value: Value) -> Self {
        Self { kind: ArtifactKind::Json, value, label: Some(label.into()) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ArtifactKind {
    Table,
    Json,
    Url,
    Id,
    File,
}

/// A fact to remember about the user. On the wire either a plain string (scoped
/// to the answering agent) or `{"fact", "scope"}` with scope `global`,
/// `agent:<slug>` or `domain:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "NewFactWire")]
pub struct NewFact {
    pub fact: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl NewFact {
    pub fn new(fact: impl Into<String>) -> Self {
        Self { fact: fact.into(), scope: None }
    }

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
    #[serde(flatten)]
    pub reference: Reference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    #[serde(default)]
    pub prompt: u32,
    #[serde(default)]
    pub completion: u32,
    #[serde(default)]
    pub total: u32,
}

impl TokenUsage {
    pub fn new(prompt: u32, completion: u32) -> Self {
        Self { prompt, completion, total: prompt.saturating_add(completion) }
    }

    pub fn add(&mut self, other: TokenUsage) {
        self.prompt = self.prompt.saturating_add(other.prompt);
        self.completion = self.completion.saturating_add(other.completion);
        self.total = self.total.saturating_add(other.total);
    }
}

/// How the runtime executed the delegation (seeds/001 `execution`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds_tried: Vec<u64>,
    pub duration_ms: u64,
}

/// What the caller should do after a final failure (seeds/001 `fallback`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// `handle_directly`, `clarify_task_note`, `retry_later`, `use_partial_result`.
    pub recommended: String,
    pub reasoning: String,
}

/// What the runtime learned from this delegation (seeds/001 `learned`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    pub new_seed: bool,
    pub seed_promoted: bool,
    pub confidence: f64,
}
