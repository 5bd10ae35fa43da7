//! The command line's `tracing` subscriber: logs on stderr when asked (`-v`, `-vv` or
//! `RUST_LOG`), and, built with the `otel` feature, spans exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set. With none of these nothing is installed, and nothing
//! is printed. Nothing here ever writes to stdout, which carries the commands' output
//! (`--json` included).

use std::io::IsTerminal;
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// What must outlive the command for its spans to reach their exporter: dropped last, it
/// flushes them.
pub(crate) struct Logging {
    #[cfg(feature = "otel")]
    otel: Option<super::otel::Exporter>,
}

impl Drop for Logging {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(exporter) = self.otel.take() {
            exporter.shutdown();
        }
    }
}

/// The stderr filter: `RUST_LOG` when set, else `info` for `-v` and `debug` for `-vv` or
/// more; `None` when neither asks for logs.
fn stderr_filter(verbose: u8) -> Option<EnvFilter> {
    if let Ok(filter) = EnvFilter::try_from_default_env() {
        return Some(filter);
    }
    match verbose {
        0 => None,
        1 => Some(EnvFilter::new("info")),
        _ => Some(EnvFilter::new("debug")),
    }
}

/// Installs the subscriber for a command run with `verbose` `-v` flags. A failure to set up
/// the exporter is reported on stderr and the command goes on without it.
pub(crate) fn init(verbose: u8) -> Logging {
    // Only the layers asked for: a `None` layer beside a filtered one would turn every
    // callsite off.
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = Vec::new();
    if let Some(filter) = stderr_filter(verbose) {
        let stderr = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(true)
            .with_filter(filter);
        layers.push(Box::new(stderr));
    }
    #[cfg(feature = "otel")]
    let exporter = match super::otel::Exporter::from_env() {
        Ok(Some(exporter)) => {
            layers.push(exporter.layer());
            Some(exporter)
        }
        Ok(None) => None,
        Err(e) => {
            eprintln!("agentvisor: spans are not exported: {e}");
            None
        }
    };
    if !layers.is_empty() {
        // Only fails if a subscriber is already set, which nothing else in the binary does.
        let _ = Registry::default().with(layers).try_init();
    }
    Logging {
        #[cfg(feature = "otel")]
        otel: exporter,
    }
}
