//! Signed lineage across three `switchboard serve` processes (issue 16):
//! A → B over HTTP (`X-Switchboard-Lineage`), B → C over A2A (the lineage
//! extension in message metadata), with separate keys and databases. The honest chain runs; a
//! hostile B, holding its own valid key and a valid token for its own hop,
//! cannot make C run anything wider than the token allows.
//!
//! The forgeries are signed here by a second implementation of the token
//! format, written from docs/LINEAGE.md alone (`Raw`), so the page is checked
//! to be precise enough for one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard::lineage::{Claims, KeyRing, Link, Token};
use switchboard::protocol::{AgentSlug, RequestId, UserId};

use crate::service::{Server, audit_log as audit, free_port, lineage_keys, post_signed as post};

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

fn slug(s: &str) -> AgentSlug {
    AgentSlug::parse(s).unwrap()
}

/// The signing seed of the key that signs in `key_dir` (docs/LINEAGE.md "Keys").
fn seed(key_dir: &Path) -> [u8; 32] {
    let current = std::fs::read_to_string(key_dir.join("current")).unwrap();
    let text = std::fs::read_to_string(key_dir.join(format!("{}.key", current.trim()))).unwrap();
    STANDARD.decode(text.trim()).unwrap().try_into().unwrap()
}

/// A second implementation of the token format (version 2), from
/// docs/LINEAGE.md: it appends a signed block with any claims at all, as a
/// hostile holder of a key can.
fn raw_append(token: Option<&str>, claims: &Value, seed: [u8; 32]) -> String {
    let key = SigningKey::from_bytes(&seed);
    let key_id: [u8; 8] = Sha256::digest(key.verifying_key().as_bytes())[..8].try_into().unwrap();
    let mut bytes = token.map_or_else(|| vec![2, 0], |t| URL_SAFE_NO_PAD.decode(t).unwrap());
    assert_eq!(bytes[0], 2, "a version 2 token");
    // the link: sha256 of the previous block's signature input and its
    // signature (nothing when it is unsigned); 32 zero bytes for the root
    let mut link = [0u8; 32];
    let mut at = 2;
    for _ in 0..bytes[1] {
        let len = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        let (claims, id) = (&bytes[at + 2..at + 2 + len], &bytes[at + 2 + len..at + 10 + len]);
        let sig = match bytes[at + 10 + len] {
            1 => &bytes[at + 11 + len..at + 75 + len],
            _ => &[][..],
        };
        link = Sha256::new().chain_update(signing_input(&link, id, claims)).chain_update(sig).finalize().into();
        at += 11 + len + sig.len();
    }
    let claims = serde_json::to_vec(claims).unwrap();
    let signature = key.sign(&signing_input(&link, &key_id, &claims)).to_bytes();
    bytes[1] += 1;
    bytes.extend_from_slice(&(claims.len() as u16).to_be_bytes());
    bytes.extend_from_slice(&claims);
    bytes.extend_from_slice(&key_id);
    bytes.push(1);
    bytes.extend_from_slice(&signature);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What a version 2 block signs: the domain, the link, the key id, the claims' length and the claims.
fn signing_input(link: &[u8; 32], key_id: &[u8], claims: &[u8]) -> Vec<u8> {
    let mut input = b"switchboard-lineage/2\0".to_vec();
    input.extend_from_slice(link);
    input.extend_from_slice(key_id);
    input.extend_from_slice(&(claims.len() as u16).to_be_bytes());
    input.extend_from_slice(claims);
    input
}

/// The three runtimes' keys, made before they start so each can trust the others.
struct Keys {
    dir: tempfile::TempDir,
    sections: Vec<String>,
    public: Vec<String>,
}

impl Keys {
    fn new() -> Keys {
        let dir = tempfile::tempdir().unwrap();
        let (mut sections, mut public) = (Vec::new(), Vec::new());
        for name in ["a", "b", "c"] {
            let (section, key) = lineage_keys(dir.path(), name);
            sections.push(section);
            public.push(key);
        }
        Keys { dir, sections, public }
    }

    fn key_dir(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}-keys"))
    }

    fn ring(&self, name: &str) -> KeyRing {
        KeyRing::open(&self.key_dir(name), name, now_ms()).unwrap()
    }
}

struct Three {
    a: Server,
    b: Server,
    c: Server,
    c_db: String,
    keys: Keys,
    _db_dir: tempfile::TempDir,
}

fn three() -> Three {
    three_traced(&[])
}

