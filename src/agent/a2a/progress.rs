//! What the A2A client knows of a remote task as its events arrive, and
//! how the task's end (or a remote error) becomes our output or error.

use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::agent::AgentOutput;
use crate::protocol::a2a::error::{self as a2a_error, A2aError};
use crate::protocol::a2a::rails::RAILS_EXTENSION;
use crate::protocol::a2a::types::{
    Artifact as A2aArtifact, Message, Part, StreamResponse, TaskState, TaskStatus, base64_decode,
};
use crate::protocol::{Artifact, ArtifactKind, DelegationError, ErrorCode, Status, TokenUsage};

/// What is known of the remote task so far; shared with the cancel guard.
#[derive(Default)]
pub(super) struct Progress {
    inner: Mutex<ProgressInner>,
}

#[derive(Default)]
pub(super) struct ProgressInner {
    task_id: Option<String>,
    status: Option<TaskStatus>,
    artifacts: Vec<A2aArtifact>,
    metadata: Option<Map<String, Value>>,
    reply: Option<Message>,
}

impl Progress {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, ProgressInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn task_id(&self) -> Option<String> {
        self.lock().task_id.clone()
    }

    /// Folds one response in; true when the turn has ended.
    pub(super) fn apply(&self, ev: StreamResponse) -> bool {
        let mut p = self.lock();
        match ev {
            StreamResponse::Task(t) => {
                p.task_id = Some(t.id.clone());
                if let Some(a) = t.artifacts {
                    p.artifacts = a;
                }
                if t.metadata.is_some() {
                    p.metadata = t.metadata;
                }
                let ends = t.status.state.ends_turn();
                p.status = Some(t.status);
                ends
            }
            StreamResponse::Message(m) => {
                p.reply = Some(m);
                true
            }
            StreamResponse::StatusUpdate(s) => {
                p.task_id.get_or_insert(s.task_id);
                if s.metadata.is_some() {
                    p.metadata = s.metadata;
                }
                let ends = s.status.state.ends_turn();
                p.status = Some(s.status);
                ends
            }
            StreamResponse::ArtifactUpdate(a) => {
                p.task_id.get_or_insert(a.task_id);
                match p.artifacts.iter_mut().find(|x| x.artifact_id == a.artifact.artifact_id) {
                    Some(x) if a.append => x.parts.extend(a.artifact.parts),
                    Some(x) => *x = a.artifact,
                    None => p.artifacts.push(a.artifact),
                }
                false
            }
        }
    }

    pub(super) fn ended(&self) -> bool {
        let p = self.lock();
        p.reply.is_some() || p.status.as_ref().is_some_and(|s| s.state.ends_turn())
    }
}

/// A JSON-RPC error object or an AIP-193 error as our error.
pub(super) fn remote_error(err: &Value, http_status: u16) -> DelegationError {
    let message = err.get("message").and_then(Value::as_str).unwrap_or("the remote A2A agent refused the request");
    let kind = err.get("code").and_then(Value::as_i64).and_then(a2a_error::jsonrpc_kind);
    let reason = err
        .get("details")
        .or_else(|| err.get("data"))
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|x| x.get("reason").and_then(Value::as_str)));
    let code = match (kind, reason, http_status) {
        (_, Some("UNAUTHENTICATED"), _) | (_, _, 401) => ErrorCode::Unauthenticated,
        (_, Some("PERMISSION_DENIED"), _) | (_, _, 403) => ErrorCode::PermissionDenied,
        (Some(k), _, _) => A2aError::new(k, "").code(),
        (_, _, s) if s >= 500 => ErrorCode::AgentUnavailable,
        _ => ErrorCode::AgentFailed,
    };
    // a remote Switchboard's own code, when it names one
    let code = err
        .get("data")
        .or_else(|| err.get("details"))
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|x| x.pointer("/metadata/code").and_then(Value::as_str)))
        .and_then(ErrorCode::parse)
        .unwrap_or(code);
    DelegationError::new(code, format!("A2A agent: {message}"))
}

/// The `Task` or `Message` inside a SendMessage result.
pub(super) fn send_result(v: Value) -> Result<StreamResponse, DelegationError> {
    serde_json::from_value(v).map_err(|e| {
        DelegationError::new(
            ErrorCode::AgentFailed,
            format!("A2A agent's SendMessage result is neither a task nor a message: {e}"),
        )
    })
}

fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n")
}

