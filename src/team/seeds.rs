//! The seed → approach rule every seeded agent of the team shares
//! (docs/DESIGN.md#retries-seeds-and-verification).

/// The variant `seed` picks among `seeds` (an agent's `SEEDS`, default
/// order): its position, or for a seed the agent does not know (a caller's
/// own, a stale score) one of the variants by remainder, so that no seed
/// value is refused. No seed is the first variant.
pub(crate) fn variant(seeds: &[u64], seed: Option<u64>) -> usize {
    match seed {
        None => 0,
        Some(seed) => seeds
            .iter()
            .position(|s| *s == seed)
            .unwrap_or_else(|| usize::try_from(seed % (seeds.len().max(1) as u64)).unwrap_or(0)),
    }
}
