//! The one place that finds transactions in a task: an earlier step's
//! `transactions` artifact, JSON, a CSV statement, receipts or free lines.
//! The transaction shape itself is in `transaction.rs`, re-exported here.

pub(crate) use super::transaction::{
    MAX_LINES, MAX_TRANSACTIONS, Transaction, clean_merchant, main_currency, to_json_array,
};

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::dates;
use super::money;
use super::ofx;
use super::receipt::{self, Receipt};
pub(crate) use super::statement::from_csv;
use crate::agent::Task;

/// Where `from_task` found the transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The user's money records: what earlier turns kept.
    Kept,
    /// An earlier step's `transactions` artifact; the step's agent.
    Handoff(String),
    Json,
    Ofx,
    Csv,
    Receipts,
    Lines,
}

impl Source {
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Kept => "your records".into(),
            Self::Handoff(agent) => format!("{agent}'s results"),
            Self::Json => "the JSON input".into(),
            Self::Ofx => "the OFX statement".into(),
            Self::Csv => "the CSV statement".into(),
            Self::Receipts => "the receipt text".into(),
            Self::Lines => "the listed transactions".into(),
        }
    }
}

/// What a task holds, with where it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extracted {
    pub source: Option<Source>,
    pub transactions: Vec<Transaction>,
    /// The receipts, when the transactions came from receipt text.
    pub receipts: Vec<Receipt>,
    /// CSV rows that had no readable amount.
    pub skipped_rows: usize,
}

/// The transactions of a task, first found of: (1) the latest intermediate
/// result with a `transactions` artifact; (2)-(5) as [`from_text`] on the
/// task's text.
pub(crate) fn from_task(task: &Task) -> Extracted {
    if let Some((agent, transactions)) = task.intermediate_results().and_then(from_handoff) {
        return Extracted { source: Some(Source::Handoff(agent)), transactions, ..Extracted::default() };
    }
    from_text(task.text())
}

/// The transactions in a text, first found of: (2) JSON (a transaction array,
/// an artifact list or an object holding them); (3) an OFX/QFX statement;
/// (4) a CSV statement, with a header or without; (5) receipts; (6) free
/// lines like `2025-10-01 Starbucks 4.50`.
pub(crate) fn from_text(text: &str) -> Extracted {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(transactions) = serde_json::from_str::<Value>(text.trim()).ok().and_then(|v| in_json(&v, 0)) {
        return Extracted { source: Some(Source::Json), transactions, ..Extracted::default() };
    }
    let transactions = ofx::parse(text);
    if !transactions.is_empty() {
        return Extracted { source: Some(Source::Ofx), transactions, ..Extracted::default() };
    }
    if let Some((transactions, skipped_rows)) = from_csv(text) {
        return Extracted { source: Some(Source::Csv), transactions, skipped_rows, ..Extracted::default() };
    }
    let receipts = receipt::parse_receipts(text);
    if !receipts.is_empty() {
        let transactions = receipts.iter().map(Receipt::to_transaction).collect();
        return Extracted { source: Some(Source::Receipts), transactions, receipts, ..Extracted::default() };
    }
    let transactions = from_lines(text);
    let source = (!transactions.is_empty()).then_some(Source::Lines);
    Extracted { source, transactions, ..Extracted::default() }
}

/// The newest step of a chain (an array, oldest first, or one result) whose
/// `transactions` artifact holds at least one transaction, with its agent.
pub(crate) fn from_handoff(results: &Value) -> Option<(String, Vec<Transaction>)> {
    let steps: Vec<&Value> = match results {
        Value::Array(items) => items.iter().rev().collect(),
        other => vec![other],
    };
    steps.into_iter().find_map(|step| {
        let artifacts = step.get("artifacts")?.as_array()?;
        let transactions = artifacts
            .iter()
            .rev()
            .filter(|a| a.get("label").and_then(Value::as_str) == Some("transactions"))
            .find_map(|a| in_json(a.get("value")?, 0))?;
        let agent = step.get("agent").and_then(Value::as_str).unwrap_or("an earlier step").to_string();
        Some((agent, transactions))
    })
}

