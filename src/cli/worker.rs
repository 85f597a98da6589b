//! `switchboard worker`: runs the delegations `queue` agents publish to
//! NATS JetStream (see `crate::queue`), until SIGTERM or Ctrl-C; and
//! `switchboard queue replay`: sends recorded ones again and compares.

use clap::Args;

use super::output::{EXIT_OK, usage_error};
use crate::protocol::AgentSlug;
use crate::queue::{Worker, WorkerOptions};
use crate::runtime::Runtime;

#[derive(Debug, Args)]
pub(super) struct WorkerArgs {
    /// The agents this worker runs, comma-separated (each in its configuration, with its real backend).
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_slug)]
    agents: Vec<AgentSlug>,
    /// Delegations it runs at once, over all its agents.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=4096))]
    concurrency: u16,
    /// The NATS server (default: `[queue] url`, else nats://127.0.0.1:4222).
    #[arg(long, value_name = "URL")]
    nats_url: Option<String>,
}

fn parse_slug(s: &str) -> Result<AgentSlug, String> {
    AgentSlug::parse(s.trim()).map_err(|e| e.0)
}

pub(super) async fn run(runtime: Runtime, args: WorkerArgs) -> u8 {
    use std::io::Write as _;
    let url = args.nats_url.unwrap_or_else(|| runtime.config().queue.url.clone());
    if !crate::config::QueueConfig::is_nats_url(&url) {
        return usage_error(format!("--nats-url: '{url}' is not a NATS URL like nats://127.0.0.1:4222"));
    }
    let options =
        WorkerOptions { agents: args.agents, concurrency: usize::from(args.concurrency), url: Some(url.clone()) };
    let worker = match Worker::connect(runtime, &options).await {
        Ok(w) => w,
        Err(e) => return usage_error(e),
    };
    let names: Vec<&str> = options.agents.iter().map(AgentSlug::as_str).collect();
    outln!("switchboard worker serving {} from {url}", names.join(", "));
    let _ = std::io::stdout().flush();
    let tally = worker.tally.clone();
    worker.run(crate::server::shutdown_signal()).await;
    let ran = tally.ran.load(std::sync::atomic::Ordering::Relaxed);
    let dead = tally.dead.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("switchboard worker: stopped after {ran} delegations ({dead} dead letters)");
    EXIT_OK
}

#[derive(Debug, Args)]
pub(super) struct QueueArgs {
    #[command(subcommand)]
    command: QueueCommand,
}

#[derive(Debug, clap::Subcommand)]
enum QueueCommand {
    /// Send the delegations a queue agent received since a time again to
    /// today's workers and compare each answer with the recorded one
    /// (exit 4 when any differs).
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// The local agent whose backend is `queue`.
    #[arg(long, value_parser = parse_slug)]
    agent: AgentSlug,
    /// From when: an RFC 3339 time (2026-11-26T03:00:00Z) or a span back from now (90s, 30m, 2h, 7d).
    #[arg(long, value_parser = parse_since)]
    since: chrono::DateTime<chrono::Utc>,
    /// At most this many delegations, oldest first.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    limit: u32,
}

fn parse_since(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let bad = || format!("'{s}' is neither an RFC 3339 time (2026-11-26T03:00:00Z) nor a span like 90s, 30m, 2h or 7d");
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let span = match unit {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    chrono::Utc::now().checked_sub_signed(span).ok_or_else(bad)
}

pub(super) async fn queue(runtime: Runtime, args: QueueArgs, json: bool) -> u8 {
    let QueueCommand::Replay(args) = args.command;
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let replayed = match crate::queue::replay::replay(&runtime, &args.agent, args.since, limit).await {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let differing = replayed.iter().filter(|r| !r.same).count();
    if json {
        outln!("{}", serde_json::json!({"replayed": replayed.len(), "differing": differing, "delegations": replayed}));
    } else {
        for r in &replayed {
            let was = r
                .original
                .as_ref()
                .map_or_else(|| "(no answer kept)".to_string(), |a| format!("{} {:?}", a.status, a.result));
            let mark = if r.same { "same" } else { "DIFFERENT" };
            outln!(
                "{} {mark} {:?}\n  then: {was}\n  now:  {} {:?}",
                r.request_id,
                r.objective,
                r.now.status,
                r.now.result
            );
        }
        outln!("{} delegations replayed, {differing} different", replayed.len());
    }
    if differing == 0 { EXIT_OK } else { super::output::EXIT_FAILED }
}
