//! Task Notes: structured natural language from a main agent to a
//! tool agent, parsed into a [`TaskSpec`] with its goal, recipient, topic,
//! constraints, context and verification, from which the checks follow.
//!
//! The note is read in three passes: the input (a quoted text, a CSV block, a
//! fenced block or the lines after `Data:`) is taken out; the rest is split
//! into clauses (sentences and lines, quote-aware); the first clause that
//! starts with an action verb is the goal and every other clause is matched
//! against `rules::RULES`, a table of anchored patterns and what each one sets.
//! Clauses no rule knows are kept in `constraints.notes`.

mod clause;
mod finish;
mod goal;
mod input;
mod problems;
mod rules;
mod spec;
mod timing;

pub(crate) use problems::{Problem, TaskNoteError};
pub(crate) use spec::{Constraints, TaskSpec};
pub(crate) use timing::parse_duration;

use std::sync::LazyLock;

use regex::Regex;

use self::clause::split_sentences;
use self::finish::finish;
use self::goal::{apply_goal, starts_with_action};
use self::input::split_input;
use self::problems::problems;
use self::rules::apply_rules;
use crate::verify::text::{self, DATE_PATTERN, re};

impl TaskSpec {
    /// Parses a note, refusing one that is not self-contained and checkable.
    pub(crate) fn parse(note: &str) -> Result<TaskSpec, TaskNoteError> {
        let (spec, problems) = Self::parse_lenient(note);
        if problems.is_empty() { Ok(spec) } else { Err(TaskNoteError { problems }) }
    }

    /// Parses what can be parsed and lists the problems instead of failing,
    /// for callers that weigh a note rather than refuse it (the decision score).
    pub(crate) fn parse_lenient(note: &str) -> (TaskSpec, Vec<Problem>) {
        let mut spec = TaskSpec::default();
        if note.trim().is_empty() {
            return (spec, vec![Problem::Empty]);
        }
        let (instructions, input) = split_input(note);
        spec.context.input = input;
        spec.context.dates = text::dates_in(&instructions);
        spec.context.eta = ETA.captures(&instructions).and_then(|c| c.get(1)).map(|m| m.as_str().to_string());

        let clauses: Vec<String> = instructions.lines().flat_map(split_sentences).collect();
        let goal_at = clauses.iter().position(|c| starts_with_action(c));
        if let Some(i) = goal_at {
            apply_goal(&mut spec, &clauses[i]);
        }
        for (i, clause) in clauses.iter().enumerate() {
            if Some(i) != goal_at {
                apply_rules(&mut spec, clause);
            }
        }
        finish(&mut spec, &instructions);
        let problems = problems(&spec, goal_at.map(|i| clauses[i].as_str()), &instructions);
        (spec, problems)
    }

    /// Whether every sentence of `clause` is a line a Task Note's rules
    /// read (a tone, a length, a topic, a recipient …) rather than one kept
    /// as a free note: such a line belongs to the note it is in.
    pub(crate) fn reads_as_constraint(clause: &str) -> bool {
        let sentences = split_sentences(clause);
        !sentences.is_empty()
            && sentences.iter().all(|sentence| {
                let mut spec = TaskSpec::default();
                apply_rules(&mut spec, sentence);
                spec.constraints.notes.is_empty() && spec != TaskSpec::default()
            })
    }
}

