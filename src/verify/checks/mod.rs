//! Evaluating [`Check`]s against an agent's output. Text checks read the
//! result; JSON checks read the first JSON artifact, or the result parsed as
//! JSON. Every check yields at least one named [`CheckResult`] whose `actual`
//! is what was measured, and no input makes evaluation panic.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};

use super::patterns;
use super::text::{self, DATE_PATTERN, KeyCase, re};
use super::tone;
use crate::protocol::{Artifact, ArtifactKind, Check, CheckResult, Verdict};

/// Evaluates every check; `score` is the fraction of check results that passed.
pub fn verify(result: &str, artifacts: &[Artifact], checks: &[Check]) -> Verdict {
    let json = json_output(result, artifacts);
    let mut results = Vec::new();
    for check in checks {
        evaluate(check, result, json.as_deref(), &mut results);
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let score = if results.is_empty() { 1.0 } else { passed as f64 / results.len() as f64 };
    Verdict { passed: passed == results.len(), score, checks: results }
}

fn json_output<'a>(result: &str, artifacts: &'a [Artifact]) -> Option<Cow<'a, Value>> {
    match artifacts.iter().find(|a| a.kind == ArtifactKind::Json) {
        Some(a) => Some(Cow::Borrowed(&a.value)),
        None => serde_json::from_str(result.trim()).ok().map(Cow::Owned),
    }
}

/// The name a check's result carries (`max_120_words`, `contains_oct_22`,
/// `tone_warm_professional`). A `Required` check yields one result per
/// element, named `required_<element>`; this returns its common prefix.
pub fn check_name(check: &Check) -> String {
    match check {
        Check::MaxWords { max } => format!("max_{max}_words"),
        Check::MinWords { min } => format!("min_{min}_words"),
        Check::Contains { phrase } => format!("contains_{}", text::slug(phrase)),
        Check::NotContains { phrase } => format!("not_contains_{}", text::slug(phrase)),
        Check::Required { .. } => "required".into(),
        Check::Regex { pattern } => match patterns::NAMED.iter().find(|(p, _)| p == pattern) {
            Some((_, name)) => (*name).into(),
            None => {
                let slug: String = text::slug(pattern).chars().take(40).collect();
                if slug.is_empty() { "regex".into() } else { format!("regex_{}", slug.trim_end_matches('_')) }
            }
        },
        Check::JsonSchema { .. } => "json_schema".into(),
        Check::KeyCase { case } => {
            format!("keys_{}_case", KeyCase::parse(case).map_or_else(|| text::slug(case), |c| c.name().into()))
        }
        Check::Unique { field } => {
            field.as_deref().map_or("unique_items".into(), |f| format!("unique_{}", text::slug(f)))
        }
        Check::EmailsValid { field } => {
            field.as_deref().map_or("valid_emails".into(), |f| format!("valid_{}", text::slug(f)))
        }
        Check::Tone { tone } => format!("tone_{}", text::slug(tone)),
    }
}

