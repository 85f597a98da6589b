//! A savings goal, and how it is kept in the user's money records: Goalie keeps
//! every goal the user states and, asked later ("Am I on track for my
//! vacation goal?"), takes the kept goals again, adding what went to them
//! since they were stated (a money row such as `Transfer to Vacation
//! Savings` counts toward `Vacation`).

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::money::{self, Cents};
use super::{book, dates};
use crate::agent::AgentContext;
use crate::protocol::DelegationError;
use crate::store::{MoneyEntry, MoneyPlan};

/// A savings goal as the user states it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Goal {
    pub name: String,
    pub target: Cents,
    pub saved: Cents,
    /// Current contribution per month.
    pub monthly: Cents,
    pub deadline: Option<(i32, u32)>,
}

/// The kind of plan goals are kept as.
pub(crate) const KIND: &str = "goal";

/// Words that make a payment a contribution to savings.
const SAVING_WORDS: &[&str] = &["saving", "transfer", "deposit", "fund", "goal", "put aside", "set aside"];

/// The key a goal is kept under: its name, lowercased.
pub(crate) fn key(name: &str) -> String {
    name.trim().to_lowercase()
}

fn body(g: &Goal, currency: &str, since: NaiveDate) -> Value {
    let c = money::to_value;
    json!({
        "name": g.name, "target": c(g.target), "saved": c(g.saved), "monthly": c(g.monthly),
        "deadline": g.deadline.map(dates::month_label), "currency": currency,
        "since": since.format("%Y-%m-%d").to_string(),
    })
}

/// A kept goal, the currency it is in and the day it was stated.
fn from_plan(plan: &MoneyPlan) -> Option<(Goal, String, NaiveDate)> {
    let b = &plan.body;
    let cents = |k: &str| b.get(k).and_then(money::from_value);
    let deadline = b.get("deadline").and_then(Value::as_str).and_then(|d| dates::find_month(d).map(|(m, _)| m));
    let goal = Goal {
        name: b.get("name").and_then(Value::as_str).unwrap_or(&plan.name).to_string(),
        target: cents("target")?,
        saved: cents("saved").unwrap_or(0),
        monthly: cents("monthly").unwrap_or(0),
        deadline,
    };
    let since = b.get("since").and_then(Value::as_str).and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())?;
    Some((goal, b.get("currency").and_then(Value::as_str).unwrap_or("USD").to_string(), since))
}

/// What went to the goal named `name` on or after `since`, and in how many payments.
pub(crate) fn contributions(name: &str, currency: &str, since: NaiveDate, entries: &[MoneyEntry]) -> (Cents, usize) {
    let word = name.split_whitespace().find(|w| w.len() >= 3).unwrap_or(name).to_lowercase();
    let since = since.format("%Y-%m-%d").to_string();
    let hits: Vec<&MoneyEntry> = entries
        .iter()
        .filter(|e| e.amount > 0 && e.currency == currency && e.date.as_deref().is_some_and(|d| d >= since.as_str()))
        .filter(|e| {
            let text = format!("{} {} {}", e.merchant, e.description, e.note.as_deref().unwrap_or("")).to_lowercase();
            text.contains(&word) && SAVING_WORDS.iter().any(|w| text.contains(w))
        })
        .collect();
    (hits.iter().map(|e| e.amount).sum(), hits.len())
}

/// Keeps the goals the user just stated (when Goalie may write the money records).
pub(crate) async fn save(ctx: &AgentContext, goals: &[Goal], currency: &str) -> Result<(), DelegationError> {
    if !ctx.can_write_money() {
        return Ok(());
    }
    let today = book::today(ctx);
    for g in goals {
        ctx.save_plan(KIND, &key(&g.name), body(g, currency, today)).await?;
    }
    Ok(())
}

/// The kept goals with what went to them since, the ones the text names
/// (`my vacation goal`) or all; their currency; and one line per goal that
/// grew. None when nothing is kept or Goalie may not read it.
pub(crate) async fn load(
    ctx: &AgentContext,
    text: &str,
) -> Result<Option<(Vec<Goal>, String, Vec<String>)>, DelegationError> {
    let Some(view) = book::recorded(ctx).await? else { return Ok(None) };
    let kept: Vec<(Goal, String, NaiveDate)> =
        view.plans.iter().filter(|p| p.kind == KIND).filter_map(from_plan).collect();
    let lower = text.to_lowercase();
    let named: Vec<&(Goal, String, NaiveDate)> =
        kept.iter().filter(|(g, _, _)| lower.contains(&key(&g.name))).collect();
    let chosen: Vec<&(Goal, String, NaiveDate)> = if named.is_empty() { kept.iter().collect() } else { named };
    let Some(currency) = chosen.first().map(|(_, c, _)| c.clone()) else { return Ok(None) };
    let mut notes = Vec::new();
    let mut out = Vec::new();
    for (goal, cur, since) in chosen {
        let (added, n) = contributions(&goal.name, cur, *since, &view.entries);
        let mut goal = goal.clone();
        if added > 0 {
            notes.push(format!(
                "{}: {} more in {n} payment{} since {} (from your records)",
                goal.name,
                money::format(added, cur),
                if n == 1 { "" } else { "s" },
                since.format("%Y-%m-%d")
            ));
            goal.saved += added;
        }
        out.push(goal);
    }
    Ok(Some((out, currency, notes)))
}
