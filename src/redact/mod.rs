//! PII detection and reversible typed tokens (`<EMAIL_1>`); docs/RAILS.md "PII".
//!
//! A [`Redactor`] finds personal data in text or JSON and swaps each value
//! for a token held in a per-conversation [`Vault`]; the vault puts the values
//! back in what returns to the user. Detection is deliberately conservative
//! where a check exists: a look-alike that fails its rule is left alone.
//!
//! | kind    | accepted                                                       |
//! |---------|----------------------------------------------------------------|
//! | `EMAIL` | `local@domain.tld`, dotted domain with a letter TLD (so not `user@localhost`), ≤ 254 bytes |
//! | `PHONE` | `+` and 10–15 digits (E.164; `+1` needs 11), groups parted by a *gap* (below) or nothing, `(0)` groups; North American `(415) 555-2671`, `415-555-2671`, `415.555.2671`, `415 555 2671`, `415/555-2671`, `415–555–2671` (area and exchange 2–9); bare `4155552671` only a few words after a label (`phone`, `tel`, `call me at`, …) |
//! | `CARD`  | 13–19 digits, bare or in groups of 3–6 (Amex 4-6-5, 19 digits 4-4-4-4-3 or 6-13) parted by a *wide gap* (below), mixed ones too (`4111 1111-1111 1111`); Luhn-valid, with an issuer prefix and length (Visa, Mastercard, Amex, Discover, UnionPay, Diners, JCB, Mir, Maestro) |
//! | `IBAN`  | upper-case country, check digits, BBAN; compact or groups of four parted by blanks, tabs, a dash or a line break; the country's length; mod 97 == 1 |
//! | `SSN`   | `AAA-GG-SSSS`, groups parted by a *gap* (`123 45 6789`, `123.45.6789`, `123–45–6789`, mixed); bare nine digits only a few words after `SSN`/`social security`; area not 000, 666, 9xx; group not 00; serial not 0000 |
//! | `IP`    | IPv4 (std parsing: octets ≤ 255, no leading zeros; not after `version`, `v`, `build`…), IPv6 (std parsing, ≥ 4 hex digits and a decimal digit, so not `::1` nor `std::io`; not a stretch of a longer `a:b:…` chain) |
//! | `DOB`   | a date only right after a label (`DOB`, `D.O.B.`, `date of birth`, `birth date`, `birthday`, `born`, with `is`/`was`/`on`/`the` between): `1985-03-14`, `03/14/1985`, `14/03/1985`, `14.03.1985`, `3/4/85`, `March 14, 1985`, `14 March 1985`, `Mar 14 1985`; the day must exist; the label stays |
//! | `ADDRESS` | house number (`221B`, `12-14`), one to four street-name words (capitalised or ordinals like `5th`; lower case only before an abbreviation: `12 main st`), a street suffix (`Street`/`St`, `Avenue`/`Ave`, `Road`/`Rd`, `Drive`/`Dr`, `Way`, `Court`/`Ct`, … any case, `.` after an abbreviation), then optionally a direction (`NW`), a unit (`Apt 4B`, `Suite 200`, `#12`) and `, City, ST 12345(-6789)` or `, City, PR A1A 1A1`; not after `Route`, `Chapter`, `Exit`, a month name …, a thousands comma (`$1,200`) or, for a year, `in`/`by`/`of`; not with `the`, `and`, `of` … among the name words |
//! | `BANK`  | ABA routing numbers (nine digits, Fed prefix, 3-7-1 check sum) a few words after `routing`/`ABA`/`RTN`, or beside a labelled account number (`acct 12345678 / 021000021`); account numbers of 6–17 digits right after `account`, `acct`, `a/c`, `acc no` (with `number`/`no.`/`#`/`is`/`:` between), no check digit; a number that is also a card, IBAN, SSN or SIN stays that |
//!
//! Separators between digit groups are the ones people, spreadsheets and
//! PDF text write. A *gap* (SSN, SIN, phone) is one blank — a space, a
//! no-break space (U+00A0), a thin, narrow (U+2009, U+202F), figure or other
//! fixed-width space — or a mark: a dash of any kind (hyphen, en and em
//! dash, minus sign, …) or a dot (and, in a phone, a slash), with at most
//! one blank either side; or a line break a PDF extractor left inside the
//! number. A *wide gap* (card) also takes up to three blanks or tabs. Several
//! blanks or a tab between groups without a check digit are a table's
//! columns, not one number; a SIN's groups of three followed by `,12` are an
//! amount's thousands and cents.
//!
//! A value must stand alone: a letter, digit, `@` or currency sign right next
//! to it, or a `.`/`_`/dash joining it to one (`1.2.3.4.5`, `ORD-415-555-2671`),
//! makes it part of something else. When rules overlap, checksummed kinds win
//! over structural ones and those over phone. Once a value is found, its
//! other occurrences in the same text are redacted as well.
//!
//! Where text is ambiguous the rules err towards redacting: `415-555-2671`
//! is a phone even when it is an order number, `1.2.3.4` an address unless
//! labelled as a version. Not covered: national formats outside North
//! America (`020 7946 0958`), lower-case IBANs, unlabelled bare numbers.
//!
//! The same raw text always maps to the same token within a vault; no
//! normalisation happens (`4111 1111 1111 1111` and `4111111111111111` get two
//! tokens), so that restoring gives back exactly what was written.

mod checksums;
mod clean;
mod detect;
mod json_out;
mod seal;
mod seen;
mod vault;

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod spellings;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

