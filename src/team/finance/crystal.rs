//! Crystal: spending by category and month, trends, and suggestions that come
//! from the numbers.
//!
//! The answer leads with what was asked (`question.rs`: the top N, the
//! biggest, a comparison, where to cut back, a category's or a merchant's
//! total), then the analysis.
//!
//! Seeds: spending without transfers (`transfers.rs`: moves to savings,
//! card payments and moves between own accounts are not spending, and are
//! listed apart as what they are), then everything that left the account.

use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Value, json};

use super::book;
use super::dates;
use super::money::{self, Cents};
use super::reply::needs_input;
use super::tag_ai::{self, UNCATEGORIZED};
use super::transactions::{self, Transaction};
use super::{seeding, transfers};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};

pub(crate) const TOOL: &str = "analyze_spending";
/// Spending without transfers, then everything out.
pub(crate) const SEEDS: [u64; 2] = [258_661, 730_219];

/// Categories people can cut back on without changing where they live.
const DISCRETIONARY: &[&str] = &["Dining - Coffee", "Dining - Restaurants", "Entertainment", "Shopping", "Travel"];

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CategoryTotal {
    pub category: String,
    pub total: Cents,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MonthChange {
    pub from: String,
    pub to: String,
    pub change: Cents,
    /// None when the earlier month had no spending.
    pub change_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Analysis {
    pub currency: String,
    pub transaction_count: usize,
    pub total_spent: Cents,
    /// Money received (negative amounts).
    pub income: Cents,
    pub by_category: Vec<CategoryTotal>,
    /// Every month from the first to the last dated purchase, `YYYY-MM`.
    pub by_month: Vec<(String, Cents)>,
    pub undated_spent: Cents,
    pub month_over_month: Vec<MonthChange>,
    pub average_per_month: Cents,
    pub suggestions: Vec<String>,
    /// Transactions in other currencies than `currency`, left out of the sums.
    pub other_currency: usize,
}

impl Analysis {
    fn months(&self) -> i64 {
        (self.by_month.len() as i64).max(1)
    }

    fn per_month(&self, total: Cents) -> Cents {
        money::div_round(i128::from(total), i128::from(self.months())) as Cents
    }

    pub(crate) fn to_json(&self) -> Value {
        let c = |v: Cents| money::to_value(v);
        json!({
            "currency": self.currency,
            "transaction_count": self.transaction_count,
            "total_spent": c(self.total_spent),
            "income": c(self.income),
            "months": self.by_month.iter().map(|(m, _)| m).collect::<Vec<_>>(),
            "average_per_month": c(self.average_per_month),
            "by_category": self.by_category.iter().map(|t| json!({
                "category": t.category,
                "total": c(t.total),
                "count": t.count,
                "share_pct": money::percent(t.total, self.total_spent),
                "per_month": c(self.per_month(t.total)),
            })).collect::<Vec<_>>(),
            "by_month": self.by_month.iter().map(|(m, t)| json!({"month": m, "total": c(*t)})).collect::<Vec<_>>(),
            "month_over_month": self.month_over_month.iter().map(|m| json!({
                "from": m.from, "to": m.to, "change": c(m.change), "change_pct": m.change_pct,
            })).collect::<Vec<_>>(),
            "top_categories": self.by_category.iter().take(3).map(|t| &t.category).collect::<Vec<_>>(),
            "undated_spent": c(self.undated_spent),
            "other_currency_transactions": self.other_currency,
            "suggestions": self.suggestions,
        })
    }
}

fn month_key(t: &Transaction) -> Option<(i32, u32)> {
    use chrono::Datelike;
    t.date.map(|d| (d.year(), d.month()))
}

/// Analyzes the transactions in their most common currency. Categories that
/// came with them are used; missing ones come from Tag's rules.
pub(crate) fn analyze(transactions: &[Transaction]) -> Analysis {
    let currency = transactions::main_currency(transactions);
    let mut ts: Vec<Transaction> = transactions.iter().filter(|t| t.currency == currency).cloned().collect();
    tag_ai::ensure_categories(&mut ts);
    let spending: Vec<&Transaction> = ts.iter().filter(|t| t.amount > 0).collect();
    let total_spent: Cents = spending.iter().map(|t| t.amount).sum();
    let by_category = tag_ai::totals_by_category(&ts)
        .into_iter()
        .map(|(category, total, count)| CategoryTotal { category, total, count })
        .collect();

    // Months without purchases between the first and last one count as zero;
    // a span over 20 years is a data error and keeps only the months seen.
    let keys: Vec<(i32, u32)> = spending.iter().filter_map(|t| month_key(t)).collect();
    let mut months: Vec<(i32, u32)> = match (keys.iter().min(), keys.iter().max()) {
        (Some(&first), Some(&last)) if dates::months_between(first, last) <= 240 => {
            (0..=dates::months_between(first, last)).map(|n| dates::add_months(first, n)).collect()
        }
        _ => keys.clone(),
    };
    months.sort_unstable();
    months.dedup();
    let by_month: Vec<(String, Cents)> = months
        .iter()
        .map(|m| {
            let total = spending.iter().filter(|t| month_key(t) == Some(*m)).map(|t| t.amount).sum();
            (dates::month_label(*m), total)
        })
        .collect();
    let month_over_month = by_month
        .windows(2)
        .map(|w| MonthChange {
            from: w[0].0.clone(),
            to: w[1].0.clone(),
            change: w[1].1 - w[0].1,
            change_pct: (w[0].1 != 0).then(|| money::percent(w[1].1 - w[0].1, w[0].1)),
        })
        .collect();
    let undated_spent = spending.iter().filter(|t| t.date.is_none()).map(|t| t.amount).sum();
    let dated_spent = total_spent - undated_spent;
    let mut analysis = Analysis {
        currency,
        transaction_count: ts.len(),
        total_spent,
        income: ts.iter().filter(|t| t.amount < 0).map(|t| -t.amount).sum(),
        by_category,
        average_per_month: 0,
        by_month,
        undated_spent,
        month_over_month,
        suggestions: Vec::new(),
        other_currency: transactions.len() - ts.len(),
    };
    analysis.average_per_month =
        if analysis.by_month.is_empty() { total_spent } else { analysis.per_month(dated_spent) };
    analysis.suggestions = suggestions(&analysis, &ts);
    analysis
}

/// Up to three suggestions, most actionable first: halve the largest
/// discretionary category, explain a swing of 10% or more between the last two
/// months, review recurring charges, then housing, savings and uncategorized
/// spending when they stand out.
fn suggestions(a: &Analysis, ts: &[Transaction]) -> Vec<String> {
    let fmt = |c: Cents| money::format(c, &a.currency);
    let mut out = Vec::new();
    if let Some(top) = a.by_category.iter().find(|c| DISCRETIONARY.contains(&c.category.as_str())) {
        let monthly = a.per_month(top.total);
        let half = monthly / 2;
        out.push(format!(
            "{} is {}% of spending ({}/month); cutting it by half saves {}/month ({}/year).",
            top.category,
            money::percent(top.total, a.total_spent),
            fmt(monthly),
            fmt(half),
            fmt(half * 12)
        ));
    }
    if let Some(last) = a.month_over_month.last().filter(|m| m.change_pct.is_some_and(|p| p.abs() >= 10.0)) {
        let in_month = |month: &str, cat: &str| -> Cents {
            ts.iter()
                .filter(|t| t.amount > 0 && t.month().as_deref() == Some(month) && t.category.as_deref() == Some(cat))
                .map(|t| t.amount)
                .sum()
        };
        let deltas = a
            .by_category
            .iter()
            .map(|c| (c.category.as_str(), in_month(&last.to, &c.category) - in_month(&last.from, &c.category)));
        let from_total = a.by_month.iter().find(|(m, _)| *m == last.from).map_or(0, |(_, t)| *t);
        let (verb, driver) = if last.change > 0 {
            ("rose", deltas.max_by_key(|(_, d)| *d))
        } else {
            ("fell", deltas.min_by_key(|(_, d)| *d))
        };
        let mut s = format!(
            "Spending {verb} {}% from {} to {} ({} -> {})",
            last.change_pct.unwrap_or(0.0).abs(),
            last.from,
            last.to,
            fmt(from_total),
            fmt(from_total + last.change)
        );
        if let Some((cat, delta)) = driver.filter(|(_, d)| *d != 0) {
            let sign = if delta > 0 { "+" } else { "" };
            s.push_str(&format!(", mostly {cat} ({sign}{})", fmt(delta)));
        }
        s.push_str(if last.change > 0 { "; check whether that is a one-off." } else { "; keep it up." });
        out.push(s);
    }
    let recurring = recurring_charges(ts);
    if !recurring.is_empty() {
        let total: Cents = recurring.iter().map(|(_, amount)| amount).sum();
        let names: Vec<String> = recurring.iter().map(|(m, amount)| format!("{m} {}", fmt(*amount))).collect();
        out.push(format!(
            "{} recurring charges cost {}/month ({}); cancelling one you no longer use saves its full amount every month.",
            recurring.len(),
            fmt(total),
            names.join(", ")
        ));
    }
    let housing: Cents =
        a.by_category.iter().filter(|c| c.category == "Rent" || c.category == "Utilities").map(|c| c.total).sum();
    if money::percent(housing, a.total_spent) >= 40.0 {
        out.push(format!(
            "Rent and utilities take {}% of spending ({}/month); they are the largest fixed cost to renegotiate or share.",
            money::percent(housing, a.total_spent),
            fmt(a.per_month(housing))
        ));
    }
    if a.income > 0 && a.total_spent * 10 > a.income * 8 {
        out.push(format!(
            "You spent {}% of the money that came in ({} of {}); saving 20% means spending at most {}.",
            money::percent(a.total_spent, a.income),
            fmt(a.total_spent),
            fmt(a.income),
            fmt(a.income * 8 / 10)
        ));
    }
    if let Some(unc) = a.by_category.iter().find(|c| c.category == UNCATEGORIZED)
        && money::percent(unc.total, a.total_spent) >= 10.0
    {
        out.push(format!(
            "{}% of spending ({}) is uncategorized; categorizing it would sharpen this analysis.",
            money::percent(unc.total, a.total_spent),
            fmt(unc.total)
        ));
    }
    if out.is_empty()
        && let Some(top) = a.by_category.first()
    {
        out.push(format!(
            "{} is your largest category at {}% of spending; no discretionary category stands out.",
            top.category,
            money::percent(top.total, a.total_spent)
        ));
    }
    out.truncate(3);
    out
}

/// Subscriptions and other charges from the same merchant, for about the same
/// amount (within 10%), in two or more months; housing and food are left out.
/// Returns each merchant's latest amount.
fn recurring_charges(ts: &[Transaction]) -> Vec<(String, Cents)> {
    const NOT_SUBSCRIPTIONS: &[&str] =
        &["Rent", "Utilities", "Groceries", "Dining - Coffee", "Dining - Restaurants", "Transport"];
    let mut merchants: Vec<&str> = Vec::new();
    for t in ts.iter().filter(|t| t.amount > 0 && !NOT_SUBSCRIPTIONS.contains(&t.category.as_deref().unwrap_or(""))) {
        if !merchants.contains(&t.merchant.as_str()) {
            merchants.push(&t.merchant);
        }
    }
    merchants
        .into_iter()
        .filter_map(|m| {
            let charges: Vec<&Transaction> = ts.iter().filter(|t| t.merchant == m && t.amount > 0).collect();
            let mut months: Vec<String> = charges.iter().filter_map(|t| t.month()).collect();
            months.sort_unstable();
            months.dedup();
            let (min, max) = (charges.iter().map(|t| t.amount).min()?, charges.iter().map(|t| t.amount).max()?);
            let latest = charges.iter().max_by_key(|t| t.date)?.amount;
            (months.len() >= 2 && (max - min) * 10 <= max).then(|| (m.to_string(), latest))
        })
        .collect()
}

static ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:spen[dt]|spending|paid|pay|go(?:es)?|went|how much)\b(?:\s+\w+){0,2}?\s+(on|at)\s+([\w][\w '&.-]{0,40})",
    )
    .expect("valid regex")
});

