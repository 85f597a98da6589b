//! Records: every delegation, refused or not, and every action refused
//! inside one, is one [`DelegationRecord`] (the tree node) and one audit
//! record, durable before the caller hears back; metrics and the finished
//! event follow. [`new_record`] is the one constructor.

use std::sync::Arc;

use tokio::time::Instant;

use super::admit::{Admitted, Refused};
use super::clock::Clock;
use super::journal;
use super::pii::Pii;
use crate::agent::Scope;
use crate::protocol::{DelegationError, DelegationResponse, ErrorCode, Mode, RequestId, Status, TokenUsage, UserId};
use crate::rails::cycle;
use crate::runtime::{Runtime, Top};
use crate::store::{AuditRecord, Conversation, DelegationRecord, Durability, now_ms, task_signature};
use crate::telemetry::{Event, Observation};

/// Where a record sits in its tree and who it is about.
pub(super) struct Place<'a> {
    pub request_id: RequestId,
    pub root_id: RequestId,
    pub parent_id: Option<RequestId>,
    pub user: &'a UserId,
    pub origin: String,
    pub target: String,
    pub depth: u32,
}

/// A record of `place`, not yet finished: the objective as stored (redacted)
/// and its hash (of the raw objective, as the cycle rail computes it).
pub(super) fn new_record(
    place: Place<'_>,
    objective: String,
    objective_hash: String,
    started_at: i64,
) -> DelegationRecord {
    DelegationRecord {
        request_id: place.request_id,
        root_id: place.root_id,
        parent_id: place.parent_id,
        user_id: place.user.clone(),
        origin: place.origin,
        target: place.target,
        signature: task_signature(&objective),
        objective,
        objective_hash,
        status: "refused".into(),
        error_code: None,
        attempts: 0,
        depth: place.depth,
        started_at,
        duration_ms: 0,
        tokens: TokenUsage::default(),
        consult: false,
    }
}

/// The audit log's view of a record.
fn audit_of(r: &DelegationRecord) -> AuditRecord {
    AuditRecord {
        request_id: r.request_id,
        root_id: r.root_id,
        origin: r.origin.clone(),
        target: r.target.clone(),
        user_id: r.user_id.to_string(),
        objective: r.objective.clone(),
        outcome: r.status.clone(),
        error_code: r.error_code.clone(),
        duration_ms: r.duration_ms,
        tokens: r.tokens.total,
        created_at: r.started_at,
    }
}

/// Ends a record's bookkeeping: the tree node, the audit record and the
/// conversation (durably, before the caller hears back), metrics and the
/// finished event.
pub(super) async fn finish(
    rt: &Runtime,
    record: &DelegationRecord,
    conversation: Conversation,
    seconds: f64,
    fallback: bool,
    durability: Durability,
) -> Result<(), DelegationError> {
    let inner = &*rt.inner;
    let written = inner
        .store
        .record_delegation(
            &rt.for_store(record.clone()),
            rt.for_store(audit_of(record)),
            rt.for_store(conversation),
            durability,
        )
        .await;
    if let Ok(target) = crate::protocol::AgentSlug::parse(&record.target) {
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
    written.map(|_| ()).map_err(DelegationError::from)
}

/// Answers `adm` with `error` and writes nothing: the fence stopped it (its
/// tree is another replica's, or this replica's lease is out).
pub(super) fn unwritten(adm: &Admitted, error: DelegationError, clock: &Clock) -> DelegationResponse {
    tracing::info!(request_id = %adm.req.request_id, code = %error.code, "delegation stopped by the fence: {}", error.message);
    let mut response = DelegationResponse::failed(adm.req.request_id, adm.req.target_employee.clone(), error);
    response.duration_ms = clock.elapsed_ms();
    response
}

/// Records a refusal (audit, tree, event) and answers it.
pub(super) async fn refuse(rt: &Runtime, refused: Refused, parent: Option<&Scope>, clock: Clock) -> DelegationResponse {
    let Refused { req, tree, error } = refused;
    tracing::info!(request_id = %req.request_id, origin = %req.origin_employee, target = %req.target_employee, code = %error.code, "delegation refused");
    // an objective past the limit (the refusal may be for its size) is kept as a bounded
    // preview and its hash: never the whole text, and only the preview is redacted
    let objective = Pii::new(&rt.inner.redactor, tree.as_deref()).text(&bounded(&req.objective));
    // filed in the tree it names only when it belongs there (a node's child here, or admitted
    // into the tree); an envelope refused before that is a tree of its own: naming someone
    // else's tree files nothing in it
    let member = parent.is_some() || tree.is_some();
    let place = Place {
        request_id: req.request_id,
        root_id: if member { req.root_id() } else { req.request_id },
        parent_id: req.parent_request_id.filter(|_| member),
        user: &req.user_id,
        origin: req.origin_employee.to_string(),
        target: req.target_employee.to_string(),
        depth: parent.map_or(req.current_depth, |p| p.depth).saturating_add(1),
    };
    let mut record = new_record(place, objective, cycle::objective_hash(&req.objective), clock.started_ms);
    record.consult = req.mode == Mode::Ephemeral;
    record.error_code = Some(error.code.to_string());
    record.duration_ms = clock.elapsed_ms();
    let mut response = DelegationResponse::failed(req.request_id, req.target_employee.clone(), error);
    response.duration_ms = record.duration_ms;
    if let Err(e) = finish(rt, &record, Conversation::default(), 0.0, false, Durability::Now).await {
        response.error = Some(e);
    }
    response
}

/// The most of a refused objective the record keeps.
const PREVIEW_BYTES: usize = 256;

/// `objective` as a refusal's record keeps it: whole when it is within
/// what an objective may be, else its first [`PREVIEW_BYTES`] and, to tell
/// it apart, its length and the start of its sha256.
fn bounded(objective: &str) -> std::borrow::Cow<'_, str> {
    if objective.len() <= crate::rails::validate::MAX_OBJECTIVE_BYTES {
        return std::borrow::Cow::Borrowed(objective);
    }
    let mut end = PREVIEW_BYTES;
    while !objective.is_char_boundary(end) {
        end -= 1;
    }
    use sha2::Digest as _;
    let digest = hex::encode(sha2::Sha256::digest(objective.as_bytes()));
    std::borrow::Cow::Owned(format!(
        "{} … [{} bytes in all, sha256 {}]",
        &objective[..end],
        objective.len(),
        &digest[..16]
    ))
}

