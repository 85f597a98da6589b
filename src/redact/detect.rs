//! Finding PII. Each rule proposes candidates with a regex and validates them
//! in code (check digits, number plans, neighbours): the regex crate has no
//! look-around, and check digits are not regular anyway.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

use super::checksums::{aba_ok, birth_date_ok, card_issuer_ok, iban_ok, luhn_ok, number, ssn_ok};
use super::vault::{ends_with_token, starts_with_token};
use super::{Finding, PiiKind};

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static pattern")
}

static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"[\p{L}\p{M}\p{N}._%+-]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,}"));
// `[0-9]` rather than `\d`: `\d` is Unicode and would match other scripts'
// digits, which no check digit below understands.
static CARD: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]{4,6}(?:[ -][0-9]{3,6}){1,4}|[0-9]{13,19}"));
static IBAN: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{1,4}){3,8}"));
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}"));
// A label, then a few words without digits (`SSN:`, `call me at`), then the
// bare number; the digits in our tokens keep a label from reaching past one.
static SSN_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:ssn|social security)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// A Canadian SIN as written: three groups of three digits.
static SIN: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]{3}[ -][0-9]{3}[ -][0-9]{3}"));
static SIN_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:sin|social insurance(?: number)?)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// Month names as people write them, whole or cut short (`Mar`, `Sept`).
const MONTHS: &str = "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?";
/// A label that makes the date a birth date, then separators or a linking
/// word (`born on`, `DOB is:`), then the date as people write it: the date
/// alone is the value. Letters other than those words keep a label from
/// reaching a date further on (`DOB unknown, paid 2025-10-09`).
static DOB_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
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
const STREET_WORDS: &str = "street|avenue|road|boulevard|lane|drive|court|way|place|terrace|circle|parkway|highway|square|trail|crescent|alley|plaza|expressway|freeway|turnpike";
/// Street suffixes cut short, which may take a `.`.
const STREET_ABBREVIATIONS: &str =
    "st|ave|av|rd|blvd|ln|dr|ct|pl|ter|terr|cir|pkwy|hwy|sq|trl|cres|aly|plz|expy|fwy|tpke";
const US_STATES: &str = "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|GU|VI|AS|MP";
const PROVINCES: &str = "AB|BC|MB|NB|NL|NS|NT|NU|ON|PE|QC|SK|YT";
/// House number, street name words (fewest first), suffix; then, as `rest`,
/// a direction, a unit, and a city with a state and ZIP or a province and
/// postal code, each optional. `detect::addresses` judges the words.
static ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
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
static ROUTING_LABELLED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:routing|aba|rtn)\b[^0-9\n]{0,24}?([0-9]{9})"));
/// An account number right after its label: `account number is`, `Acct #:`,
/// `A/C`, `acc no.`; other words between keep it out (`account ending in`,
/// `account balance`).
static ACCOUNT_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(?:(?:account|acct|a/c)\b\.?(?:\s*(?:number|num|nbr|no)\b\.?|\s*#)?",
        r"|acc\b\.?(?:\s*(?:number|no)\b\.?|\s*#))",
        r"(?:\s+is)?\s*[:#=]?\s*([0-9]{6,17})",
    ))
});
static DIGIT_RUN: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]+"));
/// Credentials, each by the shape its issuer gives it.
static SECRETS: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )?PRIVATE KEY-----",
        r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{40,}",
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
    ))
});
static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}"));
static IPV6: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:[0-9A-Fa-f]{1,4})?(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.[0-9]{1,3}){0,3}"));
static PHONE_INTL: LazyLock<Regex> = LazyLock::new(|| re(r"\+[0-9]{1,3}(?:[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,6})){1,7}"));
static PHONE_NANP: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}"));
static PHONE_LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:phone|tel|telephone|mobile|mob|cell|fax|call|whatsapp)\b[^0-9\n]{0,16}?(1?[2-9][0-9]{2}[2-9][0-9]{6})",
    )
});
/// A dotted quad right after one of these is a version, not an address.
static VERSION_LABEL: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:version|ver|v|release|rel|build|firmware|fw)\.?\s{0,3}[:=]?\s{0,3}$"));

type Validate = fn(&str, usize, usize) -> bool;

