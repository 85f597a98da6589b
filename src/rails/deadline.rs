//! Deadline rail: a child's deadline is `min(requested, parent's remaining −
//! margin)`; no call is sent when the parent has the margin or less left.
//! Enforcement (cancelling the work) is in the runtime's attempt loop.

use std::time::Duration;

use tokio::time::Instant;

use crate::protocol::{DelegationError, ErrorCode};

/// The absolute deadline of a child delegation.
pub(crate) fn child_deadline(
    now: Instant,
    requested: Duration,
    parent_deadline: Option<Instant>,
    margin: Duration,
) -> Result<Instant, DelegationError> {
    let wanted = now + requested;
    let Some(parent) = parent_deadline else {
        return Ok(wanted);
    };
    let remaining = parent.saturating_duration_since(now);
    if remaining <= margin {
        return Err(DelegationError::new(
            ErrorCode::DeadlineExceeded,
            format!(
                "Delegation timeout: the parent has {} ms left, not more than the {} ms margin; no call was sent",
                remaining.as_millis(),
                margin.as_millis()
            ),
        ));
    }
    Ok(wanted.min(parent - margin))
}

/// The message of a delegation that ran out of time.
pub(crate) fn timeout_error(budget: Duration) -> DelegationError {
    DelegationError::new(ErrorCode::DeadlineExceeded, format!("Delegation timeout after {}ms", budget.as_millis()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARGIN: Duration = Duration::from_millis(50);

    #[tokio::test(start_paused = true)]
    async fn child_gets_the_requested_deadline_when_the_parent_has_room() {
        let now = Instant::now();
        let parent = now + Duration::from_secs(15);
        let d = child_deadline(now, Duration::from_secs(5), Some(parent), MARGIN).unwrap();
        assert_eq!(d - now, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn child_deadline_is_capped_by_parents_remaining_minus_margin() {
        let now = Instant::now();
        let parent = now + Duration::from_millis(1_000);
        let d = child_deadline(now, Duration::from_secs(15), Some(parent), MARGIN).unwrap();
        assert_eq!(d - now, Duration::from_millis(950));
    }

    #[tokio::test(start_paused = true)]
    async fn no_call_is_sent_when_only_the_margin_is_left() {
        let now = Instant::now();
        let err = child_deadline(now, Duration::from_secs(1), Some(now + MARGIN), MARGIN).unwrap_err();
        assert_eq!(err.code, ErrorCode::DeadlineExceeded);
        let err = child_deadline(now, Duration::from_secs(1), Some(now), MARGIN).unwrap_err();
        assert_eq!(err.code, ErrorCode::DeadlineExceeded);
    }

    #[test]
    fn timeout_message_matches_the_seed() {
        assert_eq!(timeout_error(Duration::from_millis(5000)).message, "Delegation timeout after 5000ms");
    }
}
