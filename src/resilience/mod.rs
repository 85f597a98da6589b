//! resilience
