//! Tracing: every delegation is a `tracing` span (`delegation`, with its
//! request id, origin, target and depth), and spans nest across hops through
//! W3C `traceparent`: the `http` backend sends the current context, the
//! server continues it. Spans are exported over OTLP (HTTP, JSON) only when an
//! endpoint is configured (`--otlp-endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`).
//!
//! Without the `otel` feature there is no trace context: logs only, no
//! `traceparent` sent or continued, and an OTLP endpoint is refused.

#[cfg(feature = "otel")]
pub use otel::{TracingGuard, continue_trace, init, trace_headers};
#[cfg(not(feature = "otel"))]
pub use plain::{TracingGuard, continue_trace, init, trace_headers};

/// The logs layer: stderr, filtered by `RUST_LOG` (default: warnings).
fn logs<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::{EnvFilter, Layer};
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
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
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// Flushes exported spans when dropped (at the end of `main`).
    pub struct TracingGuard {
        provider: Option<SdkTracerProvider>,
    }

    impl Drop for TracingGuard {
        fn drop(&mut self) {
            if let Some(p) = self.provider.take() {
                let _ = p.shutdown();
            }
        }
    }

    /// Installs the process's subscriber: logs to stderr filtered by `RUST_LOG`
    /// (default: warnings), and delegation spans for trace context, exported to
    /// `otlp_endpoint` when one is given.
    pub fn init(otlp_endpoint: Option<&str>) -> Result<TracingGuard, String> {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let mut builder = SdkTracerProvider::builder();
        if let Some(endpoint) = otlp_endpoint {
            crate::util::install_tls();
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
                .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
                .build()
                .map_err(|e| format!("OTLP exporter for {endpoint}: {e}"))?;
            let batch = BatchSpanProcessor::builder(exporter)
                .with_batch_config(
                    BatchConfigBuilder::default().with_scheduled_delay(Duration::from_millis(500)).build(),
                )
                .build();
            builder = builder.with_span_processor(batch);
        }
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "switchboard".into()))
            .build();
        let provider = builder.with_resource(resource).build();
        let tracer = provider.tracer("switchboard");
        let spans = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(Targets::new().with_target("switchboard", LevelFilter::INFO));
        tracing_subscriber::registry()
            .with(super::logs())
            .with(spans)
            .try_init()
            .map_err(|e| format!("tracing is already set up: {e}"))?;
        Ok(TracingGuard { provider: Some(provider) })
    }

    /// Headers that carry the current span's trace to the next hop (`traceparent`).
    pub fn trace_headers() -> Vec<(&'static str, String)> {
        let cx = tracing::Span::current().context();
        let mut carrier: HashMap<String, String> = HashMap::new();
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut carrier));
        carrier.remove("traceparent").map(|v| vec![("traceparent", v)]).unwrap_or_default()
    }

    /// Makes `span` continue the trace named by an incoming `traceparent`.
    pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
        let Some(tp) = traceparent else { return };
        let carrier: HashMap<String, String> = HashMap::from([("traceparent".to_string(), tp.to_string())]);
        let cx = TraceContextPropagator::new().extract(&carrier);
        let _ = span.set_parent(cx);
    }
}

#[cfg(not(feature = "otel"))]
mod plain {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// Nothing to flush without span export.
    pub struct TracingGuard;

    /// Installs the process's subscriber: logs only. An OTLP endpoint needs
    /// the `otel` feature, and asking for one without it is an error.
    pub fn init(otlp_endpoint: Option<&str>) -> Result<TracingGuard, String> {
        if let Some(endpoint) = otlp_endpoint {
            return Err(format!(
                "cannot export spans to {endpoint}: this build of Switchboard leaves out OpenTelemetry (the `otel` feature)"
            ));
        }
        tracing_subscriber::registry()
            .with(super::logs())
            .try_init()
            .map_err(|e| format!("tracing is already set up: {e}"))?;
        Ok(TracingGuard)
    }

    /// No trace context to send.
    pub fn trace_headers() -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// No trace context to continue.
    pub fn continue_trace(_span: &tracing::Span, _traceparent: Option<&str>) {}
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
}
