//! PII detection and reversible typed tokens (`<EMAIL_1>`). Stand-in until the
//! real detector lands: same API, detects nothing.

#[derive(Default)]
pub struct Vault {}

impl Vault {
    pub fn restore(&self, text: &str) -> String {
        text.to_string()
    }
    pub fn restore_json(&self, _v: &mut serde_json::Value) {}
    pub fn len(&self) -> usize {
        0
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}

#[derive(Default)]
pub struct Redactor {}

impl Redactor {
    pub fn new() -> Self {
        Self {}
    }
    pub fn redact(&self, text: &str, _vault: &mut Vault) -> String {
        text.to_string()
    }
    pub fn redact_json(&self, _v: &mut serde_json::Value, _vault: &mut Vault) {}
}
