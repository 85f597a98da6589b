//! Token budget rail: one set of token accounts per tree. A child's budget is reserved from
//! its parent's remaining tokens before the call, and reconciled with the
//! reported usage after it, so the budgets of a node's children together never
//! exceed what the node has left. The estimate of each call must fit the
//! delegation's budget before anything is sent.

use std::sync::Arc;

use crate::protocol::{DelegationError, ErrorCode, RequestId};

use super::tree::Tree;

/// Refuses an estimate that does not fit the budget.
pub(crate) fn check_estimate(estimated: u32, budget: u32) -> Result<(), DelegationError> {
    if estimated > budget {
        return Err(DelegationError::new(
            ErrorCode::TokenBudgetExceeded,
            format!("Estimated tokens ({estimated}) exceeds budget ({budget}). Simplify task or increase budget."),
        ));
    }
    Ok(())
}

/// A node's account in its tree's token accounts, closed (and reconciled) on drop.
pub(crate) struct BudgetAccount {
    tree: Arc<Tree>,
    node: RequestId,
    grant: u32,
}

impl BudgetAccount {
    pub(crate) fn open(
        tree: &Arc<Tree>,
        node: RequestId,
        parent: Option<RequestId>,
        requested: u32,
    ) -> Result<Self, DelegationError> {
        let grant = tree.state().tokens.open(node, parent, requested)?;
        Ok(Self { tree: tree.clone(), node, grant })
    }

    pub(crate) fn grant(&self) -> u32 {
        self.grant
    }

    pub(crate) fn charge(&self, tokens: u32) {
        self.tree.state().tokens.charge(self.node, tokens);
    }

    /// Tokens still available to this node and its future children.
    pub(crate) fn remaining(&self) -> u32 {
        self.tree.state().tokens.account(self.node).map_or(0, |a| a.remaining())
    }
}

impl Drop for BudgetAccount {
    fn drop(&mut self) {
        self.tree.state().tokens.close(self.node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_over_the_budget_is_refused() {
        assert!(check_estimate(1200, 1200).is_ok());
        let err = check_estimate(1201, 1200).unwrap_err();
        assert_eq!(err.code, ErrorCode::TokenBudgetExceeded);
        assert!(err.message.contains("Estimated tokens (1201) exceeds budget (1200)"));
    }
}
