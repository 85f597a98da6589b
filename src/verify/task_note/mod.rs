//! Task Notes (seeds/001): structured natural language from a main agent to a
//! tool agent, parsed into a [`TaskSpec`] with its goal, recipient, topic,
//! constraints, context and verification, from which the checks follow.
//!
//! The note is read in three passes: the input (a quoted text, a CSV block, a
//! fenced block or the lines after `Data:`) is taken out; the rest is split
//! into clauses (sentences and lines, quote-aware); the first clause that
//! starts with an action verb is the goal and every other clause is matched
//! against [`RULES`], a table of anchored patterns and what each one sets.
//! Clauses no rule knows are kept in `constraints.notes`.

use std::fmt;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::json;

use super::patterns;
use super::text::{self, DATE_PATTERN, KeyCase, re};
use crate::protocol::Check;

/// What a Task Note asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskSpec {
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
pub struct Goal {
    pub action: String,
    pub object: String,
    /// What the object becomes or goes to when that is not a person
    /// (`to JSON format`, `to professional business style`).
    pub target: Option<String>,
}

/// Which tool agent a note is meant for, judged from its goal and fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskKind {
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
    pub fn slug(self) -> Option<&'static str> {
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
pub struct Recipient {
    pub address: Option<String>,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
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
pub struct Context {
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
pub struct EventFields {
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
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Machine-checkable success criteria stated in the note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    pub json_array: bool,
    pub emails_valid: bool,
    pub unique: bool,
    pub completion_rate: bool,
}

/// One reason a Task Note cannot be delegated as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
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
pub struct TaskNoteError {
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

impl TaskSpec {
    /// Parses a note, refusing one that is not self-contained and checkable.
    pub fn parse(note: &str) -> Result<TaskSpec, TaskNoteError> {
        let (spec, problems) = Self::parse_lenient(note);
        if problems.is_empty() { Ok(spec) } else { Err(TaskNoteError { problems }) }
    }

