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
//!
//! Over a store ([`Breakers::stored`]), what a breaker counts survives a
//! restart: its state, its run of failures (how many, which users, how many
//! faults), its window of recent calls and its successful probes. A task of
//! its own writes them (never on the call's path), coalesced: a breaker
//! that changed is written at most once per [`WRITE_EVERY`], with its
//! latest state; one closed with nothing counted is removed. The breakers
//! on file are loaded when that task starts. A breaker reloaded after its
//! cool-down (on the wall clock) is half-open. A crash (or dropping the
//! breakers) loses at most the last [`WRITE_EVERY`] of counts.
//!
//! Replicas on one shared store share what their breakers open: each reads
//! the stored breakers back every [`SHARED_EVERY`] and takes on one that
//! another replica opened (after its own last opening) while its own is
//! closed; and the store keeps an open breaker open through its cool-down
//! against a replica that has not seen it open yet and writes its closed
//! one. Each replica counts its own calls: failures on two replicas do not
//! add up to an opening.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, UserId};
use crate::store::{BreakerCounters, BreakerRecord, RecentCall, Store, now_ms};

/// A breaker that changed is written at most this often (its latest state).
pub const WRITE_EVERY: Duration = Duration::from_millis(200);

/// How often the breakers on a shared store are read back, so that what
/// another replica opened is open here too.
pub const SHARED_EVERY: Duration = Duration::from_secs(1);
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

impl Failure {
    /// Its name as stored: `on_request` or `fault`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnRequest => "on_request",
            Self::Fault => "fault",
        }
    }

    /// The failure a stored name stands for (an unknown name counts as a fault).
    fn parse(s: &str) -> Self {
        if s == "on_request" { Self::OnRequest } else { Self::Fault }
    }
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
    /// Where its changes are written, and the user whose own breaker it is.
    log: Option<(Arc<Log>, Option<UserId>)>,
    /// It changed since the store's writer last read it (the writer was told).
    dirty: std::sync::atomic::AtomicBool,
}

/// Permission to make one call. Report its outcome with `success` or
/// `failure`; dropping it unreported counts as neither.
#[must_use]
pub struct BreakerPermit {
    breaker: Arc<Breaker>,
    probe: bool,
    done: bool,
}

