//! The format tool agent: rewrites informal text in business style. It
//! expands abbreviations (the table in `verify::text`, which the verifier's
//! `No abbreviations` checks use too), turns an informal greeting into a
//! formal one, makes requests polite, capitalizes sentences, ends them with
//! the right punctuation, and keeps a closing thanks as its own line.
//!
//! It is seeded, with two approaches. The conservative rewrite
//! (the first seed) keeps the writer's structure: a question stays a polite
//! question, and a greeting or sign-off is added only when the note asks.
//! The restructuring turns the text into a formal letter: requests become
//! statements (`I would be grateful if you could …`), and it always opens
//! with a greeting and closes with thanks and a sign-off.

use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;
use serde_json::json;

use super::shared::{invalid, read_task, variant_index};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError};
use crate::verify::text::{self, re};

pub(crate) struct FormatAgent;

/// The variants' seeds in default order: conservative, restructured.
pub(super) const SEEDS: [u64; 2] = [240117, 593021];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approach {
    /// The writer's sentences, corrected and made polite.
    Conservative,
    /// A formal letter: greeting, requests as statements, thanks, sign-off.
    Restructured,
}

impl Approach {
    fn of(seed: Option<u64>) -> Self {
        // one variant per seed, so the index is always in range
        let all: [Self; SEEDS.len()] = [Self::Conservative, Self::Restructured];
        all[variant_index(&SEEDS, seed)]
    }

    fn name(self) -> &'static str {
        match self {
            Self::Conservative => "conservative",
            Self::Restructured => "restructured",
        }
    }
}

const SIGN_OFF: &str = "Kind regards,";
const FULL_THANKS: &str = "Thank you for your help.";

static GREETING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:hey|hi|hiya|hello|yo|dear|good (?:morning|afternoon|evening))\b(?:\s+there)?\s*[,!:-]?\s*(?:(\p{Lu}\p{Ll}+)\s*[,!:-]\s*)?",
    )
});
static THANKS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)[\s,.!-]*\b(thx|thnx|thanx|thanks|thank you|ty|tks|cheers)\b[\s.!]*$"));
static SENTENCE_END: LazyLock<Regex> = LazyLock::new(|| re(r"[.!?]+(?:\s+|$)"));
#[rustfmt::skip]
const QUESTION_STARTS: &[&str] = &[
    "can", "could", "would", "will", "do", "does", "did", "is", "are", "may", "should", "have",
    "has", "when", "where", "what", "why", "how", "who",
];
#[rustfmt::skip]
const IMPERATIVES: &[&str] = &[
    "send", "share", "give", "call", "check", "review", "fix", "update", "let", "forward", "reply",
];

/// The rewrite and what was changed on the way.
struct Rewrite {
    text: String,
    changes: Vec<(String, String)>,
}

fn rewrite(input: &str, want_greeting: bool, approach: Approach) -> Rewrite {
    let letter = approach == Approach::Restructured;
    let mut changes: Vec<(String, String)> = Vec::new();
    let mut s = input.split_whitespace().collect::<Vec<_>>().join(" ");

    let mut greeting = None;
    if let Some(c) = GREETING.captures(&s) {
        let name = c.get(1).map(|m| m.as_str().to_string());
        let end = c.get(0).map_or(0, |m| m.end());
        if end > 0 {
            greeting = Some(name.map_or_else(|| "Hello,".to_string(), |n| format!("Dear {n},")));
            s = s[end..].to_string();
        }
    }
    let mut thanks = None;
    if let Some(c) = THANKS.captures(&s)
        && let (Some(whole), Some(word)) = (c.get(0), c.get(1))
        // A bare "thanks" is the whole message, not a sign-off.
        && whole.start() > 0
    {
        thanks = Some(word.as_str().to_string());
        s.truncate(whole.start());
    }

    let words: Vec<String> = s
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|token| {
            let core = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '/');
            let (lead, trail) = match token.find(core) {
                Some(i) if !core.is_empty() => (&token[..i], &token[i + core.len()..]),
                _ => ("", ""),
            };
            let replacement = match text::expand_abbreviation(core) {
                Some(full) => Some(full.to_string()),
                None if core == "i" => Some("I".to_string()),
                None => None,
            };
            match replacement {
                Some(full) => {
                    if !changes.iter().any(|(from, _)| from.eq_ignore_ascii_case(core)) {
                        changes.push((core.to_string(), full.clone()));
                    }
                    format!("{lead}{full}{trail}")
                }
                None => token.to_string(),
            }
        })
        .collect();
    let s = words.join(" ");

    let mut sentences = Vec::new();
    let mut last = 0;
    let mut pieces: Vec<(String, Option<char>)> = Vec::new();
    for m in SENTENCE_END.find_iter(&s) {
        pieces.push((s[last..m.start()].to_string(), m.as_str().trim().chars().next()));
        last = m.end();
    }
    pieces.push((s[last..].to_string(), None));
    for (body, ended) in pieces {
        let body = body.trim().trim_end_matches([',', ';', '-']).trim();
        if body.is_empty() {
            continue;
        }
        sentences.push(polish(body, ended, approach));
    }

    let mut paragraphs = Vec::new();
    if let Some(g) = greeting.or_else(|| (want_greeting || letter).then(|| "Hello,".to_string())) {
        paragraphs.push(g);
    }
    if !sentences.is_empty() {
        paragraphs.push(sentences.join(" "));
    }
    let closing = if letter { FULL_THANKS } else { "Thank you." };
    if let Some(word) = thanks {
        paragraphs.push(closing.to_string());
        changes.push((word, closing.to_string()));
    } else if letter && !sentences.is_empty() && !sentences.iter().any(|s| s.to_lowercase().contains("thank")) {
        paragraphs.push(closing.to_string());
    }
    if letter {
        paragraphs.push(SIGN_OFF.to_string());
    }
    Rewrite { text: paragraphs.join("\n\n"), changes }
}

