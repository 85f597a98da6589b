//! The answer answers the question (issue 44): asked in plain words
//! through Prime, with a bank statement in the user's money records, the top N is
//! N, the biggest names the purchase and its amount, a comparison gives
//! both sides and which is larger, "cut back" gives suggestions with
//! amounts from the user's own spending, transfers to savings and card
//! payments are not spending, and a period with no data says so and offers
//! the nearest month that has some. Every figure is recomputed here from
//! the statement.

use serde_json::Value;
use switchboard::pipeline::{AskOptions, AskResponse};
use switchboard::protocol::Status;
use switchboard::runtime::Runtime;

use crate::support::*;

const STATEMENT: &str = include_str!("../../examples/statement.csv");

async fn ask(rt: &Runtime, who: &str, message: &str, input: Option<&str>) -> AskResponse {
    let opts = AskOptions { input: input.map(str::to_string), ..AskOptions::default() };
    rt.ask(&user(who), message, opts).await.unwrap_or_else(|e| panic!("{message}: {e}"))
}

/// A runtime where `who` has kept the example statement (August to October 2025).
async fn with_statement(who: &str, statement: &str) -> Runtime {
    let rt = Runtime::builder().build().unwrap();
    let kept = ask(&rt, who, "Here's my bank statement", Some(statement)).await;
    assert_eq!(kept.status, Status::Success, "{}", kept.answer);
    rt
}

/// Crystal's `answer` in the turn's artifacts.
fn answered(r: &AskResponse) -> Value {
    r.response
        .artifacts
        .iter()
        .find(|a| a.label.as_deref() == Some("crystal-analytics:analysis"))
        .map(|a| a.value["answer"].clone())
        .unwrap_or_else(|| panic!("no analysis: {}", r.answer))
}

/// (date, merchant, cents spent) of the statement's purchases in `month` (`2025-10`).
fn purchases(month: &str) -> Vec<(String, String, i64)> {
    STATEMENT
        .lines()
        .skip(1)
        .filter(|l| l.starts_with(month))
        .filter_map(|l| {
            let (date, rest) = l.split_once(',')?;
            let (merchant, amount) = rest.rsplit_once(',')?;
            let cents = (amount.parse::<f64>().ok()? * -100.0).round() as i64;
            (cents > 0).then(|| (date.to_string(), merchant.trim_matches('"').to_string(), cents))
        })
        .collect()
}

fn dollars(cents: i64) -> String {
    let (whole, frac) = (cents / 100, cents % 100);
    let whole = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{frac:02}")
}

