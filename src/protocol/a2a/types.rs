//! A2A 1.0 wire types (a2a.proto as ProtoJSON): camelCase fields, enums as
//! their SCREAMING_SNAKE_CASE names, bytes as base64, timestamps as ISO 8601
//! in UTC. Unknown fields are ignored, as the specification asks (§5.7).
//!
//! Each type bears its name in a2a.proto (the specification's name), and its doc
//! starts with that name; an enum value's doc starts with its wire name, a
//! field's with its JSON name.

use base64::Engine;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this implementation speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// `TaskState`: where a task is in its life, written as its `TASK_STATE_*` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TaskState {
    /// `TASK_STATE_UNSPECIFIED`: the proto default; names no real state.
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// `TASK_STATE_SUBMITTED`: accepted by the server, not started yet.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// `TASK_STATE_WORKING`: the agent is working on it.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// `TASK_STATE_COMPLETED`: done, successfully (terminal).
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// `TASK_STATE_FAILED`: done, with an error (terminal).
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// `TASK_STATE_CANCELED`: stopped by a cancel before it finished (terminal).
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// `TASK_STATE_INPUT_REQUIRED`: paused until the client sends another message on the task (interrupted).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// `TASK_STATE_REJECTED`: the agent will not do it, decided at the start or later (terminal).
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// `TASK_STATE_AUTH_REQUIRED`: paused until the client supplies credentials (interrupted).
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

    /// The state's name on the wire, as serde writes it (`TASK_STATE_WORKING`).
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

/// `Role`: which side sent a message, written as its `ROLE_*` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Role {
    /// `ROLE_UNSPECIFIED`: the proto default; names no sender.
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// `ROLE_USER`: sent by the client to the agent.
    #[serde(rename = "ROLE_USER")]
    User,
    /// `ROLE_AGENT`: sent by the agent (the server) to the client.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// `Part`: exactly one of text, raw (base64), url or data, with optional
/// metadata, filename and media type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// `text`: the part's content as plain text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `raw`: file content inline, as base64 (ProtoJSON `bytes`, see [`base64_decode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// `url`: where to fetch the part's content (a file by reference, not inline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `data`: structured content, any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// `metadata`: free-form key/value data about this part; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// `filename`: the file name of the content (`report.pdf`); absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// `mediaType` (`media_type` also read): the content's MIME type (`text/plain`, `image/png`); absent when not
    /// stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "media_type")]
    pub media_type: Option<String>,
}

impl Part {
    /// A part with `text` alone.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// A part with JSON `data` and media type `application/json`.
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

/// `Message`: one turn between client and agent: who sent it and its parts.
///
/// A JSON-RPC `SendMessage` call's `params` is a [`SendMessageRequest`] holding one:
///
/// ```
/// use switchboard::protocol::a2a::types::{Role, SendMessageRequest};
///
/// let params = r#"{
///     "message": {
///         "messageId": "9f1c",
///         "role": "ROLE_USER",
///         "parts": [{"text": "Categorize: 2025-10-01 Starbucks 4.50"}],
///         "extensions": []
///     },
///     "configuration": {"returnImmediately": true}
/// }"#;
/// let req: SendMessageRequest = serde_json::from_str(params).unwrap();
/// assert_eq!(req.message.role, Role::User);
/// assert_eq!(req.message.parts[0].text.as_deref(), Some("Categorize: 2025-10-01 Starbucks 4.50"));
/// assert_eq!(req.message.text(), "Categorize: 2025-10-01 Starbucks 4.50");
/// assert!(req.message.context_id.is_none() && req.configuration.unwrap().return_immediately);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// `messageId`: the sender's unique id for this message (a UUID when we make it); `""` when the JSON has none.
    #[serde(default)]
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// `contextId`: the conversation the message belongs to; absent when the sender leaves it to the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    /// `taskId`: the task the message continues; absent to start a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    /// `role`: who sent it, the client (`ROLE_USER`) or the agent (`ROLE_AGENT`).
    pub role: Role,
    /// `parts`: the content, in order (empty when the JSON has none; the service then refuses the message).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// `metadata`: free-form key/value data; the rails and lineage extensions travel here ([`super::rails`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// `extensions`: URIs of the extensions the message uses; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// `referenceTaskIds`: ids of other tasks the message refers to for context; left out when empty.
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

/// `TaskStatus`: a task's state at one moment, with the message that goes with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// `state`: where the task is.
    pub state: TaskState,
    /// `message`: the agent's message that goes with this state (a question, a result, a reason); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// `timestamp`: when the status was recorded, ISO 8601 in UTC with milliseconds; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status in `state`, with `message`, stamped with the current time.
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        Self { state, message, timestamp: Some(timestamp_now()) }
    }
}

