//! The static patterns that propose candidates, and the word lists they and
//! the address rule are built from. A match is only a candidate: `spans`
//! decides whether it is a value.

use std::sync::LazyLock;

use regex::Regex;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static pattern")
}

/// A blank people, spreadsheets and PDF text put between digit groups: a
/// space, a no-break space, the fixed-width Unicode spaces (en, em, figure,
/// punctuation, thin, hair, zero-width), the narrow no-break, medium
/// mathematical and ideographic spaces. Not a tab: tabs part a table's cells.
const BLANK: &str = r"[ \u{A0}\u{2000}-\u{200B}\u{202F}\u{205F}\u{3000}]";
/// A blank or a tab, where several may stand between groups (cards).
const BLANK_OR_TAB: &str = r"[\t \u{A0}\u{2000}-\u{200B}\u{202F}\u{205F}\u{3000}]";
/// A dash in any of its spellings (hyphen-minus, hyphen, non-breaking
/// hyphen, figure dash, en and em dash, horizontal bar, minus sign, small
/// and fullwidth hyphen-minus) or a dot.
const MARK: &str = r"[-.\u{2010}-\u{2015}\u{2212}\u{FE58}\u{FE63}\u{FF0D}]";

/// Where a number may start: not inside a run of digits or letters (an
/// ASCII word boundary, which keeps the search on the fast engine). Without
/// it, every digit run's tail followed by a separator was a candidate:
/// every row of a CSV statement, where the next row starts with digits.
const START: &str = r"(?-u:\b)";

/// Whether `c` may stand between a number's groups (see [`BLANK`], [`MARK`]):
/// a blank, a tab, a dash, a dot, a slash or a line break.
pub(super) fn is_separator(c: char) -> bool {
    matches!(c, '\t' | ' ' | '\u{A0}' | '\u{2000}'..='\u{200B}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
        || is_dash(c)
        || matches!(c, '.' | '/' | '\n' | '\r')
}

/// A dash in any of its spellings.
pub(super) fn is_dash(c: char) -> bool {
    matches!(c, '-' | '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}')
}

/// The gap between two groups of a number without a check digit (SSN, SIN,
/// phone): one blank; a mark (or a slash, where `slash`) with at most one
/// blank either side; or a line break where a PDF's text wrapped the number,
/// perhaps after its mark. Several blanks or a tab are a table's columns.
fn gap(slash: bool) -> String {
    let mark = if slash { format!("(?:{MARK}|/)") } else { MARK.to_string() };
    format!(r"(?:{BLANK}|{BLANK}?{mark}{BLANK}?|{BLANK}?{mark}?\r?\n{BLANK}?)")
}

/// The gap between two groups of a card number, whose Luhn check and issuer
/// range let it be looser: up to three blanks or tabs (a form's boxes), a
/// mark or a slash with up to two blanks either side, or a line break.
fn wide_gap() -> String {
    let b = BLANK_OR_TAB;
    format!(r"(?:{b}{{1,3}}|{b}{{0,2}}(?:{MARK}|/){b}{{0,2}}|{b}{{0,2}}{MARK}?\r?\n{b}{{0,2}})")
}

pub(super) static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"[\p{L}\p{M}\p{N}._%+-]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,}"));
// `[0-9]` rather than `\d`: `\d` is Unicode and would match other scripts'
// digits, which no check digit below understands.
/// Six digits and the rest (`625351 7660682368226`; tried first, as the
/// regex takes the first alternative that matches), groups of three to six
/// digits (`4111 1111 1111 1111`, Amex's `3782 822463 10005`, 19 digits as
/// 4-4-4-4-3), or bare.
pub(super) static CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"{START}(?:[0-9]{{6}}{gap}[0-9]{{7,13}}|[0-9]{{4,6}}(?:{gap}[0-9]{{3,6}}){{1,4}}|[0-9]{{13,19}})",
        gap = wide_gap()
    ))
});
/// Groups of up to four, compact or parted by blanks, a dash or a line break.
pub(super) static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    let gap = format!(r"(?:{BLANK_OR_TAB}{{1,3}}|-|{BLANK}?\r?\n{BLANK}?)");
    re(&format!(r"{START}[A-Z]{{2}}[0-9]{{2}}(?:{gap}?[A-Z0-9]{{1,4}}){{3,8}}"))
});
pub(super) static SSN: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"{START}[0-9]{{3}}{gap}[0-9]{{2}}{gap}[0-9]{{4}}", gap = gap(false))));
// A label, then a few words without digits (`SSN:`, `call me at`), then the
// bare number; the digits in our tokens keep a label from reaching past one.
pub(super) static SSN_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:ssn|social security)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// A Canadian SIN as written: three groups of three digits.
pub(super) static SIN: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"{START}[0-9]{{3}}{gap}[0-9]{{3}}{gap}[0-9]{{3}}", gap = gap(false))));
pub(super) static SIN_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:sin|social insurance(?: number)?)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// Month names as people write them, whole or cut short (`Mar`, `Sept`).
const MONTHS: &str = "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?";
/// A label that makes the date a birth date, then separators or a linking
/// word (`born on`, `DOB is:`), then the date as people write it: the date
/// alone is the value. Letters other than those words keep a label from
/// reaching a date further on (`DOB unknown, paid 2025-10-09`).
pub(super) static DOB_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        concat!(
            r"(?i)\b(?:dob|d\.o\.b|date of birth|birth[ -]?date|birthday|born)\b\.?",
            r"(?:[ \t:=#,(-]|\b(?:is|was|on|the)\b){{0,8}}(",
            r"[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}",
            r"|[0-9]{{1,2}}[/.-][0-9]{{1,2}}[/.-](?:[0-9]{{4}}|[0-9]{{2}})",
            r"|(?:{m})\.? [0-9]{{1,2}}(?:st|nd|rd|th)?,? [0-9]{{4}}",
            r"|[0-9]{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{m})\.?,? [0-9]{{4}}",
            r")"
        ),
        m = MONTHS
    ))
});
/// Street suffixes written out: a `.` after one ends a sentence.
pub(super) const STREET_WORDS: &str = "street|avenue|road|boulevard|lane|drive|court|way|place|terrace|circle|parkway|highway|square|trail|crescent|alley|plaza|expressway|freeway|turnpike";
/// Street suffixes cut short, which may take a `.`.
const STREET_ABBREVIATIONS: &str =
    "st|ave|av|rd|blvd|ln|dr|ct|pl|ter|terr|cir|pkwy|hwy|sq|trl|cres|aly|plz|expy|fwy|tpke";
