//! `switchboard serve` as a process: first start, graceful SIGTERM, the
//! command backend's deadline, and two servers where an agent of the first is
//! served by the second, with depth, cycle, deadline and budget holding across
//! the hop.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A running `switchboard serve`, killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
    /// stdout lines after the first
    pub lines: mpsc::Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Sends the server's process `signal` (`STOP`, `CONT`, …) as `kill -SIGNAL` would.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill").arg(format!("-{signal}")).arg(self.child.id().to_string()).status().unwrap();
        assert!(sent.success(), "kill -{signal} {}", self.child.id());
    }

    /// Starts with `config` (None: the built-in team), state in `db`.
    pub fn start(config: Option<&str>, db: Option<&str>, addr: &str, env: &[(&str, &str)], grace_ms: u64) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.current_dir(dir.path()).env_remove("SWITCHBOARD_CONFIG").env_remove("SWITCHBOARD_DATABASE_URL");
        if let Some(c) = config {
            let path = dir.path().join("team.toml");
            std::fs::write(&path, c).unwrap();
            cmd.arg("--config").arg(path);
        }
        if let Some(db) = db {
            cmd.args(["--database-url", db]);
        }
        cmd.args(["serve", "--addr", addr, "--shutdown-grace-ms", &grace_ms.to_string()]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let first = rx.recv_timeout(Duration::from_secs(30)).expect("the server prints where it listens");
        let url =
            first.strip_prefix("switchboard listening on ").unwrap_or_else(|| panic!("unexpected first line: {first}"));
        Server { url: url.to_string(), child, lines: rx, _dir: dir }
    }

    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn team_with(extra: &str) -> String {
    format!("{}\n{extra}", switchboard::config::DEFAULT_TOML)
}

pub fn envelope(origin: &str, target: &str, objective: &str, input: &str) -> Value {
    json!({
        "request_id": uuid::Uuid::new_v4().to_string(), "origin_employee": origin, "target_employee": target,
        "user_id": "alice", "objective": objective, "input": input,
    })
}

pub async fn post_delegate(url: &str, token: &str, env: &Value) -> (u16, Value) {
    post_signed(url, token, env, None).await
}

