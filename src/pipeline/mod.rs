//! The pipeline of one delegation (docs/DESIGN.md#the-flow-of-one-delegation),
//! read top to bottom in `Runtime::flow`. Every delegation goes through it,
//! whether it comes from the CLI, HTTP, A2A, MCP or an agent's own
//! `Delegator`:
//!
//! ```text
//! admit ─► idempotency ─► attempts ───────────────────────────────► record ─► respond
//! validate   a repeat     [context (PII redacted) → breaker →        node, audit,   PII restored
//! lineage    answers      agent inside the deadline → budget →       conversation:  at the edge;
//! authn      from the     verify → retry]*                           durable first  kept for repeats
//! route      store
//! authz, depth, fan-out, cycle, deadline, budget, sessions
//! ```
//!
//! One file per stage: `admit` (with `route` and `sessions`),
//! `idempotency`, `attempts` (with `attempt`, `context`, `pii`,
//! `verify` and `seeds`), `record`, `respond`; a user's turn is
//! `ask`. `node` is a running delegation; `dispatch` is how its agent delegates further.

mod admit;
mod ask;
mod attempt;
mod attempts;
mod builder;
mod context;
mod dispatch;
mod door;
mod durable;
mod idempotency;
mod in_flight;
mod insights;
mod journal;
mod node;
mod pii;
mod record;
pub mod registry;
mod replay;
mod replica;
mod respond;
mod route;
mod runtime;
mod seeds;
mod sessions;
mod tree_view;
mod verify;

#[cfg(test)]
mod testing;

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

pub use ask::{AskOptions, AskResponse, answer_of};
pub use builder::RuntimeBuilder;
pub use door::{Door, Envelope, Turn, Work};
pub use durable::Resumed;
pub use in_flight::Admission;
pub use insights::whose;
pub use registry::{Member, Registry};
pub use replay::{Outcome, ReplayMode, ReplayReport, ReplayedNode};
pub use runtime::Runtime;
pub use tree_view::TreeView;

use crate::auth::Principal;
use crate::protocol::{DelegationRequest, DelegationResponse, Status};
use crate::store::{Durability, now_ms};
use crate::telemetry::Event;
use admit::Refused;
use node::Node;
use pii::Pii;

/// The origin recorded for a user's own message to Prime.
pub const USER_ORIGIN: &str = "user";

/// How a delegation enters: a user's own turn (the root of a new tree, at
/// depth 0, no origin agent), a delegation from an operator, or an agent's
/// envelope from outside the runtime (`remote`, through any door), with the
/// lineage its token verified to, if it carried one. An agent's delegation
/// from a node running here is a `Delegation` with a parent node.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    UserTurn,
    Delegation,
    Remote(Option<Arc<crate::lineage::Hop>>),
}

impl Entry {
    /// Whether the target runs one deeper than the envelope's depth (every entry but a user's turn).
    fn is_delegation(&self) -> bool {
        !matches!(self, Self::UserTurn)
    }
}

impl Runtime {
    /// The pipeline, for a top-level delegation (one that came through
    /// [`Runtime::enter`]) whose end (its record, audit record and
    /// conversation) is durable as `end` says: [`Durability::WithNext`] only
    /// for a caller that commits a synced write of its own before it
    /// answers anyone.
    pub(super) async fn dispatch_top(
        &self,
        caller: &Principal,
        req: DelegationRequest,
        entry: Entry,
        end: Durability,
    ) -> DelegationResponse {
        self.dispatch_step(None, caller, req, entry, false, end).await
    }

