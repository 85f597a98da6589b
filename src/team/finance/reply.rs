//! What the finance agents' answers share: the `AGENT_FAILED` error they fail
//! with, and result text that lists at most 50 items.

use crate::protocol::{DelegationError, ErrorCode};

/// An `AGENT_FAILED` error saying what went wrong.
pub(super) fn failed(message: impl Into<String>) -> DelegationError {
    DelegationError::new(ErrorCode::AgentFailed, message)
}

/// The failure of an agent that found no transactions to work on.
pub(super) fn failed_no_transactions(verb: &str) -> DelegationError {
    failed(format!(
        "no transactions to {verb}: expected an earlier step's 'transactions' artifact, a CSV statement \
         (date, description, amount), receipt text with a TOTAL line, or lines like '2025-10-09 Starbucks 45.99'"
    ))
}

/// One line per item, at most 50, then how many were left out.
pub(super) fn list_lines(items: impl Iterator<Item = String>) -> String {
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
