//! Observability: Prometheus metrics and tracing (a span per delegation, W3C
//! `traceparent` across hops, OTLP export when an endpoint is configured).

pub mod events;
pub mod metrics;
pub mod trace;

pub use events::{Event, Events};
pub use metrics::{Metrics, Observation, TakenOver};
pub use trace::{TracingGuard, continue_trace, init, trace_headers};
