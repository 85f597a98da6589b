//! The [`Runtime`]: what a running Switchboard holds (configuration, team,
//! store, live trees, breakers, redactor, events, metrics) and what callers
//! may ask of it without running a delegation; the service every other one
//! here and every stage of the pipeline stands on.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::lease::Lease;
use super::registry::{Member, Registry};
use super::tree_view::TreeView;
use crate::config::Config;
use crate::protocol::{AgentSlug, DelegationError, RequestId};
use crate::rails::{SessionVaults, Trees};
use crate::redact::Redactor;
use crate::resilience::{BreakerState, Breakers};
use crate::route::DomainTable;
use crate::store::Store;
use crate::telemetry::{Event, Events, Metrics};
use crate::util::lock;

/// The delegation runtime. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

/// What a runtime's clones share (the stages read it as `rt.inner`).
pub(crate) struct Inner {
    pub config: Config,
    pub registry: Registry,
    pub domains: DomainTable,
    pub store: Arc<dyn Store>,
    pub trees: Arc<Trees>,
    /// Each conversation's PII vault, by (user, session).
    pub vaults: SessionVaults,
    /// What seals a tree's vault in the journal.
    pub seal: crate::redact::SealKey,
    /// Vaults opened from the journal for top steps about to resume, by
    /// request id (taken when the step is admitted again).
    pub resumed_vaults: std::sync::Mutex<HashMap<RequestId, crate::rails::SharedVault>>,
    /// Waiting trees a person's decision took for this replica, not resumed yet (`Runtime::decide`).
    pub decided: std::sync::Mutex<std::collections::HashSet<RequestId>>,
    pub breakers: Breakers,
    pub redactor: Redactor,
    pub events: Events,
    pub metrics: Metrics,
    /// Running delegations' cancellation, by request id.
    pub running: std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
    /// This runtime's lineage keys and trusted peers.
    pub lineage: crate::lineage::Authority,
    /// Whether nodes keep their lineage: some agent sends to another runtime.
    pub keeps_lineage: bool,
    /// This runtime's lease among the replicas on its store.
    pub lease: Lease,
}

impl Runtime {
    /// The configuration this runtime runs.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Learns the built-in Prime's router now, on a blocking thread (off the
    /// async runtime's), instead of when its first message is planned: a few
    /// hundred milliseconds in a release build, seconds in a debug one, which
    /// the first request would otherwise spend inside its own deadline. Await
    /// it before the first request, as `switchboard serve` does before it
    /// listens. A learning that fails leaves the router to be learned on
    /// first use.
    pub async fn learn_routers(&self) {
        let runtime = self.clone();
        let _ = tokio::task::spawn_blocking(move || super::learn_routers(&runtime.inner.config)).await;
    }

    /// The team: every member's spec and implementation.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Where sessions, memory, trees and the audit log are kept.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Live events of every delegation (started, attempt, retry, finished).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// The circuit breaker state of an agent.
    pub fn breaker_state(&self, slug: &AgentSlug) -> BreakerState {
        self.inner.breakers.state(slug)
    }

    /// The team as the surfaces show it (`GET /v1/agents`, `switchboard
    /// agents`, MCP's `list_agents`): each member's declared spec and its
    /// breaker state, in the registry's order, with the member itself.
    pub fn team_summary(&self) -> Vec<(&Member, serde_json::Value)> {
        self.registry()
            .members()
            .map(|m| {
                let s = &m.spec;
                let summary = serde_json::json!({
                    "slug": s.slug, "name": s.name, "description": s.description, "backend": s.backend,
                    "capabilities": s.capabilities, "domain": s.domain, "tools_allowed": s.tools_allowed,
                    "may_delegate_to": s.may_delegate_to, "breaker": self.breaker_state(&s.slug).as_str(),
                });
                (m, summary)
            })
            .collect()
    }

    /// The state of `user`'s own breaker for an agent: open when their own
    /// requests kept failing (other users are not affected).
    pub fn user_breaker_state(&self, slug: &AgentSlug, user: &crate::protocol::UserId) -> BreakerState {
        self.inner.breakers.user_state(slug, user)
    }

    /// Cancels a running delegation and, through its children's tokens,
    /// everything it delegated. False when no such delegation runs here.
    pub fn cancel(&self, request: RequestId) -> bool {
        let token = lock(&self.inner.running).get(&request).cloned();
        token.map(|t| t.cancel()).is_some()
    }

    /// The Prometheus text exposition of this runtime's metrics.
    pub fn metrics_text(&self) -> String {
        self.inner.metrics.render(&self.inner.breakers)
    }

    /// Trees with delegations still running (zero when the runtime is idle).
    pub fn live_trees(&self) -> usize {
        self.inner.trees.len()
    }

    /// `value` as the store writes it: every text through the redactor. The
    /// pipeline redacted what a delegation carries already, with its tree's
    /// vault (so that the user gets the values back); this pass finds what
    /// a path did not, and gives it tokens of a vault of its own, which
    /// nothing restores: what the store keeps is never the raw value.
    pub(crate) fn for_store<T: crate::redact::Texts>(&self, value: T) -> crate::redact::Redacted<T> {
        self.inner.redactor.redacted(value, &mut crate::redact::Vault::new())
    }

    /// The runtime's redactor: the texts it has made or found clean are
    /// known to every clone (`redact/seen.rs`), so a text written again
    /// (an A2A task's next version, its events) is not scanned again.
    #[cfg(feature = "a2a")]
    pub(crate) fn redactor(&self) -> &crate::redact::Redactor {
        &self.inner.redactor
    }

    /// The key that seals what the store keeps encrypted (trees' vaults,
    /// A2A tasks' vaults, push configs).
    #[cfg(feature = "a2a")]
    pub(crate) fn seal_key(&self) -> &crate::redact::SealKey {
        &self.inner.seal
    }

    /// This runtime's lineage keys and the peers it trusts.
    pub fn lineage(&self) -> &crate::lineage::Authority {
        &self.inner.lineage
    }

    /// The stored tree of a delegation.
    pub async fn tree(&self, request: RequestId) -> Result<Option<TreeView>, DelegationError> {
        let records = self.inner.store.delegation_tree(request).await?;
        Ok(TreeView::from_records(&records))
    }
}

/// A running delegation's entry in the cancel registry, removed on drop.
pub(crate) struct Cancellable<'a> {
    map: &'a std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
    id: RequestId,
}

impl<'a> Cancellable<'a> {
    pub(crate) fn register(runtime: &'a Runtime, id: RequestId, token: CancellationToken) -> Self {
        let map = &runtime.inner.running;
        lock(map).insert(id, token);
        Self { map, id }
    }
}

impl Drop for Cancellable<'_> {
    fn drop(&mut self) {
        lock(self.map).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_a_delegation_only_while_it_is_registered() {
        let rt = Runtime::embedded();
        let (id, token) = (RequestId::new(), CancellationToken::new());
        let entry = Cancellable::register(&rt, id, token.clone());
        assert!(!rt.cancel(RequestId::new()), "an unknown id cancels nothing");
        assert!(!token.is_cancelled());
        assert!(rt.cancel(id));
        assert!(token.is_cancelled());
        drop(entry);
        assert!(!rt.cancel(id), "finished: no longer cancellable");
    }
}
