//! The retry loop: each attempt checks its estimate against the budget,
//! passes the breaker, runs the agent inside the deadline, is charged to the
//! budget and verified; a failure retries (next seed, backoff, a longer
//! attempt timeout) while the plan and the deadline allow.

use std::time::Duration;

use tokio::time::Instant;

use super::admit::Admitted;
use super::seeds::Seeds;
use super::{attempt, context, verify};
use crate::agent::{AgentOutput, tokens};
use crate::protocol::{AttemptReport, DelegationError, ErrorClass, ErrorCode, Execution, Learned, TokenUsage, Verdict};
use crate::rails::budget;
use crate::resilience::{Next, RetryPlan};
use crate::runtime::Runtime;
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
    /// The attempts that failed by the agent's fault, with what each lacked.
    pub tried: Vec<AttemptReport>,
}

impl Attempts {
    fn failed(e: DelegationError) -> Self {
        Self {
            result: Err(e),
            execution: Execution::default(),
            verdict: None,
            learned: None,
            usage: TokenUsage::default(),
            tried: Vec::new(),
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
        let mut rejected_output = None;
        let result = result
            .inspect_err(|e| attempt::charge_spent(adm, e, &mut out.usage))
            .and_then(|o| attempt::charge(adm, estimate, o, &mut out.usage))
            .and_then(|o| match verify::check(&o, &checks, &mut out.verdict) {
                Ok(()) => Ok(o),
                Err(e) => {
                    rejected_output = Some(o.result);
                    Err(e)
                }
            });

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
        if e.code.is_agents_fault() {
            // kept, with what it lacked, for the caller and the next attempt
            let report = AttemptReport {
                attempt,
                seed: task.seed,
                error: e.clone(),
                verdict: out.verdict.clone().filter(|_| e.code == ErrorCode::VerificationFailed),
                output: rejected_output.map(|o| o.chars().take(AttemptReport::OUTPUT_CHARS).collect()),
            };
            task.rejected.push(report.lacked());
            out.tried.push(report);
        }
        if e.code == ErrorCode::VerificationFailed
            && let Some(seed) = task.seed
        {
            seeds.failed(rt, seed).await;
        }
        let remaining = node.deadline.saturating_duration_since(Instant::now());
        // an attempt that delegated is not repeated: its children had their
        // own retries, and would run twice
        // the same task to a deterministic agent gets the same answer: only
        // another seed or more time is a changed approach
        let untried_seed = seeds.order.len() > out.execution.seeds_tried.len();
        let same_again = agent.deterministic()
            && match e.code.class() {
                ErrorClass::Verification => !untried_seed,
                ErrorClass::Failure => true,
                _ => false,
            };
        let next = if node.children_started() > delegated_before || same_again {
            Next::GiveUp
        } else {
            plan.next(e.code.class(), attempt, remaining, jitter, e.retry_after)
        };
        let Next::Retry { delay, next_seed, longer_timeout } = next else {
            out.result = Err(e);
            break;
        };
        if longer_timeout {
            // a timeout retries the same seed with more time
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

    use std::sync::Arc;

    use crate::agent::{Agent, AgentContext, AgentOutput, OffThread, Task};
    use crate::pipeline::testing::{Flaky, Shared, request, runtime, send};
    use crate::protocol::{Check, DelegationError, ErrorCode, Status};

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

    /// Answers with a word count the checks reject until a retry names what
    /// was rejected; keeps what each attempt was told.
    struct Learner(std::sync::Mutex<Vec<Vec<String>>>);

    #[async_trait::async_trait]
    impl Agent for Learner {
        async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
            self.0.lock().unwrap().push(task.rejected.clone());
            let text = if task.rejected.is_empty() { "far too many words in this draft" } else { "short" };
            Ok(AgentOutput::new("draft", text))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_is_told_what_the_verifier_rejected_and_the_rejected_output_is_kept() {
        let learner = Arc::new(Learner(Default::default()));
        let rt = runtime(Shared(learner.clone()));
        let mut req = request("boss", "worker", "Say it", "hi");
        req.checks = vec![Check::MaxWords { max: 3 }];
        let r = send(&rt, req).await;
        assert_eq!(r.status, Status::Success, "{:?}", r.error);
        let told = learner.0.lock().unwrap().clone();
        assert_eq!(told.len(), 2);
        assert!(told[0].is_empty());
        assert_eq!(told[1], ["max_3_words (actual: 7)"], "the retry names the check and what was found");
        // the failed attempt is in the response with its verdict and output
        assert_eq!(r.attempts.len(), 1);
        let first = &r.attempts[0];
        assert_eq!((first.attempt, first.error.code), (1, ErrorCode::VerificationFailed));
        assert!(first.verdict.as_ref().is_some_and(|v| !v.passed));
        assert_eq!(first.output.as_deref(), Some("far too many words in this draft"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deterministic_agent_is_not_asked_the_same_task_again() {
        let (worker, runs) = Flaky::new(10, ErrorCode::AgentFailed);
        let r =
            send(&runtime(OffThread::deterministic(Arc::new(worker))), request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the same input would fail the same way");
        // the fallback says what was tried and what it lacked
        let fallback = r.fallback.expect("advice");
        assert!(
            fallback.reasoning.contains("Tried: attempt 1 lacked AGENT_FAILED: run 1 fails"),
            "{}",
            fallback.reasoning
        );
        assert_eq!(r.attempts.len(), 1);
        // a timeout is retried: more time is a changed approach
        let (worker, runs) = Flaky::new(1, ErrorCode::DeadlineExceeded);
        let r =
            send(&runtime(OffThread::deterministic(Arc::new(worker))), request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.status, Status::Success, "{:?}", r.error);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_by_the_agent_is_not_retried() {
        let (worker, runs) = Flaky::new(10, ErrorCode::InvalidRequest);
        let r = send(&runtime(worker), request("boss", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::InvalidRequest));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
