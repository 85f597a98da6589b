//! Debts kept in the user's money records: Blitz keeps the debts the user lists and,
//! asked later without them ("how do I pay off my debts faster?"), plans
//! with the kept ones, less the payments to them the money records shows since (a
//! row such as `VISA PAYMENT` counts toward `Visa`).

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::Debt;
use crate::agent::AgentContext;
use crate::protocol::DelegationError;
use crate::store::{MoneyEntry, MoneyPlan};
use crate::team::finance::book;
use crate::team::finance::money::{self, Cents};

/// The kind of plan debts are kept as.
pub(super) const KIND: &str = "debt";

/// Words that make a money row a payment on a debt.
const PAYMENT_WORDS: &[&str] = &["payment", "pmt", "autopay", "paid", "pay off", "repayment"];

/// Keeps the debts the user just listed (when Blitz may write the money records).
pub(super) async fn save(ctx: &AgentContext, debts: &[Debt], currency: &str) -> Result<(), DelegationError> {
    if !ctx.can_write_money() {
        return Ok(());
    }
    let since = book::today(ctx).format("%Y-%m-%d").to_string();
    for d in debts.iter().filter(|d| !d.name.is_empty()) {
        let body = json!({"name": d.name, "balance": money::to_value(d.balance), "apr": d.apr_bp as f64 / 100.0,
                          "minimum": money::to_value(d.minimum), "currency": currency, "since": since});
        ctx.save_plan(KIND, &d.name.to_lowercase(), body).await?;
    }
    Ok(())
}

/// Payments to the debt named `name` on or after `since`, and how many.
pub(super) fn payments(name: &str, currency: &str, since: &str, entries: &[MoneyEntry]) -> (Cents, usize) {
    let word = name.split_whitespace().find(|w| w.len() >= 3).unwrap_or(name).to_lowercase();
    let hits: Vec<&MoneyEntry> = entries
        .iter()
        .filter(|e| e.amount > 0 && e.currency == currency && e.date.as_deref().is_some_and(|d| d >= since))
        .filter(|e| {
            let text = format!("{} {}", e.merchant, e.description).to_lowercase();
            text.contains(&word) && PAYMENT_WORDS.iter().any(|w| text.contains(w))
        })
        .collect();
    (hits.iter().map(|e| e.amount).sum(), hits.len())
}

fn line(plan: &MoneyPlan, entries: &[MoneyEntry]) -> Option<(String, Option<String>)> {
    let b = &plan.body;
    let name = b.get("name").and_then(Value::as_str)?;
    let balance = b.get("balance").and_then(money::from_value)?;
    let minimum = b.get("minimum").and_then(money::from_value)?;
    let apr = b.get("apr").and_then(Value::as_f64)?;
    let currency = b.get("currency").and_then(Value::as_str).unwrap_or("USD");
    let since = b.get("since").and_then(Value::as_str).filter(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok())?;
    let (paid, n) = payments(name, currency, since, entries);
    let now = (balance - paid).max(0);
    let note = (paid > 0).then(|| {
        format!(
            "{name}: {} paid in {n} payment{} since {since} (from your records), {} left",
            money::format(paid, currency),
            if n == 1 { "" } else { "s" },
            money::format(now, currency)
        )
    });
    let fmt = |c: Cents| money::format(c, currency);
    Some((format!("{name} balance {}, {apr}% interest, min payment {}", fmt(now), fmt(minimum)), note))
}

/// The kept debts as lines Blitz reads (balances less the payments since),
/// and a note per debt that payments reduced; None when none are kept.
pub(super) async fn recall(ctx: &AgentContext) -> Result<Option<(String, Vec<String>)>, DelegationError> {
    let Some(view) = book::recorded(ctx).await? else { return Ok(None) };
    let kept: Vec<(String, Option<String>)> =
        view.plans.iter().filter(|p| p.kind == KIND).filter_map(|p| line(p, &view.entries)).collect();
    if kept.is_empty() {
        return Ok(None);
    }
    let lines = kept.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>().join("\n");
    Ok(Some((lines, kept.into_iter().filter_map(|(_, n)| n).collect())))
}

#[cfg(test)]
mod tests {
    use super::super::parse_request;
    use super::*;

    #[test]
    fn a_kept_debt_reads_back_as_the_debt_with_the_question_asked_now() {
        let plan = MoneyPlan {
            user_id: "alice".parse().expect("a user"),
            kind: KIND.into(),
            name: "visa".into(),
            body: json!({"name": "Visa", "balance": 5000.0, "apr": 19.99, "minimum": 150.0, "currency": "USD",
                         "since": "2026-01-01"}),
            updated_at: 0,
        };
        let (text, note) = line(&plan, &[]).expect("a line");
        assert_eq!(note, None);
        let req = parse_request(&format!("{text}\nHow fast can I pay off my debt with an extra $300/month?"))
            .unwrap_or_else(|e| panic!("{text}: {}", e.message));
        assert_eq!(req.debts, [Debt { name: "Visa".into(), balance: 500_000, apr_bp: 1999, minimum: 15_000 }]);
        assert_eq!(req.extra, 30_000);
    }
}
