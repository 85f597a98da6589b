//! Switchboard's MCP server driven by the official Python `mcp` client
//! (tests/it/mcp/client.py): over streamable HTTP against a real server on
//! 127.0.0.1, and over stdio against `switchboard mcp`. The rails hold as
//! on `/v1/delegate`: PII, user isolation, refusals, cancellation.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::protocol::RequestId;
use switchboard::server::AppState;
use switchboard::{AgentOutput, Call, Runtime};

use crate::support::agent;

const EMAIL: &str = "alex.chan@company.com";

/// Whether python3 has the official `mcp` package; in CI its absence is a
/// failure, elsewhere a skip.
fn mcp_available() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import mcp, httpx2, anyio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but python3 with the mcp package is missing");
        eprintln!("python3 with the mcp package is not installed: skipping");
    }
    ok
}

fn script() -> String {
    format!("{}/tests/it/mcp/client.py", env!("CARGO_MANIFEST_DIR"))
}

async fn run_client(args: &[&str]) -> Value {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("python3").arg(script()).args(args).output(),
    )
    .await
    .expect("the MCP client finishes")
    .unwrap();
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

const TEAM: &str = r#"
[prime]
agent = "boss"

[[agents]]
slug = "boss"
name = "Boss"
may_delegate_to = ["echo", "slow"]

[[agents]]
slug = "echo"
name = "Echo"

[[agents]]
slug = "slow"
name = "Slow"

[[agents]]
slug = "vault"
name = "Vault"
allowed_users = ["bob"]

[auth]
user_tokens = { alice = "t-alice", bob = "t-bob" }
service_tokens = { boss = "t-boss" }
service_roots = { boss = ["alice"] }
"#;

/// The scripted team: boss hands every message to echo; echo answers with
/// what it saw (and records it); slow waits until it is cancelled.
fn team(seen: Arc<Mutex<Vec<String>>>) -> Runtime {
    let config = switchboard::config::Config::from_toml(TEAM).unwrap();
    Runtime::builder()
        .config(config)
        .agent(
            "boss",
            agent(|ctx, task| async move {
                let r = ctx.delegator()?.delegate(Call::to("echo", task.objective.clone())?).await;
                Ok(AgentOutput::new("boss asked echo", format!("echo says: {}", r.result)))
            }),
        )
        .agent(
            "echo",
            agent(move |_ctx, task| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(format!("{} | {}", task.objective, task.input));
                    Ok(AgentOutput::new("echoed", format!("{} / {}", task.objective, task.input)))
                }
            }),
        )
        .agent(
            "slow",
            agent(|_ctx, _task| async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(AgentOutput::new("late", "late"))
            }),
        )
        .agent("vault", agent(|_ctx, _task| async move { Ok(AgentOutput::new("opened", "opened")) }))
        .build()
        .unwrap()
}

async fn serve(runtime: Runtime) -> String {
    let auth = runtime.config().auth.clone();
    let state = Arc::new(AppState::new(runtime));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(switchboard::server::serve(state, listener, Duration::from_secs(1), std::future::pending()));
    format!("http://{addr}/mcp")
}

/// The tree id a progress message names (`… (depth 0, tree <id>)`).
fn tree_in(progress: &Value) -> RequestId {
    let first = progress[0].as_str().unwrap_or_else(|| panic!("no progress: {progress}"));
    let id = first.rsplit("tree ").next().unwrap().trim_end_matches(')');
    id.parse().unwrap_or_else(|_| panic!("no tree id in {first}"))
}

fn assert_common(r: &Value) {
    let tools = r["tools"].as_object().unwrap();
    for name in ["delegate", "ask", "ask_agent", "list_agents", "trace"] {
        let t = &tools[name];
        assert_eq!(t["input"]["type"], "object", "{name}: {t}");
        assert_eq!(t["output"]["type"], "object", "{name}: structured output needs an outputSchema: {t}");
    }
    assert_eq!(tools["delegate"]["input"]["required"], serde_json::json!(["target", "objective"]));
    assert_eq!(r["list_agents"]["is_error"], false);
    assert!(!r["list_agents"]["structured"]["agents"].as_array().unwrap().is_empty());
    assert_eq!(r["resources"], serde_json::json!(["switchboard://agents"]));
    assert_eq!(r["templates"], serde_json::json!(["switchboard://trees/{id}"]));
    assert_eq!(r["agents_resource"], r["list_agents"]["structured"]);
    for case in ["bad_args", "unknown_tool", "extra_arg"] {
        assert_eq!(r[case]["code"], -32602, "{case}: invalid arguments are JSON-RPC -32602: {}", r[case]);
    }
    assert!(r["bad_args"]["message"].as_str().unwrap().contains("objective"), "{}", r["bad_args"]);
}

