//! Tracing: every delegation is a `tracing` span (`delegation`, with its
//! request id, origin, target and depth), and spans nest across hops through
//! W3C `traceparent`: the server continues a caller's trace, and the `http`,
//! `a2a` and `llm` backends send it on.
//!
//! Two modes, chosen at start:
//!
//! - **Exporting** (`--otlp-endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`, the
//!   `otel` feature): the OpenTelemetry layer records every span and exports
//!   it over OTLP (HTTP, JSON); a hop sends its own span as the next hop's
//!   parent.
//! - **Passing through** (no endpoint): no span is recorded or exported, so
//!   this process has no span ids of its own to give. A caller's
//!   `traceparent` is kept on the request's span and sent on unchanged, so a
//!   next hop that does export nests under the last span anyone exported,
//!   not under a span nobody will ever see (W3C Trace Context's rule for a
//!   hop that does not take part). This mode costs a span in the registry
//!   per request and delegation, and none of OpenTelemetry's per-span work,
//!   which took about a tenth of the in-memory pipeline's CPU.
//!
//! Without the `otel` feature only the second mode exists, and an OTLP
//! endpoint is refused.

#[cfg(feature = "otel")]
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// Set once the exporting subscriber is installed.
#[cfg(feature = "otel")]
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Flushes exported spans when dropped (at the end of `main`).
pub struct TracingGuard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl std::fmt::Debug for TracingGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingGuard").finish_non_exhaustive()
    }
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
    }
}

/// The logs layer: stderr, filtered by `RUST_LOG` (default: warnings).
fn logs<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    use tracing_subscriber::EnvFilter;
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
}

/// Switchboard's own spans (requests, delegations): the ones trace context rides on.
fn ours() -> Targets {
    Targets::new().with_target("switchboard", LevelFilter::INFO)
}

/// Installs the process's subscriber: logs to stderr filtered by `RUST_LOG`
/// (default: warnings), and Switchboard's spans, exported to `otlp_endpoint`
/// when one is given and passing a caller's trace through otherwise.
pub fn init(otlp_endpoint: Option<&str>) -> Result<TracingGuard, String> {
    let Some(endpoint) = otlp_endpoint else {
        tracing_subscriber::registry()
            .with(logs())
            .with(PassThrough.with_filter(ours()))
            .try_init()
            .map_err(|e| format!("tracing is already set up: {e}"))?;
        return Ok(TracingGuard {
            #[cfg(feature = "otel")]
            provider: None,
        });
    };
    #[cfg(feature = "otel")]
    {
        let guard = otel::init(endpoint)?;
        EXPORTING.store(true, Ordering::Release);
        Ok(guard)
    }
    #[cfg(not(feature = "otel"))]
    Err(format!(
        "cannot export spans to {endpoint}: this build of Switchboard leaves out OpenTelemetry (the `otel` feature)"
    ))
}

/// Headers that carry the current trace to the next hop (`traceparent`):
/// the current span's context when exporting, the caller's `traceparent`
/// as received when passing through, nothing outside any trace.
pub fn trace_headers() -> Vec<(&'static str, String)> {
    #[cfg(feature = "otel")]
    if EXPORTING.load(Ordering::Acquire) {
        return otel::trace_headers();
    }
    passed().map(|tp| vec![("traceparent", tp)]).unwrap_or_default()
}

/// Makes `span` continue the trace named by an incoming `traceparent`; a
/// malformed one is ignored, as W3C Trace Context asks.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(tp) = traceparent.filter(|tp| well_formed(tp)) else { return };
    #[cfg(feature = "otel")]
    if EXPORTING.load(Ordering::Acquire) {
        otel::continue_trace(span, tp);
        return;
    }
    span.with_subscriber(|(id, dispatch)| {
        if let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>()
            && let Some(span) = registry.span(id)
        {
            span.extensions_mut().replace(Passed(tp.to_string()));
        }
    });
}

/// A caller's `traceparent`, kept on the span of the request that brought it.
struct Passed(String);

/// Enables Switchboard's spans (so a caller's trace rides on them across
/// spawned tasks) and records nothing.
struct PassThrough;

impl<S> Layer<S> for PassThrough where S: tracing::Subscriber + for<'a> LookupSpan<'a> {}