    /// Parses what can be parsed and lists the problems instead of failing,
    /// for callers that weigh a note rather than refuse it (the decision score).
    pub fn parse_lenient(note: &str) -> (TaskSpec, Vec<Problem>) {
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

    /// The checks that verify an output against this spec.
    pub fn checks(&self) -> Vec<Check> {
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
    pub fn email_column(&self) -> Option<String> {
        let case = self.constraints.key_case.unwrap_or(KeyCase::Camel);
        self.context.columns.iter().find(|c| c.to_ascii_lowercase().contains("mail")).map(|c| case.convert(c))
    }

    /// The recipient's address, if one was given.
    pub fn address(&self) -> Option<&str> {
        self.recipient.as_ref()?.address.as_deref()
    }
}

// ---------------------------------------------------------------------------
// Input extraction and clause splitting

static FENCED: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)```[A-Za-z]*[ \t]*\r?\n(.*?)```"));
static INPUT_HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^\s*(?:input|data|csv|text|content|rows)\s*:\s*$"));
static INLINE_QUOTE: LazyLock<Regex> = LazyLock::new(|| re(r#"^(.+?):\s*(?:"([^"]+)"|“([^”]+)”)(.*)$"#));
static KEY_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*[A-Za-z][\w \-]{0,30}:\s"));

/// Separates the material to work on from the instructions.
fn split_input(note: &str) -> (String, Option<String>) {
    if let Some(m) = FENCED.captures(note) {
        let whole = m.get(0).map_or(0..0, |w| w.range());
        let inner = m.get(1).map_or("", |i| i.as_str()).trim().to_string();
        let rest = format!("{}\n{}", &note[..whole.start], &note[whole.end..]);
        return (rest, Some(inner));
    }
    let lines: Vec<&str> = note.lines().collect();
    if let Some(i) = lines.iter().position(|l| INPUT_HEADER.is_match(l)) {
        let input = lines[i + 1..].join("\n").trim().to_string();
        if !input.is_empty() {
            return (lines[..i].join("\n"), Some(input));
        }
    }
    // A quoted block on lines of its own, after an instruction.
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let Some(close) = opening_quote(t) else {
            continue;
        };
        if i == 0 && !t.ends_with(close) {
            continue;
        }
        if let Some(end) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim();
            l.ends_with(close) && (j > i || l.chars().count() > 1)
        }) {
            let block = lines[i..=end].join("\n");
            // `"Hopper, Grace",grace@x.io,"dev"` is a CSV row, not a quotation.
            let inner = block.trim().chars().skip(1).collect::<String>();
            if close != '\'' && inner.trim_end_matches(close).contains(close) {
                continue;
            }
            let input = text::unquote(block.trim()).to_string();
            let rest: Vec<&str> = lines[..i].iter().chain(&lines[end + 1..]).copied().collect();
            return (rest.join("\n"), Some(input));
        }
    }
    // `Format this text to business style: "hey can u …"` on one line; a short
    // prefix that is no instruction is a field (`Subject hint: "…"`).
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = INLINE_QUOTE.captures(line.trim()) {
            let prefix = c.get(1).map_or("", |m| m.as_str());
            if starts_with_action(prefix) || prefix.split_whitespace().count() >= 4 {
                let input = c.get(2).or(c.get(3)).map_or("", |m| m.as_str()).trim().to_string();
                let mut rest: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                rest[i] = format!("{prefix}:{}", c.get(4).map_or("", |m| m.as_str()));
                return (rest.join("\n"), Some(input));
            }
        }
    }
    let lower = note.to_ascii_lowercase();
    if let Some((start, end)) = csv_block(&lines, lower.contains("csv") || lower.contains("column")) {
        let input = lines[start..end].iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n");
        let rest: Vec<&str> = lines[..start].iter().chain(&lines[end..]).copied().collect();
        return (rest.join("\n"), Some(input));
    }
    (note.to_string(), None)
}

fn opening_quote(line: &str) -> Option<char> {
    match line.chars().next()? {
        '"' => Some('"'),
        '“' => Some('”'),
        '\'' => Some('\''),
        _ => None,
    }
}

/// The first run of lines that read as CSV rows: commas outside quotes, the
/// same count on each line, no `Key: value` shape, no sentence ending. Unless
/// the note announces CSV, a block needs two lines and a digit or an `@`
/// somewhere, so that comma-separated instructions are not taken for data.
fn csv_block(lines: &[&str], expects_csv: bool) -> Option<(usize, usize)> {
    let csv_commas = |l: &str| {
        let t = l.trim();
        if t.is_empty() || t.ends_with('.') || KEY_PREFIX.is_match(t) {
            return 0;
        }
        let mut quoted = false;
        t.chars()
            .filter(|&c| {
                if c == '"' {
                    quoted = !quoted;
                }
                c == ',' && !quoted
            })
            .count()
    };
    let min_rows = if expects_csv { 1 } else { 2 };
    let data_like =
        |rows: &[&str]| expects_csv || rows.iter().any(|l| l.contains('@') || l.contains(|c: char| c.is_ascii_digit()));
    let mut i = 0;
    while i < lines.len() {
        let n = csv_commas(lines[i]);
        if n == 0 {
            i += 1;
            continue;
        }
        let end = (i..lines.len()).find(|&j| csv_commas(lines[j]) != n).unwrap_or(lines.len());
        if end - i >= min_rows && data_like(&lines[i..end]) {
            return Some((i, end));
        }
        i = end;
    }
    None
}

#[rustfmt::skip]
const ABBREVIATED_WORDS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "approx", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
];

/// Splits a line into sentences at `.`, `!`, `?` followed by a blank, outside
/// quotes and not after an abbreviation (`Oct. 22`, `e.g.`).
fn split_sentences(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        match quote {
            Some(q) if c == q && (q != '\'' || next.is_none_or(|n| !n.is_alphanumeric())) => quote = None,
            Some(_) => {}
            None => match c {
                '"' => quote = Some('"'),
                '“' => quote = Some('”'),
                '‘' => quote = Some('’'),
                '\'' if prev.is_none_or(|p| p.is_whitespace() || matches!(p, ':' | '(')) => quote = Some('\''),
                '.' | '!' | '?' if next.is_none_or(char::is_whitespace) => {
                    let body = &cur[..cur.len() - 1];
                    let last = body.rsplit(|ch: char| ch.is_whitespace()).next().unwrap_or("").to_ascii_lowercase();
                    if c != '.' || !ABBREVIATED_WORDS.contains(&last.as_str()) {
                        out.push(std::mem::take(&mut cur));
                    }
                }
                _ => {}
            },
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().trim_end_matches(['.', ';']).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

// ---------------------------------------------------------------------------
// The goal

#[rustfmt::skip]
const ACTIONS: &[&str] = &[
    "draft", "write", "compose", "send", "email", "e-mail", "message", "reply", "respond",
    "forward", "ping", "contact", "notify", "remind", "format", "reformat", "rewrite", "polish",
    "edit", "proofread", "clean", "convert", "transform", "parse", "extract", "normalize", "map",
    "block", "schedule", "book", "reserve", "hold", "create", "generate", "prepare", "produce",
    "compile", "summarize", "summarise", "make", "build", "update", "plan", "brainstorm", "develop",
    "design", "come", "think", "imagine", "invent", "translate", "calculate", "analyze", "analyse",
    "research", "find", "review", "start", "set", "add", "organize", "figure", "decide",
];
/// Verbs whose first argument is the recipient (`Email Alex about …`).
#[rustfmt::skip]
const MESSAGE_VERBS: &[&str] = &[
    "email", "e-mail", "message", "ping", "contact", "notify", "remind",
];
const CALENDAR_VERBS: &[&str] = &["block", "schedule", "book", "reserve", "hold"];

static GOAL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^(?:please\s+)?([a-z][a-z-]*)\b\s*(.*)$"));
static PREPOSITION: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\s+(to|about|regarding|concerning|re:|for)\s+"));
static MESSAGE_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:e-?mail|message|note|letter|reply|memo|dm)s?\b"));
static CALENDAR_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:calendar|focus|session|meeting|event|time slot|appointment)\b"));
static PERSON: LazyLock<Regex> = LazyLock::new(|| re(r"^\p{Lu}[\p{L}'-]*(?:\s+\p{Lu}[\p{L}'-]*){0,2}$"));

/// `Draft …` is a goal; `Start: 9am` is a field that happens to start with a verb.
fn starts_with_action(clause: &str) -> bool {
    GOAL.captures(clause).is_some_and(|c| {
        let verb = cap(&c, 1).to_ascii_lowercase();
        ACTIONS.contains(&verb.as_str()) && !cap(&c, 2).starts_with(':')
    })
}

fn strip_article(s: &str) -> String {
    let t = s.trim().trim_end_matches(':').trim();
    ["a ", "an ", "the "]
        .iter()
        .find_map(|a| {
            let (head, rest) = (t.get(..a.len())?, t.get(a.len()..)?);
            (head.eq_ignore_ascii_case(a) && !rest.trim().is_empty()).then(|| rest.trim())
        })
        .unwrap_or(t)
        .to_string()
}

fn apply_goal(spec: &mut TaskSpec, clause: &str) {
    let Some(c) = GOAL.captures(clause) else {
        return;
    };
    let verb = c.get(1).map_or("", |m| m.as_str()).to_ascii_lowercase();
    let rest = c.get(2).map_or("", |m| m.as_str()).trim().trim_end_matches(':');
    let message_verb = MESSAGE_VERBS.contains(&verb.as_str());

    // Walk the prepositions in order: the first segment is the object (or,
    // after a message verb, the recipient); `about …` takes the rest.
    let mut segments: Vec<(&str, &str)> = Vec::new();
    let mut last = ("", 0);
    for m in PREPOSITION.captures_iter(rest) {
        let (Some(whole), Some(prep)) = (m.get(0), m.get(1)) else {
            continue;
        };
        if whole.start() < last.1 {
            continue;
        }
        segments.push((last.0, &rest[last.1..whole.start()]));
        last = (prep.as_str(), whole.end());
        if !matches!(last.0.to_ascii_lowercase().as_str(), "to" | "for") {
            break;
        }
    }
    segments.push((last.0, &rest[last.1..]));

    let first = segments.first().map_or("", |s| s.1).trim();
    let (object, mut to) = if message_verb {
        (if verb == "message" { "message".to_string() } else { "email".to_string() }, Some(first.to_string()))
    } else {
        (strip_article(first), None)
    };
    let mut for_part = None;
    for (prep, seg) in segments.iter().skip(1) {
        let seg = seg.trim().trim_end_matches(':').trim();
        match prep.to_ascii_lowercase().as_str() {
            "to" if to.is_none() => to = Some(seg.to_string()),
            "for" if for_part.is_none() => for_part = Some(seg.to_string()),
            "to" | "for" => {}
            _ => spec.topic = Some(seg.to_string()),
        }
    }
    // `Rewrite this message …` is formatting, not correspondence.
    let message_like = message_verb
        || matches!(verb.as_str(), "reply" | "respond" | "forward" | "send")
        || (MESSAGE_OBJECT.is_match(&object) && !FORMAT_VERBS.contains(&verb.as_str()));
    if let Some(to) = to.filter(|t| !t.is_empty()) {
        if let Some(address) = text::emails_in(&to).into_iter().next() {
            let name = to.split(['<', '(']).next().map(str::trim).filter(|n| !n.is_empty() && *n != address);
            let name = name.map(str::to_string).or_else(|| text::name_from_email(&address));
            spec.recipient = Some(Recipient { address: Some(address), name });
        } else if message_like && PERSON.is_match(&to) {
            spec.recipient = Some(Recipient { address: None, name: Some(to) });
        } else {
            spec.goal.target = Some(to);
        }
    }
    if spec.topic.is_none() && message_like {
        spec.topic = for_part.clone();
    }
    let calendar = CALENDAR_VERBS.contains(&verb.as_str()) || CALENDAR_OBJECT.is_match(&object);
    if calendar {
        apply_timing(&mut spec.context.event, clause);
    }
    spec.kind = if calendar {
        TaskKind::Calendar
    } else if message_like {
        TaskKind::Email
    } else {
        TaskKind::Other
    };
    spec.goal.action = verb;
    spec.goal.object = object;
}

static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:for\s+)?(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|eight|half an?)[\s-]*(hours?|hrs?|hr|h|minutes?|mins?)\b",
    )
});

