//! This runtime as one replica among several on one store (docs/SCALE.md).
//! A runtime on a shared store (an SQLite file, PostgreSQL) holds a lease
//! in the store from its first tree on and renews it four times per lease
//! period; the steps it writes name it as their owner. Another replica
//! takes a tree over only once its owner is dead: its lease ran out, or it
//! was a process on the same host (same pid namespace) that is gone, or a
//! runtime of this very process that was dropped. A cancellation written
//! by another replica reaches the tree here at the next renewal.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use super::Runtime;
use crate::store::{Replica, TreeStep, now_ms};
use crate::util::lock;

/// The lease ids of the runtimes alive in this process.
static LIVE: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// This runtime's lease.
pub(super) struct Lease {
    /// `host/pid/random`, the owner its steps name.
    pub id: String,
    host: String,
    started_at: i64,
    /// How long a renewal keeps it alive.
    pub period: Duration,
    started: AtomicBool,
    released: AtomicBool,
}

impl Lease {
    pub fn new(period: Duration) -> Self {
        let host = host();
        let id =
            format!("{}/{}/{}", host_name(&host), std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
        lock(&LIVE).insert(id.clone());
        Self {
            id,
            host,
            started_at: now_ms(),
            period,
            started: AtomicBool::new(false),
            released: AtomicBool::new(false),
        }
    }

    fn record(&self) -> Replica {
        Replica {
            id: self.id.clone(),
            host: self.host.clone(),
            pid: std::process::id(),
            started_at: self.started_at,
            alive_until: now_ms().saturating_add(i64::try_from(self.period.as_millis()).unwrap_or(i64::MAX)),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        lock(&LIVE).remove(&self.id);
    }
}

/// This host as replicas compare it: its name and its pid namespace (a
/// process id means the same process only within one namespace).
fn host() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    match std::fs::read_link("/proc/self/ns/pid") {
        Ok(ns) => format!("{name} {}", ns.display()),
        Err(_) => name,
    }
}

fn host_name(host: &str) -> &str {
    host.split(' ').next().unwrap_or(host)
}

/// Whether process `pid` of this host runs (where the system says; else assumed).
fn pid_runs(pid: u32) -> bool {
    if cfg!(target_os = "linux") { std::path::Path::new(&format!("/proc/{pid}")).exists() } else { true }
}

/// Which replicas are alive, as one replica sees them.
pub(super) struct Census {
    me: String,
    host: String,
    period: i64,
    now: i64,
    replicas: HashMap<String, Replica>,
}

impl Census {
    pub async fn take(rt: &Runtime) -> Result<Self, crate::store::StoreError> {
        let lease = &rt.inner.lease;
        let replicas = rt.inner.store.replicas().await?.into_iter().map(|r| (r.id.clone(), r)).collect();
        Ok(Self {
            me: lease.id.clone(),
            host: lease.host.clone(),
            period: i64::try_from(lease.period.as_millis()).unwrap_or(i64::MAX),
            now: now_ms(),
            replicas,
        })
    }

    /// Whether replica `id` is dead.
    pub fn dead(&self, id: &str) -> bool {
        if id == self.me {
            return false;
        }
        let Some(r) = self.replicas.get(id) else { return false };
        if r.dead_at(self.now) {
            return true;
        }
        // on this host: a process that is gone, or a runtime of this process that was dropped
        r.host == self.host && (if r.pid == std::process::id() { !lock(&LIVE).contains(id) } else { !pid_runs(r.pid) })
    }

    /// Whether nobody runs the open top step `step` any more: its owner is
    /// dead, or it names none (written before replicas were kept), or its
    /// owner never took a lease (a process that died at once) and the step
    /// has not been written for a lease period.
    pub fn orphaned(&self, step: &TreeStep) -> bool {
        step.owner.is_none() || self.gone(step.owner.as_deref(), step.updated_at)
    }

    /// Whether the owner of something it last wrote at `written_at` (epoch
    /// ms) is gone: dead as [`Census::dead`] says, a dropped runtime of this
    /// process, or one that never took a lease and has not written for a
    /// lease period (as has no owner at all).
    pub fn gone(&self, owner: Option<&str>, written_at: i64) -> bool {
        match owner {
            Some(o) if o == self.me || lock(&LIVE).contains(o) => false,
            Some(o) if self.replicas.contains_key(o) => self.dead(o),
            // a dropped runtime of this process that never renewed its lease
            Some(o) if o.starts_with(&format!("{}/{}/", host_name(&self.host), std::process::id())) => true,
            _ => written_at.saturating_add(self.period) < self.now,
        }
    }

