//! The A2A operations over the runtime, independent of the binding: tasks in
//! memory (status, history, artifacts, live events), each turn of a task run
//! as one delegation, cancel through [`Runtime::cancel`].
//!
//! Mapping: a task is the delegation tree of its first turn (task id = that
//! turn's request id); a later turn on an input-required task is a new
//! delegation in the same session. A contextId names a session: the first
//! task in a context creates the session, later ones continue it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::auth::Principal;
use crate::pipeline::{AskOptions, Runtime};
use crate::protocol::a2a::error::{A2aError, Kind};
use crate::protocol::a2a::rails::{RAILS_EXTENSION, Rails};
use crate::protocol::a2a::types::{
    Artifact, Message, Part, Role, SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent, base64_decode,
};
use crate::protocol::a2a::{MESSAGE_ID_HINT, MESSAGE_LABEL, NATIVE_LABEL};
use crate::protocol::{
    AgentSlug, ArtifactKind, DelegationError, DelegationResponse, ErrorCode, RequestId, SessionId, TokenUsage, UserId,
};
use crate::server::AppState;
use crate::util::lock;

/// Tasks kept in memory; the oldest finished ones go first.
const MAX_TASKS: usize = 10_000;
/// Live events buffered per task for slow readers.
const EVENT_BUFFER: usize = 256;
/// Longest objective taken from a text part; longer text goes to the input.
const MAX_OBJECTIVE: usize = 4000;
/// Bounds on what a client may send.
const MAX_ID: usize = 256;
const MAX_PARTS: usize = 256;

/// Who owns a task: the caller's principal.
pub(crate) fn owner_of(p: &Principal) -> String {
    match p {
        Principal::User(u) => format!("user:{u}"),
        Principal::Agent(a) => format!("agent:{a}"),
        _ => "admin".into(),
    }
}

struct Entry {
    owner: String,
    agent: AgentSlug,
    task: Task,
    seq: u64,
    session: Option<SessionId>,
    running: Option<Running>,
    /// Live events while the task can still change; dropped once it is
    /// terminal (each channel holds a buffer of EVENT_BUFFER slots, and
    /// thousands of finished tasks are kept).
    events: Option<broadcast::Sender<StreamResponse>>,
}

impl Entry {
    fn send(&mut self, ev: StreamResponse) {
        if let Some(tx) = &self.events {
            let _ = tx.send(ev);
        }
    }

    /// Closes the live events of a task that reached a terminal state: its
    /// readers get what was sent, then the end of the stream.
    fn close_if_terminal(&mut self) {
        if self.task.status.state.is_terminal() {
            self.events = None;
        }
    }
}

struct Running {
    request_id: RequestId,
    abort: Option<tokio::task::AbortHandle>,
}

#[derive(Default)]
struct Tasks {
    map: HashMap<String, Entry>,
    /// (owner, agent, contextId) → the session it names.
    contexts: HashMap<(String, String, String), SessionId>,
    seq: u64,
}

impl Tasks {
    fn bump(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn evict(&mut self) {
        if self.contexts.len() > MAX_TASKS * 4 {
            // the sessions stay in the store; only new tasks in old contexts start fresh ones
            self.contexts.clear();
        }
        if self.map.len() < MAX_TASKS {
            return;
        }
        let mut done: Vec<(u64, String)> =
            self.map.iter().filter(|(_, e)| e.running.is_none()).map(|(k, e)| (e.seq, k.clone())).collect();
        done.sort();
        for (_, k) in done.into_iter().take(MAX_TASKS / 10 + 1) {
            self.map.remove(&k);
        }
    }
}

/// The A2A side of one service (one [`AppState`]).
pub(crate) struct A2aService {
    tasks: Mutex<Tasks>,
}

/// Each state's service, by a weak reference to the state.
type Services = Vec<(Weak<AppState>, Arc<A2aService>)>;

static SERVICES: std::sync::LazyLock<Mutex<Services>> = std::sync::LazyLock::new(Default::default);

/// The A2A service of `state`: the server's `AppState` has no slot for it,
/// so services live beside it, one per state, dropped with it.
pub(crate) fn for_state(state: &Arc<AppState>) -> Arc<A2aService> {
    let mut all = lock(&SERVICES);
    all.retain(|(w, _)| w.strong_count() > 0);
    if let Some((_, s)) = all.iter().find(|(w, _)| w.upgrade().is_some_and(|a| Arc::ptr_eq(&a, state))) {
        return s.clone();
    }
    let s = Arc::new(A2aService { tasks: Mutex::new(Tasks::default()) });
    all.push((Arc::downgrade(state), s.clone()));
    s
}

/// How a send wants its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Blocking,
    NonBlocking,
    Stream,
}

