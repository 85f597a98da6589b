//! [`Clock`]: when a delegation started, read by every stage that times or
//! records it (a small type of its own, so that the stages need not reach up
//! to the flow for it).

use tokio::time::Instant;

use crate::store::now_ms;

/// When a delegation started: for durations, and for its record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(super) started: Instant,
    pub(super) started_ms: i64,
}

impl Clock {
    pub(super) fn start() -> Self {
        Self { started: Instant::now(), started_ms: now_ms() }
    }

    pub(super) fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}
