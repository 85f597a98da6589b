//! Admission: every rail before the agent runs, in the order of
//! docs/DESIGN.md#the-flow-of-one-delegation:
//! validate → lineage → authenticate → route → authorize → depth → fan-out
//! → cycle → deadline → budget → sessions. What passes becomes an
//! [`Admitted`] delegation with its [`Node`]; what does not comes back as
//! [`Refused`] with the request (and the tree, if it was entered) for the record.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::entry::{Entry, Step};
use super::node::Node;
use super::route;
use super::sessions::{self, Sessions};
use crate::agent::{Scope, ToolSet};
use crate::auth::Principal;
use crate::config::{AgentSpec, AuthConfig};
use crate::lineage::{self, Claims, Fault, Hop, LineageError, Link};
use crate::protocol::AgentSlug;
use crate::protocol::{ChainLink, DelegationError, DelegationRequest, ErrorCode, Mode};
use crate::rails::budget::BudgetAccount;
use crate::rails::cycle::{self, CyclePermit};
use crate::rails::fanout::{self, FanOutPermit};
use crate::rails::{Entering, Tree, auth, deadline, depth, validate};
use crate::runtime::{Member, Runtime, Top};

/// A delegation that passed every rail and may run. Its permits (fan-out
/// place, cycle key, budget account) are released when it drops.
pub(crate) struct Admitted {
    pub req: DelegationRequest,
    pub member: Member,
    pub node: Arc<Node>,
    pub budget: BudgetAccount,
    pub sessions: Sessions,
    /// The delegation's own deadline, in milliseconds from admission.
    pub deadline_ms: u64,
    _fan_out: Option<FanOutPermit>,
    _cycle: Option<CyclePermit>,
}

/// A delegation a rail refused: the request as far as admission got, and its tree if it was entered.
pub(crate) struct Refused {
    pub req: DelegationRequest,
    pub tree: Option<Arc<Tree>>,
    pub error: DelegationError,
}

impl Refused {
    /// Refuses an admitted delegation (its permits are released now).
    pub(super) fn admitted(adm: Admitted, error: DelegationError) -> Self {
        let (req, tree) = (adm.req.clone(), adm.node.tree.clone());
        drop(adm);
        Self { req, tree: Some(tree), error }
    }
}

/// Every rail, in order, for one [`Step`]. A resumed one is a top step the journal holds (it was
/// admitted before, with whatever proof its door asked for): it is a member
/// of its tree, as a hop its lineage token proves is.
pub(crate) async fn admit(rt: &Runtime, step: Step<'_>) -> Result<Admitted, Refused> {
    let Step { parent, caller, mut req, entry, resumed, .. } = step;
    // a user's own turn starts a tree at depth 0; anything else is a delegation
    let user_turn = matches!(entry, Entry::UserTurn) && parent.is_none() && caller.user().is_some();
    let (remote, signed) = match &entry {
        Entry::Remote(hop) if parent.is_none() => (true, hop.as_ref()),
        _ => (false, None),
    };
    let mut tree = None;
    match rails(rt, parent, caller, &mut req, Edge { user_turn, remote, signed, resumed }, &mut tree).await {
        Ok(p) => Ok(Admitted {
            req,
            member: p.member,
            node: p.node,
            budget: p.budget,
            sessions: p.sessions,
            deadline_ms: p.deadline_ms,
            _fan_out: p.fan_out,
            _cycle: p.cycle,
        }),
        Err(error) => Err(Refused { req, tree, error }),
    }
}

/// What the rails granted, for [`Admitted`].
struct Passed {
    member: Member,
    node: Arc<Node>,
    budget: BudgetAccount,
    sessions: Sessions,
    deadline_ms: u64,
    fan_out: Option<FanOutPermit>,
    cycle: Option<CyclePermit>,
}

