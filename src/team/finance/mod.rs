//! The finance team: byte-doc, tag-ai, crystal-analytics, ledger-tax,
//! goalie-goals and blitz-debt. Deterministic: no model, no network.
//!
//! They share one transaction shape ([`transactions::Transaction`]: `{date,
//! merchant, amount, currency, description}` plus `category` and `confidence`
//! once categorized; a positive amount is money spent) and one way of finding
//! transactions in a task ([`transactions::from_task`]). Amounts are integer
//! cents ([`money`]) and JSON numbers in artifacts.
//!
//! | agent | tool | artifacts |
//! |---|---|---|
//! | byte-doc | `extract_receipt` | `receipts` (when from receipt text), `transactions` |
//! | tag-ai | `categorize` | `transactions` (categorized), `categories` |
//! | crystal-analytics | `analyze_spending` | `analysis` |
//! | ledger-tax | `find_deductions` | `deductions` |
//! | goalie-goals | `track_goals` | `goals` |
//! | blitz-debt | `plan_debt` | `payoff_plan` |

pub(crate) mod blitz;
pub(crate) mod book;
pub(crate) mod byte_doc;
mod byte_seeds;
pub(crate) mod crystal;
pub(crate) mod dates;
// Files given on the command line (`--file`): text, CSV, OFX, a PDF's text layer.
#[cfg(any(feature = "cli", test))]
pub(crate) mod document;
#[cfg(test)]
mod fixtures_tests;
pub(crate) mod goal;
pub(crate) mod goalie;
pub(crate) mod ledger;
pub(crate) mod money;
pub(crate) mod ofx;
pub(crate) mod period;
#[cfg(test)]
mod phrasing;
pub(crate) mod receipt;
mod reply;
#[cfg(test)]
mod seeded_tests;
mod seeding;
pub(crate) mod statement;
pub(crate) mod tag_ai;
#[cfg(test)]
mod tokens_tests;
pub(crate) mod transaction;
pub(crate) mod transactions;
mod transfers;

use std::sync::Arc;

use crate::agent::Agent;

/// The finance agent called `name`, if there is one.
pub(crate) fn lookup(name: &str) -> Option<Arc<dyn Agent>> {
    let agent: Arc<dyn Agent> = match name {
        "byte-doc" => Arc::new(byte_doc::ByteDoc),
        "tag-ai" => Arc::new(tag_ai::TagAi),
        "crystal-analytics" => Arc::new(crystal::CrystalAnalytics),
        "ledger-tax" => Arc::new(ledger::LedgerTax),
        "goalie-goals" => Arc::new(goalie::GoalieGoals),
        "blitz-debt" => Arc::new(blitz::BlitzDebt),
        _ => return None,
    };
    Some(agent)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::agent::{AgentContext, AgentOutput, Task};
    use crate::protocol::{DelegationError, ErrorCode, HandoffData};

    const TEAM: [(&str, &str); 6] = [
        ("byte-doc", byte_doc::TOOL),
        ("tag-ai", tag_ai::TOOL),
        ("crystal-analytics", crystal::TOOL),
        ("ledger-tax", ledger::TOOL),
        ("goalie-goals", goalie::TOOL),
        ("blitz-debt", blitz::TOOL),
    ];

    #[test]
    fn finance_lookup_knows_the_team() {
        for (slug, _) in TEAM {
            assert!(lookup(slug).is_some(), "{slug}");
        }
        assert!(lookup("prime-boss").is_none());
        assert!(lookup("").is_none());
    }

    fn run(slug: &str, task: &Task) -> Result<AgentOutput, DelegationError> {
        let (_, tool) = TEAM.iter().find(|(s, _)| *s == slug).copied().unwrap_or_default();
        let agent = lookup(slug).expect("a finance agent");
        futures::executor::block_on(agent.run(&AgentContext::detached([tool]), task))
    }

    /// A chain step as the runtime hands it to the next agent.
    fn step(slug: &str, out: &AgentOutput) -> Value {
        json!({"agent": slug, "objective": "", "status": "success", "summary": out.summary, "result": out.result,
               "artifacts": out.artifacts})
    }

    #[test]
    fn finance_chain_passes_transactions_from_statement_to_analysis_and_deductions() {
        let statement = include_str!("../../../examples/statement.csv");
        let extracted =
            run("byte-doc", &Task::new("Extract transactions from the statement", statement)).expect("byte-doc");
        let mut task = Task::new("Categorize extracted transactions", "Please review my spending");
        task.handoff =
            HandoffData { intermediate_results: Some(json!([step("byte-doc", &extracted)])), ..HandoffData::default() };
        let tagged = run("tag-ai", &task).expect("tag-ai");
        task.handoff.intermediate_results = Some(json!([step("byte-doc", &extracted), step("tag-ai", &tagged)]));
        let analysis = run("crystal-analytics", &task).expect("crystal");
        assert!(analysis.summary.contains("$5,708.55 spent"), "{}", analysis.summary);
        let deductions = run("ledger-tax", &task).expect("ledger");
        // Adobe x3, Staples, GitHub and the Red Cross donation; rent and utilities need a home office.
        assert_eq!(
            deductions.summary,
            "Found $326.12 in deductible expenses (6 items); 6 more ($4,614.28) may qualify"
        );
    }

    #[test]
    fn finance_chain_extracts_then_categorizes_a_receipt() {
        let receipt = include_str!("../../../examples/receipt.txt");
        let extracted = run("byte-doc", &Task::new("Extract receipt data", receipt)).expect("byte-doc");
        let mut task = Task::new("Categorize extracted transactions", receipt);
        task.handoff =
            HandoffData { intermediate_results: Some(json!([step("byte-doc", &extracted)])), ..HandoffData::default() };
        let tagged = run("tag-ai", &task).expect("tag-ai");
        assert_eq!(tagged.summary, "Categorized 1 transaction: Starbucks as Dining - Coffee");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn finance_agents_never_panic(
            input in "(\\PC{0,40}|[0-9$.,%/: -]{0,12}|TOTAL|Subtotal|---|\\n|by 2026-12|min|APR|extra|,|\"){0,30}"
        ) {
            for (slug, _) in TEAM {
                match run(slug, &Task::new("Do the work", input.clone())) {
                    Ok(out) => prop_assert!(!out.summary.is_empty()),
                    // input without what the agent needs is the caller's to fix
                    Err(e) => prop_assert_eq!(e.code, ErrorCode::NeedsInput, "{}: {}", slug, e.message),
                }
            }
        }
    }
}
