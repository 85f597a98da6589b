//! Why a Task Note cannot be delegated: each [`Problem`] (no goal, a vague
//! goal, no address, a reference to an earlier conversation, no criteria) and how it is found.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use super::spec::{TaskKind, TaskSpec};
use crate::verify::text::re;

/// One reason a Task Note cannot be delegated as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Problem {
    Empty,
    NoGoal,
    VagueGoal(String),
    NoRecipientAddress { name: Option<String> },
    RefersToConversation(String),
    NoCriteria,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the note is empty"),
            Self::NoGoal => {
                f.write_str("no clear goal: start with an action and its object, e.g. 'Draft apology email to …'")
            }
            Self::VagueGoal(what) => write!(f, "vague goal: '{what}' does not say what it is about"),
            Self::NoRecipientAddress { name: Some(name) } => {
                write!(f, "no recipient email address (only the name '{name}')")
            }
            Self::NoRecipientAddress { name: None } => f.write_str("no recipient email address"),
            Self::RefersToConversation(what) => {
                write!(f, "refers to an earlier conversation ('{what}'); state the facts in the note instead")
            }
            Self::NoCriteria => f.write_str(
                "no constraints or success criteria (add e.g. 'Max 120 words', 'Tone: …', 'Required: …', 'Mention …')",
            ),
        }
    }
}

/// Why a Task Note was refused: every problem found, not just the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) struct TaskNoteError {
    pub problems: Vec<Problem>,
}

impl fmt::Display for TaskNoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Task Note cannot be delegated: ")?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Patterns that leave the reader guessing what is meant, each with a label.
static VAGUE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)\b(?:that|this|the|some)\s+(?:thing|stuff|matter|issue|item)s?\b",
        r"(?i)\b(?:something|stuff|whatever|you know what)\b",
    ]
    .into_iter()
    .map(re)
    .collect()
});
static CONVERSATION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)\b(?:we|you|i|they)\s+(?:talked|spoke|discussed|chatted|agreed|mentioned)\b[^.\n]{0,30}?\b(?:earlier|before|yesterday|previously|last\s+(?:time|week)|the other day)\b",
        r"(?i)\bas\s+(?:we|i|you)?\s*(?:discussed|mentioned|agreed|said)\b",
        r"(?i)\b(?:earlier|previous|last|our)\s+(?:conversation|discussion|chat|call)\b",
        r"(?i)\b(?:talked|spoke)\s+about\s+(?:earlier|before)\b",
    ]
    .into_iter()
    .map(re)
    .collect()
});

pub(super) fn problems(spec: &TaskSpec, goal_clause: Option<&str>, instructions: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    match goal_clause {
        None => out.push(Problem::NoGoal),
        Some(goal) => {
            let about = format!("{goal} {}", spec.topic.as_deref().unwrap_or(""));
            if let Some(m) = VAGUE.iter().find_map(|r| r.find(&about)) {
                out.push(Problem::VagueGoal(m.as_str().to_string()));
            }
        }
    }
    if spec.kind == TaskKind::Email && spec.address().is_none() {
        out.push(Problem::NoRecipientAddress { name: spec.recipient.as_ref().and_then(|r| r.name.clone()) });
    }
    if let Some(m) = CONVERSATION.iter().find_map(|r| r.find(instructions)) {
        out.push(Problem::RefersToConversation(m.as_str().to_string()));
    }
    let ctx = &spec.context;
    let has_context = spec.address().is_some()
        || !ctx.dates.is_empty()
        || ctx.eta.is_some()
        || ctx.input.is_some()
        || !ctx.columns.is_empty()
        || !ctx.counts.is_empty()
        || !ctx.event.is_empty();
    if spec.checks().is_empty() && !has_context {
        out.push(Problem::NoCriteria);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_task_note_lists_what_is_missing() {
        let err = TaskSpec::parse("Email Alex about that thing we talked about earlier.").unwrap_err();
        assert_eq!(
            err.problems,
            vec![
                Problem::VagueGoal("that thing".into()),
                Problem::NoRecipientAddress { name: Some("Alex".into()) },
                Problem::RefersToConversation("we talked about earlier".into()),
                Problem::NoCriteria,
            ]
        );
        let msg = err.to_string();
        for part in
            ["no recipient email address", "'that thing'", "earlier conversation", "no constraints or success criteria"]
        {
            assert!(msg.contains(part), "{msg}");
        }
    }

    #[test]
    fn empty_and_goalless_notes_are_refused() {
        assert_eq!(TaskSpec::parse("  ").unwrap_err().problems, [Problem::Empty]);
        let err = TaskSpec::parse("Max 50 words.").unwrap_err();
        assert!(err.problems.contains(&Problem::NoGoal), "{err}");
    }
}
