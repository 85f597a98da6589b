//! The analytics query over a million stored delegations (issue 46's goal:
//! ≤ 200 ms), on an SQLite file, and on PostgreSQL with `-- postgres URL`.
//!
//! `cargo bench --bench analytics` bulk-loads BENCH_ROWS delegations
//! (default 1 000 000: about 400 000 trees of 200 users over 30 days, ten
//! agents, trees of one to five nodes) straight into the table (the rollup
//! trigger marks their hours as any write does), then times:
//! - the first query over all 30 days (it rolls every marked hour and day up),
//! - the same query again (warm: whole days from the daily rollups, the ends by the hour),
//! - one user's 30 days,
//! - everyone's last 24 hours,
//! - the 30 days after 1 000 more delegations arrived in the current hour
//!   (what a live server's next query pays: that hour rolled again).
//!
//! `cargo bench --bench analytics -- writes` measures what the rollup
//! trigger costs the write path instead: durable delegations a second
//! (zero-work agent, SQLite file, concurrency 64), with the trigger and with
//! it dropped, interleaved (BENCH_WRITES delegations a run, default 20 000).
//!
//! Each figure is printed as a table row and as a `BENCH_JSON {...}` line.
//! Nothing here asserts a timing.

use std::time::{Duration, Instant};

use switchboard::store::analytics::{DAY_MS, HOUR_MS};
use switchboard::store::{AnalyticsQuery, SqlStore, Store, now_ms};

const AGENTS: [&str; 9] =
    ["byte-doc", "tag-ai", "crystal-analytics", "ledger-tax", "goalie-goals", "blitz-debt", "email", "format", "data"];
const CODES: [&str; 4] = ["AGENT_FAILED", "DEADLINE_EXCEEDED", "DEPTH_LIMIT", "VERIFICATION_FAILED"];
const DAYS: i64 = 30;
const USERS: u64 = 200;

/// A small deterministic generator (xorshift), so every run loads the same rows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One row of `delegations`, as the writer would store it.
struct Row {
    id: String,
    root: String,
    parent: Option<String>,
    user: String,
    origin: &'static str,
    target: &'static str,
    status: &'static str,
    code: Option<&'static str>,
    depth: i64,
    started_at: i64,
    duration_ms: i64,
    tokens: i64,
    consult: i64,
}

fn outcome(rng: &mut Rng) -> (&'static str, Option<&'static str>) {
    match rng.below(20) {
        0 => ("failed", Some(CODES[rng.below(2) as usize])),
        1 => ("refused", Some(CODES[2 + rng.below(2) as usize])),
        2 => ("partial", None),
        _ => ("success", None),
    }
}

/// `n` rows of trees that start in `[from, from + span)`: a top delegation
/// to prime-boss, one to three children, one in ten with a grandchild.
fn rows(n: usize, from: i64, span: i64, seed: u64) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let root = uuid::Uuid::now_v7().to_string();
        let user = format!("user{}", rng.below(USERS));
        let start = from + rng.below(span as u64) as i64;
        let consult = i64::from(rng.below(20) == 0);
        let ms = |rng: &mut Rng| 1 + (rng.below(1000) * rng.below(1000) / 100) as i64;
        let mut nodes = Vec::new();
        let mut subtree = 0;
        for k in 0..1 + rng.below(3) {
            let id = uuid::Uuid::now_v7().to_string();
            let agent = AGENTS[rng.below(AGENTS.len() as u64) as usize];
            let (status, code) = outcome(&mut rng);
            let tokens = rng.below(400) as i64;
            subtree += tokens;
            if rng.below(10) == 0 {
                let (status, code) = outcome(&mut rng);
                let target = AGENTS[rng.below(AGENTS.len() as u64) as usize];
                let (parent, user) = (Some(id.clone()), user.clone());
                let (started_at, duration_ms) = (start + 50, ms(&mut rng));
                let grandchild = Row {
                    id: uuid::Uuid::now_v7().to_string(),
                    root: root.clone(),
                    parent,
                    user,
                    origin: agent,
                    target,
                    status,
                    code,
                    depth: 2,
                    started_at,
                    duration_ms,
                    tokens: 0,
                    consult,
                };
                nodes.push(grandchild);
            }
            let (parent, duration_ms) = (Some(root.clone()), ms(&mut rng));
            nodes.push(Row {
                id,
                root: root.clone(),
                parent,
                user: user.clone(),
                origin: "prime-boss",
                target: agent,
                status,
                code,
                depth: 1,
                started_at: start + k as i64,
                duration_ms,
                tokens,
                consult,
            });
        }
        let (status, code) = outcome(&mut rng);
        let tokens = subtree + rng.below(300) as i64;
        let duration_ms = ms(&mut rng) + 100;
        out.push(Row {
            id: root.clone(),
            root,
            parent: None,
            user,
            origin: "user",
            target: "prime-boss",
            status,
            code,
            depth: 0,
            started_at: start,
            duration_ms,
            tokens,
            consult,
        });
        out.extend(nodes);
    }
    out.truncate(n);
    out
}

