//! The seeds' finance team: byte-doc, tag-ai, crystal-analytics, ledger-tax,
//! goalie-goals and blitz-debt. Deterministic: no model, no network.
//!
//! They share one transaction shape ([`transactions::Transaction`]) and one way
//! of finding transactions in a task ([`transactions::from_task`]); amounts are
//! integer cents ([`money`]).

pub mod blitz;
pub mod byte_doc;
pub mod crystal;
pub mod dates;
pub mod goalie;
pub mod ledger;
pub mod money;
pub mod tag_ai;
pub mod transactions;

use std::sync::Arc;

use crate::agent::Agent;
use crate::protocol::{DelegationError, ErrorCode};

/// The finance agent called `name`, if there is one.
pub fn lookup(name: &str) -> Option<Arc<dyn Agent>> {
    let agent: Arc<dyn Agent> = match name {
        "byte-doc" => Arc::new(byte_doc::ByteDoc),
        "tag-ai" => Arc::new(tag_ai::TagAi),
        "crystal-analytics" => Arc::new(crystal::CrystalAnalytics),
        "ledger-tax" => Arc::new(ledger::LedgerTax),
        "goalie-goals" => Arc::new(goalie::GoalieGoals),
        "blitz-debt" => Arc::new(blitz::BlitzDebt),
        _ => return None,
    };
    Some(agent)
}

fn failed(message: impl Into<String>) -> DelegationError {
    DelegationError::new(ErrorCode::AgentFailed, message)
}

/// The failure of an agent that found no transactions to work on.
fn failed_no_transactions(verb: &str) -> DelegationError {
    failed(format!(
        "no transactions to {verb}: expected an earlier step's 'transactions' artifact, a CSV statement \
         (date, description, amount), receipt text with a TOTAL line, or lines like '2025-10-09 Starbucks 45.99'"
    ))
}

/// One line per item, at most 50, then how many were left out.
fn list_lines(items: impl Iterator<Item = String>) -> String {
    const SHOWN: usize = 50;
    let mut lines = Vec::new();
    let mut hidden = 0usize;
    for item in items {
        if lines.len() < SHOWN {
            lines.push(item);
        } else {
            hidden += 1;
        }
    }
    if hidden > 0 {
        lines.push(format!("... and {hidden} more"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finance_lookup_knows_the_team() {
        for slug in [
            "byte-doc",
            "tag-ai",
            "crystal-analytics",
            "ledger-tax",
            "goalie-goals",
            "blitz-debt",
        ] {
            assert!(lookup(slug).is_some(), "{slug}");
        }
        assert!(lookup("prime-boss").is_none());
        assert!(lookup("").is_none());
    }
}
