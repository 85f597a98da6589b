//! The seeded finance agents: each has two
//! approaches picked by `task.seed`. The same task under each seed gives a
//! different, valid answer; through the runtime, a request whose checks the
//! first approach fails is answered by the second, which is promoted while
//! the first is penalized.

use serde_json::{Value, json};

use super::{blitz, byte_doc, crystal, goalie, ledger, lookup, tag_ai};
use crate::agent::{AgentContext, AgentOutput, Task};
use crate::protocol::ErrorCode;

const BYTE: [u64; 2] = byte_doc::SEEDS;
const TAG: [u64; 2] = tag_ai::SEEDS;
const CRYSTAL: [u64; 2] = crystal::SEEDS;
const LEDGER: [u64; 2] = ledger::SEEDS;
const GOALIE: [u64; 2] = goalie::SEEDS;
const BLITZ: [u64; 2] = blitz::SEEDS;

/// Each agent: slug, tool, seeds, and a task its two approaches answer differently.
const TEAM: [(&str, &str, [u64; 2], &str, &str); 6] = [
    ("byte-doc", byte_doc::TOOL, BYTE, "Extract receipt data", MISREAD),
    ("tag-ai", tag_ai::TOOL, TAG, "Categorize this receipt", COSTCO),
    ("crystal-analytics", crystal::TOOL, CRYSTAL, "Analyze my spending", MOVES),
    ("ledger-tax", ledger::TOOL, LEDGER, "Identify deductible expenses", EXPENSES),
    ("goalie-goals", goalie::TOOL, GOALIE, "Am I on track?", VACATION),
    ("blitz-debt", blitz::TOOL, BLITZ, "Plan my debt payoff", DEBTS),
];

/// An OCR misread: the items and tax add to 81.03, the TOTAL reads 18.03.
const MISREAD: &str =
    "Office Depot\n2025-10-14\nToner cartridge 62.00\nPrinter paper 13.00\nSubtotal 75.00\nTax 6.03\nTOTAL 18.03";
/// Office supplies bought at a warehouse store.
const COSTCO: &str = "Costco Wholesale\n2025-10-14\nPrinter paper 24.99\nToner 29.21\nTotal 54.20";
/// A month with a move to savings and a card payment besides the spending.
const MOVES: &str = "date,description,amount\n2025-10-01,RENT PAYMENT - OAK STREET APTS,-1450.00\n\
                     2025-10-03,WHOLE FOODS MARKET,-120.00\n2025-10-05,ONLINE TRANSFER TO SAVINGS,-500.00\n\
                     2025-10-20,CHASE CREDIT CARD AUTOPAY,-300.00\n2025-10-25,PAYROLL DEPOSIT ACME CORP,3200.00";
const EXPENSES: &str = "date,description,amount\n2025-10-01,Staples,40.00\n2025-10-02,Olive Garden client dinner,80.00\n\
                        2025-10-03,Red Cross Donation,50.00\n2025-10-04,Whole Foods,60.00\n2025-10-05,Delta Air Lines,300.00";
const VACATION: &str = "As of 2025-10.\nVacation: target $3,000, saved $1,200, saving $200/month, by 2026-07";
const DEBTS: &str = "Student loan: $900 at 4% APR, minimum $30\nVisa: $3,000 at 24% APR, minimum $90\n\
                     I can pay an extra $300/month";

async fn run(slug: &str, objective: &str, input: &str, seed: Option<u64>) -> AgentOutput {
    let (_, tool, ..) = TEAM.iter().find(|(s, ..)| *s == slug).copied().unwrap_or(TEAM[0]);
    let agent = lookup(slug).unwrap_or_else(|| panic!("{slug}"));
    let mut task = Task::new(objective, input);
    task.seed = seed;
    agent.run(&AgentContext::detached([tool]), &task).await.unwrap_or_else(|e| panic!("{slug} seed {seed:?}: {e}"))
}