/// Transactions inside a JSON value: an array of them, an artifact list, or an
/// object with `artifacts`, `transactions` or `value`.
fn in_json(value: &Value, depth: u8) -> Option<Vec<Transaction>> {
    if depth > 4 {
        return None;
    }
    match value {
        Value::Array(items) => {
            let labelled = items.iter().find(|i| i.get("label").and_then(Value::as_str) == Some("transactions"));
            if let Some(artifact) = labelled {
                return in_json(artifact.get("value")?, depth + 1);
            }
            let found: Vec<Transaction> =
                items.iter().take(MAX_TRANSACTIONS).filter_map(Transaction::from_json).collect();
            (!found.is_empty()).then_some(found)
        }
        Value::Object(obj) => ["transactions", "artifacts", "value"]
            .iter()
            .find_map(|k| in_json(obj.get(*k)?, depth + 1))
            .or_else(|| Transaction::from_json(value).map(|t| vec![t])),
        _ => None,
    }
}

/// Free lines with an amount: `2025-10-01 Starbucks 4.50`, `Uber $12 on Oct 2,
/// 2025`, `I spent $45.99 at Starbucks`, `paid 1,200 bucks rent`. An amount
/// has cents, a currency, a `k` or a money word (`bucks`); a bare number counts
/// when the line has a date or says it was spent (`spent 45 at Subway`). A line
/// with several amounts (`45 at Starbucks and 12 at Subway`) is split into
/// its clauses, one purchase each.
pub(crate) fn from_lines(text: &str) -> Vec<Transaction> {
    let currency = money::detect_currency(text).unwrap_or("USD");
    let day_first = dates::day_first_for(text, currency);
    text.lines()
        .take(MAX_LINES)
        .flat_map(|line| line_transactions(line, currency, day_first))
        .take(MAX_TRANSACTIONS)
        .collect()
}

static SPENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(spent|paid|bought|cost|charged|dropped|blew|grabbed|got charged)\b").expect("valid regex")
});
/// Money coming back: the amount is negative (not spending).
static REFUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(refund(ed)?|returned|reimbursed|cash ?back|got back|money back|received|deposit(ed)?)\b")
        .expect("valid regex")
});

/// Words after a number that make it money (`1,200 bucks`) or not money (`3 kids`).
const MONEY_WORDS: &[&str] = &["bucks", "dollars", "dollar", "usd", "cad", "eur", "euros", "gbp", "quid", "pounds"];
const NOT_MONEY_WORDS: &[&str] =
    &["year", "yr", "month", "week", "day", "hour", "min", "time", "kid", "people", "am", "pm", "x ", "%", "items"];

fn is_amount(text: &str, f: &money::Figure, context: bool) -> bool {
    let raw = text.get(f.start..f.end).unwrap_or_default();
    let after = text.get(f.end..).unwrap_or_default().trim_start().to_ascii_lowercase();
    if f.is_percent || NOT_MONEY_WORDS.iter().any(|w| after.starts_with(w)) {
        return false;
    }
    let marked = raw.contains(['.', '$', '€', '£']) || raw.ends_with(['k', 'K']);
    marked || context || MONEY_WORDS.iter().any(|w| after.starts_with(w))
}

