//! LLM agents against a real HTTP server on 127.0.0.1 that speaks the
//! OpenAI chat-completions API and answers from a script: delegation by tool
//! call, a tool call refused by a rail, malformed output, 429 with
//! Retry-After, 500, a timeout, a tool loop that would not end, the budget
//! checked before anything is sent, and Prime's LLM planner.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use switchboard::AskOptions;
use switchboard::config::Config;
use switchboard::protocol::{ErrorCode, RetryPolicy, Status};
use switchboard::testing::{assistant_text, assistant_tool_calls};
use switchboard::{DelegationRequest, Runtime};

use crate::support::*;

/// One scripted answer of the fake model server.
pub enum Scripted {
    /// An assistant message, with usage.
    Message(Value),
    Status(u16, Option<&'static str>),
    Slow(Duration, Value),
}

pub fn text(content: &str) -> Scripted {
    Scripted::Message(assistant_text(content))
}

pub fn tool_calls(calls: &[(&str, Value)]) -> Scripted {
    Scripted::Message(assistant_tool_calls(calls))
}

#[derive(Clone)]
pub struct FakeLlm {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Value>>>,
    script: Arc<Mutex<VecDeque<Scripted>>>,
}

impl FakeLlm {
    pub async fn start(script: Vec<Scripted>) -> FakeLlm {
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let (r, s) = (requests.clone(), script.clone());
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |headers: HeaderMap, Json(body): Json<Value>| {
                let (r, s) = (r.clone(), s.clone());
                async move {
                    let mut body = body;
                    body["_authorization"] = json!(headers.get("authorization").and_then(|v| v.to_str().ok()));
                    r.lock().unwrap().push(body.clone());
                    // as llama-cpp-python answers: an assistant message's content must be a string
                    let messages = body["messages"].as_array().cloned().unwrap_or_default();
                    if messages.iter().any(|m| m["role"] == "assistant" && !m["content"].is_string()) {
                        return (StatusCode::INTERNAL_SERVER_ERROR, "messages: Input should be a valid string")
                            .into_response();
                    }
                    let next = s.lock().unwrap().pop_front();
                    let completion = |message: Value| {
                        Json(json!({
                            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
                        }))
                        .into_response()
                    };
                    let response: Response = match next {
                        Some(Scripted::Message(m)) => completion(m),
                        Some(Scripted::Slow(d, m)) => {
                            tokio::time::sleep(d).await;
                            completion(m)
                        }
                        Some(Scripted::Status(code, retry_after)) => {
                            let mut res =
                                (StatusCode::from_u16(code).unwrap(), Json(json!({"error": {"message": "scripted"}})))
                                    .into_response();
                            if let Some(ra) = retry_after {
                                res.headers_mut().insert("retry-after", ra.parse().unwrap());
                            }
                            res
                        }
                        None => (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response(),
                    };
                    response
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeLlm { url, requests, script }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    pub fn left(&self) -> usize {
        self.script.lock().unwrap().len()
    }
}

fn team(url: &str, extra: &str) -> Config {
    let toml = format!(
        r#"
[llm]
base_url = "{url}"
model = "gpt-4o-mini"
# any variable that is surely set stands in for a key: it is sent as the bearer token
api_key_env = "PATH"

[[agents]]
slug = "caller"
name = "Caller"
backend = {{ kind = "builtin", name = "tag-ai" }}
may_delegate_to = ["*"]
tools_allowed = ["delegate", "ask_agent", "categorize", "find_deductions"]

[[agents]]
slug = "advisor"
name = "Advisor"
description = "A financial advisor model"
backend = {{ kind = "llm", tool_rounds = 3 }}
may_delegate_to = ["tag-ai", "ledger-tax"]
tools_allowed = ["delegate", "ask_agent", "categorize", "find_deductions"]

[[agents]]
slug = "tag-ai"
name = "Tag"
description = "Categorizes transactions"
tools_allowed = ["categorize"]

[[agents]]
slug = "ledger-tax"
name = "Ledger"
description = "Finds deductions"
tools_allowed = ["find_deductions"]
{extra}
"#
    );
    Config::from_toml(&toml).unwrap()
}

fn runtime(url: &str, extra: &str) -> Runtime {
    Runtime::builder().config(team(url, extra)).build().unwrap()
}

fn ask_advisor(objective: &str) -> DelegationRequest {
    let mut r = request("caller", "advisor", objective);
    r.constraints.max_depth = 3;
    r
}

fn tools_offered(req: &Value) -> Vec<String> {
    req["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

fn tool_messages(req: &Value) -> Vec<Value> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

#[tokio::test]
async fn a_delegation_by_tool_call_goes_through_the_runtime_and_usage_is_reconciled() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("delegate", json!({"employee": "tag-ai", "task": "Categorize: 2025-10-01 Starbucks 4.50"}))]),
        text("Tag put the Starbucks purchase under coffee.\n```json\n{\"summary\": \"Coffee it is\", \"facts\": [\"buys coffee at Starbucks\"]}\n```"),
    ])
    .await;
    let rt = runtime(&fake.url, "");
    let r = rt.delegate(&operator(), ask_advisor("Where did my money go?")).await;
    assert_eq!(r.status, Status::Success, "{r:?}");
    assert_eq!(r.result, "Tag put the Starbucks purchase under coffee.");
    assert_eq!(r.summary, "Coffee it is");
    assert_eq!(r.new_facts[0].fact, "buys coffee at Starbucks");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0];
    assert_eq!(first["model"], "gpt-4o-mini");
    assert_eq!(first["_authorization"], format!("Bearer {}", std::env::var("PATH").unwrap()));
    assert_eq!(tools_offered(first), ["delegate", "ask_agent"]);
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["properties"]["employee"]["enum"],
        json!(["tag-ai", "ledger-tax"])
    );
    let max_tokens = first["max_tokens"].as_u64().unwrap();
    assert!(max_tokens > 0 && max_tokens <= 512, "{max_tokens}");
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("member of a team of AI agents"));
    assert!(
        first["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("Objective: Where did my money go?")
    );
    let results = tool_messages(&reqs[1]);
    assert_eq!(results[0]["employee"], "tag-ai");
    assert!(results[0]["summary"].as_str().unwrap().contains("Dining - Coffee"), "{results:?}");

    let tree = rt.tree(r.request_id).await.unwrap().unwrap();
    assert_eq!(tree.children[0].agent, "tag-ai", "the tool call became a delegation in the tree");
    // two model calls of 120 tokens each, plus Tag's own
    assert_eq!(r.token_usage.total, 240 + tree.children[0].tokens);
}

