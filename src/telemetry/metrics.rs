//! Prometheus metrics of one runtime: delegations by target and outcome,
//! attempts, latency, tokens, breaker state, first-attempt successes,
//! fallbacks, and the store's commits (read from the store at each scrape).
//! Handles are made per agent at start, so recording a delegation is a few
//! atomic increments.

use std::collections::HashMap;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::protocol::AgentSlug;
use crate::resilience::{BreakerState, Breakers};
use crate::store::WriteStats;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Target {
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetOutcome {
    target: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Agent {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Taken {
    what: String,
}

/// What this runtime took over from a process that died, and what another took from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakenOver {
    /// A tree cut off mid-run (a restart, or a replica whose lease ran out), run again here.
    Tree,
    /// A tree cut off mid-run whose deadline had passed: ended `DEADLINE_EXCEEDED` here.
    ExpiredTree,
    /// An idempotency key held by a request that died before its tree was written.
    IdempotencyKey,
    /// A tree of this runtime's that another replica took over while this
    /// one's lease was out (a pause, a cut from the store): stopped here,
    /// `TAKEN_OVER`, without writing its end.
    LostTree,
}

impl TakenOver {
    /// Every kind, in declaration order (the order of `Metrics::taken`).
    const ALL: [TakenOver; 4] =
        [TakenOver::Tree, TakenOver::ExpiredTree, TakenOver::IdempotencyKey, TakenOver::LostTree];

    /// Its `what` label.
    fn label(self) -> &'static str {
        match self {
            TakenOver::Tree => "tree",
            TakenOver::ExpiredTree => "expired_tree",
            TakenOver::IdempotencyKey => "idempotency_key",
            TakenOver::LostTree => "lost_tree",
        }
    }
}

/// One agent's handles.
#[derive(Clone)]
struct AgentMetrics {
    success: Counter,
    partial: Counter,
    failed: Counter,
    refused: Counter,
    needs_input: Counter,
    attempts: Counter,
    first_attempt: Counter,
    fallbacks: Counter,
    tokens: Counter,
    latency: Histogram,
}

/// The outcome of one delegation, as metrics see it.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// The agent that was asked.
    pub target: &'a AgentSlug,
    /// `success`, `partial`, `failed` or `refused`.
    pub outcome: &'a str,
    /// Attempts made; 0 when refused.
    pub attempts: u32,
    /// Seconds the delegation took, retries included.
    pub seconds: f64,
    /// Tokens used by the delegation and its subtree.
    pub tokens: u32,
    /// Whether the final failure recommended a fallback.
    pub fallback: bool,
}

/// The `target` label of every delegation to an agent this runtime does not have.
pub const UNKNOWN: &str = "unknown";

/// Reads the store's counts at each scrape (a store that writes nothing
/// to disk has none: no series).
struct StoreCollector(Box<dyn Fn() -> Option<WriteStats> + Send + Sync>);

impl std::fmt::Debug for StoreCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreCollector").finish_non_exhaustive()
    }
}

impl Collector for StoreCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(c) = (self.0)() else { return Ok(()) };
        let pages = c.log_pages.map(|pages| {
            let help = "Database pages the store's transactions wrote to SQLite's log (4 KiB each by default)";
            ("store_log_pages", help, pages)
        });
        for (name, help, value) in [
            ("store_writes", "Writes the store committed", c.writes),
            ("store_commits", "Transactions the store's writes were committed in (group commit)", c.commits),
            (
                "store_synced_commits",
                "Of the store's transactions, those that synced the log before they returned",
                c.synced,
            ),
        ]
        .into_iter()
        .chain(pages)
        {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
        }
        Ok(())
    }
}

