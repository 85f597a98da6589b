//! What the runtime shows and learns about its own use: usage analytics,
//! a user's past trees and their ratings, each as a caller may see or do it.
//! Every surface (HTTP, the CLI) asks here, so who sees what is decided once:
//! a user sees and rates their own trees; an admin sees everyone's or names a
//! user, and rates nothing (a rating is the user's own); a service token
//! (an agent) gets none of it.
//!
//! A rating feeds what the runtime learns. History reads it (a success in a
//! tree its user rated down counts against the agent, `store::Outcome`);
//! and here, a tree rated down counts against each seed that made one of its
//! answers, as a failed verification does (−1 on the seed's score for that
//! kind of task); taking the 👎 back gives the point back.

use super::runtime::Runtime;
use crate::auth::Principal;
use crate::protocol::{AgentSlug, DelegationError, DelegationResponse, ErrorCode, RequestId, UserId};
use crate::store::analytics::parse_time;
use crate::store::ratings::MAX_COMMENT_CHARS;
use crate::store::{Analytics, AnalyticsQuery, HistoryPage, HistoryQuery, Rated, Rating, Thumb, now_ms};

/// What a seed's score moves by when a tree it answered in is rated down.
pub(super) const RATED_DOWN: f64 = -1.0;

/// Whose trees `caller` asks about, naming `asked` (None: everyone's, for an admin).
pub fn whose(caller: &Principal, asked: Option<&str>) -> Result<Option<UserId>, DelegationError> {
    let asked = asked
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|u| {
            UserId::parse(u).map_err(|e| DelegationError::new(ErrorCode::InvalidRequest, format!("user: {}", e.0)))
        })
        .transpose()?;
    match caller {
        Principal::Admin => Ok(asked),
        Principal::Agent(a) => Err(DelegationError::new(
            ErrorCode::Unauthenticated,
            format!(
                "usage and past trees are for people: send a user's token (their own trees) or an admin's, not \
                 agent {a}'s service token"
            ),
        )),
        p => {
            let own =
                p.user().ok_or_else(|| DelegationError::new(ErrorCode::Unauthenticated, "this token names no user"))?;
            match asked {
                Some(u) if &u != own => Err(DelegationError::new(
                    ErrorCode::UserMismatch,
                    format!("a user token shows only its own trees ('{own}'), not '{u}''s"),
                )),
                _ => Ok(Some(own.clone())),
            }
        }
    }
}

impl Runtime {
    /// Usage analytics over `[since, until)` (epoch ms, RFC 3339 or a date;
    /// the last seven days by default) as `caller` may see it.
    pub async fn analytics_for(
        &self,
        caller: &Principal,
        since: Option<&str>,
        until: Option<&str>,
        user: Option<&str>,
    ) -> Result<Analytics, DelegationError> {
        let user = whose(caller, user)?;
        let since = since.map(|s| parse_time("since", s)).transpose()?;
        let until = until.map(|u| parse_time("until", u)).transpose()?;
        let query = AnalyticsQuery::new(since, until, user, now_ms())?;
        Ok(self.store().analytics(&query).await?)
    }

    /// A page of past trees as `caller` may see them (`query.user` is set
    /// from the caller and `asked`). An agent filter that names no agent of
    /// the team is `AGENT_NOT_FOUND`.
    pub async fn past_trees_for(
        &self,
        caller: &Principal,
        asked: Option<&str>,
        mut query: HistoryQuery,
    ) -> Result<HistoryPage, DelegationError> {
        query.user = whose(caller, asked)?;
        if let Some(a) = query.agent.as_deref() {
            let slug = AgentSlug::parse(a.trim())
                .map_err(|e| DelegationError::new(ErrorCode::InvalidRequest, format!("agent: {}", e.0)))?;
            if self.registry().get(&slug).is_none() {
                return Err(DelegationError::new(
                    ErrorCode::AgentNotFound,
                    format!("no agent '{slug}' is on the team; list them with GET /v1/agents or `switchboard agents`"),
                ));
            }
            query.agent = Some(slug.to_string());
        }
        Ok(self.store().past_trees(&query.check()?).await?)
    }

