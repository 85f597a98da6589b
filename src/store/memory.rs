//! The in-process store: everything in memory, for tests, benchmarks and the
//! CLI when no database is wanted.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::a2a_state::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, BreakerRecord};
use super::audit::{AuditEntry, AuditHead, AuditRecord, GENESIS};
use super::{
    Approval, ApprovalState, Claim, Conversation, DelegationRecord, Fact, Held, Holder, KeyAnswer, Message, MoneyEntry,
    MoneyPlan, Outcome, Redacted, ReplayRecord, Session, Store, StoreCounts, StoreError, StoreResult, TreeStep,
};
use crate::protocol::{AgentSlug, RequestId, SessionId, UserId};
use crate::util::lock;

/// A store that keeps everything in the process, lost when it exits; for tests, demos and embedding.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    a2a: super::a2a_state::InMemory,
    push: super::a2a_push::InMemory,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<SessionId, Session>,
    /// (user, agent, parent) → the child session, so lookups stay O(1).
    children: HashMap<(UserId, AgentSlug, SessionId), SessionId>,
    messages: HashMap<SessionId, Vec<Message>>,
    facts: HashMap<UserId, Vec<Fact>>,
    audit: Vec<AuditEntry>,
    delegations: HashMap<RequestId, DelegationRecord>,
    seeds: HashMap<(AgentSlug, String, u64), f64>,
    /// (user, key) → (request hash, response once finished)
    /// Per key: the request hash, the response once finished, and who holds it meanwhile.
    idempotency: HashMap<(UserId, String), (String, Option<String>, Held)>,
    /// token hash → (kind, subject)
    tokens: HashMap<String, (String, String)>,
    money: HashMap<UserId, Vec<MoneyEntry>>,
    /// (user, kind, name) → the plan
    plans: std::collections::BTreeMap<(UserId, String, String), MoneyPlan>,
    steps: HashMap<RequestId, TreeStep>,
    replicas: Vec<super::Replica>,
    approvals: std::collections::BTreeMap<String, Approval>,
    replays: Vec<ReplayRecord>,
    ratings: HashMap<RequestId, super::Rating>,
}

impl Inner {
    /// Keeps a finished request's answer under its key, or frees the key
    /// (only while no answer is kept under it).
    fn settle_key(&mut self, KeyAnswer { user_id, key, response }: KeyAnswer) {
        let k = (user_id, key);
        match (self.idempotency.get_mut(&k), response) {
            (Some(entry), Some(response)) => entry.1 = Some(response),
            (Some((_, None, _)), None) => drop(self.idempotency.remove(&k)),
            _ => {}
        }
    }

    /// Writes a step as the SQL upsert does (`journal::merged`); false,
    /// changing nothing, when the id holds another caller's step.
    fn put_step(&mut self, step: TreeStep) -> bool {
        let next = match self.steps.get(&step.request_id) {
            Some(before) if !super::journal::owned_by(before, &step) => return false,
            Some(before) => super::journal::merged(before, &step),
            None => step,
        };
        self.steps.insert(next.request_id, next);
        true
    }

    /// Saves a record, or its later outcome; another delegation's record under the same id stays.
    fn put_delegation(&mut self, record: &DelegationRecord) {
        match self.delegations.get(&record.request_id) {
            Some(before) if !before.same_delegation(record) => {}
            _ => drop(self.delegations.insert(record.request_id, record.clone())),
        }
    }

    /// Closes the tree's pending approvals as `state`; how many.
    fn close_approvals(&mut self, root: RequestId, state: ApprovalState, by: &str, reason: Option<&str>) -> u64 {
        let now = super::now_ms();
        let mut n = 0;
        for a in self.approvals.values_mut().filter(|a| a.root_id == root && a.state == ApprovalState::Pending) {
            (a.state, a.decided_by, a.reason, a.decided_at) =
                (state, Some(by.to_string()), reason.map(str::to_string), Some(now));
            n += 1;
        }
        n
    }

