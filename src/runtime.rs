//! The pipeline of DESIGN §1, composed in one place:
//!
//! ```text
//! validate → authenticate → route → authorize → depth → fan-out → cycle
//!   → deadline → budget → sessions → [breaker → redact/assemble → attempt
//!   → verify → retry]* → persist → audit → response
//! ```
//!
//! Every delegation, whether it comes from the CLI, HTTP or an agent's
//! [`Delegator`], goes through [`Runtime::dispatch`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::{Agent, AgentContext, AgentOutput, HistoryMessage, Task, ToolSet};
use crate::config::{AgentSpec, Config};
use crate::delegator::{Delegator, Node};
use crate::events::{Event, Events};
use crate::protocol::{
    AgentSlug, ChainLink, Constraints, DelegationError, DelegationRequest, DelegationResponse, ErrorClass, ErrorCode,
    Execution, Fallback, Learned, Mode, NewFact, RequestId, SessionId, Status, TokenUsage, UserId, Verdict,
};
use crate::rails::auth::{self, Caller};
use crate::rails::budget::{self, BudgetAccount};
use crate::rails::cycle::{self, CyclePermit};
use crate::rails::fanout::{self, FanOutPermit};
use crate::rails::isolation::{self, Sessions};
use crate::rails::{Tree, Trees, deadline, depth, validate};
use crate::redact::Redactor;
use crate::resilience::{BreakerConfig, BreakerState, Breakers, Next, RetryPlan};
use crate::route::{DomainTable, Member, Registry, discover, history};
use crate::store::{AuditRecord, Claim, Conversation, DelegationRecord, Fact, MemoryStore, Message, Store, now_ms};
use crate::telemetry::{Metrics, Observation};
use crate::{tokens, verify};

/// How many of the target's recent messages reach it (seeds/002).
const HISTORY_MESSAGES: usize = 5;

/// How often a repeated request looks whether the first one finished.
const IDEMPOTENCY_POLL: Duration = Duration::from_millis(25);

/// The origin recorded for a user's own message to Prime.
pub const USER_ORIGIN: &str = "user";

/// The delegation runtime. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    registry: Registry,
    domains: DomainTable,
    store: Arc<dyn Store>,
    trees: Arc<Trees>,
    breakers: Breakers,
    redactor: Redactor,
    events: Events,
    metrics: Metrics,
    /// Running delegations' cancellation, by request id.
    running: std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
}

/// Builds a [`Runtime`]; every part has an embedded default.
#[derive(Default)]
pub struct RuntimeBuilder {
    config: Option<Config>,
    store: Option<Arc<dyn Store>>,
    agents: HashMap<AgentSlug, Arc<dyn Agent>>,
    specs: Vec<AgentSpec>,
    breaker: BreakerConfig,
}

impl RuntimeBuilder {
    /// The configuration (default: the built-in team).
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The store (default: in memory).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Supplies the implementation of a declared agent.
    pub fn agent(mut self, slug: &str, agent: impl Agent) -> Self {
        if let Ok(slug) = AgentSlug::parse(slug) {
            self.agents.insert(slug, Arc::new(agent));
        }
        self
    }

    /// Declares an extra agent (replacing a declared one with the same slug).
    pub fn spec(mut self, spec: AgentSpec) -> Self {
        self.specs.push(spec);
        self
    }

    pub fn breaker(mut self, cfg: BreakerConfig) -> Self {
        self.breaker = cfg;
        self
    }

    pub fn build(self) -> Result<Runtime, DelegationError> {
        let mut config = self.config.unwrap_or_else(Config::builtin);
        for spec in self.specs {
            config.agents.retain(|a| a.slug != spec.slug);
            config.agents.push(spec);
        }
        config.validate()?;
        let registry = Registry::build(&config, &self.agents)?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                trees: Trees::new(),
                breakers: Breakers::new(self.breaker),
                redactor: Redactor::new(),
                events: Events::default(),
                domains: DomainTable::from_config(&config),
                metrics: Metrics::new(config.agents.iter().map(|a| &a.slug)),
                running: Default::default(),
                registry,
                config,
            }),
        })
    }
}

/// A delegation that passed every rail and may run.
struct Admitted {
    req: DelegationRequest,
    member: Member,
    node: Arc<Node>,
    budget: BudgetAccount,
    sessions: Sessions,
    deadline_ms: u64,
    _fan_out: Option<FanOutPermit>,
    _cycle: Option<CyclePermit>,
}

/// What the attempt loop produced.
struct Attempts {
    result: Result<AgentOutput, DelegationError>,
    execution: Execution,
    verdict: Option<Verdict>,
    learned: Option<Learned>,
    usage: TokenUsage,
}

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
}

/// Prime's answer with the tree of work behind it.
#[derive(Debug, Clone, Serialize)]
pub struct AskResponse {
    pub answer: String,
    pub session_id: SessionId,
    pub request_id: RequestId,
    pub status: Status,
    pub tree: TreeView,
    #[serde(skip)]
    pub response: DelegationResponse,
}

/// One node of a delegation tree as shown to people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeView {
    pub request_id: RequestId,
    pub agent: String,
    pub origin: String,
    pub objective: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub attempts: u32,
    pub duration_ms: u64,
    pub tokens: u32,
    pub children: Vec<TreeView>,
}

impl TreeView {
    /// Nests flat records by parent; the records' root (or the earliest node) is the top.
    pub fn from_records(records: &[DelegationRecord]) -> Option<TreeView> {
        fn build(r: &DelegationRecord, all: &[DelegationRecord], depth: usize) -> TreeView {
            let children = if depth > 64 {
                Vec::new()
            } else {
                all.iter().filter(|c| c.parent_id == Some(r.request_id)).map(|c| build(c, all, depth + 1)).collect()
            };
            TreeView {
                request_id: r.request_id,
                agent: r.target.clone(),
                origin: r.origin.clone(),
                objective: r.objective.clone(),
                status: r.status.clone(),
                error_code: r.error_code.clone(),
                attempts: r.attempts,
                duration_ms: r.duration_ms,
                tokens: r.tokens.total,
                children,
            }
        }
        let ids: std::collections::HashSet<RequestId> = records.iter().map(|r| r.request_id).collect();
        let top = records
            .iter()
            .find(|r| r.request_id == r.root_id)
            .or_else(|| records.iter().find(|r| r.parent_id.is_none_or(|p| !ids.contains(&p))))?;
        Some(build(top, records, 0))
    }