/// `post_delegate` with a lineage token in `X-Switchboard-Lineage`, if given.
pub async fn post_signed(url: &str, token: &str, env: &Value, lineage: Option<&str>) -> (u16, Value) {
    let mut req = switchboard::util::http_client()
        .unwrap()
        .post(format!("{url}/v1/delegate"))
        .bearer_auth(token)
        .header("X-Agent-Request-ID", env["request_id"].as_str().unwrap())
        .header("X-Agent-Origin", env["origin_employee"].as_str().unwrap())
        .json(env);
    if let Some(t) = lineage {
        req = req.header("X-Switchboard-Lineage", t);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

/// The audit log of the database at `db`, as `switchboard audit --json --verify` prints it.
pub fn audit_log(db: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["--database-url", db, "audit", "--json", "--verify"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

pub async fn get_json(url: &str, token: &str) -> Value {
    switchboard::util::http_client().unwrap().get(url).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn serve_starts_with_embedded_defaults_and_prints_its_address_and_tokens() {
    let server = Server::start(None, None, "127.0.0.1:0", &[], 1000);
    let mut prime = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while prime.is_none() && Instant::now() < deadline {
        if let Ok(line) = server.lines.recv_timeout(Duration::from_secs(5))
            && line.contains("service token for agent prime-boss")
        {
            prime = line.split_whitespace().last().map(str::to_string);
        }
    }
    let prime = prime.expect("the first start prints prime-boss's token");
    let env = envelope("prime-boss", "tag-ai", "Categorize", "2025-10-01 Starbucks 4.50");
    let (status, body) = post_delegate(&server.url, &prime, &env).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["summary"].as_str().unwrap().contains("Dining - Coffee"));
    assert!(server.dir().join("switchboard.db").exists(), "state goes to an SQLite file in the working directory");
    let health = switchboard::util::http_client().unwrap().get(format!("{}/healthz", server.url)).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    // its admitted work runs on threads of its own (server::WorkRuntime; Linux cuts names to 15 bytes)
    let names = thread_names(server.pid());
    let work = &switchboard::server::WorkRuntime::THREAD_NAME[..15];
    assert!(names.iter().any(|n| n == work), "no thread named {work}: {names:?}");
}

/// The names of process `pid`'s threads (Linux cuts them to 15 bytes).
fn thread_names(pid: i32) -> Vec<String> {
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    threads.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok()).map(|n| n.trim().into()).collect()
}

#[tokio::test]
async fn server_work_threads_sets_how_many_threads_run_admitted_work() {
    let work = &switchboard::server::WorkRuntime::THREAD_NAME[..15];
    for (threads, expected) in [(3, 3), (1, 1)] {
        let config = team_with(&format!("[server]\nwork_threads = {threads}\n"));
        let server = Server::start(Some(&config), Some("memory:"), "127.0.0.1:0", &[], 100);
        let names = thread_names(server.pid());
        assert_eq!(names.iter().filter(|n| *n == work).count(), expected, "work_threads = {threads}: {names:?}");
    }
}

const SLOW: &str = r#"
[[agents]]
slug = "slow"
name = "Slow"
backend = { kind = "command", command = "sh", args = ["-c", "sleep $SLOW_SECONDS; echo '{\"summary\":\"slow done\",\"result\":\"done\"}'"] }

[auth]
service_tokens = { "prime-boss" = "t-prime" }
"#;

fn with_prime_to(extra: &str, also: &str) -> String {
    // let prime-boss delegate to the extra agents too
    team_with(extra).replacen("may_delegate_to = [\"byte-doc\"", &format!("may_delegate_to = [{also}, \"byte-doc\""), 1)
}

fn sigterm(pid: i32) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).unwrap();
}

#[tokio::test]
async fn sigterm_lets_in_flight_delegations_finish_then_stops() {
    let mut server = Server::start(
        Some(&with_prime_to(SLOW, "\"slow\"")),
        Some("memory:"),
        "127.0.0.1:0",
        &[("SLOW_SECONDS", "1")],
        10_000,
    );
    let url = server.url.clone();
    let in_flight = tokio::spawn(async move {
        post_delegate(&url, "t-prime", &envelope("prime-boss", "slow", "take your time", "")).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    sigterm(server.pid());
    let (status, body) = in_flight.await.unwrap();
    assert_eq!(status, 200, "the delegation in flight finished: {body}");
    assert_eq!(body["summary"], "slow done");
    let started = Instant::now();
    let code = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "{code}");
}

#[tokio::test]
async fn sigterm_waits_only_the_grace_period_for_work_that_does_not_end() {
    let mut server = Server::start(
        Some(&with_prime_to(SLOW, "\"slow\"")),
        Some("memory:"),
        "127.0.0.1:0",
        &[("SLOW_SECONDS", "30")],
        300,
    );
    let url = server.url.clone();
    let _stuck =
        tokio::spawn(
            async move { post_delegate(&url, "t-prime", &envelope("prime-boss", "slow", "never ends", "")).await },
        );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    sigterm(server.pid());
    loop {
        if server.child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(3), "the grace period is bounded");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.elapsed() >= Duration::from_millis(250), "it did wait for the grace period");
}

fn gone(pid: u32) -> bool {
    // absent, or a zombie waiting to be reaped: either way it runs no more
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn a_command_agent_is_killed_with_everything_it_started_when_the_deadline_passes() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let config = switchboard::Config::from_toml(&format!(
        r#"
[[agents]]
slug = "caller"
name = "Caller"
may_delegate_to = ["stuck"]
[[agents]]
slug = "stuck"
name = "Stuck"
backend = {{ kind = "command", command = "sh", args = ["-c", "sleep 30 & echo $$ $! > {}; wait"] }}
"#,
        pids.display()
    ))
    .unwrap();
    let rt = switchboard::Runtime::builder()
        .config(config)
        .agent("caller", crate::support::echo(crate::support::counter()))
        .build()
        .unwrap();
    let mut req = crate::support::request("caller", "stuck", "wait forever");
    req.constraints.deadline_ms = 500;
    let started = Instant::now();
    let r = rt.delegate(&crate::support::operator(), req).await;
    assert_eq!(r.error_code(), Some(switchboard::ErrorCode::DeadlineExceeded));
    assert!(started.elapsed() < Duration::from_secs(3));
    let pids: Vec<u32> =
        std::fs::read_to_string(&pids).unwrap().split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "the shell and its sleep");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !pids.iter().all(|p| gone(*p)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A's agents `gateway`, `splitter` and `sleepy` are served by B. B's `bridge`,
/// `relay` and `splitter` are Prime-style orchestrators; B's `bounce` is served
/// by A's `gateway`, which makes a loop across the two processes:
/// gateway (A) = bridge (B) → relay → bounce = gateway (A) = bridge (B) → relay …
/// Makes the first lineage key of the runtime `name` in `dir/name-keys`:
/// the `[lineage]` section that names it, and its public key.
pub fn lineage_keys(dir: &Path, name: &str) -> (String, String) {
    let key_dir = dir.join(format!("{name}-keys"));
    let ring = switchboard::lineage::KeyRing::open(&key_dir, name, 0).unwrap();
    let public = ring.public_keys()[0].public_key.clone();
    (format!("[lineage]\nname = \"{name}\"\nkey_dir = \"{}\"\n", key_dir.display()), public)
}

fn two_servers(b_db: &str, extra_env: &[(&str, &str)]) -> (Server, Server) {
    two_servers_with(b_db, extra_env, extra_env)
}

/// [`two_servers`], with environment variables of A's and of B's own.
fn two_servers_with(b_db: &str, a_env: &[(&str, &str)], b_env: &[(&str, &str)]) -> (Server, Server) {
    let (a_port, b_port) = (free_port(), free_port());
    // A and B trust each other's keys: every hop between them carries a lineage token
    let keys = Path::new(b_db.trim_start_matches("sqlite://")).parent().unwrap();
    let (a_lineage, a_key) = lineage_keys(keys, "a");
    let (b_lineage, b_key) = lineage_keys(keys, "b");
    let (a_url, b_url) = (format!("http://127.0.0.1:{a_port}"), format!("http://127.0.0.1:{b_port}"));
    let b_config = format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Remote caller"
may_delegate_to = ["bridge", "splitter", "sleeper"]
tools_allowed = ["delegate", "categorize"]
[[agents]]
slug = "bridge"
name = "Bridge"
backend = {{ kind = "builtin", name = "prime" }}
tools_allowed = ["delegate"]
may_delegate_to = ["relay"]
[[agents]]
slug = "relay"
name = "Relay"
backend = {{ kind = "builtin", name = "prime" }}
tools_allowed = ["delegate"]
may_delegate_to = ["bounce", "bridge"]
[[agents]]
slug = "splitter"
name = "Splitter"
backend = {{ kind = "builtin", name = "prime" }}
tools_allowed = ["delegate", "categorize"]
may_delegate_to = ["worker-1", "worker-2"]
[[agents]]
slug = "bounce"
name = "Bounce"
backend = {{ kind = "http", url = "{a_url}", agent = "gateway", token_env = "A_RELAY_TOKEN", peer = "a" }}
tools_allowed = ["delegate"]
[[agents]]
slug = "worker-1"
name = "Worker 1"
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["categorize"]
[[agents]]
slug = "worker-2"
name = "Worker 2"
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["categorize"]
[[agents]]
slug = "sleeper"
name = "Sleeper"
backend = {{ kind = "command", command = "sh", args = ["-c", "sleep 30"] }}

[prime]
[[prime.routes]]
name = "split"
pattern = "(?i)^split"
plan = "parallel"
agents = ["worker-1", "worker-2"]
objectives = ["Categorize the first half", "Categorize the second half"]
[[prime.routes]]
name = "relay"
pattern = "(?i)^(start|bounce)"
plan = "single"
agents = ["relay"]
objectives = ["relay on"]
[[prime.routes]]
name = "bounce"
pattern = "(?i)^relay"
plan = "single"
agents = ["bounce"]
objectives = ["bounce back"]

[auth]
service_tokens = {{ "prime-boss" = "b-prime", "relay" = "b-relay" }}
admin_tokens = ["b-admin"]

{b_lineage}
[[trust]]
name = "a"
public_key = "{a_key}"
may_call = ["bridge", "splitter", "sleeper"]
may_start_trees = true
"#
    );
    let a_config = format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
may_delegate_to = ["gateway", "splitter", "sleepy"]
tools_allowed = ["delegate", "categorize"]
[[agents]]
slug = "relay"
name = "B's relay, calling back"
may_delegate_to = ["gateway"]
backend = {{ kind = "builtin", name = "tag-ai" }}
tools_allowed = ["delegate"]
[[agents]]
slug = "gateway"
name = "Gateway"
backend = {{ kind = "http", url = "{b_url}", agent = "bridge", token_env = "B_PRIME_TOKEN", origin_tokens = {{ "relay" = "B_RELAY_TOKEN" }}, peer = "b" }}
tools_allowed = ["delegate"]
[[agents]]
slug = "splitter"
name = "Splitter"
backend = {{ kind = "http", url = "{b_url}", token_env = "B_PRIME_TOKEN", peer = "b" }}
tools_allowed = ["delegate", "categorize"]
[[agents]]
slug = "sleepy"
name = "Sleepy"
backend = {{ kind = "http", url = "{b_url}", agent = "sleeper", token_env = "B_PRIME_TOKEN", peer = "b" }}

[auth]
service_tokens = {{ "prime-boss" = "a-prime", "relay" = "a-relay" }}
admin_tokens = ["a-admin"]

{a_lineage}
[[trust]]
name = "b"
public_key = "{b_key}"
may_call = ["gateway"]
"#
    );
    let b = Server::start(
        Some(&b_config),
        Some(b_db),
        &format!("127.0.0.1:{b_port}"),
        &[&[("A_RELAY_TOKEN", "a-relay"), ("OTEL_SERVICE_NAME", "switchboard-b")], b_env].concat(),
        500,
    );
    let a = Server::start(
        Some(&a_config),
        Some("memory:"),
        &format!("127.0.0.1:{a_port}"),
        &[&[("B_PRIME_TOKEN", "b-prime"), ("B_RELAY_TOKEN", "b-relay"), ("OTEL_SERVICE_NAME", "switchboard-a")], a_env]
            .concat(),
        500,
    );
    (a, b)
}

