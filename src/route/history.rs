//! Learning from history: for a target
//! of `auto`, an agent whose past success rate on similar objectives exceeds
//! 0.8 is preferred; otherwise discovery falls back to keywords and
//! capabilities. Two objectives are similar when their task signatures share
//! at least half their words (Jaccard ≥ 0.5): "reconcile the ledger for March"
//! and "…for April" are; "reconcile the ledger" and "draft an email" are not.

use std::collections::{BTreeMap, BTreeSet};

use crate::store::{AgentHistory, Outcome};

/// The success rate an agent needs on a kind of task to be preferred.
pub(crate) const PREFERRED_RATE: f64 = 0.8;
/// Finished delegations needed before a rate counts.
pub(crate) const MIN_SAMPLES: u64 = 3;
/// How many of a user's recent delegations are consulted.
pub(crate) const WINDOW: usize = 500;
/// Word overlap (Jaccard) at which two signatures count as the same kind of task.
pub(crate) const SIMILAR: f64 = 0.5;

/// Jaccard similarity of two signatures' word sets.
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    let (a, b): (BTreeSet<&str>, BTreeSet<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    let union = a.union(&b).filter(|w| !w.is_empty()).count();
    if union == 0 { 0.0 } else { a.intersection(&b).filter(|w| !w.is_empty()).count() as f64 / union as f64 }
}

/// Each agent's record on the outcomes similar to `signature`.
pub(crate) fn similar(outcomes: &[Outcome], signature: &str) -> Vec<AgentHistory> {
    let mut by_agent: BTreeMap<&str, AgentHistory> = BTreeMap::new();
    for o in outcomes.iter().filter(|o| similarity(&o.signature, signature) >= SIMILAR) {
        let h = by_agent.entry(o.target.as_str()).or_insert_with(|| AgentHistory {
            agent: o.target.clone(),
            successes: 0,
            total: 0,
        });
        h.total += 1;
        if o.status == "success" {
            h.successes += 1;
        }
    }
    by_agent.into_values().collect()
}

/// The agent history recommends among `allowed`: the best success rate above
/// [`PREFERRED_RATE`] with at least [`MIN_SAMPLES`] finished delegations.
pub(crate) fn preferred(history: &[AgentHistory], allowed: impl Fn(&str) -> bool) -> Option<&str> {
    history
        .iter()
        .filter(|h| h.total >= MIN_SAMPLES && h.success_rate() > PREFERRED_RATE && allowed(&h.agent))
        .max_by(|a, b| a.success_rate().total_cmp(&b.success_rate()).then(a.total.cmp(&b.total)))
        .map(|h| h.agent.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::task_signature;

    fn h(agent: &str, successes: u64, total: u64) -> AgentHistory {
        AgentHistory { agent: agent.into(), successes, total }
    }

    #[test]
    fn similar_objectives_share_half_their_words() {
        let march = task_signature("Reconcile the ledger for March");
        assert!(similarity(&march, &task_signature("Reconcile the ledger for April")) >= SIMILAR);
        assert!(similarity(&march, &task_signature("Draft an apology email")) < SIMILAR);
        let o = |t: &str, s: &str, sig: &str| Outcome { target: t.into(), status: s.into(), signature: sig.into() };
        let outcomes = [
            o("b", "success", "reconcile ledger april"),
            o("b", "failed", "reconcile ledger may"),
            o("c", "success", "draft apology email"),
        ];
        assert_eq!(similar(&outcomes, &march), [AgentHistory { agent: "b".into(), successes: 1, total: 2 }]);
    }

    #[test]
    fn only_a_proven_agent_is_preferred() {
        let history = [h("a", 9, 10), h("b", 3, 3), h("c", 1, 1), h("d", 5, 10)];
        assert_eq!(preferred(&history, |_| true), Some("b"), "100% over 3 beats 90% over 10");
        assert_eq!(preferred(&history, |a| a != "b"), Some("a"));
        assert_eq!(preferred(&[h("c", 2, 2), h("d", 8, 10)], |_| true), None, "too few samples, or 80% exactly");
    }
}
