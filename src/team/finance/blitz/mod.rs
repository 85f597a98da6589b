//! Blitz: debt payoff plans, simulated month by month with the avalanche
//! (highest APR first) or snowball (smallest balance first) strategy.
//!
//! Seeds: when the user names no strategy, avalanche (the least interest),
//! then snowball (quick wins: the smallest debt is gone first). A named
//! strategy always wins.

use async_trait::async_trait;
use serde_json::{Value, json};

mod kept;
mod parse;

pub(crate) use parse::parse_request;

use super::money::{self, Cents};
use super::reply::list_lines;
use super::seeding;
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, ErrorCode, NewFact};

pub(crate) const TOOL: &str = "plan_debt";
/// Avalanche by default, then snowball by default.
pub(crate) const SEEDS: [u64; 2] = [360_482, 715_939];
/// The note of a plan whose strategy the seed chose.
const QUICK_WINS: &str =
    "Strategy: snowball, as you named none: the smallest debt is paid off first, for a quick win that keeps you going.";
/// Fifty years; a plan that takes longer is treated as never finishing.
pub(crate) const MAX_MONTHS: u32 = 600;
const MAX_BALANCE: Cents = 1_000_000_000_000_000;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Debt {
    pub name: String,
    pub balance: Cents,
    /// Hundredths of a percent: 19.99% is 1999.
    pub apr_bp: i64,
    pub minimum: Cents,
}

impl Debt {
    fn monthly_interest(&self, balance: Cents) -> Cents {
        money::div_round(i128::from(balance) * i128::from(self.apr_bp), 120_000) as Cents
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    Avalanche,
    Snowball,
}

impl Strategy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Avalanche => "avalanche",
            Self::Snowball => "snowball",
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Avalanche => Self::Snowball,
            Self::Snowball => Self::Avalanche,
        }
    }

    /// Indices of `debts` in the order extra money goes to them.
    fn order(self, debts: &[Debt]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..debts.len()).collect();
        match self {
            Self::Avalanche => idx
                .sort_by(|&a, &b| debts[b].apr_bp.cmp(&debts[a].apr_bp).then(debts[a].balance.cmp(&debts[b].balance))),
            Self::Snowball => idx
                .sort_by(|&a, &b| debts[a].balance.cmp(&debts[b].balance).then(debts[b].apr_bp.cmp(&debts[a].apr_bp))),
        }
        idx
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Payoff {
    pub name: String,
    pub month: u32,
    pub interest: Cents,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub strategy: Strategy,
    /// What goes to the debts each month: the minimums plus the extra.
    pub monthly_payment: Cents,
    /// None when the debts are not paid off within [`MAX_MONTHS`].
    pub months: Option<u32>,
    pub total_interest: Cents,
    pub total_paid: Cents,
    pub payoff_order: Vec<Payoff>,
}

/// Simulates paying `monthly_payment` every month: interest accrues, every
/// debt gets its minimum, and the rest (including the minimums of debts
/// already paid off) goes to the first unpaid debt in the strategy's order.
pub(crate) fn simulate(debts: &[Debt], monthly_payment: Cents, strategy: Strategy) -> Plan {
    let order = strategy.order(debts);
    let mut balances: Vec<Cents> = debts.iter().map(|d| d.balance.max(0)).collect();
    let mut interest: Vec<Cents> = vec![0; debts.len()];
    let mut paid_month: Vec<Option<u32>> = balances.iter().map(|b| (*b == 0).then_some(0)).collect();
    let (mut total_paid, mut months) = (0, None);
    for month in 1..=MAX_MONTHS {
        if balances.iter().all(|b| *b == 0) {
            break;
        }
        for (i, d) in debts.iter().enumerate() {
            let accrued = d.monthly_interest(balances[i]);
            balances[i] += accrued;
            interest[i] += accrued;
        }
        // A balance this large only comes from runaway interest: never paid off.
        if balances.iter().any(|b| *b > MAX_BALANCE) {
            break;
        }
        let mut available = monthly_payment;
        for (i, d) in debts.iter().enumerate() {
            let pay = d.minimum.min(balances[i]).min(available);
            balances[i] -= pay;
            available -= pay;
        }
        for &i in &order {
            let pay = balances[i].min(available);
            balances[i] -= pay;
            available -= pay;
        }
        total_paid += monthly_payment - available;
        for (i, b) in balances.iter().enumerate() {
            if *b == 0 && paid_month[i].is_none() {
                paid_month[i] = Some(month);
            }
        }
        if balances.iter().all(|b| *b == 0) {
            months = Some(month);
            break;
        }
    }
    if debts.iter().all(|d| d.balance <= 0) {
        months = Some(0);
    }
    let mut payoff_order: Vec<Payoff> = debts
        .iter()
        .enumerate()
        .filter_map(|(i, d)| paid_month[i].map(|month| Payoff { name: d.name.clone(), month, interest: interest[i] }))
        .collect();
    payoff_order.sort_by_key(|p| p.month);
    Plan { strategy, monthly_payment, months, total_interest: interest.iter().sum(), total_paid, payoff_order }
}

