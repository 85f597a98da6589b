//! Plans (single, chain, parallel, conditional, workflow), their execution
//! through an agent's [`crate::agent::Delegator`], and Prime, the agent that plans and merges.

pub mod plan;
pub mod prime;

pub use plan::{Plan, Step, StepResult, execute};
pub use prime::{PrimeAgent, RulePlanner};
