//! Circuit breaker per target agent: closed → open after too many failures
//! (consecutive, or a failure rate over a window of recent calls) → half-open
//! after a cool-down, letting a few probes through → closed after successful
//! probes, or open again on a failed one. While open, calls fail fast with
//! `AGENT_UNAVAILABLE` without touching the agent.
//!
//! No user can switch an agent off for everyone: failures on users' requests
//! open an agent's breaker only when they come from at least `min_users`
//! distinct users, or when they are faults no input causes (crashes,
//! timeouts, an unreachable backend). One user's run of failures opens that
//! user's own breaker for the agent instead: their calls wait, others' don't.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, UserId};
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
    /// Distinct users whose requests must have failed before the agent's
    /// breaker opens for everyone (faults no input causes count regardless).
    pub min_users: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            consecutive_failures: 5,
            window: 20,
            min_calls: 10,
            failure_rate: 0.5,
            cool_down_ms: 30_000,
            probes: 2,
            min_users: 3,
        }
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

/// How a call failed, as far as the breaker can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The agent failed on a user's request: the request may be the cause.
    OnRequest,
    /// The agent crashed, timed out or could not be reached: no input causes that.
    Fault,
}

/// One call's outcome in the window.
#[derive(Debug)]
struct Outcome {
    failure: Option<Failure>,
    user: Option<UserId>,
}

#[derive(Debug)]
struct Inner {
    state: BreakerState,
    consecutive: u32,
    /// Users whose requests failed in the current run of failures, and how many of those were faults.
    run_users: HashSet<UserId>,
    run_faults: u32,
    recent: VecDeque<Outcome>,
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
                run_users: HashSet::new(),
                run_faults: 0,
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
        self.admit().map_err(|(state, wait)| {
            DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!(
                    "circuit breaker for '{}' is {} after repeated failures; the agent was not called. Retry in {} ms.",
                    self.slug,
                    state.as_str(),
                    wait.as_millis()
                ),
            )
        })
    }

    /// A permit, or the state that refused it and how long until the next probe.
    fn admit(self: &Arc<Self>) -> Result<BreakerPermit, (BreakerState, Duration)> {
        let mut i = lock(&self.inner);
        self.refresh(&mut i);
        let probe = match i.state {
            BreakerState::Closed => false,
            BreakerState::HalfOpen if i.probes_in_flight + i.probe_successes < self.cfg.probes => {
                i.probes_in_flight += 1;
                true
            }
            state => {
                return Err((
                    state,
                    Duration::from_millis(self.cfg.cool_down_ms).saturating_sub(i.opened_at.elapsed()),
                ));
            }
        };
        Ok(BreakerPermit { breaker: self.clone(), probe, done: false })
    }

    fn record(&self, probe: bool, failure: Option<Failure>, user: Option<&UserId>) {
        let ok = failure.is_none();
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
                    i.run_users.clear();
                    i.run_faults = 0;
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
        i.recent.push_back(Outcome { failure, user: user.cloned() });
        if ok {
            i.consecutive = 0;
            i.run_users.clear();
            i.run_faults = 0;
        } else {
            i.consecutive += 1;
            if let Some(u) = user {
                i.run_users.insert(u.clone());
            }
            if failure == Some(Failure::Fault) {
                i.run_faults += 1;
            }
        }
        if self.tripped(&i) {
            self.open(&mut i);
        }
    }

    /// Whether the failures on file open the breaker: enough of them, and
    /// from enough users or faults no input causes.
    fn tripped(&self, i: &Inner) -> bool {
        let min_users = self.cfg.min_users.max(1) as usize;
        let run = i.consecutive >= self.cfg.consecutive_failures
            && (i.run_users.len() >= min_users || i.run_faults >= self.cfg.consecutive_failures);
        let calls = i.recent.len();
        if run || calls < self.cfg.min_calls {
            return run;
        }
        let failed = i.recent.iter().filter(|o| o.failure.is_some()).count();
        let faults = i.recent.iter().filter(|o| o.failure == Some(Failure::Fault)).count();
        let users: HashSet<&UserId> =
            i.recent.iter().filter(|o| o.failure.is_some()).filter_map(|o| o.user.as_ref()).collect();
        let rate = |n: usize| n as f64 / calls as f64 >= self.cfg.failure_rate;
        rate(failed) && (users.len() >= min_users || rate(faults))
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
        self.breaker.record(self.probe, None, None);
    }

    /// The call failed in a way that counts against the agent: a fault no input causes.
    pub fn failure(mut self) {
        self.done = true;
        self.breaker.record(self.probe, Some(Failure::Fault), None);
    }

    /// The call failed on `user`'s request.
    pub fn failed(mut self, failure: Failure, user: &UserId) {
        self.done = true;
        self.breaker.record(self.probe, Some(failure), Some(user));
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

/// Each user's own breaker per agent, by (agent, user).
type UserBreakers = Mutex<HashMap<(AgentSlug, UserId), Arc<Breaker>>>;

/// Every agent's breaker, and each user's own breaker per agent (created on
/// that user's first failure, dropped once they succeed again).
#[derive(Debug, Default)]
pub struct Breakers {
    cfg: BreakerConfig,
    map: Mutex<HashMap<AgentSlug, Arc<Breaker>>>,
    users: Arc<UserBreakers>,
}

impl Breakers {
    /// No breakers yet; each is created with `cfg` on first use.
    pub fn new(cfg: BreakerConfig) -> Self {
        Self { cfg, map: Mutex::new(HashMap::new()), users: Arc::default() }
    }

    /// The breaker of `slug`, created closed on first use.
    pub fn get(&self, slug: &AgentSlug) -> Arc<Breaker> {
        lock(&self.map).entry(slug.clone()).or_insert_with(|| Arc::new(Breaker::new(slug.clone(), self.cfg))).clone()
    }

    /// The state of `slug`'s breaker (closed if it was never used).
    pub fn state(&self, slug: &AgentSlug) -> BreakerState {
        lock(&self.map).get(slug).map_or(BreakerState::Closed, |b| b.state())
    }

    /// The state of `user`'s own breaker for `slug` (closed if they have no failures on file).
    pub fn user_state(&self, slug: &AgentSlug, user: &UserId) -> BreakerState {
        lock(&self.users).get(&(slug.clone(), user.clone())).map_or(BreakerState::Closed, |b| b.state())
    }

    /// Admits a call to `slug` for `user` through the user's own breaker
    /// (if they have failures on file), then the agent's.
    pub fn acquire(&self, slug: &AgentSlug, user: &UserId) -> Result<CallPermit, DelegationError> {
        let key = (slug.clone(), user.clone());
        let own = lock(&self.users).get(&key).cloned();
        let own = own.map(|b| b.admit()).transpose().map_err(|(_, wait)| {
            DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!(
                    "your recent requests to '{slug}' kept failing, so it is resting for you, not for others; \
                     check what you sent. Retry in {} ms.",
                    wait.as_millis()
                ),
            )
        })?;
        let agent = self.get(slug).acquire()?;
        Ok(CallPermit { agent, own, key, users: self.users.clone(), cfg: BreakerConfig { min_users: 1, ..self.cfg } })
    }
}