/// How a delegation without a parent node in this process came in.
#[derive(Clone, Copy)]
struct Edge<'a> {
    /// A user's own turn: the root of a new tree.
    user_turn: bool,
    /// From another process.
    remote: bool,
    /// From another runtime, with a verified lineage token.
    signed: Option<&'a Arc<Hop>>,
    /// From the journal: admitted before, a member of its tree.
    resumed: bool,
}

/// How far the receiver's clock may run ahead of the sender's deadline.
const DEADLINE_SKEW_MS: u64 = 2_000;

async fn rails(
    rt: &Runtime,
    parent: Option<&Arc<Node>>,
    caller: &Principal,
    req: &mut DelegationRequest,
    edge: Edge<'_>,
    entered: &mut Option<Arc<Tree>>,
) -> Result<Passed, DelegationError> {
    let inner = &*rt.inner;
    let limits = &inner.config.limits;
    let user_turn = edge.user_turn;

    // validate: the envelope itself
    validate::request(req, limits)?;
    // lineage: the parent node is authoritative for in-process calls; a hop
    // from another runtime is what its verified token says (an agent's
    // envelope without one must start a tree: checked once it is authenticated)
    match (parent, edge.signed, caller) {
        (Some(p), _, _) => {
            req.user_id = p.user.clone();
            req.current_depth = p.depth;
            req.root_request_id = Some(p.root_id);
            req.parent_request_id = Some(p.request_id);
            req.chain = p.chain.clone();
        }
        (None, Some(hop), _) => from_token(req, hop.claims())?,
        (None, None, _) => {}
    }
    // authenticate: the origin is the caller (a user's turn has no origin agent)
    let origin: Option<Arc<AgentSpec>> = if user_turn {
        None
    } else {
        auth::authenticate(caller, &req.origin_employee)?;
        let spec = inner.registry.get(&req.origin_employee).map(|m| m.spec.clone());
        Some(spec.ok_or_else(|| {
            DelegationError::new(
                ErrorCode::AgentNotFound,
                format!(
                    "origin agent '{}' is not registered; list agents with `switchboard agents`",
                    req.origin_employee
                ),
            )
        })?)
    };
    // route: the named target, a domain's member, or discovered
    let member = route::target(rt, req, origin.as_deref()).await?;
    let target = member.spec.clone();
    // authorize: the edge, the user, the tools
    if let Some(origin) = &origin {
        auth::authorize_edge(origin, &target)?;
    }
    auth::authorize_user(&target, &req.user_id)?;
    let caller_tools: ToolSet = match (parent, &origin) {
        (Some(p), _) => (*p.tools).clone(),
        (None, Some(origin)) => origin.tools_allowed.clone(),
        (None, None) => target.tools_allowed.clone(),
    };
    let tools = auth::effective_tools(&target, &caller_tools, req.tools.as_deref())?;
    // from another process without a token: only an agent trusted to start trees for this user
    if let (true, None, Principal::Agent(agent)) = (edge.remote, edge.signed, caller) {
        unsigned(&inner.config.auth, agent, req)?;
    }

    // the tree's rails: depth, fan-out, cycle, deadline, budget
    // at the edge, the tree takes its conversation's vault: a token means
    // the same value in every turn of a session and nothing elsewhere
    let at_edge = parent.is_none();
    let session_vault = req.child_session_id.filter(|_| at_edge).and_then(|s| inner.vaults.get(&req.user_id, s));
    // a top step resumed from the journal: the vault its tree had, opened again
    let session_vault = session_vault
        .or_else(|| at_edge.then(|| crate::util::lock(&inner.resumed_vaults).remove(&req.request_id)).flatten());
    // a tree is joined by its members (a node here, a hop its lineage proves) and by whoever
    // started it; anyone else naming it is refused before anything of it is touched
    let author = caller.key();
    let proven = parent.is_some() || edge.signed.is_some() || edge.resumed;
    let entering = if proven { Entering::Member } else { Entering::Caller(&author) };
    if let (false, Some(root)) = (proven, req.root_request_id.filter(|r| *r != req.request_id)) {
        // a tree not live here: the store says whose it is
        if inner.store.step(root).await?.is_some_and(|t| t.user_id != req.user_id || t.caller != author) {
            return Err(id_conflict(req, &format!("tree {root}")));
        }
    }
    let tree = inner
        .trees
        .enter_with(&req.user_id, req.root_id(), session_vault, entering)
        .map_err(|_| id_conflict(req, &format!("tree {}", req.root_id())))?;
    *entered = Some(tree.clone());
    let (depth, max_depth) = if user_turn {
        (0, req.constraints.max_depth.min(limits.max_depth_ceiling))
    } else {
        let inherited = parent.map_or(limits.max_depth_ceiling, |p| p.max_depth);
        let d = depth::check(req.current_depth, req.constraints.max_depth, inherited)?;
        (d.target, d.max)
    };
    let fan_out = match req.parent_request_id {
        Some(p) if !user_turn => Some(fanout::acquire(&tree, p, limits.fan_out)?),
        _ => None,
    };
    let objective_hash = cycle::objective_hash(&req.objective);
    let cycle = match user_turn {
        true => None,
        false => {
            let repeat =
                cycle::Repeat { retry_of: req.retry_of.is_some(), idempotency_key: req.idempotency_key.as_deref() };
            Some(cycle::acquire(
                &tree,
                &req.origin_employee,
                &req.target_employee,
                &objective_hash,
                &req.chain,
                repeat,
            )?)
        }
    };
    let now = Instant::now();
    let requested_ms =
        req.constraints.deadline_ms.min(target.limits.deadline_ms.unwrap_or(u64::MAX)).min(limits.max_deadline_ms);
    let margin = Duration::from_millis(limits.deadline_margin_ms);
    let deadline_at =
        deadline::child_deadline(now, Duration::from_millis(requested_ms), parent.map(|p| p.deadline), margin)?;
    let requested_tokens =
        req.constraints.max_tokens.min(target.limits.max_tokens.unwrap_or(u32::MAX)).min(limits.max_tokens_ceiling);
    if parent.is_some_and(|p| !p.budget_open()) {
        return Err(DelegationError::new(ErrorCode::Cancelled, "the parent delegation has already finished"));
    }
    let budget = BudgetAccount::open(&tree, req.request_id, req.parent_request_id, requested_tokens)?;

    // sessions: user isolation, enforced against the store
    let sessions = sessions::resolve(&*inner.store, req, parent.and_then(|p| p.session)).await?;
    if let Some(child) = sessions.child.as_ref().filter(|_| at_edge && req.mode == Mode::Persist) {
        inner.vaults.keep(&req.user_id, child.id, tree.shared_vault());
    }

    let mut chain: Vec<ChainLink> = if user_turn { Vec::new() } else { req.chain.clone() };
    chain.push(ChainLink { agent: req.target_employee.clone(), objective_hash });
    let scope = Scope {
        request_id: req.request_id,
        root_id: req.root_id(),
        user: req.user_id.clone(),
        agent: req.target_employee.clone(),
        origin: req.origin_employee.clone(),
        parent_request_id: req.parent_request_id,
        parent_session: sessions.parent.as_ref().map(|p| p.id),
        idempotency_key: req.idempotency_key.clone(),
        session: sessions.child.as_ref().map(|c| c.id),
        mode: req.mode,
        depth,
        max_depth,
        deadline: deadline_at,
        tools: Arc::new(tools),
        chain,
        priority: req.priority,
        max_tokens_default: limits.max_tokens,
        deadline_ms_default: limits.deadline_ms,
        fan_out: limits.fan_out,
        hop: None,
    };
    let cancel = parent.map_or_else(CancellationToken::new, |p| p.cancel.child_token());
    let top = parent.map_or_else(|| Top::new(rt, req.request_id, cancel.clone()), |p| p.top.clone());
    let mut scope = scope;
    if let Some(h) = edge.signed {
        scope.fan_out = scope.fan_out.min(h.claims().fan_out);
    }
    if inner.keeps_lineage || edge.signed.is_some() {
        scope.hop = Some(node_hop(rt, parent, edge.signed, &scope, req, budget.grant()));
    }
    Ok(Passed {
        node: Arc::new(Node::new(scope, tree, cancel, top)),
        deadline_ms: deadline_at.saturating_duration_since(now).as_millis() as u64,
        member,
        budget,
        sessions,
        fan_out,
        cycle,
    })
}

