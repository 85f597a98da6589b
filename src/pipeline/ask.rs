//! A user's turn: the message goes to the entry agent (Prime, by
//! configuration) at depth 0 as the root of a new tree; Prime answers
//! directly or delegates; the answer comes back with PII restored and the
//! tree of work behind it.

use serde::Serialize;

use super::entry::{Entry, USER_ORIGIN};
use crate::auth::Principal;
use crate::protocol::{
    AgentSlug, Constraints, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, RequestId, SessionId,
    Status, UserId,
};
use crate::runtime::{Runtime, TreeView};
use crate::store::Durability;

/// A user's turn with Prime.
#[derive(Debug, Clone, Default)]
pub struct AskOptions {
    /// Content to work on (a receipt, a statement), e.g. from `--file`.
    pub input: Option<String>,
    /// Continue this session of the user (with that agent).
    pub session: Option<SessionId>,
    /// Talk to this agent instead of Prime (it must allow the user).
    pub agent: Option<AgentSlug>,
    /// The turn's request id (default: a new one), e.g. to cancel it while it runs.
    pub request_id: Option<RequestId>,
    /// Hints for the agent (the request's `context_hints`).
    pub context_hints: Vec<String>,
    /// When the turn's end (its root delegation's record, audit record and
    /// conversation) is on stable storage: before `ask` returns (the
    /// default), or, with [`Durability::WithNext`], with the next synced
    /// commit, for a caller that commits a synced write of its own before
    /// it answers anyone (A2A's blocking send: the task's last version).
    pub end: Durability,
}

/// Prime's answer with the tree of work behind it.
#[derive(Debug, Clone, Serialize)]
pub struct AskResponse {
    /// The answer for the user (or, when nothing was produced, the error's message).
    pub answer: String,
    /// The user's session with the agent: pass it back to continue the conversation.
    pub session_id: SessionId,
    /// The id of the turn's root delegation (for `switchboard trace`).
    pub request_id: RequestId,
    /// Whether the turn succeeded, partly succeeded or failed.
    pub status: Status,
    /// The delegations the turn made, from the entry agent down.
    pub tree: TreeView,
    /// The whole response of the turn's root delegation.
    #[serde(skip)]
    pub response: DelegationResponse,
}

impl Runtime {
    /// The agent users talk to when they do not name one (`[prime] agent`).
    pub fn entry_agent(&self) -> Result<AgentSlug, DelegationError> {
        let spec = self.config().entry_agent().ok_or_else(|| {
            DelegationError::new(ErrorCode::AgentNotFound, "no agent is configured to talk to users; set [prime] agent")
        })?;
        Ok(spec.slug.clone())
    }

    /// A user's turn (see `door::Turn`): its answer, with its tree read
    /// back from the store when `tree` (else the root alone).
    pub(super) async fn turn(
        &self,
        user: &UserId,
        message: &str,
        opts: AskOptions,
        mode: crate::protocol::Mode,
        tree: bool,
    ) -> Result<AskResponse, DelegationError> {
        let (request_id, response) = self.turn_response(user, message, opts, mode).await?;
        let stored = if tree { self.tree(request_id).await? } else { None };
        let tree = stored.unwrap_or_else(|| TreeView {
            request_id,
            agent: response.target_employee.to_string(),
            origin: USER_ORIGIN.into(),
            objective: String::new(),
            status: response.status.as_str().into(),
            error_code: response.error_code().map(|c| c.to_string()),
            attempts: 0,
            duration_ms: response.duration_ms,
            tokens: response.token_usage.total,
            children: Vec::new(),
        });
        Ok(AskResponse {
            answer: answer_of(&response),
            session_id: response.child_session_id.unwrap_or_default(),
            request_id,
            status: response.status,
            tree,
            response,
        })
    }

    /// Runs a user's turn: its root id and its root delegation's response
    /// (a refusal is an `Err`).
    async fn turn_response(
        &self,
        user: &UserId,
        message: &str,
        opts: AskOptions,
        mode: crate::protocol::Mode,
    ) -> Result<(RequestId, DelegationResponse), DelegationError> {
        let agent = match opts.agent {
            Some(a) if self.registry().get(&a).is_some() => a,
            Some(a) => {
                return Err(DelegationError::new(ErrorCode::AgentNotFound, format!("no agent '{a}' is registered")));
            }
            None => self.entry_agent()?,
        };
        let limits = self.config().limits;
        let origin = AgentSlug::parse(USER_ORIGIN).map_err(|e| DelegationError::invalid(e.0))?;
        let mut req = DelegationRequest::new(origin, agent, user.clone(), message, opts.input.unwrap_or_default());
        req.child_session_id = opts.session;
        req.context_hints = opts.context_hints;
        req.mode = mode;
        if let Some(id) = opts.request_id {
            req.request_id = id;
        }
        req.constraints = Constraints {
            max_tokens: limits.ask_max_tokens,
            max_depth: limits.max_depth,
            deadline_ms: limits.deadline_ms,
        };
        let request_id = req.request_id;
        let response = self.dispatch_top(&Principal::User(user.clone()), req, Entry::UserTurn, opts.end).await;
        if let Some(err) = response.error.as_ref().filter(|e| e.code.is_refusal()) {
            return Err(err.clone());
        }
        Ok((request_id, response))
    }
}

/// The answer of a turn's root delegation for the user: its result, or,
/// when it produced nothing, its error's message.
pub fn answer_of(response: &DelegationResponse) -> String {
    match (&response.error, response.result.is_empty()) {
        (Some(e), true) => e.message.clone(),
        _ => response.result.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[tokio::test]
    async fn a_users_turn_goes_to_the_configured_entry_agent_at_depth_zero() {
        let rt = Runtime::embedded();
        assert_eq!(rt.entry_agent().unwrap().as_str(), "prime-boss");
        let alice = UserId::parse("alice").unwrap();
        let r = rt.ask(&alice, "What is APR?", AskOptions::default()).await.unwrap();
        assert_eq!(r.tree.agent, "prime-boss");
        assert_eq!(r.tree.origin, USER_ORIGIN);

        // another entry agent is one line of configuration
        let mut config = Config::builtin();
        config.prime.agent = Some(AgentSlug::parse("email").unwrap());
        let rt = Runtime::builder().config(config).build().unwrap();
        assert_eq!(rt.entry_agent().unwrap().as_str(), "email");

        let err = rt
            .ask(&alice, "hi", AskOptions { agent: Some(AgentSlug::parse("ghost").unwrap()), ..Default::default() })
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentNotFound);
    }

    #[tokio::test]
    async fn a_stored_tree_reads_back_and_an_unknown_one_is_none() {
        let rt = Runtime::embedded();
        assert!(rt.tree(crate::protocol::RequestId::new()).await.unwrap().is_none());
        let alice = crate::protocol::UserId::parse("alice").unwrap();
        let r = rt.ask(&alice, "What is APR?", Default::default()).await.unwrap();
        let tree = rt.tree(r.request_id).await.unwrap().unwrap();
        assert_eq!(tree.request_id, r.request_id);
        assert_eq!(rt.live_trees(), 0, "nothing left running");
        assert!(rt.metrics_text().contains("delegation"));
    }
}
