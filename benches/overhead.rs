//! In-process overhead of the delegation pipeline, side by side in one run:
//! a zero-work agent called directly, then the same agent through the full
//! pipeline (every rail, audit and tree records in the in-memory store), a
//! 2-step chain and a 3-way fan-out. Prints p50, p99 and operations per second.
//!
//! `cargo bench --bench overhead` (set BENCH_N to change the sample count).

use std::hint::black_box;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use switchboard::delegator::Call;
use switchboard::guard::auth::Caller;
use switchboard::protocol::{AgentSlug, DelegationRequest, UserId};
use switchboard::{Agent, AgentContext, AgentOutput, Config, DelegationError, Runtime, Task};

struct Zero;

#[async_trait]
impl Agent for Zero {
    async fn run(&self, _ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
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
    let n: usize = std::env::var("BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    let workers = vec![slug("w1"), slug("w2"), slug("w3")];
    let runtime = Runtime::builder()
        .config(Config::from_toml(TEAM).expect("config"))
        .agent("caller", Zero)
        .agent("zero", Zero)
        .agent("w1", Zero)
        .agent("w2", Zero)
        .agent("w3", Zero)
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

    rt.block_on(async {
        let zero = Zero;
        let ctx = AgentContext::detached(Vec::<String>::new());
        let task = Task::new("do it", "");
        let direct = measure(n, || async {
            black_box(zero.run(&ctx, &task).await.ok());
        })
        .await;
        let single = measure(n, || async {
            black_box(runtime.delegate(&Caller::Operator, request("zero")).await);
        })
        .await;
        let chain = measure(n / 2, || async {
            black_box(runtime.delegate(&Caller::Operator, request("chain")).await);
        })
        .await;
        let fan = measure(n / 2, || async {
            black_box(runtime.delegate(&Caller::Operator, request("fan")).await);
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
    });
}