/// The runtime's Prometheus registry, with handles made per agent at start.
/// Every label value comes from the configuration or a fixed set (outcomes,
/// [`TakenOver`]), never from a caller: series are bounded by the team.
pub struct Metrics {
    registry: Registry,
    agents: HashMap<AgentSlug, AgentMetrics>,
    /// Every target outside the registry: the caller chose its name, so it
    /// is no label (a label per name would grow `/metrics` without bound).
    unknown: AgentMetrics,
    breaker: Family<Agent, Gauge>,
    /// Handles of `switchboard_taken_over_total`, one per [`TakenOver`], in its order.
    taken: [Counter; TakenOver::ALL.len()],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn latency_histogram() -> Histogram {
    // 10 µs to ~40 s: in-process hops are microseconds, model calls seconds.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(0.000_01, 4.0, 12))
}

impl Metrics {
    /// Metrics for `agents`, each with its handles made now; `store` reads
    /// what the store committed, at each scrape.
    pub fn new<'a>(
        agents: impl IntoIterator<Item = &'a AgentSlug>,
        store: impl Fn() -> Option<WriteStats> + Send + Sync + 'static,
    ) -> Self {
        let mut registry = Registry::with_prefix("switchboard");
        registry.register_collector(Box::new(StoreCollector(Box::new(store))));
        let outcomes = Family::<TargetOutcome, Counter>::default();
        let attempts = Family::<Target, Counter>::default();
        let first_attempt = Family::<Target, Counter>::default();
        let fallbacks = Family::<Target, Counter>::default();
        let tokens = Family::<Target, Counter>::default();
        let latency = Family::<Target, Histogram>::new_with_constructor(latency_histogram as fn() -> Histogram);
        let breaker = Family::<Agent, Gauge>::default();
        registry.register("delegations", "Delegations by target and outcome", outcomes.clone());
        registry.register("attempts", "Attempts made at agents", attempts.clone());
        registry.register(
            "first_attempt_successes",
            "Delegations that succeeded on their first attempt",
            first_attempt.clone(),
        );
        registry.register("fallbacks", "Final failures that recommended a fallback", fallbacks.clone());
        registry.register("tokens", "Tokens used by delegations (subtree totals)", tokens.clone());
        registry.register("delegation_duration_seconds", "Delegation latency", latency.clone());
        registry.register("breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open", breaker.clone());
        let taken_over = Family::<Taken, Counter>::default();
        registry.register(
            "taken_over",
            "What this runtime took over from a process that died: trees run again, trees ended past their \
             deadline, idempotency keys; and trees another replica took from this one (lost_tree)",
            taken_over.clone(),
        );
        let taken = TakenOver::ALL.map(|what| taken_over.get_or_create(&Taken { what: what.label().into() }).clone());
        let handles = |target: &str| {
            let t = Target { target: target.to_string() };
            let o = |outcome: &str| {
                outcomes.get_or_create(&TargetOutcome { target: target.to_string(), outcome: outcome.into() }).clone()
            };
            AgentMetrics {
                success: o("success"),
                partial: o("partial"),
                failed: o("failed"),
                refused: o("refused"),
                needs_input: o("needs_input"),
                attempts: attempts.get_or_create(&t).clone(),
                first_attempt: first_attempt.get_or_create(&t).clone(),
                fallbacks: fallbacks.get_or_create(&t).clone(),
                tokens: tokens.get_or_create(&t).clone(),
                latency: latency.get_or_create(&t).clone(),
            }
        };
        let agents: HashMap<AgentSlug, AgentMetrics> =
            agents.into_iter().map(|slug| (slug.clone(), handles(slug.as_str()))).collect();
        let unknown = handles(UNKNOWN);
        Self { registry, agents, unknown, breaker, taken }
    }

    /// Counts `n` things of one kind taken over from a process that died.
    pub fn taken_over(&self, what: TakenOver, n: usize) {
        self.taken[what as usize].inc_by(n as u64);
    }

    /// Records one finished (or refused) delegation.
    pub fn observe(&self, o: Observation<'_>) {
        let m = self.agents.get(o.target).unwrap_or(&self.unknown);
        match o.outcome {
            "success" => m.success.inc(),
            "partial" => m.partial.inc(),
            "refused" => m.refused.inc(),
            "needs_input" => m.needs_input.inc(),
            _ => m.failed.inc(),
        };
        m.attempts.inc_by(u64::from(o.attempts));
        if o.attempts == 1 && matches!(o.outcome, "success" | "partial") {
            m.first_attempt.inc();
        }
        if o.fallback {
            m.fallbacks.inc();
        }
        m.tokens.inc_by(u64::from(o.tokens));
        if o.outcome != "refused" {
            m.latency.observe(o.seconds);
        }
    }

    /// The Prometheus text exposition, with breaker states read now.
    pub fn render(&self, breakers: &Breakers) -> String {
        for slug in self.agents.keys() {
            let v = match breakers.state(slug) {
                BreakerState::Closed => 0,
                BreakerState::HalfOpen => 1,
                _ => 2,
            };
            self.breaker.get_or_create(&Agent { agent: slug.to_string() }).set(v);
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Shared handle.
pub type SharedMetrics = Arc<Metrics>;
