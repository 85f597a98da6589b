//! Cycle rail (docs/RAILS.md#cycle): refused when `(origin, target,
//! sha256(objective)[..8])` is already in progress in the same tree or has
//! already run in it, or when the target already stands in the chain of
//! ancestors with the same objective hash. A deliberate repeat of a finished
//! hop is not a cycle: it names the earlier request (`retry_of`), or carries
//! the idempotency key the earlier one ran under (a retried send). A send
//! repeated under the key of one still in progress (its answer was lost on
//! the way back, so the caller's retry arrives while the first runs) passes
//! too: the idempotency rail then waits for the first one's answer.

use std::sync::Arc;

use crate::protocol::{AgentSlug, ChainLink, DelegationError, ErrorCode};

pub(crate) use super::tree::CycleKey;
use super::tree::Tree;

pub(crate) use crate::protocol::request::objective_hash;

/// The key stays registered as in progress until the permit drops; then it
/// is remembered as finished in the tree.
pub(crate) struct CyclePermit {
    tree: Arc<Tree>,
    key: CycleKey,
    idempotency_key: Option<String>,
}

/// How a delegation says it repeats an earlier one on purpose.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Repeat<'a> {
    /// It names the earlier request it retries.
    pub retry_of: bool,
    /// The idempotency key it is sent under, if any.
    pub idempotency_key: Option<&'a str>,
}

/// Checks the chain and the tree, then marks the delegation as in progress.
pub(crate) fn acquire(
    tree: &Arc<Tree>,
    origin: &AgentSlug,
    target: &AgentSlug,
    objective_hash: &str,
    chain: &[ChainLink],
    repeat: Repeat<'_>,
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
    let resend =
        |running: &Option<String>| repeat.idempotency_key.is_some() && running.as_deref() == repeat.idempotency_key;
    if state.in_progress.get(&key).is_some_and(|(n, running)| *n > 0 && !resend(running)) {
        return Err(DelegationError::new(
            ErrorCode::CycleDetected,
            format!("Cycle detected: {origin} → {target} with same objective already in progress."),
        ));
    }
    if let Some(first_key) = state.finished.get(&key) {
        let same_key = repeat.idempotency_key.is_some() && first_key.as_deref() == repeat.idempotency_key;
        if !repeat.retry_of && !same_key {
            return Err(DelegationError::new(
                ErrorCode::CycleDetected,
                format!(
                    "Cycle detected: {origin} → {target} with the same objective already ran in this tree. \
                     Use its result; to run it again on purpose, send retry_of naming the first request."
                ),
            ));
        }
    }
    let running =
        state.in_progress.entry(key.clone()).or_insert_with(|| (0, repeat.idempotency_key.map(str::to_string)));
    running.0 += 1;
    drop(state);
    Ok(CyclePermit { tree: tree.clone(), key, idempotency_key: repeat.idempotency_key.map(str::to_string) })
}

impl Drop for CyclePermit {
    fn drop(&mut self) {
        let mut state = self.tree.state();
        if let Some(running) = state.in_progress.get_mut(&self.key) {
            running.0 = running.0.saturating_sub(1);
            if running.0 > 0 {
                return;
            }
            state.in_progress.remove(&self.key);
        }
        state.finished.entry(self.key.clone()).or_insert_with(|| self.idempotency_key.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RequestId, UserId};
    use crate::rails::Trees;
    use sha2::{Digest, Sha256};

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
        let _first = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], Repeat::default()).unwrap();
        let err = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], Repeat::default()).err().unwrap();
        assert_eq!(err.code, ErrorCode::CycleDetected);
        assert!(err.message.contains("already in progress"));
    }

    #[test]
    fn a_different_objective_is_allowed() {
        let (_t, tree) = tree();
        let _first =
            acquire(&tree, &slug("prime"), &slug("byte"), &objective_hash("extract receipt"), &[], Repeat::default())
                .unwrap();
        assert!(
            acquire(&tree, &slug("prime"), &slug("byte"), &objective_hash("analyze document"), &[], Repeat::default())
                .is_ok()
        );
    }

    #[test]
    fn the_same_hop_after_the_first_finished_is_a_cycle_unless_it_says_it_repeats() {
        let (_t, tree) = tree();
        let h = objective_hash("extract receipt");
        let keyed = Repeat { retry_of: false, idempotency_key: Some("k1") };
        drop(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], keyed).unwrap());
        // the same call again in the same tree
        let err = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], Repeat::default()).err().unwrap();
        assert_eq!(err.code, ErrorCode::CycleDetected);
        assert!(err.message.contains("already ran in this tree"), "{}", err.message);
        // another key is not the same send
        let other = Repeat { retry_of: false, idempotency_key: Some("k2") };
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], other).is_err());
        // a retried send (same idempotency key) and an explicit retry are not cycles
        drop(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], keyed).unwrap());
        let retry = Repeat { retry_of: true, idempotency_key: None };
        let again = acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], retry).unwrap();
        // ... but not while the same hop is still in progress
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h, &[], retry).is_err());
        drop(again);
        // a send repeated under the key of the one still in progress (its
        // answer was lost on the way back) is that send, not a cycle: the
        // idempotency rail then waits for the first one's answer
        let third = Repeat { retry_of: false, idempotency_key: Some("k3") };
        let h3 = objective_hash("extract statement");
        let first = acquire(&tree, &slug("prime"), &slug("byte"), &h3, &[], third).unwrap();
        let resent = acquire(&tree, &slug("prime"), &slug("byte"), &h3, &[], third).unwrap();
        let other_key = Repeat { retry_of: false, idempotency_key: Some("k4") };
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h3, &[], other_key).is_err());
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h3, &[], Repeat::default()).is_err());
        drop(first);
        // still in progress while the resent one runs
        assert!(acquire(&tree, &slug("prime"), &slug("byte"), &h3, &[], other_key).is_err());
        drop(resent);
        // another origin asking the same is another hop
        assert!(acquire(&tree, &slug("tag"), &slug("byte"), &h, &[], Repeat::default()).is_ok());
    }

    #[test]
    fn a_b_a_with_the_same_objective_is_refused() {
        let (_t, tree) = tree();
        let h = objective_hash("reconcile");
        let chain = vec![
            ChainLink { agent: slug("a"), objective_hash: h.clone() },
            ChainLink { agent: slug("b"), objective_hash: h.clone() },
        ];
        let err = acquire(&tree, &slug("b"), &slug("a"), &h, &chain, Repeat::default()).err().unwrap();
        assert_eq!(err.code, ErrorCode::CycleDetected);
        assert!(err.message.contains("a → b → a"), "{}", err.message);
        // With another objective, B may ask A.
        assert!(acquire(&tree, &slug("b"), &slug("a"), &objective_hash("other"), &chain, Repeat::default()).is_ok());
    }
}
