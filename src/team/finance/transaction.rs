//! The transaction shape the finance agents pass to each other: its JSON form,
//! the bounds on one task's work, merchant names cleaned from bank text, and the main currency.

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::dates;
use super::money::{self, Cents};

/// Bounds on the work done for one task.
pub(crate) const MAX_LINES: usize = 5000;
pub(crate) const MAX_TRANSACTIONS: usize = 5000;

/// One purchase (or, with a negative amount, a refund or deposit).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transaction {
    pub date: Option<NaiveDate>,
    pub merchant: String,
    /// Positive is money spent.
    pub amount: Cents,
    pub currency: String,
    pub description: String,
    pub category: Option<String>,
    pub confidence: Option<u8>,
}

impl Transaction {
    pub(crate) fn new(merchant: impl Into<String>, amount: Cents, currency: impl Into<String>) -> Self {
        Self {
            date: None,
            merchant: merchant.into(),
            amount,
            currency: currency.into(),
            description: String::new(),
            category: None,
            confidence: None,
        }
    }

    /// The shared JSON shape: `{date, merchant, amount, currency, description}`
    /// plus `category` and `confidence` once categorized.
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({
            "date": self.date.map(|d| d.format("%Y-%m-%d").to_string()),
            "merchant": self.merchant,
            "amount": money::to_value(self.amount),
            "currency": self.currency,
            "description": self.description,
        });
        if let (Some(obj), Some(category)) = (v.as_object_mut(), &self.category) {
            obj.insert("category".into(), json!(category));
            obj.insert("confidence".into(), json!(self.confidence.unwrap_or(0)));
        }
        v
    }

    /// Reads the shared shape, tolerating other spellings (`payee`, `total`,
    /// string amounts, other date formats). None without an amount.
    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        let text = |keys: &[&str]| {
            keys.iter().find_map(|k| obj.get(*k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()))
        };
        let amount = ["amount", "total", "value"].iter().find_map(|k| obj.get(*k).and_then(money::from_value))?;
        let description = text(&["description", "memo", "details"]).unwrap_or_default().to_string();
        let merchant = text(&["merchant", "payee", "vendor", "name"])
            .map(str::to_string)
            .or_else(|| (!description.is_empty()).then(|| clean_merchant(&description)))
            .unwrap_or_else(|| "Unknown".into());
        let currency = text(&["currency"])
            .filter(|c| c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()))
            .map_or_else(|| "USD".to_string(), str::to_ascii_uppercase);
        Some(Self {
            date: text(&["date"]).and_then(dates::parse_date),
            merchant,
            amount,
            currency,
            description,
            category: text(&["category"]).map(str::to_string),
            confidence: obj.get("confidence").and_then(Value::as_u64).map(|c| c.min(100) as u8),
        })
    }

    /// Lowercased merchant and description, what the keyword rules look at.
    pub(crate) fn search_text(&self) -> String {
        format!("{} {}", self.merchant, self.description).to_lowercase()
    }

    pub(crate) fn month(&self) -> Option<String> {
        self.date.map(|d| d.format("%Y-%m").to_string())
    }
}

pub(crate) fn to_json_array(transactions: &[Transaction]) -> Value {
    Value::Array(transactions.iter().map(Transaction::to_json).collect())
}

/// A merchant name from a bank description: card prefixes, store numbers,
/// phone numbers, bank codes (`PPD`, `DES:`) and masked account numbers
/// removed, ALL CAPS turned into Title Case.
pub(crate) fn clean_merchant(raw: &str) -> String {
    let mut s = raw.trim().trim_matches('"').trim();
    const PREFIXES: &[&str] = &[
        "purchase authorized on ",
        "pos purchase ",
        "debit purchase ",
        "visa purchase ",
        "card purchase ",
        "purchase ",
        "pos ",
        "checkcard ",
        "sq *",
        "tst* ",
        "tst*",
        "paypal *",
        "pp*",
        "cb ",
        "vir ",
        "prlv ",
    ];
    loop {
        let lower = s.to_ascii_lowercase();
        match PREFIXES.iter().find(|p| lower.starts_with(*p)) {
            Some(p) => s = s.get(p.len()..).unwrap_or_default().trim(),
            None => break,
        }
        // `PURCHASE AUTHORIZED ON 09/30 COSTCO`: the date after the prefix goes too.
        if let Some((_, rest)) = s.split_once(' ').filter(|(first, _)| is_short_date(first)) {
            s = rest.trim();
        }
    }
    let lower = s.to_ascii_lowercase();
    const CUTS: &[&str] = &[" #", "#", "  ", " - ", ".com", " des:", " conf#", " ppd", " id:", " ccd "];
    let cut = CUTS.iter().filter_map(|sep| lower.find(sep)).min().unwrap_or(s.len());
    let s = s.get(..cut).unwrap_or(s);
    let mut words: Vec<&str> = s.split_whitespace().collect();
    // A store or phone number ends the name (`SHELL OIL 57442156 HOUSTON`).
    if let Some(i) = words.iter().skip(1).position(|w| {
        w.starts_with(|c: char| c.is_ascii_digit()) && w.chars().filter(char::is_ascii_digit).count() >= 3
    }) {
        words.truncate(i + 1);
    }
    while words.len() > 1
        && words
            .last()
            .is_some_and(|w| is_number_like(w) || ["store", "stores"].contains(&w.to_ascii_lowercase().as_str()))
    {
        words.pop();
    }
    let joined = words.join(" ");
    // Typed in lower case (`chipotle`, `whole foods`): each word capitalized.
    let out = if !joined.chars().any(char::is_uppercase) {
        words.iter().map(|w| capitalized(w)).collect::<Vec<_>>().join(" ")
    } else if joined.chars().any(char::is_lowercase) {
        joined
    } else {
        words.iter().enumerate().map(|(i, w)| title_word(w, i > 0)).collect::<Vec<_>>().join(" ")
    };
    if out.is_empty() { "Unknown".into() } else { out }
}

