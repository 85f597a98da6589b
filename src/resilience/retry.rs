//! Retry policy (docs/DESIGN.md#retries-seeds-and-verification): attempts
//! by priority, a decision by error class, and exponential or linear backoff
//! with jitter that never reaches past the deadline.

use std::time::Duration;

use crate::protocol::{BackoffStrategy, ErrorClass, Priority, RetryPolicy};

/// How many attempts a delegation gets and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPlan {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// How the wait grows between attempts.
    pub strategy: BackoffStrategy,
    /// Backoff after the first failed attempt, before jitter (100 ms).
    pub base: Duration,
    /// Longest backoff, before jitter (5 s).
    pub cap: Duration,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after `delay`; `next_seed` asks for the next variant, and
    /// `longer_timeout` for more time on the same seed.
    Retry {
        /// How long to wait first.
        delay: Duration,
        /// Retry with the next seed (after a failed verification).
        next_seed: bool,
        /// Give the same seed more time (after a timeout).
        longer_timeout: bool,
    },
    /// Stop: no attempts left, no time left, or a failure that is not retried.
    GiveUp,
}

impl RetryPlan {
    /// The plan for a request: the caller's `retry_policy` wins, then the
    /// agent's configured attempts, then the priority's default.
    pub fn for_request(priority: Priority, policy: Option<&RetryPolicy>, agent_attempts: Option<u32>) -> Self {
        let mut plan = Self {
            max_attempts: agent_attempts.unwrap_or_else(|| priority.default_attempts()),
            strategy: BackoffStrategy::Exponential,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
        };
        if let Some(p) = policy {
            plan.strategy = p.backoff_strategy;
            if !p.enabled {
                plan.max_attempts = 1;
            } else if let Some(n) = p.max_attempts {
                // A caller may ask for fewer attempts, or more up to the urgent maximum.
                plan.max_attempts = n.clamp(1, Priority::Urgent.default_attempts());
            }
        }
        plan.max_attempts = plan.max_attempts.max(1);
        plan
    }

    /// The wait after failed attempt `attempt` (1-based): 100 ms × 2ⁿ⁻¹ (or
    /// × n when linear), capped, with "equal jitter" (half fixed, half random)
    /// so that many callers do not retry in lockstep.
    pub fn backoff(&self, attempt: u32, jitter_seed: u64) -> Duration {
        let n = attempt.max(1);
        let raw = match self.strategy {
            BackoffStrategy::Exponential => self.base.saturating_mul(1u32.checked_shl(n - 1).unwrap_or(u32::MAX)),
            BackoffStrategy::Linear => self.base.saturating_mul(n),
            #[allow(unreachable_patterns)]
            _ => self.base,
        }
        .min(self.cap);
        let half = raw / 2;
        let jitter_ms = half.as_millis() as u64;
        let r = if jitter_ms == 0 { 0 } else { splitmix(jitter_seed ^ u64::from(n)) % (jitter_ms + 1) };
        half + Duration::from_millis(r)
    }

    /// Decides after attempt `attempt` failed with `class`, with `remaining`
    /// time before the deadline; `asked` is a wait the failing service asked for.
    pub fn next(
        &self,
        class: ErrorClass,
        attempt: u32,
        remaining: Duration,
        jitter_seed: u64,
        asked: Option<Duration>,
    ) -> Next {
        if attempt >= self.max_attempts {
            return Next::GiveUp;
        }
        let (delay, next_seed, longer_timeout) = match class {
            ErrorClass::Verification => (Duration::ZERO, true, false),
            ErrorClass::Timeout => (Duration::ZERO, false, true),
            ErrorClass::Unavailable | ErrorClass::Failure => {
                (self.backoff(attempt, jitter_seed).max(asked.unwrap_or_default()), false, false)
            }
            _ => return Next::GiveUp,
        };
        // Never sleep into the deadline: a retry needs time to run as well.
        if delay >= remaining || remaining.is_zero() {
            return Next::GiveUp;
        }
        Next::Retry { delay, next_seed, longer_timeout }
    }
}

