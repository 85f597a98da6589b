//! What a runtime can do with trees that outlive one process: resume the
//! ones a restart cut off, pause a node for a person's approval and go on
//! when they answer, cancel a whole tree for good, and end the ones whose
//! deadline passed while nobody was running them. The journal
//! (`journal.rs`) is what makes each of these a re-run that does no
//! finished step twice.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::entry::{Step, USER_ORIGIN};
use super::{journal, record};
use crate::auth::Principal;
use crate::protocol::{AgentSlug, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, RequestId};
use crate::runtime::{Census, Runtime};
use crate::store::{Approval, ApprovalState, Durability, StepState, TreeStep, now_ms};
use crate::telemetry::TakenOver;
use crate::util::lock;

/// What [`Runtime::resume_open_trees`] found in the store.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Resumed {
    /// Trees cut off mid-run, now running again (in the background).
    pub resumed: Vec<RequestId>,
    /// Trees whose deadline passed while nobody ran them: ended `DEADLINE_EXCEEDED`.
    pub expired: Vec<RequestId>,
    /// Trees still waiting for a person's approval (they keep waiting).
    pub waiting: Vec<RequestId>,
    /// Trees running on another replica that is alive (left to it).
    pub elsewhere: Vec<RequestId>,
}

impl Resumed {
    fn has(&self, id: RequestId) -> bool {
        self.resumed.contains(&id) || self.expired.contains(&id)
    }
}

/// Whether `caller` may see and act on a tree or approval of `user`.
pub(super) fn owns(caller: &Principal, user: &crate::protocol::UserId) -> bool {
    matches!(caller, Principal::Admin) || caller.user() == Some(user)
}

/// How often a keeper looks for trees that waited for approval past their deadline.
const EXPIRY_SWEEP: Duration = Duration::from_secs(1);

impl Runtime {
    /// After a restart: resumes every tree the store holds as running (in
    /// background tasks; their answers are recorded as usual), ends the
    /// ones whose deadline passed meanwhile with `DEADLINE_EXCEEDED`, and
    /// leaves trees that wait for approval waiting. Finished steps are not
    /// run again: the journal answers for them.
    pub async fn resume_open_trees(&self) -> Result<Resumed, DelegationError> {
        self.announce().await;
        let census = Census::take(self).await?;
        let mut found = Resumed::default();
        let open = self.inner.store.open_steps().await?;
        for step in &open {
            let id = step.request_id;
            if lock(&self.inner.running).contains_key(&id) {
                continue;
            }
            if step.state == StepState::Waiting && step.deadline_at > now_ms() {
                found.waiting.push(id);
                continue;
            }
            // a tree another replica runs (or let wait past its deadline) is that replica's
            let Some(step) = self.claim(step, &census).await? else {
                if step.state == StepState::Running {
                    found.elsewhere.push(id);
                }
                continue;
            };
            if step.deadline_at <= now_ms() {
                self.expire(step).await?;
                found.expired.push(id);
            } else {
                // counted before it runs again (the dashboard marks resumed trees)
                let counted = TreeStep { resumes: step.resumes.saturating_add(1), ..step };
                self.inner.store.put_step(&self.for_store(counted.clone())).await?;
                let rt = self.clone();
                tokio::spawn(async move { rt.resume_step(counted).await });
                found.resumed.push(id);
            }
        }
        // a dead replica whose trees were all taken over is forgotten
        for dead in census.dead_ones() {
            if !open.iter().any(|s| s.owner.as_deref() == Some(dead.as_str()) && !found.has(s.request_id)) {
                self.inner.store.forget_replica(&dead).await?;
            }
        }
        let metrics = &self.inner.metrics;
        metrics.taken_over(TakenOver::Tree, found.resumed.len());
        metrics.taken_over(TakenOver::ExpiredTree, found.expired.len());
        if !found.resumed.is_empty() || !found.expired.is_empty() {
            tracing::info!(
                resumed = found.resumed.len(),
                expired = found.expired.len(),
                waiting = found.waiting.len(),
                elsewhere = found.elsewhere.len(),
                "open trees"
            );
        }
        Ok(found)
    }

