//! Between A2A and delegations: a message's parts become an objective and
//! an input, checked first; a response's answer and artifacts become A2A
//! artifacts (or a direct reply message); which events end a stream.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::protocol::ArtifactKind;
use crate::protocol::a2a::types::{Artifact, Message, Part, Role, StreamResponse, TaskState, base64_decode};
use crate::protocol::a2a::{A2aError, MESSAGE_LABEL, NATIVE_LABEL};

/// Longest objective taken from a text part; longer text goes to the input.
const MAX_OBJECTIVE: usize = 4000;
/// Bounds on what a client may send.
pub(super) const MAX_ID: usize = 256;
const MAX_PARTS: usize = 256;

/// The objective and input a message asks for: the first text part is the
/// objective, the other parts (text, data, files, links) the input.
pub(crate) fn message_text(message: &Message) -> (String, String) {
    let mut objective = String::new();
    let mut input: Vec<String> = Vec::new();
    for p in &message.parts {
        if let Some(t) = &p.text {
            if objective.is_empty() && !t.trim().is_empty() {
                if t.len() <= MAX_OBJECTIVE {
                    objective = t.clone();
                } else {
                    let mut cut = 200;
                    while !t.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    objective = format!("{}…", &t[..cut]);
                    input.push(t.clone());
                }
            } else {
                input.push(t.clone());
            }
        } else if let Some(d) = &p.data {
            input.push(serde_json::to_string_pretty(d).unwrap_or_default());
        } else if let Some(u) = &p.url {
            input.push(format!("{}: {u}", p.filename.as_deref().unwrap_or("link")));
        } else if let Some(raw) = &p.raw {
            let media = p.media_type.as_deref().unwrap_or("application/octet-stream");
            let bytes = base64_decode(raw).unwrap_or_default();
            let textual = media.starts_with("text/") || media.contains("json") || media.contains("xml");
            match String::from_utf8(bytes) {
                Ok(s) if textual => input.push(s),
                Ok(s) => {
                    input.push(format!("[file {} ({media}), {} bytes]", p.filename.as_deref().unwrap_or("-"), s.len()));
                }
                Err(e) => input.push(format!(
                    "[file {} ({media}), {} bytes]",
                    p.filename.as_deref().unwrap_or("-"),
                    e.as_bytes().len()
                )),
            }
        }
    }
    if objective.is_empty() {
        objective = "Work on the attached content".into();
    }
    (objective, input.join("\n\n"))
}

/// Checks what serde cannot: ids, parts, roles.
pub(super) fn validate_message(m: &Message) -> Result<(), A2aError> {
    let bad = |s: String| Err(A2aError::invalid_params(s));
    if m.message_id.trim().is_empty() {
        return bad("message.messageId is required: a unique id of this message".into());
    }
    if m.message_id.len() > MAX_ID {
        return bad(format!("message.messageId is longer than {MAX_ID} characters"));
    }
    if m.role != Role::User {
        return bad("message.role must be ROLE_USER for a message sent to an agent".into());
    }
    if m.parts.is_empty() {
        return bad("message.parts is empty: send at least one part (e.g. {\"text\": \"…\"})".into());
    }
    if m.parts.len() > MAX_PARTS {
        return bad(format!("message.parts has more than {MAX_PARTS} parts"));
    }
    for (i, p) in m.parts.iter().enumerate() {
        if p.contents() != 1 {
            return bad(format!("message.parts[{i}] must set exactly one of text, raw, url, data"));
        }
        if p.raw.as_deref().is_some_and(|r| base64_decode(r).is_none()) {
            return bad(format!("message.parts[{i}].raw is not base64"));
        }
    }
    for (name, v) in [("contextId", &m.context_id), ("taskId", &m.task_id)] {
        if v.as_ref().is_some_and(|s| s.is_empty() || s.len() > MAX_ID || s.chars().any(char::is_control)) {
            return bad(format!("message.{name} must be 1 to {MAX_ID} printable characters"));
        }
    }
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Native {
    #[serde(default, alias = "artifact_id")]
    artifact_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    parts: Vec<Part>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    append: bool,
    #[serde(default, alias = "last_chunk")]
    last_chunk: bool,
}

/// Our answer and artifacts as A2A artifacts (with append/lastChunk flags),
/// and the direct reply message, if the agent asked for one.
pub(crate) fn to_artifacts(
    answer: &str,
    ours: &[crate::protocol::Artifact],
) -> (Vec<(Artifact, bool, bool)>, Option<Message>) {
    let mut out: Vec<(Artifact, bool, bool)> = Vec::new();
    let mut reply = None;
    if !answer.trim().is_empty() {
        out.push((
            Artifact {
                artifact_id: "result".into(),
                name: Some("result".into()),
                description: None,
                parts: vec![Part::text(answer)],
                metadata: None,
                extensions: Vec::new(),
            },
            false,
            false,
        ));
    }
    for (i, a) in ours.iter().enumerate() {
        let label = a.label.clone().unwrap_or_else(|| format!("artifact-{i}"));
        if label == MESSAGE_LABEL
            && let Ok(n) = serde_json::from_value::<Native>(a.value.clone())
        {
            let mut m = Message::agent_text("", None, None);
            m.parts = n.parts;
            m.metadata = n.metadata;
            reply = Some(m);
            continue;
        }
        if label.starts_with(NATIVE_LABEL)
            && let Ok(n) = serde_json::from_value::<Native>(a.value.clone())
        {
            let id = n.artifact_id.unwrap_or_else(|| label.trim_start_matches(NATIVE_LABEL).to_string());
            out.push((
                Artifact {
                    artifact_id: id,
                    name: n.name,
                    description: n.description,
                    parts: n.parts,
                    metadata: n.metadata,
                    extensions: Vec::new(),
                },
                n.append,
                n.last_chunk,
            ));
            continue;
        }
        let part = match (a.kind, &a.value) {
            (ArtifactKind::Url, Value::String(u)) => Part { url: Some(u.clone()), ..Part::default() },
            (ArtifactKind::Id, Value::String(s)) => Part::text(s.clone()),
            (ArtifactKind::File, Value::Object(o)) if o.contains_key("raw") || o.contains_key("url") => {
                serde_json::from_value::<Part>(a.value.clone()).unwrap_or_else(|_| Part::data(a.value.clone()))
            }
            _ => Part::data(a.value.clone()),
        };
        let mut id = label.clone();
        if out.iter().any(|(x, _, _)| x.artifact_id == id) {
            id = format!("{label}-{i}");
        }
        out.push((
            Artifact {
                artifact_id: id,
                name: Some(label),
                description: None,
                parts: vec![part],
                metadata: None,
                extensions: Vec::new(),
            },
            false,
            false,
        ));
    }
    (out, reply)
}

/// How long a streaming turn may stay silent before a keep-alive.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Whether a response is the last of a turn's stream.
pub(crate) fn ends_stream(ev: &StreamResponse) -> bool {
    match ev {
        StreamResponse::StatusUpdate(s) => s.status.state.ends_turn(),
        StreamResponse::Task(t) => t.status.state.ends_turn(),
        StreamResponse::Message(_) => true,
        _ => false,
    }
}

/// Parses the status filter of ListTasks given as a string.
pub(crate) fn parse_state(s: &str) -> Result<TaskState, A2aError> {
    TaskState::parse(s).ok_or_else(|| {
        A2aError::invalid_params(format!(
            "status '{}' is not a TaskState such as TASK_STATE_WORKING",
            s.chars().take(40).collect::<String>()
        ))
    })
}
