//! The Money view of the web page and `GET /v1/money` behind it: a user's
//! statement goes in through `POST /v1/chat` (Tag keeps and categorizes it in
//! the user's money records, in SQLite), and the page shows the totals by category,
//! a row per recent transaction, the two SVG charts and the goals; another
//! user's token never shows those rows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};
use switchboard::protocol::UserId;
use switchboard::store::{MoneyPlan, Store};

use super::ui::{self, ADMIN, ALICE, BOB, Cdp, PRIME, WAIT};

fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Cents spent in a `date,description,amount` statement (spending is negative there).
fn spent_in_statement(csv: &str) -> i64 {
    csv.lines()
        .skip(1)
        .filter_map(|l| l.rsplit(',').next())
        .map(|a| a.trim().replace('.', "").parse::<i64>().unwrap())
        .filter(|c| *c < 0)
        .map(|c| -c)
        .sum()
}

/// An amount in units as cents, exactly enough for two decimals.
fn cents(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("not an amount: {v}")) * 100.0).round() as i64
}

fn http() -> reqwest::Client {
    switchboard::util::install_tls();
    reqwest::Client::builder().no_proxy().timeout(WAIT).build().unwrap()
}

async fn chat(addr: &str, token: &str, message: &str, input: &str) -> Result<Value, String> {
    let reply = http()
        .post(format!("http://{addr}/v1/chat"))
        .bearer_auth(token)
        .json(&json!({ "message": message, "input": input }))
        .send()
        .await
        .map_err(|e| format!("POST /v1/chat: {e}"))?;
    let status = reply.status();
    let body: Value = reply.json().await.map_err(|e| format!("POST /v1/chat: {e}"))?;
    if !status.is_success() {
        return Err(format!("POST /v1/chat: {status}: {body}"));
    }
    Ok(body)
}

/// `GET path` with a token: the status and the body (JSON, or the text as a JSON string).
async fn get(addr: &str, token: Option<&str>, path: &str) -> (u16, Value, String) {
    let mut req = http().get(format!("http://{addr}{path}"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = r.status().as_u16();
    let content_type = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let text = r.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body, content_type)
}

const STATEMENT_MESSAGE: &str = "Categorize my transactions";
const BOB_RECEIPT: &str = "OFFICE DEPOT #123\n10/03/2026\nPrinter paper 81.03\nTOTAL $81.03";

fn merchants(money: &Value) -> Vec<String> {
    money["entries"].as_array().unwrap().iter().map(|e| e["merchant"].as_str().unwrap().to_string()).collect()
}

/// The page's Money view as data: totals, category rows, transaction rows, chart bars, goals.
const MONEY_JS: &str = "(() => {
  const rows = sel => [...document.querySelectorAll(sel)];
  const digits = t => t.replace(/[^0-9]/g, '');
  // still loading (the page still parsing, or still about:blank)
  if (document.readyState === 'loading' || !document.getElementById('money-who')) return null;
  return {
    who: document.getElementById('money-who').textContent,
    visible: !document.getElementById('money').hidden && !document.getElementById('money-body').hidden,
    spent: digits(document.querySelector('#money-totals [data-total=spent]')?.textContent ?? ''),
    categories: rows('#categories tr[data-category]').map(r => ({
      category: r.dataset.category, total: Number(r.dataset.total), count: Number(r.dataset.count),
      shown: digits(r.lastElementChild.textContent) })),
    transactions: rows('#transactions tr[data-entry-id]').map(r => ({
      id: r.dataset.entryId, merchant: r.dataset.merchant })),
    // as drawn (the page's CSS could override the attribute), in the chart's units
    category_bars: rows('#chart-category svg rect.bar').map(b => ({ label: b.dataset.label, height: b.getBBox().height })),
    month_bars: rows('#chart-month svg rect.bar').map(b => b.dataset.label),
    goals: rows('#goals [data-plan]').map(g => ({ plan: g.dataset.plan, percent: g.dataset.percent ?? null,
      text: g.textContent, bars: g.querySelectorAll('.bar i').length })),
    pick: !document.getElementById('money-pick').hidden,
  };
})()";

