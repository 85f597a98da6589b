//! The `a2a` agent backend: a remote A2A agent as a team member.

use std::sync::Arc;

use crate::agent::Agent;
use crate::config::{AgentSpec, Config};
use crate::protocol::DelegationError;

/// The agent for a spec with an `a2a` backend.
pub fn for_spec(spec: &AgentSpec, _config: &Config) -> Result<Arc<dyn Agent>, DelegationError> {
    Err(DelegationError::invalid(format!("agent '{}': the a2a backend is not built yet", spec.slug)))
}
