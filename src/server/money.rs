//! `GET /v1/money` and `GET /v1/money/chart.svg`: a user's money as the
//! web page and `switchboard ask --out` show it. [`summarize`] is the pure
//! part (integer cents throughout); the handlers only decide whose money the
//! caller may see and turn cents into currency units at the edge.
//!
//! Who sees what: a user token its own money (`?user=` naming someone else
//! is `USER_MISMATCH`); an admin token any user's, named by `?user=`; a
//! service token none (`UNAUTHENTICATED`, as at `/v1/chat`): agents reach a
//! money only through the runtime's money tools, for the user they work for.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::{Value, json};

use super::chart::{self, Bar};
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::protocol::{ErrorCode, IdError, UserId};
use crate::store::{MoneyEntry, MoneyPlan};

/// How many transactions the answer lists (the newest).
pub const RECENT: usize = 50;
/// How many months the month chart shows (the latest).
pub const MONTHS_SHOWN: usize = 12;
/// The category of a spending row no agent categorized.
pub const UNCATEGORIZED: &str = "Uncategorized";

/// Spending in one category, in the main currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryTotal {
    /// The category ([`UNCATEGORIZED`] for rows without one).
    pub category: String,
    /// Cents.
    pub total: i64,
    /// How many rows.
    pub count: usize,
}

/// Spending in one month (`YYYY-MM`), in the main currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthTotal {
    /// `YYYY-MM`.
    pub month: String,
    /// Cents.
    pub total: i64,
}

/// A money summed up: what the page and the CLI draw.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// The most common currency (ties: the first alphabetically); None for an empty money.
    pub currency: Option<String>,
    /// The newest [`RECENT`] rows, newest first (undated rows after dated ones), in any currency.
    pub recent: Vec<MoneyEntry>,
    /// Spending (positive amounts) in the main currency, largest first.
    pub by_category: Vec<CategoryTotal>,
    /// Spending of dated rows in the main currency, oldest month first.
    pub by_month: Vec<MonthTotal>,
    /// Cents spent (the positive amounts) in the main currency.
    pub spent: i64,
    /// Cents received (the negative amounts, as a positive sum) in the main currency.
    pub received: i64,
}

fn month_of(date: Option<&str>) -> Option<String> {
    let date = NaiveDate::parse_from_str(date?, "%Y-%m-%d").ok()?;
    Some(date.format("%Y-%m").to_string())
}

/// Sums a money up. Only rows in the main currency are summed (adding
/// dollars to euros means nothing); every row may be among the recent ones.
pub fn summarize(entries: &[MoneyEntry]) -> Summary {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for e in entries {
        *counts.entry(e.currency.as_str()).or_default() += 1;
    }
    // BTreeMap order makes the alphabetically first win a tie
    let currency = counts.iter().rev().max_by_key(|(_, n)| **n).map(|(c, _)| (*c).to_string());

    let mut by_category: HashMap<&str, CategoryTotal> = HashMap::new();
    let mut by_month: BTreeMap<String, i64> = BTreeMap::new();
    let (mut spent, mut received) = (0i64, 0i64);
    for e in entries.iter().filter(|e| Some(&e.currency) == currency.as_ref()) {
        if e.amount < 0 {
            received = received.saturating_add(e.amount.saturating_neg());
            continue;
        }
        if e.amount == 0 {
            continue;
        }
        spent = spent.saturating_add(e.amount);
        let name = e.category.as_deref().map(str::trim).filter(|c| !c.is_empty()).unwrap_or(UNCATEGORIZED);
        let c =
            by_category.entry(name).or_insert_with(|| CategoryTotal { category: name.to_string(), total: 0, count: 0 });
        c.total = c.total.saturating_add(e.amount);
        c.count += 1;
        if let Some(month) = month_of(e.date.as_deref()) {
            let m = by_month.entry(month).or_default();
            *m = m.saturating_add(e.amount);
        }
    }
    let mut by_category: Vec<CategoryTotal> = by_category.into_values().collect();
    by_category.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.category.cmp(&b.category)));

    let mut recent = entries.to_vec();
    // Option orders None first, so newest-first puts undated rows last
    recent.sort_by(|a, b| {
        b.date.cmp(&a.date).then_with(|| b.created_at.cmp(&a.created_at)).then_with(|| a.id.cmp(&b.id))
    });
    recent.truncate(RECENT);

    Summary {
        currency,
        recent,
        by_category,
        by_month: by_month.into_iter().map(|(month, total)| MonthTotal { month, total }).collect(),
        spent,
        received,
    }
}

/// Which chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// One bar per category, largest first.
    Category,
    /// One bar per month, the last [`MONTHS_SHOWN`].
    Month,
}

