//! Domain routing: a table of domains, each with its member
//! agents (replicas that share the load, round-robin or least-busy) and the
//! alternative domains to ask when the caller itself belongs to the domain.
//! Members whose circuit breaker is open are passed over.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::{Balance, Config};
use crate::protocol::{AgentSlug, DelegationError, ErrorCode};

struct Entry {
    members: Vec<AgentSlug>,
    alternatives: Vec<String>,
    balance: Balance,
    next: AtomicUsize,
}

/// The routing table, built once from the config.
#[derive(Default)]
pub(crate) struct DomainTable {
    domains: BTreeMap<String, Entry>,
}

impl DomainTable {
    pub(crate) fn from_config(config: &Config) -> Self {
        let mut domains: BTreeMap<String, Entry> = BTreeMap::new();
        let entry =
            |balance, alternatives| Entry { members: Vec::new(), alternatives, balance, next: AtomicUsize::new(0) };
        for d in &config.domains {
            let mut e = entry(d.balance, d.alternatives.clone());
            e.members = d.agents.clone();
            domains.insert(d.name.clone(), e);
        }
        for a in &config.agents {
            let Some(name) = &a.domain else { continue };
            let e = domains.entry(name.clone()).or_insert_with(|| entry(Balance::RoundRobin, Vec::new()));
            let declared = config.domains.iter().any(|d| &d.name == name && !d.agents.is_empty());
            if !declared && !e.members.contains(&a.slug) {
                e.members.push(a.slug.clone());
            }
        }
        Self { domains }
    }

    /// The agent to send a `domain` query from `origin` (of `origin_domain`) to.
    /// A query into the caller's own domain goes to an alternative domain, or
    /// fails clearly when there is none. `busy` gives an agent's delegations in
    /// flight; `available` is false while its breaker is open.
    pub(crate) fn pick(
        &self,
        domain: &str,
        origin: &AgentSlug,
        origin_domain: Option<&str>,
        busy: impl Fn(&AgentSlug) -> u32,
        available: impl Fn(&AgentSlug) -> bool,
    ) -> Result<AgentSlug, DelegationError> {
        let entry = self.domains.get(domain).ok_or_else(|| {
            let known: Vec<&str> = self.domains.keys().map(String::as_str).collect();
            DelegationError::new(
                ErrorCode::AgentNotFound,
                format!("no domain '{domain}' is configured; known domains: {}", known.join(", ")),
            )
        })?;
        if origin_domain == Some(domain) {
            // no agent asks its own domain for a second opinion
            for alt in &entry.alternatives {
                if let Ok(agent) = self.pick_in(alt, origin, &busy, &available) {
                    return Ok(agent);
                }
            }
            return Err(DelegationError::new(
                ErrorCode::AgentNotFound,
                format!(
                    "'{origin}' is itself in domain '{domain}' and no alternative domain has an available agent{}",
                    if entry.alternatives.is_empty() { " (none is configured)" } else { "" }
                ),
            ));
        }
        self.pick_in(domain, origin, &busy, &available)
    }

    fn pick_in(
        &self,
        domain: &str,
        origin: &AgentSlug,
        busy: &impl Fn(&AgentSlug) -> u32,
        available: &impl Fn(&AgentSlug) -> bool,
    ) -> Result<AgentSlug, DelegationError> {
        let entry = self.domains.get(domain).ok_or_else(|| {
            DelegationError::new(ErrorCode::AgentNotFound, format!("no domain '{domain}' is configured"))
        })?;
        let candidates: Vec<&AgentSlug> = entry.members.iter().filter(|a| *a != origin && available(a)).collect();
        if candidates.is_empty() {
            return Err(DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!(
                    "no agent of domain '{domain}' is available (all are the caller or have an open circuit breaker)"
                ),
            ));
        }
        let chosen = match entry.balance {
            Balance::LeastBusy => {
                // ties go round-robin so that idle replicas share the work
                let start = entry.next.fetch_add(1, Ordering::Relaxed);
                let n = candidates.len();
                (0..n).map(|i| candidates[(start + i) % n]).min_by_key(|a| busy(a)).unwrap_or(candidates[0])
            }
            _ => candidates[entry.next.fetch_add(1, Ordering::Relaxed) % candidates.len()],
        };
        Ok(chosen.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEAM: &str = r#"
[[agents]]
slug = "ledger-a"
name = "Ledger A"
domain = "tax"
[[agents]]
slug = "ledger-b"
name = "Ledger B"
domain = "tax"
[[agents]]
slug = "crystal"
name = "Crystal"
domain = "analytics"
[[agents]]
slug = "tag"
name = "Tag"
domain = "transactions"

[[domains]]
name = "tax"
alternatives = ["analytics"]
balance = "round_robin"

[[domains]]
name = "analytics"
balance = "least_busy"
"#;

    fn slug(s: &str) -> AgentSlug {
        AgentSlug::parse(s).unwrap()
    }

    fn table() -> DomainTable {
        DomainTable::from_config(&Config::from_toml(TEAM).unwrap())
    }

    #[test]
    fn round_robin_alternates_between_replicas() {
        let t = table();
        let picks: Vec<String> = (0..4)
            .map(|_| t.pick("tax", &slug("tag"), Some("transactions"), |_| 0, |_| true).unwrap().to_string())
            .collect();
        assert_eq!(picks, ["ledger-a", "ledger-b", "ledger-a", "ledger-b"]);
    }

    #[test]
    fn least_busy_picks_the_idlest_replica() {
        let cfg = Config::from_toml(&TEAM.replace("balance = \"round_robin\"", "balance = \"least_busy\"")).unwrap();
        let t = DomainTable::from_config(&cfg);
        let busy = |a: &AgentSlug| if a.as_str() == "ledger-a" { 5 } else { 1 };
        for _ in 0..3 {
            assert_eq!(t.pick("tax", &slug("tag"), None, busy, |_| true).unwrap().as_str(), "ledger-b");
        }
    }

    #[test]
    fn a_query_to_ones_own_domain_goes_to_an_alternative() {
        let t = table();
        let a = t.pick("tax", &slug("ledger-a"), Some("tax"), |_| 0, |_| true).unwrap();
        assert_eq!(a.as_str(), "crystal");
    }

    #[test]
    fn without_an_alternative_the_own_domain_query_fails_clearly() {
        let t = table();
        let err = t.pick("analytics", &slug("crystal"), Some("analytics"), |_| 0, |_| true).unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentNotFound);
        assert!(err.message.contains("none is configured"), "{}", err.message);
    }

    #[test]
    fn replicas_with_an_open_breaker_are_passed_over() {
        let t = table();
        for _ in 0..3 {
            let a = t.pick("tax", &slug("tag"), None, |_| 0, |a| a.as_str() != "ledger-a").unwrap();
            assert_eq!(a.as_str(), "ledger-b");
        }
        let err = t.pick("tax", &slug("tag"), None, |_| 0, |_| false).unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentUnavailable);
        assert_eq!(t.pick("nowhere", &slug("tag"), None, |_| 0, |_| true).unwrap_err().code, ErrorCode::AgentNotFound);
    }
}