/// The agent's answer to its team task under each of its seeds.
async fn both(slug: &str) -> [AgentOutput; 2] {
    let (_, _, seeds, objective, input) = TEAM.iter().find(|(s, ..)| *s == slug).copied().unwrap_or(TEAM[0]);
    [run(slug, objective, input, Some(seeds[0])).await, run(slug, objective, input, Some(seeds[1])).await]
}

fn artifact<'a>(out: &'a AgentOutput, label: &str) -> &'a Value {
    out.artifacts
        .iter()
        .find(|a| a.label.as_deref() == Some(label))
        .map(|a| &a.value)
        .unwrap_or_else(|| panic!("no {label} artifact in {out:?}"))
}

#[test]
fn each_finance_agent_exposes_two_seeds_in_default_order() {
    for (slug, _, seeds, ..) in TEAM {
        let agent = lookup(slug).unwrap_or_else(|| panic!("{slug}"));
        assert_eq!(agent.seeds(), seeds, "{slug}");
        assert_ne!(seeds[0], seeds[1], "{slug}");
        // and the runtime's wrapper passes them on
        assert_eq!(crate::team::lookup(slug).map(|a| a.seeds().to_vec()), Some(seeds.to_vec()), "{slug}");
    }
}

#[tokio::test]
async fn each_seed_gives_a_different_answer_and_no_seed_is_the_first() {
    for (slug, _, seeds, objective, input) in TEAM {
        let [a, b] = both(slug).await;
        assert_ne!((&a.result, &a.artifacts), (&b.result, &b.artifacts), "{slug}");
        let unseeded = run(slug, objective, input, None).await;
        assert_eq!((unseeded.result, unseeded.artifacts), (a.result.clone(), a.artifacts.clone()), "{slug}");
        // unknown seeds map onto a variant, never fail
        for seed in [0, 1, 7, u64::MAX] {
            let out = run(slug, objective, input, Some(seed)).await;
            assert!([&a.result, &b.result].contains(&&out.result), "{slug} seed {seed}");
        }
        assert_eq!(run(slug, objective, input, Some(seeds[1])).await.result, b.result, "{slug} is deterministic");
    }
}

#[tokio::test]
async fn byte_books_the_printed_total_or_the_one_the_lines_add_up_to() {
    let [printed, reconciled] = both("byte-doc").await;
    assert_eq!(printed.summary, "Extracted receipt: $18.03 at Office Depot on 2025-10-14");
    assert_eq!(reconciled.summary, "Extracted receipt: $81.03 at Office Depot on 2025-10-14");
    let (p, r) = (&artifact(&printed, "receipts")[0], &artifact(&reconciled, "receipts")[0]);
    assert_eq!(
        (p["total"].clone(), p["total_source"].clone(), p.get("printed_total")),
        (json!(18.03), json!("printed"), None)
    );
    assert_eq!(
        (r["total"].clone(), r["total_source"].clone(), r["printed_total"].clone()),
        (json!(81.03), json!("reconciled"), json!(18.03))
    );
    assert_eq!(artifact(&printed, "transactions")[0]["amount"], json!(18.03));
    assert_eq!(artifact(&reconciled, "transactions")[0]["amount"], json!(81.03));
    assert!(!printed.result.contains("81.03"), "{}", printed.result);
    assert!(
        reconciled.result.contains(
            "Note: Office Depot's printed total $18.03 disagrees with its items, tax and tip ($81.03); booked at $81.03"
        ),
        "{}",
        reconciled.result
    );
    assert_eq!((printed.confidence, reconciled.confidence), (Some(95), Some(75)));

    // a receipt that adds up, or shows no arithmetic to check, is the same under both
    for text in [
        include_str!("../../../examples/receipt.txt"),
        "Corner Bistro\n2025-09-30\nPasta 18.00\nSalad 12.00\nSUBTOTAL 30.00\nTax 3.90\nTOTAL 33.90",
        "Luigi's Trattoria\nOct 1, 2025\nPizza 20.00\nTotal 22.60\n\nTip 4.00\nTotal 26.60",
        // items that disagree with the subtotal (a discount) leave the printed total
        "Shop\n2025-09-30\nShirt 30.00\nDiscount -5.00\nSUBTOTAL 25.00\nTax 2.00\nTOTAL 27.00",
    ] {
        let a = run("byte-doc", "Extract receipt data", text, Some(BYTE[0])).await;
        let b = run("byte-doc", "Extract receipt data", text, Some(BYTE[1])).await;
        assert_eq!((a.result, a.artifacts), (b.result, b.artifacts), "{text}");
    }
}