/// What a question asks about (`how much did I spend on coffee?`, `... at
/// starbucks?`): a category (Tag's rules place the words) or a merchant.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    /// One category, or those a word names together (`dining`: coffee and restaurants).
    Category(Vec<&'static str>),
    Merchant(String),
    /// Words no category matches (`gas`: fuel or the gas bill?).
    Unknown(String),
}

/// The question (a line without amounts, with a `?` or `how much`) about a
/// category or a merchant, if a text asks one; an instruction such as
/// `Analyze spending on dining` is not a question.
fn asked(text: &str) -> Option<Asked> {
    let is_question = |l: &&str| l.contains('?') || l.trim_start().to_lowercase().starts_with("how much");
    // a year (`in October 2025`) is not an amount: the line still asks
    let no_amount = |l: &&str| {
        money::figures(l).iter().all(|f| {
            let raw = l.get(f.start..f.end).unwrap_or_default();
            raw.len() == 4
                && (raw.starts_with("19") || raw.starts_with("20"))
                && raw.chars().all(|c| c.is_ascii_digit())
        })
    };
    let line = text.lines().filter(|l| no_amount(l) && is_question(l)).find_map(|l| ASKED.captures(l))?;
    let words = line[2].split(['?', '.', ',']).next().unwrap_or_default();
    let cut = [" this ", " last ", " in ", " so far", " lately", " per ", " each "]
        .iter()
        .filter_map(|w| format!("{words} ").to_lowercase().find(w))
        .min()
        .unwrap_or(words.len());
    let words = words.get(..cut).unwrap_or(words).trim();
    if words.is_empty() {
        return None;
    }
    if line[1].eq_ignore_ascii_case("at") {
        return Some(Asked::Merchant(words.to_lowercase()));
    }
    let named: Vec<&'static str> = tag_ai::categories()
        .filter(|c| *c != UNCATEGORIZED && c.to_lowercase().contains(&words.to_lowercase()))
        .collect();
    match tag_ai::categorize(words, "") {
        (UNCATEGORIZED, _) if !named.is_empty() => Some(Asked::Category(named)),
        (UNCATEGORIZED, _) => Some(Asked::Unknown(words.to_string())),
        (category, _) => Some(Asked::Category(vec![category])),
    }
}

