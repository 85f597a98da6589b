//! `GET /v1/analytics`, `GET /v1/trees` and `POST /v1/trees/{id}/rating` on
//! a real server on 127.0.0.1 over SQLite, with the built-in team: users see
//! their own trees and numbers, an admin everyone's, a service token none;
//! bad ranges, unknown agents and filters, another user's tree and a tree
//! that does not exist get stable codes and change nothing.

use serde_json::{Value, json};
use switchboard::Runtime;
use switchboard::config::Config;

use crate::approvals_http::{Client, serve};

const ADMIN: &str = "an-admin-token";
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const PRIME: &str = "prime-token";

async fn runtime(dir: &tempfile::TempDir) -> Runtime {
    let mut config = Config::builtin();
    config.auth.admin_tokens = vec![ADMIN.into()];
    config.auth.user_tokens = [("alice".into(), ALICE.into()), ("bob".into(), BOB.into())].into();
    config.auth.service_tokens = [("prime-boss".into(), PRIME.into())].into();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let store = switchboard::store::open(&url).await.unwrap();
    Runtime::builder().config(config).store(store).build().unwrap()
}

async fn chat(c: &Client, token: &str, message: &str, input: &str) -> String {
    let (status, body) = c.post(token, "/v1/chat", json!({ "message": message, "input": input })).await;
    assert_eq!(status, 200, "{body}");
    body["request_id"].as_str().unwrap().to_string()
}

fn ids(page: &Value) -> Vec<&str> {
    page["trees"].as_array().unwrap().iter().map(|t| t["root_id"].as_str().unwrap()).collect()
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn users_see_their_own_trees_and_numbers_and_rate_only_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new(&serve(runtime(&dir).await).await);
    let receipt = "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25";
    let a1 = chat(&c, ALICE, "Upload this receipt and categorize it", receipt).await;
    let a2 = chat(&c, ALICE, "Categorize my transactions", "2025-10-01 Starbucks 4.50").await;
    let b1 = chat(&c, BOB, "Upload this receipt and categorize it", receipt).await;

    let (status, mine) = c.get(Some(ALICE), "/v1/trees").await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(ids(&mine), [a2.as_str(), a1.as_str()], "alice's, newest first");
    assert_eq!(mine["trees"][0]["agent"], "prime-boss");
    assert!(mine["trees"][1]["nodes"].as_u64().unwrap() >= 3, "{mine}");
    let (_, all) = c.get(Some(ADMIN), "/v1/trees").await;
    assert_eq!(ids(&all), [b1.as_str(), a2.as_str(), a1.as_str()], "an admin sees everyone's");
    let (_, page) = c.get(Some(ADMIN), "/v1/trees?limit=2").await;
    let next = page["next"].as_str().unwrap();
    let (_, rest) = c.get(Some(ADMIN), &format!("/v1/trees?limit=2&before={next}")).await;
    assert_eq!((ids(&rest), &rest["next"]), (vec![a1.as_str()], &Value::Null));
    let (_, tag) = c.get(Some(ALICE), "/v1/trees?agent=byte-doc").await;
    assert_eq!(ids(&tag), [a1.as_str()], "only the receipt went through byte-doc");
    let (_, text) = c.get(Some(ALICE), "/v1/trees?q=TRANSACTIONS").await;
    assert_eq!(ids(&text), [a2.as_str()]);

    // the numbers: alice's own, or everyone's for an admin
    let (status, hers) = c.get(Some(ALICE), "/v1/analytics").await;
    assert_eq!(status, 200, "{hers}");
    assert_eq!((hers["totals"]["trees"].as_u64(), &hers["user"]), (Some(2), &json!("alice")), "{hers}");
    let (_, everyone) = c.get(Some(ADMIN), "/v1/analytics").await;
    assert_eq!(everyone["totals"]["trees"].as_u64(), Some(3));
    let users: Vec<&str> = everyone["users"].as_array().unwrap().iter().map(|u| u["user"].as_str().unwrap()).collect();
    assert_eq!(users.len(), 2, "{users:?}");
    let (_, bobs) = c.get(Some(ADMIN), "/v1/analytics?user=bob").await;
    assert_eq!(bobs["totals"]["trees"].as_u64(), Some(1));
    let edge = |a: &Value, o: &str, t: &str| {
        a["edges"].as_array().unwrap().iter().find(|e| e["origin"] == o && e["target"] == t).cloned()
    };
    assert_eq!(edge(&everyone, "prime-boss", "byte-doc").unwrap()["calls"].as_u64(), Some(2), "{everyone}");

    // a rating: the user's own, once per tree
    let path = format!("/v1/trees/{a1}/rating");
    let (status, kept) = c.post(ALICE, &path, json!({"rating": "down", "comment": "wrong category"})).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["rating"]["thumb"], "down");
    let (status, body) = c.post(BOB, &path, json!({"rating": "up"})).await;
    assert_eq!((status, code(&body)), (403, "USER_MISMATCH"), "{body}");
    let (status, body) = c.post(ADMIN, &path, json!({"rating": "up"})).await;
    assert_eq!((status, code(&body)), (403, "PERMISSION_DENIED"), "{body}");
    let (status, body) = c.post(PRIME, &path, json!({"rating": "up"})).await;
    assert_eq!((status, code(&body)), (401, "UNAUTHENTICATED"), "{body}");
    let missing = format!("/v1/trees/{}/rating", uuid::Uuid::now_v7());
    let (status, body) = c.post(ALICE, &missing, json!({"rating": "up"})).await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"), "{body}");
    let (status, body) = c.post_raw(ALICE, &path, r#"{"rating":"sideways"}"#).await;
    assert_eq!((status, code(&body)), (400, "INVALID_REQUEST"), "{body}");
    let (_, now) = c.get(Some(ALICE), &path).await;
    assert_eq!((&now["rating"]["thumb"], &now["rating"]["comment"]), (&json!("down"), &json!("wrong category")));
    let (status, body) = c.get(Some(BOB), &path).await;
    assert_eq!((status, code(&body)), (403, "USER_MISMATCH"), "{body}");
    let (_, mine) = c.get(Some(ALICE), "/v1/trees").await;
    assert_eq!(mine["trees"][1]["rating"], "down", "kept with the tree");
    let (_, hers) = c.get(Some(ALICE), "/v1/analytics").await;
    assert_eq!(hers["totals"]["rated_down"].as_u64(), Some(1));
    assert_eq!(hers["lowest_rated"][0]["root_id"], json!(a1));
}