    /// Appends `record` to the audit chain; the entry it made.
    fn seal_audit(&mut self, record: AuditRecord) -> AuditEntry {
        let prev = self.audit.last().map_or(GENESIS, |e| e.hash.as_str());
        let entry = record.seal(self.audit.len() as u64 + 1, prev);
        self.audit.push(entry.clone());
        entry
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn ensure_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        id: Option<SessionId>,
        parent: Option<SessionId>,
    ) -> StoreResult<Session> {
        let mut i = lock(&self.inner);
        let id = id.unwrap_or_default();
        match i.sessions.get(&id) {
            Some(s) if &s.user_id == user => Ok(s.clone()),
            Some(_) => Err(StoreError::UserMismatch),
            None => {
                let s = Session::new(user, agent, id, parent);
                i.sessions.insert(id, s.clone());
                if let Some(p) = parent {
                    i.children.entry((user.clone(), agent.clone(), p)).or_insert(id);
                }
                Ok(s)
            }
        }
    }

    async fn child_session(&self, user: &UserId, agent: &AgentSlug, parent: SessionId) -> StoreResult<Session> {
        let mut i = lock(&self.inner);
        match i.sessions.get(&parent) {
            Some(p) if &p.user_id != user => return Err(StoreError::UserMismatch),
            _ => {}
        }
        let key = (user.clone(), agent.clone(), parent);
        if let Some(s) = i.children.get(&key).and_then(|id| i.sessions.get(id)) {
            return Ok(s.clone());
        }
        let s = Session::new(user, agent, SessionId::new(), Some(parent));
        i.sessions.insert(s.id, s.clone());
        i.children.insert(key, s.id);
        Ok(s)
    }

    async fn session(&self, id: SessionId) -> StoreResult<Option<Session>> {
        Ok(lock(&self.inner).sessions.get(&id).cloned())
    }

