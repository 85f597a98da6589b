//! `switchboard stats` (usage analytics from the store, as `GET
//! /v1/analytics` answers them) and `switchboard rate` (a user's 👍/👎 on a
//! tree's answer). The local CLI is an operator: `stats` counts everyone's
//! trees unless `--user` names one; `rate` rates as the user `--user` names,
//! whose tree it must be (docs/ANALYTICS.md).

use clap::Args;
use serde_json::json;

use super::output::{EXIT_OK, failed, usage_error};
use crate::auth::Principal;
use crate::protocol::UserId;
use crate::runtime::Runtime;
use crate::store::Thumb;
use crate::store::analytics::Analytics;

#[derive(Debug, Args)]
pub(super) struct StatsArgs {
    /// Start: epoch milliseconds, an RFC 3339 time or YYYY-MM-DD (default: seven days before --until).
    #[arg(long)]
    since: Option<String>,
    /// End: the same forms (default: now).
    #[arg(long)]
    until: Option<String>,
    /// Count this user's trees only.
    #[arg(long)]
    user: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct RateArgs {
    /// The tree's root request id (`switchboard ask` prints it).
    tree: String,
    /// up or down (or 👍, 👎).
    rating: String,
    /// What was good or wrong about the answer.
    #[arg(long)]
    comment: Option<String>,
    /// The user whose tree it is.
    #[arg(long, env = "SWITCHBOARD_USER", default_value = "local-user")]
    user: String,
}

pub(super) async fn stats(runtime: &Runtime, args: StatsArgs, json: bool) -> u8 {
    let got = runtime
        .analytics_for(&Principal::Admin, args.since.as_deref(), args.until.as_deref(), args.user.as_deref())
        .await;
    match got {
        Ok(a) if json => {
            outln!("{}", json!(a));
            EXIT_OK
        }
        Ok(a) => {
            out!("{}", render(&a));
            EXIT_OK
        }
        Err(e) => failed(&e, json),
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn at(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// The analytics as text: totals, then a table each.
pub(super) fn render(a: &Analytics) -> String {
    let mut s = String::new();
    let t = &a.totals;
    let who = a.user.as_ref().map_or_else(|| "everyone".to_string(), UserId::to_string);
    s += &format!("{} to {} UTC, {who}\n", at(a.since), at(a.until));
    s += &format!(
        "{} trees, {} delegations, {} consults: {} succeeded, {} partial, {} failed, {} refused; {} tokens; rated {} 👍 {} 👎\n",
        t.trees,
        t.delegations,
        t.consults,
        t.success,
        t.partial,
        t.failed,
        t.refused,
        t.tokens,
        t.rated_up,
        t.rated_down
    );
    if t.trees + t.delegations + t.consults == 0 {
        s += "nothing ran in this range\n";
        return s;
    }
    s += "\nagents (most called first)\n";
    s += &format!(
        "  {:<22} {:>6} {:>8} {:>5} {:>5} {:>8} {:>8} {:>8} {:>4} {:>4}\n",
        "agent", "calls", "consults", "ok", "fail", "p50 ms", "p95 ms", "tokens", "👍", "👎"
    );
    for g in &a.agents {
        s += &format!(
            "  {:<22} {:>6} {:>8} {:>5} {:>5} {:>8} {:>8} {:>8} {:>4} {:>4}\n",
            g.agent,
            g.calls,
            g.consults,
            percent(g.success_rate),
            percent(g.failure_rate),
            g.p50_ms,
            g.p95_ms,
            g.tokens,
            g.rated_up,
            g.rated_down
        );
    }
    s += "\nwho calls whom (busiest first)\n";
    for e in &a.edges {
        s += &format!(
            "  {:>34} → {:<22} {:>6} calls, {} ok, p50 {} ms, p95 {} ms, {} tokens{}\n",
            e.origin,
            e.target,
            e.calls,
            percent(e.success_rate),
            e.p50_ms,
            e.p95_ms,
            e.tokens,
            if e.consults > 0 { format!(", {} consults", e.consults) } else { String::new() }
        );
    }
    let counts = |c: &[crate::store::analytics::ShapeCount]| {
        c.iter().map(|x| format!("{}: {}", x.n, x.count)).collect::<Vec<_>>().join(", ")
    };
    s += &format!("\ntrees by deepest depth: {}\n", counts(&a.depth));
    s += &format!("delegations by children made: {}\n", counts(&a.fan_out));
    if !a.errors.is_empty() {
        s += "\nrefusals and failures\n";
        for e in &a.errors {
            s += &format!("  {:<24} {:<22} {:>5} refused {:>5} failed\n", e.code, e.agent, e.refused, e.failed);
        }
    }
    s += "\nusers (most tokens first)\n";
    for u in &a.users {
        s += &format!(
            "  {:<24} {:>5} trees {:>6} delegations {:>5} consults {:>8} tokens\n",
            u.user, u.trees, u.delegations, u.consults, u.tokens
        );
    }
    if !a.lowest_rated.is_empty() {
        s += "\nrated down\n";
        for r in &a.lowest_rated {
            let comment = r.comment.as_deref().map(|c| format!(": \"{c}\"")).unwrap_or_default();
            s += &format!("  {} {} {} {}{comment}\n", r.root_id, r.user_id, r.agent, r.objective);
        }
    }
    s
}

pub(super) async fn rate(runtime: &Runtime, args: RateArgs, json: bool) -> u8 {
    let root = match args.tree.parse() {
        Ok(id) => id,
        Err(e) => return usage_error(format!("TREE: {e}")),
    };
    let Some(thumb) = Thumb::parse(&args.rating) else {
        return usage_error(format!("RATING '{}': use up or down", args.rating));
    };
    let user = match UserId::parse(args.user) {
        Ok(u) => u,
        Err(e) => return usage_error(format!("--user: {}", e.0)),
    };
    match runtime.rate(&Principal::User(user), root, thumb, args.comment.as_deref()).await {
        Ok(rating) if json => {
            outln!("{}", json!({ "rating": rating }));
            EXIT_OK
        }
        Ok(rating) => {
            outln!("rated tree {} {} for {}", rating.root_id, rating.thumb.as_str(), rating.user_id);
            EXIT_OK
        }
        Err(e) => failed(&e, json),
    }
}
