//! The lineage of a running delegation ([`Hop`]): its claims, and the chain
//! of blocks up to it, signed only when a hop leaves the process.
//!
//! Every node of a tree gets a `Hop` when it is admitted: a root's claims, the
//! verified claims of a token that brought it here, or its parent's claims
//! narrowed to what it was granted. Nothing is signed then. Only when a node
//! sends a delegation to another runtime ([`Hop::relay`]) are the blocks from
//! the last signed one down to the relay signed, with one signature (token
//! version 2): a tree that never leaves the process pays for no signature,
//! and one that does pays for one per hop out, however deep it ran here.

use std::sync::{Arc, OnceLock};

use super::{Claims, Fault, KeyRing, LineageError, Link, Token};

/// One delegation's place in its lineage.
#[derive(Debug)]
pub struct Hop {
    parent: Option<Arc<Hop>>,
    claims: Claims,
    chain: OnceLock<Chain>,
}

/// What a hop's token is made of: the signed token it descends from (empty
/// for a tree started here), and the claims of this process's blocks below
/// it, down to the hop, checked and not signed.
#[derive(Debug, Clone)]
struct Chain {
    base: Token,
    ours: Vec<Claims>,
}

impl Hop {
    /// The first hop of a tree started here; signed as a root when it is
    /// first needed.
    pub fn root(claims: Claims) -> Arc<Hop> {
        Arc::new(Hop { parent: None, claims, chain: OnceLock::new() })
    }

    /// A hop that came in with a verified `token` whose last claims are `claims`.
    pub fn received(token: Token, claims: Claims) -> Arc<Hop> {
        let chain = Chain { base: token, ours: Vec::new() };
        Arc::new(Hop { parent: None, claims, chain: OnceLock::from(chain) })
    }

    /// A child of `parent` in this process, with `claims` (which must
    /// attenuate the parent's; checked when it is first needed).
    pub fn child(parent: &Arc<Hop>, claims: Claims) -> Arc<Hop> {
        Arc::new(Hop { parent: Some(parent.clone()), claims, chain: OnceLock::new() })
    }

    /// What this hop may do.
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    /// The chain up to this hop: the blocks above it checked once (each
    /// against its parent) and kept; nothing is signed.
    fn chain(&self, ring: &KeyRing) -> Result<&Chain, LineageError> {
        if let Some(c) = self.chain.get() {
            return Ok(c);
        }
        let chain = match &self.parent {
            None => Chain { base: ring.new_token(), ours: vec![ring.checked_root(self.claims.clone())?] },
            Some(p) => {
                let mut chain = p.chain(ring)?.clone();
                chain.ours.push(ring.checked_child(&p.claims, self.claims.clone())?);
                chain
            }
        };
        Ok(self.chain.get_or_init(|| chain))
    }

    /// The signed token that ends with this hop: this process's blocks above
    /// it signed with `ring` now, with one signature.
    pub fn token(&self, ring: &KeyRing) -> Result<Token, LineageError> {
        let chain = self.chain(ring)?;
        if chain.ours.is_empty() {
            return Ok(chain.base.clone());
        }
        ring.seal(&chain.base, &chain.ours.iter().collect::<Vec<_>>())
    }

    /// The token for sending this hop's delegation on to the runtime
    /// `audience` as request `request`, to `target` there: the same depth and
    /// path (a relay: this node's agent is a proxy for `target`; the last
    /// link names `target` and the objective as sent), `parent` =
    /// this hop's request, the limits as given (they may only narrow).
    pub fn relay(&self, ring: &KeyRing, next: Relay<'_>) -> Result<Token, LineageError> {
        let c = &self.claims;
        let mut path = c.path.clone();
        let last = path.last_mut().ok_or_else(|| LineageError::new(Fault::Form, "a hop without a path"))?;
        *last = Link::new(last.origin.clone(), next.target.clone(), next.objective);
        let claims = Claims {
            tree: c.tree,
            parent: Some(c.request),
            request: next.request,
            user: c.user.clone(),
            depth: c.depth,
            max_depth: c.max_depth.min(next.max_depth),
            fan_out: c.fan_out,
            deadline_ms: c.deadline_ms.min(next.deadline_ms),
            budget: c.budget.min(next.budget),
            tools: c.tools_within(next.tools),
            path,
            issuer: c.audience.clone(),
            audience: next.audience.to_string(),
        };
        let relay = ring.checked_child(c, claims)?;
        let chain = self.chain(ring)?;
        ring.seal(&chain.base, &chain.ours.iter().chain([&relay]).collect::<Vec<_>>())
    }
}

/// What a relayed delegation is: see [`Hop::relay`].
#[derive(Debug, Clone)]
pub struct Relay<'a> {
    /// The relayed request's id.
    pub request: crate::protocol::RequestId,
    /// The agent it is sent to on the other runtime.
    pub target: &'a crate::protocol::AgentSlug,
    /// Its objective, as sent.
    pub objective: &'a str,
    /// The runtime it is sent to.
    pub audience: &'a str,
    /// Its absolute deadline, ms since the epoch.
    pub deadline_ms: u64,
    /// Its budget.
    pub budget: u32,
    /// Its depth limit.
    pub max_depth: u32,
    /// The tools it grants, sorted without repeats.
    pub tools: &'a [String],
}
