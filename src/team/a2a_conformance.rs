//! `a2a-conformance`: a built-in agent that behaves as the A2A TCK's
//! scenarios describe, keyed on the prefix of the A2A message's id (our own
//! code, written from the scenarios' descriptions). Declare it with
//! `backend = { kind = "builtin", name = "a2a-conformance" }`; it does
//! nothing unless an agent is declared so.
//!
//! | messageId prefix | behaviour |
//! |---|---|
//! | `tck-complete-task` | completes with the message "Hello from TCK" |
//! | `tck-artifact-text`, `-file`, `-file-url`, `-data` | completes with a text, file (bytes), file URL or data artifact |
//! | `tck-message-response` | answers with a Message instead of a Task |
//! | `tck-input-required` | asks for more input (input-required) |
//! | `tck-reject-task` | rejects the task |
//! | `tck-stream-…` | working, an artifact (or two chunks of one), completed |
//! | `test-resubscribe-message-id` | works for 2 × `TCK_STREAMING_TIMEOUT` seconds (default 2), then completes |
//! | anything else | completes, echoing the text |

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::a2a::types::base64_encode;
use crate::protocol::a2a::{MESSAGE_ID_HINT, MESSAGE_LABEL, NATIVE_LABEL};
use crate::protocol::{Artifact, DelegationError, ErrorCode};

/// The built-in's name in `backend = { kind = "builtin", name = … }`.
pub(crate) const NAME: &str = "a2a-conformance";

/// The conformance agent.
pub(crate) struct ConformanceAgent;

fn native(id: &str, name: &str, parts: serde_json::Value) -> Artifact {
    Artifact::json(format!("{NATIVE_LABEL}{id}"), json!({"artifactId": id, "name": name, "parts": parts}))
}

fn chunk(id: &str, text: &str, append: bool, last: bool) -> Artifact {
    Artifact::json(
        format!("{NATIVE_LABEL}{id}"),
        json!({"artifactId": id, "name": "chunked", "parts": [{"text": text}], "append": append, "lastChunk": last}),
    )
}

fn done(summary: &str) -> AgentOutput {
    AgentOutput::new(summary, "")
}

/// How long the long-running scenario works: twice the TCK's streaming timeout.
fn long_run() -> Duration {
    let secs = std::env::var("TCK_STREAMING_TIMEOUT").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(2.0);
    Duration::from_secs_f64((secs * 2.0).clamp(0.1, 120.0))
}

#[async_trait]
impl Agent for ConformanceAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let message_id = task.context_hints.iter().find_map(|h| h.strip_prefix(MESSAGE_ID_HINT)).unwrap_or_default();
        let id = message_id;
        let text = |s: &str| json!([{"text": s}]);
        let out = if id.starts_with("tck-complete-task") {
            done("Hello from TCK")
        } else if id.starts_with("tck-artifact-text") {
            done("Done.").with_artifact(native("text", "text", text("Generated text content")))
        } else if id.starts_with("tck-artifact-file-url") {
            done("Done.").with_artifact(native(
                "file-url",
                "output.txt",
                json!([{"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"}]),
            ))
        } else if id.starts_with("tck-artifact-file") {
            done("Done.").with_artifact(native(
                "file",
                "output.txt",
                json!([{"raw": base64_encode(b"Generated file content"), "filename": "output.txt", "mediaType": "text/plain"}]),
            ))
        } else if id.starts_with("tck-artifact-data") {
            done("Done.").with_artifact(native(
                "data",
                "data",
                json!([{"data": {"key": "value", "count": 42}, "mediaType": "application/json"}]),
            ))
        } else if id.starts_with("tck-message-response") {
            done("Direct message response")
                .with_artifact(Artifact::json(MESSAGE_LABEL, json!({"parts": [{"text": "Direct message response"}]})))
        } else if id.starts_with("tck-input-required") {
            let mut out = done("Input required: please send more details.");
            out.requires_followup = true;
            out
        } else if id.starts_with("tck-reject-task") {
            return Err(DelegationError::new(ErrorCode::PermissionDenied, "rejected"));
        } else if id.starts_with("tck-stream-artifact-chunked") {
            done("Done.")
                .with_artifact(chunk("chunked", "chunk-1 ", false, false))
                .with_artifact(chunk("chunked", "chunk-2", true, true))
        } else if id.starts_with("tck-stream-artifact-file") {
            done("Done.").with_artifact(native(
                "file",
                "output.txt",
                json!([{"raw": base64_encode(b"Streamed file content"), "filename": "output.txt", "mediaType": "text/plain"}]),
            ))
        } else if id.starts_with("tck-stream-artifact-text") {
            done("Done.").with_artifact(native("text", "text", text("Streamed text content")))
        } else if id.starts_with("tck-stream-002") {
            done("Done.")
        } else if id.starts_with("tck-stream-003") {
            done("Done.").with_artifact(native("text", "text", text("Stream task lifecycle")))
        } else if id.starts_with("tck-stream-ordering-001") {
            done("Done.").with_artifact(native("text", "text", text("Ordered output")))
        } else if id.starts_with("tck-stream-001") || id.starts_with("tck-stream") {
            done("Done.").with_artifact(native("text", "text", text("Stream hello from TCK")))
        } else if id.starts_with("test-resubscribe-message-id") {
            tokio::select! {
                _ = tokio::time::sleep(long_run()) => {}
                _ = ctx.cancellation().cancelled() => return Err(DelegationError::from_code(ErrorCode::Cancelled)),
            }
            done("Done after a long run.")
        } else {
            AgentOutput::new("Echo", format!("Echo: {}", task.text()))
        };
        Ok(out)
    }
}

/// The conformance agent, when `name` asks for it.
pub(crate) fn lookup(name: &str) -> Option<std::sync::Arc<dyn Agent>> {
    (name == NAME).then(|| std::sync::Arc::new(ConformanceAgent) as std::sync::Arc<dyn Agent>)
}
