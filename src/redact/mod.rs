//! PII detection and reversible typed tokens (`<EMAIL_1>`).
