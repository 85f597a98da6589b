//! Who is calling: one [`Principal`] for every caller (an agent, a user, an
//! operator, an anonymous A2A caller), and the bearer [`Tokens`] that name them.

mod tokens;

pub use tokens::{Tokens, hash_token, new_token};

use crate::protocol::{AgentSlug, UserId};

/// Who sent a request. Every surface (CLI, HTTP, A2A, an agent's own
/// delegator) turns its caller into one of these; the pipeline's
/// authentication rail and every visibility check read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Principal {
    /// An agent, by its service token or by being the runtime's own handle:
    /// it may delegate only as itself.
    Agent(AgentSlug),
    /// An end user (a user token): talks to Prime or to an agent that allows
    /// them; never sends delegation envelopes.
    User(UserId),
    /// An operator (the local CLI, or an admin token): may send as any agent
    /// and see every tree.
    Admin,
    /// A caller without a token, admitted as the configured anonymous user
    /// (`[a2a] anonymous_user`): a user in every other respect.
    Anonymous(UserId),
}

impl Principal {
    /// The user this principal acts as, if it is one.
    pub fn user(&self) -> Option<&UserId> {
        match self {
            Self::User(u) | Self::Anonymous(u) => Some(u),
            _ => None,
        }
    }

    /// The agent this principal is, if it is one.
    pub fn agent(&self) -> Option<&AgentSlug> {
        match self {
            Self::Agent(a) => Some(a),
            _ => None,
        }
    }

    /// The token kind stored for this principal (`service`, `user`, `admin`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Agent(_) => "service",
            Self::User(_) | Self::Anonymous(_) => "user",
            Self::Admin => "admin",
        }
    }

    /// The token's subject: the agent's slug, the user's id, or `admin`.
    pub(crate) fn subject(&self) -> String {
        match self {
            Self::Agent(a) => a.to_string(),
            Self::User(u) | Self::Anonymous(u) => u.to_string(),
            Self::Admin => "admin".into(),
        }
    }

    pub(crate) fn from_parts(kind: &str, subject: &str) -> Option<Self> {
        match kind {
            "service" => AgentSlug::parse(subject).ok().map(Self::Agent),
            "user" => UserId::parse(subject).ok().map(Self::User),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }

    /// The principal as the journal keeps it (`service:prime-boss`,
    /// `user:alice`, `admin:admin`): what owns a tree it started.
    pub(crate) fn key(&self) -> String {
        format!("{}:{}", self.kind(), self.subject())
    }

    /// A short label for ownership and logs: `agent:<slug>`, `user:<id>`, `admin`.
    pub fn label(&self) -> String {
        match self {
            Self::Agent(a) => format!("agent:{a}"),
            Self::User(u) | Self::Anonymous(u) => format!("user:{u}"),
            Self::Admin => "admin".into(),
        }
    }
}
