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

/// Whether python3 has the official `mcp` package.
fn mcp_available() -> bool {
    crate::support::python_has("mcp, httpx2, anyio", "mcp")
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
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
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
        r["after_cancel"]["structured"]["tree"]["error_code"], "CANCELLED",
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

/// One JSON-RPC request to `/mcp` as alice (a 2025-11-25 session): its
/// answer (from JSON or the event stream) and the session id it names.
async fn rpc(client: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> (Option<String>, Value) {
    let mut req = client
        .post(url)
        .bearer_auth("t-alice")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&body);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
    }
    let mut res = req.send().await.unwrap();
    assert!(res.status().is_success(), "{body}: HTTP {}", res.status());
    let session = res.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    if body.get("id").is_none() {
        return (session, Value::Null);
    }
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), res.chunk()).await.expect("an answer").unwrap();
        let Some(chunk) = chunk else { break };
        text.push_str(&String::from_utf8_lossy(&chunk));
        let answer = text
            .lines()
            .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("id") == body.get("id"));
        if let Some(answer) = answer {
            return (session, answer);
        }
    }
    panic!("no answer to {body} in {text}");
}

/// A session on a server with `[mcp] conformance_fixtures = enabled`: the
/// answers to initialize, tools/list, a fixture tool, prompts/list,
/// prompts/get, completion/complete and a fixture resource.
async fn fixture_answers(enabled: bool) -> Vec<Value> {
    let config =
        switchboard::config::Config::from_toml(&format!("{TEAM}\n[mcp]\nconformance_fixtures = {enabled}\n")).unwrap();
    let runtime = Runtime::builder()
        .config(config)
        .agent("boss", agent(|_ctx, _task| async move { Ok(AgentOutput::new("ok", "ok")) }))
        .agent("echo", agent(|_ctx, _task| async move { Ok(AgentOutput::new("ok", "ok")) }))
        .agent("slow", agent(|_ctx, _task| async move { Ok(AgentOutput::new("ok", "ok")) }))
        .agent("vault", agent(|_ctx, _task| async move { Ok(AgentOutput::new("ok", "ok")) }))
        .build()
        .unwrap();
    let url = serve(runtime).await;
    let _ = switchboard::util::http_client(); // installs the TLS provider
    let client = reqwest::Client::new();
    let (session, init) = rpc(
        &client,
        &url,
        None,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "fixtures-test", "version": "1"}
        }}),
    )
    .await;
    let session = session.expect("a session id");
    let s = Some(session.as_str());
    rpc(&client, &url, s, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut answers = vec![init];
    for (id, method, params) in [
        (2, "tools/list", serde_json::json!({})),
        (3, "tools/call", serde_json::json!({"name": "test_simple_text", "arguments": {}})),
        (4, "prompts/list", serde_json::json!({})),
        (
            5,
            "prompts/get",
            serde_json::json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}),
        ),
        (
            6,
            "completion/complete",
            serde_json::json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "par"}}),
        ),
        (7, "resources/read", serde_json::json!({"uri": "test://template/42/data"})),
        (8, "logging/setLevel", serde_json::json!({"level": "debug"})),
    ] {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        answers.push(rpc(&client, &url, s, body).await.1);
    }
    answers
}

