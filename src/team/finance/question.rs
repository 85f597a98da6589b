//! What a spending question asks, so that Crystal's answer answers it: the
//! top N (`my top 3 categories`, `five biggest expenses`), the single
//! biggest (`my biggest expense`: the purchase, its date and amount), a
//! comparison (`more on eating out or on groceries?`, `August vs
//! September`: both sides and which is larger), where to cut back
//! (suggestions with amounts from the user's own spending), or how much
//! went to a category or a merchant.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::Analysis;
use crate::team::finance::dates;
use crate::team::finance::money::{self, Cents};
use crate::team::finance::tag_ai::{self, UNCATEGORIZED};
use crate::team::finance::transactions::Transaction;

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    /// Spending categories.
    Category,
    /// Single purchases.
    Purchase,
    /// Merchants, all their purchases together.
    Merchant,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Side {
    /// One category, or those a word names together (`dining`: coffee and restaurants).
    Category(String, Vec<&'static str>),
    /// Purchases whose merchant contains the words.
    Merchant(String),
    /// A calendar month (1 to 12): the latest one the data has.
    Month(u32),
}

/// What a spending question asks.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Question {
    /// The `n` largest.
    Top(usize, Unit),
    /// The single largest.
    Biggest(Unit),
    /// Two sides, compared.
    Compare(Side, Side),
    /// Where to spend less.
    CutBack,
}

static CUT_BACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:cut(?:ting)? (?:back|down|costs)|spend(?:ing)? less|save (?:some )?money|reduce|trim|lower (?:my )?(?:spending|expenses|costs|bills)|where (?:can|could|should) i (?:save|cut)|tips to|cuts? to)\b")
        .expect("valid regex")
});
static COMPARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:more|less) (?:on|at|for|in) (.+?),? or (?:on |at |for |in )?(.+?)(?:\?|$|\.| in | last | this | during )|\bcompare (?:my )?(.+?) (?:and|with|to|vs\.?|versus) (.+?)(?: spending| expenses)?(?:\?|$|\.| in | last | this )|\b(\w+(?: \w+)?) (?:vs\.?|versus) (\w+(?: \w+)?)\b")
        .expect("valid regex")
});
static TOP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\btop (\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)?\b|\b(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten) (?:biggest|largest|most expensive|highest|top)\b")
        .expect("valid regex")
});
static BIGGEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:biggest|largest|most expensive|priciest|highest|costliest)\b|\b(?:spend|spent|spending) the most (?:on|at)\b|\bcosts? me the most\b").expect("valid regex")
});

fn number(word: &str) -> Option<usize> {
    const WORDS: [&str; 10] = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    word.parse().ok().or_else(|| WORDS.iter().position(|w| w.eq_ignore_ascii_case(word)).map(|i| i + 1))
}

/// What the words after a "top" or "biggest" count: categories, merchants or purchases.
fn unit(text: &str) -> (Unit, bool) {
    let lower = text.to_lowercase();
    let plural = |w: &str| lower.contains(&format!("{w}s")) || lower.contains(&format!("{w}es"));
    if lower.contains("categor") || lower.contains("spending areas") || lower.contains("what i spend") {
        return (Unit::Category, lower.contains("categories"));
    }
    if ["merchant", "store", "shop", "place", "vendor"].iter().any(|w| lower.contains(w)) || lower.contains("most at") {
        return (
            Unit::Merchant,
            ["merchants", "stores", "shops", "places", "vendors"].iter().any(|w| lower.contains(w)),
        );
    }
    if lower.contains("the most on") || lower.contains("me the most") {
        return (Unit::Category, false);
    }
    let many = ["expense", "purchase", "transaction", "charge", "cost", "thing"].iter().any(|w| plural(w));
    (Unit::Purchase, many)
}

/// The side a comparison's words name: a month, a category, or a merchant.
fn side(words: &str) -> Option<Side> {
    let words = words.trim().trim_start_matches("my ").trim_start_matches("on ").trim_start_matches("at ").trim();
    if words.is_empty() {
        return None;
    }
    if let Some(m) = dates::month_number(words).filter(|_| words.len() >= 3 && words.split(' ').count() == 1) {
        return Some(Side::Month(m));
    }
    let (category, _) = tag_ai::categorize(words, "");
    if category != UNCATEGORIZED {
        return Some(Side::Category(words.to_string(), vec![category]));
    }
    let lower = words.to_lowercase();
    let named: Vec<&'static str> =
        tag_ai::categories().filter(|c| *c != UNCATEGORIZED && c.to_lowercase().contains(&lower)).collect();
    if !named.is_empty() {
        return Some(Side::Category(words.to_string(), named));
    }
    Some(Side::Merchant(lower))
}

