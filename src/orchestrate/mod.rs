//! Plans (single, chain, parallel, conditional, workflow) and their execution
//! through a [`crate::Delegator`].

pub mod workflow;
