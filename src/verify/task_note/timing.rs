//! Calendar timing in a note: durations (`2 hours`, `half an hour`) and start
//! times (`from now`, `tomorrow at 9am`, `2025-10-22 14:00`).

use std::sync::LazyLock;

use regex::Regex;

use super::spec::EventFields;
use crate::verify::text::{DATE_PATTERN, re};

static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:for\s+)?(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|eight|half an?)[\s-]*(hours?|hrs?|hr|h|minutes?|mins?)\b",
    )
});

/// Minutes in `2 hours`, `90 minutes`, `1.5 hrs`, `a 2-hour`, `half an hour`.
pub(crate) fn parse_duration(s: &str) -> Option<u32> {
    let c = DURATION.captures(s)?;
    let n = c.get(1)?.as_str().to_ascii_lowercase();
    let amount: f64 = match n.as_str() {
        "a" | "an" | "one" => 1.0,
        "two" => 2.0,
        "three" => 3.0,
        "four" => 4.0,
        "five" => 5.0,
        "six" => 6.0,
        "eight" => 8.0,
        "half a" | "half an" => 0.5,
        digits => digits.parse().ok()?,
    };
    let unit = c.get(2)?.as_str().to_ascii_lowercase();
    let minutes = if unit.starts_with('h') { amount * 60.0 } else { amount };
    // Up to a week: anything longer is not a calendar block.
    (1.0..=7.0 * 24.0 * 60.0).contains(&minutes).then_some(minutes.round() as u32)
}

/// `Block calendar for 2 hours from now` → 120 minutes starting `now`.
pub(super) fn apply_timing(event: &mut EventFields, clause: &str) {
    if let Some(m) = DURATION.find(clause) {
        event.duration_minutes = parse_duration(m.as_str());
        let after = clause[m.end()..].trim();
        let start = after
            .trim_start_matches(|c: char| c == ',' || c.is_whitespace())
            .trim_start_matches("starting ")
            .trim_start_matches("beginning ");
        if !start.is_empty() {
            event.start = Some(start.to_string());
        }
    }
    if event.start.is_none()
        && let Some(m) = START_IN_CLAUSE.find(clause)
    {
        event.start = Some(m.as_str().trim().to_string());
    }
}

static START_IN_CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:(?:from |right )?now\b|(?:\d{{4}}-\d{{2}}-\d{{2}}[ T]\d{{1,2}}:\d{{2}}|today|tomorrow|{DATE_PATTERN})(?:\s+at\s+\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm)?)?)"
    ))
});

#[cfg(test)]
mod tests {
    use super::super::spec::TaskSpec;

    #[test]
    fn explicit_start_times_are_kept_for_the_agent() {
        let spec = TaskSpec::parse("Schedule a focus session for 90 minutes tomorrow at 9am. Title: Review").unwrap();
        assert_eq!(spec.context.event.duration_minutes, Some(90));
        assert_eq!(spec.context.event.start.as_deref(), Some("tomorrow at 9am"));
        let spec = TaskSpec::parse("Block calendar on 2025-10-22 14:00. Duration: 1.5 hours").unwrap();
        assert_eq!(spec.context.event.start.as_deref(), Some("2025-10-22 14:00"));
        assert_eq!(spec.context.event.duration_minutes, Some(90));
    }
}
