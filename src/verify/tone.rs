//! The tone heuristic behind `Check::Tone`. A tone has one or more parts
//! (`warm-professional` → warm, professional); each part is scored from 0 to 1
//! by counting markers, the tone's score is the mean, and it passes at
//! [`PASS`] (0.6).
//!
//! - **warm** (friendly, empathetic, kind): 0.4, + 0.15 per distinct warm
//!   marker (thank, appreciate, sorry, understand, patience, happy to, hope,
//!   look forward, ...), − 0.25 per cold or curt marker (whatever, obviously,
//!   as I said, per my last, ...), − 0.1 per shouted word.
//! - **professional** (business, polite): 0.7, + 0.15 for a greeting, + 0.15
//!   for a sign-off, − 0.2 per slang word (u, thx, gonna, lol, hey, ...),
//!   − 0.2 per curt marker, − 0.15 per shouted word or `!!`/`??`, − 0.1 per
//!   emoji, − 0.1 when the text does not start with a capital.
//! - **formal**: professional, − 0.05 per contraction, − 0.2 for `Hi`/`Hey`.
//! - **casual** (informal, relaxed): 0.5, + 0.1 per contraction, informal
//!   greeting or exclamation mark.
//! - **neutral**: 1, − 0.1 per warm or cold marker and per exclamation mark.
//! - **concise** (brief, direct): 1 while sentences average 15 words or fewer,
//!   falling linearly to 0 at 40.
//! - **apologetic**: 1 with an apology, else 0.2.
//!
//! A part it does not know scores 0, and the note says which parts it knows.

use std::sync::LazyLock;

use regex::Regex;

use super::patterns;
use super::text::{self, re};

pub(crate) const PASS: f64 = 0.6;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToneScore {
    pub score: f64,
    pub passed: bool,
    /// False when some part of the tone is not one the heuristic knows.
    pub known: bool,
    pub notes: Vec<String>,
}

fn lexicon(words: &[&str]) -> Vec<Regex> {
    words.iter().map(|w| re(&format!(r"(?i)\b{w}"))).collect()
}

#[rustfmt::skip]
const WARM_MARKERS: &[&str] = &[
    "thank", "appreciat", "grateful", "glad", "happy to", "hope", "understand", "sorry", "apolog",
    "patience", "warm", "kind regards", "pleasure", "look forward", "value", "care", "support",
    "please",
];
#[rustfmt::skip]
const COLD_MARKERS: &[&str] = &[
    r"whatever\b", r"obviously\b", r"as i (?:already )?said\b", r"per my last\b",
    r"you should have\b", r"not my problem\b", r"deal with it\b", r"no excuses\b", r"just do it\b",
    r"i don'?t care\b", r"fyi\b",
];
static WARM: LazyLock<Vec<Regex>> = LazyLock::new(|| lexicon(WARM_MARKERS));
static COLD: LazyLock<Vec<Regex>> = LazyLock::new(|| lexicon(COLD_MARKERS));
const SLANG_EXTRA: &[&str] = &["lol", "omg", "hey", "yo", "dude", "ya", "yeah", "nope", "k", "brb", "sup"];
static SHOUT: LazyLock<Regex> = LazyLock::new(|| re(r"\b\p{Lu}{5,}\b"));
static RUNS: LazyLock<Regex> = LazyLock::new(|| re(r"[!?]{2,}"));
static CONTRACTION: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b\w+(?:n['’]t|['’](?:m|re|ve|ll|d))\b"));
static INFORMAL_GREETING: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^\s*(?:hi|hey|yo|hiya)\b"));
static GREETING: LazyLock<Regex> = LazyLock::new(|| re(patterns::GREETING));
static SIGN_OFF: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:(?:best|kind|warm|warmest|many)\s+)?(?:regards|wishes|thanks|thank you|sincerely|cheers|best)\b")
});
static APOLOGY: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bapolog|\bsorry\b|\bregret"));

struct Markers {
    warm: usize,
    cold: usize,
    slang: usize,
    shouted: usize,
    runs: usize,
    emoji: usize,
    exclamations: usize,
    contractions: usize,
    greeting: bool,
    informal_greeting: bool,
    sign_off: bool,
    capitalized: bool,
    words_per_sentence: f64,
}