/// Minutes in `2 hours`, `90 minutes`, `1.5 hrs`, `a 2-hour`, `half an hour`.
pub(crate) fn parse_duration(s: &str) -> Option<u32> {
    let c = DURATION.captures(s)?;
    let n = c.get(1)?.as_str().to_ascii_lowercase();
    let amount: f64 = match n.as_str() {
        "a" | "an" | "one" => 1.0,
        "two" => 2.0,
        "three" => 3.0,
        "four" => 4.0,
        "five" => 5.0,
        "six" => 6.0,
        "eight" => 8.0,
        "half a" | "half an" => 0.5,
        digits => digits.parse().ok()?,
    };
    let unit = c.get(2)?.as_str().to_ascii_lowercase();
    let minutes = if unit.starts_with('h') { amount * 60.0 } else { amount };
    // Up to a week: anything longer is not a calendar block.
    (1.0..=7.0 * 24.0 * 60.0).contains(&minutes).then_some(minutes.round() as u32)
}

/// `Block calendar for 2 hours from now` → 120 minutes starting `now`.
fn apply_timing(event: &mut EventFields, clause: &str) {
    if let Some(m) = DURATION.find(clause) {
        event.duration_minutes = parse_duration(m.as_str());
        let after = clause[m.end()..].trim();
        let start = after
            .trim_start_matches(|c: char| c == ',' || c.is_whitespace())
            .trim_start_matches("starting ")
            .trim_start_matches("beginning ");
        if !start.is_empty() {
            event.start = Some(start.to_string());
        }
    }
    if event.start.is_none()
        && let Some(m) = START_IN_CLAUSE.find(clause)
    {
        event.start = Some(m.as_str().trim().to_string());
    }
}