/// What a send produced.
pub(crate) enum Sent {
    Task(Task),
    Message(Message),
    /// The task as it was when the stream began, then its live events.
    Stream(Task, broadcast::Receiver<StreamResponse>),
}

/// Who runs a turn.
#[derive(Clone)]
enum Who {
    User(UserId),
    Agent(AgentSlug, Box<Rails>),
}

/// One turn to run.
struct Turn {
    task_id: String,
    request_id: RequestId,
    who: Who,
    agent: AgentSlug,
    objective: String,
    input: String,
    session: Option<SessionId>,
    message: Message,
    owner: String,
    context_id: String,
}

/// What a turn ended with.
enum Outcome {
    Done { response: Box<DelegationResponse>, answer: String, session: Option<SessionId> },
    Refused(DelegationError),
    Failed(DelegationError, TokenUsage),
    Cancelled,
}

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
                    input.push(format!("[file {} ({media}), {} bytes]", p.filename.as_deref().unwrap_or("-"), s.len()))
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
fn validate_message(m: &Message) -> Result<(), A2aError> {
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

fn ours(e: &Entry, owner: &str, agent: &AgentSlug) -> bool {
    (e.owner == owner || owner == "admin") && &e.agent == agent
}

/// The task as a caller sees it: at most `history` recent messages (0: none).
pub(crate) fn view(task: &Task, history: Option<i32>, artifacts: bool) -> Task {
    let mut t = task.clone();
    match history {
        Some(0) => t.history = None,
        Some(n) if n > 0 => {
            if let Some(h) = t.history.as_mut() {
                let skip = h.len().saturating_sub(n as usize);
                h.drain(..skip);
            }
        }
        _ => {}
    }
    if !artifacts {
        t.artifacts = None;
    }
    t
}

impl A2aService {
    /// SendMessage / SendStreamingMessage.
    pub(crate) async fn send(
        self: &Arc<Self>,
        runtime: &Runtime,
        principal: &Principal,
        agent: &AgentSlug,
        req: SendMessageRequest,
        mode: Mode,
    ) -> Result<Sent, A2aError> {
        let mut message = req.message;
        validate_message(&message)?;
        let history = req.configuration.as_ref().and_then(|c| c.history_length);
        if history.is_some_and(|h| h < 0) {
            return Err(A2aError::invalid_params("configuration.historyLength must not be negative"));
        }
        if req.configuration.as_ref().is_some_and(|c| c.task_push_notification_config.is_some()) {
            return Err(A2aError::new(
                Kind::PushNotificationNotSupported,
                "this agent does not send push notifications; poll GetTask or use SendStreamingMessage",
            ));
        }
        let rails = Rails::from_metadata(message.metadata.as_ref()).map_err(A2aError::invalid_params)?;
        let who = match (principal, rails) {
            (Principal::User(u), _) => Who::User(u.clone()),
            (Principal::Agent(a), Some(r)) => {
                if &r.origin != a {
                    return Err(A2aError::new(
                        Kind::Unauthenticated,
                        format!("this service token belongs to agent '{a}', but the rails name origin '{}'", r.origin),
                    ));
                }
                Who::Agent(a.clone(), Box::new(r))
            }
            (Principal::Agent(a), None) => {
                return Err(A2aError::new(
                    Kind::ExtensionSupportRequired,
                    format!(
                        "agent '{a}' calls with a service token, so the message must carry the rails extension \
                         (metadata[\"{RAILS_EXTENSION}\"]): request and root ids, origin, user, depth, limits"
                    ),
                ));
            }
            _ => {
                return Err(A2aError::new(
                    Kind::PermissionDenied,
                    "an admin token cannot send messages; use a user token, or an agent's service token with the rails extension",
                ));
            }
        };
        let owner = owner_of(principal);
        let (objective, input) = message_text(&message);
        let request_id = match &who {
            Who::Agent(_, r) => r.request_id,
            Who::User(_) => RequestId::new(),
        };

        // the task: a new one, or a turn of one waiting for input
        let (task_id, snapshot, rx, handle) = {
            let mut tasks = lock(&self.tasks);
            let (task_id, context_id, session) = match message.task_id.clone() {
                Some(id) => {
                    let e = tasks
                        .map
                        .get(&id)
                        .filter(|e| ours(e, &owner, agent))
                        .ok_or_else(|| A2aError::task_not_found(&id))?;
                    if e.task.status.state.is_terminal() {
                        return Err(A2aError::new(
                            Kind::UnsupportedOperation,
                            format!(
                                "task '{id}' is {} and takes no more messages; send a new message without taskId",
                                e.task.status.state.as_str()
                            ),
                        )
                        .with("taskId", id));
                    }
                    if e.running.is_some() {
                        return Err(A2aError::new(
                            Kind::UnsupportedOperation,
                            format!(
                                "task '{id}' is still working; wait for it (GetTask, SubscribeToTask) or cancel it"
                            ),
                        ));
                    }
                    if message.context_id.as_ref().is_some_and(|c| c != &e.task.context_id) {
                        return Err(A2aError::invalid_params(format!(
                            "message.contextId does not match task '{id}', whose contextId is '{}'",
                            e.task.context_id
                        )));
                    }
                    (id, e.task.context_id.clone(), e.session)
                }
                None => {
                    let id = request_id.to_string();
                    if tasks.map.contains_key(&id) {
                        return Err(A2aError::invalid_params(format!(
                            "a task with id '{id}' exists already: the rails' requestId must be new for each delegation"
                        )));
                    }
                    let context_id = message.context_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                    let session = tasks.contexts.get(&(owner.clone(), agent.to_string(), context_id.clone())).copied();
                    (id, context_id, session)
                }
            };
            message.task_id = Some(task_id.clone());
            message.context_id = Some(context_id.clone());
            let seq = tasks.bump();
            tasks.evict();
            let state = if mode == Mode::Stream { TaskState::Submitted } else { TaskState::Working };
            let entry = tasks.map.entry(task_id.clone()).or_insert_with(|| Entry {
                owner: owner.clone(),
                agent: agent.clone(),
                task: Task {
                    id: task_id.clone(),
                    context_id: context_id.clone(),
                    status: TaskStatus::now(state, None),
                    artifacts: Some(Vec::new()),
                    history: Some(Vec::new()),
                    metadata: None,
                },
                seq,
                session,
                running: None,
                events: None,
            });
            entry.seq = seq;
            entry.task.status = TaskStatus::now(state, None);
            entry.task.history.get_or_insert_with(Vec::new).push(message.clone());
            entry.running = Some(Running { request_id, abort: None });
            let rx = entry.events.get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0).subscribe();
            let snapshot = view(&entry.task, history, true);
            let turn = Turn {
                task_id: task_id.clone(),
                request_id,
                who,
                agent: agent.clone(),
                objective,
                input,
                session,
                message: message.clone(),
                owner: owner.clone(),
                context_id,
            };
            // spawned under the lock, so that a cancel always finds its abort handle
            let service = self.clone();
            let rt = runtime.clone();
            let handle = tokio::spawn(async move { service.run_turn(rt, turn).await });
            if let Some(r) = tasks.map.get_mut(&task_id).and_then(|e| e.running.as_mut()) {
                r.abort = Some(handle.abort_handle());
            }
            (task_id, snapshot, rx, handle)
        };

        match mode {
            Mode::Stream => Ok(Sent::Stream(snapshot, rx)),
            Mode::NonBlocking => Ok(Sent::Task(snapshot)),
            Mode::Blocking => {
                drop(rx);
                let reply = handle.await.ok().flatten();
                let tasks = lock(&self.tasks);
                let e = tasks.map.get(&task_id).ok_or_else(|| A2aError::task_not_found(&task_id))?;
                match reply {
                    Some(m) if e.task.status.state == TaskState::Completed => Ok(Sent::Message(m)),
                    _ => Ok(Sent::Task(view(&e.task, history, true))),
                }
            }
        }
    }

    /// Runs one turn to its end; returns the direct reply message when the
    /// agent answered with one (the conformance agent does).
    async fn run_turn(self: Arc<Self>, runtime: Runtime, turn: Turn) -> Option<Message> {
        self.update(&turn.task_id, |e| {
            e.task.status = TaskStatus::now(TaskState::Working, None);
            vec![StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: e.task.id.clone(),
                context_id: e.task.context_id.clone(),
                status: e.task.status.clone(),
                metadata: None,
            })]
        });
        let hints = vec![format!("{}{}", MESSAGE_ID_HINT, turn.message.message_id)];
        let outcome = match &turn.who {
            Who::User(user) => {
                let opts = AskOptions {
                    input: (!turn.input.is_empty()).then(|| turn.input.clone()),
                    session: turn.session,
                    agent: Some(turn.agent.clone()),
                    request_id: Some(turn.request_id),
                    context_hints: hints,
                };
                match runtime.ask(user, &turn.objective, opts).await {
                    Ok(r) => match r.response.error.clone() {
                        Some(e) if e.code == ErrorCode::Cancelled => Outcome::Cancelled,
                        Some(e) => Outcome::Failed(e, r.response.token_usage),
                        None => Outcome::Done {
                            session: Some(r.session_id),
                            answer: r.answer,
                            response: Box::new(r.response),
                        },
                    },
                    Err(e) if e.code.is_refusal() => Outcome::Refused(e),
                    Err(e) => Outcome::Failed(e, TokenUsage::default()),
                }
            }
            Who::Agent(origin, rails) => {
                let mut req = rails.request(turn.agent.clone(), turn.objective.clone(), turn.input.clone());
                req.child_session_id = turn.session;
                req.context_hints.extend(hints);
                let r = runtime.delegate(&Principal::Agent(origin.clone()), req).await;
                match r.error.clone() {
                    Some(e) if e.code == ErrorCode::Cancelled => Outcome::Cancelled,
                    Some(e) if e.code.is_refusal() => Outcome::Refused(e),
                    Some(e) => Outcome::Failed(e, r.token_usage),
                    None => {
                        Outcome::Done { session: r.child_session_id, answer: r.result.clone(), response: Box::new(r) }
                    }
                }
            }
        };
        self.finish(&turn, outcome)
    }

    /// Applies `f` to a task's entry and sends the events it returns, under
    /// the lock (so a new subscriber's snapshot and its events never overlap).
    fn update(&self, task_id: &str, f: impl FnOnce(&mut Entry) -> Vec<StreamResponse>) {
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        if let Some(e) = tasks.map.get_mut(task_id) {
            e.seq = seq;
            for ev in f(e) {
                e.send(ev);
            }
            e.close_if_terminal();
        }
    }

    fn finish(&self, turn: &Turn, outcome: Outcome) -> Option<Message> {
        let mut reply = None;
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        let e = tasks.map.get_mut(&turn.task_id)?;
        if e.running.as_ref().is_none_or(|r| r.request_id != turn.request_id) || e.task.status.state.is_terminal() {
            // cancelled meanwhile: the cancel already told everyone
            return None;
        }
        e.running = None;
        e.seq = seq;
        let (task_id, context_id) = (e.task.id.clone(), e.task.context_id.clone());
        let mut ext = Map::new();
        ext.insert("requestId".into(), json!(turn.request_id));
        let mut events = Vec::new();
        let (state, text) = match outcome {
            Outcome::Done { response, answer, session } => {
                ext.insert("status".into(), json!(response.status.as_str()));
                ext.insert("tokenUsage".into(), json!(response.token_usage));
                if let Some(s) = session {
                    e.session = Some(s);
                }
                let (artifacts, message) = to_artifacts(&answer, &response.artifacts);
                for (artifact, append, last_chunk) in artifacts {
                    let list = e.task.artifacts.get_or_insert_with(Vec::new);
                    match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
                        Some(existing) if append => existing.parts.extend(artifact.parts.clone()),
                        Some(existing) => *existing = artifact.clone(),
                        None => list.push(artifact.clone()),
                    }
                    events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task_id.clone(),
                        context_id: context_id.clone(),
                        artifact,
                        append,
                        last_chunk,
                        metadata: None,
                    }));
                }
                let state = if response.requires_followup { TaskState::InputRequired } else { TaskState::Completed };
                if let Some(mut m) = message {
                    m.context_id = Some(context_id.clone());
                    reply = Some(m);
                }
                let text = reply.as_ref().map(Message::text).filter(|t| !t.is_empty()).unwrap_or_else(|| {
                    if !response.summary.is_empty() {
                        response.summary.clone()
                    } else if state == TaskState::InputRequired {
                        "More input is needed to go on.".into()
                    } else {
                        "Done.".into()
                    }
                });
                (state, text)
            }
            Outcome::Refused(err) => {
                ext.insert("code".into(), json!(err.code));
                (TaskState::Rejected, format!("{}: {}", err.code, err.message))
            }
            Outcome::Failed(err, usage) => {
                ext.insert("code".into(), json!(err.code));
                ext.insert("tokenUsage".into(), json!(usage));
                (TaskState::Failed, format!("{}: {}", err.code, err.message))
            }
            Outcome::Cancelled => {
                ext.insert("code".into(), json!(ErrorCode::Cancelled));
                (TaskState::Canceled, "The task was cancelled.".into())
            }
        };
        let agent_message = Message::agent_text(text, Some(context_id.clone()), Some(task_id.clone()));
        e.task.history.get_or_insert_with(Vec::new).push(agent_message.clone());
        e.task.status = TaskStatus::now(state, Some(agent_message));
        let mut metadata = Map::new();
        metadata.insert(RAILS_EXTENSION.into(), Value::Object(ext));
        e.task.metadata = Some(metadata.clone());
        events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id: context_id.clone(),
            status: e.task.status.clone(),
            metadata: Some(metadata),
        }));
        for ev in events {
            e.send(ev);
        }
        e.close_if_terminal();
        if let Some(s) = e.session {
            tasks.contexts.insert((turn.owner.clone(), turn.agent.to_string(), turn.context_id.clone()), s);
        }
        reply
    }

    /// GetTask.
    pub(crate) fn get(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        id: &str,
        history: Option<i32>,
    ) -> Result<Task, A2aError> {
        if history.is_some_and(|h| h < 0) {
            return Err(A2aError::invalid_params("historyLength must not be negative"));
        }
        let owner = owner_of(principal);
        let tasks = lock(&self.tasks);
        let e = tasks.map.get(id).filter(|e| ours(e, &owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
        Ok(view(&e.task, history, true))
    }

    /// ListTasks: the caller's tasks with this agent, most recently updated first.
    pub(crate) fn list(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        q: &ListQuery,
    ) -> Result<crate::protocol::a2a::types::ListTasksResponse, A2aError> {
        let page_size = match q.page_size {
            None => 50,
            Some(n) if (1..=100).contains(&n) => n as usize,
            Some(n) => return Err(A2aError::invalid_params(format!("pageSize {n} must be between 1 and 100"))),
        };
        if q.history_length.is_some_and(|h| h < 0) {
            return Err(A2aError::invalid_params("historyLength must not be negative"));
        }
        let offset = match q.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => 0,
            Some(t) => t
                .strip_prefix("o")
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| A2aError::invalid_params("pageToken is not one this server gave out"))?,
        };
        let after = match q.status_timestamp_after.as_deref() {
            None => None,
            Some(t) => Some(
                chrono::DateTime::parse_from_rfc3339(t)
                    .map_err(|_| A2aError::invalid_params("statusTimestampAfter must be an ISO 8601 timestamp"))?
                    .with_timezone(&chrono::Utc),
            ),
        };
        let owner = owner_of(principal);
        let tasks = lock(&self.tasks);
        let mut found: Vec<&Entry> = tasks
            .map
            .values()
            .filter(|e| ours(e, &owner, agent))
            .filter(|e| q.context_id.as_ref().is_none_or(|c| &e.task.context_id == c))
            .filter(|e| q.status.is_none_or(|s| e.task.status.state == s))
            .filter(|e| {
                after.is_none_or(|after| {
                    e.task
                        .status
                        .timestamp
                        .as_deref()
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                        .is_some_and(|t| t > after)
                })
            })
            .collect();
        found.sort_by(|a, b| b.task.status.timestamp.cmp(&a.task.status.timestamp).then(b.seq.cmp(&a.seq)));
        let total = found.len();
        let page: Vec<Task> = found
            .iter()
            .skip(offset)
            .take(page_size)
            .map(|e| view(&e.task, q.history_length, q.include_artifacts.unwrap_or(false)))
            .collect();
        let next = offset + page.len();
        Ok(crate::protocol::a2a::types::ListTasksResponse {
            next_page_token: if next < total { format!("o{next}") } else { String::new() },
            page_size: page.len() as i32,
            total_size: total as i32,
            tasks: page,
        })
    }

    /// CancelTask: the running turn's delegation is cancelled with everything
    /// it delegated ([`Runtime::cancel`] cascades through the children).
    pub(crate) fn cancel(
        &self,
        runtime: &Runtime,
        principal: &Principal,
        agent: &AgentSlug,
        id: &str,
    ) -> Result<Task, A2aError> {
        let owner = owner_of(principal);
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        let e = tasks.map.get_mut(id).filter(|e| ours(e, &owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
        if e.task.status.state.is_terminal() {
            return Err(A2aError::new(
                Kind::TaskNotCancelable,
                format!("task '{id}' is already {} and cannot be canceled", e.task.status.state.as_str()),
            )
            .with("taskId", id));
        }
        if let Some(r) = e.running.take()
            && !runtime.cancel(r.request_id)
            && let Some(abort) = r.abort
        {
            // not running in the runtime yet (or any more): stop the turn itself
            abort.abort();
        }
        e.seq = seq;
        let message = Message::agent_text("The task was cancelled.", Some(e.task.context_id.clone()), Some(id.into()));
        e.task.history.get_or_insert_with(Vec::new).push(message.clone());
        e.task.status = TaskStatus::now(TaskState::Canceled, Some(message));
        let mut ext = Map::new();
        ext.insert("code".into(), json!(ErrorCode::Cancelled));
        let mut metadata = Map::new();
        metadata.insert(RAILS_EXTENSION.into(), Value::Object(ext));
        e.task.metadata = Some(metadata.clone());
        let update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: id.into(),
            context_id: e.task.context_id.clone(),
            status: e.task.status.clone(),
            metadata: Some(metadata),
        });
        e.send(update);
        e.close_if_terminal();
        Ok(view(&e.task, None, true))
    }

    /// SubscribeToTask: the task now, then its live events.
    pub(crate) fn subscribe(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        id: &str,
    ) -> Result<(Task, broadcast::Receiver<StreamResponse>), A2aError> {
        let owner = owner_of(principal);
        let tasks = lock(&self.tasks);
        let e = tasks.map.get(id).filter(|e| ours(e, &owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
        if e.task.status.state.is_terminal() {
            return Err(A2aError::new(
                Kind::UnsupportedOperation,
                format!("task '{id}' is {}; fetch it with GetTask", e.task.status.state.as_str()),
            )
            .with("taskId", id));
        }
        let events = e.events.as_ref().ok_or_else(|| A2aError::task_not_found(id))?;
        Ok((view(&e.task, None, true), events.subscribe()))
    }
}

/// ListTasks' parameters.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    #[serde(default, alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default)]
    pub status: Option<TaskState>,
    #[serde(default, alias = "page_size")]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    pub page_token: Option<String>,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
    #[serde(default, alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
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
