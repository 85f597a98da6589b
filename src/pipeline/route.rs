//! Routing: which agent a request goes to. An explicit `target_employee`;
//! with `auto`, a member of `target_domain` (balanced, skipping open
//! breakers), else the agent this user's similar past requests went to
//! best, else discovery by keywords and capabilities among the agents the
//! origin may call.

use crate::config::AgentSpec;
use crate::protocol::{AgentSlug, DelegationError, DelegationRequest, ErrorCode};
use crate::resilience::BreakerState;
use crate::route::{discover, history};
use crate::runtime::{Member, Runtime};
use crate::store::task_signature;

/// Resolves `req.target_employee` (filling it in when it is `auto`) and
/// returns the member that will run the delegation.
pub(super) async fn target(
    rt: &Runtime,
    req: &mut DelegationRequest,
    origin: Option<&AgentSpec>,
) -> Result<Member, DelegationError> {
    let inner = &*rt.inner;
    let may_call = |a: &AgentSlug| origin.is_none_or(|o| o.may_delegate_to(a));
    if req.target_employee.is_auto()
        && let Some(domain) = req.target_domain.clone()
    {
        req.target_employee = inner.domains.pick(
            &domain,
            &req.origin_employee,
            origin.and_then(|o| o.domain.as_deref()),
            |a| inner.registry.get(a).map_or(0, Member::busy),
            |a| inner.breakers.state(a) != BreakerState::Open,
        )?;
    }
    if req.target_employee.is_auto() {
        // what this user's past delegations of this kind say
        let signature = task_signature(&inner.redactor.redact(&req.objective, &mut Default::default()));
        let recent = inner.store.recent_outcomes(&req.user_id, history::WINDOW).await?;
        let past = history::similar(&recent, &signature);
        let allowed = |a: &str| {
            a != req.origin_employee.as_str()
                && AgentSlug::parse(a).is_ok_and(|s| inner.registry.get(&s).is_some() && may_call(&s))
        };
        if let Some(best) = history::preferred(&past, allowed).and_then(|a| AgentSlug::parse(a).ok()) {
            req.target_employee = best;
        }
    }
    if req.target_employee.is_auto() {
        // keywords and capabilities
        let text = format!("{} {}", req.objective, req.input);
        let allowed =
            inner.registry.members().map(|m| &*m.spec).filter(|s| s.slug != req.origin_employee && may_call(&s.slug));
        let best = discover(allowed, &text, &req.context_hints).first().map(|c| c.spec.slug.clone());
        req.target_employee = best.ok_or_else(|| {
            DelegationError::new(
                ErrorCode::AgentNotFound,
                "no agent matches this objective; name target_employee explicitly",
            )
        })?;
    }
    inner.registry.get(&req.target_employee).cloned().ok_or_else(|| {
        DelegationError::new(
            ErrorCode::AgentNotFound,
            format!("no agent '{}' is registered; list agents with `switchboard agents`", req.target_employee),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UserId;

    fn request(target: &str, objective: &str) -> DelegationRequest {
        DelegationRequest::new(
            AgentSlug::parse("prime-boss").unwrap(),
            AgentSlug::parse(target).unwrap(),
            UserId::parse("alice").unwrap(),
            objective,
            "",
        )
    }

    #[tokio::test]
    async fn auto_targets_are_discovered_among_the_agents_the_origin_may_call() {
        let rt = Runtime::embedded();
        let prime = rt.config().agent("prime-boss").cloned().unwrap();
        let mut req = request("auto", "Extract the receipt data");
        let member = target(&rt, &mut req, Some(&prime)).await.unwrap();
        assert_eq!(member.spec.slug.as_str(), "byte-doc");
        assert_eq!(req.target_employee.as_str(), "byte-doc", "the envelope names the discovered target");

        // an origin that may call nobody discovers nobody
        let mut lonely = prime.clone();
        lonely.may_delegate_to.clear();
        let err = target(&rt, &mut request("auto", "Extract the receipt data"), Some(&lonely)).await.err().unwrap();
        assert_eq!(err.code, ErrorCode::AgentNotFound);
    }

    #[tokio::test]
    async fn an_unknown_named_target_is_agent_not_found() {
        let rt = Runtime::embedded();
        let err = target(&rt, &mut request("ghost", "anything"), None).await.err().unwrap();
        assert_eq!(err.code, ErrorCode::AgentNotFound);
        assert!(err.message.contains("ghost"));
    }
}
