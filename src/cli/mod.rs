//! The `switchboard` command line.
//!
//! Exit codes: 0 ok (an answer, a question back for the user, or a pause for
//! their approval), 2 usage or configuration error (an id that names
//! nothing), 3 refused by a rail, 4 the agent failed or timed out.

/// `println!` that does not panic when stdout is closed (`switchboard ask …
/// | head`): the reader may stop reading, as with any Unix tool.
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that does not panic when stdout is closed (see `outln!`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod approvals;
mod audit;
mod demo;
mod keys;
#[cfg(feature = "mcp")]
mod mcp;
mod output;
mod replay;
mod stats;
#[cfg(feature = "queue")]
mod worker;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::auth::Principal;
use crate::config::Config;
use crate::pipeline::{AskOptions, Door, Envelope, Turn};
use crate::protocol::{
    AgentSlug, Constraints, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Mode, Priority,
    SessionId, Status, UserId,
};
use crate::runtime::Runtime;
use output::{EXIT_FAILED, EXIT_OK, EXIT_USAGE, exit_code, print_ask, print_error, usage_error};

/// An SQLite file in the working directory.
pub(crate) const DEFAULT_DATABASE_URL: &str = "sqlite://switchboard.db";

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
    about = "A runtime through which AI agents delegate work to each other safely",
    long_about = "A runtime through which AI agents delegate work to each other safely.\n\n\
        Runs with the built-in team and no configuration. Exit codes: 0 ok (an answer, or a question back for the user), 2 usage or \
        configuration error, 3 refused by a rail, 4 the agent failed or timed out."
)]
pub(crate) struct Cli {
    /// Team and limits as TOML (default: the built-in team).
    #[arg(long, global = true, env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Where state lives: sqlite://PATH (created on first use), postgres://USER@HOST:PORT/DB, or memory:.
    #[arg(
        long,
        global = true,
        env = "SWITCHBOARD_DATABASE_URL",
        value_name = "URL",
        default_value = DEFAULT_DATABASE_URL
    )]
    database_url: String,
    /// Export delegation spans over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318).
    #[arg(long, global = true, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Talk to Prime as a user: it answers or delegates, and the tree is shown.
    Ask(AskArgs),
    /// Send one delegation envelope and print the response.
    Delegate(DelegateArgs),
    /// List the team.
    Agents,
    /// Run the showcase scenarios and print each tree.
    Demo,
    /// List the audit log; --verify checks its hash chain.
    Audit(audit::AuditArgs),
    /// Print the stored tree of a delegation with timings and outcomes.
    Trace(TraceArgs),
    /// Run a recorded tree again from its journal and show whether each node
    /// answers as recorded; --live runs today's agents and prints a diff per node.
    Replay(replay::ReplayArgs),
    /// Run Switchboard as an HTTP service.
    Serve(ServeArgs),
    /// Issue a bearer token (shown once; only its hash is stored).
    Token(TokenArgs),
    /// Show this runtime's lineage signing keys (made at first use) as a
    /// `[[trust]]` entry for peers; --rotate makes a new one.
    Keys(keys::KeysArgs),
    /// List approvals waiting for a person (--all: decided ones too).
    Approvals(approvals::ApprovalsArgs),
    /// Approve (or --reject) an action a paused tree waits for, and resume the tree here.
    Approve(approvals::ApproveArgs),
    /// Cancel a running or waiting tree for good.
    Cancel(approvals::CancelArgs),
    /// Usage analytics from the store: agents, who calls whom, depths, errors, users, ratings.
    Stats(stats::StatsArgs),
    /// Rate the answer of one of a user's trees up or down (a second rating replaces the first).
    Rate(stats::RateArgs),
    /// Serve MCP on stdin/stdout as a user, for desktop clients (Claude Desktop, Cursor).
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpArgs),
    /// Run the delegations `queue` agents publish to NATS JetStream (`[queue] url`), until SIGTERM.
    #[cfg(feature = "queue")]
    Worker(worker::WorkerArgs),
    /// The durable queue: `replay` sends recorded delegations to today's workers again and compares.
    #[cfg(feature = "queue")]
    Queue(worker::QueueArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Where to listen (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:7420", value_parser = parse_addr)]
    addr: std::net::SocketAddr,
    /// After SIGTERM, how long in-flight delegations may take to finish.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    shutdown_grace_ms: u64,
}

fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse().map_err(|_| format!("'{s}' is not an address like 127.0.0.1:7420"))
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct TokenArgs {
    /// A service token for this agent (for POST /v1/delegate).
    #[arg(long, value_name = "SLUG")]
    agent: Option<String>,
    /// A user token (for POST /v1/chat).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// An admin token (every tree and event; the web page).
    #[arg(long)]
    admin: bool,
}

#[derive(Debug, Args)]
struct TraceArgs {
    /// The request id of any delegation in the tree.
    request_id: String,
}

#[derive(Debug, Args)]
struct AskArgs {
    /// The user's message.
    message: String,
    /// The user on whose behalf Prime works.
    #[arg(long, env = "SWITCHBOARD_USER", default_value = "local-user")]
    user: String,
    /// A file to work on (a receipt, a statement, a CSV).
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Continue an earlier Prime session.
    #[arg(long, value_name = "SESSION_ID")]
    session: Option<String>,
    /// After the answer, write the user's spending by category (from their
    /// money records) as an SVG bar chart to this .svg file, and print its path.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct DelegateArgs {
    /// Target agent slug, or `auto` to discover one.
    #[arg(long, value_name = "SLUG")]
    to: String,
    /// Origin agent slug (default: the agent users talk to, `[prime] agent`).
    #[arg(long, value_name = "SLUG")]
    from: Option<String>,
    /// What the target should achieve.
    #[arg(long)]
    objective: String,
    /// The full input for the target.
    #[arg(long, default_value = "")]
    input: String,
    /// Read the input from a file instead.
    #[arg(long, value_name = "PATH", conflicts_with = "input")]
    input_file: Option<PathBuf>,
    /// A Task Note whose checks the output must pass.
    #[arg(long)]
    task_note: Option<String>,
    /// The origin's depth (a user's message to Prime is 0).
    #[arg(long, default_value_t = 0)]
    depth: u32,
    #[arg(long, default_value_t = crate::protocol::request::DEFAULT_MAX_DEPTH)]
    max_depth: u32,
    #[arg(long, default_value_t = crate::protocol::request::DEFAULT_DEADLINE_MS)]
    deadline_ms: u64,
    #[arg(long, default_value_t = crate::protocol::request::DEFAULT_MAX_TOKENS)]
    max_tokens: u32,
    #[arg(long, env = "SWITCHBOARD_USER", default_value = "local-user")]
    user: String,
    /// low, normal, high or urgent.
    #[arg(long, default_value = "normal", value_parser = parse_priority)]
    priority: Priority,
    /// Consult without writing to the target's history.
    #[arg(long)]
    ephemeral: bool,
    /// Repeating the request with the same key returns the stored response.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    /// Send the delegation N times (new request ids), printing each response
    /// as it is acknowledged (one JSON line each with --json).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    repeat: u32,
}

fn parse_priority(s: &str) -> Result<Priority, String> {
    serde_json::from_value(json!(s)).map_err(|_| format!("'{s}' is not a priority: use low, normal, high or urgent"))
}

/// Runs the CLI on the process's arguments.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    // the OTLP exporter's client needs a runtime around it while it is built
    let guard = {
        let _enter = rt.enter();
        match crate::telemetry::init(cli.otlp_endpoint.as_deref().filter(|e| !e.is_empty())) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("error: --otlp-endpoint: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    };
    let code = rt.block_on(run(cli));
    drop(guard); // flush exported spans
    ExitCode::from(code)
}

/// `switchboard-pii.key` beside the lineage key directory (not in it: every
/// file there is a lineage key).
fn default_seal_key_file(key_dir: &std::path::Path) -> std::path::PathBuf {
    key_dir.with_file_name("switchboard-pii.key")
}

async fn run(cli: Cli) -> u8 {
    let mut config = match &cli.config {
        Some(path) => match Config::load(path) {
            Ok(c) => c,
            Err(e) => return usage_error(e.message),
        },
        None => Config::builtin(),
    };
    // a tree kept in a database resumes with its user's values: its vault is
    // sealed under a key beside the lineage key directory, unless the config names one
    if config.pii.seal_key_file.is_none() && !matches!(cli.database_url.as_str(), "memory:" | "memory") {
        config.pii.seal_key_file = Some(default_seal_key_file(&config.lineage.key_dir));
    }
    // this runtime's keys come first: the peers' entries may still wait for theirs
    if let Command::Keys(args) = &cli.command {
        return keys::run(&config, args, cli.json); // needs no store
    }
    // the peers' keys are checked here: an Ed25519 key is more than its length
    if let Err(e) = crate::lineage::TrustStore::from_entries(config.lineage.name.clone(), &config.trust) {
        return usage_error(format!("invalid configuration: {e}"));
    }
    let anchor = config.audit.anchor_file.as_deref();
    if let Some(Err(e)) = anchor.map(crate::store::anchor::check_path) {
        return usage_error(format!("audit.anchor_file: {e}"));
    }
    // a server runs its admitted work on a runtime of its own, and the store's writer there too
    let work = match &cli.command {
        Command::Serve(_) => {
            let threads = config.server.work_threads;
            let started = if threads == 0 {
                crate::server::WorkRuntime::per_core()
            } else {
                crate::server::WorkRuntime::start(threads)
            };
            match started {
                Ok(w) => Some(w),
                Err(e) => {
                    eprintln!("error: cannot start the work runtime: {e}");
                    return EXIT_FAILED;
                }
            }
        }
        _ => None,
    };
    let opened = match &work {
        Some(w) => {
            let (url, anchor) = (cli.database_url.clone(), anchor.map(std::path::Path::to_path_buf));
            let open = w.run(async move { crate::store::open_anchored(&url, anchor.as_deref()).await });
            match open.await {
                Ok(opened) => opened,
                Err(e) => {
                    eprintln!("error: opening the store failed: {e}");
                    return EXIT_FAILED;
                }
            }
        }
        None => crate::store::open_anchored(&cli.database_url, anchor).await,
    };
    let store = match opened {
        Ok(s) => s,
        Err(e) => return usage_error(format!("--database-url: {e}")),
    };
    let runtime = match Runtime::builder().config(config).store(store).build() {
        Ok(r) => r,
        Err(e) => return usage_error(e.message),
    };
    // a command that runs a tree learns Prime's router first (`approve` once its decision is
    // kept, just before the tree resumes; `delegate` when it asks Prime itself): inside a request
    // it would spend the tree's deadline, and a resumed tree's clock runs from its first request
    if matches!(cli.command, Command::Ask(_) | Command::Demo | Command::Replay(_)) {
        runtime.learn_routers().await;
    }
    match cli.command {
        Command::Ask(args) => ask(&runtime, args, cli.json).await,
        Command::Delegate(args) => delegate(&runtime, args, cli.json).await,
        Command::Agents => agents(&runtime, cli.json),
        Command::Demo => demo::run(&runtime, cli.json).await,
        Command::Audit(args) => audit::run(&runtime, args, cli.json).await,
        Command::Trace(args) => trace(&runtime, args, cli.json).await,
        Command::Replay(args) => replay::run(&runtime, args, cli.json).await,
        Command::Serve(args) => serve(runtime, args, work).await,
        Command::Token(args) => token(runtime, args).await,
        Command::Keys(args) => keys::run(runtime.config(), &args, cli.json),
        Command::Approvals(args) => approvals::list(&runtime, args, cli.json).await,
        Command::Approve(args) => approvals::approve(&runtime, args, cli.json).await,
        Command::Cancel(args) => approvals::cancel(&runtime, args, cli.json).await,
        Command::Stats(args) => stats::stats(&runtime, args, cli.json).await,
        Command::Rate(args) => stats::rate(&runtime, args, cli.json).await,
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(runtime, args).await,
        #[cfg(feature = "queue")]
        Command::Worker(args) => worker::run(runtime, args).await,
        #[cfg(feature = "queue")]
        Command::Queue(args) => worker::queue(runtime, args, cli.json).await,
    }
}

async fn serve(runtime: Runtime, args: ServeArgs, work: Option<crate::server::WorkRuntime>) -> u8 {
    use std::io::Write as _;
    let auth = runtime.config().auth.clone();
    let agents: Vec<AgentSlug> = runtime.registry().members().map(|m| m.spec.slug.clone()).collect();
    let mut state = crate::server::AppState::new(runtime);
    if let Some(w) = &work {
        state = state.on_work_runtime(w.handle().clone());
    }
    let state = std::sync::Arc::new(state);
    if let Err(e) = state.tokens.load_config(&auth).await {
        return usage_error(e.message);
    }
    let issued = match state.tokens.bootstrap(&agents).await {
        Ok(i) => i,
        Err(e) => return usage_error(e.message),
    };
    // Prime's router learned before the first request, off the runtime's threads
    state.runtime.learn_routers().await;
    let listener = match tokio::net::TcpListener::bind(args.addr).await {
        Ok(l) => l,
        Err(e) => return usage_error(format!("cannot listen on {}: {e}", args.addr)),
    };
    let addr = listener.local_addr().map_or_else(|_| args.addr.to_string(), |a| a.to_string());
    outln!("switchboard listening on http://{addr}");
    if !issued.is_empty() {
        outln!("first start: these tokens are shown once and stored hashed; keep them");
        for (who, token) in &issued {
            let who = match who {
                crate::auth::Principal::Agent(a) => format!("service token for agent {a}"),
                crate::auth::Principal::User(u) => format!("user token for {u}"),
                _ => "admin token".to_string(),
            };
            outln!("  {who:<40} {token}");
        }
    }
    let _ = std::io::stdout().flush();
    let grace = std::time::Duration::from_millis(args.shutdown_grace_ms);
    match crate::server::serve(state, listener, grace, crate::server::shutdown_signal()).await {
        Ok(()) => {
            eprintln!("switchboard: stopped");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: the server failed: {e}");
            EXIT_FAILED
        }
    }
}

async fn token(runtime: Runtime, args: TokenArgs) -> u8 {
    use crate::auth::Principal;
    let principal = match (args.agent, args.user, args.admin) {
        (Some(a), _, _) => match AgentSlug::parse(&a) {
            Ok(a) if runtime.registry().get(&a).is_some() => Principal::Agent(a),
            Ok(a) => return usage_error(format!("--agent: no agent '{a}' in this team")),
            Err(e) => return usage_error(format!("--agent: {e}")),
        },
        (_, Some(u), _) => match UserId::parse(u) {
            Ok(u) => Principal::User(u),
            Err(e) => return usage_error(format!("--user: {e}")),
        },
        _ => Principal::Admin,
    };
    match crate::auth::Tokens::new(runtime.store().clone()).issue(principal).await {
        Ok(t) => {
            outln!("{t}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {}", e.message);
            EXIT_FAILED
        }
    }
}

async fn trace(runtime: &Runtime, args: TraceArgs, json: bool) -> u8 {
    let id = match args.request_id.parse() {
        Ok(id) => id,
        Err(e) => return usage_error(format!("REQUEST_ID: {e}")),
    };
    match runtime.tree(id).await {
        Ok(Some(tree)) => {
            if json {
                outln!("{}", json!(tree));
            } else {
                out!("{}", tree.render());
            }
            EXIT_OK
        }
        Ok(None) => usage_error(format!("no delegation with request id {id} is stored in this database")),
        Err(e) => {
            eprintln!("error: {}", e.message);
            EXIT_FAILED
        }
    }
}

/// A file's text: UTF-8 as it is, a PDF's text layer, held to the runtime's
/// `[limits]` before it is read and while it is extracted; an image, other
/// binary or a file over its limit is `INVALID_REQUEST`, with what to send
/// instead.
fn read_file(runtime: &Runtime, path: &Path) -> Result<String, DelegationError> {
    Ok(crate::team::finance::document::read(path, &runtime.config().limits)?)
}

async fn ask(runtime: &Runtime, args: AskArgs, json: bool) -> u8 {
    let user = match UserId::parse(&args.user) {
        Ok(u) => u,
        Err(e) => return usage_error(format!("--user: {e}")),
    };
    let input = match &args.file {
        Some(p) => match read_file(runtime, p) {
            Ok(t) => Some(t),
            Err(e) => return print_error(&e, json),
        },
        None => None,
    };
    let session = match args.session.as_deref().map(str::parse::<SessionId>).transpose() {
        Ok(s) => s,
        Err(e) => return usage_error(format!("--session: {e}")),
    };
    // before Prime runs: a chart that cannot be written is a mistake in the command
    if let Some(Err(e)) = args.out.as_deref().map(check_chart_path) {
        return usage_error(format!("--out: {e}"));
    }
    let turn = Turn::ask(args.message, AskOptions { input, session, ..AskOptions::default() });
    match runtime.enter(Door::Cli, &Principal::User(user.clone()), turn).await {
        Ok(r) => {
            if r.status == Status::NeedsApproval {
                approvals::print_paused_ask(runtime, &r, json).await;
            } else {
                print_ask(&r, json);
            }
            if let Some(out) = &args.out {
                match write_spending_chart(runtime, &user, out).await {
                    // stdout stays one JSON document with --json
                    Ok(()) if json => eprintln!("chart: {}", out.display()),
                    Ok(()) => println!("\nchart: {}", out.display()),
                    Err(e) => return usage_error(format!("--out: {e}")),
                }
            }
            if r.status == Status::Failed { EXIT_FAILED } else { EXIT_OK }
        }
        Err(e) => print_error(&e, json),
    }
}

/// `--out` names an `.svg` file in a directory that exists.
fn check_chart_path(path: &Path) -> Result<(), String> {
    let svg = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !svg {
        return Err(format!(
            "{} is not an .svg path: the chart is written as SVG (PNG is not supported)",
            path.display()
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("the directory {} does not exist", dir.display()));
    }
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    Ok(())
}

/// The user's spending by category, as `GET /v1/money/chart.svg` draws it, written to `path`.
async fn write_spending_chart(runtime: &Runtime, user: &UserId, path: &Path) -> Result<(), String> {
    use crate::server::money::{ChartKind, chart_svg, summarize};
    let entries = runtime.store().money(user).await.map_err(|e| format!("cannot read {user}'s money records: {e}"))?;
    let svg = chart_svg(&summarize(&entries), ChartKind::Category);
    std::fs::write(path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

async fn delegate(runtime: &Runtime, args: DelegateArgs, json: bool) -> u8 {
    let parse = |flag: &str, s: &str| AgentSlug::parse(s).map_err(|e| format!("{flag}: {e}"));
    let from = match &args.from {
        Some(f) => parse("--from", f),
        None => runtime.entry_agent().map_err(|e| format!("--from: {}", e.message)),
    };
    let (to, from) = match (parse("--to", &args.to), from) {
        (Ok(t), Ok(f)) => (t, f),
        (Err(e), _) | (_, Err(e)) => return usage_error(e),
    };
    let user = match UserId::parse(&args.user) {
        Ok(u) => u,
        Err(e) => return usage_error(format!("--user: {e}")),
    };
    if runtime.entry_agent().is_ok_and(|prime| prime == to) {
        runtime.learn_routers().await;
    }
    let input = match &args.input_file {
        Some(p) => match read_file(runtime, p) {
            Ok(t) => t,
            Err(e) => return print_error(&e, json),
        },
        None => args.input,
    };
    let mut req = DelegationRequest::new(from, to, user, args.objective, input);
    req.current_depth = args.depth;
    req.constraints =
        Constraints { max_tokens: args.max_tokens, max_depth: args.max_depth, deadline_ms: args.deadline_ms };
    req.task_note = args.task_note;
    req.priority = args.priority;
    req.idempotency_key = args.idempotency_key;
    if args.ephemeral {
        req.mode = Mode::Ephemeral;
    }
    let mut code = EXIT_OK;
    for _ in 0..args.repeat {
        let mut r = req.clone();
        r.request_id = Default::default();
        let response = runtime.enter(Door::Cli, &Principal::Admin, Envelope::new(r)).await;
        if json && args.repeat > 1 {
            // one line per acknowledged delegation, written as soon as it is durable
            outln!("{}", serde_json::to_string(&response).unwrap_or_default());
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
        } else {
            print_response(&response, json);
            if response.status == Status::NeedsApproval {
                approvals::print_paused_delegation(runtime, &response, json).await;
            }
        }
        if let Some(e) = &response.error {
            code = exit_code(e.code);
        }
    }
    code
}

fn print_response(r: &DelegationResponse, json: bool) {
    if json {
        outln!("{}", serde_json::to_string_pretty(r).unwrap_or_default());
        return;
    }
    if let Some(e) = &r.error {
        let verb = if e.code.is_refusal() { "refused" } else { "failed" };
        if e.code == ErrorCode::NeedsInput {
            outln!("{} needs more from you: {}", r.target_employee, e.message);
        } else if e.code == ErrorCode::NeedsApproval {
            outln!("{} (needs_approval): {}", r.target_employee, e.message);
        } else {
            eprintln!("{verb}: {}: {}", e.code, e.message);
        }
    } else {
        outln!("{} ({}): {}", r.target_employee, r.status.as_str(), r.summary);
        if !r.result.is_empty() {
            outln!("\n{}", r.result);
        }
    }
    if let Some(v) = &r.verifier {
        outln!("\nverifier: {} (score {:.2})", if v.passed { "passed" } else { "failed" }, v.score);
        for c in &v.checks {
            let actual = c.actual.as_ref().map(|a| format!(" (actual: {a})")).unwrap_or_default();
            outln!("  {} {}{actual}", if c.passed { "✓" } else { "✗" }, c.name);
        }
    }
    if let Some(x) = &r.execution {
        let seeds = if x.seeds_tried.is_empty() { String::new() } else { format!(", seeds {:?}", x.seeds_tried) };
        outln!("\nexecution: {} attempt(s){seeds}, {} ms", x.attempts, x.duration_ms);
    }
    if let Some(f) = &r.fallback {
        outln!("fallback: {}: {}", f.recommended, f.reasoning);
    }
}

fn agents(runtime: &Runtime, json: bool) -> u8 {
    let rows: Vec<_> = runtime.team_summary().into_iter().map(|(_, summary)| summary).collect();
    if json {
        outln!("{}", serde_json::Value::Array(rows));
    } else {
        for m in runtime.registry().members() {
            let s = &m.spec;
            outln!("{:<18} {:<8} {:<10} {}", s.slug, s.name, runtime.breaker_state(&s.slug).as_str(), s.description);
        }
    }
    EXIT_OK
}
