//! In-process overhead of the delegation pipeline, side by side in one run:
//! a zero-work agent called directly, then the same agent through the full
//! pipeline (every rail, audit and tree records in the in-memory store), a
//! 2-step chain and a 3-way fan-out, and Prime's router planning one
//! message. Prints p50, p99 and operations per second.
//!
//! `cargo bench --bench overhead` (set BENCH_N to change the sample count).
//!
//! `cargo bench --bench overhead -- memory` measures memory instead, with the
//! durable SQLite store: resident memory with 1000 delegations in flight at
//! once, then over 100 000 delegations (BENCH_MEMORY_N) at concurrency 64.
//!
//! `cargo bench --bench overhead -- lineage` measures the lineage token
//! alone (docs/LINEAGE.md): minting a root, one hop's work (verify the
//! incoming token, attenuate, encode) and verifying a 3-hop token.
//!
//! `cargo bench --bench overhead -- redact` measures the PII redactor alone
//! (it runs on every delegation's input): a chat message with PII, a
//! receipt without, a 200-row statement, a statement of the input limit's
//! 256 KiB, and PDF text whose numbers are split by odd spaces and dashes.
//!
//! `cargo bench --bench overhead -- documents` measures reading a PDF's
//! text as its page grows: the CPU for n strings and for 8n, on one line
//! and each on a line of its own (linear reading gives about 8x; the
//! quadratic line once gave 14.5x), and what a file past the text limit
//! costs before it is refused, beside what reading it whole costs.
//!
//! Each figure is also printed as a `BENCH_JSON {...}` line for
//! `scripts/bench.sh`.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

use async_trait::async_trait;
use switchboard::Call;
use switchboard::Principal;
use switchboard::protocol::{AgentSlug, DelegationRequest, UserId};
use switchboard::{Agent, AgentContext, AgentOutput, Config, DelegationError, Runtime, Task};

struct Zero;

#[async_trait]
impl Agent for Zero {
    async fn run(&self, _ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
        Ok(AgentOutput::new("done", "done"))
    }
}

/// Waits for the gate to open: holds delegations in flight.
struct Held {
    inside: Arc<AtomicUsize>,
    gate: Arc<tokio::sync::Semaphore>,
}

#[async_trait]
impl Agent for Held {
    async fn run(&self, _ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
        self.inside.fetch_add(1, Ordering::SeqCst);
        let _pass =
            self.gate.acquire().await.map_err(|_| DelegationError::from_code(switchboard::ErrorCode::Cancelled))?;
        Ok(AgentOutput::new("done", "done"))
    }
}

/// Delegates to `w1..wN` one after another (chain) or all at once (fan-out).
struct Orchestrator {
    workers: Vec<AgentSlug>,
    parallel: bool,
}

#[async_trait]
impl Agent for Orchestrator {
    async fn run(&self, ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
        let d = ctx.delegator()?;
        let calls: Vec<Call> = self.workers.iter().map(|w| Call::new(w.clone(), "step")).collect();
        if self.parallel {
            d.delegate_parallel(calls).await?;
        } else {
            for c in calls {
                d.delegate(c).await;
            }
        }
        Ok(AgentOutput::new("done", "done"))
    }
}

const TEAM: &str = r#"
[[agents]]
slug = "caller"
name = "caller"
may_delegate_to = ["*"]
[[agents]]
slug = "zero"
name = "zero"
[[agents]]
slug = "chain"
name = "chain"
may_delegate_to = ["*"]
[[agents]]
slug = "fan"
name = "fan"
may_delegate_to = ["*"]
[[agents]]
slug = "w1"
name = "w1"
[[agents]]
slug = "w2"
name = "w2"
[[agents]]
slug = "w3"
name = "w3"
[[agents]]
slug = "held"
name = "held"
"#;

struct Stats {
    p50: Duration,
    p99: Duration,
    per_sec: f64,
}

fn stats(mut samples: Vec<Duration>, wall: Duration) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Stats { p50: at(0.50), p99: at(0.99), per_sec: samples.len() as f64 / wall.as_secs_f64() }
}

async fn measure<F, Fut>(n: usize, mut f: F) -> Stats
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await; // warm up
    }
    let mut samples = Vec::with_capacity(n);
    let wall = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        samples.push(t.elapsed());
    }
    stats(samples, wall.elapsed())
}