    /// Rates tree `root` for the user `caller` is, replacing their earlier
    /// rating; the comment is kept PII redacted. A tree rated down counts
    /// against the seeds that made its answers (see the module).
    pub async fn rate(
        &self,
        caller: &Principal,
        root: RequestId,
        thumb: Thumb,
        comment: Option<&str>,
    ) -> Result<Rating, DelegationError> {
        let user = match caller {
            Principal::Agent(a) => {
                return Err(DelegationError::new(
                    ErrorCode::Unauthenticated,
                    format!("a rating is a user's: send the tree's user's token, not agent {a}'s service token"),
                ));
            }
            Principal::Admin => {
                return Err(DelegationError::new(
                    ErrorCode::PermissionDenied,
                    "a rating is the tree's user's own: an admin token rates nothing (use the user's token, or \
                     `switchboard rate --user`)",
                ));
            }
            p => {
                p.user().ok_or_else(|| DelegationError::new(ErrorCode::Unauthenticated, "this token names no user"))?
            }
        };
        let comment = comment.map(str::trim).filter(|c| !c.is_empty());
        if comment.is_some_and(|c| c.chars().count() > MAX_COMMENT_CHARS) {
            return Err(DelegationError::new(
                ErrorCode::InvalidRequest,
                format!("the comment is longer than {MAX_COMMENT_CHARS} characters"),
            ));
        }
        let comment = comment.map(|c| self.for_store(c.to_string()));
        let store = self.store();
        let previous = match store.rate_tree(user, root, thumb, comment.as_ref()).await? {
            Rated::Kept { previous } => previous,
            Rated::NotYours => {
                return Err(DelegationError::new(
                    ErrorCode::UserMismatch,
                    format!("tree {root} belongs to another user: rate your own trees"),
                ));
            }
            _ => {
                return Err(DelegationError::new(
                    ErrorCode::NotFound,
                    format!("no finished tree has root id {root}; rate a tree by the request id its answer gave"),
                ));
            }
        };
        let delta = match (previous, thumb) {
            (Some(Thumb::Down), Thumb::Down) => 0.0,
            (_, Thumb::Down) => RATED_DOWN,
            (Some(Thumb::Down), Thumb::Up) => -RATED_DOWN,
            _ => 0.0,
        };
        if delta != 0.0 {
            self.learn_from_rating(root, delta).await;
        }
        store.rating(root).await?.ok_or_else(|| {
            DelegationError::new(ErrorCode::AgentUnavailable, "the rating was kept but cannot be read back; retry")
        })
    }

    /// Moves the score of every seed that made a successful answer in tree
    /// `root` by `delta`. Best effort: a rating is kept even when this fails.
    async fn learn_from_rating(&self, root: RequestId, delta: f64) {
        let store = self.store();
        let (Ok(nodes), Ok(steps)) = (store.delegation_tree(root).await, store.tree_steps(root).await) else { return };
        for node in nodes.iter().filter(|n| n.status == "success") {
            let Some(seed) = steps
                .iter()
                .find(|s| s.request_id == node.request_id)
                .and_then(|s| s.response.as_deref())
                .and_then(|r| serde_json::from_str::<DelegationResponse>(r).ok())
                .and_then(|r| r.execution)
                .and_then(|e| e.seeds_tried.last().copied())
            else {
                continue;
            };
            let Ok(agent) = AgentSlug::parse(node.target.clone()) else { continue };
            if let Err(e) = store.adjust_seed_score(&agent, &node.signature, seed, delta).await {
                tracing::warn!(root_id = %root, agent = %agent, "a rating did not reach the seed scores: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_sees_whose_trees() {
        let (alice, bob) = (UserId::parse("alice").unwrap(), UserId::parse("bob").unwrap());
        let as_alice = Principal::User(alice.clone());
        assert_eq!(whose(&as_alice, None).unwrap(), Some(alice.clone()));
        assert_eq!(whose(&as_alice, Some("alice")).unwrap(), Some(alice.clone()));
        assert_eq!(whose(&as_alice, Some("bob")).unwrap_err().code, ErrorCode::UserMismatch);
        assert_eq!(whose(&Principal::Admin, None).unwrap(), None, "an admin sees everyone's");
        assert_eq!(whose(&Principal::Admin, Some("bob")).unwrap(), Some(bob));
        assert_eq!(whose(&Principal::Admin, Some("bob smith")).unwrap_err().code, ErrorCode::InvalidRequest);
        let agent = Principal::Agent(AgentSlug::parse("tag-ai").unwrap());
        assert_eq!(whose(&agent, None).unwrap_err().code, ErrorCode::Unauthenticated);
    }
}