#[tokio::test]
async fn tag_lets_the_merchant_or_what_was_bought_decide() {
    let [merchant, bought] = both("tag-ai").await;
    let category = |o: &AgentOutput| artifact(o, "transactions")[0]["category"].clone();
    assert_eq!((category(&merchant), category(&bought)), (json!("Groceries"), json!("Office Supplies")));
    assert!(merchant.result.ends_with("-> Groceries (95%)"), "{}", merchant.result);
    assert!(bought.result.ends_with("-> Office Supplies (75%)"), "{}", bought.result);
    assert_eq!(tag_ai::categorize_by_items("Costco", "printer paper"), ("Office Supplies", 75));
    // where the two agree, or the description names nothing, both give the same
    for (m, d) in [("Starbucks", "Caffe Latte"), ("Amazon", "printer paper"), ("Costco", ""), ("Amazon", "headphones")]
    {
        assert_eq!(tag_ai::categorize_by_items(m, d), tag_ai::categorize(m, d), "{m} {d}");
    }
}

#[tokio::test]
async fn crystal_leaves_transfers_out_of_spending_or_counts_everything_that_left() {
    let [spending, all] = both("crystal-analytics").await;
    assert!(all.summary.starts_with("Analyzed 5 transactions in 1 month: $2,370.00 spent"), "{}", all.summary);
    assert!(
        spending.summary.starts_with("Analyzed 3 transactions in 1 month: $1,570.00 spent"),
        "{}",
        spending.summary
    );
    assert!(
        spending.summary.ends_with("; left out 2 transfers ($800.00) that are not spending"),
        "{}",
        spending.summary
    );
    let (a, s) = (artifact(&all, "analysis"), artifact(&spending, "analysis"));
    assert_eq!((a["total_spent"].clone(), s["total_spent"].clone()), (json!(2370.0), json!(1570.0)));
    assert_eq!(a.get("transfers_excluded"), None);
    assert_eq!(s["transfers_excluded"]["count"], 2);
    assert_eq!(s["transfers_excluded"]["total"], json!(800.0));
    assert!(spending.result.contains("- 2025-10-05 Online Transfer TO Savings $500.00"), "{}", spending.result);
}

#[tokio::test]
async fn ledger_counts_what_may_qualify_or_only_what_certainly_does() {
    let [rules, strict] = both("ledger-tax").await;
    assert_eq!(rules.summary, "Found $130.00 in deductible expenses (3 items); 1 more ($300.00) may qualify");
    assert_eq!(
        strict.summary,
        "Found $40.00 in certain deductions (1 item); 3 more ($430.00) left out until you answer"
    );
    let v = artifact(&strict, "deductions");
    assert_eq!((v["total_deductible"].clone(), v["approach"].clone()), (json!(40.0), json!("strict")));
    assert_eq!(v["items"][0]["merchant"], "Staples");
    let questions: Vec<&str> =
        v["questions"].as_array().into_iter().flatten().filter_map(|q| q["question"].as_str()).collect();
    assert_eq!(questions.len(), 3, "{questions:?}");
    assert!(questions[0].ends_with("as a business meal (who, what for)? At most 50% counts."), "{questions:?}");
    assert!(questions[1].starts_with("Do you itemize deductions? The Red Cross Donation donation"), "{questions:?}");
    assert!(questions[2].starts_with("Was Delta Air Lines ($300.00) a business trip?"), "{questions:?}");
    assert!(strict.requires_followup && !rules.requires_followup);
}

