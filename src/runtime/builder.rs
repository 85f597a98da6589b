//! [`RuntimeBuilder`]: the configuration, the store, agents supplied in Rust
//! and the breaker settings; every part has an embedded default.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::lease::Lease;
use super::registry::Registry;
use super::runtime::{Inner, Runtime};
use crate::agent::{Agent, ChatModel};
use crate::config::{AgentSpec, Config};
use crate::protocol::{AgentSlug, DelegationError};
use crate::rails::{SessionVaults, Trees};
use crate::redact::Redactor;
use crate::resilience::{BreakerConfig, Breakers};
use crate::route::DomainTable;
use crate::store::{MemoryStore, Store};
use crate::telemetry::{Events, Metrics};

/// Builds a [`Runtime`]; every part has an embedded default (the built-in
/// team's configuration, an in-memory store, the default breaker).
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use switchboard::protocol::{AgentSlug, UserId};
/// use switchboard::{Agent, AgentContext, AgentOutput, AskOptions, Config, DelegationError, MemoryStore, Runtime, Task};
///
/// /// Our own implementation of the configured `email` agent.
/// struct Outbox;
///
/// #[async_trait]
/// impl Agent for Outbox {
///     async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
///         Ok(AgentOutput::new("drafted", format!("Draft: {}", task.objective)))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), DelegationError> {
/// let runtime = Runtime::builder()
///     .config(Config::builtin()) // the built-in team (also the default)
///     .store(Arc::new(MemoryStore::new())) // a SqlStore keeps trees across restarts
///     .agent("email", Outbox) // replaces the built-in email agent, behind the same rails
///     .build()?;
/// let ask = AskOptions { agent: Some(AgentSlug::parse("email")?), ..Default::default() };
/// let answer = runtime.ask(&UserId::parse("ada")?, "tell Sam the report is late", ask).await?;
/// assert!(answer.answer.starts_with("Draft:"), "{}", answer.answer);
/// # Ok(())
/// # }
/// ```
///
/// A slug the configuration does not declare is refused by [`build`](Self::build),
/// with the slug named.
#[derive(Default)]
pub struct RuntimeBuilder {
    config: Option<Config>,
    store: Option<Arc<dyn Store>>,
    agents: HashMap<AgentSlug, Arc<dyn Agent>>,
    specs: Vec<AgentSpec>,
    breaker: BreakerConfig,
    bad_slugs: Vec<String>,
    chat: Option<Arc<dyn ChatModel>>,
}

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder; every part has an embedded default.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The built-in team with an in-memory store.
    pub fn embedded() -> Self {
        Self::builder().build().expect("the built-in configuration is valid")
    }
}

impl RuntimeBuilder {
    /// The configuration (default: the built-in team).
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The store (default: in memory).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Supplies the implementation of a declared agent.
    pub fn agent(mut self, slug: &str, agent: impl Agent) -> Self {
        match AgentSlug::parse(slug) {
            Ok(slug) => {
                self.agents.insert(slug, Arc::new(agent));
            }
            Err(_) => self.bad_slugs.push(slug.to_string()),
        }
        self
    }

    /// Declares an extra agent (replacing a declared one with the same slug).
    pub fn spec(mut self, spec: AgentSpec) -> Self {
        self.specs.push(spec);
        self
    }

    /// The model every `llm` agent and Prime's LLM planner talk to, instead
    /// of the endpoint in the configuration (default: that endpoint, over
    /// HTTP). With it, `[llm]` needs no `base_url` or API key, and the model
    /// name sent is the configured one, else [`ChatModel::name`].
    ///
    /// ```
    /// use switchboard::testing::ScriptedModel;
    /// use switchboard::{Config, Runtime};
    ///
    /// let model = ScriptedModel::new().text("Hello from the model.");
    /// let config = Config::from_toml(r#"agents = [{ slug = "writer", name = "Writer", backend = { kind = "llm" } }]"#)?;
    /// let runtime = Runtime::builder().config(config).chat_model(model.clone()).build()?;
    /// # Ok::<(), switchboard::DelegationError>(())
    /// ```
    pub fn chat_model(mut self, model: impl ChatModel) -> Self {
        self.chat = Some(Arc::new(model));
        self
    }

