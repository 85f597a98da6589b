//! The one list of stable error codes (docs/DESIGN.md#errors). Each code knows its HTTP
//! status and a default message that tells the caller what to do next.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code. Serialized in SCREAMING_SNAKE_CASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The envelope is malformed: bad JSON, a wrong type, a missing or unknown field (400).
    InvalidRequest,
    /// The envelope's protocol version is not one this runtime speaks (400).
    UnsupportedVersion,
    /// No valid service token or credential (401).
    Unauthenticated,
    /// The user may not use that agent (403).
    PermissionDenied,
    /// The request names a session of another user (403).
    UserMismatch,
    /// The origin agent may not delegate to the target (`may_delegate_to`) (403).
    DelegationNotAllowed,
    /// A tool outside the agent's effective tools was asked for (403).
    ToolNotAllowed,
    /// No agent has that slug, or discovery found none (404).
    AgentNotFound,
    /// The target would run at or beyond `max_depth` (422).
    DepthLimit,
    /// More targets in a batch, or children in flight, than the fan-out limit (422).
    FanOutLimit,
    /// The same delegation is already in progress in this tree (409).
    CycleDetected,
    /// The call's estimate does not fit the remaining token budget (422).
    TokenBudgetExceeded,
    /// The deadline passed, or too little of it was left to send the call (504).
    DeadlineExceeded,
    /// The agent's breaker is open or its backend is down (503).
    AgentUnavailable,
    /// The output failed its checks on every seed tried (502).
    VerificationFailed,
    /// The agent failed in some other way (502).
    AgentFailed,
    /// The caller cancelled the delegation (499).
    Cancelled,
    /// The input does not hold what the task needs; the message is the
    /// question to ask the user (422). The caller's to answer: never retried,
    /// never counted against the agent's breaker.
    NeedsInput,
    /// The lineage token is not a valid lineage: malformed, too large, a hop
    /// that widens its parent's rails, a broken root, or addressed to another
    /// runtime (403). docs/LINEAGE.md.
    LineageInvalid,
    /// The envelope or a header disagrees with the verified lineage token;
    /// the message names the first field that does (403). docs/LINEAGE.md.
    LineageMismatch,
    /// The delegation waits for a person to approve an action
    /// (`requires_approval`); the message names the approval. Never
    /// retried, never counted against the agent's breaker (422; the
    /// HTTP surfaces answer a paused tree with 202 and its response).
    NeedsApproval,
    /// A person rejected the action the delegation waited on (403).
    ApprovalRejected,
    /// No approval, tree or task has that id (404).
    NotFound,
    /// The approval was decided already, or the tree has ended (409).
    AlreadyDecided,
    /// The tree's records are incomplete for what was asked (a replay of a
    /// tree recorded without its journal) (422).
    RecordIncomplete,
    /// This replica's lease ran out while the tree ran here (a pause, a cut
    /// from the store) and another replica took the tree over: its end is
    /// that replica's, and nothing more of it is written here (409).
    TakenOver,
    /// The request id (or the tree it names) belongs to another caller's or
    /// another user's delegation: ids are their makers', and nothing of
    /// theirs was changed (409).
    IdConflict,
}