/// Loads `rows` straight into the SQLite file (one transaction per 50 000).
fn load_sqlite(path: &std::path::Path, rows: &[Row]) -> rusqlite::Result<()> {
    let mut conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    for chunk in rows.chunks(50_000) {
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO delegations (request_id, root_id, parent_id, user_id, origin, target, objective, \
                 objective_hash, signature, status, error_code, attempts, depth, started_at, duration_ms, prompt_tokens, \
                 completion_tokens, total_tokens, consult) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'file the receipts', 'abcdef01', 'file receipts', ?7, ?8, 1, ?9, ?10, ?11, ?12, 0, ?12, ?13)",
            )?;
            for r in chunk {
                insert.execute(rusqlite::params![
                    r.id,
                    r.root,
                    r.parent,
                    r.user,
                    r.origin,
                    r.target,
                    r.status,
                    r.code,
                    r.depth,
                    r.started_at,
                    r.duration_ms,
                    r.tokens,
                    r.consult
                ])?;
            }
        }
        tx.commit()?;
    }
    Ok(())
}

async fn load_postgres(store: &SqlStore, rows: &[Row]) -> Result<(), String> {
    for chunk in rows.chunks(2_000) {
        let mut sql = String::from(
            "INSERT INTO delegations (request_id, root_id, parent_id, user_id, origin, target, objective, objective_hash, \
             signature, status, error_code, attempts, depth, started_at, duration_ms, prompt_tokens, completion_tokens, \
             total_tokens, consult) VALUES ",
        );
        for (i, r) in chunk.iter().enumerate() {
            let code = r.code.map_or("NULL".to_string(), |c| format!("'{c}'"));
            let parent = r.parent.as_ref().map_or("NULL".to_string(), |p| format!("'{p}'"));
            if i > 0 {
                sql.push(',');
            }
            sql.push_str(&format!(
                "('{}','{}',{parent},'{}','{}','{}','file the receipts','abcdef01','file receipts','{}',{code},1,{},{},{},{},0,{},{})",
                r.id, r.root, r.user, r.origin, r.target, r.status, r.depth, r.started_at, r.duration_ms, r.tokens, r.tokens, r.consult
            ));
        }
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(store.pool()).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

async fn time(store: &SqlStore, what: &str, q: &AnalyticsQuery, runs: usize) -> Duration {
    let mut times = Vec::new();
    let mut trees = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let a = store.analytics(q).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        times.push(t.elapsed());
        trees = a.totals.trees;
    }
    times.sort();
    let median = times[times.len() / 2];
    println!("  {what:<58} {:>9.1} ms  ({trees} trees; median of {runs})", median.as_secs_f64() * 1000.0);
    println!("BENCH_JSON {{\"bench\":\"analytics\",\"what\":\"{what}\",\"ms\":{:.1}}}", median.as_secs_f64() * 1000.0);
    median
}

struct Zero;

#[async_trait::async_trait]
impl switchboard::Agent for Zero {
    async fn run(
        &self,
        _ctx: &switchboard::AgentContext,
        _task: &switchboard::Task,
    ) -> Result<switchboard::AgentOutput, switchboard::DelegationError> {
        Ok(switchboard::AgentOutput::new("done", "done"))
    }
}

/// Durable delegations a second on a fresh SQLite file, the rollup trigger kept or dropped.
async fn writes(n: usize, trigger: bool) -> f64 {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("writes.db");
    drop(SqlStore::connect(&format!("sqlite://{}", file.display())).await.unwrap());
    if !trigger {
        let conn = rusqlite::Connection::open(&file).unwrap();
        conn.execute_batch("DROP TRIGGER delegations_added_stats; DROP TRIGGER delegations_updated_stats;").unwrap();
    }
    let store = SqlStore::connect(&format!("sqlite://{}", file.display())).await.unwrap();
    let team = "[[agents]]\nslug = \"caller\"\nname = \"caller\"\nmay_delegate_to = [\"*\"]\n\
                [[agents]]\nslug = \"zero\"\nname = \"zero\"\n";
    let runtime = switchboard::Runtime::builder()
        .config(switchboard::Config::from_toml(team).unwrap())
        .store(std::sync::Arc::new(store))
        .agent("caller", Zero)
        .agent("zero", Zero)
        .build()
        .unwrap();
    let user = switchboard::protocol::UserId::parse("bench").unwrap();
    let slug = |s: &str| switchboard::protocol::AgentSlug::parse(s).unwrap();
    let request =
        || switchboard::protocol::DelegationRequest::new(slug("caller"), slug("zero"), user.clone(), "do it", "");
    let run = |count: usize| {
        futures::stream::iter(0..count).for_each_concurrent(64, |_| async {
            std::hint::black_box(runtime.delegate(&switchboard::Principal::Admin, request()).await);
        })
    };
    run(1000).await; // warm up
    let t = Instant::now();
    run(n).await;
    n as f64 / t.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.iter().any(|a| a == "writes") {
        let n: usize = std::env::var("BENCH_WRITES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
        println!("durable delegations a second (SQLite file, concurrency 64, {n} a run)");
        for round in 1..=3 {
            for trigger in [true, false] {
                let per_sec = writes(n, trigger).await;
                let what = if trigger { "with the rollup trigger" } else { "without it" };
                println!("  round {round}, {what:<24} {per_sec:>8.0}/s");
                println!(
                    "BENCH_JSON {{\"bench\":\"analytics_writes\",\"trigger\":{trigger},\"per_sec\":{per_sec:.0}}}"
                );
            }
        }
        return;
    }
    let n: usize = std::env::var("BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let now = now_ms();
    let from = now - DAYS * DAY_MS;
    let data = rows(n, from, DAYS * DAY_MS - HOUR_MS, 0x5eed);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join("bench-analytics");
    std::fs::create_dir_all(&dir).unwrap();
    let (store, backend) = match args.iter().position(|a| a == "postgres") {
        Some(i) => {
            let url = args.get(i + 1).cloned().unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".into());
            let store = SqlStore::connect(&url).await.unwrap();
            sqlx::query("TRUNCATE delegations, stats_dirty, stats_calls, stats_shapes, stats_users, ratings")
                .execute(store.pool())
                .await
                .unwrap();
            let t = Instant::now();
            load_postgres(&store, &data).await.unwrap();
            println!("loaded {n} delegations into PostgreSQL in {:.1} s", t.elapsed().as_secs_f64());
            (store, "postgres")
        }
        None => {
            let file = dir.join("analytics.db");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
            }
            drop(SqlStore::connect(&format!("sqlite://{}", file.display())).await.unwrap());
            // what the trigger costs a write: the same load without it, into a file of its own
            let bare = dir.join("analytics-bare.db");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", bare.display()));
            }
            drop(SqlStore::connect(&format!("sqlite://{}", bare.display())).await.unwrap());
            let conn = rusqlite::Connection::open(&bare).unwrap();
            conn.execute_batch("DROP TRIGGER delegations_added_stats; DROP TRIGGER delegations_updated_stats;")
                .unwrap();
            drop(conn);
            let t = Instant::now();
            load_sqlite(&bare, &data).unwrap();
            let without = t.elapsed().as_secs_f64();
            let t = Instant::now();
            load_sqlite(&file, &data).unwrap();
            let with = t.elapsed().as_secs_f64();
            println!(
                "loaded {n} delegations in {with:.1} s ({:.1} µs a row); without the rollup trigger {without:.1} s ({:.1} µs a row)",
                with * 1e6 / n as f64,
                without * 1e6 / n as f64
            );
            println!(
                "BENCH_JSON {{\"bench\":\"analytics\",\"what\":\"load µs a row, with and without the trigger\",\"with\":{:.2},\"without\":{:.2}}}",
                with * 1e6 / n as f64,
                without * 1e6 / n as f64
            );
            let _ = std::fs::remove_file(&bare);
            (SqlStore::connect(&format!("sqlite://{}", file.display())).await.unwrap(), "sqlite")
        }
    };
    println!("analytics over {n} delegations ({backend}, {DAYS} days, {USERS} users)");
    let month = AnalyticsQuery::new(Some(from), Some(now), None, now).unwrap();
    time(&store, "everyone, 30 days, first query (rolls everything up)", &month, 1).await;
    time(&store, "everyone, 30 days", &month, 5).await;
    let user = AnalyticsQuery::new(Some(from), Some(now), Some("user7".parse().unwrap()), now).unwrap();
    time(&store, "one user, 30 days", &user, 5).await;
    let day = AnalyticsQuery::new(Some(now - DAY_MS), Some(now), None, now).unwrap();
    time(&store, "everyone, last 24 hours", &day, 5).await;
    let fresh = rows(1000, now - 60_000, 30_000, 0xf00d);
    match backend {
        "postgres" => load_postgres(&store, &fresh).await.unwrap(),
        _ => load_sqlite(&dir.join("analytics.db"), &fresh).unwrap(),
    }
    time(&store, "everyone, 30 days, after 1 000 new delegations this hour", &month, 1).await;
    time(&store, "everyone, 30 days, again", &month, 5).await;
}
