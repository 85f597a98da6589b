//! The A2A operations over the runtime, independent of the binding: tasks
//! (status, history, artifacts) in the runtime's store with a cache and
//! their live events in memory, each turn of a task run as one delegation,
//! cancel through [`Runtime::cancel`].
//!
//! Durability: a task is written when it is created (before `send`
//! answers), when it starts working after being submitted, when it ends its
//! turn (before a blocking `send` answers) and when it is cancelled. A task
//! not in the cache, or one that is not running here and may have changed
//! elsewhere, is read from the store; another process's task, or one whose
//! process died, keeps the state it was stored in until the tree of its
//! turn ends (in any process: see `settle`).
//!
//! Events: each status and artifact update of a task is numbered (1, 2, 3,
//! ... per task: the SSE `id:`) and stored before it goes to the live
//! subscribers. A subscriber that sends `Last-Event-ID` gets the task as it
//! is, then the stored events after that id, then the live ones: no gap and
//! no duplicate, also from a restarted process.
//!
//! Mapping: a task is the delegation tree of its first turn (task id = that
//! turn's request id); a later turn on an input-required task is a new
//! delegation in the same session. A contextId names a session: the first
//! task in a context creates the session, later ones continue it.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::convert::{message_text, to_artifacts, validate_message};
use super::tasks::{EVENT_BUFFER, Entry, Running, TaskEvent, Tasks, ours, view};
use crate::auth::Principal;
use crate::pipeline::{self, AskOptions, Door, Envelope};
use crate::protocol::a2a::MESSAGE_ID_HINT;
use crate::protocol::a2a::error::{A2aError, Kind};
use crate::protocol::a2a::rails::{LINEAGE_EXTENSION, RAILS_EXTENSION, Rails, lineage_of};
use crate::protocol::a2a::types::{
    Artifact, Message, SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use crate::protocol::{
    AgentSlug, DelegationError, DelegationResponse, ErrorCode, RequestId, SessionId, Status, TokenUsage,
};
use crate::runtime::Runtime;
use crate::store::{
    A2aEventRecord, A2aTaskQuery, A2aTaskRecord, Durability, MAX_EVENTS_PER_TASK, StoreError, TaskKeeper,
};
use crate::util::lock;

/// The A2A side of one service: its runtime and its tasks. Each server
/// state has its own; nothing is shared between two in one process.
pub struct A2aService {
    runtime: Runtime,
    /// How tasks are kept in the store: redacted, their vaults sealed.
    keeper: TaskKeeper,
    tasks: Mutex<Tasks>,
    /// Delivers push notifications (push.rs).
    push: Arc<super::push::Pusher>,
}

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService").finish_non_exhaustive()
    }
}

/// How a send wants its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Blocking,
    NonBlocking,
    Stream,
}

/// What a send produced.
pub enum Sent {
    Task(Task),
    Message(Message),
    /// The task as it was when the stream began, then its live events.
    Stream(Subscription),
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sent").finish_non_exhaustive()
    }
}

/// A stream of one task: the task as it is, the stored events the caller
/// missed, then the live ones.
pub struct Subscription {
    /// The task when the stream began.
    pub task: Task,
    /// Stored events after the caller's `Last-Event-ID`, oldest first.
    pub replay: Vec<TaskEvent>,
    /// The live events.
    pub live: broadcast::Receiver<TaskEvent>,
    /// Events numbered up to this are in `task` or `replay` already: later ones only.
    pub after: u64,
    /// The number of the newest event when the stream began: an event
    /// before it that ends a turn (in `replay`) does not end the stream.
    pub latest: u64,
    /// Where the events are on file, for a reader that falls behind the live buffer.
    pub store: Arc<dyn crate::store::Store>,
    /// What reads them back as their owner sent them (they are kept redacted).
    pub keeper: TaskKeeper,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}

/// How often a watcher looks at the tree of a task that runs elsewhere (or
/// was cut off by a restart) for its subscribers.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// How long after its tree ended a working task that does not run here is
/// left to the process that runs its turn (which writes the end itself at
/// once) before this one writes it from the journal.
const SETTLE_GRACE_MS: i64 = 2_000;

/// One turn to run.
struct Turn {
    task_id: String,
    request_id: RequestId,
    caller: Principal,
    /// The binding the message came through.
    door: Door,
    /// An agent's lineage (the rails extension); a user's turn has none.
    rails: Option<Box<Rails>>,
    /// The signed lineage token (the lineage extension), if the caller sent one.
    lineage: Option<String>,
    agent: AgentSlug,
    objective: String,
    input: String,
    session: Option<SessionId>,
    message: Message,
    owner: String,
    context_id: String,
    /// How the turn's delegation ends on file: without a sync of its own
    /// ([`Durability::WithNext`]) for a blocking send, whose caller is
    /// answered only after the task's last version, which syncs.
    end: Durability,
}

/// Whether a turn that ended with `code` waits for a person (their answer,
/// or their approval) rather than failed.
fn waits_for_a_person(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::NeedsInput | ErrorCode::NeedsApproval)
}

