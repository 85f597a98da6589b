//! Durable trees: every admitted delegation is a step in the store
//! ([`TreeStep`]), written (running) before its agent runs and again with
//! its record when it ends, so a process that dies mid-tree leaves enough
//! behind to resume it. A child's request id comes from its parent's and
//! its place among the parent's calls ([`child_id`]): when a resumed parent
//! runs again and makes the same call, the journal answers a finished child
//! without running it again, and resumes an unfinished one under its old id.

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::admit::Admitted;
use super::pii::Pii;
use super::{Entry, Runtime};
use crate::auth::Principal;
use crate::protocol::{AgentSlug, DelegationResponse, ErrorCode, RequestId, Status};
use crate::store::{StepState, TreeStep, now_ms};

/// The `entry` of a step made by a parent running in this process.
pub(super) const CHILD: &str = "child";

/// The id of the `n`-th call (from 0) a delegation makes, to `target`: the
/// same on every run of the parent, so a resumed parent finds its children.
/// Laid out like a time-ordered id: the parent's first 48 bits (its time),
/// then `n`, then a hash, so siblings sort in the order they were made.
pub(super) fn child_id(parent: RequestId, target: &AgentSlug, n: u32) -> RequestId {
    let digest = Sha256::digest(format!("{parent}\n{target}\n{n}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&parent.0.as_bytes()[..6]);
    let n = u16::try_from(n.min(0x0fff)).unwrap_or(0x0fff);
    bytes[6..8].copy_from_slice(&n.to_be_bytes());
    bytes[8..].copy_from_slice(&digest[..8]);
    // version 8 goes into the high bits of byte 6 (n keeps its low 12 bits)
    RequestId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// How a step came in, as stored.
pub(super) fn entry_name(entry: &Entry, has_parent: bool) -> &'static str {
    match entry {
        _ if has_parent => CHILD,
        Entry::UserTurn => "user",
        Entry::Delegation => "delegation",
        Entry::Remote(_) => "remote",
    }
}

/// The step of an admitted delegation as it starts: its deadline as a
/// wall-clock time (a restart does not restart it) and, for a step that
/// came in at the top, its envelope, redacted (a child's envelope is made
/// again by its resumed parent, so it is not kept).
pub(super) fn start(rt: &Runtime, adm: &Admitted, caller: &Principal, entry: &'static str) -> TreeStep {
    let request = if entry == CHILD {
        String::new()
    } else {
        let mut req = adm.req.clone();
        Pii::new(&rt.inner.redactor, None).request(&mut req);
        serde_json::to_string(&req).unwrap_or_default()
    };
    let req = &adm.req;
    let now = now_ms();
    let left = adm.node.deadline.saturating_duration_since(Instant::now()).as_millis();
    TreeStep {
        request_id: req.request_id,
        root_id: adm.node.root_id,
        parent_id: req.parent_request_id,
        user_id: req.user_id.clone(),
        target: req.target_employee.to_string(),
        state: StepState::Running,
        entry: entry.to_string(),
        caller: format!("{}:{}", caller.kind(), caller.subject()),
        request,
        response: None,
        deadline_at: now.saturating_add(i64::try_from(left).unwrap_or(i64::MAX)),
        budget: adm.budget.grant(),
        attempts: 0,
        created_at: now,
        updated_at: now,
    }
}

/// The step as its delegation ended (or paused) with `response`.
pub(super) fn ended(mut step: TreeStep, response: &DelegationResponse) -> TreeStep {
    step.state = match (response.status, response.error_code()) {
        (Status::NeedsApproval, _) => StepState::Waiting,
        (Status::Failed, Some(ErrorCode::Cancelled)) => StepState::Cancelled,
        (Status::Failed, _) => StepState::Failed,
        _ => StepState::Done,
    };
    step.response = serde_json::to_string(response).ok();
    step.attempts = response.execution.as_ref().map_or(0, |e| e.attempts);
    step.updated_at = now_ms();
    step
}

/// A finished step's answer, as the journal kept it; None when it has not
/// finished (it runs again) or its answer cannot be read.
pub(super) fn answer(step: &TreeStep) -> Option<DelegationResponse> {
    if !step.state.is_terminal() {
        return None;
    }
    step.response.as_deref().and_then(|r| serde_json::from_str(r).ok())
}

/// The principal a stored step came from.
pub(super) fn caller(step: &TreeStep) -> Option<Principal> {
    let (kind, subject) = step.caller.split_once(':')?;
    Principal::from_parts(kind, subject)
}

/// The entry a stored top step resumes as.
pub(super) fn entry(step: &TreeStep) -> Entry {
    match step.entry.as_str() {
        "user" => Entry::UserTurn,
        // a lineage token has expired by now: the stored rails are what it verified to
        _ => Entry::Delegation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_id_is_its_parents_and_its_place() {
        let parent = RequestId::new();
        // siblings sort in the order they were made
        let ids: Vec<RequestId> = (0..20).map(|n| child_id(parent, &AgentSlug::parse("a").unwrap(), n)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let tag = AgentSlug::parse("tag-ai").unwrap();
        let byte = AgentSlug::parse("byte-doc").unwrap();
        assert_eq!(child_id(parent, &tag, 0), child_id(parent, &tag, 0));
        assert_ne!(child_id(parent, &tag, 0), child_id(parent, &tag, 1));
        assert_ne!(child_id(parent, &tag, 0), child_id(parent, &byte, 0));
        assert_ne!(child_id(parent, &tag, 0), child_id(RequestId::new(), &tag, 0));
        assert_eq!(child_id(parent, &tag, 0).0.get_version_num(), 8);
    }
}
