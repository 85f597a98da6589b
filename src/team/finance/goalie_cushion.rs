//! Goalie's second approach, a month to spare: each goal with a deadline is
//! planned to be reached a month before it (a late or skipped deposit does
//! not miss it), the monthly amount it needs rounded up to whole units of the
//! currency, and a goal is on track only when the pace meets that amount.

use serde_json::Value;

use super::super::money::{self, Cents};
use super::{GoalStatus, Progress};
use crate::agent::AgentOutput;

/// The note the answer carries under this approach.
pub(crate) const NOTE: &str = "Planned with a month to spare: each goal is reached a month before its deadline, the monthly amount rounded up to a whole unit.";

/// `p` planned to be reached a month before its deadline (by the deadline
/// when only a month is left), the required amount in whole units.
pub(crate) fn cushioned(mut p: Progress) -> Progress {
    let Some(left) = p.months_left.filter(|l| *l > 0) else { return p };
    if p.remaining == 0 {
        return p;
    }
    let months = if left > 1 { left - 1 } else { left };
    let required = money::div_ceil(p.remaining, months).unwrap_or(p.remaining);
    let required: Cents = money::div_ceil(required, 100).unwrap_or(0) * 100;
    p.required_monthly = Some(required);
    p.status = if p.goal.monthly >= required { GoalStatus::OnTrack } else { GoalStatus::Behind };
    p
}

/// The answer with the note, each goal of its `goals` artifact marked as
/// planned with a month to spare.
pub(crate) fn marked(mut out: AgentOutput) -> AgentOutput {
    out.result.push_str(&format!("\n{NOTE}"));
    let goals = out.artifacts.iter_mut().filter(|a| a.label.as_deref() == Some("goals"));
    for g in goals.flat_map(|a| a.value.as_array_mut().into_iter().flatten()).filter_map(Value::as_object_mut) {
        g.insert("plan".into(), Value::from("month_to_spare"));
    }
    out
}