fn plan_json(plan: &Plan) -> Value {
    json!({
        "strategy": plan.strategy.name(),
        "monthly_payment": money::to_value(plan.monthly_payment),
        "months_to_debt_free": plan.months,
        "total_interest": money::to_value(plan.total_interest),
        "total_paid": money::to_value(plan.total_paid),
        "payoff_order": plan.payoff_order.iter().map(|p| json!({
            "name": p.name, "month": p.month, "interest_paid": money::to_value(p.interest),
        })).collect::<Vec<_>>(),
    })
}

/// Blitz (`blitz-debt`): debts in text in, a `payoff_plan` artifact out.
pub(crate) struct BlitzDebt;

#[async_trait]
impl Agent for BlitzDebt {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let text = task.conversation_text();
        let currency = money::detect_currency(&text).unwrap_or("USD");
        // what the text does not say is asked, never assumed; debts listed
        // before are kept, and used when this message lists none
        let mut kept_notes = Vec::new();
        let mut req = match parse_request(&text) {
            Ok(req) => {
                kept::save(ctx, &req.debts, currency).await?;
                req
            }
            Err(e) if e.code == ErrorCode::NeedsInput => match kept::recall(ctx).await? {
                Some((lines, notes)) => {
                    kept_notes = notes;
                    parse_request(&format!("{lines}\n{text}"))?
                }
                None => return Err(e),
            },
            Err(e) => return Err(e),
        };
        let lower = text.to_lowercase();
        let quick_wins =
            seeding::second(&SEEDS, task.seed) && !lower.contains("snowball") && !lower.contains("avalanche");
        if quick_wins {
            req.strategy = Strategy::Snowball;
        }
        let fmt = |c: Cents| money::format(c, currency);
        let minimums: Cents = req.debts.iter().map(|d| d.minimum).sum();
        if let Some(budget) = req.budget {
            req.extra = budget - minimums;
        }
        let first_interest: Cents = req.debts.iter().map(|d| d.monthly_interest(d.balance)).sum();
        for d in &req.debts {
            let accrued = d.monthly_interest(d.balance);
            if d.minimum <= accrued {
                req.warnings.push(format!(
                    "The minimum on {} ({}) does not cover its monthly interest ({}).",
                    d.name,
                    fmt(d.minimum),
                    fmt(accrued)
                ));
            }
        }
        let payment = minimums + req.extra.max(0);
        let debts_json: Vec<Value> = req
            .debts
            .iter()
            .map(|d| {
                json!({"name": d.name, "balance": money::to_value(d.balance), "apr": d.apr_bp as f64 / 100.0,
                       "minimum": money::to_value(d.minimum)})
            })
            .collect();
        let impossible = if req.extra < 0 {
            Some(format!(
                "Impossible plan: a budget of {}/month is below the minimum payments ({}/month); it needs at least {} more.",
                fmt(minimums + req.extra),
                fmt(minimums),
                fmt(-req.extra)
            ))
        } else if payment <= first_interest {
            Some(format!(
                "Impossible plan: payments of {}/month don't cover the {} of interest charged each month, so the debt grows; \
                 pay at least {} more per month.",
                fmt(payment),
                fmt(first_interest),
                fmt(first_interest - payment + 1)
            ))
        } else {
            None
        };
        let chosen = simulate(&req.debts, payment, req.strategy);
        let other = simulate(&req.debts, payment, req.strategy.other());
        let impossible = impossible.or_else(|| {
            chosen.months.is_none().then(|| {
                format!(
                    "Impossible plan: at {}/month the debts are not paid off within {} years; pay more each month.",
                    fmt(payment),
                    MAX_MONTHS / 12
                )
            })
        });
        let mut value = json!({
            "strategy": req.strategy.name(),
            "feasible": impossible.is_none(),
            "extra_monthly": money::to_value(req.extra.max(0)),
            "debts": debts_json,
            "warnings": req.warnings,
        });
        if let (Some(obj), Value::Object(plan)) = (value.as_object_mut(), plan_json(&chosen)) {
            obj.extend(plan);
            obj.insert("comparison".into(), plan_json(&other));
        }
        if let Some(message) = impossible {
            let mut out = AgentOutput::new(
                message.clone(),
                format!("{message}\n{}", req.warnings.join("\n")).trim_end().to_string(),
            )
            .with_artifact(Artifact::json("payoff_plan", value))
            .with_confidence(90);
            out.requires_followup = true;
            return Ok(out);
        }
        let months = chosen.months.unwrap_or(MAX_MONTHS);
        let first = chosen.payoff_order.first().map_or("", |p| p.name.as_str());
        let title = |s: Strategy| {
            let n = s.name();
            format!("{}{}", n[..1].to_uppercase(), &n[1..])
        };
        let mut summary = format!(
            "{} plan: debt-free in {months} months paying {}/month, {} total interest; {first} is paid off first",
            title(req.strategy),
            fmt(payment),
            fmt(chosen.total_interest)
        );
        let diff = other.total_interest - chosen.total_interest;
        let other_months = other.months.unwrap_or(MAX_MONTHS);
        let comparison = match diff {
            0 if other_months == months => {
                format!("; {} gives the same result", other.strategy.name())
            }
            0 => format!("; {} would take {other_months} months with the same interest", other.strategy.name()),
            d => format!(
                "; {} would take {other_months} months and cost {} {} in interest",
                other.strategy.name(),
                fmt(d.abs()),
                if d > 0 { "more" } else { "less" }
            ),
        };
        summary.push_str(&comparison);
        let mut result = format!("Payoff order ({}):\n", req.strategy.name());
        result.push_str(&list_lines(
            chosen
                .payoff_order
                .iter()
                .map(|p| format!("- month {}: {} paid off ({} interest)", p.month, p.name, fmt(p.interest))),
        ));
        result.push_str(&format!(
            "\nTotal paid {} over {months} months, of which {} interest.",
            fmt(chosen.total_paid),
            fmt(chosen.total_interest)
        ));
        for w in &req.warnings {
            result.push_str(&format!("\nNote: {w}"));
        }
        for n in &kept_notes {
            result.push_str(&format!("\n{n}"));
        }
        if quick_wins {
            result.push_str(&format!("\n{QUICK_WINS}"));
        }
        Ok(AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("payoff_plan", value))
            .with_confidence(if req.warnings.is_empty() { 95 } else { 80 })
            .with_fact(NewFact::new(format!(
                "User is paying down {} debts with the {} method ({}/month)",
                req.debts.len(),
                req.strategy.name(),
                fmt(payment)
            ))))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    const DEBTS: &str = "Student loan: $900 at 4% APR, minimum $30\nVisa: $3,000 at 24% APR, minimum $90\nI can pay an extra $300/month";

    async fn run(input: &str) -> Result<AgentOutput, DelegationError> {
        BlitzDebt.run(&AgentContext::detached([TOOL]), &Task::new("Plan my debt payoff", input)).await
    }

    #[test]
    fn blitz_parses_debts_and_extra() {
        let req = parse_request(
            "Car loan balance 12000, 6.5% interest, min payment 250\nVisa $5,000 19.99% $150 min\nextra $300/month",
        )
        .expect("every field given");
        assert_eq!(
            req.debts,
            vec![
                Debt { name: "Car loan".into(), balance: 1_200_000, apr_bp: 650, minimum: 25_000 },
                Debt { name: "Visa".into(), balance: 500_000, apr_bp: 1999, minimum: 15_000 },
            ]
        );
        assert_eq!((req.extra, req.strategy), (30_000, Strategy::Avalanche));
        assert!(req.warnings.is_empty());
    }

    #[test]
    fn blitz_simulation_pays_off_a_single_debt_exactly() {
        // $1,000 at 12% APR paying $100/month: ten payments leave $58.40, the
        // eleventh is $58.98 with its interest.
        let debts = [Debt { name: "Card".into(), balance: 100_000, apr_bp: 1200, minimum: 10_000 }];
        let plan = simulate(&debts, 10_000, Strategy::Avalanche);
        assert_eq!(plan.months, Some(11));
        assert_eq!(plan.total_interest, 5_898);
        assert_eq!(plan.total_paid, 105_898);
    }

    #[tokio::test]
    async fn blitz_avalanche_beats_snowball_when_orders_differ() {
        let out = run(DEBTS).await.expect("ok");
        let v = &out.artifacts[0].value;
        assert_eq!(v["strategy"], "avalanche");
        assert_eq!(v["payoff_order"][0]["name"], "Visa");
        assert_eq!(v["comparison"]["payoff_order"][0]["name"], "Student loan");
        let (avalanche, snowball) =
            (v["total_interest"].as_f64().unwrap_or(0.0), v["comparison"]["total_interest"].as_f64().unwrap_or(0.0));
        assert_eq!((avalanche, snowball), (316.21, 423.83));
        assert_eq!(
            out.summary,
            "Avalanche plan: debt-free in 11 months paying $420.00/month, $316.21 total interest; Visa is paid off first; \
             snowball would take 11 months and cost $107.62 more in interest"
        );

        let out = run(&format!("{DEBTS}\nUse the snowball method")).await.expect("ok");
        assert_eq!(out.artifacts[0].value["strategy"], "snowball");
        assert_eq!(out.artifacts[0].value["payoff_order"][0]["name"], "Student loan");
        assert!(
            out.summary.contains("avalanche would take") && out.summary.contains("less in interest"),
            "{}",
            out.summary
        );
    }

    #[tokio::test]
    async fn blitz_detects_payments_that_do_not_cover_interest() {
        let out = run("Card: $20,000 at 29.99% APR, minimum $100").await.expect("ok");
        assert!(
            out.summary.starts_with("Impossible plan: payments of $100.00/month don't cover the $499.83 of interest"),
            "{}",
            out.summary
        );
        assert_eq!(out.artifacts[0].value["feasible"], json!(false));
        assert!(out.requires_followup);

        let out = run("Card: $2,000 at 20% APR, minimum $100\nLoan: $5,000 at 5%, min $200\nMy budget is $250 a month")
            .await
            .expect("ok");
        assert!(
            out.summary.starts_with(
                "Impossible plan: a budget of $250.00/month is below the minimum payments ($300.00/month)"
            ),
            "{}",
            out.summary
        );
    }

    #[tokio::test]
    async fn blitz_fails_on_garbage_and_without_its_tool() {
        let err = run("I feel broke").await.expect_err("no debts");
        assert_eq!(err.code, ErrorCode::NeedsInput);
        let err = BlitzDebt.run(&AgentContext::detached(["track_goals"]), &Task::new("x", DEBTS)).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