#[tokio::test]
async fn goalie_measures_against_the_deadline_or_with_a_month_to_spare() {
    let [stated, cushion] = both("goalie-goals").await;
    let (s, c) = (&artifact(&stated, "goals")[0], &artifact(&cushion, "goals")[0]);
    assert_eq!((s["status"].clone(), s["required_monthly"].clone()), (json!("on_track"), json!(200.0)));
    assert_eq!((c["status"].clone(), c["required_monthly"].clone()), (json!("behind"), json!(225.0)));
    assert_eq!((s.get("plan"), c["plan"].clone()), (None, json!("month_to_spare")));
    assert!(stated.summary.contains("on track for 2026-07 (needs $200.00/month)"), "{}", stated.summary);
    assert!(cushion.summary.contains("needs $225.00/month ($25.00 more per month)"), "{}", cushion.summary);
    assert!(cushion.result.ends_with(super::goalie::cushion::NOTE), "{}", cushion.result);
    assert!(cushion.requires_followup && !stated.requires_followup);

    // the required amount is rounded up to whole dollars
    let out = run(
        "goalie-goals",
        "Track",
        "As of 2025-10.\nBike: target $1,000, saved $0, saving $50/month, by 2026-02",
        Some(GOALIE[1]),
    )
    .await;
    assert_eq!(artifact(&out, "goals")[0]["required_monthly"], json!(334.0), "1000 over 3 months");
}

#[tokio::test]
async fn blitz_picks_avalanche_or_snowball_when_none_is_named() {
    let [avalanche, snowball] = both("blitz-debt").await;
    let strategy = |o: &AgentOutput| artifact(o, "payoff_plan")["strategy"].clone();
    let first = |o: &AgentOutput| artifact(o, "payoff_plan")["payoff_order"][0]["name"].clone();
    assert_eq!((strategy(&avalanche), first(&avalanche)), (json!("avalanche"), json!("Visa")));
    assert_eq!((strategy(&snowball), first(&snowball)), (json!("snowball"), json!("Student loan")));
    assert!(snowball.result.ends_with("Strategy: snowball, as you named none: the smallest debt is paid off first, for a quick win that keeps you going."), "{}", snowball.result);
    assert!(!avalanche.result.contains("Strategy:"), "{}", avalanche.result);

    // a named strategy always wins
    for (named, want) in [("Use the avalanche method", "avalanche"), ("Use the snowball method", "snowball")] {
        for seed in BLITZ {
            let out = run("blitz-debt", "Plan my debt payoff", &format!("{DEBTS}\n{named}"), Some(seed)).await;
            assert_eq!(strategy(&out), json!(want), "{named} seed {seed}");
            assert!(!out.result.contains("as you named none"), "{}", out.result);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..proptest::prelude::ProptestConfig::default() })]

    /// The second approaches, like the first, answer or ask: never panic, never another error.
    #[test]
    fn second_seeds_never_panic(
        input in "(\\PC{0,40}|[0-9$.,%/: -]{0,12}|TOTAL|Subtotal|Tax|Tip|transfer to savings|by 2026-12|APR|min|\\n){0,30}"
    ) {
        for (slug, tool, seeds, ..) in TEAM {
            let agent = lookup(slug).unwrap_or_else(|| panic!("{slug}"));
            let mut task = Task::new("Do the work", input.clone());
            task.seed = Some(seeds[1]);
            match futures::executor::block_on(agent.run(&AgentContext::detached([tool]), &task)) {
                Ok(out) => proptest::prop_assert!(!out.summary.is_empty()),
                Err(e) => proptest::prop_assert_eq!(e.code, ErrorCode::NeedsInput, "{}: {}", slug, e.message),
            }
        }
    }
}
