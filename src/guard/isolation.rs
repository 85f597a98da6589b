//! User isolation rail: a session belongs to one user. A request that names
//! another user's session is refused with `USER_MISMATCH` and learns nothing
//! about that session.

use crate::protocol::{AgentSlug, DelegationError, SessionId, UserId};
use crate::store::{Session, Store};

/// The sessions a delegation works in: the origin's (parent) session and the
/// target's child session under it.
#[derive(Debug, Clone)]
pub struct Sessions {
    pub parent: Option<Session>,
    pub child: Session,
}

/// Resolves (creating where needed) the parent and child sessions, refusing
/// any that belongs to another user.
pub async fn sessions(
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
        (None, None) => store.ensure_session(user, target, None, None).await?,
    };
    Ok(Sessions { parent, child })
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
        let err = sessions(&store, &bob, &prime, &byte, None, Some(a.child.id)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::UserMismatch);
    }

    #[tokio::test]
    async fn the_child_session_is_reused_under_the_same_parent() {
        let store = MemoryStore::new();
        let (alice, _, prime, byte) = ids();
        let parent = SessionId::new();
        let first = sessions(&store, &alice, &prime, &byte, Some(parent), None).await.unwrap();
        let second = sessions(&store, &alice, &prime, &byte, Some(parent), None).await.unwrap();
        assert_eq!(first.child.id, second.child.id);
        assert_eq!(first.child.parent_id, Some(parent));
    }
}
