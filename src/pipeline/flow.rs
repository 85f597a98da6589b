//! The flow of one delegation (docs/DESIGN.md#the-flow-of-one-delegation),
//! read top to bottom in `Runtime::flow`: each stage is a file of its own,
//! called from here in its order.

use tracing::Instrument;

use super::admit::{self, Refused};
use super::clock::Clock;
use super::entry::{Entry, Step};
use super::pii::{self, Pii};
use super::{attempts, context, idempotency, journal, record, respond};
use crate::auth::Principal;
use crate::protocol::{DelegationRequest, DelegationResponse, Status};
use crate::runtime::{Cancellable, Runtime};
use crate::store::Durability;
use crate::telemetry::Event;

impl Runtime {
    /// The pipeline, for a top-level delegation (one that came through
    /// [`Runtime::enter`]) whose end (its record, audit record and
    /// conversation) is durable as `end` says: [`Durability::WithNext`] only
    /// for a caller that commits a synced write of its own before it
    /// answers anyone.
    pub(crate) async fn dispatch_top(
        &self,
        caller: &Principal,
        req: DelegationRequest,
        entry: Entry,
        end: Durability,
    ) -> DelegationResponse {
        self.dispatch_step(Step { parent: None, caller, req, entry, resumed: false, end }).await
    }

    /// The pipeline, for one [`Step`].
    pub(crate) async fn dispatch_step(&self, step: Step<'_>) -> DelegationResponse {
        let Step { parent, ref req, ref entry, .. } = step;
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
        let response = Box::pin(self.flow(step)).instrument(span).await;
        if let Some(p) = parent {
            p.add_child_usage(response.token_usage);
        }
        response
    }

    async fn flow(&self, step: Step<'_>) -> DelegationResponse {
        let Step { parent, caller, resumed, end, .. } = step;
        let clock = Clock::start();
        let parent_scope = parent.map(|p| &*p.scope);
        let entered = journal::entry_name(&step.entry, parent.is_some());
        // admit: every rail before the agent runs
        let adm = match admit::admit(self, step).await {
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
        let _cancellable = Cancellable::register(self, adm.node.request_id, adm.node.cancel.clone());
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
        let ended = journal::ended(self, step, &response, adm.node.reads.take(), Some(&adm.node.tree));
        // a keyed answer is kept under its key (or the key freed) in the commit of its record,
        // with its tokens (a repeat gets the values back from the tree's sealed vault)
        conversation.key = idempotency::answer(&adm.req, &response, ended.response.as_deref());
        conversation.step = Some(ended);
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