    /// Whether this replica may act on the open top step `step` (resume it,
    /// end it): a waiting one is anyone's, a running one only once its owner
    /// is dead. Either is taken with a compare-and-set on its owner, so of
    /// several replicas claiming one step at once exactly one gets it. A
    /// running step this replica owns but does not run is between its start
    /// and its end being written here: not claimed again. The store marks a
    /// taken step running, so a waiting one taken here is not anyone's any
    /// more. The step as taken (this replica its owner; its state as seen,
    /// which says why it was open), or None.
    async fn claim(&self, step: &TreeStep, census: &Census) -> Result<Option<TreeStep>, DelegationError> {
        let me = self.replica_id();
        if step.state == StepState::Running && (step.owner.as_deref() == Some(me) || !census.orphaned(step)) {
            return Ok(None);
        }
        if let Some(ended) = step.owner.as_deref().and_then(|o| census.to_end(o)) {
            self.inner.store.heartbeat(&ended).await?;
        }
        let taken = self.inner.store.take_step(step, me).await?;
        Ok(taken.then(|| TreeStep { owner: Some(me.to_string()), updated_at: now_ms(), ..step.clone() }))
    }

    /// Runs the top step `id` again, to its end (after a restart, or once
    /// its approval was given): `NOT_FOUND` for no such step, `ALREADY_DECIDED`
    /// for one that has ended or runs in this process now. A tree a
    /// decision on this replica took ([`Runtime::decide`]) resumes here;
    /// another replica finds it running on a live one.
    pub async fn resume_tree(&self, id: RequestId) -> Result<DelegationResponse, DelegationError> {
        let step = self.top_step(id).await?;
        let refused = |why: String| DelegationError::new(ErrorCode::AlreadyDecided, why);
        if step.state.is_terminal() {
            lock(&self.inner.decided).remove(&id);
            return Err(refused(format!("tree {id} is ended already; nothing to resume")));
        }
        if lock(&self.inner.running).contains_key(&id) {
            return Err(refused(format!("tree {id} is running already; nothing to resume")));
        }
        // a tree a decision here took (it waited until then) is this replica's; a waiting tree is
        // anyone's to resume, once; a running one its live owner's
        let mine = step.state == StepState::Running && step.owner.as_deref() == Some(self.replica_id());
        let (taken, waited) = if mine && lock(&self.inner.decided).remove(&id) {
            (step, true)
        } else {
            match self.claim(&step, &Census::take(self).await?).await? {
                Some(taken) => (taken, step.state == StepState::Waiting),
                None => {
                    return Err(refused(format!("tree {id} is running on another replica already; nothing to resume")));
                }
            }
        };
        let response = self.resume_step(taken.clone()).await;
        if waited && response.error.as_ref().is_some_and(|e| e.code.is_refusal()) {
            // a rail refused it before it ran again: it waits again, for any replica (the take
            // marked it running here; a step that reached its end meanwhile keeps the end)
            let waiting = TreeStep { state: StepState::Waiting, updated_at: now_ms(), ..taken };
            if let Err(e) = self.inner.store.put_step(&self.for_store(waiting)).await {
                tracing::warn!(request_id = %id, "a refused resume left tree {id} running on this replica: {e}");
            }
        }
        Ok(response)
    }

    /// Ends the trees that wait for approval past their deadline (a server
    /// calls this now and then): `DEADLINE_EXCEEDED`, their approvals expired.
    pub async fn expire_overdue(&self) -> Result<Vec<RequestId>, DelegationError> {
        let now = now_ms();
        let mut ended = Vec::new();
        let mut census = None;
        for step in self.inner.store.open_steps().await? {
            if step.state == StepState::Waiting && step.deadline_at <= now {
                if census.is_none() {
                    census = Some(Census::take(self).await?);
                }
                // one replica ends it: its owner, or the one that took it from a dead owner
                let Some(step) = self.claim(&step, census.as_ref().expect("taken above")).await? else {
                    continue;
                };
                ended.push(step.request_id);
                self.expire(step).await?;
            }
        }
        Ok(ended)
    }

    /// The approvals `caller` may answer (a user: their own; an operator: every one), pending only when `pending`.
    pub async fn approvals(&self, caller: &Principal, pending: bool) -> Result<Vec<Approval>, DelegationError> {
        let user = match caller {
            Principal::Admin => None,
            other => Some(other.user().ok_or_else(|| {
                DelegationError::new(ErrorCode::PermissionDenied, "only a user or an operator has approvals to answer")
            })?),
        };
        Ok(self.inner.store.approvals(user, pending).await?)
    }

