//! Reading debts from what people type. Each amount is read with its role
//! (a balance, a rate, a monthly payment, an extra) from the words around it
//! and the debt it is said of ("9000 on my car loan" is the car loan's
//! balance). What the text does not say is asked (`NEEDS_INPUT`), never
//! assumed: a plan built on a guessed rate or minimum is a confident wrong
//! answer.

use super::{Debt, Strategy};
use crate::protocol::DelegationError;
use crate::team::finance::money::{self, Cents, Labelled};
use crate::team::finance::reply::needs_input;

const MAX_DEBTS: usize = 50;

/// Debts, the extra monthly amount and the chosen strategy, read from text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    pub debts: Vec<Debt>,
    pub extra: Cents,
    /// A total monthly budget, when the text gives one instead of an extra.
    pub budget: Option<Cents>,
    pub strategy: Strategy,
    pub warnings: Vec<String>,
}

/// A debt as the text mentions it, with what it says and leaves out.
#[derive(Debug, Clone, Default, PartialEq)]
struct Mention {
    /// The words naming it ("car loan", "Visa"); empty when the text names none.
    name: String,
    balance: Option<Cents>,
    apr_bp: Option<i64>,
    minimum: Option<Cents>,
    /// Amounts said of this debt whose role the text does not give.
    unclear: Vec<Cents>,
}

impl Mention {
    fn is_empty(&self) -> bool {
        self.balance.is_none() && self.apr_bp.is_none() && self.minimum.is_none() && self.unclear.is_empty()
    }

    /// A debt named again ("the card is 19.99%", answering what was asked
    /// about it) that still lacks something: the clause completes it.
    fn continued_by(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            && (self.balance.is_none() || self.apr_bp.is_none() || self.minimum.is_none())
    }

    fn label(&self, n: usize, currency: &str) -> String {
        let name = if self.name.is_empty() { format!("debt {n}") } else { self.name.clone() };
        match self.balance {
            Some(b) => format!("{name} ({})", money::format(b, currency)),
            None => name,
        }
    }
}

/// Words that name a kind of debt; a clause with one starts a new debt.
const DEBT_NOUNS: &[&str] = &[
    "card",
    "loan",
    "mortgage",
    "heloc",
    "overdraft",
    "visa",
    "mastercard",
    "amex",
    "discover",
    "debt",
    "bill",
    "credit",
    "lien",
    "note",
];
/// Words that never belong to a debt's name.
const FILLER: &[&str] = &[
    "i",
    "i've",
    "ive",
    "my",
    "a",
    "an",
    "the",
    "on",
    "of",
    "at",
    "with",
    "is",
    "owe",
    "have",
    "got",
    "and",
    "also",
    "plus",
    "about",
    "around",
    "roughly",
    "still",
    "left",
    "balance",
    "total",
    "to",
    "for",
    "in",
    "it's",
    "its",
    "there's",
    "pay",
    "paying",
    "another",
    "one",
    "other",
    "there",
    "then",
    "what",
    "how",
    "do",
    "should",
    "help",
    "me",
    "off",
    "can",
    "you",
    "debts",
    "two",
    "three",
    "four",
    "both",
    "owing",
    "outstanding",
    "remaining",
    "current",
    "currently",
    "which",
];

/// Whether `text` holds one of `words` as a whole word or phrase.
fn has_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        text.match_indices(w).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + w.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// Whether `text`, after spaces, starts with one of `words` as a whole word.
fn starts_with_word(text: &str, words: &[&str]) -> bool {
    let t = text.trim_start();
    words.iter().any(|w| t.starts_with(w) && !t[w.len()..].chars().next().is_some_and(char::is_alphanumeric))
}

fn singular(word: &str) -> &str {
    word.strip_suffix('s').filter(|w| w.len() > 2).unwrap_or(word)
}

