//! The page's history and Insights views in headless Chromium (issue 46):
//! a user who asked things before opening the page finds them listed from
//! the store, opens one into its tree, rates it; the Insights view shows
//! the agent graph, top agents, failures by code, tokens over time and the
//! rated-down answers, each number checked against one recomputed here from
//! the stored trees (not from the analytics). A screenshot of the Insights
//! view is kept in target/test-artifacts/insights.png.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use switchboard::protocol::UserId;
use switchboard::store::{DelegationRecord, HistoryQuery, Store, Thumb};

use super::ui::{self, ADMIN, ALICE, BOB, Cdp, PRIME};

fn http() -> reqwest::Client {
    switchboard::util::install_tls();
    reqwest::Client::builder().no_proxy().timeout(ui::WAIT).build().unwrap()
}

async fn post(addr: &str, token: &str, path: &str, body: Value) -> Result<Value, String> {
    let r = http().post(format!("http://{addr}{path}")).bearer_auth(token).json(&body).send().await;
    let r = r.map_err(|e| format!("POST {path}: {e}"))?;
    r.json().await.map_err(|e| format!("POST {path}: {e}"))
}

/// What the page's two views show, as data.
const VIEW_JS: &str = "(() => {
  const all = sel => [...document.querySelectorAll(sel)];
  // the page still parsing (its later elements not there yet), or still about:blank
  if (document.readyState === 'loading' || !document.getElementById('history-list')) return null;
  return {
    history: all('#history-list [data-root-id]').map(r => ({ id: r.dataset.rootId, rating: r.dataset.rating ?? null })),
    no_trees_shown: !document.getElementById('no-trees').hidden,
    trees: all('#trees > [data-root-id]').map(t => ({ id: t.dataset.rootId,
      nodes: t.querySelectorAll('[data-request-id]').length, rate: !!t.querySelector('.rate-down'),
      rated: t.querySelector('.rate')?.dataset.rating ?? null })),
    insights: !document.getElementById('insights-body').hidden && !document.getElementById('insights').hidden,
    nodes: Object.fromEntries(all('#graph .gnode').map(n => [n.dataset.agent, Number(n.dataset.calls)])),
    node_radius: Object.fromEntries(all('#graph .gnode').map(n => [n.dataset.agent, Number(n.querySelector('circle').getAttribute('r'))])),
    edges: all('#graph .gedge').map(e => ({ origin: e.dataset.origin, target: e.dataset.target,
      calls: Number(e.dataset.calls), failure_rate: Number(e.dataset.failureRate),
      width: Number(e.getAttribute('stroke-width')), color: e.getAttribute('stroke') })),
    top: all('#top-agents tr[data-agent]').map(r => [r.dataset.agent, Number(r.dataset.calls)]),
    failures: all('#failures tr[data-code]').map(r => [r.dataset.code, r.dataset.agent, Number(r.dataset.total)]),
    tokens: all('#tokens-chart rect.tbar').reduce((s, b) => s + Number(b.dataset.tokens), 0),
    total_tokens: Number(document.querySelector('#insights-totals [data-total=tokens]')?.textContent ?? -1),
    total_trees: Number(document.querySelector('#insights-totals [data-total=trees]')?.textContent ?? -1),
    lowest: all('#lowest [data-root-id]').map(l => l.dataset.rootId),
    users: all('#insight-users tr[data-user]').map(r => r.dataset.user),
  };
})()";

/// The numbers recomputed from the stored trees of `roots`.
struct Expected {
    agents: BTreeMap<String, u64>,
    edges: BTreeMap<(String, String), (u64, u64)>,
    failures: BTreeMap<(String, String), u64>,
    tokens: u64,
}

fn expected(trees: &[Vec<DelegationRecord>]) -> Expected {
    let mut e = Expected { agents: BTreeMap::new(), edges: BTreeMap::new(), failures: BTreeMap::new(), tokens: 0 };
    for tree in trees {
        for n in tree {
            *e.agents.entry(n.target.clone()).or_default() += 1;
            let edge = e.edges.entry((n.origin.clone(), n.target.clone())).or_default();
            edge.0 += 1;
            if n.status == "failed" || n.status == "refused" {
                edge.1 += 1;
            }
            if let Some(code) = &n.error_code {
                *e.failures.entry((code.clone(), n.target.clone())).or_default() += 1;
            }
            if n.request_id == n.root_id {
                e.tokens += u64::from(n.tokens.total);
            }
        }
    }
    e
}

async fn open(cdp: &mut Cdp, addr: &str, token: &str, view: &str) -> Result<(), String> {
    cdp.call("Page.navigate", json!({ "url": "about:blank" })).await?;
    cdp.call("Page.navigate", json!({ "url": format!("http://{addr}/#token={token}&view={view}") })).await?;
    Ok(())
}