/// How a failure should be treated by the retry loop (docs/DESIGN.md#retries-seeds-and-verification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// Refused by a rail or by the caller's input: never retried.
    Refusal,
    /// The output failed its checks: retry with the next seed.
    Verification,
    /// The attempt ran out of time: retry with the same seed and a longer timeout.
    Timeout,
    /// The agent or its backend is down: wait, then retry.
    Unavailable,
    /// The agent failed in some other way: retry.
    Failure,
    /// The caller went away: stop.
    Cancelled,
    /// The input lacks what the task needs: ask the user, never retry.
    NeedsInput,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 27] = [
        Self::InvalidRequest,
        Self::UnsupportedVersion,
        Self::Unauthenticated,
        Self::PermissionDenied,
        Self::UserMismatch,
        Self::DelegationNotAllowed,
        Self::ToolNotAllowed,
        Self::AgentNotFound,
        Self::DepthLimit,
        Self::FanOutLimit,
        Self::CycleDetected,
        Self::TokenBudgetExceeded,
        Self::DeadlineExceeded,
        Self::AgentUnavailable,
        Self::VerificationFailed,
        Self::AgentFailed,
        Self::Cancelled,
        Self::NeedsInput,
        Self::LineageInvalid,
        Self::LineageMismatch,
        Self::NeedsApproval,
        Self::ApprovalRejected,
        Self::NotFound,
        Self::AlreadyDecided,
        Self::RecordIncomplete,
        Self::TakenOver,
        Self::IdConflict,
    ];

    /// The wire spelling, e.g. `DEPTH_LIMIT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::UserMismatch => "USER_MISMATCH",
            Self::DelegationNotAllowed => "DELEGATION_NOT_ALLOWED",
            Self::ToolNotAllowed => "TOOL_NOT_ALLOWED",
            Self::AgentNotFound => "AGENT_NOT_FOUND",
            Self::DepthLimit => "DEPTH_LIMIT",
            Self::FanOutLimit => "FAN_OUT_LIMIT",
            Self::CycleDetected => "CYCLE_DETECTED",
            Self::TokenBudgetExceeded => "TOKEN_BUDGET_EXCEEDED",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::AgentUnavailable => "AGENT_UNAVAILABLE",
            Self::VerificationFailed => "VERIFICATION_FAILED",
            Self::AgentFailed => "AGENT_FAILED",
            Self::Cancelled => "CANCELLED",
            Self::NeedsInput => "NEEDS_INPUT",
            Self::LineageInvalid => "LINEAGE_INVALID",
            Self::LineageMismatch => "LINEAGE_MISMATCH",
            Self::NeedsApproval => "NEEDS_APPROVAL",
            Self::ApprovalRejected => "APPROVAL_REJECTED",
            Self::NotFound => "NOT_FOUND",
            Self::AlreadyDecided => "ALREADY_DECIDED",
            Self::RecordIncomplete => "RECORD_INCOMPLETE",
            Self::TakenOver => "TAKEN_OVER",
            Self::IdConflict => "ID_CONFLICT",
        }
    }

    /// The HTTP status this code is answered with at the service edge.
    pub fn http_status(self) -> u16 {
        match self {
            Self::InvalidRequest | Self::UnsupportedVersion => 400,
            Self::Unauthenticated => 401,
            Self::PermissionDenied
            | Self::UserMismatch
            | Self::DelegationNotAllowed
            | Self::ToolNotAllowed
            | Self::LineageInvalid
            | Self::LineageMismatch
            | Self::ApprovalRejected => 403,
            Self::AgentNotFound | Self::NotFound => 404,
            Self::CycleDetected | Self::AlreadyDecided | Self::TakenOver | Self::IdConflict => 409,
            Self::DepthLimit
            | Self::FanOutLimit
            | Self::TokenBudgetExceeded
            | Self::NeedsInput
            | Self::NeedsApproval
            | Self::RecordIncomplete => 422,
            // 499: the caller closed the request (nginx's convention).
            Self::Cancelled => 499,
            Self::AgentFailed | Self::VerificationFailed => 502,
            Self::AgentUnavailable => 503,
            Self::DeadlineExceeded => 504,
        }
    }

    /// What the caller should do about it; used when no specific message is given.
    pub fn hint(self) -> &'static str {
        match self {
            Self::InvalidRequest => "The request is malformed: fix the named field and send it again.",
            Self::UnsupportedVersion => "Send protocol_version \"1.0\".",
            Self::Unauthenticated => {
                "Send 'Authorization: Bearer <service token>' for the agent named in origin_employee."
            }
            Self::PermissionDenied => "This user may not use that agent; ask an administrator to grant access.",
            Self::UserMismatch => "The session belongs to another user; use one of your own sessions or none.",
            Self::DelegationNotAllowed => {
                "The origin agent may not delegate to that target; add it to may_delegate_to or pick another agent."
            }
            Self::ToolNotAllowed => "That tool is not in the agent's effective tools; do the work without it.",
            Self::AgentNotFound => "No agent has that slug; list agents with `switchboard agents`.",
            Self::DepthLimit => "Delegation depth limit reached. Return results to parent.",
            Self::FanOutLimit => "Too many concurrent delegates. Choose the 3 most relevant agents.",
            Self::CycleDetected => "The same delegation is already in progress in this tree; return results instead.",
            Self::TokenBudgetExceeded => "Simplify the task or increase the budget.",
            Self::DeadlineExceeded => "Delegation timed out; retry with a longer deadline or a smaller task.",
            Self::AgentUnavailable => "The agent is unavailable (circuit open or backend down); retry later.",
            Self::VerificationFailed => {
                "The output failed its checks; clarify the Task Note constraints or handle the task directly."
            }
            Self::AgentFailed => "The agent failed; see the message, then retry or handle the task directly.",
            Self::Cancelled => "The delegation was cancelled by its caller.",
            Self::NeedsInput => {
                "The task needs more from the user: ask them the question in the message, then delegate again with the answer."
            }
            Self::LineageInvalid => {
                "The lineage token is not valid (see the message); send the token your own caller gave you, attenuated, never a widened one."
            }
            Self::LineageMismatch => {
                "The envelope disagrees with its lineage token in the named field; send the values the token states."
            }
            Self::NeedsApproval => {
                "A person must approve an action first: `switchboard approve ID` (or POST /v1/approvals/ID); the tree resumes then."
            }
            Self::ApprovalRejected => "A person rejected the action; the delegation ended without doing it.",
            Self::NotFound => "Nothing has that id; list them with `switchboard approvals` or `switchboard trees`.",
            Self::AlreadyDecided => "That was decided already (or its tree has ended); nothing was changed.",
            Self::RecordIncomplete => {
                "The tree's records lack what this needs (it ran before the journal was kept, or a step is missing)."
            }
            Self::TakenOver => {
                "Another replica took this tree over while this one was cut off from the store; its answer is that replica's: read GET /v1/trees/{root_id}."
            }
            Self::IdConflict => {
                "That request id is another caller's delegation; send a new request_id (an idempotency_key is how to repeat one of your own)."
            }
        }
    }

    /// How the retry loop treats this code.
    pub fn class(self) -> ErrorClass {
        match self {
            Self::VerificationFailed => ErrorClass::Verification,
            Self::DeadlineExceeded => ErrorClass::Timeout,
            Self::AgentUnavailable => ErrorClass::Unavailable,
            Self::AgentFailed => ErrorClass::Failure,
            Self::Cancelled => ErrorClass::Cancelled,
            Self::NeedsInput | Self::NeedsApproval => ErrorClass::NeedsInput,
            // a person said no, or another replica runs the tree now: stop, as when the caller goes away
            Self::ApprovalRejected | Self::TakenOver => ErrorClass::Cancelled,
            _ => ErrorClass::Refusal,
        }
    }

    /// Whose failure it is: the caller's (bad or insufficient input, refused
    /// by a rail, cancelled) or the agent's (a crash, a timeout, output that
    /// fails its checks, a backend down). Only the agent's are retried and
    /// count toward its breaker.
    pub fn is_agents_fault(self) -> bool {
        !matches!(self.class(), ErrorClass::Refusal | ErrorClass::Cancelled | ErrorClass::NeedsInput)
    }

    /// Refused before the agent ran (validation, authorization, a rail).
    pub fn is_refusal(self) -> bool {
        self.class() == ErrorClass::Refusal
    }

    /// The code with this wire spelling (`DEPTH_LIMIT`), if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with its code and a message meant for the caller.