/// Candidates, where a match may be cut short, kind, validation.
static RULES: [(&LazyLock<Regex>, &[u8], PiiKind, Validate); 8] = [
    (&SIN, b"", PiiKind::Sin, sin_span_ok),
    (&CARD, b" -", PiiKind::Card, card_ok),
    (&IBAN, b" ", PiiKind::Iban, iban_span_ok),
    (&SSN, b"", PiiKind::Ssn, ssn_span_ok),
    (&IPV4, b"", PiiKind::Ip, ipv4_ok),
    // The match may run on into what follows (`…::1:a@x.com`).
    (&IPV6, b":.", PiiKind::Ip, ipv6_ok),
    (&PHONE_INTL, b" .-", PiiKind::Phone, intl_phone_ok),
    (&PHONE_NANP, b"", PiiKind::Phone, nanp_phone_ok),
];

/// Patterns whose first group is the value and the rest its label.
static LABELLED: [(&LazyLock<Regex>, PiiKind, Validate); 5] = [
    (&SSN_LABELLED, PiiKind::Ssn, ssn_span_ok),
    (&PHONE_LABELLED, PiiKind::Phone, nanp_phone_ok),
    (&SIN_LABELLED, PiiKind::Sin, sin_span_ok),
    (&DOB_LABELLED, PiiKind::Dob, dob_span_ok),
    (&ROUTING_LABELLED, PiiKind::BankAccount, routing_span_ok),
];

/// Compiles every pattern now rather than on the first message.
pub(super) fn warm_up() {
    let rules = RULES.iter().map(|r| r.0);
    for re in rules.chain(LABELLED.iter().map(|r| r.0)).chain([
        &EMAIL,
        &VERSION_LABEL,
        &SECRETS,
        &ADDRESS,
        &ACCOUNT_LABELLED,
        &DIGIT_RUN,
    ]) {
        LazyLock::force(re);
    }
}

/// All findings, sorted and non-overlapping. Besides what the rules accept,
/// every other occurrence of an accepted raw value is reported too (say the
/// same card glued into `ref4111111111111111`): once a value is known to be
/// PII, no copy of it should get through.
pub(super) fn find(text: &str) -> Vec<Finding> {
    let mut chosen = detect(text);
    if !chosen.0.is_empty() {
        sweep(text, &mut chosen);
    }
    chosen.0.into_values().collect()
}

pub(super) fn contains(text: &str) -> bool {
    !detect(text).0.is_empty()
}

/// Non-overlapping findings keyed by start.
#[derive(Default)]
struct Chosen(BTreeMap<usize, Finding>);

impl Chosen {
    /// Adds `f` unless it overlaps something already chosen.
    fn insert(&mut self, f: Finding) -> bool {
        // Chosen spans are disjoint, so only the last one starting before
        // `f.end` can reach into `f`.
        let clash = self.0.range(..f.end).next_back().is_some_and(|(_, g)| g.end > f.start);
        if clash || f.start >= f.end {
            return false;
        }
        self.0.insert(f.start, f);
        true
    }
}

/// When rules overlap, the one whose checksum held wins over structure-only
/// rules, those over the kinds that lean on a label or on words (birth
/// dates, street addresses, bank accounts: `account 4111111111111111` is a
/// card), and anything wins over phone (the loosest rule); then the longer
/// match.
fn strength(kind: PiiKind) -> u8 {
    match kind {
        PiiKind::Secret => 5,
        PiiKind::Card | PiiKind::Iban | PiiKind::Sin => 4,
        PiiKind::Email | PiiKind::Ssn | PiiKind::Ip => 3,
        PiiKind::Dob | PiiKind::Address | PiiKind::BankAccount => 2,
        PiiKind::Phone => 1,
    }
}

