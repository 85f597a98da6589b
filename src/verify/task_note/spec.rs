//! What a parsed Task Note holds: the [`TaskSpec`] (goal, kind, recipient,
//! topic, constraints, context, verification) and the checks that follow from it.

use serde_json::json;

use crate::protocol::Check;
use crate::verify::patterns;
use crate::verify::text::{self, KeyCase};

/// What a Task Note asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TaskSpec {
    pub goal: Goal,
    pub kind: TaskKind,
    pub recipient: Option<Recipient>,
    pub topic: Option<String>,
    pub constraints: Constraints,
    pub context: Context,
    pub verification: Verification,
}

/// `Draft apology email to …` → action `draft`, object `apology email`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Goal {
    pub action: String,
    pub object: String,
    /// What the object becomes or goes to when that is not a person
    /// (`to JSON format`, `to professional business style`).
    pub target: Option<String>,
}

/// Which tool agent a note is meant for, judged from its goal and fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum TaskKind {
    Email,
    Format,
    Data,
    Calendar,
    Report,
    #[default]
    Other,
}

impl TaskKind {
    /// The tool agent's slug (`email`, `format`, ...), none for `Other`.
    pub(crate) fn slug(self) -> Option<&'static str> {
        match self {
            Self::Email => Some("email"),
            Self::Format => Some("format"),
            Self::Data => Some("data"),
            Self::Calendar => Some("calendar"),
            Self::Report => Some("report"),
            Self::Other => None,
        }
    }
}

/// An address (possibly a PII token such as `<EMAIL_1>`), a name, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recipient {
    pub address: Option<String>,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Constraints {
    pub max_words: Option<usize>,
    pub min_words: Option<usize>,
    /// Phrases the output must contain (`Mention new ETA of Oct 22` → `Oct 22`).
    pub must_mention: Vec<String>,
    pub must_not_mention: Vec<String>,
    /// Normalized: lowercase, parts joined by `-` (`warm-professional`).
    pub tone: Option<String>,
    /// Required elements (`apologize`, `acknowledge impact`, ...).
    pub required: Vec<String>,
    pub subject_hint: Option<String>,
    /// The `Output:` line as written.
    pub output: Option<String>,
    pub key_case: Option<KeyCase>,
    /// The `Target:`/`Style:` line as written (`formal email greeting`).
    pub style_target: Option<String>,
    pub no_abbreviations: bool,
    pub capitalization: bool,
    pub greeting: bool,
    pub bullet_points: bool,
    /// Clauses no rule recognized (`Preserve intent, improve clarity`).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Context {
    pub dates: Vec<String>,
    pub eta: Option<String>,
    /// The material to work on: quoted text, CSV rows, a fenced block.
    pub input: Option<String>,
    pub columns: Vec<String>,
    /// `Input: 12 tasks completed, 3 in progress` → (`completed`, 12), (`in progress`, 3).
    pub counts: Vec<(String, u64)>,
    pub event: EventFields,
}

/// Calendar fields, kept as written where the agent has to interpret them
/// against the current time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EventFields {
    pub title: Option<String>,
    pub description: Option<String>,
    /// `now`, `tomorrow at 9am`, `2025-10-22 14:00`, ...
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_minutes: Option<u32>,
    pub busy: Option<bool>,
    pub reminders: Option<bool>,
    pub reminder_minutes: Option<u32>,
}

impl EventFields {
    pub(super) fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Machine-checkable success criteria stated in the note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Verification {
    pub json_array: bool,
    pub emails_valid: bool,
    pub unique: bool,
    pub completion_rate: bool,
}

impl TaskSpec {
    /// The checks that verify an output against this spec.
    pub(crate) fn checks(&self) -> Vec<Check> {
        let c = &self.constraints;
        let mut out = Vec::new();
        let mut regex = |pattern: &str| out.push(Check::Regex { pattern: pattern.to_string() });
        if self.kind == TaskKind::Calendar {
            regex(patterns::ICALENDAR);
        }
        if c.capitalization {
            regex(patterns::CAPITALIZED);
        }
        if c.greeting {
            regex(patterns::GREETING);
        }
        if c.bullet_points {
            regex(patterns::BULLETS);
        }
        if self.verification.completion_rate {
            regex(patterns::PERCENTAGE);
        }
        if let Some(max) = c.max_words {
            out.push(Check::MaxWords { max });
        }
        if let Some(min) = c.min_words {
            out.push(Check::MinWords { min });
        }
        let mut contains: Vec<String> = c.must_mention.clone();
        let mut not_contains: Vec<String> = c.must_not_mention.clone();
        if self.verification.completion_rate {
            contains.push("completion rate".into());
        }
        if c.no_abbreviations {
            let source = self.context.input.as_deref().unwrap_or_default();
            not_contains.extend(text::abbreviations_in(source).into_iter().map(String::from));
        }
        let event = &self.context.event;
        if self.kind == TaskKind::Calendar {
            contains.extend(event.title.clone());
            match event.busy {
                Some(true) => contains.push("TRANSP:OPAQUE".into()),
                Some(false) => contains.push("TRANSP:TRANSPARENT".into()),
                None => {}
            }
            match event.reminders {
                Some(true) => contains.push("BEGIN:VALARM".into()),
                Some(false) => not_contains.push("BEGIN:VALARM".into()),
                None => {}
            }
        }
        out.extend(contains.into_iter().map(|phrase| Check::Contains { phrase }));
        out.extend(not_contains.into_iter().map(|phrase| Check::NotContains { phrase }));
        if let Some(tone) = &c.tone {
            out.push(Check::Tone { tone: tone.clone() });
        }
        if !c.required.is_empty() {
            out.push(Check::Required { elements: c.required.clone() });
        }
        if let Some(case) = c.key_case {
            out.push(Check::KeyCase { case: case.name().into() });
        }
        if self.verification.json_array {
            let case = c.key_case.unwrap_or(KeyCase::Camel);
            let required: Vec<String> = self.context.columns.iter().map(|col| case.convert(col)).collect();
            let mut items = json!({"type": "object"});
            if !required.is_empty() {
                items["required"] = json!(required);
            }
            out.push(Check::JsonSchema { schema: json!({"type": "array", "minItems": 1, "items": items}) });
        }
        let email_field = self.email_column();
        if self.verification.emails_valid {
            out.push(Check::EmailsValid { field: email_field.clone() });
        }
        if self.verification.unique {
            out.push(Check::Unique { field: email_field });
        }
        out
    }

    /// The output key of the email column, if the note names one.
    pub(crate) fn email_column(&self) -> Option<String> {
        let case = self.constraints.key_case.unwrap_or(KeyCase::Camel);
        self.context.columns.iter().find(|c| c.to_ascii_lowercase().contains("mail")).map(|c| case.convert(c))
    }

    /// The recipient's address, if one was given.
    pub(crate) fn address(&self) -> Option<&str> {
        self.recipient.as_ref()?.address.as_deref()
    }
}
