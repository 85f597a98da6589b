//! A2A 1.0 (a2aproject/A2A): every registered agent is an A2A agent, and
//! remote A2A agents can join the team.
//!
//! - [`server`]: the agent card, JSON-RPC and HTTP+JSON bindings under
//!   `/a2a/{slug}`; an A2A task is one delegation tree, its contextId a session.
//! - `service`: tasks over delegation trees, independent of the binding.
//!
//! The wire types, error kinds and the rails extension are in
//! [`crate::protocol::a2a`]; the `a2a` backend that calls a remote A2A agent
//! is [`crate::agent::a2a`]; the conformance agent is in the built-in team.

pub mod server;
mod service;
