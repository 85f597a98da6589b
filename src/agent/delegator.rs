//! The handle through which an agent delegates. It carries the calling node's
//! lineage (root and parent ids, depth, chain, remaining deadline and budget,
//! effective tools), so every nested call passes the same rails without the
//! agent doing anything. The calls go to a [`Dispatch`], which the pipeline
//! implements: agents never see the runtime.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;

use async_trait::async_trait;

use super::{Task, ToolSet};
use crate::protocol::{
    AgentSlug, ChainLink, Check, Constraints, DelegationError, DelegationRequest, DelegationResponse, ErrorCode,
    HandoffData, Mode, Priority, RequestId, RetryPolicy, SessionId, UserId,
};
use crate::rails::fanout;

/// Where a running delegation stands: what its agent's [`Delegator`] needs to
/// build its children's envelopes. The pipeline fills it in when it admits
/// the delegation; nothing in it changes while the delegation runs.
#[derive(Debug, Clone)]
pub struct Scope {
    /// This delegation's id; its children name it as their parent.
    pub request_id: RequestId,
    /// The id of the tree's root request.
    pub root_id: RequestId,
    /// The user the delegation runs for; children run for the same user.
    pub user: UserId,
    /// The agent running this delegation.
    pub agent: AgentSlug,
    /// Who delegated to this node, and from which request and session.
    pub origin: AgentSlug,
    /// The request that delegated to this node; None at the root.
    pub parent_request_id: Option<RequestId>,
    /// The origin's session this node's session hangs under; None when there is none.
    pub parent_session: Option<SessionId>,
    /// The request's idempotency key, carried along when the delegation is forwarded.
    pub idempotency_key: Option<String>,
    /// This node's own session, under which its children's sessions hang; None for a consult without one.
    pub session: Option<SessionId>,
    /// An ephemeral node's children are ephemeral too: a consult writes nothing.
    pub mode: Mode,
    /// The depth this node's agent runs at.
    pub depth: u32,
    /// The depth limit in force for this subtree; children may lower it, never raise it.
    pub max_depth: u32,
    /// When this node's time is up; children get at most what is left of it.
    pub deadline: Instant,
    /// This node's effective tools; a child's are a subset of them.
    pub tools: Arc<ToolSet>,
    /// Ancestors and this node, oldest first.
    pub chain: Vec<ChainLink>,
    /// This node's priority, inherited by children that set none.
    pub priority: Priority,
    /// The runtime's default budget and deadline of a child that sets none.
    pub max_tokens_default: u32,
    /// Deadline in milliseconds of a child that sets none (capped by what this node has left).
    pub deadline_ms_default: u64,
    /// The largest parallel batch, and children in flight at once.
    pub fan_out: u32,
    /// This delegation's place in its signed lineage, when the runtime keeps
    /// one (it sends delegations to other runtimes, or this one came from one).
    pub hop: Option<Arc<crate::lineage::Hop>>,
}

