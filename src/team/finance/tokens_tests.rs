//! A PII token's number is not data: every parser that reads amounts, dates
//! or percentages out of text reads the same figures whether a value was
//! written out or replaced by its token (`<EMAIL_1>`, `<CARD_12>`).

use chrono::Datelike;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::blitz::parse_request;
use super::dates;
use super::goalie::parse_goals;
use super::ledger::TaxContext;
use super::money;
use super::transactions::from_text;

/// Texts with one slot where a redacted value stood; what each parser reads.
const TEXTS: &[&str] = &[
    "2025-10-02 Uber 23.10 receipt sent to {}",
    "{} 2025-10-02 Uber 23.10",
    "Starbucks 4.50 on 2025-10-01, paid with {}",
    "I spent 45 at Subway, card {}",
    "paid {} 12 bucks",
    "Date,Description,Amount\n2025-10-01,Starbucks {},4.50\n2025-10-02,Uber,23.10\n",
    "OFFICE DEPOT\nSold to {}\nPAPER 42.99\nTOTAL 42.99",
    "My income is 85000 a year (ask {}), home office 20%",
    "salary {}",
    "Visa {} $5,000 at 19.99%, min $150",
    "Emergency fund: target $10,000 for {}, saved $2,500",
    "receipt from {}",
    "{}",
];

/// Every figure a parser reads from `text`, in its order: what must not change.
fn numbers(text: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for t in from_text(text).transactions {
        out.push(t.amount);
        out.push(t.date.map_or(0, |d| i64::from(d.ordinal())));
    }
    out.extend(money::figures(text).iter().map(|f| f.value));
    out.extend(money::labelled_figures(text).iter().map(|l| l.figure.value));
    let tax = TaxContext::from_text(text);
    out.extend([tax.annual_income.unwrap_or(-1), tax.home_office_pct.map_or(-1, i64::from)]);
    if let Ok(r) = parse_request(text) {
        out.extend(r.debts.iter().flat_map(|d| [d.balance, d.apr_bp, d.minimum]));
        out.extend([r.extra, r.budget.unwrap_or(-1)]);
    }
    if let Ok((goals, _)) = parse_goals(text) {
        out.extend(goals.iter().flat_map(|p| [p.goal.target, p.goal.saved, p.goal.monthly]));
    }
    out.push(dates::find_date(text).map_or(0, |(d, _)| i64::from(d.ordinal())));
    out
}

fn token() -> impl Strategy<Value = String> {
    let kind = prop::sample::select(vec!["EMAIL", "PHONE", "CARD", "IBAN", "SSN", "IP", "SIN", "DOB", "BANK"]);
    (kind, 1u64..100_000, any::<bool>()).prop_map(|(kind, n, name)| {
        let view = if name && kind == "EMAIL" { ":name" } else { "" };
        format!("<{kind}_{n}{view}>")
    })
}

fn config() -> Config {
    Config { cases: 256, rng_seed: RngSeed::Fixed(0x70_4e5), failure_persistence: None, ..Config::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_token_reads_as_no_number_in_any_parser(text in prop::sample::select(TEXTS), token in token()) {
        let written = text.replace("{}", "someone");
        let redacted = text.replace("{}", &token);
        prop_assert_eq!(numbers(&redacted), numbers(&written), "{}", redacted);
    }
}

#[test]
fn the_reproduction_books_the_amount_the_line_says() {
    let found = from_text("2025-10-02 Uber 23.10 receipt sent to <EMAIL_1>").transactions;
    let amounts: Vec<i64> = found.iter().map(|t| t.amount).collect();
    assert_eq!(amounts, [2310]);
    assert!(found[0].description.contains("<EMAIL_1>"), "the token itself is kept, for the vault to restore");
}
