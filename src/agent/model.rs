//! [`ChatModel`]: what the `llm` backend and Prime's LLM planner send a
//! chat-completions request to. By default that is the OpenAI-compatible
//! endpoint the configuration names (over HTTP); an embedder may give the
//! [`RuntimeBuilder`](crate::RuntimeBuilder) another one, such as the
//! scripted model of `switchboard::testing` (feature `test-util`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::protocol::DelegationError;

/// A chat-completions model: one request in OpenAI's shape (`model`,
/// `messages`, `max_tokens`, and `tools` when the agent may call some), one
/// completion back (`choices[0].message`, `usage`).
///
/// ```
/// use std::time::Duration;
/// use async_trait::async_trait;
/// use serde_json::{Value, json};
/// use switchboard::{ChatModel, DelegationError};
///
/// /// Answers every request with the same words.
/// struct Parrot;
///
/// #[async_trait]
/// impl ChatModel for Parrot {
///     async fn complete(&self, _request: &Value, _timeout: Duration) -> Result<Value, DelegationError> {
///         Ok(json!({"choices": [{"message": {"role": "assistant", "content": "Polly says hello."}}],
///                   "usage": {"prompt_tokens": 10, "completion_tokens": 4}}))
///     }
///
///     fn name(&self) -> &str {
///         "parrot"
///     }
/// }
/// ```
#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// The completion of `request`, within `timeout`. A model that cannot
    /// be reached or is overloaded fails with `AGENT_UNAVAILABLE` (retried,
    /// counted by the breaker), one that answers nonsense with `AGENT_FAILED`.
    async fn complete(&self, request: &Value, timeout: Duration) -> Result<Value, DelegationError>;

    /// What errors call this model: its endpoint, or a name.
    fn name(&self) -> &str;
}