fn detect(text: &str) -> Chosen {
    let digit = text.bytes().any(|b| b.is_ascii_digit());
    let at = text.contains('@');
    let mut chosen = Chosen::default();
    let mut found = Vec::new();
    // credentials start with a fixed prefix, so this pass is cheap
    for m in SECRETS.find_iter(text) {
        found.push(Finding { kind: PiiKind::Secret, start: m.start(), end: m.end() });
    }
    if !digit && !at && found.is_empty() {
        // Every other rule but email needs a digit (IPv6 too: see `ipv6_ok`).
        return chosen;
    }
    if at {
        for m in EMAIL.find_iter(text) {
            emails(text, m.start(), m.end(), &mut found);
        }
    }
    if digit {
        for &(re, seps, kind, valid) in &RULES {
            scan(re, seps, text, kind, &mut found, valid);
        }
        for &(re, kind, valid) in &LABELLED {
            labelled(re, text, kind, &mut found, valid);
        }
        addresses(text, &mut found);
        bank_accounts(text, &mut found);
    }
    found.sort_by_key(|f| (Reverse(strength(f.kind)), Reverse(f.end - f.start), f.start));
    for f in found {
        chosen.insert(f);
    }
    chosen
}

/// Runs a bounded-length pattern over `text` and keeps every valid value
/// that starts where a match starts and ends where it ends or at one of its
/// `seps` (a greedy match may have swallowed a following number: `4111 …
/// 1111 2025`). Every start is tried, inside earlier matches too: the shorter
/// value there may be the one that survives overlap resolution (`…::1 415-…`
/// where `1 415-…` loses to the address). Patterns are short, so this stays
/// linear.
fn scan(re: &Regex, seps: &[u8], text: &str, kind: PiiKind, out: &mut Vec<Finding>, valid: Validate) {
    let mut pos = 0;
    while let Some(m) = re.find_at(text, pos) {
        let start = m.start();
        let ends = cuts(text, start, m.end(), seps).filter(|&end| valid(text, start, end));
        out.extend(ends.map(|end| Finding { kind, start, end }));
        // Skip, without the regex, the starts whose left neighbour already
        // rules them out: in a long run of digits that is all of them.
        pos = next_char(text, start);
        while pos < text.len() && !text.get(..pos).is_some_and(|head| left_free(kind, head)) {
            pos = next_char(text, pos);
        }
    }
}

fn labelled(re: &Regex, text: &str, kind: PiiKind, out: &mut Vec<Finding>, valid: Validate) {
    for caps in re.captures_iter(text) {
        // `\b` lets a label follow one of our tokens, which stands for a word.
        let after_token = caps.get(0).is_some_and(|m| ends_with_token(&text[..m.start()]));
        if let Some(g) = caps.get(1).filter(|g| !after_token && valid(text, g.start(), g.end())) {
            out.push(Finding { kind, start: g.start(), end: g.end() });
        }
    }
}

/// Street addresses: each match of [`ADDRESS`] whose number stands alone
/// and is not a chapter's, a route's or a day's (`Route 66`, `March 14`),
/// and whose name reads as a street's: capitalised words or ordinals (`12
/// Main St`, `500 5th Avenue`), or at most two lower-case words before an
/// abbreviation (`12 main st`), never a function word (`2 bugs along the
/// way`). Both the whole match and the street alone are offered, in case the
/// longer one clashes.
fn addresses(text: &str, out: &mut Vec<Finding>) {
    let kind = PiiKind::Address;
    let mut pos = 0;
    while let Some(caps) = ADDRESS.captures_at(text, pos) {
        let (Some(all), Some(number), Some(name), Some(suffix), Some(rest)) =
            (caps.get(0), caps.name("number"), caps.name("name"), caps.name("suffix"), caps.name("rest"))
        else {
            break;
        };
        let start = all.start();
        let head = text.get(..start).unwrap_or_default();
        if left_free(kind, head)
            && !not_a_house_number(head, number.as_str())
            && street_name_ok(name.as_str(), suffix.as_str())
        {
            let street_end = suffix.end() - usize::from(suffix.as_str().ends_with('.'));
            let ends = [(!rest.as_str().is_empty()).then_some(all.end()), Some(street_end)];
            for end in ends.into_iter().flatten() {
                if text.get(end..).is_some_and(|tail| right_free(kind, tail)) {
                    out.push(Finding { kind, start, end });
                }
            }
        }
        pos = next_char(text, start);
        while pos < text.len() && !text.get(..pos).is_some_and(|head| left_free(kind, head)) {
            pos = next_char(text, pos);
        }
    }
}

