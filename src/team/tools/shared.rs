//! What the five tool agents share: reading the Task Note and the material out
//! of a task, the `INVALID_REQUEST` they refuse a note with, picking the
//! variant a seed stands for, and plural nouns.

use crate::agent::Task;
use crate::protocol::{DelegationError, ErrorCode};
use crate::verify::{Problem, TaskSpec};

/// The parsed note and the material to work on. The material is the note's
/// own input (a quoted text, a CSV block), else the task's input when the
/// note came separately: as `task_note`, or as the objective when the input
/// does not itself read like an instruction.
pub(crate) fn read_task(task: &Task) -> Result<(TaskSpec, Option<String>), DelegationError> {
    let nonblank = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let (note, extra) = match task.task_note.as_deref().filter(|n| !n.trim().is_empty()) {
        Some(note) => (note, nonblank(&task.input)),
        None => {
            let input_is_note = !TaskSpec::parse_lenient(&task.input).1.contains(&Problem::NoGoal);
            if nonblank(&task.input).is_some() && nonblank(&task.objective).is_some() && !input_is_note {
                (task.objective.as_str(), nonblank(&task.input))
            } else {
                (task.text(), None)
            }
        }
    };
    let spec = TaskSpec::parse(note).map_err(|e| invalid(e.to_string()))?;
    let input = spec.context.input.clone().or(extra);
    Ok((spec, input))
}

/// An `INVALID_REQUEST` error saying what is wrong with the note.
pub(crate) fn invalid(message: impl Into<String>) -> DelegationError {
    DelegationError::new(ErrorCode::InvalidRequest, message)
}

pub(crate) use crate::team::seeds::variant as variant_index;

/// `n task`/`n tasks`.
pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 { format!("{n} {noun}") } else { format!("{n} {noun}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_is_the_note_when_the_input_is_material() {
        let task = Task::new("Format this text to formal style. No abbreviations.", "pls send it thx");
        let (spec, input) = read_task(&task).unwrap();
        assert_eq!(spec.goal.action, "format");
        assert_eq!(input.as_deref(), Some("pls send it thx"));
        let task = Task::new("ignored", "Draft email to a@b.com about lunch. Max 30 words.");
        assert_eq!(read_task(&task).unwrap().0.goal.action, "draft");
    }

    #[test]
    fn every_seed_value_picks_a_variant() {
        let seeds = [70, 20, 30];
        assert_eq!(variant_index(&seeds, None), 0);
        assert_eq!(variant_index(&seeds, Some(20)), 1);
        assert_eq!(variant_index(&seeds, Some(4)), 1, "unknown seeds by remainder");
        assert_eq!(variant_index(&seeds, Some(u64::MAX)), 0);
        assert_eq!(variant_index(&[], Some(9)), 0);
    }
}
