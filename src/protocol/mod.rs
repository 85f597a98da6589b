//! Wire types only: the envelopes, ids, error codes and versioning. Nothing here
//! depends on the runtime, so other programs can use these types alone.

pub mod a2a;
pub mod check;
pub mod error;
pub mod ids;
pub mod request;
pub mod response;
pub mod version;

pub use check::{Check, CheckResult, Verdict};
pub use error::{DelegationError, ErrorClass, ErrorCode};
pub use ids::{AgentSlug, IdError, RequestId, SessionId, UserId};
pub use request::{
    BackoffStrategy, ChainLink, Constraints, DelegationRequest, HandoffData, Mode, Priority, Reference, RetryPolicy,
};
pub use response::{
    Artifact, ArtifactKind, AttemptReport, DelegationResponse, Execution, Fallback, Learned, NewFact, Status,
    TokenUsage, UsedSource,
};

/// Parses a request envelope from JSON, mapping every failure to a stable code:
/// malformed JSON, wrong types, missing or unknown fields are `INVALID_REQUEST`
/// (the message names the field and position); a version this runtime does not
/// speak is `UNSUPPORTED_VERSION`.
pub fn parse_request(bytes: &[u8]) -> Result<DelegationRequest, DelegationError> {
    // Look at the version first so that an envelope of another major version is
    // refused as such, not as a pile of unknown fields.
    #[derive(serde::Deserialize)]
    struct VersionOnly {
        #[serde(default)]
        protocol_version: Option<serde_json::Value>,
    }
    if let Ok(v) = serde_json::from_slice::<VersionOnly>(bytes) {
        match v.protocol_version {
            Some(serde_json::Value::String(s)) => version::check(&s)?,
            Some(serde_json::Value::Null) | None => {}
            Some(_) => return Err(DelegationError::invalid("protocol_version must be a string such as \"1.0\"")),
        }
    }
    serde_json::from_slice::<DelegationRequest>(bytes)
        .map_err(|e| DelegationError::invalid(format!("invalid delegation request: {e}")))
}