/// Labelled account numbers, and unlabelled routing numbers right beside one
/// (`acct 12345678, 021000021`, `021000021 / acct 12345678`): only
/// separators between the routing number and the account's label or number.
fn bank_accounts(text: &str, out: &mut Vec<Finding>) {
    let kind = PiiKind::BankAccount;
    let mut accounts = Vec::new();
    for caps in ACCOUNT_LABELLED.captures_iter(text) {
        let (Some(all), Some(number)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        let after_token = ends_with_token(text.get(..all.start()).unwrap_or_default());
        if !after_token && stands_alone(kind, text, number.start(), number.end()) {
            out.push(Finding { kind, start: number.start(), end: number.end() });
            accounts.push((all.start(), number.end()));
        }
    }
    if accounts.is_empty() {
        return;
    }
    let separators = |gap: Option<&str>| {
        gap.is_some_and(|g| g.len() <= 5 && g.bytes().all(|b| matches!(b, b' ' | b',' | b';' | b'/' | b'|' | b':')))
    };
    for run in DIGIT_RUN.find_iter(text) {
        let (start, end) = (run.start(), run.end());
        let beside = accounts.iter().any(|&(label, number_end)| {
            (end <= label && separators(text.get(end..label)))
                || (number_end <= start && separators(text.get(number_end..start)))
        });
        if beside && routing_span_ok(text, start, end) {
            out.push(Finding { kind, start, end });
        }
    }
}

/// Whether what comes before a number makes it something other than a
/// house number: a word such as `Route 66`, `Chapter 12`, `Exit 4`, `March
/// 14`, `Order 12345`; a year after `in`, `by`, `of` (`in 2019 Main Street
/// reopened`); the thousands of an amount (`$1,200 Rent Ave`).
fn not_a_house_number(head: &str, house: &str) -> bool {
    const WORDS: &str = "chapter ch route rte highway hwy interstate exit page pg p pp step section sec part \
                         episode ep season order item room gate level floor platform figure fig table vol volume \
                         no number top version issue line bus track lesson flight grade week day year jan january \
                         feb february mar march apr april may jun june jul july aug august sep sept september oct \
                         october nov november dec december since until till";
    const BEFORE_A_YEAR: &str = "in by of";
    let thousands = head.strip_suffix(',').is_some_and(|h| h.ends_with(|c: char| c.is_ascii_digit()));
    let trimmed = head.trim_end_matches([' ', '#', ':', '.']);
    let word = trimmed.rsplit(|c: char| !c.is_alphabetic()).next().unwrap_or_default();
    let is = |list: &str| list.split_whitespace().any(|w| w.eq_ignore_ascii_case(word));
    let year = house.len() == 4 && number(house).is_some_and(|y| (1800..=2099).contains(&y));
    thousands || is(WORDS) || (year && is(BEFORE_A_YEAR))
}

/// Whether the words between a house number and a street suffix name a
/// street (see [`addresses`]).
fn street_name_ok(name: &str, suffix: &str) -> bool {
    const FUNCTION_WORDS: &str =
        "the a an and or of to in on at for by with from my your our his her their its this that is are was were";
    let words: Vec<&str> = name.split_whitespace().collect();
    let function_word = words.iter().any(|w| FUNCTION_WORDS.split(' ').any(|f| f.eq_ignore_ascii_case(w)));
    let capitalised = words.iter().all(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()));
    let abbreviated = !STREET_WORDS.split('|').any(|w| w.eq_ignore_ascii_case(suffix.trim_end_matches('.')));
    let lower_case = words.len() <= 2 && words.iter().all(|w| w.starts_with(char::is_lowercase));
    !function_word && (capitalised || (abbreviated && lower_case))
}

fn next_char(text: &str, i: usize) -> usize {
    text.get(i..).and_then(|t| t.chars().next()).map_or(text.len(), |c| i + c.len_utf8())
}

/// The match end, then each separator inside the match, longest first: a
/// greedy match may have swallowed a following number (`4111 … 1111 2025`).
fn cuts<'a>(text: &'a str, start: usize, end: usize, seps: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let bytes = text.as_bytes();
    std::iter::once(end).chain((start + 1..end).rev().filter(move |&i| bytes.get(i).is_some_and(|b| seps.contains(b))))
}