    /// The dead replicas on record.
    pub fn dead_ones(&self) -> Vec<String> {
        self.replicas.keys().filter(|id| self.dead(id)).cloned().collect()
    }
}

/// Starts this runtime's lease (once, on a shared store): renewed four
/// times per period by a task that ends with the runtime. Whether this call started it.
pub(super) fn hold(rt: &Runtime) -> bool {
    let lease = &rt.inner.lease;
    if !rt.inner.store.shared() || lease.started.swap(true, Ordering::AcqRel) {
        return false;
    }
    let weak = Arc::downgrade(&rt.inner);
    let every = (lease.period / 4).max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { break };
            Runtime { inner }.renew().await;
        }
    });
    true
}

impl Runtime {
    /// This runtime's replica id (the owner its tree steps name).
    pub fn replica_id(&self) -> &str {
        &self.inner.lease.id
    }

    /// Gives this runtime's lease up, as its end would: another replica
    /// takes its open trees over at once instead of after a lease period.
    /// A server does so when it stops; whatever still runs here is
    /// abandoned to the taker (its finished steps are not run again).
    pub async fn release_lease(&self) {
        let lease = &self.inner.lease;
        lease.released.store(true, Ordering::Release);
        lock(&LIVE).remove(&lease.id);
        if self.inner.store.shared() {
            self.beat(&Replica { alive_until: 0, ..lease.record() }, "given up").await;
        }
    }

    /// Writes the lease `replica` to the store; whether it was (a failure is logged as not `what`).
    async fn beat(&self, replica: &Replica, what: &str) -> bool {
        let written = self.inner.store.heartbeat(replica).await;
        if let Err(e) = &written {
            tracing::warn!("replica lease not {what}: {e}");
        }
        written.is_ok()
    }

    /// Renews the lease, then cancels here what another replica cancelled in the store.
    async fn renew(&self) {
        if self.inner.lease.released.load(Ordering::Acquire) {
            return;
        }
        if !self.beat(&self.inner.lease.record(), "renewed").await {
            return;
        }
        let running: Vec<_> = lock(&self.inner.running).keys().copied().collect();
        if running.is_empty() {
            return;
        }
        match self.inner.store.cancelled_steps(&running).await {
            Ok(cancelled) => {
                for id in cancelled {
                    if self.cancel(id) {
                        tracing::info!(request_id = %id, "cancelled through another replica");
                    }
                }
            }
            Err(e) => tracing::warn!("cancellations not read: {e}"),
        }
    }

    /// Takes the lease before this replica looks for trees to take over: on
    /// file at once the first time (the renewing task's first write may come
    /// after the look); afterwards that task keeps it.
    pub(super) async fn announce(&self) {
        if hold(self) {
            self.beat(&self.inner.lease.record(), "taken").await;
        }
    }
}

/// How often a keeper looks for trees that waited for approval past their deadline.
const EXPIRY_SWEEP: Duration = Duration::from_secs(1);

impl Runtime {
    /// Keeps this replica's share of the trees, until the future is dropped
    /// (a server and a worker run it): at start, the trees a restart cut
    /// off resume (those past their deadline end `DEADLINE_EXCEEDED`); then
    /// every second trees that waited for approval past their deadline end
    /// the same way, and every half lease period the trees of a replica
    /// that died are taken over.
    pub async fn keep_trees(self) {
        let report = |found: &super::Resumed| {
            if !(found.resumed.is_empty() && found.expired.is_empty()) {
                eprintln!(
                    "switchboard: {} trees resumed, {} ended past their deadline, {} waiting for approval, \
                     {} running on other replicas",
                    found.resumed.len(),
                    found.expired.len(),
                    found.waiting.len(),
                    found.elsewhere.len()
                );
            }
        };
        match self.resume_open_trees().await {
            Ok(found) => report(&found),
            Err(e) => eprintln!("switchboard: open trees not resumed: {e}"),
        }
        let takeover = self.inner.lease.period / 2;
        let mut last_takeover = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(EXPIRY_SWEEP.min(takeover));
        loop {
            tick.tick().await;
            // the takeover's look ends the overdue waiting trees too: one read of the open steps per tick
            if last_takeover.elapsed() >= takeover {
                last_takeover = tokio::time::Instant::now();
                match self.resume_open_trees().await {
                    Ok(found) => report(&found),
                    Err(e) => tracing::warn!("trees of dead replicas not taken over: {e}"),
                }
            } else if let Err(e) = self.expire_overdue().await {
                tracing::warn!("overdue trees not ended: {e}");
            }
        }
    }
}
