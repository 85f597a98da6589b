//! `switchboard worker`: runs the delegations `queue` agents publish to
//! NATS JetStream (see `crate::queue`), until SIGTERM or Ctrl-C.

use clap::Args;

use super::{EXIT_OK, usage_error};
use crate::pipeline::Runtime;
use crate::protocol::AgentSlug;
use crate::queue::{Worker, WorkerOptions};

#[derive(Debug, Args)]
pub struct WorkerArgs {
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

pub async fn run(runtime: Runtime, args: WorkerArgs) -> u8 {
    use std::io::Write as _;
    let url = args.nats_url.unwrap_or_else(|| runtime.config().queue.url.clone());
    if !(url.starts_with("nats://") || url.starts_with("tls://")) {
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
