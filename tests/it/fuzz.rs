//! 10 000 malformed envelopes and HTTP bodies, generated: truncated, wrong
//! types, huge, deeply nested, invalid UTF-8, duplicate and unknown fields,
//! bad UUIDs, negative or absurd limits, contradictory headers. Every one is
//! answered 4xx with a JSON error code; none is a 5xx or a panic; memory stays
//! flat.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, TestRunner};
use serde_json::{Value, json};

use crate::http::{ALICE, PRIME};

/// Generated cases; the few that turn out valid are set aside, and at least
/// 10 000 malformed ones must remain.
const CASES: u32 = 10_500;
const ID: &str = "550e8400-e29b-41d4-a716-446655440000";

fn good() -> Value {
    json!({
        "request_id": ID, "origin_employee": "prime-boss", "target_employee": "tag-ai", "user_id": "alice",
        "objective": "Categorize", "input": "2025-10-01 Starbucks 4.50",
        "constraints": {"max_tokens": 1200, "max_depth": 2, "deadline_ms": 15000}
    })
}

const FIELDS: &[&str] = &[
    "protocol_version",
    "request_id",
    "origin_employee",
    "target_employee",
    "user_id",
    "parent_session_id",
    "child_session_id",
    "objective",
    "input",
    "constraints",
    "context_hints",
    "handoff_data",
    "current_depth",
    "root_request_id",
    "parent_request_id",
    "chain",
    "priority",
    "retry_policy",
    "task_note",
    "checks",
    "idempotency_key",
    "mode",
    "tools",
    "target_domain",
    "created_at",
];

/// A JSON value of some type, with absurd numbers and bad ids in the mix.
fn wild() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(-1)),
        Just(json!(u64::MAX)),
        Just(json!(1e308)),
        Just(json!(0.5)),
        "[ -~]{0,24}".prop_map(Value::String),
        Just(json!("not-a-uuid")),
        Just(json!("550e8400-e29b-41d4-a716-44665544000Z")),
        Just(json!([1, "two", null])),
        Just(json!({"nested": {"deeper": [1]}})),
    ]
}

