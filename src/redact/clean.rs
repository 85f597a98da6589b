//! What the store writes: [`Redacted`] values. Every text a value holds
//! has passed the redactor (its PII swapped for tokens of a vault), and
//! only this module makes one, so the store's write methods, which take
//! nothing else, cannot be handed a raw value by a caller that forgot, nor
//! by a table added later ([`Texts`] names the texts of each kind of row).

use std::borrow::Cow;
use std::ops::Deref;

use serde_json::Value;

use super::{Redactor, Vault};

/// A value whose every text has passed the redactor: the only kind of
/// value the store's write methods take. Made by [`Redactor::redacted`].
#[derive(Debug, Clone, PartialEq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// What a sealing or redacting function of this module made.
    pub(super) fn made(value: T) -> Self {
        Self(value)
    }

    /// The value itself.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// A redacted value's part, itself redacted (its texts are some of the whole's).
    pub fn part<U: Clone>(&self, part: impl FnOnce(&T) -> &U) -> Redacted<U> {
        Redacted(part(&self.0).clone())
    }
}

impl<T> Redacted<Vec<T>> {
    /// No values at all: nothing to redact.
    pub fn none() -> Self {
        Self(Vec::new())
    }
}

impl<T> Deref for Redacted<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// One text of a row, as [`Texts::texts`] hands it over.
#[derive(Debug)]
pub enum Text<'a> {
    /// Plain text.
    Plain(&'a mut String),
    /// A JSON document: its strings are redacted (values, and keys that could hold PII), its layout kept.
    Json(&'a mut String),
    /// A JSON value: its strings are redacted (values, and keys that could hold PII).
    Value(&'a mut Value),
}

/// The texts of a kind of value the store writes: every field a person's
/// data may reach (names, objectives, answers, envelopes, notes), each
/// visited once. Ids, states, codes and times are not texts.
pub trait Texts {
    /// Calls `visit` on each text.
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>));

    /// Where the value keeps the vault its texts were redacted with, sealed
    /// (ciphertext, see [`SealKey`](super::SealKey)), for its owner to get
    /// the values back: [`Redactor::redacted_keeping_vault`]. Most kinds of
    /// row keep none.
    fn keep_vault(&mut self, sealed: String) {
        let _ = sealed;
    }
}

impl Texts for String {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(self));
    }
}

impl<T: Texts> Texts for Option<T> {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        if let Some(t) = self {
            t.texts(visit);
        }
    }
}

impl<T: Texts> Texts for Vec<T> {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        for t in self {
            t.texts(visit);
        }
    }
}

impl<A: Texts, B: Texts> Texts for (A, B) {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        self.0.texts(visit);
        self.1.texts(visit);
    }
}

impl Redactor {
    /// `value` with every text redacted with `vault` (a token already in
    /// a text stays as it is, so a value the pipeline redacted before comes
    /// through unchanged): the only way to make a [`Redacted`].
    pub fn redacted<T: Texts>(&self, mut value: T, vault: &mut Vault) -> Redacted<T> {
        value.texts(&mut |text| match text {
            Text::Plain(s) => {
                if let Cow::Owned(r) = self.redact_cow(s, vault) {
                    *s = r;
                }
            }
            Text::Json(s) => self.redact_json_text(s, vault),
            Text::Value(v) => self.redact_json(v, vault),
        });
        Redacted(value)
    }

    /// [`Redactor::redacted`], and the vault, sealed with `key`, kept in the
    /// value ([`Texts::keep_vault`]): what is stored is tokens and ciphertext,
    /// and what the owner reads back has its values again.
    pub fn redacted_keeping_vault<T: Texts>(&self, value: T, vault: &mut Vault, key: &super::SealKey) -> Redacted<T> {
        let mut out = self.redacted(value, vault);
        if !vault.is_empty() {
            out.0.keep_vault(key.seal(vault));
        }
        out
    }

    /// A JSON document's strings (values, and keys that could hold PII)
    /// redacted where they lie ([`json_strings`]: no tree is built), the
    /// document written again only where one changed. Text that is not
    /// JSON is redacted as text. Most documents reach the store redacted
    /// already: their texts were made by this redactor (`seen.rs` knows
    /// them), and their ids and times are not a person's data, so little
    /// of a document is scanned again.
    pub(super) fn redact_json_text(&self, s: &mut String, vault: &mut Vault) {
        // a document written again as it was (a step's envelope at its start and its end)
        if s.is_empty() {
            return;
        }
        let key = self.seen.key(s);
        if key.is_some_and(|k| self.seen.has(k)) {
            return;
        }
        let Some(strings) = json_strings(s) else {
            if let Cow::Owned(r) = self.redact_cow(s, vault) {
                *s = r;
            }
            return;
        };
        let mut changed: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for span in strings {
            let literal = &s[span.clone()];
            let inner = &literal[1..literal.len() - 1];
            let text: Cow<'_, str> = if inner.contains('\\') {
                // escapes: the text is what they stand for (a tab between a card's groups is a tab)
                match serde_json::from_str::<String>(literal) {
                    Ok(t) => Cow::Owned(t),
                    Err(_) => continue, // unreachable: `json_strings` read a valid document
                }
            } else {
                Cow::Borrowed(inner)
            };
            if not_personal(&text) {
                continue;
            }
            if let Cow::Owned(r) = self.redact_cow(&text, vault) {
                changed.push((span, serde_json::Value::String(r).to_string()));
            }
        }
        if !changed.is_empty() {
            let mut out = String::with_capacity(s.len() + 16 * changed.len());
            let mut done = 0;
            for (span, literal) in changed {
                out.push_str(&s[done..span.start]);
                out.push_str(&literal);
                done = span.end;
            }
            out.push_str(&s[done..]);
            *s = out;
            self.seen.note(s);
        } else if let Some(k) = key {
            self.seen.add(k);
        }
    }
}

