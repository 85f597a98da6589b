//! The in-process store: everything in memory, for tests, benchmarks and the
//! CLI when no database is wanted.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::audit::{AuditEntry, AuditRecord, GENESIS};
use super::{DelegationRecord, Fact, Message, Session, Store, StoreError, StoreResult, now_ms};
use crate::guard::tree::lock;
use crate::protocol::{AgentSlug, RequestId, SessionId, UserId};

#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
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
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Row counts per table, for tests that assert nothing was written.
    pub fn counts(&self) -> (usize, usize, usize) {
        let i = lock(&self.inner);
        (i.sessions.len(), i.messages.values().map(Vec::len).sum(), i.facts.values().map(Vec::len).sum())
    }
}

fn new_session(user: &UserId, agent: &AgentSlug, id: SessionId, parent: Option<SessionId>) -> Session {
    Session { id, user_id: user.clone(), agent: agent.clone(), parent_id: parent, created_at: now_ms() }
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
                let s = new_session(user, agent, id, parent);
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
        let s = new_session(user, agent, SessionId::new(), Some(parent));
        i.sessions.insert(s.id, s.clone());
        i.children.insert(key, s.id);
        Ok(s)
    }

    async fn append_messages(&self, messages: &[Message]) -> StoreResult<()> {
        let mut i = lock(&self.inner);
        for m in messages {
            i.messages.entry(m.session_id).or_default().push(m.clone());
        }
        Ok(())
    }

    async fn recent_messages(&self, session: SessionId, limit: usize) -> StoreResult<Vec<Message>> {
        let i = lock(&self.inner);
        let all = i.messages.get(&session).map(Vec::as_slice).unwrap_or_default();
        Ok(all[all.len().saturating_sub(limit)..].to_vec())
    }

    async fn facts(&self, user: &UserId, scopes: &[String]) -> StoreResult<Vec<Fact>> {
        let i = lock(&self.inner);
        let facts = i.facts.get(user).map(Vec::as_slice).unwrap_or_default();
        Ok(facts.iter().filter(|f| scopes.contains(&f.scope)).cloned().collect())
    }

    async fn add_facts(&self, facts: &[Fact]) -> StoreResult<()> {
        let mut i = lock(&self.inner);
        for f in facts {
            let mine = i.facts.entry(f.user_id.clone()).or_default();
            if !mine.iter().any(|g| g.scope == f.scope && g.fact == f.fact) {
                mine.push(f.clone());
            }
        }
        Ok(())
    }

    async fn append_audit(&self, record: AuditRecord) -> StoreResult<AuditEntry> {
        let mut i = lock(&self.inner);
        let prev = i.audit.last().map_or(GENESIS.to_string(), |e| e.hash.clone());
        let entry = record.seal(i.audit.len() as u64 + 1, &prev);
        i.audit.push(entry.clone());
        Ok(entry)
    }

    async fn audit_log(&self) -> StoreResult<Vec<AuditEntry>> {
        Ok(lock(&self.inner).audit.clone())
    }

    async fn put_delegation(&self, record: &DelegationRecord) -> StoreResult<()> {
        lock(&self.inner).delegations.insert(record.request_id, record.clone());
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
}