#[derive(Debug, Clone)]
enum Bad {
    Truncate(usize),
    WrongType(usize, Value),
    Remove(usize),
    Unknown(String, Value),
    Duplicate(usize),
    Limits(&'static str, Value),
    Nest(usize, bool),
    InvalidUtf8(usize, u8),
    Bytes(Vec<u8>),
    Huge,
    HeaderMismatch(u8),
    Chat(Value),
}

fn bad() -> impl Strategy<Value = Bad> {
    prop_oneof![
        any::<usize>().prop_map(Bad::Truncate),
        (any::<usize>(), wild()).prop_map(|(i, v)| Bad::WrongType(i, v)),
        (0usize..5).prop_map(Bad::Remove),
        ("[a-z_]{1,12}", wild()).prop_map(|(k, v)| Bad::Unknown(k, v)),
        any::<usize>().prop_map(Bad::Duplicate),
        (
            prop::sample::select(vec!["max_tokens", "max_depth", "deadline_ms", "current_depth"]),
            prop_oneof![
                Just(json!(-5)),
                Just(json!(0)),
                Just(json!(u64::MAX)),
                Just(json!(1u64 << 33)),
                Just(json!(9_999_999_999u64)),
                Just(json!(2.5))
            ],
        )
            .prop_map(|(f, v)| Bad::Limits(f, v)),
        (129usize..3_000, any::<bool>()).prop_map(|(d, obj)| Bad::Nest(d, obj)),
        (any::<usize>(), 0x80u8..=0xff).prop_map(|(i, b)| Bad::InvalidUtf8(i, b)),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(Bad::Bytes),
        Just(Bad::Huge),
        (0u8..4).prop_map(Bad::HeaderMismatch),
        wild().prop_map(Bad::Chat),
    ]
}

fn delegate(body: Vec<u8>, request_id: &str, origin: &str) -> Request<Body> {
    Request::post("/v1/delegate")
        .header("authorization", format!("Bearer {PRIME}"))
        .header("x-agent-request-id", request_id)
        .header("x-agent-origin", origin)
        .body(Body::from(body))
        .unwrap()
}

fn render(case: &Bad) -> Request<Body> {
    let text = good().to_string();
    let with = |f: &mut dyn FnMut(&mut serde_json::Map<String, Value>)| {
        let mut v = good();
        f(v.as_object_mut().unwrap());
        v.to_string().into_bytes()
    };
    let body = match case {
        Bad::Truncate(i) => text.as_bytes()[..i % text.len()].to_vec(),
        Bad::WrongType(i, v) => {
            let field = FIELDS[i % FIELDS.len()];
            with(&mut |m| {
                m.insert(field.to_string(), v.clone());
            })
        }
        Bad::Remove(i) => with(&mut |m| {
            m.remove(["request_id", "origin_employee", "target_employee", "user_id", "objective"][*i]);
        }),
        Bad::Unknown(k, v) => with(&mut |m| {
            let key = if FIELDS.contains(&k.as_str()) { format!("{k}_x") } else { k.clone() };
            m.insert(key, v.clone());
        }),
        Bad::Duplicate(i) => {
            let field = ["objective", "user_id", "target_employee", "input"][i % 4];
            format!("{},\"{field}\":\"again\"}}", &text[..text.len() - 1]).into_bytes()
        }
        Bad::Limits(field, v) => with(&mut |m| {
            if *field == "current_depth" {
                // depth 0 is fine; anything at or past the ceiling is not
                let v = if *v == json!(0) { json!(99) } else { v.clone() };
                m.insert("current_depth".into(), v);
            } else {
                m["constraints"][*field] = v.clone();
            }
        }),
        Bad::Nest(depth, obj) => {
            let (open, close) = if *obj { ("{\"a\":", "}") } else { ("[", "]") };
            with(&mut |m| {
                m.insert("handoff_data".into(), json!({"intermediate_results": null}));
            });
            let inner = format!("{}1{}", open.repeat(*depth), close.repeat(*depth));
            text.replace("\"input\"", &format!("\"handoff_data\":{{\"facts\":{inner}}},\"input\"")).into_bytes()
        }
        Bad::InvalidUtf8(i, b) => {
            let mut bytes = text.clone().into_bytes();
            let at = i % bytes.len();
            bytes.insert(at, *b);
            bytes
        }
        Bad::Bytes(b) => b.clone(),
        Bad::Huge => format!("{{\"input\":\"{}\"}}", "x".repeat(3 * 1024 * 1024)).into_bytes(),
        Bad::HeaderMismatch(which) => {
            return match which {
                0 => delegate(text.into_bytes(), "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "prime-boss"),
                1 => delegate(text.into_bytes(), ID, "tag-ai"),
                2 => delegate(text.into_bytes(), "garbage", "prime-boss"),
                _ => Request::post("/v1/delegate")
                    .header("authorization", format!("Bearer {PRIME}"))
                    .header("x-agent-request-id", ID)
                    .header("x-agent-origin", "prime-boss")
                    .header("x-agent-depth", "1")
                    .body(Body::from(text))
                    .unwrap(),
            };
        }
        Bad::Chat(v) => {
            let body = json!({"message": v, "session_id": "nope"});
            return Request::post("/v1/chat")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(Body::from(body.to_string()))
                .unwrap();
        }
    };
    delegate(body, ID, "prime-boss")
}

/// Whether a generated envelope happens to be valid after all (a string
/// where a string is fine, a null where a field is optional, depth 0).
fn still_valid(case: &Bad) -> bool {
    let (Bad::WrongType(..) | Bad::Unknown(..)) = case else { return false };
    let rendered = render(case);
    let bytes = futures::executor::block_on(axum::body::to_bytes(rendered.into_body(), usize::MAX)).unwrap_or_default();
    switchboard::protocol::parse_request(&bytes)
        .is_ok_and(|r| switchboard::check_envelope(&r, &switchboard::config::Limits::default()).is_ok())
}

/// Resident memory of a process, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

/// The generated request, sent to a real server over HTTP.
async fn send(client: &reqwest::Client, base: &str, req: Request<Body>) -> (u16, Vec<u8>) {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    if bytes.len() > 1024 * 1024 {
        return send_expecting_continue(base, &parts, bytes.len()).await;
    }
    let mut out = client.request(parts.method, format!("{base}{}", parts.uri));
    for (k, v) in &parts.headers {
        out = out.header(k, v);
    }
    let res = out.body(bytes).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.bytes().await.unwrap().to_vec())
}

/// A body over a mebibyte is offered the way curl offers it: headers with
/// `Expect: 100-continue`, the body only once the server asks for it. A
/// server that refuses the size answers before a byte of it is sent, so the
/// answer is read deterministically instead of racing a reset connection.
async fn send_expecting_continue(base: &str, parts: &axum::http::request::Parts, len: usize) -> (u16, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{} {} HTTP/1.1\r\nhost: {addr}\r\n", parts.method, parts.uri);
    for (k, v) in &parts.headers {
        head.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap()));
    }
    head.push_str(&format!("content-length: {len}\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n"));
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut raw))
        .await
        .expect("the server neither refused nor asked for the body")
        .unwrap();
    raw.truncate(n);
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.starts_with("HTTP/1.1 100"), "the server asked for an oversize body: {text}");
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.as_bytes().to_vec()).unwrap_or_default();
    (status, body)
}

