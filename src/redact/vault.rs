//! The per-conversation map between tokens and the raw values they stand for.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::sync::{Arc, LazyLock};

use regex::Regex;
use serde_json::Value;

use super::{PiiKind, for_each_string};

/// Anything shaped like a token; [`parse_token`] decides whether it is one.
static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<(?:EMAIL|PHONE|CARD|IBAN|SSN|IP|SIN|SECRET|DOB|ADDRESS|BANK)_[0-9]{1,20}(?::name)?>")
        .expect("static pattern")
});

/// The view of an address token that shows the name in the address:
/// `<EMAIL_1:name>` restores to `Alex` where `<EMAIL_1>` is
/// `alex.chan@company.com`. An agent that never sees the address can still
/// greet its owner by name, and only the user's own vault fills it in.
const NAME_VIEW: &str = ":name";

fn is_name_view(token: &str) -> bool {
    token.strip_suffix('>').is_some_and(|t| t.ends_with(NAME_VIEW))
}

/// `<EMAIL_12>` (or its name view `<EMAIL_12:name>`) → (Email, 12). Leading
/// zeros are refused so that every number has exactly one spelling, or
/// `<EMAIL_01>` typed by a user would restore.
pub(super) fn parse_token(token: &str) -> Option<(PiiKind, u64)> {
    let inner = token.strip_prefix('<')?.strip_suffix('>')?;
    let inner = match inner.strip_suffix(NAME_VIEW) {
        Some(address) if address.starts_with("EMAIL_") => address,
        Some(_) => return None,
        None => inner,
    };
    let (prefix, n) = inner.rsplit_once('_')?;
    let kind = PiiKind::ALL.into_iter().find(|k| k.prefix() == prefix)?;
    if n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((kind, n.parse().ok()?))
}

/// The first name an address is made of: `alex.chan@company.com` → `Alex`;
/// none where the part before `@` does not start with a name (`info42@…`,
/// `12345@…`).
pub fn name_in_address(address: &str) -> Option<String> {
    let local = address.split('@').next()?;
    let first = local.split(['.', '_', '-', '+']).next()?;
    let mut chars = first.chars();
    let initial = chars.next()?;
    (first.chars().count() > 1 && first.chars().all(char::is_alphabetic))
        .then(|| initial.to_uppercase().chain(chars).collect())
}

/// `<EMAIL_1>` → `<EMAIL_1:name>`: the token of the name in an address
/// token's address, which the address's vault fills in on restore.
pub fn name_token(address_token: &str) -> Option<String> {
    let (kind, _) = parse_token(address_token).filter(|_| !is_name_view(address_token))?;
    (kind == PiiKind::Email).then(|| format!("{}{NAME_VIEW}>", &address_token[..address_token.len() - 1]))
}

/// Whether `text` ends (or starts) with something [`parse_token`] accepts.
/// Only the last (first) few bytes are looked at: tokens are short.
pub(super) fn ends_with_token(text: &str) -> bool {
    text.ends_with('>')
        && text
            .char_indices()
            .rev()
            .take(32)
            .find(|&(_, c)| c == '<')
            .is_some_and(|(i, _)| parse_token(&text[i..]).is_some())
}

pub(super) fn starts_with_token(text: &str) -> bool {
    text.starts_with('<')
        && text
            .char_indices()
            .take(32)
            .find(|&(_, c)| c == '>')
            .is_some_and(|(i, _)| parse_token(&text[..=i]).is_some())
}