/// The current time as A2A writes it: `2025-10-28T10:30:00.000Z`.
pub fn timestamp_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `Artifact`: an output of a task (a document, data, a file), made of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// `artifactId`: unique within the task; the chunks of one artifact share it. `""` when the JSON has none.
    #[serde(default)]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// `name`: a human-readable name; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `description`: a human-readable description; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `parts`: the content (empty when the JSON has none).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// `metadata`: free-form key/value data about the artifact; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// `extensions`: URIs of the extensions that contributed to the artifact; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// `Task`. `artifacts` and `history` are `None` when they are to be left out
/// of the JSON entirely (ListTasks without includeArtifacts, historyLength 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `id`: the task's id, made by the server when it creates the task.
    pub id: String,
    /// `contextId`: the conversation the task belongs to (`""` when the JSON has none).
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `status`: the task's current state, with its message and time.
    pub status: TaskStatus,
    /// `artifacts`: the outputs so far; `None` leaves the field out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// `history`: the messages of the task, oldest first; `None` leaves the field out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    /// `metadata`: free-form key/value data about the task; absent when none.
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

/// `TaskStatusUpdateEvent`: a streamed or pushed event saying a task's status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// `taskId`: the task whose status changed.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `contextId`: that task's conversation (`""` when the JSON has none).
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `status`: the new status.
    pub status: TaskStatus,
    /// `metadata`: free-form key/value data about the update; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `TaskArtifactUpdateEvent`: a streamed or pushed event carrying an artifact or a chunk of one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// `taskId`: the task the artifact belongs to.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `contextId`: that task's conversation (`""` when the JSON has none).
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `artifact`: the artifact, whole or one chunk of it.
    pub artifact: Artifact,
    /// `append`: true when these parts extend the artifact with the same id sent before; left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// `lastChunk`: true on the artifact's final chunk; left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    /// `metadata`: free-form key/value data about the update; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `StreamResponse` (and, with only `task`/`message`, `SendMessageResponse`):
/// one of its fields is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamResponse {
    /// `{"task": …}`: the task as a whole, with its current state.
    Task(Task),
    /// `{"message": …}`: a message from the agent (a direct reply, no task).
    Message(Message),
    /// `{"statusUpdate": …}`: a task's status changed.
    StatusUpdate(TaskStatusUpdateEvent),
    /// `{"artifactUpdate": …}`: a task produced an artifact or a chunk of one.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `SendMessageConfiguration`: how the client wants a `SendMessage` answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// `acceptedOutputModes`: media types the client can take in the answer's parts; left out when empty. Switchboard's
    /// service does not act on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// `taskPushNotificationConfig`: a webhook for the task's events, kept as JSON (a [`TaskPushNotificationConfig`]
    /// without a task id); absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<Value>,
    /// `historyLength`: at most this many of the latest messages in the answer's history; 0 leaves history out, absent
    /// sets no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// `returnImmediately`: true to answer once the task exists, not when it ends or pauses; left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `SendMessageRequest`: the params of `SendMessage` and `SendStreamingMessage` (the body of `message:send`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// `tenant`: the routing id of the card's interface (Switchboard: the agent's slug, on gRPC); left out when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// `message`: the message to send to the agent.
    pub message: Message,
    /// `configuration`: how to deliver the answer; absent for the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// `metadata`: free-form key/value data for the request; absent when none.
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
    /// `tenant`: the routing id of the card's interface, as in requests; left out when empty.
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
    /// `authentication`: the `Authorization` each POST carries; absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// `ListTaskPushNotificationConfigsResponse`: one page of a task's push notification configs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// `configs`: the task's push notification configs on this page.
    pub configs: Vec<TaskPushNotificationConfig>,
    /// `nextPageToken`: the opaque token that fetches the next page; `""` on the last page.
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}

