//! Ledger: deductible expenses, each with the rule that makes it deductible.
//!
//! The rule set (general guidance, not tax advice), by category:
//! - Office Supplies, Software, Education, Professional Dues: 100%, as work
//!   expenses of a self-employed person or business.
//! - Charity: 100%, as a charitable donation (itemized deduction; a credit in Canada).
//! - Travel: 100% when the purchase or the request mentions business;
//!   otherwise listed as possible.
//! - Transport: 100% when the purchase mentions business (client, meeting...).
//! - Dining - Restaurants: 50% when the purchase mentions a client or business.
//! - Utilities and Rent: the home-office share when the request states it
//!   (`home office is 15% of my apartment`); a home office without a share
//!   is a question (`NEEDS_INPUT`), no home office makes them possible.
//! - Health: the part of the year's medical costs above 7.5% of the stated
//!   income; without an income they are listed as possible.
//! - Everything else (groceries, coffee, entertainment, shopping...) is personal.
//!
//! Seeds: these rules, then strict (`ledger_strict.rs`: only what is
//! deductible in full and certain counts; shares, donations and possible
//! items are left out of the total and asked about).

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::NaiveDate;
use regex::Regex;
use serde_json::{Value, json};

use super::book;
use super::money::{self, Cents};
use super::reply::{list_lines, needs_input};
use super::seeding;
use super::tag_ai;
use super::transactions::{self, Transaction};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError};
use crate::redact::mask_tokens;

pub(crate) const TOOL: &str = "find_deductions";
/// The rules, then strict.
pub(crate) const SEEDS: [u64; 2] = [840_553, 392_118];

/// Medical costs count above this share of income (US rule), in percent.
const MEDICAL_FLOOR_PCT: i64 = 75; // tenths of a percent: 7.5%

static BUSINESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(business|client|clients|customer meeting|meeting|conference|work trip|work travel|sales call)\b",
    )
    .expect("valid regex")
});
static HOME_OFFICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)home[- ]office(?:[^0-9%\n]{0,25}?(\d{1,2})\s*%)?|(\d{1,2})\s*%[^.\n]{0,25}?home[- ]office")
        .expect("valid regex")
});
/// Working from home without the words "home office".
static WORK_FROM_HOME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(work(?:ing)? from home|wfh|remote work|office (?:at|in) (?:my|the) (?:home|apartment|flat|house))\b",
    )
    .expect("valid regex")
});
/// A share of the home: `20% of the flat`, `15 % of my apartment`.
static HOME_SHARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d{1,2})\s*%\s*(?:of\s+)?(?:my\s+|the\s+|our\s+)?(?:home|apartment|flat|house|place|condo|floor)")
        .expect("valid regex")
});
/// An income stated per month: `5k a month`, `$4,000/month`.
static PER_MONTH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^\s*(?:a|per|/|each|every)\s*mo(?:nth)?\b|^\s*monthly\b").expect("valid regex"));
static INCOME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:income|agi|earn(?:ed|s)?|make|salary)\b[^0-9$€£\n]{0,20}((?:[$€£]\s?)?\d[\d,]*(?:\.\d+)?\s?k?)",
    )
    .expect("valid regex")
});

/// What the request says about the taxpayer.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TaxContext {
    /// The request calls the travel business travel.
    pub business_travel: bool,
    /// A home office (or working from home) is mentioned.
    pub home_office: bool,
    /// Percent of the home used as an office, when the request states it.
    pub home_office_pct: Option<u8>,
    pub annual_income: Option<Cents>,
}