fn tool_names(list: &Value) -> Vec<String> {
    let tools = list["result"]["tools"].as_array().unwrap_or_else(|| panic!("no tools: {list}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn the_conformance_fixtures_are_absent_by_default_and_served_when_enabled() {
    // off (the default): Switchboard's five tools, nothing of the suite's
    assert!(!switchboard::config::Config::from_toml(TEAM).unwrap().mcp.conformance_fixtures);
    let off = fixture_answers(false).await;
    let caps = &off[0]["result"]["capabilities"];
    assert!(caps.get("logging").is_none() && caps.get("prompts").is_none(), "{caps}");
    assert!(caps.get("completions").is_none(), "{caps}");
    assert_eq!(tool_names(&off[1]), ["delegate", "ask", "ask_agent", "list_agents", "trace"]);
    assert_eq!(off[2]["error"]["code"], -32602, "unknown tool: {}", off[2]);
    for (i, method) in [(3, "prompts/list"), (4, "prompts/get"), (5, "completion/complete"), (7, "logging/setLevel")] {
        assert_eq!(off[i]["error"]["code"], -32601, "{method} is not served: {}", off[i]);
    }
    assert!(off[6]["error"]["code"].is_i64(), "no test:// resource: {}", off[6]);

    // on: the suite's fixtures next to Switchboard's tools
    let on = fixture_answers(true).await;
    let caps = &on[0]["result"]["capabilities"];
    assert!(caps["logging"].is_object() && caps["completions"].is_object() && caps["prompts"].is_object(), "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    let names = tool_names(&on[1]);
    for name in
        ["delegate", "trace", "test_simple_text", "test_sampling", "test_elicitation", "json_schema_2020_12_tool"]
    {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let schema = &on[1]["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "json_schema_2020_12_tool");
    assert_eq!(schema.unwrap()["inputSchema"]["$defs"]["address"]["type"], "object");
    assert_eq!(on[2]["result"]["content"][0]["text"], "This is a simple text response for testing.", "{}", on[2]);
    let prompts: Vec<&str> =
        on[3]["result"]["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(prompts.contains(&"test_simple_prompt") && prompts.contains(&"test_prompt_with_image"), "{prompts:?}");
    assert_eq!(
        on[4]["result"]["messages"][0]["content"]["text"], "Prompt with arguments: arg1='hello', arg2='world'",
        "{}",
        on[4]
    );
    assert_eq!(on[5]["result"]["completion"]["values"], serde_json::json!(["paris", "park", "party"]), "{}", on[5]);
    let data: Value = serde_json::from_str(on[6]["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(data["id"], "42", "{}", on[6]);
    assert!(on[7]["error"].is_null() && on[7]["result"].is_object(), "logging/setLevel: {}", on[7]);
}

mod fuzz {
    //! 5 000 generated requests to `/mcp`: malformed JSON-RPC, unknown
    //! methods, wrong parameter types, invalid tool arguments, odd protocol
    //! versions, session ids and headers, truncated and non-UTF-8 bodies.
    //! None is a 5xx or a panic; JSON-RPC errors come in JSON-RPC's shape.

    use proptest::prelude::*;
    use proptest::test_runner::{Config as PropConfig, TestRunner};
    use serde_json::{Value, json};

    const CASES: u32 = 5_000;

    fn wild() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            Just(json!(u64::MAX)),
            Just(json!(1e308)),
            "[ -~]{0,24}".prop_map(Value::String),
            Just(json!("2026-07-28")),
            Just(json!("switchboard://trees/not-a-uuid")),
            Just(json!([1, "two", null])),
            Just(json!({"nested": {"deeper": [1]}})),
            Just(json!({"target": "tag-ai", "objective": ""})),
            Just(json!({"target": "Not A Slug!", "objective": "x"})),
            Just(json!({"root_id": "550e8400-e29b-41d4-a716-446655440000"})),
        ]
    }

    const METHODS: &[&str] = &[
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "logging/setLevel",
        "notifications/cancelled",
        "notifications/initialized",
        "no/such/method",
        "",
    ];
    const TOOLS: &[&str] = &["delegate", "ask", "ask_agent", "list_agents", "trace", "nope"];

    #[derive(Debug, Clone)]
    struct Case {
        http_method: &'static str,
        auth: Option<&'static str>,
        accept: Option<&'static str>,
        content_type: Option<&'static str>,
        version: Option<String>,
        session: Option<String>,
        /// Whether the SEP-2243 headers (`Mcp-Method`, `Mcp-Name`) echo the body.
        std_headers: bool,
        body: Vec<u8>,
    }

    fn message() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(METHODS),
            prop::sample::select(TOOLS),
            wild(),
            wild(),
            prop_oneof![Just(json!(1)), wild()],
            0..6u8,
        )
            .prop_map(|(method, tool, a, b, id, shape)| {
                let params = match shape {
                    0 => json!({"name": tool, "arguments": a}),
                    1 => json!({"name": tool, "arguments": {"target": a, "objective": b}}),
                    2 => json!({"uri": a}),
                    3 => json!({"protocolVersion": a, "capabilities": b, "clientInfo": {"name": "f", "version": "1"}}),
                    4 => json!({"_meta": {"io.modelcontextprotocol/protocolVersion": a, "progressToken": b}, "name": tool, "arguments": {}}),
                    _ => a,
                };
                let mut m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                if shape == 5 {
                    m["jsonrpc"] = b;
                } else if shape != 4 && m["params"].is_object() {
                    // most requests are 2026-07-28 ones, so that they reach the tools
                    m["params"]["_meta"] = json!({
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {}
                    });
                }
                m
            })
    }

    fn body() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            6 => message().prop_map(|m| serde_json::to_vec(&m).unwrap()),
            1 => (message(), any::<prop::sample::Index>()).prop_map(|(m, i)| {
                let b = serde_json::to_vec(&m).unwrap();
                b[..i.index(b.len())].to_vec()
            }),
            1 => prop::collection::vec(message(), 0..4).prop_map(|v| serde_json::to_vec(&v).unwrap()),
            1 => prop::collection::vec(any::<u8>(), 0..64),
            1 => (1usize..300).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
            1 => (100_000usize..400_000).prop_map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}", "a".repeat(n)).into_bytes()),
        ]
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            prop_oneof![8 => Just("POST"), 1 => Just("GET"), 1 => Just("DELETE"), 1 => Just("PUT")],
            prop_oneof![8 => Just(Some("t-alice")), 1 => Just(Some("forged")), 1 => Just(None)],
            prop_oneof![
                8 => Just(Some("application/json, text/event-stream")),
                1 => Just(Some("application/json")),
                1 => Just(Some("text/html")),
                1 => Just(None)
            ],
            prop_oneof![8 => Just(Some("application/json")), 1 => Just(Some("text/plain")), 1 => Just(None)],
            prop_oneof![
                6 => Just(Some("2026-07-28".to_string())),
                1 => Just(Some("2025-11-25".to_string())),
                1 => "[ -~]{0,12}".prop_map(Some),
                1 => Just(None)
            ],
            prop_oneof![
                6 => Just(None),
                1 => Just(Some("00000000-0000-0000-0000-000000000000".to_string())),
                1 => "[ -~]{0,40}".prop_map(Some)
            ],
            prop_oneof![4 => Just(true), 1 => Just(false)],
            body(),
        )
            .prop_map(|(http_method, auth, accept, content_type, version, session, std_headers, body)| Case {
                http_method,
                auth,
                accept,
                content_type,
                version,
                session,
                std_headers,
                body,
            })
    }

    async fn send(client: &reqwest::Client, url: &str, c: &Case) -> Result<(u16, Vec<u8>), String> {
        let method = reqwest::Method::from_bytes(c.http_method.as_bytes()).unwrap();
        let mut req = client.request(method, url).body(c.body.clone());
        if let Some(t) = c.auth {
            req = req.bearer_auth(t);
        }
        for (name, value) in [
            ("accept", c.accept.map(str::to_string)),
            ("content-type", c.content_type.map(str::to_string)),
            ("mcp-protocol-version", c.version.clone()),
            ("mcp-session-id", c.session.clone()),
        ] {
            if let Some(v) = value.filter(|v| reqwest::header::HeaderValue::from_str(v).is_ok()) {
                req = req.header(name, v);
            }
        }
        let parsed: Value = serde_json::from_slice(&c.body).unwrap_or_default();
        if c.std_headers {
            let name = parsed["params"]["name"].as_str().or(parsed["params"]["uri"].as_str());
            for (header, value) in [("mcp-method", parsed["method"].as_str()), ("mcp-name", name)] {
                if let Some(v) = value.filter(|v| reqwest::header::HeaderValue::from_str(v).is_ok()) {
                    req = req.header(header, v);
                }
            }
        }
        let parsed: Value = serde_json::from_slice(&c.body).unwrap_or_default();
        if c.std_headers {
            let name = parsed["params"]["name"].as_str().or(parsed["params"]["uri"].as_str());
            for (header, value) in [("mcp-method", parsed["method"].as_str()), ("mcp-name", name)] {
                if let Some(v) = value.filter(|v| reqwest::header::HeaderValue::from_str(v).is_ok()) {
                    req = req.header(header, v);
                }
            }
        }
        let res = req.send().await.map_err(|e| format!("no answer: {e:?}"))?;
        let status = res.status().as_u16();
        let is_json = res.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        // an event stream may stay open: its status is the answer
        let body = if is_json {
            tokio::time::timeout(std::time::Duration::from_secs(10), res.bytes())
                .await
                .map_err(|_| "a JSON body that never ends".to_string())?
                .map_err(|e| e.to_string())?
                .to_vec()
        } else {
            Vec::new()
        };
        Ok((status, body))
    }

    #[test]
    fn five_thousand_generated_mcp_requests_get_no_5xx_and_no_panic() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let config =
            format!("{}\n{}", switchboard::config::DEFAULT_TOML, "[auth]\nuser_tokens = { alice = \"t-alice\" }\n");
        let server = crate::service::Server::start(Some(&config), Some("memory:"), "127.0.0.1:0", &[], 1000);
        let url = format!("{}/mcp", server.url);
        // a connection per request: a server may close one whose body it did
        // not read, and a pooled reuse would race that close
        let _ = switchboard::util::http_client(); // installs the TLS provider
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<u16, usize>::new());
        let mut runner =
            TestRunner::new(PropConfig { cases: CASES, failure_persistence: None, ..PropConfig::default() });
        runner
            .run(&case(), |c| {
                let (status, body) = rt.block_on(send(&client, &url, &c)).map_err(TestCaseError::fail)?;
                *statuses.lock().unwrap().entry(status).or_default() += 1;
                prop_assert!(status < 500, "{c:?}: {status} {}", String::from_utf8_lossy(&body));
                if !body.is_empty() {
                    let v: Value = serde_json::from_slice(&body)
                        .map_err(|e| TestCaseError::fail(format!("{c:?}: not JSON: {e}")))?;
                    // a JSON-RPC answer: a result or an error with a numeric code and a message
                    let one = if v.is_array() { v[0].clone() } else { v.clone() };
                    if one.get("error").is_some() || status >= 400 {
                        prop_assert!(one["error"]["code"].is_i64(), "{c:?}: {v}");
                        prop_assert!(one["error"]["message"].is_string(), "{c:?}: {v}");
                    }
                }
                Ok(())
            })
            .unwrap();
        eprintln!("/mcp fuzz: {CASES} requests, statuses {:?}", statuses.lock().unwrap());
        // still serving
        let health =
            rt.block_on(async { client.get(format!("{}/healthz", server.url)).send().await.unwrap().status() });
        assert_eq!(health, 200);
    }
}

