//! Authorization rail: who is calling, who may delegate to whom, which users
//! may use which agent, and which tools the target may use. Along a chain the
//! effective tools never grow: child ⊆ parent ∩ the child's allow-list.

use std::collections::BTreeSet;

use crate::auth::Principal;
use crate::config::{AgentSpec, ToolSet};
use crate::protocol::{AgentSlug, DelegationError, ErrorCode, UserId};

/// The origin named in the envelope must be the calling agent.
pub(crate) fn authenticate(caller: &Principal, origin: &AgentSlug) -> Result<(), DelegationError> {
    match caller {
        Principal::Admin => Ok(()),
        Principal::Agent(me) if me == origin => Ok(()),
        Principal::Agent(me) => Err(DelegationError::new(
            ErrorCode::Unauthenticated,
            format!(
                "the caller is agent '{me}' but the envelope's origin_employee is '{origin}'; an agent may only delegate as itself"
            ),
        )),
        Principal::User(_) | Principal::Anonymous(_) => Err(DelegationError::new(
            ErrorCode::Unauthenticated,
            "user credentials cannot send delegation envelopes; agents use their service token (users talk to Prime)",
        )),
    }
}

/// `may_delegate_to`: the configured edges (how a gradual rollout is done).
pub(crate) fn authorize_edge(origin: &AgentSpec, target: &AgentSpec) -> Result<(), DelegationError> {
    if origin.may_delegate_to(&target.slug) {
        return Ok(());
    }
    let allowed: Vec<&str> = origin.may_delegate_to.iter().map(String::as_str).collect();
    Err(DelegationError::new(
        ErrorCode::DelegationNotAllowed,
        format!(
            "{} may not delegate to {}; its may_delegate_to is [{}]. Pick one of those or change the configuration.",
            origin.slug,
            target.slug,
            allowed.join(", ")
        ),
    ))
}

/// The target works with the requesting user's permissions.
pub(crate) fn authorize_user(target: &AgentSpec, user: &UserId) -> Result<(), DelegationError> {
    if target.allows_user(user.as_str()) {
        Ok(())
    } else {
        Err(DelegationError::new(
            ErrorCode::PermissionDenied,
            format!("user '{user}' may not use agent '{}'; ask an administrator to grant access", target.slug),
        ))
    }
}

