//! The replay marker: the `Idempotent-Replayed: true` response header (Stripe's name,
//! the draft's open issue #46), and the counter of replays.
//!
//! Every label value is a fixed string of this package: the kind of handler that
//! answered. No label carries a key, a caller, a path or a payload.

use http::{HeaderValue, Response};

/// The response header a replay carries, with the value `true`. A first answer carries
/// none.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// Counter: answers the layer gave that replay a stored outcome, by `handler`
/// (`stored_response` or `provider`).
pub const REPLAYS_TOTAL: &str = "command_journal_http_replays_total";

/// Registers the help text of [`REPLAYS_TOTAL`] with the recorder installed now.
/// Records nothing.
pub fn describe_metrics() {
    metrics::describe_counter!(
        REPLAYS_TOTAL,
        "Answers of the Idempotency-Key layer that replay a stored outcome, by handler kind."
    );
}

/// Marks `response` as a replay.
pub(crate) fn mark_replayed<B>(response: &mut Response<B>) {
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
}

/// Whether `response` is marked as a replay.
pub(crate) fn is_replayed<B>(response: &Response<B>) -> bool {
    response
        .headers()
        .get(IDEMPOTENT_REPLAYED)
        .is_some_and(|value| value == "true")
}

/// Counts one replay answered by a handler of kind `handler`.
pub(crate) fn count(handler: &'static str) {
    metrics::counter!(REPLAYS_TOTAL, "handler" => handler).increment(1);
}
