//! Plans (single, chain, parallel, conditional, workflow), their execution
//! through an agent's [`crate::agent::Delegator`], Prime's rule planner
//! (the router learned from the agents' examples, and the delegation
//! decision), and Prime, the agent that plans and merges.

pub mod plan;
pub mod planner;
pub mod prime;
mod words;

pub use plan::{Plan, Step, StepResult, execute};
pub use planner::{Choice, Earlier, RulePlanner};
pub use prime::PrimeAgent;
