//! Circuit breaker per target agent: closed → open after too many failures
//! (consecutive, or a failure rate over a window of recent calls) → half-open
//! after a cool-down, letting a few probes through → closed after successful
//! probes, or open again on a failed one. While open, calls fail fast with
//! `AGENT_UNAVAILABLE` without touching the agent.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::protocol::{AgentSlug, DelegationError, ErrorCode};
use crate::util::lock;

/// When a target's breaker opens, and how it closes again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// Open after this many failures in a row.
    pub consecutive_failures: u32,
    /// ...or when the failure rate over the last `window` calls reaches
    /// `failure_rate`, once at least `min_calls` were made.
    pub window: usize,
    /// Calls the window must hold before the failure rate counts.
    pub min_calls: usize,
    /// Failure rate, 0.0 to 1.0, that opens the breaker.
    pub failure_rate: f64,
    /// How long to stay open before letting a probe through.
    pub cool_down_ms: u64,
    /// Successful probes needed to close again.
    pub probes: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self { consecutive_failures: 5, window: 20, min_calls: 10, failure_rate: 0.5, cool_down_ms: 30_000, probes: 2 }
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls fail fast with `AGENT_UNAVAILABLE` until the cool-down ends.
    Open,
    /// After the cool-down: a few probe calls go through to test the agent.
    HalfOpen,
}

impl BreakerState {
    /// The state's name: `closed`, `open` or `half_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: BreakerState,
    consecutive: u32,
    recent: VecDeque<bool>,
    opened_at: Instant,
    probes_in_flight: u32,
    probe_successes: u32,
}

/// One agent's breaker.
#[derive(Debug)]
pub struct Breaker {
    slug: AgentSlug,
    cfg: BreakerConfig,
    inner: Mutex<Inner>,
}

/// Permission to make one call. Report its outcome with `success` or
/// `failure`; dropping it unreported counts as neither.
#[must_use]
pub struct BreakerPermit {
    breaker: Arc<Breaker>,
    probe: bool,
    done: bool,
}

impl Breaker {
    /// A closed breaker for the agent `slug`.
    pub fn new(slug: AgentSlug, cfg: BreakerConfig) -> Self {
        Self {
            slug,
            cfg,
            inner: Mutex::new(Inner {
                state: BreakerState::Closed,
                consecutive: 0,
                recent: VecDeque::with_capacity(cfg.window),
                opened_at: Instant::now(),
                probes_in_flight: 0,
                probe_successes: 0,
            }),
        }
    }

    /// The current state (an open breaker whose cool-down has ended is half-open).
    pub fn state(&self) -> BreakerState {
        let mut i = lock(&self.inner);
        self.refresh(&mut i);
        i.state
    }

    fn refresh(&self, i: &mut Inner) {
        if i.state == BreakerState::Open && i.opened_at.elapsed() >= Duration::from_millis(self.cfg.cool_down_ms) {
            i.state = BreakerState::HalfOpen;
            i.probes_in_flight = 0;
            i.probe_successes = 0;
        }
    }

    /// Lets a call through, or fails fast while open.
    pub fn acquire(self: &Arc<Self>) -> Result<BreakerPermit, DelegationError> {
        let mut i = lock(&self.inner);
        self.refresh(&mut i);
        let probe = match i.state {
            BreakerState::Closed => false,
            BreakerState::HalfOpen if i.probes_in_flight + i.probe_successes < self.cfg.probes => {
                i.probes_in_flight += 1;
                true
            }
            _ => {
                let wait = Duration::from_millis(self.cfg.cool_down_ms).saturating_sub(i.opened_at.elapsed());
                return Err(DelegationError::new(
                    ErrorCode::AgentUnavailable,
                    format!(
                        "circuit breaker for '{}' is {} after repeated failures; the agent was not called. Retry in {} ms.",
                        self.slug,
                        i.state.as_str(),
                        wait.as_millis()
                    ),
                ));
            }
        };
        Ok(BreakerPermit { breaker: self.clone(), probe, done: false })
    }

    fn record(&self, probe: bool, ok: bool) {
        let mut i = lock(&self.inner);
        if probe {
            i.probes_in_flight = i.probes_in_flight.saturating_sub(1);
        }
        if i.state == BreakerState::HalfOpen {
            if !probe {
                return; // a call admitted before the breaker opened: its outcome is stale
            }
            if ok {
                i.probe_successes += 1;
                if i.probe_successes >= self.cfg.probes {
                    i.state = BreakerState::Closed;
                    i.consecutive = 0;
                    i.recent.clear();
                }
            } else {
                self.open(&mut i);
            }
            return;
        }
        if i.state == BreakerState::Open {
            return;
        }
        if i.recent.len() == self.cfg.window {
            i.recent.pop_front();
        }
        i.recent.push_back(ok);
        i.consecutive = if ok { 0 } else { i.consecutive + 1 };
        let failures = i.recent.iter().filter(|ok| !**ok).count();
        let rate_tripped =
            i.recent.len() >= self.cfg.min_calls && failures as f64 / i.recent.len() as f64 >= self.cfg.failure_rate;
        if i.consecutive >= self.cfg.consecutive_failures || rate_tripped {
            self.open(&mut i);
        }
    }

