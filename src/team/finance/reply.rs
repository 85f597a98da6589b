//! What the finance agents' answers share: the `NEEDS_INPUT` question they
//! ask when the input lacks what they need (their only failure: they are
//! deterministic), and result text that lists at most 50 items.

use crate::protocol::{DelegationError, ErrorCode};

/// A `NEEDS_INPUT` answer: what the input lacks, as the question to ask the
/// user. The caller's to answer, so it is never retried.
pub(super) fn needs_input(question: impl Into<String>) -> DelegationError {
    DelegationError::new(ErrorCode::NeedsInput, question)
}

/// The question of an agent that found no transactions to work on; the
/// same words from every agent, so Prime asks it once.
pub(super) fn no_transactions() -> DelegationError {
    needs_input(
        "I don't have any transactions yet: upload a statement or receipt (--file statement.csv), paste the \
         receipt text, or tell me lines like '2025-10-09 Starbucks 45.99'.",
    )
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
