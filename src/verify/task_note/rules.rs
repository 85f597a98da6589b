//! The rule table: for every clause but the goal, the first anchored pattern
//! that matches (word limits, tone, required elements, fields, ...) and what it sets.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::clause::{cap, list, num, strip_article};
use super::spec::{Recipient, TaskSpec};
use super::timing::parse_duration;
use crate::verify::text::{self, KeyCase, re};

type Apply = fn(&mut TaskSpec, &Captures<'_>);

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
        s.constraints.max_words = num(c, 1);
    }),
    (r"(\d+)\s*words?\s*(?:max(?:imum)?|or (?:less|fewer)|at most)\b", |s, c| s.constraints.max_words = num(c, 1)),
    (r"(?:min(?:imum)?\.?|at least|no fewer than)\s*(\d+)\s*words?\b", |s, c| s.constraints.min_words = num(c, 1)),
    (r"tone\s*:\s*(.+)$", |s, c| set_tone(s, cap(c, 1))),
    (r"(?:use\s+an?\s+|keep (?:it|the tone)\s+|be\s+)?([a-z]+(?:(?:\s+and\s+|[ -])[a-z]+)?)\s+tone$", |s, c| {
        set_tone(s, cap(c, 1));
    }),
    (r"(?:required(?:\s+elements)?|must (?:include|contain|cover)|include all of|elements)\s*:\s*(.+)$", |s, c| {
        s.constraints.required.extend(list(cap(c, 1)));
    }),
    (r"subject(?:\s+(?:hint|line))?\s*:\s*(.+)$", |s, c| {
        s.constraints.subject_hint = Some(text::unquote(cap(c, 1)).to_string());
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
        s.constraints.must_not_mention.push(strip_article(text::unquote(cap(c, 1))));
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
        s.context.event.title = Some(text::unquote(cap(c, 1)).to_string());
    }),
    (r"(?:event\s+)?(?:description|details)\s*:\s*(.+)$", |s, c| {
        s.context.event.description = Some(text::unquote(cap(c, 1)).to_string());
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
        s.context.event.start = Some(cap(c, 1).to_string());
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
static COUNT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(\d+)\s+(?:(?:tasks?|items?|issues?|tickets?|stories)\s+)?(?:(?:are|were|is)\s+)?([a-z][a-z -]*)$")
});
static COUNT_AFTER: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^([a-z][a-z -]*?)\s*[:=]\s*(\d+)$"));

pub(super) fn apply_rules(spec: &mut TaskSpec, clause: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn unknown_clauses_are_kept_as_notes() {
        let spec = TaskSpec::parse("Draft email to a@b.com about lunch. Max 40 words. Sound upbeat.").unwrap();
        assert_eq!(spec.constraints.notes, ["Sound upbeat"]);
    }
}
