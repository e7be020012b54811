//! The webhook endpoint's metrics (`POST /webhooks/stripe`, and the recovery job's
//! backfill, which logs instead): what was received, verified, recorded, and what
//! was refused or acknowledged without a record and why. Labels are fixed codes
//! only: never a secret, a key, an event id or an object id.

/// Counter: requests received at the endpoint (before any check).
pub const RECEIVED_TOTAL: &str = "checkout_service_webhooks_received_total";
/// Counter: requests whose signature verified.
pub const VERIFIED_TOTAL: &str = "checkout_service_webhooks_verified_total";
/// Counter: events recorded as evidence, by `result` (`recorded`: the command's
/// success or failure written; `late_charge`: a charge its command ended without,
/// written for a person; `duplicate`: the command had ended already, nothing
/// written).
pub const RECORDED_TOTAL: &str = "checkout_service_webhooks_recorded_total";
/// Counter: events of the journal's key form whose key the journal does not know
/// (another deployment on the account, or a command gone): acknowledged, nothing
/// written.
pub const UNKNOWN_OBJECT_TOTAL: &str = "checkout_service_webhooks_unknown_object_total";
/// Counter: verified events acknowledged with nothing to record, by `code` (not
/// ours, a type not read, a state on the way, an unsettled read).
pub const IGNORED_TOTAL: &str = "checkout_service_webhooks_ignored_total";
/// Counter: requests refused, by `code` (the verifier's refusal, or the body's
/// timeout) and `status`.
pub const REFUSED_TOTAL: &str = "checkout_service_webhooks_refused_total";
/// Histogram (seconds): from an event's `created` to its record, on the journal's
/// clock (the delivery's lag plus the endpoint's work).
pub const EVENT_AGE_SECONDS: &str = "checkout_service_webhooks_event_age_seconds";

/// Registers the help text of the webhook metrics with the recorder installed now.
pub fn describe() {
    metrics::describe_counter!(RECEIVED_TOTAL, "Webhook requests received.");
    metrics::describe_counter!(VERIFIED_TOTAL, "Webhook requests whose signature verified.");
    metrics::describe_counter!(
        RECORDED_TOTAL,
        "Webhook events recorded as evidence, by result (recorded, late_charge, duplicate)."
    );
    metrics::describe_counter!(
        UNKNOWN_OBJECT_TOTAL,
        "Webhook events for a key the journal does not know: acknowledged, nothing written."
    );
    metrics::describe_counter!(
        IGNORED_TOTAL,
        "Verified webhook events acknowledged with nothing to record, by code."
    );
    metrics::describe_counter!(
        REFUSED_TOTAL,
        "Webhook requests refused, by code and status: nothing written."
    );
    metrics::describe_histogram!(
        EVENT_AGE_SECONDS,
        metrics::Unit::Seconds,
        "From a webhook event's creation to its record, on the journal's clock."
    );
}

/// Counts one request received.
pub fn received() {
    metrics::counter!(RECEIVED_TOTAL).increment(1);
}

/// Counts one request verified.
pub fn verified() {
    metrics::counter!(VERIFIED_TOTAL).increment(1);
}

/// Counts one request refused with `code` and `status`.
pub fn refused(code: &'static str, status: u16) {
    metrics::counter!(REFUSED_TOTAL, "code" => code, "status" => status.to_string()).increment(1);
}

/// Counts one event taken: recorded, duplicate, unknown object or ignored (`code`).
pub fn taken(outcome: &'static str) {
    match outcome {
        "recorded" | "late_charge" | "duplicate" => {
            metrics::counter!(RECORDED_TOTAL, "result" => outcome).increment(1);
        }
        "unknown_object" => metrics::counter!(UNKNOWN_OBJECT_TOTAL).increment(1),
        code => metrics::counter!(IGNORED_TOTAL, "code" => code).increment(1),
    }
}

/// Records the age of an event recorded `seconds` after its creation.
pub fn age(seconds: f64) {
    metrics::histogram!(EVENT_AGE_SECONDS).record(seconds.max(0.0));
}
