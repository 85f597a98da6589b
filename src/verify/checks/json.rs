//! JSON checks (`JsonSchema`, `KeyCase`, `Unique`) on the JSON output, and
//! `EmailsValid`, which reads the JSON output or else the addresses in the text.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::verify::text::{self, KeyCase};

pub(super) const NO_JSON: &str = "no JSON output: no JSON artifact and the result is not JSON";
pub(super) const NO_ARRAY: &str = "the JSON output is not an array";

pub(super) fn json_schema(schema: &Value, json: Option<&Value>) -> (bool, Value) {
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

pub(super) fn offending_keys(v: &Value, case: KeyCase, bad: &mut BTreeSet<String>) {
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

pub(super) fn duplicates(items: &[Value], field: Option<&str>) -> Vec<Value> {
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

pub(super) fn emails_valid(result: &str, json: Option<&Value>, field: Option<&str>) -> (bool, Value) {
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
    use crate::protocol::{Artifact, Check, Verdict};
    use crate::verify::checks::verify;

    fn names(v: &Verdict) -> Vec<&str> {
        v.checks.iter().map(|c| c.name.as_str()).collect()
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
}
