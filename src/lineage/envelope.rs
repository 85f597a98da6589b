//! An envelope against the verified claims of its token: the rails come
//! from the token; an envelope that says otherwise is refused.

use super::{Claims, Fault, LineageError};
use crate::protocol::DelegationRequest;
use crate::protocol::request::objective_hash;

/// Compares `req` with the verified `claims` of its token and refuses it
/// with `LINEAGE_MISMATCH`, naming the first envelope field (in this order)
/// that disagrees: `request_id`, `root_request_id`, `parent_request_id`,
/// `user_id`, `origin_employee`, `target_employee`, `objective`, `chain`,
/// `current_depth`, `constraints.max_depth`, `constraints.max_tokens`,
/// `constraints.deadline_ms`, `tools`.
///
/// Identity, path and depth must be equal. Limits may be lower than the
/// token's (the runtime then enforces the lower one) but not higher: the
/// relative `deadline_ms` may not end more than `skew_ms` after the token's
/// absolute deadline, counted from `now_ms`. `tools`, when given, must be a
/// subset of the token's.
pub fn check_envelope(claims: &Claims, req: &DelegationRequest, now_ms: u64, skew_ms: u64) -> Result<(), LineageError> {
    let ancestors: Vec<(&str, &str)> = claims
        .path
        .iter()
        .take(claims.path.len().saturating_sub(1))
        .map(|l| (l.target.as_str(), l.objective_hash.as_str()))
        .collect();
    let chain: Vec<(&str, &str)> = req.chain.iter().map(|l| (l.agent.as_str(), l.objective_hash.as_str())).collect();
    let hop = claims.hop();
    let ends_at = now_ms.saturating_add(req.constraints.deadline_ms);
    let tools_ok = req.tools.as_ref().is_none_or(|t| t.iter().all(|t| claims.tools.binary_search(t).is_ok()));
    let checks = [
        ("request_id", req.request_id == claims.request),
        ("root_request_id", req.root_id() == claims.tree),
        ("parent_request_id", req.parent_request_id == claims.parent),
        ("user_id", req.user_id == claims.user),
        ("origin_employee", hop.is_some_and(|l| l.origin == req.origin_employee)),
        ("target_employee", hop.is_some_and(|l| l.target == req.target_employee)),
        ("objective", hop.is_some_and(|l| l.objective_hash == objective_hash(&req.objective))),
        ("chain", chain == ancestors),
        ("current_depth", req.current_depth == claims.depth.saturating_sub(1)),
        ("constraints.max_depth", req.constraints.max_depth <= claims.max_depth),
        ("constraints.max_tokens", req.constraints.max_tokens <= claims.budget),
        ("constraints.deadline_ms", ends_at <= claims.deadline_ms.saturating_add(skew_ms)),
        ("tools", tools_ok),
    ];
    match checks.into_iter().find(|(_, ok)| !ok) {
        None => Ok(()),
        Some((field, _)) => Err(LineageError::new(
            Fault::Mismatch(field),
            format!("the envelope's '{field}' disagrees with its lineage token"),
        )),
    }
}