#[tokio::test]
async fn the_agents_facts_and_recent_messages_reach_the_model() {
    let fake = FakeLlm::start(vec![
        text("First answer. ```json {\"facts\": [{\"fact\": \"lives in Canada\", \"scope\": \"global\"}]} ```"),
        text("Second answer."),
    ])
    .await;
    let rt = runtime(&fake.url, "");
    let parent = switchboard::protocol::SessionId::new();
    for objective in ["First question", "Second question"] {
        let mut req = ask_advisor(objective);
        req.parent_session_id = Some(parent);
        assert!(rt.delegate(&operator(), req).await.is_success());
    }
    let second = &fake.requests()[1];
    let messages = second["messages"].as_array().unwrap();
    assert!(messages[0]["content"].as_str().unwrap().contains("- lives in Canada"), "facts in the system prompt");
    let turns: Vec<(&str, &str)> =
        messages[1..].iter().map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap())).collect();
    assert_eq!(turns[0], ("user", "First question"));
    assert_eq!(turns[1], ("assistant", "First answer."));
    assert!(turns[2].1.starts_with("Objective: Second question"));
}

#[tokio::test]
async fn tool_calls_refused_by_a_rail_or_not_offered_go_back_to_the_model_as_refusals() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[
            ("delegate", json!({"employee": "tag-ai", "task": "Categorize"})),
            ("delete_everything", json!({})),
            ("delegate", json!({"employee": "caller", "task": "go around the enum"})),
        ]),
        text("I could not do all of it."),
    ])
    .await;
    let rt = runtime(&fake.url, "");
    // default max_depth 2: the advisor runs at 1, so its delegates are refused
    let r = rt.delegate(&operator(), request("caller", "advisor", "Try everything")).await;
    assert!(r.is_success(), "{r:?}");
    let results = tool_messages(&fake.requests()[1]);
    assert_eq!(results[0]["error"]["code"], "DEPTH_LIMIT");
    assert_eq!(results[1]["error"]["code"], "TOOL_NOT_ALLOWED");
    assert_eq!(results[2]["error"]["code"], "DELEGATION_NOT_ALLOWED");
    let tree = rt.tree(r.request_id).await.unwrap().unwrap();
    assert!(tree.children.iter().all(|c| c.status == "refused"), "the rails, not the model, decided");
}

#[tokio::test]
async fn an_agent_without_the_delegate_tool_is_never_offered_it() {
    let fake = FakeLlm::start(vec![text("Done.")]).await;
    let rt = runtime(&fake.url, "");
    let mut req = ask_advisor("Answer without help");
    req.tools = Some(vec!["categorize".into()]);
    assert!(rt.delegate(&operator(), req).await.is_success());
    assert!(tools_offered(&fake.requests()[0]).is_empty());
}

