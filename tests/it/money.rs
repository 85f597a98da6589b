//! The finance team as a person uses it over weeks: what they send is kept in
//! their own money records, asked about in their own words, corrected, and never
//! seen by another user. On SQLite and PostgreSQL; every figure the answers
//! give is recomputed here from the rows the test wrote.

use std::sync::Arc;

use chrono::{Datelike, Duration, Local, NaiveDate};
use switchboard::pipeline::{AskOptions, AskResponse};
use switchboard::protocol::{SessionId, Status};
use switchboard::runtime::Runtime;
use switchboard::store::Store;

use crate::db;
use crate::support::*;

/// The first day of the month `back` months before `today`'s.
fn month_start(today: NaiveDate, back: i32) -> NaiveDate {
    let months = today.year() * 12 + today.month0() as i32 - back;
    NaiveDate::from_ymd_opt(months.div_euclid(12), months.rem_euclid(12) as u32 + 1, 1).unwrap()
}

/// One row of the statement: date, merchant, cents, and the category the rules should give it.
struct Row {
    date: NaiveDate,
    merchant: &'static str,
    cents: i64,
    category: &'static str,
}

fn rows(today: NaiveDate) -> Vec<Row> {
    let last = month_start(today, 1);
    let this = month_start(today, 0);
    let row = |date, merchant, cents, category| Row { date, merchant, cents, category };
    vec![
        row(last + Duration::days(4), "Starbucks", 450, "Dining - Coffee"),
        row(last + Duration::days(11), "Chipotle Mexican Grill", 1425, "Dining - Restaurants"),
        row(last + Duration::days(19), "Whole Foods Market", 8240, "Groceries"),
        row(last + Duration::days(21), "Adobe Creative Cloud", 5499, "Software"),
        row(this, "Starbucks", 540, "Dining - Coffee"),
        row(this, "Office Depot", 2310, "Office Supplies"),
    ]
}

/// A bank export: MM/DD/YYYY, money out negative.
fn statement(rows: &[Row]) -> String {
    let mut csv = String::from("Date,Description,Amount\n");
    for r in rows {
        csv.push_str(&format!(
            "{},{},-{}.{:02}\n",
            r.date.format("%m/%d/%Y"),
            r.merchant,
            r.cents / 100,
            r.cents % 100
        ));
    }
    csv
}

