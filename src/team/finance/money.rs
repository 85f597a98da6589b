//! Money as integer cents: parsing amounts the way people and banks write them,
//! detecting currencies and printing `$1,234.56`. Floating point is used only at
//! the JSON boundary.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::redact::mask_tokens;

/// An amount in hundredths of its currency unit.
pub(crate) type Cents = i64;

/// Larger amounts are treated as garbage rather than money (and keep sums far
/// from overflow).
const MAX_CENTS: Cents = 1_000_000_000_000;

/// How people say "a month" right after an amount (`300 a month`, `$50/mo`).
pub(crate) const PER_MONTH_AFTER: &[&str] =
    &["/month", "/mo", "per month", "a month", "monthly", "each month", "every month", "a mo", "/m"];

/// Parses one amount: `45.99`, `$1,234.56`, `-4.50`, `+4.50`, `(12.50)` (negative),
/// `12,50` and `1.234,56` (decimal comma), `€5`, `4,50 €`, `5.00 EUR`, `2.5k`. Anything
/// else in the string makes it fail.
pub(crate) fn parse_amount(raw: &str) -> Option<Cents> {
    let mut s = raw.trim();
    let mut negative = false;
    if let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        negative = true;
        s = inner.trim();
    }
    // Signs, codes and symbols come in any order (`-$4.50`, `$-4.50`, `USD 5`);
    // every round shortens `s`, so this ends.
    loop {
        let before = s.len();
        if let Some(rest) = s.strip_prefix(['-', '−']).or_else(|| s.strip_suffix('-')) {
            negative = !negative;
            s = rest.trim();
        }
        if let Some(rest) = s.strip_prefix('+') {
            s = rest.trim();
        }
        if let Some(rest) = CODES.iter().find_map(|c| s.strip_prefix(c.code).or_else(|| s.strip_suffix(c.code))) {
            s = rest.trim();
        }
        if let Some(rest) = SYMBOLS.iter().find_map(|(sym, _)| s.strip_prefix(sym).or_else(|| s.strip_suffix(sym))) {
            s = rest.trim();
        }
        if s.len() == before {
            break;
        }
    }
    let (s, scale) = match s.strip_suffix(['k', 'K']) {
        Some(rest) => (rest.trim(), 1000),
        None => (s, 1),
    };
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',' || c == ' ') {
        return None;
    }
    let s: String = s.chars().filter(|c| *c != ' ').collect();
    let cents = digits_to_cents(&s)?.checked_mul(scale)?;
    (cents <= MAX_CENTS).then_some(if negative { -cents } else { cents })
}

/// `1,234.56`, `1.234,56`, `12,50`, `1,234`, `1234.5` to cents. The last
/// separator is the decimal one when one or two digits follow it (or it is a
/// dot); other separators must group thousands.
fn digits_to_cents(s: &str) -> Option<Cents> {
    let last_sep = s.rfind(['.', ',']);
    let (int_part, frac) = match last_sep {
        Some(i) => {
            let frac = &s[i + 1..];
            let sep = s.as_bytes()[i];
            let is_decimal = (1..=2).contains(&frac.len()) || (sep == b'.' && frac.len() > 2 && !s[..i].contains('.'));
            if is_decimal { (&s[..i], frac) } else { (s, "") }
        }
        None => (s, ""),
    };
    if frac.contains([',', '.']) {
        return None;
    }
    // Grouped integer parts must use one separator with groups of three.
    let groups: Vec<&str> = int_part.split([',', '.']).collect();
    if groups.len() > 1 {
        let seps: Vec<char> = int_part.chars().filter(|c| *c == ',' || *c == '.').collect();
        let same_sep = seps.windows(2).all(|w| w[0] == w[1]);
        let well_grouped =
            groups.first().is_some_and(|g| (1..=3).contains(&g.len())) && groups.iter().skip(1).all(|g| g.len() == 3);
        if !same_sep || !well_grouped {
            return None;
        }
    }
    let whole: String = groups.concat();
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let whole: Cents = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    // Round extra fraction digits half up (`1234.567` is 1234.57).
    let frac_digits: Vec<i64> = frac.chars().filter_map(|c| c.to_digit(10)).map(i64::from).collect();
    let mut cents = frac_digits.first().copied().unwrap_or(0) * 10 + frac_digits.get(1).copied().unwrap_or(0);
    if frac_digits.get(2).is_some_and(|d| *d >= 5) {
        cents += 1;
    }
    whole.checked_mul(100)?.checked_add(cents)
}

/// Cents as a JSON number with at most two decimals (`45.99`).
pub(crate) fn to_value(cents: Cents) -> Value {
    serde_json::Number::from_f64(cents as f64 / 100.0).map_or(Value::Null, Value::Number)
}

/// An amount from JSON: a number (in currency units) or a string `parse_amount` reads.
pub(crate) fn from_value(value: &Value) -> Option<Cents> {
    match value {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let cents = (f * 100.0).round();
            (cents.is_finite() && cents.abs() <= MAX_CENTS as f64).then_some(cents as Cents)
        }
        Value::String(s) => parse_amount(s),
        _ => None,
    }
}

