//! Required-element checks (`Required`): the synonym table that says whether
//! a text has an element such as `apologize` or `provide new timeline`.

use std::sync::LazyLock;

use regex::Regex;

use crate::verify::patterns;
use crate::verify::text::{DATE_PATTERN, re};

/// The synonym table for required elements. An element takes the first row
/// whose trigger occurs in its name (`acknowledge impact` → the impact row);
/// the text then has the element if it matches the row's evidence. `DATE`
/// stands for any date (`Oct 22`, `2025-10-22`, ...).
const ELEMENTS: &[(&str, &str)] = &[
    (r"apolog|sorry|regret", r"\bapolog|\bsorry\b|\bregret"),
    (
        r"impact|inconvenien|disrupt",
        r"\bimpact|\binconvenien|\bdisrupt|\baffect|\bfrustrat|\bsetback|\bcaused\b|\bput you in\b",
    ),
    (
        r"timeline|\beta\b|new date|deadline|schedule",
        r"\bnew\s+(?:timeline|eta|date|deadline|delivery date|target date|schedule)\b|\b(?:by|on|until|before)\s+DATE|\b(?:eta|timeline|deliver\w*|complete\w*|ready|ship\w*|finish\w*)\b[^.\n]{0,60}DATE",
    ),
    (r"thank|gratitude|appreciat", r"\bthank|\bgrateful|\bappreciat"),
    (
        r"next step|action item|follow.?up",
        r"\bnext steps?\b|\bgoing forward\b|\bfollow(?:ing)?[ -]?up\b|\b(?:i|we) will\b",
    ),
    (r"call to action|request|\bask\b", r"\bplease\b|\blet me know\b|\bcould you\b|\bwould you\b|\?"),
    (r"greeting|salutation", r"^\s*(?:dear|hello|hi|hey|good (?:morning|afternoon|evening)|greetings)\b"),
    (
        r"closing|sign.?off|signature",
        r"(?m)^\s*(?:(?:best|kind|warm|many)\s+)?(?:regards|wishes|thanks|sincerely|cheers|best)\b",
    ),
    (r"summary|overview", r"\bsummary\b|\boverall\b|\bin short\b|\boverview\b"),
    (r"metric|completion rate|percentage", r"\d+(?:\.\d+)?\s?%"),
    (r"bullet", patterns::BULLETS),
    (r"reassur|prevent|commit", r"\bensure\b|\bprevent|\bnot happen again\b|\bcommit"),
];

static ELEMENT_RULES: LazyLock<Vec<(Regex, Regex)>> = LazyLock::new(|| {
    ELEMENTS
        .iter()
        .map(|(trigger, evidence)| {
            (re(&format!("(?i){trigger}")), re(&format!("(?i){}", evidence.replace("DATE", DATE_PATTERN))))
        })
        .collect()
});

#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "and", "or", "for", "with", "in", "on", "provide", "include",
    "mention", "give", "add", "state", "be", "is", "it", "your", "our", "my",
];

/// Content words of an element no row knows, each matched by its first five letters.
fn fallback_words(element: &str) -> Vec<String> {
    element
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(w))
        .map(|w| w.chars().take(5).collect())
        .collect()
}

/// Whether `text` has the required `element`, by the synonym table.
pub(crate) fn element_present(text: &str, element: &str) -> bool {
    if let Some((_, evidence)) = ELEMENT_RULES.iter().find(|(trigger, _)| trigger.is_match(element)) {
        return evidence.is_match(text);
    }
    let words = fallback_words(element);
    let lower = text.to_lowercase();
    !words.is_empty()
        && words.iter().all(|w| {
            lower
                .match_indices(w.as_str())
                .any(|(i, _)| !lower[..i].chars().next_back().is_some_and(char::is_alphanumeric))
        })
}

/// What counts as evidence for `element`, for failure messages.
pub(super) fn evidence(element: &str) -> String {
    match ELEMENTS.iter().zip(ELEMENT_RULES.iter()).find(|(_, (trigger, _))| trigger.is_match(element)) {
        Some(((_, ev), _)) => ev.replace(DATE_PATTERN, "DATE"),
        None => fallback_words(element).join(" + "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_elements_use_the_synonym_table() {
        for (text, element) in [
            ("We regret the slip.", "apologize"),
            ("Sorry about that.", "apology"),
            ("This caused real inconvenience.", "acknowledge impact"),
            ("The new ETA is next week.", "provide new timeline"),
            ("We will deliver it by Oct 22.", "new timeline"),
            ("Expect completion on 2025-10-22.", "timeline"),
            ("Many thanks!", "thank them"),
            ("The budget review happens Friday.", "budget review"),
        ] {
            assert!(element_present(text, element), "{element} in {text:?}");
        }
        assert!(!element_present("Hello there.", "apologize"));
        assert!(!element_present("We shipped.", "provide new timeline"));
        assert!(!element_present("The budget is fine.", "budget review"));
    }
}
