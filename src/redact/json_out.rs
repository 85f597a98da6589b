//! JSON written through the redactor: a value serialized with every string
//! redacted as it is written, instead of written first and read again. The
//! store's pass over a JSON document (`Redactor::redact_json_text`) checks
//! the document, finds each string in it and runs the detector on each; a
//! step's envelope and answer, written by the pipeline as JSON, are new
//! documents every time, so that pass read each of them in full. Written
//! here, each string meets the detector once, as serde hands it over, under
//! the same rules as that pass (values, and keys that could hold PII; ids and
//! times skipped), and the document is noted clean (`seen.rs`): the store's
//! pass finds it by its hash.

use std::borrow::Cow;
use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::clean::not_personal;
use super::{Redactor, Vault, detect};

impl Redactor {
    /// `value` as compact JSON, with every string value, and every key that
    /// could hold PII, redacted with `vault` as it is written: the document
    /// the store's pass makes of `serde_json::to_string(value)`, without
    /// reading it again, and known clean to that pass. None when `value`
    /// cannot be written as JSON (a map keyed by something that is not a
    /// string or a number).
    pub(crate) fn to_json<T: Serialize + ?Sized>(&self, value: &T, vault: &mut Vault) -> Option<String> {
        let mut out = Vec::with_capacity(512);
        let mut formatter = Redacting {
            redactor: self,
            vault,
            open: false,
            text: String::new(),
            escaped: Vec::new(),
            key: false,
            raw: false,
        };
        value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, &mut formatter)).ok()?;
        let raw = formatter.raw;
        let mut json = String::from_utf8(out).ok()?;
        if raw {
            // a fragment serde wrote as it came (`RawValue`): read as any document is
            self.redact_json_text(&mut json, vault);
        } else {
            self.seen.note(&json);
        }
        Some(json)
    }
}

/// A compact formatter that holds each string back until it ends, then
/// writes it redacted (or as it was, already escaped, when the redactor
/// left it alone: most strings).
struct Redacting<'a> {
    redactor: &'a Redactor,
    vault: &'a mut Vault,
    /// Whether a string is open (between its quotes).
    open: bool,
    /// The open string's text, unescaped.
    text: String,
    /// The open string as JSON writes it, escaped, without its quotes.
    escaped: Vec<u8>,
    /// Whether that string is an object's key.
    key: bool,
    /// Whether a raw fragment was written (then the document is read again).
    raw: bool,
}

/// A number or a boolean written into a key (`{"4111111111111111": …}`
/// from a map keyed by numbers) is part of the key's text; anywhere else it
/// is written as it is.
macro_rules! scalar {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: $t) -> io::Result<()> {
            if !self.open {
                return CompactFormatter.$name(writer, value);
            }
            let at = self.escaped.len();
            CompactFormatter.$name(&mut self.escaped, value)?;
            self.text.push_str(&String::from_utf8_lossy(&self.escaped[at..]));
            Ok(())
        }
    )*};
}

