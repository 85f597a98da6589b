//! The HTTP surface through `app()` (no socket): endpoints, tokens, the
//! table of bad requests, isolation.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use switchboard::Runtime;
use switchboard::config::Config;
use switchboard::server::{AppState, WorkRuntime, app};
use tower::ServiceExt;

pub const PRIME: &str = "prime-token";
pub const TAG: &str = "tag-token";
pub const ALICE: &str = "alice-token";
pub const BOB: &str = "bob-token";
pub const ADMIN: &str = "admin-token";

pub async fn router() -> Router {
    let mut config = Config::builtin();
    config.auth.service_tokens = [("prime-boss".to_string(), PRIME.to_string()), ("tag-ai".into(), TAG.into())].into();
    config.auth.user_tokens = [("alice".to_string(), ALICE.to_string()), ("bob".into(), BOB.into())].into();
    config.auth.admin_tokens = vec![ADMIN.into()];
    let auth = config.auth.clone();
    let state = Arc::new(AppState::new(Runtime::builder().config(config).build().unwrap()));
    state.tokens.load_config(&auth).await.unwrap();
    app(state)
}

pub struct Reply {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

pub async fn call(router: &Router, req: Request<Body>) -> Reply {
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let body = axum::body::to_bytes(res.into_body(), 16 * 1024 * 1024).await.unwrap().to_vec();
    Reply { status, body }
}

fn envelope(id: &str, origin: &str, target: &str, user: &str) -> Value {
    json!({
        "request_id": id, "origin_employee": origin, "target_employee": target, "user_id": user,
        "objective": "Categorize", "input": "2025-10-01 Starbucks 4.50"
    })
}

const ID: &str = "550e8400-e29b-41d4-a716-446655440000";

fn delegate(token: Option<&str>, headers: &[(&str, &str)], body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post("/v1/delegate").header("content-type", "application/json");
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(body.into()).unwrap()
}

fn good_headers() -> Vec<(&'static str, &'static str)> {
    vec![("x-agent-request-id", ID), ("x-agent-origin", "prime-boss")]
}

#[tokio::test]
async fn a_delegation_over_http_returns_the_response_and_its_tree() {
    let r = router().await;
    let res =
        call(&r, delegate(Some(PRIME), &good_headers(), envelope(ID, "prime-boss", "tag-ai", "alice").to_string()))
            .await;
    assert_eq!(res.status, StatusCode::OK, "{}", String::from_utf8_lossy(&res.body));
    let v = res.json();
    assert_eq!(v["status"], "success");
    assert!(v["summary"].as_str().unwrap().contains("Dining - Coffee"));

    let tree = |token: &str| {
        Request::get(format!("/v1/delegations/{ID}"))
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    let t = call(&r, tree(ALICE)).await;
    assert_eq!(t.status, StatusCode::OK);
    assert_eq!(t.json()["agent"], "tag-ai");
    assert_eq!(call(&r, tree(ADMIN)).await.status, StatusCode::OK);
    assert_eq!(call(&r, tree(PRIME)).await.status, StatusCode::OK, "the origin may see it");
    let other = call(&r, tree(BOB)).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND, "another user sees nothing");
    assert!(!String::from_utf8_lossy(&other.body).contains("Categorize"));
}

#[tokio::test]
async fn a_refusal_is_the_error_alone_with_the_codes_status() {
    let r = router().await;
    let mut env = envelope(ID, "prime-boss", "tag-ai", "alice");
    env["current_depth"] = json!(1);
    let res = call(&r, delegate(Some(PRIME), &good_headers(), env.to_string())).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let v = res.json();
    assert_eq!(v, json!({"error": {"code": "DEPTH_LIMIT", "message": v["error"]["message"]}}));
    // input that lacks what the agent needs is answered with its question, 200
    let mut env = envelope(ID, "prime-boss", "byte-doc", "alice");
    env["input"] = json!("no receipt here");
    let res = call(&r, delegate(Some(PRIME), &good_headers(), env.to_string())).await;
    assert_eq!(res.status, StatusCode::OK);
    let v = res.json();
    assert_eq!(v["error"]["code"], "NEEDS_INPUT");
    assert_eq!(v["status"], "needs_input");
    assert!(v["result"].as_str().unwrap().contains("paste the receipt text"), "{v}");
    assert_eq!(v["execution"]["attempts"], 1);
    // the agent's failure (here: out of time) under the code's status
    let mut env = envelope(ID, "prime-boss", "data", "alice");
    env["objective"] = json!("Transform CSV data to JSON");
    env["task_note"] = json!("Transform CSV data to JSON format.\nInput columns: name, email, role.");
    env["input"] = json!(format!(
        "name,email,role\n{}",
        (0..3000).map(|i| format!("P {i},p{i}@example.com,r\n")).collect::<String>()
    ));
    env["constraints"]["deadline_ms"] = json!(1);
    let res = call(&r, delegate(Some(PRIME), &good_headers(), env.to_string())).await;
    assert_eq!(res.status, StatusCode::GATEWAY_TIMEOUT, "{}", String::from_utf8_lossy(&res.body));
    let v = res.json();
    assert_eq!(v["error"]["code"], "DEADLINE_EXCEEDED");
}

#[tokio::test]
async fn chat_answers_the_user_with_session_and_tree_and_keeps_sessions_apart() {
    let r = router().await;
    let chat = |token: &str, body: Value| {
        Request::post("/v1/chat")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let res = call(&r, chat(ALICE, json!({"message": "Upload this receipt and categorize it", "input": "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25"}))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", String::from_utf8_lossy(&res.body));
    let v = res.json();
    assert!(v["answer"].as_str().unwrap().contains("Starbucks"), "{v}");
    assert_eq!(v["tree"]["agent"], "prime-boss");
    assert_eq!(v["tree"]["children"].as_array().unwrap().len(), 2);
    let session = v["session_id"].as_str().unwrap().to_string();

    let again = call(&r, chat(ALICE, json!({"message": "Thanks!", "session_id": session}))).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["session_id"], session);
    let stolen = call(&r, chat(BOB, json!({"message": "What did she ask?", "session_id": session}))).await;
    assert_eq!(stolen.status, StatusCode::FORBIDDEN);
    assert_eq!(stolen.json()["error"]["code"], "USER_MISMATCH");
    assert!(!String::from_utf8_lossy(&stolen.body).contains("Starbucks"));
}

#[tokio::test]
async fn agents_health_and_metrics() {
    let r = router().await;
    let get = |uri: &str, token: Option<&str>| {
        let mut b = Request::get(uri);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Body::empty()).unwrap()
    };
    let agents = call(&r, get("/v1/agents", Some(ALICE))).await;
    assert_eq!(agents.status, StatusCode::OK);
    assert_eq!(agents.json()["agents"].as_array().unwrap().len(), 12);
    assert_eq!(call(&r, get("/v1/agents", None)).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(call(&r, get("/healthz", None)).await.json()["status"], "ok");
    let _ = call(&r, delegate(Some(PRIME), &good_headers(), envelope(ID, "prime-boss", "tag-ai", "alice").to_string()))
        .await;
    let metrics = String::from_utf8(call(&r, get("/metrics", None)).await.body).unwrap();
    for needle in [
        r#"switchboard_delegations_total{target="tag-ai",outcome="success"} 1"#,
        "switchboard_delegation_duration_seconds_bucket",
        r#"switchboard_breaker_state{agent="tag-ai"} 0"#,
        "switchboard_first_attempt_successes_total",
        "switchboard_fallbacks_total",
        "switchboard_tokens_total",
    ] {
        assert!(metrics.contains(needle), "{needle} missing");
    }
    let page = call(&r, get("/", None)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&page.body).contains("Switchboard"));
}

/// A caller names targets, not metric series: delegations to agents that do
/// not exist are counted under one `target="unknown"`, so any number of
/// made-up names leaves `/metrics` the size one of them does.
#[tokio::test]
async fn made_up_targets_do_not_grow_the_metrics() {
    let r = router().await;
    let metrics = async || {
        let res = call(&r, Request::get("/metrics").body(Body::empty()).unwrap()).await;
        String::from_utf8(res.body).unwrap()
    };
    let send = async |i: usize| {
        let id = switchboard::protocol::RequestId::new().to_string();
        let env = envelope(&id, "prime-boss", &format!("ghost-{i}{}", "x".repeat(i % 40)), "alice");
        let headers = [("x-agent-request-id", id.as_str()), ("x-agent-origin", "prime-boss")];
        let res = call(&r, delegate(Some(PRIME), &headers, env.to_string())).await;
        assert_eq!(res.json()["error"]["code"], "AGENT_NOT_FOUND", "{}", String::from_utf8_lossy(&res.body));
    };
    send(0).await;
    let after_one = metrics().await;
    for i in 1..300 {
        send(i).await;
    }
    let after_many = metrics().await;
    assert!(!after_many.contains("ghost-"), "a caller's name became a label");
    assert!(after_many.contains(r#"switchboard_delegations_total{target="unknown",outcome="refused"} 300"#));
    assert!(
        after_many.len() <= after_one.len() + 16,
        "{} bytes after one, {} after 300",
        after_one.len(),
        after_many.len()
    );
}

/// ≥ 50 bad requests: every one is a 4xx with a JSON error code; none is a 5xx.
#[tokio::test]
async fn fifty_bad_requests_get_a_4xx_with_a_json_error_code_every_time() {
    let r = router().await;
    let good = envelope(ID, "prime-boss", "tag-ai", "alice");
    let with = |k: &str, v: Value| {
        let mut e = good.clone();
        e[k] = v;
        e.to_string()
    };
    let without = |k: &str| {
        let mut e = good.clone();
        e.as_object_mut().unwrap().remove(k);
        e.to_string()
    };
    let h = good_headers();
    let mut cases: Vec<(&str, Request<Body>, u16)> = vec![
        // malformed JSON
        ("empty body", delegate(Some(PRIME), &h, ""), 400),
        ("truncated", delegate(Some(PRIME), &h, good.to_string()[..40].to_string()), 400),
        ("not json", delegate(Some(PRIME), &h, "hello"), 400),
        ("array", delegate(Some(PRIME), &h, "[1,2]"), 400),
        ("null", delegate(Some(PRIME), &h, "null"), 400),
        ("trailing garbage", delegate(Some(PRIME), &h, format!("{good}xyz")), 400),
        ("invalid utf-8", delegate(Some(PRIME), &h, vec![0xff, 0xfe, 0x7b]), 400),
        ("deep nesting", delegate(Some(PRIME), &h, "[".repeat(10_000)), 400),
        // wrong types
        ("objective number", delegate(Some(PRIME), &h, with("objective", json!(5))), 400),
        ("input object", delegate(Some(PRIME), &h, with("input", json!({}))), 400),
        ("depth string", delegate(Some(PRIME), &h, with("current_depth", json!("one"))), 400),
        ("depth negative", delegate(Some(PRIME), &h, with("current_depth", json!(-1))), 400),
        ("depth huge", delegate(Some(PRIME), &h, with("current_depth", json!(1u64 << 40))), 400),
        ("constraints string", delegate(Some(PRIME), &h, with("constraints", json!("fast"))), 400),
        ("max_tokens negative", delegate(Some(PRIME), &h, with("constraints", json!({"max_tokens": -5}))), 400),
        ("max_tokens zero", delegate(Some(PRIME), &h, with("constraints", json!({"max_tokens": 0}))), 400),
        ("deadline zero", delegate(Some(PRIME), &h, with("constraints", json!({"deadline_ms": 0}))), 400),
        ("max_depth zero", delegate(Some(PRIME), &h, with("constraints", json!({"max_depth": 0}))), 400),
        ("unknown constraint", delegate(Some(PRIME), &h, with("constraints", json!({"speed": 9}))), 400),
        ("hints not strings", delegate(Some(PRIME), &h, with("context_hints", json!([1, 2]))), 400),
        ("priority unknown", delegate(Some(PRIME), &h, with("priority", json!("asap"))), 400),
        ("mode unknown", delegate(Some(PRIME), &h, with("mode", json!("forever"))), 400),
        (
            "chain wrong",
            delegate(Some(PRIME), &h, with("chain", json!([{"agent": "a", "objective_hash": "xyz"}]))),
            400,
        ),
        ("check unknown", delegate(Some(PRIME), &h, with("checks", json!([{"kind": "vibes"}]))), 400),
        ("handoff string", delegate(Some(PRIME), &h, with("handoff_data", json!("x"))), 400),
        ("version number", delegate(Some(PRIME), &h, with("protocol_version", json!(1.0))), 400),
        // missing fields
        ("no request_id", delegate(Some(PRIME), &h, without("request_id")), 400),
        ("no origin", delegate(Some(PRIME), &h, without("origin_employee")), 400),
        ("no target", delegate(Some(PRIME), &h, without("target_employee")), 400),
        ("no user", delegate(Some(PRIME), &h, without("user_id")), 400),
        ("no objective", delegate(Some(PRIME), &h, without("objective")), 400),
        ("empty objective", delegate(Some(PRIME), &h, with("objective", json!("  "))), 400),
        // bad ids
        ("request_id not uuid", delegate(Some(PRIME), &h, with("request_id", json!("abc"))), 400),
        ("session not uuid", delegate(Some(PRIME), &h, with("parent_session_id", json!("x-1"))), 400),
        ("root not uuid", delegate(Some(PRIME), &h, with("root_request_id", json!(12))), 400),
        ("bad target slug", delegate(Some(PRIME), &h, with("target_employee", json!("Tag AI"))), 400),
        ("bad user id", delegate(Some(PRIME), &h, with("user_id", json!("a b"))), 400),
        ("unknown field", delegate(Some(PRIME), &h, with("surprise", json!(true))), 400),
        (
            "duplicate field",
            delegate(
                Some(PRIME),
                &h,
                format!("{},\"objective\":\"again\"}}", &good.to_string()[..good.to_string().len() - 1]),
            ),
            400,
        ),
        // versions
        ("version 2.0", delegate(Some(PRIME), &h, with("protocol_version", json!("2.0"))), 400),
        ("version garbage", delegate(Some(PRIME), &h, with("protocol_version", json!("v1"))), 400),
        // oversize
        ("oversize body", delegate(Some(PRIME), &h, format!("{{\"input\":\"{}\"}}", "x".repeat(2 * 1024 * 1024))), 413),
        ("oversize input", delegate(Some(PRIME), &h, with("input", json!("x".repeat(300 * 1024)))), 400),
        // headers
        ("no request id header", delegate(Some(PRIME), &[("x-agent-origin", "prime-boss")], good.to_string()), 400),
        ("no origin header", delegate(Some(PRIME), &[("x-agent-request-id", ID)], good.to_string()), 400),
        (
            "request id header differs",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), ("x-agent-origin", "prime-boss")],
                good.to_string(),
            ),
            400,
        ),
        (
            "request id header garbage",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", "nope"), ("x-agent-origin", "prime-boss")],
                good.to_string(),
            ),
            400,
        ),
        (
            "origin header differs",
            delegate(Some(PRIME), &[("x-agent-request-id", ID), ("x-agent-origin", "tag-ai")], good.to_string()),
            400,
        ),
        (
            "depth header differs",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", ID), ("x-agent-origin", "prime-boss"), ("x-agent-depth", "1")],
                good.to_string(),
            ),
            400,
        ),
        (
            "depth header garbage",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", ID), ("x-agent-origin", "prime-boss"), ("x-agent-depth", "-3")],
                good.to_string(),
            ),
            400,
        ),
        (
            "parent session header without body",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", ID), ("x-agent-origin", "prime-boss"), ("x-agent-parent-session", ID)],
                good.to_string(),
            ),
            400,
        ),
        (
            "deadline header zero",
            delegate(
                Some(PRIME),
                &[("x-agent-request-id", ID), ("x-agent-origin", "prime-boss"), ("x-agent-deadline-ms", "0")],
                good.to_string(),
            ),
            400,
        ),
        // tokens
        ("no token", delegate(None, &h, good.to_string()), 401),
        ("forged token", delegate(Some("sbs_forged"), &h, good.to_string()), 401),
        ("user token", delegate(Some(ALICE), &h, good.to_string()), 401),
        ("other agent's token", delegate(Some(TAG), &h, good.to_string()), 401),
        ("admin token is no agent", delegate(Some(ADMIN), &h, good.to_string()), 401),
        (
            "basic auth",
            Request::post("/v1/delegate")
                .header("authorization", "Basic YTpi")
                .body(Body::from(good.to_string()))
                .unwrap(),
            401,
        ),
        // other endpoints
        (
            "chat with a service token",
            Request::post("/v1/chat")
                .header("authorization", format!("Bearer {PRIME}"))
                .body(Body::from("{\"message\":\"hi\"}"))
                .unwrap(),
            401,
        ),
        (
            "chat empty message",
            Request::post("/v1/chat")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::from("{\"message\":\"\"}"))
                .unwrap(),
            400,
        ),
        (
            "chat unknown field",
            Request::post("/v1/chat")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::from("{\"message\":\"hi\",\"as\":\"bob\"}"))
                .unwrap(),
            400,
        ),
        (
            "chat bad session",
            Request::post("/v1/chat")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::from("{\"message\":\"hi\",\"session_id\":\"x\"}"))
                .unwrap(),
            400,
        ),
        (
            "tree bad id",
            Request::get("/v1/delegations/not-a-uuid")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::empty())
                .unwrap(),
            400,
        ),
        (
            "tree unknown",
            Request::get("/v1/delegations/01a20144-ac5b-73dc-b3ce-30d30f72c767")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::empty())
                .unwrap(),
            404,
        ),
        (
            "events bad root",
            Request::get("/v1/events?root_id=zzz")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::empty())
                .unwrap(),
            400,
        ),
        ("events no token", Request::get("/v1/events").body(Body::empty()).unwrap(), 401),
        ("unknown route", Request::get("/v2/everything").body(Body::empty()).unwrap(), 404),
        ("wrong method", Request::get("/v1/delegate").body(Body::empty()).unwrap(), 405),
    ];
    // envelopes refused by a rail after parsing
    cases.push(("unknown target", delegate(Some(PRIME), &h, with("target_employee", json!("ghost"))), 404));
    let tag_headers = [("x-agent-request-id", ID), ("x-agent-origin", "tag-ai")];
    let mut from_tag = good.clone();
    from_tag["origin_employee"] = json!("tag-ai");
    from_tag["target_employee"] = json!("ledger-tax");
    cases.push(("edge not allowed", delegate(Some(TAG), &tag_headers, from_tag.to_string()), 403));
    assert!(cases.len() >= 50, "{} cases", cases.len());
    for (name, req, expected) in cases {
        let res = call(&r, req).await;
        let s = res.status.as_u16();
        assert!((400..500).contains(&s), "{name}: status {s}: {}", String::from_utf8_lossy(&res.body));
        let v = res.json();
        let code = v["error"]["code"].as_str().unwrap_or_else(|| panic!("{name}: no error code in {v}"));
        assert!(switchboard::ErrorCode::parse(code).is_some(), "{name}: {code}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty(), "{name}");
        assert_eq!(s, expected, "{name}: {}", String::from_utf8_lossy(&res.body));
    }
}

