//! The built-in team: deterministic agents compiled into Switchboard (the
//! finance team, the tool agents that work from Task Notes, the A2A
//! conformance agent and the `echo` agent). They need no model, no key
//! and no network.

pub(crate) mod a2a_conformance;
pub(crate) mod finance;
pub(crate) mod seeds;
pub(crate) mod tools;

use std::sync::Arc;

use async_trait::async_trait;

use crate::agent::{Agent, AgentContext, AgentOutput, OffThread, Task};
use crate::protocol::DelegationError;

/// The built-in agent implementation called `name`, if there is one. The
/// finance and tool agents compute without awaiting, so they run off the
/// async workers ([`OffThread`]): deadlines and cancellation bind them too.
/// They answer the same task the same way, so a retry needs another seed.
pub(crate) fn lookup(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "echo" => Some(Arc::new(Echo)),
        _ => finance::lookup(name)
            .or_else(|| tools::lookup(name))
            .map(|agent| Arc::new(OffThread::deterministic(agent)) as Arc<dyn Agent>)
            .or_else(|| a2a_conformance::lookup(name)),
    }
}

/// Answers its input (or, with none, its objective) unchanged: no work at all,
/// which makes it the target for measuring the runtime's own cost and for
/// checking wiring. Declare it with `backend = { kind = "builtin", name = "echo" }`.
pub(crate) struct Echo;

#[async_trait]
impl Agent for Echo {
    async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let text = if task.input.is_empty() { &task.objective } else { &task.input };
        Ok(AgentOutput::new(format!("echo: {}", text.chars().take(80).collect::<String>()), text.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn echo_answers_its_input_or_else_its_objective() {
        let echo = lookup("echo").unwrap();
        let ctx = AgentContext::detached(Vec::<String>::new());
        let out = echo.run(&ctx, &Task::new("Say it", "hello")).await.unwrap();
        assert_eq!(out.result, "hello");
        let out = echo.run(&ctx, &Task::new("Say it", "")).await.unwrap();
        assert_eq!(out.result, "Say it");
    }
}
