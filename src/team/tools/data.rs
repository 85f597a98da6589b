//! The data tool agent: CSV → JSON array of objects. Keys come from the
//! header (or the note's `Input columns:` when the rows have none) in the
//! note's key case, camelCase by default; values are trimmed strings, so zip
//! codes and ids keep their leading zeros. Emails are validated per row (a
//! redacted `<EMAIL_n>` counts as valid); duplicates, by email when there is
//! an email column and by the whole row otherwise, are reported and removed.
//!
//! It is seeded, with two ways to read the rows. The lenient
//! reader (the first seed) reports invalid emails and keeps their rows:
//! dropping data would hide the problem from the verifier. The strict reader
//! rejects every row it cannot vouch for (an invalid email, an empty field)
//! and lists it with the reason, so the records it returns are all valid;
//! rows with the wrong number of fields are reported and left out by both.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::shared::{invalid, plural, read_task, variant_index};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, ErrorCode};
use crate::verify::text::{self, KeyCase};

pub(crate) struct DataAgent;

/// The variants' seeds in default order: lenient, strict.
pub(super) const SEEDS: [u64; 2] = [310452, 872219];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Keep every well-formed row; report invalid emails.
    Lenient,
    /// Keep only rows with a valid email and no empty field; reject the rest with the reason.
    Strict,
}

impl Reading {
    fn of(seed: Option<u64>) -> Self {
        // one variant per seed, so the index is always in range
        let all: [Self; SEEDS.len()] = [Self::Lenient, Self::Strict];
        all[variant_index(&SEEDS, seed)]
    }

    fn name(self) -> &'static str {
        match self {
            Self::Lenient => "lenient",
            Self::Strict => "strict",
        }
    }
}

/// RFC 4180 fields: quotes around fields, `""` inside them, delimiters and
/// line breaks inside quotes. Unquoted fields are trimmed.
fn parse_csv(input: &str, delimiter: char) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = input.chars().peekable();
    let finish_field = |field: &mut String, was_quoted: &mut bool, row: &mut Vec<String>| {
        let value = if *was_quoted { field.clone() } else { field.trim().to_string() };
        row.push(value);
        field.clear();
        *was_quoted = false;
    };
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.trim().is_empty() => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            (false, c) if c == delimiter => finish_field(&mut field, &mut was_quoted, &mut row),
            (false, '\r') => {}
            (false, '\n') => {
                finish_field(&mut field, &mut was_quoted, &mut row);
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || was_quoted || !row.is_empty() {
        finish_field(&mut field, &mut was_quoted, &mut row);
        rows.push(row);
    }
    rows.into_iter().filter(|r| r.iter().any(|f| !f.trim().is_empty())).collect()
}

/// The most frequent of `,`, `;` and tab on the first line.
fn delimiter(input: &str) -> char {
    let first = input.lines().next().unwrap_or("");
    [',', ';', '\t'].into_iter().max_by_key(|d| first.matches(*d).count()).unwrap_or(',')
}

/// `First Name` and `first_name` name the same column.
fn same_column(a: &str, b: &str) -> bool {
    KeyCase::Camel.convert(a) == KeyCase::Camel.convert(b)
}

struct Transformed {
    records: Vec<Value>,
    keys: Vec<String>,
    rows: usize,
    invalid_emails: Vec<Value>,
    duplicates: Vec<Value>,
    malformed: Vec<Value>,
    /// Rows the strict reader would not vouch for, with the reason.
    rejected: Vec<Value>,
}

/// Rows between two looks at the cancellation: a given-up transform stops soon.
const CHECK_EVERY: usize = 256;

