//! Plans (single, chain, parallel, conditional, workflow), their execution
//! through an agent's [`crate::agent::Delegator`], Prime's rule planner
//! (the router learned from the agents' examples, and the delegation
//! decision), and Prime, the agent that plans and merges.

pub(crate) mod plan;
pub(crate) mod planner;
pub(crate) mod prime;
mod words;

#[cfg(test)]
mod heldout_tests;
#[cfg(test)]
mod routing_set;
