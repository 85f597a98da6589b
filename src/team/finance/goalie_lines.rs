//! Goalie's reading of one line of prose: which amount is the target, which
//! is saved, which is saved each month, and the deadline; or the question to
//! ask when the line does not say.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::super::dates;
use super::super::money::{self, Cents, Labelled};

static DEADLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(by|before|until|deadline:?|due|target date:?|in)\s+(?:the\s+)?(?:end\s+of\s+)?")
        .expect("valid regex")
});
static RELATIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:in|within)\s+(\d{1,3})\s+(months?|years?)\b").expect("valid regex"));
static BULLET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+").expect("valid regex"));
static YEAR_ONLY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{4})\b").expect("valid regex"));
static MONTH_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(next\s+)?(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b")
        .expect("valid regex")
});
static YEAR_WORDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(next|this|the)\s+year\b|^(christmas|xmas)\b").expect("valid regex"));

/// A deadline month and the byte range of its words.
type Deadline = ((i32, u32), Range<usize>);

/// The deadline in a line and the byte range to blank out before reading
/// amounts: `by 2026-12`, `by the end of 2026`, `within 2 years`, `by june`
/// (the next June). `next june` while June is still ahead this year could be
/// either June: a question.
fn deadline(line: &str, as_of: (i32, u32)) -> Result<Option<Deadline>, String> {
    for kw in DEADLINE.find_iter(line) {
        let Some(rest) = line.get(kw.end()..) else { continue };
        if let Some((ym, r)) = dates::find_month(rest).filter(|(_, r)| r.start == 0) {
            return Ok(Some((ym, kw.start()..kw.end() + r.end)));
        }
        if let Some(c) = YEAR_ONLY.captures(rest) {
            let year: i32 = c[1].parse().map_err(|_| String::new())?;
            return Ok(Some(((year, 12), kw.start()..kw.end() + c[0].len())));
        }
        if let Some(c) = MONTH_ONLY.captures(rest) {
            let month = dates::month_number(&c[2]).unwrap_or(12);
            let later_this_year = month > as_of.1;
            if c.get(1).is_some() && later_this_year {
                return Err(format!(
                    "By '{}' do you mean {} or {}? Tell me the month and year, e.g. 'by {}'.",
                    c[0].trim(),
                    dates::month_label((as_of.0, month)),
                    dates::month_label((as_of.0 + 1, month)),
                    dates::month_label((as_of.0 + 1, month))
                ));
            }
            let year = if later_this_year { as_of.0 } else { as_of.0 + 1 };
            return Ok(Some(((year, month), kw.start()..kw.end() + c[0].len())));
        }
        if let Some(c) = YEAR_WORDS.captures(rest) {
            let next = c.get(1).is_some_and(|m| m.as_str().eq_ignore_ascii_case("next"));
            let year = if next { as_of.0 + 1 } else { as_of.0 };
            return Ok(Some(((year, 12), kw.start()..kw.end() + c[0].len())));
        }
    }
    let Some(c) = RELATIVE.captures(line) else { return Ok(None) };
    let n: i64 = c[1].parse().unwrap_or(0);
    let months = if c[2].to_lowercase().starts_with('y') { n * 12 } else { n };
    Ok(c.get(0).map(|m| (dates::add_months(as_of, months), m.range())))
}

/// A contribution per month, converted from weekly or yearly amounts.
fn monthly_amount(l: &Labelled) -> Option<Cents> {
    let v = l.figure.value;
    if l.after_starts(money::PER_MONTH_AFTER) || l.before_has(&["monthly", "per month", "each month", "every month"]) {
        Some(v)
    } else if l.after_starts(&["/week", "per week", "a week", "weekly", "each week", "every week", "/wk"]) {
        Some(v * 52 / 12)
    } else if l.after_starts(&["/year", "per year", "a year", "yearly", "annually", "/yr"]) {
        Some(v / 12)
    } else {
        None
    }
}

