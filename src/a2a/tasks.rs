//! The A2A tasks of one service, in memory: each entry's task (status,
//! history, artifacts), its owner, its session and its live events while it
//! can still change. The oldest finished tasks go first when the map is full.
//! The map is a cache: every change is written to the store
//! ([`crate::store::A2aTaskRecord`]), where a task not in the map is found.
//!
//! A task's events are numbered 1, 2, 3, ... ([`TaskEvent`]); a change puts
//! its events in the entry's outbox under the lock, and the service's
//! `flush` stores them, then sends them to the live subscribers, one flush
//! per task at a time (so they are sent in order, and only once stored).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::protocol::a2a::types::{StreamResponse, Task};
use crate::protocol::{AgentSlug, RequestId, SessionId};
use crate::store::{A2aTaskRecord, now_ms};

/// Tasks kept in memory before the oldest finished ones go (a finished
/// task is read back from the store when asked for); a sweep keeps at most
/// half as many finished ones. Each finished task holds its history and
/// artifacts (kilobytes), so this bounds the service's memory more than
/// anything else it keeps.
pub(super) const MAX_TASKS: usize = 1_000;
/// Live events buffered per task for slow readers.
pub(super) const EVENT_BUFFER: usize = 256;

/// One event of a task's stream, with its number in the task: the SSE `id:`
/// a client sends back as `Last-Event-ID`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    /// Its number in the task, from 1.
    pub seq: u64,
    /// The status or artifact update.
    pub event: StreamResponse,
}

pub(super) struct Entry {
    pub owner: String,
    pub agent: AgentSlug,
    pub task: Task,
    pub seq: u64,
    pub session: Option<SessionId>,
    pub running: Option<Running>,
    /// Live events while the task can still change; dropped once it is
    /// terminal (each channel holds a buffer of EVENT_BUFFER slots, and
    /// thousands of finished tasks are kept).
    pub events: Option<broadcast::Sender<TaskEvent>>,
    /// The number of the task's newest event (stored, or in the outbox).
    pub event_seq: u64,
    /// Events numbered but not yet stored and sent, oldest first, each with
    /// whether it is on file already (one another process wrote).
    pub outbox: Vec<(TaskEvent, bool)>,
    /// Held while the outbox is stored and sent.
    pub writer: Arc<tokio::sync::Mutex<()>>,
    /// A watcher follows the task's tree for its subscribers (see `watch`).
    pub watching: bool,
    /// The vault its texts are kept redacted with (`store::TaskKeeper`):
    /// it only grows, so every version and event stored reads back with it.
    pub vault: crate::redact::Vault,
    /// Made by this process, which knows of no push config for it: its
    /// configs are looked up only when a turn ends (service `flush`).
    pub pushless: bool,
}

impl Entry {
    /// Numbers `ev` as the task's next event and puts it in the outbox
    /// (the service's `flush` stores and sends it).
    pub(super) fn send(&mut self, ev: StreamResponse) {
        self.event_seq += 1;
        self.outbox.push((TaskEvent { seq: self.event_seq, event: ev }, false));
    }

    /// Closes the live events of a task that reached a terminal state once
    /// its last events are sent: its readers get them, then the end of the stream.
    pub(super) fn close_if_terminal(&mut self) {
        if self.task.status.state.is_terminal() && self.outbox.is_empty() {
            self.events = None;
        }
    }

    /// The entry as the store keeps it.
    pub(super) fn record(&self) -> A2aTaskRecord {
        A2aTaskRecord::new(
            &self.task,
            &self.owner,
            &self.agent,
            self.session,
            i64::try_from(self.seq).unwrap_or(i64::MAX),
        )
    }

    /// A stored task, not running in this process, whose newest stored
    /// event is `event_seq`: it keeps the state it was stored in, and takes
    /// subscribers while it can still change. `r` as its owner reads it,
    /// `vault` the task's (`store::TaskKeeper::open`).
    pub(super) fn from_record(r: &A2aTaskRecord, vault: crate::redact::Vault, event_seq: u64) -> Option<Self> {
        let task = r
            .to_task()
            .inspect_err(|e| tracing::warn!(task = %r.id, error = %e, "a stored A2A task could not be read"))
            .ok()?;
        let events = (!task.status.state.is_terminal()).then(|| broadcast::channel(EVENT_BUFFER).0);
        Some(Self {
            owner: r.owner.clone(),
            agent: AgentSlug::parse(&r.agent).ok()?,
            task,
            seq: u64::try_from(r.seq).unwrap_or(0),
            session: r.session_id,
            running: None,
            events,
            event_seq,
            outbox: Vec::new(),
            writer: Arc::default(),
            watching: false,
            vault,
            pushless: false,
        })
    }
}