/// What the pipeline does for a running agent: every nested call goes
/// through it, so the rails apply to it as they applied to the caller. The
/// pipeline implements it; an embedder can implement it to run an agent
/// alone with its own idea of delegation (tests do).
#[async_trait]
pub trait Dispatch: Send + Sync + 'static {
    /// Runs `request`, whose lineage names the calling node, through the
    /// pipeline. Refusals and failures come back as a failed response.
    async fn dispatch(&self, request: DelegationRequest) -> DelegationResponse;

    /// Audits an action the calling agent was refused outside a delegation.
    async fn record_denied(&self, what: &str, error: &DelegationError);

    /// Audits a tool the calling agent used that is not a delegation (an
    /// MCP tool): `what` names it (`mcp:crm/lookup_customer`), `outcome`
    /// says how the call ended. The default keeps nothing.
    async fn record_tool(&self, what: &str, outcome: Result<(), &DelegationError>, duration_ms: u64) {
        let _ = (what, outcome, duration_ms);
    }

    /// Tokens the calling node can still grant to children.
    fn remaining_tokens(&self) -> u32;

    /// Whether the calling agent may take `action` now: Ok when its config
    /// does not require approval for it or a person approved it;
    /// `NEEDS_APPROVAL` (naming the approval) while nobody has answered: the
    /// agent returns that error and its delegation pauses until someone
    /// does; `APPROVAL_REJECTED` when they said no.
    async fn approval(&self, action: &str, summary: &str) -> Result<(), DelegationError> {
        let _ = (action, summary);
        Ok(())
    }

    /// Whether the calling agent may delegate to `target`: the edge is
    /// configured and the target exists.
    fn may_delegate_to(&self, target: &AgentSlug) -> bool;

    /// The lineage token that carries `request` (the calling node's
    /// delegation, forwarded: see [`Lineage::forward`]) to the runtime named
    /// `audience`; None when this runtime keeps no lineage.
    fn relay_token(&self, request: &DelegationRequest, audience: &str) -> Result<Option<String>, DelegationError> {
        let _ = (request, audience);
        Ok(None)
    }

    /// Whether answer `body` to delegation `id`, with `signature`, may be
    /// taken as the runtime `peer`'s: an error when `peer` is trusted and the
    /// signature is missing or wrong (see `lineage::reply`). Ok without a
    /// check when this runtime keeps no lineage.
    fn check_reply(
        &self,
        peer: &str,
        id: RequestId,
        body: &[u8],
        signature: Option<&str>,
    ) -> Result<(), DelegationError> {
        let _ = (peer, id, body, signature);
        Ok(())
    }
}

/// Where a running delegation stands in its tree: what an agent needs to
/// hand the delegation on to another runtime with the rails intact.
#[derive(Debug, Clone, PartialEq)]
pub struct Lineage {
    /// This delegation's id.
    pub request_id: RequestId,
    /// The id of the tree's root request.
    pub root_id: RequestId,
    /// The request that delegated to this agent; None at the root.
    pub parent_request_id: Option<RequestId>,
    /// Who delegated to this agent.
    pub origin: AgentSlug,
    /// The agent running this delegation.
    pub agent: AgentSlug,
    /// The user the delegation runs for.
    pub user: UserId,
    /// The origin's session; None when there is none.
    pub parent_session: Option<SessionId>,
    /// This agent's own session for the delegation; None for a consult without one.
    pub session: Option<SessionId>,
    /// The depth this agent runs at.
    pub depth: u32,
    /// The depth limit in force for this subtree.
    pub max_depth: u32,
    /// Ancestors of this agent, oldest first (not this agent).
    pub ancestors: Vec<ChainLink>,
    /// Time left before the deadline.
    pub remaining: Duration,
    /// Tokens this node can still grant to children.
    pub remaining_tokens: u32,
    /// This agent's effective tools.
    pub tools: ToolSet,
    /// The delegation's priority.
    pub priority: Priority,
    /// Whether the delegation writes to sessions or only reads them.
    pub mode: Mode,
    /// The request's idempotency key, if it had one.
    pub idempotency_key: Option<String>,
}

impl Lineage {
    /// The envelope that carries this delegation to another runtime: the same
    /// origin, root, depth and chain, the remaining deadline and budget, the
    /// effective tools, and the task as this agent received it (PII still
    /// tokenized). It gets a request id of its own, with this node as its
    /// parent: a loop that comes back through a proxy must never meet a node
    /// with its own id (one budget account, one record, counted twice).
    pub fn forward(&self, target: AgentSlug, task: &Task) -> DelegationRequest {
        let mut req = DelegationRequest::new(
            self.origin.clone(),
            target,
            self.user.clone(),
            task.objective.clone(),
            task.input.clone(),
        );
        req.root_request_id = Some(self.root_id);
        req.parent_request_id = Some(self.request_id);
        req.parent_session_id = self.parent_session;
        req.current_depth = self.depth.saturating_sub(1);
        req.chain = self.ancestors.clone();
        req.constraints = Constraints {
            max_tokens: self.remaining_tokens.max(1),
            max_depth: self.max_depth,
            deadline_ms: (self.remaining.as_millis() as u64).max(1),
        };
        req.context_hints = task.context_hints.clone();
        req.handoff_data = task.handoff.clone();
        req.task_note = task.task_note.clone();
        req.priority = self.priority;
        req.mode = self.mode;
        req.tools = Some(self.tools.iter().cloned().collect());
        req.idempotency_key = self.idempotency_key.clone();
        req
    }
}

