//! The claims of one hop, their form and the attenuation relation between a
//! hop and the one before it. docs/LINEAGE.md lists the same checks in order.

use serde::{Deserialize, Serialize};

use super::{Fault, LineageError, valid_name};
use crate::protocol::{AgentSlug, RequestId, UserId};

/// Most tools a hop may carry.
const MAX_TOOLS: usize = 64;

/// What one hop may do: the rails in force for the delegation it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The tree: the id of the root request.
    pub tree: RequestId,
    /// The request that sent this one; None at the root.
    pub parent: Option<RequestId>,
    /// This hop's request id.
    pub request: RequestId,
    /// The user the whole tree runs for.
    pub user: UserId,
    /// The depth the target of this hop runs at (the root's target runs at 0).
    pub depth: u32,
    /// The depth limit for the subtree: `depth < max_depth`.
    pub max_depth: u32,
    /// Children the target may have in flight at once.
    pub fan_out: u32,
    /// The absolute deadline, in milliseconds since the Unix epoch.
    pub deadline_ms: u64,
    /// Tokens left for the hop and its subtree.
    pub budget: u32,
    /// The target's effective tools: sorted, no repeats.
    pub tools: Vec<String>,
    /// Every hop from the root to this one: `depth + 1` links, each starting
    /// where the one before ended.
    pub path: Vec<Link>,
    /// The runtime that sent this hop (and signed its block).
    pub issuer: String,
    /// The runtime this hop is sent to: the only one that may verify it as
    /// the last hop, and the only one that may sign the next.
    pub audience: String,
}

/// One hop of the path: who delegated what to whom.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The delegating agent.
    pub origin: AgentSlug,
    /// The agent delegated to.
    pub target: AgentSlug,
    /// First 8 hex digits of sha256(objective) ([`crate::protocol::request::objective_hash`]).
    pub objective_hash: String,
}

impl Link {
    /// The link for `origin` asking `target` to do `objective`.
    pub fn new(origin: AgentSlug, target: AgentSlug, objective: &str) -> Self {
        Self { origin, target, objective_hash: crate::protocol::request::objective_hash(objective) }
    }
}

/// A claim that a hop may not widen; named in [`Fault::Widens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// Another tree.
    Tree,
    /// Another user.
    User,
    /// A parent that is not the previous request.
    Parent,
    /// The previous request's id again.
    Request,
    /// Not the previous depth + 1.
    Depth,
    /// A higher depth limit.
    MaxDepth,
    /// A larger fan-out.
    FanOut,
    /// A later deadline.
    Deadline,
    /// A larger budget.
    Budget,
    /// A tool the previous hop did not have.
    Tools,
    /// A path that is not the previous path plus one link from its end.
    Path,
    /// Issued by a runtime the previous hop was not sent to.
    Issuer,
}

impl Field {
    /// The claim's name in docs/LINEAGE.md.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tree => "tree",
            Self::User => "user",
            Self::Parent => "parent",
            Self::Request => "request",
            Self::Depth => "depth",
            Self::MaxDepth => "max_depth",
            Self::FanOut => "fan_out",
            Self::Deadline => "deadline_ms",
            Self::Budget => "budget",
            Self::Tools => "tools",
            Self::Path => "path",
            Self::Issuer => "issuer",
        }
    }
}

impl Claims {
    /// The claims of the next hop as wide as this one allows: same tree, user,
    /// limits and tools, one deeper, the path extended by `link`, issued by
    /// this hop's audience and sent to `audience`. Narrow the fields before
    /// signing it with [`super::KeyRing::attenuate`].
    pub fn child(&self, request: RequestId, link: Link, audience: impl Into<String>) -> Claims {
        let mut path = self.path.clone();
        path.push(link);
        Claims {
            tree: self.tree,
            parent: Some(self.request),
            request,
            user: self.user.clone(),
            depth: self.depth.saturating_add(1),
            max_depth: self.max_depth,
            fan_out: self.fan_out,
            deadline_ms: self.deadline_ms,
            budget: self.budget,
            tools: self.tools.clone(),
            path,
            issuer: self.audience.clone(),
            audience: audience.into(),
        }
    }

    /// The last link of the path: this hop.
    pub fn hop(&self) -> Option<&Link> {
        self.path.last()
    }

    /// Sorts and dedups `tools` into the form a claim carries.
    pub fn tool_set<I, S>(tools: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut out: Vec<String> = tools.into_iter().map(Into::into).collect();
        out.sort();
        out.dedup();
        out
    }

