//! The handle through which an agent delegates.

/// Placeholder, replaced by the runtime's handle.
#[derive(Clone)]
pub struct Delegator {}