/// One call an agent wants to make: target and objective, and optionally the
/// input, handoff data and tighter limits.
#[derive(Debug, Clone)]
pub struct Call {
    /// The agent to delegate to.
    pub target: AgentSlug,
    /// What the target is asked to do, in one sentence.
    pub objective: String,
    /// The material to work on; empty when the objective says it all.
    pub input: String,
    /// Facts, references and earlier results handed to the target.
    pub handoff: HandoffData,
    /// Hints for the target; capability names also steer discovery.
    pub context_hints: Vec<String>,
    /// Token budget for the call; None takes the default or an even share of what is left, whichever is smaller.
    pub max_tokens: Option<u32>,
    /// Deadline in milliseconds, capped by the time this node has left; None takes the default.
    pub deadline_ms: Option<u64>,
    /// Depth limit for the call's subtree; None inherits this node's, and a larger one is lowered to it.
    pub max_depth: Option<u32>,
    /// Persist (the default) or an ephemeral consult; an ephemeral node's calls are always ephemeral.
    pub mode: Mode,
    /// A Task Note for the target; verification checks are derived from it.
    pub task_note: Option<String>,
    /// Checks the target's output must pass.
    pub checks: Vec<Check>,
    /// Priority of the call; None inherits this node's.
    pub priority: Option<Priority>,
    /// The caller's retry wishes; None leaves them to the target's config and the priority.
    pub retry_policy: Option<RetryPolicy>,
    /// Tools granted to the target, which must be among this node's own; None adds no cap.
    pub tools: Option<Vec<String>>,
    /// A key that makes retrying the same call safe: it replays the first response.
    pub idempotency_key: Option<String>,
    /// The earlier delegation this call deliberately repeats (see [`Call::retry_of`]).
    pub retry_of: Option<RequestId>,
}

impl Call {
    /// A call to `target` with everything else left to the defaults.
    pub fn new(target: AgentSlug, objective: impl Into<String>) -> Self {
        Self {
            target,
            objective: objective.into(),
            input: String::new(),
            handoff: HandoffData::default(),
            context_hints: Vec::new(),
            max_tokens: None,
            deadline_ms: None,
            max_depth: None,
            mode: Mode::Persist,
            task_note: None,
            checks: Vec::new(),
            priority: None,
            retry_policy: None,
            tools: None,
            idempotency_key: None,
            retry_of: None,
        }
    }

    /// Marks the call as a deliberate repeat of `earlier`, a delegation of
    /// this tree that has finished: without it, the same target and
    /// objective a second time in one tree is a cycle (docs/RAILS.md#cycle).
    pub fn retry_of(mut self, earlier: RequestId) -> Self {
        self.retry_of = Some(earlier);
        self
    }

    /// A call to the agent named `target`, refusing a malformed slug.
    pub fn to(target: &str, objective: impl Into<String>) -> Result<Self, DelegationError> {
        let slug = AgentSlug::parse(target).map_err(|e| DelegationError::new(ErrorCode::AgentNotFound, e.0))?;
        Ok(Self::new(slug, objective))
    }

    /// Sets the material to work on.
    pub fn input(mut self, input: impl Into<String>) -> Self {
        self.input = input.into();
        self
    }

