//! Trace context across hops.

/// Headers that carry the current trace to the next hop.
pub fn trace_headers() -> Vec<(&'static str, String)> {
    Vec::new()
}
