//! Evaluating [`Check`]s against an agent's output. Text checks read the
//! result; JSON checks read the first JSON artifact, or the result parsed as
//! JSON. Every check yields at least one named [`CheckResult`] whose `actual`
//! is what was measured, and no input makes evaluation panic.
//!
//! Word limits and regexes are measured here; phrases, required elements and
//! the JSON checks have a file each, and tone is scored by [`super::tone`].

mod json;
mod phrase;
mod required;

pub(crate) use phrase::contains_phrase;
pub(crate) use required::element_present;

use std::borrow::Cow;
use std::collections::BTreeSet;

use regex::RegexBuilder;
use serde_json::{Value, json};

use self::json::{NO_ARRAY, NO_JSON, duplicates, emails_valid, json_schema, offending_keys};
use self::phrase::occurrences;
use self::required::evidence;
use super::patterns;
use super::text::{self, KeyCase};
use super::tone;
use crate::protocol::{Artifact, ArtifactKind, Check, CheckResult, Verdict};

/// Evaluates every check; `score` is the fraction of check results that passed.
pub(crate) fn verify(result: &str, artifacts: &[Artifact], checks: &[Check]) -> Verdict {
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
pub(crate) fn check_name(check: &Check) -> String {
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
        out.push(CheckResult { name, passed, actual: (!actual.is_null()).then_some(actual) });
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

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { format!("{}…", s.chars().take(max).collect::<String>()) }
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
    fn invalid_regex_fails_its_check_without_panicking() {
        let v = verify("abc", &[], &[Check::Regex { pattern: "(unclosed".into() }]);
        assert!(!v.passed);
        let actual = v.checks[0].actual.as_ref().and_then(Value::as_str).unwrap_or_default();
        assert!(actual.starts_with("invalid regex"), "{actual}");
        assert!(verify("Hello", &[], &[Check::Regex { pattern: patterns::GREETING.into() }]).passed);
        assert_eq!(check_name(&Check::Regex { pattern: "^a+$".into() }), "regex_a");
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