/// `1234`, `*1234`, `XXXXXX1234`, `03/10`: numbers and masked numbers, no name.
fn is_number_like(w: &str) -> bool {
    let digits = w.chars().filter(char::is_ascii_digit).count();
    w.chars().all(|c| c.is_ascii_digit() || matches!(c, '*' | 'X' | 'x' | '/' | '.'))
        && (digits > 0 || w.chars().all(|c| c == '*'))
}

/// `09/30`, `30.09`: a day and month without a year.
fn is_short_date(w: &str) -> bool {
    let parts: Vec<&str> = w.split(['/', '.']).collect();
    parts.len() == 2 && parts.iter().all(|p| (1..=2).contains(&p.len()) && p.chars().all(|c| c.is_ascii_digit()))
}

fn capitalized(w: &str) -> String {
    let mut chars = w.chars();
    chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// `STARBUCKS` is `Starbucks`, `JOE'S` is `Joe's`, `ZONE,` is `Zone,`, `OF`
/// inside a name is `of`;
/// acronyms stay (`BP`, `CVS`, `MTA`, `AT&T`): two letters, three without a
/// vowel, known ones, or words with other symbols (but `LTD` is `Ltd`).
fn title_word(w: &str, inner: bool) -> String {
    const SMALL: &[&str] = &["of", "and", "the", "de", "du", "des", "la", "le", "by"];
    const ACRONYMS: &[&str] = &["mta", "amc", "hbo", "aws", "ups", "ibm", "atm", "usa", "ikea"];
    let core = w.trim_end_matches([',', '.', ';', ':', '!']);
    let tail = &w[core.len()..];
    let lower = core.to_ascii_lowercase();
    if inner && SMALL.contains(&lower.as_str()) {
        return lower + tail;
    }
    let len = core.chars().count();
    const WORDS: &[&str] = &["ltd", "ed", "st", "jr", "sr", "mr", "mrs", "dr"];
    let acronym = !WORDS.contains(&lower.as_str())
        && (len <= 2
            || (len == 3 && !lower.contains(['a', 'e', 'i', 'o', 'u', 'y']))
            || ACRONYMS.contains(&lower.as_str()));
    if acronym || !core.chars().all(|c| c.is_alphabetic() || c == '\'') {
        return w.to_string();
    }
    let mut chars = core.chars();
    let titled: String =
        chars.next().map(|f| f.to_uppercase().chain(chars.flat_map(char::to_lowercase)).collect()).unwrap_or_default();
    titled + tail
}

/// The most common currency (the first seen on a tie); USD for none.
pub(crate) fn main_currency(transactions: &[Transaction]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for t in transactions {
        match counts.iter_mut().find(|(c, _)| *c == t.currency) {
            Some((_, n)) => *n += 1,
            None => counts.push((&t.currency, 1)),
        }
    }
    let best = counts.iter().fold(None, |best: Option<(&str, usize)>, &(c, n)| match best {
        Some((_, bn)) if bn >= n => best,
        _ => Some((c, n)),
    });
    best.map_or_else(|| "USD".to_string(), |(c, _)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_clean_merchant_names() {
        assert_eq!(clean_merchant("POS PURCHASE STARBUCKS #1234 TORONTO"), "Starbucks");
        assert_eq!(clean_merchant("SQ *BLUE BOTTLE COFFEE"), "Blue Bottle Coffee");
        assert_eq!(clean_merchant("Adobe Creative Cloud"), "Adobe Creative Cloud");
        assert_eq!(clean_merchant("  "), "Unknown");
        assert_eq!(clean_merchant("whole foods"), "Whole Foods");
        assert_eq!(clean_merchant("STARBUCKS STORE 12345 SEATTLE WA"), "Starbucks");
        assert_eq!(clean_merchant("PURCHASE AUTHORIZED ON 09/30 COSTCO WHSE #0113"), "Costco Whse");
        assert_eq!(clean_merchant("CON ED OF NY DES:INTELL CK ID:0000123456"), "Con Ed of NY");
        assert_eq!(clean_merchant("ONLINE TRANSFER FROM SAVINGS XXXXXX1234"), "Online Transfer From Savings");
        assert_eq!(clean_merchant("7-ELEVEN 12345"), "7-ELEVEN");
    }
}
