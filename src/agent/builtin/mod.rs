//! Deterministic agents compiled into Switchboard: the seeds' finance team, the
//! seeds/001 tool agents and Prime's rule planner. They need no model, no key
//! and no network.

pub mod finance;
pub mod tools;

use std::sync::Arc;

use super::Agent;

/// The built-in agent implementation called `name`, if there is one.
pub fn lookup(name: &str) -> Option<Arc<dyn Agent>> {
    finance::lookup(name).or_else(|| tools::lookup(name)).or_else(|| crate::a2a::conformance::lookup(name))
}
