//! The LLM planner and model specialists against a real model served
//! OpenAI-compatibly on 127.0.0.1 (`scripts/real-model.sh` serves
//! SmolLM2-135M-Instruct with llama-cpp-python and runs these). A model this
//! small plans badly: what is asserted is the rails and the shapes — a turn
//! ends in a well-formed answer (a success is an answer, never a tool call
//! written out as text, escaped markup, an empty reply or the prompt echoed
//! back), its tree and audit are on file, what the
//! model asked for was admitted only when allowed, malformed output becomes a
//! retry or a clean `AGENT_FAILED`, and the budget holds, counted from the
//! server's own `usage` numbers — never the model's wisdom.
//!
//! Every test is `#[ignore]`d and skips, saying why, when
//! `SWITCHBOARD_REAL_MODEL_URL` (e.g. `http://127.0.0.1:8080/v1`) is unset;
//! `SWITCHBOARD_REAL_MODEL_NAME` names the model (default `smollm2-135m-instruct`).
//! Between the runtime and the server sits a recording proxy, so the tests
//! see every request, reply and `usage` the server sent.
//!
//! Lines starting with `real-model: ` are measurements; the script's summary
//! repeats them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::Value;
use switchboard::config::Config;
use switchboard::protocol::{DelegationError, ErrorCode, RequestId, RetryPolicy, Status};
use switchboard::runtime::TreeView;
use switchboard::{AskOptions, AskResponse, DelegationResponse, Runtime};

use crate::support::*;

/// The longest a turn may take before the test calls it a hang: the turns'
/// deadline (`TURN_MS`) and a margin for recording.
const HANG: Duration = Duration::from_secs(60);
const TURN_MS: u64 = 45_000;

fn real_model() -> Option<(String, String)> {
    match std::env::var("SWITCHBOARD_REAL_MODEL_URL") {
        Ok(url) if !url.trim().is_empty() => {
            let model =
                std::env::var("SWITCHBOARD_REAL_MODEL_NAME").unwrap_or_else(|_| "smollm2-135m-instruct".to_string());
            Some((url.trim().trim_end_matches('/').to_string(), model))
        }
        _ => {
            crate::support::skip(
                "the real-model test",
                "SWITCHBOARD_REAL_MODEL_URL is not set (e.g. http://127.0.0.1:8080/v1)",
                "scripts/real-model.sh, which serves a small model and runs these tests",
            );
            None
        }
    }
}

/// One chat-completions call as it passed through the proxy.
#[derive(Debug, Clone)]
struct Exchange {
    request: Value,
    status: u16,
    /// The server's reply (Null when it was not JSON).
    reply: Value,
    ms: u128,
}

impl Exchange {
    fn usage_total(&self) -> u32 {
        self.reply["usage"]["total_tokens"].as_u64().unwrap_or(0) as u32
    }

    fn message(&self) -> &Value {
        &self.reply["choices"][0]["message"]
    }

