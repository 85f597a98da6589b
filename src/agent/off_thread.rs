//! [`OffThread`]: runs an agent that computes without awaiting (a parser, a
//! calculation) on tokio's blocking pool, so the pipeline's deadline and
//! cancellation can interrupt the wait for it: the caller gets
//! `DEADLINE_EXCEEDED` on time instead of when the computation ends. The
//! computation itself stops where the agent checks
//! [`AgentContext::cancellation`], which the pipeline cancels when the
//! attempt ends.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Agent, AgentContext, AgentOutput, Task, TokenEstimate};
use crate::protocol::{DelegationError, ErrorCode};

/// An agent whose `run` is run on the blocking pool.
pub struct OffThread(Arc<dyn Agent>, bool);

impl std::fmt::Debug for OffThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffThread").finish_non_exhaustive()
    }
}

impl OffThread {
    /// Wraps `agent`.
    pub fn new(agent: Arc<dyn Agent>) -> Self {
        Self(agent, false)
    }

    /// Wraps `agent`, which computes the same answer from the same task
    /// (see [`Agent::deterministic`]).
    pub fn deterministic(agent: Arc<dyn Agent>) -> Self {
        Self(agent, true)
    }
}

#[async_trait]
impl Agent for OffThread {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let (agent, ctx, task) = (self.0.clone(), ctx.clone(), task.clone());
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || handle.block_on(agent.run(&ctx, &task))).await.unwrap_or_else(|e| {
            Err(DelegationError::new(ErrorCode::AgentFailed, format!("the agent stopped without an answer: {e}")))
        })
    }

    fn estimate_tokens(&self, task: &Task) -> TokenEstimate {
        self.0.estimate_tokens(task)
    }

    fn seeds(&self) -> &[u64] {
        self.0.seeds()
    }

    fn default_attempts(&self) -> Option<u32> {
        self.0.default_attempts()
    }

    fn deterministic(&self) -> bool {
        self.1 || self.0.deterministic()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    /// Computes for up to 10 s without awaiting, checking its cancellation.
    struct Spin {
        stopped: Arc<AtomicBool>,
        finished: Arc<AtomicBool>,
    }

    #[async_trait]
    impl Agent for Spin {
        async fn run(&self, ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while std::time::Instant::now() < until {
                if ctx.cancellation().is_cancelled() {
                    self.stopped.store(true, Ordering::SeqCst);
                    return Err(DelegationError::from_code(ErrorCode::Cancelled));
                }
                std::hint::spin_loop();
            }
            self.finished.store(true, Ordering::SeqCst);
            Ok(AgentOutput::new("done", "done"))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_computation_off_the_async_workers_can_be_given_up_and_stops_when_cancelled() {
        let (stopped, finished) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let agent = OffThread::new(Arc::new(Spin { stopped: stopped.clone(), finished: finished.clone() }));
        let ctx = AgentContext::detached(Vec::<String>::new());
        let task = Task::new("Spin", "");
        // the wait ends when we stop waiting, not when the computation ends
        let waited = tokio::time::timeout(Duration::from_millis(50), agent.run(&ctx, &task)).await;
        assert!(waited.is_err(), "gave up after 50 ms");
        ctx.cancellation().cancel();
        for _ in 0..200 {
            if stopped.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(stopped.load(Ordering::SeqCst), "the computation saw its cancellation and stopped");
        assert!(!finished.load(Ordering::SeqCst));
        assert_eq!(agent.seeds(), &[] as &[u64]);
    }
}
