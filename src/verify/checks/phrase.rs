//! Phrase checks (`Contains`, `NotContains`): how a phrase is looked for in
//! the output, case- and whitespace-tolerant and bounded by word edges.

use regex::Regex;

/// Case-insensitive, whitespace-tolerant, and bounded by word edges where the
/// phrase starts or ends with a letter or digit, so `Oct 22` is not found in
/// `Oct 225` and `u` is not found in `you`.
fn phrase_regex(phrase: &str) -> Option<Regex> {
    let words: Vec<String> = phrase.split_whitespace().map(regex::escape).collect();
    if words.is_empty() {
        return None;
    }
    let edge = |c: Option<char>| {
        if c.is_some_and(char::is_alphanumeric) { r"\b" } else { "" }
    };
    let t = phrase.trim();
    let pattern = format!("(?i){}{}{}", edge(t.chars().next()), words.join(r"\s+"), edge(t.chars().last()));
    Regex::new(&pattern).ok()
}

pub(super) fn occurrences(text: &str, phrase: &str) -> usize {
    phrase_regex(phrase).map_or(0, |re| re.find_iter(text).count())
}

/// Whether `text` mentions `phrase` the way a `Contains` check looks for it.
pub(crate) fn contains_phrase(text: &str, phrase: &str) -> bool {
    occurrences(text, phrase) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_is_word_bounded_case_and_space_tolerant() {
        assert!(contains_phrase("by OCT\n22.", "Oct 22"));
        assert!(!contains_phrase("Oct 225", "Oct 22"));
        assert!(!contains_phrase("thank you", "u"));
        assert!(contains_phrase("can u send", "u"));
        assert!(contains_phrase("TRANSP:OPAQUE\r\n", "TRANSP:OPAQUE"));
    }
}