/// A request as a formal statement: `can you send it` or `please send it`
/// → `I would be grateful if you could send it.`; None for other sentences.
fn as_statement(body: &str, lower: &str) -> Option<String> {
    let words: Vec<&str> = body.split_whitespace().collect();
    let rest = match ["can you ", "could you ", "would you "].into_iter().find(|p| lower.starts_with(p)) {
        Some(p) => words.get(p.split_whitespace().count()..)?,
        None => {
            let skip = usize::from(lower.starts_with("please "));
            let verb = lower.split_whitespace().nth(skip)?;
            if !IMPERATIVES.contains(&verb) {
                return None;
            }
            words.get(skip..)?
        }
    };
    let rest: Vec<&str> = rest.iter().copied().filter(|w| !w.eq_ignore_ascii_case("please")).collect();
    let first = rest.first()?.to_lowercase();
    let tail = rest.get(1..).unwrap_or_default().join(" ");
    Some(format!("I would be grateful if you could {}.", format!("{first} {tail}").trim_end()))
}

/// One sentence: polite request form (`can you fix it pls` → `Could you
/// please fix it?`, or restructured, `I would be grateful if you could fix
/// it.`), capital first letter, final punctuation.
fn polish(body: &str, ended: Option<char>, approach: Approach) -> String {
    let lower = body.to_lowercase();
    if approach == Approach::Restructured
        && let Some(statement) = as_statement(body, &lower)
    {
        return statement;
    }
    let first = lower.split_whitespace().next().unwrap_or("");
    let question = ended == Some('?') || QUESTION_STARTS.contains(&first);
    let request = ["can you ", "could you "].into_iter().find(|p| lower.starts_with(p));
    let out = match request.and_then(|p| body.get(p.len()..)) {
        Some(rest) => {
            let rest: Vec<&str> = rest.split_whitespace().filter(|w| !w.eq_ignore_ascii_case("please")).collect();
            format!("could you please {}", rest.join(" "))
        }
        None if IMPERATIVES.contains(&first) && !lower.contains("please") => {
            format!("please {body}")
        }
        None => body.to_string(),
    };
    let end = if question { '?' } else { '.' };
    format!("{}{end}", text::capitalize(&out))
}

#[async_trait]
impl Agent for FormatAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool("format_text")?;
        let (spec, input) = read_task(task)?;
        let input = input.filter(|i| !i.trim().is_empty()).ok_or_else(|| {
            invalid(
                "no text to format: quote it after the instructions, e.g. 'Format this text to business style: \"…\"'",
            )
        })?;
        let approach = Approach::of(task.seed);
        let out = rewrite(&input, spec.constraints.greeting, approach);
        if out.text.is_empty() {
            return Err(invalid("the text to format has no words"));
        }
        let style = spec
            .goal
            .target
            .clone()
            .or_else(|| spec.constraints.style_target.clone())
            .unwrap_or_else(|| "professional business style".into());
        let changes: Vec<_> = out.changes.iter().map(|(from, to)| json!({"from": from, "to": to})).collect();
        let artifact = json!({
            "text": out.text,
            "original": input,
            "style": style,
            "changes": changes,
            "approach": approach.name(),
            "seed": task.seed.unwrap_or(SEEDS[0]),
        });
        Ok(AgentOutput::new(
            format!(
                "Rewrote {} words in {style} ({}, {} expansions)",
                text::word_count(&input),
                approach.name(),
                changes.len()
            ),
            out.text,
        )
        .with_artifact(Artifact::json("formatted", artifact))
        .with_confidence(90))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::protocol::ErrorCode;

    #[tokio::test]
    async fn seed_001_format_note_passes_its_checks() {
        let out = run(&FormatAgent, "format_text", &noted(FORMAT_NOTE)).await.unwrap();
        assert_eq!(out.result, "Hello,\n\nCould you please send me the report?\n\nThank you.");
        let v = verdict(FORMAT_NOTE, &out);
        assert!(v.passed, "{v:#?}");
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        for name in ["not_contains_u", "not_contains_thx", "starts_capitalized", "has_greeting", "tone_professional"] {
            assert!(names.contains(&name), "{names:?}");
        }
        let a = artifact(&out, "formatted");
        assert_eq!(a["original"], "hey can u send me the report thx");
        assert_eq!(a["changes"][0], json!({"from": "u", "to": "you"}));
    }

    #[test]
    fn abbreviations_capitals_and_punctuation_are_fixed() {
        let r = rewrite("pls send ur notes asap. i think the files r late!!! thx", false, Approach::Conservative);
        assert_eq!(r.text, "Please send your notes as soon as possible. I think the files are late.\n\nThank you.");
        let r = rewrite("Hey Sam, can u review the doc? it is urgent", false, Approach::Conservative);
        assert_eq!(r.text, "Dear Sam,\n\nCould you please review the doc? It is urgent.");
        assert_eq!(rewrite("thanks", false, Approach::Conservative).text, "Thanks.");
    }

    #[tokio::test]
    async fn input_can_come_with_the_objective() {
        let task = Task::new("Format this text to professional business style. No abbreviations.", "can u fix it pls");
        let out = run(&FormatAgent, "format_text", &task).await.unwrap();
        assert_eq!(out.result, "Could you please fix it?");
    }

    #[tokio::test]
    async fn missing_text_is_an_invalid_request() {
        let err = run(&FormatAgent, "format_text", &noted("Format the text to professional style. No abbreviations."))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert!(err.message.contains("no text to format"), "{}", err.message);
    }
}
