//! A2A 1.0 (a2aproject/A2A): every registered agent is an A2A agent, and
//! remote A2A agents can join the team.
//!
//! - [`server`]: the agent card, JSON-RPC and HTTP+JSON bindings under
//!   `/a2a/{slug}`; an A2A task is one delegation tree, its contextId a session.
//! - [`rails`]: the extension that carries depth, chain, deadline, budget and
//!   user across an A2A hop in message metadata.
//! - [`client`]: the `a2a` backend that calls a remote A2A agent.
//! - [`conformance`]: the built-in `a2a-conformance` agent that behaves as
//!   the A2A TCK's scenarios describe.
//!
//! Wire types are our own serde types ([`types`]).

pub mod client;
pub mod conformance;
pub mod error;
pub mod rails;
pub mod server;
mod service;
pub mod types;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::protocol::RequestId;

pub use rails::{RAILS_EXTENSION, Rails};

/// The A2A message behind a running delegation, for agents that look at A2A
/// details the envelope does not carry (the conformance agent's message-id
/// prefixes). Registered while the turn runs.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub message: types::Message,
    pub streaming: bool,
}

static INBOUND: LazyLock<Mutex<HashMap<RequestId, Inbound>>> = LazyLock::new(Default::default);

/// The A2A message that started delegation `request`, while it runs.
pub fn inbound(request: RequestId) -> Option<Inbound> {
    crate::guard::tree::lock(&INBOUND).get(&request).cloned()
}

/// Registers `message` for `request` until the guard drops.
pub(crate) fn register_inbound(request: RequestId, inbound: Inbound) -> InboundGuard {
    crate::guard::tree::lock(&INBOUND).insert(request, inbound);
    InboundGuard(request)
}

pub(crate) struct InboundGuard(RequestId);

impl Drop for InboundGuard {
    fn drop(&mut self) {
        crate::guard::tree::lock(&INBOUND).remove(&self.0);
    }
}
