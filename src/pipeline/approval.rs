//! The approval rail: an agent about to act (send, pay, delete) as its
//! configuration says a person must approve asks here, through its node's
//! dispatch; the node waits (`NEEDS_APPROVAL`) until a person decides, and
//! the tree runs again from its journal (`durable.rs`).

use std::sync::Arc;

use super::node::Node;
use super::pii::Pii;
use crate::protocol::{DelegationError, ErrorCode};
use crate::runtime::Runtime;
use crate::store::{Approval, ApprovalState, StepState, now_ms};

/// The approval rail, for a running node's agent (see `Dispatch::approval`).
pub(super) async fn approval(
    rt: &Runtime,
    node: &Arc<Node>,
    action: &str,
    summary: &str,
) -> Result<(), DelegationError> {
    if !rt.config().requires_approval(&node.agent, action) {
        return Ok(());
    }
    let asked = Approval {
        id: Approval::id_for(node.request_id, action),
        root_id: node.root_id,
        request_id: node.request_id,
        user_id: node.user.clone(),
        agent: node.agent.to_string(),
        action: action.to_string(),
        summary: Pii::new(&rt.inner.redactor, None).text(summary),
        state: ApprovalState::Pending,
        reason: None,
        decided_by: None,
        created_at: now_ms(),
        decided_at: None,
    };
    let a = rt.inner.store.ask_approval(&rt.for_store(asked)).await?;
    let reason = a.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    match a.state {
        // a person's yes holds only while the tree does: one cancelled after the yes (and before
        // this node acted on it) does nothing more
        ApprovalState::Approved => match rt.inner.store.step(node.root_id).await? {
            Some(top) if top.state == StepState::Cancelled => Err(DelegationError::new(
                ErrorCode::Cancelled,
                format!("{} was approved, but the tree was cancelled before it was done; not done", a.action),
            )),
            _ => Ok(()),
        },
        ApprovalState::Pending => Err(DelegationError::new(
            ErrorCode::NeedsApproval,
            format!("{} waits for approval {} to {}: {}", a.agent, a.id, a.action, a.summary),
        )),
        ApprovalState::Rejected => Err(DelegationError::new(
            ErrorCode::ApprovalRejected,
            format!("{} was rejected by {}{reason}; not done", a.action, a.decided_by.as_deref().unwrap_or("a person")),
        )),
        ApprovalState::Expired => Err(DelegationError::new(
            ErrorCode::DeadlineExceeded,
            format!("nobody approved {} before the deadline; not done", a.action),
        )),
    }
}
