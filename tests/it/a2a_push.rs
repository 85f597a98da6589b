//! A2A push notifications and the extended agent card.
//!
//! A real webhook receiver (axum on 127.0.0.1:0) gets the events of a task
//! whose push config came with the message, or was created for a waiting
//! task: every event in order, with the config's token and authentication,
//! signed (verified with the key from the published JWKS; a tampered body
//! does not verify). Retries: 503 twice then 200 is delivered; a 400 is not
//! retried and is recorded. SSRF: internal addresses are refused at create
//! time without an allowance, and at delivery time by a service without it.
//! CRUD in both bindings, owner-checked, and kept across a restart of
//! `server::serve` on the same database (SQLite and PostgreSQL). The
//! extended card: with a token, not without.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::{Value, json};
use switchboard::Runtime;
use switchboard::config::Config;
use switchboard::server::{AppState, serve};
use switchboard::store::Store;

use crate::a2a::{ALICE, BOB, error_code, message, router_for, rpc, team_config};
use crate::db;
use crate::http::call;

/// What the webhook receiver got: one POST.
#[derive(Clone)]
struct Got {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

/// A webhook receiver: `POST /hook/{name}` answers the statuses scripted
/// for `name` in turn, then `always[name]` (200 when unset), and keeps every request.
#[derive(Clone, Default)]
struct Hook {
    url: String,
    got: Arc<Mutex<HashMap<String, Vec<Got>>>>,
    script: Arc<Mutex<HashMap<String, VecDeque<u16>>>>,
    always: Arc<Mutex<HashMap<String, u16>>>,
}

impl Hook {
    async fn start() -> Hook {
        async fn receive(
            State(h): State<Hook>,
            Path(name): Path<String>,
            headers: HeaderMap,
            body: Bytes,
        ) -> StatusCode {
            let scripted = h.script.lock().unwrap().get_mut(&name).and_then(VecDeque::pop_front);
            let status = scripted.or_else(|| h.always.lock().unwrap().get(&name).copied()).unwrap_or(200);
            h.got.lock().unwrap().entry(name).or_default().push(Got { status, headers, body });
            StatusCode::from_u16(status).unwrap()
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut hook = Hook { url: format!("http://{}", listener.local_addr().unwrap()), ..Hook::default() };
        let app = Router::new().route("/hook/{name}", post(receive)).with_state(hook.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        hook.url = format!("{}/hook", hook.url);
        hook
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }

    fn got(&self, name: &str) -> Vec<Got> {
        self.got.lock().unwrap().get(name).cloned().unwrap_or_default()
    }

    /// The bodies acknowledged with a 2xx, in the order they came.
    fn delivered(&self, name: &str) -> Vec<String> {
        self.got(name)
            .into_iter()
            .filter(|g| (200..300).contains(&g.status))
            .map(|g| String::from_utf8(g.body.to_vec()).unwrap())
            .collect()
    }
}

/// Waits (polling) until `ok`; fails after 20 s with `what`.
async fn until(what: &str, ok: impl Fn() -> bool) {
    for _ in 0..1000 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting: {what}");
}

/// The team, with webhooks on 127.0.0.1 allowed and quick retries.
fn push_config(allow_loopback: bool) -> Config {
    let mut c = team_config();
    if allow_loopback {
        c.a2a.push.allow_private = vec!["127.0.0.1".into()];
    }
    c.a2a.push.retry_base_ms = 20;
    // push configs are kept sealed: every runtime of these tests (a restart, a second
    // service on the same database) reads them with the one key, as `serve` does with its key file
    c.pii.seal_key_file = Some(std::env::temp_dir().join(format!("switchboard-tests-{}.seal", std::process::id())));
    c
}

/// The stored events of a task after `after`, as JSON text, in order.
async fn stored_events(store: &dyn Store, task: &str, after: i64) -> Vec<String> {
    store.a2a_events(task, after, 1000).await.unwrap().into_iter().map(|e| e.event).collect()
}

/// Verifies a delivery's detached JWS against the JWKS; the protected header when it verifies.
fn verify(jwks: &Value, got: &Got, body: &[u8]) -> Option<Value> {
    let jws = got.headers.get("x-switchboard-signature")?.to_str().ok()?;
    let (header, sig) = jws.split_once("..")?;
    let protected: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    let key = jwks["keys"].as_array()?.iter().find(|k| k["kid"] == protected["kid"])?;
    assert_eq!((key["kty"].as_str(), key["crv"].as_str()), (Some("OKP"), Some("Ed25519")));
    let x: [u8; 32] = URL_SAFE_NO_PAD.decode(key["x"].as_str()?).ok()?.try_into().ok()?;
    let public = VerifyingKey::from_bytes(&x).ok()?;
    let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).ok()?).ok()?;
    let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(body));
    public.verify(input.as_bytes(), &sig).ok().map(|()| protected)
}

