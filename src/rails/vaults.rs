//! The PII vault of each conversation: one per (user, session), so that a
//! token means the same value in every turn of a session and nothing in any
//! other session or any other user's. A tree at the edge of the process
//! takes its session's vault; a turn that starts a session leaves its vault
//! under that session for the next turn.
//!
//! The vaults hold raw values, so they live in memory only, a bounded number
//! of them (the least recently used go first). A session continued after a
//! restart, or on another replica, finds no vault: its earlier tokens stay
//! tokens (they are reserved, so no new value takes their number) and are
//! never restored to a wrong value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::protocol::{SessionId, UserId};
use crate::redact::Vault;
use crate::util::lock;

/// A vault shared by the trees of one conversation.
pub(crate) type SharedVault = Arc<Mutex<Vault>>;

type Key = (UserId, SessionId);

/// The vaults of the conversations this process has seen.
pub(crate) struct SessionVaults {
    cap: usize,
    held: Mutex<HashMap<Key, (SharedVault, Instant)>>,
}

impl Default for SessionVaults {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

impl SessionVaults {
    /// Conversations kept at most by default.
    pub(crate) const DEFAULT_CAPACITY: usize = 10_000;

    pub(crate) fn with_capacity(cap: usize) -> Self {
        Self { cap: cap.max(1), held: Mutex::new(HashMap::new()) }
    }

    /// The vault of `user`'s `session`, if this process holds one. Keyed by
    /// the user too: naming another user's session finds nothing.
    pub(crate) fn get(&self, user: &UserId, session: SessionId) -> Option<SharedVault> {
        let mut held = lock(&self.held);
        let (vault, used) = held.get_mut(&(user.clone(), session))?;
        *used = Instant::now();
        Some(vault.clone())
    }

    /// Keeps `vault` as the vault of `user`'s `session`, unless the session
    /// has one already (that one stays: its tokens are in the history).
    pub(crate) fn keep(&self, user: &UserId, session: SessionId, vault: &SharedVault) {
        let mut held = lock(&self.held);
        let now = Instant::now();
        held.entry((user.clone(), session)).or_insert_with(|| (vault.clone(), now)).1 = now;
        if held.len() > self.cap {
            // the least recently used tenth goes, so eviction is rare; found
            // by selecting on the use times alone (no key copied, no full sort)
            let excess = held.len() - self.cap + self.cap.div_ceil(10);
            let mut uses: Vec<Instant> = held.values().map(|(_, used)| *used).collect();
            let (_, &mut cut, _) = uses.select_nth_unstable(excess - 1);
            held.retain(|_, (_, used)| *used > cut);
        }
    }

    #[cfg(test)]
    /// How many conversations have a vault.
    pub(crate) fn len(&self) -> usize {
        lock(&self.held).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_its_first_vault_for_its_user_only() {
        let vaults = SessionVaults::default();
        let (alice, bob) = (UserId::parse("alice").unwrap(), UserId::parse("bob").unwrap());
        let session = SessionId::new();
        let first = SharedVault::default();
        vaults.keep(&alice, session, &first);
        vaults.keep(&alice, session, &SharedVault::default());
        assert!(Arc::ptr_eq(&vaults.get(&alice, session).unwrap(), &first));
        assert!(vaults.get(&bob, session).is_none(), "another user's session has no vault for bob");
        assert!(vaults.get(&alice, SessionId::new()).is_none());
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_count_stays_bounded() {
        let vaults = SessionVaults::with_capacity(10);
        let user = UserId::parse("alice").unwrap();
        let sessions: Vec<SessionId> = (0..10).map(|_| SessionId::new()).collect();
        for s in &sessions {
            vaults.keep(&user, *s, &SharedVault::default());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(vaults.get(&user, sessions[0]).is_some()); // used again: now the newest
        vaults.keep(&user, SessionId::new(), &SharedVault::default());
        assert!(vaults.len() <= 10, "{}", vaults.len());
        assert!(vaults.get(&user, sessions[0]).is_some(), "recently used is kept");
        assert!(vaults.get(&user, sessions[1]).is_none(), "the oldest went");
    }
}