fn line_transactions(line: &str, currency: &str, day_first: bool) -> Vec<Transaction> {
    let line = line.trim().trim_start_matches(['-', '*', '•']).trim();
    let (date, rest) = match dates::find_date_ordered(line, day_first) {
        Some((d, r)) => (Some(d), format!("{} {}", &line[..r.start], &line[r.end..])),
        None => (None, line.to_string()),
    };
    let context = date.is_some() || SPENT.is_match(&rest) || REFUND.is_match(&rest);
    let line_currency = money::detect_currency(line).unwrap_or(currency);
    let one = |clause: &str, figure: &money::Figure| {
        let words = format!("{} {}", clause.get(..figure.start)?, clause.get(figure.end..)?);
        let merchant = merchant_from_prose(&words)?;
        let amount = if REFUND.is_match(clause) { -figure.value.abs() } else { figure.value };
        let mut t = Transaction::new(merchant, amount, line_currency);
        t.date = date;
        t.description = line.to_string();
        Some(t)
    };
    let amounts = |clause: &str| -> Vec<money::Figure> {
        money::figures(clause).into_iter().filter(|f| is_amount(clause, f, context)).collect()
    };
    let found = amounts(&rest);
    if found.len() > 1 {
        let clauses: Vec<&str> = rest
            .split("; ")
            .flat_map(|c| c.split(", "))
            .flat_map(|c| c.split(" and "))
            .flat_map(|c| c.split(" & "))
            .collect();
        let per_clause: Vec<Vec<money::Figure>> = clauses.iter().map(|c| amounts(c)).collect();
        if per_clause.iter().map(Vec::len).sum::<usize>() == found.len() && per_clause.iter().all(|f| f.len() <= 1) {
            return clauses.iter().zip(&per_clause).filter_map(|(c, f)| one(c, f.first()?)).collect();
        }
    }
    found.last().and_then(|f| one(&rest, f)).into_iter().collect()
}