/// The request whose tree decides a task's next state when it does not run
/// here: the one its turn paused on for approval, or the one its working
/// turn runs (noted in the metadata when the turn started).
fn open_request(task: &Task) -> Option<RequestId> {
    if let Some(r) = paused_request(task) {
        return Some(r);
    }
    if !matches!(task.status.state, TaskState::Working | TaskState::Submitted) {
        return None;
    }
    // noted when the turn started: a finished turn's metadata (with its status or code) names an ended tree
    let ext = task.metadata.as_ref()?.get(RAILS_EXTENSION)?;
    if ext.get("status").is_some() || ext.get("code").is_some() {
        return None;
    }
    ext.get("requestId")?.as_str()?.parse().ok()
}

/// The request a task's last turn paused on for approval, if it did.
fn paused_request(task: &Task) -> Option<RequestId> {
    if task.status.state != TaskState::InputRequired {
        return None;
    }
    let ext = task.metadata.as_ref()?.get(RAILS_EXTENSION)?;
    (ext.get("status")?.as_str()? == Status::NeedsApproval.as_str()).then_some(())?;
    ext.get("requestId")?.as_str()?.parse().ok()
}

/// What a turn ended with.
enum Outcome {
    Done { response: Box<DelegationResponse>, answer: String, session: Option<SessionId> },
    Refused(DelegationError),
    Failed(DelegationError, TokenUsage),
    Cancelled,
}

impl A2aService {
    /// The A2A service of `runtime`, with no tasks yet.
    pub fn new(runtime: Runtime) -> Self {
        let keeper = TaskKeeper::new(runtime.seal_key().clone()).sharing(runtime.redactor().clone());
        let push =
            Arc::new(super::push::Pusher::new(runtime.store().clone(), keeper.clone(), &runtime.config().a2a.push));
        Self { runtime, keeper, tasks: Mutex::new(Tasks::default()), push }
    }

    /// The runtime it serves.
    pub(super) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Notes that task `task_id` has a push config: each of its events is
    /// delivered as it is stored, not only those that end a turn.
    pub(super) fn pushes(&self, task_id: &str) {
        if let Some(e) = lock(&self.tasks).map.get_mut(task_id) {
            e.pushless = false;
        }
    }

    /// Its push notification deliverer.
    pub(super) fn pusher(&self) -> &Arc<super::push::Pusher> {
        &self.push
    }

