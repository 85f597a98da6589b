//! A delegation in progress ([`Node`]): its lineage, its tree, its
//! cancellation and what its children have done so far. How its agent
//! delegates further is [`super::dispatch`].

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::agent::{Reads, Scope};

use crate::protocol::{AgentSlug, DelegationError, RequestId, TokenUsage};
use crate::rails::Tree;
use crate::runtime::Top;
use crate::util::lock;

/// A delegation in progress, as seen by its children: its lineage
/// ([`Scope`]), the tree it belongs to, its cancellation and what its
/// children have done so far.
pub(crate) struct Node {
    pub scope: Arc<Scope>,
    pub tree: Arc<Tree>,
    pub cancel: CancellationToken,
    /// The tree's top step here, as the fence sees it (shared by the tree's nodes).
    pub top: Arc<Top>,
    /// What finished children (and their subtrees) used.
    children_usage: std::sync::Mutex<TokenUsage>,
    /// Children admitted so far: an attempt that delegated is not repeated.
    children_started: AtomicU32,
    /// Calls made so far: a child's id is its place among them.
    calls: AtomicU32,
    /// This delegation ran before (a restart, an approval): its children's
    /// answers may be in the journal.
    resumed: AtomicBool,
    /// A child (or one below it) waits for a person's approval: what it said.
    waiting: std::sync::Mutex<Option<DelegationError>>,
    /// What its agent read from the store (kept with its step, for replay).
    pub reads: Arc<Reads>,
}

impl Deref for Node {
    type Target = Scope;

    fn deref(&self) -> &Scope {
        &self.scope
    }
}

impl Node {
    pub(crate) fn new(scope: Scope, tree: Arc<Tree>, cancel: CancellationToken, top: Arc<Top>) -> Self {
        Self {
            scope: Arc::new(scope),
            tree,
            cancel,
            top,
            children_usage: Default::default(),
            children_started: Default::default(),
            calls: Default::default(),
            resumed: AtomicBool::new(false),
            waiting: Default::default(),
            reads: Default::default(),
        }
    }

    /// The id of this node's next call to `target` (see `journal::child_id`).
    pub(crate) fn next_child_id(&self, target: &AgentSlug) -> crate::protocol::RequestId {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        child_id(self.request_id, target, n)
    }

    pub(crate) fn mark_resumed(&self) {
        self.resumed.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_resumed(&self) -> bool {
        self.resumed.load(Ordering::Relaxed)
    }

    /// Notes that a child waits for approval; the first one's words are kept.
    pub(crate) fn child_waits(&self, why: DelegationError) {
        lock(&self.waiting).get_or_insert(why);
    }

    /// Why this node waits, when a child does.
    pub(crate) fn waiting(&self) -> Option<DelegationError> {
        lock(&self.waiting).clone()
    }

    pub(crate) fn add_child_usage(&self, usage: TokenUsage) {
        lock(&self.children_usage).add(usage);
    }

    pub(crate) fn children_usage(&self) -> TokenUsage {
        *lock(&self.children_usage)
    }

    pub(crate) fn child_started(&self) {
        self.children_started.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn children_started(&self) -> u32 {
        self.children_started.load(Ordering::Relaxed)
    }

    /// Whether this node's budget account is still open (its delegation runs).
    pub(crate) fn budget_open(&self) -> bool {
        self.tree.state().tokens.account(self.request_id).is_some()
    }

    pub(crate) fn remaining_tokens(&self) -> u32 {
        self.tree.state().tokens.account(self.request_id).map_or(0, |a| a.remaining())
    }
}

/// The id of the `n`-th call (from 0) a delegation makes, to `target`: the
/// same on every run of the parent, so a resumed parent finds its children.
/// Laid out like a time-ordered id: the parent's first 48 bits (its time),
/// then `n`, then a hash, so siblings sort in the order they were made.
fn child_id(parent: RequestId, target: &AgentSlug, n: u32) -> RequestId {
    let digest = Sha256::digest(format!("{parent}\n{target}\n{n}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&parent.0.as_bytes()[..6]);
    let n = u16::try_from(n.min(0x0fff)).unwrap_or(0x0fff);
    bytes[6..8].copy_from_slice(&n.to_be_bytes());
    bytes[8..].copy_from_slice(&digest[..8]);
    // version 8 goes into the high bits of byte 6 (n keeps its low 12 bits)
    RequestId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

#[cfg(test)]
mod tests {
    use crate::auth::Principal;
    use crate::pipeline::admit::admit;
    use crate::pipeline::entry::{Entry, Step};
    use crate::pipeline::testing::{Flaky, request, runtime};
    use crate::protocol::{AgentSlug, ErrorCode, RequestId, TokenUsage};

    #[tokio::test]
    async fn a_node_sums_what_its_children_used_and_started() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let req = request("boss", "worker", "Say it", "hi");
        let step = Step {
            parent: None,
            caller: &Principal::Admin,
            req,
            entry: Entry::Delegation,
            resumed: false,
            end: crate::store::Durability::Now,
        };
        let adm = admit(&rt, step).await.ok().unwrap();
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

    #[test]
    fn a_childs_id_is_its_parents_and_its_place() {
        let parent = RequestId::new();
        // siblings sort in the order they were made
        let ids: Vec<RequestId> =
            (0..20).map(|n| super::child_id(parent, &AgentSlug::parse("a").unwrap(), n)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let tag = AgentSlug::parse("tag-ai").unwrap();
        let byte = AgentSlug::parse("byte-doc").unwrap();
        assert_eq!(super::child_id(parent, &tag, 0), super::child_id(parent, &tag, 0));
        assert_ne!(super::child_id(parent, &tag, 0), super::child_id(parent, &tag, 1));
        assert_ne!(super::child_id(parent, &tag, 0), super::child_id(parent, &byte, 0));
        assert_ne!(super::child_id(parent, &tag, 0), super::child_id(RequestId::new(), &tag, 0));
        assert_eq!(super::child_id(parent, &tag, 0).0.get_version_num(), 8);
    }
}
