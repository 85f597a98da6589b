//! Text helpers shared by the Task Note parser, the checks and the tool agents,
//! so that an agent and the verifier measure things the same way.

use std::sync::LazyLock;

use regex::Regex;

/// Compiles a pattern written in this crate; a typo here is a bug caught by the tests.
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("built-in pattern {pattern:?} is invalid: {e}"))
}

/// A calendar date as people write it in notes: `Oct 22`, `October 22nd, 2025`,
/// `22 Oct`, `2025-10-22`, `10/22`.
pub(crate) const DATE_PATTERN: &str = r"(?i:\b(?:(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+\d{1,2}(?:st|nd|rd|th)?\b(?:,?\s+\d{4})?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b(?:\s+\d{4})?|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b)";

static DATE: LazyLock<Regex> = LazyLock::new(|| re(DATE_PATTERN));
static EMAIL_LIKE: LazyLock<Regex> = LazyLock::new(|| re(r"<EMAIL_\d+>|[^\s<>()\[\],;:]+@[^\s<>()\[\],;:]+"));
static EMAIL_TOKEN: LazyLock<Regex> = LazyLock::new(|| re(r"^<EMAIL_\d+>$"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$",
    )
});

/// Words are whitespace-separated tokens with at least one letter or digit, so
/// a dash or a bullet does not count.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count()
}

/// `Oct 22` → `oct_22`: lowercase, every run of other characters becomes one `_`.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// The dates mentioned in `text`, in order, as written.
pub(crate) fn dates_in(text: &str) -> Vec<String> {
    DATE.find_iter(text).map(|m| m.as_str().trim_end_matches(['.', ',']).to_string()).collect()
}

/// A plain address, `local@domain.tld`, without display names or comments.
pub(crate) fn is_valid_email(s: &str) -> bool {
    s.len() <= 254 && EMAIL.is_match(s)
}

/// A redacted address (`<EMAIL_1>`): the runtime only tokenizes what it
/// recognized as an address, so a token stands for a valid one.
pub(crate) fn is_email_token(s: &str) -> bool {
    EMAIL_TOKEN.is_match(s)
}

/// Valid address or the token of one.
pub(crate) fn email_ok(s: &str) -> bool {
    is_email_token(s) || is_valid_email(s)
}

/// Everything in `text` that looks like an address or its token, trailing
/// sentence punctuation removed.
pub(crate) fn emails_in(text: &str) -> Vec<String> {
    EMAIL_LIKE.find_iter(text).map(|m| m.as_str().trim_end_matches(['.', '!', '?', '\'', '"']).to_string()).collect()
}

/// `alex.chan@company.com` → `Alex`; a non-alphabetic local part gives
/// none. A token gives the token of its name (`<EMAIL_1>` →
/// `<EMAIL_1:name>`), which only the user's own vault turns into the name.
pub(crate) fn name_from_email(address: &str) -> Option<String> {
    if is_email_token(address) {
        return crate::redact::name_token(address);
    }
    crate::redact::name_in_address(address)
}

/// Upper-cases the first character, lower-cases none of the rest.
pub(crate) fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Strips one layer of straight or typographic quotes and surrounding blanks.
pub(crate) fn unquote(s: &str) -> &str {
    let t = s.trim();
    for (open, close) in [('"', '"'), ('\'', '\''), ('“', '”'), ('‘', '’'), ('`', '`')] {
        if let Some(inner) = t.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner.trim();
        }
    }
    t
}

/// A key casing convention for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyCase {
    Camel,
    Snake,
    Pascal,
    Kebab,
}

impl KeyCase {
    /// Accepts `camel`, `camelCase`, `snake_case`, `Pascal`, `kebab-case`...
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.trim_end_matches("case").trim_end_matches(['_', '-', ' ']);
        match s {
            "camel" | "lower camel" => Some(Self::Camel),
            "snake" => Some(Self::Snake),
            "pascal" | "upper camel" => Some(Self::Pascal),
            "kebab" => Some(Self::Kebab),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Camel => "camel",
            Self::Snake => "snake",
            Self::Pascal => "pascal",
            Self::Kebab => "kebab",
        }
    }

    /// How people write the convention's name: `camelCase`, `snake_case`, ...
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Camel => "camelCase",
            Self::Snake => "snake_case",
            Self::Pascal => "PascalCase",
            Self::Kebab => "kebab-case",
        }
    }

    /// Converts a header such as `First Name`, `first_name` or `E-mail` to this case.
    pub(crate) fn convert(self, key: &str) -> String {
        let words = key_words(key);
        match self {
            Self::Camel => {
                words.iter().enumerate().map(|(i, w)| if i == 0 { w.clone() } else { capitalize(w) }).collect()
            }
            Self::Pascal => words.iter().map(|w| capitalize(w)).collect(),
            Self::Snake => words.join("_"),
            Self::Kebab => words.join("-"),
        }
    }

    /// Whether `key` is already written in this case.
    pub(crate) fn matches(self, key: &str) -> bool {
        static CAMEL: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z][a-zA-Z0-9]*$"));
        static PASCAL: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Z][a-zA-Z0-9]*$"));
        static SNAKE: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$"));
        static KEBAB: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$"));
        match self {
            Self::Camel => CAMEL.is_match(key),
            Self::Pascal => PASCAL.is_match(key),
            Self::Snake => SNAKE.is_match(key),
            Self::Kebab => KEBAB.is_match(key),
        }
    }
}