static START_IN_CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:(?:from |right )?now\b|(?:\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{1,2}}:\d{{2}}|today|tomorrow|{DATE_PATTERN})(?:\s+at\s+\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm)?)?)"
    ))
});

// ---------------------------------------------------------------------------
// The rule table

type Apply = fn(&mut TaskSpec, &Captures<'_>);

fn cap<'c>(c: &'c Captures<'_>, i: usize) -> &'c str {
    c.get(i).map_or("", |m| m.as_str()).trim()
}

fn num<T: std::str::FromStr>(c: &Captures<'_>, i: usize) -> Option<T> {
    cap(c, i).parse().ok()
}

/// Items of a list: `a, b and c`, `a; b`.
fn list(s: &str) -> Vec<String> {
    s.split([',', ';'])
        .flat_map(|p| p.split(" and "))
        .map(|p| text::unquote(p.trim().trim_end_matches('.')).to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn set_tone(s: &mut TaskSpec, raw: &str) {
    let words: Vec<String> = text::unquote(raw)
        .to_ascii_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "and" && *w != "but")
        .map(String::from)
        .collect();
    if !words.is_empty() {
        s.constraints.tone = Some(words.join("-"));
    }
}

const LEN: &str = r"(?:(?:length|word limit|limit|words)\s*:\s*)?";

/// Each row: an anchored, case-insensitive pattern for one clause, and what it sets.
/// The first matching row wins, so specific rows come before general ones.
const RULES: &[(&str, Apply)] = &[
    (r"(\d+)\s*(?:-|–|to)\s*(\d+)\s*words?$", |s, c| {
        s.constraints.min_words = num(c, 1);
        s.constraints.max_words = num(c, 2);
    }),
    (r"(?:max(?:imum)?\.?|at most|no more than|up to|under|within|fewer than|less than)\s*(\d+)\s*words?\b", |s, c| {
        s.constraints.max_words = num(c, 1)
    }),
    (r"(\d+)\s*words?\s*(?:max(?:imum)?|or (?:less|fewer)|at most)\b", |s, c| s.constraints.max_words = num(c, 1)),
    (r"(?:min(?:imum)?\.?|at least|no fewer than)\s*(\d+)\s*words?\b", |s, c| s.constraints.min_words = num(c, 1)),
    (r"tone\s*:\s*(.+)$", |s, c| set_tone(s, cap(c, 1))),
    (r"(?:use\s+an?\s+|keep (?:it|the tone)\s+|be\s+)?([a-z]+(?:(?:\s+and\s+|[ -])[a-z]+)?)\s+tone$", |s, c| {
        set_tone(s, cap(c, 1))
    }),
    (r"(?:required(?:\s+elements)?|must (?:include|contain|cover)|include all of|elements)\s*:\s*(.+)$", |s, c| {
        s.constraints.required.extend(list(cap(c, 1)))
    }),
    (r"subject(?:\s+(?:hint|line))?\s*:\s*(.+)$", |s, c| {
        s.constraints.subject_hint = Some(text::unquote(cap(c, 1)).to_string())
    }),
    // A name next to a redacted address (`<EMAIL_1>`) is the only name there is.
    (r"(?:recipient(?:'s)?\s+name|addressee|greet(?:ing)?\s+name)\s*:\s*(.+)$", |s, c| {
        s.recipient.get_or_insert_with(Recipient::default).name = Some(text::unquote(cap(c, 1)).to_string());
    }),
    (r"(?:recipient|to)\s*:\s*(.+)$", |s, c| {
        let raw = cap(c, 1);
        let r = s.recipient.get_or_insert_with(Recipient::default);
        match text::emails_in(raw).into_iter().next() {
            Some(address) => {
                let shown = raw.split(['<', '(']).next().map(str::trim);
                let shown = shown.filter(|n| !n.is_empty() && !n.contains('@'));
                r.name = shown.map(String::from).or_else(|| text::name_from_email(&address));
                r.address = Some(address);
            }
            None => r.name = Some(raw.to_string()),
        }
    }),
    (r"(?:new\s+)?(?:eta|deadline|due date|due)\s*:\s*(.+)$", |s, c| s.context.eta = Some(cap(c, 1).to_string())),
    (r"include\s+(?:the\s+|a\s+)?completion[ -]rate\b", |s, _| s.verification.completion_rate = true),
    (r"(?:do not|don't|never|avoid)\s+(?:mention(?:ing)?|include|including|use|using|say(?:ing)?)\s+(.+)$", |s, c| {
        s.constraints.must_not_mention.push(strip_article(text::unquote(cap(c, 1))))
    }),
    (r"(?:mention|include|reference|state)\s+(.+)$", |s, c| {
        let phrase = text::unquote(cap(c, 1));
        match text::dates_in(phrase).into_iter().next() {
            Some(date) => {
                if s.context.eta.is_none() {
                    s.context.eta = Some(date.clone());
                }
                s.constraints.must_mention.push(date);
            }
            None => s.constraints.must_mention.push(strip_article(phrase)),
        }
    }),
    (r"output(?:\s+(?:structure|format|shape))?\s*:\s*(.+)$", |s, c| {
        let out = cap(c, 1);
        let lower = out.to_ascii_lowercase();
        if let Some(case) = CASE_WORD.captures(out).and_then(|m| KeyCase::parse(cap(&m, 1))) {
            s.constraints.key_case = Some(case);
        }
        s.verification.json_array |= lower.contains("array") || lower.contains("list of objects");
        s.constraints.bullet_points |= lower.contains("bullet");
        s.constraints.output = Some(out.to_string());
    }),
    (r"(?:validate|validation|verify|check|ensure)\b\s*:?\s*(.+)$", |s, c| validate(s, cap(c, 1))),
    (r"(no duplicates?|unique\b.*|all e-?mails?\b.*)$", |s, c| validate(s, cap(c, 1))),
    (r"(?:input\s+)?(?:columns?|fields|headers?)\s*:\s*(.+)$", |s, c| s.context.columns = list(cap(c, 1))),
    (r"(?:input|data|stats|counts|numbers)\s*:\s*(.+)$", |s, c| {
        let raw = cap(c, 1);
        match counts(raw) {
            Some(counts) => s.context.counts = counts,
            None => s.context.input = Some(text::unquote(raw).to_string()),
        }
    }),
    (r"(?:target|style)\s*:\s*(.+)$", |s, c| {
        let target = text::unquote(cap(c, 1));
        s.constraints.greeting |= target.to_ascii_lowercase().contains("greeting");
        s.constraints.style_target = Some(target.to_string());
    }),
    (r"(?:event\s+)?(?:title|name|summary)\s*:\s*(.+)$", |s, c| {
        s.context.event.title = Some(text::unquote(cap(c, 1)).to_string())
    }),
    (r"(?:event\s+)?(?:description|details)\s*:\s*(.+)$", |s, c| {
        s.context.event.description = Some(text::unquote(cap(c, 1)).to_string())
    }),
    (r"(?:status|show as|availability)\s*:\s*(.+)$", |s, c| {
        let v = cap(c, 1).to_ascii_lowercase();
        s.context.event.busy = if ["busy", "opaque", "unavailable", "out of office", "do not disturb", "dnd"]
            .iter()
            .any(|w| v.contains(w))
        {
            Some(true)
        } else if ["free", "available", "transparent"].iter().any(|w| v.contains(w)) {
            Some(false)
        } else {
            s.constraints.notes.push(format!("status: {v}"));
            None
        };
    }),
    (r"(?:reminders?|alerts?|notifications?)\s*:\s*(.+)$", |s, c| {
        let v = cap(c, 1).to_ascii_lowercase();
        let off =
            ["off", "none", "no", "false", "disabled", "0"].iter().any(|w| v == *w || v.starts_with(&format!("{w} ")));
        s.context.event.reminders = Some(!off);
        if !off {
            s.context.event.reminder_minutes = parse_duration(&v);
        }
    }),
    (r"(?:start|starts|starting|start time|when|time)\s*:\s*(.+)$", |s, c| {
        s.context.event.start = Some(cap(c, 1).to_string())
    }),
    (r"(?:end|ends|end time|until)\s*:\s*(.+)$", |s, c| s.context.event.end = Some(cap(c, 1).to_string())),
    (r"duration\s*:\s*(.+)$", |s, c| s.context.event.duration_minutes = parse_duration(cap(c, 1))),
    (
        r"((?:no abbreviations?|proper capitali[sz]ation|capitali[sz]e|preserve|improve|keep it|use proper|be clear|be concise).*)$",
        |s, c| {
            for piece in cap(c, 1).split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let p = piece.to_ascii_lowercase();
                if p.starts_with("no abbreviation") {
                    s.constraints.no_abbreviations = true;
                } else if p.contains("capitali") {
                    s.constraints.capitalization = true;
                } else {
                    s.constraints.notes.push(piece.to_string());
                }
            }
        },
    ),
];

static COMPILED: LazyLock<Vec<(Regex, Apply)>> = LazyLock::new(|| {
    RULES
        .iter()
        .enumerate()
        .map(|(i, (pattern, apply))| {
            // The first four rows are word limits, which may be written `Length: …`.
            let prefix = if i < 4 { LEN } else { "" };
            (re(&format!("(?i)^{prefix}{pattern}")), *apply)
        })
        .collect()
});

static CASE_WORD: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(camel|snake|pascal|kebab)[ _-]?case\b"));
static ETA: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:eta|deadline|due(?:\s+date)?|timeline|deliver(?:y|ed)?(?:\s+date)?|launch(?:\s+date)?)\b[^.\n]{{0,20}}?({DATE_PATTERN})"
    ))
});
static COUNT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(\d+)\s+(?:(?:tasks?|items?|issues?|tickets?|stories)\s+)?(?:(?:are|were|is)\s+)?([a-z][a-z -]*)$")
});
static COUNT_AFTER: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^([a-z][a-z -]*?)\s*[:=]\s*(\d+)$"));