async fn get(r: &Router, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut b = Request::get(path).header("a2a-version", "1.0").header("host", "agents.test:7420");
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    let reply = call(r, b.body(Body::empty()).unwrap()).await;
    (reply.status, reply.json())
}

async fn rest_post(r: &Router, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
    let req = Request::post(path)
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let reply = call(r, req).await;
    (reply.status, reply.json())
}

#[tokio::test]
async fn every_event_of_a_task_reaches_its_webhook_in_order_signed_with_the_token() {
    let hook = Hook::start().await;
    let rt = Runtime::builder().config(push_config(true)).build().unwrap();
    let r = router_for(rt.clone()).await;
    let store = rt.store().clone();
    let (_, jwks) = get(&r, "/.well-known/jwks.json", None).await;
    assert_eq!(jwks["keys"][0]["alg"], "EdDSA", "{jwks}");

    // a push config inside SendMessage: every event of the task, from the first
    let config = json!({"url": hook.url("a"), "token": "tok-a", "authentication": {"scheme": "Bearer", "credentials": "cred-a"}});
    let sent = rpc(
        &r,
        "tag-ai",
        ALICE,
        "SendMessage",
        json!({"message": message("p-1", "2025-10-01 Starbucks 4.50"), "configuration": {"taskPushNotificationConfig": config}}),
    )
    .await;
    let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let events = stored_events(store.as_ref(), &task, 0).await;
    assert!(events.len() >= 3, "working, the result artifact, completed: {events:?}");
    until("every event delivered to a", || hook.delivered("a").len() >= events.len()).await;
    assert_eq!(hook.delivered("a"), events, "every stored event, in order, as its StreamResponse");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(last["statusUpdate"]["taskId"], task.as_str());
    for (n, got) in hook.got("a").iter().enumerate() {
        let h = |name: &str| got.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        assert_eq!(h("x-a2a-notification-token").as_deref(), Some("tok-a"));
        assert_eq!(h("authorization").as_deref(), Some("Bearer cred-a"));
        assert_eq!(h("content-type").as_deref(), Some("application/a2a+json"));
        let protected = verify(&jwks, got, &got.body).unwrap_or_else(|| panic!("delivery {n} does not verify"));
        assert_eq!(protected["alg"], "EdDSA");
        assert_eq!(protected["a2aTaskId"], task.as_str());
        assert_eq!(protected["a2aEventSeq"], n as i64 + 1);
        assert!(protected["iat"].as_i64().unwrap() > 1_700_000_000);
        let mut tampered = got.body.to_vec();
        tampered.extend_from_slice(b" ");
        assert!(verify(&jwks, got, &tampered).is_none(), "a tampered body does not verify");
        let other = got.body.to_vec().iter().map(|b| if *b == b'1' { b'2' } else { *b }).collect::<Vec<_>>();
        if other != got.body.to_vec() {
            assert!(verify(&jwks, got, &other).is_none());
        }
    }
    // the config came back in the list, with the task's id
    let listed = rpc(&r, "tag-ai", ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    assert_eq!(listed["result"]["configs"][0]["url"], hook.url("a"), "{listed}");
    assert_eq!(listed["result"]["configs"][0]["taskId"], task.as_str());

    // a config created for a task waiting for input: the events from then on
    let waiting =
        rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-input-required-p", "start")}))
            .await;
    assert_eq!(waiting["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let waiting = waiting["result"]["task"]["id"].as_str().unwrap().to_string();
    let before = store.a2a_event_seq(&waiting).await.unwrap();
    let (status, created) = rest_post(
        &r,
        &format!("/a2a/a2a-conformance/tasks/{waiting}/pushNotificationConfigs"),
        ALICE,
        json!({"url": hook.url("b"), "token": "tok-b"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["taskId"], waiting.as_str());
    assert!(!created["id"].as_str().unwrap().is_empty(), "an id is given: {created}");
    let mut more = message("tck-complete-task-p", "here you go");
    more["taskId"] = json!(waiting);
    let done = rpc(&r, "a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let turn = stored_events(store.as_ref(), &waiting, before).await;
    assert!(turn.len() >= 2, "{turn:?}");
    until("the second turn's events delivered to b", || hook.delivered("b").len() >= turn.len()).await;
    assert_eq!(hook.delivered("b"), turn, "the events after the config was made, in order");
    let first: Value = serde_json::from_str(&turn[0]).unwrap();
    assert_eq!(first["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
    for got in hook.got("b") {
        assert_eq!(got.headers["x-a2a-notification-token"], "tok-b");
        assert!(got.headers.get("authorization").is_none(), "no authentication configured");
        assert!(verify(&jwks, &got, &got.body).is_some());
    }
    assert!(hook.got("a").len() == events.len(), "a got nothing of the other task");
}

#[tokio::test]
async fn a_5xx_is_retried_until_delivered_and_a_4xx_is_not_retried_but_recorded() {
    let hook = Hook::start().await;
    let rt = Runtime::builder().config(push_config(true)).build().unwrap();
    let r = router_for(rt.clone()).await;
    let store = rt.store().clone();
    hook.script.lock().unwrap().insert("flaky".into(), VecDeque::from([503, 503]));
    hook.always.lock().unwrap().insert("refuses".into(), 400);

    let send = |id: &str, hook_name: &str| {
        json!({"message": message(id, "2025-10-02 Uber 12.00"),
               "configuration": {"taskPushNotificationConfig": {"url": hook.url(hook_name), "id": "only"}}})
    };
    let flaky = rpc(&r, "tag-ai", ALICE, "SendMessage", send("r-1", "flaky")).await;
    let flaky = flaky["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{flaky}")).to_string();
    let events = stored_events(store.as_ref(), &flaky, 0).await;
    until("every event delivered despite two 503s", || hook.delivered("flaky").len() >= events.len()).await;
    assert_eq!(hook.delivered("flaky"), events);
    let attempts = hook.got("flaky");
    assert_eq!(attempts.len(), events.len() + 2, "the first event took three tries, the others one");
    assert_eq!(attempts.iter().map(|g| g.status).take(3).collect::<Vec<_>>(), [503, 503, 200]);
    assert_eq!(attempts[0].body, attempts[2].body, "the same event again");
    let config = &store.a2a_push_configs(&flaky).await.unwrap()[0];
    assert_eq!(config.failures, 0, "{config:?}");

    let refused = rpc(&r, "tag-ai", ALICE, "SendMessage", send("r-2", "refuses")).await;
    let refused = refused["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{refused}")).to_string();
    let events = stored_events(store.as_ref(), &refused, 0).await;
    let n = events.len() as i64;
    let s = store.clone();
    let task = refused.clone();
    // each event's delivery ends (recorded as failed) before the next one starts
    for _ in 0..1000 {
        if s.a2a_push_configs(&task).await.unwrap()[0].failures >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let config = &store.a2a_push_configs(&refused).await.unwrap()[0];
    assert_eq!(config.failures, n, "every event failed once: {config:?}");
    assert!(config.last_error.as_deref().unwrap().contains("HTTP 400 (not retried)"), "{config:?}");
    assert_eq!(hook.got("refuses").len(), events.len(), "one try per event: a 400 is not retried");
    assert_eq!(config.delivered_seq, n, "and the cursor went past them");
}

#[tokio::test]
async fn webhooks_on_internal_addresses_are_refused_unless_allowed() {
    let hook = Hook::start().await;
    let store: Arc<dyn Store> = Arc::new(switchboard::store::MemoryStore::new());
    let strict = router_for(Runtime::builder().config(push_config(false)).store(store.clone()).build().unwrap()).await;
    let waiting =
        rpc(&strict, "a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-input-required-s", "x")}))
            .await;
    let task = waiting["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{waiting}")).to_string();
    for (url, reason) in [
        (hook.url("s"), "loopback"),
        ("http://[::1]:9/hook".to_string(), "loopback"),
        ("http://10.1.2.3/hook".to_string(), "private"),
        ("http://169.254.169.254/latest/meta-data".to_string(), "link-local"),
        ("http://192.0.2.1/hook".to_string(), "documentation"),
        ("http://[::7f00:1]:9/hook".to_string(), "IPv4-compatible address (RFC 4291) in ::/96 (it carries 127.0.0.1)"),
        ("http://localhost:9/hook".to_string(), "'localhost' resolves to"),
        ("ftp://example.com/hook".to_string(), "http or https"),
    ] {
        let refused = rpc(
            &strict,
            "a2a-conformance",
            ALICE,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": url}),
        )
        .await;
        assert_eq!(error_code(&refused), -32602, "{url}: {refused}");
        let text = refused["error"]["message"].as_str().unwrap();
        assert!(text.contains(reason), "{url}: {text}");
    }
    // inside a send too, before any task is made
    let send = json!({"message": message("s-2", "x"), "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/x"}}});
    let refused = rpc(&strict, "tag-ai", ALICE, "SendMessage", send).await;
    assert_eq!(error_code(&refused), -32602, "{refused}");
    assert_eq!(rpc(&strict, "tag-ai", ALICE, "ListTasks", json!({})).await["result"]["totalSize"], 0);
    // and in the HTTP+JSON binding
    let (status, body) = rest_post(
        &strict,
        &format!("/a2a/a2a-conformance/tasks/{task}/pushNotificationConfigs"),
        ALICE,
        json!({"url": "http://192.168.1.10/x"}),
    )
    .await;
    assert_eq!((status, body["error"]["status"].as_str()), (StatusCode::BAD_REQUEST, Some("INVALID_ARGUMENT")));

    // a config made where 127.0.0.1 is allowed is still refused at delivery by a service that does not allow it
    let lenient = router_for(Runtime::builder().config(push_config(true)).store(store.clone()).build().unwrap()).await;
    let created = rpc(
        &lenient,
        "a2a-conformance",
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": hook.url("s"), "id": "c1"}),
    )
    .await;
    assert_eq!(created["result"]["id"], "c1", "{created}");
    let mut more = message("tck-complete-task-s", "go on");
    more["taskId"] = json!(task);
    let done = rpc(&strict, "a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    for _ in 0..1000 {
        if store.a2a_push_configs(&task).await.unwrap()[0].failures > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let config = &store.a2a_push_configs(&task).await.unwrap()[0];
    assert!(config.last_error.as_deref().unwrap_or("").contains("refused"), "{config:?}");
    assert!(hook.got("s").is_empty(), "nothing reached the internal address");
}

/// A `switchboard serve` in this process on 127.0.0.1:0; stopped when dropped.
struct Served {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Served {
    async fn start(store: Arc<dyn Store>) -> Served {
        let rt = Runtime::builder().config(push_config(true)).store(store).build().unwrap();
        let auth = rt.config().auth.clone();
        let state = Arc::new(AppState::new(rt));
        state.tokens.load_config(&auth).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(serve(state, listener, Duration::from_millis(200), async move {
            let _ = rx.await;
        }));
        Served { url, stop: Some(tx), done: Some(done) }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.done.take().unwrap().await;
    }

    async fn rpc(&self, slug: &str, token: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        reqwest::Client::new()
            .post(format!("{}/a2a/{slug}", self.url))
            .header("a2a-version", "1.0")
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn rest(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.url))
            .header("a2a-version", "1.0")
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test]
async fn push_configs_round_trip_are_owner_checked_and_survive_a_restart() {
    let hook = Hook::start().await;
    for db in db::both().await {
        let name = db.name;
        let one = Served::start(db.dyn_store()).await;
        let waiting = one
            .rpc("a2a-conformance", ALICE, "SendMessage", json!({"message": message("tck-input-required-c", "x")}))
            .await;
        let task = waiting["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{name}: {waiting}")).to_string();
        let created = one
            .rpc(
                "a2a-conformance",
                ALICE,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "id": "cfg-1", "url": hook.url(name), "token": "t1",
                       "authentication": {"scheme": "Bearer", "credentials": "c1"}}),
            )
            .await;
        assert_eq!(created["result"]["id"], "cfg-1", "{name}: {created}");
        let path = format!("/a2a/a2a-conformance/tasks/{task}/pushNotificationConfigs");
        let (status, second) =
            one.rest(reqwest::Method::POST, &path, ALICE, Some(json!({"url": hook.url(name), "id": "cfg-2"}))).await;
        assert_eq!(status, 200, "{name}: {second}");
        // bob sees nothing of alice's task, nor can he add to it
        for m in
            ["GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"]
        {
            let got = one.rpc("a2a-conformance", BOB, m, json!({"taskId": task, "id": "cfg-1"})).await;
            assert_eq!(error_code(&got), -32001, "{name}: {m}: {got}");
        }
        let sneak = one
            .rpc(
                "a2a-conformance",
                BOB,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": hook.url("bob")}),
            )
            .await;
        assert_eq!(error_code(&sneak), -32001, "{name}: {sneak}");
        let (status, _) = one.rest(reqwest::Method::GET, &format!("{path}/cfg-1"), BOB, None).await;
        assert_eq!(status, 404, "{name}");
        one.stop().await;

        // the restart: a new server over a new connection to the same database
        let two = Served::start(Arc::new(switchboard::store::SqlStore::connect(&db.url).await.unwrap())).await;
        let got = two
            .rpc("a2a-conformance", ALICE, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": "cfg-1"}))
            .await;
        assert_eq!(got["result"]["url"], hook.url(name), "{name}: {got}");
        assert_eq!(got["result"]["token"], "t1");
        assert_eq!(got["result"]["authentication"]["scheme"], "Bearer");
        let (status, listed) = two.rest(reqwest::Method::GET, &path, ALICE, None).await;
        assert_eq!(status, 200, "{name}: {listed}");
        let ids: Vec<&str> = listed["configs"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["cfg-1", "cfg-2"], "{name}");
        let paged = two
            .rpc("a2a-conformance", ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": task, "pageSize": 1}))
            .await;
        assert_eq!(paged["result"]["configs"].as_array().map(Vec::len), Some(1), "{name}: {paged}");
        assert_eq!(paged["result"]["nextPageToken"], "o1");

        // deliveries go on from the restarted server: the next turn reaches both configs
        let mut more = message("tck-complete-task-c", "go on");
        more["taskId"] = json!(task);
        let done = two.rpc("a2a-conformance", ALICE, "SendMessage", json!({"message": more})).await;
        assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{name}: {done}");
        let ends = |h: &Hook| h.delivered(name).iter().filter(|b| b.contains("TASK_STATE_COMPLETED")).count() == 2;
        until("both configs got the completed status", || ends(&hook)).await;
        assert!(hook.got("bob").is_empty());

        // delete: gone, and again is fine (idempotent)
        let (status, _) = two.rest(reqwest::Method::DELETE, &format!("{path}/cfg-2"), ALICE, None).await;
        assert_eq!(status, 200, "{name}");
        let again = two
            .rpc("a2a-conformance", ALICE, "DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": "cfg-2"}))
            .await;
        assert_eq!(again["result"], json!({}), "{name}: {again}");
        let gone = two
            .rpc("a2a-conformance", ALICE, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": "cfg-2"}))
            .await;
        assert_eq!(error_code(&gone), -32001, "{name}: {gone}");
        let listed =
            two.rpc("a2a-conformance", ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
        assert_eq!(listed["result"]["configs"].as_array().map(Vec::len), Some(1), "{name}: {listed}");
        two.stop().await;
    }
}

#[tokio::test]
async fn the_extended_card_is_for_authenticated_callers_only() {
    let r = router_for(Runtime::builder().config(push_config(false)).build().unwrap()).await;
    let (status, public) = get(&r, "/a2a/tag-ai/.well-known/agent-card.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
    assert_eq!(public["capabilities"]["pushNotifications"], true);
    assert!(public["capabilities"]["extensions"][0].get("params").is_none(), "the public card has no rails params");

    let (status, card) = get(&r, "/a2a/tag-ai/extendedAgentCard", Some(ALICE)).await;
    assert_eq!(status, StatusCode::OK, "{card}");
    let rails = &card["capabilities"]["extensions"][0];
    assert_eq!(rails["uri"], switchboard::protocol::a2a::RAILS_EXTENSION);
    assert!(rails["params"]["maxDepth"].as_u64().unwrap() >= 1, "{card}");
    assert!(rails["params"]["deadlineMs"].as_u64().unwrap() > 0);
    assert!(rails["params"]["toolsAllowed"].is_array());
    assert_eq!(card["name"], public["name"]);
    assert!(!card["skills"].as_array().unwrap().is_empty());
    let signing =
        card["capabilities"]["extensions"].as_array().unwrap().iter().find(|e| e["params"]["jwksUri"].is_string());
    assert_eq!(signing.unwrap()["params"]["jwksUri"], "http://agents.test:7420/.well-known/jwks.json");
    let rpc_card = rpc(&r, "tag-ai", ALICE, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(rpc_card["result"], card, "both bindings answer the same card");

    // without a token: unauthenticated in both bindings
    let (status, refused) = get(&r, "/a2a/tag-ai/extendedAgentCard", None).await;
    assert_eq!((status, refused["error"]["status"].as_str()), (StatusCode::UNAUTHORIZED, Some("UNAUTHENTICATED")));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}).to_string();
    let req = Request::post("/a2a/tag-ai")
        .header("a2a-version", "1.0")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let reply = call(&r, req).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.json()["error"]["code"], -32000);
    // a forged token is no better
    let (status, _) = get(&r, "/a2a/tag-ai/extendedAgentCard", Some("forged")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // where anonymous calls are opted in (the TCK's setup), the card declares anonymous access and its user gets the card
    let mut c = push_config(false);
    c.a2a.anonymous_user = Some("anon".into());
    let open = router_for(Runtime::builder().config(c).build().unwrap()).await;
    let (status, card) = get(&open, "/a2a/tag-ai/extendedAgentCard", None).await;
    assert_eq!(status, StatusCode::OK, "{card}");
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
}

#[tokio::test]
async fn the_official_a2a_sdk_client_manages_push_configs_and_reads_the_extended_card() {
    if !crate::support::python_has("a2a.client, httpx", "a2a-sdk httpx") {
        return;
    }
    let hook = Hook::start().await;
    let db = db::sqlite().await;
    let server = Served::start(db.dyn_store()).await;
    let fixture = format!("{}/tests/fixtures/a2a_sdk_push.py", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("python3").args([&fixture, &server.url, ALICE, &hook.url("sdk")]).output(),
    )
    .await
    .expect("the SDK client finishes")
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let b = &v[binding];
        assert_eq!(b["task_state"], "TASK_STATE_INPUT_REQUIRED", "{binding}: {b}");
        assert_eq!(b["created"]["id"], format!("sdk-{binding}"), "{binding}: {b}");
        assert_eq!(b["created"]["task_id_matches"], true);
        assert_eq!(b["created"]["url"], hook.url("sdk"));
        assert_eq!(b["got_token"], "sdk-token");
        assert_eq!(b["listed"], json!([format!("sdk-{binding}")]));
        assert_eq!(b["listed_after_delete"], json!([]));
        assert_eq!(b["missing"], "TaskNotFoundError", "{binding}: {b}");
        assert_eq!(b["extended"], true);
        assert_eq!(b["extended_push"], true);
    }
    server.stop().await;
}