    /// The pipeline. `parent` is the calling node when the call comes from
    /// an agent running in this runtime; `resumed` for a step that ran
    /// before (after a restart or an approval), under its old request id: it
    /// is not claimed again, and its children's answers come from the journal.
    pub(super) async fn dispatch_step(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Principal,
        req: DelegationRequest,
        entry: Entry,
        resumed: bool,
        end: Durability,
    ) -> DelegationResponse {
        let depth = parent.map_or(req.current_depth, |p| p.depth).saturating_add(u32::from(entry.is_delegation()));
        let span = tracing::info_span!(
            "delegation",
            otel.name = %format!("delegate {}", req.target_employee),
            request_id = %req.request_id,
            root_id = %req.root_id(),
            origin_agent = %req.origin_employee,
            target_agent = %req.target_employee,
            depth,
        );
        // boxed: the whole pipeline's state is large, and whoever holds this
        // future (a spawned task, a parent's join) then moves a pointer, not kilobytes
        let response = Box::pin(self.flow(parent, caller, req, entry, resumed, end)).instrument(span).await;
        if let Some(p) = parent {
            p.add_child_usage(response.token_usage);
        }
        response
    }

    async fn flow(
        &self,
        parent: Option<&Arc<Node>>,
        caller: &Principal,
        req: DelegationRequest,
        entry: Entry,
        resumed: bool,
        end: Durability,
    ) -> DelegationResponse {
        let clock = Clock::start();
        let parent_scope = parent.map(|p| &*p.scope);
        let entered = journal::entry_name(&entry, parent.is_some());
        // admit: every rail before the agent runs
        let adm = match admit::admit(self, parent, caller, req, entry, resumed).await {
            Ok(adm) => adm,
            Err(refused) => return record::refuse(self, refused, parent_scope, clock).await,
        };
        // idempotency: a repeated key gets the stored answer; nothing runs
        // again (a resumed step holds its key already)
        match if resumed { Ok(None) } else { idempotency::claim(self, &adm).await } {
            Ok(None) => {}
            Ok(Some(mut stored)) => {
                if parent.is_none() {
                    pii::restore_kept(self, &mut stored).await;
                }
                return stored;
            }
            Err(e) => return record::refuse(self, Refused::admitted(adm, e), parent_scope, clock).await,
        }
        // journal: the step is durable before its agent runs
        if resumed {
            adm.node.mark_resumed();
            // a resumed tree keeps the clock reading it started with
            if parent.is_none()
                && let Ok(Some(before)) = self.inner.store.step(adm.req.request_id).await
            {
                adm.node.tree.pin_clock(before.created_at);
            }
        }
        adm.node.tree.pin_clock(clock.started_ms);
        let step = journal::start(self, &adm, caller, entered).await;
        // the fence: a tree another replica took over runs and writes nothing more here
        if let Err(e) = self.fence(&adm.node.top).await {
            if !adm.node.top.is_taken() && !resumed {
                idempotency::free(self, &adm.req).await; // nothing ran: a retry may run it
            }
            return record::unwritten(&adm, e, &clock);
        }
        // written as the store keeps it (and kept so: its end is written from it)
        let step = self.for_store(step);
        let written = self.inner.store.put_step(&step).await;
        let step = step.into_inner();
        if let Err(e) = written {
            if !resumed {
                idempotency::free(self, &adm.req).await; // nothing ran: a retry may run it
            }
            return record::refuse(self, Refused::admitted(adm, e.into()), parent_scope, clock).await;
        }
        if let Some(p) = parent {
            p.child_started();
        }
        let _in_flight = adm.member.enter();
        let _cancellable = runtime::Cancellable::register(self, adm.node.request_id, adm.node.cancel.clone());
        // the record exists from here: written as cancelled if this future is dropped
        let (running, objective) = record::Running::start(self, &adm, &clock);
        self.started(&adm, objective, &clock);
        // attempts: context → breaker → agent inside the deadline → budget → verify → retry
        let attempts = attempts::run(self, &adm).await;
        adm.node.cancel.cancel(); // whatever the agent started and left behind stops now
        // record: node, audit and conversation, durable before the response is acknowledged
        let mut response = respond::response(&adm, &attempts, &clock);
        // a child waiting for a person's approval pauses this node too, up to the root
        if let Some(why) = adm.node.waiting() {
            respond::pause(&mut response, why);
        }
        let mut conversation = context::conversation(self, &adm, &response).await;
        if response.status == Status::NeedsApproval {
            // the conversation is written once, when the node ends for good
            conversation.messages.clear();
            conversation.facts.clear();
        }
        let tree = Some((self, &*adm.node.tree));
        conversation.step = Some(journal::ended(step, &response, adm.node.reads.take(), tree));
        // a keyed answer is kept under its key (or the key freed) in the commit of its record,
        // with its tokens (a repeat gets the values back from the tree's sealed vault)
        conversation.key = idempotency::answer(&adm.req, &response);
        // respond: back at the edge the caller gets its own values back
        if parent.is_none() {
            Pii::new(&self.inner.redactor, Some(&adm.node.tree)).restore(&mut response);
        }
        let keyed = conversation.key.is_some();
        // nothing was written: a retry runs it again (unless the replica that took the tree over answers for it)
        if !running.finish(&mut response, attempts.execution.attempts, conversation, end).await
            && keyed
            && !adm.node.top.is_taken()
        {
            idempotency::free(self, &adm.req).await;
        }
        tracing::info!(
            request_id = %adm.req.request_id, origin = %adm.req.origin_employee, target = %adm.req.target_employee,
            depth = adm.node.depth, status = response.status.as_str(), duration_ms = response.duration_ms,
            "delegation finished"
        );
        response
    }

