//! Verification: the checks of a request (its explicit `checks` and those
//! derived from its Task Note) run on every attempt's output; an
//! output that fails them is `VERIFICATION_FAILED` and may be retried with
//! the next seed.

use crate::agent::AgentOutput;
use crate::protocol::{Check, DelegationError, DelegationRequest, ErrorCode, Verdict};
use crate::verify;

/// The checks `req` asks for; an unusable Task Note is refused here.
pub(super) fn checks(req: &DelegationRequest) -> Result<Vec<Check>, DelegationError> {
    verify::checks_for(req.task_note.as_deref(), &req.checks)
}

/// Passes `output` if it meets every check; the verdict is kept either way.
pub(super) fn check(
    output: &AgentOutput,
    checks: &[Check],
    verdict: &mut Option<Verdict>,
) -> Result<(), DelegationError> {
    if checks.is_empty() {
        return Ok(());
    }
    let v = verify::verify(&output.result, &output.artifacts, checks);
    let (passed, failed) = (v.passed, v.failed().join(", "));
    *verdict = Some(v);
    if passed {
        Ok(())
    } else {
        Err(DelegationError::new(ErrorCode::VerificationFailed, format!("output failed checks: {failed}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_misses_a_check_fails_with_the_checks_named() {
        let checks = vec![Check::Contains { phrase: "hello".into() }];
        let mut verdict = None;
        assert!(check(&AgentOutput::new("", "hello there"), &checks, &mut verdict).is_ok());
        assert!(verdict.as_ref().is_some_and(|v| v.passed));
        let err = check(&AgentOutput::new("", "goodbye"), &checks, &mut verdict).unwrap_err();
        assert_eq!(err.code, ErrorCode::VerificationFailed);
        assert!(err.message.contains("contains_hello"), "{}", err.message);
        assert!(verdict.is_some_and(|v| !v.passed));
        assert!(check(&AgentOutput::new("", "anything"), &[], &mut None).is_ok(), "no checks, nothing to fail");
    }
}
