//! Live events of delegations (started, attempt, retry, finished) for
//! observers: the CLI, the SSE stream, metrics.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::protocol::RequestId;

/// One thing that happened to a delegation, as observers see it (JSON with a `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The pipeline admitted a delegation and is about to run it.
    Started {
        /// The delegation's id.
        request_id: RequestId,
        /// The id of its tree's root.
        root_id: RequestId,
        /// The user it runs for; the SSE stream shows a user only their own events.
        user_id: String,
        /// The delegation that made this one; None for the root.
        parent_id: Option<RequestId>,
        /// Who delegated: an agent's slug, or `user`.
        origin: String,
        /// The agent asked.
        target: String,
        /// What the agent is asked to do, PII redacted.
        objective: String,
        /// The depth the target runs at.
        depth: u32,
        /// When it started, in milliseconds since the Unix epoch.
        at_ms: i64,
    },
    /// An attempt at the agent begins.
    Attempt {
        /// The delegation's id.
        request_id: RequestId,
        /// The id of its tree's root.
        root_id: RequestId,
        /// The user it runs for.
        user_id: String,
        /// The agent tried.
        target: String,
        /// The attempt's number, from 1.
        attempt: u32,
        /// The variant a seeded agent uses for it; None for agents without seeds.
        seed: Option<u64>,
    },
    /// An attempt failed and another follows.
    Retry {
        /// The delegation's id.
        request_id: RequestId,
        /// The id of its tree's root.
        root_id: RequestId,
        /// The user it runs for.
        user_id: String,
        /// The agent tried.
        target: String,
        /// The number of the attempt that failed, from 1.
        attempt: u32,
        /// The failed attempt's error code, e.g. `AGENT_UNAVAILABLE`.
        error_code: String,
        /// The failed attempt's error message.
        message: String,
        /// Milliseconds waited before the next attempt.
        delay_ms: u64,
        /// The seed the next attempt uses when it switches seeds; None when it keeps the same one.
        next_seed: Option<u64>,
    },
    /// The delegation ended: answered, failed or refused.
    Finished {
        /// The delegation's id.
        request_id: RequestId,
        /// The id of its tree's root.
        root_id: RequestId,
        /// The user it ran for.
        user_id: String,
        /// The delegation that made this one; None for the root.
        parent_id: Option<RequestId>,
        /// Who delegated: an agent's slug, or `user`.
        origin: String,
        /// The agent asked.
        target: String,
        /// `success`, `partial`, `failed` or `refused`.
        status: String,
        /// The error code when it did not succeed; None otherwise.
        error_code: Option<String>,
        /// Attempts made; 0 when refused.
        attempts: u32,
        /// Milliseconds it took, retries included.
        duration_ms: u64,
        /// Tokens used by the delegation and its subtree.
        tokens: u32,
    },
}

impl Event {
    /// The user the event's delegation runs for.
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

    /// The id of the tree the event's delegation belongs to.
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
    /// A receiver of every event emitted from now on (it lags, losing the oldest, past 1024 unread).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// Sends the event `make` builds, building it only when someone listens.
    pub fn emit(&self, make: impl FnOnce() -> Event) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(make());
        }
    }
}
