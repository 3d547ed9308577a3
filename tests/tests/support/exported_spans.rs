//! The spans an OpenTelemetry exporter receives (through `tracing-opentelemetry`) from what
//! runs inside [`exported`]: shared by the scenarios that check backstop's spans.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

/// Runs `f` with a subscriber that exports every span to memory; returns what `f` returned
/// and the finished spans.
pub fn exported<T>(f: impl FnOnce() -> T) -> (T, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("scenario")));
    let result = tracing::subscriber::with_default(subscriber, f);
    provider.force_flush().expect("spans flushed");
    let spans = exporter.get_finished_spans().expect("the finished spans");
    (result, spans)
}