fn is_currency(c: char) -> bool {
    matches!(c, '$' | '€' | '£' | '¥' | '₹' | '¢' | '₩' | '₽' | '₺' | '₪' | '฿')
}

/// A neighbour that makes the match part of something bigger: a word, an
/// address, an amount.
fn binds(c: char) -> bool {
    c.is_alphanumeric() || c == '@' || is_currency(c)
}

/// A neighbour that joins the match to whatever is across it (`1.2.3.4.5`,
/// `ORD-415-555-2671`). For addresses `/` is not one: `10.0.0.0/8`,
/// `http://10.0.0.1/`.
fn joins(kind: PiiKind, c: char) -> bool {
    matches!(c, '.' | '-' | '_') || (c == '/' && kind != PiiKind::Ip)
}

/// Whether `start..end` is a value on its own rather than part of a longer
/// word or number. Our own tokens count as words here, so that redacting
/// redacted text sees the same neighbours the first pass saw.
fn stands_alone(kind: PiiKind, text: &str, start: usize, end: usize) -> bool {
    let (Some(head), Some(tail)) = (text.get(..start), text.get(end..)) else {
        return false;
    };
    left_free(kind, head) && right_free(kind, tail)
}

/// Whether a value may start right after `head`.
fn left_free(kind: PiiKind, head: &str) -> bool {
    let mut before = head.chars();
    match before.next_back() {
        None => true,
        Some(c) if binds(c) || ends_with_token(head) => false,
        Some(c) if joins(kind, c) => {
            let rest = before.as_str();
            !(rest.chars().next_back().is_some_and(char::is_alphanumeric) || ends_with_token(rest))
        }
        Some(_) => true,
    }
}

/// Whether a value may end right before `tail`.
fn right_free(kind: PiiKind, tail: &str) -> bool {
    let mut after = tail.chars();
    match after.next() {
        None => true,
        Some(c) if binds(c) || starts_with_token(tail) => false,
        Some(c) if joins(kind, c) => {
            let rest = after.as_str();
            !(rest.chars().next().is_some_and(char::is_alphanumeric) || starts_with_token(rest))
        }
        Some(_) => true,
    }
}

/// Every reading of the email match `start..end`: from the start of the
/// local part, or from just after punctuation in it, since the longest
/// reading may lose to an overlapping value (`4111111111111111..a@x.com`).
/// `user@localhost` never gets here: the pattern wants a dotted domain with a
/// letter TLD, which also keeps `@handles` and `a@1.2` out.
fn emails(text: &str, start: usize, end: usize, out: &mut Vec<Finding>) {
    let Some(local) = text.get(start..end).and_then(|s| s.split('@').next()) else {
        return;
    };
    let after_punctuation = local
        .char_indices()
        .filter(|&(_, c)| matches!(c, '.' | '_' | '%' | '+' | '-'))
        .map(|(i, c)| start + i + c.len_utf8());
    for from in std::iter::once(start).chain(after_punctuation) {
        let ok = end - from <= 254
            && text.get(from..).is_some_and(|t| !t.starts_with(['.', '@']))
            && stands_alone(PiiKind::Email, text, from, end);
        if ok {
            out.push(Finding { kind: PiiKind::Email, start: from, end });
        }
    }
}

fn card_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let (mut digits, mut n, mut sep) = ([0u8; 19], 0, None);
    for b in span.bytes() {
        if b.is_ascii_digit() {
            let Some(slot) = digits.get_mut(n) else {
                return false;
            };
            *slot = b - b'0';
            n += 1;
        } else if *sep.get_or_insert(b) != b {
            return false; // `4111 1111-1111 1111`
        }
    }
    let digits = &digits[..n];
    n >= 13
        && luhn_ok(digits)
        && card_issuer_ok(digits)
        && stands_alone(PiiKind::Card, text, start, end)
        && !after_iban_head(text.get(..start).unwrap_or_default())
}