impl std::fmt::Debug for BreakerPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerPermit").finish_non_exhaustive()
    }
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
            log: None,
            dirty: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Tells the store's writer that this breaker changed (once until it reads it).
    fn mark(&self) {
        if let Some((log, user)) = &self.log
            && !self.dirty.swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            log.send(Change::Dirty(self.slug.clone(), user.clone()));
        }
    }

    /// What the store keeps of it; None when it is closed with nothing counted.
    fn snapshot(&self, user: Option<&UserId>) -> Option<BreakerRecord> {
        let mut i = lock(&self.inner);
        self.refresh(&mut i);
        let counted =
            i.state != BreakerState::Closed || i.consecutive > 0 || i.recent.iter().any(|o| o.failure.is_some());
        if !counted {
            return None;
        }
        let now = now_ms();
        let opened_at = match i.state {
            BreakerState::Closed => 0,
            _ => now.saturating_sub(i64::try_from(i.opened_at.elapsed().as_millis()).unwrap_or(i64::MAX)),
        };
        let mut run_users: Vec<UserId> = i.run_users.iter().cloned().collect();
        run_users.sort();
        let recent = i
            .recent
            .iter()
            .map(|o| RecentCall { failure: o.failure.map(|f| f.as_str().to_string()), user: o.user.clone() })
            .collect();
        Some(BreakerRecord {
            agent: self.slug.clone(),
            user: user.cloned(),
            state: i.state.as_str().to_string(),
            opened_at,
            consecutive: i.consecutive,
            run_faults: i.run_faults,
            run_users,
            probe_successes: i.probe_successes,
            updated_at: now,
            counters: BreakerCounters { recent },
        })
    }

    fn logged(mut self, log: Option<&Arc<Log>>, user: Option<&UserId>) -> Self {
        self.log = log.map(|l| (l.clone(), user.cloned()));
        self
    }

    /// The breaker as stored, with what it counted: closed, or open, or
    /// half-open when its cool-down has passed on the wall clock since it
    /// opened (the same rule as a running one's).
    fn restored(slug: AgentSlug, cfg: BreakerConfig, r: &BreakerRecord) -> Self {
        let b = Self::new(slug, cfg);
        {
            let mut i = lock(&b.inner);
            let elapsed = u64::try_from(now_ms().saturating_sub(r.opened_at)).unwrap_or(0);
            let cool_down = Duration::from_millis(cfg.cool_down_ms);
            let now = Instant::now();
            i.opened_at =
                now.checked_sub(Duration::from_millis(elapsed)).or_else(|| now.checked_sub(cool_down)).unwrap_or(now);
            i.state = if r.state == BreakerState::Closed.as_str() {
                BreakerState::Closed
            } else if r.state == BreakerState::HalfOpen.as_str() || elapsed >= cfg.cool_down_ms {
                BreakerState::HalfOpen
            } else {
                BreakerState::Open
            };
            let skip = r.counters.recent.len().saturating_sub(cfg.window);
            i.recent = r
                .counters
                .recent
                .iter()
                .skip(skip)
                .map(|c| Outcome { failure: c.failure.as_deref().map(Failure::parse), user: c.user.clone() })
                .collect();
            i.probe_successes = if i.state == BreakerState::HalfOpen { r.probe_successes } else { 0 };
            i.consecutive = r.consecutive;
            i.run_faults = r.run_faults;
            i.run_users = r.run_users.iter().cloned().collect();
        }
        b
    }

    /// Whether it is closed and last opened (or was made) before `opened_at`
    /// (epoch ms): another replica's opening is newer than anything it saw.
    fn closed_before(&self, opened_at: i64) -> bool {
        let mut i = lock(&self.inner);
        self.refresh(&mut i);
        let opened_here = now_ms().saturating_sub(i64::try_from(i.opened_at.elapsed().as_millis()).unwrap_or(i64::MAX));
        i.state == BreakerState::Closed && opened_here < opened_at
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
        self.count(probe, failure, user);
        self.mark();
    }

    fn count(&self, probe: bool, failure: Option<Failure>, user: Option<&UserId>) {
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
/// Each agent's breaker.
type AgentBreakers = Mutex<HashMap<AgentSlug, Arc<Breaker>>>;

/// What the store's writer is told.
#[derive(Debug)]
enum Change {
    /// The breaker of this agent (and user) changed: write its latest state.
    Dirty(AgentSlug, Option<UserId>),
    /// Answered once everything before it is written.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A breaker the writer is told about.
type Key = (AgentSlug, Option<UserId>);

/// Where breakers are written: a queue that one task drains into the store.
#[derive(Debug)]
struct Log {
    tx: tokio::sync::mpsc::UnboundedSender<Change>,
}

impl Log {
    fn send(&self, change: Change) {
        // the task is gone only with the tokio runtime: nothing is left to write for
        let _ = self.tx.send(change);
    }
}

/// What the task that loads and writes the breakers starts with, until it starts.
struct Pending {
    store: Arc<dyn Store>,
    rx: tokio::sync::mpsc::UnboundedReceiver<Change>,
}

/// The breakers' store: the log they write to, and the task that drains it
/// (started with the first tokio runtime that is there to run it).
struct Stored {
    log: Arc<Log>,
    pending: Mutex<Option<Pending>>,
    started: std::sync::atomic::AtomicBool,
    loaded: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored").field("started", &self.started).finish_non_exhaustive()
    }
}

/// Every agent's breaker, and each user's own breaker per agent (created on
/// that user's first failure, dropped once they succeed again).
#[derive(Debug, Default)]
pub struct Breakers {
    cfg: BreakerConfig,
    map: Arc<AgentBreakers>,
    users: Arc<UserBreakers>,
    stored: Option<Stored>,
}

impl Breakers {
    /// No breakers yet; each is created with `cfg` on first use.
    pub fn new(cfg: BreakerConfig) -> Self {
        Self { cfg, map: Arc::default(), users: Arc::default(), stored: None }
    }

    /// [`Breakers::new`], kept in `store`: the breakers on file are loaded,
    /// and each opening and closing is written, by a task started now when a
    /// tokio runtime runs (else at the first call).
    pub fn stored(cfg: BreakerConfig, store: Arc<dyn Store>) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let stored = Stored {
            log: Arc::new(Log { tx }),
            pending: Mutex::new(Some(Pending { store, rx })),
            started: std::sync::atomic::AtomicBool::new(false),
            loaded: tokio::sync::watch::channel(false).0,
        };
        let breakers = Self { stored: Some(stored), ..Self::new(cfg) };
        breakers.start();
        breakers
    }

    fn log(&self) -> Option<&Arc<Log>> {
        self.stored.as_ref().map(|s| &s.log)
    }

    /// Starts the task that loads the stored breakers and writes the changes, once.
    fn start(&self) {
        use std::sync::atomic::Ordering;
        let Some(stored) = &self.stored else { return };
        if stored.started.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        let Some(Pending { store, mut rx }) = lock(&stored.pending).take() else { return };
        stored.started.store(true, Ordering::Release);
        let (cfg, map, users, log) =
            (self.cfg, Arc::downgrade(&self.map), Arc::downgrade(&self.users), stored.log.clone());
        let loaded = stored.loaded.clone();
        handle.spawn(async move {
            // the breakers on file: only those are removed when they have nothing left to count
            let mut on_file: HashSet<Key> = HashSet::new();
            match store.breakers().await {
                Ok(records) => {
                    on_file.extend(records.iter().map(|r| (r.agent.clone(), r.user.clone())));
                    if let (Some(map), Some(users)) = (map.upgrade(), users.upgrade()) {
                        install(cfg, &map, &users, &log, &records);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the stored circuit breakers could not be loaded"),
            }
            // held weakly: the channel closes (and this task ends) when the breakers are dropped
            let log = Arc::downgrade(&log);
            let _ = loaded.send(true);
            let mut dirty: HashSet<Key> = HashSet::new();
            let mut waiting = Vec::new();
            let take = |change: Change, dirty: &mut HashSet<Key>, waiting: &mut Vec<_>| match change {
                Change::Dirty(agent, user) => {
                    dirty.insert((agent, user));
                }
                Change::Flush(done) => waiting.push(done),
            };
            // other replicas on the store: what they opened is read back now and then
            let shared = store.shared();
            let mut look = tokio::time::interval(SHARED_EVERY);
            look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            look.tick().await; // the first tick is now: just loaded
            loop {
                let change = tokio::select! {
                    change = rx.recv() => match change {
                        Some(change) => change,
                        None => break,
                    },
                    _ = look.tick(), if shared => {
                        let (Some(map), Some(users), Some(log)) = (map.upgrade(), users.upgrade(), log.upgrade()) else {
                            break;
                        };
                        match store.breakers().await {
                            Ok(records) => {
                                on_file.extend(records.iter().map(|r| (r.agent.clone(), r.user.clone())));
                                adopt_opened(cfg, &map, &users, &log, &records);
                            }
                            Err(e) => tracing::warn!(error = %e, "the other replicas' circuit breakers could not be read"),
                        }
                        continue;
                    }
                };
                take(change, &mut dirty, &mut waiting);
                // coalesce: what else changes within WRITE_EVERY is written with it (a flush does not wait)
                let until = Instant::now() + WRITE_EVERY;
                while waiting.is_empty() {
                    tokio::select! {
                        change = rx.recv() => match change {
                            Some(change) => take(change, &mut dirty, &mut waiting),
                            None => break,
                        },
                        () = tokio::time::sleep_until(until) => break,
                    }
                }
                for key in dirty.drain() {
                    write(store.as_ref(), &map, &users, &mut on_file, key, cfg.cool_down_ms).await;
                }
                for done in waiting.drain(..) {
                    let _ = done.send(());
                }
            }
        });
    }

    /// Waits until the stored breakers are loaded and every change made so
    /// far is written (at once for breakers without a store, or with no
    /// tokio runtime to run their task).
    pub async fn settled(&self) {
        self.start();
        let Some(stored) = &self.stored else { return };
        if !stored.started.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let mut loaded = stored.loaded.subscribe();
        let _ = loaded.wait_for(|l| *l).await;
        let (tx, rx) = tokio::sync::oneshot::channel();
        stored.log.send(Change::Flush(tx));
        let _ = rx.await;
    }

    /// The breaker of `slug`, created closed on first use.
    pub fn get(&self, slug: &AgentSlug) -> Arc<Breaker> {
        lock(&self.map)
            .entry(slug.clone())
            .or_insert_with(|| Arc::new(Breaker::new(slug.clone(), self.cfg).logged(self.log(), None)))
            .clone()
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
        self.start();
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
        Ok(CallPermit {
            agent,
            own,
            key,
            users: self.users.clone(),
            cfg: user_config(self.cfg),
            log: self.log().cloned(),
        })
    }
}

/// Writes the latest state of one breaker, or removes it from the store
/// when it counts nothing (or is gone: a user's own breaker after a success).
async fn write(
    store: &dyn Store,
    map: &std::sync::Weak<AgentBreakers>,
    users: &std::sync::Weak<UserBreakers>,
    on_file: &mut HashSet<Key>,
    key: Key,
    hold_open_ms: u64,
) {
    // the breakers themselves are gone (dropped with their runtime): nothing to read, and nothing to remove
    let breaker = match &key.1 {
        None => {
            let Some(map) = map.upgrade() else { return };
            lock(&map).get(&key.0).cloned()
        }
        Some(user) => {
            let Some(users) = users.upgrade() else { return };
            lock(&users).get(&(key.0.clone(), user.clone())).cloned()
        }
    };
    let record = breaker.and_then(|b| {
        b.dirty.store(false, std::sync::atomic::Ordering::Release);
        b.snapshot(key.1.as_ref())
    });
    let done = match record {
        Some(r) => {
            on_file.insert(key);
            store.put_breaker(&r, hold_open_ms).await
        }
        None if on_file.remove(&key) => store.remove_breaker(&key.0, key.1.as_ref(), hold_open_ms).await,
        None => Ok(()),
    };
    if let Err(e) = done {
        tracing::warn!(error = %e, "a circuit breaker's state could not be stored");
    }
}

/// Puts in place what another replica opened: a stored breaker that is
/// open or half-open and opened after this replica's own breaker last did,
/// while this replica's is closed (one that is open here keeps its state).
fn adopt_opened(
    cfg: BreakerConfig,
    map: &AgentBreakers,
    users: &UserBreakers,
    log: &Arc<Log>,
    records: &[BreakerRecord],
) {
    let opened = records.iter().filter(|r| r.state != BreakerState::Closed.as_str());
    put_in_place(cfg, map, users, log, opened, |b, live, r| {
        live.is_none_or(|l| l.closed_before(r.opened_at)).then(|| {
            if r.user.is_none() {
                tracing::info!(agent = %r.agent, "circuit breaker opened by another replica");
            }
            Arc::new(b)
        })
    });
}

/// Each of `records` as a breaker, in place of the live one of its agent (and
/// user) when `take` says so: it gets the stored breaker, the live one if
/// there is one, and the record, and answers the breaker to keep (None: the live one).
fn put_in_place<'r>(
    cfg: BreakerConfig,
    map: &AgentBreakers,
    users: &UserBreakers,
    log: &Arc<Log>,
    records: impl Iterator<Item = &'r BreakerRecord>,
    take: impl Fn(Breaker, Option<&Arc<Breaker>>, &BreakerRecord) -> Option<Arc<Breaker>>,
) {
    for r in records {
        match &r.user {
            None => {
                let b = Breaker::restored(r.agent.clone(), cfg, r).logged(Some(log), None);
                let mut map = lock(map);
                if let Some(b) = take(b, map.get(&r.agent), r) {
                    map.insert(r.agent.clone(), b);
                }
            }
            Some(user) => {
                let b = Breaker::restored(r.agent.clone(), user_config(cfg), r).logged(Some(log), Some(user));
                let mut users = lock(users);
                let key = (r.agent.clone(), user.clone());
                if let Some(b) = take(b, users.get(&key), r) {
                    users.insert(key, b);
                }
            }
        }
    }
}

/// A user's own breaker opens on that user's failures alone.
fn user_config(cfg: BreakerConfig) -> BreakerConfig {
    BreakerConfig { min_users: 1, ..cfg }
}

/// Puts the stored breakers in place. A breaker this process made before
/// they were loaded keeps its own state if it opened here; a closed one is
/// replaced by the stored one with the calls it saw since counted on top
/// (the failures before the restart and after it both count).
fn install(cfg: BreakerConfig, map: &AgentBreakers, users: &UserBreakers, log: &Arc<Log>, records: &[BreakerRecord]) {
    // the stored breaker, with the calls `live` counted replayed on it; None: keep `live`
    let adopt = |b: Breaker, live: Option<&Arc<Breaker>>, _: &BreakerRecord| -> Option<Arc<Breaker>> {
        let Some(live) = live else { return Some(Arc::new(b)) };
        let calls: Vec<(Option<Failure>, Option<UserId>)> = {
            let i = lock(&live.inner);
            if i.state != BreakerState::Closed {
                return None;
            }
            i.recent.iter().map(|o| (o.failure, o.user.clone())).collect()
        };
        for (failure, user) in &calls {
            b.count(false, *failure, user.as_ref());
        }
        if !calls.is_empty() {
            b.mark();
        }
        Some(Arc::new(b))
    };
    put_in_place(cfg, map, users, log, records.iter(), adopt);
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
    log: Option<Arc<Log>>,
}

impl std::fmt::Debug for CallPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPermit").finish_non_exhaustive()
    }
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
                    .or_insert_with(|| {
                        Arc::new(Breaker::new(self.key.0.clone(), self.cfg).logged(self.log.as_ref(), Some(user)))
                    })
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

    fn stored(cfg: BreakerConfig, store: &Arc<crate::store::MemoryStore>) -> Breakers {
        Breakers::stored(cfg, store.clone())
    }

    #[tokio::test]
    async fn stored_breakers_are_open_again_after_a_restart_each_users_their_own() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let cfg = BreakerConfig { cool_down_ms: 600_000, ..BreakerConfig::default() };
        let (goalie, broken, alice, bob) =
            (AgentSlug::parse("goalie").unwrap(), AgentSlug::parse("broken").unwrap(), user("alice"), user("bob"));
        let first = stored(cfg, &store);
        first.settled().await;
        for _ in 0..5 {
            first.acquire(&goalie, &alice).unwrap().failed(Failure::OnRequest);
            first.acquire(&broken, &bob).unwrap().failed(Failure::Fault);
        }
        first.acquire(&goalie, &bob).unwrap().failed(Failure::OnRequest); // one failure: counted, kept too
        first.settled().await;
        let on_file = store.breakers().await.unwrap();
        let keys: Vec<(String, Option<String>, String, u32)> = on_file
            .iter()
            .map(|r| (r.agent.to_string(), r.user.as_ref().map(ToString::to_string), r.state.clone(), r.consecutive))
            .collect();
        let row = |a: &str, u: Option<&str>, state: &str, n| (a.to_string(), u.map(String::from), state.to_string(), n);
        assert_eq!(
            keys,
            [
                row("broken", None, "open", 5),
                row("broken", Some("bob"), "open", 5),
                row("goalie", None, "closed", 6),
                row("goalie", Some("alice"), "open", 5),
                row("goalie", Some("bob"), "closed", 1),
            ],
            "every breaker that counts something"
        );

        let second = stored(cfg, &store);
        second.settled().await;
        assert_eq!(second.state(&broken), BreakerState::Open);
        assert_eq!(second.user_state(&goalie, &alice), BreakerState::Open);
        assert_eq!(second.state(&goalie), BreakerState::Closed, "alice's failures stay hers");
        assert_eq!(second.user_state(&goalie, &bob), BreakerState::Closed);
        let counted = lock(&second.users).get(&(goalie.clone(), bob.clone())).map(|b| lock(&b.inner).consecutive);
        assert_eq!(counted, Some(1), "bob's one failure is still counted");
        assert!(second.acquire(&goalie, &bob).is_ok());
        let refused = second.acquire(&goalie, &alice).err().unwrap();
        assert!(refused.message.contains("resting for you"), "{}", refused.message);
        assert!(second.acquire(&broken, &alice).is_err(), "open for everyone");
    }

    #[tokio::test]
    async fn a_stored_breaker_past_its_cool_down_is_half_open_and_closing_removes_it() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let slug = AgentSlug::parse("flaky").unwrap();
        let record = |opened_at| BreakerRecord {
            agent: slug.clone(),
            user: None,
            state: "open".into(),
            opened_at,
            consecutive: 5,
            run_faults: 5,
            run_users: vec![],
            probe_successes: 0,
            updated_at: opened_at,
            counters: BreakerCounters::default(),
        };
        let cfg = BreakerConfig { cool_down_ms: 60_000, probes: 1, ..BreakerConfig::default() };
        store.put_breaker(&record(now_ms() - 59_000), 0).await.unwrap();
        let b = stored(cfg, &store);
        b.settled().await;
        assert_eq!(b.state(&slug), BreakerState::Open, "a minute's cool-down, 59 s of it passed on the wall clock");
        let wait = b.acquire(&slug, &user("alice")).err().unwrap();
        let ms: u64 = wait.message.split("Retry in ").nth(1).and_then(|t| t.split(' ').next()?.parse().ok()).unwrap();
        assert!(ms <= 1_000, "the time already waited counts: {}", wait.message);

        store.put_breaker(&record(now_ms() - 61_000), 0).await.unwrap();
        let b = stored(cfg, &store);
        b.settled().await;
        assert_eq!(b.state(&slug), BreakerState::HalfOpen, "its cool-down passed while nothing ran");
        b.acquire(&slug, &user("alice")).unwrap().success();
        assert_eq!(b.state(&slug), BreakerState::Closed);
        b.settled().await;
        assert!(store.breakers().await.unwrap().is_empty(), "a closed breaker is not kept");
    }

    #[test]
    fn breakers_built_outside_a_runtime_start_their_store_task_at_the_first_call() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let b = stored(BreakerConfig::default(), &store);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let slug = AgentSlug::parse("slow").unwrap();
            for _ in 0..5 {
                b.acquire(&slug, &user("alice")).unwrap().failed(Failure::Fault);
            }
            b.settled().await;
            assert_eq!(store.breakers().await.unwrap().len(), 2, "the agent's and alice's own");
        });
    }

    #[tokio::test]
    async fn counts_short_of_opening_survive_a_restart_and_a_closed_breaker_with_nothing_counted_goes() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let cfg = BreakerConfig { cool_down_ms: 600_000, ..BreakerConfig::default() };
        let (flaky, alice) = (AgentSlug::parse("flaky").unwrap(), user("alice"));
        let first = stored(cfg, &store);
        first.settled().await;
        for _ in 0..4 {
            first.acquire(&flaky, &alice).unwrap().failed(Failure::Fault);
        }
        first.settled().await;
        let on_file = store.breakers().await.unwrap();
        assert_eq!(on_file.len(), 2, "the agent's and alice's own, both closed: {on_file:?}");
        assert!(on_file.iter().all(|r| r.state == "closed" && r.consecutive == 4 && r.run_faults == 4));
        assert_eq!(on_file[0].counters.recent.len(), 4);
        assert_eq!(on_file[0].counters.recent[0].failure.as_deref(), Some("fault"));

        let second = stored(cfg, &store);
        second.settled().await;
        assert_eq!(second.state(&flaky), BreakerState::Closed);
        second.acquire(&flaky, &alice).unwrap().failed(Failure::Fault);
        assert_eq!(second.state(&flaky), BreakerState::Open, "the fifth failure, across the restart");

        // a success closes nothing open, but an agent back to nothing counted is removed
        let third = stored(cfg, &store);
        third.settled().await;
        let other = AgentSlug::parse("other").unwrap();
        third.acquire(&other, &alice).unwrap().failed(Failure::Fault);
        third.settled().await;
        assert!(store.breakers().await.unwrap().iter().any(|r| r.agent == other));
        for _ in 0..cfg.window {
            third.acquire(&other, &alice).unwrap().success();
        }
        third.settled().await;
        assert!(!store.breakers().await.unwrap().iter().any(|r| r.agent == other), "nothing counted: removed");
    }

    #[tokio::test]
    async fn failures_counted_before_the_stored_ones_are_loaded_add_to_them() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let (slow, alice) = (AgentSlug::parse("slow").unwrap(), user("alice"));
        let cfg = BreakerConfig::default();
        let first = stored(cfg, &store);
        for _ in 0..4 {
            first.acquire(&slow, &alice).unwrap().failed(Failure::Fault);
        }
        first.settled().await;
        // the loading task has not run yet (one thread, no await in between) when the fifth failure comes
        let second = stored(cfg, &store);
        second.acquire(&slow, &alice).unwrap().failed(Failure::Fault);
        assert_eq!(second.state(&slow), BreakerState::Closed, "one failure, before the stored four are loaded");
        second.settled().await;
        assert_eq!(second.state(&slow), BreakerState::Open, "four before the restart and one after");
        assert_eq!(second.user_state(&slow, &alice), BreakerState::Open);
    }
}