/// User A's token with user B's session id, in a header or the body, on every
/// endpoint that takes one: 403 and not a byte of B's data. Missing, forged
/// or other agents' service tokens: 401.
#[tokio::test]
async fn another_users_session_is_403_everywhere_and_bad_tokens_are_401() {
    let r = router().await;
    let secret = "Bob's landlord is Mr. Quill";
    let chat = |token: &str, body: Value, session_header: Option<&str>| {
        let mut b = Request::post("/v1/chat").header("authorization", format!("Bearer {token}"));
        if let Some(s) = session_header {
            b = b.header("x-session-id", s);
        }
        b.body(Body::from(body.to_string())).unwrap()
    };
    let bob = call(&r, chat(BOB, json!({"message": format!("Remember: {secret}")}), None)).await;
    assert_eq!(bob.status, StatusCode::OK);
    let session = bob.json()["session_id"].as_str().unwrap().to_string();
    let tree = bob.json()["request_id"].as_str().unwrap().to_string();

    let completions = |session: &str| {
        Request::post("/v1/chat/completions")
            .header("authorization", format!("Bearer {ALICE}"))
            .header("x-session-id", session)
            .body(Body::from(
                json!({"model": "prime-boss", "messages": [{"role": "user", "content": "what did he say?"}]})
                    .to_string(),
            ))
            .unwrap()
    };
    let attempts = vec![
        ("chat, session in the body", chat(ALICE, json!({"message": "what did he say?", "session_id": session}), None)),
        ("chat, session in a header", chat(ALICE, json!({"message": "what did he say?"}), Some(&session))),
        ("openai, session in a header", completions(&session)),
    ];
    for (name, req) in attempts {
        let res = call(&r, req).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{name}: {}", String::from_utf8_lossy(&res.body));
        assert_eq!(res.json()["error"]["code"], "USER_MISMATCH", "{name}");
        let body = String::from_utf8_lossy(&res.body);
        assert!(
            !body.contains("Quill") && !body.contains("Remember") && !body.contains(&tree),
            "{name} leaked: {body}"
        );
    }
    // B's tree is not A's to see either (answered as if it did not exist)
    let res = call(
        &r,
        Request::get(format!("/v1/delegations/{tree}"))
            .header("authorization", format!("Bearer {ALICE}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert!(!String::from_utf8_lossy(&res.body).contains("Quill"));

    // service tokens: missing, forged, another agent's
    let env = envelope(ID, "prime-boss", "tag-ai", "alice").to_string();
    for (name, token) in
        [("missing", None), ("forged", Some("sbs_0000")), ("another agent's", Some(TAG)), ("a user's", Some(ALICE))]
    {
        let res = call(&r, delegate(token, &good_headers(), env.clone())).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(res.json()["error"]["code"], "UNAUTHENTICATED", "{name}");
    }
}

/// An agent that waits at a gate: holds delegations in flight until it
/// opens; notes the thread each run ended on.
struct Gated {
    inside: Arc<std::sync::atomic::AtomicUsize>,
    gate: Arc<tokio::sync::Semaphore>,
    ended_on: Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

#[async_trait::async_trait]
impl switchboard::Agent for Gated {
    async fn run(
        &self,
        _ctx: &switchboard::AgentContext,
        _task: &switchboard::Task,
    ) -> Result<switchboard::AgentOutput, switchboard::DelegationError> {
        self.inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _pass = self.gate.acquire().await.expect("the gate stays");
        self.ended_on.lock().unwrap().push(std::thread::current().name().map(str::to_string));
        Ok(switchboard::AgentOutput::new("through", "through"))
    }
}

/// A service with two places (`max_in_flight = 2`) in front of a `Gated`
/// agent, Prime's service token and Alice's user token: the router, how
/// many are inside the agent, and the gate that lets them out.
async fn gated_service() -> (Router, Arc<std::sync::atomic::AtomicUsize>, Arc<tokio::sync::Semaphore>) {
    let s = gated_service_on(None).await;
    (s.router, s.inside, s.gate)
}

/// [`gated_service`], its admitted work on `work` when given
/// ([`AppState::on_work_runtime`]).
struct GatedService {
    router: Router,
    inside: Arc<std::sync::atomic::AtomicUsize>,
    gate: Arc<tokio::sync::Semaphore>,
    ended_on: Arc<std::sync::Mutex<Vec<Option<String>>>>,
    store: Arc<dyn switchboard::store::Store>,
}

async fn gated_service_on(work: Option<tokio::runtime::Handle>) -> GatedService {
    let mut config = Config::from_toml(
        r#"
[server]
max_in_flight = 2

[[agents]]
slug = "prime-boss"
name = "Prime"
may_delegate_to = ["gated"]

[[agents]]
slug = "gated"
name = "Gated"
"#,
    )
    .unwrap();
    config.auth.user_tokens = [("alice".to_string(), ALICE.to_string())].into();
    config.auth.service_tokens = [("prime-boss".to_string(), PRIME.to_string())].into();
    let auth = config.auth.clone();
    let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let ended_on = Arc::default();
    let agent = Gated { inside: inside.clone(), gate: gate.clone(), ended_on: Arc::clone(&ended_on) };
    let runtime = Runtime::builder().config(config).agent("gated", agent).build().unwrap();
    let store = runtime.store().clone();
    let mut state = AppState::new(runtime);
    if let Some(work) = work {
        state = state.on_work_runtime(work);
    }
    let state = Arc::new(state);
    state.tokens.load_config(&auth).await.unwrap();
    GatedService { router: app(state), inside, gate, ended_on, store }
}

/// Sends `requests` (one per place of [`gated_service`]) and waits until
/// each is inside the agent, held at its gate: every place is taken.
async fn take_every_place(
    r: &Router,
    inside: &std::sync::atomic::AtomicUsize,
    requests: Vec<Request<Body>>,
) -> Vec<tokio::task::JoinHandle<Reply>> {
    let n = requests.len();
    let held = requests
        .into_iter()
        .map(|req| {
            let r = r.clone();
            tokio::spawn(async move { call(&r, req).await })
        })
        .collect();
    while inside.load(std::sync::atomic::Ordering::SeqCst) < n {
        tokio::task::yield_now().await;
    }
    held
}

/// `req` while every place is taken: a 503 with `Retry-After: 1`, at once
/// (the bound only turns a request queued at the gate into a failure
/// instead of a hang); its JSON body.
async fn refused_at_once(r: &Router, req: Request<Body>) -> Value {
    let at_once = std::time::Duration::from_secs(60);
    let res = tokio::time::timeout(at_once, r.clone().oneshot(req)).await.expect("not queued").unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    serde_json::from_slice(&axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap()).unwrap()
}

#[tokio::test]
async fn over_max_in_flight_a_delegation_gets_a_503_with_retry_after_at_once() {
    let (r, inside, gate) = gated_service().await;
    let send = |id: &str| {
        let headers = [("x-agent-request-id", id), ("x-agent-origin", "prime-boss")];
        delegate(Some(PRIME), &headers, envelope(id, "prime-boss", "gated", "alice").to_string())
    };
    let ids = [
        "550e8400-e29b-41d4-a716-446655440001",
        "550e8400-e29b-41d4-a716-446655440002",
        "550e8400-e29b-41d4-a716-446655440003",
        "550e8400-e29b-41d4-a716-446655440004",
    ];
    // two delegations fill both places and wait at the gate
    let held = take_every_place(&r, &inside, ids[..2].iter().map(|id| send(id)).collect()).await;
    // a third is turned away at once: 503, Retry-After, a stable code; nothing ran
    let body = refused_at_once(&r, send(ids[2])).await;
    assert_eq!(body["error"]["code"], "AGENT_UNAVAILABLE", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("max_in_flight"), "{body}");
    assert_eq!(inside.load(std::sync::atomic::Ordering::SeqCst), 2);
    // a chat completion takes one of the same places, and is turned away the same way
    let completion = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {ALICE}"))
        .body(Body::from(json!({"model": "gated", "messages": [{"role": "user", "content": "hello"}]}).to_string()))
        .unwrap();
    let body = refused_at_once(&r, completion).await;
    assert_eq!(body["error"]["code"], "AGENT_UNAVAILABLE", "{body}");
    assert_eq!(inside.load(std::sync::atomic::Ordering::SeqCst), 2, "the refused completion never reached the agent");
    // the gate opens: the two held ones answer, and the places are free again
    gate.add_permits(3);
    for h in held {
        let reply = h.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
    }
    let again = call(&r, send(ids[3])).await;
    assert_eq!(again.status, StatusCode::OK, "{}", String::from_utf8_lossy(&again.body));
}

#[tokio::test]
async fn over_max_in_flight_an_a2a_send_gets_a_503_with_retry_after_in_both_http_bindings() {
    let (r, inside, gate) = gated_service().await;
    let post = |path: &str, body: Value| {
        Request::post(path)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {ALICE}"))
            .header("a2a-version", "1.0")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let message = |n: u32| json!({"messageId": format!("m-{n}"), "role": "ROLE_USER", "parts": [{"text": "hello"}]});
    let rpc = |n: u32| {
        post(
            "/a2a/gated",
            json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message(n)}}),
        )
    };
    // two blocking sends fill both places and wait at the gate
    let held = take_every_place(&r, &inside, (1..=2).map(rpc).collect()).await;
    // JSON-RPC: 503, Retry-After, a JSON-RPC error naming the limit; nothing ran
    let body = refused_at_once(&r, rpc(3)).await;
    assert_eq!(body["id"], 3, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "AGENT_UNAVAILABLE", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("max_in_flight"), "{body}");
    // HTTP+JSON: the same 503, as an AIP-193 error
    let body = refused_at_once(&r, post("/a2a/gated/message:send", json!({"message": message(4)}))).await;
    assert_eq!(body["error"]["status"], "UNAVAILABLE", "{body}");
    assert_eq!(inside.load(std::sync::atomic::Ordering::SeqCst), 2, "the refused sends never reached the agent");
    // the places are shared with /v1/delegate
    let id = "550e8400-e29b-41d4-a716-446655440009";
    let native = delegate(
        Some(PRIME),
        &[("x-agent-request-id", id), ("x-agent-origin", "prime-boss")],
        envelope(id, "prime-boss", "gated", "alice").to_string(),
    );
    assert_eq!(call(&r, native).await.status, StatusCode::SERVICE_UNAVAILABLE);
    // the gate opens: the held sends finish, and a send is taken again
    gate.add_permits(3);
    for h in held {
        let reply = h.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
        assert_eq!(reply.json()["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{}", reply.json());
    }
    let again = call(&r, rpc(5)).await;
    assert_eq!(again.status, StatusCode::OK, "{}", String::from_utf8_lossy(&again.body));
    assert!(again.json()["result"]["task"].is_object(), "{}", again.json());
}

/// A server's admitted work runs on its work runtime (`switchboard serve`
/// starts one): while the runtime that serves requests is held (here
/// outright; a flood of requests to refuse holds it too, only less), the
/// delegations already let in, a `/v1/delegate` and an A2A send, still run
/// to their end and are on file. On one runtime they wait for it.
#[tokio::test]
async fn admitted_work_ends_on_the_work_runtime_while_the_serving_runtime_is_held() {
    let work = WorkRuntime::start(1).unwrap();
    let s = gated_service_on(Some(work.handle().clone())).await;
    let id = "550e8400-e29b-41d4-a716-446655440021";
    let native = delegate(
        Some(PRIME),
        &[("x-agent-request-id", id), ("x-agent-origin", "prime-boss")],
        envelope(id, "prime-boss", "gated", "alice").to_string(),
    );
    let message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]});
    let send = Request::post("/a2a/gated")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("a2a-version", "1.0")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}).to_string(),
        ))
        .unwrap();
    // both are inside the agent, held at its gate; nothing ended yet
    let held = take_every_place(&s.router, &s.inside, vec![native, send]).await;
    let before = s.store.counts().await.unwrap().delegations;
    assert!(s.store.delegation_tree(id.parse().unwrap()).await.unwrap().is_empty());

    // this test's runtime serves the requests, on its one thread: that thread
    // now waits for another, which opens the gate and watches the store
    let (gate, store, on_work) = (s.gate.clone(), s.store.clone(), work.handle().clone());
    let ended = std::thread::spawn(move || {
        gate.add_permits(2);
        on_work.block_on(async move {
            for _ in 0..3000 {
                let tree = store.delegation_tree(id.parse().unwrap()).await.unwrap();
                let ended = store.counts().await.unwrap().delegations;
                if !tree.is_empty() && ended >= before + 2 {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            false
        })
    })
    .join()
    .unwrap();
    assert!(ended, "the admitted delegations did not end while the serving runtime was held");
    let on = s.ended_on.lock().unwrap().clone();
    assert_eq!(on, vec![Some(WorkRuntime::THREAD_NAME.to_string()); 2]);

    // the serving runtime runs again: both callers get their answers
    for h in held {
        let reply = h.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
    }
}

#[test]
fn a_max_in_flight_of_zero_is_a_configuration_error_that_names_the_field() {
    let err = Config::from_toml("[server]\nmax_in_flight = 0\n").err().unwrap();
    assert!(err.message.contains("server.max_in_flight"), "{}", err.message);
    let err = Config::from_toml("[server]\nmax_inflight = 3\n").err().unwrap();
    assert!(err.message.contains("max_inflight"), "{}", err.message);
}

/// A message past every limit is refused, and what the store keeps of it is
/// a bounded preview (redacted) with its length and hash: never the whole
/// text (it was ~1.9 MB of audit and record per request, redacted whole).
#[tokio::test]
async fn an_oversize_message_leaves_a_bounded_preview_and_its_hash_never_the_whole_text() {
    let mut config = Config::builtin();
    config.auth.user_tokens = [("alice".to_string(), ALICE.to_string())].into();
    let auth = config.auth.clone();
    let rt = Runtime::builder().config(config).build().unwrap();
    let state = Arc::new(AppState::new(rt.clone()));
    state.tokens.load_config(&auth).await.unwrap();
    let r = app(state);
    let message = format!("mail ann@example.com {} end bob@example.com", "x".repeat(900 * 1024));
    let req = Request::post("/v1/chat")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "application/json")
        .body(Body::from(json!({ "message": message }).to_string()))
        .unwrap();
    let res = call(&r, req).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.json()["error"]["code"], "INVALID_REQUEST");
    let audit = rt.store().audit_log().await.unwrap();
    let kept = &audit.last().unwrap().record.objective;
    assert!(kept.len() < 1024, "{} bytes kept", kept.len());
    assert!(kept.contains(&format!("{} bytes in all", message.len())), "{kept}");
    assert!(kept.contains("<EMAIL_1>") && !kept.contains("ann@example.com"), "the preview is redacted: {kept}");
    assert!(!kept.contains("bob@example.com"), "{kept}");
}