fn transform(
    input: &str,
    columns: &[String],
    case: KeyCase,
    reading: Reading,
    cancel: &CancellationToken,
) -> Result<Transformed, DelegationError> {
    let mut rows = parse_csv(input, delimiter(input));
    if rows.is_empty() {
        return Err(invalid("no CSV rows: put the data after the instructions or in the request's input"));
    }
    // Declared columns and a first row that does not repeat them (and reads
    // like data) means the rows come without a header.
    let first = &rows[0];
    let repeats_columns = first.len() == columns.len() && first.iter().zip(columns).all(|(a, b)| same_column(a, b));
    let headerless = !columns.is_empty()
        && !repeats_columns
        && first.iter().any(|f| f.contains('@') || f.chars().any(|c| c.is_ascii_digit()));
    let header: Vec<String> = if headerless { columns.to_vec() } else { rows.remove(0) };
    if rows.is_empty() {
        return Err(invalid("the CSV has a header but no rows"));
    }
    let keys: Vec<String> = header
        .iter()
        .enumerate()
        .map(|(i, h)| if h.trim().is_empty() { format!("column{}", i + 1) } else { case.convert(h) })
        .collect();
    let email_key = keys.iter().position(|k| k.to_lowercase().contains("mail"));

    let mut out = Transformed {
        records: Vec::new(),
        keys: keys.clone(),
        rows: rows.len(),
        invalid_emails: Vec::new(),
        duplicates: Vec::new(),
        malformed: Vec::new(),
        rejected: Vec::new(),
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, fields) in rows.iter().enumerate() {
        if i % CHECK_EVERY == 0 && cancel.is_cancelled() {
            return Err(DelegationError::from_code(ErrorCode::Cancelled));
        }
        let row = i + 1;
        if fields.len() != keys.len() {
            out.malformed.push(json!({"row": row, "expected": keys.len(), "found": fields.len()}));
            continue;
        }
        let bad_email = email_key.and_then(|e| fields.get(e)).filter(|v| !text::email_ok(v));
        if let Some(value) = bad_email {
            out.invalid_emails.push(json!({"row": row, "value": value}));
        }
        if reading == Reading::Strict {
            let empty: Vec<&String> =
                keys.iter().zip(fields).filter(|(_, f)| f.trim().is_empty()).map(|(k, _)| k).collect();
            let reason = match (bad_email, empty.is_empty()) {
                (Some(value), _) => Some(format!("invalid email '{value}'")),
                (None, false) => {
                    Some(format!("empty {}", empty.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")))
                }
                (None, true) => None,
            };
            if let Some(reason) = reason {
                out.rejected.push(json!({"row": row, "reason": reason}));
                continue;
            }
        }
        let identity = match email_key.and_then(|e| fields.get(e)) {
            Some(email) => email.to_lowercase(),
            None => fields.iter().map(|f| f.to_lowercase()).collect::<Vec<_>>().join("\u{1f}"),
        };
        if let Some(&first) = seen.get(&identity) {
            let value = email_key.and_then(|e| fields.get(e)).map_or_else(|| json!(fields), |v| json!(v));
            out.duplicates.push(json!({"row": row, "duplicate_of": first, "value": value}));
            continue;
        }
        seen.insert(identity, row);
        let record: Map<String, Value> = keys.iter().cloned().zip(fields.iter().map(|f| json!(f))).collect();
        out.records.push(Value::Object(record));
    }
    Ok(out)
}

#[async_trait]
impl Agent for DataAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool("transform_data")?;
        let (spec, input) = read_task(task)?;
        let input = input.ok_or_else(|| {
            invalid("no CSV data: put the rows after the instructions (header first) or in the request's input")
        })?;
        let case = spec.constraints.key_case.unwrap_or(KeyCase::Camel);
        let reading = Reading::of(task.seed);
        let t = transform(&input, &spec.context.columns, case, reading, ctx.cancellation())?;
        let result = serde_json::to_string_pretty(&t.records)
            .map_err(|e| DelegationError::new(ErrorCode::AgentFailed, format!("could not serialize records: {e}")))?;
        let summary = format!(
            "Transformed {} ({} reading) into {} with {} keys: {} removed, {}, {}, {}",
            plural(t.rows as u64, "row"),
            reading.name(),
            plural(t.records.len() as u64, "record"),
            case.label(),
            plural(t.duplicates.len() as u64, "duplicate"),
            plural(t.invalid_emails.len() as u64, "invalid email"),
            plural(t.malformed.len() as u64, "malformed row"),
            plural(t.rejected.len() as u64, "rejected row"),
        );
        let validation = json!({
            "rows": t.rows,
            "records": t.records.len(),
            "columns": t.keys,
            "invalid_emails": t.invalid_emails,
            "duplicates": t.duplicates,
            "malformed_rows": t.malformed,
            "rejected_rows": t.rejected,
            "reading": reading.name(),
            "seed": task.seed.unwrap_or(SEEDS[0]),
        });
        // the strict reader's records have no invalid email: it rejected those rows
        let kept_invalid = reading == Reading::Lenient && !t.invalid_emails.is_empty();
        let clean = !kept_invalid && t.malformed.is_empty() && t.rejected.is_empty();
        Ok(AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("records", Value::Array(t.records)))
            .with_artifact(Artifact::json("validation", validation))
            .with_confidence(if clean { 95 } else { 70 }))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const CSV: &str = "name,email,role\nAda Lovelace, ada@example.com ,admin\n\"Hopper, Grace\",grace@example.com,dev\nAda L.,ADA@example.com,admin";

    #[tokio::test]
    async fn seed_001_data_note_passes_its_checks() {
        let note = format!("{DATA_NOTE}\n{CSV}");
        let out = run(&DataAgent, "transform_data", &noted(&note)).await.unwrap();
        let v = verdict(&note, &out);
        assert!(v.passed, "{v:#?}\n{}", out.result);
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["keys_camel_case", "json_schema", "valid_email", "unique_email"]);
        let records = artifact(&out, "records");
        assert_eq!(
            records,
            &json!([
                {"name": "Ada Lovelace", "email": "ada@example.com", "role": "admin"},
                {"name": "Hopper, Grace", "email": "grace@example.com", "role": "dev"}
            ])
        );
        let validation = artifact(&out, "validation");
        assert_eq!(validation["duplicates"], json!([{"row": 3, "duplicate_of": 1, "value": "ADA@example.com"}]));
        assert_eq!(validation["rows"], 3);
        assert_eq!(serde_json::from_str::<Value>(&out.result).unwrap(), *records);
    }

    #[tokio::test]
    async fn csv_in_the_input_and_invalid_emails_fail_verification() {
        let mut task = noted(DATA_NOTE);
        task.input = "Name,E-mail,Role\nBo,bo@x,dev\nCy,<EMAIL_1>,ops".into();
        let out = run(&DataAgent, "transform_data", &task).await.unwrap();
        assert_eq!(artifact(&out, "records")[0], json!({"name": "Bo", "email": "bo@x", "role": "dev"}));
        assert_eq!(artifact(&out, "validation")["invalid_emails"], json!([{"row": 1, "value": "bo@x"}]));
        let v = verdict(DATA_NOTE, &out);
        assert_eq!(v.failed(), ["valid_email"]);
        assert_eq!(v.checks.iter().find(|c| c.name == "valid_email").unwrap().actual, Some(json!(["bo@x"])));
    }

    #[tokio::test]
    async fn headerless_rows_take_the_declared_columns_and_key_case() {
        let note = "Convert this CSV to JSON. Columns: Full Name, Work Email. Output: array of objects with snake_case keys.\nAda,ada@x.io\nBob,bob@x.io";
        let out = run(&DataAgent, "transform_data", &noted(note)).await.unwrap();
        assert_eq!(artifact(&out, "records")[1], json!({"full_name": "Bob", "work_email": "bob@x.io"}));
        assert!(verdict(note, &out).passed);
    }

    #[tokio::test]
    async fn malformed_rows_are_reported_and_empty_data_is_refused() {
        let mut task = noted(DATA_NOTE);
        task.input = "name,email,role\nAda,ada@x.io\nBob,bob@x.io,dev".into();
        let out = run(&DataAgent, "transform_data", &task).await.unwrap();
        assert_eq!(artifact(&out, "validation")["malformed_rows"], json!([{"row": 1, "expected": 3, "found": 2}]));
        let err = run(&DataAgent, "transform_data", &noted(DATA_NOTE)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        task.input = "name,email,role".into();
        let err = run(&DataAgent, "transform_data", &task).await.unwrap_err();
        assert!(err.message.contains("no rows"), "{}", err.message);
    }

    #[test]
    fn csv_parser_handles_quotes_and_other_delimiters() {
        assert_eq!(parse_csv("a,\"b \"\"x\"\", c\"\r\n1,2\n", ','), [vec!["a", "b \"x\", c"], vec!["1", "2"]]);
        assert_eq!(delimiter("a;b;c\n1;2;3"), ';');
        assert_eq!(parse_csv("a;b\n\n1;2", ';'), [vec!["a", "b"], vec!["1", "2"]]);
    }
}