/// `ES67 4564 8739 2787 0717 9008`: groups after an IBAN's country and check
/// digits are its account number, whether or not the IBAN's checksum holds.
fn after_iban_head(head: &str) -> bool {
    let h = head.as_bytes();
    let n = h.len();
    n >= 5
        && h[n - 5..n - 3].iter().all(u8::is_ascii_uppercase)
        && h[n - 3..n - 1].iter().all(u8::is_ascii_digit)
        && h[n - 1] == b' '
        && !(n > 5 && h[n - 6].is_ascii_alphanumeric())
}

/// Compact, or in groups of four with single spaces (the last may be shorter).
fn iban_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let mut groups = span.split(' ');
    let last_ok = groups.next_back().is_some_and(|g| (1..=4).contains(&g.len()));
    let spacing_ok = !span.contains(' ') || (last_ok && groups.all(|g| g.len() == 4));
    let compact: String = span.chars().filter(|&c| c != ' ').collect();
    spacing_ok && iban_ok(&compact) && stands_alone(PiiKind::Iban, text, start, end)
}

/// `AAA-GG-SSSS`, `AAA GG SSSS` (one separator throughout) or, after a label,
/// `AAAGGSSSS`.
/// Nine digits, bare or as 3-3-3 with one separator, that pass Luhn and
/// start as SINs do (not 0 or 8), standing alone.
fn sin_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let digits: Vec<u8> = span.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    let one_separator = span.len() == 9 || (span.len() == 11 && span.get(3..4) == span.get(7..8));
    digits.len() == 9
        && one_separator
        && !matches!(digits[0], 0 | 8)
        && luhn_ok(&digits)
        && stands_alone(PiiKind::Sin, text, start, end)
}

fn ssn_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let parts = match span.len() {
        9 => [span.get(..3), span.get(3..5), span.get(5..)],
        11 if span.get(3..4) == span.get(6..7) => [span.get(..3), span.get(4..6), span.get(7..)],
        _ => return false,
    };
    let [Some(area), Some(group), Some(serial)] = parts.map(|p| p.and_then(number)) else {
        return false;
    };
    ssn_ok(area, group, serial) && stands_alone(PiiKind::Ssn, text, start, end)
}

/// `1985-03-14`, `03/14/1985` or `14/03/1985` (one separator throughout;
/// either reading will do), `14.03.85`, `March 14, 1985`, `14th of Mar
/// 1985`: a day that exists, standing alone.
fn dob_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let parts: Vec<&str> = span.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()).collect();
    let exists = if span.bytes().any(|b| b.is_ascii_alphabetic()) {
        // A month word, a day (perhaps `14th`), a four-digit year.
        let month = parts.iter().find_map(|p| month_number(p));
        let day = parts.iter().find_map(|p| number(p.trim_end_matches(|c: char| c.is_ascii_alphabetic())));
        let year = parts.iter().rev().find_map(|p| number(p).filter(|_| p.len() == 4));
        matches!((year, month, day), (Some(y), Some(m), Some(d)) if d < 100 && birth_date_ok(y, m, d))
    } else {
        let mut seps = span.bytes().filter(|b| !b.is_ascii_digit());
        let one_separator = seps.next().is_some_and(|first| seps.all(|b| b == first));
        let [a, b, c] = parts.as_slice() else {
            return false;
        };
        let [Some(x), Some(y), Some(z)] = [a, b, c].map(|p| number(p)) else {
            return false;
        };
        let exists = match (a.len(), c.len()) {
            (4, _) => birth_date_ok(x, y, z),
            // A two-digit year may be either century.
            (_, 2) => {
                [1900, 2000].iter().any(|century| birth_date_ok(century + z, x, y) || birth_date_ok(century + z, y, x))
            }
            _ => birth_date_ok(z, x, y) || birth_date_ok(z, y, x),
        };
        one_separator && exists
    };
    exists && stands_alone(PiiKind::Dob, text, start, end)
}

/// 1 for `jan`, `Jan.`, `January` … 12 for `december`.
fn month_number(word: &str) -> Option<u32> {
    const NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let head = word.get(..3)?.to_ascii_lowercase();
    let n = NAMES.iter().position(|&m| m == head)?;
    u32::try_from(n + 1).ok()
}

/// Nine digits that pass [`aba_ok`], standing alone.
fn routing_span_ok(text: &str, start: usize, end: usize) -> bool {
    let digits: Vec<u8> = text.get(start..end).unwrap_or_default().bytes().map(|b| b.wrapping_sub(b'0')).collect();
    aba_ok(&digits) && stands_alone(PiiKind::BankAccount, text, start, end)
}