/// What `text` asks, when it asks one of these.
pub(super) fn read(text: &str) -> Option<Question> {
    if let Some(c) = COMPARE.captures(text) {
        let (a, b) = match (c.get(1).or(c.get(3)).or(c.get(5)), c.get(2).or(c.get(4)).or(c.get(6))) {
            (Some(a), Some(b)) => (a.as_str(), b.as_str()),
            _ => ("", ""),
        };
        if let (Some(a), Some(b)) = (side(a), side(b)) {
            return Some(Question::Compare(a, b));
        }
    }
    if CUT_BACK.is_match(text) {
        return Some(Question::CutBack);
    }
    if let Some(c) = TOP.captures(text) {
        let n = c.get(1).or(c.get(2)).and_then(|m| number(m.as_str()));
        let (unit, _) = unit(&text[c.get(0)?.start()..]);
        let default = if unit == Unit::Purchase { 5 } else { 3 };
        return Some(Question::Top(n.unwrap_or(default).clamp(1, 20), unit));
    }
    if let Some(m) = BIGGEST.find(text) {
        let (unit, many) = unit(&text[m.start()..]);
        return Some(if many {
            Question::Top(if unit == Unit::Purchase { 5 } else { 3 }, unit)
        } else {
            Question::Biggest(unit)
        });
    }
    None
}

fn month_of(t: &Transaction) -> Option<(i32, u32)> {
    use chrono::Datelike;
    t.date.map(|d| (d.year(), d.month()))
}

/// A side's spending: its label and total.
fn total(side: &Side, spending: &[Transaction], months: &[(i32, u32)]) -> (String, Cents, usize) {
    let picked: Vec<&Transaction> = match side {
        Side::Category(_, cats) => {
            spending.iter().filter(|t| t.category.as_deref().is_some_and(|c| cats.contains(&c))).collect()
        }
        Side::Merchant(m) => spending.iter().filter(|t| t.merchant.to_lowercase().contains(m.as_str())).collect(),
        Side::Month(m) => {
            // the latest such month the data has
            let year = months.iter().filter(|(_, mm)| mm == m).map(|(y, _)| *y).max();
            spending.iter().filter(|t| month_of(t).is_some_and(|(y, mm)| mm == *m && Some(y) == year)).collect()
        }
    };
    let label = match side {
        Side::Category(words, cats) => format!("{words} ({})", cats.join(" and ")),
        Side::Merchant(m) => m.clone(),
        Side::Month(m) => {
            let year = months.iter().filter(|(_, mm)| mm == m).map(|(y, _)| *y).max();
            let name = u8::try_from(*m).ok().and_then(|m| chrono::Month::try_from(m).ok()).map_or("?", |m| m.name());
            year.map_or(name.to_string(), |y| format!("{name} {y}"))
        }
    };
    (label, picked.iter().map(|t| t.amount).sum(), picked.len())
}

fn purchase(t: &Transaction, currency: &str) -> String {
    let date = t.date.map(|d| format!(" on {}", d.format("%Y-%m-%d"))).unwrap_or_default();
    format!("{} {}{date}", t.merchant, money::format(t.amount, currency))
}

/// The answer to `q` from the `spending` (categorized, transfers left out)
/// and its analysis: a sentence that answers it, and the same as data.
/// `period` is how the sentence names the time (` in October 2025`, or empty).
pub(super) fn answer(q: &Question, spending: &[Transaction], a: &Analysis, period: &str) -> (String, Value) {
    let mut ts: Vec<Transaction> =
        spending.iter().filter(|t| t.amount > 0 && t.currency == a.currency).cloned().collect();
    tag_ai::ensure_categories(&mut ts);
    let (n, unit) = match q {
        Question::Top(n, u) => (*n, *u),
        Question::Biggest(u) => (1, *u),
        Question::Compare(x, y) => return compare(x, y, &ts, &a.currency, period),
        Question::CutBack => {
            let items: Vec<String> = a.suggestions.iter().enumerate().map(|(i, s)| format!("{}) {s}", i + 1)).collect();
            let lead = format!("Where you could spend less, from your own spending{period}: {}", items.join(" "));
            return (lead, json!({"kind": "cut_back", "suggestions": a.suggestions}));
        }
    };
    match unit {
        Unit::Category => top_categories(n, a, period),
        Unit::Merchant => top_merchants(n, &ts, &a.currency, period),
        Unit::Purchase => top_purchases(n, ts, &a.currency, period),
    }
}

fn top_categories(n: usize, a: &Analysis, period: &str) -> (String, Value) {
    let top = &a.by_category[..n.min(a.by_category.len())];
    let items: Vec<String> = top
        .iter()
        .map(|c| {
            format!(
                "{} {} ({}%)",
                c.category,
                money::format(c.total, &a.currency),
                money::percent(c.total, a.total_spent)
            )
        })
        .collect();
    let lead = match items.as_slice() {
        [] => format!("You have no spending{period} to rank"),
        [one] if n == 1 => format!("Your biggest spending category{period} is {one}"),
        _ => format!("Your top {} spending categories{period}: {}", items.len(), items.join(", ")),
    };
    let data: Vec<Value> = top
        .iter()
        .map(|c| json!({"category": c.category, "total": money::to_value(c.total), "count": c.count}))
        .collect();
    (lead, json!({"kind": "top_categories", "items": data}))
}