///
/// ```
/// use switchboard::{DelegationError, ErrorCode};
///
/// let err = DelegationError::new(ErrorCode::TokenBudgetExceeded, "the estimate (2400) is over the budget left (800)");
/// assert_eq!(err.to_string(), "TOKEN_BUDGET_EXCEEDED: the estimate (2400) is over the budget left (800)");
/// assert_eq!(err.code.http_status(), 422);
/// assert!(err.code.is_refusal(), "a rail said no: the agent did not fail");
/// // on the wire: {"code": "TOKEN_BUDGET_EXCEEDED", "message": "..."}
/// let wire = serde_json::to_value(&err).unwrap();
/// assert_eq!(wire["code"], "TOKEN_BUDGET_EXCEEDED");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct DelegationError {
    /// The stable code.
    pub code: ErrorCode,
    /// What happened and what to do next, meant for the caller.
    pub message: String,
    /// How long the failing service asked us to wait (`Retry-After`); the
    /// retry policy waits at least this long. Not part of the wire format.
    #[serde(skip)]
    pub retry_after: Option<std::time::Duration>,
    /// Tokens the failing attempt had already used (a model call that was
    /// answered before the attempt failed): charged to the budget and
    /// recorded like a success's. Not part of the wire format.
    #[serde(skip)]
    pub spent: Option<super::TokenUsage>,
}

