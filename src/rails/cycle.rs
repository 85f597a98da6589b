//! Cycle rail: refused when `(origin, target, sha256(objective)[..8])` is
//! already in progress in the same tree, or when the target already stands in
//! the chain of ancestors with the same objective hash. The same request after
//! the first has finished is not a cycle.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::protocol::{AgentSlug, ChainLink, DelegationError, ErrorCode};

pub use super::tree::CycleKey;
use super::tree::Tree;

/// First 8 hex digits of sha256(objective) (seeds/000).
pub fn objective_hash(objective: &str) -> String {
    let digest = Sha256::digest(objective.as_bytes());
    hex::encode(&digest[..4])
}

/// The key stays registered as in progress until the permit drops.
pub struct CyclePermit {
    tree: Arc<Tree>,
    key: CycleKey,
}

/// Checks the chain and the tree, then marks the delegation as in progress.
pub fn acquire(
    tree: &Arc<Tree>,
    origin: &AgentSlug,
    target: &AgentSlug,
    objective_hash: &str,
    chain: &[ChainLink],
) -> Result<CyclePermit, DelegationError> {
    if chain.iter().any(|l| &l.agent == target && l.objective_hash == objective_hash) {
        let path: Vec<&str> = chain.iter().map(|l| l.agent.as_str()).collect();
        return Err(DelegationError::new(
            ErrorCode::CycleDetected,
            format!(
                "Cycle detected: {target} already stands in the chain {} → {target} with the same objective. Return results instead of delegating back.",
                path.join(" → ")
            ),
        ));
    }
    let key = CycleKey { origin: origin.clone(), target: target.clone(), objective_hash: objective_hash.to_string() };
    let mut state = tree.state();
    let n = state.in_progress.entry(key.clone()).or_insert(0);
    if *n > 0 {
        return Err(DelegationError::new(
            ErrorCode::CycleDetected,
            format!("Cycle detected: {origin} → {target} with same objective already in progress."),
        ));
    }
    *n += 1;
    drop(state);
    Ok(CyclePermit { tree: tree.clone(), key })
}

impl Drop for CyclePermit {
    fn drop(&mut self) {
        self.tree.state().in_progress.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RequestId, UserId};
    use crate::rails::Trees;

    fn slug(s: &str) -> AgentSlug {
        AgentSlug::parse(s).unwrap()
    }

    fn tree() -> (Arc<Trees>, Arc<Tree>) {
        let trees = Trees::new();
        let t = trees.enter(&UserId::parse("u").unwrap(), RequestId::new());
        (trees, t)
    }

    #[test]
    fn objective_hash_is_eight_hex_digits_of_sha256() {
        // sha256("extract receipt") begins with these bytes.
        let h = objective_hash("extract receipt");
        assert_eq!(h.len(), 8);
        assert_eq!(h, hex::encode(&Sha256::digest(b"extract receipt")[..4]));
        assert_ne!(h, objective_hash("analyze document"));
    }

    #[test]
    fn the_same_delegation_in_progress_is_refused() {
        let (_t, tree) = tree();
        let h = objective_hash("extract receipt");
        let _first = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[]).unwrap();
        let err = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[]).err().unwrap();
        assert_eq!(err.code, ErrorCode::CycleDetected);
        assert!(err.message.contains("already in progress"));
    }

    #[test]
    fn a_different_objective_is_allowed() {
        let (_t, tree) = tree();
        let _first = acquire(&tree, &slug("prime"), &slug("byte"), &objective_hash("extract receipt"), &[]).unwrap();
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &objective_hash("analyze document"), &[]).is_ok());
    }

    #[test]
    fn the_same_request_after_the_first_finished_is_allowed() {
        let (_t, tree) = tree();
        let h = objective_hash("extract receipt");
        drop(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[]).unwrap());
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[]).is_ok());
    }

    #[test]
    fn a_b_a_with_the_same_objective_is_refused() {
        let (_t, tree) = tree();
        let h = objective_hash("reconcile");
        let chain = vec![
            ChainLink { agent: slug("a"), objective_hash: h.clone() },
            ChainLink { agent: slug("b"), objective_hash: h.clone() },
        ];
        let err = acquire(&tree, &slug("b"), &slug("a"), &h, &chain).err().unwrap();
        assert_eq!(err.code, ErrorCode::CycleDetected);
        assert!(err.message.contains("a → b → a"), "{}", err.message);
        // With another objective, B may ask A.
        assert!(acquire(&tree, &slug("b"), &slug("a"), &objective_hash("other"), &chain).is_ok());
    }
}