fn apply_rules(spec: &mut TaskSpec, clause: &str) {
    match COMPILED.iter().find_map(|(re, apply)| re.captures(clause).map(|c| (c, apply))) {
        Some((c, apply)) => apply(spec, &c),
        None => spec.constraints.notes.push(clause.to_string()),
    }
}

fn validate(s: &mut TaskSpec, what: &str) {
    let w = what.to_ascii_lowercase();
    let emails = w.contains("mail");
    let unique = w.contains("duplicate") || w.contains("unique");
    s.verification.emails_valid |= emails;
    s.verification.unique |= unique;
    if !emails && !unique {
        s.constraints.notes.push(what.to_string());
    }
}

/// `12 tasks completed, 3 in progress, 2 blocked` or `completed: 12, blocked: 2`.
fn counts(s: &str) -> Option<Vec<(String, u64)>> {
    let pieces = list(s);
    let parsed: Vec<(String, u64)> = pieces
        .iter()
        .filter_map(|p| {
            if let Some(c) = COUNT.captures(p) {
                Some((cap(&c, 2).to_ascii_lowercase(), num(&c, 1)?))
            } else {
                COUNT_AFTER.captures(p).and_then(|c| Some((cap(&c, 1).to_ascii_lowercase(), num(&c, 2)?)))
            }
        })
        .collect();
    (!parsed.is_empty() && parsed.len() == pieces.len()).then_some(parsed)
}

