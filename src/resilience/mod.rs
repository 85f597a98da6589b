//! Retry policy with backoff, and a circuit breaker per target agent.

pub mod breaker;
pub mod retry;

pub use breaker::{Breaker, BreakerConfig, BreakerState, Breakers, CallPermit, Failure};
pub use retry::{Next, RetryPlan};