/// `text` with the digits of every token-shaped span (`<EMAIL_1>`,
/// `<CARD_12>`, `<EMAIL_1:name>`) replaced by `_`: the same length, so
/// every offset found in the result holds in `text`. A token stands for a
/// value, its number only tells tokens apart; whatever reads numbers,
/// amounts or dates out of text reads them from this, so that the `1` of
/// `<EMAIL_1>` is never booked as $1.00. `_` keeps a token one word (as
/// digits did) without being a digit, a letter or a separator that a
/// parser gives meaning to.
pub fn mask_tokens(text: &str) -> Cow<'_, str> {
    if !text.contains('<') {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut done = 0;
    for m in TOKEN.find_iter(text) {
        out.push_str(text.get(done..m.start()).unwrap_or_default());
        out.extend(m.as_str().chars().map(|c| if c.is_ascii_digit() { '_' } else { c }));
        done = m.end();
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(text.get(done..).unwrap_or_default());
    Cow::Owned(out)
}

/// Token ↔ raw value for one conversation. The same raw value always gets the
/// same token; numbers count up per kind. `Debug` shows only the count, so a
/// vault can sit in structs that get logged.
#[derive(Clone, Default)]
pub struct Vault {
    /// One slot per kind, in [`PiiKind::ALL`] order; empty until the vault
    /// issues its first token or reserves its first literal. Most trees
    /// never see PII, and a process keeps thousands of conversations'
    /// vaults: an empty one is a pointer, not eleven slots of hash maps.
    slots: Vec<Slot>,
}

#[derive(Clone, Default)]
struct Slot {
    by_raw: HashMap<Arc<str>, u64>,
    by_number: HashMap<u64, Arc<str>>,
    last: u64,
    /// Numbers of token-shaped text that arrived in the input: never handed
    /// out, so that restoring cannot turn a user's literal `<EMAIL_1>` into
    /// someone's address.
    reserved: HashSet<u64>,
}

impl Vault {
    /// An empty vault.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&self, kind: PiiKind) -> Option<&Slot> {
        self.slots.get(kind.index())
    }

    fn slot_mut(&mut self, kind: PiiKind) -> &mut Slot {
        if self.slots.is_empty() {
            self.slots.resize_with(PiiKind::ALL.len(), Slot::default);
        }
        &mut self.slots[kind.index()]
    }

    /// Number of raw values held.
    pub fn len(&self) -> usize {
        self.slots.iter().map(|s| s.by_number.len()).sum()
    }

    /// Whether it holds no raw value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Grows whenever the vault issues a token or reserves a literal (it
    /// never shrinks): equal versions of one vault hold the same tokens.
    pub fn version(&self) -> u64 {
        self.slots.iter().map(|s| s.last.saturating_add(s.reserved.len() as u64)).fold(0, u64::saturating_add)
    }

    /// The raw value behind `token`, if this vault issued it.
    pub fn get(&self, token: &str) -> Option<&str> {
        let (kind, n) = parse_token(token)?;
        self.slot(kind)?.by_number.get(&n).map(|raw| &**raw)
    }

    /// Puts raw values back in place of the tokens this vault issued; any
    /// other text, token-shaped or not, is left as it is.
    pub fn restore(&self, text: &str) -> String {
        self.restore_cow(text).into_owned()
    }

    /// [`Vault::restore`] on every string value (object keys are left alone,
    /// as redaction leaves them alone).
    pub fn restore_json(&self, value: &mut Value) {
        for_each_string(value, |s| {
            if let Cow::Owned(restored) = self.restore_cow(s) {
                *s = restored;
            }
        });
    }

    fn restore_cow<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_empty() || !text.contains('<') {
            return Cow::Borrowed(text);
        }
        TOKEN.replace_all(text, |caps: &regex::Captures<'_>| {
            let token = &caps[0];
            match self.get(token) {
                Some(address) if is_name_view(token) => name_in_address(address).unwrap_or_else(|| address.into()),
                Some(raw) => raw.to_owned(),
                None => token.to_owned(),
            }
        })
    }

    /// Marks token-shaped text this vault did not issue as taken.
    pub fn reserve_literals(&mut self, text: &str) {
        if !text.contains('<') {
            return;
        }
        for m in TOKEN.find_iter(text) {
            if let Some((kind, n)) = parse_token(m.as_str()) {
                let slot = self.slot_mut(kind);
                if !slot.by_number.contains_key(&n) {
                    slot.reserved.insert(n);
                }
            }
        }
    }

    /// Appends the token for `raw` to `out`, issuing a new one if needed.
    pub(super) fn push_token(&mut self, kind: PiiKind, raw: &str, out: &mut String) {
        let slot = self.slot_mut(kind);
        let key = raw_key(kind, raw);
        let n = match slot.by_raw.get(&*key) {
            Some(&n) => n,
            None => {
                // u64 cannot run out in practice; saturating keeps this total.
                slot.last = slot.last.saturating_add(1);
                while slot.reserved.contains(&slot.last) {
                    slot.last = slot.last.saturating_add(1);
                }
                slot.by_raw.insert(key.as_ref().into(), slot.last);
                slot.by_number.insert(slot.last, raw.into());
                slot.last
            }
        };
        // Writing to a String cannot fail.
        let _ = write!(out, "<{}_{n}>", kind.prefix());
    }
}

