//! A2A 1.0 wire types (a2a.proto as ProtoJSON): camelCase fields, enums as
//! their SCREAMING_SNAKE_CASE names, bytes as base64, timestamps as ISO 8601
//! in UTC. Unknown fields are ignored, as the specification asks (§5.7).

use base64::Engine;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this implementation speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// `TaskState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Completed, failed, canceled or rejected: nothing more happens.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// Waiting for the client (input-required, auth-required).
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// Where a stream ends and a blocking call returns.
    pub fn ends_turn(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::Rejected => "TASK_STATE_REJECTED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// Parses a state name (`TASK_STATE_WORKING`); None for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(Value::String(s.to_string())).ok()
    }
}

/// `Role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Role {
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// `Part`: exactly one of text, raw (base64), url or data, with optional
/// metadata, filename and media type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 of the bytes (ProtoJSON `bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "media_type")]
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    pub fn data(value: Value) -> Self {
        Self { data: Some(value), media_type: Some("application/json".into()), ..Self::default() }
    }

    /// How many of the content fields are set (a valid part has one).
    pub fn contents(&self) -> usize {
        usize::from(self.text.is_some())
            + usize::from(self.raw.is_some())
            + usize::from(self.url.is_some())
            + usize::from(self.data.is_some())
    }
}

/// `Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent's message with text.
    pub fn agent_text(text: impl Into<String>, context_id: Option<String>, task_id: Option<String>) -> Self {
        Self {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id,
            task_id,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The text parts, joined by blank lines.
    pub fn text(&self) -> String {
        self.parts.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n\n")
    }
}

/// `TaskStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// ISO 8601, UTC, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        Self { state, message, timestamp: Some(timestamp_now()) }
    }
}

/// The current time as A2A writes it: `2025-10-28T10:30:00.000Z`.
pub fn timestamp_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `Artifact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default)]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// `Task`. `artifacts` and `history` are `None` when they are to be left out
/// of the JSON entirely (ListTasks without includeArtifacts, historyLength 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// The task's status as an event (with the task's metadata).
    pub fn status_update(&self) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: self.status.clone(),
            metadata: self.metadata.clone(),
        })
    }

    /// Moves the task to `state` with an agent message holding `text`
    /// (added to the history too); the change as an event.
    pub fn set_status(&mut self, state: TaskState, text: impl Into<String>) -> StreamResponse {
        let message = Message::agent_text(text, Some(self.context_id.clone()), Some(self.id.clone()));
        self.history.get_or_insert_with(Vec::new).push(message.clone());
        self.status = TaskStatus::now(state, Some(message));
        self.status_update()
    }
}

/// `TaskStatusUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `TaskArtifactUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `StreamResponse` (and, with only `task`/`message`, `SendMessageResponse`):
/// one of its fields is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `SendMessageConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `SendMessageRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `AuthenticationInfo`: how a push notification authenticates to the
/// webhook (`Authorization: {scheme} {credentials}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// An HTTP authentication scheme (`Bearer`, `Basic`, ...).
    #[serde(default)]
    pub scheme: String,
    /// The credentials in that scheme's format (a Bearer token).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub credentials: String,
}

/// `TaskPushNotificationConfig`: where a task's events are POSTed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The config's id (the server makes one when it is empty).
    #[serde(default)]
    pub id: String,
    /// The task it belongs to.
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The webhook.
    #[serde(default)]
    pub url: String,
    /// Sent back in every notification (`X-A2A-Notification-Token`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// `ListTaskPushNotificationConfigsResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}

/// `ListTasksResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    #[serde(alias = "page_size")]
    pub page_size: i32,
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `AgentInterface`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

/// `AgentExtension`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// `AgentCapabilities`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "push_notifications")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "extended_agent_card")]
    pub extended_agent_card: Option<bool>,
}

/// `AgentSkill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "input_modes")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "output_modes")]
    pub output_modes: Vec<String>,
}

/// `AgentProvider`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// `AgentCard`. Security schemes and requirements are kept as JSON: we
/// write one bearer scheme and read none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "documentation_url")]
    pub documentation_url: Option<String>,
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[serde(alias = "security_schemes")]
    pub security_schemes: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<Value>,
    #[serde(default)]
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    #[serde(default)]
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
}

/// Base64 (standard alphabet, padded) of `bytes`: ProtoJSON's `bytes`.
pub fn base64_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes base64 as ProtoJSON accepts it: standard or URL-safe alphabet,
/// padded or not; None for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const STANDARD_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
    const URL_SAFE_ANY: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);
    let text = text.trim();
    STANDARD_ANY.decode(text).or_else(|_| URL_SAFE_ANY.decode(text)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enums_use_their_proto_names() {
        assert_eq!(serde_json::to_value(TaskState::InputRequired).unwrap(), json!("TASK_STATE_INPUT_REQUIRED"));
        assert_eq!(serde_json::to_value(Role::Agent).unwrap(), json!("ROLE_AGENT"));
        assert_eq!(TaskState::parse("TASK_STATE_CANCELED"), Some(TaskState::Canceled));
        assert_eq!(TaskState::parse("canceled"), None);
        assert!(TaskState::Rejected.is_terminal() && TaskState::AuthRequired.ends_turn());
    }

    #[test]
    fn stream_responses_name_their_payload_in_camel_case() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Working, message: None, timestamp: None },
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})
        );
        let back: StreamResponse = serde_json::from_value(
            json!({"task": {"id": "x", "status": {"state": "TASK_STATE_COMPLETED"}, "extra": 1}}),
        )
        .unwrap();
        assert!(matches!(back, StreamResponse::Task(t) if t.id == "x"));
    }

    #[test]
    fn base64_round_trips() {
        for s in ["", "t", "tc", "tck", "hello world", "\u{0}\u{ff}"] {
            assert_eq!(base64_decode(&base64_encode(s.as_bytes())).unwrap(), s.as_bytes());
        }
        assert_eq!(base64_encode(b"tck"), "dGNr");
        assert_eq!(base64_decode("dGNr").unwrap(), b"tck");
        assert!(base64_decode("a").is_none() && base64_decode("!!!!").is_none());
        // URL-safe and unpadded, as other ProtoJSON writers send it
        assert_eq!(base64_decode("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(base64_decode("+/8=").unwrap(), [0xfb, 0xff]);
    }
}
