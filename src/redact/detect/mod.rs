//! Finding PII. Each rule proposes candidates with a regex and validates them
//! in code (check digits, number plans, neighbours): the regex crate has no
//! look-around, and check digits are not regular anyway.
//!
//! This file holds the rule tables, the finders that turn matches into
//! candidates, and the choosing among overlapping ones; `patterns` holds the
//! regexes and word lists, `spans` the judging of one candidate span.

mod patterns;
mod spans;

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use self::patterns::{
    ACCOUNT_LABELLED, ADDRESS, CARD, DIGIT_RUN, DOB_LABELLED, EMAIL, IBAN, IPV4, IPV6, PHONE_INTL, PHONE_LABELLED,
    PHONE_NANP, ROUTING_LABELLED, SECRETS, SIN, SIN_LABELLED, SSN, SSN_LABELLED, VERSION_LABEL,
};
use self::spans::{
    card_ok, dob_span_ok, iban_span_ok, intl_phone_ok, ipv4_ok, ipv6_ok, left_free, nanp_phone_ok, not_a_house_number,
    right_free, routing_span_ok, sin_span_ok, ssn_span_ok, stands_alone, street_name_ok,
};
use super::vault::ends_with_token;
use super::{Finding, PiiKind};

type Validate = fn(&str, usize, usize) -> bool;

/// Where a match may be cut short, besides its end: a greedy match may have
/// swallowed a following number (`4111 … 1111 2025`).
#[derive(Clone, Copy)]
enum Cut {
    /// Nowhere: the pattern's length is fixed.
    Never,
    /// Before each of these bytes.
    Before(&'static [u8]),
    /// Where a group of letters or digits ends, whatever separates the
    /// groups (a space, a no-break space, a dash of any kind, a line break).
    GroupEnds,
}

/// Candidates, where a match may be cut short, kind, validation.
static RULES: [(&LazyLock<Regex>, Cut, PiiKind, Validate); 8] = [
    (&SIN, Cut::Never, PiiKind::Sin, sin_span_ok),
    (&CARD, Cut::GroupEnds, PiiKind::Card, card_ok),
    (&IBAN, Cut::GroupEnds, PiiKind::Iban, iban_span_ok),
    (&SSN, Cut::Never, PiiKind::Ssn, ssn_span_ok),
    (&IPV4, Cut::Never, PiiKind::Ip, ipv4_ok),
    // The match may run on into what follows (`…::1:a@x.com`).
    (&IPV6, Cut::Before(b":."), PiiKind::Ip, ipv6_ok),
    (&PHONE_INTL, Cut::GroupEnds, PiiKind::Phone, intl_phone_ok),
    (&PHONE_NANP, Cut::Never, PiiKind::Phone, nanp_phone_ok),
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

/// The shortest credential [`SECRETS`] finds (an AWS key id: `AKIA` and 16 more).
const SHORTEST_SECRET: usize = 20;

/// Whether any rule could find something in `text`: every rule but the
/// credentials' needs a digit or an `@` (see [`detect`]), and no credential
/// is shorter than [`SHORTEST_SECRET`]. False means `find` finds nothing.
pub(super) fn may_find(text: &str) -> bool {
    text.len() >= SHORTEST_SECRET || text.bytes().any(|b| b.is_ascii_digit() || b == b'@')
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
        for &(re, cut, kind, valid) in &RULES {
            scan(re, cut, text, kind, &mut found, valid);
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
/// that starts where a match starts and ends where it ends or where `cut`
/// allows (a greedy match may have swallowed a following number: `4111 …
/// 1111 2025`). Every start is tried, inside earlier matches too: the shorter
/// value there may be the one that survives overlap resolution (`…::1 415-…`
/// where `1 415-…` loses to the address). Patterns are short, so this stays
/// linear.
fn scan(re: &Regex, cut: Cut, text: &str, kind: PiiKind, out: &mut Vec<Finding>, valid: Validate) {
    let mut pos = 0;
    while let Some(m) = re.find_at(text, pos) {
        let start = m.start();
        let ends = cuts(text, start, m.end(), cut).filter(|&end| valid(text, start, end));
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

fn next_char(text: &str, i: usize) -> usize {
    text.get(i..).and_then(|t| t.chars().next()).map_or(text.len(), |c| i + c.len_utf8())
}

/// The match end, then each place inside the match where `cut` allows it to
/// end, longest first. Every place is a character boundary: it is before an
/// ASCII byte, or after one.
fn cuts(text: &str, start: usize, end: usize, cut: Cut) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    let inner = match cut {
        Cut::Never => start..start,
        Cut::Before(_) | Cut::GroupEnds => start + 1..end,
    };
    let allowed = move |i: usize| match cut {
        Cut::Never => false,
        Cut::Before(seps) => bytes.get(i).is_some_and(|b| seps.contains(b)),
        Cut::GroupEnds => {
            bytes.get(i - 1).is_some_and(u8::is_ascii_alphanumeric)
                && bytes.get(i).is_some_and(|b| !b.is_ascii_alphanumeric())
        }
    };
    std::iter::once(end).chain(inner.rev().filter(move |&i| allowed(i)))
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