/// `$1,234.56`, `-€4.50`, `C$12.00`; currencies without a symbol print as `12.00 CHF`.
pub(crate) fn format(cents: Cents, currency: &str) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    let whole = (abs / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let number = format!("{grouped}.{:02}", abs % 100);
    match symbol(currency) {
        Some(sym) => format!("{sign}{sym}{number}"),
        None => format!("{sign}{number} {currency}"),
    }
}

struct CurrencyCode {
    code: &'static str,
    symbol: &'static str,
}

const CODES: &[CurrencyCode] = &[
    CurrencyCode { code: "USD", symbol: "$" },
    CurrencyCode { code: "CAD", symbol: "C$" },
    CurrencyCode { code: "AUD", symbol: "A$" },
    CurrencyCode { code: "NZD", symbol: "NZ$" },
    CurrencyCode { code: "EUR", symbol: "€" },
    CurrencyCode { code: "GBP", symbol: "£" },
    CurrencyCode { code: "CHF", symbol: "" },
    CurrencyCode { code: "MXN", symbol: "MX$" },
];

/// Currency symbols, the prefixed dollars before the bare `$`.
const SYMBOLS: [(&str, &str); 9] = [
    ("CA$", "CAD"),
    ("C$", "CAD"),
    ("A$", "AUD"),
    ("NZ$", "NZD"),
    ("US$", "USD"),
    ("MX$", "MXN"),
    ("€", "EUR"),
    ("£", "GBP"),
    ("$", "USD"),
];

/// The symbol `format` prints for a currency code, if it has one.
pub(crate) fn symbol(currency: &str) -> Option<&'static str> {
    CODES.iter().find(|c| c.code.eq_ignore_ascii_case(currency) && !c.symbol.is_empty()).map(|c| c.symbol)
}

/// The currency a text is written in: an ISO code wins over a symbol, and the
/// prefixed dollars (`C$`, `CA$`, `A$`) over a bare `$`. None when there is no clue.
pub(crate) fn detect_currency(text: &str) -> Option<&'static str> {
    static CODE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(USD|CAD|AUD|NZD|EUR|GBP|CHF|MXN)\b").expect("valid regex"));
    if let Some(m) = CODE.find(text) {
        return CODES.iter().find(|c| c.code == m.as_str()).map(|c| c.code);
    }
    SYMBOLS.iter().find(|(sym, _)| text.contains(sym)).map(|(_, code)| *code)
}

/// `part` as a percentage of `whole`, with one decimal.
pub(crate) fn percent(part: Cents, whole: Cents) -> f64 {
    if whole == 0 { 0.0 } else { (part as f64 * 1000.0 / whole as f64).round() / 10.0 }
}

/// `numerator / denominator` rounded half away from zero; 0 for a zero denominator.
pub(crate) fn div_round(numerator: i128, denominator: i128) -> i128 {
    if denominator == 0 {
        return 0;
    }
    let half = denominator.abs() / 2;
    if (numerator < 0) == (denominator < 0) {
        (numerator.abs() + half) / denominator.abs()
    } else {
        -((numerator.abs() + half) / denominator.abs())
    }
}

/// `a / b` rounded up, for positive values ("months needed").
pub(crate) fn div_ceil(a: Cents, b: Cents) -> Option<i64> {
    (b > 0).then(|| if a <= 0 { 0 } else { (a + b - 1) / b })
}

/// An amount inside prose (goals, debts): its byte range and meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Figure {
    pub start: usize,
    pub end: usize,
    /// Cents for money; hundredths of a percent for percentages (19.99% is 1999).
    pub value: i64,
    pub is_percent: bool,
}

/// The numbers in a line of prose: `$10,000`, `2.5k`, `500`, `19.99%`. Digits
/// glued to letters (`Q4`, `i7`) are not figures, nor the number of a PII
/// token (`<EMAIL_1>`: see [`mask_tokens`]).
pub(crate) fn figures(text: &str) -> Vec<Figure> {
    static NUM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)(?:(?:CA\$|C\$|A\$|NZ\$|US\$|\$|€|£)\s?)?\d[\d,]*(?:\.\d+)?(?:\s?k\b)?(?:\s?%)?")
            .expect("valid regex")
    });
    // Offsets in the masked text hold in `text`, and no figure reaches into a token.
    let text = &*mask_tokens(text);
    NUM.find_iter(text)
        .filter(|m| {
            let before = text[..m.start()].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '/' || c == '.')
        })
        .filter_map(|m| {
            let raw = m.as_str().trim().trim_end_matches(',');
            let end = m.start() + m.as_str().trim_end().trim_end_matches(',').len();
            if let Some(p) = raw.strip_suffix('%') {
                let value = parse_amount(p.trim())?;
                return Some(Figure { start: m.start(), end, value, is_percent: true });
            }
            Some(Figure { start: m.start(), end, value: parse_amount(raw)?, is_percent: false })
        })
        .take(200)
        .collect()
}