/// Lowercase words of a key: splits on non-alphanumerics and on lower→upper
/// boundaries. `e-mail` is one word, because people mean `email` by it.
fn key_words(key: &str) -> Vec<String> {
    let key = key.trim();
    let key = if key.eq_ignore_ascii_case("e-mail") { "email" } else { key };
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Informal abbreviations and their business-style expansions. The format
/// agent expands them and the Task Note's "No abbreviations" turns each one
/// found in the input into a `not_contains_*` check, so both use this table.
pub(crate) const ABBREVIATIONS: &[(&str, &str)] = &[
    ("u", "you"),
    ("ur", "your"),
    ("r", "are"),
    ("y", "why"),
    ("thx", "thank you"),
    ("thnx", "thank you"),
    ("thanx", "thank you"),
    ("tks", "thank you"),
    ("ty", "thank you"),
    ("pls", "please"),
    ("plz", "please"),
    ("btw", "by the way"),
    ("asap", "as soon as possible"),
    ("fyi", "for your information"),
    ("imo", "in my opinion"),
    ("idk", "I do not know"),
    ("lmk", "let me know"),
    ("tbh", "to be honest"),
    ("rn", "right now"),
    ("np", "no problem"),
    ("b4", "before"),
    ("bc", "because"),
    ("cuz", "because"),
    ("cos", "because"),
    ("abt", "about"),
    ("msg", "message"),
    ("ppl", "people"),
    ("tmrw", "tomorrow"),
    ("tmr", "tomorrow"),
    ("2morrow", "tomorrow"),
    ("2day", "today"),
    ("gonna", "going to"),
    ("wanna", "want to"),
    ("gotta", "have to"),
    ("w/", "with"),
    ("w/o", "without"),
    ("im", "I am"),
    ("dont", "do not"),
    ("cant", "cannot"),
    ("wont", "will not"),
    ("didnt", "did not"),
    ("doesnt", "does not"),
    ("isnt", "is not"),
];

/// The expansion of `word` if it is an informal abbreviation (case-insensitive).
pub(crate) fn expand_abbreviation(word: &str) -> Option<&'static str> {
    ABBREVIATIONS.iter().find(|(a, _)| a.eq_ignore_ascii_case(word)).map(|(_, e)| *e)
}

/// The abbreviations of [`ABBREVIATIONS`] that occur in `text` as whole words, in table order.
pub(crate) fn abbreviations_in(text: &str) -> Vec<&'static str> {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | '?' | ';' | ':' | '(' | ')' | '"'))
        .map(str::to_ascii_lowercase)
        .collect();
    ABBREVIATIONS.iter().map(|(a, _)| *a).filter(|a| words.iter().any(|w| w == a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_ignore_punctuation_tokens() {
        assert_eq!(word_count("Hi Alex,\n\n- one - two"), 4);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn slugs_are_snake_case() {
        assert_eq!(slug("Oct 22"), "oct_22");
        assert_eq!(slug("warm-professional"), "warm_professional");
        assert_eq!(slug("  acknowledge impact! "), "acknowledge_impact");
    }

    #[test]
    fn dates_in_common_spellings_are_found() {
        assert_eq!(
            dates_in("new ETA of Oct 22. Then 2025-10-22 or October 3rd, 2025"),
            ["Oct 22", "2025-10-22", "October 3rd, 2025"]
        );
        assert!(dates_in("no date here, may be later").is_empty());
    }

    #[test]
    fn email_validation_is_strict_but_accepts_tokens() {
        assert!(is_valid_email("alex.chan@company.com"));
        for bad in ["alex@", "@x.com", "a b@x.com", "a@x", "a..b@x.com", "a@-x.com"] {
            assert!(!is_valid_email(bad), "{bad}");
        }
        assert!(email_ok("<EMAIL_3>"));
        assert_eq!(emails_in("to <EMAIL_1> and bob@x.org."), ["<EMAIL_1>", "bob@x.org"]);
    }

    #[test]
    fn names_come_from_the_local_part() {
        assert_eq!(name_from_email("alex.chan@company.com").as_deref(), Some("Alex"));
        assert_eq!(name_from_email("<EMAIL_1>").as_deref(), Some("<EMAIL_1:name>"));
        assert_eq!(name_from_email("j7@x.com"), None);
    }

    #[test]
    fn key_cases_convert_and_match() {
        assert_eq!(KeyCase::Camel.convert("First Name"), "firstName");
        assert_eq!(KeyCase::Camel.convert("e-mail"), "email");
        assert_eq!(KeyCase::Snake.convert("firstName"), "first_name");
        assert_eq!(KeyCase::Pascal.convert("role"), "Role");
        assert_eq!(KeyCase::Kebab.convert("Start Date"), "start-date");
        assert!(KeyCase::Camel.matches("firstName") && !KeyCase::Camel.matches("first_name"));
        assert_eq!(KeyCase::parse("camelCase"), Some(KeyCase::Camel));
        assert_eq!(KeyCase::parse("snake_case"), Some(KeyCase::Snake));
    }

    #[test]
    fn abbreviations_are_found_as_whole_words() {
        assert_eq!(abbreviations_in("hey can u send me the report thx"), ["u", "thx"]);
        assert!(abbreviations_in("you are thorough").is_empty());
    }
}