/// An rmcp client of the MCP service at `url`, calling with `token`.
async fn rmcp_client(
    url: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    switchboard::util::install_tls();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.to_string());
    rmcp::model::ClientConfig::default().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

/// The MCP tools that run a tree take places among `[server]
/// max_in_flight`, the same places as `/v1/chat`: a call over the limit is
/// turned away at once with JSON-RPC -32000 and `AGENT_UNAVAILABLE`, nothing
/// ran, and a call that holds the place keeps `/v1/chat` out too.
#[tokio::test]
async fn a_tool_call_over_max_in_flight_is_turned_away_at_once_and_shares_the_places_with_v1() {
    let config = switchboard::config::Config::from_toml(
        r#"
[server]
max_in_flight = 1

[prime]
agent = "echo"

[[agents]]
slug = "echo"
name = "Echo"

[auth]
user_tokens = { alice = "t-alice", bob = "t-bob", carol = "t-carol" }
"#,
    )
    .unwrap();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (g, n) = (gate.clone(), inside.clone());
    let runtime = Runtime::builder()
        .config(config)
        .agent(
            "echo",
            agent(move |_ctx, task| {
                let (gate, inside) = (g.clone(), n.clone());
                async move {
                    inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    gate.acquire().await.unwrap().forget();
                    Ok(AgentOutput::new("echoed", task.objective.clone()))
                }
            }),
        )
        .build()
        .unwrap();
    let url = serve(runtime).await;
    let call = |message: &str| {
        let args = serde_json::json!({"target": "echo", "objective": message});
        rmcp::model::CallToolRequestParams::new("delegate").with_arguments(args.as_object().unwrap().clone())
    };
    // alice's call takes the one place and waits in the agent
    let alice = rmcp_client(&url, "t-alice").await;
    let held = tokio::spawn(async move {
        let r = alice.call_tool(call("first")).await;
        (alice, r)
    });
    let since = Instant::now();
    while inside.load(std::sync::atomic::Ordering::SeqCst) < 1 {
        assert!(since.elapsed() < Duration::from_secs(60), "the first call never reached the agent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // bob's call is turned away at once: -32000, the stable code, the limit named
    let bob = rmcp_client(&url, "t-bob").await;
    let refused = tokio::time::timeout(Duration::from_secs(60), bob.call_tool(call("second")))
        .await
        .expect("not queued")
        .expect_err("over max_in_flight");
    let rmcp::service::ServiceError::McpError(e) = refused else { panic!("not a JSON-RPC error: {refused:?}") };
    assert_eq!(e.code.0, -32000, "{e:?}");
    assert!(e.message.contains("max_in_flight"), "{e:?}");
    assert_eq!(e.data.as_ref().map(|d| d["code"].clone()), Some(serde_json::json!("AGENT_UNAVAILABLE")), "{e:?}");
    // the place is the one /v1/chat takes too
    let base = url.trim_end_matches("/mcp");
    let chat = switchboard::util::http_client()
        .unwrap()
        .post(format!("{base}/v1/chat"))
        .bearer_auth("t-carol")
        .json(&serde_json::json!({"message": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status().as_u16(), 503);
    assert_eq!(inside.load(std::sync::atomic::Ordering::SeqCst), 1, "the refused calls never reached the agent");
    // the gate opens: alice's call ends, and the place is free again
    gate.add_permits(2);
    let (_alice, first) = held.await.unwrap();
    let first = first.unwrap();
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let again = bob.call_tool(call("third")).await.unwrap();
    assert_ne!(again.is_error, Some(true), "{again:?}");
}