fn top_merchants(n: usize, ts: &[Transaction], currency: &str, period: &str) -> (String, Value) {
    let mut by: Vec<(String, Cents, usize)> = Vec::new();
    for t in ts {
        match by.iter_mut().find(|(m, _, _)| *m == t.merchant) {
            Some((_, total, count)) => {
                *total += t.amount;
                *count += 1;
            }
            None => by.push((t.merchant.clone(), t.amount, 1)),
        }
    }
    by.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    by.truncate(n);
    let items: Vec<String> = by
        .iter()
        .map(|(m, c, k)| {
            format!("{m} {} ({k} purchase{})", money::format(*c, currency), if *k == 1 { "" } else { "s" })
        })
        .collect();
    let lead = match items.as_slice() {
        [] => format!("You have no spending{period} to rank"),
        [one] if n == 1 => format!("You spent the most{period} at {one}"),
        _ => format!("Your top {} merchants{period}: {}", items.len(), items.join(", ")),
    };
    let data: Vec<Value> =
        by.iter().map(|(m, c, k)| json!({"merchant": m, "total": money::to_value(*c), "count": k})).collect();
    (lead, json!({"kind": "top_merchants", "items": data}))
}

fn top_purchases(n: usize, mut ts: Vec<Transaction>, currency: &str, period: &str) -> (String, Value) {
    ts.sort_by(|x, y| y.amount.cmp(&x.amount).then_with(|| x.date.cmp(&y.date)));
    let items: Vec<String> = ts.iter().take(n).map(|t| purchase(t, currency)).collect();
    let mut lead = match items.as_slice() {
        [] => format!("You have no purchases{period} to rank"),
        [one] if n == 1 => format!("Your biggest expense{period} was {one}"),
        _ => format!("Your {} biggest expenses{period}: {}", items.len(), items.join("; ")),
    };
    // the rent is usually the biggest: say what comes after the fixed costs too
    if n == 1
        && let Some(first) = ts.first()
        && let Some(fixed @ ("Rent" | "Utilities")) = first.category.as_deref()
        && let Some(next) = ts.iter().find(|t| !matches!(t.category.as_deref(), Some("Rent" | "Utilities")))
    {
        lead.push_str(&format!(" ({fixed}); apart from rent and utilities, it was {}", purchase(next, currency)));
    }
    let data: Vec<Value> = ts.iter().take(n).map(Transaction::to_json).collect();
    (lead, json!({"kind": "top_purchases", "items": data}))
}

fn compare(x: &Side, y: &Side, ts: &[Transaction], currency: &str, period: &str) -> (String, Value) {
    let fmt = |c: Cents| money::format(c, currency);
    let mut months: Vec<(i32, u32)> = ts.iter().filter_map(month_of).collect();
    months.sort_unstable();
    months.dedup();
    let (la, ta, na) = total(x, ts, &months);
    let (lb, tb, nb) = total(y, ts, &months);
    let verdict = match ta.cmp(&tb) {
        std::cmp::Ordering::Greater => format!("More on {la}, by {}", fmt(ta - tb)),
        std::cmp::Ordering::Less => format!("More on {lb}, by {}", fmt(tb - ta)),
        std::cmp::Ordering::Equal => "The same on both".to_string(),
    };
    let count = |k: usize| format!("{k} purchase{}", if k == 1 { "" } else { "s" });
    let lead = format!("{la}: {} ({}); {lb}: {} ({}){period}. {verdict}", fmt(ta), count(na), fmt(tb), count(nb));
    let mut chars = lead.chars();
    let lead: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    let data = json!({"kind": "comparison", "sides": [
        {"side": la, "total": money::to_value(ta), "count": na},
        {"side": lb, "total": money::to_value(tb), "count": nb}]});
    (lead, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_read_for_what_they_ask() {
        let cases = [
            ("What are my top 3 spending categories?", Question::Top(3, Unit::Category)),
            ("show me my top five expenses", Question::Top(5, Unit::Purchase)),
            ("What was my biggest expense in October?", Question::Biggest(Unit::Purchase)),
            ("what are my biggest expenses", Question::Top(5, Unit::Purchase)),
            ("which category do I spend the most on", Question::Biggest(Unit::Category)),
            ("which store do I spend the most at", Question::Biggest(Unit::Merchant)),
            ("How can I cut back on my spending?", Question::CutBack),
            (
                "Did I spend more on eating out or on groceries in October?",
                Question::Compare(
                    Side::Category("eating out".into(), vec!["Dining - Restaurants"]),
                    Side::Category("groceries".into(), vec!["Groceries"]),
                ),
            ),
            ("compare august and september spending", Question::Compare(Side::Month(8), Side::Month(9))),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), Some(want), "{text}");
        }
        assert_eq!(read("how much did I spend on coffee?"), None);
    }
}
