//! The retry loop: each attempt checks its estimate against the budget,
//! passes the breaker, runs the agent inside the deadline, is charged to the
//! budget and verified; a failure retries (next seed, backoff, a longer
//! attempt timeout) while the plan and the deadline allow.

use std::time::Duration;

use tokio::time::Instant;

use super::admit::Admitted;
use super::seeds::Seeds;
use super::{Runtime, attempt, context, verify};
use crate::agent::{AgentOutput, tokens};
use crate::protocol::{DelegationError, ErrorCode, Execution, Learned, TokenUsage, Verdict};
use crate::rails::budget;
use crate::resilience::{Next, RetryPlan};
use crate::store::task_signature;
use crate::telemetry::Event;

/// What the attempt loop produced.
pub(super) struct Attempts {
    pub result: Result<AgentOutput, DelegationError>,
    pub execution: Execution,
    pub verdict: Option<Verdict>,
    pub learned: Option<Learned>,
    /// The agent's own usage over all attempts (its children's is in the node).
    pub usage: TokenUsage,
}

impl Attempts {
    fn failed(e: DelegationError) -> Self {
        Self {
            result: Err(e),
            execution: Execution::default(),
            verdict: None,
            learned: None,
            usage: TokenUsage::default(),
        }
    }
}

pub(super) async fn run(rt: &Runtime, adm: &Admitted) -> Attempts {
    let inner = &*rt.inner;
    let (req, node, spec, agent) = (&adm.req, &adm.node, &adm.member.spec, &adm.member.agent);
    let checks = match verify::checks(req) {
        Ok(c) => c,
        Err(e) => return Attempts::failed(e),
    };
    let mut task = match context::assemble(rt, adm).await {
        Ok(t) => t,
        Err(e) => return Attempts::failed(e),
    };
    let mut out = Attempts::failed(ErrorCode::AgentFailed.into());
    // the kind of task, from what the agent sees (PII already tokenized)
    let seeds = Seeds::load(rt, agent.as_ref(), &spec.slug, &task_signature(&task.objective)).await;
    let attempts = spec.limits.max_attempts.or_else(|| agent.default_attempts());
    let plan = RetryPlan::for_request(req.priority, req.retry_policy.as_ref(), attempts);
    let jitter = req.request_id.0.as_u64_pair().0;
    let mut seed_idx = 0usize;
    let mut attempt_timeout = spec.limits.attempt_timeout_ms.map(Duration::from_millis);
    // a timeout under a deadline the caller cut short may be the caller's doing
    let shortened = req.constraints.deadline_ms < inner.config.limits.deadline_ms;
    let event = |attempt, seed| Event::Attempt {
        request_id: req.request_id,
        root_id: node.root_id,
        user_id: req.user_id.to_string(),
        target: spec.slug.to_string(),
        attempt,
        seed,
    };

    for attempt in 1..=plan.max_attempts {
        task.attempt = attempt;
        task.seed = seeds.order.get(seed_idx).copied();
        out.execution.attempts = attempt;
        if let Some(s) = task.seed.filter(|s| !out.execution.seeds_tried.contains(s)) {
            out.execution.seeds_tried.push(s);
        }
        task.max_completion_tokens = adm.budget.remaining().saturating_sub(tokens::task_prompt_tokens(&task));
        let estimate = agent.estimate_tokens(&task);
        if let Err(e) = budget::check_estimate(estimate.total(), adm.budget.grant()) {
            out.result = Err(e);
            break;
        }
        inner.events.emit(|| event(attempt, task.seed));

        let delegated_before = node.children_started();
        let result = match inner.breakers.acquire(&spec.slug, &req.user_id) {
            Err(e) => Err(e),
            Ok(permit) => {
                let r = attempt::run(rt, adm, &task, attempt_timeout).await;
                match r.as_ref().err().map(|e| attempt::breaker_failure(e.code, shortened)) {
                    None | Some(None) => permit.success(),
                    // a failure passed up from its children is theirs: their breakers counted it
                    Some(Some(_)) if node.children_started() > delegated_before => drop(permit),
                    Some(Some(failure)) => permit.failed(failure),
                }
                r
            }
        };
        let result = result
            .and_then(|o| attempt::charge(adm, estimate, o, &mut out.usage))
            .and_then(|o| verify::check(o, &checks, &mut out.verdict));

        let e = match result {
            Ok(o) => {
                if let Some(seed) = task.seed {
                    let confidence = out.verdict.as_ref().map_or(1.0, |v| v.score);
                    out.learned = Some(seeds.passed(rt, seed, confidence).await);
                }
                out.result = Ok(o);
                break;
            }
            Err(e) => e,
        };
        if e.code == ErrorCode::VerificationFailed
            && let Some(seed) = task.seed
        {
            seeds.failed(rt, seed).await;
        }
        let remaining = node.deadline.saturating_duration_since(Instant::now());
        // an attempt that delegated is not repeated: its children had their
        // own retries, and would run twice
        let next = if node.children_started() > delegated_before {
            Next::GiveUp
        } else {
            plan.next(e.code.class(), attempt, remaining, jitter, e.retry_after)
        };
        let Next::Retry { delay, next_seed, longer_timeout } = next else {
            out.result = Err(e);
            break;
        };
        if longer_timeout {
            // seeds/001: a timeout retries the same seed with more time
            attempt_timeout = attempt_timeout.map(|t| t.saturating_mul(2));
        }
        if next_seed && !seeds.order.is_empty() {
            seed_idx = (seed_idx + 1) % seeds.order.len();
        }
        inner.events.emit(|| Event::Retry {
            request_id: req.request_id,
            root_id: node.root_id,
            user_id: req.user_id.to_string(),
            target: spec.slug.to_string(),
            attempt,
            error_code: e.code.to_string(),
            message: e.message.clone(),
            delay_ms: delay.as_millis() as u64,
            next_seed: seeds.order.get(seed_idx).copied().filter(|_| next_seed),
        });
        out.result = Err(e);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = node.cancel.cancelled() => {
                out.result = Err(DelegationError::from_code(ErrorCode::Cancelled));
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use crate::pipeline::testing::{Flaky, request, runtime, send};
    use crate::protocol::{ErrorCode, Status};

    #[tokio::test(start_paused = true)]
    async fn a_transient_failure_is_retried_and_the_answer_counts_its_attempts() {
        let (worker, runs) = Flaky::new(1, ErrorCode::AgentFailed);
        let rt = runtime(worker);
        let r = send(&rt, request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.status, Status::Success, "{:?}", r.error);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(r.execution.as_ref().map(|e| e.attempts), Some(2));
        let stored = rt.store().delegation_tree(r.request_id).await.unwrap();
        assert_eq!(stored[0].attempts, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_stop_at_the_agents_limit_with_the_last_error() {
        let (worker, runs) = Flaky::new(10, ErrorCode::AgentFailed);
        let r = send(&runtime(worker), request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
        assert_eq!(runs.load(Ordering::SeqCst), 3, "max_attempts = 3");
        assert!(r.error.unwrap().message.contains("run 3"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_by_the_agent_is_not_retried() {
        let (worker, runs) = Flaky::new(10, ErrorCode::InvalidRequest);
        let r = send(&runtime(worker), request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::InvalidRequest));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