/// The debt a clause names, if it names one: `Visa: $5,000` names "Visa",
/// `9000 on my car loan` names "car loan", `Chase Sapphire card` names all three words.
fn debt_name(clause: &str) -> Option<String> {
    // "Name: figures" names its debt before the colon
    if let Some((head, rest)) = clause.split_once(':') {
        // a list's bullet ("- ", "* ", "1. ") is no part of the name
        let head = head.trim().trim_start_matches(|c: char| !c.is_alphabetic()).trim();
        let words = head.split_whitespace().count();
        if (1..=4).contains(&words)
            && money::figures(head).is_empty()
            && rest.trim_start().starts_with(|c: char| c.is_ascii_digit() || "$€£".contains(c))
        {
            return Some(head.to_string());
        }
    }
    let words: Vec<&str> = clause
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '&'))
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let is_noun = |i: usize| DEBT_NOUNS.contains(&singular(&lower[i]));
    if let Some(i) = lower.iter().position(|w| w == "line")
        && lower.get(i + 1).map(String::as_str) == Some("of")
        && lower.get(i + 2).is_some_and(|w| w == "credit")
    {
        return Some(words[i..i + 3].join(" "));
    }
    let first = (0..words.len()).find(|&i| is_noun(i))?;
    let mut end = first + 1;
    while end < words.len() && is_noun(end) {
        end += 1;
    }
    let mut start = first;
    while start > 0 && first - start < 2 {
        let w = &lower[start - 1];
        let word_like = w.chars().any(char::is_alphabetic) && !w.chars().any(|c| c.is_ascii_digit());
        if !word_like || FILLER.contains(&w.as_str()) || words[start - 1].is_empty() {
            break;
        }
        start -= 1;
    }
    let name = words[start..end].join(" ");
    // "debt" alone ("my debt", "debt payoff") names no particular debt
    (!(end - start == 1 && matches!(singular(&lower[first]), "debt" | "credit"))).then_some(name)
}