    /// Circuit breaker settings (default: [`BreakerConfig::default`]).
    pub fn breaker(mut self, cfg: BreakerConfig) -> Self {
        self.breaker = cfg;
        self
    }

    /// The runtime, or why the configuration cannot run.
    pub fn build(self) -> Result<Runtime, DelegationError> {
        if let Some(bad) = self.bad_slugs.first() {
            return Err(DelegationError::invalid(format!(
                "'{bad}' is not an agent slug (lowercase letters, digits and dashes)"
            )));
        }
        let mut config = self.config.unwrap_or_else(Config::builtin);
        for spec in self.specs {
            config.agents.retain(|a| a.slug != spec.slug);
            config.agents.push(spec);
        }
        if let Some(chat) = &self.chat {
            // the planner's check asks for an endpoint and a model: the given model is both
            config.llm.base_url.get_or_insert_with(|| format!("model:{}", chat.name()));
            config.llm.model.get_or_insert_with(|| chat.name().to_string());
        }
        config.validate()?;
        let registry = Registry::build(&config, &self.agents, self.chat.as_ref())?;
        let lineage = crate::lineage::Authority::new(&config.lineage, &config.trust)
            .map_err(|e| DelegationError::invalid(format!("invalid configuration: {e}")))?;
        let keeps_lineage = config.agents.iter().any(|a| a.backend.peer().is_some());
        // a queue's answers are checked against its workers' key only when it is trusted
        for a in &config.agents {
            if let crate::config::Backend::Queue { peer, .. } = &a.backend
                && !lineage.checks_answers_of(peer)
            {
                tracing::warn!(
                    agent = %a.slug,
                    "the answers of '{peer}' (the workers of agent '{}') are taken unchecked: no [[trust]] entry \
                     names '{peer}', so anyone who may publish on the reply subjects could answer in its name",
                    a.slug
                );
            }
        }
        // what seals a tree's vault in the journal: a key file shared by the
        // processes on one store, or this process's own key
        let seal = match &config.pii.seal_key_file {
            Some(path) => crate::redact::SealKey::from_file(path)
                .map_err(|e| DelegationError::invalid(format!("invalid configuration: {e}")))?,
            None => crate::redact::SealKey::random(),
        };
        let store: Arc<dyn Store> = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let metrics = Metrics::new(config.agents.iter().map(|a| &a.slug), {
            let store = store.clone();
            move || store.write_stats()
        });
        Ok(Runtime {
            inner: Arc::new(Inner {
                // the breakers on file are loaded, and each change written, by a task of their own
                breakers: Breakers::stored(self.breaker, store.clone()),
                store,
                trees: Trees::new(),
                vaults: SessionVaults::default(),
                seal,
                resumed_vaults: Default::default(),
                decided: Default::default(),
                redactor: Redactor::new(),
                events: Events::default(),
                domains: DomainTable::from_config(&config),
                metrics,
                running: Default::default(),
                lineage,
                keeps_lineage,
                lease: Lease::new(Duration::from_millis(config.server.replica_lease_ms)),
                registry,
                config,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AgentContext, AgentOutput, Task};

    struct Nop;

    #[async_trait::async_trait]
    impl Agent for Nop {
        async fn run(&self, _: &AgentContext, _: &Task) -> Result<AgentOutput, DelegationError> {
            Ok(AgentOutput::new("", ""))
        }
    }

    #[test]
    fn a_malformed_slug_or_an_undeclared_agent_is_refused_at_build() {
        let err = Runtime::builder().agent("Not A Slug", Nop).build().expect_err("refused");
        assert!(err.message.contains("Not A Slug"), "{}", err.message);
        let err = Runtime::builder().agent("ghost", Nop).build().expect_err("refused");
        assert!(err.message.contains("ghost"), "{}", err.message);
        assert!(Runtime::builder().agent("tag-ai", Nop).build().is_ok());
    }
}