    /// Indented text: agent, objective, status, milliseconds.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out, "", true, true);
        out
    }

    fn render_into(&self, out: &mut String, prefix: &str, last: bool, top: bool) {
        let branch = if top {
            ""
        } else if last {
            "└─ "
        } else {
            "├─ "
        };
        let code = self.error_code.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
        out.push_str(&format!(
            "{prefix}{branch}{} \"{}\" {}{code} {} ms\n",
            self.agent, self.objective, self.status, self.duration_ms
        ));
        let child_prefix = if top { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
        for (i, c) in self.children.iter().enumerate() {
            c.render_into(out, &child_prefix, i + 1 == self.children.len(), false);
        }
    }

    /// Every node, depth first.
    pub fn nodes(&self) -> Vec<&TreeView> {
        let mut v = vec![self];
        for c in &self.children {
            v.extend(c.nodes());
        }
        v
    }
}

impl Runtime {
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The built-in team with an in-memory store.
    pub fn embedded() -> Self {
        Self::builder().build().expect("the built-in configuration is valid")
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    pub fn breaker_state(&self, slug: &AgentSlug) -> BreakerState {
        self.inner.breakers.state(slug)
    }

    /// Cancels a running delegation and, through its children's tokens,
    /// everything it delegated. False when no such delegation runs here.
    pub fn cancel(&self, request: RequestId) -> bool {
        let token = crate::util::lock(&self.inner.running).get(&request).cloned();
        token.map(|t| t.cancel()).is_some()
    }

    /// The Prometheus text exposition of this runtime's metrics.
    pub fn metrics_text(&self) -> String {
        self.inner.metrics.render(&self.inner.breakers)
    }

    /// Trees with delegations still running (zero when the runtime is idle).
    pub fn live_trees(&self) -> usize {
        self.inner.trees.len()
    }

    /// One delegation from outside the runtime (CLI, HTTP). The response is
    /// never an `Err`: refusals and failures come back with `status: failed`
    /// and an `error`.
    pub async fn delegate(&self, caller: &Caller, request: DelegationRequest) -> DelegationResponse {
        self.dispatch(None, caller, request).await
    }

    /// Records an envelope refused before it reached the rails (a forged or
    /// contradictory header at the edge): audited as denied, like any refusal.
    pub async fn record_refusal(&self, request: DelegationRequest, error: DelegationError) -> DelegationResponse {
        self.refuse(request, None, None, error, Instant::now(), now_ms()).await
    }

    /// The stored tree of a delegation.
    pub async fn tree(&self, request: RequestId) -> Result<Option<TreeView>, DelegationError> {
        let records = self.inner.store.delegation_tree(request).await?;
        Ok(TreeView::from_records(&records))
    }

    /// A user's message to Prime: Prime (at depth 0) answers directly or
    /// delegates; the answer comes back with PII restored and the tree.
    pub async fn ask(&self, user: &UserId, message: &str, opts: AskOptions) -> Result<AskResponse, DelegationError> {
        let prime = match opts.agent {
            Some(a) if self.inner.registry.get(&a).is_some() => a,
            Some(a) => {
                return Err(DelegationError::new(ErrorCode::AgentNotFound, format!("no agent '{a}' is registered")));
            }
            None => self.prime()?.spec.slug.clone(),
        };
        let limits = self.inner.config.limits;
        let mut req = DelegationRequest::new(
            AgentSlug::parse(USER_ORIGIN).map_err(|e| DelegationError::invalid(e.0))?,
            prime,
            user.clone(),
            message,
            opts.input.unwrap_or_default(),
        );
        req.child_session_id = opts.session;
        req.context_hints = opts.context_hints;
        if let Some(id) = opts.request_id {
            req.request_id = id;
        }
        req.constraints = Constraints {
            max_tokens: limits.ask_max_tokens,
            max_depth: limits.max_depth,
            deadline_ms: limits.deadline_ms,
        };
        let caller = Caller::User(user.clone());
        let response = self.dispatch_as(None, &caller, req.clone(), true).await;
        if let Some(err) = response.error.as_ref().filter(|e| e.code.is_refusal()) {
            return Err(err.clone());
        }
        let tree = self.tree(req.request_id).await?.unwrap_or_else(|| TreeView {
            request_id: req.request_id,
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
        let answer = match (&response.error, response.result.is_empty()) {
            (Some(e), true) => e.message.clone(),
            _ => response.result.clone(),
        };
        Ok(AskResponse {
            answer,
            session_id: response.child_session_id.unwrap_or_default(),
            request_id: req.request_id,
            status: response.status,
            tree,
            response,
        })
    }

    fn prime(&self) -> Result<&Member, DelegationError> {
        let slug = AgentSlug::parse("prime-boss").map_err(|e| DelegationError::invalid(e.0))?;
        self.inner.registry.get(&slug).ok_or_else(|| {
            DelegationError::new(ErrorCode::AgentNotFound, "no agent 'prime-boss' is configured to talk to users")
        })
    }

    /// The pipeline. `parent` is the calling node when the call comes from an
    /// agent running in this runtime.
    pub(crate) async fn dispatch(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Caller,
        req: DelegationRequest,
    ) -> DelegationResponse {
        self.dispatch_as(parent, caller, req, false).await
    }

    /// `user_entry`: a user's own message to Prime, which runs at depth 0
    /// as the root of a new tree.
    async fn dispatch_as(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Caller,
        req: DelegationRequest,
        user_entry: bool,
    ) -> DelegationResponse {
        let span = tracing::info_span!(
            "delegation",
            otel.name = %format!("delegate {}", req.target_employee),
            request_id = %req.request_id,
            root_id = %req.root_id(),
            origin_agent = %req.origin_employee,
            target_agent = %req.target_employee,
            depth = parent.map_or(req.current_depth, |p| p.depth).saturating_add(u32::from(!user_entry)),
        );
        self.dispatch_in(parent, caller, req, user_entry).instrument(span).await
    }

    async fn dispatch_in(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Caller,
        req: DelegationRequest,
        user_entry: bool,
    ) -> DelegationResponse {
        let started = Instant::now();
        let started_ms = now_ms();
        let response = match self.admit(parent, caller, req, user_entry).await {
            Ok(admitted) => match self.claim(&admitted).await {
                Ok(None) if parent.is_some() => {
                    if let Some(p) = parent {
                        p.children_started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    self.run(admitted, false, started, started_ms).await
                }
                Ok(None) => self.run(admitted, parent.is_none(), started, started_ms).await,
                Ok(Some(replayed)) => replayed,
                Err(err) => {
                    let (req, tree) = (admitted.req.clone(), admitted.node.tree.clone());
                    drop(admitted);
                    self.refuse(req, Some(tree), parent, err, started, started_ms).await
                }
            },
            Err((req, tree, err)) => self.refuse(req, tree, parent, err, started, started_ms).await,
        };
        if let Some(p) = parent {
            p.add_child_usage(response.token_usage);
        }
        response
    }

    /// Every rail before the agent runs, in order. On refusal, the request
    /// (and the tree, if it was entered) come back for the audit record.
    #[allow(clippy::type_complexity)]
    async fn admit(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Caller,
        mut req: DelegationRequest,
        user_entry: bool,
    ) -> Result<Admitted, (DelegationRequest, Option<Arc<Tree>>, DelegationError)> {
        let inner = &*self.inner;
        let limits = &inner.config.limits;
        let user_entry = user_entry && parent.is_none() && matches!(caller, Caller::User(_));

        macro_rules! rail {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(err) => return Err((req, None, err)),
                }
            };
            ($e:expr, $tree:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(err) => return Err((req, Some($tree.clone()), err)),
                }
            };
        }

        // validate: the envelope itself
        rail!(validate::request(&req, limits));
        // lineage from the parent node is authoritative for in-process calls
        if let Some(p) = parent {
            req.user_id = p.user.clone();
            req.current_depth = p.depth;
            req.root_request_id = Some(p.root_id);
            req.parent_request_id = Some(p.request_id);
            req.chain = p.chain.clone();
        }

        // authenticate: the origin is the caller
        let origin_spec: Option<Arc<AgentSpec>> = if user_entry {
            None
        } else {
            rail!(auth::authenticate(caller, &req.origin_employee));
            let origin = rail!(inner.registry.get(&req.origin_employee).ok_or_else(|| DelegationError::new(
                ErrorCode::AgentNotFound,
                format!(
                    "origin agent '{}' is not registered; list agents with `switchboard agents`",
                    req.origin_employee
                )
            )));
            Some(origin.spec.clone())
        };

        // route: explicit target, a domain's member, or discovered among the
        // origin's allowed targets
        if req.target_employee.is_auto()
            && let Some(domain) = req.target_domain.clone()
        {
            let origin_domain = origin_spec.as_ref().and_then(|o| o.domain.clone());
            let picked = inner.domains.pick(
                &domain,
                &req.origin_employee,
                origin_domain.as_deref(),
                |a| inner.registry.get(a).map_or(0, Member::busy),
                |a| inner.breakers.state(a) != BreakerState::Open,
            );
            req.target_employee = rail!(picked);
        }
        if req.target_employee.is_auto() {
            // what this user's past delegations of this kind say, then keywords
            let signature = history::task_signature(&inner.redactor.redact(&req.objective, &mut Default::default()));
            let recent =
                rail!(inner.store.recent_outcomes(&req.user_id, history::WINDOW).await.map_err(DelegationError::from));
            let past = history::similar(&recent, &signature);
            let allowed_target = |a: &str| {
                a != req.origin_employee.as_str()
                    && AgentSlug::parse(a).is_ok_and(|s| {
                        inner.registry.get(&s).is_some() && origin_spec.as_ref().is_none_or(|o| o.may_delegate_to(&s))
                    })
            };
            if let Some(best) = history::preferred(&past, allowed_target).and_then(|a| AgentSlug::parse(a).ok()) {
                req.target_employee = best;
            }
        }
        if req.target_employee.is_auto() {
            let text = format!("{} {}", req.objective, req.input);
            let allowed = inner.registry.members().map(|m| &*m.spec).filter(|s| {
                s.slug != req.origin_employee && origin_spec.as_ref().is_none_or(|o| o.may_delegate_to(&s.slug))
            });
            let best = discover(allowed, &text, &req.context_hints).first().map(|c| c.spec.slug.clone());
            req.target_employee = rail!(best.ok_or_else(|| DelegationError::new(
                ErrorCode::AgentNotFound,
                "no agent matches this objective; name target_employee explicitly"
            )));
        }
        let member = rail!(inner.registry.get(&req.target_employee).cloned().ok_or_else(|| DelegationError::new(
            ErrorCode::AgentNotFound,
            format!("no agent '{}' is registered; list agents with `switchboard agents`", req.target_employee)
        )));
        let target = member.spec.clone();

        // authorize: the edge, the user, the tools
        if let Some(origin) = &origin_spec {
            rail!(auth::authorize_edge(origin, &target));
        }
        rail!(auth::authorize_user(&target, &req.user_id));
        let caller_tools: ToolSet = match (parent, &origin_spec) {
            (Some(p), _) => (*p.tools).clone(),
            (None, Some(origin)) => origin.tools_allowed.clone(),
            (None, None) => target.tools_allowed.clone(),
        };
        let tools = rail!(auth::effective_tools(&target, &caller_tools, req.tools.as_deref()));

        // guards: depth, fan-out, cycle, deadline, budget — in this tree
        let root_id = req.root_id();
        let tree = inner.trees.enter(&req.user_id, root_id);
        let (depth, max_depth) = if user_entry {
            (0, req.constraints.max_depth.min(limits.max_depth_ceiling))
        } else {
            let inherited = parent.map_or(limits.max_depth_ceiling, |p| p.max_depth);
            let d = rail!(depth::check(req.current_depth, req.constraints.max_depth, inherited), tree);
            (d.target, d.max)
        };
        let fan_out = match req.parent_request_id {
            Some(p) if !user_entry => Some(rail!(fanout::acquire(&tree, p, limits.fan_out), tree)),
            _ => None,
        };
        let objective_hash = cycle::objective_hash(&req.objective);
        let cycle = if user_entry {
            None
        } else {
            Some(rail!(
                cycle::acquire(&tree, &req.origin_employee, &req.target_employee, &objective_hash, &req.chain),
                tree
            ))
        };
        let now = Instant::now();
        let requested_ms =
            req.constraints.deadline_ms.min(target.limits.deadline_ms.unwrap_or(u64::MAX)).min(limits.max_deadline_ms);
        let margin = Duration::from_millis(limits.deadline_margin_ms);
        let deadline_at = rail!(
            deadline::child_deadline(now, Duration::from_millis(requested_ms), parent.map(|p| p.deadline), margin),
            tree
        );
        let requested_tokens =
            req.constraints.max_tokens.min(target.limits.max_tokens.unwrap_or(u32::MAX)).min(limits.max_tokens_ceiling);
        if parent.is_some_and(|p| !p.budget_open()) {
            return Err((
                req,
                Some(tree),
                DelegationError::new(ErrorCode::Cancelled, "the parent delegation has already finished"),
            ));
        }
        let budget = rail!(BudgetAccount::open(&tree, req.request_id, req.parent_request_id, requested_tokens), tree);

        // sessions: user isolation, enforced against the store
        let parent_session = parent.and_then(|p| p.session).or(req.parent_session_id);
        let sessions = if req.mode == Mode::Ephemeral {
            // a consult reads the target's history and creates nothing
            isolation::existing_sessions(
                &*inner.store,
                &req.user_id,
                &req.target_employee,
                parent_session,
                req.child_session_id,
            )
            .await
        } else {
            isolation::sessions(
                &*inner.store,
                &req.user_id,
                &req.origin_employee,
                &req.target_employee,
                parent_session,
                req.child_session_id,
            )
            .await
        };
        let sessions = rail!(sessions, tree);

        let mut chain: Vec<ChainLink> = req.chain.clone();
        if user_entry {
            chain.clear();
        }
        chain.push(ChainLink { agent: req.target_employee.clone(), objective_hash });
        let cancel = parent.map_or_else(CancellationToken::new, |p| p.cancel.child_token());
        let node = Arc::new(Node {
            request_id: req.request_id,
            root_id,
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
            tree,
            cancel,
            priority: req.priority,
            max_tokens_default: limits.max_tokens,
            deadline_ms_default: limits.deadline_ms,
            fan_out: limits.fan_out,
            children_usage: Default::default(),
            children_started: Default::default(),
        });
        Ok(Admitted {
            deadline_ms: deadline_at.saturating_duration_since(now).as_millis() as u64,
            req,
            member,
            node,
            budget,
            sessions,
            _fan_out: fan_out,
            _cycle: cycle,
        })
    }

    /// Idempotency: the first request with a key runs; a repeat gets the
    /// stored response without running the agent again (waiting while the
    /// first still runs); the same key with other parameters is refused.
    async fn claim(&self, adm: &Admitted) -> Result<Option<DelegationResponse>, DelegationError> {
        let Some(key) = &adm.req.idempotency_key else { return Ok(None) };
        let store = &self.inner.store;
        let fingerprint = adm.req.fingerprint();
        loop {
            match store.claim_idempotency(&adm.req.user_id, key, &fingerprint).await? {
                Claim::New => return Ok(None),
                Claim::Done(json) => {
                    return serde_json::from_str(&json).map(Some).map_err(|e| {
                        DelegationError::new(ErrorCode::AgentUnavailable, format!("stored response is unreadable: {e}"))
                    });
                }
                Claim::Mismatch => {
                    return Err(DelegationError::invalid(format!(
                        "idempotency_key '{key}' was already used with different parameters; use a new key for a new request"
                    )));
                }
                _ => {
                    if Instant::now() + IDEMPOTENCY_POLL >= adm.node.deadline {
                        return Err(DelegationError::new(
                            ErrorCode::DeadlineExceeded,
                            format!("a request with idempotency_key '{key}' is still running; retry later"),
                        ));
                    }
                    tokio::time::sleep(IDEMPOTENCY_POLL).await;
                }
            }
        }
    }

    /// Audits a denied action inside a running delegation that is not itself
    /// a delegation (a model calling a tool it was not offered): one refused
    /// record under the node, so every attempt to widen power is on file.
    pub(crate) async fn record_denied(&self, node: &Node, what: &str, error: &DelegationError) {
        let record = DelegationRecord {
            request_id: RequestId::new(),
            root_id: node.root_id,
            parent_id: Some(node.request_id),
            user_id: node.user.clone(),
            origin: node.agent.to_string(),
            target: what.to_string(),
            signature: String::new(),
            objective: format!("use {what}"),
            objective_hash: cycle::objective_hash(what),
            status: "refused".into(),
            error_code: Some(error.code.to_string()),
            attempts: 0,
            depth: node.depth.saturating_add(1),
            started_at: now_ms(),
            duration_ms: 0,
            tokens: TokenUsage::default(),
        };
        tracing::warn!(origin = %node.agent, denied = what, code = %error.code, "action denied");
        if let Err(e) = self.finish(&record, Conversation::default(), 0.0, false).await {
            tracing::error!("denied action not audited: {e}");
        }
    }

    /// Records a refusal (audit, tree, event) and answers it.
    async fn refuse(
        &self,
        req: DelegationRequest,
        tree: Option<Arc<Tree>>,
        parent: Option<&Arc<Node>>,
        err: DelegationError,
        started: Instant,
        started_ms: i64,
    ) -> DelegationResponse {
        let objective = match &tree {
            Some(t) => self.inner.redactor.redact(&req.objective, &mut t.vault()),
            None => self.inner.redactor.redact(&req.objective, &mut Default::default()),
        };
        tracing::info!(request_id = %req.request_id, origin = %req.origin_employee, target = %req.target_employee, code = %err.code, "delegation refused");
        let duration_ms = started.elapsed().as_millis() as u64;
        let record = DelegationRecord {
            request_id: req.request_id,
            root_id: req.root_id(),
            parent_id: req.parent_request_id,
            user_id: req.user_id.clone(),
            origin: req.origin_employee.to_string(),
            target: req.target_employee.to_string(),
            signature: history::task_signature(&objective),
            objective,
            objective_hash: cycle::objective_hash(&req.objective),
            status: "refused".into(),
            error_code: Some(err.code.to_string()),
            attempts: 0,
            depth: parent.map_or(req.current_depth, |p| p.depth).saturating_add(1),
            started_at: started_ms,
            duration_ms,
            tokens: TokenUsage::default(),
        };
        let mut response = DelegationResponse::failed(req.request_id, req.target_employee.clone(), err);
        response.duration_ms = duration_ms;
        if let Err(e) = self.finish(&record, Conversation::default(), 0.0, false).await {
            response.error = Some(e);
        }
        response
    }

    /// Runs an admitted delegation to its end and records it.
    async fn run(&self, adm: Admitted, edge: bool, started: Instant, started_ms: i64) -> DelegationResponse {
        let inner = &*self.inner;
        let _in_flight = adm.member.enter();
        let _running = Running::register(&inner.running, adm.node.request_id, adm.node.cancel.clone());
        let req = &adm.req;
        let redacted_objective = inner.redactor.redact(&req.objective, &mut adm.node.tree.vault());
        let mut record = DelegationRecord {
            request_id: req.request_id,
            root_id: adm.node.root_id,
            parent_id: req.parent_request_id,
            user_id: req.user_id.clone(),
            origin: req.origin_employee.to_string(),
            target: req.target_employee.to_string(),
            signature: history::task_signature(&redacted_objective),
            objective: redacted_objective.clone(),
            objective_hash: cycle::objective_hash(&req.objective),
            status: Status::Failed.as_str().into(),
            error_code: Some(ErrorCode::Cancelled.to_string()),
            attempts: 0,
            depth: adm.node.depth,
            started_at: started_ms,
            duration_ms: 0,
            tokens: TokenUsage::default(),
        };
        // If this future is dropped before it records (its parent was cancelled
        // or timed out), the record is written anyway, as cancelled.
        let mut unfinished = Unfinished { runtime: self.clone(), record: Some(record.clone()), started };
        inner.events.emit(|| Event::Started {
            request_id: req.request_id,
            root_id: adm.node.root_id,
            user_id: req.user_id.to_string(),
            parent_id: req.parent_request_id,
            origin: req.origin_employee.to_string(),
            target: req.target_employee.to_string(),
            objective: redacted_objective.clone(),
            depth: adm.node.depth,
            at_ms: started_ms,
        });

        let attempts = self.attempts(&adm).await;
        // Whatever the agent started and left behind stops now.
        adm.node.cancel.cancel();

        let duration_ms = started.elapsed().as_millis() as u64;
        let mut response = match &attempts.result {
            Ok(out) => DelegationResponse {
                status: out.status.unwrap_or(Status::Success),
                summary: out.summary.clone(),
                result: out.result.clone(),
                artifacts: out.artifacts.clone(),
                new_facts: out.new_facts.clone(),
                used_sources: out.used_sources.clone(),
                confidence: out.confidence,
                requires_followup: out.requires_followup,
                error: None,
                ..DelegationResponse::failed(
                    req.request_id,
                    req.target_employee.clone(),
                    DelegationError::from_code(ErrorCode::AgentFailed),
                )
            },
            Err(e) => {
                let mut r = DelegationResponse::failed(req.request_id, req.target_employee.clone(), e.clone());
                r.fallback = fallback(e);
                r
            }
        };
        // The subtree's usage, so that a caller across a hop can reconcile its ledger.
        response.token_usage = attempts.usage;
        response.token_usage.add(adm.node.children_usage());
        response.duration_ms = duration_ms;
        response.child_session_id = adm.sessions.child.as_ref().map(|c| c.id);
        response.execution = Some(Execution { duration_ms, ..attempts.execution.clone() });
        response.verifier = attempts.verdict.clone();
        response.learned = attempts.learned.clone();

        let conversation = self.conversation(&adm, &response).await;
        record.status = response.status.as_str().into();
        record.error_code = response.error_code().map(|c| c.to_string());
        record.attempts = attempts.execution.attempts;
        record.duration_ms = duration_ms;
        record.tokens = response.token_usage;
        unfinished.record = None;
        // Durable before the response is acknowledged.
        let seconds = started.elapsed().as_secs_f64();
        if let Err(e) = self.finish(&record, conversation, seconds, response.fallback.is_some()).await {
            response.status = Status::Failed;
            response.error = Some(e);
        }
        tracing::info!(
            request_id = %req.request_id, origin = %req.origin_employee, target = %req.target_employee,
            depth = adm.node.depth, status = response.status.as_str(), duration_ms, "delegation finished"
        );
        if edge {
            // Back at the edge: the caller gave us these values; give them back.
            let vault = adm.node.tree.vault();
            response.summary = vault.restore(&response.summary);
            response.result = vault.restore(&response.result);
            for a in &mut response.artifacts {
                vault.restore_json(&mut a.value);
            }
        }
        if let Some(key) = &req.idempotency_key {
            // a finished answer is kept for repeats; a failure frees the key for a retry
            let kept = match response.status {
                Status::Failed => inner.store.release_idempotency(&req.user_id, key).await,
                _ => match serde_json::to_string(&response) {
                    Ok(json) => inner.store.complete_idempotency(&req.user_id, key, &json).await,
                    Err(_) => inner.store.release_idempotency(&req.user_id, key).await,
                },
            };
            if let Err(e) = kept {
                tracing::warn!(request_id = %req.request_id, "idempotency record not written: {e}");
            }
        }
        response
    }

    /// The retry loop: each attempt assembles the context, checks the
    /// estimate, passes the breaker, runs the agent inside the deadline and
    /// verifies the output.
    async fn attempts(&self, adm: &Admitted) -> Attempts {
        let inner = &*self.inner;
        let req = &adm.req;
        let node = &adm.node;
        let spec = &adm.member.spec;
        let agent = &adm.member.agent;
        let mut out = Attempts {
            result: Err(DelegationError::from_code(ErrorCode::AgentFailed)),
            execution: Execution::default(),
            verdict: None,
            learned: None,
            usage: TokenUsage::default(),
        };

        let checks = match verify::checks_for(req.task_note.as_deref(), &req.checks) {
            Ok(c) => c,
            Err(e) => {
                out.result = Err(e);
                return out;
            }
        };
        let mut task = match self.assemble(adm).await {
            Ok(t) => t,
            Err(e) => {
                out.result = Err(e);
                return out;
            }
        };
        // the kind of task, from what the agent sees (PII already tokenized)
        let signature = history::task_signature(&task.objective);
        let seeds = self.seed_order(agent.as_ref(), &spec.slug, &signature).await;
        let known_seeds: Vec<u64> = inner
            .store
            .seed_scores(&spec.slug, &signature)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let attempts = spec.limits.max_attempts.or_else(|| agent.default_attempts());
        let plan = RetryPlan::for_request(req.priority, req.retry_policy.as_ref(), attempts);
        let breaker = inner.breakers.get(&spec.slug);
        let jitter = req.request_id.0.as_u64_pair().0;
        let mut seed_idx = 0usize;
        let mut attempt_timeout = spec.limits.attempt_timeout_ms.map(Duration::from_millis);

        for attempt in 1..=plan.max_attempts {
            task.attempt = attempt;
            task.seed = seeds.get(seed_idx).copied();
            out.execution.attempts = attempt;
            if let Some(s) = task.seed
                && !out.execution.seeds_tried.contains(&s)
            {
                out.execution.seeds_tried.push(s);
            }
            task.max_completion_tokens = adm.budget.remaining().saturating_sub(tokens::task_prompt_tokens(&task));
            let estimate = agent.estimate_tokens(&task);
            if let Err(e) = budget::check_estimate(estimate.total(), adm.budget.grant()) {
                out.result = Err(e);
                break;
            }
            inner.events.emit(|| Event::Attempt {
                request_id: req.request_id,
                root_id: node.root_id,
                user_id: req.user_id.to_string(),
                target: spec.slug.to_string(),
                attempt,
                seed: task.seed,
            });

            let delegated_before = node.children_started.load(std::sync::atomic::Ordering::Relaxed);
            let result = match breaker.acquire() {
                Err(e) => Err(e),
                Ok(permit) => {
                    let r = self.attempt(adm, &task, attempt_timeout).await;
                    match &r {
                        Ok(_) => permit.success(),
                        Err(e) if counts_against_breaker(e.code) => permit.failure(),
                        Err(_) => permit.success(),
                    }
                    r
                }
            };
            let result = result.and_then(|o| {
                let used = o.token_usage.unwrap_or_else(|| {
                    TokenUsage::new(
                        estimate.prompt,
                        tokens::approx(&o.result).saturating_add(tokens::approx(&o.summary)),
                    )
                });
                // children's usage is in the ledger already; this is the agent's own
                let left = adm.budget.remaining();
                if used.total > left {
                    // the budget holds even when an answer runs long: charge what
                    // was left and refuse the answer
                    adm.budget.charge(left);
                    out.usage.add(TokenUsage::new(left, 0));
                    return Err(DelegationError::new(
                        ErrorCode::TokenBudgetExceeded,
                        format!(
                            "the answer used {} tokens but only {left} were left of this delegation's budget ({}); ask for a shorter answer or a larger budget",
                            used.total,
                            adm.budget.grant()
                        ),
                    ));
                }
                adm.budget.charge(used.total);
                out.usage.add(used);
                Ok(o)
            });
            let result = result.and_then(|o| {
                if checks.is_empty() {
                    return Ok(o);
                }
                let verdict = verify::verify(&o.result, &o.artifacts, &checks);
                let passed = verdict.passed;
                let failed = verdict.failed().join(", ");
                out.verdict = Some(verdict);
                if passed {
                    Ok(o)
                } else {
                    Err(DelegationError::new(ErrorCode::VerificationFailed, format!("output failed checks: {failed}")))
                }
            });

            match result {
                Ok(o) => {
                    if let Some(seed) = task.seed {
                        let score = inner.store.adjust_seed_score(&spec.slug, &signature, seed, 1.0).await.ok();
                        out.learned = Some(Learned {
                            new_seed: !known_seeds.contains(&seed),
                            seed_promoted: score.is_some(),
                            confidence: out.verdict.as_ref().map_or(1.0, |v| v.score),
                        });
                    }
                    out.result = Ok(o);
                    break;
                }
                Err(e) => {
                    if e.code == ErrorCode::VerificationFailed
                        && let Some(seed) = task.seed
                    {
                        let _ = inner.store.adjust_seed_score(&spec.slug, &signature, seed, -1.0).await;
                    }
                    let remaining = node.deadline.saturating_duration_since(Instant::now());
                    // an attempt that delegated is not repeated: its children
                    // had their own retries, and would run twice
                    let delegated = node.children_started.load(std::sync::atomic::Ordering::Relaxed) > delegated_before;
                    let next = if delegated {
                        Next::GiveUp
                    } else {
                        plan.next(e.code.class(), attempt, remaining, jitter, e.retry_after)
                    };
                    out.result = Err(e);
                    let Next::Retry { delay, next_seed, longer_timeout } = next else { break };
                    if longer_timeout {
                        // seeds/001: a timeout retries the same seed with more time
                        attempt_timeout = attempt_timeout.map(|t| t.saturating_mul(2));
                    }
                    if next_seed && !seeds.is_empty() {
                        seed_idx = (seed_idx + 1) % seeds.len();
                    }
                    let err = out.result.as_ref().err().cloned().unwrap_or_else(|| ErrorCode::AgentFailed.into());
                    inner.events.emit(|| Event::Retry {
                        request_id: req.request_id,
                        root_id: node.root_id,
                        user_id: req.user_id.to_string(),
                        target: spec.slug.to_string(),
                        attempt,
                        error_code: err.code.to_string(),
                        message: err.message.clone(),
                        delay_ms: delay.as_millis() as u64,
                        next_seed: seeds.get(seed_idx).copied().filter(|_| next_seed),
                    });
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = node.cancel.cancelled() => {
                            out.result = Err(DelegationError::from_code(ErrorCode::Cancelled));
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// One attempt: the agent runs until it answers, the deadline passes
    /// (its work is dropped and cancelled) or the caller cancels.
    async fn attempt(
        &self,
        adm: &Admitted,
        task: &Task,
        timeout: Option<Duration>,
    ) -> Result<AgentOutput, DelegationError> {
        let node = &adm.node;
        // The attempt's own timeout, when the agent has one, ends it early
        // enough for a retry; the delegation's deadline ends everything.
        let attempt_end = timeout.map_or(node.deadline, |t| (Instant::now() + t).min(node.deadline));
        let timed_out = || {
            if attempt_end < node.deadline {
                let ms = timeout.unwrap_or_default().as_millis();
                DelegationError::new(ErrorCode::DeadlineExceeded, format!("Attempt timeout after {ms}ms"))
            } else {
                deadline::timeout_error(Duration::from_millis(adm.deadline_ms))
            }
        };
        let cancel = node.cancel.child_token();
        let ctx = AgentContext::new(
            Some(Delegator::new(self.clone(), node.clone())),
            node.tools.clone(),
            cancel.clone(),
            node.deadline,
            node.depth,
        );
        let result = tokio::select! {
            // a cancelled delegation is cancelled, even if its agent answered in the same instant
            biased;
            _ = node.cancel.cancelled() => Err(DelegationError::from_code(ErrorCode::Cancelled)),
            r = adm.member.agent.run(&ctx, task) => r,
            _ = tokio::time::sleep_until(attempt_end) => Err(timed_out()),
        };
        cancel.cancel();
        let mut out = result?;
        // What flows back up the tree carries tokens, not raw PII.
        let mut vault = node.tree.vault();
        let r = &self.inner.redactor;
        out.summary = r.redact(&out.summary, &mut vault);
        out.result = r.redact(&out.result, &mut vault);
        for a in &mut out.artifacts {
            r.redact_json(&mut a.value, &mut vault);
        }
        for f in &mut out.new_facts {
            f.fact = r.redact(&f.fact, &mut vault);
        }
        Ok(out)
    }

    /// seeds/002 `buildDelegatedContext`: the redacted request plus the
    /// user's global, agent and domain facts and the target's recent messages.
    async fn assemble(&self, adm: &Admitted) -> Result<Task, DelegationError> {
        let inner = &*self.inner;
        let req = &adm.req;
        let spec = &adm.member.spec;
        let mut scopes = vec!["global".to_string(), format!("agent:{}", spec.slug)];
        if let Some(d) = &spec.domain {
            scopes.push(format!("domain:{d}"));
        }
        let facts = inner.store.facts(&req.user_id, &scopes).await?;
        let history = match &adm.sessions.child {
            Some(child) if !adm.sessions.new_child => inner.store.recent_messages(child.id, HISTORY_MESSAGES).await?,
            _ => Vec::new(),
        };
        let mut task = Task {
            request_id: Some(req.request_id),
            agent: Some(spec.slug.clone()),
            user_id: Some(req.user_id.clone()),
            objective: req.objective.clone(),
            input: req.input.clone(),
            context_hints: req.context_hints.clone(),
            handoff: req.handoff_data.clone(),
            task_note: req.task_note.clone(),
            facts: facts.into_iter().map(|f| f.fact).collect(),
            history: history.into_iter().map(|m| HistoryMessage { role: m.role, content: m.content }).collect(),
            seed: None,
            attempt: 1,
            max_completion_tokens: 0,
        };
        let mut vault = adm.node.tree.vault();
        let r = &inner.redactor;
        task.objective = r.redact(&task.objective, &mut vault);
        task.input = r.redact(&task.input, &mut vault);
        task.task_note = task.task_note.map(|n| r.redact(&n, &mut vault));
        task.facts = task.facts.iter().map(|f| r.redact(f, &mut vault)).collect();
        task.handoff.facts = task.handoff.facts.iter().map(|f| r.redact(f, &mut vault)).collect();
        if let Some(v) = task.handoff.intermediate_results.as_mut() {
            r.redact_json(v, &mut vault);
        }
        if spec.pii_access {
            // Trusted with PII: it sees the real values.
            task.objective = vault.restore(&task.objective);
            task.input = vault.restore(&task.input);
            task.task_note = task.task_note.map(|n| vault.restore(&n));
        }
        Ok(task)
    }

    /// Seeds to try, best-scoring first, then the agent's own order.
    async fn seed_order(&self, agent: &dyn Agent, slug: &AgentSlug, signature: &str) -> Vec<u64> {
        let defaults = agent.seeds();
        if defaults.is_empty() {
            return Vec::new();
        }
        let scored = self.inner.store.seed_scores(slug, signature).await.unwrap_or_default();
        // proven seeds, then untried ones in the agent's order, then penalized ones
        let score_of = |seed: &u64| scored.iter().find(|(s, _)| s == seed).map(|(_, score)| *score);
        let mut order: Vec<u64> = defaults.to_vec();
        order.sort_by(|a, b| {
            let rank = |s: &u64| match score_of(s) {
                Some(x) if x > 0.0 => (0, -x),
                None => (1, 0.0),
                Some(x) => (2, -x),
            };
            let (ra, rb) = (rank(a), rank(b));
            ra.0.cmp(&rb.0).then(ra.1.total_cmp(&rb.1))
        });
        order
    }

    /// The conversation and the new facts to save with the delegation's
    /// records, unless it is an ephemeral consult (seeds/003), which reads the
    /// history but writes nothing. A new child session is saved even when the
    /// delegation failed; its messages only when it did not.
    async fn conversation(&self, adm: &Admitted, response: &DelegationResponse) -> Conversation {
        let req = &adm.req;
        let Some(child) = adm.sessions.child.as_ref().filter(|_| req.mode == Mode::Persist) else {
            return Conversation::default(); // an ephemeral consult writes nothing (seeds/003)
        };
        let new_session = adm.sessions.new_child.then(|| child.clone());
        if response.status == Status::Failed {
            return Conversation { new_session, ..Conversation::default() };
        }
        let now = now_ms();
        let asked =
            if req.input.is_empty() { req.objective.clone() } else { format!("{}\n\n{}", req.objective, req.input) };
        let origin = (req.origin_employee.as_str() != USER_ORIGIN).then(|| req.origin_employee.to_string());
        let depth = Some(adm.node.depth);
        let messages = {
            let mut vault = adm.node.tree.vault();
            let r = &self.inner.redactor;
            [
                Message {
                    session_id: child.id,
                    role: "user".into(),
                    content: r.redact(&asked, &mut vault),
                    delegated_from: origin.clone(),
                    delegation_depth: depth,
                    created_at: now,
                },
                Message {
                    session_id: child.id,
                    role: "assistant".into(),
                    content: response.result.clone(),
                    delegated_from: origin,
                    delegation_depth: depth,
                    created_at: now,
                },
            ]
        };
        let mut facts = Vec::new();
        for f in &response.new_facts {
            match fact_scope(f, &adm.member.spec) {
                Ok(scope) => facts.push(Fact {
                    user_id: req.user_id.clone(),
                    scope,
                    fact: f.fact.clone(),
                    source_request: Some(req.request_id),
                    created_at: now,
                }),
                // writing into another agent's memory would let its output steer that agent
                Err(e) => {
                    self.record_denied(&adm.node, &format!("facts:{}", f.scope.as_deref().unwrap_or("")), &e).await
                }
            }
        }
        Conversation { new_session, messages: messages.into(), facts }
    }

    /// Ends a delegation's bookkeeping: the tree node and the audit record
    /// (durably, before the caller hears back), metrics and the finished event.
    async fn finish(
        &self,
        record: &DelegationRecord,
        conversation: Conversation,
        seconds: f64,
        fallback: bool,
    ) -> Result<(), DelegationError> {
        let inner = &*self.inner;
        let written = self.write_records(record, conversation).await;
        if let Ok(target) = AgentSlug::parse(&record.target) {
            inner.metrics.observe(Observation {
                target: &target,
                outcome: &record.status,
                attempts: record.attempts,
                seconds,
                tokens: record.tokens.total,
                fallback,
            });
        }
        inner.events.emit(|| Event::Finished {
            request_id: record.request_id,
            root_id: record.root_id,
            user_id: record.user_id.to_string(),
            parent_id: record.parent_id,
            origin: record.origin.clone(),
            target: record.target.clone(),
            status: record.status.clone(),
            error_code: record.error_code.clone(),
            attempts: record.attempts,
            duration_ms: record.duration_ms,
            tokens: record.tokens.total,
        });
        written
    }

    async fn write_records(
        &self,
        record: &DelegationRecord,
        conversation: Conversation,
    ) -> Result<(), DelegationError> {
        self.inner
            .store
            .record_delegation(
                record,
                AuditRecord {
                    request_id: record.request_id,
                    root_id: record.root_id,
                    origin: record.origin.clone(),
                    target: record.target.clone(),
                    user_id: record.user_id.to_string(),
                    objective: record.objective.clone(),
                    outcome: record.status.clone(),
                    error_code: record.error_code.clone(),
                    duration_ms: record.duration_ms,
                    tokens: record.tokens.total,
                    created_at: record.started_at,
                },
                conversation,
            )
            .await?;
        Ok(())
    }
}

/// The record of a delegation whose future may be dropped before it finishes.
struct Unfinished {
    runtime: Runtime,
    record: Option<DelegationRecord>,
    started: Instant,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(mut record) = self.record.take() else { return };
        record.duration_ms = self.started.elapsed().as_millis() as u64;
        let runtime = self.runtime.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Err(e) = runtime.finish(&record, Conversation::default(), 0.0, false).await {
                    tracing::error!(request_id = %record.request_id, "record of a cancelled delegation not written: {e}");
                }
            });
        }
    }
}

/// A running delegation's entry in the cancel registry, removed on drop.
struct Running<'a> {
    map: &'a std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
    id: RequestId,
}

impl<'a> Running<'a> {
    fn register(
        map: &'a std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
        id: RequestId,
        token: CancellationToken,
    ) -> Self {
        crate::util::lock(map).insert(id, token);
        Self { map, id }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        crate::util::lock(self.map).remove(&self.id);
    }
}

/// Failures that say something about the agent's health.
fn counts_against_breaker(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::AgentFailed | ErrorCode::DeadlineExceeded | ErrorCode::AgentUnavailable)
}

