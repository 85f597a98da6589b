//! Dates as receipts, statements and people write them.

use std::ops::Range;
use std::sync::LazyLock;

use chrono::{Datelike, NaiveDate};
use regex::Regex;

const MONTH: &str = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?";

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static ISO: LazyLock<Regex> = LazyLock::new(|| regex(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:T|\b)"));
static NUMERIC: LazyLock<Regex> = LazyLock::new(|| regex(r"\b(\d{1,2})[-/.](\d{1,2})[-/.](\d{4}|\d{2})\b"));
static MONTH_FIRST: LazyLock<Regex> =
    LazyLock::new(|| regex(&format!(r"(?i)\b{MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")));
static DAY_FIRST: LazyLock<Regex> =
    LazyLock::new(|| regex(&format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?[\s-]+{MONTH}[\s,-]+(\d{{4}}|\d{{2}})\b")));
static YEAR_MONTH: LazyLock<Regex> = LazyLock::new(|| regex(r"\b(\d{4})[-/](\d{1,2})\b"));
static MONTH_YEAR_NUM: LazyLock<Regex> = LazyLock::new(|| regex(r"\b(\d{1,2})/(\d{4})\b"));
static MONTH_YEAR: LazyLock<Regex> = LazyLock::new(|| regex(&format!(r"(?i)\b{MONTH},?\s+(\d{{4}})\b")));

/// The number of a month name or abbreviation (`Oct`, `october`).
pub(crate) fn month_number(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    let names = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    names.iter().position(|m| lower.starts_with(m)).and_then(|i| u32::try_from(i + 1).ok())
}

fn year(raw: &str) -> Option<i32> {
    let y: i32 = raw.parse().ok()?;
    let y = if raw.len() == 2 { 2000 + y } else { y };
    (1900..=2200).contains(&y).then_some(y)
}

fn num(raw: &str) -> Option<u32> {
    raw.parse().ok()
}

/// The first date in `text` and where it is: ISO (`2025-10-09`), numeric
/// (`10/09/2025` is month first, as in the US, unless the first number cannot
/// be a month: `25/10/2025`), `Oct 9, 2025` and `9 Oct 2025`.
pub(crate) fn find_date(text: &str) -> Option<(NaiveDate, Range<usize>)> {
    find_date_ordered(text, false)
}

/// Whether a text writes numeric dates day first: one of them cannot be
/// month first (`14/03/2025`), so `03/04/2025` in the same text is 3 April.
/// Dotted dates (`03.10.2025`) are day first too, unless one cannot be
/// (`10.14.2025`).
pub(crate) fn day_first(text: &str) -> bool {
    let parts = |c: &regex::Captures| (num(&c[1]).unwrap_or(0), num(&c[2]).unwrap_or(0));
    let dates: Vec<(u32, u32, bool)> = NUMERIC
        .captures_iter(text)
        .take(MAX_SCANNED)
        .map(|c| {
            let (a, b) = parts(&c);
            (a, b, c.get(0).is_some_and(|m| m.as_str().contains('.')))
        })
        .collect();
    let month_first = dates.iter().any(|(a, b, _)| *a <= 12 && *b > 12);
    dates.iter().any(|(a, b, _)| *a > 12 && *b <= 12) || (!month_first && dates.iter().any(|(_, _, dotted)| *dotted))
}

/// [`day_first`], or, when nothing in the text says either way, the habit of
/// the currency's countries: day first everywhere but the US (and so for no
/// currency at all, month first).
pub(crate) fn day_first_for(text: &str, currency: &str) -> bool {
    let month_first = NUMERIC
        .captures_iter(text)
        .take(MAX_SCANNED)
        .any(|c| num(&c[1]).is_some_and(|a| a <= 12) && num(&c[2]).is_some_and(|b| b > 12));
    day_first(text) || (!month_first && matches!(currency, "GBP" | "EUR" | "AUD" | "NZD" | "CHF"))
}

/// Dates looked at to tell the order, enough for any statement.
const MAX_SCANNED: usize = 5000;

/// `parse_date`, reading `03/04/2025` day first when `day_first`.
pub(crate) fn parse_date_ordered(text: &str, day_first: bool) -> Option<NaiveDate> {
    find_date_ordered(text, day_first).map(|(d, _)| d)
}

/// `find_date`, reading numeric dates day first when `day_first` (see [`day_first`]).
pub(crate) fn find_date_ordered(text: &str, day_first: bool) -> Option<(NaiveDate, Range<usize>)> {
    let iso = ISO.captures_iter(text).find_map(|c| {
        let date = NaiveDate::from_ymd_opt(year(&c[1])?, num(&c[2])?, num(&c[3])?)?;
        Some((date, c.get(0)?.range()))
    });
    let numeric = NUMERIC.captures_iter(text).find_map(|c| {
        let (a, b, y) = (num(&c[1])?, num(&c[2])?, year(&c[3])?);
        let (month, day) = if a > 12 || (day_first && b <= 12) { (b, a) } else { (a, b) };
        Some((NaiveDate::from_ymd_opt(y, month, day)?, c.get(0)?.range()))
    });
    let month_first = MONTH_FIRST.captures_iter(text).find_map(|c| {
        let date = NaiveDate::from_ymd_opt(year(&c[3])?, month_number(&c[1])?, num(&c[2])?)?;
        Some((date, c.get(0)?.range()))
    });
    let day_first = DAY_FIRST.captures_iter(text).find_map(|c| {
        let date = NaiveDate::from_ymd_opt(year(&c[3])?, month_number(&c[2])?, num(&c[1])?)?;
        Some((date, c.get(0)?.range()))
    });
    [iso, numeric, month_first, day_first].into_iter().flatten().min_by_key(|(_, r)| r.start)
}

/// A date in any form `find_date` knows, or a JSON-ish `2025-10-09T12:00:00Z`.
pub(crate) fn parse_date(text: &str) -> Option<NaiveDate> {
    find_date(text).map(|(d, _)| d)
}

/// A year and month (`2026-12`, `12/2026`, `Dec 2026`, `December, 2026`) and
/// where it is; a full date counts too.
pub(crate) fn find_month(text: &str) -> Option<((i32, u32), Range<usize>)> {
    let full = find_date(text).map(|(d, r)| ((d.year(), d.month()), r));
    let ym = YEAR_MONTH.captures_iter(text).find_map(|c| {
        let (y, m) = (year(&c[1])?, num(&c[2])?);
        (1..=12).contains(&m).then_some(((y, m), c.get(0)?.range()))
    });
    let my_num = MONTH_YEAR_NUM.captures_iter(text).find_map(|c| {
        let (m, y) = (num(&c[1])?, year(&c[2])?);
        (1..=12).contains(&m).then_some(((y, m), c.get(0)?.range()))
    });
    let my =
        MONTH_YEAR.captures_iter(text).find_map(|c| Some(((year(&c[2])?, month_number(&c[1])?), c.get(0)?.range())));
    [full, ym, my_num, my].into_iter().flatten().min_by_key(|(_, r)| r.start)
}

/// Months from one (year, month) to another; negative when `to` is earlier.
pub(crate) fn months_between(from: (i32, u32), to: (i32, u32)) -> i64 {
    (i64::from(to.0) * 12 + i64::from(to.1)) - (i64::from(from.0) * 12 + i64::from(from.1))
}

/// (year, month) plus `n` months.
pub(crate) fn add_months(from: (i32, u32), n: i64) -> (i32, u32) {
    let total = i64::from(from.0) * 12 + i64::from(from.1) - 1 + n;
    (i32::try_from(total.div_euclid(12)).unwrap_or(i32::MAX), u32::try_from(total.rem_euclid(12) + 1).unwrap_or(1))
}

pub(crate) fn month_label((y, m): (i32, u32)) -> String {
    format!("{y:04}-{m:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> Option<NaiveDate> {
        NaiveDate::from_ymd_opt(y, m, day)
    }

    #[test]
    fn dates_parse_common_formats() {
        assert_eq!(parse_date("2025-10-09"), d(2025, 10, 9));
        assert_eq!(parse_date("Date: 10/09/2025 14:32"), d(2025, 10, 9));
        assert_eq!(parse_date("25/10/2025"), d(2025, 10, 25));
        assert_eq!(parse_date("Oct 9, 2025"), d(2025, 10, 9));
        assert_eq!(parse_date("October 9th 2025"), d(2025, 10, 9));
        assert_eq!(parse_date("9 Oct 2025"), d(2025, 10, 9));
        assert_eq!(parse_date("09-Oct-25"), d(2025, 10, 9));
        assert_eq!(parse_date("2025-10-09T12:00:00Z"), d(2025, 10, 9));
        assert_eq!(parse_date("13/13/2025"), None);
        assert_eq!(parse_date("no date here 45.99"), None);
        assert!(day_first("14/03/2025 Tesco 5.00\n03/04/2025 Boots 2.00") && !day_first("03/14/2025 04/03/2025"));
        assert_eq!(parse_date_ordered("03/04/2025", true), d(2025, 4, 3));
        assert_eq!(parse_date_ordered("03/14/2025", true), d(2025, 3, 14));
        assert!(day_first("03.10.2025") && !day_first("03.10.2025 10.14.2025"));
        assert!(day_first_for("01/10/2025", "GBP") && !day_first_for("01/10/2025", "USD"));
        assert!(!day_first_for("01/10/2025 01/14/2025", "EUR"));
    }

    #[test]
    fn dates_find_months_and_count_between() {
        assert_eq!(find_month("by 2026-12").map(|x| x.0), Some((2026, 12)));
        assert_eq!(find_month("by Dec 2026").map(|x| x.0), Some((2026, 12)));
        assert_eq!(find_month("by 06/2027").map(|x| x.0), Some((2027, 6)));
        assert_eq!(months_between((2025, 10), (2026, 12)), 14);
        assert_eq!(add_months((2025, 11), 3), (2026, 2));
        assert_eq!(month_label((2026, 2)), "2026-02");
    }
}