#[tokio::test]
async fn the_official_python_client_over_http_delegates_with_every_rail() {
    if !mcp_available() {
        return;
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = team(seen.clone());
    let url = serve(runtime.clone()).await;

    // no token, a forged token: 401 with a challenge, before any MCP
    let http = switchboard::util::http_client().unwrap();
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for token in [None, Some("forged")] {
        let mut req = http.post(&url).header("accept", "application/json, text/event-stream").json(&init);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 401, "{token:?}");
        assert!(res.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["data"]["code"], "UNAUTHENTICATED", "{body}");
    }

    let r = run_client(&["http", &url]).await;
    eprintln!("negotiated MCP protocol version over HTTP: {}", r["protocol_version"]);
    assert_common(&r);

    // a user's delegate: the agent saw tokens, the user gets their values back
    let d = &r["delegate"];
    assert_eq!(d["is_error"], false, "{d}");
    let s = &d["structured"];
    assert_eq!(s["status"], "success");
    assert!(s["answer"].as_str().unwrap().contains(EMAIL), "the caller gets its own values back: {s}");
    assert_eq!(s["tree"]["agent"], "echo");
    let root: RequestId = s["root_id"].as_str().unwrap().parse().unwrap();
    let saw = seen.lock().unwrap().join("\n");
    assert!(!saw.contains(EMAIL) && saw.contains("<EMAIL_1>"), "the agent saw a token, not the address: {saw}");
    let audit = serde_json::to_string(&runtime.store().audit_log().await.unwrap()).unwrap();
    assert!(!audit.contains(EMAIL) && audit.contains(&root.to_string()), "the audit holds tokens only");
    let stored = serde_json::to_string(&runtime.tree(root).await.unwrap()).unwrap();
    assert!(!stored.contains(EMAIL), "{stored}");
    let progress: Vec<&str> = r["delegate_progress"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(progress.iter().any(|m| m.starts_with("echo started")), "{progress:?}");
    assert!(progress.iter().any(|m| m.starts_with("echo finished: success")), "{progress:?}");

    // a rail refuses: a tool error with the stable code, audited
    let refused = &r["refused"];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["structured"]["error"]["code"], "PERMISSION_DENIED", "{refused}");

    // ask: the user talks to the entry agent, which delegates
    let ask = &r["ask"]["structured"];
    assert_eq!(ask["tree"]["agent"], "boss", "{ask}");
    assert_eq!(ask["tree"]["children"][0]["agent"], "echo", "{ask}");
    assert!(ask["answer"].as_str().unwrap().starts_with("echo says:"), "{ask}");
    // ask_agent: an ephemeral consult leaves no session behind
    let consult = &r["ask_agent"]["structured"];
    assert_eq!(consult["status"], "success", "{consult}");
    assert_eq!(consult["response"]["child_session_id"], Value::Null, "a consult writes nothing: {consult}");

    // trace and the tree resource: the owner sees the tree; bob does not
    assert_eq!(r["trace"]["structured"]["tree"]["request_id"], root.to_string());
    assert_eq!(r["tree_resource"]["request_id"], root.to_string());
    assert_eq!(r["bob_trace"]["is_error"], true);
    assert_eq!(r["bob_trace"]["structured"]["error"]["code"], "NOT_FOUND");
    assert!(!r["bob_trace"]["text"].as_str().unwrap().contains("echo"), "nothing of alice's tree: {}", r["bob_trace"]);
    // resource not found: -32602 from 2026-07-28 on (SEP-2164), -32002 before
    let not_found = if r["protocol_version"] == "2026-07-28" { -32602 } else { -32002 };
    assert_eq!(r["bob_tree_resource"]["code"], not_found, "{}", r["bob_tree_resource"]);
    assert!(r["bob_tree_resource"]["message"].as_str().unwrap().contains("that you may see"));

    // a service token delegates as its agent (for a user it may start trees for)
    let sd = &r["service_delegate"]["structured"];
    assert_eq!(sd["status"], "success", "{sd}");
    assert_eq!(sd["tree"]["origin"], "boss", "{sd}");
    assert_eq!(r["service_ask"]["structured"]["error"]["code"], "UNAUTHENTICATED", "ask is for users");

    // cancelling the request cancels the tree, and the audit says so
    let cancelled = tree_in(&r["cancel_progress"]);
    assert_cancelled(&runtime, cancelled).await;
}

async fn assert_cancelled(runtime: &Runtime, root: RequestId) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let audit = runtime.store().audit_log().await.unwrap();
        if let Some(e) = audit.iter().find(|e| e.record.request_id == root) {
            assert_eq!(e.record.error_code.as_deref(), Some("CANCELLED"), "{:?}", e.record);
            break;
        }
        assert!(Instant::now() < deadline, "tree {root} did not end after the cancel");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_official_python_client_over_stdio_asks_traces_and_cancels() {
    if !mcp_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("team.toml");
    let team = format!(
        "{}\n[[agents]]\nslug = \"slow\"\nname = \"Slow\"\nbackend = {{ kind = \"command\", command = \"sh\", args = [\"-c\", \"sleep 30; echo late\"] }}\n",
        switchboard::config::DEFAULT_TOML
    );
    std::fs::write(&config, team).unwrap();
    let db = format!("sqlite://{}", dir.path().join("sb.db").display());
    let r = run_client(&["stdio", env!("CARGO_BIN_EXE_switchboard"), config.to_str().unwrap(), &db]).await;
    eprintln!("negotiated MCP protocol version over stdio: {}", r["protocol_version"]);
    assert_common(&r);
    let ask = &r["ask"]["structured"];
    assert_eq!(ask["status"], "success", "{ask}");
    assert!(!ask["answer"].as_str().unwrap().is_empty());
    assert_eq!(r["trace"]["structured"]["tree"]["request_id"], ask["root_id"]);
    assert_eq!(
        r["after_cancel"]["structured"]["tree"]["error_code"],
        "CANCELLED",
        "the session goes on after a cancel, and the tree ended cancelled: {}",
        r["after_cancel"]
    );

    // the tree the cancel ended is in the database, cancelled
    let root = tree_in(&r["cancel_progress"]);
    let store = switchboard::store::open(&db).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let audit = store.audit_log().await.unwrap();
        if let Some(e) = audit.iter().find(|e| e.record.request_id == root) {
            assert_eq!(e.record.error_code.as_deref(), Some("CANCELLED"), "{:?}", e.record);
            break;
        }
        assert!(Instant::now() < deadline, "tree {root} was not recorded after the cancel");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
