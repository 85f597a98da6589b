//! The team: each member's declared spec and its implementation, built from
//! the configuration (built-in team, Prime, and the backends: http, command,
//! llm, a2a) unless the embedder supplied one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::agent::command::CommandAgent;
use crate::agent::{Agent, ChatModel};
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

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member").finish_non_exhaustive()
    }
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

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight").finish_non_exhaustive()
    }
}

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

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    /// Builds every agent the config declares; `overrides` replaces (or
    /// supplies) the implementation of the named agents, and `chat` (when
    /// given) answers for the model of every `llm` agent and Prime's LLM planner.
    pub fn build(
        config: &Config,
        overrides: &HashMap<AgentSlug, Arc<dyn Agent>>,
        chat: Option<&Arc<dyn ChatModel>>,
    ) -> Result<Self, DelegationError> {
        let mut reg = Self::default();
        for spec in &config.agents {
            let agent = match overrides.get(&spec.slug) {
                Some(a) => a.clone(),
                None => implementation(spec, config, chat)?,
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

#[cfg_attr(not(feature = "llm"), allow(unused_variables))]
fn implementation(
    spec: &AgentSpec,
    config: &Config,
    chat: Option<&Arc<dyn ChatModel>>,
) -> Result<Arc<dyn Agent>, DelegationError> {
    match &spec.backend {
        Backend::Builtin { name } => {
            let name = name.as_deref().unwrap_or(spec.slug.as_str());
            if is_prime(spec) {
                // one line of config switches Prime's planner
                if config.prime.planner == "llm" {
                    #[cfg(feature = "llm")]
                    return Ok(Arc::new(crate::agent::llm::LlmAgent::prime(spec, config, chat.cloned())?));
                    #[cfg(not(feature = "llm"))]
                    return Err(not_built(spec, "Prime's llm planner", "llm"));
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
        #[cfg(feature = "remote")]
        Backend::Http { url, agent, token_env, origin_tokens, peer } => Ok(Arc::new(
            crate::agent::http::RemoteAgent::new(url, agent.as_deref(), token_env.as_deref(), origin_tokens)
                .map_err(|e| DelegationError::invalid(format!("agent '{}': {}", spec.slug, e.message)))?
                .with_peer(peer.clone()),
        )),
        #[cfg(not(feature = "remote"))]
        Backend::Http { .. } => Err(not_built(spec, "the http backend", "remote")),
        Backend::Command { command, args, env } => Ok(Arc::new(CommandAgent::new(command, args, env)?)),
        #[cfg(feature = "queue")]
        Backend::Queue { peer, agent } => {
            Ok(Arc::new(crate::agent::queue::QueueAgent::new(&config.queue, peer, agent.clone())))
        }
        #[cfg(not(feature = "queue"))]
        Backend::Queue { .. } => Err(not_built(spec, "the queue backend", "queue")),
        #[cfg(feature = "llm")]
        Backend::Llm { .. } => crate::agent::llm::for_spec(spec, config, chat.cloned()),
        #[cfg(not(feature = "llm"))]
        Backend::Llm { .. } => Err(not_built(spec, "the llm backend", "llm")),
        #[cfg(feature = "a2a")]
        Backend::A2a { .. } => crate::agent::a2a::for_spec(spec, config),
        #[cfg(not(feature = "a2a"))]
        Backend::A2a { .. } => Err(not_built(spec, "the a2a backend", "a2a")),
    }
}

/// The error for a configured agent whose backend this build left out.
#[cfg_attr(all(feature = "remote", feature = "llm", feature = "a2a", feature = "queue"), allow(dead_code))]
fn not_built(spec: &AgentSpec, what: &str, feature: &str) -> DelegationError {
    DelegationError::invalid(format!(
        "agent '{}' needs {what}, which this build of Switchboard leaves out: build it with the `{feature}` feature",
        spec.slug
    ))
}

/// Learns the router of every Prime of `config` that plans by rules, now,
/// on the calling thread: the first message a Prime plans learns it
/// otherwise (its examples, a few hundred milliseconds in a release build,
/// seconds in a debug one), holding one of the runtime's threads the while.
/// `switchboard serve` calls it off the runtime's threads before it
/// listens, so that no request waits for it and nothing it holds up (a
/// replica's lease, renewed on the runtime) runs late. Learned routers are
/// kept by what they learned from, so the Prime that plans later finds it.
pub(crate) fn learn_routers(config: &Config) {
    if config.prime.planner == "llm" {
        return;
    }
    for spec in config.agents.iter().filter(|s| is_prime(s)) {
        let _ = PrimeAgent::new(config, spec.slug.as_str()).map(|p| p.learn());
    }
}

/// Whether `spec` runs the built-in Prime (its implementation named, or
/// its slug when it names none).
fn is_prime(spec: &AgentSpec) -> bool {
    matches!(&spec.backend, Backend::Builtin { name } if BUILTIN_PRIME.contains(&name.as_deref().unwrap_or(spec.slug.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Config {
        Config::from_toml(&format!("{}\n{extra}", crate::config::DEFAULT_TOML)).unwrap()
    }

    #[test]
    fn members_come_in_declaration_order_and_count_their_work() {
        let config = config("");
        let reg = Registry::build(&config, &HashMap::new(), None).unwrap();
        let order: Vec<_> = reg.members().map(|m| m.spec.slug.clone()).collect();
        let declared: Vec<_> = config.agents.iter().map(|a| a.slug.clone()).collect();
        assert_eq!(order, declared);
        assert_eq!(reg.len(), declared.len());
        let m = reg.get(&declared[0]).unwrap();
        let guard = m.enter();
        assert_eq!(m.busy(), 1);
        drop(guard);
        assert_eq!(m.busy(), 0);
    }

    #[test]
    fn an_implementation_for_an_undeclared_agent_is_refused() {
        let echo = team::lookup("echo").unwrap();
        let overrides = HashMap::from([(AgentSlug::parse("nobody").unwrap(), echo)]);
        let err = Registry::build(&config(""), &overrides, None).err().unwrap();
        assert!(err.message.contains("'nobody'"), "{}", err.message);
    }

    #[test]
    fn an_unknown_builtin_is_a_configuration_error() {
        let err = Registry::build(
            &config("[[agents]]\nslug = \"ghost\"\nname = \"Ghost\"\n[agents.backend]\nkind = \"builtin\"\nname = \"no-such\""),
            &HashMap::new(),
            None,
        )
        .err()
        .unwrap();
        assert!(err.message.contains("'no-such'"), "{}", err.message);
    }

    #[cfg(not(feature = "llm"))]
    #[test]
    fn a_backend_this_build_leaves_out_names_the_feature_to_build_with() {
        let err = Registry::build(
            &config("[[agents]]\nslug = \"writer\"\nname = \"Writer\"\n[agents.backend]\nkind = \"llm\""),
            &HashMap::new(),
            None,
        )
        .err()
        .unwrap();
        assert!(err.message.contains("`llm` feature"), "{}", err.message);
    }
}
