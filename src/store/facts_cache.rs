//! PostgreSQL's users' facts, kept in memory between delegations.
//!
//! Every delegation reads the facts of its user (its context), and
//! on PostgreSQL that read is a round trip: a quarter of the work threads'
//! time in a profile at 64 connections (CHANGELOG.md, performance
//! history, seventh round). Facts change
//! rarely, but any replica may add them, so the cache holds only while it
//! hears about every change:
//!
//! - a trigger on `memory_facts` (the migration `facts_notify`) sends the
//!   user ids of every insert, update or delete on the channel
//!   [`CHANNEL`] at commit, whoever made the change (another replica, an
//!   operator's SQL); a `TRUNCATE` sends an empty id: everyone's;
//! - each store listens on its own connection and forgets what it hears;
//! - the store forgets a user's facts itself as soon as its own write of
//!   them commits, so this process reads its writes without waiting for the
//!   notification;
//! - while the listening connection is down, nothing is served from memory
//!   or kept there: a notification sent meanwhile is lost, so the cache
//!   starts empty once the connection is back.
//!
//! A read that raced a change must not outlive its notification: every
//! change heard moves an epoch, and a read keeps its answer only if the epoch
//! has not moved since before it asked the database. A commit the read did
//! not see notifies after the read began: either the notification arrived
//! before the answer would be kept (the epoch moved: it is not kept), or it
//! arrives after and forgets it. Without the epoch, the first case would
//! keep a stale answer for good. So an answer is stale at most until the
//! notification of the change it missed arrives, as with any other replica's
//! write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::Fact;
use crate::protocol::UserId;

/// The notification channel of `memory_facts`'s trigger.
#[cfg(feature = "postgres")]
const CHANNEL: &str = "switchboard_facts";

/// At most this many users' facts are kept; past it the cache starts over.
const USERS: usize = 4096;

/// Facts by user and by the scopes and limit they were read for.
#[derive(Debug, Default)]
pub(super) struct FactsCache {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The listening connection is up, and has been since the cache was last emptied.
    live: bool,
    /// Moved by every change heard and every reconnection.
    epoch: u64,
    users: HashMap<UserId, HashMap<Vec<String>, Read>>,
}

/// The facts read for a set of scopes, with the limit they were read with.
type Read = (usize, Arc<[Fact]>);