#[tokio::test]
async fn malformed_output_is_agent_failed_with_the_reason() {
    let fake = FakeLlm::start(vec![text("Here you go ```json {\"facts\": [broken ```")]).await;
    let rt = runtime(&fake.url, "");
    let mut req = ask_advisor("Give me facts");
    req.retry_policy = Some(RetryPolicy { enabled: false, max_attempts: None, backoff_strategy: Default::default() });
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
    // the server counted the call (100 + 20): a failed attempt's tokens are spent all the same
    assert_eq!(r.token_usage.total, 120, "{:?}", r.token_usage);
    assert!(r.error.unwrap().message.contains("does not parse"));
}

#[tokio::test]
async fn a_429_is_retried_after_the_time_it_asks_for() {
    let fake = FakeLlm::start(vec![Scripted::Status(429, Some("1")), text("Finally.")]).await;
    let rt = runtime(&fake.url, "");
    let started = Instant::now();
    let r = rt.delegate(&operator(), ask_advisor("Hurry")).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.execution.unwrap().attempts, 2);
    assert!(started.elapsed() >= Duration::from_secs(1), "waited {:?}", started.elapsed());
}

#[tokio::test]
async fn a_500_is_retried_and_a_slow_model_times_out() {
    let fake = FakeLlm::start(vec![Scripted::Status(500, None), text("Recovered.")]).await;
    let rt = runtime(&fake.url, "");
    let r = rt.delegate(&operator(), ask_advisor("Try again")).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.execution.unwrap().attempts, 2);

    let fake =
        FakeLlm::start(vec![Scripted::Slow(Duration::from_secs(3), json!({"role": "assistant", "content": "late"}))])
            .await;
    let rt = runtime(&fake.url, "");
    let mut req = ask_advisor("Be quick");
    req.constraints.deadline_ms = 400;
    let started = Instant::now();
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::DeadlineExceeded));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_tool_loop_that_would_not_end_is_cut_off() {
    let forever = || tool_calls(&[("ask_agent", json!({"agent": "tag-ai", "question": "again?"}))]);
    let fake = FakeLlm::start(vec![forever(), forever(), forever(), forever(), forever()]).await;
    let rt = runtime(&fake.url, "");
    let mut req = ask_advisor("Loop");
    req.retry_policy = Some(RetryPolicy { enabled: false, max_attempts: None, backoff_strategy: Default::default() });
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
    assert!(r.error.unwrap().message.contains("kept calling tools"));
    assert_eq!(r.token_usage.total, 4 * 120, "four counted calls, none answered: {:?}", r.token_usage);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "3 rounds with tools, then one that must answer");
    assert!(reqs[3].get("tools").is_none(), "the last round offers no tools");
    assert_eq!(fake.left(), 1);
}

#[tokio::test]
async fn a_call_over_the_budget_is_refused_before_any_request_leaves() {
    let fake = FakeLlm::start(vec![text("never")]).await;
    let rt = runtime(&fake.url, "");
    let mut req = ask_advisor("Summarize");
    req.input = "lorem ipsum dolor sit amet ".repeat(100);
    req.constraints.max_tokens = 200;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::TokenBudgetExceeded));
    assert!(fake.requests().is_empty(), "nothing was sent");
}

const LLM_PRIME: &str = r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
tools_allowed = ["delegate", "categorize", "find_deductions"]
may_delegate_to = ["tag-ai", "ledger-tax"]
limits = { max_tokens = 16000 }

[prime]
planner = "llm"
"#;

#[tokio::test]
async fn prime_with_the_llm_planner_delegates_in_parallel_and_in_sequence_and_merges() {
    let fake = FakeLlm::start(vec![
        // parallel: two delegations in one turn
        tool_calls(&[
            ("delegate", json!({"employee": "tag-ai", "task": "Categorize: 2025-10-01 Starbucks 4.50"})),
            ("delegate", json!({"employee": "ledger-tax", "task": "Deductions in: 2025-10-02 Staples 19.99"})),
        ]),
        text("Tag and Ledger looked at it: coffee, and office supplies you can deduct."),
        // sequential: one, then another with the first's result
        tool_calls(&[("delegate", json!({"employee": "tag-ai", "task": "Categorize: 2025-10-03 Shell 40.00"}))]),
        tool_calls(&[(
            "delegate",
            json!({"employee": "ledger-tax", "task": "Is fuel deductible?", "context": {"category": "Transport"}}),
        )]),
        text("Fuel is transport; Ledger says only business trips count."),
        // directly
        text("Hello! How can I help?"),
    ])
    .await;
    let rt = runtime(&fake.url, LLM_PRIME);
    let parallel = rt.ask(&user("alice"), "Analyze my spending", AskOptions::default()).await.unwrap();
    let mut kids: Vec<&str> = parallel.tree.children.iter().map(|c| c.agent.as_str()).collect();
    kids.sort();
    assert_eq!(kids, ["ledger-tax", "tag-ai"]);
    assert!(parallel.answer.contains("Tag and Ledger"));
    let sequential = rt.ask(&user("alice"), "Is my fuel deductible?", AskOptions::default()).await.unwrap();
    let kids: Vec<&str> = sequential.tree.children.iter().map(|c| c.agent.as_str()).collect();
    assert_eq!(kids, ["tag-ai", "ledger-tax"]);
    let direct = rt.ask(&user("alice"), "Hi", AskOptions::default()).await.unwrap();
    assert!(direct.tree.children.is_empty());
    assert_eq!(direct.answer, "Hello! How can I help?");
    assert!(fake.requests()[0]["messages"][0]["content"].as_str().unwrap().contains("You are Prime"));

    // one line of config switches back to the rule planner: no model is called
    let before = fake.requests().len();
    let rules = Runtime::builder()
        .config(team(&fake.url, &LLM_PRIME.replace("planner = \"llm\"", "planner = \"rules\"")))
        .build()
        .unwrap();
    let r = rules.ask(&user("alice"), "Hello", AskOptions::default()).await.unwrap();
    assert!(r.answer.contains("My team can help"), "{}", r.answer);
    assert_eq!(fake.requests().len(), before);
}