#[tokio::test]
async fn bad_input_and_wrong_callers_get_stable_codes() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new(&serve(runtime(&dir).await).await);
    let now = switchboard::store::now_ms();
    for (token, path, want) in [
        (Some(PRIME), "/v1/analytics".to_string(), (401, "UNAUTHENTICATED")),
        (Some(PRIME), "/v1/trees".to_string(), (401, "UNAUTHENTICATED")),
        (None, "/v1/analytics".to_string(), (401, "UNAUTHENTICATED")),
        (Some(ALICE), "/v1/analytics?user=bob".to_string(), (403, "USER_MISMATCH")),
        (Some(ALICE), "/v1/trees?user=bob".to_string(), (403, "USER_MISMATCH")),
        (Some(ALICE), format!("/v1/analytics?since={now}&until={}", now - 1000), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/analytics?since=1999-01-01".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/analytics?since=2024-01-01&until=2025-06-01".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), format!("/v1/analytics?until={}", now + 5 * 86_400_000), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/analytics?since=last%20week".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/analytics?window=7d".to_string(), (400, "INVALID_REQUEST")),
        (Some(ADMIN), "/v1/analytics?user=not%20a%20user".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees?agent=nobody-here".to_string(), (404, "AGENT_NOT_FOUND")),
        (Some(ALICE), "/v1/trees?agent=Not%20A%20Slug".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees?status=done".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees?limit=0".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees?limit=ten".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees?before=yesterday".to_string(), (400, "INVALID_REQUEST")),
        (Some(ALICE), "/v1/trees/not-a-tree/rating".to_string(), (400, "INVALID_REQUEST")),
    ] {
        let (status, body) = c.get(token, &path).await;
        assert_eq!((status, code(&body)), want, "{path}: {body}");
        assert!(!body["error"]["message"].as_str().unwrap_or_default().is_empty(), "{path}");
    }
}