/// The scope a new fact is saved under: the one it names if valid, else the agent's.
/// The scope a new fact is saved under: `global`, the agent's own, or its own
/// domain's. Another agent's or domain's memory is not the agent's to write.
fn fact_scope(f: &NewFact, spec: &AgentSpec) -> Result<String, DelegationError> {
    let own = format!("agent:{}", spec.slug);
    let domain = spec.domain.as_ref().map(|d| format!("domain:{d}"));
    match f.scope.as_deref() {
        None | Some("") => Ok(own),
        Some("global") => Ok("global".into()),
        Some(s) if s == own || Some(s) == domain.as_deref() => Ok(s.into()),
        Some(s) => Err(DelegationError::new(
            ErrorCode::PermissionDenied,
            format!(
                "agent '{}' may not write facts into '{s}'; it writes to global, {own} or its own domain",
                spec.slug
            ),
        )),
    }
}

/// What the caller should do after a final failure (seeds/001 `fallback`).
fn fallback(e: &DelegationError) -> Option<Fallback> {
    let (recommended, reasoning) = match e.code.class() {
        ErrorClass::Verification => (
            "handle_directly",
            "All seeds failed verification within budget; the task may require judgment beyond deterministic execution",
        ),
        ErrorClass::Timeout => (
            "retry_later",
            "The agent did not answer within the deadline; retry with a longer deadline or a smaller task",
        ),
        ErrorClass::Unavailable => {
            ("retry_later", "The agent is unavailable; retry after its circuit breaker cools down")
        }
        ErrorClass::Failure => ("handle_directly", "The agent failed on every attempt; handle the task without it"),
        _ if e.code == ErrorCode::InvalidRequest => {
            ("clarify_task_note", "The task is ambiguous or incomplete; refine the Task Note and delegate again")
        }
        _ => return None,
    };
    Some(Fallback { recommended: recommended.into(), reasoning: reasoning.into() })
}
