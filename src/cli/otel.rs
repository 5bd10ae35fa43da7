//! Span export over OTLP/HTTP (protobuf), built only with the `otel` feature: when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set, every `agentvisor` span at info level or above goes to
//! `{endpoint}/v1/traces` through `tracing-opentelemetry`, batched on the SDK's own thread.
//! The exporter reads the standard `OTEL_EXPORTER_OTLP_*` variables itself (endpoint, headers,
//! timeout); the service is `agentvisor`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::{Layer, Registry};

/// The variable whose presence turns export on.
const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// A running span exporter; [`Exporter::shutdown`] flushes what it holds.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// The exporter `OTEL_EXPORTER_OTLP_ENDPOINT` asks for, or `None` when it is unset or
    /// empty.
    pub(crate) fn from_env() -> anyhow::Result<Option<Exporter>> {
        if std::env::var_os(ENDPOINT_VAR).is_none_or(|v| v.is_empty()) {
            return Ok(None);
        }
        agentvisor::agent::brain::install_tls_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()?;
        let provider = SdkTracerProvider::builder()
            .with_resource(Resource::builder().with_service_name("agentvisor").build())
            .with_batch_exporter(exporter)
            .build();
        Ok(Some(Exporter { provider }))
    }

    /// The layer that turns `agentvisor`'s spans into OpenTelemetry spans for this exporter.
    pub(crate) fn layer(&self) -> Box<dyn Layer<Registry> + Send + Sync> {
        let tracer = self.provider.tracer("agentvisor");
        let spans = Targets::new().with_target("agentvisor", tracing::Level::INFO);
        Box::new(tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans))
    }

    /// Flushes the spans not yet sent and stops the exporter's thread. Blocks until the last
    /// batch is answered or the exporter's timeout passes; a failure is one line on stderr.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("agentvisor: failed to flush the exported spans: {e}");
        }
    }
}