impl std::str::FromStr for ChartKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "category" => Ok(Self::Category),
            "month" => Ok(Self::Month),
            other => Err(format!("kind '{other}' is not a chart: use kind=category or kind=month")),
        }
    }
}

/// The chart of a summary as an SVG document.
pub fn chart_svg(summary: &Summary, kind: ChartKind) -> String {
    let currency = summary.currency.as_deref().unwrap_or("");
    let suffix = if currency.is_empty() { String::new() } else { format!(" ({currency})") };
    match kind {
        ChartKind::Category => {
            let bars: Vec<Bar> = summary.by_category.iter().map(|c| Bar::new(&c.category, c.total)).collect();
            chart::bar_chart(&format!("Spending by category{suffix}"), currency, &bars, "#1f6feb")
        }
        ChartKind::Month => {
            let skip = summary.by_month.len().saturating_sub(MONTHS_SHOWN);
            let bars: Vec<Bar> = summary.by_month[skip..].iter().map(|m| Bar::new(&m.month, m.total)).collect();
            chart::bar_chart(&format!("Spending by month{suffix}"), currency, &bars, "#1a7f37")
        }
    }
}

/// Cents as a JSON number in currency units (`8103` → `81.03`).
fn amount(cents: i64) -> Value {
    serde_json::Number::from_f64(cents as f64 / 100.0).map_or(Value::Null, Value::Number)
}

/// The answer of `GET /v1/money`.
pub fn to_json(user: &UserId, summary: &Summary, plans: &[MoneyPlan]) -> Value {
    let entries: Vec<Value> = summary
        .recent
        .iter()
        .map(|e| {
            json!({
                "id": e.id, "date": e.date, "merchant": e.merchant, "description": e.description,
                "amount": amount(e.amount), "currency": e.currency, "category": e.category,
                "confidence": e.confidence, "source": e.source, "note": e.note,
            })
        })
        .collect();
    json!({
        "user": user,
        "currency": summary.currency,
        "entries": entries,
        "by_category": summary.by_category.iter()
            .map(|c| json!({"category": c.category, "total": amount(c.total), "count": c.count}))
            .collect::<Vec<_>>(),
        "by_month": summary.by_month.iter()
            .map(|m| json!({"month": m.month, "total": amount(m.total)}))
            .collect::<Vec<_>>(),
        "plans": plans.iter()
            .map(|p| json!({"kind": p.kind, "name": p.name, "body": p.body, "updated_at": p.updated_at}))
            .collect::<Vec<_>>(),
        "totals": {"spent": amount(summary.spent), "received": amount(summary.received)},
    })
}

#[derive(Debug, Default, Deserialize)]
struct MoneyQuery {
    user: Option<String>,
    kind: Option<String>,
}

fn query(uri: &Uri) -> Result<MoneyQuery, ApiError> {
    Query::<MoneyQuery>::try_from_uri(uri)
        .map(|Query(q)| q)
        .map_err(|e| ApiError::invalid(format!("invalid query: {}", e.body_text())))
}

/// The user whose money `caller` asks for with `?user=asked`, if it may see it.
pub fn whose(caller: &Principal, asked: Option<&str>) -> Result<UserId, ApiError> {
    let asked = asked
        .map(|u| UserId::parse(u).map_err(|e: IdError| ApiError::invalid(format!("user: {}", e.0))))
        .transpose()?;
    match (caller, asked) {
        (Principal::Admin, Some(u)) => Ok(u),
        (Principal::Admin, None) => {
            Err(ApiError::invalid("an admin token names the user whose money to show: ?user=ID"))
        }
        (Principal::Agent(_), _) => Err(ApiError::unauthenticated(
            "a user's money takes that user's token or an admin's; agents reach it only through the runtime's \
             money tools",
        )),
        (p, asked) => {
            let own = p.user().ok_or_else(|| ApiError::unauthenticated("this token names no user"))?;
            match asked {
                Some(u) if &u != own => Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    ErrorCode::UserMismatch,
                    format!("a user token shows only its own money ('{own}'), not '{u}'s"),
                )),
                _ => Ok(own.clone()),
            }
        }
    }
}

async fn load(state: &AppState, user: &UserId) -> Result<(Summary, Vec<MoneyPlan>), ApiError> {
    let store = state.runtime.store();
    let entries = store.money(user).await.map_err(crate::DelegationError::from)?;
    let plans = store.money_plans(user).await.map_err(crate::DelegationError::from)?;
    Ok((summarize(&entries), plans))
}

/// `GET /v1/money[?user=ID]`.
pub async fn money(State(state): State<Arc<AppState>>, caller: Principal, uri: Uri) -> Result<Json<Value>, ApiError> {
    let q = query(&uri)?;
    let user = whose(&caller, q.user.as_deref())?;
    let (summary, plans) = load(&state, &user).await?;
    Ok(Json(to_json(&user, &summary, &plans)))
}