fn slug(s: &str) -> AgentSlug {
    AgentSlug::parse(s).expect("slug")
}

fn main() {
    if std::env::args().any(|a| a == "memory") {
        return memory();
    }
    let n: usize = std::env::var("BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    if std::env::args().any(|a| a == "lineage") {
        return lineage(n);
    }
    if std::env::args().any(|a| a == "redact") {
        return redact(n);
    }
    if std::env::args().any(|a| a == "documents") {
        return documents();
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    let workers = vec![slug("w1"), slug("w2"), slug("w3")];
    let runtime = Runtime::builder()
        .config(Config::from_toml(TEAM).expect("config"))
        .agent("caller", Zero)
        .agent("zero", Zero)
        .agent("w1", Zero)
        .agent("w2", Zero)
        .agent("w3", Zero)
        .agent("held", Zero) // declared by the team; held only in the memory run
        .agent("chain", Orchestrator { workers: workers[..2].to_vec(), parallel: false })
        .agent("fan", Orchestrator { workers, parallel: true })
        .build()
        .expect("runtime");
    let user = UserId::parse("bench").expect("user");
    let request = |target: &str| {
        let mut r = DelegationRequest::new(slug("caller"), slug(target), user.clone(), "do it", "");
        r.constraints.max_depth = 3;
        r
    };

    if let Ok(only) = std::env::var("BENCH_ONLY") {
        // one case alone, for a profiler or an instruction count (scripts/bench/instructions.sh)
        if only == "route" {
            let (_, one) = routing(n);
            println!("route: {:.1?} p50", one.p50);
            return;
        }
        let target = match only.as_str() {
            "single" => "zero",
            "chain" => "chain",
            "fanout" => "fan",
            other => {
                eprintln!("BENCH_ONLY takes single, chain, fanout or route, not {other:?}");
                std::process::exit(2);
            }
        };
        return rt.block_on(async {
            let one = measure(n, || async {
                black_box(runtime.delegate(&Principal::Admin, request(target)).await);
            })
            .await;
            println!("{only}: {:.1?} p50", one.p50);
        });
    }
    rt.block_on(async {
        let zero = Zero;
        let ctx = AgentContext::detached(Vec::<String>::new());
        let task = Task::new("do it", "");
        let direct = measure(n, || async {
            black_box(zero.run(&ctx, &task).await.ok());
        })
        .await;
        let single = measure(n, || async {
            black_box(runtime.delegate(&Principal::Admin, request("zero")).await);
        })
        .await;
        let chain = measure(n / 2, || async {
            black_box(runtime.delegate(&Principal::Admin, request("chain")).await);
        })
        .await;
        let fan = measure(n / 2, || async {
            black_box(runtime.delegate(&Principal::Admin, request("fan")).await);
        })
        .await;

        println!("switchboard in-process overhead ({n} samples, zero-work agents, in-memory store)\n");
        println!("{:<38} {:>10} {:>10} {:>14} {:>12}", "case", "p50", "p99", "per second", "vs direct");
        let row = |name: &str, s: &Stats| {
            println!(
                "{:<38} {:>10.1?} {:>10.1?} {:>14.0} {:>11.0}x",
                name,
                s.p50,
                s.p99,
                s.per_sec,
                s.p50.as_secs_f64() / direct.p50.as_secs_f64().max(1e-9)
            );
        };
        row("agent called directly (no rails)", &direct);
        row("one delegation, full pipeline", &single);
        row("2-step chain (3 delegations)", &chain);
        row("3-way fan-out (4 delegations)", &fan);
        let (learn, route) = routing(n);
        row("Prime's router: one message planned", &route);
        println!("(the router learned the built-in team's examples once, in {learn:.1?})");
        println!(
            "BENCH_JSON {}",
            serde_json::json!({"section": "inprocess", "name": "route_learn", "n": 1, "ms": learn.as_secs_f64() * 1e3})
        );
        // the same envelope to JSON and back, and its SHA-256: a fixed piece of work that
        // measures this machine, so a figure committed on another one still compares
        let envelope = request("zero");
        let reference = measure_sync(n, || {
            let bytes = serde_json::to_vec(black_box(&envelope)).expect("json");
            let back: DelegationRequest = serde_json::from_slice(&bytes).expect("json");
            black_box((back, <sha2::Sha256 as sha2::Digest>::digest(&bytes)));
        });
        against_committed(&reference, &[("single", &single), ("chain", &chain), ("fanout", &fan)]);
        for (name, s) in [
            ("direct", &direct),
            ("single", &single),
            ("chain", &chain),
            ("fanout", &fan),
            ("route", &route),
            ("reference", &reference),
        ] {
            println!(
                "BENCH_JSON {}",
                serde_json::json!({
                    "section": "inprocess", "name": name, "n": n,
                    "p50_us": s.p50.as_secs_f64() * 1e6, "p99_us": s.p99.as_secs_f64() * 1e6, "per_sec": s.per_sec,
                })
            );
        }
    });
}

/// The committed in-process figures, in units of the reference work.
const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/overhead-baseline.json");

/// Prints each case's p50 in units of the reference work measured in this
/// run, next to the committed figure (`benches/overhead-baseline.json`) and
/// their ratio: a change that makes a delegation heavier shows here, on any
/// machine. `BENCH_SAVE_BASELINE=1` writes this run's figures as the new
/// committed ones (commit the file with the change that moved them).
fn against_committed(reference: &Stats, cases: &[(&str, &Stats)]) {
    let unit = reference.p50.as_secs_f64().max(1e-9);
    let units: serde_json::Map<String, serde_json::Value> =
        cases.iter().map(|(name, s)| ((*name).to_string(), serde_json::json!(s.p50.as_secs_f64() / unit))).collect();
    let committed: Option<serde_json::Value> =
        std::fs::read_to_string(BASELINE).ok().and_then(|t| serde_json::from_str(&t).ok());
    println!(
        "\nin units of the reference work (one envelope to JSON and back, and its SHA-256: {:.2?} p50 here)",
        reference.p50
    );
    let at = committed.as_ref().and_then(|c| c["commit"].as_str()).unwrap_or("none");
    println!("{:<38} {:>10} {:>10} {:>8}", "case", "now", "committed", "ratio");
    for (name, now) in &units {
        let now = now.as_f64().unwrap_or(0.0);
        let then = committed.as_ref().and_then(|c| c["units"][name].as_f64());
        match then {
            Some(then) => {
                let ratio = now / then.max(1e-9);
                let mark = if ratio > 1.15 { "  heavier than the committed figure" } else { "" };
                println!("{name:<38} {now:>10.1} {then:>10.1} {ratio:>7.2}x{mark}");
                println!(
                    "BENCH_JSON {}",
                    serde_json::json!({"section": "inprocess", "name": format!("{name}_vs_committed"), "ratio": ratio, "units": now, "committed_units": then, "committed_at": at})
                );
            }
            None => println!("{name:<38} {now:>10.1} {:>10} {:>8}", "-", "-"),
        }
    }
    println!("(committed at {at}; BENCH_SAVE_BASELINE=1 writes this run's figures there)");
    if std::env::var_os("BENCH_SAVE_BASELINE").is_some() {
        let commit = std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let doc = serde_json::json!({
            "about": "p50 of each in-process case of benches/overhead.rs in units of its reference work (one envelope to JSON and back, and its SHA-256), measured in one run; the bench prints today's figures against these",
            "commit": commit,
            "reference_us": reference.p50.as_secs_f64() * 1e6,
            "units": units,
        });
        std::fs::write(BASELINE, serde_json::to_string_pretty(&doc).expect("json") + "\n").expect("baseline written");
        println!("written: {BASELINE}");
    }
}

/// Prime's rule planner on the evaluation's requests (tests/fixtures/routing):
/// what learning the built-in team's examples costs once, and what planning
/// one message costs (clauses, features, the model, the decision).
fn routing(n: usize) -> (Duration, Stats) {
    let config = Config::builtin();
    let learned = Instant::now();
    let planner = switchboard::testing::Planner::new(&config, "prime-boss").expect("planner");
    planner.learn();
    let learn = learned.elapsed();
    let messages: Vec<String> = include_str!("../tests/fixtures/routing/tune.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .collect();
    let mut i = 0;
    let stats = measure_sync(n, || {
        i = (i + 1) % messages.len();
        black_box(planner.route(&messages[i]));
    });
    (learn, stats)
}

/// Resident and peak memory of this process, in KiB, from /proc.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn memory() {
    let total: usize = std::env::var("BENCH_MEMORY_N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let in_flight: usize = std::env::var("BENCH_IN_FLIGHT").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("memory.db").display());
    let inside = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    rt.block_on(async {
        let store = switchboard::store::SqlStore::connect(&url).await.expect("sqlite");
        let runtime = Runtime::builder()
            .config(Config::from_toml(TEAM).expect("config"))
            .store(Arc::new(store))
            .agent("caller", Zero)
            .agent("zero", Zero)
            .agent("chain", Zero)
            .agent("fan", Zero)
            .agent("w1", Zero)
            .agent("w2", Zero)
            .agent("w3", Zero)
            .agent("held", Held { inside: inside.clone(), gate: gate.clone() })
            .build()
            .expect("runtime");
        let user = UserId::parse("bench").expect("user");
        let request = |target: &str| DelegationRequest::new(slug("caller"), slug(target), user.clone(), "do it", "");
        // warm up: pools, caches, the first pages of the database
        futures::stream::iter(0..1000)
            .for_each_concurrent(64, |_| async {
                black_box(runtime.delegate(&Principal::Admin, request("zero")).await);
            })
            .await;
        let (idle, _) = rss_kib();

        let held: Vec<_> = (0..in_flight)
            .map(|_| {
                let (runtime, req) = (runtime.clone(), request("held"));
                tokio::spawn(async move { runtime.delegate(&Principal::Admin, req).await })
            })
            .collect();
        while inside.load(Ordering::SeqCst) < in_flight {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (with_in_flight, _) = rss_kib();
        gate.add_permits(in_flight);
        let mut ok = 0;
        for h in held {
            ok += usize::from(h.await.expect("task").status == switchboard::protocol::Status::Success);
        }
        assert_eq!(ok, in_flight, "every held delegation finished");

        let mut samples = Vec::new();
        let started = Instant::now();
        let mut done = 0;
        for step in [total / 10, total / 2, total] {
            futures::stream::iter(done..step)
                .for_each_concurrent(64, |_| async {
                    black_box(runtime.delegate(&Principal::Admin, request("zero")).await);
                })
                .await;
            done = step;
            samples.push((done, rss_kib().0));
        }
        let wall = started.elapsed();
        let (_, peak) = rss_kib();
        println!("switchboard memory (durable SQLite store, zero-work agents)\n");
        println!("  idle after warm-up:              {idle:>8} KiB");
        println!("  {in_flight} delegations in flight:      {with_in_flight:>8} KiB");
        for (n, rss) in &samples {
            println!("  after {n:>7} more delegations:   {rss:>8} KiB");
        }
        println!("  peak:                            {peak:>8} KiB");
        println!(
            "  {total} delegations in {:.1?} ({:.0}/s at concurrency 64)",
            wall,
            total as f64 / wall.as_secs_f64()
        );
        let first = samples.first().map_or(0, |s| s.1);
        let last = samples.last().map_or(0, |s| s.1);
        println!(
            "BENCH_JSON {}",
            serde_json::json!({
                "section": "memory", "idle_kib": idle, "in_flight": in_flight, "in_flight_kib": with_in_flight,
                "total": total, "after_tenth_kib": first, "after_total_kib": last, "peak_kib": peak,
                "per_sec": total as f64 / wall.as_secs_f64(),
            })
        );
    });
}

fn measure_sync(n: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..n / 10 {
        f(); // warm up
    }
    let mut samples = Vec::with_capacity(n);
    let wall = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    stats(samples, wall.elapsed())
}

/// Lineage tokens: a root minted at `a`, a hop at `b` (verify the 2-hop
/// token, attenuate, encode), the 3-hop token verified at `c`.
fn lineage(n: usize) {
    use switchboard::lineage::{Claims, KeyRing, Link, TrustEntry, TrustStore, verify};
    use switchboard::protocol::RequestId;

    let ring = |name: &str, seed: u8| KeyRing::from_seed(name, [seed; 32]).expect("ring");
    let (a, b) = (ring("a", 1), ring("b", 2));
    let entry = |r: &KeyRing| TrustEntry {
        name: r.name().into(),
        public_key: r.public_keys()[0].public_key.clone(),
        may_call: vec!["*".into()],
        may_start_trees: true,
        expires_ms: None,
    };
    let at_b = TrustStore::from_entries("b", &[entry(&a)]).expect("trust");
    let at_c = TrustStore::from_entries("c", &[entry(&a), entry(&b)]).expect("trust");
    let now = switchboard::store::now_ms() as u64;
    let id = RequestId::new();
    let root = Claims {
        tree: id,
        parent: None,
        request: id,
        user: UserId::parse("bench").expect("user"),
        depth: 0,
        max_depth: 4,
        fan_out: 3,
        deadline_ms: now + 3_600_000,
        budget: 1200,
        tools: Claims::tool_set(["email", "money.read", "search"]),
        path: vec![Link::new(slug("user"), slug("prime-boss"), "analyze my spending")],
        issuer: "a".into(),
        audience: "a".into(),
    };
    let t0 = a.mint_root(root.clone()).expect("root");
    let c1 = root.child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "extract"), "b");
    let t1 = a.attenuate(&t0, c1.clone()).expect("hop 1").encode();
    let c2 = c1.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c");
    // A receiver remembers the signatures it verified (a later hop of the same
    // tree carries the same prefix), so each measured call gets a token it has
    // not seen: one per call, each a tree of its own (`fresh`), or the
    // children of one node (`siblings`: the prefix seen, the last block new).
    let calls = n + n / 10 + 1;
    let fresh: Vec<(String, String)> = (0..calls)
        .map(|_| {
            let id = RequestId::new();
            let r = Claims { tree: id, request: id, ..root.clone() };
            let c1 = r.child(RequestId::new(), Link::new(slug("prime-boss"), slug("byte-doc"), "extract"), "b");
            let t1 = a.attenuate(&a.mint_root(r).expect("root"), c1.clone()).expect("hop 1");
            let c2 = c1.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c");
            (t1.encode(), b.attenuate(&t1, c2).expect("hop 2").encode())
        })
        .collect();
    let parent = switchboard::lineage::Token::decode(&t1).expect("decode");
    let siblings: Vec<String> = (0..calls)
        .map(|_| {
            let c2 = c1.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c");
            b.attenuate(&parent, c2).expect("hop 2").encode()
        })
        .collect();
    let mut i = 0;
    let mut next = move || {
        i = (i + 1) % calls;
        i
    };
    // what b does with a token that arrives: decode and verify it (once, as
    // `Authority::verify` does), and for the call it sends on, the child of
    // the verified claims attenuated and encoded
    let hop_of = |t1: &str| {
        let token = switchboard::lineage::Token::decode(t1).expect("decode");
        let v = token.verify(&at_b, now).expect("verify at b");
        let child = v.claims.child(RequestId::new(), Link::new(slug("byte-doc"), slug("tag-ai"), "tag"), "c");
        black_box(b.attenuate(&token, child).expect("hop 2").encode());
    };
    let t2 = b.attenuate(&parent, c2.clone()).expect("hop 2").encode();
    let mint = measure_sync(n, || {
        black_box(a.mint_root(root.clone()).expect("root").encode());
    });
    let per_hop = measure_sync(n, || hop_of(&fresh[next()].0));
    let verify3 = measure_sync(n, || {
        black_box(verify(&fresh[next()].1, &at_c, now).expect("verify at c"));
    });
    let verify3_seen = measure_sync(n, || {
        black_box(verify(&siblings[next()], &at_c, now).expect("verify at c"));
    });
    // the floor of a hop: one Ed25519 signature and one strict verification
    // of a block's worth of bytes, measured here beside it
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let block = vec![0x5a_u8; 420];
    let sign_verify = measure_sync(n, || {
        use ed25519_dalek::Signer;
        let sig = key.sign(black_box(&block));
        key.verifying_key().verify_strict(&block, black_box(&sig)).expect("verifies");
    });
    // what a sending runtime pays per remote call: its node's claims (a root
    // and one local child, built at admission, unsigned) signed and relayed
    let mut local = c1.clone();
    local.audience = "a".into();
    let relay = || {
        let root_hop = switchboard::lineage::Hop::root(root.clone());
        let node = switchboard::lineage::Hop::child(&root_hop, local.clone());
        let next = switchboard::lineage::Relay {
            request: RequestId::new(),
            target: &c1.path[1].target,
            objective: "extract",
            audience: "b",
            deadline_ms: now + 60_000,
            budget: 1000,
            max_depth: 4,
            tools: &root.tools,
        };
        black_box(node.relay(&a, next).expect("relay").encode());
    };
    let send = measure_sync(n, relay);
    // side by side: the same hop's receiving work without lineage (parsing an
    // envelope is what a hop costs either way) and with it
    let envelope = serde_json::to_vec(&switchboard::protocol::DelegationRequest::new(
        slug("prime-boss"),
        slug("byte-doc"),
        UserId::parse("bench").expect("user"),
        "extract",
        "2025-10-01 Starbucks 4.50",
    ))
    .expect("envelope");
    let plain = measure_sync(n, || {
        black_box(switchboard::protocol::parse_request(&envelope).expect("parse"));
    });
    // a store that has seen none of the tokens the hop above verified
    let at_b_anew = TrustStore::from_entries("b", &[entry(&a)]).expect("trust");
    let signed = measure_sync(n, || {
        black_box(switchboard::protocol::parse_request(&envelope).expect("parse"));
        black_box(verify(&fresh[next()].0, &at_b_anew, now).expect("verify at b"));
    });
    println!("switchboard lineage tokens ({n} samples; a 3-hop token is {} characters)\n", t2.len());
    println!("{:<44} {:>10} {:>10} {:>14}", "case", "p50", "p99", "per second");
    for (name, key, s) in [
        ("mint a root and encode it", "mint_root", &mint),
        ("one hop: verify, attenuate, encode", "hop", &per_hop),
        ("verify a 3-hop token", "verify_3", &verify3),
        ("verify a 3-hop token, its prefix seen", "verify_3_seen", &verify3_seen),
        ("one Ed25519 sign + strict verify", "sign_verify", &sign_verify),
        ("send: root + node + relay, one signature", "send_relay", &send),
        ("receive without lineage: parse envelope", "receive_plain", &plain),
        ("receive with lineage: parse + verify", "receive_signed", &signed),
    ] {
        println!("{:<44} {:>10.1?} {:>10.1?} {:>14.0}", name, s.p50, s.p99, s.per_sec);
        println!(
            "BENCH_JSON {}",
            serde_json::json!({
                "section": "lineage", "name": key, "n": n,
                "p50_us": s.p50.as_secs_f64() * 1e6, "p99_us": s.p99.as_secs_f64() * 1e6, "per_sec": s.per_sec,
            })
        );
    }
    let ratio = per_hop.p50.as_secs_f64() / sign_verify.p50.as_secs_f64();
    println!("a hop is {ratio:.2}x one sign + verify (goal <= 1.3x)");
}

/// A statement of `rows` lines as a bank's CSV export writes them: dates,
/// merchants, amounts, a masked card, a reference number.
fn statement(rows: usize) -> String {
    let merchants = ["STARBUCKS #1234", "AMAZON MKTP US*2K4", "UBER *TRIP", "SHELL OIL 5744", "PAYROLL ACME INC"];
    let mut out = String::from("Date,Description,Amount,Balance,Card,Reference\n");
    for i in 0..rows {
        out.push_str(&format!(
            "2025-{:02}-{:02},{},{}.{:02},{}.{:02},XXXX XXXX XXXX {:04},REF{:010}\n",
            i % 12 + 1,
            i % 28 + 1,
            merchants[i % merchants.len()],
            i % 300,
            i % 100,
            10_000 + i * 7,
            i % 100,
            1000 + i % 9000,
            7_340_000_000u64 + i as u64 * 7919,
        ));
    }
    out
}

/// The redactor on texts a delegation carries; p50 per text and MB/s.
fn redact(n: usize) {
    use switchboard::redact::{Redactor, Vault};
    let r = Redactor::new();
    let chat = "Hi, it's Jo (jo.doe@example.com, +1 415 555 2671). Please pay the invoice with card \
                4111 1111 1111 1111 and send the receipt; my IBAN is DE89 3704 0044 0532 0130 00 and my \
                SSN 123-45-6789 in case the bank asks. Thanks!";
    let receipt = "OFFICE DEPOT #1234\n2025-10-09 14:32\nPAPER 500 SHEETS    42.99\nPENS 12 PK          15.49\n\
                   SUBTOTAL            58.48\nTAX 8.25%            4.82\nTOTAL               63.30\nVISA ****1111\n\
                   AUTH 004213  REF 88213344\nThank you for shopping!";
    let rows = statement(200);
    let full = statement(4200);
    let full = &full[..full.len().min(256 * 1024)];
    let pdf = "Kontoauszug 10/2025\nKarte 4111\u{a0}1111\u{a0}1111\u{a0}1111   Betrag 1.234,56 EUR\n\
               Tel. 030\u{2009}1234\u{2009}5678   SSN 123\u{2013}45\u{2013}6789   IBAN DE89\u{202f}3704\u{202f}0044\u{202f}0532\u{202f}0130\u{202f}00\n"
        .repeat(40);
    let cases: [(&str, &str, usize); 5] = [
        ("chat message with PII", chat, n),
        ("receipt, no PII", receipt, n),
        ("statement, 200 rows", &rows, n / 20),
        ("statement, 256 KiB", full, (n / 1000).max(10)),
        ("PDF text, odd separators", &pdf, n / 20),
    ];
    println!("switchboard PII redaction ({n} samples for short texts)\n");
    println!("{:<30} {:>10} {:>10} {:>10} {:>12}", "case", "bytes", "p50", "p99", "MB/s");
    for (name, text, samples) in cases {
        let s = measure_sync(samples.max(10), || {
            black_box(r.redact(black_box(text), &mut Vault::new()));
        });
        let mb_s = text.len() as f64 / s.p50.as_secs_f64() / 1e6;
        println!("{:<30} {:>10} {:>10.1?} {:>10.1?} {:>12.1}", name, text.len(), s.p50, s.p99, mb_s);
        println!(
            "BENCH_JSON {}",
            serde_json::json!({
                "section": "redact", "name": name, "bytes": text.len(),
                "p50_us": s.p50.as_secs_f64() * 1e6, "p99_us": s.p99.as_secs_f64() * 1e6, "mb_per_sec": mb_s,
            })
        );
    }
}

/// The CPU this thread has used (user and system): what one extraction
/// costs, whatever else the machine runs meanwhile.
fn thread_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    let micros = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Duration::from_micros(micros(usage.user_time()) + micros(usage.system_time()))
}