    /// Sets the facts, references and earlier results handed to the target.
    pub fn handoff(mut self, handoff: HandoffData) -> Self {
        self.handoff = handoff;
        self
    }

    /// Sets the call's token budget.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the call's deadline, in milliseconds.
    pub fn deadline_ms(mut self, ms: u64) -> Self {
        self.deadline_ms = Some(ms);
        self
    }

    /// Lowers the depth limit for the call's subtree.
    pub fn max_depth(mut self, n: u32) -> Self {
        self.max_depth = Some(n);
        self
    }

    /// An ephemeral consult: reads the target's history, writes nothing.
    pub fn ephemeral(mut self) -> Self {
        self.mode = Mode::Ephemeral;
        self
    }

    /// Attaches a Task Note, from which verification checks are derived.
    pub fn task_note(mut self, note: impl Into<String>) -> Self {
        self.task_note = Some(note.into());
        self
    }

    /// Grants the target only these tools (they must be among this node's own).
    pub fn tools(mut self, tools: Vec<String>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// An agent's way to delegate. Cloning is cheap.
#[derive(Clone)]
pub struct Delegator {
    scope: Arc<Scope>,
    dispatch: Arc<dyn Dispatch>,
}

impl std::fmt::Debug for Delegator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegator").finish_non_exhaustive()
    }
}

impl Delegator {
    /// A handle for the delegation `scope` describes; nested calls go to `dispatch`.
    pub fn new(scope: Arc<Scope>, dispatch: Arc<dyn Dispatch>) -> Self {
        Self { scope, dispatch }
    }

    /// Builds the envelope for `call` with this node's lineage. Limits the call
    /// does not set are inherited: the depth limit, the remaining deadline, and
    /// for tokens the smaller of the default budget and an even share
    /// (remaining ÷ fan-out) of this node's tokens.
    pub fn request(&self, call: Call) -> DelegationRequest {
        let n = &*self.scope;
        let mut req = DelegationRequest::new(n.agent.clone(), call.target, n.user.clone(), call.objective, call.input);
        req.parent_session_id = n.session;
        req.current_depth = n.depth;
        req.root_request_id = Some(n.root_id);
        req.parent_request_id = Some(n.request_id);
        req.chain = n.chain.clone();
        let remaining_ms = n.deadline.saturating_duration_since(Instant::now()).as_millis() as u64;
        // Unless the call says otherwise, a child gets an even share of what is
        // left, so that a full fan-out of children always fits the budget.
        let share = (self.dispatch.remaining_tokens() / n.fan_out.max(1)).max(1);
        req.constraints = Constraints {
            max_tokens: call.max_tokens.unwrap_or(n.max_tokens_default.min(share)),
            max_depth: call.max_depth.map_or(n.max_depth, |d| d.min(n.max_depth)),
            deadline_ms: call.deadline_ms.unwrap_or(n.deadline_ms_default).min(remaining_ms.max(1)),
        };
        req.context_hints = call.context_hints;
        req.handoff_data = call.handoff;
        req.mode = if n.mode == Mode::Ephemeral { Mode::Ephemeral } else { call.mode };
        req.task_note = call.task_note;
        req.checks = call.checks;
        req.priority = call.priority.unwrap_or(n.priority);
        req.retry_policy = call.retry_policy;
        req.tools = call.tools;
        req.idempotency_key = call.idempotency_key;
        req.retry_of = call.retry_of;
        req
    }

    /// Delegates one task. Refusals and failures come back as a failed response.
    pub async fn delegate(&self, call: Call) -> DelegationResponse {
        self.dispatch.dispatch(self.request(call)).await
    }

    /// Delegates several tasks concurrently. A batch larger than the fan-out
    /// limit is refused before any call is sent; otherwise every response comes
    /// back, in order, each succeeding or failing on its own.
    pub async fn delegate_parallel(&self, calls: Vec<Call>) -> Result<Vec<DelegationResponse>, DelegationError> {
        fanout::check_batch(calls.len(), self.scope.fan_out)?;
        Ok(join_all(calls.into_iter().map(|c| self.delegate(c))).await)
    }