/// The OpenAI-compatible front door, driven by the official `openai` Python
/// package (installed by .ci/run).
#[tokio::test]
async fn the_openai_front_door_answers_the_official_client() {
    if !crate::support::python_has("openai", "openai") {
        return;
    }
    let mut config = Config::builtin();
    config.auth.user_tokens = [("alice".to_string(), "oa-alice".to_string())].into();
    let auth = config.auth.clone();
    let state = Arc::new(switchboard::server::AppState::new(Runtime::builder().config(config).build().unwrap()));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, switchboard::server::app(state)).await });

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openai_client.py");
    let out = tokio::process::Command::new("python3").args([script, &url, "oa-alice"]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["models"].as_array().unwrap().contains(&json!("prime-boss")), "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert!(v["answer"].as_str().unwrap().contains("annual percentage rate"), "{v}");
    assert!(v["streamed"].as_str().unwrap().contains("Dining - Coffee"), "{v}");
    assert_eq!(v["finish"], "stop");
    assert_eq!(v["missing_status"], 404);
}

/// With a model, an answer is an answer (issue 44): a final reply that is a
/// tool call written out as text, escaped markup, empty, or the prompt
/// echoed back is sent back once with what is wrong; a second such reply is
/// answered from what the specialists returned, or fails saying the model
/// gave no usable answer, never `success` with the junk as the answer.
#[tokio::test]
async fn a_tool_call_written_as_text_is_not_an_answer() {
    const JUNK: &str = "functions.delegate: { &#34;employee&#34;: &#34;tag-ai&#34;, &#34;task&#34;: &#34;x&#34; }";
    let fake = FakeLlm::start(vec![
        // corrected once: the second reply answers
        text(JUNK),
        text("Starbucks is coffee: Dining - Coffee."),
        // a delegation, then junk twice: Prime answers from Tag's result
        tool_calls(&[("delegate", json!({"employee": "tag-ai", "task": "Categorize: 2025-10-01 Starbucks 4.50"}))]),
        text(JUNK),
        text("<tool_call>{\"employee\": \"tag-ai\"}</tool_call>"),
        // junk twice and nothing delegated: no usable answer
        text(JUNK),
        text(""),
    ])
    .await;
    // one attempt per turn, so that the script is read in order
    let rt = runtime(&fake.url, &LLM_PRIME.replace("max_tokens = 16000 }", "max_tokens = 16000, max_attempts = 1 }"));
    let fixed = rt.ask(&user("alice"), "What is Starbucks?", AskOptions::default()).await.unwrap();
    assert_eq!(fixed.status, Status::Success);
    assert_eq!(fixed.answer, "Starbucks is coffee: Dining - Coffee.");
    let correction = fake.requests()[1]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert!(
        correction.as_str().unwrap().contains("not an answer: the reply is a tool call written out as text"),
        "{correction}"
    );

    let from_team = rt.ask(&user("alice"), "Categorize my Starbucks", AskOptions::default()).await.unwrap();
    assert_eq!(from_team.status, Status::Success, "{}", from_team.answer);
    assert!(
        from_team.answer.starts_with("Here is what the team found:\n• tag-ai: Categorized 1 transaction"),
        "{}",
        from_team.answer
    );
    assert!(!from_team.answer.contains("&#34;") && !from_team.answer.contains("functions."), "{}", from_team.answer);

    let none = rt.ask(&user("bob"), "Tell me something", AskOptions::default()).await.unwrap();
    assert_eq!(none.status, Status::Failed, "{}", none.answer);
    assert_eq!(none.response.error_code(), Some(ErrorCode::AgentFailed));
    assert!(none.answer.contains("the model gave no usable answer"), "{}", none.answer);
    assert_eq!(fake.left(), 0);
}