/// The `traceparent` kept on the current span or the nearest one above it.
fn passed() -> Option<String> {
    tracing::Span::current()
        .with_subscriber(|(id, dispatch)| {
            let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
            let span = registry.span(id)?;
            span.scope().find_map(|s| s.extensions().get::<Passed>().map(|p| p.0.clone()))
        })
        .flatten()
}

/// A `traceparent` as W3C Trace Context writes it:
/// `version-traceid-parentid-flags`, lowercase hex, neither id all zeros,
/// version `ff` invalid; a later version may append fields after the four.
fn well_formed(tp: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    let mut parts = tp.splitn(5, '-');
    let (Some(version), Some(trace), Some(parent), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let rest = parts.next();
    hex(version, 2)
        && version != "ff"
        && (version != "00" || rest.is_none())
        && hex(trace, 32)
        && !zero(trace)
        && hex(parent, 16)
        && !zero(parent)
        && hex(flags, 2)
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;
    use std::time::Duration;

    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    use super::TracingGuard;

    /// The exporting subscriber: logs, and every Switchboard span recorded
    /// and sent to `endpoint` in batches.
    pub(super) fn init(endpoint: &str) -> Result<TracingGuard, String> {
        crate::util::install_tls();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .build()
            .map_err(|e| format!("OTLP exporter for {endpoint}: {e}"))?;
        let batch = BatchSpanProcessor::builder(exporter)
            .with_batch_config(BatchConfigBuilder::default().with_scheduled_delay(Duration::from_millis(500)).build())
            .build();
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "switchboard".into()))
            .build();
        let provider = SdkTracerProvider::builder().with_span_processor(batch).with_resource(resource).build();
        let spans =
            tracing_opentelemetry::layer().with_tracer(provider.tracer("switchboard")).with_filter(super::ours());
        tracing_subscriber::registry()
            .with(super::logs())
            .with(spans)
            .try_init()
            .map_err(|e| format!("tracing is already set up: {e}"))?;
        Ok(TracingGuard { provider: Some(provider) })
    }

    /// The current span as the next hop's parent.
    pub(super) fn trace_headers() -> Vec<(&'static str, String)> {
        let cx = tracing::Span::current().context();
        let mut carrier: HashMap<String, String> = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        carrier.remove("traceparent").map(|v| vec![("traceparent", v)]).unwrap_or_default()
    }

    /// Makes `span` a child of the caller's span.
    pub(super) fn continue_trace(span: &tracing::Span, traceparent: &str) {
        let carrier: HashMap<String, String> = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
        let cx = TraceContextPropagator::new().extract(&carrier);
        let _ = span.set_parent(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_subscriber_there_is_nothing_to_propagate() {
        // library use without tracing set up: no header, no panic
        assert!(trace_headers().is_empty());
        continue_trace(&tracing::Span::none(), Some("garbage"));
    }

    #[test]
    fn only_a_well_formed_traceparent_is_continued() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(well_formed(good));
        assert!(
            well_formed("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"),
            "a later version may add"
        );
        for bad in [
            "",
            "garbage",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        ] {
            assert!(!well_formed(bad), "{bad:?} is not a traceparent");
        }
    }

    #[test]
    fn passing_through_a_spawned_task_sends_the_callers_traceparent_unchanged() {
        let subscriber = tracing_subscriber::registry().with(PassThrough.with_filter(ours()));
        tracing::subscriber::with_default(subscriber, || {
            let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            let request = tracing::info_span!(target: "switchboard::server", "request");
            continue_trace(&request, Some(tp));
            let delegation = request.in_scope(|| tracing::info_span!(target: "switchboard::pipeline", "delegation"));
            let sent = delegation.in_scope(trace_headers);
            assert_eq!(sent, vec![("traceparent", tp.to_string())], "a nested span sends the caller's trace on");
            assert!(trace_headers().is_empty(), "outside the request there is no trace");
            let other = tracing::info_span!(target: "switchboard::server", "request");
            continue_trace(&other, Some("00-not-a-trace"));
            assert!(other.in_scope(trace_headers).is_empty(), "a malformed traceparent is dropped");
        });
    }
}