/// Three runtimes; `env` is given to each (with its OTEL_SERVICE_NAME).
fn three_traced(env: &[(&str, &str)]) -> Three {
    let keys = Keys::new();
    let db_dir = tempfile::tempdir().unwrap();
    let c_db = format!("sqlite://{}", db_dir.path().join("c.db").display());
    let b_db = format!("sqlite://{}", db_dir.path().join("b.db").display());
    let (b_port, c_port) = (free_port(), free_port());
    let (pa, pb, pc) = (&keys.public[0], &keys.public[1], &keys.public[2]);
    let c_config = format!(
        r#"
[[agents]]
slug = "bridge"
name = "B's bridge, calling"
backend = {{ kind = "builtin", name = "tag-ai" }}
may_delegate_to = ["tagger"]
tools_allowed = ["categorize"]
[[agents]]
slug = "tagger"
name = "Tagger"
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["categorize"]
[[agents]]
slug = "other"
name = "Other"
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["categorize"]

[auth]
service_tokens = {{ "bridge" = "c-bridge" }}
admin_tokens = ["c-admin"]

{}
[[trust]]
name = "a"
public_key = "{pa}"
may_start_trees = true
[[trust]]
name = "b"
public_key = "{pb}"
may_call = ["tagger"]
"#,
        keys.sections[2]
    );
    let b_config = format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "A's Prime, calling"
may_delegate_to = ["bridge"]
tools_allowed = ["delegate", "categorize"]
[[agents]]
slug = "bridge"
name = "Bridge"
backend = {{ kind = "builtin", name = "prime" }}
tools_allowed = ["delegate", "categorize"]
may_delegate_to = ["deep"]
[[agents]]
slug = "deep"
name = "Deep, on C"
backend = {{ kind = "a2a", url = "http://127.0.0.1:{c_port}/a2a/tagger", token_env = "C_BRIDGE_TOKEN", peer = "c", agent = "tagger" }}
tools_allowed = ["categorize"]

[prime]
[[prime.routes]]
name = "deep"
pattern = "(?i)^categorize"
plan = "single"
agents = ["deep"]
objectives = ["Categorize the lines"]

[auth]
service_tokens = {{ "prime-boss" = "b-prime" }}
admin_tokens = ["b-admin"]

{}
[[trust]]
name = "a"
public_key = "{pa}"
may_call = ["bridge"]
may_start_trees = true
[[trust]]
name = "c"
public_key = "{pc}"
"#,
        keys.sections[1]
    );
    let a_config = format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
may_delegate_to = ["far"]
tools_allowed = ["delegate", "categorize"]
[[agents]]
slug = "far"
name = "Far, on B"
backend = {{ kind = "http", url = "http://127.0.0.1:{b_port}", agent = "bridge", token_env = "B_PRIME_TOKEN", peer = "b" }}
tools_allowed = ["delegate", "categorize"]

[auth]
service_tokens = {{ "prime-boss" = "a-prime" }}
admin_tokens = ["a-admin"]

{}
[[trust]]
name = "b"
public_key = "{pb}"
"#,
        keys.sections[0]
    );
    let with = |own: &[(&'static str, &'static str)]| [own, env].concat();
    let c = Server::start(
        Some(&c_config),
        Some(&c_db),
        &format!("127.0.0.1:{c_port}"),
        &with(&[("OTEL_SERVICE_NAME", "runtime-c")]),
        500,
    );
    let b = Server::start(
        Some(&b_config),
        Some(&b_db),
        &format!("127.0.0.1:{b_port}"),
        &with(&[("C_BRIDGE_TOKEN", "c-bridge"), ("OTEL_SERVICE_NAME", "runtime-b")]),
        500,
    );
    let a = Server::start(
        Some(&a_config),
        Some("memory:"),
        "127.0.0.1:0",
        &with(&[("B_PRIME_TOKEN", "b-prime"), ("OTEL_SERVICE_NAME", "runtime-a")]),
        500,
    );
    Three { a, b, c, c_db, keys, _db_dir: db_dir }
}