    fn open(&self, i: &mut Inner) {
        i.state = BreakerState::Open;
        i.opened_at = Instant::now();
        i.probes_in_flight = 0;
        i.probe_successes = 0;
        tracing::warn!(agent = %self.slug, "circuit breaker opened");
    }
}

impl BreakerPermit {
    /// The call succeeded.
    pub fn success(mut self) {
        self.done = true;
        self.breaker.record(self.probe, true);
    }

    /// The call failed in a way that counts against the agent.
    pub fn failure(mut self) {
        self.done = true;
        self.breaker.record(self.probe, false);
    }
}

impl Drop for BreakerPermit {
    fn drop(&mut self) {
        if !self.done && self.probe {
            let mut i = lock(&self.breaker.inner);
            i.probes_in_flight = i.probes_in_flight.saturating_sub(1);
        }
    }
}

/// The breakers of all agents.
#[derive(Debug, Default)]
pub struct Breakers {
    cfg: BreakerConfig,
    map: Mutex<HashMap<AgentSlug, Arc<Breaker>>>,
}

impl Breakers {
    /// No breakers yet, each to be made with `cfg` when first asked for.
    pub fn new(cfg: BreakerConfig) -> Self {
        Self { cfg, map: Mutex::new(HashMap::new()) }
    }

    /// The breaker of `slug`, made closed on first use.
    pub fn get(&self, slug: &AgentSlug) -> Arc<Breaker> {
        lock(&self.map).entry(slug.clone()).or_insert_with(|| Arc::new(Breaker::new(slug.clone(), self.cfg))).clone()
    }

    /// The state of `slug`'s breaker; closed when it has none yet.
    pub fn state(&self, slug: &AgentSlug) -> BreakerState {
        lock(&self.map).get(slug).map_or(BreakerState::Closed, |b| b.state())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(cfg: BreakerConfig) -> Arc<Breaker> {
        Arc::new(Breaker::new(AgentSlug::parse("flaky").unwrap(), cfg))
    }

    fn fail(b: &Arc<Breaker>, n: usize) {
        for _ in 0..n {
            b.acquire().unwrap().failure();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_consecutive_failures_and_fails_fast() {
        let b = breaker(BreakerConfig::default());
        fail(&b, 4);
        assert_eq!(b.state(), BreakerState::Closed);
        fail(&b, 1);
        assert_eq!(b.state(), BreakerState::Open);
        let err = b.acquire().err().unwrap();
        assert_eq!(err.code, ErrorCode::AgentUnavailable);
        assert!(err.message.contains("not called"));
    }

    #[tokio::test(start_paused = true)]
    async fn opens_on_failure_rate_over_the_window() {
        let b = breaker(BreakerConfig::default());
        // alternate: never 5 in a row, but 50% of 10 calls
        for i in 0..10 {
            let p = b.acquire().unwrap();
            if i % 2 == 0 { p.failure() } else { p.success() }
        }
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn half_opens_after_cool_down_and_closes_after_successful_probes() {
        let b = breaker(BreakerConfig { probes: 2, ..BreakerConfig::default() });
        fail(&b, 5);
        tokio::time::advance(Duration::from_millis(29_999)).await;
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(b.state(), BreakerState::HalfOpen);
        let p1 = b.acquire().unwrap();
        let p2 = b.acquire().unwrap();
        assert!(b.acquire().is_err(), "only the configured number of probes");
        p1.success();
        assert_eq!(b.state(), BreakerState::HalfOpen);
        p2.success();
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_reopens() {
        let b = breaker(BreakerConfig::default());
        fail(&b, 5);
        tokio::time::advance(Duration::from_secs(30)).await;
        b.acquire().unwrap().failure();
        assert_eq!(b.state(), BreakerState::Open);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(b.state(), BreakerState::Open, "the cool-down starts again");
    }

    #[tokio::test(start_paused = true)]
    async fn an_abandoned_probe_frees_its_slot() {
        let b = breaker(BreakerConfig { probes: 1, ..BreakerConfig::default() });
        fail(&b, 5);
        tokio::time::advance(Duration::from_secs(30)).await;
        drop(b.acquire().unwrap());
        assert!(b.acquire().is_ok());
    }
}
