//! A2A 1.0 (a2aproject/A2A): every registered agent is an A2A agent, and
//! remote A2A agents can join the team.

pub mod client;
pub mod server;
