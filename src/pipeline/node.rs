//! A delegation in progress ([`Node`]) and how its agent delegates further:
//! [`NodeDispatch`] implements the agent layer's `Dispatch` by sending each
//! nested call back into the pipeline as this node's child.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Entry, Runtime};
use crate::agent::{AgentContext, Delegator, Dispatch, Scope};
use crate::auth::Principal;
use crate::protocol::{AgentSlug, DelegationError, DelegationRequest, DelegationResponse, TokenUsage};
use crate::rails::Tree;
use crate::util::lock;

/// A delegation in progress, as seen by its children: its lineage
/// ([`Scope`]), the tree it belongs to, its cancellation and what its
/// children have done so far.
pub(crate) struct Node {
    pub scope: Arc<Scope>,
    pub tree: Arc<Tree>,
    pub cancel: CancellationToken,
    /// What finished children (and their subtrees) used.
    children_usage: std::sync::Mutex<TokenUsage>,
    /// Children admitted so far: an attempt that delegated is not repeated.
    children_started: AtomicU32,
}

impl Deref for Node {
    type Target = Scope;

    fn deref(&self) -> &Scope {
        &self.scope
    }
}

impl Node {
    pub fn new(scope: Scope, tree: Arc<Tree>, cancel: CancellationToken) -> Self {
        Self {
            scope: Arc::new(scope),
            tree,
            cancel,
            children_usage: Default::default(),
            children_started: Default::default(),
        }
    }

    pub fn add_child_usage(&self, usage: TokenUsage) {
        lock(&self.children_usage).add(usage);
    }

    pub fn children_usage(&self) -> TokenUsage {
        *lock(&self.children_usage)
    }

    pub fn child_started(&self) {
        self.children_started.fetch_add(1, Ordering::Relaxed);
    }

    pub fn children_started(&self) -> u32 {
        self.children_started.load(Ordering::Relaxed)
    }

    /// Whether this node's budget account is still open (its delegation runs).
    pub fn budget_open(&self) -> bool {
        self.tree.state().ledger.account(self.request_id).is_some()
    }

    pub fn remaining_tokens(&self) -> u32 {
        self.tree.state().ledger.account(self.request_id).map_or(0, |a| a.remaining())
    }

    /// The context one attempt of this node's agent runs with: its delegator,
    /// its effective tools, a cancellation that ends with the attempt, its deadline.
    pub fn context(self: &Arc<Self>, runtime: &Runtime, cancel: CancellationToken) -> AgentContext {
        let dispatch = Arc::new(NodeDispatch { runtime: runtime.clone(), node: self.clone() });
        AgentContext::new(
            Some(Delegator::new(self.scope.clone(), dispatch)),
            self.tools.clone(),
            cancel,
            self.deadline,
            self.depth,
        )
    }
}

/// The pipeline, as the agent of one node sees it.
struct NodeDispatch {
    runtime: Runtime,
    node: Arc<Node>,
}

#[async_trait]
impl Dispatch for NodeDispatch {
    async fn dispatch(&self, request: DelegationRequest) -> DelegationResponse {
        let caller = Principal::Agent(self.node.agent.clone());
        self.runtime.dispatch(Some(&self.node), &caller, request, Entry::Delegation).await
    }

    async fn record_denied(&self, what: &str, error: &DelegationError) {
        super::record::denied(&self.runtime, &self.node, what, error).await;
    }

    fn remaining_tokens(&self) -> u32 {
        self.node.remaining_tokens()
    }

    fn may_delegate_to(&self, target: &AgentSlug) -> bool {
        let reg = self.runtime.registry();
        reg.get(&self.node.agent).is_some_and(|m| m.spec.may_delegate_to(target)) && reg.get(target).is_some()
    }
}
