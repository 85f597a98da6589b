//! This runtime as one replica among several on one store (docs/SCALE.md).
//! A runtime on a shared store (an SQLite file, PostgreSQL) holds a lease
//! in the store from its first tree on and renews it four times per lease
//! period; the steps it writes name it as their owner. Another replica
//! takes a tree over only once its owner is dead: its lease ran out, or it
//! was a process on the same host (same pid namespace) that is gone, or a
//! runtime of this very process that was dropped. A cancellation written
//! by another replica reaches the tree here at the next renewal.
//!
//! The fence: a replica writes its trees without asking the store only
//! while its lease is surely its own (three quarters of a period after the
//! last renewal it sent, by its own clock). Past that (the process was
//! paused, or cut off from the store) it renews first, and if the lease had
//! run out meanwhile it reads each tree's top step before the tree's next
//! write: a tree another replica took over stops here, `TAKEN_OVER`, and
//! nothing more of it is written. The store backs it: a take needs the
//! owner's lease out in the same statement, and a top step's former owner
//! cannot write over the taker's (`store::journal::STEP_UPSERT`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::lease::{LIVE, host_name, pid_runs};
use super::runtime::Runtime;
use crate::protocol::{DelegationError, ErrorCode, RequestId};
use crate::store::{Replica, TreeStep, now_ms};
use crate::telemetry::metrics::TakenOver;
use crate::util::lock;

/// The top step of a tree running here, as the fence sees it: one per
/// tree, shared by its nodes in this process.
pub(crate) struct Top {
    id: RequestId,
    /// The lease's lapse count when the tree was last found this replica's.
    checked: AtomicU64,
    /// The replica that took the tree over, once found.
    taken: OnceLock<String>,
    /// The top node's token: a tree taken over stops here.
    cancel: CancellationToken,
}

impl Top {
    /// The tree whose top step is `id` here, started now (its node's token `cancel`).
    pub(crate) fn new(rt: &Runtime, id: RequestId, cancel: CancellationToken) -> Arc<Self> {
        Arc::new(Self { id, checked: AtomicU64::new(rt.inner.lease.lapses()), taken: OnceLock::new(), cancel })
    }

    /// Whether another replica took the tree over (as found so far).
    pub(crate) fn is_taken(&self) -> bool {
        self.taken.get().is_some()
    }
}

fn taken_over(id: RequestId, by: &str) -> DelegationError {
    DelegationError::new(
        ErrorCode::TakenOver,
        format!(
            "replica {by} took tree {id} over while this replica's lease was out (paused, or cut off from the \
             store); its answer is that replica's: read GET /v1/trees/{id}"
        ),
    )
}

/// Which replicas are alive, as one replica sees them.
pub(crate) struct Census {
    me: String,
    host: String,
    period: i64,
    now: i64,
    replicas: HashMap<String, Replica>,
}

