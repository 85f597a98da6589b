//! What the finance agents' phrasing tables share: a row wants either what
//! the agent reads from a phrasing or the `NEEDS_INPUT` question it must
//! raise; every row is judged and the wrong ones are listed together.

use std::fmt::Debug;

use serde_json::Value;

use super::money::{self, Cents};
use crate::agent::AgentOutput;
use crate::protocol::{DelegationError, ErrorCode};

/// What a phrasing should give: what the agent reads (compared by the
/// table), or a `NEEDS_INPUT` question containing these words.
pub(super) enum Want<T> {
    Reads(T),
    Asks(&'static str),
}

/// The rows a table got wrong, each with what it got.
#[derive(Default)]
pub(super) struct Wrong(Vec<String>);

impl Wrong {
    /// Judges one row: a read answer by `reads` (`Err` with what was read
    /// when it differs), a question by its code and words.
    pub(super) fn judge<T>(
        &mut self,
        row: impl Debug,
        want: &Want<T>,
        got: &Result<AgentOutput, DelegationError>,
        reads: impl FnOnce(&T, &AgentOutput) -> Result<(), String>,
    ) {
        let verdict = match (want, got) {
            (Want::Reads(expected), Ok(out)) => reads(expected, out),
            (Want::Asks(words), Err(e)) if e.code == ErrorCode::NeedsInput && e.message.contains(words) => Ok(()),
            (_, other) => Err(format!("{:?}", other.as_ref().map(|o| &o.summary).map_err(|e| &e.message))),
        };
        if let Err(actual) = verdict {
            self.0.push(format!("{row:?}: got {actual}"));
        }
    }

    /// Fails listing every wrong row of the `rows` judged.
    pub(super) fn assert_none(self, rows: usize) {
        assert!(self.0.is_empty(), "{} of {rows} rows wrong:\n{}", self.0.len(), self.0.join("\n"));
    }
}

/// Whether the `transactions` read are `expected`, each as (merchant, cents,
/// the `third` field); `Err` with what was read when not.
pub(super) fn same_transactions(ts: &Value, third: &str, expected: &[(&str, Cents, &str)]) -> Result<(), String> {
    let actual: Vec<(String, Cents, String)> = ts
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            (
                t["merchant"].as_str().unwrap_or_default().to_string(),
                money::from_value(&t["amount"]).unwrap_or(0),
                t[third].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, Cents, String)> =
        expected.iter().map(|(m, c, x)| (m.to_string(), *c, x.to_string())).collect();
    (actual == expected).then_some(()).ok_or(format!("{actual:?}"))
}
