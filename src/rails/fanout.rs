//! Fan-out rail: a parallel batch larger than the limit is refused before any
//! call is sent, and no parent has more than the limit of children in flight.

use std::sync::Arc;

use crate::protocol::{DelegationError, ErrorCode, RequestId};

use super::tree::Tree;

fn refusal(count: usize, limit: u32) -> DelegationError {
    DelegationError::new(
        ErrorCode::FanOutLimit,
        format!("Too many concurrent delegates ({count}/{limit}). Choose top {limit} most relevant employees."),
    )
}

/// Checks the size of a parallel batch before anything is sent.
pub(crate) fn check_batch(size: usize, limit: u32) -> Result<(), DelegationError> {
    if size > limit as usize { Err(refusal(size, limit)) } else { Ok(()) }
}

/// One child in flight under `parent`; released on drop.
pub(crate) struct FanOutPermit {
    tree: Arc<Tree>,
    parent: RequestId,
}

/// Takes a place among `parent`'s children in flight, or refuses.
pub(crate) fn acquire(tree: &Arc<Tree>, parent: RequestId, limit: u32) -> Result<FanOutPermit, DelegationError> {
    let mut state = tree.state();
    let in_flight = state.children.entry(parent).or_insert(0);
    if *in_flight >= limit {
        return Err(refusal(*in_flight as usize + 1, limit));
    }
    *in_flight += 1;
    Ok(FanOutPermit { tree: tree.clone(), parent })
}

impl Drop for FanOutPermit {
    fn drop(&mut self) {
        let mut state = self.tree.state();
        if let Some(n) = state.children.get_mut(&self.parent) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.children.remove(&self.parent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UserId;
    use crate::rails::Trees;

    #[test]
    fn a_batch_of_four_is_refused_and_three_is_allowed() {
        assert!(check_batch(3, 3).is_ok());
        let err = check_batch(4, 3).unwrap_err();
        assert_eq!(err.code, ErrorCode::FanOutLimit);
        assert!(err.message.contains("(4/3)"), "{}", err.message);
    }

    #[test]
    fn a_fourth_concurrent_child_is_refused_until_one_finishes() {
        let trees = Trees::new();
        let tree = trees.enter(&UserId::parse("u").unwrap(), RequestId::new());
        let parent = RequestId::new();
        let permits: Vec<_> = (0..3).map(|_| acquire(&tree, parent, 3).unwrap()).collect();
        assert_eq!(acquire(&tree, parent, 3).err().unwrap().code, ErrorCode::FanOutLimit);
        // Another parent in the same tree has its own allowance.
        assert!(acquire(&tree, RequestId::new(), 3).is_ok());
        drop(permits);
        assert!(acquire(&tree, parent, 3).is_ok());
    }
}
