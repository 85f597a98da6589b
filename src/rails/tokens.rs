//! The token accounts of one tree: an account per node, a child's budget
//! reserved from its parent's remaining tokens and reconciled with what it
//! used. Pure bookkeeping; [`super::budget`] applies it to a running tree.

use std::collections::HashMap;

use crate::protocol::{DelegationError, ErrorCode, RequestId};

/// One node's account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Account {
    pub budget: u32,
    /// Tokens used by the node itself and by its finished children.
    pub used: u32,
    /// Budgets granted to children still running.
    pub reserved: u32,
}

impl Account {
    pub(crate) fn remaining(&self) -> u32 {
        self.budget.saturating_sub(self.used).saturating_sub(self.reserved)
    }
}

/// The accounts of one tree, keyed by request id.
#[derive(Debug, Default)]
pub(crate) struct TokenAccounts {
    accounts: HashMap<RequestId, (Option<RequestId>, Account)>,
}

impl TokenAccounts {
    /// Opens an account for `node`: from its parent's remaining tokens when the
    /// parent is known to these accounts, otherwise as a root with `requested`.
    /// The grant is `min(requested, parent's remaining)`; nothing left is a refusal.
    pub(crate) fn open(
        &mut self,
        node: RequestId,
        parent: Option<RequestId>,
        requested: u32,
    ) -> Result<u32, DelegationError> {
        let parent = parent.filter(|p| self.accounts.contains_key(p));
        let grant = match parent.and_then(|p| self.accounts.get_mut(&p)) {
            Some((_, acc)) => {
                let left = acc.remaining();
                if left == 0 {
                    return Err(DelegationError::new(
                        ErrorCode::TokenBudgetExceeded,
                        format!(
                            "The parent has no tokens left of its budget ({}): {} used, {} reserved by running children. Simplify task or increase budget.",
                            acc.budget, acc.used, acc.reserved
                        ),
                    ));
                }
                let grant = requested.min(left);
                acc.reserved += grant;
                grant
            }
            None => requested,
        };
        self.accounts.insert(node, (parent, Account { budget: grant, used: 0, reserved: 0 }));
        Ok(grant)
    }

    /// Records tokens the node itself used.
    pub(crate) fn charge(&mut self, node: RequestId, tokens: u32) {
        if let Some((_, acc)) = self.accounts.get_mut(&node) {
            acc.used = acc.used.saturating_add(tokens);
        }
    }

    /// Closes the node's account: its reservation returns to the parent, which
    /// is charged what the node and its subtree really used. Returns that usage.
    pub(crate) fn close(&mut self, node: RequestId) -> u32 {
        let Some((parent, acc)) = self.accounts.remove(&node) else { return 0 };
        if let Some((_, p)) = parent.and_then(|p| self.accounts.get_mut(&p)) {
            p.reserved = p.reserved.saturating_sub(acc.budget);
            p.used = p.used.saturating_add(acc.used);
        }
        acc.used
    }

    pub(crate) fn account(&self, node: RequestId) -> Option<Account> {
        self.accounts.get(&node).map(|(_, a)| *a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_child_gets_at_most_the_parents_remaining_and_returns_it() {
        let mut l = TokenAccounts::default();
        let (root, a, b) = (RequestId::new(), RequestId::new(), RequestId::new());
        assert_eq!(l.open(root, None, 1000).unwrap(), 1000);
        assert_eq!(l.open(a, Some(root), 700).unwrap(), 700);
        assert_eq!(l.open(b, Some(root), 700).unwrap(), 300, "only 300 left");
        assert_eq!(l.open(RequestId::new(), Some(root), 1).unwrap_err().code, ErrorCode::TokenBudgetExceeded);
        l.charge(a, 120);
        assert_eq!(l.close(a), 120);
        // a's 700 came back, less the 120 it used.
        assert_eq!(l.account(root).unwrap().remaining(), 1000 - 120 - 300);
    }

    /// A random tree operation: open a child under the n-th live node, charge a
    /// node, or close a leaf.
    #[derive(Debug, Clone)]
    enum Op {
        Open { parent: usize, want: u32 },
        Charge { node: usize, tokens: u32 },
        Close { node: usize },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<usize>(), 1u32..2_000).prop_map(|(parent, want)| Op::Open { parent, want }),
            (any::<usize>(), 0u32..300).prop_map(|(node, tokens)| Op::Charge { node, tokens }),
            any::<usize>().prop_map(|node| Op::Close { node }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn childrens_reservations_never_exceed_the_parents_remaining(root_budget in 1u32..10_000, ops in prop::collection::vec(op(), 1..200)) {
            let mut l = TokenAccounts::default();
            let root = RequestId::new();
            l.open(root, None, root_budget).unwrap();
            // live nodes with their parent and the children they have open
            let mut live: Vec<(RequestId, Option<RequestId>)> = vec![(root, None)];
            for op in ops {
                match op {
                    Op::Open { parent, want } => {
                        let (p, _) = live[parent % live.len()];
                        let before = l.account(p).unwrap();
                        let child = RequestId::new();
                        match l.open(child, Some(p), want) {
                            Ok(grant) => {
                                prop_assert!(grant <= before.remaining());
                                prop_assert!(grant <= want);
                                live.push((child, Some(p)));
                            }
                            Err(e) => {
                                prop_assert_eq!(e.code, ErrorCode::TokenBudgetExceeded);
                                prop_assert_eq!(before.remaining(), 0);
                            }
                        }
                    }
                    Op::Charge { node, tokens } => {
                        let (n, _) = live[node % live.len()];
                        // a node never charges more than it has left (the runtime caps completions)
                        let left = l.account(n).unwrap().remaining();
                        l.charge(n, tokens.min(left));
                    }
                    Op::Close { node } => {
                        let idx = node % live.len();
                        let (n, _) = live[idx];
                        let has_children = live.iter().any(|(_, p)| *p == Some(n));
                        if idx != 0 && !has_children {
                            l.close(n);
                            live.remove(idx);
                        }
                    }
                }
                // invariant: for every live node, children's reservations + usage fit its budget
                for (n, _) in &live {
                    let acc = l.account(*n).unwrap();
                    prop_assert!(acc.used + acc.reserved <= acc.budget, "{acc:?}");
                    let children: u32 = live.iter().filter(|(_, p)| *p == Some(*n)).map(|(c, _)| l.account(*c).unwrap().budget).sum();
                    prop_assert_eq!(children, acc.reserved);
                }
            }
        }
    }
}