/// `switchboard` on an SQLite file in `dir`, its exit code and stdout.
fn cli(dir: &tempfile::TempDir, args: &[&str]) -> (i32, String, String) {
    let url = format!("sqlite://{}", dir.path().join("cli.db").display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_USER")
        .env_remove("SWITCHBOARD_DATABASE_URL")
        .current_dir(dir.path())
        .args(["--database-url", &url])
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn switchboard_stats_counts_what_ran_and_switchboard_rate_rates_a_users_own_tree() {
    let dir = tempfile::tempdir().unwrap();
    let receipt = "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25";
    let file = dir.path().join("receipt.txt");
    std::fs::write(&file, receipt).unwrap();
    let (code, out, err) = cli(
        &dir,
        &[
            "--json",
            "ask",
            "--user",
            "alice",
            "Upload this receipt and categorize it",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let tree = serde_json::from_str::<Value>(&out).unwrap()["request_id"].as_str().unwrap().to_string();

    let (code, out, err) = cli(&dir, &["rate", &tree, "down", "--user", "alice", "--comment", "wrong category"]);
    assert_eq!((code, out.trim()), (0, format!("rated tree {tree} down for alice").as_str()), "{err}");
    let (code, _, err) = cli(&dir, &["rate", &tree, "up", "--user", "bob"]);
    assert_eq!(code, 3, "another user's tree is refused: {err}");
    assert!(err.contains("USER_MISMATCH"), "{err}");
    let (code, _, err) = cli(&dir, &["rate", &tree, "sideways", "--user", "alice"]);
    assert_eq!(code, 2, "{err}");

    let (code, out, err) = cli(&dir, &["--json", "stats"]);
    assert_eq!(code, 0, "{err}");
    let stats: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (stats["totals"]["trees"].as_u64(), stats["totals"]["rated_down"].as_u64()),
        (Some(1), Some(1)),
        "{stats}"
    );
    assert_eq!(stats["lowest_rated"][0]["comment"], "wrong category");
    let (code, text, _) = cli(&dir, &["stats", "--user", "alice"]);
    assert_eq!(code, 0);
    assert!(text.contains("1 trees, 3 delegations") && text.contains("prime-boss → byte-doc"), "{text}");
    let (code, _, err) = cli(&dir, &["stats", "--since", "2025-06-01", "--until", "2025-05-01"]);
    assert_eq!(code, 2, "a reversed range is a usage error");
    assert!(err.contains("INVALID_REQUEST") && err.contains("reversed"), "{err}");
}

/// Whether `(`, `[` and `{` close in order (outside quoted label values).
fn balanced(expr: &str) -> bool {
    let (mut stack, mut quoted) = (Vec::new(), false);
    for c in expr.chars() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '(' | '[' | '{' => stack.push(c),
            ')' | ']' | '}' => {
                let open = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if stack.pop() != Some(open) {
                    return false;
                }
            }
            _ => {}
        }
    }
    stack.is_empty() && !quoted
}

#[tokio::test]
async fn the_grafana_dashboard_is_valid_and_queries_only_metrics_the_runtime_serves() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/switchboard.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("the dashboard is JSON");
    assert!(dashboard["title"].as_str().is_some_and(|t| !t.is_empty()) && dashboard["uid"].is_string());
    assert!(dashboard["schemaVersion"].is_u64());
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 8, "{} panels", panels.len());

    // what the runtime serves at /metrics, after a delegation
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(runtime(&dir).await).await;
    chat(&Client::new(&addr), ALICE, "Upload this receipt and categorize it", "STARBUCKS\n10/09/2025\nTOTAL $5.25")
        .await;
    switchboard::util::install_tls();
    let text =
        reqwest::Client::builder().no_proxy().build().unwrap().get(format!("http://{addr}/metrics")).send().await;
    let text = text.unwrap().text().await.unwrap();
    let served: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let metric = regex::Regex::new(r"\bswitchboard_[a-z_]+").unwrap();

    let mut ids = std::collections::BTreeSet::new();
    for p in panels {
        let title = p["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty() && ids.insert(p["id"].as_u64().expect("a numeric id")), "{p}");
        assert!(p["description"].as_str().is_some_and(|d| d.ends_with('?')), "{title}: says the question it answers");
        assert!(
            ["timeseries", "bargauge", "stat", "table"].contains(&p["type"].as_str().unwrap_or_default()),
            "{title}"
        );
        let g = &p["gridPos"];
        let (x, w) = (g["x"].as_u64().unwrap(), g["w"].as_u64().unwrap());
        assert!(x + w <= 24 && g["h"].as_u64().is_some() && g["y"].as_u64().is_some(), "{title}: {g}");
        let targets = p["targets"].as_array().filter(|t| !t.is_empty()).unwrap_or_else(|| panic!("{title}: no query"));
        for t in targets {
            let expr = t["expr"].as_str().unwrap_or_default();
            assert!(t["refId"].is_string() && balanced(expr), "{title}: {expr}");
            let names: Vec<&str> = metric.find_iter(expr).map(|m| m.as_str()).collect();
            assert!(!names.is_empty(), "{title}: queries no switchboard metric: {expr}");
            for name in names {
                assert!(served.contains(name), "{title}: {name} is not in /metrics (served: {served:?})");
            }
        }
    }
}
