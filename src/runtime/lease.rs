//! This runtime's lease among the replicas on its store (docs/SCALE.md):
//! what it holds, until when, and how this process tells which replicas are
//! its own. Low in the runtime: the `Runtime` keeps one; the replica's
//! renewals and the fence (`replica.rs`) use it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::store::{Replica, now_ms};
use crate::util::lock;

/// The lease ids of the runtimes alive in this process.
pub(super) static LIVE: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// This runtime's lease.
pub(crate) struct Lease {
    /// `host/pid/random`, the owner its steps name.
    pub id: String,
    pub(super) host: String,
    started_at: i64,
    /// How long a renewal keeps it alive.
    pub period: Duration,
    pub(super) started: AtomicBool,
    pub(super) released: AtomicBool,
    /// What `valid_until` counts from.
    born: Instant,
    /// Until when (ms after `born`) this replica's trees are surely its own:
    /// three quarters of a period after the last renewal was sent (the rest
    /// covers clocks that differ between hosts). 0 before the first renewal.
    valid_until: AtomicU64,
    /// How many times the lease was found out when it was renewed.
    lapses: AtomicU64,
    /// One renewal at a time.
    pub(super) renewing: tokio::sync::Mutex<()>,
}

impl Lease {
    pub(crate) fn new(period: Duration) -> Self {
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
            born: Instant::now(),
            valid_until: AtomicU64::new(0),
            lapses: AtomicU64::new(0),
            renewing: tokio::sync::Mutex::new(()),
        }
    }

    pub(super) fn clock(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the trees this replica runs are surely its own now, without asking the store.
    pub(super) fn holds(&self) -> bool {
        !self.released.load(Ordering::Acquire) && self.clock() < self.valid_until.load(Ordering::Acquire)
    }

    /// A renewal sent at `sent` (ms after `born`) was written: the lease
    /// holds for three quarters of a period from then. Counts a lapse if
    /// the lease had run out before (never before the first renewal).
    pub(super) fn renewed(&self, sent: u64) {
        let before = self.valid_until.load(Ordering::Acquire);
        if before != 0 && self.clock() >= before {
            self.lapses.fetch_add(1, Ordering::AcqRel);
        }
        let holds = u64::try_from((self.period * 3 / 4).as_millis()).unwrap_or(u64::MAX);
        self.valid_until.store(sent.saturating_add(holds), Ordering::Release);
    }

    pub(super) fn lapses(&self) -> u64 {
        self.lapses.load(Ordering::Acquire)
    }

    pub(super) fn record(&self) -> Replica {
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

pub(super) fn host_name(host: &str) -> &str {
    host.split(' ').next().unwrap_or(host)
}

/// Whether process `pid` of this host runs (where the system says; else assumed).
pub(super) fn pid_runs(pid: u32) -> bool {
    if cfg!(target_os = "linux") { std::path::Path::new(&format!("/proc/{pid}")).exists() } else { true }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_holds_three_quarters_of_a_period_from_the_renewal_sent_and_counts_each_time_it_was_out() {
        let lease = Lease::new(Duration::from_secs(40));
        assert!(!lease.holds(), "not before its first renewal");
        lease.renewed(lease.clock());
        assert!(lease.holds());
        assert_eq!(lease.lapses(), 0, "the first renewal is not a lapse");
        lease.renewed(lease.clock());
        assert_eq!(lease.lapses(), 0, "renewed in time");
        // out (a pause, a cut from the store), then renewed: one lapse
        lease.valid_until.store(1, Ordering::Release);
        std::thread::sleep(Duration::from_millis(3));
        assert!(!lease.holds());
        lease.renewed(lease.clock());
        assert!(lease.holds());
        assert_eq!(lease.lapses(), 1);

        // a renewal sent so long ago that the lease it wrote is out already does not make it hold
        let short = Lease::new(Duration::from_millis(40));
        std::thread::sleep(Duration::from_millis(45));
        short.renewed(0);
        assert!(!short.holds(), "30 ms from a renewal sent 45 ms ago");
        short.renewed(short.clock());
        assert_eq!(short.lapses(), 1, "it was out when renewed again");

        lease.released.store(true, Ordering::Release);
        assert!(!lease.holds(), "a lease given up holds nothing");
    }
}
