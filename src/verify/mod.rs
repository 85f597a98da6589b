//! Task Notes → checks → verdicts (docs/DESIGN.md#retries-seeds-and-verification).
//!
//! [`TaskSpec::parse`] reads a Task Note, [`TaskSpec::checks`] derives the
//! checks, [`verify`] evaluates checks against an agent's output, and
//! [`decision::score`] says whether a task is worth delegating at all.

pub(crate) mod checks;
pub(crate) mod decision;
pub(crate) mod patterns;
pub(crate) mod task_note;
pub(crate) mod text;
pub(crate) mod tone;

pub(crate) use checks::{contains_phrase, element_present, verify};
pub(crate) use decision::DecisionScore;
pub(crate) use task_note::{Constraints, Problem, TaskSpec};

use std::mem::discriminant;

use crate::protocol::{Check, DelegationError, ErrorCode};

/// The checks for a delegation: those derived from its Task Note followed by
/// the explicit ones. An explicit word limit, tone or key case replaces the
/// note's. A note that cannot be delegated is `INVALID_REQUEST` with every
/// problem listed; a blank note counts as none.
pub(crate) fn checks_for(task_note: Option<&str>, explicit: &[Check]) -> Result<Vec<Check>, DelegationError> {
    let Some(note) = task_note.filter(|n| !n.trim().is_empty()) else {
        return Ok(explicit.to_vec());
    };
    let spec = TaskSpec::parse(note).map_err(|e| DelegationError::new(ErrorCode::InvalidRequest, e.to_string()))?;
    let single = |c: &Check| {
        matches!(c, Check::MaxWords { .. } | Check::MinWords { .. } | Check::Tone { .. } | Check::KeyCase { .. })
    };
    let mut out: Vec<Check> = spec
        .checks()
        .into_iter()
        .filter(|c| {
            let overridden = single(c) && explicit.iter().any(|e| discriminant(e) == discriminant(c));
            !explicit.contains(c) && !overridden
        })
        .collect();
    out.extend_from_slice(explicit);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_for_merges_note_and_explicit_checks() {
        let note = "Draft email to a@b.com about lunch. Max 120 words. Mention Oct 22.";
        let explicit = [Check::MaxWords { max: 60 }, Check::Contains { phrase: "Oct 22".into() }];
        let checks = checks_for(Some(note), &explicit).unwrap();
        assert_eq!(checks, explicit.to_vec(), "explicit limit replaces the note's, duplicates collapse");
        assert_eq!(checks_for(None, &explicit).unwrap(), explicit.to_vec());
        assert_eq!(checks_for(Some("  "), &[]).unwrap(), vec![]);
    }

    #[test]
    fn checks_for_refuses_a_bad_note_as_invalid_request() {
        let err = checks_for(Some("Email Alex about that thing we talked about earlier"), &[]).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert!(err.message.contains("no recipient email address"), "{}", err.message);
        assert!(err.message.contains("that thing"), "{}", err.message);
    }
}
