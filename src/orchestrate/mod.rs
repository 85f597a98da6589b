//! Plans (single, chain, parallel, conditional, workflow), their execution
//! through a [`crate::Delegator`], and Prime, the agent that plans and merges.

pub mod plan;
pub mod prime;
pub mod workflow;

pub use plan::{Plan, Step, StepResult, execute};
pub use prime::{PrimeAgent, RulePlanner};