    async fn find_child_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        parent: SessionId,
    ) -> StoreResult<Option<Session>> {
        let i = lock(&self.inner);
        let key = (user.clone(), agent.clone(), parent);
        Ok(i.children.get(&key).and_then(|id| i.sessions.get(id)).cloned())
    }

    async fn append_messages(&self, messages: &Redacted<Vec<Message>>) -> StoreResult<()> {
        let mut i = lock(&self.inner);
        for m in messages.iter() {
            i.messages.entry(m.session_id).or_default().push(m.clone());
        }
        Ok(())
    }

    async fn recent_messages(&self, session: SessionId, limit: usize) -> StoreResult<Vec<Message>> {
        let i = lock(&self.inner);
        let all = i.messages.get(&session).map(Vec::as_slice).unwrap_or_default();
        Ok(all[all.len().saturating_sub(limit)..].to_vec())
    }

    async fn facts(&self, user: &UserId, scopes: &[String], limit: usize) -> StoreResult<Vec<Fact>> {
        let i = lock(&self.inner);
        let facts = i.facts.get(user).map(Vec::as_slice).unwrap_or_default();
        let mut newest: Vec<Fact> =
            facts.iter().rev().filter(|f| scopes.contains(&f.scope)).take(limit).cloned().collect();
        newest.reverse();
        Ok(newest)
    }

    async fn add_facts(&self, facts: &Redacted<Vec<Fact>>) -> StoreResult<()> {
        let mut i = lock(&self.inner);
        for f in facts.iter() {
            let mine = i.facts.entry(f.user_id.clone()).or_default();
            if !mine.iter().any(|g| g.scope == f.scope && g.fact == f.fact) {
                mine.push(f.clone());
            }
        }
        Ok(())
    }

    async fn append_audit(&self, record: Redacted<AuditRecord>) -> StoreResult<AuditEntry> {
        Ok(lock(&self.inner).seal_audit(record.into_inner()))
    }

    /// The default's writes, under one lock: they land together, as the SQL
    /// stores' transaction does.
    async fn record_delegation(
        &self,
        record: &Redacted<DelegationRecord>,
        audit: Redacted<AuditRecord>,
        conversation: Redacted<Conversation>,
        _durability: super::Durability,
    ) -> StoreResult<AuditEntry> {
        let Conversation { new_session, messages, facts, step, key } = conversation.into_inner();
        let audit = audit.into_inner();
        let mut guard = lock(&self.inner);
        let i = &mut *guard;
        if let Some(s) = new_session {
            match i.sessions.get(&s.id) {
                Some(kept) if kept.user_id != s.user_id => return Err(StoreError::UserMismatch),
                Some(_) => {}
                None => {
                    if let Some(p) = s.parent_id {
                        i.children.entry((s.user_id.clone(), s.agent.clone(), p)).or_insert(s.id);
                    }
                    i.sessions.insert(s.id, Session::new(&s.user_id, &s.agent, s.id, s.parent_id));
                }
            }
        }
        for m in messages {
            i.messages.entry(m.session_id).or_default().push(m);
        }
        for f in facts {
            let mine = i.facts.entry(f.user_id.clone()).or_default();
            if !mine.iter().any(|g| g.scope == f.scope && g.fact == f.fact) {
                mine.push(f);
            }
        }
        if let Some(step) = step {
            i.put_step(step);
        }
        i.put_delegation(record);
        if let Some(answer) = key {
            i.settle_key(answer);
        }
        Ok(i.seal_audit(audit))
    }

    async fn audit_log(&self) -> StoreResult<Vec<AuditEntry>> {
        Ok(lock(&self.inner).audit.clone())
    }

    async fn audit_head(&self) -> StoreResult<Option<AuditHead>> {
        Ok(lock(&self.inner).audit.last().map(|e| AuditHead { seq: e.seq, hash: e.hash.clone() }))
    }

    async fn put_delegation(&self, record: &Redacted<DelegationRecord>) -> StoreResult<()> {
        lock(&self.inner).put_delegation(record);
        Ok(())
    }

    async fn delegation_tree(&self, request: RequestId) -> StoreResult<Vec<DelegationRecord>> {
        let i = lock(&self.inner);
        let root = i.delegations.get(&request).map_or(request, |r| r.root_id);
        let mut nodes: Vec<DelegationRecord> = i.delegations.values().filter(|r| r.root_id == root).cloned().collect();
        nodes.sort_by_key(|r| (r.started_at, r.request_id));
        Ok(nodes)
    }

    async fn seed_scores(&self, agent: &AgentSlug, signature: &str) -> StoreResult<Vec<(u64, f64)>> {
        let i = lock(&self.inner);
        let mut scores: Vec<(u64, f64)> = i
            .seeds
            .iter()
            .filter(|((a, s, _), _)| a == agent && s == signature)
            .map(|((_, _, seed), score)| (*seed, *score))
            .collect();
        scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scores)
    }

    async fn adjust_seed_score(&self, agent: &AgentSlug, signature: &str, seed: u64, delta: f64) -> StoreResult<f64> {
        let mut i = lock(&self.inner);
        let score = i.seeds.entry((agent.clone(), signature.to_string(), seed)).or_insert(0.0);
        *score = (*score + delta).clamp(-10.0, 10.0);
        Ok(*score)
    }

    async fn recent_outcomes(&self, user: &UserId, limit: usize) -> StoreResult<Vec<Outcome>> {
        let i = lock(&self.inner);
        let mut mine: Vec<&DelegationRecord> =
            i.delegations.values().filter(|r| &r.user_id == user && r.status != "refused").collect();
        mine.sort_by_key(|r| std::cmp::Reverse((r.started_at, r.request_id)));
        // a success in a tree its user rated down counts as none (ratings.rs)
        let down = |r: &DelegationRecord| i.ratings.get(&r.root_id).is_some_and(|x| x.thumb == super::Thumb::Down);
        Ok(mine
            .into_iter()
            .take(limit)
            .map(|r| Outcome {
                target: r.target.clone(),
                status: if r.status == "success" && down(r) { "rated_down".into() } else { r.status.clone() },
                signature: r.signature.clone(),
            })
            .collect())
    }

    async fn claim_idempotency(
        &self,
        user: &UserId,
        key: &str,
        request_hash: &str,
        holder: &Holder,
    ) -> StoreResult<Claim> {
        let mut i = lock(&self.inner);
        let k = (user.clone(), key.to_string());
        Ok(match i.idempotency.get(&k) {
            Some((hash, ..)) if hash != request_hash => Claim::Mismatch,
            Some((_, Some(response), _)) => Claim::Done(response.clone()),
            Some((_, None, held)) => Claim::Pending(held.clone()),
            None => {
                i.idempotency.insert(k, (request_hash.to_string(), None, holder.held_since(super::now_ms())));
                Claim::New
            }
        })
    }

    async fn take_idempotency(&self, user: &UserId, key: &str, from: &Held, to: &Holder) -> StoreResult<bool> {
        let mut i = lock(&self.inner);
        Ok(match i.idempotency.get_mut(&(user.clone(), key.to_string())) {
            Some((_, None, held)) if held == from => {
                *held = to.held_since(super::now_ms());
                true
            }
            _ => false,
        })
    }

    async fn complete_idempotency(&self, user: &UserId, key: &str, response: &Redacted<String>) -> StoreResult<()> {
        let answer = KeyAnswer { user_id: user.clone(), key: key.into(), response: Some(response.to_string()) };
        lock(&self.inner).settle_key(answer);
        Ok(())
    }

    async fn release_idempotency(&self, user: &UserId, key: &str) -> StoreResult<()> {
        lock(&self.inner).settle_key(KeyAnswer { user_id: user.clone(), key: key.into(), response: None });
        Ok(())
    }

    async fn put_token(&self, hash: &str, kind: &str, subject: &str) -> StoreResult<()> {
        lock(&self.inner).tokens.entry(hash.to_string()).or_insert_with(|| (kind.to_string(), subject.to_string()));
        Ok(())
    }

    async fn find_token(&self, hash: &str) -> StoreResult<Option<(String, String)>> {
        Ok(lock(&self.inner).tokens.get(hash).cloned())
    }

    async fn token_subjects(&self, kind: &str) -> StoreResult<Vec<String>> {
        let i = lock(&self.inner);
        let mut v: Vec<String> = i.tokens.values().filter(|(k, _)| k == kind).map(|(_, s)| s.clone()).collect();
        v.sort();
        v.dedup();
        Ok(v)
    }

    async fn money_add(&self, entries: &Redacted<Vec<MoneyEntry>>) -> StoreResult<Vec<bool>> {
        let mut inner = lock(&self.inner);
        Ok(entries
            .iter()
            .map(|e| {
                let rows = inner.money.entry(e.user_id.clone()).or_default();
                let new = !rows.iter().any(|r| r.id == e.id);
                if new {
                    rows.push(e.clone());
                }
                new
            })
            .collect())
    }

    async fn money(&self, user: &UserId) -> StoreResult<Vec<MoneyEntry>> {
        let mut rows = lock(&self.inner).money.get(user).cloned().unwrap_or_default();
        if rows.len() > super::money::MONEY_LIMIT {
            rows.sort_by_key(|e| std::cmp::Reverse(e.created_at));
            rows.truncate(super::money::MONEY_LIMIT);
        }
        super::money::sort(&mut rows);
        Ok(rows)
    }

    async fn money_update(
        &self,
        user: &UserId,
        id: &str,
        edit: &Redacted<(Option<String>, Option<String>)>,
    ) -> StoreResult<bool> {
        let (category, note) = &**edit;
        let mut inner = lock(&self.inner);
        let Some(row) = inner.money.get_mut(user).and_then(|rows| rows.iter_mut().find(|r| r.id == id)) else {
            return Ok(false);
        };
        if let Some(c) = category {
            row.category = Some(c.clone());
        }
        if let Some(n) = note {
            row.note = Some(n.clone());
        }
        row.updated_at = super::now_ms();
        Ok(true)
    }

    async fn put_money_plan(&self, plan: &Redacted<MoneyPlan>) -> StoreResult<()> {
        let key = (plan.user_id.clone(), plan.kind.clone(), plan.name.clone());
        lock(&self.inner).plans.insert(key, (**plan).clone());
        Ok(())
    }

    async fn money_plans(&self, user: &UserId) -> StoreResult<Vec<MoneyPlan>> {
        Ok(lock(&self.inner).plans.values().filter(|p| &p.user_id == user).cloned().collect())
    }

    async fn put_step(&self, step: &Redacted<TreeStep>) -> StoreResult<()> {
        match lock(&self.inner).put_step((**step).clone()) {
            true => Ok(()),
            false => Err(StoreError::Conflict(format!("step {}", step.request_id))),
        }
    }

    async fn step(&self, id: RequestId) -> StoreResult<Option<TreeStep>> {
        Ok(lock(&self.inner).steps.get(&id).cloned())
    }

    async fn tree_steps(&self, root: RequestId) -> StoreResult<Vec<TreeStep>> {
        let mut steps: Vec<TreeStep> =
            lock(&self.inner).steps.values().filter(|s| s.root_id == root).cloned().collect();
        steps.sort_by_key(|s| (s.created_at, s.request_id));
        Ok(steps)
    }

    async fn open_steps(&self) -> StoreResult<Vec<TreeStep>> {
        let mut steps: Vec<TreeStep> =
            lock(&self.inner).steps.values().filter(|s| s.is_top() && !s.state.is_terminal()).cloned().collect();
        steps.sort_by_key(|s| (s.created_at, s.request_id));
        Ok(steps)
    }

    async fn cancel_tree(&self, root: RequestId, by: &str) -> StoreResult<u64> {
        let now = super::now_ms();
        let mut inner = lock(&self.inner);
        if inner.steps.get(&root).is_none_or(|top| top.state.is_terminal()) {
            return Ok(0);
        }
        inner.close_approvals(root, ApprovalState::Rejected, by, Some("the tree was cancelled"));
        let mut n = 0;
        for s in inner.steps.values_mut().filter(|s| s.root_id == root && !s.state.is_terminal()) {
            s.state = super::StepState::Cancelled;
            s.updated_at = now;
            n += 1;
        }
        Ok(n)
    }

    fn shared(&self) -> bool {
        false
    }

    async fn heartbeat(&self, replica: &super::Replica) -> StoreResult<()> {
        let mut inner = lock(&self.inner);
        match inner.replicas.iter_mut().find(|r| r.id == replica.id) {
            Some(r) => r.alive_until = replica.alive_until,
            None => inner.replicas.push(replica.clone()),
        }
        Ok(())
    }

    async fn replicas(&self) -> StoreResult<Vec<super::Replica>> {
        Ok(lock(&self.inner).replicas.clone())
    }

    async fn forget_replica(&self, id: &str) -> StoreResult<()> {
        let now = super::now_ms();
        lock(&self.inner).replicas.retain(|r| r.id != id || !r.dead_at(now));
        Ok(())
    }

    async fn take_step(&self, seen: &TreeStep, owner: &str) -> StoreResult<bool> {
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        let Some(step) = inner.steps.get_mut(&seen.request_id) else { return Ok(false) };
        if step.state.is_terminal() || step.owner != seen.owner || step.updated_at != seen.updated_at {
            return Ok(false);
        }
        // a running step only while its owner's lease is out
        let now = super::now_ms();
        let leased = |r: &super::Replica| Some(&r.id) == step.owner.as_ref() && !r.dead_at(now);
        if step.state == super::StepState::Running && inner.replicas.iter().any(leased) {
            return Ok(false);
        }
        step.owner = Some(owner.to_string());
        step.updated_at = super::replicas::taken_at(seen);
        step.state = super::StepState::Running;
        Ok(true)
    }

    async fn cancelled_steps(&self, ids: &[RequestId]) -> StoreResult<Vec<RequestId>> {
        let inner = lock(&self.inner);
        Ok(ids
            .iter()
            .filter(|id| inner.steps.get(id).is_some_and(|s| s.state == super::StepState::Cancelled))
            .copied()
            .collect())
    }

    async fn put_replay(&self, replay: &Redacted<ReplayRecord>) -> StoreResult<()> {
        lock(&self.inner).replays.push((**replay).clone());
        Ok(())
    }

    async fn replays(&self, root: RequestId) -> StoreResult<Vec<ReplayRecord>> {
        let inner = lock(&self.inner);
        let mut out: Vec<ReplayRecord> = inner.replays.iter().filter(|r| r.root_id == root).cloned().collect();
        out.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        out.truncate(super::REPLAYS_LIMIT);
        Ok(out)
    }

    async fn ask_approval(&self, approval: &Redacted<Approval>) -> StoreResult<Approval> {
        let mut inner = lock(&self.inner);
        Ok(inner.approvals.entry(approval.id.clone()).or_insert_with(|| (**approval).clone()).clone())
    }

    async fn approval(&self, id: &str) -> StoreResult<Option<Approval>> {
        Ok(lock(&self.inner).approvals.get(id).cloned())
    }

    async fn approvals(&self, user: Option<&UserId>, pending: bool) -> StoreResult<Vec<Approval>> {
        let mut out: Vec<Approval> = lock(&self.inner)
            .approvals
            .values()
            .filter(|a| user.is_none_or(|u| &a.user_id == u) && (!pending || a.state == ApprovalState::Pending))
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    async fn decide_approval(
        &self,
        id: &str,
        state: ApprovalState,
        by: &str,
        reason: Option<&Redacted<String>>,
        taker: &str,
    ) -> StoreResult<Option<Approval>> {
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        let Some(a) = inner.approvals.get_mut(id).filter(|a| a.state == ApprovalState::Pending) else {
            return Ok(None);
        };
        let Some(top) = inner.steps.get_mut(&a.root_id).filter(|s| s.state == super::StepState::Waiting) else {
            return Ok(None);
        };
        let now = super::now_ms();
        (top.state, top.owner, top.updated_at) = (super::StepState::Running, Some(taker.to_string()), now);
        a.state = state;
        a.decided_by = Some(by.to_string());
        a.reason = reason.map(|r| r.to_string());
        a.decided_at = Some(now);
        Ok(Some(a.clone()))
    }

    async fn close_approvals(&self, root: RequestId, state: ApprovalState, by: &str) -> StoreResult<u64> {
        Ok(lock(&self.inner).close_approvals(root, state, by, None))
    }

    // A2A tasks and breakers (a2a_state.rs)
    async fn put_a2a_task(&self, task: &Redacted<A2aTaskRecord>) -> StoreResult<bool> {
        Ok(self.a2a.put_task(task))
    }

    async fn a2a_task(&self, id: &str) -> StoreResult<Option<A2aTaskRecord>> {
        Ok(self.a2a.task(id))
    }

    async fn a2a_tasks(&self, query: &A2aTaskQuery) -> StoreResult<A2aTaskPage> {
        Ok(self.a2a.tasks(query))
    }

    async fn put_breaker(&self, breaker: &BreakerRecord, hold_open_ms: u64) -> StoreResult<()> {
        self.a2a.put_breaker(breaker, hold_open_ms);
        Ok(())
    }

    async fn remove_breaker(&self, agent: &AgentSlug, user: Option<&UserId>, hold_open_ms: u64) -> StoreResult<()> {
        self.a2a.remove_breaker(agent, user, hold_open_ms);
        Ok(())
    }

    async fn breakers(&self) -> StoreResult<Vec<BreakerRecord>> {
        Ok(self.a2a.breakers())
    }

    async fn append_a2a_events(&self, events: &Redacted<Vec<super::a2a_state::A2aEventRecord>>) -> StoreResult<()> {
        self.a2a.append_events(events);
        Ok(())
    }

    async fn put_a2a_task_with_events(
        &self,
        task: Option<&Redacted<A2aTaskRecord>>,
        events: &Redacted<Vec<super::a2a_state::A2aEventRecord>>,
        _durability: super::Durability,
    ) -> StoreResult<bool> {
        let written = task.is_some_and(|t| self.a2a.put_task(t));
        // a change of another owner's task writes no events under its id
        if !task.is_some_and(|t| !written && self.a2a.foreign(t)) {
            self.a2a.append_events(events);
        }
        Ok(written)
    }

    async fn a2a_events(
        &self,
        task_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<super::a2a_state::A2aEventRecord>> {
        Ok(self.a2a.events(task_id, after, limit))
    }

    async fn a2a_event_seq(&self, task_id: &str) -> StoreResult<i64> {
        Ok(self.a2a.last_event_seq(task_id))
    }

    async fn put_a2a_push_config(&self, config: &Redacted<super::A2aPushConfigRecord>) -> StoreResult<()> {
        self.push.put(config);
        Ok(())
    }

    async fn a2a_push_configs(&self, task_id: &str) -> StoreResult<Vec<super::A2aPushConfigRecord>> {
        Ok(self.push.list(task_id))
    }

    async fn delete_a2a_push_config(&self, task_id: &str, id: &str) -> StoreResult<bool> {
        Ok(self.push.delete(task_id, id))
    }

    async fn claim_a2a_push(&self, task_id: &str, id: &str, from: i64, to: i64) -> StoreResult<bool> {
        Ok(self.push.claim(task_id, id, from, to))
    }

    async fn a2a_push_failed(&self, task_id: &str, id: &str, error: &Redacted<String>) -> StoreResult<()> {
        self.push.failed(task_id, id, error);
        Ok(())
    }

    async fn counts(&self) -> StoreResult<StoreCounts> {
        let i = lock(&self.inner);
        Ok(StoreCounts {
            sessions: i.sessions.len() as u64,
            messages: i.messages.values().map(Vec::len).sum::<usize>() as u64,
            facts: i.facts.values().map(Vec::len).sum::<usize>() as u64,
            delegations: i.delegations.len() as u64,
            audit: i.audit.len() as u64,
        })
    }

    async fn analytics(&self, query: &super::AnalyticsQuery) -> StoreResult<super::Analytics> {
        let i = lock(&self.inner);
        Ok(super::analytics::of_records(query, i.delegations.values(), i.ratings.values(), super::now_ms()))
    }

    async fn past_trees(&self, query: &super::HistoryQuery) -> StoreResult<super::HistoryPage> {
        let i = lock(&self.inner);
        Ok(super::history::of_records(query, &i.delegations, &i.ratings))
    }

    async fn rate_tree(
        &self,
        user: &UserId,
        root: RequestId,
        thumb: super::Thumb,
        comment: Option<&Redacted<String>>,
    ) -> StoreResult<super::Rated> {
        let comment = comment.map(|c| c.as_str());
        let mut guard = lock(&self.inner);
        let i = &mut *guard;
        Ok(super::ratings::rate_in(&mut i.ratings, &i.delegations, user, root, thumb, comment, super::now_ms()))
    }

    async fn rating(&self, root: RequestId) -> StoreResult<Option<super::Rating>> {
        Ok(lock(&self.inner).ratings.get(&root).cloned())
    }
}