    fn started(&self, adm: &admit::Admitted, objective: String, clock: &Clock) {
        let req = &adm.req;
        self.inner.events.emit(|| Event::Started {
            request_id: req.request_id,
            root_id: adm.node.root_id,
            user_id: req.user_id.to_string(),
            parent_id: req.parent_request_id,
            origin: req.origin_employee.to_string(),
            target: req.target_employee.to_string(),
            objective,
            depth: adm.node.depth,
            at_ms: clock.started_ms,
        });
    }
}

/// When a delegation started: for durations, and for its record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    started: Instant,
    started_ms: i64,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Self { started: Instant::now(), started_ms: now_ms() }
    }

    pub(crate) fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::{Flaky, request, runtime, send};
    use crate::protocol::{ErrorCode, Status};

    #[tokio::test]
    async fn one_delegation_runs_the_whole_flow_in_order() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let mut events = rt.subscribe();
        let r = send(&rt, request("boss", "worker", "Repeat for ann@example.com", "ann@example.com")).await;
        // respond: the caller gets its own values back
        assert_eq!(r.status, Status::Success, "{:?}", r.error);
        assert_eq!(r.result, "echo: ann@example.com");
        // record: the node and one audit entry, neither with the raw address
        let stored = rt.store().delegation_tree(r.request_id).await.unwrap();
        assert_eq!(stored.len(), 1);
        assert!(!stored[0].objective.contains("ann@example.com"), "{}", stored[0].objective);
        let audit = rt.store().audit_log().await.unwrap();
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].record.request_id, r.request_id);
        // events: started, attempt, finished, in that order
        let mut kinds = Vec::new();
        while let Ok(e) = events.try_recv() {
            kinds.push(match e {
                Event::Started { .. } => "started",
                Event::Attempt { .. } => "attempt",
                Event::Retry { .. } => "retry",
                Event::Finished { .. } => "finished",
            });
        }
        assert_eq!(kinds, ["started", "attempt", "finished"]);
        assert_eq!(rt.live_trees(), 0);
    }

    #[tokio::test]
    async fn a_refused_delegation_is_recorded_and_never_reaches_the_agent() {
        let (worker, runs) = Flaky::new(0, ErrorCode::AgentFailed);
        let rt = runtime(worker);
        let r = send(&rt, request("stranger", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::DelegationNotAllowed));
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
        let stored = rt.store().delegation_tree(r.request_id).await.unwrap();
        assert_eq!(stored[0].status, "refused");
        assert_eq!(rt.store().audit_log().await.unwrap().len(), 1);
    }
}