/// The place of an action inside a running delegation that is not itself a
/// delegation (a tool call): one level below the node, under it.
fn beside<'a>(node: &'a Scope, what: &str) -> Place<'a> {
    Place {
        request_id: RequestId::new(),
        root_id: node.root_id,
        parent_id: Some(node.request_id),
        user: &node.user,
        origin: node.agent.to_string(),
        target: what.to_string(),
        depth: node.depth.saturating_add(1),
    }
}

/// Audits an action refused inside a running delegation that is not itself
/// a delegation (a model calling a tool it was not offered, a fact written
/// into another agent's memory): one refused record under the node, so
/// every attempt to widen power is on file.
pub(super) async fn denied(rt: &Runtime, node: &Scope, what: &str, error: &DelegationError) {
    let place = beside(node, what);
    let mut record = new_record(place, format!("use {what}"), cycle::objective_hash(what), now_ms());
    record.error_code = Some(error.code.to_string());
    tracing::warn!(origin = %node.agent, denied = what, code = %error.code, "action denied");
    if let Err(e) = finish(rt, &record, Conversation::default(), 0.0, false, Durability::Now).await {
        tracing::error!("denied action not audited: {e}");
    }
}

/// Audits a tool an agent used inside a running delegation that is not a
/// delegation (an MCP tool): one record under the node, `success`, or
/// `failed` with its code, as a refused action is on file.
pub(super) async fn tool_used(
    rt: &Runtime,
    node: &Scope,
    what: &str,
    outcome: Result<(), &DelegationError>,
    duration_ms: u64,
) {
    let place = beside(node, what);
    let started = now_ms().saturating_sub(i64::try_from(duration_ms).unwrap_or(0));
    let mut record = new_record(place, format!("use {what}"), cycle::objective_hash(what), started);
    record.status = match outcome {
        Ok(()) => Status::Success,
        Err(_) => Status::Failed,
    }
    .as_str()
    .into();
    record.error_code = outcome.err().map(|e| e.code.to_string());
    record.attempts = 1;
    record.duration_ms = duration_ms;
    if let Err(e) = finish(rt, &record, Conversation::default(), 0.0, false, Durability::Now).await {
        tracing::error!("tool use not audited: {e}");
    }
}

/// Ends a top step that is not running in this process (its tree waited
/// for approval, or was cut off by a restart) with `response`: its record
/// (replacing the one it had), an audit record and the step, together.
pub(super) async fn offline(
    rt: &Runtime,
    step: crate::store::TreeStep,
    req: &crate::protocol::DelegationRequest,
    response: &DelegationResponse,
) -> Result<(), DelegationError> {
    let place = Place {
        request_id: step.request_id,
        root_id: step.root_id,
        parent_id: step.parent_id,
        user: &step.user_id,
        origin: req.origin_employee.to_string(),
        target: step.target.clone(),
        depth: req.current_depth.saturating_add(u32::from(step.entry != "user")),
    };
    let mut record = new_record(place, req.objective.clone(), cycle::objective_hash(&req.objective), step.created_at);
    record.consult = req.mode == Mode::Ephemeral;
    record.status = response.status.as_str().into();
    record.error_code = response.error_code().map(|c| c.to_string());
    record.duration_ms = u64::try_from(now_ms().saturating_sub(step.created_at)).unwrap_or(0);
    let conversation =
        Conversation { step: Some(journal::ended(rt, step, response, None, None)), ..Default::default() };
    finish(rt, &record, conversation, 0.0, false, Durability::Now).await
}

