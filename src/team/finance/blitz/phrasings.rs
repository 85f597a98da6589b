//! Debts as people type them: each phrasing is read field by field, or
//! answered with the question naming what it leaves out.

use super::parse_request;
use crate::protocol::ErrorCode;

/// (name, balance cents, APR hundredths of a percent, minimum cents)
type D = (&'static str, i64, i64, i64);

enum Expect {
    /// The debts and the extra per month, in cents.
    Plan(&'static [D], i64),
    /// NEEDS_INPUT whose question contains every one of these.
    Asks(&'static [&'static str]),
}
use Expect::{Asks, Plan};

const PHRASINGS: &[(&str, Expect)] = &[
    // the reproduction: balances with no rates or minimums are not a plan
    (
        "I have 9000 on my car loan and 2500 on a card",
        Asks(&[
            "car loan ($9,000.00): its interest rate (APR) and its minimum monthly payment",
            "card ($2,500.00): its interest rate (APR) and its minimum monthly payment",
        ]),
    ),
    ("Visa: $5,000 at 19.99% APR, minimum $150", Plan(&[("Visa", 500_000, 1999, 15_000)], 0)),
    ("Car loan balance 12000, 6.5% interest, min payment 250", Plan(&[("Car loan", 1_200_000, 650, 25_000)], 0)),
    ("Visa $5,000 19.99% $150 min", Plan(&[("Visa", 500_000, 1999, 15_000)], 0)),
    (
        "I owe $4,000 on my Discover card at 24.99% and the minimum is $120",
        Plan(&[("Discover card", 400_000, 2499, 12_000)], 0),
    ),
    (
        "Mastercard balance is $3,400 with 21.9% interest and a $95 minimum",
        Plan(&[("Mastercard", 340_000, 2190, 9_500)], 0),
    ),
    (
        "car loan 9000 at 6%, paying 300 a month. credit card 2500 at 22%, min 75. i can pay an extra 200/month",
        Plan(&[("car loan", 900_000, 600, 30_000), ("credit card", 250_000, 2200, 7_500)], 20_000),
    ),
    (
        "student loans: 12k @ 5.5%, 150/mo\nchase sapphire card: 3.2k @ 23.99%, 90/mo",
        Plan(&[("student loans", 1_200_000, 550, 15_000), ("chase sapphire card", 320_000, 2399, 9_000)], 0),
    ),
    (
        "- Amex: $1,200, 27% APR, $40 minimum\n- Personal loan: $8,000, 11% APR, $260 minimum\nextra $500 per month",
        Plan(&[("Amex", 120_000, 2700, 4_000), ("Personal loan", 800_000, 1100, 26_000)], 50_000),
    ),
    (
        "I have a line of credit with 6000 left at 9.5%, min payment 120",
        Plan(&[("line of credit", 600_000, 950, 12_000)], 0),
    ),
    ("mortgage 240000 at 4.25% paying 1450 monthly", Plan(&[("mortgage", 24_000_000, 425, 145_000)], 0)),
    ("0% promo on my Best Buy card, 1800 left, min 50", Plan(&[("Best Buy card", 180_000, 0, 5_000)], 0)),
    // what the text leaves out is asked, not assumed
    ("Visa $5,000 at 19.99%", Asks(&["Visa ($5,000.00): its minimum monthly payment"])),
    ("my card is 2500 with a 60 minimum", Asks(&["card ($2,500.00): its interest rate (APR)"])),
    ("I pay 9000 a month on my car loan", Asks(&["car loan: its balance and its interest rate (APR)"])),
    ("Visa 5000 at 20, min 100", Asks(&["I couldn't tell whether $20.00 is a balance, a rate or a monthly payment"])),
    ("Help me pay off my debt faster", Asks(&["Which debts should I plan?"])),
    ("How does the snowball method work for credit cards?", Asks(&["Which debts should I plan?"])),
    ("", Asks(&["Which debts should I plan?"])),
    (
        "two cards, one 1500 at 22% min 40 and one 800 at 18%",
        // the second card's amounts are not told apart from the first's: asked, not guessed
        Asks(&["cards ($1,500.00): I couldn't tell whether $800.00 is a balance"]),
    ),
    ("I owe 3000", Asks(&["debt 1 ($3,000.00): its interest rate (APR) and its minimum monthly payment"])),
    // a budget instead of an extra; the strategy word
    (
        "Card: $2,000 at 20% APR, minimum $100\nLoan: $5,000 at 5%, min $200\nMy budget is $450 a month",
        Plan(&[("Card", 200_000, 2000, 10_000), ("Loan", 500_000, 500, 20_000)], 0),
    ),
    (
        "use snowball. Visa 500 at 25% min 25; Amex 3000 at 15% min 90",
        Plan(&[("Visa", 50_000, 2500, 2_500), ("Amex", 300_000, 1500, 9_000)], 0),
    ),
    // an answer to Blitz's question, read after the message it answers
    (
        "I have 9000 on my car loan at 6% with a 250 minimum and 2500 on a card. How do I pay them off?\n\
         The card is 19.99% APR with a 50 minimum",
        Plan(&[("car loan", 900_000, 600, 25_000), ("card", 250_000, 1999, 5_000)], 0),
    ),
    (
        "I have 9000 on my car loan and 2500 on a card\ncar loan is 6% min 250, the card 22% min 60",
        Plan(&[("car loan", 900_000, 600, 25_000), ("card", 250_000, 2200, 6_000)], 0),
    ),
    (
        "I have 9000 on my car loan and 2500 on a card\nthe car loan is 6% with a 250 minimum",
        Asks(&["card ($2,500.00): its interest rate (APR) and its minimum monthly payment"]),
    ),
];

#[test]
fn blitz_reads_debts_as_people_type_them() {
    assert!(PHRASINGS.len() >= 20);
    for (text, expect) in PHRASINGS {
        let got = parse_request(text);
        match (expect, got) {
            (Plan(debts, extra), Ok(req)) => {
                let read: Vec<D> = req.debts.iter().map(|d| ("", d.balance, d.apr_bp, d.minimum)).collect();
                let want: Vec<D> = debts.iter().map(|(_, b, a, m)| ("", *b, *a, *m)).collect();
                assert_eq!(read, want, "{text}");
                let names: Vec<String> = req.debts.iter().map(|d| d.name.clone()).collect();
                let want_names: Vec<&str> = debts.iter().map(|d| d.0).collect();
                assert_eq!(names, want_names, "{text}");
                assert_eq!(req.extra, *extra, "{text}");
            }
            (Asks(parts), Err(e)) => {
                assert_eq!(e.code, ErrorCode::NeedsInput, "{text}");
                for p in *parts {
                    assert!(e.message.contains(p), "{text}: '{p}' not in: {}", e.message);
                }
            }
            (Plan(..), Err(e)) => panic!("{text}: expected a plan, got {}", e.message),
            (Asks(_), Ok(req)) => panic!("{text}: expected a question, read {:?}", req.debts),
        }
    }
}

/// A bare number that counts something (words, weeks, people) is no
/// debt's figure; the same number with a currency sign is.
#[test]
fn a_count_is_not_money() {
    let req = parse_request(
        "Visa: $2,500 at 19.99% APR, minimum $75; car loan $8,000 at 6% APR, minimum $200. \
         I can pay $300 extra a month. Max 150 words.",
    )
    .unwrap();
    let read: Vec<(i64, i64, i64)> = req.debts.iter().map(|d| (d.balance, d.apr_bp, d.minimum)).collect();
    assert_eq!(read, [(250_000, 1999, 7_500), (800_000, 600, 20_000)]);
    assert_eq!(req.extra, 30_000);
    let req = parse_request("It's been 3 weeks since I missed a payment. Card: 4000 at 22%, minimum 120").unwrap();
    let read: Vec<(i64, i64, i64)> = req.debts.iter().map(|d| (d.balance, d.apr_bp, d.minimum)).collect();
    assert_eq!(read, [(400_000, 2200, 12_000)]);
    // money still: "$150 words" is not how a count is written
    let asked = parse_request("Card: 4000 at 22%, minimum 120, and $150 more").map(|r| r.extra);
    assert_eq!(asked.ok(), Some(15_000));
}

#[test]
fn blitz_reads_the_strategy_and_the_budget() {
    let req = parse_request("use snowball. Visa 500 at 25% min 25; Amex 3000 at 15% min 90").unwrap();
    assert_eq!(req.strategy, super::Strategy::Snowball);
    let req = parse_request("Card: $2,000 at 20% APR, minimum $100\nMy budget is $450 a month").unwrap();
    assert_eq!((req.budget, req.strategy), (Some(45_000), super::Strategy::Avalanche));
}