/// A line cut into clauses at `;`, `, `, ` and `, ` plus `, ` & ` and sentence ends.
fn clauses(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &line[i..];
        let cut = [("; ", 2), (", ", 2), (". ", 2), (" and ", 5), (" plus ", 6), (" & ", 3), (" but ", 5)]
            .iter()
            .find(|(sep, _)| rest.starts_with(sep))
            .map(|(_, n)| *n);
        match cut {
            Some(n) => {
                out.push(&line[start..i]);
                i += n;
                start = i;
            }
            None => i += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    out.push(&line[start..]);
    out.into_iter().map(str::trim).filter(|c| !c.is_empty()).collect()
}

enum Role {
    /// A count, not money ("Max 150 words", "3 weeks"): no role of a debt's.
    Count,
    Extra,
    Budget,
    Apr,
    Minimum,
    Balance,
    Unclear,
}

/// What a bare number right before them counts: not money.
/// (Not "cards" or "loans": "5000 card debt" is a balance.)
const COUNTED: &[&str] = &[
    "word",
    "words",
    "character",
    "characters",
    "page",
    "pages",
    "minute",
    "minutes",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "kid",
    "kids",
    "child",
    "children",
    "people",
    "times",
];

/// What a figure of `clause` is. A bare number (digits alone, no currency
/// sign, percent or `k`) that counts something ("Max 150 words", "it's
/// been 3 weeks") is no debt's figure.
fn role(clause: &str, l: &Labelled, names_debt: bool) -> Role {
    let (before, after) = (l.before.as_str(), l.after.as_str());
    let raw = clause.get(l.figure.start..l.figure.end).unwrap_or_default();
    let bare = raw.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.');
    if bare && starts_with_word(after, COUNTED) {
        return Role::Count;
    }
    // a label right after the figure is its own ("50 minimum"); the words
    // before may be the previous figure's ("19.99% APR with a 50 minimum")
    if !l.figure.is_percent && starts_with_word(after, &["min", "minimum", "payment", "payments"]) {
        return Role::Minimum;
    }
    if l.figure.is_percent
        || has_word(before, &["apr", "interest", "rate", "@"])
        || starts_with_word(after, &["apr", "interest", "rate"])
    {
        return Role::Apr;
    }
    if has_word(before, &["extra", "additional", "on top"]) || starts_with_word(after, &["extra", "additional", "more"])
    {
        return Role::Extra;
    }
    if has_word(before, &["budget", "afford", "can pay", "can put", "can do", "total of", "put toward", "put towards"])
        && !names_debt
    {
        return Role::Budget;
    }
    if has_word(before, &["min", "mins", "minimum", "minimums", "payment", "payments", "pay", "paying", "paid"])
        || starts_with_word(after, &["min", "minimum", "payment", "payments"])
        || l.after_starts(money::PER_MONTH_AFTER)
    {
        return Role::Minimum;
    }
    if has_word(before, &["balance", "owe", "owing", "owed", "of", "outstanding", "remaining", "left"])
        || starts_with_word(
            after,
            &["on", "left", "owed", "owing", "balance", "outstanding", "remaining", "in", "debt"],
        )
    {
        return Role::Balance;
    }
    Role::Unclear
}

/// Debts, extras and the strategy from `text`; `NEEDS_INPUT` naming every
/// rate, minimum or balance the text leaves out, and every amount whose role
/// it does not say.
pub(crate) fn parse_request(text: &str) -> Result<Request, DelegationError> {
    let lower = text.to_lowercase();
    let strategy = if lower.contains("snowball") && !lower.contains("avalanche") {
        Strategy::Snowball
    } else {
        Strategy::Avalanche
    };
    let (mut extra, mut budget) = (0, None);
    let mut mentions: Vec<Mention> = Vec::new();
    // the debt the figures are said of: an index into `mentions`
    let mut current: Option<usize> = None;
    for line in text.lines().take(1000) {
        for clause in clauses(line) {
            let name = debt_name(clause);
            let labelled = money::labelled_figures(clause);
            if let Some(name) = &name {
                // a clause naming a debt starts it (or goes on with it, named
                // again), unless the debt so far has no name yet
                match current.map(|i| &mut mentions[i]) {
                    Some(m) if m.name.is_empty() && !labelled.is_empty() => m.name = name.clone(),
                    _ => {
                        let again = mentions.iter().position(|m| m.continued_by(name));
                        current = Some(again.unwrap_or_else(|| {
                            mentions.push(Mention { name: name.clone(), ..Mention::default() });
                            mentions.len() - 1
                        }));
                    }
                }
            }
            for l in &labelled {
                let v = l.figure.value;
                let role = role(clause, l, name.is_some());
                match role {
                    Role::Count => {}
                    Role::Extra => extra = extra.max(v),
                    Role::Budget => budget = Some(v),
                    _ => {
                        let i = *current.get_or_insert_with(|| {
                            mentions.push(Mention::default());
                            mentions.len() - 1
                        });
                        let m = &mut mentions[i];
                        let slot = match role {
                            Role::Apr => &mut m.apr_bp,
                            Role::Minimum => &mut m.minimum,
                            Role::Balance => &mut m.balance,
                            // a bare amount on a named debt without a balance yet is its balance
                            _ if m.balance.is_none() && !m.name.is_empty() => &mut m.balance,
                            _ => {
                                m.unclear.push(v);
                                continue;
                            }
                        };
                        if slot.is_some() {
                            // said twice: another debt, not yet named
                            let mut next = Mention::default();
                            match role {
                                Role::Apr => next.apr_bp = Some(v),
                                Role::Minimum => next.minimum = Some(v),
                                _ => next.balance = Some(v),
                            }
                            mentions.push(next);
                            current = Some(mentions.len() - 1);
                        } else {
                            *slot = Some(v);
                        }
                    }
                }
            }
        }
        if mentions.len() >= MAX_DEBTS {
            break;
        }
    }
    mentions.retain(|m| !m.is_empty());
    mentions.truncate(MAX_DEBTS);
    if mentions.is_empty() {
        return Err(needs_input(
            "Which debts should I plan? Tell me each one's balance, interest rate (APR) and minimum payment, \
             e.g. 'Visa: $5,000 at 19.99% APR, minimum $150', and what extra you can pay each month.",
        ));
    }
    let currency = money::detect_currency(text).unwrap_or("USD");
    let mut asks = Vec::new();
    let mut debts = Vec::new();
    for (i, m) in mentions.iter().enumerate() {
        let mut missing = Vec::new();
        if m.balance.is_none_or(|b| b <= 0) {
            missing.push("its balance");
        }
        if m.apr_bp.is_none() {
            missing.push("its interest rate (APR)");
        }
        if m.minimum.is_none_or(|b| b <= 0) {
            missing.push("its minimum monthly payment");
        }
        let label = m.label(i + 1, currency);
        if !m.unclear.is_empty() {
            let amounts: Vec<String> = m.unclear.iter().map(|v| money::format(*v, currency)).collect();
            asks.push(format!(
                "- {label}: I couldn't tell whether {} is a balance, a rate or a monthly payment",
                amounts.join(" and ")
            ));
        } else if !missing.is_empty() {
            let missing = match missing.as_slice() {
                [one] => one.to_string(),
                [init @ .., last] => format!("{} and {last}", init.join(", ")),
                [] => String::new(),
            };
            asks.push(format!("- {label}: {missing}"));
        }
        if let (Some(balance), Some(apr), Some(minimum)) = (m.balance, m.apr_bp, m.minimum) {
            let name = if m.name.is_empty() { format!("Debt {}", i + 1) } else { m.name.clone() };
            debts.push(Debt { name, balance, apr_bp: apr.clamp(0, 100_000), minimum });
        }
    }
    if !asks.is_empty() {
        return Err(needs_input(format!(
            "To plan the payoff I need a little more about your debts:\n{}\nFor example: 'car loan: $9,000 at 6.5% APR, \
             minimum $250'.",
            asks.join("\n")
        )));
    }
    Ok(Request { debts, extra, budget, strategy, warnings: Vec::new() })
}

#[cfg(test)]
#[path = "phrasings.rs"]
mod phrasings;