    /// SendMessage / SendStreamingMessage.
    pub async fn send(
        self: &Arc<Self>,
        door: Door,
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
        // a push config for the task: checked now, stored once the task is known to be the caller's
        let push = match req.configuration.as_ref().and_then(|c| c.task_push_notification_config.clone()) {
            None | Some(Value::Null) => None,
            Some(v) => {
                let c = serde_json::from_value(v).map_err(|e| {
                    A2aError::invalid_params(format!("configuration.taskPushNotificationConfig is invalid: {e}"))
                })?;
                Some(self.push.prepare(c).await?)
            }
        };
        let rails = Rails::from_metadata(message.metadata.as_ref()).map_err(A2aError::invalid_params)?;
        let lineage = lineage_of(message.metadata.as_ref()).map_err(A2aError::invalid_params)?;
        if lineage.is_none() && message.extensions.iter().any(|e| e == LINEAGE_EXTENSION) {
            // a peer that declares the extension and sends no token is refused, never a fresh root
            return Err(A2aError::invalid_params(format!(
                "the message declares the lineage extension ({LINEAGE_EXTENSION}) but its metadata carries no \
                 token: send {{\"token\": \"…\"}} under that key, or leave the extension out"
            )));
        }
        let rails = match (principal, rails) {
            (Principal::User(_) | Principal::Anonymous(_), _) => None,
            (Principal::Agent(a), Some(r)) => {
                if &r.origin != a {
                    return Err(A2aError::new(
                        Kind::Unauthenticated,
                        format!("this service token belongs to agent '{a}', but the rails name origin '{}'", r.origin),
                    ));
                }
                Some(Box::new(r))
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
        let owner = principal.label();
        let (objective, input) = message_text(&message);
        let request_id = rails.as_ref().map_or_else(RequestId::new, |r| r.request_id);
        // what the store knows that the cache may not: the task, a rails id used before, the context's session
        match (&message.task_id, &rails) {
            (Some(id), _) => self.cached(id).await?,
            (None, Some(_)) => self.cached(&request_id.to_string()).await?,
            (None, None) => {}
        }
        if message.task_id.is_none()
            && let Some(context) = &message.context_id
        {
            self.context_session(&owner, agent, context).await;
        }

        // a blocking caller hears of the task only when its last version is written, synced: the
        // task's start and the delegation's end before it need no sync of their own
        let deferred = if mode == Mode::Blocking { Durability::WithNext } else { Durability::Now };
        // the task: a new one, or a turn of one waiting for input
        let (task_id, snapshot, live, latest, handle, record) = {
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
                        ))
                        .with("code", ErrorCode::IdConflict.as_str()));
                    }
                    // a new context's id is time-ordered (UUID v7), as the request ids are: the store's
                    // index of contexts takes it in its last leaf, not a page of its own per task
                    let context_id = message.context_id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
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
                event_seq: 0,
                outbox: Vec::new(),
                writer: Arc::default(),
                watching: false,
                vault: Default::default(),
                pushless: true,
            });
            entry.seq = seq;
            entry.task.status = TaskStatus::now(state, None);
            // the turn's request, for whoever finds the task working after a restart (`settle`)
            let mut ext = Map::new();
            ext.insert("requestId".into(), json!(request_id));
            entry.task.metadata = Some(Map::from_iter([(RAILS_EXTENSION.to_string(), Value::Object(ext))]));
            entry.task.history.get_or_insert_with(Vec::new).push(message.clone());
            entry.running = Some(Running { request_id, abort: None });
            if push.is_some() {
                entry.pushless = false;
            }
            // live events for a stream only: a channel holds EVENT_BUFFER slots, and a blocking
            // caller never reads them (a later SubscribeToTask makes the channel it needs)
            let live = (mode == Mode::Stream)
                .then(|| entry.events.get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0).subscribe());
            let snapshot = view(&entry.task, history, true);
            let latest = entry.event_seq;
            if state == TaskState::Working {
                // the turn's first event, stored with the task's version (one commit): a streamed
                // turn starts `submitted` and its turn moves it to working
                let update = entry.task.status_update();
                entry.send(update);
            }
            let record = entry.record();
            let turn = Turn {
                task_id: task_id.clone(),
                request_id,
                caller: principal.clone(),
                door,
                rails,
                lineage,
                agent: agent.clone(),
                objective,
                input,
                session,
                message: message.clone(),
                owner: owner.clone(),
                context_id,
                end: deferred,
            };
            // spawned under the lock, so that a cancel always finds its abort handle
            let service = self.clone();
            // the turn continues the request's trace
            let handle =
                tokio::spawn(tracing::Instrument::in_current_span(async move { service.run_turn(turn).await }));
            if let Some(r) = tasks.map.get_mut(&task_id).and_then(|e| e.running.as_mut()) {
                r.abort = Some(handle.abort_handle());
            }
            (task_id, snapshot, live, latest, handle, record)
        };
        // on file before the caller hears of it (later versions, written by the turn, are not
        // replaced). A blocking caller hears of it at the turn's end, whose synced commit syncs
        // this one too, so its commit does not wait for a sync of its own
        self.flush(&task_id, Some(record), deferred).await;
        if let Some(c) = push {
            // from the events of this turn on (those stored meanwhile included)
            let after = i64::try_from(latest).unwrap_or(i64::MAX);
            self.push.save(c, &task_id, after).await?;
            self.push.notify(&task_id);
        }

        match (mode, live) {
            (Mode::Stream, Some(live)) => {
                let store = self.runtime.store().clone();
                Ok(Sent::Stream(Subscription {
                    task: snapshot,
                    replay: Vec::new(),
                    live,
                    after: latest,
                    latest,
                    store,
                    keeper: self.keeper.clone(),
                }))
            }
            (Mode::Stream | Mode::NonBlocking, _) => Ok(Sent::Task(snapshot)),
            (Mode::Blocking, _) => {
                let (reply, synced) = handle.await.unwrap_or_default();
                if !synced {
                    // the turn's end was not written by a synced commit (a cancel stopped the turn or
                    // wrote the task's end first, or the write failed): its delegation's end, and
                    // what the caller is told, are on file, synced, before the answer. As a new
                    // version: a write that changes nothing commits without syncing the log
                    let record = self.update(&task_id, |_| Vec::new());
                    // a task no longer here is not found below: the caller gets an error, not an answer
                    if record.is_some() && !self.flush(&task_id, record, Durability::Now).await {
                        return Err(A2aError::new(
                            Kind::Internal,
                            format!(
                                "task '{task_id}' ended, but the store could not make its end durable; \
                                 read it later with GetTask"
                            ),
                        ));
                    }
                }
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
    /// agent answered with one (the conformance agent does), and whether the
    /// turn's end was written by a synced commit (not when a cancel ended
    /// the task first).
    async fn run_turn(self: Arc<Self>, turn: Turn) -> (Option<Message>, bool) {
        let runtime = &self.runtime;
        // a streamed turn starts submitted: now it works (`send` stored the working event of any other)
        let submitted =
            lock(&self.tasks).map.get(&turn.task_id).is_some_and(|e| e.task.status.state == TaskState::Submitted);
        if submitted {
            let working = self.update(&turn.task_id, |e| {
                e.task.status = TaskStatus::now(TaskState::Working, None);
                vec![StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: e.task.id.clone(),
                    context_id: e.task.context_id.clone(),
                    status: e.task.status.clone(),
                    metadata: None,
                })]
            });
            self.flush(&turn.task_id, working, Durability::Now).await;
        }
        let hints = vec![format!("{}{}", MESSAGE_ID_HINT, turn.message.message_id)];
        let outcome = match (&turn.rails, turn.caller.user()) {
            (None, Some(_)) => {
                let opts = AskOptions {
                    input: (!turn.input.is_empty()).then(|| turn.input.clone()),
                    session: turn.session,
                    agent: Some(turn.agent.clone()),
                    request_id: Some(turn.request_id),
                    context_hints: hints,
                    end: turn.end,
                };
                // the answer and not the tree: a task shows no tree, so none is read back
                let asked = pipeline::Turn::ask(turn.objective.clone(), opts).without_tree();
                match runtime.enter(turn.door, &turn.caller, asked).await.map(|a| a.response) {
                    Ok(r) => match r.error.clone() {
                        Some(e) if e.code == ErrorCode::Cancelled => Outcome::Cancelled,
                        // a question for the user, or a pause for a person's approval: the task
                        // waits for them (input-required)
                        Some(e) if !waits_for_a_person(e.code) => Outcome::Failed(e, r.token_usage),
                        _ => Outcome::Done {
                            session: Some(r.child_session_id.unwrap_or_default()),
                            answer: crate::pipeline::answer_of(&r),
                            response: Box::new(r),
                        },
                    },
                    Err(e) if e.code.is_refusal() => Outcome::Refused(e),
                    Err(e) => Outcome::Failed(e, TokenUsage::default()),
                }
            }
            (Some(rails), _) => {
                let mut req = rails.request(turn.agent.clone(), turn.objective.clone(), turn.input.clone());
                req.child_session_id = turn.session;
                req.context_hints.extend(hints);
                let envelope = Envelope::new(req).lineage(turn.lineage.clone()).ending(turn.end);
                let r = runtime.enter(turn.door, &turn.caller, envelope).await;
                match r.error.clone() {
                    Some(e) if e.code == ErrorCode::Cancelled => Outcome::Cancelled,
                    Some(e) if e.code.is_refusal() => Outcome::Refused(e),
                    Some(e) if !waits_for_a_person(e.code) => Outcome::Failed(e, r.token_usage),
                    _ => Outcome::Done { session: r.child_session_id, answer: r.result.clone(), response: Box::new(r) },
                }
            }
            // `send` admits only users, and agents with their rails
            (None, None) => Outcome::Refused(DelegationError::new(
                ErrorCode::PermissionDenied,
                "only a user, or an agent with the rails extension, may send a message",
            )),
        };
        let (reply, record) = self.finish(&turn, outcome);
        let ended = record.is_some();
        let synced = self.flush(&turn.task_id, record, Durability::Now).await;
        (reply, ended && synced)
    }

    /// Applies `f` to a task's entry and sends the events it returns, under
    /// the lock (so a new subscriber's snapshot and its events never overlap).
    /// The entry as the store keeps it afterwards.
    fn update(&self, task_id: &str, f: impl FnOnce(&mut Entry) -> Vec<StreamResponse>) -> Option<A2aTaskRecord> {
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        let e = tasks.map.get_mut(task_id)?;
        e.seq = seq;
        for ev in f(e) {
            e.send(ev);
        }
        e.close_if_terminal();
        Some(e.record())
    }

    /// Stores the task's version `record` (when given) with the events
    /// waiting in its outbox, in one write (synced as `durability` says),
    /// then sends the events to its live subscribers, in order; one flush
    /// per task at a time. A store that fails is logged: the task goes on
    /// in this process and the events are sent (the stream goes on; a client
    /// that reconnects misses them). True when there was nothing to write,
    /// or the store wrote some of it (a version it kept, or events): a
    /// commit that changes nothing does not sync the log.
    async fn flush(&self, task_id: &str, record: Option<A2aTaskRecord>, durability: Durability) -> bool {
        let writer = lock(&self.tasks).map.get(task_id).map(|e| e.writer.clone());
        let _one_at_a_time = match &writer {
            Some(w) => Some(w.lock().await),
            None => None,
        };
        let (batch, pushless, mut vault) = match lock(&self.tasks).map.get_mut(task_id) {
            Some(e) => (std::mem::take(&mut e.outbox), e.pushless, e.vault.clone()),
            None => (Vec::new(), true, Default::default()),
        };
        if batch.is_empty() && record.is_none() {
            return true;
        }
        let records: Vec<A2aEventRecord> = batch
            .iter()
            .filter(|(_, stored)| !stored)
            .map(|(ev, _)| A2aEventRecord::new(task_id, i64::try_from(ev.seq).unwrap_or(i64::MAX), &ev.event))
            .collect();
        // kept redacted with the task's vault (the events first: the version keeps the vault
        // as it is once they are redacted too); the vault grows, and only this flush writes it
        let before = vault.len();
        let records = self.keeper.events(records, &mut vault);
        let record = match record {
            Some(r) => Some(r),
            // events that gave the vault new tokens: a version of the task keeps the vault that reads them
            None if vault.len() > before => {
                let mut tasks = lock(&self.tasks);
                let seq = tasks.bump();
                tasks.map.get_mut(task_id).map(|e| {
                    e.seq = seq;
                    e.record()
                })
            }
            None => None,
        };
        let record = record.map(|r| self.keeper.task(r, &mut vault));
        if let Some(e) = lock(&self.tasks).map.get_mut(task_id) {
            e.vault = vault;
        }
        let stored = self.runtime.store().put_a2a_task_with_events(record.as_ref(), &records, durability).await;
        let wrote = match &stored {
            Ok(kept) => *kept || !records.is_empty(),
            Err(e) => {
                tracing::warn!(task = task_id, error = %e, "an A2A task's change could not be stored");
                false
            }
        };
        if batch.is_empty() {
            return wrote;
        }
        // on file: the task's push configs, if it has any, get them. A task this process made
        // with no config it knows of is only looked up when its turn ends (a config another
        // process made meanwhile then gets every event after its cursor)
        if !pushless || batch.iter().any(|(ev, _)| ends_turn(&ev.event)) {
            self.push.notify(task_id);
        }
        let mut tasks = lock(&self.tasks);
        if let Some(e) = tasks.map.get_mut(task_id) {
            if let Some(tx) = &e.events {
                for (ev, _) in batch {
                    let _ = tx.send(ev);
                }
            }
            e.close_if_terminal();
        }
        wrote
    }

    /// Makes sure the cache holds the latest version of task `id` that this
    /// process cannot know by itself: a task not in the cache, or one that
    /// is not running here and not finished (another process, or code that
    /// resumed its tree, may have changed it), is read from the store. A
    /// task nobody has is not an error here; the caller's lookup says so.
    async fn cached(&self, id: &str) -> Result<(), A2aError> {
        self.load(id).await?;
        if self.settle(id).await {
            self.load(id).await?;
        }
        Ok(())
    }

    /// A task that does not run here and waits for a tree that has ended
    /// since: one paused for a person's approval (`input-required`, status
    /// `needs_approval`, resumed once the person answered), or one working
    /// whose process died (its tree resumed after the restart), in this
    /// process or another. Its status from the journal, stored with its
    /// event. True when it changed.
    async fn settle(&self, id: &str) -> bool {
        let (paused, working) = {
            let tasks = lock(&self.tasks);
            let e = tasks.map.get(id).filter(|e| e.running.is_none());
            (e.and_then(|e| open_request(&e.task)), e.is_some_and(|e| paused_request(&e.task).is_none()))
        };
        let Some(request) = paused else { return false };
        let store = self.runtime.store();
        let Ok(Some(step)) = store.step(request).await else { return false };
        if working && crate::store::now_ms().saturating_sub(step.updated_at) < SETTLE_GRACE_MS {
            // a turn that runs in another process writes its own end right after its tree's: give it the time
            return false;
        }
        let Some(response) = step
            .state
            .is_terminal()
            .then(|| step.response.as_deref().and_then(|r| serde_json::from_str::<DelegationResponse>(r).ok()))
            .flatten()
        else {
            return false;
        };
        let (state, text) = match (response.status, &response.error) {
            (Status::Success | Status::Partial, _) if response.requires_followup => {
                (TaskState::InputRequired, response.result.clone())
            }
            (Status::Success | Status::Partial, _) => (TaskState::Completed, response.result.clone()),
            (Status::NeedsInput, _) => (TaskState::InputRequired, response.result.clone()),
            (_, Some(e)) if e.code == ErrorCode::Cancelled => (TaskState::Canceled, "The task was cancelled.".into()),
            (_, Some(e)) => (TaskState::Failed, format!("{}: {}", e.code, e.message)),
            _ => (TaskState::Failed, response.summary.clone()),
        };
        ended_elsewhere(store.as_ref(), &self.keeper, id, request, state, &text, &response).await.unwrap_or_else(|e| {
            tracing::warn!(task = id, error = %e, "the end of an A2A task's tree could not be stored");
            false
        })
    }

    /// Reads the task into the cache when this process cannot know its state by itself.
    async fn load(&self, id: &str) -> Result<(), A2aError> {
        let known = match lock(&self.tasks).map.get(id) {
            Some(e) if e.running.is_some() || e.task.status.state.is_terminal() => return Ok(()),
            Some(e) => Some(e.event_seq),
            None => None,
        };
        let store = self.runtime.store();
        let record = match store.a2a_task(id).await {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(()),
            // what the cache holds is still an answer
            Err(_) if known.is_some() => return Ok(()),
            Err(e) => return Err(store_error(e)),
        };
        let (record, vault) = self.keeper.open(&record);
        // the events: those a known task's writer stored since, or the number of a new one's newest
        let (stored, newest) = match known {
            Some(after) => {
                let after = i64::try_from(after).unwrap_or(i64::MAX);
                (store.a2a_events(id, after, MAX_EVENTS_PER_TASK as usize).await.unwrap_or_default(), 0)
            }
            None => (Vec::new(), store.a2a_event_seq(id).await.map_err(store_error)?),
        };
        let stored = self.keeper.open_events(stored, &vault);
        self.apply_loaded(id, &record, vault, stored, u64::try_from(newest).unwrap_or(0));
        self.flush(id, None, Durability::Now).await;
        Ok(())
    }

    /// Puts a task version read from the store (as its owner reads it, with
    /// its vault) in the cache (see `load`).
    fn apply_loaded(
        &self,
        id: &str,
        record: &A2aTaskRecord,
        vault: crate::redact::Vault,
        stored: Vec<A2aEventRecord>,
        newest: u64,
    ) {
        let mut tasks = lock(&self.tasks);
        tasks.saw(u64::try_from(record.seq).unwrap_or(0));
        match tasks.map.get_mut(id) {
            Some(e) if e.running.is_some() => {}
            Some(e) if i64::try_from(e.seq).unwrap_or(i64::MAX) >= record.seq => {
                // the same version; events another process stored meanwhile still go to the subscribers
                forward(e, id, stored);
            }
            Some(e) => {
                // changed elsewhere: the newer version, and its status to whoever follows the task here
                let Some(newer) = Entry::from_record(record, vault, 0) else { return };
                e.task = newer.task;
                e.vault = newer.vault;
                e.seq = newer.seq;
                e.session = newer.session.or(e.session);
                // the events its writer stored with it, or else the change as a new one
                if !forward(e, id, stored) {
                    let update = e.task.status_update();
                    e.send(update);
                }
                e.close_if_terminal();
            }
            None => {
                if let Some(entry) = Entry::from_record(record, vault, newest) {
                    tasks.evict();
                    tasks.map.insert(id.to_string(), entry);
                }
            }
        }
    }

    /// Notes the session of a context this cache does not know (a restart
    /// forgot it, or it was evicted): the session of the context's latest
    /// task that has one.
    async fn context_session(&self, owner: &str, agent: &AgentSlug, context: &str) {
        let key = (owner.to_string(), agent.to_string(), context.to_string());
        if lock(&self.tasks).contexts.contains_key(&key) {
            return;
        }
        let query = A2aTaskQuery {
            owner: Some(owner.to_string()),
            agent: agent.to_string(),
            context_id: Some(context.to_string()),
            limit: 20,
            ..A2aTaskQuery::default()
        };
        match self.runtime.store().a2a_tasks(&query).await {
            Ok(page) => {
                if let Some(session) = page.tasks.iter().find_map(|t| t.session_id) {
                    lock(&self.tasks).contexts.entry(key).or_insert(session);
                }
            }
            Err(e) => tracing::warn!(error = %e, "the sessions of A2A contexts could not be read"),
        }
    }

    /// Ends a turn; the reply message, if the agent answered with one, and
    /// the task's version to store (None when the turn was cancelled meanwhile).
    fn finish(&self, turn: &Turn, outcome: Outcome) -> (Option<Message>, Option<A2aTaskRecord>) {
        let mut reply = None;
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        let Some(e) = tasks.map.get_mut(&turn.task_id) else { return (None, None) };
        if e.running.as_ref().is_none_or(|r| r.request_id != turn.request_id) || e.task.status.state.is_terminal() {
            // cancelled meanwhile: the cancel already told everyone
            return (None, None);
        }
        e.running = None;
        e.seq = seq;
        let context_id = e.task.context_id.clone();
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
                events = add_artifacts(&mut e.task, artifacts);
                let state = if response.requires_followup { TaskState::InputRequired } else { TaskState::Completed };
                if let Some(mut m) = message {
                    m.context_id = Some(context_id.clone());
                    reply = Some(m);
                }
                let text = reply.as_ref().map(Message::text).filter(|t| !t.is_empty()).unwrap_or_else(|| {
                    if response.error_code().is_some_and(waits_for_a_person) {
                        response.result.clone() // the question for the user, or what waits for approval
                    } else if !response.summary.is_empty() {
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
        e.task.metadata = Some(Map::from_iter([(RAILS_EXTENSION.to_string(), Value::Object(ext))]));
        events.push(e.task.set_status(state, text));
        for ev in events {
            e.send(ev);
        }
        e.close_if_terminal();
        let record = e.record();
        if let Some(s) = e.session {
            tasks.contexts.insert((turn.owner.clone(), turn.agent.to_string(), turn.context_id.clone()), s);
        }
        (reply, Some(record))
    }

    /// GetTask.
    pub async fn get(
        &self,
        principal: &Principal,
        agent: &AgentSlug,
        id: &str,
        history: Option<i32>,
    ) -> Result<Task, A2aError> {
        if history.is_some_and(|h| h < 0) {
            return Err(A2aError::invalid_params("historyLength must not be negative"));
        }
        let owner = principal.label();
        self.cached(id).await?;
        let tasks = lock(&self.tasks);
        let e = tasks.map.get(id).filter(|e| ours(e, &owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
        Ok(view(&e.task, history, true))
    }

    /// ListTasks: the caller's tasks with this agent, most recently updated
    /// first, as the store has them (a version in the cache that is newer
    /// than the stored one is shown instead).
    pub async fn list(
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
        let owner = principal.label();
        let query = A2aTaskQuery {
            // an admin sees every owner's tasks
            owner: (owner != "admin").then(|| owner.clone()),
            agent: agent.to_string(),
            context_id: q.context_id.clone(),
            state: q.status.map(|s| s.as_str().to_string()),
            updated_after: after.map(|t| t.timestamp_millis()),
            offset,
            limit: page_size,
        };
        let found = self.runtime.store().a2a_tasks(&query).await.map_err(store_error)?;
        let tasks = lock(&self.tasks);
        let mut page = Vec::with_capacity(found.tasks.len());
        for record in &found.tasks {
            let task = match tasks.map.get(&record.id).filter(|e| ours(e, &owner, agent)) {
                Some(e) if i64::try_from(e.seq).unwrap_or(i64::MAX) >= record.seq => e.task.clone(),
                _ => self.keeper.open(record).0.to_task().map_err(store_error)?,
            };
            page.push(view(&task, q.history_length, q.include_artifacts.unwrap_or(false)));
        }
        let total = usize::try_from(found.total).unwrap_or(usize::MAX);
        let next = offset + page.len();
        Ok(crate::protocol::a2a::types::ListTasksResponse {
            next_page_token: if next < total && !page.is_empty() { format!("o{next}") } else { String::new() },
            page_size: page.len() as i32,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
            tasks: page,
        })
    }

    /// CancelTask: the running turn's delegation is cancelled with everything
    /// it delegated ([`Runtime::cancel`] cascades through the children).
    pub async fn cancel(&self, principal: &Principal, agent: &AgentSlug, id: &str) -> Result<Task, A2aError> {
        let owner = principal.label();
        self.cached(id).await?;
        let (task, record, tree) = self.cancel_cached(&owner, agent, id)?;
        self.flush(id, Some(record), Durability::Now).await;
        // the tree stays cancelled: in the store, for this process and any that resumes it
        if let Some(root) = tree
            && let Err(e) = self.runtime.cancel_tree(&Principal::Admin, root).await
            && !matches!(e.code, ErrorCode::AlreadyDecided | ErrorCode::NotFound)
        {
            tracing::warn!(task = id, "tree {root} not cancelled in the store: {e}");
        }
        Ok(task)
    }

    /// Cancels a cached task; the tree its turn runs or waits in, if any.
    fn cancel_cached(
        &self,
        owner: &str,
        agent: &AgentSlug,
        id: &str,
    ) -> Result<(Task, A2aTaskRecord, Option<RequestId>), A2aError> {
        let mut tasks = lock(&self.tasks);
        let seq = tasks.bump();
        let e = tasks.map.get_mut(id).filter(|e| ours(e, owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
        if e.task.status.state.is_terminal() {
            return Err(A2aError::new(
                Kind::TaskNotCancelable,
                format!("task '{id}' is already {} and cannot be canceled", e.task.status.state.as_str()),
            )
            .with("taskId", id));
        }
        let mut tree = paused_request(&e.task);
        if let Some(r) = e.running.take() {
            tree = Some(r.request_id);
            if !self.runtime.cancel(r.request_id)
                && let Some(abort) = r.abort
            {
                // not running in the runtime yet (or any more): stop the turn itself
                abort.abort();
            }
        }
        e.seq = seq;
        let ext = Map::from_iter([("code".to_string(), json!(ErrorCode::Cancelled))]);
        e.task.metadata = Some(Map::from_iter([(RAILS_EXTENSION.to_string(), Value::Object(ext))]));
        let update = e.task.set_status(TaskState::Canceled, "The task was cancelled.");
        e.send(update);
        e.close_if_terminal();
        Ok((view(&e.task, None, true), e.record(), tree))
    }

    /// SubscribeToTask: the task now, then (after `last_event`, the
    /// `Last-Event-ID` of a client that reconnects) the stored events it
    /// missed, then the live ones. A terminal task is not subscribed to
    /// (A2A 1.0: UnsupportedOperationError); GetTask reads it.
    pub async fn subscribe(
        self: &Arc<Self>,
        principal: &Principal,
        agent: &AgentSlug,
        id: &str,
        last_event: Option<u64>,
    ) -> Result<Subscription, A2aError> {
        let owner = principal.label();
        self.cached(id).await?;
        // subscribed before the stored events are read: an event is stored
        // before it is sent, so each one is read, or received, or both
        let (task, live, latest, vault) = {
            let mut tasks = lock(&self.tasks);
            let e =
                tasks.map.get_mut(id).filter(|e| ours(e, &owner, agent)).ok_or_else(|| A2aError::task_not_found(id))?;
            if e.task.status.state.is_terminal() {
                return Err(A2aError::new(
                    Kind::UnsupportedOperation,
                    format!("task '{id}' is {}; fetch it with GetTask", e.task.status.state.as_str()),
                )
                .with("taskId", id));
            }
            let live = e.events.get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0).subscribe();
            (view(&e.task, None, true), live, e.event_seq, e.vault.clone())
        };
        let replay = match last_event {
            None => Vec::new(),
            Some(n) if n > latest => {
                return Err(A2aError::invalid_params(format!(
                    "Last-Event-ID {n} is past the newest event of task '{id}' ({latest}); send the id of the last \
                     event received, or no Last-Event-ID to start from the task as it is now"
                ))
                .with("taskId", id));
            }
            Some(n) => {
                let after = i64::try_from(n).unwrap_or(i64::MAX);
                let stored = self
                    .runtime
                    .store()
                    .a2a_events(id, after, MAX_EVENTS_PER_TASK as usize)
                    .await
                    .map_err(store_error)?;
                let stored = self.keeper.open_events(stored, &vault);
                let mut replay = Vec::with_capacity(stored.len());
                for r in stored {
                    let event = r.to_event().map_err(store_error)?;
                    replay.push(TaskEvent { seq: u64::try_from(r.seq).unwrap_or(0), event });
                }
                replay
            }
        };
        self.watch(id);
        let store = self.runtime.store().clone();
        let keeper = self.keeper.clone();
        Ok(Subscription { task, replay, live, after: last_event.unwrap_or(latest), latest, store, keeper })
    }

    /// Follows a task that does not run here for its subscribers: while it
    /// has some, and is neither running here nor terminal, its stored
    /// version and its tree are looked at every [`WATCH_EVERY`] (a tree
    /// resumed after a restart, or an approval answered, ends it; another
    /// process may have changed it). What changed goes to the subscribers.
    fn watch(self: &Arc<Self>, id: &str) {
        {
            let mut tasks = lock(&self.tasks);
            let Some(e) = tasks.map.get_mut(id) else { return };
            if e.watching || e.running.is_some() || e.task.status.state.is_terminal() {
                return;
            }
            e.watching = true;
        }
        let (service, id) = (self.clone(), id.to_string());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                {
                    let mut tasks = lock(&service.tasks);
                    let Some(e) = tasks.map.get_mut(&id) else { break };
                    let followed = e.events.as_ref().is_some_and(|tx| tx.receiver_count() > 0);
                    if !followed || e.running.is_some() || e.task.status.state.is_terminal() {
                        e.watching = false;
                        break;
                    }
                }
                if let Err(e) = service.cached(&id).await {
                    tracing::debug!(task = %id, error = %e.message, "a watched A2A task could not be read");
                }
            }
        });
    }
}

/// Stores the end of a task whose tree ended outside its turn (resumed
/// after a restart, or after an approval): its answer's artifacts, then its
/// status, under a version above the stored one, each change as the task's
/// next event. True when the task is on file.
async fn ended_elsewhere(
    store: &dyn crate::store::Store,
    keeper: &TaskKeeper,
    id: &str,
    request: RequestId,
    state: TaskState,
    text: &str,
    response: &DelegationResponse,
) -> Result<bool, StoreError> {
    let Some(record) = store.a2a_task(id).await? else { return Ok(false) };
    let (record, mut vault) = keeper.open(&record);
    let mut task = record.to_task()?;
    if open_request(&task) != Some(request) {
        return Ok(true); // its end is on file already (its own process, or another that settled it)
    }
    let mut events = Vec::new();
    let mut ext = Map::new();
    ext.insert("requestId".into(), json!(request));
    if matches!(state, TaskState::Completed | TaskState::InputRequired) {
        ext.insert("status".into(), json!(response.status.as_str()));
        ext.insert("tokenUsage".into(), json!(response.token_usage));
        let (artifacts, _) = to_artifacts(&response.result, &response.artifacts);
        events = add_artifacts(&mut task, artifacts);
    } else if let Some(e) = &response.error {
        ext.insert("code".into(), json!(e.code));
    }
    task.metadata = Some(Map::from_iter([(RAILS_EXTENSION.to_string(), Value::Object(ext))]));
    events.push(task.set_status(state, text));
    crate::store::a2a_keep::store_change(store, keeper, &record, &mut vault, &task, &events).await?;
    Ok(true)
}

/// Adds a turn's artifacts to `task` (an artifact it has already is
/// appended to or replaced); each as an event.
fn add_artifacts(task: &mut Task, artifacts: Vec<(Artifact, bool, bool)>) -> Vec<StreamResponse> {
    let mut events = Vec::new();
    for (artifact, append, last_chunk) in artifacts {
        let list = task.artifacts.get_or_insert_with(Vec::new);
        match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
            Some(existing) if append => existing.parts.extend(artifact.parts.clone()),
            Some(existing) => *existing = artifact.clone(),
            None => list.push(artifact.clone()),
        }
        events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            artifact,
            append,
            last_chunk,
            metadata: None,
        }));
    }
    events
}

/// Puts events that are on file already (another writer stored them) and
/// that the entry has not numbered in its outbox, to be sent; true when
/// there were any.
fn forward(e: &mut Entry, id: &str, stored: Vec<A2aEventRecord>) -> bool {
    let mut forwarded = false;
    for r in stored {
        let seq = u64::try_from(r.seq).unwrap_or(0);
        if seq <= e.event_seq {
            continue;
        }
        match r.to_event() {
            Ok(event) => {
                e.event_seq = seq;
                e.outbox.push((TaskEvent { seq, event }, true));
                forwarded = true;
            }
            Err(err) => tracing::warn!(task = id, error = %err, "a stored A2A event could not be read"),
        }
    }
    forwarded
}

/// ListTasks' parameters.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
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

/// The store failed: the task cannot be answered for now.
/// Whether a stream event ends a task's turn: a terminal state, or one that waits for the caller.
fn ends_turn(ev: &StreamResponse) -> bool {
    matches!(ev, StreamResponse::StatusUpdate(u) if u.status.state.is_terminal() || u.status.state.ends_turn())
}

fn store_error(e: StoreError) -> A2aError {
    A2aError::new(Kind::Internal, format!("the task store is unavailable ({e}); retry later"))
}
