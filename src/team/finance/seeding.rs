//! The finance agents' seeds: each agent has two
//! approaches, its `SEEDS` in default order, the first being the approach it
//! always had. A seed the agent does not know picks a variant by remainder,
//! so no seed value is refused; no seed is the first variant.

pub(crate) use crate::team::seeds::variant;

/// Whether `seed` picks the second approach of an agent with `seeds`.
pub(crate) fn second(seeds: &[u64], seed: Option<u64>) -> bool {
    variant(seeds, seed) == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_value_picks_a_variant() {
        let seeds = [70, 21];
        assert_eq!(variant(&seeds, None), 0);
        assert_eq!(variant(&seeds, Some(21)), 1);
        assert_eq!(variant(&seeds, Some(70)), 0);
        assert_eq!(variant(&seeds, Some(3)), 1, "unknown seeds by remainder");
        assert_eq!(variant(&seeds, Some(u64::MAX)), 1);
        assert_eq!(variant(&[], Some(9)), 0);
        assert!(second(&seeds, Some(21)) && !second(&seeds, None));
    }
}