async fn drive(h: &mut ui::Harness, addr: &str, chromium: &std::path::Path) -> Result<(), String> {
    let receipt = "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25";
    let mut roots = Vec::new();
    for (token, message, input) in [
        (ALICE, "Upload this receipt and categorize it", receipt),
        (ALICE, "Categorize my transactions", "2025-10-01 Starbucks 4.50\n2025-10-02 Shell 40.00"),
        (ALICE, "Upload this receipt and categorize it", "OFFICE DEPOT\n10/03/2026\nPaper 81.03\nTOTAL $81.03"),
        (BOB, "Upload this receipt and categorize it", receipt),
    ] {
        let r = post(addr, token, "/v1/chat", json!({ "message": message, "input": input })).await?;
        roots.push(r["request_id"].as_str().ok_or(format!("no request_id: {r}"))?.to_string());
    }
    // a refusal: prime-boss asks an agent that does not exist, for alice
    let id = uuid::Uuid::new_v4().to_string();
    let refused = http()
        .post(format!("http://{addr}/v1/delegate"))
        .bearer_auth(PRIME)
        .header("x-agent-request-id", &id)
        .header("x-agent-origin", "prime-boss")
        .json(&json!({ "request_id": id, "origin_employee": "prime-boss", "target_employee": "nobody-here",
            "user_id": "alice", "objective": "Find nobody", "input": "x" }))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(refused.status().as_u16(), 404);
    let rated =
        post(addr, ALICE, &format!("/v1/trees/{}/rating", roots[0]), json!({"rating": "down", "comment": "wrong"}))
            .await?;
    assert_eq!(rated["rating"]["thumb"], "down", "{rated}");

    // what the store holds, read directly
    let store = switchboard::SqlStore::connect(&h.database_url).await.map_err(|e| e.to_string())?;
    let alice = UserId::parse("alice").unwrap();
    let page = store
        .past_trees(&HistoryQuery { user: Some(alice.clone()), limit: 100, ..Default::default() })
        .await
        .map_err(|e| e.to_string())?;
    let hers: Vec<String> = page.trees.iter().map(|t| t.root_id.to_string()).collect();
    assert_eq!(hers.len(), 4, "three chats and a refusal: {hers:?}");
    let mut trees = Vec::new();
    for root in &page.trees {
        trees.push(store.delegation_tree(root.root_id).await.map_err(|e| e.to_string())?);
    }
    let want = expected(&trees);

    let mut cdp = ui::open_page(h, chromium).await?;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await?;

    // the Delegations view: her past trees, newest first, though none ran while the page was open
    open(&mut cdp, addr, ALICE, "live").await?;
    let shown = cdp
        .wait_for("alice's past trees", VIEW_JS, |v| v["history"].as_array().is_some_and(|r| r.len() == hers.len()))
        .await?;
    let ids: Vec<&str> = shown["history"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, hers, "the store's order");
    assert_eq!(shown["no_trees_shown"], false, "no 'No delegations yet' over a history");
    assert_eq!(shown["history"][hers.iter().position(|r| *r == roots[0]).unwrap()]["rating"], "down");
    // opening one shows its tree, rated as the store keeps it
    let second = &roots[1];
    cdp.eval(&format!("document.querySelector('#history-list [data-root-id=\"{second}\"]').click()")).await?;
    let nodes = trees.iter().find(|t| t[0].root_id.to_string() == *second).unwrap().len();
    let js = format!("({VIEW_JS}).trees.find(t => t.id === '{second}') ?? null");
    let tree = cdp.wait_for("the opened tree", &js, |v| v["nodes"] == nodes && v["rate"] == true).await?;
    assert_eq!(tree["rated"], Value::Null);
    // 👎 on it: kept in the store
    cdp.eval(&format!("document.querySelector('#trees [data-root-id=\"{second}\"] .rate-down').click()")).await?;
    cdp.wait_for("the rating shown", &js, |v| v["rated"] == "down").await?;
    let kept = store.rating(second.parse().unwrap()).await.map_err(|e| e.to_string())?;
    assert_eq!(kept.map(|r| (r.thumb, r.user_id)), Some((Thumb::Down, alice.clone())));

    // the Insights view, against the numbers recomputed from her stored trees
    open(&mut cdp, addr, ALICE, "insights").await?;
    let n_agents = want.agents.len();
    let shown = cdp
        .wait_for("alice's insights", VIEW_JS, |v| {
            v["insights"] == true && v["top"].as_array().is_some_and(|t| t.len() == n_agents)
        })
        .await?;
    for (agent, calls) in &want.agents {
        assert_eq!(shown["nodes"][agent], json!(calls), "{agent}: {shown}");
    }
    let top: Vec<(String, u64)> = serde_json::from_value(shown["top"].clone()).unwrap();
    let mut by_calls: Vec<(String, u64)> = want.agents.iter().map(|(a, c)| (a.clone(), *c)).collect();
    by_calls.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(top, by_calls, "top agents, the most called first");
    // circles by calls: the most called is the largest
    let radius = |a: &str| shown["node_radius"][a].as_f64().unwrap();
    assert!(
        radius(&by_calls[0].0) > radius(&by_calls[by_calls.len() - 1].0)
            || by_calls[0].1 == by_calls[by_calls.len() - 1].1
    );
    let edges = shown["edges"].as_array().unwrap();
    assert_eq!(edges.len(), want.edges.len(), "{edges:?}");
    for e in edges {
        let key = (e["origin"].as_str().unwrap().to_string(), e["target"].as_str().unwrap().to_string());
        let (calls, failed) = want.edges[&key];
        assert_eq!(e["calls"], json!(calls), "{key:?}");
        assert!((e["failure_rate"].as_f64().unwrap() - failed as f64 / calls as f64).abs() < 1e-9, "{key:?}");
    }
    let refused_edge = edges.iter().find(|e| e["target"] == "nobody-here").ok_or("no edge to the refused agent")?;
    assert_eq!(refused_edge["color"], "hsl(0, 65%, 42%)", "all of it refused: red");
    let failures: Vec<(String, String, u64)> = serde_json::from_value(shown["failures"].clone()).unwrap();
    let mut want_failures: Vec<(String, String, u64)> =
        want.failures.iter().map(|((c, a), n)| (c.clone(), a.clone(), *n)).collect();
    want_failures.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
    assert_eq!(failures, want_failures);
    assert_eq!((shown["total_tokens"].as_u64(), shown["tokens"].as_u64()), (Some(want.tokens), Some(want.tokens)));
    assert_eq!(shown["total_trees"].as_u64(), Some(4));
    let mut lowest: Vec<String> = serde_json::from_value(shown["lowest"].clone()).unwrap();
    lowest.sort();
    let mut down = vec![roots[0].clone(), roots[1].clone()];
    down.sort();
    assert_eq!(lowest, down, "both answers she rated down");
    assert_eq!(shown["users"], json!(["alice"]));

    // the picture, for people
    ui::screenshot(&mut cdp, "insights").await?;

    // a rated-down answer opens its tree
    cdp.eval(&format!("document.querySelector('#lowest [data-root-id=\"{}\"] a').click()", roots[0])).await?;
    let js = format!(
        "!document.getElementById('app').hidden && ({VIEW_JS}).trees.some(t => t.id === '{}' && t.nodes > 0)",
        roots[0]
    );
    cdp.wait_for("the rated-down tree opened", &js, |v| v == true).await?;

    // an admin sees everyone, bob too; and rates nothing
    open(&mut cdp, addr, ADMIN, "insights").await?;
    let shown =
        cdp.wait_for("everyone's insights", VIEW_JS, |v| v["users"].as_array().is_some_and(|u| u.len() == 2)).await?;
    assert_eq!(shown["total_trees"].as_u64(), Some(5));
    open(&mut cdp, addr, ADMIN, "live").await?;
    cdp.wait_for("everyone's past trees", VIEW_JS, |v| v["history"].as_array().is_some_and(|r| r.len() == 5)).await?;
    cdp.eval(&format!("document.querySelector('#history-list [data-root-id=\"{}\"]').click()", roots[3])).await?;
    let js = format!("({VIEW_JS}).trees.find(t => t.id === '{}') ?? null", roots[3]);
    let bobs =
        cdp.wait_for("bob's tree, opened by the admin", &js, |v| v["nodes"].as_u64().is_some_and(|n| n > 0)).await?;
    assert_eq!(bobs["rate"], false, "no rating buttons for an admin");
    assert!(cdp.page_errors.is_empty(), "the page reported errors: {:?}", cdp.page_errors);
    cdp.session = None;
    let _ = cdp.call("Browser.close", json!({})).await;
    Ok(())
}

#[tokio::test]
async fn past_trees_open_and_rate_and_insights_match_the_stored_trees() {
    let Some(chromium) = ui::chromium_or_skip("the Insights view test") else { return };
    let (mut h, addr) = ui::start_server(true).await.unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = drive(&mut h, &addr, &chromium).await {
        panic!("{e}\n{}", h.logs());
    }
    ui::close(h, None).await;
}