/// The record of an admitted delegation while it runs. If its future is
/// dropped before it records (its parent was cancelled or timed out), the
/// record is written anyway, as cancelled.
pub(super) struct Running {
    runtime: Runtime,
    record: Option<DelegationRecord>,
    started: Instant,
    /// The tree's top step here: the fence before the record is written.
    top: Arc<Top>,
}

impl Running {
    /// The record of `adm`, with its objective redacted (also for the started
    /// event). Redacted apart from the tree's vault: the tree issues its
    /// tokens when the agent's context is assembled, after the history's
    /// tokens are reserved, so a record never takes a token first.
    pub(super) fn start(rt: &Runtime, adm: &Admitted, clock: &Clock) -> (Self, String) {
        let req = &adm.req;
        let objective = Pii::new(&rt.inner.redactor, None).text(&req.objective);
        let place = Place {
            request_id: req.request_id,
            root_id: adm.node.root_id,
            parent_id: req.parent_request_id,
            user: &req.user_id,
            origin: req.origin_employee.to_string(),
            target: req.target_employee.to_string(),
            depth: adm.node.depth,
        };
        let mut record = new_record(place, objective.clone(), cycle::objective_hash(&req.objective), clock.started_ms);
        record.consult = req.mode == Mode::Ephemeral;
        record.status = Status::Failed.as_str().into();
        record.error_code = Some(ErrorCode::Cancelled.to_string());
        let top = adm.node.top.clone();
        (Self { runtime: rt.clone(), record: Some(record), started: clock.started, top }, objective)
    }

    /// Finishes the record with the response, durable before it returns
    /// (or with the next synced commit: `end`, see `Runtime::dispatch_top`);
    /// a failure to write it fails the response. Whether it was written.
    /// Nothing is written for a tree another replica took over (`TAKEN_OVER`).
    pub(super) async fn finish(
        mut self,
        response: &mut DelegationResponse,
        attempts: u32,
        conversation: Conversation,
        end: Durability,
    ) -> bool {
        let Some(mut record) = self.record.take() else { return false };
        if let Err(e) = self.runtime.fence(&self.top).await {
            response.status = Status::Failed;
            response.error = Some(e);
            return false;
        }
        record.status = response.status.as_str().into();
        record.error_code = response.error_code().map(|c| c.to_string());
        record.attempts = attempts;
        record.duration_ms = response.duration_ms;
        record.tokens = response.token_usage;
        let seconds = self.started.elapsed().as_secs_f64();
        if let Err(e) = finish(&self.runtime, &record, conversation, seconds, response.fallback.is_some(), end).await {
            response.status = Status::Failed;
            response.error = Some(e);
            return false;
        }
        true
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(mut record) = self.record.take() else { return };
        record.duration_ms = self.started.elapsed().as_millis() as u64;
        let (runtime, top) = (self.runtime.clone(), self.top.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Err(e) = runtime.fence(&top).await {
                    tracing::info!(request_id = %record.request_id, "record of a cancelled delegation not written: {e}");
                    return;
                }
                if let Err(e) = finish(&runtime, &record, Conversation::default(), 0.0, false, Durability::Now).await {
                    tracing::error!(request_id = %record.request_id, "record of a cancelled delegation not written: {e}");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentSlug, DelegationRequest};

    #[tokio::test]
    async fn a_refusal_is_on_file_with_its_code_and_no_raw_pii() {
        let rt = Runtime::embedded();
        let mut req = DelegationRequest::new(
            AgentSlug::parse("prime-boss").unwrap(),
            AgentSlug::parse("byte-doc").unwrap(),
            UserId::parse("alice").unwrap(),
            "Mail alex.chan@company.com",
            "",
        );
        req.current_depth = 1;
        let refused = Refused { req: req.clone(), tree: None, error: ErrorCode::DepthLimit.into() };
        let response = refuse(&rt, refused, None, Clock::start()).await;
        assert_eq!(response.error_code(), Some(ErrorCode::DepthLimit));
        let records = rt.store().delegation_tree(req.request_id).await.unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!((r.status.as_str(), r.error_code.as_deref()), ("refused", Some("DEPTH_LIMIT")));
        assert_eq!(r.depth, 2, "one deeper than its origin");
        assert_eq!(r.objective, "Mail <EMAIL_1>");
        let audit = rt.store().audit_log().await.unwrap();
        assert_eq!(audit.len(), 1);
        assert!(!audit[0].record.objective.contains("alex.chan"));
    }
}
