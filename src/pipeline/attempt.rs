//! One attempt: the agent runs until it answers, the deadline passes (its
//! work is dropped and cancelled) or the caller cancels; its answer is
//! redacted before it flows up the tree and charged to the budget.

use std::time::Duration;

use tokio::time::Instant;

use super::admit::Admitted;
use super::dispatch::agent_context;
use super::pii::Pii;
use crate::agent::{AgentOutput, Task, TokenEstimate, tokens};
use crate::protocol::{DelegationError, ErrorCode, TokenUsage};
use crate::rails::deadline;
use crate::resilience::Failure;
use crate::runtime::Runtime;

/// Runs the agent once. `timeout` is the agent's own per-attempt limit, if
/// it has one; the delegation's deadline ends everything.
pub(super) async fn run(
    rt: &Runtime,
    adm: &Admitted,
    task: &Task,
    timeout: Option<Duration>,
) -> Result<AgentOutput, DelegationError> {
    let node = &adm.node;
    let attempt_end = timeout.map_or(node.deadline, |t| (Instant::now() + t).min(node.deadline));
    let timed_out = || {
        if attempt_end < node.deadline {
            let ms = timeout.unwrap_or_default().as_millis();
            DelegationError::new(ErrorCode::DeadlineExceeded, format!("Attempt timeout after {ms}ms"))
        } else {
            deadline::timeout_error(Duration::from_millis(adm.deadline_ms))
        }
    };
    let cancel = node.cancel.child_token();
    let ctx = agent_context(node, rt, cancel.clone());
    let result = tokio::select! {
        // a cancelled delegation is cancelled, even if its agent answered in the same instant
        biased;
        _ = node.cancel.cancelled() => Err(DelegationError::from_code(ErrorCode::Cancelled)),
        r = adm.member.agent.run(&ctx, task) => r,
        _ = tokio::time::sleep_until(attempt_end) => Err(timed_out()),
    };
    cancel.cancel();
    let mut out = result?;
    Pii::new(&rt.inner.redactor, Some(&node.tree)).output(&mut out);
    Ok(out)
}

/// Charges what the answer used to the delegation's budget (children's
/// usage is in the tree's token accounts already; this is the agent's own). The budget
/// holds even when an answer runs long: what was left is charged and the
/// answer refused.
pub(super) fn charge(
    adm: &Admitted,
    estimate: TokenEstimate,
    out: AgentOutput,
    usage: &mut TokenUsage,
) -> Result<AgentOutput, DelegationError> {
    let used = out.token_usage.unwrap_or_else(|| {
        TokenUsage::new(estimate.prompt, tokens::approx(&out.result).saturating_add(tokens::approx(&out.summary)))
    });
    let left = adm.budget.remaining();
    if used.total > left {
        adm.budget.charge(left);
        usage.add(TokenUsage::new(left, 0));
        return Err(DelegationError::new(
            ErrorCode::TokenBudgetExceeded,
            format!(
                "the answer used {} tokens but only {left} were left of this delegation's budget ({}); ask for a shorter answer or a larger budget",
                used.total,
                adm.budget.grant()
            ),
        ));
    }
    adm.budget.charge(used.total);
    usage.add(used);
    Ok(out)
}

/// Charges what a failed attempt had already used (a model's counted reply
/// before the failure: [`DelegationError::spent`]), as far as the budget reaches.
pub(super) fn charge_spent(adm: &Admitted, e: &DelegationError, usage: &mut TokenUsage) {
    let Some(spent) = e.spent else { return };
    let charged = spent.total.min(adm.budget.remaining());
    adm.budget.charge(charged);
    usage.add(if charged == spent.total { spent } else { TokenUsage::new(charged, 0) });
}

/// Failures that say something about the agent's health, and how the
/// breaker counts them: a failure on a request may be the request's doing
/// (it opens the agent's breaker only across users); a timeout or an
/// unreachable backend is not, unless the caller cut the deadline short
/// (`shortened`), when the timeout may be theirs too.
pub(super) fn breaker_failure(code: ErrorCode, shortened: bool) -> Option<Failure> {
    match code {
        ErrorCode::AgentFailed => Some(Failure::OnRequest),
        ErrorCode::DeadlineExceeded if shortened => Some(Failure::OnRequest),
        ErrorCode::DeadlineExceeded | ErrorCode::AgentUnavailable => Some(Failure::Fault),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_agents_own_faults_count_against_its_breaker() {
        assert_eq!(breaker_failure(ErrorCode::AgentFailed, false), Some(Failure::OnRequest));
        for code in [ErrorCode::DeadlineExceeded, ErrorCode::AgentUnavailable] {
            assert_eq!(breaker_failure(code, false), Some(Failure::Fault), "{code}");
        }
        // a timeout under a deadline the caller cut short is not proof of a broken agent
        assert_eq!(breaker_failure(ErrorCode::DeadlineExceeded, true), Some(Failure::OnRequest));
        for code in [
            ErrorCode::InvalidRequest,
            ErrorCode::VerificationFailed,
            ErrorCode::TokenBudgetExceeded,
            ErrorCode::Cancelled,
            ErrorCode::PermissionDenied,
            ErrorCode::NeedsInput,
        ] {
            assert!(breaker_failure(code, false).is_none(), "{code}");
        }
    }
}