/// A request, root or session id, or a time (RFC 3339): never a person's data.
pub(super) fn not_personal(v: &str) -> bool {
    (v.len() == 36 && uuid::Uuid::try_parse(v).is_ok())
        || ((20..=35).contains(&v.len())
            && v.as_bytes().get(4) == Some(&b'-')
            && chrono::DateTime::parse_from_rfc3339(v).is_ok())
}

/// Where each string of the JSON document `s` that could hold PII is
/// (quotes included), in document order: every value, and each key that
/// could (a map keyed by a card number or an address; most keys are names
/// no rule can find anything in, `detect::may_find`). None when `s` is not
/// one JSON document (or nests deeper than serde_json reads).
fn json_strings(s: &str) -> Option<Vec<std::ops::Range<usize>>> {
    // valid JSON, checked without building it: then every `"` outside a string opens one
    serde_json::from_str::<serde::de::IgnoredAny>(s).ok()?;
    let bytes = s.as_bytes();
    let mut strings = Vec::new();
    let mut at = 0;
    // the next `"` outside a string opens one; inside, the next `"` or `\` ends it or escapes
    while let Some(open) = memchr::memchr(b'"', &bytes[at..]).map(|i| at + i) {
        let mut i = open + 1;
        let close = loop {
            match memchr::memchr2(b'"', b'\\', bytes.get(i..)?).map(|j| i + j) {
                // an escape takes the next byte with it (`\"` is a quote inside the string)
                Some(j) if bytes[j] == b'\\' => i = j + 2,
                Some(j) => break j + 1,
                None => return None, // unreachable: the document is valid
            }
        };
        // a key is followed by `:`. It is read before its escapes are: an escape only adds a
        // digit written as digits (`\u0031`), and decoding never makes a text longer
        let key = bytes[close..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
        if !key || super::detect::may_find(&s[open + 1..close - 1]) {
            strings.push(open..close);
        }
        at = close;
    }
    Some(strings)
}

/// A value through the redactor with a vault of its own: for unit tests that write rows.
#[cfg(test)]
pub(crate) fn tests_clean<T: Texts>(value: T) -> Redacted<T> {
    Redactor::new().redacted(value, &mut Vault::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Row {
        id: u32,
        note: String,
        doc: String,
        tags: Vec<String>,
    }

    impl Texts for Row {
        fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
            visit(Text::Plain(&mut self.note));
            visit(Text::Json(&mut self.doc));
            self.tags.texts(visit);
        }
    }

    fn row() -> Row {
        Row {
            id: 7,
            note: "call ann@example.com".into(),
            doc: r#"{"card":"4111 1111 1111 1111","to":"\"ann@example.com\"","n":4111111111111111}"#.into(),
            tags: vec!["ok".into(), "ssn 123-45-6789".into()],
        }
    }

    #[test]
    fn every_text_of_a_row_is_redacted_and_json_by_its_values() {
        let mut vault = Vault::new();
        let clean = Redactor::new().redacted(row(), &mut vault);
        assert_eq!(clean.id, 7);
        assert_eq!(clean.note, "call <EMAIL_1>");
        // the values are what is redacted (the quotes JSON escapes stay quotes), the numbers stay numbers
        let doc: Value = serde_json::from_str(&clean.doc).unwrap();
        assert!(doc["card"].as_str().unwrap().starts_with("<CARD_"), "{doc}");
        assert_eq!(doc["to"], "\"<EMAIL_1>\"", "{doc}");
        assert_eq!(clean.tags[1], "ssn <SSN_1>");
        // redacting again changes nothing: tokens stay tokens
        let again = Redactor::new().redacted(clean.clone().into_inner(), &mut vault);
        assert_eq!(again, clean);
    }

    #[test]
    fn a_json_text_is_redacted_by_its_values_and_its_ids_are_left_alone() {
        let r = Redactor::new();
        let id = "01a22375-25b8-7049-ab23-0ddceaa4b1bc";
        let mut clean = format!(r#"{{"request_id":"{id}","objective":"Categorize <EMAIL_1>","n":12}}"#);
        let before = clean.clone();
        r.redact_json_text(&mut clean, &mut Vault::new());
        assert_eq!(clean, before, "clean already: written as it was");
        // escapes: tabs between a card's groups are a tab only once parsed
        let mut escaped =
            serde_json::json!({ "id": id, "input": "card 4111\t1111\t1111\t1111 \"quoted\"" }).to_string();
        r.redact_json_text(&mut escaped, &mut Vault::new());
        let v: Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!((v["id"].as_str(), v["input"].as_str()), (Some(id), Some("card <CARD_1> \"quoted\"")), "{escaped}");
    }

    /// The document read in place redacts what a walk over its parsed tree
    /// redacts, string for string: keys that could hold PII too, escapes
    /// read, ids and times left, numbers kept as numbers.
    #[test]
    fn a_document_read_in_place_is_redacted_as_its_parsed_tree_would_be() {
        let docs = [
            r#"{"a":"bob@example.org","b":["x",{"c":"card 4111 1111 1111 1111"}],"n":4111111111111111}"#,
            r#"{ "ann@example.com" : "ann@example.com" , "k" : [ "1-800-555-0199" , null, true ] }"#,
            r#"{"q":"a \"quote\": bob@example.org","t":"tab\t4111\t1111\t1111\t1111","u":"caf\u00e9 ann@example.com"}"#,
            r#"["bob@example.org", "2026-11-29T06:05:01.123Z", "01a22375-25b8-7049-ab23-0ddceaa4b1bc", "é 4111 1111 1111 1111"]"#,
            r#""a string alone: bob@example.org""#,
            r#"{"nested":{"deeper":{"deepest":["ssn 123-45-6789", "\\", ""]}}}"#,
            r#"{"\u0034111 1111 1111 1111":{"limit":900},"caf\u00e9":"x","":"bob@example.org"}"#,
        ];
        let r = Redactor::new();
        for doc in docs {
            let mut in_place = doc.to_string();
            r.redact_json_text(&mut in_place, &mut Vault::new());
            let tree = walked(&r, serde_json::from_str(doc).unwrap(), &mut Vault::new());
            assert_eq!(serde_json::from_str::<Value>(&in_place).unwrap(), tree, "{doc} -> {in_place}");
            assert!(!in_place.contains("bob@example.org") && !in_place.contains("4111 1111"), "{in_place}");
            assert!(!in_place.contains("ann@example.com"), "{in_place}");
        }
        // a key is a text too: a map keyed by a card number or an address keeps neither
        let mut doc = r#"{"ann@example.com":"x","4111 1111 1111 1111":{"name":1}}"#.to_string();
        r.redact_json_text(&mut doc, &mut Vault::new());
        assert!(doc.contains(r#""<EMAIL_1>":"x""#) && doc.contains(r#"{"name":1}"#), "{doc}");
        assert!(!doc.contains("4111 1111"), "{doc}");
        // a time and an id are not scanned, a number that is not one is
        let mut doc = r#"{"at":"2026-11-29T06:05:01Z","id":"01a22375-25b8-7049-ab23-0ddceaa4b1bc","p":"416-555-0142"}"#
            .to_string();
        r.redact_json_text(&mut doc, &mut Vault::new());
        assert!(doc.contains("2026-11-29T06:05:01Z") && doc.contains("01a22375") && !doc.contains("555-0142"), "{doc}");
    }

    /// The reference: `v` parsed into a tree and walked, keys (that could
    /// hold PII) and values, each in document order.
    fn walked(r: &Redactor, v: Value, vault: &mut Vault) -> Value {
        match v {
            Value::String(s) if not_personal(&s) => Value::String(s),
            Value::String(s) => Value::String(r.redact(&s, vault)),
            Value::Array(items) => Value::Array(items.into_iter().map(|i| walked(r, i, vault)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let k = if super::super::detect::may_find(&k) { r.redact(&k, vault) } else { k };
                        (k, walked(r, v, vault))
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    #[test]
    fn json_that_nests_past_the_reader_or_does_not_end_is_redacted_as_text() {
        let deep = format!("{}\"bob@example.org\"{}", "[".repeat(200), "]".repeat(200));
        let mut doc = deep.clone();
        Redactor::new().redact_json_text(&mut doc, &mut Vault::new());
        assert!(!doc.contains("bob@example.org") && doc.starts_with("[[["), "{doc}");
        for broken in [r#"{"a":"bob@example.org""#, r#"{"a":"bob@example.org"} trailing"#, r#""bob@example.org"#] {
            let mut doc = broken.to_string();
            Redactor::new().redact_json_text(&mut doc, &mut Vault::new());
            assert!(!doc.contains("bob@example.org"), "{broken} -> {doc}");
        }
    }

    #[test]
    fn text_that_is_not_json_is_redacted_as_text() {
        let doc = Redactor::new().redacted(String::from("not json: bob@example.org"), &mut Vault::new());
        assert_eq!(doc.as_str(), "not json: <EMAIL_1>");
    }
}