/// Words right after an amount that say what it is (`2k saved`, `10k goal`).
const SAVED_AFTER: &[&str] =
    &["saved", "so far", "already", "in it", "in the bank", "in savings", "banked", "put aside"];
const TARGET_AFTER: &[&str] = &["target", "goal"];
/// Words before an amount that say what it is; the nearest one counts.
const SAVED_BEFORE: &[&str] =
    &["saved", "have", "got", "current", "so far", "already", "put aside", "balance", "sitting at", "started with"];
const TARGET_BEFORE: &[&str] = &[
    "target", "goal", "need", "want", "reach", "cost", "total", "toward", "towards", "aiming", "aim for", "hit",
    "get to", "save up", "price",
];
/// Numbers that are not money: `32 years old`, `3 kids`, `12 months`.
const NOT_MONEY: &[&str] = &["years", "year old", "yrs", "months", "weeks", "days", "kids", "people", "%"];
/// Phrases that say nothing is saved yet.
const NOTHING_SAVED: &[&str] =
    &["nothing saved", "nothing yet", "from scratch", "from zero", "haven't saved", "have nothing", "no savings"];

/// What one line says about a goal; any part may be missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Partial {
    pub(super) name: String,
    pub(super) target: Option<Cents>,
    pub(super) saved: Option<Cents>,
    pub(super) monthly: Option<Cents>,
    pub(super) deadline: Option<(i32, u32)>,
}

impl Partial {
    /// Fills this goal's missing parts from `other`; a part both give is a question.
    pub(super) fn merge(&mut self, other: Partial, line: &str, currency: &str) -> Result<(), String> {
        let clash = |role: &str, a: Cents, b: Cents| {
            format!(
                "I read two {role} amounts for {}: {} and {} ('{}'). Which one is it?",
                if self.name.is_empty() { "your goal" } else { &self.name },
                money::format(a, currency),
                money::format(b, currency),
                line.trim()
            )
        };
        for (role, mine, theirs) in [
            ("target", &mut self.target, other.target),
            ("saved", &mut self.saved, other.saved),
            ("monthly", &mut self.monthly, other.monthly),
        ] {
            match (*mine, theirs) {
                (Some(a), Some(b)) if a != b => return Err(clash(role, a, b)),
                (None, Some(b)) => *mine = Some(b),
                _ => {}
            }
        }
        self.deadline = self.deadline.or(other.deadline);
        if self.name.is_empty() {
            self.name = other.name;
        }
        Ok(())
    }
}

/// The question for amounts whose role a line does not say.
fn which_is_which(line: &str) -> String {
    format!(
        "In '{}' I can't tell which amount is the goal's target, which is already saved and which is saved each \
         month. Label them, e.g. 'Trip: target $3,000, saved $800, saving $200/month, by 2026-06'.",
        line.trim()
    )
}

