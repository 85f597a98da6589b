//! The team: each member's declared spec and its implementation, built from
//! the configuration (built-in team, Prime, and the backends: http, command,
//! llm, a2a) unless the embedder supplied one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::agent::Agent;
use crate::agent::command::CommandAgent;
use crate::agent::http::RemoteAgent;
use crate::config::{AgentSpec, BUILTIN_PRIME, Backend, Config};
use crate::orchestrate::prime::PrimeAgent;
use crate::protocol::{AgentSlug, DelegationError};
use crate::team;

/// One team member.
#[derive(Clone)]
pub struct Member {
    /// The agent as declared in the config.
    pub spec: Arc<AgentSpec>,
    /// The implementation that does its work.
    pub agent: Arc<dyn Agent>,
    /// Delegations to this agent in flight (for least-busy balancing).
    pub in_flight: Arc<AtomicU32>,
}

impl Member {
    /// Delegations to this agent in flight now.
    pub fn busy(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Counts one delegation in flight until the guard drops.
    pub fn enter(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.in_flight.clone())
    }
}

/// One delegation in flight; counted down on drop.
pub struct InFlight(Arc<AtomicU32>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// All members, in declaration order.
#[derive(Clone, Default)]
pub struct Registry {
    members: HashMap<AgentSlug, Member>,
    order: Vec<AgentSlug>,
}

impl Registry {
    /// Builds every agent the config declares; `overrides` replaces (or
    /// supplies) the implementation of the named agents.
    pub fn build(config: &Config, overrides: &HashMap<AgentSlug, Arc<dyn Agent>>) -> Result<Self, DelegationError> {
        let mut reg = Self::default();
        for spec in &config.agents {
            let agent = match overrides.get(&spec.slug) {
                Some(a) => a.clone(),
                None => implementation(spec, config)?,
            };
            reg.order.push(spec.slug.clone());
            reg.members
                .insert(spec.slug.clone(), Member { spec: Arc::new(spec.clone()), agent, in_flight: Arc::default() });
        }
        for slug in overrides.keys() {
            if !reg.members.contains_key(slug) {
                return Err(DelegationError::invalid(format!(
                    "an implementation was given for agent '{slug}' but the configuration does not declare it"
                )));
            }
        }
        Ok(reg)
    }

    /// The member with this slug, if any.
    pub fn get(&self, slug: &AgentSlug) -> Option<&Member> {
        self.members.get(slug)
    }

    /// Members in declaration order.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.order.iter().filter_map(|s| self.members.get(s))
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

fn implementation(spec: &AgentSpec, config: &Config) -> Result<Arc<dyn Agent>, DelegationError> {
    match &spec.backend {
        Backend::Builtin { name } => {
            let name = name.as_deref().unwrap_or(spec.slug.as_str());
            if BUILTIN_PRIME.contains(&name) {
                // one line of config switches Prime's planner
                if config.prime.planner == "llm" {
                    return Ok(Arc::new(crate::agent::llm::LlmAgent::prime(spec, config)?));
                }
                return Ok(Arc::new(PrimeAgent::new(config, spec.slug.as_str())?));
            }
            team::lookup(name).ok_or_else(|| {
                DelegationError::invalid(format!(
                    "agent '{}' asks for built-in implementation '{name}', which does not exist",
                    spec.slug
                ))
            })
        }
        Backend::Http { url, agent, token_env, origin_tokens } => Ok(Arc::new(
            RemoteAgent::new(url, agent.as_deref(), token_env.as_deref(), origin_tokens)
                .map_err(|e| DelegationError::invalid(format!("agent '{}': {}", spec.slug, e.message)))?,
        )),
        Backend::Command { command, args, env } => Ok(Arc::new(CommandAgent::new(command, args, env)?)),
        Backend::Llm { .. } => crate::agent::llm::for_spec(spec, config),
        Backend::A2a { .. } => crate::agent::a2a::for_spec(spec, config),
    }
}