    /// Asks for a person's approval of `action` when this agent's config
    /// requires it (see [`Dispatch::approval`]); `summary` says what would be done.
    pub async fn approval(&self, action: &str, summary: &str) -> Result<(), DelegationError> {
        self.dispatch.approval(action, summary).await
    }

    /// Audits an action this agent was refused outside a delegation (a tool
    /// it was not offered): one refused record in its tree.
    pub async fn record_denied(&self, what: &str, error: &DelegationError) {
        self.dispatch.record_denied(what, error).await;
    }

    /// Audits a tool this agent used that is not a delegation (an MCP
    /// tool): one record in its tree, with the outcome (see [`Dispatch::record_tool`]).
    pub async fn record_tool(&self, what: &str, outcome: Result<(), &DelegationError>, duration_ms: u64) {
        self.dispatch.record_tool(what, outcome, duration_ms).await;
    }

    /// The signed lineage token for `request`, this delegation forwarded to
    /// the runtime named `audience` (see [`Dispatch::relay_token`]).
    pub fn relay_token(&self, request: &DelegationRequest, audience: &str) -> Result<Option<String>, DelegationError> {
        self.dispatch.relay_token(request, audience)
    }

    /// Whether an answer to delegation `id` may be taken as `peer`'s (see [`Dispatch::check_reply`]).
    pub fn check_reply(
        &self,
        peer: &str,
        id: RequestId,
        body: &[u8],
        signature: Option<&str>,
    ) -> Result<(), DelegationError> {
        self.dispatch.check_reply(peer, id, body, signature)
    }

    /// Where this delegation stands in its tree.
    pub fn lineage(&self) -> Lineage {
        let n = &*self.scope;
        Lineage {
            request_id: n.request_id,
            root_id: n.root_id,
            parent_request_id: n.parent_request_id,
            origin: n.origin.clone(),
            agent: n.agent.clone(),
            user: n.user.clone(),
            parent_session: n.parent_session,
            session: n.session,
            depth: n.depth,
            max_depth: n.max_depth,
            ancestors: n.chain[..n.chain.len().saturating_sub(1)].to_vec(),
            remaining: n.deadline.saturating_duration_since(Instant::now()),
            remaining_tokens: self.dispatch.remaining_tokens(),
            tools: (*n.tools).clone(),
            priority: n.priority,
            mode: n.mode,
            idempotency_key: n.idempotency_key.clone(),
        }
    }

    /// The agent this handle delegates for.
    pub fn agent(&self) -> &AgentSlug {
        &self.scope.agent
    }

    /// The user the delegation runs for.
    pub fn user(&self) -> &UserId {
        &self.scope.user
    }

    /// This delegation's id.
    pub fn request_id(&self) -> RequestId {
        self.scope.request_id
    }

    /// The id of the tree's root request.
    pub fn root_id(&self) -> RequestId {
        self.scope.root_id
    }

    /// The depth this node's agent runs at.
    pub fn depth(&self) -> u32 {
        self.scope.depth
    }

    /// The depth limit in force for this subtree.
    pub fn max_depth(&self) -> u32 {
        self.scope.max_depth
    }

    /// Time left before this node's deadline.
    pub fn remaining_time(&self) -> Duration {
        self.scope.deadline.saturating_duration_since(Instant::now())
    }

    /// Tokens this node can still grant to children.
    pub fn remaining_tokens(&self) -> u32 {
        self.dispatch.remaining_tokens()
    }

    /// The largest parallel batch allowed.
    pub fn fan_out(&self) -> u32 {
        self.scope.fan_out
    }

    /// Whether this node's agent may delegate to `target` per the configuration.
    pub fn may_delegate_to(&self, target: &AgentSlug) -> bool {
        self.dispatch.may_delegate_to(target)
    }
}