fn ipv4_ok(text: &str, start: usize, end: usize) -> bool {
    // std refuses octets over 255 and leading zeros (`010.1.1.1` may be octal).
    text.get(start..end).is_some_and(|s| s.parse::<Ipv4Addr>().is_ok())
        && stands_alone(PiiKind::Ip, text, start, end)
        && !text.get(..start).is_some_and(|head| VERSION_LABEL.is_match(last_bytes(head, 24)))
}

/// Beyond what std accepts: at least four hex digits and one decimal digit,
/// so that `std::io`, `a::b`, `[1::2]` slices and `::1` stay out (loopback
/// and friends are not personal anyway).
fn ipv6_ok(text: &str, start: usize, end: usize) -> bool {
    text.get(start..end).is_some_and(|s| {
        s.parse::<Ipv6Addr>().is_ok()
            && s.bytes().filter(u8::is_ascii_hexdigit).count() >= 4
            && s.bytes().any(|b| b.is_ascii_digit())
    }) && stands_alone(PiiKind::Ip, text, start, end)
        && outside_colon_chain(text, start, end)
}

/// Not one stretch of a longer `a:b:c:…` chain, though a colon may separate
/// the address from a label or end a sentence (`IP:2001:db8::1`).
fn outside_colon_chain(text: &str, start: usize, end: usize) -> bool {
    let chained = |c: char| c == ':' || c.is_ascii_hexdigit();
    let head = text.get(..start).and_then(|h| h.strip_suffix(':'));
    let tail = text.get(end..).and_then(|t| t.strip_prefix(':'));
    !head.is_some_and(|h| h.ends_with(chained) || ends_with_token(h))
        && !tail.is_some_and(|t| t.starts_with(chained) || starts_with_token(t))
}

fn nanp_phone_ok(text: &str, start: usize, end: usize) -> bool {
    stands_alone(PiiKind::Phone, text, start, end)
}

/// E.164: 10–15 digits after `+`, no country code 0, and exactly 11 for the
/// North American plan (`+1`).
fn intl_phone_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let n = span.bytes().filter(u8::is_ascii_digit).count();
    (10..=15).contains(&n)
        && !span.starts_with("+0")
        && (!span.starts_with("+1") || n == 11)
        && stands_alone(PiiKind::Phone, text, start, end)
}

/// The last `n` bytes or a little fewer, cut on a character boundary.
fn last_bytes(text: &str, n: usize) -> &str {
    let mut i = text.len().saturating_sub(n);
    while !text.is_char_boundary(i) {
        i += 1;
    }
    text.get(i..).unwrap_or("")
}

/// Adds every other occurrence of the raw values already chosen.
fn sweep(text: &str, chosen: &mut Chosen) {
    let mut raws: Vec<(&str, PiiKind)> =
        chosen.0.values().filter_map(|f| Some((text.get(f.start..f.end)?, f.kind))).collect();
    // Longest first, so that the alternation prefers `a@b.com` to `a@b.co`.
    raws.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    raws.dedup_by(|a, b| a.0 == b.0);
    // One alternation per chunk keeps this linear in the text for the usual
    // handful of values and bounded for texts full of them.
    for chunk in raws.chunks(64) {
        let pattern = chunk.iter().map(|(raw, _)| regex::escape(raw)).collect::<Vec<_>>().join("|");
        // Escaped literals well under the size limit always compile.
        let Ok(re) = Regex::new(&pattern) else {
            continue;
        };
        let mut pos = 0;
        while let Some(m) = re.find_at(text, pos) {
            // The longest value here may clash with a finding a shorter one
            // (its prefix) clears.
            let start = m.start();
            let rest = text.get(start..).unwrap_or_default();
            let added = chunk.iter().filter(|(raw, _)| rest.starts_with(raw)).find_map(|&(raw, kind)| {
                let end = start + raw.len();
                chosen.insert(Finding { kind, start, end }).then_some(end)
            });
            pos = added.unwrap_or_else(|| next_char(text, start));
        }
    }
}