    /// Those of `tools` this hop has, in its order: what a narrower hop may carry.
    pub fn tools_within<'a>(&self, tools: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        tools.into_iter().filter(|t| self.tools.binary_search(t).is_ok()).cloned().collect()
    }

    /// The checks every block's claims pass on their own (docs/LINEAGE.md "Form").
    pub(crate) fn check_form(&self) -> Result<(), LineageError> {
        let bad = |m: String| Err(LineageError::new(Fault::Form, m));
        if !valid_name(&self.issuer) || !valid_name(&self.audience) {
            return bad("issuer and audience must be 1-64 letters, digits, '.', '_' or '-'".into());
        }
        if self.depth >= self.max_depth {
            return bad(format!("depth {} is not below max_depth {}", self.depth, self.max_depth));
        }
        if self.tools.len() > MAX_TOOLS || self.tools.iter().any(|t| t.is_empty() || t.len() > 64) {
            return bad(format!("at most {MAX_TOOLS} tools of 1-64 bytes each"));
        }
        if self.tools.windows(2).any(|w| w[0] >= w[1]) {
            return bad("tools must be sorted without repeats".into());
        }
        // a tree started by a user's turn runs its first agent at depth 0, one
        // started by an agent's envelope at depth 1 (the sender is at 0)
        let depth = usize::try_from(self.depth).unwrap_or(usize::MAX);
        if self.path.is_empty() || !(self.path.len() == depth || Some(self.path.len()) == depth.checked_add(1)) {
            return bad(format!(
                "the path has {} links; depth {} needs depth or depth + 1, at least one",
                self.path.len(),
                self.depth
            ));
        }
        if let Some(l) = self.path.iter().find(|l| !is_objective_hash(&l.objective_hash)) {
            return bad(format!("objective hash '{}' is not 8 lowercase hex digits", l.objective_hash.escape_debug()));
        }
        if self.path.windows(2).any(|w| w[1].origin != w[0].target) {
            return bad("each link of the path must start at the agent the link before ended at".into());
        }
        Ok(())
    }

    /// The rules of the first block (docs/LINEAGE.md "Root").
    pub(crate) fn check_root(&self) -> Result<(), LineageError> {
        let why = if self.parent.is_some() {
            "has a parent"
        } else if self.depth > 1 || self.path.len() != 1 {
            "is not at depth 0 or 1 with one link"
        } else if self.tree != self.request {
            "names a tree other than its own request"
        } else {
            return Ok(());
        };
        Err(LineageError::new(Fault::NotRoot, format!("the first block {why}: it is not a root")))
    }

    /// Whether this hop passes `prev`'s on to another runtime (a *relay*:
    /// same depth) rather than delegating one level down (a *hop*).
    pub fn is_relay_of(&self, prev: &Claims) -> bool {
        self.depth == prev.depth
    }

    /// Whether `self`, the next block, attenuates `prev` (docs/LINEAGE.md
    /// "Attenuation"); the error names the first claim that widens. A hop
    /// is one deeper and extends the path by one link from where it ended; a
    /// relay (the agent `prev` was sent to is a proxy for an agent on another
    /// runtime) keeps the depth and the path, but for the last link's target
    /// and objective hash (the proxy sends the objective with its PII tokenized).
    pub(crate) fn check_attenuates(&self, prev: &Claims) -> Result<(), LineageError> {
        let relay = self.is_relay_of(prev);
        let path_ok = if relay {
            let (same, last) = (prev.path.len().saturating_sub(1), prev.path.last());
            self.path.len() == prev.path.len()
                && self.path[..same] == prev.path[..same]
                && last.zip(self.path.last()).is_some_and(|(p, n)| n.origin == p.origin)
        } else {
            self.path.len() == prev.path.len() + 1
                && self.path.starts_with(&prev.path)
                && prev.path.last().zip(self.path.last()).is_some_and(|(p, n)| n.origin == p.target)
        };
        let checks = [
            (Field::Tree, self.tree == prev.tree),
            (Field::User, self.user == prev.user),
            (Field::Parent, self.parent == Some(prev.request)),
            (Field::Request, self.request != prev.request && self.request != self.tree),
            (Field::Depth, relay || prev.depth.checked_add(1) == Some(self.depth)),
            (Field::MaxDepth, self.max_depth <= prev.max_depth),
            (Field::FanOut, self.fan_out <= prev.fan_out),
            (Field::Deadline, self.deadline_ms <= prev.deadline_ms),
            (Field::Budget, self.budget <= prev.budget),
            (Field::Tools, is_subset(&self.tools, &prev.tools)),
            (Field::Path, path_ok),
            (Field::Issuer, self.issuer == prev.audience),
        ];
        match checks.into_iter().find(|(_, ok)| !ok) {
            None => Ok(()),
            Some((field, _)) => Err(LineageError::new(
                Fault::Widens(field),
                format!("hop {} widens its parent's '{}'", self.depth, field.as_str()),
            )),
        }
    }
}

fn is_objective_hash(s: &str) -> bool {
    s.len() == 8 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `small ⊆ big`, both sorted without repeats.
fn is_subset(small: &[String], big: &[String]) -> bool {
    small.iter().all(|t| big.binary_search(t).is_ok())
}