#[tokio::test]
async fn top_n_gives_n_and_the_biggest_names_the_purchase_and_its_amount() {
    let rt = with_statement("ana", STATEMENT).await;
    let top = ask(&rt, "ana", "What are my top 3 spending categories?", None).await;
    let items = answered(&top)["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 3, "{}", top.answer);
    assert!(top.answer.contains("Your top 3 spending categories: Rent $4,350.00"), "{}", top.answer);
    let five = ask(&rt, "ana", "show me my five biggest expenses", None).await;
    assert_eq!(answered(&five)["items"].as_array().map(Vec::len), Some(5), "{}", five.answer);

    // "in October" with a 2025 statement: October 2025, the latest October the money records has
    let october = purchases("2025-10");
    let biggest = october.iter().max_by_key(|(_, _, c)| *c).unwrap();
    let r = ask(&rt, "ana", "What was my biggest expense in October?", None).await;
    assert_eq!(r.tree.children.first().map(|c| c.agent.as_str()), Some("crystal-analytics"));
    assert!(r.answer.contains("Your biggest expense in October 2025 was"), "{}", r.answer);
    assert!(r.answer.contains(&dollars(biggest.2)) && r.answer.contains(&biggest.0), "{}", r.answer);
    // rent is the biggest; what comes after the fixed costs is named too
    let groceries = october.iter().find(|(_, m, _)| m.starts_with("WHOLE FOODS")).unwrap();
    assert!(
        r.answer
            .contains(&format!("apart from rent and utilities, it was Whole Foods Market {}", dollars(groceries.2))),
        "{}",
        r.answer
    );
}

#[tokio::test]
async fn a_comparison_gives_both_sides_and_which_is_larger() {
    let rt = with_statement("ben", STATEMENT).await;
    let october = purchases("2025-10");
    let sum = |pred: &dyn Fn(&str) -> bool| october.iter().filter(|(_, m, _)| pred(m)).map(|(_, _, c)| c).sum::<i64>();
    let out = sum(&|m| m.starts_with("SUSHI ZONE"));
    let groceries = sum(&|m| m.starts_with("WHOLE FOODS"));
    let r = ask(&rt, "ben", "Did I spend more on eating out or on groceries in October?", None).await;
    let sides = answered(&r)["sides"].as_array().cloned().unwrap_or_default();
    assert_eq!(sides.len(), 2, "{}", r.answer);
    assert!(r.answer.contains(&dollars(out)) && r.answer.contains(&dollars(groceries)), "{}", r.answer);
    assert!(
        r.answer.contains(&format!("More on groceries (Groceries), by {}", dollars(groceries - out))),
        "{}",
        r.answer
    );
}

#[tokio::test]
async fn cut_back_gives_suggestions_with_amounts_from_the_users_own_spending() {
    let rt = with_statement("cy", STATEMENT).await;
    let r = ask(&rt, "cy", "How can I cut back on my spending?", None).await;
    let suggestions = answered(&r)["suggestions"].as_array().cloned().unwrap_or_default();
    assert!(!suggestions.is_empty(), "{}", r.answer);
    assert!(r.answer.starts_with("I had Crystal take this. Where you could spend less"), "{}", r.answer);
    // the subscriptions on the statement, by name and amount, and what a cut saves
    assert!(r.answer.contains("Adobe Creative Cloud $59.99") && r.answer.contains("Netflix $15.49"), "{}", r.answer);
    assert!(r.answer.contains("saves $"), "{}", r.answer);
}

#[tokio::test]
async fn transfers_to_savings_and_card_payments_are_not_spending() {
    let statement = "date,description,amount\n2025-10-01,RENT PAYMENT - OAK STREET APTS,-1450.00\n\
                     2025-10-03,WHOLE FOODS MARKET,-120.00\n2025-10-05,TRANSFER TO HOUSE SAVINGS,-300.00\n\
                     2025-10-20,CHASE CREDIT CARD AUTOPAY,-250.00\n2025-10-25,PAYROLL DEPOSIT ACME CORP,3200.00\n";
    let rt = with_statement("dee", statement).await;
    let r = ask(&rt, "dee", "How much did I spend in October 2025?", None).await;
    assert!(r.answer.contains("$1,570.00 spent"), "{}", r.answer);
    assert!(r.answer.contains("left out 2 transfers ($550.00) that are not spending"), "{}", r.answer);
    assert!(r.answer.contains("2025-10-05 Transfer TO House Savings $300.00"), "{}", r.answer);
    let top = ask(&rt, "dee", "what are my top categories?", None).await;
    assert!(
        !top.answer.contains("Transfer TO House Savings (") && top.answer.contains("Rent $1,450.00 (92.4%)"),
        "{}",
        top.answer
    );
}

#[tokio::test]
async fn a_period_with_no_data_says_so_and_offers_the_nearest_month_with_data() {
    let rt = with_statement("eve", STATEMENT).await;
    let august: i64 = purchases("2025-08").iter().map(|(_, _, c)| c).sum();
    let r = ask(&rt, "eve", "How much did I spend in March 2025?", None).await;
    assert_eq!(r.status, Status::NeedsInput, "{}", r.answer);
    assert!(r.answer.contains("no transactions for March 2025"), "{}", r.answer);
    assert!(
        r.answer.contains(&format!(
            "The nearest month with data is August 2025 (10 transactions, {} spent)",
            dollars(august)
        )),
        "{}",
        r.answer
    );
}