/// `ListTasksResponse`: one page of the caller's tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// `tasks`: the matching tasks on this page, most recently updated first.
    pub tasks: Vec<Task>,
    /// `nextPageToken`: the opaque token that fetches the next page; `""` on the last page.
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// `pageSize`: the page size this answer used.
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// `totalSize`: how many tasks match, across all pages.
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `AgentInterface`: one address of the agent and the binding spoken there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// `url`: where the interface answers: an absolute URL for the HTTP bindings, `host:port` for gRPC.
    pub url: String,
    /// `protocolBinding`: the binding spoken there: `JSONRPC`, `HTTP+JSON` or `GRPC`.
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    /// `tenant`: the routing id a client must send in every request to this interface; left out when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// `protocolVersion`: the A2A version spoken there (`"1.0"`); `""` when the JSON has none.
    #[serde(default)]
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

/// `AgentExtension`: an extension the agent supports, as its card declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// `uri`: the URI that names the extension.
    pub uri: String,
    /// `description`: how this agent uses the extension; left out when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `required`: true when a client must understand and follow the extension to talk to the agent.
    #[serde(default)]
    pub required: bool,
    /// `params`: the extension's own settings; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// `AgentCapabilities`: the optional parts of the protocol the agent supports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `streaming`: whether the agent streams (SendStreamingMessage, SubscribeToTask); absent when not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// `pushNotifications`: whether the agent POSTs task events to webhooks; absent when not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "push_notifications")]
    pub push_notifications: Option<bool>,
    /// `extensions`: the extensions the agent supports; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// `extendedAgentCard`: whether an authenticated client can get a fuller card (GetExtendedAgentCard); absent when
    /// not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "extended_agent_card")]
    pub extended_agent_card: Option<bool>,
}

/// `AgentSkill`: one thing the agent can do, as its card advertises it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// `id`: the skill's id, unique in the card.
    pub id: String,
    /// `name`: a human-readable name.
    pub name: String,
    /// `description`: what the skill does (`""` when the JSON has none).
    #[serde(default)]
    pub description: String,
    /// `tags`: keywords that describe the skill.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `examples`: sample requests the skill handles; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// `inputModes`: media types the skill accepts, in place of the card's defaults; empty (left out) for the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "input_modes")]
    pub input_modes: Vec<String>,
    /// `outputModes`: media types the skill produces, in place of the card's defaults; empty (left out) for the
    /// defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "output_modes")]
    pub output_modes: Vec<String>,
}

/// `AgentProvider`: the organization that runs the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// `url`: the provider's website or documentation.
    pub url: String,
    /// `organization`: the provider's name.
    pub organization: String,
}

/// `AgentCard`. Security schemes and requirements are kept as JSON: we
/// write one bearer scheme and read none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// `name`: the agent's human-readable name.
    pub name: String,
    /// `description`: what the agent is for (`""` when the JSON has none).
    #[serde(default)]
    pub description: String,
    /// `supportedInterfaces`: where and over which bindings the agent answers, the preferred first.
    #[serde(default)]
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// `provider`: who runs the agent; absent when not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// `version`: the agent's own version (not the protocol's); `""` when the JSON has none.
    #[serde(default)]
    pub version: String,
    /// `documentationUrl`: a page documenting the agent; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "documentation_url")]
    pub documentation_url: Option<String>,
    /// `capabilities`: the optional protocol features the agent supports.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// `securitySchemes`: named ways to authenticate, as raw JSON; left out when empty.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[serde(alias = "security_schemes")]
    pub security_schemes: Map<String, Value>,
    /// `securityRequirements`: which of those schemes a call needs, as raw JSON; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<Value>,
    /// `defaultInputModes`: media types the agent accepts unless a skill says otherwise.
    #[serde(default)]
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// `defaultOutputModes`: media types the agent produces unless a skill says otherwise.
    #[serde(default)]
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// `skills`: what the agent can do.
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
