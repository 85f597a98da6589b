//! A delegation in progress ([`Node`]): its lineage, its tree, its
//! cancellation and what its children have done so far. How its agent
//! delegates further is [`super::dispatch`].

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio_util::sync::CancellationToken;

use crate::agent::Scope;
use crate::protocol::TokenUsage;
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
}

#[cfg(test)]
mod tests {
    use crate::auth::Principal;
    use crate::pipeline::Entry;
    use crate::pipeline::admit::admit;
    use crate::pipeline::testing::{Flaky, request, runtime};
    use crate::protocol::{ErrorCode, TokenUsage};

    #[tokio::test]
    async fn a_node_sums_what_its_children_used_and_started() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let req = request("boss", "worker", "Say it", "hi");
        let adm = admit(&rt, None, &Principal::Admin, req, Entry::Delegation).await.ok().unwrap();
        let node = &adm.node;
        assert_eq!((node.children_started(), node.children_usage()), (0, TokenUsage::default()));
        node.child_started();
        node.child_started();
        node.add_child_usage(TokenUsage { prompt: 10, completion: 5, total: 15 });
        node.add_child_usage(TokenUsage { prompt: 1, completion: 1, total: 2 });
        assert_eq!(node.children_started(), 2);
        assert_eq!(node.children_usage(), TokenUsage { prompt: 11, completion: 6, total: 17 });
        // the node reads through to its lineage
        assert_eq!((node.depth, node.agent.as_str()), (1, "worker"));
        assert!(node.budget_open());
        assert!(node.remaining_tokens() > 0);
    }
}
