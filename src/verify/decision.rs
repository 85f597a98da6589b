//! Should a main agent delegate this task? The delegation decision:
//! deterministic × 0.3 + verifiable × 0.3 + repeatable × 0.2 +
//! self-contained × 0.2, delegate at 0.6 or more. [`score`] judges a Task
//! Note on its own words; [`decide`] judges a user's request with what
//! Prime's router found (the specialist it resembles), and is what Prime's
//! choice between answering and delegating follows (docs/ROUTING.md).

use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::checks::check_name;
use super::task_note::{Problem, TaskSpec};
use super::text::re;

pub(crate) const THRESHOLD: f64 = 0.6;

/// Similar past delegations from which a task counts as recurring.
pub(crate) const RECURRING_AFTER: usize = 2;

/// The four factors, their weighted score and the verdict, with the reasons in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DecisionScore {
    pub deterministic: bool,
    pub verifiable: bool,
    pub repeatable: bool,
    pub self_contained: bool,
    pub score: f64,
    pub delegate: bool,
    pub reasoning: String,
}

/// Work whose result depends on judgment rather than on the request.
static CREATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:brainstorm\w*|creative\w*|ideas|strateg\w*|vision|invent\w*|imagine|story|stories|poem|slogan|novel|innovat\w*|roadmap)\b",
    )
});
#[cfg(test)]
static RECURRING: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:weekly|daily|monthly|quarterly|recurring|every|standard|template|routine|status)\b")
});
#[cfg(test)]
/// Reading the user's own data is something the request cannot carry.
static NEEDS_ACCESS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:in|from|check|read|look at|search|open)\s+(?:my|the user's|their|our)\s+(?:calendar|files?|inbox|emails?|documents?|drive)\b",
    )
});
#[rustfmt::skip]
const TEMPLATE_ACTIONS: &[&str] = &[
    "draft", "compose", "send", "email", "reply", "format", "reformat", "rewrite", "polish",
    "convert", "transform", "parse", "extract", "validate", "normalize", "block", "schedule",
    "book", "generate", "compile", "summarize", "calculate", "translate", "write",
];

#[cfg(test)]
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

#[cfg(test)]
/// Scores `task_note`; `history_count` is how many similar tasks were delegated before.
pub(crate) fn score(task_note: &str, history_count: usize) -> DecisionScore {
    let (spec, problems) = TaskSpec::parse_lenient(task_note);
    let creative = CREATIVE.find(task_note).map(|m| m.as_str().to_string());
    let mut why = String::new();

    let tool = spec.kind.slug();
    let deterministic = creative.is_none() && (tool.is_some() || TEMPLATE_ACTIONS.contains(&spec.goal.action.as_str()));
    match (&creative, tool) {
        (Some(word), _) => write!(why, "not deterministic: '{word}' calls for judgment"),
        (None, Some(t)) if deterministic => write!(why, "deterministic: {} {t} task", article(t)),
        (None, _) if deterministic => write!(why, "deterministic: '{}' follows a template", spec.goal.action),
        _ => write!(why, "not deterministic: no templated action"),
    }
    .ok();

    let checks = spec.checks();
    let verifiable = !checks.is_empty();
    if verifiable {
        let names: Vec<String> = checks.iter().map(check_name).collect();
        write!(why, "; verifiable: {} checks ({})", checks.len(), names.join(", ")).ok();
    } else {
        why.push_str("; not verifiable: no machine-checkable success criteria");
    }

    let recurring = RECURRING.find(task_note).map(|m| m.as_str().to_string());
    let repeatable =
        history_count >= RECURRING_AFTER || (creative.is_none() && (tool.is_some() || recurring.is_some()));
    if history_count >= RECURRING_AFTER {
        write!(why, "; repeatable: delegated {history_count} times before").ok();
    } else if !repeatable {
        why.push_str("; not repeatable: a one-off");
    } else if let Some(word) = recurring {
        write!(why, "; repeatable: '{word}' recurs").ok();
    } else {
        write!(why, "; repeatable: a recurring {} task", tool.unwrap_or("tool")).ok();
    }

    let gaps: Vec<String> = gaps(&problems)
        .chain(NEEDS_ACCESS.find(task_note).map(|m| format!("needs access to the user's data ('{}')", m.as_str())))
        .collect();
    weigh(deterministic, verifiable, repeatable, &gaps, why)
}

/// A Task Note's problems that leave it short of what the agent needs
/// (missing criteria only cost it verifiability).
fn gaps(problems: &[Problem]) -> impl Iterator<Item = String> + '_ {
    problems.iter().filter(|p| !matches!(p, Problem::NoCriteria)).map(ToString::to_string)
}

