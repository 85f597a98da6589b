//! Tag: spending categories from merchant and description keyword rules. The
//! rules (`rules.rs`) and the categorizing (`categorize.rs`) live here and are
//! shared with Crystal and Ledger; this file holds the agent.
//!
//! Seeds: the merchant decides (a brand in the merchant's name wins, a general
//! store yields to what was bought), then what was bought decides (the
//! description's category wins over the merchant's whenever they disagree).

mod categorize;
pub(crate) mod correct;
mod rules;

#[cfg(test)]
pub(crate) use categorize::categorize_by_items;
pub(crate) use categorize::{
    categorize, categorize_all_by, categorize_transaction, ensure_categories, totals_by_category,
};
pub(crate) use rules::{UNCATEGORIZED, categories};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::book;
use super::money::{self, Cents};
use super::reply::list_lines;
use super::seeding;
use super::transactions;
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};

pub(crate) const TOOL: &str = "categorize";
/// The merchant decides, then what was bought decides.
pub(crate) const SEEDS: [u64; 2] = [620_917, 173_405];

/// Tag (`tag-ai`): transactions in, the same with `category` and `confidence`
/// plus per-category totals out.
pub(crate) struct TagAi;

#[async_trait]
impl Agent for TagAi {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let in_task = transactions::from_task(task).transactions.is_empty();
        if in_task
            && ctx.can_write_money()
            && ctx.can_read_money()
            && let Some(c) = correct::parse(&task.request_text())
        {
            return correct::apply(ctx, &c).await;
        }
        let (found, period) = book::transactions_for(ctx, task).await?;
        let from_kept = found.source == Some(transactions::Source::Kept);
        let mut ts = found.transactions;
        if ts.is_empty() {
            return Err(book::nothing_in(period.as_ref()));
        }
        let changes = categorize_all_by(&mut ts, seeding::second(&SEEDS, task.seed));
        let currency = transactions::main_currency(&ts);
        let totals = totals_by_category(&ts);
        let spent: Cents = totals.iter().map(|(_, s, _)| s).sum();
        let uncategorized = ts.iter().filter(|t| t.category.as_deref() == Some(UNCATEGORIZED)).count();
        let summary = match ts.as_slice() {
            [t] => format!(
                "Categorized 1 transaction: {} as {}",
                t.merchant,
                t.category.as_deref().unwrap_or(UNCATEGORIZED)
            ),
            _ => {
                let top: Vec<String> =
                    totals.iter().take(3).map(|(c, s, _)| format!("{c} ({})", money::format(*s, &currency))).collect();
                let mut s = format!(
                    "Categorized {} transactions into {} categories; top: {}",
                    ts.len(),
                    totals.len(),
                    top.join(", ")
                );
                if uncategorized > 0 {
                    s.push_str(&format!("; {uncategorized} left {UNCATEGORIZED}"));
                }
                s
            }
        };
        let mut result = list_lines(ts.iter().map(|t| {
            format!(
                "- {} {} -> {} ({}%)",
                t.merchant,
                money::format(t.amount, &t.currency),
                t.category.as_deref().unwrap_or(UNCATEGORIZED),
                t.confidence.unwrap_or(0)
            )
        }));
        if !changes.is_empty() {
            result.push_str("\nChanged categories:");
            for c in &changes {
                result.push_str(&format!("\n- {}: '{}' -> '{}'", c.merchant, c.from, c.to));
            }
        }
        if !from_kept {
            book::keep(ctx, &ts, &found.source.map_or_else(|| "the task".into(), |s| s.describe())).await?;
        }
        let recategorized = book::categorize_kept(ctx, &ts).await?;
        if recategorized > 0 {
            result.push_str(&format!("\nUpdated the category of {recategorized} transaction(s) in your records."));
        }
        let categories: Vec<Value> = totals
            .iter()
            .map(|(c, s, n)| json!({"category": c, "total": money::to_value(*s), "count": n, "share_pct": money::percent(*s, spent)}))
            .collect();
        let average = ts.iter().map(|t| u32::from(t.confidence.unwrap_or(0))).sum::<u32>() / ts.len().max(1) as u32;
        let mut output = AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("transactions", transactions::to_json_array(&ts)))
            .with_artifact(Artifact::json("categories", Value::Array(categories)))
            .with_confidence(u8::try_from(average).unwrap_or(100));
        if ts.len() >= 5
            && let Some((top, total, _)) = totals.first()
        {
            output = output.with_fact(NewFact::new(format!(
                "User's largest spending category is {top} ({} of {})",
                money::format(*total, &currency),
                money::format(spent, &currency)
            )));
        }
        Ok(output)
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorCode, HandoffData};
    use crate::team::finance::phrasing;

    async fn run(task: Task) -> Result<AgentOutput, DelegationError> {
        TagAi.run(&AgentContext::detached([TOOL]), &task).await
    }

    #[tokio::test]
    async fn tag_ai_categorizes_byte_docs_transactions() {
        let mut task = Task::new("Categorize extracted transactions", "");
        task.handoff = HandoffData {
            intermediate_results: Some(json!([{"agent": "byte-doc", "status": "success", "summary": "", "result": "",
                "artifacts": [{"type": "json", "label": "transactions", "value": [
                    {"date": "2025-10-09", "merchant": "Starbucks", "amount": 45.99, "currency": "USD", "description": "Caffe Latte"}]}]}])),
            ..HandoffData::default()
        };
        let out = run(task).await.expect("categorized");
        assert_eq!(out.summary, "Categorized 1 transaction: Starbucks as Dining - Coffee");
        assert_eq!(out.confidence, Some(95));
        let t = &out.artifacts[0].value[0];
        assert_eq!((t["category"].as_str(), t["confidence"].as_u64()), (Some("Dining - Coffee"), Some(95)));
        assert_eq!(
            out.artifacts[1].value,
            json!([{"category": "Dining - Coffee", "total": 45.99, "count": 1, "share_pct": 100.0}])
        );
    }

    #[tokio::test]
    async fn tag_ai_categorizes_the_example_statement() {
        let out = run(Task::new("Categorize", include_str!("../../../../examples/statement.csv"))).await.expect("ok");
        let ts = out.artifacts[0].value.as_array().expect("array").clone();
        let category_of = |m: &str| {
            ts.iter().find(|t| t["merchant"] == m).and_then(|t| t["category"].as_str()).unwrap_or_default().to_string()
        };
        assert_eq!(category_of("Whole Foods Market"), "Groceries");
        assert_eq!(category_of("Netflix"), "Entertainment");
        assert_eq!(category_of("Payroll Deposit Acme Corp"), "Income");
        assert_eq!(category_of("MTA Metrocard"), "Transport");
        assert!(!ts.iter().any(|t| t["category"] == UNCATEGORIZED), "{}", out.result);
        assert_eq!(out.artifacts[1].value[0]["category"], "Rent");
        assert!(out.new_facts[0].fact.starts_with("User's largest spending category is Rent"));
    }

    #[tokio::test]
    async fn tag_ai_keeps_given_categories_unless_sure() {
        let csv = "date,merchant,amount,category\n2025-10-01,Starbucks,4.50,Food\n2025-10-02,Mystery Co,9.00,Gifts";
        let out = run(Task::new("Review categorization accuracy", csv)).await.expect("ok");
        let ts = &out.artifacts[0].value;
        assert_eq!((ts[0]["category"].as_str(), ts[1]["category"].as_str()), (Some("Dining - Coffee"), Some("Gifts")));
        assert!(out.result.contains("Starbucks: 'Food' -> 'Dining - Coffee'"), "{}", out.result);
    }

    /// A phrasing's transactions as (merchant, cents, category), or the question.
    type Want = phrasing::Want<&'static [(&'static str, Cents, &'static str)]>;

    #[tokio::test]
    async fn tag_ai_reads_phrasings_people_type() {
        use phrasing::Want::{Asks, Reads as Got};
        const NO_TRANSACTIONS: &str = "I don't have any transactions yet";
        let rows: &[(&str, Want)] = &[
            ("categorize: starbucks 5.75", Got(&[("Starbucks", 575, "Dining - Coffee")])),
            ("what category is my $89 costco run?", Got(&[("Costco Run", 8900, "Groceries")])),
            ("2025-03-14 UBER *TRIP 23.40", Got(&[("Uber Trip", 2340, "Transport")])),
            ("uber eats 31.20 last night", Got(&[("Uber Eats", 3120, "Dining - Restaurants")])),
            ("netflix $15.49", Got(&[("Netflix", 1549, "Entertainment")])),
            ("paid 1,200 bucks rent", Got(&[("Rent", 120_000, "Rent")])),
            ("amazon $23.99 printer paper", Got(&[("Amazon Printer Paper", 2399, "Office Supplies")])),
            (
                "I spent 45 at starbucks and 12 at subway",
                Got(&[("Starbucks", 4500, "Dining - Coffee"), ("Subway", 1200, "Dining - Restaurants")]),
            ),
            (
                "Date,Description,Amount,Category\n03/14/2025,STARBUCKS,5.75,Food\n03/15/2025,\"Mystery Co, LLC\",9.00,Gifts",
                Got(&[("Starbucks", 575, "Dining - Coffee"), ("Mystery Co, LLC", 900, "Gifts")]),
            ),
            (
                "can you categorize this\nTIM HORTONS #2231\nOct 3, 2025\nDouble Double 2.19\nTotal C$2.19",
                Got(&[("Tim Hortons", 219, "Dining - Coffee")]),
            ),
            ("whole foods 87.23", Got(&[("Whole Foods", 8723, "Groceries")])),
            ("cvs pharmacy 12.99", Got(&[("Cvs Pharmacy", 1299, "Health")])),
            ("red cross donation $50", Got(&[("Red Cross Donation", 5000, "Charity")])),
            ("con ed electric bill 96.40", Got(&[("Con Ed Electric Bill", 9640, "Utilities")])),
            ("delta flight to chicago $320", Got(&[("Delta Flight Chicago", 32_000, "Travel")])),
            ("random shop 20.00", Got(&[("Random Shop", 2000, "Shopping")])),
            ("zorblax llc 20.00", Got(&[("Zorblax Llc", 2000, UNCATEGORIZED)])),
            ("€4,50 cappuccino at Paul", Got(&[("Paul", 450, "Dining - Coffee")])),
            (
                "- spotify 9.99\n- shell gas 45.00\n- staples 18.50",
                Got(&[
                    ("Spotify", 999, "Entertainment"),
                    ("Shell Gas", 4500, "Transport"),
                    ("Staples", 1850, "Office Supplies"),
                ]),
            ),
            ("got a refund from amazon 23.99", Got(&[("Amazon", -2399, "Shopping")])),
            ("refund from amazon -23.99", Asks(NO_TRANSACTIONS)),
            ("how much did I spend on coffee?", Asks(NO_TRANSACTIONS)),
            ("categorize my stuff pls", Asks(NO_TRANSACTIONS)),
            ("starbucks", Asks(NO_TRANSACTIONS)),
            ("I spend about 300 a month on groceries", Asks(NO_TRANSACTIONS)),
        ];
        let mut wrong = phrasing::Wrong::default();
        for (input, want) in rows {
            let got = run(Task::new("Categorize my transactions", *input)).await;
            wrong.judge(input, want, &got, |expected, out| {
                phrasing::same_transactions(&out.artifacts[0].value, "category", expected)
            });
        }
        wrong.assert_none(rows.len());
    }

    #[tokio::test]
    async fn tag_ai_asks_for_transactions_and_refuses_without_its_tool() {
        let err = run(Task::new("Categorize my stuff", "")).await.expect_err("nothing");
        assert_eq!(err.code, ErrorCode::NeedsInput);
        let err = TagAi.run(&AgentContext::detached(["extract_receipt"]), &Task::new("x", "Starbucks 4.50")).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