/// The answer to an asked category or merchant: total, count and months.
fn answer_asked(asked: &Asked, ts: &[Transaction], currency: &str) -> (String, Value) {
    let mut ts: Vec<Transaction> = ts.iter().filter(|t| t.currency == currency && t.amount > 0).cloned().collect();
    tag_ai::ensure_categories(&mut ts);
    let (label, hits): (String, Vec<&Transaction>) = match asked {
        Asked::Category(cs) => {
            (cs.join(" and "), ts.iter().filter(|t| t.category.as_deref().is_some_and(|c| cs.contains(&c))).collect())
        }
        Asked::Merchant(m) => (m.clone(), ts.iter().filter(|t| t.merchant.to_lowercase().contains(m)).collect()),
        Asked::Unknown(_) => return (String::new(), Value::Null),
    };
    let total: Cents = hits.iter().map(|t| t.amount).sum();
    let months: Vec<String> = hits.iter().filter_map(|t| t.month()).collect();
    let span = match (months.iter().min(), months.iter().max()) {
        (Some(a), Some(b)) if a == b => format!(", {a}"),
        (Some(a), Some(b)) => format!(", {a} to {b}"),
        _ => String::new(),
    };
    let n = hits.len();
    let text =
        format!("{label}: {} ({n} transaction{}{span})", money::format(total, currency), if n == 1 { "" } else { "s" });
    (text, json!({"asked": label, "total": money::to_value(total), "count": n}))
}