/// The target's effective tools: its allow-list ∩ what the caller has ∩ what
/// the caller grants. Granting a tool the caller does not have, or asking the
/// target to use one outside its allow-list, is refused.
pub(crate) fn effective_tools(
    target: &AgentSpec,
    caller_tools: &ToolSet,
    granted: Option<&[String]>,
) -> Result<ToolSet, DelegationError> {
    if let Some(granted) = granted {
        let beyond_caller: BTreeSet<&str> =
            granted.iter().map(String::as_str).filter(|t| !caller_tools.contains(*t)).collect();
        if !beyond_caller.is_empty() {
            return Err(DelegationError::new(
                ErrorCode::ToolNotAllowed,
                format!("the caller cannot grant tools it does not have: {beyond_caller:?}"),
            ));
        }
        let beyond_target: BTreeSet<&str> =
            granted.iter().map(String::as_str).filter(|t| !target.tools_allowed.contains(*t)).collect();
        if !beyond_target.is_empty() {
            return Err(DelegationError::new(
                ErrorCode::ToolNotAllowed,
                format!(
                    "agent '{}' is not allowed tools {beyond_target:?}; its tools_allowed are {:?}",
                    target.slug, target.tools_allowed
                ),
            ));
        }
    }
    Ok(target
        .tools_allowed
        .iter()
        .filter(|t| caller_tools.contains(*t) && granted.is_none_or(|g| g.iter().any(|x| x == *t)))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use proptest::prelude::*;

    fn spec(slug: &str, tools: &[&str], may: &[&str]) -> AgentSpec {
        static BASE: std::sync::LazyLock<AgentSpec> =
            std::sync::LazyLock::new(|| Config::builtin().agent("tag-ai").unwrap().clone());
        let mut s = BASE.clone();
        s.slug = AgentSlug::parse(slug).unwrap();
        s.tools_allowed = tools.iter().map(|t| t.to_string()).collect();
        s.may_delegate_to = may.iter().map(|t| t.to_string()).collect();
        s
    }

    #[test]
    fn origin_must_be_the_calling_agent() {
        let prime = AgentSlug::parse("prime-boss").unwrap();
        assert!(authenticate(&Principal::Agent(prime.clone()), &prime).is_ok());
        assert!(authenticate(&Principal::Admin, &prime).is_ok());
        let err = authenticate(&Principal::Agent(AgentSlug::parse("tag-ai").unwrap()), &prime).unwrap_err();
        assert_eq!(err.code, ErrorCode::Unauthenticated);
        let err = authenticate(&Principal::User(UserId::parse("alice").unwrap()), &prime).unwrap_err();
        assert_eq!(err.code, ErrorCode::Unauthenticated);
    }

    #[test]
    fn may_delegate_to_is_enforced() {
        let prime = spec("prime-boss", &[], &["byte-doc"]);
        assert!(authorize_edge(&prime, &spec("byte-doc", &[], &[])).is_ok());
        let err = authorize_edge(&prime, &spec("ledger-tax", &[], &[])).unwrap_err();
        assert_eq!(err.code, ErrorCode::DelegationNotAllowed);
        assert!(err.message.contains("[byte-doc]"));
        assert!(authorize_edge(&spec("any", &[], &["*"]), &spec("ledger-tax", &[], &[])).is_ok());
    }

    #[test]
    fn users_need_permission_for_the_target() {
        let mut ledger = spec("ledger-tax", &[], &[]);
        ledger.allowed_users = ["alice".to_string()].into();
        assert!(authorize_user(&ledger, &UserId::parse("alice").unwrap()).is_ok());
        assert_eq!(
            authorize_user(&ledger, &UserId::parse("bob").unwrap()).unwrap_err().code,
            ErrorCode::PermissionDenied
        );
    }

    #[test]
    fn tools_outside_the_allow_list_or_the_callers_set_are_refused() {
        let target = spec("byte-doc", &["extract_receipt", "categorize"], &[]);
        let caller: ToolSet = ["extract_receipt", "delegate"].iter().map(|s| s.to_string()).collect();
        let eff = effective_tools(&target, &caller, None).unwrap();
        assert_eq!(eff, ToolSet::from(["extract_receipt".to_string()]));
        let err = effective_tools(&target, &caller, Some(&["shell".to_string()])).unwrap_err();
        assert_eq!(err.code, ErrorCode::ToolNotAllowed);
        let err = effective_tools(&target, &caller, Some(&["delegate".to_string()])).unwrap_err();
        assert_eq!(err.code, ErrorCode::ToolNotAllowed);
    }

    const TOOLS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

    fn toolset() -> impl Strategy<Value = Vec<String>> {
        prop::sample::subsequence(TOOLS.to_vec(), 0..=TOOLS.len())
            .prop_map(|v| v.into_iter().map(String::from).collect())
    }

    proptest! {
        /// Down any chain of agents with arbitrary allow-lists and grants, the
        /// effective tools never grow.
        #[test]
        fn effective_tools_never_grow_along_a_chain(
            root in toolset(),
            hops in prop::collection::vec((toolset(), prop::option::of(toolset())), 1..8),
        ) {
            let mut current: ToolSet = root.into_iter().collect();
            for (allowed, granted) in hops {
                let target = spec("t", &allowed.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
                match effective_tools(&target, &current, granted.as_deref()) {
                    Ok(next) => {
                        prop_assert!(next.is_subset(&current));
                        prop_assert!(next.is_subset(&target.tools_allowed));
                        current = next;
                    }
                    Err(e) => prop_assert_eq!(e.code, ErrorCode::ToolNotAllowed),
                }
            }
        }
    }
}
