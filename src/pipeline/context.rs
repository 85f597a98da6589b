//! Context in and out: what the agent
//! gets besides the request (the user's global, agent and domain facts, the
//! target's recent messages), and what a finished delegation leaves in
//! memory (its conversation and the facts it learned), unless it is an
//! ephemeral consult, which reads the history but writes nothing.

use std::time::Duration;

use super::admit::Admitted;
use super::entry::USER_ORIGIN;
use super::pii::Pii;
use super::record;
use crate::agent::{HistoryMessage, Task};
use crate::config::AgentSpec;
use crate::protocol::{DelegationError, DelegationResponse, ErrorCode, Mode, NewFact, Status};
use crate::rails::deadline;
use crate::runtime::Runtime;
use crate::store::{Conversation, Fact, Message, now_ms};

/// How many of the target's recent messages reach it.
const HISTORY_MESSAGES: usize = 5;
/// How many of the user's facts reach an agent: the newest. A user's
/// memory only grows (each delegation may learn a fact), and every fact an
/// agent gets is part of its prompt and charged to its budget: all of them
/// made a long-kept user's every delegation dearer, until a request of
/// three steps outgrew Prime's 16,000 tokens (docs/ROUTING.md, round 20).
const MAX_FACTS: usize = 24;

/// The task the agent sees: the redacted request plus facts and history.
pub(super) async fn assemble(rt: &Runtime, adm: &Admitted) -> Result<Task, DelegationError> {
    let inner = &*rt.inner;
    let req = &adm.req;
    let spec = &adm.member.spec;
    let mut scopes = vec!["global".to_string(), format!("agent:{}", spec.slug)];
    if let Some(d) = &spec.domain {
        scopes.push(format!("domain:{d}"));
    }
    let facts = inner.store.facts(&req.user_id, &scopes, MAX_FACTS).await?;
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
        history: history
            .into_iter()
            .map(|m| HistoryMessage { role: m.role, content: m.content, asked: m.asked })
            .collect(),
        seed: None,
        attempt: 1,
        max_completion_tokens: 0,
        rejected: Vec::new(),
    };
    if task.input.len() + task.objective.len() < OFF_THREAD_BYTES {
        Pii::new(&inner.redactor, Some(&adm.node.tree)).task(&mut task, spec.pii_access);
        adm.node.reads.begin(&task.facts, &task.history);
        return Ok(task);
    }
    // a large input takes a while to redact: off the async workers, inside the deadline
    let (runtime, tree, trusted) = (rt.clone(), adm.node.tree.clone(), spec.pii_access);
    let redacting = tokio::task::spawn_blocking(move || {
        Pii::new(&runtime.inner.redactor, Some(&tree)).task(&mut task, trusted);
        task
    });
    match tokio::time::timeout_at(adm.node.deadline, redacting).await {
        Ok(Ok(task)) => {
            adm.node.reads.begin(&task.facts, &task.history);
            Ok(task)
        }
        Ok(Err(e)) => Err(DelegationError::new(ErrorCode::AgentFailed, format!("redacting the input failed: {e}"))),
        Err(_) => Err(deadline::timeout_error(Duration::from_millis(adm.deadline_ms))),
    }
}

/// Inputs this large (bytes) are redacted on the blocking pool, where the
/// deadline can give up on them; smaller ones take microseconds inline.
const OFF_THREAD_BYTES: usize = 16 * 1024;

/// The conversation and the new facts to save with the delegation's
/// records. A new child session is saved even when the delegation failed;
/// its messages only when it did not.
pub(super) async fn conversation(rt: &Runtime, adm: &Admitted, response: &DelegationResponse) -> Conversation {
    let req = &adm.req;
    let Some(child) = adm.sessions.child.as_ref().filter(|_| req.mode == Mode::Persist) else {
        return Conversation::default(); // an ephemeral consult writes nothing
    };
    let new_session = adm.sessions.new_child.then(|| child.clone());
    if response.status == Status::Failed {
        return Conversation { new_session, ..Conversation::default() };
    }
    let now = now_ms();
    // as the agent read it: an input that repeats the objective is kept once
    let asked = crate::agent::request_text(&req.objective, &req.input);
    let origin = (req.origin_employee.as_str() != USER_ORIGIN).then(|| req.origin_employee.to_string());
    let message = |role: &str, content: String, asked: bool| Message {
        session_id: child.id,
        role: role.into(),
        content,
        delegated_from: origin.clone(),
        delegation_depth: Some(adm.node.depth),
        asked,
        created_at: now,
    };
    let asked = Pii::new(&rt.inner.redactor, Some(&adm.node.tree)).text(&asked);
    let question = response.status == Status::NeedsInput;
    let messages = vec![message("user", asked, false), message("assistant", response.result.clone(), question)];
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
                let what = format!("facts:{}", f.scope.as_deref().unwrap_or(""));
                record::denied(rt, &adm.node.scope, &what, &e).await;
            }
        }
    }
    Conversation { new_session, messages, facts, step: None, key: None }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn fact(scope: Option<&str>) -> NewFact {
        NewFact { fact: "likes tea".into(), scope: scope.map(str::to_string) }
    }

    #[test]
    fn an_agent_writes_facts_to_global_its_own_or_its_domains_memory_only() {
        let config = Config::builtin();
        let tag = config.agent("tag-ai").unwrap();
        let domain = format!("domain:{}", tag.domain.as_deref().unwrap());
        assert_eq!(fact_scope(&fact(None), tag).unwrap(), "agent:tag-ai");
        assert_eq!(fact_scope(&fact(Some("global")), tag).unwrap(), "global");
        assert_eq!(fact_scope(&fact(Some(&domain)), tag).unwrap(), domain);
        let err = fact_scope(&fact(Some("agent:byte-doc")), tag).unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        assert!(fact_scope(&fact(Some("domain:somebody-else")), tag).is_err());
    }
}