/// `GET /v1/money/chart.svg?kind=category|month[&user=ID]`: `image/svg+xml`.
pub async fn chart(State(state): State<Arc<AppState>>, caller: Principal, uri: Uri) -> Result<Response, ApiError> {
    let q = query(&uri)?;
    let kind: ChartKind = q.kind.as_deref().unwrap_or("category").parse().map_err(ApiError::invalid)?;
    let user = whose(&caller, q.user.as_deref())?;
    let (summary, _) = load(&state, &user).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        chart_svg(&summary, kind),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(date: Option<&str>, merchant: &str, cents: i64, currency: &str, category: Option<&str>) -> MoneyEntry {
        let alice = UserId::parse("alice").unwrap();
        MoneyEntry {
            id: crate::store::entry_id(&alice, date, merchant, cents, currency, 0),
            user_id: alice,
            date: date.map(str::to_string),
            merchant: merchant.into(),
            description: merchant.into(),
            amount: cents,
            currency: currency.into(),
            category: category.map(str::to_string),
            confidence: Some(90),
            source: "test".into(),
            note: None,
            request_id: None,
            created_at: 1,
            updated_at: 1,
        }
    }

    fn money() -> Vec<MoneyEntry> {
        vec![
            entry(Some("2025-08-01"), "Rent", 145_000, "USD", Some("Rent")),
            entry(Some("2025-08-01"), "Payroll", -320_000, "USD", Some("Income")),
            entry(Some("2025-08-05"), "Starbucks", 645, "USD", Some("Dining - Coffee")),
            entry(Some("2025-09-07"), "Starbucks", 710, "USD", Some("Dining - Coffee")),
            entry(Some("2025-09-10"), "Staples", 4215, "USD", None),
            entry(None, "Corner shop", 300, "USD", Some("  ")),
            entry(Some("2025-09-11"), "Café Paris", 1250, "EUR", Some("Dining - Coffee")),
            entry(Some("2025-09-12"), "Refund", -999, "USD", Some("Shopping")),
            entry(Some("2025-13-40"), "Odd date", 1, "USD", Some("Misc")),
        ]
    }

    #[test]
    fn sums_are_integer_cents_over_positive_amounts_in_the_main_currency() {
        let s = summarize(&money());
        assert_eq!(s.currency.as_deref(), Some("USD"));
        let cats: Vec<(&str, i64, usize)> =
            s.by_category.iter().map(|c| (c.category.as_str(), c.total, c.count)).collect();
        assert_eq!(
            cats,
            [("Rent", 145_000, 1), ("Uncategorized", 4515, 2), ("Dining - Coffee", 1355, 2), ("Misc", 1, 1)],
            "the euro coffee, the payroll and the refund are not spending in dollars"
        );
        let months: Vec<(&str, i64)> = s.by_month.iter().map(|m| (m.month.as_str(), m.total)).collect();
        assert_eq!(months, [("2025-08", 145_645), ("2025-09", 4925)], "undated and malformed dates have no month");
        assert_eq!((s.spent, s.received), (150_871, 320_999));
        assert_eq!(s.spent, s.by_category.iter().map(|c| c.total).sum::<i64>());
    }

    #[test]
    fn recent_rows_are_the_newest_fifty_newest_first_undated_last() {
        let s = summarize(&money());
        let dates: Vec<Option<&str>> = s.recent.iter().map(|e| e.date.as_deref()).collect();
        assert_eq!(dates.first(), Some(&Some("2025-13-40")), "plain text order for a date that is not one");
        assert_eq!(dates[1], Some("2025-09-12"));
        assert_eq!(dates.last(), Some(&None));
        let many: Vec<MoneyEntry> = (0..80)
            .map(|i| entry(Some(&format!("2025-{:02}-{:02}", 1 + i / 28, 1 + i % 28)), "Shop", 100 + i, "USD", None))
            .collect();
        let s = summarize(&many);
        assert_eq!(s.recent.len(), RECENT);
        assert_eq!(s.recent[0].amount, 179);
        assert_eq!(s.spent, (100..180).sum::<i64>(), "every row is summed, not only the recent ones");
    }

    #[test]
    fn the_main_currency_is_the_most_common_and_a_tie_goes_to_the_first_alphabetically() {
        let two = [entry(None, "a", 1, "USD", None), entry(None, "b", 2, "EUR", None)];
        assert_eq!(summarize(&two).currency.as_deref(), Some("EUR"));
        let empty = summarize(&[]);
        assert_eq!((empty.currency, empty.spent, empty.by_category.len()), (None, 0, 0));
    }

    #[test]
    fn huge_amounts_saturate_instead_of_overflowing() {
        let s = summarize(&[entry(None, "a", i64::MAX, "USD", None), entry(None, "b", i64::MAX, "USD", None)]);
        assert_eq!(s.spent, i64::MAX);
        let s = summarize(&[entry(None, "a", i64::MIN, "USD", None)]);
        assert_eq!(s.received, i64::MAX);
    }

    #[test]
    fn the_json_has_amounts_in_units_and_plans_as_kept() {
        let plan = MoneyPlan {
            user_id: UserId::parse("alice").unwrap(),
            kind: "goal".into(),
            name: "vacation".into(),
            body: json!({"target": 3000.0, "saved": 1200.0}),
            updated_at: 5,
        };
        let v = to_json(&UserId::parse("alice").unwrap(), &summarize(&money()), &[plan]);
        assert_eq!(v["user"], "alice");
        assert_eq!(v["currency"], "USD");
        assert_eq!(v["totals"], json!({"spent": 1508.71, "received": 3209.99}));
        assert_eq!(v["by_category"][0], json!({"category": "Rent", "total": 1450.0, "count": 1}));
        assert_eq!(v["by_month"][1], json!({"month": "2025-09", "total": 49.25}));
        assert_eq!(v["entries"].as_array().unwrap().len(), 9);
        assert_eq!(v["entries"][1]["amount"], json!(-9.99));
        assert_eq!(v["plans"][0]["body"]["saved"], json!(1200.0));
    }

    #[test]
    fn the_charts_have_a_bar_per_category_and_per_recent_month() {
        let s = summarize(&money());
        assert_eq!(chart_svg(&s, ChartKind::Category).matches("<rect class=\"bar\"").count(), 4);
        assert_eq!(chart_svg(&s, ChartKind::Month).matches("<rect class=\"bar\"").count(), 2);
        let years: Vec<MoneyEntry> = (0..30)
            .map(|i| entry(Some(&format!("{}-{:02}-01", 2023 + i / 12, 1 + i % 12)), "x", 100, "USD", None))
            .collect();
        let svg = chart_svg(&summarize(&years), ChartKind::Month);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), MONTHS_SHOWN);
        assert!(svg.contains("data-label=\"2025-06\"") && !svg.contains("data-label=\"2024-06\""), "the latest months");
        assert_eq!(
            "pie".parse::<ChartKind>().unwrap_err(),
            "kind 'pie' is not a chart: use kind=category or kind=month"
        );
    }

    #[test]
    fn who_sees_whose_money() {
        let (alice, bob) = (UserId::parse("alice").unwrap(), UserId::parse("bob").unwrap());
        let as_alice = Principal::User(alice.clone());
        assert_eq!(whose(&as_alice, None).unwrap(), alice);
        assert_eq!(whose(&as_alice, Some("alice")).unwrap(), alice);
        let e = whose(&as_alice, Some("bob")).unwrap_err();
        assert_eq!((e.status, e.error.code), (StatusCode::FORBIDDEN, ErrorCode::UserMismatch));
        assert_eq!(whose(&Principal::Anonymous(bob.clone()), None).unwrap(), bob);
        assert_eq!(whose(&Principal::Admin, Some("bob")).unwrap(), bob);
        let e = whose(&Principal::Admin, None).unwrap_err();
        assert_eq!((e.status, e.error.code), (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest));
        let e = whose(&Principal::Admin, Some("bob smith")).unwrap_err();
        assert_eq!((e.status, e.error.code), (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest));
        let agent = Principal::Agent(crate::protocol::AgentSlug::parse("tag-ai").unwrap());
        let e = whose(&agent, Some("alice")).unwrap_err();
        assert_eq!((e.status, e.error.code), (StatusCode::UNAUTHORIZED, ErrorCode::Unauthenticated));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

        #[test]
        fn both_charts_of_any_money_records_are_well_formed_xml(
            categories in proptest::collection::vec(chart::tests::awkward_text(), 1..6),
            currency in chart::tests::awkward_text(),
        ) {
            let rows: Vec<MoneyEntry> = categories
                .iter()
                .zip(1..)
                .map(|(c, i)| entry(Some(&format!("2025-{:02}-01", 1 + i % 12)), "Shop", 100 * i, &currency, Some(c)))
                .collect();
            let summary = summarize(&rows);
            let svg = chart_svg(&summary, ChartKind::Category);
            let drawn = chart::tests::labels_of(&chart::tests::parse(&svg)?);
            let want: Vec<String> = summary.by_category.iter().map(|c| chart::tests::kept(&c.category)).collect();
            proptest::prop_assert_eq!(drawn, want);
            chart::tests::parse(&chart_svg(&summary, ChartKind::Month))?;
        }
    }
}