async fn open_money(cdp: &mut Cdp, addr: &str, token: &str) -> Result<(), String> {
    // a new document each time: the page reads its fragment when it loads
    cdp.call("Page.navigate", json!({ "url": "about:blank" })).await?;
    cdp.call("Page.navigate", json!({ "url": format!("http://{addr}/#token={token}&view=money") })).await?;
    Ok(())
}

async fn drive(h: &mut ui::Harness, addr: &str, chromium: &std::path::Path) -> Result<(), String> {
    let statement = example("statement.csv");
    chat(addr, ALICE, STATEMENT_MESSAGE, &statement).await?;
    // the receipt of a coffee already on the statement: Byte finds it kept, so no second row
    let again = chat(addr, ALICE, "Upload this receipt and categorize it", &example("receipt.txt")).await?;
    assert!(again["answer"].as_str().unwrap_or_default().contains("already in your records"), "{again}");
    chat(addr, BOB, "Upload this receipt and categorize it", BOB_RECEIPT).await?;

    // No agent keeps goals yet (the money tool's save_plan has no caller): write
    // two the way Goalie's progress reads, one of them without amounts.
    let store = switchboard::SqlStore::connect(&h.database_url).await.map_err(|e| e.to_string())?;
    let alice = UserId::parse("alice").unwrap();
    for (name, body) in [
        ("vacation", json!({"name": "Vacation", "target": 3000.0, "saved": 1200.0, "deadline": "2026-06"})),
        ("someday", json!({"note": "a boat, one day"})),
    ] {
        let plan = MoneyPlan { user_id: alice.clone(), kind: "goal".into(), name: name.into(), body, updated_at: 1 };
        store.put_money_plan(&crate::support::clean(plan.clone())).await.map_err(|e| e.to_string())?;
    }

    // What the money records hold, checked against the statement itself and Tag's own totals.
    let (status, money, _) = get(addr, Some(ALICE), "/v1/money").await;
    assert_eq!(status, 200, "{money}");
    let rows = statement.lines().count() - 1;
    assert_eq!(money["entries"].as_array().unwrap().len(), rows, "one row per statement line: {money}");
    assert_eq!(money["currency"], "USD");
    assert_eq!(cents(&money["totals"]["spent"]), spent_in_statement(&statement), "{}", money["totals"]);
    assert_eq!(cents(&money["totals"]["received"]), 3 * 320_000, "three paychecks");
    let by_category: BTreeMap<String, (i64, u64)> = money["by_category"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["category"].as_str().unwrap().to_string(), (cents(&c["total"]), c["count"].as_u64().unwrap())))
        .collect();
    // the totals Tag's answer names ("top: Rent ($4,350.00), Groceries ($468.08), Utilities ($264.28)")
    assert_eq!(by_category["Rent"], (435_000, 3), "{by_category:?}");
    assert_eq!(by_category["Groceries"], (46_808, 4), "{by_category:?}");
    assert_eq!(by_category["Utilities"], (26_428, 3), "{by_category:?}");
    assert!(!by_category.contains_key("Income"), "money received is not spending: {by_category:?}");
    let months: Vec<&str> =
        money["by_month"].as_array().unwrap().iter().map(|m| m["month"].as_str().unwrap()).collect();
    assert_eq!(months, ["2025-08", "2025-09", "2025-10"]);

    let mut cdp = ui::open_page(h, chromium).await?;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await?;
    open_money(&mut cdp, addr, ALICE).await?;
    let n_categories = by_category.len();
    let shown = cdp
        .wait_for("alice's Money view with both charts", MONEY_JS, |v| {
            v["visible"] == true
                && v["category_bars"].as_array().is_some_and(|b| b.len() == n_categories)
                && v["month_bars"].as_array().is_some_and(|b| b.len() == 3)
                && v["goals"].as_array().is_some_and(|g| g.len() == 2)
        })
        .await?;
    assert_eq!(shown["who"], "alice");
    assert_eq!(shown["pick"], false, "a user token needs no user picker");
    assert_eq!(shown["spent"], spent_in_statement(&statement).to_string(), "the total spent as shown: {shown}");
    // the category table: the API's totals, each shown as text too, largest first
    let table: Vec<(String, i64, u64)> = shown["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let total = cents(&c["total"]);
            assert_eq!(c["shown"], total.to_string(), "{c}");
            (c["category"].as_str().unwrap().to_string(), total, c["count"].as_u64().unwrap())
        })
        .collect();
    let expected: Vec<(String, i64, u64)> = money["by_category"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["category"].as_str().unwrap().to_string(), cents(&c["total"]), c["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(table, expected);
    assert_eq!(table[0].0, "Rent");
    // a row per recent transaction, in the API's order
    let ids: Vec<&Value> = shown["transactions"].as_array().unwrap().iter().map(|t| &t["id"]).collect();
    let api_ids: Vec<&Value> = money["entries"].as_array().unwrap().iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, api_ids);
    // the charts: a bar per category (in the table's order, the largest the tallest) and per month
    let bars = shown["category_bars"].as_array().unwrap();
    let labels: Vec<&str> = bars.iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert_eq!(labels, table.iter().map(|c| c.0.as_str()).collect::<Vec<_>>());
    let tallest = bars[0]["height"].as_f64().unwrap();
    assert!(tallest > 150.0, "the tallest bar fills most of the chart: {bars:?}");
    for (bar, (_, total, _)) in bars.iter().zip(&table) {
        let expected = tallest * *total as f64 / table[0].1 as f64;
        assert!((bar["height"].as_f64().unwrap() - expected).abs() < 0.05, "{bar} vs {expected}");
    }
    assert_eq!(shown["month_bars"], json!(["2025-08", "2025-09", "2025-10"]));
    // goals: a bar where target and saved are known, the plan alone where they are not
    let goals = shown["goals"].as_array().unwrap();
    let vacation = goals.iter().find(|g| g["plan"] == "vacation").ok_or(format!("no vacation goal: {shown}"))?;
    assert_eq!((&vacation["percent"], &vacation["bars"]), (&json!("40.0"), &json!(1)), "{vacation}");
    assert!(vacation["text"].as_str().unwrap().contains("Vacation"), "{vacation}");
    let someday = goals.iter().find(|g| g["plan"] == "someday").ok_or(format!("no someday goal: {shown}"))?;
    assert_eq!((&someday["percent"], &someday["bars"]), (&Value::Null, &json!(0)), "{someday}");

    // the picture, for people
    ui::screenshot(&mut cdp, "money").await?;

    // bob's token shows bob's receipt and none of alice's rows
    open_money(&mut cdp, addr, BOB).await?;
    let shown = cdp
        .wait_for("bob's Money view", MONEY_JS, |v| {
            v["who"] == "bob" && v["category_bars"].as_array().is_some_and(|b| b.len() == 1)
        })
        .await?;
    let theirs: Vec<&str> =
        shown["transactions"].as_array().unwrap().iter().map(|t| t["merchant"].as_str().unwrap()).collect();
    assert_eq!(theirs, ["Office Depot"], "{shown}");
    assert_eq!(shown["goals"], json!([]));

    // an admin picks the user
    open_money(&mut cdp, addr, ADMIN).await?;
    cdp.wait_for("the admin's user picker", MONEY_JS, |v| v["pick"] == true).await?;
    cdp.eval(
        "document.getElementById('money-user').value = 'alice'; document.getElementById('money-pick').requestSubmit()",
    )
    .await?;
    let shown = cdp
        .wait_for("alice's money records picked by the admin", MONEY_JS, |v| {
            // the charts come after the tables
            v["who"] == "alice"
                && v["transactions"].as_array().is_some_and(|t| t.len() == rows)
                && v["category_bars"].as_array().is_some_and(|b| b.len() == n_categories)
        })
        .await?;
    assert_eq!(shown["month_bars"], json!(["2025-08", "2025-09", "2025-10"]));
    assert!(cdp.page_errors.is_empty(), "the page reported errors: {:?}", cdp.page_errors);
    cdp.session = None;
    // The browser may close the connection before it answers.
    let _ = cdp.call("Browser.close", json!({})).await;
    Ok(())
}