/// Leave to call an agent for one user: reports the outcome to the agent's
/// breaker and to the user's own.
#[must_use]
pub struct CallPermit {
    agent: BreakerPermit,
    own: Option<BreakerPermit>,
    key: (AgentSlug, UserId),
    users: Arc<UserBreakers>,
    cfg: BreakerConfig,
}

impl CallPermit {
    /// The call succeeded: a user back on track keeps no breaker of their own.
    pub fn success(self) {
        self.agent.success();
        if let Some(own) = self.own {
            let breaker = own.breaker.clone();
            own.success();
            let mut users = lock(&self.users);
            if breaker.state() == BreakerState::Closed && lock(&breaker.inner).consecutive == 0 {
                users.remove(&self.key);
            }
        }
    }

    /// The call failed in a way that says something about the agent.
    pub fn failed(self, failure: Failure) {
        let user = &self.key.1;
        self.agent.failed(failure, user);
        match self.own {
            Some(own) => own.failed(failure, user),
            None => {
                let own = lock(&self.users)
                    .entry(self.key.clone())
                    .or_insert_with(|| Arc::new(Breaker::new(self.key.0.clone(), self.cfg)))
                    .clone();
                own.record(false, Some(failure), Some(user));
            }
        }
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

    fn user(name: &str) -> UserId {
        UserId::parse(name).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn one_users_failures_rest_the_agent_for_them_only() {
        let breakers = Breakers::new(BreakerConfig::default());
        let (agent, alice, bob) = (AgentSlug::parse("goalie").unwrap(), user("alice"), user("bob"));
        let mut refused = 0;
        for _ in 0..50 {
            match breakers.acquire(&agent, &alice) {
                Ok(p) => p.failed(Failure::OnRequest),
                Err(e) => {
                    assert!(e.message.contains("resting for you, not for others"), "{}", e.message);
                    refused += 1;
                }
            }
        }
        assert_eq!(breakers.state(&agent), BreakerState::Closed, "alice alone can't switch goalie off");
        assert_eq!(breakers.user_state(&agent, &alice), BreakerState::Open);
        assert_eq!(refused, 45, "after 5 failures her calls wait");
        assert_eq!(breakers.user_state(&agent, &bob), BreakerState::Closed);
        breakers.acquire(&agent, &bob).unwrap().success();
    }

    #[tokio::test(start_paused = true)]
    async fn failures_across_users_or_faults_open_it_for_everyone() {
        let breakers = Breakers::new(BreakerConfig::default());
        let agent = AgentSlug::parse("broken").unwrap();
        let users = ["u1", "u2", "u3", "u4", "u5"].map(user);
        for (n, u) in users.iter().enumerate() {
            assert_eq!(breakers.state(&agent), BreakerState::Closed, "after {n}");
            breakers.acquire(&agent, u).unwrap().failed(Failure::OnRequest);
        }
        assert_eq!(breakers.state(&agent), BreakerState::Open, "5 in a row from 5 users");
        assert!(breakers.acquire(&agent, &user("u6")).is_err());

        // faults count whoever asked: one user's timeouts are the agent's
        let timeouts = AgentSlug::parse("slow").unwrap();
        for _ in 0..5 {
            breakers.acquire(&timeouts, &users[0]).unwrap().failed(Failure::Fault);
        }
        assert_eq!(breakers.state(&timeouts), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn a_user_who_succeeds_again_keeps_no_breaker_of_their_own() {
        let breakers = Breakers::new(BreakerConfig::default());
        let (agent, alice) = (AgentSlug::parse("goalie").unwrap(), user("alice"));
        breakers.acquire(&agent, &alice).unwrap().failed(Failure::OnRequest);
        assert_eq!(lock(&breakers.users).len(), 1);
        breakers.acquire(&agent, &alice).unwrap().success();
        assert!(lock(&breakers.users).is_empty());
    }
}