#[cfg(test)]
pub(crate) use clean::tests_clean;
pub use clean::{Redacted, Text, Texts};
pub use seal::SealKey;
pub use vault::{Vault, mask_tokens, name_in_address, name_token};

/// What a finding is; also the token prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PiiKind {
    /// An email address.
    Email,
    /// A phone number (E.164 or a national spelling).
    Phone,
    /// A payment card number (Luhn-checked).
    Card,
    /// An IBAN (its check digits verified).
    Iban,
    /// A US Social Security number.
    Ssn,
    /// IPv4 or IPv6.
    Ip,
    /// A Canadian Social Insurance Number (Luhn-checked).
    Sin,
    /// An API key, access token or private key (`sk-…`, `AKIA…`, `ghp_…`, a JWT, a PEM block).
    Secret,
    /// A date of birth: a date right after a label such as `DOB` or `born`.
    Dob,
    /// A street address: house number, street name and suffix, perhaps a
    /// unit and a city with a US state and ZIP or a Canadian postal code.
    Address,
    /// A US ABA routing number (checksummed, labelled or beside an account
    /// number) or a labelled bank account number.
    BankAccount,
}

impl PiiKind {
    /// Every kind, in token order.
    pub const ALL: [PiiKind; 11] = [
        Self::Email,
        Self::Phone,
        Self::Card,
        Self::Iban,
        Self::Ssn,
        Self::Ip,
        Self::Sin,
        Self::Secret,
        Self::Dob,
        Self::Address,
        Self::BankAccount,
    ];

    /// `EMAIL` in `<EMAIL_1>`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Email => "EMAIL",
            Self::Phone => "PHONE",
            Self::Card => "CARD",
            Self::Iban => "IBAN",
            Self::Ssn => "SSN",
            Self::Ip => "IP",
            Self::Sin => "SIN",
            Self::Secret => "SECRET",
            Self::Dob => "DOB",
            Self::Address => "ADDRESS",
            Self::BankAccount => "BANK",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for PiiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// One value found: its kind and byte range in the text searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Finding {
    /// What was found.
    pub kind: PiiKind,
    /// Its first byte in the text.
    pub start: usize,
    /// The byte after its last.
    pub end: usize,
}

/// Finds and redacts PII. Its patterns are compiled once per process; what
/// it holds is which texts it has already made or found clean (`seen.rs`),
/// shared by its clones, so it is cheap to copy around and share between
/// threads.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Redactor {
    seen: seen::Seen,
}

impl Redactor {
    /// Also compiles the patterns, so the first message does not pay for it.
    pub fn new() -> Self {
        detect::warm_up();
        Self::default()
    }

    /// `text` with every value found replaced by its token in `vault`.
    /// Tokens already in the text are left alone, so redacting twice changes
    /// nothing the second time.
    pub fn redact(&self, text: &str, vault: &mut Vault) -> String {
        self.redact_cow(text, vault).into_owned()
    }

    /// [`Redactor::redact`] on every string value, recursively, in document
    /// order. Object keys are structure, not data, and are left alone.
    pub fn redact_json(&self, value: &mut Value, vault: &mut Vault) {
        for_each_string(value, |s| {
            if let Cow::Owned(redacted) = self.redact_cow(s, vault) {
                *s = redacted;
            }
        });
    }

    /// Sorted, non-overlapping findings.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        detect::find(text)
    }

    /// Whether `text` holds any value a rule finds.
    pub fn contains_pii(&self, text: &str) -> bool {
        detect::contains(text)
    }

    fn redact_cow<'a>(&self, text: &'a str, vault: &mut Vault) -> Cow<'a, str> {
        // a text this redactor made or found clean before (the store's pass over what the pipeline redacted)
        if self.seen.clean(text) {
            return Cow::Borrowed(text);
        }
        let found = detect::find(text);
        if found.is_empty() {
            self.seen.note(text);
            return Cow::Borrowed(text);
        }
        vault.reserve_literals(text);
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for f in found {
            // Spans come from `find` on this very text; `get` only keeps this
            // total should that ever change.
            if let (Some(gap), Some(raw)) = (text.get(done..f.start), text.get(f.start..f.end)) {
                out.push_str(gap);
                vault.push_token(f.kind, raw, &mut out);
                done = f.end;
            }
        }
        out.push_str(text.get(done..).unwrap_or_default());
        self.seen.note(&out);
        Cow::Owned(out)
    }
}

/// Calls `f` on every string in `root`, in document order: the values,
/// and the keys that could hold PII (a caller's map may be keyed by a card
/// number or an address; see `detect::may_find`). Iterative, so that no
/// nesting depth can overflow the stack.
fn for_each_string(root: &mut Value, mut f: impl FnMut(&mut String)) {
    let mut stack = vec![root];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => f(s),
            Value::Array(items) => stack.extend(items.iter_mut().rev()),
            Value::Object(map) => {
                rekey(map, &mut f);
                stack.extend(map.values_mut().rev());
            }
            _ => {}
        }
    }
}

/// `map`'s keys through `f`, each value kept under its new key. A new key
/// that another key of the map already is leaves its old key where it was:
/// nothing is overwritten.
fn rekey(map: &mut serde_json::Map<String, Value>, f: &mut impl FnMut(&mut String)) {
    let mut moved = Vec::new();
    for key in map.keys().filter(|k| detect::may_find(k)) {
        let mut new = key.clone();
        f(&mut new);
        if &new != key {
            moved.push((key.clone(), new));
        }
    }
    for (old, new) in moved {
        if !map.contains_key(&new)
            && let Some(v) = map.remove(&old)
        {
            map.insert(new, v);
        }
    }
}
