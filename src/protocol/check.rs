//! Verification checks a caller can attach to a delegation, and the
//! verdict shape the runtime answers with. Evaluation lives in `verify/`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One machine-checkable property of an agent's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Check {
    /// At most `max` words in the result.
    MaxWords {
        /// The most words allowed.
        max: usize,
    },
    /// At least `min` words in the result.
    MinWords {
        /// The fewest words allowed.
        min: usize,
    },
    /// The result mentions `phrase` (case-insensitive, whitespace-tolerant).
    Contains {
        /// The phrase that must appear.
        phrase: String,
    },
    /// The result does not mention `phrase`.
    NotContains {
        /// The phrase that must not appear.
        phrase: String,
    },
    /// Each named element is present (e.g. apologize, acknowledge impact, new timeline).
    Required {
        /// The elements, each a word or short phrase to find evidence of.
        elements: Vec<String>,
    },
    /// The result matches the regular expression.
    Regex {
        /// The regular expression, in the `regex` crate's syntax.
        pattern: String,
    },
    /// The JSON artifact (or the result parsed as JSON) satisfies this JSON Schema subset.
    JsonSchema {
        /// The schema the JSON output must satisfy.
        schema: Value,
    },
    /// Every object key in the JSON output uses this casing: `camel`, `snake`, `pascal`, `kebab`.
    KeyCase {
        /// The casing: `camel`, `snake`, `pascal` or `kebab`.
        case: String,
    },
    /// No two items of the JSON array share the value of `field` (or the whole item).
    Unique {
        /// The array items' field that must be unique; None compares whole items.
        #[serde(default)]
        field: Option<String>,
    },
    /// Every value of `field` in the JSON array (or every email in the text) is a valid address.
    EmailsValid {
        /// The field holding the addresses; None checks every email in the text.
        #[serde(default)]
        field: Option<String>,
    },
    /// The tone heuristic scores at least the threshold for the named tone.
    Tone {
        /// The tone's name, e.g. `warm_professional`.
        tone: String,
    },
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check's name, e.g. `max_120_words` or `required_apologize`.
    pub name: String,
    /// Whether the output passed it.
    pub passed: bool,
    /// What was found (a word count, the match, what is missing); None when there is nothing to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
}

/// The verifier's verdict on an output (`verifier`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether every check passed.
    pub passed: bool,
    /// Fraction of checks passed, 0.0 to 1.0.
    pub score: f64,
    /// Each check's outcome, in order.
    pub checks: Vec<CheckResult>,
}

impl Verdict {
    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.checks.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect()
    }
}