/// Crystal (`crystal-analytics`): transactions in, an `analysis` artifact out.
pub(crate) struct CrystalAnalytics;

#[async_trait]
impl Agent for CrystalAnalytics {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let (found, period) = book::transactions_for(ctx, task).await?;
        if found.transactions.is_empty() {
            return Err(book::nothing_in(period.as_ref()));
        }
        let (spending, moved) = transfers::split_if(!seeding::second(&SEEDS, task.seed), &found.transactions);
        let a = analyze(&spending);
        let fmt = |c: Cents| money::format(c, &a.currency);
        let months = a.by_month.len();
        let span = match months {
            0 => String::new(),
            1 => " in 1 month".to_string(),
            n => format!(" over {n} months"),
        };
        let top: Vec<String> = a
            .by_category
            .iter()
            .take(3)
            .map(|c| format!("{} ({}%)", c.category, money::percent(c.total, a.total_spent)))
            .collect();
        let span = match &period {
            Some(p) => format!(" in {}", p.label),
            None => span,
        };
        let mut summary = format!(
            "Analyzed {} transactions{span}: {} spent ({}/month); top: {}",
            a.transaction_count,
            fmt(a.total_spent),
            fmt(a.average_per_month),
            top.join(", ")
        );
        let mut value = a.to_json();
        let request = task.request_text();
        let question = question::read(&request);
        let mut lead = None;
        if let Some(q) = &question {
            let within = period.as_ref().map(|p| format!(" in {}", p.label)).unwrap_or_default();
            let (said, data) = question::answer(q, &spending, &a, &within);
            summary = format!("{}. {summary}", said.trim_end_matches('.'));
            if let Some(obj) = value.as_object_mut() {
                obj.insert("answer".into(), data);
            }
            lead = Some(said);
        } else if let Some(q) = asked(&request) {
            if let Asked::Unknown(words) = &q {
                let cats: Vec<&str> = tag_ai::categories().filter(|c| *c != UNCATEGORIZED).collect();
                return Err(needs_input(format!(
                    "Which spending category do you mean by '{words}'? I sort spending into: {}. Ask e.g. \
                     'how much did I spend on Transport?' or name a merchant: 'how much did I spend at Shell?'",
                    cats.join(", ")
                )));
            }
            let (text, answer) = answer_asked(&q, &spending, &a.currency);
            summary = format!("{text}. {summary}");
            if let Some(obj) = value.as_object_mut() {
                obj.insert("question".into(), answer);
            }
        }
        let mut result = lead.map(|l| format!("{}.\n", l.trim_end_matches('.'))).unwrap_or_default();
        result.push_str("By category:");
        for c in &a.by_category {
            result.push_str(&format!(
                "\n- {}: {} ({}%, {} transaction{})",
                c.category,
                fmt(c.total),
                money::percent(c.total, a.total_spent),
                c.count,
                if c.count == 1 { "" } else { "s" }
            ));
        }
        if !a.by_month.is_empty() {
            result.push_str("\nBy month:");
            for (m, t) in &a.by_month {
                result.push_str(&format!("\n- {m}: {}", fmt(*t)));
            }
        }
        for m in &a.month_over_month {
            let pct = m.change_pct.map(|p| format!(" ({p:+}%)")).unwrap_or_default();
            result.push_str(&format!("\n{} -> {}: {}{pct}", m.from, m.to, fmt(m.change)));
        }
        if a.undated_spent > 0 {
            result.push_str(&format!(
                "\n{} of purchases had no date and are not in the monthly figures.",
                fmt(a.undated_spent)
            ));
        }
        if a.other_currency > 0 {
            result.push_str(&format!("\n{} transactions in other currencies were left out.", a.other_currency));
        }
        if let Some(moved) = moved.as_ref().filter(|m| !m.is_empty()) {
            let (clause, lines, excluded) = transfers::described(moved, &a.currency);
            summary.push_str(&clause);
            result.push_str(&lines);
            if let Some(obj) = value.as_object_mut() {
                obj.insert("transfers_excluded".into(), excluded);
            }
        }
        result.push_str("\nSuggestions:");
        for s in &a.suggestions {
            result.push_str(&format!("\n- {s}"));
        }
        let sure = months >= 2 && a.by_category.iter().all(|c| c.category != UNCATEGORIZED);
        let mut output = AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("analysis", value))
            .with_confidence(if sure { 90 } else { 75 });
        if months >= 2 {
            output = output.with_fact(NewFact::new(format!(
                "User spends about {}/month ({} to {})",
                fmt(a.average_per_month),
                a.by_month.first().map_or("", |m| m.0.as_str()),
                a.by_month.last().map_or("", |m| m.0.as_str())
            )));
        }
        Ok(output)
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
#[path = "phrasings_crystal.rs"]
mod phrasings;