/// A refusal of an envelope that names an id another caller owns: nothing
/// of theirs is touched, and nothing says whose it is.
pub(super) fn id_conflict(req: &DelegationRequest, what: &str) -> DelegationError {
    DelegationError::new(
        ErrorCode::IdConflict,
        format!(
            "request {} names {what}, which another caller started: ids belong to whoever made them; \
             send a new request_id (and no root_request_id) to start a tree of your own",
            req.request_id
        ),
    )
}

/// The rails of a hop from another runtime come from its verified token:
/// an envelope that disagrees is refused; its limits may only be lower.
fn from_token(req: &mut DelegationRequest, claims: &Claims) -> Result<(), DelegationError> {
    let now = lineage::now_ms();
    lineage::check_envelope(claims, req, now, DEADLINE_SKEW_MS)?;
    let c = &mut req.constraints;
    c.deadline_ms = c.deadline_ms.min(claims.deadline_ms.saturating_sub(now).max(1));
    c.max_tokens = c.max_tokens.min(claims.budget);
    c.max_depth = c.max_depth.min(claims.max_depth);
    // check_envelope refused tools beyond the token's
    req.tools.get_or_insert_with(|| claims.tools.clone());
    Ok(())
}

/// An agent's envelope from another process without a lineage token: only
/// from an agent `[auth] service_roots` trusts to start trees for this user
/// (its declared depth and chain are kept: it could start afresh anyway).
/// Any other agent's depth, chain, user and limits are not taken on its word.
fn unsigned(auth: &AuthConfig, agent: &AgentSlug, req: &DelegationRequest) -> Result<(), DelegationError> {
    if auth.may_start_tree(agent.as_str(), req.user_id.as_str()) {
        return Ok(());
    }
    Err(LineageError::new(
        Fault::Missing,
        format!(
            "agent '{agent}' may not start a tree for user '{}' here ([auth] service_roots), so its \
             delegation must carry the lineage token of the runtime that sent it (HTTP header \
             X-Switchboard-Lineage, or the A2A lineage extension): its depth, chain, user and limits are \
             not taken on its word",
            req.user_id
        ),
    )
    .into())
}

