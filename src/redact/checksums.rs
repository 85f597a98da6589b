//! Check digits and number plans that tell real identifiers from look-alikes.

/// Luhn (mod 10) over decimal digit values, check digit last.
pub(super) fn luhn_ok(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            match i % 2 {
                0 => d,
                _ if d > 4 => d * 2 - 9,
                _ => d * 2,
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// Bit set of allowed card lengths.
const fn lengths(lo: u32, hi: u32) -> u32 {
    (u32::MAX >> (31 - hi)) & !((1 << lo) - 1)
}

const VISA_LENGTHS: u32 = 1 << 13 | 1 << 16 | 1 << 19;

/// Issuer ranges: (first, last, digits the range covers, allowed lengths).
/// A Luhn-valid number outside these is more likely an order or account
/// number than a card, so it is left alone.
const CARD_RANGES: &[(u32, u32, usize, u32)] = &[
    (4, 4, 1, VISA_LENGTHS),              // Visa
    (51, 55, 2, lengths(16, 16)),         // Mastercard
    (2221, 2720, 4, lengths(16, 16)),     // Mastercard 2-series
    (34, 34, 2, lengths(15, 15)),         // American Express
    (37, 37, 2, lengths(15, 15)),         // American Express
    (6011, 6011, 4, lengths(16, 19)),     // Discover
    (644, 649, 3, lengths(16, 19)),       // Discover
    (65, 65, 2, lengths(16, 19)),         // Discover
    (622126, 622925, 6, lengths(16, 19)), // Discover co-branded UnionPay
    (62, 62, 2, lengths(16, 19)),         // UnionPay
    (300, 305, 3, lengths(14, 19)),       // Diners Club
    (36, 36, 2, lengths(14, 19)),         // Diners Club
    (38, 39, 2, lengths(16, 19)),         // Diners Club
    (3528, 3589, 4, lengths(16, 19)),     // JCB
    (2200, 2204, 4, lengths(16, 19)),     // Mir
    (5018, 5018, 4, lengths(13, 19)),     // Maestro
    (5020, 5020, 4, lengths(13, 19)),     // Maestro
    (5038, 5038, 4, lengths(13, 19)),     // Maestro
    (5893, 5893, 4, lengths(13, 19)),     // Maestro
    (6304, 6304, 4, lengths(13, 19)),     // Maestro
    (6759, 6759, 4, lengths(13, 19)),     // Maestro
    (6761, 6763, 4, lengths(13, 19)),     // Maestro
];

/// Whether the digits start with a known issuer prefix and have a length that
/// issuer uses.
pub(super) fn card_issuer_ok(digits: &[u8]) -> bool {
    let len = digits.len();
    CARD_RANGES.iter().any(|&(lo, hi, width, lens)| {
        let prefix = digits.get(..width).map(|p| p.iter().fold(0u32, |acc, &d| acc * 10 + u32::from(d)));
        len < 32 && lens & (1 << len) != 0 && prefix.is_some_and(|p| (lo..=hi).contains(&p))
    })
}

/// IBAN length per country (SWIFT IBAN registry).
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BR", 29),
    ("BY", 28),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NL", 18),
    ("NO", 15),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("SA", 24),
    ("SC", 31),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
];

pub(super) fn iban_length(country: &str) -> Option<usize> {
    IBAN_LENGTHS.iter().find(|(c, _)| *c == country).map(|&(_, len)| len)
}

/// ISO 13616: right length for the country and ISO 7064 mod 97-10 == 1.
/// `iban` is the compact form (no spaces), upper case.
pub(super) fn iban_ok(iban: &str) -> bool {
    let valid_chars = iban.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    if !valid_chars || iban.get(..2).and_then(iban_length) != Some(iban.len()) {
        return false;
    }
    let (head, tail) = iban.split_at(4);
    tail.bytes().chain(head.bytes()).fold(0u32, |rem, b| {
        let v = u32::from(if b.is_ascii_digit() { b - b'0' } else { b - b'A' + 10 });
        let rem = if v >= 10 { rem * 100 } else { rem * 10 };
        (rem + v) % 97
    }) == 1
}

/// SSA rules: no area 000, 666 or 900–999, no group 00, no serial 0000.
pub(super) fn ssn_ok(area: u32, group: u32, serial: u32) -> bool {
    !matches!(area, 0 | 666 | 900..) && group != 0 && serial != 0
}

/// An ABA routing number: nine digits, a Federal Reserve prefix (00–12
/// banks, 21–32 thrifts, 61–72 electronic, 80 traveller's cheques), and
/// 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). All zeros passes
/// the sum but is no bank's.
pub(super) fn aba_ok(digits: &[u8]) -> bool {
    let [d1, d2, ..] = digits else {
        return false;
    };
    let prefix = d1 * 10 + d2;
    let sum: u32 = digits.iter().zip([3, 7, 1].iter().cycle()).map(|(&d, &w)| u32::from(d) * w).sum();
    digits.len() == 9
        && digits.iter().all(|&d| d <= 9)
        && matches!(prefix, 0..=12 | 21..=32 | 61..=72 | 80)
        && sum.is_multiple_of(10)
        && digits.iter().any(|&d| d != 0)
}

/// A day that exists on the Gregorian calendar (29 February only in leap
/// years), in a year someone alive or lately dead could have been born.
pub(super) fn birth_date_ok(year: u32, month: u32, day: u32) -> bool {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1870..=2099).contains(&year) && (1..=days).contains(&day)
}