impl Markers {
    fn of(text: &str) -> Self {
        let words: Vec<String> = text.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase).collect();
        let slang = words
            .iter()
            .filter(|w| text::expand_abbreviation(w).is_some() || SLANG_EXTRA.contains(&w.as_str()))
            .count();
        let last_line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let sentences = text.split(['.', '!', '?', '\n']).filter(|s| text::word_count(s) > 0).count().max(1);
        Self {
            warm: WARM.iter().filter(|r| r.is_match(text)).count(),
            cold: COLD.iter().filter(|r| r.is_match(text)).count(),
            slang,
            shouted: SHOUT.find_iter(text).count(),
            runs: RUNS.find_iter(text).count(),
            emoji: text
                .chars()
                .filter(|c| ('\u{1F300}'..='\u{1FAFF}').contains(c) || ('\u{2600}'..='\u{27BF}').contains(c))
                .count(),
            exclamations: text.matches('!').count(),
            contractions: CONTRACTION.find_iter(text).count(),
            greeting: GREETING.is_match(text),
            informal_greeting: INFORMAL_GREETING.is_match(text),
            sign_off: SIGN_OFF.is_match(last_line),
            capitalized: text.trim_start().chars().next().is_some_and(|c| !c.is_lowercase()),
            words_per_sentence: text::word_count(text) as f64 / sentences as f64,
        }
    }
}

fn f(n: usize) -> f64 {
    n as f64
}

fn professional(m: &Markers) -> f64 {
    0.7 + if m.greeting { 0.15 } else { 0.0 } + if m.sign_off { 0.15 } else { 0.0 }
        - 0.2 * f(m.slang)
        - 0.2 * f(m.cold)
        - 0.15 * f(m.shouted + m.runs)
        - 0.1 * f(m.emoji)
        - if m.capitalized { 0.0 } else { 0.1 }
}

/// Scores one tone part; None for a part the heuristic does not know.
fn part(name: &str, m: &Markers, text: &str) -> Option<f64> {
    let s = match name {
        "warm" | "friendly" | "empathetic" | "kind" | "caring" => {
            0.4 + 0.15 * f(m.warm) - 0.25 * f(m.cold) - 0.1 * f(m.shouted)
        }
        "professional" | "business" | "polite" | "courteous" => professional(m),
        "formal" => professional(m) - 0.05 * f(m.contractions) - if m.informal_greeting { 0.2 } else { 0.0 },
        "casual" | "informal" | "relaxed" => {
            0.5 + 0.1 * f(m.contractions + m.exclamations + usize::from(m.informal_greeting))
        }
        "neutral" => 1.0 - 0.1 * f(m.warm + m.cold + m.exclamations),
        "concise" | "brief" | "direct" => 1.0 - ((m.words_per_sentence - 15.0) / 25.0).max(0.0),
        "apologetic" => {
            if APOLOGY.is_match(text) {
                1.0
            } else {
                0.2
            }
        }
        _ => return None,
    };
    Some(s.clamp(0.0, 1.0))
}

const KNOWN: &str = "warm, friendly, empathetic, professional, polite, formal, casual, neutral, concise, apologetic";

/// Scores `text` for `tone` (e.g. `warm-professional`, `formal`, `friendly and concise`).
pub(crate) fn score(text: &str, tone: &str) -> ToneScore {
    let m = Markers::of(text);
    let parts: Vec<String> = tone
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty() && *p != "and")
        .map(String::from)
        .collect();
    let mut notes = Vec::new();
    let mut total = 0.0;
    for p in &parts {
        match part(p, &m, text) {
            Some(s) => total += s,
            None => notes.push(format!("unknown tone '{p}' (known: {KNOWN})")),
        }
    }
    if parts.is_empty() {
        notes.push(format!("no tone named (known: {KNOWN})"));
    }
    let score = if parts.is_empty() { 0.0 } else { total / parts.len() as f64 };
    let known = notes.is_empty();
    ToneScore { score, passed: known && score >= PASS, known, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WARM_EMAIL: &str = "Hi Alex,\n\nI sincerely apologize for the delay and understand the impact. \
                              Thank you for your patience.\n\nWarm regards,";

    #[test]
    fn warm_professional_email_passes() {
        let t = score(WARM_EMAIL, "warm-professional");
        assert!(t.passed && t.score > 0.9, "{t:?}");
    }

    #[test]
    fn curt_and_slangy_text_fails_professional_and_warm() {
        let curt = "hey u missed it AGAIN!! whatever, obviously fix it asap";
        assert!(!score(curt, "professional").passed);
        assert!(!score(curt, "warm").passed);
        assert!(!score(curt, "warm-professional").passed);
    }

    #[test]
    fn formal_penalizes_contractions_and_hey() {
        let casual = "Hey Sam, I'm sure we'll be fine, don't worry. Thanks!";
        assert!(score(casual, "formal").score < score("Dear Sam,\n\nWe will be fine.\n\nSincerely,", "formal").score);
        assert!(score(casual, "casual").passed);
    }

    #[test]
    fn concise_measures_sentence_length() {
        assert!(score("Done. Shipped on time.", "concise").passed);
        let long = format!("{}.", "word ".repeat(45));
        assert!(!score(&long, "concise").passed);
    }

    #[test]
    fn unknown_tone_fails_and_says_which_are_known() {
        let t = score(WARM_EMAIL, "sarcastic");
        assert!(!t.passed && !t.known);
        assert!(t.notes[0].contains("known:"), "{:?}", t.notes);
    }
}
