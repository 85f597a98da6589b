//! What serde cannot check in a configuration: unique slugs, references
//! to known agents, sane limits, bounded examples, compilable route
//! patterns, acyclic workflows.

use std::collections::{BTreeMap, BTreeSet};

use super::{Config, PlanKind};
use crate::protocol::DelegationError;

/// Examples one agent may have: the router learns from every one of them.
const MAX_EXAMPLES: usize = 1_000;
/// The longest example: a request, not a document.
const MAX_EXAMPLE_BYTES: usize = 500;

impl Config {
    /// Checks what serde cannot: unique slugs, references to known agents,
    /// sane limits, compilable route patterns and acyclic workflows.
    pub fn validate(&self) -> Result<(), DelegationError> {
        let bad = |msg: String| Err(DelegationError::invalid(format!("invalid configuration: {msg}")));
        let l = &self.limits;
        if l.max_depth == 0 || l.max_depth > l.max_depth_ceiling {
            return bad(format!(
                "limits.max_depth {} must be between 1 and max_depth_ceiling {}",
                l.max_depth, l.max_depth_ceiling
            ));
        }
        if l.fan_out == 0 {
            return bad("limits.fan_out must be at least 1".into());
        }
        if l.deadline_ms == 0 || l.deadline_ms > l.max_deadline_ms {
            return bad(format!(
                "limits.deadline_ms {} must be between 1 and max_deadline_ms {}",
                l.deadline_ms, l.max_deadline_ms
            ));
        }
        if l.deadline_margin_ms >= l.deadline_ms {
            return bad("limits.deadline_margin_ms must be smaller than deadline_ms".into());
        }
        if l.max_tokens == 0 || l.max_tokens > l.max_tokens_ceiling || l.ask_max_tokens == 0 {
            return bad(format!(
                "limits.max_tokens {} must be between 1 and max_tokens_ceiling {}",
                l.max_tokens, l.max_tokens_ceiling
            ));
        }
        if self.server.max_in_flight == 0 {
            return bad("server.max_in_flight must be at least 1".into());
        }
        let q = &self.queue;
        if !super::QueueConfig::is_nats_url(&q.url) {
            return bad(format!("queue.url must be a NATS URL like nats://127.0.0.1:4222, not '{}'", q.url));
        }
        for (name, hours) in [
            ("work_retention_hours", q.work_retention_hours),
            ("reply_retention_hours", q.reply_retention_hours),
            ("dead_retention_hours", q.dead_retention_hours),
        ] {
            if !(1..=8_760).contains(&hours) {
                return bad(format!("queue.{name} must be between 1 and 8760, not {hours}"));
            }
        }
        if !(1..=100).contains(&q.max_deliver) {
            return bad(format!("queue.max_deliver must be between 1 and 100, not {}", q.max_deliver));
        }
        if !(1_000..=600_000).contains(&q.ack_wait_ms) {
            return bad(format!("queue.ack_wait_ms must be between 1000 and 600000 (ms), not {}", q.ack_wait_ms));
        }
        if !(1_000..=600_000).contains(&self.server.replica_lease_ms) {
            return bad(format!(
                "server.replica_lease_ms must be between 1000 and 600000 (ms), not {}",
                self.server.replica_lease_ms
            ));
        }
        if self.server.work_threads > 1_024 {
            return bad(format!(
                "server.work_threads must be between 0 (one per core) and 1024, not {}",
                self.server.work_threads
            ));
        }
        match self.prime.planner.as_str() {
            "rules" => {}
            "llm" if self.llm.base_url.is_some() && self.llm.model.is_some() => {}
            "llm" => return bad("prime.planner = \"llm\" needs [llm] base_url and model".into()),
            other => return bad(format!("prime.planner is '{other}'; use \"rules\" or \"llm\"")),
        }
        let mut seen = BTreeMap::new();
        for a in &self.agents {
            if a.slug.is_auto() {
                return bad("'auto' is reserved for discovery and cannot be an agent's slug".into());
            }
            if seen.insert(a.slug.as_str(), ()).is_some() {
                return bad(format!("agent '{}' is declared twice", a.slug));
            }
        }
        let known = |s: &str| seen.contains_key(s);
        for a in &self.agents {
            let llm_prime = matches!(&a.backend, super::Backend::Builtin { name }
                if super::BUILTIN_PRIME.contains(&name.as_deref().unwrap_or(a.slug.as_str())))
                && self.prime.planner == "llm";
            if !a.mcp.is_empty() && !matches!(a.backend, super::Backend::Llm { .. }) && !llm_prime {
                return bad(format!(
                    "agent '{}': [[agents.mcp]] gives tools to a model; its backend must be kind = \"llm\"",
                    a.slug
                ));
            }
            if a.examples.len() > MAX_EXAMPLES {
                return bad(format!(
                    "agent '{}' has {} examples; at most {MAX_EXAMPLES} (the router learns from all of them at start-up)",
                    a.slug,
                    a.examples.len()
                ));
            }
            if let Some(e) = a.examples.iter().find(|e| e.trim().is_empty() || e.len() > MAX_EXAMPLE_BYTES) {
                return bad(format!(
                    "agent '{}': every example must be a request of 1 to {MAX_EXAMPLE_BYTES} bytes, not {:?}",
                    a.slug,
                    e.chars().take(40).collect::<String>()
                ));
            }
            let mut names = BTreeSet::new();
            for m in &a.mcp {
                if let Some(why) = m.problem() {
                    return bad(format!("agent '{}': {why}", a.slug));
                }
                if !names.insert(m.name.as_str()) {
                    return bad(format!("agent '{}': mcp.name '{}' is declared twice", a.slug, m.name));
                }
            }
        }
        for a in &self.agents {
            for t in &a.may_delegate_to {
                if t != "*" && !known(t) {
                    return bad(format!("agent '{}' may_delegate_to unknown agent '{t}'", a.slug));
                }
            }
        }
        if let Some(a) = &self.prime.agent
            && !known(a.as_str())
        {
            return bad(format!("prime.agent names unknown agent '{a}'"));
        }
        for r in &self.prime.routes {
            if let Err(e) = regex::Regex::new(&r.pattern) {
                return bad(format!("route '{}' pattern does not compile: {e}", r.name));
            }
            for s in &r.agents {
                if !known(s.as_str()) {
                    return bad(format!("route '{}' names unknown agent '{s}'", r.name));
                }
            }
            match r.plan {
                PlanKind::Workflow => match &r.workflow {
                    Some(w) if self.workflow(w).is_some() => {}
                    _ => return bad(format!("route '{}' must name a declared workflow", r.name)),
                },
                _ => {
                    if r.agents.is_empty() || r.objectives.len() != r.agents.len() {
                        return bad(format!("route '{}' needs one objective per agent", r.name));
                    }
                }
            }
        }
        let mut domain_names = BTreeSet::new();
        for d in &self.domains {
            if !domain_names.insert(d.name.as_str()) {
                return bad(format!("domain '{}' is declared twice", d.name));
            }
            for a in &d.agents {
                if !known(a.as_str()) {
                    return bad(format!("domain '{}' names unknown agent '{a}'", d.name));
                }
            }
        }
        for d in &self.domains {
            for alt in &d.alternatives {
                let exists = domain_names.contains(alt.as_str())
                    || self.agents.iter().any(|a| a.domain.as_deref() == Some(alt.as_str()));
                if !exists || alt == &d.name {
                    return bad(format!(
                        "domain '{}' lists '{alt}' as an alternative, which is not another domain",
                        d.name
                    ));
                }
            }
        }
        for agent in self.auth.service_tokens.keys() {
            if !known(agent) {
                return bad(format!("auth.service_tokens names unknown agent '{agent}'"));
            }
        }
        for (agent, users) in self.auth.service_roots.iter().flatten() {
            if !known(agent) {
                return bad(format!("auth.service_roots names unknown agent '{agent}'"));
            }
            if let Some(u) = users.iter().find(|u| *u != "*" && crate::protocol::UserId::parse(u.as_str()).is_err()) {
                return bad(format!("auth.service_roots.{agent}: '{u}' is not a user id or \"*\""));
            }
        }
        for user in self.auth.user_tokens.keys() {
            if crate::protocol::UserId::parse(user.as_str()).is_err() {
                return bad(format!("auth.user_tokens: '{user}' is not a valid user id"));
            }
        }
        if let Some(u) = &self.a2a.anonymous_user
            && crate::protocol::UserId::parse(u.as_str()).is_err()
        {
            return bad(format!("a2a.anonymous_user: '{u}' is not a valid user id"));
        }
        if let Err(e) = self.a2a.push.validate() {
            return bad(e);
        }
        if let Some(u) = &self.mcp.anonymous_user
            && crate::protocol::UserId::parse(u.as_str()).is_err()
        {
            return bad(format!("mcp.anonymous_user: '{u}' is not a valid user id"));
        }
        let name = &self.lineage.name;
        if !super::valid_runtime_name(name) {
            return bad(format!("lineage.name '{name}' must be 1-64 letters, digits, '.', '_' or '-'"));
        }
        if let Some((a, peer)) =
            self.agents.iter().find_map(|a| a.backend.peer().filter(|p| !super::valid_runtime_name(p)).map(|p| (a, p)))
        {
            return bad(format!(
                "agent '{}': backend.peer '{peer}' must be the remote's lineage name (1-64 letters, digits, '.', '_' or '-')",
                a.slug
            ));
        }
        if !matches!(self.lineage.token_version, 1 | 2) {
            return bad(format!(
                "lineage.token_version must be 2 (the default) or 1 (for peers built before 2026-11-28), not {}",
                self.lineage.token_version
            ));
        }
        if self.lineage.key_dir.as_os_str().is_empty() {
            return bad("lineage.key_dir must name a directory, e.g. \"switchboard-keys\"".to_string());
        }
        if let Some(p) = &self.audit.anchor_file
            && p.file_name().is_none()
        {
            return bad(format!("audit.anchor_file '{}' must name a file, e.g. \"audit-anchor.json\"", p.display()));
        }
        for w in &self.workflows {
            let ids: BTreeSet<&str> = w.steps.iter().map(|s| s.id.as_str()).collect();
            if ids.len() != w.steps.len() {
                return bad(format!("workflow '{}' has duplicate step ids", w.name));
            }
            for s in &w.steps {
                if !known(s.agent.as_str()) {
                    return bad(format!("workflow '{}' step '{}' names unknown agent '{}'", w.name, s.id, s.agent));
                }
                for dep in &s.after {
                    if !ids.contains(dep.as_str()) {
                        return bad(format!("workflow '{}' step '{}' waits for unknown step '{dep}'", w.name, s.id));
                    }
                }
            }
            if w.levels().is_none() {
                return bad(format!("workflow '{}' has a cycle among its steps", w.name));
            }
        }
        Ok(())
    }
}
