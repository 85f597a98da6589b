//! Durable trees: every admitted delegation is a step in the store
//! ([`TreeStep`]), written (running) before its agent runs and again with
//! its record when it ends, so a process that dies mid-tree leaves enough
//! behind to resume it. A child's request id comes from its parent's and
//! its place among the parent's calls ([`child_id`]): when a resumed parent
//! runs again and makes the same call, the journal answers a finished child
//! without running it again, and resumes an unfinished one under its old id.

use tokio::time::Instant;

use super::admit::Admitted;
use super::entry::Entry;
use super::pii::redact_request;
use crate::agent::StepReads;
use crate::auth::Principal;
use crate::protocol::{DelegationResponse, ErrorCode, Status};
use crate::rails::Tree;
use crate::runtime::{Runtime, hold};
use crate::store::{StepState, TreeStep, now_ms};

/// The `entry` of a step made by a parent running in this process.
pub(super) const CHILD: &str = "child";

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
/// came in at the top, its envelope, redacted with the tree's vault (a
/// child's is made again by its resumed parent, so it is not kept) and the
/// tree's vault, sealed. Redacting a large input takes a while: it runs off
/// the async workers and is waited for only until the deadline (a
/// delegation out of time keeps no envelope and fails at once).
pub(super) async fn start(rt: &Runtime, adm: &Admitted, caller: &Principal, entry: &'static str) -> TreeStep {
    hold(rt);
    let (request, pii) = if entry == CHILD {
        (String::new(), None)
    } else if small(&adm.req) {
        // a small envelope takes microseconds to redact: inline, on the vault itself
        let mut envelope = adm.req.clone();
        redact_request(&rt.inner.redactor, &mut adm.node.tree.vault(), &mut envelope);
        (kept(rt, &envelope).unwrap_or_default(), sealed(rt, &adm.node.tree))
    } else {
        let (rt, req, tree) = (rt.clone(), adm.req.clone(), adm.node.tree.clone());
        let redacting = tokio::task::spawn_blocking(move || {
            // the tree's vault: a token in the kept envelope stands for what
            // it stands for in the tree (and its session's earlier turns).
            // A copy is redacted without holding the tree's lock (the tree
            // may give up on this and answer at its deadline meanwhile),
            // then taken, unless the vault changed in between
            let mut copy = tree.vault().clone();
            let version = copy.version();
            let mut envelope = req.clone();
            redact_request(&rt.inner.redactor, &mut copy, &mut envelope);
            let mut vault = tree.vault();
            if vault.version() == version {
                *vault = copy;
            } else {
                // another turn of its conversation issued tokens meanwhile: again, on the vault itself
                envelope = req;
                redact_request(&rt.inner.redactor, &mut vault, &mut envelope);
            }
            drop(vault);
            (kept(&rt, &envelope).unwrap_or_default(), sealed(&rt, &tree))
        });
        match tokio::time::timeout_at(adm.node.deadline, redacting).await {
            Ok(Ok(kept)) => kept,
            _ => (String::new(), None),
        }
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
        caller: caller.key(),
        request,
        response: None,
        deadline_at: now.saturating_add(i64::try_from(left).unwrap_or(i64::MAX)),
        budget: adm.budget.grant(),
        attempts: 0,
        reads: None,
        resumes: 0,
        pii,
        created_at: now,
        updated_at: now,
        owner: Some(rt.inner.lease.id.clone()),
    }
}

/// `value` as JSON the way the store keeps it: the texts the pipeline did
/// not redact with the tree's vault (ids aside, every other string) are
/// redacted as it is written, with a vault of its own as the store's pass
/// would, and the store's pass then knows the document clean
/// (`Redactor::to_json`) instead of reading it again.
fn kept<T: serde::Serialize>(rt: &Runtime, value: &T) -> Option<String> {
    rt.inner.redactor.to_json(value, &mut crate::redact::Vault::new())
}

/// Envelopes whose texts are smaller than this (bytes) are redacted inline;
/// larger ones on the blocking pool, where the deadline can give up on them.
const INLINE_BYTES: usize = 16 * 1024;

/// Whether `req`'s readable texts are small enough to redact inline.
fn small(req: &crate::protocol::DelegationRequest) -> bool {
    let h = &req.handoff_data;
    let texts = req.objective.len()
        + req.input.len()
        + req.task_note.as_ref().map_or(0, String::len)
        + req.context_hints.iter().map(String::len).sum::<usize>()
        + h.facts.iter().map(String::len).sum::<usize>()
        + h.references.iter().map(|r| r.source_id.len()).sum::<usize>();
    texts < INLINE_BYTES && h.intermediate_results.is_none() && h.extra.is_empty()
}

/// The tree's PII vault sealed for the journal (see `redact::SealKey`); None when it holds nothing.
pub(super) fn sealed(rt: &Runtime, tree: &Tree) -> Option<String> {
    seal(rt, &tree.vault())
}

/// `vault` sealed for the journal; None when it holds nothing.
fn seal(rt: &Runtime, vault: &crate::redact::Vault) -> Option<String> {
    (!vault.is_empty()).then(|| rt.inner.seal.seal(vault))
}

/// The step as its delegation ended (or paused) with `response`, and what
/// its agent read; a top step keeps its tree's vault as it is now, sealed.
/// Only a paused step is resumed with it: a step that ended does not wait
/// for a vault held by work the tree gave up on (a large input's redaction
/// past the deadline runs on, holding it), and keeps the one it started with.
pub(super) fn ended(
    rt: &Runtime,
    mut step: TreeStep,
    response: &DelegationResponse,
    reads: Option<StepReads>,
    tree: Option<&Tree>,
) -> TreeStep {
    if step.is_top()
        && let Some(tree) = tree
    {
        let now = if response.status == Status::NeedsApproval {
            sealed(rt, tree)
        } else {
            tree.try_vault().and_then(|vault| seal(rt, &vault))
        };
        step.pii = now.or(step.pii);
    }
    step.reads = reads.and_then(|r| kept(rt, &r));
    step.state = match (response.status, response.error_code()) {
        (Status::NeedsApproval, _) => StepState::Waiting,
        (Status::Failed, Some(ErrorCode::Cancelled)) => StepState::Cancelled,
        (Status::Failed, _) => StepState::Failed,
        _ => StepState::Done,
    };
    step.response = kept(rt, response);
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