#[tokio::test]
async fn the_honest_chain_runs_across_three_runtimes_with_one_signed_lineage() {
    let (collector, exports) = crate::service::collector().await;
    let t = three_traced(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector)]);
    let id = uuid::Uuid::new_v4().to_string();
    let env = json!({
        "request_id": id, "origin_employee": "prime-boss", "target_employee": "far", "user_id": "alice",
        "objective": "categorize my statement", "input": "2025-10-01 Starbucks 4.50\n2025-10-02 Shell 40.00",
        "constraints": {"max_depth": 4},
    });
    let (status, body) = post(&t.a.url, "a-prime", &env, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success", "{body}");
    // the tree is one tree on every runtime: C holds the leaf, under A's root id
    let log = audit(&t.c_db);
    assert_eq!(log["verify"]["valid"], true, "{log}");
    let at_c: Vec<&Value> = log["records"].as_array().unwrap().iter().filter(|r| r["root_id"] == id.as_str()).collect();
    assert_eq!(at_c.len(), 1, "{log}");
    let leaf = at_c[0];
    assert_eq!((leaf["origin"].as_str(), leaf["target"].as_str()), (Some("bridge"), Some("tagger")), "{leaf}");
    assert_eq!((leaf["user_id"].as_str(), leaf["outcome"].as_str()), (Some("alice"), Some("success")), "{leaf}");
    let b_tree = crate::service::get_json(&format!("{}/v1/delegations/{id}", t.b.url), "b-admin").await;
    assert_eq!(b_tree["agent"], "bridge", "{b_tree}");
    assert_eq!(b_tree["children"][0]["agent"], "deep", "{b_tree}");
    // and one trace: the root's spans and every runtime's delegation spans share its id
    let started = std::time::Instant::now();
    let spans = loop {
        let spans = crate::service::spans(&exports.lock().unwrap());
        let has = |service: &str, name: &str| spans.iter().any(|s| s.0 == service && s.1 == name);
        if has("runtime-a", "delegate far") && has("runtime-b", "delegate deep") && has("runtime-c", "delegate tagger")
        {
            break spans;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "spans never arrived: {spans:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let trace = &spans.iter().find(|s| s.0 == "runtime-a" && s.1 == "delegate far").unwrap().2;
    for service in ["runtime-b", "runtime-c"] {
        let theirs: Vec<_> = spans.iter().filter(|s| s.0 == service && s.1.starts_with("delegate ")).collect();
        assert!(
            !theirs.is_empty() && theirs.iter().all(|s| &s.2 == trace),
            "{service} continued A's trace: {theirs:?}"
        );
    }
}

/// A valid lineage for B's hop to C: A's root and relay to B, B's own hop
/// bridge → deep and its relay to C's tagger, signed by the library as
/// honest runtimes do. Returns the token and the envelope that matches it.
fn honest(t: &Three, deadline_ms: u64, request: RequestId) -> (Token, Value, Claims) {
    let (a, b) = (t.keys.ring("a"), t.keys.ring("b"));
    let (root, r1, r2) = (RequestId::new(), RequestId::new(), RequestId::new());
    let user = UserId::parse("alice").unwrap();
    let root_claims = Claims {
        tree: root,
        parent: None,
        request: root,
        user,
        depth: 1,
        max_depth: 4,
        fan_out: 3,
        deadline_ms,
        budget: 4000,
        tools: Claims::tool_set(["categorize", "delegate"]),
        path: vec![Link::new(slug("prime-boss"), slug("far"), "categorize my statement")],
        issuer: "a".into(),
        audience: "a".into(),
    };
    let t0 = a.mint_root(root_claims.clone()).unwrap();
    let mut to_b = root_claims.child(r1, Link::new(slug("prime-boss"), slug("bridge"), "categorize my statement"), "b");
    to_b.depth = 1;
    to_b.path = vec![to_b.path[1].clone()];
    let t1 = a.attenuate(&t0, to_b.clone()).unwrap();
    let mut hop = to_b.child(r2, Link::new(slug("bridge"), slug("deep"), "Categorize the lines"), "b");
    hop.tools = vec!["categorize".into()];
    let t2 = b.attenuate(&t1, hop.clone()).unwrap();
    let mut relay = hop.child(request, Link::new(slug("bridge"), slug("tagger"), "Categorize the lines"), "c");
    relay.depth = hop.depth;
    relay.path.remove(1);
    let t3 = b.attenuate(&t2, relay.clone()).unwrap();
    let env = json!({
        "request_id": request.to_string(), "root_request_id": root.to_string(), "parent_request_id": r2.to_string(),
        "origin_employee": "bridge", "target_employee": "tagger", "user_id": "alice",
        "objective": "Categorize the lines", "input": "2025-10-01 Starbucks 4.50",
        "current_depth": 1,
        "chain": [{"agent": "bridge", "objective_hash": switchboard::protocol::request::objective_hash("categorize my statement")}],
        "constraints": {"max_depth": 4, "max_tokens": 1000, "deadline_ms": 20000},
        "tools": ["categorize"],
    });
    (t3, env, relay)
}

#[tokio::test]
async fn a_hostile_runtime_with_a_valid_key_cannot_widen_its_hop() {
    let t = three();
    let later = now_ms() + 60_000;
    let records = || audit(&t.c_db)["records"].as_array().unwrap().clone();

    // the honest token runs: the forgeries below differ from it in one thing each
    let request = RequestId::new();
    let (token, env, _) = honest(&t, later, request);
    let (status, body) = post(&t.c.url, "c-bridge", &env, Some(&token.encode())).await;
    assert_eq!(status, 200, "the honest hop runs: {body}");

    type Case = (&'static str, Box<dyn Fn(&Three) -> (Option<String>, Value)>, u16, &'static str);
    // each forged hop starts from B's valid token for its own hop (to B, from A)
    let forged = move |t: &Three, change: fn(&mut Value)| {
        let request = RequestId::new();
        let (token, env, relay) = honest(t, later, request);
        let mut claims = serde_json::to_value(&relay).unwrap();
        change(&mut claims);
        // the chain up to B's own hop, and B's hop to C signed anew with the change
        let text = token.encode();
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        let last_len = 2 + serde_json::to_vec(&relay).unwrap().len() + 8 + 1 + 64;
        bytes.truncate(bytes.len() - last_len);
        bytes[1] -= 1;
        let prefix = URL_SAFE_NO_PAD.encode(bytes);
        (Some(raw_append(Some(&prefix), &claims, seed(&t.keys.key_dir("b")))), env)
    };
    // each tampered envelope travels with B's honest token for it
    let tampered = move |t: &Three, change: fn(&mut Value)| {
        let (token, mut env, _) = honest(t, later, RequestId::new());
        change(&mut env);
        (Some(token.encode()), env)
    };
    let cases: Vec<Case> = vec![
        (
            "depth 0 and an empty chain under a valid token",
            Box::new(move |t| {
                tampered(t, |e| {
                    e["current_depth"] = json!(0);
                    e["chain"] = json!([]);
                })
            }),
            403,
            "LINEAGE_MISMATCH",
        ),
        (
            "depth 0 as a root of its own",
            Box::new(move |t| {
                let (_, mut env, mut relay) = honest(t, later, RequestId::new());
                relay.parent = None;
                relay.tree = relay.request;
                relay.depth = 1;
                relay.path = vec![relay.path[1].clone()];
                let root = serde_json::to_value(&relay).unwrap();
                env["root_request_id"] = json!(null);
                env["parent_request_id"] = json!(null);
                env["current_depth"] = json!(0);
                env["chain"] = json!([]);
                (Some(raw_append(None, &root, seed(&t.keys.key_dir("b")))), env)
            }),
            403,
            "DELEGATION_NOT_ALLOWED",
        ),
        (
            "a longer deadline",
            Box::new(move |t| forged(t, |c| c["deadline_ms"] = json!(c["deadline_ms"].as_u64().unwrap() + 3_600_000))),
            403,
            "LINEAGE_INVALID",
        ),
        ("a larger budget", Box::new(move |t| forged(t, |c| c["budget"] = json!(1_000_000))), 403, "LINEAGE_INVALID"),
        (
            "a tool it lacks",
            Box::new(move |t| forged(t, |c| c["tools"] = json!(["categorize", "shell"]))),
            403,
            "LINEAGE_INVALID",
        ),
        (
            "another user in the envelope",
            Box::new(move |t| tampered(t, |e| e["user_id"] = json!("bob"))),
            403,
            "LINEAGE_MISMATCH",
        ),
        (
            "another user in the token",
            Box::new(move |t| forged(t, |c| c["user"] = json!("bob"))),
            403,
            "LINEAGE_INVALID",
        ),
        (
            "the path dropped, to come back as if new",
            Box::new(move |t| {
                forged(t, |c| {
                    let last = c["path"][1].clone();
                    c["path"] = json!([last]);
                    c["depth"] = json!(1);
                })
            }),
            403,
            "LINEAGE_INVALID",
        ),
        (
            "a token signed by a key nobody trusts",
            Box::new(move |t| {
                let (_, env, relay) = honest(t, later, RequestId::new());
                let stranger = [7u8; 32];
                (Some(raw_append(None, &serde_json::to_value(&relay).unwrap(), stranger)), env)
            }),
            401,
            "UNAUTHENTICATED",
        ),
        (
            "a valid token for another target",
            Box::new(move |t| tampered(t, |e| e["target_employee"] = json!("other"))),
            403,
            "LINEAGE_MISMATCH",
        ),
        (
            "below the root without a token",
            Box::new(move |t| (None, honest(t, later, RequestId::new()).1)),
            403,
            "LINEAGE_INVALID",
        ),
    ];
    for (what, make, want_status, want_code) in cases {
        let before = records().len();
        let (token, env) = make(&t);
        let (status, body) = post(&t.c.url, "c-bridge", &env, token.as_deref()).await;
        assert_eq!((status, body["error"]["code"].as_str()), (want_status, Some(want_code)), "{what}: {body}");
        let after = records();
        assert_eq!(after.len(), before + 1, "{what}: one audit record");
        let last = &after[after.len() - 1];
        assert_eq!(last["outcome"], "refused", "{what}: the agent never ran: {last}");
        assert_eq!(last["error_code"], want_code, "{what}: {last}");
    }

    // a token replayed after its deadline
    let soon = now_ms() + 1_000;
    let (token, env, _) = honest(&t, soon, RequestId::new());
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let before = records().len();
    let (status, body) = post(&t.c.url, "c-bridge", &env, Some(&token.encode())).await;
    assert_eq!((status, body["error"]["code"].as_str()), (504, Some("DEADLINE_EXCEEDED")), "{body}");
    assert_eq!(records().len(), before + 1);
    // nothing but the honest hop ever ran on C
    let ran = records().iter().filter(|r| r["outcome"] != "refused").count();
    assert_eq!(ran, 1, "only the honest hop reached the agent");
    drop(t.a);
    drop(t.b);
}

/// A stand-in for B that verifies every token A sends it with the library,
/// keeps the id of the key that signed A's last block, and answers success.
async fn verifying_peer(trust: switchboard::lineage::TrustStore) -> (String, Arc<Mutex<Vec<String>>>) {
    use axum::http::{HeaderMap, StatusCode};
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let keep = seen.clone();
    let trust = Arc::new(trust);
    let app = axum::Router::new().route(
        "/v1/delegate",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let (keep, trust) = (keep.clone(), trust.clone());
            async move {
                let env: switchboard::protocol::DelegationRequest = serde_json::from_slice(&body).unwrap();
                let text = headers.get("x-switchboard-lineage").and_then(|v| v.to_str().ok()).unwrap_or_default();
                match switchboard::lineage::verify(text, &trust, now_ms()) {
                    Ok(v) => {
                        keep.lock().unwrap().push(v.key_id.to_string());
                        let mut r = switchboard::protocol::DelegationResponse::failed(
                            env.request_id,
                            env.target_employee,
                            switchboard::protocol::DelegationError::invalid("placeholder"),
                        );
                        (r.status, r.error, r.result) = (switchboard::protocol::Status::Success, None, "ok".into());
                        (StatusCode::OK, axum::Json(serde_json::to_value(r).unwrap()))
                    }
                    Err(e) => {
                        (StatusCode::FORBIDDEN, axum::Json(json!({"error": {"code": e.code(), "message": e.message}})))
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn a_key_rotated_mid_traffic_loses_no_request() {
    let keys = Keys::new();
    // the next key is staged first, and the peer trusts it before it signs
    let mut ring = keys.ring("a");
    let old = ring.current_id().unwrap().to_string();
    let next = ring.stage().unwrap().to_string();
    let entries: Vec<switchboard::lineage::TrustEntry> = ring
        .public_keys()
        .into_iter()
        .map(|k| switchboard::lineage::TrustEntry {
            name: "a".into(),
            public_key: k.public_key,
            may_call: vec!["bridge".into()],
            may_start_trees: true,
            expires_ms: None,
        })
        .collect();
    assert_eq!(entries.len(), 2);
    let (b_url, seen) = verifying_peer(switchboard::lineage::TrustStore::from_entries("b", &entries).unwrap()).await;
    let config = format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
may_delegate_to = ["far"]
tools_allowed = ["delegate"]
[[agents]]
slug = "far"
name = "Far, on B"
backend = {{ kind = "http", url = "{b_url}", agent = "bridge", token_env = "B_PRIME_TOKEN", peer = "b" }}
tools_allowed = ["delegate"]
limits = {{ max_attempts = 1 }}

[auth]
service_tokens = {{ "prime-boss" = "a-prime" }}

{}"#,
        keys.sections[0]
    );
    let a = Server::start(Some(&config), Some("memory:"), "127.0.0.1:0", &[("B_PRIME_TOKEN", "b-prime")], 500);
    let config_path = keys.dir.path().join("a.toml");
    std::fs::write(&config_path, &config).unwrap();

    let started = std::time::Instant::now();
    let mut rotated = false;
    let mut sent = 0;
    while seen.lock().unwrap().last().is_none_or(|k| *k != next) {
        assert!(started.elapsed() < Duration::from_secs(20), "the new key never signed: {:?}", seen.lock().unwrap());
        let env = crate::service::envelope("prime-boss", "far", "pass it on", "");
        let (status, body) = post(&a.url, "a-prime", &env, None).await;
        sent += 1;
        assert_eq!(status, 200, "request {sent}, rotated: {rotated}: {body}");
        if sent == 5 {
            // another process rotates the key directory A is running with
            let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
                .args(["--config", config_path.to_str().unwrap(), "keys", "--rotate", "--json"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(shown["current"], next.as_str(), "the staged key signs now");
            rotated = true;
        }
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), sent, "every request reached B with a token that verified");
    assert_eq!(seen[0], old);
    let switched = seen.iter().position(|k| *k == next).unwrap();
    assert!(switched >= 5 && seen[switched..].iter().all(|k| *k == next), "{seen:?}");
}

/// The ```toml block after `<!-- connect:NAME -->` in docs/LINEAGE.md.
fn guide_block(doc: &str, name: &str) -> String {
    let marker = format!("<!-- connect:{name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("{marker} is in docs/LINEAGE.md"))..];
    let start = after.find("```toml\n").unwrap() + "```toml\n".len();
    let len = after[start..].find("```").unwrap();
    after[start..start + len].to_string()
}

/// `switchboard --config PATH keys --json`: the public key it prints.
fn public_key_of(config: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["--config", config.to_str().unwrap(), "keys", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    shown["keys"][0]["public_key"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_operator_guide_connects_two_switchboards_as_written() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/LINEAGE.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b_port = free_port();
    // as written, with the key directories, B's port and the keys filled in
    let fill = |text: String, name: &str| {
        let keys = dir.path().join(format!("{name}-keys"));
        text.replace(&format!("key_dir = \"{name}-keys\""), &format!("key_dir = \"{}\"", keys.display()))
            .replace("127.0.0.1:7421", &format!("127.0.0.1:{b_port}"))
    };
    let (mut a, mut b) = (fill(guide_block(&doc, "a.toml"), "a"), fill(guide_block(&doc, "b.toml"), "b"));
    let (a_path, b_path) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
    std::fs::write(&a_path, &a).unwrap();
    std::fs::write(&b_path, &b).unwrap();
    let (a_key, b_key) = (public_key_of(&a_path), public_key_of(&b_path));
    a = a.replace("PUBLIC_KEY_OF_B", &b_key);
    b = b.replace("PUBLIC_KEY_OF_A", &a_key);
    let b_db = format!("sqlite://{}", dir.path().join("b.db").display());
    let _b = Server::start(Some(&b), Some(&b_db), &format!("127.0.0.1:{b_port}"), &[], 500);
    let a = Server::start(Some(&a), Some("memory:"), "127.0.0.1:0", &[("B_TOKEN", "b-token-for-a")], 500);

    let id = uuid::Uuid::new_v4().to_string();
    let env = json!({"request_id": id, "origin_employee": "prime-boss", "target_employee": "tag-ai",
        "user_id": "alice", "objective": "Categorize the lines", "input": "2025-10-01 Starbucks 4.50"});
    let (status, body) = post(&a.url, "a-prime-token", &env, None).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("success")), "{body}");
    assert!(body["result"].as_str().unwrap().contains("Coffee"), "B's tag-ai answered: {body}");
    let log = audit(&b_db);
    let at_b: Vec<&Value> = log["records"].as_array().unwrap().iter().filter(|r| r["root_id"] == id.as_str()).collect();
    assert_eq!(at_b.len(), 1, "B holds the delegation under A's request id: {log}");
    assert_eq!(at_b[0]["outcome"], "success");
    // the same envelope straight to B without A's token: B trusts no agent to start trees
    let env = json!({"request_id": uuid::Uuid::new_v4().to_string(), "origin_employee": "prime-boss",
        "target_employee": "tag-ai", "user_id": "alice", "objective": "Categorize the lines", "input": "x"});
    let (status, body) = post(&format!("http://127.0.0.1:{b_port}"), "b-token-for-a", &env, None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("LINEAGE_INVALID")), "{body}");
}
