//! Seeds: a seeded agent's variants are tried best-scoring
//! first, then untried ones in the agent's order, then penalized ones. A
//! seed that passes verification is promoted for this kind of task; one
//! that fails it is penalized.

use crate::agent::Agent;
use crate::protocol::{AgentSlug, Learned};
use crate::runtime::Runtime;

/// The seeds of one delegation: their order, and what was known before it ran.
pub(super) struct Seeds {
    pub order: Vec<u64>,
    known: Vec<u64>,
    agent: AgentSlug,
    signature: String,
}

impl Seeds {
    pub(super) async fn load(rt: &Runtime, agent: &dyn Agent, slug: &AgentSlug, signature: &str) -> Self {
        let defaults = agent.seeds();
        let scored = if defaults.is_empty() {
            Vec::new()
        } else {
            rt.inner.store.seed_scores(slug, signature).await.unwrap_or_default()
        };
        Self {
            order: order(defaults, &scored),
            known: scored.iter().map(|(s, _)| *s).collect(),
            agent: slug.clone(),
            signature: signature.to_string(),
        }
    }

    /// The seed that passed: promoted, and what was learned from it.
    pub(super) async fn passed(&self, rt: &Runtime, seed: u64, confidence: f64) -> Learned {
        let score = rt.inner.store.adjust_seed_score(&self.agent, &self.signature, seed, 1.0).await.ok();
        Learned { new_seed: !self.known.contains(&seed), seed_promoted: score.is_some(), confidence }
    }

    /// The seed that failed verification: penalized.
    pub(super) async fn failed(&self, rt: &Runtime, seed: u64) {
        let _ = rt.inner.store.adjust_seed_score(&self.agent, &self.signature, seed, -1.0).await;
    }
}

/// Proven seeds (best first), then untried ones in the agent's order, then penalized ones.
fn order(defaults: &[u64], scored: &[(u64, f64)]) -> Vec<u64> {
    let score_of = |seed: &u64| scored.iter().find(|(s, _)| s == seed).map(|(_, score)| *score);
    let rank = |s: &u64| match score_of(s) {
        Some(x) if x > 0.0 => (0, -x),
        None => (1, 0.0),
        Some(x) => (2, -x),
    };
    let mut order: Vec<u64> = defaults.to_vec();
    order.sort_by(|a, b| {
        let (ra, rb) = (rank(a), rank(b));
        ra.0.cmp(&rb.0).then(ra.1.total_cmp(&rb.1))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::order;

    #[test]
    fn proven_seeds_come_first_then_untried_then_penalized() {
        assert_eq!(order(&[1, 2, 3, 4], &[]), [1, 2, 3, 4], "the agent's own order when nothing is known");
        assert_eq!(order(&[1, 2, 3, 4], &[(3, 2.0), (4, 5.0), (1, -1.0)]), [4, 3, 2, 1]);
        assert!(order(&[], &[(3, 2.0)]).is_empty(), "an unseeded agent has no seeds");
    }
}
