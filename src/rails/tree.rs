//! Per-tree shared state: what is in progress (cycle rail), children in flight
//! per parent (fan-out rail), the token accounts (budget rail) and the PII vault.
//! A tree lives while any of its delegations runs; trees are keyed by user and
//! root request id, so one user's requests can never touch another's tree.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};

use crate::protocol::{AgentSlug, RequestId, UserId};
use crate::redact::Vault;
use crate::util::lock;

use super::tokens::TokenAccounts;
use super::vaults::SharedVault;

type TreeKey = (UserId, RequestId);

/// A hop in progress in a tree (origin, target, objective): the cycle rail's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CycleKey {
    pub origin: AgentSlug,
    pub target: AgentSlug,
    pub objective_hash: String,
}

/// Who enters a tree: a member (a node's child in this process, or a hop
/// whose lineage token proves the tree), or a caller whose word is all
/// there is, by its principal's `kind:subject`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Entering<'a> {
    /// Membership is proven.
    Member,
    /// Only this caller's word: it may join a live tree only if it started it.
    Caller(&'a str),
}

/// All live trees.
#[derive(Default)]
pub(crate) struct Trees {
    live: Mutex<HashMap<TreeKey, Weak<Tree>>>,
}

/// The shared state of one delegation tree.
pub(crate) struct Tree {
    key: TreeKey,
    /// Who started it here (a principal's `kind:subject`): only they may
    /// add to it without proof of membership (a parent node, a lineage token).
    author: String,
    owner: Weak<Trees>,
    state: Mutex<TreeState>,
    vault: SharedVault,
    /// The tree's clock reading (epoch ms): when its root started. A resumed
    /// or replayed tree keeps its first reading, so "today" stays its day.
    clock: std::sync::OnceLock<i64>,
}

#[derive(Default)]
pub(crate) struct TreeState {
    /// Hops running in this tree: how many copies, and the idempotency key
    /// the first was sent under (a resend under it is that send again).
    pub in_progress: HashMap<CycleKey, (u32, Option<String>)>,
    /// Hops that ran and finished in this tree, with the idempotency key they
    /// ran under: the same hop again is a cycle unless it says it repeats one.
    pub finished: HashMap<CycleKey, Option<String>>,
    pub children: HashMap<RequestId, u32>,
    pub tokens: TokenAccounts,
}

impl Trees {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    #[cfg(test)]
    /// The live tree of `root` for `user`, or a new one with a vault of its own.
    pub(crate) fn enter(self: &Arc<Self>, user: &UserId, root: RequestId) -> Arc<Tree> {
        self.enter_with(user, root, None, Entering::Member).unwrap_or_else(|live| live)
    }

    /// [`Trees::enter`]; a new tree takes `vault` (its conversation's) when
    /// one is given. A live tree keeps the vault it has. A live tree that
    /// `entering` may not join (its author is another caller, and nothing
    /// proves membership) is the `Err`, untouched.
    pub(crate) fn enter_with(
        self: &Arc<Self>,
        user: &UserId,
        root: RequestId,
        vault: Option<SharedVault>,
        entering: Entering<'_>,
    ) -> Result<Arc<Tree>, Arc<Tree>> {
        let key = (user.clone(), root);
        let mut live = lock(&self.live);
        if let Some(tree) = live.get(&key).and_then(Weak::upgrade) {
            return match entering {
                Entering::Caller(author) if author != tree.author => Err(tree),
                _ => Ok(tree),
            };
        }
        let author = match entering {
            Entering::Caller(author) => author.to_string(),
            Entering::Member => String::new(),
        };
        let tree = Arc::new(Tree {
            key: key.clone(),
            author,
            owner: Arc::downgrade(self),
            state: Mutex::new(TreeState::default()),
            vault: vault.unwrap_or_default(),
            clock: std::sync::OnceLock::new(),
        });
        live.insert(key, Arc::downgrade(&tree));
        Ok(tree)
    }

    /// How many trees are live (for tests and metrics).
    pub(crate) fn len(&self) -> usize {
        lock(&self.live).len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Tree {
    pub(crate) fn state(&self) -> MutexGuard<'_, TreeState> {
        lock(&self.state)
    }

    /// Sets the tree's clock reading, once (later calls keep the first).
    pub(crate) fn pin_clock(&self, epoch_ms: i64) {
        let _ = self.clock.set(epoch_ms);
    }

    /// The tree's clock reading, once pinned.
    pub(crate) fn clock_ms(&self) -> Option<i64> {
        self.clock.get().copied()
    }

    /// The tree's PII vault: the same value gets the same token in every hop.
    pub(crate) fn vault(&self) -> MutexGuard<'_, Vault> {
        lock(&self.vault)
    }

    /// The tree's PII vault, unless something holds it now (a redaction of
    /// a large input the tree gave up on at its deadline runs on, holding it).
    pub(crate) fn try_vault(&self) -> Option<MutexGuard<'_, Vault>> {
        match self.vault.try_lock() {
            Ok(vault) => Some(vault),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The vault itself, to keep as its conversation's.
    pub(crate) fn shared_vault(&self) -> &SharedVault {
        &self.vault
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("user", &self.key.0)
            .field("root", &self.key.1)
            .field("author", &self.author)
            .finish()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(trees) = self.owner.upgrade() {
            let mut live = lock(&trees.live);
            // A new tree for the same key may have replaced this one already.
            if live.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
                live.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_lives_while_it_is_held_and_is_shared_by_key() {
        let trees = Trees::new();
        let user = UserId::parse("u1").unwrap();
        let root = RequestId::new();
        let a = trees.enter(&user, root);
        let b = trees.enter(&user, root);
        assert!(Arc::ptr_eq(&a, &b));
        let other_user = trees.enter(&UserId::parse("u2").unwrap(), root);
        assert!(!Arc::ptr_eq(&a, &other_user), "another user's request never joins the tree");
        drop(other_user);
        assert_eq!(trees.len(), 1);
        drop(a);
        drop(b);
        assert!(trees.is_empty());
    }

    #[test]
    fn a_caller_joins_a_live_tree_only_if_it_started_it_or_proves_membership() {
        let trees = Trees::new();
        let user = UserId::parse("u1").unwrap();
        let root = RequestId::new();
        let mine = trees.enter_with(&user, root, None, Entering::Caller("user:u1")).unwrap();
        assert!(Arc::ptr_eq(&mine, &trees.enter_with(&user, root, None, Entering::Caller("user:u1")).unwrap()));
        let refused = trees.enter_with(&user, root, None, Entering::Caller("service:gateway")).unwrap_err();
        assert!(Arc::ptr_eq(&mine, &refused), "the live tree is named, not replaced");
        assert!(trees.enter_with(&user, root, None, Entering::Member).is_ok(), "a proven member joins");
        drop((mine, refused));
        // once it ended, the id is a new tree's (the store decides whether it may be written)
        assert!(trees.enter_with(&user, root, None, Entering::Caller("service:gateway")).is_ok());
    }
}