impl DelegationError {
    /// An error with a code and a specific message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retry_after: None, spent: None }
    }

    /// This error, with the tokens the failing attempt had already used.
    pub fn spent(mut self, usage: super::TokenUsage) -> Self {
        self.spent = Some(usage);
        self
    }

    /// This error, asking for a wait of at least `after` before a retry.
    pub fn retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The code with its default, actionable message.
    pub fn from_code(code: ErrorCode) -> Self {
        Self::new(code, code.hint())
    }

    /// An `INVALID_REQUEST` error with this message.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }
}

impl From<super::ids::IdError> for DelegationError {
    /// A malformed id is an invalid request; the message says what a valid one looks like.
    fn from(e: super::ids::IdError) -> Self {
        Self::invalid(e.0)
    }
}

impl From<ErrorCode> for DelegationError {
    fn from(code: ErrorCode) -> Self {
        Self::from_code(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_has_a_status_and_hint() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            let status = code.http_status();
            assert!((400..600).contains(&status), "{code} -> {status}");
            assert!(code.hint().len() > 20, "{code} hint too short");
        }
    }

    #[test]
    fn refusals_are_client_errors_and_failures_are_server_side() {
        for code in ErrorCode::ALL {
            if code.is_refusal() {
                assert!(code.http_status() < 500, "{code}");
            }
        }
        assert_eq!(ErrorCode::DeadlineExceeded.http_status(), 504);
        // the caller's missing input is neither a refusal by a rail nor the agent's fault
        assert!(!ErrorCode::NeedsInput.is_refusal() && !ErrorCode::NeedsInput.is_agents_fault());
        assert_eq!(ErrorCode::NeedsInput.http_status(), 422);
        for code in [ErrorCode::AgentFailed, ErrorCode::DeadlineExceeded, ErrorCode::VerificationFailed] {
            assert!(code.is_agents_fault(), "{code}");
        }
        for code in [ErrorCode::InvalidRequest, ErrorCode::DepthLimit, ErrorCode::Cancelled] {
            assert!(!code.is_agents_fault(), "{code}");
        }
        assert_eq!(ErrorCode::AgentUnavailable.http_status(), 503);
        assert_eq!(ErrorCode::DepthLimit.hint(), "Delegation depth limit reached. Return results to parent.");
    }

    #[test]
    fn lineage_codes_are_forbidden_refusals() {
        for code in [ErrorCode::LineageInvalid, ErrorCode::LineageMismatch] {
            assert_eq!(code.http_status(), 403, "{code}");
            assert!(code.is_refusal() && !code.is_agents_fault(), "{code}");
        }
        assert_eq!(ErrorCode::parse("LINEAGE_MISMATCH"), Some(ErrorCode::LineageMismatch));
        assert_eq!(ErrorCode::parse("LINEAGE_INVALID"), Some(ErrorCode::LineageInvalid));
    }
}
