//! [`Admission`]: at most so many delegations in flight (`[server]
//! max_in_flight`), and the runtime that admitted work runs on. A service
//! has one, shared by every surface that starts a delegation (the HTTP
//! routes, the A2A bindings, the MCP tools).

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinError, JoinHandle};
use tracing::Instrument;

/// Admission control: at most so many delegations in flight; one more is
/// turned away at once rather than queued. What is let in runs on the work
/// runtime when there is one (`server::WorkRuntime`), else on the current
/// runtime. Clones share the places.
#[derive(Clone)]
pub struct Admission {
    places: Arc<Semaphore>,
    max: usize,
    work: Option<Handle>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").finish_non_exhaustive()
    }
}

impl Admission {
    /// At most `max` at once (at least 1); admitted work on the current runtime.
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self { places: Arc::new(Semaphore::new(max)), max, work: None }
    }

    /// The same places, admitted work on the runtime of `work`, apart from
    /// the one that reads, refuses and answers requests: requests over the
    /// limit cannot queue ahead of it.
    #[must_use]
    pub fn on_work_runtime(mut self, work: Handle) -> Self {
        self.work = Some(work);
        self
    }

    /// A place, held until the permit drops; None when all are taken.
    pub fn enter(&self) -> Option<OwnedSemaphorePermit> {
        self.places.clone().try_acquire_owned().ok()
    }

    /// How many places there are.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Seconds a caller turned away is asked to wait (`Retry-After`).
    pub const RETRY_AFTER_SECONDS: &'static str = "1";

    /// What a caller turned away is told, in every binding.
    pub fn refusal(&self) -> String {
        format!(
            "this Switchboard is running as many delegations as it takes at once ([server] max_in_flight = {}); \
             retry after {} s",
            self.max,
            Self::RETRY_AFTER_SECONDS
        )
    }

    /// Spawns `work` where admitted work runs (the work runtime, if any).
    pub fn spawn<T: Send + 'static>(&self, work: impl Future<Output = T> + Send + 'static) -> JoinHandle<T> {
        match &self.work {
            Some(runtime) => runtime.spawn(work),
            None => tokio::spawn(work),
        }
    }

    /// Runs `work`, admitted with `place`, to its end as a task of its own
    /// inside the caller's span ([`Admission::spawn`]), and holds the place
    /// until it ends: a caller that hangs up does not cut it short (it still
    /// ends at its deadline). An error only when the task panicked or its
    /// runtime stopped.
    pub async fn run<T: Send + 'static>(
        &self,
        place: OwnedSemaphorePermit,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, JoinError> {
        let work = async move {
            let _place = place;
            work.await
        };
        self.spawn(work.in_current_span()).await
    }
}