/// The task's end as our output or error.
pub(super) fn outcome(progress: &Progress) -> Result<AgentOutput, DelegationError> {
    let p = progress.lock();
    let ext = p.metadata.as_ref().and_then(|m| m.get(RAILS_EXTENSION)).cloned().unwrap_or(Value::Null);
    let usage: Option<TokenUsage> = ext.get("tokenUsage").and_then(|u| serde_json::from_value(u.clone()).ok());
    if let Some(m) = &p.reply {
        let text = text_of(&m.parts);
        return Ok(AgentOutput { summary: text.clone(), result: text, token_usage: usage, ..AgentOutput::default() });
    }
    let Some(status) = &p.status else {
        return Err(DelegationError::new(ErrorCode::AgentFailed, "the A2A agent's stream ended before it sent a task"));
    };
    let status_text = status.message.as_ref().map(|m| text_of(&m.parts)).unwrap_or_default();
    let named = ext.get("code").and_then(Value::as_str).and_then(ErrorCode::parse);
    let fail = |fallback: ErrorCode, what: &str| {
        let code = named.unwrap_or(fallback);
        let text = status_text.strip_prefix(&format!("{code}: ")).unwrap_or(&status_text);
        let text = if text.is_empty() { format!("the remote A2A task {what}") } else { text.to_string() };
        Err(DelegationError::new(code, text))
    };
    match status.state {
        TaskState::Completed | TaskState::InputRequired => {}
        TaskState::Failed => return fail(ErrorCode::AgentFailed, "failed"),
        TaskState::Rejected => return fail(ErrorCode::PermissionDenied, "was rejected"),
        TaskState::Canceled => return fail(ErrorCode::Cancelled, "was canceled"),
        TaskState::AuthRequired => return fail(ErrorCode::AgentFailed, "needs authorization we cannot give"),
        s => return fail(ErrorCode::AgentFailed, &format!("ended in state {}", s.as_str())),
    }
    let mut texts = Vec::new();
    let mut artifacts = Vec::new();
    for a in &p.artifacts {
        let label = a.name.clone().unwrap_or_else(|| a.artifact_id.clone());
        let mut rest: Vec<&Part> = Vec::new();
        for part in &a.parts {
            match &part.text {
                Some(t) => texts.push(t.clone()),
                None => rest.push(part),
            }
        }
        match rest.as_slice() {
            [] => {}
            [one] if one.data.is_some() => artifacts.push(Artifact::json(label, one.data.clone().unwrap_or_default())),
            [one] if one.url.is_some() => artifacts.push(Artifact {
                kind: ArtifactKind::Url,
                value: Value::String(one.url.clone().unwrap_or_default()),
                label: Some(label),
            }),
            [one] if one.raw.as_deref().and_then(base64_decode).is_some() => artifacts.push(Artifact {
                kind: ArtifactKind::File,
                value: serde_json::to_value(one).unwrap_or_default(),
                label: Some(label),
            }),
            _ => artifacts.push(Artifact::json(
                format!("{}{}", crate::protocol::a2a::NATIVE_LABEL, a.artifact_id),
                serde_json::to_value(a).unwrap_or_default(),
            )),
        }
    }
    let result = if texts.is_empty() { status_text.clone() } else { texts.join("\n") };
    Ok(AgentOutput {
        summary: if status_text.is_empty() { result.lines().next().unwrap_or("").to_string() } else { status_text },
        result,
        artifacts,
        token_usage: usage,
        requires_followup: status.state == TaskState::InputRequired,
        // a remote agent waiting for its user asks our caller the same question
        status: if status.state == TaskState::InputRequired {
            Some(Status::NeedsInput)
        } else {
            (ext.get("status").and_then(Value::as_str) == Some("partial")).then_some(Status::Partial)
        },
        ..AgentOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::a2a::types::Task;
    use serde_json::json;

    #[test]
    fn remote_errors_keep_a_switchboard_code_and_map_a2a_codes() {
        let e = remote_error(&json!({"code": -32001, "message": "Task not found"}), 200);
        assert_eq!(e.code, ErrorCode::AgentFailed);
        let e = remote_error(&json!({"code": -32602, "message": "bad"}), 200);
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        let e = remote_error(&json!({"code": -32000, "message": "no", "data": [{"reason": "UNAUTHENTICATED"}]}), 401);
        assert_eq!(e.code, ErrorCode::Unauthenticated);
        let e = remote_error(&json!({"code": 503, "message": "down"}), 503);
        assert_eq!(e.code, ErrorCode::AgentUnavailable);
        let e = remote_error(&json!({"code": -32602, "data": [{"metadata": {"code": "USER_MISMATCH"}}]}), 200);
        assert_eq!(e.code, ErrorCode::UserMismatch);
    }

    #[test]
    fn a_rejected_task_comes_back_with_the_code_it_names() {
        let p = Progress::default();
        let mut meta = Map::new();
        meta.insert(RAILS_EXTENSION.into(), json!({"code": "DEPTH_LIMIT"}));
        p.apply(StreamResponse::Task(Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::now(
                TaskState::Rejected,
                Some(Message::agent_text("DEPTH_LIMIT: Delegation depth limit reached (2/2).", None, None)),
            ),
            artifacts: None,
            history: None,
            metadata: Some(meta),
        }));
        let err = outcome(&p).unwrap_err();
        assert_eq!(err.code, ErrorCode::DepthLimit);
        assert_eq!(err.message, "Delegation depth limit reached (2/2).");
    }
}
