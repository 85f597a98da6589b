//! The A2A tasks of one service, in memory: each entry's task (status,
//! history, artifacts), its owner, its session and its live events while it
//! can still change. The oldest finished tasks go first when the map is full.

use std::collections::HashMap;

use tokio::sync::broadcast;

use crate::protocol::a2a::types::{StreamResponse, Task};
use crate::protocol::{AgentSlug, RequestId, SessionId};

/// Tasks kept in memory; the oldest finished ones go first.
pub(super) const MAX_TASKS: usize = 10_000;
/// Live events buffered per task for slow readers.
pub(super) const EVENT_BUFFER: usize = 256;
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
    pub events: Option<broadcast::Sender<StreamResponse>>,
}

impl Entry {
    pub fn send(&mut self, ev: StreamResponse) {
        if let Some(tx) = &self.events {
            let _ = tx.send(ev);
        }
    }

    /// Closes the live events of a task that reached a terminal state: its
    /// readers get what was sent, then the end of the stream.
    pub fn close_if_terminal(&mut self) {
        if self.task.status.state.is_terminal() {
            self.events = None;
        }
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
}

impl Tasks {
    pub fn bump(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn evict(&mut self) {
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