fn evaluate(check: &Check, result: &str, json: Option<&Value>, out: &mut Vec<CheckResult>) {
    let name = check_name(check);
    let mut push = |name: String, passed: bool, actual: Value| {
        out.push(CheckResult { name, passed, actual: (!actual.is_null()).then_some(actual) })
    };
    match check {
        Check::MaxWords { max } => {
            let n = text::word_count(result);
            push(name, n <= *max, json!(n));
        }
        Check::MinWords { min } => {
            let n = text::word_count(result);
            push(name, n >= *min, json!(n));
        }
        Check::Contains { phrase } => {
            let n = occurrences(result, phrase);
            push(name, n > 0, json!(n));
        }
        Check::NotContains { phrase } => {
            let n = occurrences(result, phrase);
            push(name, n == 0, json!(n));
        }
        Check::Required { elements } => {
            for element in elements {
                let present = element_present(result, element);
                let actual =
                    if present { Value::Null } else { json!(format!("missing: no match for {}", evidence(element))) };
                push(format!("required_{}", text::slug(element)), present, actual);
            }
        }
        Check::Regex { pattern } => match RegexBuilder::new(pattern).size_limit(1 << 20).build() {
            Err(e) => push(name, false, json!(format!("invalid regex: {e}"))),
            Ok(re) => match re.find(result) {
                Some(m) => push(name, true, json!(truncate(m.as_str(), 60))),
                None => push(name, false, json!("no match")),
            },
        },
        Check::JsonSchema { schema } => {
            let (passed, actual) = json_schema(schema, json);
            push(name, passed, actual);
        }
        Check::KeyCase { case } => {
            let (passed, actual) = match (KeyCase::parse(case), json) {
                (None, _) => (false, json!(format!("unknown case '{case}'; use camel, snake, pascal or kebab"))),
                (_, None) => (false, json!(NO_JSON)),
                (Some(case), Some(v)) => {
                    let mut bad = BTreeSet::new();
                    offending_keys(v, case, &mut bad);
                    (bad.is_empty(), json!(bad))
                }
            };
            push(name, passed, actual);
        }
        Check::Unique { field } => {
            let (passed, actual) = match json.and_then(Value::as_array) {
                None => (false, json!(NO_ARRAY)),
                Some(items) => {
                    let dups = duplicates(items, field.as_deref());
                    (dups.is_empty(), json!(dups))
                }
            };
            push(name, passed, actual);
        }
        Check::EmailsValid { field } => {
            let (passed, actual) = emails_valid(result, json, field.as_deref());
            push(name, passed, actual);
        }
        Check::Tone { tone } => {
            let t = tone::score(result, tone);
            let actual = if t.known { json!((t.score * 100.0).round() / 100.0) } else { json!(t.notes.join("; ")) };
            push(name, t.passed, actual);
        }
    }
}

const NO_JSON: &str = "no JSON output: no JSON artifact and the result is not JSON";
const NO_ARRAY: &str = "the JSON output is not an array";

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { format!("{}…", s.chars().take(max).collect::<String>()) }
}

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

fn occurrences(text: &str, phrase: &str) -> usize {
    phrase_regex(phrase).map_or(0, |re| re.find_iter(text).count())
}

/// Whether `text` mentions `phrase` the way a `Contains` check looks for it.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    occurrences(text, phrase) > 0
}

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
pub fn element_present(text: &str, element: &str) -> bool {
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
fn evidence(element: &str) -> String {
    match ELEMENTS.iter().zip(ELEMENT_RULES.iter()).find(|(_, (trigger, _))| trigger.is_match(element)) {
        Some(((_, ev), _)) => ev.replace(DATE_PATTERN, "DATE"),
        None => fallback_words(element).join(" + "),
    }
}

fn json_schema(schema: &Value, json: Option<&Value>) -> (bool, Value) {
    let Some(instance) = json else {
        return (false, json!(NO_JSON));
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return (false, json!(format!("invalid schema: {e}"))),
    };
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .take(5)
        .map(|e| {
            let path = e.instance_path().to_string();
            format!("{}: {e}", if path.is_empty() { "/" } else { &path })
        })
        .collect();
    (errors.is_empty(), if errors.is_empty() { Value::Null } else { json!(errors) })
}

fn offending_keys(v: &Value, case: KeyCase, bad: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if !case.matches(k) {
                    bad.insert(k.clone());
                }
                offending_keys(child, case, bad);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| offending_keys(i, case, bad)),
        _ => {}
    }
}

/// Strings compare trimmed and case-insensitively, so ` Bob@X.com` repeats `bob@x.com`.
fn comparable(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_lowercase(),
        other => other.to_string(),
    }
}