static ETA: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:eta|deadline|due(?:\s+date)?|timeline|deliver(?:y|ed)?(?:\s+date)?|launch(?:\s+date)?)\b[^.\n]{{0,20}}?({DATE_PATTERN})"
    ))
});

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::spec::TaskKind;
    use super::*;
    use crate::protocol::Check;
    use crate::verify::patterns;
    use crate::verify::text::KeyCase;
    pub(crate) const EMAIL_NOTE: &str = "Draft apology email to alex.chan@company.com about missed project deadline.\nMention new ETA of Oct 22.\nTone: warm-professional.\nLength: max 120 words.\nRequired: apologize, acknowledge impact, provide new timeline.\nSubject hint: \"Apology for delay\"";
    pub(crate) const FORMAT_NOTE: &str = "Format this text to professional business style:\n\"hey can u send me the report thx\"\n\nTarget: formal email greeting.\nPreserve intent, improve clarity.\nNo abbreviations, proper capitalization.";
    pub(crate) const DATA_NOTE: &str = "Transform CSV data to JSON format.\nInput columns: name, email, role.\nOutput structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.";
    const CALENDAR_NOTE: &str = "Block calendar for 2 hours from now.\nEvent title: 'Deep Work Session'\nDescription: 'Focus time - no interruptions'\nStatus: Busy\nReminders: off";
    const REPORT_NOTE: &str = "Format weekly progress report.\nInput: 12 tasks completed, 3 in progress, 2 blocked.\nOutput: Professional summary, bullet points, metrics.\nInclude completion rate calculation.\nMax 300 words.";

    #[test]
    fn email_note_yields_goal_recipient_topic_constraints_and_context() {
        let spec = TaskSpec::parse(EMAIL_NOTE).unwrap();
        assert_eq!(spec.kind, TaskKind::Email);
        assert_eq!((spec.goal.action.as_str(), spec.goal.object.as_str()), ("draft", "apology email"));
        let r = spec.recipient.clone().unwrap();
        assert_eq!(r.address.as_deref(), Some("alex.chan@company.com"));
        assert_eq!(r.name.as_deref(), Some("Alex"));
        assert_eq!(spec.topic.as_deref(), Some("missed project deadline"));
        let c = &spec.constraints;
        assert_eq!(c.max_words, Some(120));
        assert_eq!(c.must_mention, ["Oct 22"]);
        assert_eq!(c.tone.as_deref(), Some("warm-professional"));
        assert_eq!(c.required, ["apologize", "acknowledge impact", "provide new timeline"]);
        assert_eq!(c.subject_hint.as_deref(), Some("Apology for delay"));
        assert_eq!(spec.context.eta.as_deref(), Some("Oct 22"));
        assert_eq!(spec.context.dates, ["Oct 22"]);
    }

    #[test]
    fn a_notes_own_lines_read_as_constraints_and_requests_do_not() {
        for line in ["Tone: friendly.", "Max 100 words.", "Tone: warm-professional", "Length: max 120 words."] {
            assert!(TaskSpec::reads_as_constraint(line), "{line}");
        }
        for line in ["what did I spend on food in october", "", "Draft email to landlord."] {
            assert!(!TaskSpec::reads_as_constraint(line), "{line}");
        }
    }

    #[test]
    fn email_note_checks_match_seed_001() {
        let checks = TaskSpec::parse(EMAIL_NOTE).unwrap().checks();
        assert_eq!(
            checks,
            vec![
                Check::MaxWords { max: 120 },
                Check::Contains { phrase: "Oct 22".into() },
                Check::Tone { tone: "warm-professional".into() },
                Check::Required {
                    elements: vec!["apologize".into(), "acknowledge impact".into(), "provide new timeline".into()]
                },
            ]
        );
    }

    #[test]
    fn format_note_takes_quoted_input_and_style_rules() {
        let spec = TaskSpec::parse(FORMAT_NOTE).unwrap();
        assert_eq!(spec.kind, TaskKind::Format);
        assert_eq!(spec.context.input.as_deref(), Some("hey can u send me the report thx"));
        assert_eq!(spec.goal.target.as_deref(), Some("professional business style"));
        assert!(spec.constraints.no_abbreviations && spec.constraints.capitalization && spec.constraints.greeting);
        assert_eq!(spec.constraints.tone.as_deref(), Some("professional"));
        assert_eq!(spec.constraints.notes, ["Preserve intent", "improve clarity"]);
        let checks = spec.checks();
        assert!(checks.contains(&Check::NotContains { phrase: "u".into() }));
        assert!(checks.contains(&Check::NotContains { phrase: "thx".into() }));
        assert!(checks.contains(&Check::Regex { pattern: patterns::GREETING.into() }));
    }

    #[test]
    fn data_note_yields_columns_case_and_validation() {
        let note = format!("{DATA_NOTE}\nname,email,role\nAda, ada@x.com, admin\nBob,bob@x.com,dev");
        let spec = TaskSpec::parse(&note).unwrap();
        assert_eq!(spec.kind, TaskKind::Data);
        assert_eq!(spec.context.columns, ["name", "email", "role"]);
        assert_eq!(spec.constraints.key_case, Some(KeyCase::Camel));
        assert!(spec.verification.json_array && spec.verification.emails_valid && spec.verification.unique);
        assert_eq!(spec.context.input.as_deref(), Some("name,email,role\nAda, ada@x.com, admin\nBob,bob@x.com,dev"));
        let checks = spec.checks();
        assert!(checks.contains(&Check::KeyCase { case: "camel".into() }));
        assert!(checks.contains(&Check::EmailsValid { field: Some("email".into()) }));
        assert!(checks.contains(&Check::Unique { field: Some("email".into()) }));
        assert!(checks.iter().any(|c| matches!(c, Check::JsonSchema { schema } if schema["items"]["required"] == json!(["name", "email", "role"]))));
    }

    #[test]
    fn calendar_note_yields_event_fields() {
        let spec = TaskSpec::parse(CALENDAR_NOTE).unwrap();
        assert_eq!(spec.kind, TaskKind::Calendar);
        let e = &spec.context.event;
        assert_eq!(e.duration_minutes, Some(120));
        assert_eq!(e.start.as_deref(), Some("from now"));
        assert_eq!(e.title.as_deref(), Some("Deep Work Session"));
        assert_eq!(e.description.as_deref(), Some("Focus time - no interruptions"));
        assert_eq!((e.busy, e.reminders), (Some(true), Some(false)));
        let checks = spec.checks();
        assert!(checks.contains(&Check::Contains { phrase: "Deep Work Session".into() }));
        assert!(checks.contains(&Check::NotContains { phrase: "BEGIN:VALARM".into() }));
    }

    #[test]
    fn report_note_yields_counts_and_report_checks() {
        let spec = TaskSpec::parse(REPORT_NOTE).unwrap();
        assert_eq!(spec.kind, TaskKind::Report);
        assert_eq!(
            spec.context.counts,
            [("completed".to_string(), 12), ("in progress".to_string(), 3), ("blocked".to_string(), 2)]
        );
        assert!(spec.verification.completion_rate && spec.constraints.bullet_points);
        assert_eq!(spec.constraints.max_words, Some(300));
        assert!(spec.checks().contains(&Check::Contains { phrase: "completion rate".into() }));
    }

    proptest::proptest! {
        #[test]
        fn parsing_any_text_never_panics(note in "\\PC{0,300}") {
            let (spec, problems) = TaskSpec::parse_lenient(&note);
            let _ = spec.checks();
            proptest::prop_assert_eq!(TaskSpec::parse(&note).is_ok(), problems.is_empty());
        }
    }
}