/// A vault's contents, per kind in [`PiiKind::ALL`] order, for sealing
/// (`seal.rs`): never logged or stored as it is.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct VaultParts(Vec<SlotParts>);

#[derive(serde::Serialize, serde::Deserialize)]
struct SlotParts {
    last: u64,
    values: Vec<(u64, String)>,
    reserved: Vec<u64>,
}

impl Vault {
    pub(super) fn parts(&self) -> VaultParts {
        VaultParts(
            PiiKind::ALL
                .iter()
                .map(|kind| match self.slot(*kind) {
                    Some(s) => SlotParts {
                        last: s.last,
                        values: s.by_number.iter().map(|(n, raw)| (*n, raw.to_string())).collect(),
                        reserved: s.reserved.iter().copied().collect(),
                    },
                    None => SlotParts { last: 0, values: Vec::new(), reserved: Vec::new() },
                })
                .collect(),
        )
    }

    /// The vault `parts` describe; None when they do not fit this build's kinds.
    pub(super) fn from_parts(parts: VaultParts) -> Option<Self> {
        if parts.0.len() != PiiKind::ALL.len() {
            return None;
        }
        let mut vault = Vault::default();
        for (kind, p) in PiiKind::ALL.iter().zip(parts.0) {
            if p.last == 0 && p.values.is_empty() && p.reserved.is_empty() {
                continue;
            }
            let slot = vault.slot_mut(*kind);
            for (n, raw) in p.values {
                slot.by_raw.insert(raw_key(*kind, &raw).into(), n);
                slot.by_number.insert(n, raw.into());
            }
            slot.last = p.last.max(slot.by_number.keys().copied().max().unwrap_or(0));
            slot.reserved = p.reserved.into_iter().collect();
        }
        Some(vault)
    }
}

/// What a raw value is looked up by: an address is the same address in any
/// case (`DI@x.io` is `di@x.io`), one token, restored as first written.
fn raw_key(kind: PiiKind, raw: &str) -> Cow<'_, str> {
    if kind == PiiKind::Email { Cow::Owned(raw.to_lowercase()) } else { Cow::Borrowed(raw) }
}

impl fmt::Debug for Vault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vault").field("len", &self.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod empty_tests {
    use super::*;

    #[test]
    fn an_empty_vault_allocates_nothing_until_its_first_token() {
        let mut vault = Vault::new();
        assert_eq!(vault.slots.capacity(), 0, "no slots before any PII");
        assert_eq!(vault.get("<EMAIL_1>"), None);
        assert_eq!(vault.restore("see <EMAIL_1>"), "see <EMAIL_1>");
        let empty = Vault::from_parts(vault.parts()).unwrap();
        assert_eq!(empty.slots.capacity(), 0, "sealing and opening an empty vault keeps it empty");
        let mut out = String::new();
        vault.push_token(PiiKind::Email, "ada@example.com", &mut out);
        assert_eq!(out, "<EMAIL_1>");
        assert_eq!(vault.slots.len(), PiiKind::ALL.len());
        let again = Vault::from_parts(vault.parts()).unwrap();
        assert_eq!(again.restore("write to <EMAIL_1>"), "write to ada@example.com");
    }

    #[test]
    fn masking_hides_a_tokens_digits_and_keeps_every_offset() {
        let text = "23.10 to <EMAIL_1>, <CARD_12>; hi <EMAIL_3:name> <EMAIL_01> <email_1> 4.50 ünï <IP_7>";
        let masked = mask_tokens(text);
        assert_eq!(masked, "23.10 to <EMAIL__>, <CARD___>; hi <EMAIL__:name> <EMAIL___> <email_1> 4.50 ünï <IP__>");
        assert_eq!(masked.len(), text.len());
        assert!(matches!(mask_tokens("no tokens 1 < 2"), Cow::Borrowed(_)));
    }
}