/// The self-contained factor from `gaps`, the weighted score and the verdict.
fn weigh(deterministic: bool, verifiable: bool, repeatable: bool, gaps: &[String], mut why: String) -> DecisionScore {
    let self_contained = gaps.is_empty();
    if self_contained {
        why.push_str("; self-contained");
    } else {
        write!(why, "; not self-contained: {}", gaps.join("; ")).ok();
    }

    let weight = |yes: bool, w: f64| if yes { w } else { 0.0 };
    let score =
        weight(deterministic, 0.3) + weight(verifiable, 0.3) + weight(repeatable, 0.2) + weight(self_contained, 0.2);
    // Two decimals, so that 0.3 + 0.3 compares as 0.6 at the threshold.
    let score = (score * 100.0).round() / 100.0;
    let delegate = score >= THRESHOLD;
    write!(
        why,
        " → {score:.2} {} {THRESHOLD:.2}: {}",
        if delegate { "≥" } else { "<" },
        if delegate { "delegate" } else { "handle directly" }
    )
    .ok();
    DecisionScore { deterministic, verifiable, repeatable, self_contained, score, delegate, reasoning: why }
}

/// What Prime's router found for a request: the specialist it resembles most.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Routing<'a> {
    /// The specialist's slug.
    pub agent: &'a str,
    /// How sure the router is that the request is this specialist's (0 to 1).
    pub similarity: f64,
    /// The specialist's configured example closest to the request.
    pub example: &'a str,
    /// Whether that is close enough for the router to pick it: the request is
    /// one of the kinds the specialist is there for.
    pub resembles: bool,
    /// Whether it is so close that a word of judgment in it ("any ideas to
    /// cut my spending?") does not make it creative work.
    pub close: bool,
    /// A built-in agent: the same request and data give the same answer, by rules it checks itself.
    pub deterministic: bool,
    /// It takes the user's words as a Task Note, whose gaps it would have to ask about.
    pub task_notes: bool,
}

