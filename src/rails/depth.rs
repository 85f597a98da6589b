//! Depth rail: a request carries `current_depth`, the depth of its origin (a
//! user's message to Prime is depth 0). The target runs one deeper, which must
//! stay below the effective `max_depth`. A request may lower the limit for its
//! subtree, never raise it above its parent's.

use crate::protocol::{DelegationError, ErrorCode};

/// The depth the target will run at, and the limit in force for its subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Depth {
    pub target: u32,
    pub max: u32,
}

/// `requested_max` is the request's `max_depth`; `inherited_max` is the
/// parent's effective limit (or the configured ceiling for a root request).
pub(crate) fn check(current_depth: u32, requested_max: u32, inherited_max: u32) -> Result<Depth, DelegationError> {
    let max = requested_max.min(inherited_max);
    let target = current_depth.saturating_add(1);
    if target >= max {
        return Err(DelegationError::new(
            ErrorCode::DepthLimit,
            format!(
                "Delegation depth limit reached ({}/{max}). Cannot delegate further. Return results to parent.",
                target.min(max)
            ),
        ));
    }
    Ok(Depth { target, max })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CEILING: u32 = 8;

    #[test]
    fn prime_to_byte_is_allowed_at_default_depth() {
        // Prime runs at 0 and delegates with current_depth 0: Byte runs at 1.
        let d = check(0, 2, CEILING).unwrap();
        assert_eq!(d, Depth { target: 1, max: 2 });
    }

    #[test]
    fn prime_to_byte_to_tag_is_refused_at_default_depth() {
        // Byte (depth 1) delegating to Tag would put Tag at depth 2.
        let err = check(1, 2, 2).unwrap_err();
        assert_eq!(err.code, ErrorCode::DepthLimit);
        assert!(err.message.contains("Return results to parent"), "{}", err.message);
        assert!(err.message.contains("(2/2)"), "{}", err.message);
    }

    #[test]
    fn max_depth_three_allows_a_b_c_and_stops_there() {
        let b = check(0, 3, CEILING).unwrap();
        let c = check(b.target, 3, b.max).unwrap();
        assert_eq!(c.target, 2);
        assert_eq!(check(c.target, 3, c.max).unwrap_err().code, ErrorCode::DepthLimit);
    }

    #[test]
    fn a_child_cannot_raise_the_limit_above_its_parents() {
        let b = check(0, 2, CEILING).unwrap();
        // The child asks for 10; the parent's 2 stays in force.
        let err = check(b.target, 10, b.max).unwrap_err();
        assert_eq!(err.code, ErrorCode::DepthLimit);
        // ...but it may lower it.
        let lowered = check(0, 1, 3).unwrap_err();
        assert_eq!(lowered.code, ErrorCode::DepthLimit);
    }

    #[test]
    fn a_root_request_is_capped_by_the_ceiling() {
        assert_eq!(check(0, u32::MAX, CEILING).unwrap().max, CEILING);
        assert_eq!(check(u32::MAX, 2, CEILING).unwrap_err().code, ErrorCode::DepthLimit);
    }
}