    /// The tool calls the model made: (name, arguments as sent).
    fn tool_calls(&self) -> Vec<(String, String)> {
        self.message()["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["function"]["name"].as_str().unwrap_or_default().to_string(),
                    c["function"]["arguments"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    fn offered(&self) -> Vec<String> {
        self.request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect()
    }

    /// The agent that made the call, read from its system prompt.
    fn caller(&self) -> &'static str {
        let system = self.request["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("You are Prime") {
            "prime-boss"
        } else if system.contains("You are Advisor") {
            "advisor"
        } else if system.contains("You are Clerk") {
            "clerk"
        } else {
            "?"
        }
    }
}

/// A proxy on 127.0.0.1 that forwards chat completions to the real server
/// and keeps every exchange.
#[derive(Clone)]
struct Recorder {
    url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl Recorder {
    async fn start(upstream: &str) -> Recorder {
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let client = switchboard::util::http_client().unwrap();
        let target = format!("{upstream}/chat/completions");
        let l = log.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |body: Bytes| {
                let (client, target, l) = (client.clone(), target.clone(), l.clone());
                async move {
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let started = Instant::now();
                    let sent = client.post(&target).header("content-type", "application/json").body(body).send().await;
                    let (status, bytes) = match sent {
                        Ok(res) => {
                            let status = res.status().as_u16();
                            (status, res.bytes().await.unwrap_or_default().to_vec())
                        }
                        Err(e) => (502, format!("proxy: {e}").into_bytes()),
                    };
                    let reply: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    l.lock().unwrap().push(Exchange { request, status, reply, ms: started.elapsed().as_millis() });
                    (StatusCode::from_u16(status).unwrap(), bytes).into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Recorder { url, log }
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }

    fn since(&self, n: usize) -> Vec<Exchange> {
        self.exchanges().split_off(n)
    }
}

/// Prime plans with the model; Advisor (text) and Clerk (JSON mode, a short
/// completion: malformed output is likely) are model specialists. Advisor may
/// delegate to Clerk, but runs at depth 1 under Prime, where the depth rail
/// refuses its delegations.
fn team(url: &str, model: &str) -> Config {
    let toml = format!(
        r#"
[limits]
deadline_ms = {TURN_MS}
ask_max_tokens = 12000

[llm]
base_url = "{url}"
model = "{model}"
max_completion_tokens = 96
tool_rounds = 2

[[agents]]
slug = "prime-boss"
name = "Prime"
tools_allowed = ["delegate"]
may_delegate_to = ["advisor", "clerk"]
limits = {{ max_tokens = 12000 }}

[[agents]]
slug = "advisor"
name = "Advisor"
description = "Answers questions about budgeting and saving money"
backend = {{ kind = "llm", temperature = 0.2 }}
tools_allowed = ["delegate"]
may_delegate_to = ["clerk"]

[[agents]]
slug = "clerk"
name = "Clerk"
description = "Writes a transaction down as a JSON record"
backend = {{ kind = "llm", json_mode = true, max_completion_tokens = 40, temperature = 0.7 }}

[prime]
planner = "llm"

"#
    );
    Config::from_toml(&toml).unwrap()
}

async fn runtime(url: &str, model: &str) -> (Runtime, crate::db::Db) {
    let db = crate::db::sqlite().await;
    let rt = Runtime::builder().config(team(url, model)).store(db.dyn_store()).build().unwrap();
    (rt, db)
}

/// An operator's request to `to` as if from `from`, with a turn's deadline.
fn direct(from: &str, to: &str, objective: &str) -> switchboard::DelegationRequest {
    let mut req = request(from, to, objective);
    req.constraints.deadline_ms = TURN_MS;
    req
}

fn no_retry() -> Option<RetryPolicy> {
    Some(RetryPolicy { enabled: false, max_attempts: None, backoff_strategy: Default::default() })
}

/// A user's turn, bounded: a refusal (e.g. `TOKEN_BUDGET_EXCEEDED` for the
/// whole turn) is an `Err`, with its tree on file under the returned id.
async fn ask(rt: &Runtime, message: &str) -> (Result<AskResponse, DelegationError>, RequestId, Duration) {
    let id = RequestId::new();
    let opts = AskOptions { request_id: Some(id), ..AskOptions::default() };
    let started = Instant::now();
    let r = tokio::time::timeout(HANG, rt.ask(&user("alice"), message, opts))
        .await
        .unwrap_or_else(|_| panic!("the turn '{message}' hung past {HANG:?}"));
    (r, id, started.elapsed())
}

async fn delegate(rt: &Runtime, req: switchboard::DelegationRequest) -> (DelegationResponse, Duration) {
    let started = Instant::now();
    let r = tokio::time::timeout(HANG, rt.delegate(&operator(), req)).await.expect("the delegation hung");
    (r, started.elapsed())
}

fn nodes(t: &TreeView) -> Vec<&TreeView> {
    let mut all = vec![t];
    for c in &t.children {
        all.extend(nodes(c));
    }
    all
}

/// The codes a failed node may end with here: the rails' and a model's
/// clean failures, nothing else.
fn clean(code: &str) -> bool {
    [
        "AGENT_FAILED",
        "TOKEN_BUDGET_EXCEEDED",
        "DEADLINE_EXCEEDED",
        "DEPTH_LIMIT",
        "TOOL_NOT_ALLOWED",
        "DELEGATION_NOT_ALLOWED",
        "INVALID_REQUEST",
        "FAN_OUT_LIMIT",
        "CYCLE_DETECTED",
        "VERIFICATION_FAILED",
        "AGENT_UNAVAILABLE",
        "NEEDS_INPUT",
    ]
    .contains(&code)
}

/// The tree of a turn: well-formed, within `budget`, every node that ran and
/// answered used tokens, every failure has a clean code.
fn check_tree(tree: &TreeView, budget: u32) {
    for n in nodes(tree) {
        assert!(["success", "partial", "failed", "refused", "needs_input"].contains(&n.status.as_str()), "{n:?}");
        assert!(n.tokens <= budget, "{} used {} tokens of a budget of {budget}", n.agent, n.tokens);
        let child_sum: u32 = n.children.iter().map(|c| c.tokens).sum();
        assert!(child_sum <= n.tokens || n.status == "failed", "{}: children {child_sum} > {}", n.agent, n.tokens);
        match n.status.as_str() {
            "refused" => {
                assert!(n.error_code.as_deref().is_some_and(clean), "{n:?}");
                if n.attempts == 0 {
                    assert_eq!(n.tokens, 0, "a refusal before running costs nothing: {n:?}");
                }
            }
            "success" | "partial" => assert!(n.tokens > 0, "{} answered with no tokens counted: {n:?}", n.agent),
            _ => assert!(n.error_code.as_deref().is_some_and(clean), "{n:?}"),
        }
    }
}

/// The audit log verifies and holds a record for every node of the tree,
/// with the node's outcome and code.
async fn check_audit(rt: &Runtime, tree: &TreeView) {
    let report = rt.store().verify_audit().await.unwrap();
    assert!(report.valid, "{report:?}");
    let log = rt.store().audit_log().await.unwrap();
    for n in nodes(tree) {
        let e = log
            .iter()
            .find(|e| e.record.request_id == n.request_id)
            .unwrap_or_else(|| panic!("{} ({}) is not in the audit log", n.agent, n.request_id));
        assert_eq!(e.record.outcome, n.status, "{n:?}");
        assert_eq!(e.record.error_code, n.error_code, "{n:?}");
        assert_eq!(e.record.tokens, n.tokens, "{n:?}");
    }
}

fn well_formed(status: Status) -> bool {
    matches!(status, Status::Success | Status::Partial | Status::Failed | Status::NeedsInput)
}

/// Whether every node that ran answered at its first attempt: then every
/// token the server reported is in the tree.
fn first_time_right(tree: &TreeView) -> bool {
    nodes(tree).iter().all(|n| match n.status.as_str() {
        "success" | "partial" => n.attempts == 1,
        "refused" => n.attempts == 0,
        _ => false,
    })
}

/// The tokens the tree counts against those the server reported for the same
/// calls: equal when every node answered at its first attempt; never more.
/// Returns the tokens served but not counted.
fn check_usage(tree: &TreeView, calls: &[Exchange]) -> u32 {
    let served: u32 = calls.iter().map(Exchange::usage_total).sum();
    assert!(calls.iter().all(|c| c.status != 200 || c.usage_total() > 0), "the server reports usage: {calls:?}");
    if first_time_right(tree) {
        assert_eq!(tree.tokens, served, "the tree counts what the server reported: {tree:#?}");
    }
    assert!(tree.tokens <= served, "{} counted > {served} served", tree.tokens);
    served - tree.tokens
}

fn render(tree: &TreeView) -> String {
    tree.render().lines().map(str::trim_end).collect::<Vec<_>>().join(" | ")
}

/// (a) A user's turn through the LLM planner ends in a well-formed answer,
/// its tree and audit are on file, and the tokens are the server's.
#[tokio::test]
#[ignore = "needs a model server: scripts/real-model.sh"]
async fn a_turn_through_the_llm_planner_ends_in_a_well_formed_answer_on_file() {
    let Some((url, model)) = real_model() else { return };
    let proxy = Recorder::start(&url).await;
    let (rt, _db) = runtime(&proxy.url, &model).await;
    for message in [
        "Hi! What can you do?",
        "I earn 3000 a month. Ask the advisor how much I should save, and have the clerk record a coffee for 4.50.",
    ] {
        let before = proxy.exchanges().len();
        let (r, id, took) = ask(&rt, message).await;
        assert!(took <= Duration::from_millis(TURN_MS + 5_000), "the turn took {took:?}");
        let stored = rt.tree(id).await.unwrap().expect("the turn's tree is on file");
        assert_eq!(stored.agent, "prime-boss");
        assert_eq!(stored.origin, "user");
        let outcome = match &r {
            Ok(r) => {
                assert!(well_formed(r.status), "{r:?}");
                assert!(!r.answer.is_empty(), "an answer, or the error's message, is always there");
                // an answer is an answer: a success is never a tool call written as text,
                // escaped markup, an empty reply or the prompt echoed back
                if r.status == Status::Success {
                    let junk = switchboard::agent::llm::unusable(&r.answer, &[message]);
                    assert!(junk.is_none(), "'{message}' succeeded with no answer ({junk:?}): {}", r.answer);
                }
                if r.status == Status::Failed {
                    let code = r.response.error_code().expect("a failed turn says why").to_string();
                    assert!(clean(&code), "{code}");
                }
                assert_eq!(stored, r.tree);
                assert_eq!(r.response.token_usage.total, stored.tokens);
                format!(
                    "{} ({})",
                    r.status.as_str(),
                    r.response.error_code().map(|c| c.to_string()).unwrap_or_default()
                )
            }
            Err(e) => {
                assert!(clean(e.code.as_str()), "{e:?}");
                format!("refused ({})", e.code)
            }
        };
        check_tree(&stored, 12_000);
        check_audit(&rt, &stored).await;

        let calls = proxy.since(before);
        if calls.is_empty() {
            // no call finished: the breaker rested Prime after an earlier
            // failing turn, or the deadline passed while the server was busy
            assert!(stored.status != "success", "an answer with no model call: {stored:?}");
            println!("real-model: turn '{message}': {outcome} in {took:.1?} with no model call finished");
            continue;
        }
        // llama-cpp-python answers some requests with 500 (see the report): a
        // clean AGENT_UNAVAILABLE and a retry, never a panic
        let refused_by_server = calls.iter().filter(|c| c.status != 200).count();
        assert_eq!(calls[0].caller(), "prime-boss");
        assert!(calls[0].offered().contains(&"delegate".to_string()), "Prime is offered its delegate tool");
        let lost = check_usage(&stored, &calls);
        println!(
            "real-model: turn '{message}': {outcome} in {took:.1?}; {} model calls ({refused_by_server} answered 500), {} ms each on average; {} tokens counted, {lost} more served by failed attempts; tree: {}",
            calls.len(),
            calls.iter().map(|c| c.ms).sum::<u128>() / calls.len() as u128,
            stored.tokens,
            render(&stored),
        );
        if let Ok(r) = &r {
            println!("real-model:   answer: {}", r.answer.chars().take(160).collect::<String>().replace('\n', " "));
        }
    }
}

/// (b) Whatever the model asked for was admitted only when allowed: a call
/// to a tool it was not offered, to an agent outside its `may_delegate_to`,
/// or past the depth limit is refused by a rail and audited. Under Prime,
/// Advisor runs at depth 1 and is offered `delegate` to Clerk, which the
/// depth rail refuses (its child would be at depth 2 = `max_depth`); asked
/// directly with `max_depth = 3`, it may.
#[tokio::test]
#[ignore = "needs a model server: scripts/real-model.sh"]
async fn what_the_model_asks_for_is_admitted_only_when_allowed() {
    let Some((url, model)) = real_model() else { return };
    let proxy = Recorder::start(&url).await;
    let (rt, _db) = runtime(&proxy.url, &model).await;
    let config = rt.config().clone();
    // (tree, deepest depth at which a delegation may run)
    let mut trees: Vec<(TreeView, u32)> = Vec::new();
    for message in [
        "Delegate to the advisor: how much of my 3000 monthly salary should I save? The advisor should delegate to the clerk to record it.",
        "Use the delegate tool: employee clerk, task: record 'Starbucks 4.50 on 2025-10-01'.",
    ] {
        let (r, id, _) = ask(&rt, message).await;
        if let Err(e) = &r {
            assert!(clean(e.code.as_str()), "{e:?}");
        }
        trees.push((rt.tree(id).await.unwrap().expect("on file"), 1));
    }
    let mut req =
        direct("prime-boss", "advisor", "Use the delegate tool to ask the clerk to record: rent 1200 on 2025-10-01.");
    req.constraints.max_depth = 3;
    let (direct, _) = delegate(&rt, req).await;
    assert!(well_formed(direct.status), "{direct:?}");
    trees.push((rt.tree(direct.request_id).await.unwrap().expect("on file"), 2));

    assert!(rt.store().verify_audit().await.unwrap().valid);
    let log = rt.store().audit_log().await.unwrap();
    let all: Vec<(&TreeView, u32, u32)> = trees
        .iter()
        .flat_map(|(t, deepest)| {
            // (node, its depth, deepest allowed)
            fn walk<'a>(n: &'a TreeView, d: u32, deepest: u32, out: &mut Vec<(&'a TreeView, u32, u32)>) {
                out.push((n, d, deepest));
                for c in &n.children {
                    walk(c, d + 1, deepest, out);
                }
            }
            let mut out = Vec::new();
            // a user's turn starts at depth 0; the direct request's target runs at 1
            walk(t, if t.origin == "user" { 0 } else { 1 }, *deepest, &mut out);
            out
        })
        .collect();

    let mut asked = 0;
    for ex in proxy.exchanges() {
        let caller = ex.caller();
        let offered = ex.offered();
        for (name, args) in ex.tool_calls() {
            asked += 1;
            let target: Option<String> = serde_json::from_str::<Value>(&args)
                .ok()
                .and_then(|a| a["employee"].as_str().or_else(|| a["agent"].as_str()).map(str::to_string));
            let configured = config.agent(caller).is_some_and(|spec| {
                target
                    .as_deref()
                    .is_some_and(|t| spec.may_delegate_to.contains(t) || spec.may_delegate_to.contains("*"))
            });
            println!(
                "real-model: {caller} asked for {name}({}); offered {offered:?}; in its may_delegate_to: {configured}",
                args.chars().take(120).collect::<String>()
            );
            if !offered.contains(&name) || !configured {
                // a target refused by the rails is on file under its name; a tool not
                // offered, or arguments that don't parse, under the tool's
                let what = match &target {
                    Some(t) if offered.contains(&name) => t.clone(),
                    _ => format!("tool:{name}"),
                };
                assert!(
                    all.iter().any(|(n, _, _)| n.origin == caller && n.agent == what && n.status == "refused"),
                    "{caller}'s call {name}({args}) was not refused on file"
                );
            }
        }
    }
    let (mut admitted, mut refused) = (Vec::new(), Vec::new());
    for (n, depth, deepest) in &all {
        let e = log.iter().find(|e| e.record.request_id == n.request_id).expect("every node is audited");
        assert_eq!(e.record.outcome, n.status);
        if n.origin == "user" || (*depth == 1 && n.origin == "prime-boss" && *deepest == 2) {
            continue; // the roots
        }
        let edge = format!("{}→{}", n.origin, n.agent);
        if n.status == "refused" {
            refused.push(format!("{edge} {}", n.error_code.clone().unwrap_or_default()));
            continue;
        }
        let spec = config.agent(&n.origin).expect("every origin is a configured agent");
        assert!(spec.may_delegate_to.contains(&n.agent), "{edge} ran though not in may_delegate_to");
        assert!(depth <= deepest, "{edge} ran at depth {depth}, past the limit");
        admitted.push(edge);
    }
    println!("real-model: the model made {asked} tool calls; admitted: {admitted:?}; refused by a rail: {refused:?}");
}

/// (c) Malformed output from the model (Clerk must answer with a JSON object
/// that has a "result", in 40 tokens) becomes a retry or a clean
/// `AGENT_FAILED` naming what was wrong, never a panic or a hang.
#[tokio::test]
#[ignore = "needs a model server: scripts/real-model.sh"]
async fn malformed_model_output_becomes_a_retry_or_a_clean_agent_failed() {
    let Some((url, model)) = real_model() else { return };
    let proxy = Recorder::start(&url).await;
    let (rt, _db) = runtime(&proxy.url, &model).await;
    let (mut ok, mut failed, mut retried, mut malformed) = (0, 0, 0, 0);
    for (i, objective) in [
        "Record this purchase: Starbucks, 4.50, 2025-10-01, card ending 1234, category coffee, note: met a client",
        "Record: Staples 19.99 office supplies, Shell 40.00 fuel, Netflix 15.49 streaming, all in October 2025",
        "Write down the rent payment of 1200 to the landlord on the first of the month",
    ]
    .into_iter()
    .enumerate()
    {
        let before = proxy.exchanges().len();
        let mut req = direct("prime-boss", "clerk", objective);
        // a user of its own each time: Clerk's breaker rests it for a user
        // whose requests keep failing
        req.user_id = user(["alice", "bob", "carol"][i]);
        if i == 2 {
            req.retry_policy = no_retry();
        }
        let (r, took) = delegate(&rt, req).await;
        let calls = proxy.since(before);
        let attempts = r.execution.as_ref().map_or(0, |e| e.attempts);
        assert!(calls.len() as u32 <= attempts, "at most one model call per attempt (Clerk has no tools)");
        for c in &calls {
            let content = c.message()["content"].as_str().unwrap_or_default();
            let good = serde_json::from_str::<Value>(content.trim())
                .ok()
                .is_some_and(|v| v["result"].as_str().is_some_and(|s| !s.is_empty()) || v["answer"].is_string());
            if !good {
                malformed += 1;
            }
        }
        match r.status {
            Status::Success => {
                ok += 1;
                assert!(!r.result.is_empty());
            }
            Status::Failed => {
                failed += 1;
                let e = r.error.as_ref().unwrap();
                assert!(
                    matches!(
                        e.code,
                        ErrorCode::AgentFailed
                            | ErrorCode::AgentUnavailable
                            | ErrorCode::TokenBudgetExceeded
                            | ErrorCode::DeadlineExceeded
                    ),
                    "{e:?}"
                );
                if e.code == ErrorCode::AgentFailed {
                    assert!(e.message.contains("not what was asked") || e.message.contains("model"), "{}", e.message);
                }
            }
            other => panic!("Clerk ended {other:?}: {r:?}"),
        }
        if attempts > 1 {
            retried += 1;
        }
        // a retry tells the model what was wrong with the earlier answers (a
        // call cut off by the deadline is not on the proxy's record)
        for c in calls.iter().skip(1) {
            let last = c.request["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap();
            assert!(last.contains("Earlier answers to this task were rejected"), "{last}");
        }
        if i == 2 {
            assert_eq!(attempts, 1, "retries off: one attempt");
        }
        let tree = rt.tree(r.request_id).await.unwrap().unwrap();
        check_tree(&tree, switchboard::protocol::request::DEFAULT_MAX_TOKENS);
        check_audit(&rt, &tree).await;
        println!(
            "real-model: clerk #{i}: {} after {attempts} attempt(s) in {took:.1?}{}; tokens counted {} of {} served",
            r.status.as_str(),
            r.error
                .as_ref()
                .map(|e| format!(" ({}: {})", e.code, e.message.chars().take(100).collect::<String>()))
                .unwrap_or_default(),
            r.token_usage.total,
            calls.iter().map(Exchange::usage_total).sum::<u32>(),
        );
    }
    println!(
        "real-model: clerk: {ok} answered, {failed} failed cleanly, {retried} retried, {malformed} malformed replies from the model"
    );
}

/// (d) A small budget: refused before anything is sent when the prompt
/// cannot fit, else `max_tokens` is what is left, and the answer is charged
/// with the server's usage — `TOKEN_BUDGET_EXCEEDED` when the real count
/// runs over, else a usage within the budget that equals the server's.
#[tokio::test]
#[ignore = "needs a model server: scripts/real-model.sh"]
async fn a_small_budget_ends_in_token_budget_exceeded_or_within_it_by_the_servers_count() {
    let Some((url, model)) = real_model() else { return };
    let proxy = Recorder::start(&url).await;
    let (rt, _db) = runtime(&proxy.url, &model).await;
    let mut outcomes = Vec::new();
    for budget in [40u32, 200, 260, 320, 400, 600] {
        let before = proxy.exchanges().len();
        let mut req =
            direct("prime-boss", "advisor", "In two sentences: how much of a 3000 monthly salary should I save?");
        req.constraints.max_tokens = budget;
        req.retry_policy = no_retry();
        // no tools: one call, whose max_tokens the server honours
        req.tools = Some(Vec::new());
        let (r, _) = delegate(&rt, req).await;
        let calls = proxy.since(before);
        let served: u32 = calls.iter().map(Exchange::usage_total).sum();
        for c in &calls {
            let max = c.request["max_tokens"].as_u64().unwrap() as u32;
            assert!(max >= 16 && max < budget, "max_tokens {max} is what the budget of {budget} leaves");
        }
        let outcome = match (r.status, r.error_code()) {
            (Status::Success, _) => {
                assert!(r.token_usage.total <= budget, "{} > {budget}", r.token_usage.total);
                assert_eq!(r.token_usage.total, served, "usage is the server's count");
                format!("success, {} of {budget} tokens", r.token_usage.total)
            }
            (Status::Failed, Some(ErrorCode::TokenBudgetExceeded)) => {
                assert!(r.token_usage.total <= budget, "even a refused answer is charged no more than the budget");
                if calls.is_empty() {
                    format!("TOKEN_BUDGET_EXCEEDED before sending ({budget})")
                } else {
                    format!("TOKEN_BUDGET_EXCEEDED after the server counted {served} ({budget})")
                }
            }
            (Status::Failed, Some(ErrorCode::AgentFailed)) => format!("AGENT_FAILED (malformed) at {budget}"),
            (Status::Failed, Some(ErrorCode::DeadlineExceeded)) => {
                format!("DEADLINE_EXCEEDED (a busy server) at {budget}")
            }
            _ => panic!("budget {budget}: {r:?}"),
        };
        if budget == 40 {
            assert_eq!(r.error_code(), Some(ErrorCode::TokenBudgetExceeded));
            assert!(calls.is_empty(), "nothing is sent when the prompt alone does not fit");
        }
        let tree = rt.tree(r.request_id).await.unwrap().unwrap();
        check_tree(&tree, budget);
        check_audit(&rt, &tree).await;
        outcomes.push(outcome);
    }
    println!("real-model: budgets: {}", outcomes.join("; "));
    assert!(outcomes.iter().any(|o| !o.contains("before sending")), "some budget let a call through: {outcomes:?}");

    // the same through a user's turn: Prime's budget is ask_max_tokens
    let proxy2 = Recorder::start(&url).await;
    let mut config = team(&proxy2.url, &model);
    config.limits.ask_max_tokens = 700;
    let db = crate::db::sqlite().await;
    let rt = Runtime::builder().config(config).store(db.dyn_store()).build().unwrap();
    let (r, id, _) = ask(&rt, "Ask the advisor how to save 100 a month.").await;
    let tree = rt.tree(id).await.unwrap().expect("on file");
    let outcome = match &r {
        Ok(r) => {
            assert!(well_formed(r.status), "{r:?}");
            format!("{} ({})", r.status.as_str(), r.response.error_code().map(|c| c.to_string()).unwrap_or_default())
        }
        Err(e) => {
            assert_eq!(e.code, ErrorCode::TokenBudgetExceeded, "{e:?}");
            format!("refused ({}: {})", e.code, e.message)
        }
    };
    assert!(tree.tokens <= 700, "{tree:?}");
    check_tree(&tree, 700);
    check_audit(&rt, &tree).await;
    let lost = check_usage(&tree, &proxy2.exchanges());
    println!(
        "real-model: a turn with ask_max_tokens = 700: {outcome}; {} tokens counted, {lost} more served",
        tree.tokens
    );
}
