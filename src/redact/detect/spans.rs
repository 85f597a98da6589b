//! Whether a candidate span is a value: its neighbours (a value stands
//! alone, not inside a longer word or number), then each kind's own rules
//! (check digits, number plans, dates that exist, street-name words).

use std::net::{Ipv4Addr, Ipv6Addr};

use super::super::PiiKind;
use super::super::checksums::{aba_ok, birth_date_ok, card_issuer_ok, iban_ok, luhn_ok, number, ssn_ok};
use super::super::vault::{ends_with_token, starts_with_token};
use super::patterns::{STREET_WORDS, VERSION_LABEL, is_dash, is_separator};

/// Whether what comes before a number makes it something other than a
/// house number: a word such as `Route 66`, `Chapter 12`, `Exit 4`, `March
/// 14`, `Order 12345`; a year after `in`, `by`, `of` (`in 2019 Main Street
/// reopened`); the thousands of an amount (`$1,200 Rent Ave`).
pub(super) fn not_a_house_number(head: &str, house: &str) -> bool {
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
/// street (see [`super::addresses`]).
pub(super) fn street_name_ok(name: &str, suffix: &str) -> bool {
    const FUNCTION_WORDS: &str =
        "the a an and or of to in on at for by with from my your our his her their its this that is are was were";
    let words: Vec<&str> = name.split_whitespace().collect();
    let function_word = words.iter().any(|w| FUNCTION_WORDS.split(' ').any(|f| f.eq_ignore_ascii_case(w)));
    let capitalised = words.iter().all(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()));
    let abbreviated = !STREET_WORDS.split('|').any(|w| w.eq_ignore_ascii_case(suffix.trim_end_matches('.')));
    let lower_case = words.len() <= 2 && words.iter().all(|w| w.starts_with(char::is_lowercase));
    !function_word && (capitalised || (abbreviated && lower_case))
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
/// `ORD-415-555-2671`, `ORD–415–555–2671`). For addresses `/` is not one:
/// `10.0.0.0/8`, `http://10.0.0.1/`.
fn joins(kind: PiiKind, c: char) -> bool {
    matches!(c, '.' | '_') || is_dash(c) || (c == '/' && kind != PiiKind::Ip)
}

/// The runs of ASCII digits in a span, whatever separates them; the
/// patterns have already held the separators to the ones a number may have.
fn digit_groups(span: &str) -> impl Iterator<Item = &str> {
    span.split(|c: char| !c.is_ascii_digit()).filter(|g| !g.is_empty())
}

/// Whether a span's digit groups have these lengths, or it is the bare
/// number they make up.
fn grouped_as(span: &str, lengths: &[usize]) -> bool {
    let found: Vec<usize> = digit_groups(span).map(str::len).collect();
    found == lengths || (found.len() == 1 && span.len() == lengths.iter().sum::<usize>())
}

/// Whether `start..end` is a value on its own rather than part of a longer
/// word or number. Our own tokens count as words here, so that redacting
/// redacted text sees the same neighbours the first pass saw.
pub(super) fn stands_alone(kind: PiiKind, text: &str, start: usize, end: usize) -> bool {
    let (Some(head), Some(tail)) = (text.get(..start), text.get(end..)) else {
        return false;
    };
    left_free(kind, head) && right_free(kind, tail)
}

/// Whether a value may start right after `head`.
pub(super) fn left_free(kind: PiiKind, head: &str) -> bool {
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
pub(super) fn right_free(kind: PiiKind, tail: &str) -> bool {
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

/// 13–19 digits, bare or in groups parted by any separators the pattern
/// admits, mixed too (`4111 1111-1111 1111`): Luhn and an issuer's range
/// and length tell a card from other long numbers.
pub(super) fn card_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let (mut digits, mut n) = ([0u8; 19], 0);
    for b in span.bytes().filter(u8::is_ascii_digit) {
        let Some(slot) = digits.get_mut(n) else {
            return false;
        };
        *slot = b - b'0';
        n += 1;
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
    let gap = head.trim_end_matches(is_separator);
    let g = gap.as_bytes();
    let n = g.len();
    gap.len() < head.len()
        && head.len() - gap.len() <= 4
        && n >= 4
        && g[n - 4..n - 2].iter().all(u8::is_ascii_uppercase)
        && g[n - 2..].iter().all(u8::is_ascii_digit)
        && !(n > 4 && g[n - 5].is_ascii_alphanumeric())
}

/// Compact, or in groups of four parted by blanks, dashes or a line break
/// (the last group may be shorter).
pub(super) fn iban_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let groups: Vec<&str> = span.split(|c: char| !c.is_ascii_alphanumeric()).filter(|g| !g.is_empty()).collect();
    let spacing_ok = match groups.split_last() {
        Some((last, [])) => !last.is_empty(),
        Some((last, rest)) => (1..=4).contains(&last.len()) && rest.iter().all(|g| g.len() == 4),
        None => false,
    };
    spacing_ok && iban_ok(&groups.concat()) && stands_alone(PiiKind::Iban, text, start, end)
}

/// Nine digits, bare or as 3-3-3, that pass Luhn and start as SINs do (not
/// 0 or 8), standing alone.
pub(super) fn sin_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let digits: Vec<u8> = span.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    grouped_as(span, &[3, 3, 3])
        && !matches!(digits[0], 0 | 8)
        && luhn_ok(&digits)
        && stands_alone(PiiKind::Sin, text, start, end)
        && !(span.len() > 9 && decimal_comma_follows(text.get(end..).unwrap_or_default()))
}

/// `,12` and then no digit: the cents of an amount written with a decimal
/// comma, whose thousands are the groups of three before it (`441 933 157,12 €`).
fn decimal_comma_follows(tail: &str) -> bool {
    let Some(rest) = tail.strip_prefix(',') else {
        return false;
    };
    let cents = rest.bytes().take_while(u8::is_ascii_digit).count();
    (1..=2).contains(&cents)
}

/// `AAA-GG-SSSS`, `AAA GG SSSS`, `AAA.GG.SSSS`, `AAA–GG–SSSS` (any of the
/// separators the pattern admits, mixed too) or, after a label, `AAAGGSSSS`.
pub(super) fn ssn_span_ok(text: &str, start: usize, end: usize) -> bool {
    let Some(span) = text.get(start..end) else {
        return false;
    };
    if !grouped_as(span, &[3, 2, 4]) {
        return false;
    }
    let digits: String = digit_groups(span).collect();
    let parts = [digits.get(..3), digits.get(3..5), digits.get(5..)];
    let [Some(area), Some(group), Some(serial)] = parts.map(|p| p.and_then(number)) else {
        return false;
    };
    ssn_ok(area, group, serial) && stands_alone(PiiKind::Ssn, text, start, end)
}

/// `1985-03-14`, `03/14/1985` or `14/03/1985` (one separator throughout;
/// either reading will do), `14.03.85`, `March 14, 1985`, `14th of Mar
/// 1985`: a day that exists, standing alone.
pub(super) fn dob_span_ok(text: &str, start: usize, end: usize) -> bool {
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
pub(super) fn routing_span_ok(text: &str, start: usize, end: usize) -> bool {
    let digits: Vec<u8> = text.get(start..end).unwrap_or_default().bytes().map(|b| b.wrapping_sub(b'0')).collect();
    aba_ok(&digits) && stands_alone(PiiKind::BankAccount, text, start, end)
}

pub(super) fn ipv4_ok(text: &str, start: usize, end: usize) -> bool {
    // std refuses octets over 255 and leading zeros (`010.1.1.1` may be octal).
    text.get(start..end).is_some_and(|s| s.parse::<Ipv4Addr>().is_ok())
        && stands_alone(PiiKind::Ip, text, start, end)
        && !text.get(..start).is_some_and(|head| VERSION_LABEL.is_match(last_bytes(head, 24)))
}

/// Beyond what std accepts: at least four hex digits and one decimal digit,
/// so that `std::io`, `a::b`, `[1::2]` slices and `::1` stay out (loopback
/// and friends are not personal anyway).
pub(super) fn ipv6_ok(text: &str, start: usize, end: usize) -> bool {
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

pub(super) fn nanp_phone_ok(text: &str, start: usize, end: usize) -> bool {
    stands_alone(PiiKind::Phone, text, start, end)
}

/// E.164: 10–15 digits after `+`, no country code 0, and exactly 11 for the
/// North American plan (`+1`).
pub(super) fn intl_phone_ok(text: &str, start: usize, end: usize) -> bool {
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