fn dollars(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

async fn ask(rt: &Runtime, who: &str, message: &str, input: Option<&str>, session: Option<SessionId>) -> AskResponse {
    let opts = AskOptions { input: input.map(str::to_string), session, ..AskOptions::default() };
    rt.ask(&user(who), message, opts).await.unwrap_or_else(|e| panic!("{message}: {e}"))
}

fn runtime(store: Arc<dyn Store>) -> Runtime {
    Runtime::builder().store(store).build().unwrap()
}

#[tokio::test]
async fn a_month_of_one_persons_money_is_kept_asked_about_corrected_and_never_shown_to_another_user() {
    let today = Local::now().date_naive();
    let rows = rows(today);
    let receipt_day = month_start(today, 0);
    let receipt = format!(
        "Here's my receipt:\nOFFICE DEPOT #1234\n{}\nCopy paper 12.99\nInk cartridge 59.99\nSubtotal 72.98\nTax 8.05\nTOTAL 81.03",
        receipt_day.format("%m/%d/%Y")
    );
    for db in db::both().await {
        let store = db.dyn_store();
        let rt = runtime(store.clone());
        let name = db.name;

        // a pasted receipt is read and kept; the same one again is not kept twice
        let first = ask(&rt, "alice", &receipt, None, None).await;
        assert_eq!(first.status, Status::Success, "{name}: {}", first.answer);
        assert!(first.answer.contains("Kept 1 transaction in your records"), "{name}: {}", first.answer);
        let session = Some(first.session_id);
        let again = ask(&rt, "alice", &receipt, None, session).await;
        assert!(again.answer.contains("already in your records"), "{name}: {}", again.answer);
        assert_eq!(store.money(&user("alice")).await.unwrap().len(), 1, "{name}");

        // a statement: every row kept, with the category the rules give it
        let added = ask(&rt, "alice", "Here's my bank statement", Some(&statement(&rows)), session).await;
        assert!(added.answer.contains(&format!("Kept {} transactions", rows.len())), "{name}: {}", added.answer);
        let kept = store.money(&user("alice")).await.unwrap();
        assert_eq!(kept.len(), rows.len() + 1, "{name}");
        for r in &rows {
            let day = r.date.format("%Y-%m-%d").to_string();
            let row = kept
                .iter()
                .find(|e| e.merchant == r.merchant && e.amount == r.cents && e.date.as_deref() == Some(day.as_str()))
                .unwrap_or_else(|| panic!("{name}: {} {} not kept: {kept:?}", r.merchant, r.cents));
            assert_eq!(row.category.as_deref(), Some(r.category), "{name}: {}", r.merchant);
        }

        // a new process on the same database answers from what was kept
        let rt = runtime(store.clone());
        let office: i64 = 8103 + rows.iter().filter(|r| r.merchant == "Office Depot").map(|r| r.cents).sum::<i64>();
        let at = ask(&rt, "alice", "What did I spend at Office Depot?", None, session).await;
        assert!(at.answer.contains(&format!("{} (2 transactions", dollars(office))), "{name}: {}", at.answer);

        let last = month_start(today, 1);
        let dining: Vec<&Row> =
            rows.iter().filter(|r| r.category.starts_with("Dining") && month_start(r.date, 0) == last).collect();
        let dining_total: i64 = dining.iter().map(|r| r.cents).sum();
        let asked = ask(&rt, "alice", "How much on dining last month?", None, session).await;
        assert!(
            asked.answer.contains(&format!("{} ({} transactions", dollars(dining_total), dining.len())),
            "{name}: {}",
            asked.answer
        );

        // the biggest category this year, from the rows dated this year
        let mut by_category: Vec<(&str, i64)> = Vec::new();
        let this_year = rows
            .iter()
            .filter(|r| r.date.year() == today.year())
            .map(|r| (r.category, r.cents))
            .chain(std::iter::once(("Office Supplies", 8103)));
        for (c, cents) in this_year {
            match by_category.iter_mut().find(|(k, _)| *k == c) {
                Some((_, t)) => *t += cents,
                None => by_category.push((c, cents)),
            }
        }
        by_category.sort_by_key(|(_, t)| -t);
        let top = ask(&rt, "alice", "What are my biggest categories this year?", None, session).await;
        assert_eq!(top.tree.children.first().map(|c| c.agent.as_str()), Some("crystal-analytics"), "{name}");
        assert!(top.answer.contains(&format!("top: {} (", by_category[0].0)), "{name}: {}", top.answer);

        // bob asks the same: nothing of alice's comes back
        let bob = ask(&rt, "bob", "What did I spend at Office Depot?", None, None).await;
        assert_eq!(bob.status, Status::NeedsInput, "{name}: {}", bob.answer);
        assert!(!bob.answer.contains(&dollars(office)) && !bob.answer.contains("8103"), "{name}: {}", bob.answer);
        assert!(store.money(&user("bob")).await.unwrap().is_empty(), "{name}");

        // a correction in the user's words: the newest Starbucks row, remembered as a fact
        let fixed = ask(&rt, "alice", "that Starbucks was a business lunch", None, session).await;
        assert!(fixed.answer.contains("Noted: the Starbucks purchase of $5.40"), "{name}: {}", fixed.answer);
        let starbucks: Vec<_> =
            store.money(&user("alice")).await.unwrap().into_iter().filter(|e| e.merchant == "Starbucks").collect();
        let newest = starbucks.iter().max_by_key(|e| e.date.clone()).unwrap();
        assert_eq!(newest.note.as_deref(), Some("business lunch"), "{name}");
        assert_eq!(newest.category.as_deref(), Some("Dining - Restaurants"), "{name}");
        assert!(starbucks.iter().any(|e| e.note.is_none() && e.category.as_deref() == Some("Dining - Coffee")));
        let facts = store.facts(&user("alice"), &["domain:transactions".to_string()], 100).await.unwrap();
        assert!(
            facts.iter().any(|f| f.fact.contains("Starbucks purchase of $5.40") && f.fact.contains("business lunch"))
        );
        assert!(store.facts(&user("bob"), &["domain:transactions".to_string()], 100).await.unwrap().is_empty());

        // deductions from the money records: office supplies and software in full, the business lunch at half
        let software: i64 = rows.iter().filter(|r| r.category == "Software").map(|r| r.cents).sum();
        let deductible = office + software + 540 / 2;
        let tax = ask(&rt, "alice", "Which of these can I deduct?", None, session).await;
        assert!(
            tax.answer.contains(&format!("Found {} in deductible expenses (4 items)", dollars(deductible))),
            "{name}: {}",
            tax.answer
        );

        // a goal stated once, measured later with what went to it since
        let by = month_start(today, -12);
        let goal = format!(
            "I'm saving for a vacation: target $3,000, saved $800, saving $200/month, by {}",
            by.format("%Y-%m")
        );
        let stated = ask(&rt, "alice", &goal, None, session).await;
        assert!(stated.answer.contains("Vacation: $800.00 of $3,000.00"), "{name}: {}", stated.answer);
        let plans = store.money_plans(&user("alice")).await.unwrap();
        assert_eq!(
            plans.iter().map(|p| (p.kind.as_str(), p.name.as_str())).collect::<Vec<_>>(),
            [("goal", "vacation")]
        );
        let transfer =
            format!("Date,Description,Amount\n{},Transfer to Vacation Savings,-200.00\n", today.format("%m/%d/%Y"));
        ask(&rt, "alice", "Here's this week's statement", Some(&transfer), session).await;
        let on_track = ask(&rt, "alice", "Am I on track for my vacation goal?", None, session).await;
        assert_eq!(on_track.tree.children.first().map(|c| c.agent.as_str()), Some("goalie-goals"), "{name}");
        // 800 + 200 of 3,000: a third, with 2,000 left over the 12 months to the deadline
        assert!(on_track.answer.contains("Vacation: $1,000.00 of $3,000.00"), "{name}: {}", on_track.answer);
        assert!(on_track.answer.contains("$200.00 more in 1 payment"), "{name}: {}", on_track.answer);
        let bobs = ask(&rt, "bob", "Am I on track for my vacation goal?", None, None).await;
        assert_eq!(bobs.status, Status::NeedsInput, "{name}: {}", bobs.answer);

        // debts listed once; a later question plans with them, less the payment the money records shows
        let debts = "Plan my debt payoff:\nVisa balance $5,000, 19.99% interest, min payment $150\nextra $300/month";
        let listed = ask(&rt, "alice", debts, None, session).await;
        assert_eq!(
            listed.tree.children.first().map(|c| c.agent.as_str()),
            Some("blitz-debt"),
            "{name}: {}",
            listed.answer
        );
        let payment = format!("Date,Description,Amount\n{},VISA PAYMENT THANK YOU,-500.00\n", today.format("%m/%d/%Y"));
        ask(&rt, "alice", "Here's my checking statement", Some(&payment), session).await;
        let again = ask(&rt, "alice", "How fast can I pay off my debt with an extra $300/month?", None, session).await;
        assert_eq!(again.status, Status::Success, "{name}: {}", again.answer);
        assert!(again.answer.contains("Visa: $500.00 paid in 1 payment"), "{name}: {}", again.answer);
        assert!(again.answer.contains("$4,500.00 left"), "{name}: {}", again.answer);
        let kinds: Vec<String> = store.money_plans(&user("alice")).await.unwrap().into_iter().map(|p| p.kind).collect();
        assert_eq!(kinds, ["debt", "goal"], "{name}");
        assert!(store.money_plans(&user("bob")).await.unwrap().is_empty(), "{name}");
    }
}

/// The money tools follow the tools rail: Byte holds `money.write`, but
/// under a Prime that lacks it Byte's effective tools do not have it, and
/// nothing is kept; the answer is still given.
#[tokio::test]
async fn a_child_never_writes_money_where_its_parent_could_not() {
    let mut config = switchboard::config::Config::builtin();
    let prime = config.agents.iter_mut().find(|a| a.slug.as_str() == "prime-boss").unwrap();
    assert!(prime.tools_allowed.remove("money.write"));
    let byte = config.agents.iter().find(|a| a.slug.as_str() == "byte-doc").unwrap();
    assert!(byte.tools_allowed.contains("money.write"));
    let store: Arc<dyn Store> = Arc::new(switchboard::store::MemoryStore::new());
    let rt = Runtime::builder().config(config).store(store.clone()).build().unwrap();
    let r = ask(&rt, "alice", "Here's my receipt: STARBUCKS 10/09/2025 Latte 5.95 TOTAL 5.95", None, None).await;
    assert_eq!(r.status, Status::Success, "{}", r.answer);
    assert!(r.answer.contains("$5.95") && !r.answer.contains("Kept"), "{}", r.answer);
    assert!(store.money(&user("alice")).await.unwrap().is_empty());
}

/// A PII token's digits are not data: the email in a receipt line becomes
/// `<EMAIL_1>` before Byte reads it, and Byte books the 23.10 the line says,
/// never the 1 of the token.
#[tokio::test]
async fn a_pii_tokens_digits_are_never_booked_as_an_amount() {
    let store: Arc<dyn Store> = Arc::new(switchboard::store::MemoryStore::new());
    let rt = runtime(store.clone());
    let r = ask(&rt, "alice", "2025-10-02 Uber 23.10 receipt sent to me@x.com", None, None).await;
    assert_eq!(r.status, Status::Success, "{}", r.answer);
    assert!(r.answer.contains("$23.10"), "{}", r.answer);
    assert!(!r.answer.contains("$1.00"), "{}", r.answer);
    let kept = store.money(&user("alice")).await.unwrap();
    let amounts: Vec<i64> = kept.iter().map(|e| e.amount).collect();
    assert_eq!(amounts, [2310], "{kept:?}");
    assert!(kept.iter().all(|e| !e.description.contains("me@x.com")), "raw PII kept: {kept:?}");
}
