//! Live events of delegations (started, attempt, retry, finished) for
//! observers: the CLI, the SSE stream, metrics.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::protocol::RequestId;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    Started {
        request_id: RequestId,
        root_id: RequestId,
        user_id: String,
        parent_id: Option<RequestId>,
        origin: String,
        target: String,
        objective: String,
        depth: u32,
        at_ms: i64,
    },
    Attempt {
        request_id: RequestId,
        root_id: RequestId,
        user_id: String,
        target: String,
        attempt: u32,
        seed: Option<u64>,
    },
    /// seeds/001's `status: "retry"`: an attempt failed and another follows.
    Retry {
        request_id: RequestId,
        root_id: RequestId,
        user_id: String,
        target: String,
        attempt: u32,
        error_code: String,
        message: String,
        delay_ms: u64,
        next_seed: Option<u64>,
    },
    Finished {
        request_id: RequestId,
        root_id: RequestId,
        user_id: String,
        parent_id: Option<RequestId>,
        origin: String,
        target: String,
        status: String,
        error_code: Option<String>,
        attempts: u32,
        duration_ms: u64,
        tokens: u32,
    },
}

impl Event {
    pub fn user_id(&self) -> &str {
        match self {
            Self::Started { user_id, .. }
            | Self::Attempt { user_id, .. }
            | Self::Retry { user_id, .. }
            | Self::Finished { user_id, .. } => user_id,
        }
    }

    /// Whether `agent` took part: as origin or target.
    pub fn involves(&self, agent: &str) -> bool {
        match self {
            Self::Started { origin, target, .. } | Self::Finished { origin, target, .. } => {
                origin == agent || target == agent
            }
            Self::Attempt { target, .. } | Self::Retry { target, .. } => target == agent,
        }
    }

    /// The event's name on the SSE stream.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Started { .. } => "started",
            Self::Attempt { .. } => "attempt",
            Self::Retry { .. } => "retry",
            Self::Finished { .. } => "finished",
        }
    }

    pub fn root_id(&self) -> RequestId {
        match self {
            Self::Started { root_id, .. }
            | Self::Attempt { root_id, .. }
            | Self::Retry { root_id, .. }
            | Self::Finished { root_id, .. } => *root_id,
        }
    }
}

/// A broadcast bus. Events are built only when someone listens.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
}

impl Default for Events {
    fn default() -> Self {
        Self { tx: broadcast::channel(1024).0 }
    }
}

impl Events {
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    pub fn emit(&self, make: impl FnOnce() -> Event) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(make());
        }
    }
}
