//! Texts a redactor has already made or found clean, by a keyed hash: a
//! delegation's texts are redacted where they come in (its objective, its
//! input, its agent's answer) and then again as the store writes them (the
//! store takes only `Redacted` values). The second pass over the same text
//! finds it here instead of scanning it again. Only this module's redactor
//! adds to it, and only texts it scanned itself: a clean one, or what its
//! redaction made. The hash is keyed per process (`RandomState`), so nobody
//! can make a raw text collide with a clean one on purpose.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

/// Texts kept per generation; two generations are kept (the older one is
/// dropped when the newer one fills), so at most twice as many.
const GENERATION: usize = 8_192;

/// Shorter texts without a digit or an `@` are scanned again rather than
/// looked up: their scan is one cheap pass (only credentials' prefixes can
/// match), about what the lookup costs. A short one with a digit runs every
/// rule (a version, an amount, a date): that is looked up.
const MIN_LEN: usize = 24;

/// Whether `text` is worth a lookup rather than a scan.
fn worth(text: &str) -> bool {
    text.len() >= MIN_LEN || text.bytes().any(|b| b.is_ascii_digit() || b == b'@')
}

/// A bounded set of the hashes of texts known to hold no PII.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    keys: std::collections::hash_map::RandomState,
    sets: Mutex<(HashSet<u64>, HashSet<u64>)>,
}

impl Seen {
    fn hash(&self, text: &str) -> u64 {
        self.0.keys.hash_one(text)
    }

    /// Whether `text` was made or found clean by this redactor.
    pub(super) fn clean(&self, text: &str) -> bool {
        self.key(text).is_some_and(|k| self.has(k))
    }

    /// Notes `text` as clean (it holds no PII: scanned, or made by redaction).
    pub(super) fn note(&self, text: &str) {
        if let Some(k) = self.key(text) {
            self.add(k);
        }
    }

    /// `text`'s key in the set; None when it is not worth a lookup. A
    /// caller that looks a text up and then notes it hashes it once.
    pub(super) fn key(&self, text: &str) -> Option<u64> {
        worth(text).then(|| self.hash(text))
    }

    /// Whether the text of `key` is known clean.
    pub(super) fn has(&self, key: u64) -> bool {
        let sets = crate::util::lock(&self.0.sets);
        sets.0.contains(&key) || sets.1.contains(&key)
    }

    /// Notes the text of `key` as clean.
    pub(super) fn add(&self, key: u64) {
        let mut sets = crate::util::lock(&self.0.sets);
        if sets.0.len() >= GENERATION {
            let newer = std::mem::take(&mut sets.0);
            sets.1 = newer;
        }
        sets.0.insert(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noted_text_is_known_and_the_set_stays_bounded() {
        let seen = Seen::default();
        let text = "a text long enough to be worth a lookup";
        assert!(!seen.clean(text));
        seen.note(text);
        assert!(seen.clean(text));
        assert!(!seen.clean("another text long enough to be looked up"));
        for i in 0..3 * GENERATION {
            seen.note(&format!("text number {i:>30}"));
        }
        let sets = crate::util::lock(&seen.0.sets);
        assert!(sets.0.len() + sets.1.len() <= 2 * GENERATION);
        drop(sets);
        assert!(!seen.clean(text), "the oldest generation is gone");
    }
}