/// A figure with the words around it inside its clause (clauses end at `, `,
/// `;`, parentheses and other figures), lowercased: what says whether `$500`
/// is a target, a balance or a monthly payment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Labelled {
    pub figure: Figure,
    pub before: String,
    pub after: String,
}

impl Labelled {
    /// Whether any of `words` is in the clause before the figure.
    pub(crate) fn before_has(&self, words: &[&str]) -> bool {
        words.iter().any(|w| self.before.contains(w))
    }

    /// Whether the clause after the figure starts with one of `words` (after
    /// spaces), as in `$500/month` or `$150 minimum`.
    pub(crate) fn after_starts(&self, words: &[&str]) -> bool {
        let after = self.after.trim_start();
        words.iter().any(|w| after.starts_with(w))
    }
}

pub(crate) fn labelled_figures(text: &str) -> Vec<Labelled> {
    let found = figures(text);
    let is_boundary = |i: usize| {
        let rest = &text[i..];
        rest.starts_with(", ") || rest.starts_with([';', '(', ')', '\n']) || rest.starts_with(" and ")
    };
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).filter(|i| is_boundary(*i)).collect();
    found
        .iter()
        .enumerate()
        .map(|(n, f)| {
            let prev_end = n.checked_sub(1).and_then(|p| found.get(p)).map_or(0, |p| p.end);
            let start = boundaries.iter().rev().find(|b| **b < f.start).map_or(0, |b| b + 1).max(prev_end);
            let next_start = found.get(n + 1).map_or(text.len(), |x| x.start);
            let end = boundaries.iter().find(|b| **b >= f.end).copied().unwrap_or(text.len()).min(next_start);
            Labelled {
                figure: *f,
                before: text.get(start..f.start).unwrap_or_default().to_lowercase(),
                after: text.get(f.end..end.max(f.end)).unwrap_or_default().to_lowercase(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_parses_common_amount_spellings() {
        assert_eq!(parse_amount("45.99"), Some(4599));
        assert_eq!(parse_amount("$1,234.56"), Some(123_456));
        assert_eq!(parse_amount("-4.50"), Some(-450));
        assert_eq!(parse_amount("(12.50)"), Some(-1250));
        assert_eq!(parse_amount("12,50"), Some(1250));
        assert_eq!(parse_amount("1.234,56"), Some(123_456));
        assert_eq!(parse_amount("€5"), Some(500));
        assert_eq!(parse_amount("5.00 EUR"), Some(500));
        assert_eq!(parse_amount("C$ 7.25"), Some(725));
        assert_eq!(parse_amount("2.5k"), Some(250_000));
        assert_eq!(parse_amount("10,000"), Some(1_000_000));
        assert_eq!(parse_amount("-$4.50"), Some(-450));
        assert_eq!(parse_amount("-1.234,56 €"), Some(-123_456));
        assert_eq!(parse_amount("+12.00"), Some(1200));
    }

    #[test]
    fn money_rejects_garbage() {
        for bad in ["", "abc", "12.34.56", "1,23,4", "$", "--", "10.09.25", "9".repeat(40).as_str()] {
            assert_eq!(parse_amount(bad), None, "{bad}");
        }
    }

    #[test]
    fn money_formats_with_symbol_and_grouping() {
        assert_eq!(format(4599, "USD"), "$45.99");
        assert_eq!(format(123_456_789, "USD"), "$1,234,567.89");
        assert_eq!(format(-450, "EUR"), "-€4.50");
        assert_eq!(format(500, "CAD"), "C$5.00");
        assert_eq!(format(1200, "CHF"), "12.00 CHF");
        assert_eq!(to_value(4599), serde_json::json!(45.99));
    }

    #[test]
    fn money_detects_currency() {
        assert_eq!(detect_currency("Total C$12.00"), Some("CAD"));
        assert_eq!(detect_currency("Total 12.00 EUR"), Some("EUR"));
        assert_eq!(detect_currency("£3.20"), Some("GBP"));
        assert_eq!(detect_currency("$3.20"), Some("USD"));
        assert_eq!(detect_currency("3.20"), None);
    }

    #[test]
    fn money_labels_figures_by_their_clause() {
        let l = labelled_figures("Emergency fund: target $10,000, saved $2,500, saving $500/month");
        let got: Vec<(&str, &str)> = l.iter().map(|l| (l.before.as_str(), l.after.as_str())).collect();
        assert_eq!(got, vec![("emergency fund: target ", ""), (" saved ", ""), (" saving ", "/month")]);
        assert!(l[2].after_starts(&["/month"]) && l[0].before_has(&["target"]));
    }

    #[test]
    fn money_finds_figures_in_prose() {
        let f = figures("Visa: $5,000 at 19.99% APR, min $150, Q4 bonus 2.5k");
        let values: Vec<(i64, bool)> = f.iter().map(|f| (f.value, f.is_percent)).collect();
        assert_eq!(values, vec![(500_000, false), (1999, true), (15_000, false), (250_000, false)]);
    }
}