    /// A person's answer to approval `id`: recorded once (a second answer,
    /// or one to an approval that expired, is `ALREADY_DECIDED`; another
    /// user's is `USER_MISMATCH`; an unknown id `NOT_FOUND`; nothing changes
    /// then). The answer and the waiting tree's next state are one
    /// compare-and-set in the store (`Store::decide_approval`): of a
    /// decision and a cancel of one waiting tree, the first decides it, and
    /// the tree is this replica's to resume. The tree is not resumed here:
    /// call [`Runtime::resume_tree`] with the approval's `root_id` (a server
    /// does so in the background); until then it counts as running here.
    pub async fn decide(
        &self,
        caller: &Principal,
        id: &str,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<Approval, DelegationError> {
        let not_found = || DelegationError::new(ErrorCode::NotFound, format!("no approval has id '{id}'"));
        let a = self.inner.store.approval(id).await?.ok_or_else(not_found)?;
        if !owns(caller, &a.user_id) {
            return Err(DelegationError::new(
                ErrorCode::UserMismatch,
                format!("approval '{id}' belongs to another user; answer your own (`switchboard approvals`)"),
            ));
        }
        let already = |a: &Approval| {
            DelegationError::new(
                ErrorCode::AlreadyDecided,
                format!("approval '{}' was {} already; nothing was changed", a.id, a.state.as_str()),
            )
        };
        if a.state != ApprovalState::Pending {
            return Err(already(&a));
        }
        let state = if approve { ApprovalState::Approved } else { ApprovalState::Rejected };
        let reason = reason.map(str::trim).filter(|r| !r.is_empty()).map(|r| self.for_store(r.to_string()));
        match self.inner.store.decide_approval(id, state, &caller.label(), reason.as_ref(), self.replica_id()).await? {
            Some(decided) => {
                lock(&self.inner.decided).insert(decided.root_id);
                Ok(decided)
            }
            // someone else answered in between, or the tree no longer waits (cancelled, expired)
            None => {
                let now = self.inner.store.approval(id).await?.unwrap_or(a);
                if now.state == ApprovalState::Pending {
                    return Err(DelegationError::new(
                        ErrorCode::AlreadyDecided,
                        format!("approval '{id}' belongs to a tree that no longer waits for it; nothing was changed"),
                    ));
                }
                Err(already(&now))
            }
        }
    }

    /// Cancels the tree rooted at `root` for good: every running or waiting
    /// step is marked cancelled (a resumed process does not start them
    /// again), what runs in this process stops (what another live replica
    /// runs stops at its next lease renewal), a tree that waited is
    /// recorded as cancelled, and its pending approvals are closed. How
    /// many steps were cancelled.
    pub async fn cancel_tree(&self, caller: &Principal, root: RequestId) -> Result<u64, DelegationError> {
        let step = self.top_step(root).await?;
        if !owns(caller, &step.user_id) && caller.agent().is_none_or(|a| format!("service:{a}") != step.caller) {
            return Err(DelegationError::new(ErrorCode::UserMismatch, format!("tree {root} belongs to another user")));
        }
        if step.state.is_terminal() {
            return Err(DelegationError::new(ErrorCode::AlreadyDecided, format!("tree {root} has ended already")));
        }
        let store = &self.inner.store;
        let steps = store.tree_steps(step.root_id).await?;
        let open = steps.iter().filter(|s| !s.state.is_terminal()).count();
        // cancelled in the store first, in one transaction with its pending approvals (so a
        // decision racing this one finds the tree no longer waiting, and a crash now resumes
        // nothing); a tree that ended meanwhile is not cancelled
        if store.cancel_tree(step.root_id, &caller.label()).await? == 0 {
            return Err(DelegationError::new(ErrorCode::AlreadyDecided, format!("tree {root} has ended already")));
        }
        lock(&self.inner.decided).remove(&root);
        if lock(&self.inner.running).contains_key(&root) {
            self.cancel(root);
        } else if step.state == StepState::Running
            && step.owner.as_deref() != Some(self.replica_id())
            && !Census::take(self).await?.orphaned(&step)
        {
            // another replica runs it: it stops there at its next renewal
        } else {
            // nothing runs it here: every step left open gets its record, cancelled
            let why = DelegationError::new(ErrorCode::Cancelled, format!("cancelled by {}", caller.label()));
            self.end_steps(step, &steps, why).await?;
        }
        Ok(open as u64)
    }

    async fn top_step(&self, id: RequestId) -> Result<TreeStep, DelegationError> {
        match self.inner.store.step(id).await? {
            Some(step) if step.is_top() => Ok(step),
            _ => Err(DelegationError::new(ErrorCode::NotFound, format!("no tree has root id {id}"))),
        }
    }

    async fn resume_step(&self, step: TreeStep) -> DelegationResponse {
        let id = step.request_id;
        let left = step.deadline_at.saturating_sub(now_ms());
        let parsed: Option<DelegationRequest> = serde_json::from_str(&step.request).ok();
        let (Some(mut req), Some(caller), true) = (parsed, journal::caller(&step), left > 0) else {
            let why = if left > 0 {
                DelegationError::new(ErrorCode::RecordIncomplete, format!("tree {id}'s stored envelope is unreadable"))
            } else {
                overdue(&step)
            };
            let target =
                crate::protocol::AgentSlug::parse(step.target.clone()).unwrap_or_else(|_| self.fallback_target());
            let response = DelegationResponse::failed(id, target, why.clone());
            if let Err(e) = self.end_offline(step, why).await {
                tracing::error!(request_id = %id, "end of a tree not recorded: {e}");
            }
            return response;
        };
        req.constraints.deadline_ms = u64::try_from(left).unwrap_or(0);
        // the tree's vault, opened: the user gets their values back (admission
        // prefers its conversation's, when this process still holds it)
        if let Some(vault) = step.pii.as_deref().and_then(|p| self.inner.seal.open(p)) {
            lock(&self.inner.resumed_vaults).insert(id, Arc::new(std::sync::Mutex::new(vault)));
        }
        // the budget is what was left: finished children spent theirs (the journal answers for them)
        req.constraints.max_tokens = req.constraints.max_tokens.saturating_sub(self.spent_below(&step).await);
        tracing::info!(request_id = %id, "resuming tree");
        let response = self
            .dispatch_step(Step {
                parent: None,
                caller: &caller,
                req,
                entry: journal::entry(&step),
                resumed: true,
                end: Durability::Now,
            })
            .await;
        lock(&self.inner.resumed_vaults).remove(&id); // refused before it took it
        response
    }

    /// Tokens the finished children of `step` used (their subtrees included).
    async fn spent_below(&self, step: &TreeStep) -> u32 {
        let Ok(steps) = self.inner.store.tree_steps(step.root_id).await else { return 0 };
        steps
            .iter()
            .filter(|s| s.parent_id == Some(step.request_id))
            .filter_map(journal::answer)
            .fold(0u32, |sum, r| sum.saturating_add(r.token_usage.total))
    }

    fn fallback_target(&self) -> crate::protocol::AgentSlug {
        self.entry_agent().unwrap_or_else(|_| crate::protocol::AgentSlug::parse("switchboard").expect("a valid slug"))
    }

    async fn expire(&self, step: TreeStep) -> Result<(), DelegationError> {
        let why = overdue(&step);
        self.inner.store.close_approvals(step.root_id, ApprovalState::Expired, "deadline").await?;
        self.end_offline(step, why).await
    }

    /// Records the end of a top step nobody runs here, and of the steps
    /// below it that were left open (first, so that a crash in between
    /// leaves the top open and the next start ends the rest).
    async fn end_offline(&self, step: TreeStep, why: DelegationError) -> Result<(), DelegationError> {
        let steps = self.inner.store.tree_steps(step.root_id).await?;
        self.end_steps(step, &steps, why).await
    }

    /// [`Runtime::end_offline`], with the tree's steps as they were read
    /// before (those open then get their records).
    async fn end_steps(&self, step: TreeStep, steps: &[TreeStep], why: DelegationError) -> Result<(), DelegationError> {
        self.end_open_below(steps, &why).await?;
        let req = match serde_json::from_str::<DelegationRequest>(&step.request) {
            Ok(req) => req,
            // cut off before its envelope was kept: the record says what the step knows
            Err(_) => {
                let origin = journal::caller(&step)
                    .and_then(|c| c.agent().cloned())
                    .or_else(|| AgentSlug::parse(USER_ORIGIN).ok());
                let (Some(origin), Ok(target)) = (origin, AgentSlug::parse(step.target.clone())) else {
                    return Err(DelegationError::new(
                        ErrorCode::RecordIncomplete,
                        format!("tree {}'s stored step names no agent", step.request_id),
                    ));
                };
                let objective = "(not known: the tree was cut off before its envelope was kept)";
                let mut req = DelegationRequest::new(origin, target, step.user_id.clone(), objective, "");
                req.request_id = step.request_id;
                req
            }
        };
        let response = DelegationResponse::failed(step.request_id, req.target_employee.clone(), why);
        record::offline(self, step, &req, &response).await
    }

    /// Ends the steps under the top step `top` that nobody runs any more
    /// (their agents ran when the process died, or they waited with their
    /// tree): each gets its record and ends with `why`, as an in-process
    /// tree's unfinished children do when it stops, so that no step of an
    /// ended tree stays open in the journal without a record.
    async fn end_open_below(&self, steps: &[TreeStep], why: &DelegationError) -> Result<(), DelegationError> {
        for step in steps.iter().filter(|s| !s.is_top() && !s.state.is_terminal()) {
            let Some(parent) = steps.iter().find(|p| Some(p.request_id) == step.parent_id) else { continue };
            let (Ok(origin), Ok(target)) =
                (AgentSlug::parse(parent.target.clone()), AgentSlug::parse(step.target.clone()))
            else {
                continue;
            };
            // a child keeps no envelope (its parent makes it again): the record says where it was
            let objective = "(not known: the step was cut off and its tree ended before it ran again)";
            let mut req = DelegationRequest::new(origin, target, step.user_id.clone(), objective, "");
            req.request_id = step.request_id;
            req.root_request_id = Some(step.root_id);
            req.parent_request_id = step.parent_id;
            req.current_depth = depth(steps, parent);
            let response = DelegationResponse::failed(step.request_id, req.target_employee.clone(), why.clone());
            record::offline(self, step.clone(), &req, &response).await?;
        }
        Ok(())
    }

    /// Keeps this replica's share of the trees, until the future is dropped
    /// (a server and a worker run it): at start, the trees a restart cut
    /// off resume (those past their deadline end `DEADLINE_EXCEEDED`); then
    /// every second trees that waited for approval past their deadline end
    /// the same way, and every half lease period the trees of a replica
    /// that died are taken over.
    pub async fn keep_trees(self) {
        let report = |found: &Resumed| {
            if !(found.resumed.is_empty() && found.expired.is_empty()) {
                eprintln!(
                    "switchboard: {} trees resumed, {} ended past their deadline, {} waiting for approval, \
                     {} running on other replicas",
                    found.resumed.len(),
                    found.expired.len(),
                    found.waiting.len(),
                    found.elsewhere.len()
                );
            }
        };
        match self.resume_open_trees().await {
            Ok(found) => report(&found),
            Err(e) => eprintln!("switchboard: open trees not resumed: {e}"),
        }
        let takeover = self.inner.lease.period / 2;
        let mut last_takeover = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(EXPIRY_SWEEP.min(takeover));
        loop {
            tick.tick().await;
            // the takeover's look ends the overdue waiting trees too: one read of the open steps per tick
            if last_takeover.elapsed() >= takeover {
                last_takeover = tokio::time::Instant::now();
                match self.resume_open_trees().await {
                    Ok(found) => report(&found),
                    Err(e) => tracing::warn!("trees of dead replicas not taken over: {e}"),
                }
            } else if let Err(e) = self.expire_overdue().await {
                tracing::warn!("overdue trees not ended: {e}");
            }
        }
    }
}

/// The depth `step` ran at: its top step's envelope's, one deeper for each
/// step between them.
fn depth(steps: &[TreeStep], step: &TreeStep) -> u32 {
    let mut depth = 0u32;
    let mut at = step;
    for _ in 0..steps.len() {
        if at.is_top() {
            let top = serde_json::from_str::<DelegationRequest>(&at.request).map_or(0, |r| r.current_depth);
            return top.saturating_add(u32::from(at.entry != "user")).saturating_add(depth);
        }
        let Some(parent) = steps.iter().find(|p| Some(p.request_id) == at.parent_id) else { break };
        depth = depth.saturating_add(1);
        at = parent;
    }
    depth
}

fn overdue(step: &TreeStep) -> DelegationError {
    let what = if step.state == StepState::Waiting { "waited for approval" } else { "was cut off by a restart" };
    DelegationError::new(
        ErrorCode::DeadlineExceeded,
        format!("the tree's deadline passed while it {what}; it was not run again"),
    )
}