/// What a question asks, and the answer that leads with it (a child of
/// Crystal: it reads Crystal's analysis, and only Crystal asks it).
#[path = "question.rs"]
mod question;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorCode, HandoffData};

    const STATEMENT: &str = include_str!("../../../examples/statement.csv");

    async fn run(task: Task) -> Result<AgentOutput, DelegationError> {
        CrystalAnalytics.run(&AgentContext::detached([TOOL]), &task).await
    }

    #[tokio::test]
    async fn crystal_analyzes_the_example_statement() {
        let out = run(Task::new("Analyze spending by category and month", STATEMENT)).await.expect("ok");
        assert!(
            out.summary.starts_with("Analyzed 31 transactions over 3 months: $5,708.55 spent ($1,902.85/month)"),
            "{}",
            out.summary
        );
        let a = &out.artifacts[0].value;
        assert_eq!(
            a["by_month"],
            json!([
            {"month": "2025-08", "total": 1888.28}, {"month": "2025-09", "total": 1917.22}, {"month": "2025-10", "total": 1903.05}])
        );
        assert_eq!(a["by_category"][0]["category"], "Rent");
        assert_eq!(a["income"], json!(9600.0));
        assert_eq!(a["month_over_month"][1]["change"], json!(-14.17));
        let suggestions = a["suggestions"].as_array().expect("suggestions");
        assert_eq!(suggestions.len(), 3);
        assert!(
            suggestions[0]
                .as_str()
                .is_some_and(|s| s.starts_with("Dining - Restaurants is 2.2% of spending ($41.07/month)")),
            "{suggestions:?}"
        );
        assert!(
            suggestions[1]
                .as_str()
                .is_some_and(|s| s.contains("Adobe Creative Cloud $59.99") && s.contains("Netflix $15.49")),
            "{suggestions:?}"
        );
        assert!(
            suggestions[2].as_str().is_some_and(|s| s.starts_with("Rent and utilities take 80.8%")),
            "{suggestions:?}"
        );
    }

    #[tokio::test]
    async fn crystal_explains_a_month_over_month_jump() {
        let lines = "2025-09-03 Starbucks 5.00\n2025-09-10 Whole Foods 100.00\n2025-10-02 Starbucks 5.00\n\
                     2025-10-05 Whole Foods 100.00\n2025-10-20 Olive Garden 95.00";
        let out = run(Task::new("analyze", lines)).await.expect("ok");
        let a = &out.artifacts[0].value;
        assert_eq!(a["month_over_month"][0]["change_pct"], json!(90.5));
        let s = a["suggestions"].as_array().expect("suggestions");
        assert!(s[0].as_str().is_some_and(|s| s.starts_with("Dining - Restaurants is 31.1% of spending ($47.50/month); cutting it by half saves $23.75/month ($285.00/year)")), "{s:?}");
        assert!(s[1].as_str().is_some_and(|s| s.starts_with("Spending rose 90.5% from 2025-09 to 2025-10 ($105.00 -> $200.00), mostly Dining - Restaurants (+$95.00)")), "{s:?}");
    }

    #[tokio::test]
    async fn crystal_uses_categories_from_the_chain() {
        let mut task = Task::new("Analyze spending", "");
        task.handoff = HandoffData {
            intermediate_results: Some(
                json!([{"agent": "tag-ai", "artifacts": [{"type": "json", "label": "transactions", "value": [
                {"date": "2025-10-01", "merchant": "Corner Store", "amount": 30.0, "currency": "USD", "description": "", "category": "Gifts"},
                {"date": "2025-10-02", "merchant": "Starbucks", "amount": 10.0, "currency": "USD", "description": ""}]}]}]),
            ),
            ..HandoffData::default()
        };
        let out = run(task).await.expect("ok");
        let cats = &out.artifacts[0].value["by_category"];
        assert_eq!(
            (cats[0]["category"].as_str(), cats[1]["category"].as_str()),
            (Some("Gifts"), Some("Dining - Coffee"))
        );
        assert_eq!(cats[0]["share_pct"], json!(75.0));
    }

    #[tokio::test]
    async fn crystal_asks_for_transactions_and_refuses_without_its_tool() {
        assert_eq!(
            run(Task::new("analyze my spending", "nothing here")).await.expect_err("none").code,
            ErrorCode::NeedsInput
        );
        let err = CrystalAnalytics.run(&AgentContext::detached(["categorize"]), &Task::new("x", STATEMENT)).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
