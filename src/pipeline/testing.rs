//! Fixtures for the pipeline's unit tests: a runtime with small Rust agents
//! whose behaviour each test picks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;

use crate::agent::{Agent, AgentContext, AgentOutput, Call, Task};
use crate::auth::Principal;
use crate::config::AgentSpec;
use crate::protocol::{AgentSlug, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, UserId};
use crate::runtime::Runtime;

/// Fails with `code` for its first `failures` runs, then answers its input; counts its runs.
pub(super) struct Flaky {
    pub failures: u32,
    pub code: ErrorCode,
    pub runs: Arc<AtomicU32>,
}

impl Flaky {
    pub(super) fn new(failures: u32, code: ErrorCode) -> (Self, Arc<AtomicU32>) {
        let runs = Arc::new(AtomicU32::new(0));
        (Self { failures, code, runs: runs.clone() }, runs)
    }
}

#[async_trait]
impl Agent for Flaky {
    async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        if run < self.failures {
            return Err(DelegationError::new(self.code, format!("run {} fails", run + 1)));
        }
        Ok(AgentOutput::new("done", format!("echo: {}", task.text())))
    }
}

/// An agent a test keeps a handle on, to look at what it saw.
pub(super) struct Shared<A>(pub Arc<A>);

#[async_trait]
impl<A: Agent> Agent for Shared<A> {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        self.0.run(ctx, task).await
    }
}

/// Delegates its input to `to` and answers with what came back.
pub(super) struct Forward {
    pub to: &'static str,
}

#[async_trait]
impl Agent for Forward {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let r = ctx.delegator()?.delegate(Call::to(self.to, "Pass it on")?.input(task.text())).await;
        match r.error {
            Some(e) => Err(e),
            None => Ok(AgentOutput::new("forwarded", r.result)),
        }
    }
}

/// A runtime whose `worker` is `worker` (three attempts at most) and whose
/// `boss` forwards to `worker`; `stranger` may delegate to nobody.
pub(super) fn runtime(worker: impl Agent) -> Runtime {
    let mut worker_spec = AgentSpec::new("worker", "Worker").unwrap();
    worker_spec.limits.max_attempts = Some(3);
    Runtime::builder()
        .spec(worker_spec)
        .spec(AgentSpec::new("boss", "Boss").unwrap().delegating_to(["worker"]))
        .spec(AgentSpec::new("stranger", "Stranger").unwrap())
        .agent("worker", worker)
        .agent("boss", Forward { to: "worker" })
        .agent("stranger", Forward { to: "worker" })
        .build()
        .unwrap()
}

/// A request from `origin` to `target` for user `alice`.
pub(super) fn request(origin: &str, target: &str, objective: &str, input: &str) -> DelegationRequest {
    DelegationRequest::new(
        AgentSlug::parse(origin).unwrap(),
        AgentSlug::parse(target).unwrap(),
        UserId::parse("alice").unwrap(),
        objective,
        input,
    )
}

/// Sends `req` as the operator.
pub(super) async fn send(rt: &Runtime, req: DelegationRequest) -> DelegationResponse {
    rt.delegate(&Principal::Admin, req).await
}