fn find<'a>(tree: &'a Value, pred: &dyn Fn(&Value) -> bool) -> Option<&'a Value> {
    if pred(tree) {
        return Some(tree);
    }
    tree["children"].as_array()?.iter().find_map(|c| find(c, pred))
}

#[tokio::test]
async fn the_rails_hold_across_a_hop_between_two_switchboards() {
    let dir = tempfile::tempdir().unwrap();
    let b_db = format!("sqlite://{}", dir.path().join("b.db").display());
    let (a, b) = two_servers(&b_db, &[]);
    let b_tree = |id: String| {
        let url = format!("{}/v1/delegations/{id}", b.url);
        async move { get_json(&url, "b-admin").await }
    };

    // depth: A's gateway runs at 1 on B as `bridge`; its delegate would run at 2
    let env = envelope("prime-boss", "gateway", "start the loop", "");
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("DEPTH_LIMIT")), "{body}");
    assert_eq!(body["execution"]["attempts"], 1, "a refusal below is not retried: {body}");
    let tree = b_tree(env["request_id"].as_str().unwrap().to_string()).await;
    assert_eq!(tree["agent"], "bridge", "{tree}");
    let relay = find(&tree, &|n| n["agent"] == "relay").unwrap_or_else(|| panic!("{tree}"));
    assert_eq!(relay["error_code"], "DEPTH_LIMIT", "B enforced the depth the envelope carried: {tree}");

    // cycle: with room to go deeper, the loop A → B → A → B is caught by the chain
    let mut env = envelope("prime-boss", "gateway", "start the loop", "");
    env["constraints"] = json!({"max_depth": 8});
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("CYCLE_DETECTED")), "{body}");
    // B's second visit hangs under A's proxy node, so it is found in B's audit log
    let log = audit_log(&b_db);
    assert_eq!(log["verify"]["valid"], true);
    let refused: Vec<&Value> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["root_id"] == env["request_id"] && r["error_code"] == "CYCLE_DETECTED" && r["outcome"] == "refused"
        })
        .collect();
    assert_eq!(refused.len(), 1, "{log}");
    assert_eq!((refused[0]["origin"].as_str(), refused[0]["target"].as_str()), (Some("bridge"), Some("relay")));

    // deadline: B gets what is left of A's deadline and stops its own work in time
    let mut env = envelope("prime-boss", "sleepy", "sleep", "");
    env["constraints"] = json!({"deadline_ms": 1000});
    let started = Instant::now();
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "DEADLINE_EXCEEDED");
    assert!(started.elapsed() < Duration::from_secs(5));
    let id = env["request_id"].as_str().unwrap().to_string();
    let tree = loop {
        let t = b_tree(id.clone()).await;
        if t["status"].is_string() || started.elapsed() > Duration::from_secs(5) {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(tree["error_code"], "DEADLINE_EXCEEDED", "B timed out by itself: {tree}");
    assert!(tree["duration_ms"].as_u64().unwrap() < 1500, "{tree}");

    // budget: what is left of A's budget is B's budget; B's children share it
    let input = "2025-10-01 Starbucks 4.50\n2025-10-02 Shell 40.00\n2025-10-03 Staples 19.99";
    let mut env = envelope("prime-boss", "splitter", "split the statement", input);
    // A and B's splitter fit in 250 (about 25 prompt + 128 expected answer);
    // each worker's share, 125, does not
    env["constraints"] = json!({"max_tokens": 250, "max_depth": 3});
    let (_, body) = post_delegate(&a.url, "a-prime", &env).await;
    let tree = b_tree(env["request_id"].as_str().unwrap().to_string()).await;
    let refused: Vec<&Value> =
        tree["children"].as_array().unwrap().iter().filter(|c| c["error_code"] == "TOKEN_BUDGET_EXCEEDED").collect();
    assert_eq!(refused.len(), 2, "both workers' estimates exceed their share of 250 tokens: {body} {tree}");
    let mut env = envelope("prime-boss", "splitter", "split the statement", input);
    env["constraints"] = json!({"max_tokens": 3000, "max_depth": 3});
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!(status, 200, "{body}");
    let used = body["token_usage"]["total"].as_u64().unwrap();
    assert!(used > 0 && used <= 3000, "B's usage comes back within A's grant: {used}");
}

/// A collector that keeps every OTLP/HTTP JSON export it receives.
pub async fn collector() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::routing::post;
    let got: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: axum::body::Bytes| {
            let keep = keep.clone();
            async move {
                if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    keep.lock().unwrap().push(v);
                }
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// (service, name, trace id, span id, parent span id, attributes) of every span received.
pub fn spans(exports: &[Value]) -> Vec<(String, String, String, String, String, Value)> {
    let mut out = Vec::new();
    for e in exports {
        for rs in e["resourceSpans"].as_array().into_iter().flatten() {
            let service = rs["resource"]["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["key"] == "service.name")
                .and_then(|a| a["value"]["stringValue"].as_str())
                .unwrap_or_default()
                .to_string();
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for s in ss["spans"].as_array().into_iter().flatten() {
                    let text = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                    out.push((
                        service.clone(),
                        text("name"),
                        text("traceId"),
                        text("spanId"),
                        text("parentSpanId"),
                        s["attributes"].clone(),
                    ));
                }
            }
        }
    }
    out
}

fn attr(attributes: &Value, key: &str) -> Option<String> {
    attributes.as_array()?.iter().find(|a| a["key"] == key).map(|a| {
        let v = &a["value"];
        v["stringValue"]
            .as_str()
            .map(str::to_string)
            .or_else(|| v["intValue"].as_str().map(str::to_string))
            .unwrap_or_else(|| v.to_string())
    })
}

#[tokio::test]
async fn one_trace_spans_both_switchboards_and_is_exported_over_otlp() {
    let (collector_url, got) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let b_db = format!("sqlite://{}", dir.path().join("b.db").display());
    let (a, _b) = two_servers(&b_db, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)]);
    let mut env = envelope("prime-boss", "splitter", "split the statement", "2025-10-01 Starbucks 4.50");
    env["constraints"] = json!({"max_depth": 3});
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!(status, 200, "{body}");

    // the batch exporters send within about half a second
    let deadline = Instant::now() + Duration::from_secs(15);
    let all = loop {
        let all = spans(&got.lock().unwrap());
        // each span is exported when it ends, maybe in a later batch than the others:
        // wait for every span this test reads, not only the first ones to end
        let has = |service: &str, name: &str| all.iter().any(|s| s.0 == service && s.1 == name);
        if has("switchboard-a", "delegate splitter")
            && has("switchboard-b", "POST /v1/delegate")
            && has("switchboard-b", "delegate splitter")
            && all.iter().filter(|s| s.0 == "switchboard-b" && s.1.starts_with("delegate worker")).count() == 2
        {
            break all;
        }
        assert!(Instant::now() < deadline, "spans never arrived: {all:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let a_span =
        all.iter().find(|s| s.0 == "switchboard-a" && s.1 == "delegate splitter").expect("A's delegation span");
    assert_eq!(attr(&a_span.5, "request_id").as_deref(), env["request_id"].as_str());
    assert_eq!(attr(&a_span.5, "origin_agent").as_deref(), Some("prime-boss"));
    assert_eq!(attr(&a_span.5, "target_agent").as_deref(), Some("splitter"));
    assert_eq!(attr(&a_span.5, "depth").as_deref(), Some("1"));
    let trace = &a_span.2;
    let b_spans: Vec<_> = all.iter().filter(|s| s.0 == "switchboard-b").collect();
    assert!(b_spans.iter().all(|s| &s.2 == trace), "B continued A's trace: {b_spans:?}");
    let b_http = b_spans.iter().find(|s| s.1 == "POST /v1/delegate").expect("B's request span");
    assert_eq!(&b_http.4, &a_span.3, "B's request is a child of A's delegation span");
    let b_splitter = b_spans.iter().find(|s| s.1 == "delegate splitter").unwrap();
    let workers: Vec<_> = b_spans.iter().filter(|s| s.1.starts_with("delegate worker")).collect();
    assert!(workers.iter().all(|w| w.4 == b_splitter.3), "the workers' spans nest under B's splitter");
}

#[tokio::test]
async fn a_switchboard_that_does_not_export_passes_the_callers_trace_on_unchanged() {
    // A exports nothing, B does: B's spans nest under the caller's span, the
    // last one anybody exported, not under a span of A's that nobody will see
    let (collector_url, got) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let b_db = format!("sqlite://{}", dir.path().join("b.db").display());
    let (a, _b) = two_servers_with(&b_db, &[], &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)]);
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let mut env = envelope("prime-boss", "splitter", "split the statement", "2025-10-01 Starbucks 4.50");
    env["constraints"] = json!({"max_depth": 3});
    let res = switchboard::util::http_client()
        .unwrap()
        .post(format!("{}/v1/delegate", a.url))
        .bearer_auth("a-prime")
        .header("X-Agent-Request-ID", env["request_id"].as_str().unwrap())
        .header("X-Agent-Origin", "prime-boss")
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .json(&env)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(15);
    let all = loop {
        let all = spans(&got.lock().unwrap());
        if all.iter().any(|s| s.1 == "POST /v1/delegate") && all.iter().any(|s| s.1 == "delegate splitter") {
            break all;
        }
        assert!(Instant::now() < deadline, "B's spans never arrived: {all:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(all.iter().all(|s| s.0 == "switchboard-b"), "A exported nothing: {all:?}");
    assert!(all.iter().all(|s| s.2 == trace), "B continued the caller's trace: {all:?}");
    let b_http = all.iter().find(|s| s.1 == "POST /v1/delegate").unwrap();
    assert_eq!(b_http.4, parent, "B's request is a child of the caller's span, passed through A unchanged");
}

#[tokio::test]
async fn every_handler_continues_the_callers_traceparent() {
    let (collector_url, got) = collector().await;
    let config = team_with(
        r#"
[auth]
user_tokens = { "alice" = "t-alice" }
"#,
    );
    let server = Server::start(
        Some(&config),
        Some("memory:"),
        "127.0.0.1:0",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url), ("OTEL_SERVICE_NAME", "switchboard-traced")],
        1000,
    );
    let client = switchboard::util::http_client().unwrap();
    // one caller's trace per surface: (route span name, trace id, the caller's span id)
    let surfaces = [
        ("POST /v1/chat", "/v1/chat", json!({"message": "What is APR?"}), "11"),
        (
            "POST /v1/chat/completions",
            "/v1/chat/completions",
            json!({"model": "prime-boss", "messages": [{"role": "user", "content": "What is APR?"}]}),
            "22",
        ),
        (
            "POST /a2a/{slug}",
            "/a2a/tag-ai",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                   "params": {"message": {"role": "ROLE_USER", "messageId": "m-trace", "parts": [{"text": "2025-10-01 Starbucks 4.50"}]}}}),
            "33",
        ),
    ];
    let mut expected = Vec::new();
    for (name, path, body, tag) in &surfaces {
        let (trace, parent) = (format!("{tag:0>32}"), format!("{tag:0>16}"));
        let res = client
            .post(format!("{}{path}", server.url))
            .bearer_auth("t-alice")
            .header("A2A-Version", "1.0")
            .header("traceparent", format!("00-{trace}-{parent}-01"))
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}: {}", res.text().await.unwrap_or_default());
        expected.push((*name, trace, parent));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let all = spans(&got.lock().unwrap());
        let done = expected.iter().all(|(name, trace, parent)| {
            let Some(request) = all.iter().find(|s| s.1 == *name && &s.2 == trace) else { return false };
            assert_eq!(&request.4, parent, "{name}: the request span's parent is the caller's span");
            // the delegation the request ran nests under the request span, in the caller's trace
            all.iter().any(|s| s.2 == *trace && s.1.starts_with("delegate ") && s.4 == request.3)
        });
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "spans never arrived as expected: {expected:?} in {all:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads SSE frames (event name, JSON data) until `done` says stop.
async fn read_events(res: reqwest::Response, done: impl Fn(&[(String, Value)]) -> bool) -> Vec<(String, Value)> {
    let mut res = res;
    let mut buf = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !done(&events) {
        let chunk = tokio::time::timeout_at(deadline, res.chunk())
            .await
            .expect("events in time")
            .unwrap()
            .expect("stream open");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let name = frame.lines().find_map(|l| l.strip_prefix("event:")).map(|s| s.trim().to_string());
            let data = frame.lines().find_map(|l| l.strip_prefix("data:")).map(|s| s.trim().to_string());
            if let (Some(name), Some(data)) = (name, data) {
                events.push((name, serde_json::from_str(&data).unwrap_or(Value::Null)));
            }
        }
    }
    events
}