/// The least CPU of five readings of `pdf` (the one the machine disturbed least).
fn reading_cpu(pdf: &[u8], max_text: usize) -> Duration {
    (0..5)
        .map(|_| {
            let before = thread_cpu();
            let _ = black_box(switchboard::testing::pdf_text(black_box(pdf), max_text));
            thread_cpu() - before
        })
        .min()
        .unwrap_or_default()
}

/// PDF text extraction as the page grows, and the refusal of a page past
/// the text limit.
fn documents() {
    use switchboard::testing::sample_pdf;
    let n = 12_000;
    println!("switchboard PDF reading: CPU for {n} strings and for {}, least of 5\n", 8 * n);
    println!("{:<28} {:>12} {:>12} {:>8}", "page", "n", "8n", "ratio");
    for (name, across) in [("strings on one line", true), ("a line each", false)] {
        let small = reading_cpu(&sample_pdf(n, across), usize::MAX);
        let large = reading_cpu(&sample_pdf(8 * n, across), usize::MAX);
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
        println!("{name:<28} {small:>12.1?} {large:>12.1?} {ratio:>7.1}x");
        println!(
            "BENCH_JSON {}",
            serde_json::json!({"section": "documents", "name": name, "n": n,
                "cpu_n_ms": small.as_secs_f64() * 1e3, "cpu_8n_ms": large.as_secs_f64() * 1e3, "ratio": ratio})
        );
    }
    let big = sample_pdf(200_000, true);
    let refused = reading_cpu(&big, 4096);
    let whole = reading_cpu(&big, usize::MAX);
    println!(
        "\n200,000 strings ({} bytes of PDF): refused at a 4 KiB limit after {refused:.1?}; read whole in {whole:.1?}",
        big.len()
    );
    println!(
        "BENCH_JSON {}",
        serde_json::json!({"section": "documents", "name": "refused at the limit", "bytes": big.len(),
            "refused_ms": refused.as_secs_f64() * 1e3, "whole_ms": whole.as_secs_f64() * 1e3})
    );
}