const US_STATES: &str = "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|GU|VI|AS|MP";
const PROVINCES: &str = "AB|BC|MB|NB|NL|NS|NT|NU|ON|PE|QC|SK|YT";
/// House number, street name words (fewest first), suffix; then, as `rest`,
/// a direction, a unit, and a city with a state and ZIP or a province and
/// postal code, each optional. `detect::addresses` judges the words.
pub(super) static ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        concat!(
            r"(?P<number>[1-9][0-9]{{0,5}}(?:-[0-9]{{1,5}})?[A-Za-z]?)",
            r"(?P<name>(?: (?:\p{{L}}[\p{{L}}'.-]*|[0-9]{{1,3}}(?:st|nd|rd|th))){{1,4}}?) ",
            r"(?P<suffix>(?i:{words})\b|(?i:{abbreviations})\b\.?)",
            r"(?P<rest>(?: (?:N|S|E|W|NE|NW|SE|SW)\b)?",
            r"(?:,? (?i:apt|apartment|suite|ste|unit|room|rm|floor|fl)\.? ?#?[0-9A-Za-z-]{{1,6}}\b|,? #[0-9A-Za-z-]{{1,6}}\b)?",
            r"(?:,? {city},? (?:{states}) [0-9]{{5}}(?:-[0-9]{{4}})?\b",
            r"|,? {city},? (?:{provinces}),? [A-Z][0-9][A-Z] ?[0-9][A-Z][0-9]\b)?)",
        ),
        words = STREET_WORDS,
        abbreviations = STREET_ABBREVIATIONS,
        city = r"[A-Z][\p{L}'.-]*(?: [A-Z][\p{L}'.-]*){0,2}",
        states = US_STATES,
        provinces = PROVINCES,
    ))
});
/// A routing number a few words after its label (`routing number:`, `ABA`).
pub(super) static ROUTING_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:routing|aba|rtn)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// An account number right after its label: `account number is`, `Acct #:`,
/// `A/C`, `acc no.`; other words between keep it out (`account ending in`,
/// `account balance`).
pub(super) static ACCOUNT_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(?:(?:account|acct|a/c)\b\.?(?:\s*(?:number|num|nbr|no)\b\.?|\s*#)?",
        r"|acc\b\.?(?:\s*(?:number|no)\b\.?|\s*#))",
        r"(?:\s+is)?\s*[:#=]?\s*([0-9]{6,17})",
    ))
});
pub(super) static DIGIT_RUN: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]+"));
/// Credentials, each by the shape its issuer gives it.
pub(super) static SECRETS: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )?PRIVATE KEY-----",
        r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{40,}",
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
    ))
});
pub(super) static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}"));
pub(super) static IPV6: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:[0-9A-Fa-f]{1,4})?(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.[0-9]{1,3}){0,3}"));
pub(super) static PHONE_INTL: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(r"\+[0-9]{{1,3}}(?:{gap}?(?:\([0-9]{{1,4}}\)|[0-9]{{1,6}})){{1,7}}", gap = gap(true)))
});
pub(super) static PHONE_NANP: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:\+?1{gap}?)?(?:\([2-9][0-9]{{2}}\){gap}?|[2-9][0-9]{{2}}{gap})[2-9][0-9]{{2}}{gap}[0-9]{{4}}",
        gap = gap(true)
    ))
});
pub(super) static PHONE_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:phone|tel|telephone|mobile|mob|cell|fax|call|whatsapp)\b[^0-9\n]{0,16}?(1?[2-9][0-9]{2}[2-9][0-9]{6})",
    )
});
/// A dotted quad right after one of these is a version, not an address.
pub(super) static VERSION_LABEL: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:version|ver|v|release|rel|build|firmware|fw)\.?\s{0,3}[:=]?\s{0,3}$"));