static TONE_WORD: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(professional|formal|friendly|casual|warm|neutral|concise)\b"));
static REPORT_OBJECT: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:report|summary|status update)\b"));
static DATA_WORDS: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:csv|json|data|records|rows|spreadsheet)\b"));
#[rustfmt::skip]
const FORMAT_VERBS: &[&str] = &[
    "format", "reformat", "rewrite", "polish", "edit", "proofread", "clean",
];

/// Settles the kind and the derived fields once every clause is read.
fn finish(spec: &mut TaskSpec, instructions: &str) {
    let goal_text = format!("{} {}", spec.goal.object, spec.goal.target.as_deref().unwrap_or(""));
    if spec.kind == TaskKind::Other {
        spec.kind = if !spec.context.event.is_empty() {
            TaskKind::Calendar
        } else if !spec.context.counts.is_empty() || REPORT_OBJECT.is_match(&spec.goal.object) {
            TaskKind::Report
        } else if !spec.context.columns.is_empty() || DATA_WORDS.is_match(&goal_text) {
            TaskKind::Data
        } else if FORMAT_VERBS.contains(&spec.goal.action.as_str()) || spec.constraints.style_target.is_some() {
            TaskKind::Format
        } else {
            TaskKind::Other
        };
    }
    if spec.constraints.tone.is_none() {
        let object = (spec.kind == TaskKind::Format).then_some(spec.goal.object.as_str());
        let style = [spec.goal.target.as_deref(), spec.constraints.style_target.as_deref(), object];
        if let Some(m) = style.into_iter().flatten().find_map(|t| TONE_WORD.find(t)) {
            spec.constraints.tone = Some(m.as_str().to_ascii_lowercase());
        }
    }
    if spec.kind == TaskKind::Email
        && spec.address().is_none()
        && let Some(address) = text::emails_in(instructions).into_iter().next()
    {
        let recipient = spec.recipient.get_or_insert_with(Recipient::default);
        if recipient.name.is_none() {
            recipient.name = text::name_from_email(&address);
        }
        recipient.address = Some(address);
    }
    if spec.kind == TaskKind::Data && spec.constraints.key_case.is_some() {
        spec.verification.json_array = true;
    }
}