#[test]
fn ten_thousand_malformed_requests_are_all_answered_4xx_with_a_json_code() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // a real server, whose memory is its own to measure
    let config = format!(
        "{}\n[auth]\nservice_tokens = {{ \"prime-boss\" = \"{PRIME}\" }}\nuser_tokens = {{ \"alice\" = \"{ALICE}\" }}\n",
        switchboard::config::DEFAULT_TOML
    );
    let server = crate::service::Server::start(Some(&config), Some("memory:"), "127.0.0.1:0", &[], 1000);
    let client = switchboard::util::http_client().unwrap();
    let done = AtomicUsize::new(0);
    let baseline = std::sync::Mutex::new(0u64);
    let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<u16, usize>::new());
    let mut runner = TestRunner::new(PropConfig { cases: CASES, failure_persistence: None, ..PropConfig::default() });
    runner
        .run(&bad(), |case| {
            if still_valid(&case) {
                // a mutation that happens to be a valid envelope is not malformed
                return Ok(());
            }
            let (status, body) = rt.block_on(send(&client, &server.url, render(&case)));
            *statuses.lock().unwrap().entry(status).or_default() += 1;
            prop_assert!((400..500).contains(&status), "{case:?}: {status} {}", String::from_utf8_lossy(&body));
            let v: Value =
                serde_json::from_slice(&body).map_err(|e| TestCaseError::fail(format!("{case:?}: not JSON: {e}")))?;
            let code = v["error"]["code"].as_str().unwrap_or_default();
            prop_assert!(switchboard::ErrorCode::parse(code).is_some(), "{case:?}: {v}");
            if done.fetch_add(1, Ordering::Relaxed) + 1 == 1_000 {
                *baseline.lock().unwrap() = rss_bytes(server.pid() as u32);
            }
            Ok(())
        })
        .unwrap();
    let total = done.load(Ordering::Relaxed);
    assert!(total >= 10_000, "only {total} malformed cases");
    let growth = rss_bytes(server.pid() as u32).saturating_sub(*baseline.lock().unwrap());
    eprintln!(
        "malformed requests: {total}, statuses {:?}, server RSS growth after the first 1000: {} KiB",
        statuses.lock().unwrap(),
        growth / 1024
    );
    assert!(growth < 16 * 1024 * 1024, "the server's memory grew by {growth} bytes");
}
