//! A2A 1.0 (a2aproject/A2A) as a service over the runtime: every registered
//! agent is an A2A agent. An A2A task is one delegation tree, its contextId
//! a session; each turn of a task runs as one delegation.
//!
//! - [`A2aService`]: the operations (send, get, list, cancel, subscribe)
//!   and the tasks of one service, independent of the binding.
//! - [`agent_card`]: an agent described as an A2A agent; [`extended_agent_card`]:
//!   what an authenticated caller learns besides.
//! - push notifications (push.rs): config operations on [`A2aService`], signed
//!   deliveries to globally routable addresses only ([`blocked`]).
//!
//! The HTTP bindings (JSON-RPC, HTTP+JSON, SSE) and the gRPC service are in
//! the server ([`grpc`], re-exported from [`crate::protocol::a2a`], holds gRPC's generated code and conversions); the wire
//! types, error kinds and the rails extension are in [`crate::protocol::a2a`];
//! the `a2a` backend that calls a remote A2A agent is [`crate::agent::a2a`];
//! the conformance agent is in the built-in team.

mod card;
mod convert;
/// gRPC's generated code and conversions (they live with the wire types,
/// where the `a2a` backend's gRPC client reaches them too).
#[cfg(feature = "grpc")]
pub(crate) use crate::protocol::a2a::grpc;
mod push;
mod push_configs;
mod push_targets;
mod service;
mod tasks;

pub(crate) use card::{agent_card, extended_agent_card};
pub(crate) use convert::{KEEP_ALIVE, ends_stream, parse_state};
pub(crate) use push::JWKS_PATH;
pub(crate) use service::{A2aService, ListQuery, Mode, Sent, Subscription};
pub(crate) use tasks::TaskEvent;
