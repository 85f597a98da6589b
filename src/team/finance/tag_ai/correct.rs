//! Corrections a user makes to a kept transaction, in their own words:
//! `that Starbucks was a business lunch`, `the Uber on Oct 2 was personal`,
//! `Office Depot should be Office Supplies`. The newest matching row of the
//! user's money records gets the note (and the category the words name), and the
//! correction is remembered as a fact.

use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;
use serde_json::json;

use super::categorize::categorize;
use super::rules::{UNCATEGORIZED, categories};
use crate::agent::{AgentContext, AgentOutput};
use crate::protocol::{Artifact, DelegationError, ErrorCode, NewFact};
use crate::store::MoneyEntry;
use crate::team::finance::{dates, money};

static SAID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:that|the|my)\s+(?P<what>[\w'&.-]+(?:\s+[\w'&.-]+){0,3}?)\s+(?:(?:on|from)\s+(?P<when>[\w ,/-]{3,20}?)\s+)?(?:was|were|is)\s+(?:actually\s+|really\s+)?(?P<art>a\s+|an\s+|for\s+|my\s+)?(?P<note>[\w' &-]{2,60})",
    )
    .expect("valid regex")
});
static SHOULD_BE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:categori[sz]e\s+)?(?:the\s+|my\s+)?(?P<what>[\w'&.-]+(?:\s+[\w'&.-]+){0,3}?)\s+(?:(?:on|from)\s+(?P<when>[\w ,/-]{3,20}?)\s+)?(?:should be|as|is really|belongs (?:in|to))\s+(?P<note>[\w' &-]{2,60})",
    )
    .expect("valid regex")
});

/// What the user said about which transaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Correction {
    /// Words naming the merchant (`starbucks`).
    pub merchant: String,
    pub date: Option<NaiveDate>,
    /// What it was (`business lunch`).
    pub note: String,
    /// The words before it as the user said them (`a `), for the answer.
    pub article: String,
}

/// The correction a message makes, if it makes one.
pub(crate) fn parse(text: &str) -> Option<Correction> {
    let c = SAID.captures(text).or_else(|| SHOULD_BE.captures(text))?;
    let merchant = c["what"].trim().to_lowercase();
    if merchant.is_empty() || ["one", "it", "this", "that", "last"].contains(&merchant.as_str()) {
        return None;
    }
    let note = c["note"].trim().trim_end_matches(['.', '!']).trim().to_string();
    let date = c.name("when").and_then(|w| dates::parse_date(w.as_str()).or_else(|| month_day(w.as_str())));
    let article = c.name("art").map_or(String::new(), |a| format!("{} ", a.as_str().trim().to_lowercase()));
    Some(Correction { merchant, date, note, article })
}

/// `Oct 2` without a year: this year's.
fn month_day(text: &str) -> Option<NaiveDate> {
    use chrono::Datelike;
    let year = chrono::Local::now().date_naive().year(); // parsed before any context: the wall clock
    dates::parse_date(&format!("{text}, {year}"))
}

fn letters(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// The newest row the correction names: its merchant contains the words
/// (letters only, so `office depot` finds `OFFICE DEPOT #123`), on its date when one is given.
pub(crate) fn find<'a>(c: &Correction, entries: &'a [MoneyEntry]) -> Option<&'a MoneyEntry> {
    let want = letters(&c.merchant);
    let day = c.date.map(|d| d.format("%Y-%m-%d").to_string());
    entries
        .iter()
        .filter(|e| letters(&e.merchant).contains(&want) || (!want.is_empty() && want.contains(&letters(&e.merchant))))
        .filter(|e| day.is_none() || e.date == day)
        .max_by_key(|e| (e.date.clone(), e.created_at))
}

/// The category the note names: a category by name (`Office Supplies`),
/// else what the rules make of the words (`business lunch`: restaurants);
/// None when it names none (`personal`).
fn category_of(note: &str) -> Option<&'static str> {
    let lower = note.to_lowercase();
    categories().find(|c| *c != UNCATEGORIZED && lower.contains(&c.to_lowercase())).or(match categorize(note, "") {
        (UNCATEGORIZED, _) => None,
        (found, _) => Some(found),
    })
}

/// Applies the correction to the user's money records.
pub(crate) async fn apply(ctx: &AgentContext, c: &Correction) -> Result<AgentOutput, DelegationError> {
    let view = ctx.read_money().await?;
    let Some(row) = find(c, &view.entries) else {
        let when = c.date.map(|d| format!(" on {}", d.format("%Y-%m-%d"))).unwrap_or_default();
        return Err(DelegationError::new(
            ErrorCode::NeedsInput,
            format!(
                "I couldn't find a '{}' transaction{when} in your records ({} kept): which purchase do you mean? \
                 Name its merchant as on the receipt or statement, e.g. 'the Starbucks on Oct 9 was a business lunch'.",
                c.merchant,
                view.entries.len()
            ),
        ));
    };
    let category = category_of(&c.note);
    ctx.correct_money(&row.id, category, Some(&c.note)).await?;
    let date = row.date.as_deref().map(|d| format!(" on {d}")).unwrap_or_default();
    let what = format!("the {} purchase of {}{date}", row.merchant, money::format(row.amount, &row.currency));
    let now = category.or(row.category.as_deref()).unwrap_or(UNCATEGORIZED);
    let summary = format!("Noted: {what} was {}{}; it's now under {now}", c.article, c.note);
    let fact = format!("{} was {}{}", capitalized(&what), c.article, c.note);
    Ok(AgentOutput::new(summary.clone(), format!("{summary}. I'll remember it."))
        .with_artifact(Artifact::json(
            "correction",
            json!({"id": row.id, "merchant": row.merchant, "date": row.date, "note": c.note, "category": now,
                   "was": row.category}),
        ))
        // Tag's domain: the row's note carries it to the other agents
        .with_fact(NewFact::scoped(fact, "domain:transactions"))
        .with_confidence(90))
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_are_read_as_people_write_them() {
        let c = parse("that Starbucks was a business lunch").expect("a correction");
        assert_eq!((c.merchant.as_str(), c.note.as_str(), c.date), ("starbucks", "business lunch", None));
        let c = parse("Actually the Uber on 2025-10-02 was personal.").expect("a correction");
        assert_eq!((c.merchant.as_str(), c.note.as_str()), ("uber", "personal"));
        assert_eq!(c.date, NaiveDate::from_ymd_opt(2025, 10, 2));
        let c = parse("Office Depot should be Office Supplies").expect("a correction");
        assert_eq!((c.merchant.as_str(), c.note.as_str()), ("office depot", "Office Supplies"));
        assert_eq!(parse("What did I spend at Office Depot?"), None);
    }

    #[test]
    fn a_note_names_a_category_by_name_or_by_what_it_was() {
        assert_eq!(category_of("business lunch"), Some("Dining - Restaurants"));
        assert_eq!(category_of("Office Supplies"), Some("Office Supplies"));
        assert_eq!(category_of("personal"), None);
    }
}
