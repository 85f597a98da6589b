//! Verification checks a caller can attach to a delegation (seeds/001), and the
//! verdict shape the runtime answers with. Evaluation lives in `verify/`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One machine-checkable property of an agent's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Check {
    /// At most `max` words in the result.
    MaxWords { max: usize },
    /// At least `min` words in the result.
    MinWords { min: usize },
    /// The result mentions `phrase` (case-insensitive, whitespace-tolerant).
    Contains { phrase: String },
    /// The result does not mention `phrase`.
    NotContains { phrase: String },
    /// Each named element is present (e.g. apologize, acknowledge impact, new timeline).
    Required { elements: Vec<String> },
    /// The result matches the regular expression.
    Regex { pattern: String },
    /// The JSON artifact (or the result parsed as JSON) satisfies this JSON Schema subset.
    JsonSchema { schema: Value },
    /// Every object key in the JSON output uses this casing: `camel`, `snake`, `pascal`, `kebab`.
    KeyCase { case: String },
    /// No two items of the JSON array share the value of `field` (or the whole item).
    Unique {
        #[serde(default)]
        field: Option<String>,
    },
    /// Every value of `field` in the JSON array (or every email in the text) is a valid address.
    EmailsValid {
        #[serde(default)]
        field: Option<String>,
    },
    /// The tone heuristic scores at least the threshold for the named tone.
    Tone { tone: String },
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
}

/// The verifier's verdict on an output (seeds/001 `verifier`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub passed: bool,
    /// Fraction of checks passed, 0.0 to 1.0.
    pub score: f64,
    pub checks: Vec<CheckResult>,
}

impl Verdict {
    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.checks.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect()
    }
}