pub(super) struct Running {
    pub request_id: RequestId,
    pub abort: Option<tokio::task::AbortHandle>,
}

#[derive(Default)]
pub(super) struct Tasks {
    pub map: HashMap<String, Entry>,
    /// (owner, agent, contextId) → the session it names.
    pub contexts: HashMap<(String, String, String), SessionId>,
    seq: u64,
    /// The map's size at which the next sweep runs (at least MAX_TASKS):
    /// with many tasks running, a sweep does not run at every new task.
    sweep_at: usize,
}

impl Tasks {
    /// The next version: above every one this map has seen, and above any
    /// a process that ran before this one wrote (they start from the clock).
    pub(super) fn bump(&mut self) -> u64 {
        let clock = u64::try_from(now_ms()).unwrap_or(0).saturating_mul(1000);
        self.seq = (self.seq + 1).max(clock);
        self.seq
    }

    /// Notes a version read from the store, so the next ones are above it.
    pub(super) fn saw(&mut self, seq: u64) {
        self.seq = self.seq.max(seq);
    }

    /// Drops the oldest finished tasks once the map is full, keeping at
    /// most MAX_TASKS / 2 finished ones; running tasks always stay.
    pub(super) fn evict(&mut self) {
        if self.contexts.len() > MAX_TASKS * 4 {
            // the sessions stay in the store; only new tasks in old contexts start fresh ones
            self.contexts.clear();
        }
        if self.map.len() < self.sweep_at.max(MAX_TASKS) {
            return;
        }
        let mut done: Vec<(u64, String)> = self
            .map
            .iter()
            .filter(|(_, e)| e.running.is_none() && e.outbox.is_empty())
            .map(|(k, e)| (e.seq, k.clone()))
            .collect();
        done.sort_unstable();
        let over = done.len().saturating_sub(MAX_TASKS / 2);
        for (_, k) in done.into_iter().take(over) {
            self.map.remove(&k);
        }
        self.sweep_at = self.map.len() + MAX_TASKS / 10;
    }
}

pub(super) fn ours(e: &Entry, owner: &str, agent: &AgentSlug) -> bool {
    (e.owner == owner || owner == "admin") && &e.agent == agent
}

/// The task as a caller sees it: at most `history` recent messages (0: none).
pub(super) fn view(task: &Task, history: Option<i32>, artifacts: bool) -> Task {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64, state: &str, running: bool) -> Entry {
        let task: Task = serde_json::from_value(serde_json::json!({
            "id": format!("t{n}"), "contextId": "c", "status": {"state": state}
        }))
        .unwrap();
        Entry {
            owner: "user:alice".into(),
            agent: AgentSlug::parse("echo").unwrap(),
            task,
            seq: n,
            session: None,
            running: running.then(|| Running { request_id: RequestId::new(), abort: None }),
            events: None,
            event_seq: 0,
            outbox: Vec::new(),
            writer: Arc::default(),
            watching: false,
            vault: Default::default(),
            pushless: false,
        }
    }

    #[test]
    fn a_full_map_drops_its_oldest_finished_tasks_and_keeps_every_running_one() {
        let mut tasks = Tasks::default();
        // a few long-running tasks first, the oldest of all
        for n in 0..20 {
            tasks.map.insert(format!("t{n}"), entry(n, "TASK_STATE_WORKING", true));
        }
        for n in 20..(3 * MAX_TASKS as u64) {
            tasks.map.insert(format!("t{n}"), entry(n, "TASK_STATE_COMPLETED", false));
            tasks.evict();
            assert!(tasks.map.len() <= MAX_TASKS + MAX_TASKS / 10, "the map stays bounded: {}", tasks.map.len());
        }
        assert!((0..20).all(|n| tasks.map.contains_key(&format!("t{n}"))), "running tasks are never dropped");
        let newest = 3 * MAX_TASKS as u64 - 1;
        assert!(tasks.map.contains_key(&format!("t{newest}")), "the newest finished task is kept");
        assert!(!tasks.map.contains_key("t20"), "the oldest finished task went");
    }
}
