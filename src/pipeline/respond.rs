//! The response: what the attempts produced, with the subtree's token usage
//! (so a caller across a hop can reconcile its token budget), the execution, the
//! verifier's verdict, what was learned, and after a final failure what the
//! caller should do instead (`fallback`).

use super::admit::Admitted;
use super::attempts::Attempts;
use super::clock::Clock;
use crate::protocol::{
    AttemptReport, DelegationError, DelegationResponse, ErrorClass, ErrorCode, Execution, Fallback, Status,
};

/// The response of an admitted delegation that ran.
pub(super) fn response(adm: &Admitted, attempts: &Attempts, clock: &Clock) -> DelegationResponse {
    let req = &adm.req;
    let duration_ms = clock.elapsed_ms();
    let mut response = match &attempts.result {
        Ok(out) => DelegationResponse {
            status: out.status.unwrap_or(Status::Success),
            summary: out.summary.clone(),
            result: out.result.clone(),
            artifacts: out.artifacts.clone(),
            new_facts: out.new_facts.clone(),
            used_sources: out.used_sources.clone(),
            confidence: out.confidence,
            requires_followup: out.requires_followup,
            // an agent that answers with a question says so in its status
            error: (out.status == Some(Status::NeedsInput))
                .then(|| DelegationError::new(ErrorCode::NeedsInput, out.result.clone())),
            ..DelegationResponse::failed(req.request_id, req.target_employee.clone(), ErrorCode::AgentFailed.into())
        },
        Err(e) if e.code == ErrorCode::NeedsApproval => {
            let mut r =
                DelegationResponse::failed(req.request_id, req.target_employee.clone(), ErrorCode::AgentFailed.into());
            pause(&mut r, e.clone());
            r
        }
        Err(e) if e.code == ErrorCode::NeedsInput => {
            let mut r = DelegationResponse::failed(req.request_id, req.target_employee.clone(), e.clone());
            r.status = Status::NeedsInput;
            r.summary = "needs more from the user".into();
            r.result = e.message.clone();
            r.requires_followup = true;
            r.fallback = fallback(e);
            r
        }
        Err(e) => {
            let mut r = DelegationResponse::failed(req.request_id, req.target_employee.clone(), e.clone());
            r.fallback = fallback(e).map(|f| tried(f, &attempts.tried));
            r
        }
    };
    response.attempts = attempts.tried.clone();
    response.token_usage = attempts.usage;
    response.token_usage.add(adm.node.children_usage());
    response.duration_ms = duration_ms;
    response.child_session_id = adm.sessions.child.as_ref().map(|c| c.id);
    response.execution = Some(Execution { duration_ms, ..attempts.execution.clone() });
    response.verifier = attempts.verdict.clone();
    response.learned = attempts.learned.clone();
    response
}

/// Makes `response` a pause: the delegation waits for a person's approval
/// (`why` names it), whatever its agent made of the waiting child.
pub(super) fn pause(response: &mut DelegationResponse, why: DelegationError) {
    response.status = Status::NeedsApproval;
    response.summary = "waiting for approval".into();
    response.result = why.message.clone();
    response.requires_followup = true;
    response.fallback = None;
    response.error = Some(why);
}

/// The advice, saying what each attempt tried and lacked.
fn tried(mut f: Fallback, tried: &[AttemptReport]) -> Fallback {
    if tried.is_empty() {
        return f;
    }
    f.reasoning.push_str(". Tried: ");
    let each: Vec<String> = tried
        .iter()
        .map(|t| match t.seed {
            Some(seed) => format!("attempt {} (seed {seed}) lacked {}", t.attempt, t.lacked()),
            None => format!("attempt {} lacked {}", t.attempt, t.lacked()),
        })
        .collect();
    f.reasoning.push_str(&each.join("; "));
    f
}

/// What the caller should do after a final failure (`fallback`).
pub(super) fn fallback(e: &DelegationError) -> Option<Fallback> {
    let (recommended, reasoning) = match e.code.class() {
        ErrorClass::Verification => (
            "handle_directly",
            "All seeds failed verification within budget; the task may require judgment beyond deterministic execution",
        ),
        ErrorClass::Timeout => (
            "retry_later",
            "The agent did not answer within the deadline; retry with a longer deadline or a smaller task",
        ),
        ErrorClass::Unavailable => {
            ("retry_later", "The agent is unavailable; retry after its circuit breaker cools down")
        }
        ErrorClass::Failure => ("handle_directly", "The agent failed on every attempt; handle the task without it"),
        ErrorClass::NeedsInput => {
            ("ask_user", "The input lacks what the task needs; ask the user the question in the error")
        }
        _ if e.code == ErrorCode::InvalidRequest => {
            ("clarify_task_note", "The task is ambiguous or incomplete; refine the Task Note and delegate again")
        }
        _ => return None,
    };
    Some(Fallback { recommended: recommended.into(), reasoning: reasoning.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_failure_says_what_to_do_instead() {
        let advice = |code: ErrorCode| fallback(&code.into()).map(|f| f.recommended);
        assert_eq!(advice(ErrorCode::VerificationFailed).as_deref(), Some("handle_directly"));
        assert_eq!(advice(ErrorCode::DeadlineExceeded).as_deref(), Some("retry_later"));
        assert_eq!(advice(ErrorCode::AgentUnavailable).as_deref(), Some("retry_later"));
        assert_eq!(advice(ErrorCode::AgentFailed).as_deref(), Some("handle_directly"));
        assert_eq!(advice(ErrorCode::InvalidRequest).as_deref(), Some("clarify_task_note"));
        assert_eq!(advice(ErrorCode::NeedsInput).as_deref(), Some("ask_user"));
        assert_eq!(advice(ErrorCode::Cancelled), None, "a cancelled delegation needs no advice");
    }
}