fn duplicates(items: &[Value], field: Option<&str>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut dups = Vec::new();
    for item in items {
        let value = match field {
            Some(f) => match item.get(f) {
                Some(v) => v,
                None => continue,
            },
            None => item,
        };
        if !seen.insert(comparable(value)) {
            dups.push(value.clone());
        }
    }
    dups
}

fn emails_valid(result: &str, json: Option<&Value>, field: Option<&str>) -> (bool, Value) {
    let values: Vec<Value> = match (field, json) {
        (Some(f), Some(Value::Array(items))) => items.iter().filter_map(|i| i.get(f).cloned()).collect(),
        (Some(_), _) => return (false, json!(NO_ARRAY)),
        (None, Some(v)) => {
            let mut found = Vec::new();
            mail_values(v, &mut found);
            found
        }
        (None, None) => text::emails_in(result).into_iter().map(Value::String).collect(),
    };
    let invalid: Vec<Value> =
        values.into_iter().filter(|v| !v.as_str().is_some_and(|s| text::email_ok(s.trim()))).collect();
    (invalid.is_empty(), json!(invalid))
}

/// Values of every key that names an address (`email`, `workEmail`, `e-mail`).
fn mail_values(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k.to_lowercase().contains("mail") && !child.is_object() && !child.is_array() {
                    out.push(child.clone());
                } else {
                    mail_values(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| mail_values(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &Verdict) -> Vec<&str> {
        v.checks.iter().map(|c| c.name.as_str()).collect()
    }

    const DRAFT: &str = "Hi Alex,\n\nI sincerely apologize for the missed deadline. I know this has affected your plans. \
                         Our new timeline is delivery by Oct 22.\n\nThank you for your patience.\n\nWarm regards,";

    #[test]
    fn seed_001_email_checks_have_seed_001_names_and_measures() {
        let checks = [
            Check::MaxWords { max: 120 },
            Check::Contains { phrase: "Oct 22".into() },
            Check::Tone { tone: "warm-professional".into() },
            Check::Required {
                elements: vec!["apologize".into(), "acknowledge impact".into(), "provide new timeline".into()],
            },
        ];
        let v = verify(DRAFT, &[], &checks);
        assert_eq!(
            names(&v),
            [
                "max_120_words",
                "contains_oct_22",
                "tone_warm_professional",
                "required_apologize",
                "required_acknowledge_impact",
                "required_provide_new_timeline"
            ]
        );
        assert!(v.passed, "{v:?}");
        assert_eq!(v.score, 1.0);
        assert_eq!(v.checks[0].actual, Some(json!(text::word_count(DRAFT))));
    }

    #[test]
    fn failures_report_what_was_measured_and_score_is_the_fraction_passed() {
        let checks = [
            Check::MaxWords { max: 5 },
            Check::Contains { phrase: "Oct 23".into() },
            Check::Required { elements: vec!["apologize".into(), "next steps".into()] },
        ];
        let v = verify("Sorry, we slipped to Oct 22.", &[], &checks);
        assert!(!v.passed);
        assert_eq!(v.failed(), ["max_5_words", "contains_oct_23", "required_next_steps"]);
        assert_eq!(v.score, 0.25);
        assert_eq!(v.checks[0].actual, Some(json!(6)));
        let missing = v.checks[3].actual.as_ref().and_then(Value::as_str).unwrap_or_default();
        assert!(missing.starts_with("missing"), "{missing}");
    }

    #[test]
    fn contains_is_word_bounded_case_and_space_tolerant() {
        assert!(contains_phrase("by OCT\n22.", "Oct 22"));
        assert!(!contains_phrase("Oct 225", "Oct 22"));
        assert!(!contains_phrase("thank you", "u"));
        assert!(contains_phrase("can u send", "u"));
        assert!(contains_phrase("TRANSP:OPAQUE\r\n", "TRANSP:OPAQUE"));
    }

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

    #[test]
    fn invalid_regex_fails_its_check_without_panicking() {
        let v = verify("abc", &[], &[Check::Regex { pattern: "(unclosed".into() }]);
        assert!(!v.passed);
        let actual = v.checks[0].actual.as_ref().and_then(Value::as_str).unwrap_or_default();
        assert!(actual.starts_with("invalid regex"), "{actual}");
        assert!(verify("Hello", &[], &[Check::Regex { pattern: patterns::GREETING.into() }]).passed);
        assert_eq!(check_name(&Check::Regex { pattern: "^a+$".into() }), "regex_a");
    }

    #[test]
    fn json_checks_read_the_first_json_artifact() {
        let records = json!([
            {"name": "Ada", "email": "ada@x.com", "role": "admin"},
            {"name": "Bob", "email": "not-an-email", "Role": "dev"},
            {"name": "Bo", "email": " ADA@x.com", "role": "dev"}
        ]);
        let checks = [
            Check::KeyCase { case: "camelCase".into() },
            Check::Unique { field: Some("email".into()) },
            Check::EmailsValid { field: Some("email".into()) },
            Check::JsonSchema { schema: json!({"type": "array", "items": {"required": ["role"]}}) },
        ];
        let v = verify("done", &[Artifact::json("records", records)], &checks);
        assert_eq!(names(&v), ["keys_camel_case", "unique_email", "valid_email", "json_schema"]);
        assert_eq!(v.checks[0].actual, Some(json!(["Role"])));
        assert_eq!(v.checks[1].actual, Some(json!([" ADA@x.com"])));
        assert_eq!(v.checks[2].actual, Some(json!(["not-an-email"])));
        assert!(!v.checks[3].passed);
        assert_eq!(v.score, 0.0);
    }

    #[test]
    fn json_checks_fall_back_to_the_result_and_explain_absence() {
        let v = verify(r#"[{"a":1},{"a":1}]"#, &[], &[Check::Unique { field: None }]);
        assert!(!v.passed);
        assert_eq!(v.checks[0].actual, Some(json!([{"a": 1}])));
        let v = verify("plain text", &[], &[Check::KeyCase { case: "camel".into() }]);
        assert_eq!(v.checks[0].actual, Some(json!(NO_JSON)));
        let v = verify("[]", &[], &[Check::JsonSchema { schema: json!({"type": 12}) }]);
        assert!(!v.passed, "an invalid schema fails its check");
    }

    #[test]
    fn emails_in_text_are_validated_when_no_field_is_named() {
        assert!(verify("write to a@b.com or <EMAIL_2>", &[], &[Check::EmailsValid { field: None }]).passed);
        assert!(!verify("write to a@b", &[], &[Check::EmailsValid { field: None }]).passed);
    }

    proptest::proptest! {
        #[test]
        fn any_check_on_any_output_yields_a_verdict(
            result in "\\PC{0,80}",
            pattern in "\\PC{0,12}",
            phrase in "\\PC{0,12}",
            n in 0usize..50,
        ) {
            let checks = [
                Check::MaxWords { max: n },
                Check::Regex { pattern: pattern.clone() },
                Check::Contains { phrase: phrase.clone() },
                Check::NotContains { phrase: phrase.clone() },
                Check::Required { elements: vec![phrase.clone(), pattern.clone()] },
                Check::Tone { tone: phrase.clone() },
                Check::KeyCase { case: pattern.clone() },
                Check::Unique { field: Some(phrase.clone()) },
                Check::EmailsValid { field: None },
                Check::JsonSchema { schema: json!({"type": "array", "maxItems": n}) },
            ];
            let v = verify(&result, &[], &checks);
            proptest::prop_assert!(v.checks.len() >= checks.len());
            proptest::prop_assert!((0.0..=1.0).contains(&v.score));
            proptest::prop_assert!(v.checks.iter().all(|c| !c.name.is_empty()));
        }
    }

    #[test]
    fn no_checks_pass_with_full_score() {
        let v = verify("anything", &[], &[]);
        assert!(v.passed && v.score == 1.0);
    }
}