impl FactsCache {
    fn state(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves nothing half-done worse than a miss
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The facts kept for `user` and `scopes`, or the ticket to keep the
    /// database's answer with ([`FactsCache::keep`]).
    pub(super) fn get(&self, user: &UserId, scopes: &[String], limit: usize) -> Result<Vec<Fact>, u64> {
        let state = self.state();
        match state.users.get(user).and_then(|s| s.get(scopes)) {
            Some((read_with, facts)) if state.live && *read_with == limit => Ok(facts.to_vec()),
            _ => Err(state.epoch),
        }
    }

    /// Keeps the database's answer for `user` and `scopes`, unless anything
    /// changed since `ticket` was handed out, or nobody is listening.
    pub(super) fn keep(&self, ticket: u64, user: &UserId, scopes: &[String], limit: usize, facts: &[Fact]) {
        let mut state = self.state();
        if !state.live || state.epoch != ticket {
            return;
        }
        if state.users.len() >= USERS && !state.users.contains_key(user) {
            state.users.clear();
        }
        state.users.entry(user.clone()).or_default().insert(scopes.to_vec(), (limit, facts.into()));
    }

    /// `user`'s facts changed: forget them (an empty id: everyone's).
    pub(super) fn forget(&self, user: &str) {
        let mut state = self.state();
        state.epoch += 1;
        if user.is_empty() {
            state.users.clear();
        } else {
            // a user id that does not parse was never kept
            if let Ok(id) = UserId::parse(user) {
                state.users.remove(&id);
            }
        }
    }

    /// Empties the cache, and serves from it from now on only if `live`.
    #[cfg(any(feature = "postgres", test))]
    fn restart(&self, live: bool) {
        let mut state = self.state();
        state.epoch += 1;
        state.live = live;
        state.users.clear();
    }

    /// How many users' facts are kept (for tests).
    #[cfg(test)]
    fn users(&self) -> usize {
        self.state().users.len()
    }
}

/// The task listening for changes; stopped when the last clone of the
/// store is dropped.
#[derive(Debug)]
pub(super) struct Listening(tokio::task::AbortHandle);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts listening on `url` (PostgreSQL) for the changes of
/// [`CHANNEL`]; until the first connection is up, nothing is cached.
#[cfg(feature = "postgres")]
pub(super) fn listen(cache: Arc<FactsCache>, url: String) -> Listening {
    Listening(tokio::spawn(listening(cache, url)).abort_handle())
}

#[cfg(feature = "postgres")]
async fn listening(cache: Arc<FactsCache>, url: String) {
    use sqlx::postgres::PgListener;
    let mut pause = std::time::Duration::from_millis(100);
    loop {
        let connected = async {
            let mut listener = PgListener::connect(&url).await?;
            // a lost connection must end the loop below at once, not after a reconnection
            listener.eager_reconnect(false);
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        match connected.await {
            Ok(mut listener) => {
                pause = std::time::Duration::from_millis(100);
                // from here on every commit is heard: whatever was read before may be stale
                cache.restart(true);
                // None: the connection was lost (notifications may have gone with it)
                while let Ok(Some(n)) = listener.try_recv().await {
                    cache.forget(n.payload());
                }
                cache.restart(false);
                tracing::warn!(
                    "the facts cache lost its PostgreSQL connection: reading facts from the database until it is back"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "the facts cache cannot listen on PostgreSQL: reading facts from the database");
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(user: &UserId, text: &str) -> Fact {
        Fact { user_id: user.clone(), scope: "global".into(), fact: text.into(), source_request: None, created_at: 1 }
    }

    fn scopes() -> Vec<String> {
        vec!["global".into(), "agent:echo".into()]
    }

    #[test]
    fn nothing_is_served_or_kept_while_nobody_listens() {
        let cache = FactsCache::default();
        let alice = UserId::parse("alice").unwrap();
        let ticket = cache.get(&alice, &scopes(), 8).unwrap_err();
        cache.keep(ticket, &alice, &scopes(), 8, &[fact(&alice, "likes tea")]);
        assert!(cache.get(&alice, &scopes(), 8).is_err());
        assert_eq!(cache.users(), 0);
    }

    #[test]
    fn a_kept_answer_is_served_per_user_and_scopes_until_the_user_changes() {
        let cache = FactsCache::default();
        cache.restart(true);
        let (alice, bob) = (UserId::parse("alice").unwrap(), UserId::parse("bob").unwrap());
        let ticket = cache.get(&alice, &scopes(), 8).unwrap_err();
        cache.keep(ticket, &alice, &scopes(), 8, &[fact(&alice, "likes tea")]);
        let ticket = cache.get(&bob, &scopes(), 8).unwrap_err();
        cache.keep(ticket, &bob, &scopes(), 8, &[]);
        let served = cache.get(&alice, &scopes(), 8).unwrap();
        assert_eq!(served.len(), 1);
        assert_eq!(served[0].fact, "likes tea");
        assert!(cache.get(&bob, &scopes(), 8).unwrap().is_empty());
        // other scopes, or another limit, are another read
        assert!(cache.get(&alice, &["global".to_string()], 8).is_err());
        assert!(cache.get(&alice, &scopes(), 2).is_err());
        cache.forget("alice");
        assert!(cache.get(&alice, &scopes(), 8).is_err());
        assert!(cache.get(&bob, &scopes(), 8).is_ok(), "bob's facts did not change");
        cache.forget("");
        assert!(cache.get(&bob, &scopes(), 8).is_err(), "an empty id is everyone");
    }

    #[test]
    fn an_answer_read_across_a_change_or_a_reconnection_is_not_kept() {
        let cache = FactsCache::default();
        cache.restart(true);
        let alice = UserId::parse("alice").unwrap();
        // the read began, then a change was heard before its answer came back
        let ticket = cache.get(&alice, &scopes(), 8).unwrap_err();
        cache.forget("bob");
        cache.keep(ticket, &alice, &scopes(), 8, &[]);
        assert!(cache.get(&alice, &scopes(), 8).is_err());
        // the read began while nobody listened; the listener came back before its answer
        cache.restart(false);
        let ticket = cache.get(&alice, &scopes(), 8).unwrap_err();
        cache.restart(true);
        cache.keep(ticket, &alice, &scopes(), 8, &[]);
        assert!(cache.get(&alice, &scopes(), 8).is_err());
        // losing the connection forgets everything and serves nothing
        let ticket = cache.get(&alice, &scopes(), 8).unwrap_err();
        cache.keep(ticket, &alice, &scopes(), 8, &[]);
        assert!(cache.get(&alice, &scopes(), 8).is_ok());
        cache.restart(false);
        assert!(cache.get(&alice, &scopes(), 8).is_err());
    }

    #[test]
    fn the_cache_holds_a_bounded_number_of_users() {
        let cache = FactsCache::default();
        cache.restart(true);
        for i in 0..USERS + 10 {
            let user = UserId::parse(format!("user{i}")).unwrap();
            let ticket = cache.get(&user, &scopes(), 8).unwrap_err();
            cache.keep(ticket, &user, &scopes(), 8, &[]);
            assert!(cache.users() <= USERS);
        }
    }
}