impl Formatter for &mut Redacting<'_> {
    scalar!(
        write_bool: bool, write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64, write_u128: u128, write_f32: f32,
        write_f64: f64, write_number_str: &str,
    );

    fn begin_string<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.open = true;
        self.text.clear();
        self.escaped.clear();
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        if !self.open {
            return writer.write_all(fragment.as_bytes());
        }
        self.text.push_str(fragment);
        self.escaped.extend_from_slice(fragment.as_bytes());
        Ok(())
    }

    fn write_char_escape<W: ?Sized + io::Write>(&mut self, writer: &mut W, escape: CharEscape) -> io::Result<()> {
        if !self.open {
            return CompactFormatter.write_char_escape(writer, escape);
        }
        self.text.push(match escape {
            CharEscape::Quote => '"',
            CharEscape::ReverseSolidus => '\\',
            CharEscape::Solidus => '/',
            CharEscape::Backspace => '\u{8}',
            CharEscape::FormFeed => '\u{c}',
            CharEscape::LineFeed => '\n',
            CharEscape::CarriageReturn => '\r',
            CharEscape::Tab => '\t',
            CharEscape::AsciiControl(b) => char::from(b),
        });
        CompactFormatter.write_char_escape(&mut self.escaped, escape)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if !std::mem::take(&mut self.open) {
            return writer.write_all(b"\"");
        }
        // the store's pass reads the same strings: keys only where a rule could find something
        let as_is = (self.key && !detect::may_find(&self.text)) || not_personal(&self.text);
        if !as_is && let Cow::Owned(redacted) = self.redactor.redact_cow(&self.text, self.vault) {
            return serde_json::to_writer(writer, &redacted).map_err(io::Error::other);
        }
        writer.write_all(b"\"")?;
        writer.write_all(&self.escaped)?;
        writer.write_all(b"\"")
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.key = true;
        CompactFormatter.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.key = false;
        CompactFormatter.end_object_key(writer)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        self.raw = true;
        writer.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    const CARD: &str = "4111 1111 1111 1111";

    /// What the store's pass makes of a value written plainly.
    fn read_again(value: &impl Serialize) -> String {
        let mut doc = serde_json::to_string(value).unwrap();
        Redactor::new().redact_json_text(&mut doc, &mut Vault::new());
        doc
    }

    #[test]
    fn a_value_written_through_the_redactor_is_what_the_stores_pass_makes_of_it() {
        let mut by_card = BTreeMap::new();
        by_card.insert(4111111111111111u64, "paid");
        let values = [
            json!({"objective": format!("charge {CARD} for bob@example.org"), "n": 3, "ok": true, "none": null}),
            json!({"note": "tab\tbetween\u{1}a \"quoted\" \\ slash/ card 4111\t1111\t1111\t1111"}),
            json!({format!("card {CARD}"): 1, "plain_key": ["alice@example.com", 12.5, {"deeper": "call +14155552671"}]}),
            json!({"id": "6f0c7c9e-2f0e-4c1a-9d1e-5a1c2b3d4e5f", "at": "2026-11-29T10:00:00Z", "ua": "nothing personal"}),
            json!([]),
            json!("a bare string with 4111111111111111"),
            serde_json::to_value(&by_card).unwrap(),
        ];
        for value in values {
            let written = Redactor::new().to_json(&value, &mut Vault::new()).unwrap();
            assert_eq!(written, read_again(&value), "{value}");
            assert!(!written.contains("4111") && !written.contains("@example"), "{written}");
        }
        // a map keyed by numbers: the key is a text the store's pass reads too
        let written = Redactor::new().to_json(&by_card, &mut Vault::new()).unwrap();
        assert_eq!(written, read_again(&by_card));
        assert!(!written.contains("4111"), "{written}");
    }

    #[test]
    fn the_stores_pass_finds_a_written_document_clean_without_reading_it() {
        let r = Redactor::new();
        let value =
            json!({"objective": format!("refund {CARD}"), "request_id": "6f0c7c9e-2f0e-4c1a-9d1e-5a1c2b3d4e5f"});
        let written = r.to_json(&value, &mut Vault::new()).unwrap();
        assert!(r.seen.clean(&written));
        let mut again = written.clone();
        r.redact_json_text(&mut again, &mut Vault::new());
        assert_eq!(again, written);
        // a document nobody wrote through it is read in full
        let mut raw = serde_json::to_string(&value).unwrap();
        assert!(!r.seen.clean(&raw));
        r.redact_json_text(&mut raw, &mut Vault::new());
        assert_eq!(raw, written);
    }

    #[test]
    fn a_raw_fragment_is_read_as_any_document() {
        let raw = serde_json::value::RawValue::from_string(format!("{{\"card\": \"{CARD}\"}}")).unwrap();
        let written = Redactor::new().to_json(&raw, &mut Vault::new()).unwrap();
        assert!(!written.contains("4111"), "{written}");
    }

    #[test]
    fn a_value_that_is_no_json_document_is_none() {
        let mut by_pair = std::collections::HashMap::new();
        by_pair.insert((1, 2), "no string key");
        assert!(Redactor::new().to_json(&by_pair, &mut Vault::new()).is_none());
    }
}