/// The node's place in the signed lineage: its parent's narrowed to what it
/// was granted, the token's that brought it, or a new root.
fn node_hop(
    rt: &Runtime,
    parent: Option<&Arc<Node>>,
    signed: Option<&Arc<Hop>>,
    scope: &Scope,
    req: &DelegationRequest,
    budget: u32,
) -> Arc<Hop> {
    if let Some(h) = signed {
        return h.clone();
    }
    let me = rt.inner.lineage.name().to_string();
    let deadline_ms =
        lineage::now_ms().saturating_add(scope.deadline.saturating_duration_since(Instant::now()).as_millis() as u64);
    let link = Link::new(req.origin_employee.clone(), req.target_employee.clone(), &req.objective);
    let tools = Claims::tool_set(scope.tools.iter().cloned());
    match parent.and_then(|p| p.hop.as_ref()) {
        Some(ph) => {
            let p = ph.claims();
            let mut c = p.child(req.request_id, link, me);
            c.max_depth = c.max_depth.min(scope.max_depth);
            c.fan_out = c.fan_out.min(scope.fan_out);
            c.deadline_ms = c.deadline_ms.min(deadline_ms);
            c.budget = c.budget.min(budget);
            c.tools = p.tools_within(&tools);
            Hop::child(ph, c)
        }
        None => Hop::root(Claims {
            tree: scope.root_id,
            parent: None,
            request: scope.request_id,
            user: scope.user.clone(),
            depth: scope.depth,
            max_depth: scope.max_depth,
            fan_out: scope.fan_out,
            deadline_ms,
            budget,
            tools,
            path: vec![link],
            issuer: me.clone(),
            audience: me,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::{Flaky, request, runtime};
    use crate::protocol::AgentSlug;

    async fn try_admit(rt: &Runtime, caller: &Principal, req: DelegationRequest) -> Result<Admitted, ErrorCode> {
        let step = Step {
            parent: None,
            caller,
            req,
            entry: Entry::Delegation,
            resumed: false,
            end: crate::store::Durability::Now,
        };
        admit(rt, step).await.map_err(|r| r.error.code)
    }

    fn rt() -> Runtime {
        runtime(Flaky::new(0, ErrorCode::AgentFailed).0)
    }

    #[tokio::test]
    async fn an_admitted_delegation_is_one_deeper_inside_the_limits() {
        let rt = rt();
        let adm = try_admit(&rt, &Principal::Admin, request("boss", "worker", "Say it", "hi")).await.ok().unwrap();
        assert_eq!(adm.node.depth, 1);
        assert_eq!(adm.member.spec.slug.as_str(), "worker");
        assert!(adm.deadline_ms <= rt.config().limits.max_deadline_ms);
        assert!(adm.budget.grant() <= rt.config().limits.max_tokens_ceiling);
    }

    #[tokio::test]
    async fn each_rail_refuses_with_its_own_code() {
        let rt = rt();
        let admin = Principal::Admin;
        // authenticate: an agent may send only as itself
        let as_worker = Principal::Agent(AgentSlug::parse("worker").unwrap());
        assert_eq!(
            try_admit(&rt, &as_worker, request("boss", "worker", "x", "")).await.err(),
            Some(ErrorCode::Unauthenticated)
        );
        // route: no such target
        assert_eq!(
            try_admit(&rt, &admin, request("boss", "ghost", "x", "")).await.err(),
            Some(ErrorCode::AgentNotFound)
        );
        // authorize: stranger may delegate to nobody
        assert_eq!(
            try_admit(&rt, &admin, request("stranger", "worker", "x", "")).await.err(),
            Some(ErrorCode::DelegationNotAllowed)
        );
        // depth: one more hop would reach the request's max_depth (2)
        let mut deep = request("boss", "worker", "x", "");
        deep.current_depth = 1;
        assert_eq!(try_admit(&rt, &admin, deep).await.err(), Some(ErrorCode::DepthLimit));
        // validate: an empty objective
        assert_eq!(
            try_admit(&rt, &admin, request("boss", "worker", " ", "")).await.err(),
            Some(ErrorCode::InvalidRequest)
        );
    }

    #[tokio::test]
    async fn the_same_objective_twice_in_one_chain_is_a_cycle_while_the_first_runs() {
        let rt = rt();
        let first =
            try_admit(&rt, &Principal::Admin, request("boss", "worker", "Loop forever", "")).await.ok().unwrap();
        let mut again = request("boss", "worker", "Loop forever", "");
        again.root_request_id = Some(first.node.root_id);
        again.parent_request_id = Some(first.req.request_id);
        again.chain = first.node.chain.clone();
        assert_eq!(try_admit(&rt, &Principal::Admin, again.clone()).await.err(), Some(ErrorCode::CycleDetected));
        drop(first);
        // released with its permits: nothing is left running in the tree
        assert_eq!(rt.live_trees(), 0);
    }
}