#[tokio::test]
async fn money_view_shows_category_totals_recent_rows_two_charts_and_goals() {
    let Some(chromium) = ui::chromium_or_skip("the Money view test") else { return };
    let (mut h, addr) = ui::start_server(true).await.unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = drive(&mut h, &addr, &chromium).await {
        panic!("{e}\n{}", h.logs());
    }
    ui::close(h, None).await;
}

#[tokio::test]
async fn bobs_token_never_sees_alices_money() {
    let (h, addr) = ui::start_server(true).await.unwrap_or_else(|e| panic!("{e}"));
    let run = async {
        chat(&addr, ALICE, STATEMENT_MESSAGE, &example("statement.csv")).await?;
        chat(&addr, BOB, "Upload this receipt and categorize it", BOB_RECEIPT).await?;
        Ok::<_, String>(())
    };
    if let Err(e) = run.await {
        panic!("{e}\n{}", h.logs());
    }
    let (status, alices, _) = get(&addr, Some(ADMIN), "/v1/money?user=alice").await;
    assert_eq!(status, 200, "an admin names the user: {alices}");
    let alices = merchants(&alices);
    assert!(alices.len() > 20, "{alices:?}");

    let (status, bobs, _) = get(&addr, Some(BOB), "/v1/money").await;
    assert_eq!(status, 200, "{bobs}");
    assert_eq!(bobs["user"], "bob");
    assert_eq!(merchants(&bobs), ["Office Depot"]);
    assert!(merchants(&bobs).iter().all(|m| !alices.contains(m)));
    assert_eq!(cents(&bobs["totals"]["spent"]), 8103);
    let (status, own, _) = get(&addr, Some(BOB), "/v1/money?user=bob").await;
    assert_eq!((status, own["user"].clone()), (200, json!("bob")), "naming oneself is fine");
    let (status, old_name, _) = get(&addr, Some(BOB), "/v1/ledger").await;
    assert_eq!((status, &old_name), (200, &bobs), "the earlier path answers the same");

    // asking for alice's money records or chart with bob's token is refused, with nothing of hers in the answer
    for path in ["/v1/money?user=alice", "/v1/money/chart.svg?kind=category&user=alice", "/v1/ledger?user=alice"] {
        let (status, body, _) = get(&addr, Some(BOB), path).await;
        assert_eq!((status, &body["error"]["code"]), (403, &json!("USER_MISMATCH")), "{path}: {body}");
        assert!(alices.iter().all(|m| !body.to_string().contains(m.as_str())), "{body}");
    }
    // bob's chart: one bar, his
    let (status, svg, content_type) = get(&addr, Some(BOB), "/v1/money/chart.svg?kind=category").await;
    let svg = svg.as_str().unwrap_or_default().to_string();
    assert_eq!((status, content_type.as_str()), (200, "image/svg+xml; charset=utf-8"));
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), 1, "{svg}");
    assert!(!svg.contains("Rent"), "{svg}");

    // other callers and bad parameters: stable codes, no panics
    for (token, path, want) in [
        (Some(PRIME), "/v1/money?user=alice", (401, "UNAUTHENTICATED")),
        (Some(PRIME), "/v1/money", (401, "UNAUTHENTICATED")),
        (None, "/v1/money", (401, "UNAUTHENTICATED")),
        (Some(ADMIN), "/v1/money", (400, "INVALID_REQUEST")),
        (Some(ADMIN), "/v1/money?user=not%20a%20user", (400, "INVALID_REQUEST")),
        (Some(BOB), "/v1/money?user=%3Cscript%3E", (400, "INVALID_REQUEST")),
        (Some(BOB), "/v1/money/chart.svg?kind=pie", (400, "INVALID_REQUEST")),
        (Some(BOB), "/v1/money/chart.svg?kind=", (400, "INVALID_REQUEST")),
    ] {
        let (status, body, _) = get(&addr, token, path).await;
        assert_eq!((status, body["error"]["code"].as_str().unwrap_or_default()), want, "{path}: {body}");
    }
    ui::close(h, None).await;
}