impl Census {
    pub(crate) async fn take(rt: &Runtime) -> Result<Self, crate::store::StoreError> {
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
    pub(crate) fn dead(&self, id: &str) -> bool {
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
    pub(crate) fn orphaned(&self, step: &TreeStep) -> bool {
        step.owner.is_none() || self.gone(step.owner.as_deref(), step.updated_at)
    }

    /// Whether the owner of something it last wrote at `written_at` (epoch
    /// ms) is gone: dead as [`Census::dead`] says, a dropped runtime of this
    /// process, or one that never took a lease and has not written for a
    /// lease period (as has no owner at all).
    pub(crate) fn gone(&self, owner: Option<&str>, written_at: i64) -> bool {
        match owner {
            Some(o) if o == self.me || lock(&LIVE).contains(o) => false,
            Some(o) if self.replicas.contains_key(o) => self.dead(o),
            // a dropped runtime of this process that never renewed its lease
            Some(o) if o.starts_with(&format!("{}/{}/", host_name(&self.host), std::process::id())) => true,
            _ => written_at.saturating_add(self.period) < self.now,
        }
    }

    /// Replica `id`'s lease as a take must first write it, ended: when
    /// `id` is dead for sure (a process of this host that is gone, a
    /// runtime of this process that was dropped) while its lease still runs.
    /// A take needs the owner's lease out in the store.
    pub(crate) fn to_end(&self, id: &str) -> Option<Replica> {
        let r = self.replicas.get(id)?;
        (!r.dead_at(self.now) && self.dead(id)).then(|| Replica { alive_until: 0, ..r.clone() })
    }

    /// The dead replicas on record.
    pub(crate) fn dead_ones(&self) -> Vec<String> {
        self.replicas.keys().filter(|id| self.dead(id)).cloned().collect()
    }
}

/// Starts this runtime's lease (once, on a shared store): renewed four
/// times per period by a task that ends with the runtime. Whether this call started it.
pub(crate) fn hold(rt: &Runtime) -> bool {
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

    /// Renews the lease (one renewal at a time; when `if_out`, only if it
    /// does not hold now: another renewal may have just been written);
    /// whether it holds after.
    async fn renew_lease(&self, if_out: bool) -> bool {
        let lease = &self.inner.lease;
        let _one = lease.renewing.lock().await;
        if lease.released.load(Ordering::Acquire) {
            return false;
        }
        if if_out && lease.holds() {
            return true;
        }
        let sent = lease.clock();
        let lapses = lease.lapses();
        if !self.beat(&lease.record(), "renewed").await {
            return false;
        }
        lease.renewed(sent);
        if lease.lapses() != lapses {
            tracing::warn!(
                replica = %lease.id,
                "this replica's lease ran out before it was renewed (paused, or cut off from the store): \
                 each running tree is checked against the store before its next write"
            );
        }
        true
    }

    /// Renews an out lease, twice at most: a renewal so slow that the
    /// lease it wrote is out again by the time it is written does not
    /// count. Whether the lease holds.
    async fn hold_again(&self) -> bool {
        for _ in 0..2 {
            if self.renew_lease(true).await && self.inner.lease.holds() {
                return true;
            }
        }
        false
    }

    /// The fence, before a write of the tree under `top`: Ok while the tree
    /// is this replica's. `TAKEN_OVER` once another replica took it over
    /// (the tree is cancelled here, and counted); the store's error when the
    /// lease is out and cannot be renewed.
    pub(crate) async fn fence(&self, top: &Top) -> Result<(), DelegationError> {
        let lease = &self.inner.lease;
        if !lease.started.load(Ordering::Acquire) {
            return Ok(()); // no lease, no other replica: a store of this process alone
        }
        if let Some(by) = top.taken.get() {
            return Err(taken_over(top.id, by));
        }
        if lease.holds() && top.checked.load(Ordering::Acquire) == lease.lapses() {
            return Ok(());
        }
        if !lease.holds() && !self.hold_again().await {
            let why = if lease.released.load(Ordering::Acquire) {
                "this replica gave its lease up (it is stopping): its trees are another replica's to finish"
            } else {
                "this replica's lease ran out and could not be renewed (the store did not answer)"
            };
            return Err(DelegationError::new(ErrorCode::AgentUnavailable, why));
        }
        let lapses = lease.lapses();
        if top.checked.load(Ordering::Acquire) == lapses {
            return Ok(());
        }
        let step = self.inner.store.step(top.id).await?;
        match step.and_then(|s| s.owner).filter(|o| *o != lease.id) {
            Some(by) => {
                if top.taken.set(by.clone()).is_ok() {
                    top.cancel.cancel();
                    self.inner.metrics.taken_over(TakenOver::LostTree, 1);
                    tracing::warn!(request_id = %top.id, taken_by = %by, "tree taken over by another replica; stopped here");
                }
                Err(taken_over(top.id, &by))
            }
            None => {
                top.checked.store(lapses, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Renews the lease, then cancels here what another replica cancelled in the store.
    async fn renew(&self) {
        if !self.renew_lease(false).await {
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
    pub(crate) async fn announce(&self) {
        if hold(self) {
            self.renew_lease(false).await;
        }
    }
}
