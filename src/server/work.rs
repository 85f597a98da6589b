//! [`WorkRuntime`]: the threads admitted work runs on, apart from the
//! threads that read requests and answer them.
//!
//! Admission control (`[server] max_in_flight`) turns a request over the
//! limit away at once, so that what was let in finishes. On one runtime it
//! does not quite: a caller that retries at once (a closed loop, a client
//! that ignores `Retry-After`) keeps every worker busy reading and refusing,
//! and each admitted delegation, woken by the store's writer thread, waits in
//! the queue behind those requests at every step. Measured at 1 000
//! connections, an A2A send then held its place for more than a second.
//! A server ([`crate::server::serve`] under `switchboard serve`) runs its
//! admitted delegations and A2A sends on a runtime of their own instead
//! ([`AppState::on_work_runtime`](crate::server::AppState::on_work_runtime)):
//! the operating system shares the cores between the two runtimes' threads,
//! however many requests wait to be refused.

use std::future::Future;

use tokio::runtime::{Builder, Handle, Runtime};

/// A multi-threaded tokio runtime for admitted work; its threads are named
/// [`WorkRuntime::THREAD_NAME`]. Dropping it stops what still runs on it.
pub struct WorkRuntime {
    runtime: Option<Runtime>,
}

impl std::fmt::Debug for WorkRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkRuntime").finish_non_exhaustive()
    }
}

impl WorkRuntime {
    /// The name of the work runtime's threads.
    pub const THREAD_NAME: &'static str = "switchboard-work";

    /// A work runtime of `threads` worker threads (at least 1).
    pub fn start(threads: usize) -> std::io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name(Self::THREAD_NAME)
            .enable_all()
            .build()?;
        Ok(Self { runtime: Some(runtime) })
    }

    /// One worker thread per core, as the serving runtime has.
    pub fn per_core() -> std::io::Result<Self> {
        Self::start(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// The handle that spawns on it.
    pub fn handle(&self) -> &Handle {
        self.runtime.as_ref().expect("present until dropped").handle()
    }

    /// Runs `work` on this runtime and waits for it from the current one.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        self.handle().spawn(work).await
    }
}

impl Drop for WorkRuntime {
    fn drop(&mut self) {
        // dropped inside the serving runtime too: a runtime must not block there while it stops
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