/// What one line says about a goal (None when it says nothing), or the
/// question to ask when it gives amounts without saying what they are.
pub(super) fn read_line(line: &str, as_of: (i32, u32)) -> Result<Option<Partial>, String> {
    let line = BULLET.find(line).map_or(line, |m| &line[m.end()..]).trim();
    let found = deadline(line, as_of)?;
    let mut text = line.to_string();
    if let Some((_, r)) = &found {
        text.replace_range(r.clone(), &" ".repeat(r.len()));
    }
    let labelled: Vec<Labelled> = money::labelled_figures(&text)
        .into_iter()
        .filter(|l| {
            let before = l.before.trim_end();
            let age =
                ["i'm", "i am", "im", "age", "aged"].iter().any(|w| before == *w || before.ends_with(&format!(" {w}")));
            !l.figure.is_percent && !l.after_starts(NOT_MONEY) && !age
        })
        .collect();
    let lower = text.to_lowercase();
    let mut p = Partial {
        deadline: found.map(|(d, _)| d),
        saved: NOTHING_SAVED.iter().any(|w| lower.contains(w)).then_some(0),
        ..Partial::default()
    };
    let mut unlabelled: Vec<&Labelled> = Vec::new();
    for (i, l) in labelled.iter().enumerate() {
        let next_is_of = labelled.get(i + 1).is_some_and(|n| n.before.trim() == "of");
        // A label right after the previous amount (`2k saved toward ...`) is that amount's.
        let mut before = l.before.trim_start();
        let touches_previous =
            i > 0 && labelled.get(i - 1).is_some_and(|p| p.figure.end + l.before.len() == l.figure.start);
        if touches_previous {
            for w in SAVED_AFTER.iter().chain(TARGET_AFTER) {
                before = before.strip_prefix(w).unwrap_or(before);
            }
        }
        let nearest = |words: &[&str]| words.iter().filter_map(|w| before.rfind(w).map(|i| i + w.len())).max();
        let role = if let Some(m) = monthly_amount(l) {
            Some(("monthly", m))
        } else if l.before.trim() == "of" || l.before.trim_end().ends_with(" of") {
            Some(("target", l.figure.value))
        } else if next_is_of {
            Some(("saved", l.figure.value))
        } else {
            match (nearest(SAVED_BEFORE), nearest(TARGET_BEFORE)) {
                (Some(s), t) if t.is_none_or(|t| s > t) => Some(("saved", l.figure.value)),
                (_, Some(_)) => Some(("target", l.figure.value)),
                _ if l.after_starts(SAVED_AFTER) => Some(("saved", l.figure.value)),
                _ if l.after_starts(TARGET_AFTER) => Some(("target", l.figure.value)),
                _ => None,
            }
        };
        let part = match role {
            Some(("target", v)) => Partial { target: Some(v), ..Partial::default() },
            Some(("saved", v)) => Partial { saved: Some(v), ..Partial::default() },
            Some((_, v)) => Partial { monthly: Some(v), ..Partial::default() },
            None => {
                unlabelled.push(l);
                continue;
            }
        };
        p.merge(part, line, "USD").map_err(|_| which_is_which(line))?;
    }
    // One unlabelled amount is the target when the line names none
    // (`Vacation 3000, have 1200`); any other unlabelled amount is a question:
    // `I have 2000 and 500`, `target 10k, 2k` (saved or monthly?).
    match unlabelled.as_slice() {
        [] => {}
        [u] if p.target.is_none() && !u.before.trim_start().starts_with("and") => p.target = Some(u.figure.value),
        _ => return Err(which_is_which(line)),
    }
    if p.target.is_none() && p.saved.is_none() && p.monthly.is_none() && p.deadline.is_none() {
        return Ok(None);
    }
    let target_figure = labelled.iter().find(|l| Some(l.figure.value) == p.target);
    p.name = goal_name(&text, labelled.first().map(|l| l.figure.start), target_figure);
    Ok(Some(p))
}

/// The words before a colon or the first amount, without filler; else the
/// words after the target (`2k saved toward a 10k emergency fund`).
fn goal_name(text: &str, first_figure: Option<usize>, target: Option<&Labelled>) -> String {
    let end = first_figure.unwrap_or(text.len());
    let head = text.get(..end).unwrap_or(text);
    let head = head.split(':').next().unwrap_or(head);
    let head = head.rsplit('?').next().unwrap_or(head);
    const FILLER: &str = "my goal goals save saving savings put aside for a an the to i want need target of have saved - is i've ive i'm im got hey hi so far already toward towards putting away up about around there's currently at ok okay and in it fund's";
    let words = |s: &str| -> String {
        s.split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
            .filter(|w| w.chars().any(char::is_alphabetic) && !FILLER.split(' ').any(|f| f == w.to_lowercase()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut name = words(head);
    if name.is_empty()
        && let Some(t) = target
    {
        name = words(&t.after);
    }
    let mut chars = name.chars();
    chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or_default()
}
