//! The time a question is about, as people say it: `last month`, `this
//! year`, `in October`, `October 2025`, `so far this month`, `last 30 days`.
//! Relative words count from the day the question is asked.

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::Regex;

use super::dates;

/// A span of days, both ends included, and how to say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Period {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub label: String,
    /// A month named without its year (`in October`): an earlier year's
    /// may be meant when the latest one has nothing.
    pub flexible: bool,
}

impl Period {
    pub(crate) fn contains(&self, day: NaiveDate) -> bool {
        self.from <= day && day <= self.to
    }

    /// The same month `years` years earlier (for a [`Period::flexible`] one).
    pub(crate) fn years_back(&self, years: i32) -> Option<Period> {
        use chrono::Datelike;
        let m = (self.from.year() - years, self.from.month());
        let (from, to) = month_span(m)?;
        Some(Period { from, to, label: format!("{} {}", month_name(m.1), m.0), flexible: false })
    }
}

static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(this|last|previous|past)\s+(week|month|year)\b|\b(?:last|past)\s+(\d{1,3})\s+days\b|\bytd\b|\byear to date\b|\btoday\b|\byesterday\b")
        .expect("valid regex")
});
static NAMED_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:in|for|during|of|on)\s+(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b(?:,?\s+(\d{4}))?")
        .expect("valid regex")
});
static YEAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:in|for|during|of)\s+(20\d{2}|19\d{2})\b").expect("valid regex"));

fn month_span((y, m): (i32, u32)) -> Option<(NaiveDate, NaiveDate)> {
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    let (ny, nm) = dates::add_months((y, m), 1);
    Some((first, NaiveDate::from_ymd_opt(ny, nm, 1)? - Duration::days(1)))
}

fn year_span(y: i32) -> Option<(NaiveDate, NaiveDate)> {
    Some((NaiveDate::from_ymd_opt(y, 1, 1)?, NaiveDate::from_ymd_opt(y, 12, 31)?))
}

fn month_name(m: u32) -> &'static str {
    u8::try_from(m).ok().and_then(|m| chrono::Month::try_from(m).ok()).map_or("?", |m| m.name())
}

/// The period `text` names, counted from `today`; None when it names none.
/// A month named without a year is its latest occurrence up to today.
pub(crate) fn find(text: &str, today: NaiveDate) -> Option<Period> {
    let make = |(from, to): (NaiveDate, NaiveDate), label: String| {
        Some(Period { from, to: to.min(today), label, flexible: false })
    };
    if let Some(c) = RELATIVE.captures(text) {
        let word = c.get(0).map_or("", |m| m.as_str()).to_lowercase();
        if let Some(n) = c.get(3).and_then(|n| n.as_str().parse::<i64>().ok()) {
            return make((today - Duration::days(n.max(1) - 1), today), format!("the last {n} days"));
        }
        let this = (today.year(), today.month());
        return match (c.get(1).map(|m| m.as_str().to_lowercase()), c.get(2).map(|m| m.as_str().to_lowercase())) {
            (Some(which), Some(unit)) => {
                let back = i64::from(which != "this");
                match unit.as_str() {
                    "month" => {
                        let m = dates::add_months(this, -back);
                        make(month_span(m)?, format!("{} {}", month_name(m.1), m.0))
                    }
                    "year" => {
                        let y = today.year() - back as i32;
                        let label = if back == 0 { format!("{y} so far") } else { y.to_string() };
                        make(year_span(y)?, label)
                    }
                    _ => {
                        let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
                        let start = monday - Duration::weeks(back);
                        let label = if back == 0 { "this week" } else { "last week" };
                        make((start, start + Duration::days(6)), label.to_string())
                    }
                }
            }
            _ if word == "today" => make((today, today), "today".into()),
            _ if word == "yesterday" => {
                let d = today - Duration::days(1);
                make((d, d), "yesterday".into())
            }
            _ => make(year_span(today.year())?, format!("{} so far", today.year())),
        };
    }
    if let Some(c) = NAMED_MONTH.captures(text) {
        let m = dates::month_number(&c[1])?;
        let given = c.get(2).and_then(|y| y.as_str().parse().ok());
        let y = match given {
            Some(y) => y,
            None if m <= today.month() => today.year(),
            None => today.year() - 1,
        };
        let mut p = make(month_span((y, m))?, format!("{} {y}", month_name(m)))?;
        p.flexible = given.is_none();
        return Some(p);
    }
    let y: i32 = YEAR.captures(text)?[1].parse().ok()?;
    make(year_span(y)?, y.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("a date")
    }

    fn span(text: &str) -> Option<(NaiveDate, NaiveDate, String)> {
        find(text, day(2026, 1, 14)).map(|p| (p.from, p.to, p.label))
    }

    #[test]
    fn relative_periods_count_from_today_across_a_year_end() {
        assert_eq!(
            span("How much on dining last month?"),
            Some((day(2025, 12, 1), day(2025, 12, 31), "December 2025".into()))
        );
        assert_eq!(span("spent this month"), Some((day(2026, 1, 1), day(2026, 1, 14), "January 2026".into())));
        assert_eq!(
            span("biggest categories this year?"),
            Some((day(2026, 1, 1), day(2026, 1, 14), "2026 so far".into()))
        );
        assert_eq!(span("and last year"), Some((day(2025, 1, 1), day(2025, 12, 31), "2025".into())));
        assert_eq!(span("in the last 30 days"), Some((day(2025, 12, 16), day(2026, 1, 14), "the last 30 days".into())));
        // 2026-01-14 is a Wednesday
        assert_eq!(span("last week"), Some((day(2026, 1, 5), day(2026, 1, 11), "last week".into())));
    }

    #[test]
    fn a_named_month_is_its_latest_occurrence_unless_a_year_is_given() {
        assert_eq!(
            span("What did I spend in October?"),
            Some((day(2025, 10, 1), day(2025, 10, 31), "October 2025".into()))
        );
        assert_eq!(span("in January"), Some((day(2026, 1, 1), day(2026, 1, 14), "January 2026".into())));
        assert_eq!(span("for Feb 2024"), Some((day(2024, 2, 1), day(2024, 2, 29), "February 2024".into())));
        assert_eq!(span("taxes for 2025"), Some((day(2025, 1, 1), day(2025, 12, 31), "2025".into())));
    }

    #[test]
    fn a_question_without_a_time_names_no_period() {
        assert_eq!(span("What did I spend at Office Depot?"), None);
        assert_eq!(span("Which of these can I deduct?"), None);
        assert_eq!(span("may I ask something"), None);
    }
}
