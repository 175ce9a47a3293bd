//! Diagnostics through `tracing`. One environment variable, `MPI_TRACE`, turns on the spans
//! (printed when they close, with their duration) and events of the layers it names: `MPI_TRACE=nic,bip` (every level of both), or any
//! `tracing-subscriber` filter such as `MPI_TRACE=bip=debug`. Unset, no subscriber is
//! installed and every trace point costs one relaxed load.

use std::sync::Once;

/// Installs a subscriber writing to stderr if `MPI_TRACE` is set. Idempotent.
pub fn init_from_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Ok(spec) = std::env::var("MPI_TRACE") {
            let filter = tracing_subscriber::EnvFilter::new(spec);
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                .with_writer(std::io::stderr)
                .with_target(true)
                .try_init();
        }
    });
}