impl TaxContext {
    /// Reads the objective, the input's prose and the user's facts.
    pub(crate) fn from_text(text: &str) -> Self {
        // a token's number is not an income nor a percentage
        let text = &*mask_tokens(text);
        let office = HOME_OFFICE.captures(text);
        let home_office = office.is_some() || WORK_FROM_HOME.is_match(text);
        let home_office_pct = office
            .and_then(|c| c.get(1).or(c.get(2)))
            .or_else(|| home_office.then(|| HOME_SHARE.captures(text).and_then(|c| c.get(1))).flatten())
            .and_then(|m| m.as_str().parse().ok())
            .filter(|p| *p > 0);
        let annual_income = INCOME.captures(text).and_then(|c| {
            let m = c.get(1)?;
            let after = text.get(m.end()..).unwrap_or_default();
            // `make sure ... 2025-03-01` is a date, not an income.
            if after.starts_with(['-', '/']) && after[1..].starts_with(|ch: char| ch.is_ascii_digit()) {
                return None;
            }
            let amount = money::parse_amount(m.as_str())?;
            Some(if PER_MONTH.is_match(after) { amount * 12 } else { amount })
        });
        let annual_income = annual_income.filter(|i| *i > 0);
        let lower = text.to_lowercase();
        let business_travel = ["business trip", "business travel", "work trip", "for work", "for business"]
            .iter()
            .any(|w| lower.contains(w));
        Self { business_travel, home_office, home_office_pct, annual_income }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Deduction {
    pub date: Option<NaiveDate>,
    pub merchant: String,
    pub category: String,
    pub amount: Cents,
    pub deductible: Cents,
    pub share_pct: u8,
    pub reason: String,
}

impl Deduction {
    fn new(t: &Transaction, category: &str, share_pct: u8, reason: impl Into<String>) -> Self {
        Self {
            date: t.date,
            merchant: t.merchant.clone(),
            category: category.to_string(),
            amount: t.amount,
            deductible: money::div_round(i128::from(t.amount) * i128::from(share_pct), 100) as Cents,
            share_pct,
            reason: reason.into(),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "date": self.date.map(|d| d.format("%Y-%m-%d").to_string()),
            "merchant": self.merchant,
            "category": self.category,
            "amount": money::to_value(self.amount),
            "deductible_amount": money::to_value(self.deductible),
            "share_pct": self.share_pct,
            "reason": self.reason,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Deductions {
    pub currency: String,
    pub items: Vec<Deduction>,
    /// Expenses that qualify only under a condition the data does not show.
    pub possible: Vec<Deduction>,
    pub personal_count: usize,
    pub assumptions: Vec<String>,
}

impl Deductions {
    pub(crate) fn total(&self) -> Cents {
        self.items.iter().map(|d| d.deductible).sum()
    }
}

/// A transaction's category in Tag's vocabulary: the given one when Tag knows
/// it, else what the rules say.
fn category_of(t: &Transaction) -> &'static str {
    let given = t.category.as_deref().unwrap_or_default();
    tag_ai::categories().find(|c| c.eq_ignore_ascii_case(given)).unwrap_or_else(|| tag_ai::categorize_transaction(t).0)
}

/// Applies the rule set in the module documentation to the purchases in the
/// most common currency.
pub(crate) fn find_deductions(transactions: &[Transaction], ctx: &TaxContext) -> Deductions {
    let currency = transactions::main_currency(transactions);
    let mut out = Deductions { currency: currency.clone(), ..Deductions::default() };
    let mut medical: Vec<&Transaction> = Vec::new();
    for t in transactions.iter().filter(|t| t.amount > 0 && t.currency == currency) {
        let category = category_of(t);
        let business = BUSINESS.is_match(&t.search_text());
        let full = |reason: &str| Some(Deduction::new(t, category, 100, reason));
        let (deductible, possible) = match category {
            "Office Supplies" => (full("office supplies used for work are a deductible business expense"), None),
            "Software" => (full("software and subscriptions used for work are a deductible business expense"), None),
            "Education" => (full("work-related education and training are deductible"), None),
            "Professional Dues" => (full("professional membership dues and licences are deductible"), None),
            "Charity" => (
                full("charitable donation: deductible when you itemize (a tax credit in Canada); keep the receipt"),
                None,
            ),
            "Travel" if business || ctx.business_travel => {
                (full("business travel (fares, lodging) is deductible"), None)
            }
            "Travel" => (None, full("travel is deductible only if the trip was for business")),
            "Transport" if business => (full("transport for business (client visits, meetings) is deductible"), None),
            "Dining - Restaurants" if business => {
                (Some(Deduction::new(t, category, 50, "business meal with a client: 50% deductible")), None)
            }
            "Utilities" | "Rent" => match ctx.home_office_pct {
                Some(pct) => (
                    Some(Deduction::new(
                        t,
                        category,
                        pct,
                        format!("home-office share ({pct}%) of {}", category.to_lowercase()),
                    )),
                    None,
                ),
                None => (
                    None,
                    Some(Deduction::new(
                        t,
                        category,
                        0,
                        "deductible in part if you work from a home office (share by floor area)",
                    )),
                ),
            },
            "Health" => {
                medical.push(t);
                (None, None)
            }
            _ => (None, None),
        };
        match (deductible, possible) {
            (Some(d), _) => out.items.push(d),
            (None, Some(p)) => out.possible.push(p),
            (None, None) if category != "Health" => out.personal_count += 1,
            _ => {}
        }
    }
    let medical_total: Cents = medical.iter().map(|t| t.amount).sum();
    if !medical.is_empty() {
        match ctx.annual_income {
            Some(income) => {
                let floor = income * MEDICAL_FLOOR_PCT / 1000;
                if medical_total > floor {
                    out.items.push(Deduction {
                        date: None,
                        merchant: format!("Medical expenses ({} purchases)", medical.len()),
                        category: "Health".into(),
                        amount: medical_total,
                        deductible: medical_total - floor,
                        share_pct: u8::try_from(money::percent(medical_total - floor, medical_total).round() as i64)
                            .unwrap_or(100),
                        reason: format!(
                            "medical costs above 7.5% of income ({} of {})",
                            money::format(floor, &currency),
                            money::format(income, &currency)
                        ),
                    });
                } else {
                    out.personal_count += medical.len();
                    out.assumptions.push(format!(
                        "Medical costs of {} stay under 7.5% of income ({}), so none are deductible.",
                        money::format(medical_total, &currency),
                        money::format(floor, &currency)
                    ));
                }
            }
            None => out.possible.extend(medical.iter().map(|t| {
                Deduction::new(
                    t,
                    "Health",
                    0,
                    "medical costs count only above 7.5% of your income; tell me your income",
                )
            })),
        }
    }
    if let Some(pct) = ctx.home_office_pct {
        out.assumptions.push(format!("Home office share: {pct}% of rent and utilities."));
    }
    out.assumptions.push(
        "Work expenses are deductible for the self-employed and businesses; employees usually cannot deduct them."
            .into(),
    );
    out
}

/// Ledger (`ledger-tax`): transactions in, a `deductions` artifact out.
pub(crate) struct LedgerTax;

#[async_trait]
impl Agent for LedgerTax {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let (found, period) = book::transactions_for(ctx, task).await?;
        if found.transactions.is_empty() {
            return Err(book::nothing_in(period.as_ref()));
        }
        let context_text = format!("{}\n{}", task.conversation_text(), task.facts.join("\n"));
        let tax = TaxContext::from_text(&context_text);
        let housing =
            found.transactions.iter().filter(|t| t.amount > 0 && matches!(category_of(t), "Rent" | "Utilities"));
        if tax.home_office && tax.home_office_pct.is_none() && housing.clone().next().is_some() {
            let names: Vec<&str> = housing.map(|t| t.merchant.as_str()).take(3).collect();
            return Err(needs_input(format!(
                "You mention a home office: what share of your home is it (by floor area)? I need it to count \
                 part of your rent and utilities ({}) as deductible, e.g. 'my home office is 15% of my apartment'.",
                names.join(", ")
            )));
        }
        let d = find_deductions(&found.transactions, &tax);
        if seeding::second(&SEEDS, task.seed) {
            let (d, questions) = strict::strict(d);
            let (summary, result, value) = strict::answer(&d, &questions, period.as_ref().map(|p| p.label.as_str()));
            let mut out = AgentOutput::new(summary, result)
                .with_artifact(Artifact::json("deductions", value))
                .with_confidence(90);
            out.requires_followup = !questions.is_empty();
            return Ok(out);
        }
        let fmt = |c: Cents| money::format(c, &d.currency);
        let noun = if d.items.len() == 1 { "item" } else { "items" };
        let mut summary = format!("Found {} in deductible expenses ({} {noun})", fmt(d.total()), d.items.len());
        if let Some(p) = &period {
            summary.push_str(&format!(" in {}", p.label));
        }
        if !d.possible.is_empty() {
            let possible: Cents = d.possible.iter().map(|p| p.amount).sum();
            summary.push_str(&format!("; {} more ({}) may qualify", d.possible.len(), fmt(possible)));
        }
        let describe = |x: &Deduction, amount: Cents| {
            let date = x.date.map(|d| format!("{} ", d.format("%Y-%m-%d"))).unwrap_or_default();
            format!("- {date}{} {}: {}", x.merchant, fmt(amount), x.reason)
        };
        let mut result = format!("Deductible ({}):\n", fmt(d.total()));
        result.push_str(&list_lines(d.items.iter().map(|x| describe(x, x.deductible))));
        if !d.possible.is_empty() {
            result.push_str("\nPossibly deductible:\n");
            result.push_str(&list_lines(d.possible.iter().map(|x| describe(x, x.amount))));
        }
        result.push_str(&format!("\n{} personal expenses are not deductible.", d.personal_count));
        for a in &d.assumptions {
            result.push_str(&format!("\nNote: {a}"));
        }
        let value = json!({
            "currency": d.currency,
            "total_deductible": money::to_value(d.total()),
            "items": d.items.iter().map(Deduction::to_json).collect::<Vec<_>>(),
            "possible": d.possible.iter().map(Deduction::to_json).collect::<Vec<_>>(),
            "personal_count": d.personal_count,
            "assumptions": d.assumptions,
        });
        Ok(AgentOutput::new(summary, result).with_artifact(Artifact::json("deductions", value)).with_confidence(80))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
#[path = "phrasings_ledger.rs"]
mod phrasings;

#[path = "ledger_strict.rs"]
mod strict;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorCode, HandoffData};

    async fn run(task: Task) -> Result<AgentOutput, DelegationError> {
        LedgerTax.run(&AgentContext::detached([TOOL]), &task).await
    }

    #[tokio::test]
    async fn ledger_finds_deductions_in_the_example_receipts() {
        let out = run(Task::new("Identify deductible expenses", include_str!("../../../examples/receipts.txt")))
            .await
            .expect("ok");
        assert_eq!(out.summary, "Found $244.48 in deductible expenses (2 items)");
        let items = &out.artifacts[0].value["items"];
        assert_eq!(items[0]["merchant"], "Staples");
        assert_eq!(items[0]["reason"], "office supplies used for work are a deductible business expense");
        assert_eq!(items[1]["merchant"], "Adobe Inc");
        assert_eq!(items[1]["reason"], "software and subscriptions used for work are a deductible business expense");
        assert_eq!(out.artifacts[0].value["personal_count"], 2);
    }

    #[tokio::test]
    async fn ledger_applies_home_office_business_meal_and_charity_rules() {
        let csv = "date,description,amount\n2025-10-01,Con Edison Electric,100.00\n2025-10-02,Olive Garden client dinner,80.00\n\
                   2025-10-03,Red Cross Donation,50.00\n2025-10-04,Whole Foods,60.00\n2025-10-05,Delta Air Lines,300.00";
        let task = Task::new("Identify deductible expenses; I have a home office (20% of my apartment)", csv);
        let out = run(task).await.expect("ok");
        let v = &out.artifacts[0].value;
        let deductible: Vec<(String, f64)> = v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                (i["reason"].as_str().unwrap_or_default().to_string(), i["deductible_amount"].as_f64().unwrap_or(0.0))
            })
            .collect();
        assert_eq!(deductible[0], ("home-office share (20%) of utilities".to_string(), 20.0));
        assert_eq!(deductible[1], ("business meal with a client: 50% deductible".to_string(), 40.0));
        assert!(deductible[2].0.starts_with("charitable donation"));
        assert_eq!(v["total_deductible"], json!(110.0));
        assert_eq!(v["possible"][0]["reason"], "travel is deductible only if the trip was for business");
        assert_eq!(out.summary, "Found $110.00 in deductible expenses (3 items); 1 more ($300.00) may qualify");
    }

    #[tokio::test]
    async fn ledger_counts_medical_costs_above_the_income_floor() {
        let lines = "2025-03-01 City Hospital $4,000.00\n2025-04-01 CVS Pharmacy $500.00";
        let out = run(Task::new("Deductions? My income is $50,000", lines)).await.expect("ok");
        let item = &out.artifacts[0].value["items"][0];
        assert_eq!(item["deductible_amount"], json!(750.0));
        assert_eq!(item["reason"], "medical costs above 7.5% of income ($3,750.00 of $50,000.00)");

        let out = run(Task::new("Deductions?", lines)).await.expect("ok");
        assert_eq!(out.artifacts[0].value["possible"].as_array().map(Vec::len), Some(2));
    }

    #[tokio::test]
    async fn ledger_uses_tag_categories_from_the_chain() {
        let mut task = Task::new("Identify deductible expenses", "");
        task.handoff = HandoffData {
            intermediate_results: Some(
                json!([{"agent": "tag-ai", "artifacts": [{"type": "json", "label": "transactions", "value": [
                {"merchant": "Corner Shop", "amount": 25.0, "category": "Office Supplies"},
                {"merchant": "Corner Shop", "amount": 5.0, "category": "Snacks"}]}]}]),
            ),
            ..HandoffData::default()
        };
        let out = run(task).await.expect("ok");
        assert_eq!(out.summary, "Found $25.00 in deductible expenses (1 item)");
    }

    #[tokio::test]
    async fn ledger_asks_for_transactions_and_refuses_without_its_tool() {
        assert_eq!(run(Task::new("taxes?", "")).await.expect_err("none").code, ErrorCode::NeedsInput);
        let err = LedgerTax.run(&AgentContext::detached(Vec::<String>::new()), &Task::new("x", "Staples 5.00")).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