/// Value of a run of ASCII digits (`None` if anything else, or too long).
pub(super) fn number(digits: &str) -> Option<u32> {
    (!digits.is_empty() && digits.len() <= 9 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.bytes().fold(0, |acc, b| acc * 10 + u32::from(b - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(s: &str) -> Vec<u8> {
        s.bytes().map(|b| b - b'0').collect()
    }

    #[test]
    fn luhn_accepts_test_cards_and_rejects_one_off() {
        assert!(luhn_ok(&digits("4111111111111111")));
        assert!(luhn_ok(&digits("378282246310005")));
        assert!(!luhn_ok(&digits("4111111111111112")));
        assert!(!luhn_ok(&[]));
    }

    #[test]
    fn issuer_ranges_need_matching_length() {
        assert!(card_issuer_ok(&digits("4111111111111111")));
        assert!(card_issuer_ok(&digits("2221000000000009")));
        assert!(card_issuer_ok(&digits("378282246310005")));
        assert!(!card_issuer_ok(&digits("3782822463100050"))); // Amex is 15 long
        assert!(!card_issuer_ok(&digits("9780306406157"))); // an ISBN
    }

    #[test]
    fn iban_mod97_and_length() {
        assert!(iban_ok("DE89370400440532013000"));
        assert!(iban_ok("GB82WEST12345698765432"));
        assert!(!iban_ok("DE88370400440532013000"));
        assert!(!iban_ok("DE8937040044053201300"));
        assert!(!iban_ok("ZZ89370400440532013000"));
        assert!(!iban_ok(""));
    }

    #[test]
    fn ssn_rules() {
        assert!(ssn_ok(123, 45, 6789));
        assert!(!ssn_ok(0, 45, 6789));
        assert!(!ssn_ok(666, 45, 6789));
        assert!(!ssn_ok(912, 45, 6789));
        assert!(!ssn_ok(123, 0, 6789));
        assert!(!ssn_ok(123, 45, 0));
    }

    #[test]
    fn aba_routing_numbers() {
        for valid in ["021000021", "011000015", "121000358", "322271627", "800000006"] {
            assert!(aba_ok(&digits(valid)), "{valid}");
        }
        // Any one digit changed breaks the sum.
        let base = digits("021000021");
        for i in 0..9 {
            for d in 0..10 {
                let mut changed = base.clone();
                changed[i] = d;
                assert_eq!(aba_ok(&changed), d == base[i], "{changed:?}");
            }
        }
        assert!(!aba_ok(&digits("000000000")));
        assert!(!aba_ok(&digits("131000005"))); // the sum holds, prefix 13 is unused
        assert!(!aba_ok(&digits("02100002")));
        assert!(!aba_ok(&digits("0210000210")));
        assert!(!aba_ok(&[]));
    }

    #[test]
    fn birth_dates_exist_on_the_calendar() {
        assert!(birth_date_ok(1985, 3, 14));
        assert!(birth_date_ok(2000, 2, 29));
        assert!(birth_date_ok(1984, 12, 31));
        assert!(!birth_date_ok(1900, 2, 29));
        assert!(!birth_date_ok(1985, 2, 29));
        assert!(!birth_date_ok(1985, 4, 31));
        assert!(!birth_date_ok(1985, 13, 1));
        assert!(!birth_date_ok(1985, 3, 0));
        assert!(!birth_date_ok(1066, 10, 14));
    }
}