#[tokio::test]
async fn the_event_stream_shows_each_user_their_own_delegations_live() {
    let config = team_with(
        r#"
[auth]
user_tokens = { "alice" = "t-alice", "bob" = "t-bob" }
"#,
    );
    let server = Server::start(Some(&config), Some("memory:"), "127.0.0.1:0", &[], 1000);
    let client = switchboard::util::http_client().unwrap();
    let alice_stream = client.get(format!("{}/v1/events", server.url)).bearer_auth("t-alice").send().await.unwrap();
    assert_eq!(alice_stream.status().as_u16(), 200);
    assert_eq!(alice_stream.headers()["content-type"], "text/event-stream");
    let chat = |token: &'static str, message: &'static str| {
        let (client, url) = (client.clone(), server.url.clone());
        async move {
            let v: Value = client
                .post(format!("{url}/v1/chat"))
                .bearer_auth(token)
                .json(&json!({"message": message, "input": "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25"}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["request_id"].as_str().unwrap().to_string()
        }
    };
    // bob first: none of his events may reach alice
    let bobs = chat("t-bob", "Upload this receipt and categorize it").await;
    let alices = chat("t-alice", "Upload this receipt and categorize it").await;
    let events =
        read_events(alice_stream, |e| e.iter().any(|(name, d)| name == "finished" && d["target"] == "prime-boss"))
            .await;
    assert!(events.iter().all(|(_, d)| d["user_id"] == "alice" && d["root_id"] == alices), "{events:?}");
    assert!(events.iter().all(|(_, d)| d["root_id"] != bobs));
    let kinds: Vec<String> =
        events.iter().map(|(n, d)| format!("{n}:{}", d["target"].as_str().unwrap_or(""))).collect();
    for k in [
        "started:byte-doc",
        "attempt:byte-doc",
        "finished:byte-doc",
        "started:tag-ai",
        "finished:tag-ai",
        "finished:prime-boss",
    ] {
        assert!(kinds.contains(&k.to_string()), "{k} missing from {kinds:?}");
    }

    // one tree only
    let stream = client
        .get(format!("{}/v1/events?root_id={}", server.url, uuid::Uuid::new_v4()))
        .bearer_auth("t-alice")
        .send()
        .await
        .unwrap();
    chat("t-alice", "Hello").await;
    let quiet = tokio::time::timeout(Duration::from_millis(500), read_events(stream, |e| !e.is_empty())).await;
    assert!(quiet.is_err(), "events of another tree were sent");
}