/// A small, fast mixing function for jitter (not for anything secret).
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOTS: Duration = Duration::from_secs(60);

    #[test]
    fn attempts_follow_priority() {
        for (p, n) in [(Priority::Low, 2), (Priority::Normal, 3), (Priority::High, 5), (Priority::Urgent, 8)] {
            assert_eq!(RetryPlan::for_request(p, None, None).max_attempts, n);
        }
    }

    #[test]
    fn a_disabled_policy_means_one_attempt() {
        let policy = RetryPolicy { enabled: false, max_attempts: Some(5), backoff_strategy: BackoffStrategy::Linear };
        assert_eq!(RetryPlan::for_request(Priority::Urgent, Some(&policy), None).max_attempts, 1);
    }

    #[test]
    fn exponential_backoff_doubles_from_100ms_and_is_capped() {
        let plan = RetryPlan::for_request(Priority::Urgent, None, None);
        for (attempt, full) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1600), (10, 5000)] {
            let d = plan.backoff(attempt, 42).as_millis() as u64;
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d} not in [{}, {full}]", full / 2);
        }
    }

    #[test]
    fn linear_backoff_grows_by_the_base() {
        let policy = RetryPolicy { enabled: true, max_attempts: None, backoff_strategy: BackoffStrategy::Linear };
        let plan = RetryPlan::for_request(Priority::Urgent, Some(&policy), None);
        let d = plan.backoff(3, 7).as_millis();
        assert!((150..=300).contains(&d), "{d}");
    }

    #[test]
    fn jitter_varies_between_callers() {
        let plan = RetryPlan::for_request(Priority::Normal, None, None);
        let waits: std::collections::BTreeSet<_> = (0..50).map(|s| plan.backoff(3, s)).collect();
        assert!(waits.len() > 10, "jitter should spread retries: {waits:?}");
    }

    #[test]
    fn each_error_class_gets_its_retry() {
        let plan = RetryPlan::for_request(Priority::Normal, None, None);
        assert!(
            matches!(plan.next(ErrorClass::Verification, 1, LOTS, 0, None), Next::Retry { next_seed: true, delay, .. } if delay.is_zero())
        );
        assert!(matches!(
            plan.next(ErrorClass::Timeout, 1, LOTS, 0, None),
            Next::Retry { next_seed: false, longer_timeout: true, .. }
        ));
        assert!(
            matches!(plan.next(ErrorClass::Unavailable, 1, LOTS, 0, None), Next::Retry { next_seed: false, delay, .. } if !delay.is_zero())
        );
        assert_eq!(plan.next(ErrorClass::Refusal, 1, LOTS, 0, None), Next::GiveUp);
        assert_eq!(plan.next(ErrorClass::Cancelled, 1, LOTS, 0, None), Next::GiveUp);
        assert_eq!(plan.next(ErrorClass::Failure, 3, LOTS, 0, None), Next::GiveUp, "normal priority stops after 3");
    }

    #[test]
    fn a_services_retry_after_is_honoured() {
        let plan = RetryPlan::for_request(Priority::Normal, None, None);
        let asked = Some(Duration::from_secs(2));
        assert!(
            matches!(plan.next(ErrorClass::Unavailable, 1, LOTS, 0, asked), Next::Retry { delay, .. } if delay == Duration::from_secs(2))
        );
        assert_eq!(
            plan.next(ErrorClass::Unavailable, 1, Duration::from_secs(1), 0, asked),
            Next::GiveUp,
            "not past the deadline"
        );
    }

    #[test]
    fn no_retry_when_the_wait_would_reach_the_deadline() {
        let plan = RetryPlan::for_request(Priority::Urgent, None, None);
        assert_eq!(plan.next(ErrorClass::Failure, 4, Duration::from_millis(100), 0, None), Next::GiveUp);
        assert!(matches!(plan.next(ErrorClass::Failure, 1, Duration::from_secs(1), 0, None), Next::Retry { .. }));
    }
}