/// Prime's choice for a user's `request`, from what the router found
/// (`routing`: None when no specialist resembles it) and how often similar
/// requests were delegated before: the same four factors and weights as
/// [`score`]. Creative work is neither deterministic nor verifiable, so a
/// request such as "write me a poem" that only faintly resembles a
/// specialist's examples stays with Prime.
pub(crate) fn decide(request: &str, routing: Option<&Routing<'_>>, history_count: usize) -> DecisionScore {
    let Some(r) = routing else {
        let why = format!(
            "no specialist's examples resemble the request → 0.00 < {THRESHOLD:.2}: handle directly (answer, or ask what is meant)"
        );
        return DecisionScore {
            deterministic: false,
            verifiable: false,
            repeatable: false,
            self_contained: false,
            score: 0.0,
            delegate: false,
            reasoning: why,
        };
    };
    let creative = CREATIVE.find(request).map(|m| m.as_str().to_string()).filter(|_| !r.close);
    let (spec, problems) = TaskSpec::parse_lenient(request);
    let templated = TEMPLATE_ACTIONS.contains(&spec.goal.action.as_str());
    let mut why = String::new();
    let deterministic = creative.is_none() && (r.deterministic || templated);
    match &creative {
        Some(word) => write!(why, "not deterministic: '{word}' calls for judgment"),
        None if r.deterministic => {
            write!(why, "deterministic: {} is built in (same request and data, same answer)", r.agent)
        }
        None if templated => write!(why, "deterministic: '{}' follows a template", spec.goal.action),
        None => write!(why, "not deterministic: {} is a model and the request follows no template", r.agent),
    }
    .ok();
    let checks = if r.task_notes { spec.checks() } else { Vec::new() };
    let verifiable = creative.is_none() && (r.deterministic || !checks.is_empty());
    if !checks.is_empty() {
        let names: Vec<String> = checks.iter().map(check_name).collect();
        write!(why, "; verifiable: {} checks ({})", checks.len(), names.join(", ")).ok();
    } else if verifiable {
        why.push_str("; verifiable: its answer is computed by rules from the request and the user's data");
    } else {
        why.push_str("; not verifiable: no machine-checkable result");
    }
    let repeatable = r.resembles || history_count >= RECURRING_AFTER;
    if r.resembles {
        write!(why, "; repeatable: {:.2} sure it is {}'s kind of request, like '{}'", r.similarity, r.agent, r.example)
            .ok();
    } else if repeatable {
        write!(why, "; repeatable: delegated {history_count} times before").ok();
    } else {
        write!(why, "; not repeatable: only {:.2} sure it is {}'s kind of request", r.similarity, r.agent).ok();
    }
    let gaps: Vec<String> = if r.task_notes { gaps(&problems).collect() } else { Vec::new() };
    weigh(deterministic, verifiable, repeatable, &gaps, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: [&str; 3] = [
        "Draft apology email to alex.chan@company.com about missed project deadline.\nMention new ETA of Oct 22.\nTone: warm-professional.\nLength: max 120 words.\nRequired: apologize, acknowledge impact, provide new timeline.\nSubject hint: \"Apology for delay\"",
        "Format this text to professional business style:\n\"hey can u send me the report thx\"\n\nTarget: formal email greeting.\nPreserve intent, improve clarity.\nNo abbreviations, proper capitalization.",
        "Transform CSV data to JSON format.\nInput columns: name, email, role.\nOutput structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.",
    ];

    #[test]
    fn seed_001_good_notes_are_delegated() {
        for note in GOOD {
            let d = score(note, 0);
            assert!(d.deterministic && d.verifiable && d.repeatable && d.self_contained, "{}", d.reasoning);
            assert_eq!(d.score, 1.0);
            assert!(d.delegate, "{}", d.reasoning);
        }
    }

    #[test]
    fn vague_email_is_handled_directly() {
        let d = score("Email Alex about that thing we talked about earlier", 0);
        assert!(!d.verifiable && !d.self_contained, "{}", d.reasoning);
        assert_eq!(d.score, 0.5);
        assert!(!d.delegate);
        assert!(d.reasoning.contains("earlier conversation"), "{}", d.reasoning);
        // Doing it often does not make it checkable or self-contained.
        assert!(!score("Email Alex about that thing we talked about earlier", 10).delegate);
    }

    #[test]
    fn creative_and_strategic_work_is_handled_directly() {
        for note in [
            "Brainstorm creative names for our new product line",
            "Develop a strategic plan for next year's market expansion",
            "Write a short story about our team offsite",
        ] {
            let d = score(note, 0);
            assert!(!d.deterministic && !d.delegate, "{note}: {}", d.reasoning);
            assert!(d.score < THRESHOLD, "{note}: {}", d.score);
        }
    }

    #[test]
    fn history_makes_a_task_repeatable() {
        let note = "Compile the list of open invoices. Max 50 words.";
        let once = score(note, 0);
        let often = score(note, 5);
        assert!(!once.repeatable && often.repeatable, "{}", once.reasoning);
        assert!((often.score - once.score - 0.2).abs() < 1e-9);
    }

    fn routed<'a>(agent: &'a str, similarity: f64, deterministic: bool, task_notes: bool) -> Routing<'a> {
        let (resembles, close) = (similarity >= 0.3, similarity >= 0.7);
        Routing { agent, similarity, example: "an example", resembles, close, deterministic, task_notes }
    }

    #[test]
    fn a_request_like_a_built_in_specialists_examples_is_delegated() {
        let d = decide("how much did I spend on coffee?", Some(&routed("crystal-analytics", 0.7, true, false)), 0);
        assert!(d.deterministic && d.verifiable && d.repeatable && d.self_contained, "{}", d.reasoning);
        assert!(d.delegate && d.score == 1.0, "{}", d.reasoning);
        assert!(
            d.reasoning.contains("0.70 sure it is crystal-analytics's kind of request, like 'an example'"),
            "{}",
            d.reasoning
        );
    }

    #[test]
    fn creative_work_or_no_specialist_stays_with_prime() {
        let d = decide("write me a poem about autumn", Some(&routed("report", 0.33, true, true)), 0);
        assert!(!d.deterministic && !d.verifiable && !d.delegate, "{}", d.reasoning);
        assert_eq!(d.score, 0.4);
        let none = decide("what's the capital of Australia", None, 0);
        assert!(!none.delegate && none.reasoning.contains("no specialist"), "{}", none.reasoning);
        // close to a specialist's examples, a word of judgment does not make it creative work
        let close = decide("any ideas to cut my spending?", Some(&routed("crystal-analytics", 0.8, true, false)), 0);
        assert!(close.delegate, "{}", close.reasoning);
        // a model specialist with no template and no checks is not delegated to on a faint likeness
        let faint = decide("think about my week", Some(&routed("advisor", 0.1, false, false)), 0);
        assert!(!faint.delegate, "{}", faint.reasoning);
    }

    #[test]
    fn a_vague_task_note_for_a_built_in_tool_agent_is_still_delegated_so_it_can_ask() {
        let d = decide("email my accountant", Some(&routed("email", 0.5, true, true)), 0);
        assert!(!d.self_contained && d.delegate, "{}", d.reasoning);
        assert_eq!(d.score, 0.8);
    }

    #[test]
    fn tasks_that_need_the_users_data_are_not_self_contained() {
        let d = score("Find a free slot in my calendar next week. Max 20 words.", 0);
        assert!(!d.self_contained, "{}", d.reasoning);
    }
}