/// The payee in a line of prose: what follows " at " (or " from ") if
/// anything, else the words left once filler is removed; after a colon when
/// the colon follows an instruction (`Categorize this: Starbucks`). None
/// without letters.
fn merchant_from_prose(words: &str) -> Option<String> {
    const ASKS: &[&str] =
        &["categor", "extract", "receipt", "transaction", "please", "analy", "here", "add", "record", "log"];
    let words = match words.split_once(':') {
        Some((head, tail)) if ASKS.iter().any(|a| head.to_lowercase().contains(a)) => tail,
        _ => words,
    };
    // ASCII lowercasing keeps byte offsets valid in `words`.
    let lower = words.to_ascii_lowercase();
    let focus = match lower.find(" at ").map(|i| i + 4).or_else(|| lower.find(" from ").map(|i| i + 6)) {
        Some(i) => {
            let after = words.get(i..).unwrap_or_default();
            let end = [" on ", " for ", " in ", " yesterday", " today", " last ", " this "]
                .iter()
                .filter_map(|w| after.to_ascii_lowercase().find(w))
                .min();
            after.get(..end.unwrap_or(after.len())).unwrap_or(after)
        }
        None => words,
    };
    const FILLER: &[&str] = &[
        "i",
        "i've",
        "ive",
        "just",
        "spent",
        "paid",
        "bought",
        "got",
        "grabbed",
        "charged",
        "on",
        "at",
        "for",
        "a",
        "an",
        "the",
        "to",
        "my",
        "me",
        "some",
        "about",
        "around",
        "roughly",
        "approx",
        "like",
        "bucks",
        "dollars",
        "usd",
        "what",
        "which",
        "category",
        "is",
        "does",
        "should",
        "where",
        "refund",
        "refunded",
        "returned",
        "received",
        "yesterday",
        "today",
        "tonight",
        "last",
        "night",
        "week",
        "this",
        "morning",
        "hey",
        "so",
        "was",
    ];
    let kept: Vec<&str> = focus
        .split(|c: char| c.is_whitespace() || matches!(c, ':' | ',' | '–' | '|'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '&' && c != '\''))
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.to_lowercase().as_str()))
        .collect();
    let merchant = kept.join(" ");
    merchant.chars().any(char::is_alphabetic).then(|| clean_merchant(&merchant))
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use serde_json::json;

    use super::*;
    use crate::protocol::HandoffData;
    use crate::team::finance::money::Cents;

    const STATEMENT: &str = include_str!("../../../examples/statement.csv");

    #[test]
    fn transactions_parse_example_statement() {
        let (ts, skipped) = from_csv(STATEMENT).expect("statement parses");
        assert_eq!(skipped, 0);
        assert!(ts.len() >= 20, "{} rows", ts.len());
        assert!(ts.iter().all(|t| t.date.is_some() && t.currency == "USD"));
        // A bank export: spending is negative in the file, positive here; pay is a credit.
        let rent = ts.iter().find(|t| t.merchant.to_lowercase().contains("rent")).expect("rent row");
        assert!(rent.amount > 0);
        assert!(ts.iter().any(|t| t.amount < 0), "payroll deposits are credits");
    }

    #[test]
    fn transactions_csv_handles_quotes_thousands_and_positive_spending() {
        let csv = "Here is my card export:\nDate,Payee,Amount,Category\n\
                   10/01/2025,\"STARBUCKS #1234\",\"$1,234.56\",Coffee\n\
                   10/02/2025,\"Uber, Inc\",12.00,\n10/03/2025,Broken,abc,\nThanks!";
        let (ts, skipped) = from_csv(csv).expect("csv");
        assert_eq!(skipped, 1);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].merchant, "Starbucks");
        assert_eq!(ts[0].amount, 123_456);
        assert_eq!(ts[0].category.as_deref(), Some("Coffee"));
        assert_eq!(ts[1].merchant, "Uber, Inc");
        assert_eq!(ts[1].date, NaiveDate::from_ymd_opt(2025, 10, 2));
    }

    #[test]
    fn transactions_csv_debit_credit_columns_set_the_sign() {
        let csv = "Date;Description;Debit;Credit\n2025-10-01;Grocer;45,10;\n2025-10-02;Salary;;2500,00";
        let (ts, _) = from_csv(csv).expect("csv");
        assert_eq!(ts.iter().map(|t| t.amount).collect::<Vec<_>>(), vec![4510, -250_000]);
    }

    #[test]
    fn transactions_free_lines_parse() {
        let ts = from_lines(
            "Here you go:\n2025-10-01 Starbucks 4.50\n- Uber $12 on Oct 2, 2025\nI spent $45.99 at Best Buy\n\
             Please categorize this: Blue Bottle Coffee $6.50 on 2025-10-09\nShell: fuel $40.00",
        );
        let got: Vec<(&str, Cents)> = ts.iter().map(|t| (t.merchant.as_str(), t.amount)).collect();
        assert_eq!(
            got,
            vec![
                ("Starbucks", 450),
                ("Uber", 1200),
                ("Best Buy", 4599),
                ("Blue Bottle Coffee", 650),
                ("Shell fuel", 4000)
            ]
        );
        assert_eq!(ts[1].date, NaiveDate::from_ymd_opt(2025, 10, 2));
    }

    #[test]
    fn transactions_prefer_the_latest_handoff_artifact() {
        let mut task = Task::new("Categorize", "2025-10-01 Ignored 1.00");
        task.handoff = HandoffData {
            intermediate_results: Some(json!([
                {"agent": "byte-doc", "status": "success", "artifacts": [
                    {"type": "json", "label": "transactions", "value": [{"merchant": "Old", "amount": 1.0}]}]},
                {"agent": "tag-ai", "status": "success", "artifacts": [
                    {"type": "json", "label": "transactions", "value": [
                        {"date": "2025-10-09", "merchant": "Starbucks", "amount": 45.99, "currency": "USD",
                         "description": "Latte", "category": "Dining - Coffee", "confidence": 95}]}]},
                {"agent": "crystal-analytics", "status": "success", "artifacts": [{"label": "analysis", "value": {}}]}
            ])),
            ..HandoffData::default()
        };
        let got = from_task(&task);
        assert_eq!(got.source, Some(Source::Handoff("tag-ai".into())));
        assert_eq!(got.transactions.len(), 1);
        assert_eq!(got.transactions[0].amount, 4599);
        assert_eq!(got.transactions[0].category.as_deref(), Some("Dining - Coffee"));
        assert_eq!(got.transactions[0].to_json()["amount"], json!(45.99));
    }

    #[test]
    fn transactions_read_json_input() {
        let got =
            from_text(r#"[{"type":"json","label":"transactions","value":[{"payee":"Shell","amount":"$40.00"}]}]"#);
        assert_eq!(got.source, Some(Source::Json));
        assert_eq!(got.transactions[0].merchant, "Shell");
        assert_eq!(got.transactions[0].amount, 4000);
    }

    #[test]
    fn transactions_garbage_gives_nothing() {
        for text in ["", "hello there", "{\"a\": 1}", "\u{0}\u{1}💥", "1,2,3\n4,5,6"] {
            assert!(from_text(text).transactions.is_empty(), "{text:?}");
        }
    }
}