// ---------------------------------------------------------------------------
// Problems

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

fn problems(spec: &TaskSpec, goal_clause: Option<&str>, instructions: &str) -> Vec<Problem> {
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
    fn one_line_note_with_tone_suffix_is_understood() {
        let spec = TaskSpec::parse(
            "Draft apology email to alex.chan@company.com about project delay. Mention new ETA Oct 22. Warm-professional tone. Max 120 words. Required: apologize, acknowledge impact, new timeline.",
        )
        .unwrap();
        assert_eq!(spec.constraints.tone.as_deref(), Some("warm-professional"));
        assert_eq!(spec.constraints.max_words, Some(120));
        assert_eq!(spec.constraints.must_mention, ["Oct 22"]);
        assert_eq!(spec.constraints.required.len(), 3);
        assert_eq!(spec.topic.as_deref(), Some("project delay"));
    }

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

    #[test]
    fn redacted_address_counts_as_recipient() {
        let spec = TaskSpec::parse("Draft apology email to <EMAIL_1> about the delay. Max 80 words.").unwrap();
        assert_eq!(spec.address(), Some("<EMAIL_1>"));
        assert_eq!(spec.recipient.unwrap().name, None);
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
    fn inline_quoted_input_is_taken_out_of_the_instruction() {
        for note in [
            "Rewrite this message in a formal style: \"pls fix ur bug asap\". No abbreviations.",
            "Rewrite this message in a formal style: \"pls fix ur bug asap\"\nNo abbreviations.",
        ] {
            let spec = TaskSpec::parse(note).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.kind, TaskKind::Format);
            assert_eq!(spec.context.input.as_deref(), Some("pls fix ur bug asap"));
            assert_eq!(spec.constraints.tone.as_deref(), Some("formal"));
            let not_contains: Vec<_> =
                spec.checks().into_iter().filter(|c| matches!(c, Check::NotContains { .. })).collect();
            assert_eq!(not_contains.len(), 3, "{not_contains:?}");
        }
    }

    #[test]
    fn comma_separated_instructions_are_not_csv() {
        let spec = TaskSpec::parse(
            "Rewrite this text: \"hi\"\nPreserve intent, improve clarity\nNo abbreviations, proper capitalization",
        )
        .unwrap();
        assert_eq!(spec.context.input.as_deref(), Some("hi"));
        assert!(spec.constraints.capitalization && spec.constraints.no_abbreviations);
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
    fn explicit_start_times_are_kept_for_the_agent() {
        let spec = TaskSpec::parse("Schedule a focus session for 90 minutes tomorrow at 9am. Title: Review").unwrap();
        assert_eq!(spec.context.event.duration_minutes, Some(90));
        assert_eq!(spec.context.event.start.as_deref(), Some("tomorrow at 9am"));
        let spec = TaskSpec::parse("Block calendar on 2025-10-22 14:00. Duration: 1.5 hours").unwrap();
        assert_eq!(spec.context.event.start.as_deref(), Some("2025-10-22 14:00"));
        assert_eq!(spec.context.event.duration_minutes, Some(90));
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

    #[test]
    fn word_limits_in_their_usual_spellings() {
        for (clause, min, max) in [
            ("Max 120 words", None, Some(120)),
            ("Length: max 120 words", None, Some(120)),
            ("Length: 80-120 words", Some(80), Some(120)),
            ("no more than 50 words", None, Some(50)),
            ("60 words max", None, Some(60)),
            ("At least 20 words", Some(20), None),
        ] {
            let spec = TaskSpec::parse(&format!("Draft email to a@b.com about lunch. {clause}.")).unwrap();
            assert_eq!((spec.constraints.min_words, spec.constraints.max_words), (min, max), "{clause}");
        }
    }

    #[test]
    fn sentences_split_outside_quotes_and_abbreviations() {
        assert_eq!(
            split_sentences("Mention Oct. 22. Subject: \"A. B.\" Then go"),
            ["Mention Oct. 22", "Subject: \"A. B.\" Then go"]
        );
        assert_eq!(split_sentences("Email alex.chan@company.com now."), ["Email alex.chan@company.com now"]);
    }

    proptest::proptest! {
        #[test]
        fn parsing_any_text_never_panics(note in "\\PC{0,300}") {
            let (spec, problems) = TaskSpec::parse_lenient(&note);
            let _ = spec.checks();
            proptest::prop_assert_eq!(TaskSpec::parse(&note).is_ok(), problems.is_empty());
        }
    }

    #[test]
    fn unknown_clauses_are_kept_as_notes() {
        let spec = TaskSpec::parse("Draft email to a@b.com about lunch. Max 40 words. Sound upbeat.").unwrap();
        assert_eq!(spec.constraints.notes, ["Sound upbeat"]);
    }
}
