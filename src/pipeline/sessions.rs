//! Sessions, and the user isolation rail: a session belongs to one user. A
//! request that names another user's session is refused with
//! `USER_MISMATCH` and learns nothing about that session.

use crate::protocol::{AgentSlug, DelegationError, DelegationRequest, Mode, SessionId, UserId};
use crate::store::{Session, Store, StoreError};

/// The sessions a delegation works in: the origin's (parent) session and the
/// target's child session under it. An ephemeral consult may have no child
/// session: it reads what exists and creates nothing.
#[derive(Debug, Clone)]
pub(crate) struct Sessions {
    pub parent: Option<Session>,
    pub child: Option<Session>,
    /// The child session is new: nothing to read from it, and it is written
    /// with the delegation's own records when it finishes.
    pub new_child: bool,
}

/// The sessions of `req`: an ephemeral consult reads the target's history
/// and creates nothing; a persisted delegation gets (or continues) its child
/// session under the parent's. `parent_session` is the calling node's, which
/// wins over what the envelope names.
pub(crate) async fn resolve(
    store: &dyn Store,
    req: &DelegationRequest,
    parent_session: Option<SessionId>,
) -> Result<Sessions, DelegationError> {
    let parent = parent_session.or(req.parent_session_id);
    match req.mode {
        Mode::Ephemeral => {
            existing_sessions(store, &req.user_id, &req.target_employee, parent, req.child_session_id).await
        }
        _ => {
            sessions(store, &req.user_id, &req.origin_employee, &req.target_employee, parent, req.child_session_id)
                .await
        }
    }
}

/// A session that must belong to `user`: another user's is refused, and so
/// is one that does not exist, with the same answer, when `must_exist`.
async fn owned(
    store: &dyn Store,
    user: &UserId,
    id: SessionId,
    must_exist: bool,
) -> Result<Option<Session>, DelegationError> {
    match store.session(id).await? {
        Some(s) if &s.user_id == user => Ok(Some(s)),
        None if !must_exist => Ok(None),
        _ => Err(StoreError::UserMismatch.into()),
    }
}

/// The sessions of an ephemeral consult: read, never created.
async fn existing_sessions(
    store: &dyn Store,
    user: &UserId,
    target: &AgentSlug,
    parent: Option<SessionId>,
    child: Option<SessionId>,
) -> Result<Sessions, DelegationError> {
    let parent = match parent {
        Some(id) => owned(store, user, id, false).await?,
        None => None,
    };
    let child = match (child, &parent) {
        (Some(id), _) => owned(store, user, id, true).await?,
        (None, Some(p)) => store.find_child_session(user, target, p.id).await?,
        (None, None) => None,
    };
    Ok(Sessions { parent, child, new_child: false })
}

/// Resolves (creating where needed) the parent and child sessions, refusing
/// any that belongs to another user.
async fn sessions(
    store: &dyn Store,
    user: &UserId,
    origin: &AgentSlug,
    target: &AgentSlug,
    parent: Option<SessionId>,
    child: Option<SessionId>,
) -> Result<Sessions, DelegationError> {
    let parent = match parent {
        Some(id) => Some(store.ensure_session(user, origin, Some(id), None).await?),
        None => None,
    };
    let child = match (child, &parent) {
        (Some(id), p) => store.ensure_session(user, target, Some(id), p.as_ref().map(|p| p.id)).await?,
        (None, Some(p)) => store.child_session(user, target, p.id).await?,
        (None, None) => {
            // a fresh id is nobody's yet: no need to ask the store
            let child = Session::new(user, target, SessionId::new(), None);
            return Ok(Sessions { parent, child: Some(child), new_child: true });
        }
    };
    Ok(Sessions { parent, child: Some(child), new_child: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;
    use crate::store::MemoryStore;

    fn ids() -> (UserId, UserId, AgentSlug, AgentSlug) {
        (
            UserId::parse("alice").unwrap(),
            UserId::parse("bob").unwrap(),
            AgentSlug::parse("prime-boss").unwrap(),
            AgentSlug::parse("byte-doc").unwrap(),
        )
    }

    #[tokio::test]
    async fn a_session_of_user_a_named_in_user_bs_request_is_refused() {
        let store = MemoryStore::new();
        let (alice, bob, prime, byte) = ids();
        let a = sessions(&store, &alice, &prime, &byte, Some(SessionId::new()), None).await.unwrap();
        let parent = a.parent.unwrap().id;
        let err = sessions(&store, &bob, &prime, &byte, Some(parent), None).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::UserMismatch);
        assert!(!err.message.contains("alice"), "leaks the owner: {}", err.message);
        let err = sessions(&store, &bob, &prime, &byte, None, Some(a.child.unwrap().id)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::UserMismatch);
    }

    #[tokio::test]
    async fn the_child_session_is_reused_under_the_same_parent() {
        let store = MemoryStore::new();
        let (alice, _, prime, byte) = ids();
        let parent = SessionId::new();
        let first = sessions(&store, &alice, &prime, &byte, Some(parent), None).await.unwrap();
        let second = sessions(&store, &alice, &prime, &byte, Some(parent), None).await.unwrap();
        let (first, second) = (first.child.unwrap(), second.child.unwrap());
        assert_eq!(first.id, second.id);
        assert_eq!(first.parent_id, Some(parent));
    }
}
