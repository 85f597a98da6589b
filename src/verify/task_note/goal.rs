//! The goal: the first clause that starts with an action verb, read into
//! action, object, recipient or target, topic and the kind of task.

use std::sync::LazyLock;

use regex::Regex;

use super::clause::{cap, strip_article};
use super::spec::{Recipient, TaskKind, TaskSpec};
use super::timing::apply_timing;
use crate::verify::text::{self, re};

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
/// Verbs that reshape a text rather than write to someone.
#[rustfmt::skip]
pub(super) const FORMAT_VERBS: &[&str] = &[
    "format", "reformat", "rewrite", "polish", "edit", "proofread", "clean",
];

static GOAL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^(?:please\s+)?([a-z][a-z-]*)\b\s*(.*)$"));
static PREPOSITION: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\s+(to|about|regarding|concerning|re:|for)\s+"));
static MESSAGE_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:e-?mail|message|note|letter|reply|memo|dm)s?\b"));
static CALENDAR_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:calendar|focus|session|meeting|event|time slot|appointment)\b"));
static PERSON: LazyLock<Regex> = LazyLock::new(|| re(r"^\p{Lu}[\p{L}'-]*(?:\s+\p{Lu}[\p{L}'-]*){0,2}$"));

/// `Draft …` is a goal; `Start: 9am` is a field that happens to start with a verb.
pub(super) fn starts_with_action(clause: &str) -> bool {
    GOAL.captures(clause).is_some_and(|c| {
        let verb = cap(&c, 1).to_ascii_lowercase();
        ACTIONS.contains(&verb.as_str()) && !cap(&c, 2).starts_with(':')
    })
}

pub(super) fn apply_goal(spec: &mut TaskSpec, clause: &str) {
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
            // "Jane Cooper at jane@acme.com": the name stops before the connecting word
            let name = to
                .split(['<', '('])
                .next()
                .map(|n| n.split(address.as_str()).next().unwrap_or(n))
                .map(|n| {
                    let mut n = n.trim().trim_end_matches([',', ':', '-']).trim();
                    for w in [" at", " via", " on", " -"] {
                        n = n.strip_suffix(w).unwrap_or(n).trim();
                    }
                    n
                })
                .filter(|n| !n.is_empty() && *n != address && PERSON.is_match(n));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_before_its_address_is_the_recipients_name_without_the_connecting_word() {
        for (note, name) in [
            ("Draft an email to Jane Cooper at jane@acme.com thanking her for the meeting", Some("Jane Cooper")),
            ("Draft an email to Jane Cooper at <EMAIL_1> thanking her for the meeting", Some("Jane Cooper")),
            ("Draft an email to Sam via sam@corp.io about the demo", Some("Sam")),
            ("Email Alex Chan <alex.chan@company.com> about the outage", Some("Alex Chan")),
            ("Draft an email to jane@acme.com about the meeting", Some("Jane")),
            // the name in a redacted address is a token the user's vault fills in
            ("Draft an email to <EMAIL_1> about the meeting", Some("<EMAIL_1:name>")),
        ] {
            let spec = TaskSpec::parse(&format!("{note}. Max 120 words.")).unwrap();
            let got = spec.recipient.and_then(|r| r.name);
            assert_eq!(got.as_deref(), name, "{note}");
        }
    }

    #[test]
    fn redacted_address_counts_as_recipient() {
        let spec = TaskSpec::parse("Draft apology email to <EMAIL_1> about the delay. Max 80 words.").unwrap();
        assert_eq!(spec.address(), Some("<EMAIL_1>"));
        assert_eq!(spec.recipient.unwrap().name.as_deref(), Some("<EMAIL_1:name>"));
    }
}
