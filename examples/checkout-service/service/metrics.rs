//! `GET /metrics`: the journal's metrics (`docs/metrics.md`) and the service's own,
//! in the Prometheus text format, from a `metrics-exporter-prometheus` recorder.
//!
//! `main` installs the recorder globally; a test installs its own for its thread
//! (see `emulator-tests/checkout_service.rs`). The service counts every request by
//! route, status and outcome (the fixed code its log line carries) and times it;
//! like the journal's, its labels are fixed strings only.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use std::time::Duration;

/// Counter: requests by `route`, `status` and `outcome`.
pub const REQUESTS_TOTAL: &str = "checkout_service_requests_total";
/// Histogram (seconds): from taking a request to answering it, by `route`.
pub const REQUEST_DURATION_SECONDS: &str = "checkout_service_request_duration_seconds";

/// Histogram buckets, in seconds: from a replay's few milliseconds to a provider
/// call's 30 s timeout.
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];

/// A recorder for the journal's metrics and the service's, rendering histograms
/// with [`BUCKETS`].
pub fn recorder() -> PrometheusRecorder {
    let builder = PrometheusBuilder::new();
    // `set_buckets` refuses only an empty list.
    match builder.set_buckets(&BUCKETS) {
        Ok(builder) => builder.build_recorder(),
        Err(_) => PrometheusBuilder::new().build_recorder(),
    }
}

/// Installs `recorder` for the whole process and registers every metric's help
/// text; the handle renders `GET /metrics`. `None` when a recorder was installed
/// already.
pub fn install(recorder: PrometheusRecorder) -> Option<PrometheusHandle> {
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).ok()?;
    describe();
    Some(handle)
}

/// Registers the help text of the journal's metrics and the service's with the
/// recorder installed now.
pub fn describe() {
    command_journal::metrics::describe_metrics();
    super::webhook_metrics::describe();
    metrics::describe_counter!(
        REQUESTS_TOTAL,
        "HTTP requests by route, status and outcome (a fixed code)."
    );
    metrics::describe_histogram!(
        REQUEST_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "From taking an HTTP request to answering it, body read included."
    );
}

/// Counts one answered request.
pub fn request(route: &'static str, status: u16, outcome: &'static str, latency: Duration) {
    metrics::counter!(
        REQUESTS_TOTAL,
        "route" => route,
        "status" => status.to_string(),
        "outcome" => outcome,
    )
    .increment(1);
    metrics::histogram!(REQUEST_DURATION_SECONDS, "route" => route).record(latency.as_secs_f64());
}
