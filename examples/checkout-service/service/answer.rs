//! What a checkout request answers: the status, the exact body, the headers, and
//! what its log line says. Every body is a fixed shape; the only value that is not a
//! fixed code is a success's `charge`, the stored envelope's canonical text, so a
//! replay answers the first answer's bytes (and says so: `Idempotent-Replayed: true`).
//! The one exception is "the customer must act": its body carries the client secret
//! or the hosted page's URL, for the customer's browser only (`Cache-Control:
//! no-store`; the log line and the metrics carry its fixed outcome only).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use command_journal::JournalError;
use command_journal::sends::CustomerAction;
use command_journal_http::IDEMPOTENT_REPLAYED;
use serde_json::{Value, json};

/// `Retry-After` while another worker holds the lease, or Firestore is unavailable.
pub const BUSY_RETRY_AFTER: u64 = 2;
/// `Retry-After` of a 202 `pending_reconciliation`: once the lease this request took
/// has expired, so that the retry may take it and ask the provider again.
pub const PENDING_RETRY_AFTER: u64 = 60;

/// A finished request: the response and what the log line says about it.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The exact JSON text of the body.
    pub body: String,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<u64>,
    /// Answer with `WWW-Authenticate: Bearer`.
    pub unauthenticated: bool,
    /// Answer with `Connection: close` (the body was not read to its end).
    pub close: bool,
    /// A fixed code naming how the request ended.
    pub outcome: &'static str,
    /// The command key hash, once the command is known.
    pub command_key_hash: Option<String>,
    /// Whether the provider was called (a POST or a lookup).
    pub provider_called: bool,
    /// The journal's stored outcome, answered again: `Idempotent-Replayed: true`.
    pub replayed: bool,
    /// Answer with `Cache-Control: no-store` (the body holds the customer's action).
    pub no_store: bool,
}

/// What a request's log line says of its answer, carried in the response's
/// extensions from wherever the answer was made (the handler, or the
/// `Idempotency-Key` layer in front of it).
#[derive(Debug, Clone)]
pub struct Logged {
    /// A fixed code naming how the request ended.
    pub outcome: &'static str,
    /// The command key hash, once the command is known.
    pub command_key_hash: Option<String>,
    /// Whether the provider was called (a POST or a lookup).
    pub provider_called: bool,
}

impl Answer {
    /// `status` with the JSON `body`.
    pub fn new(status: StatusCode, body: Value, outcome: &'static str) -> Self {
        Self {
            status,
            body: body.to_string(),
            retry_after: None,
            unauthenticated: false,
            close: false,
            outcome,
            command_key_hash: None,
            provider_called: false,
            replayed: false,
            no_store: false,
        }
    }

    /// 200 `{"status":"succeeded","charge":<canonical envelope>}`, byte for byte
    /// from the stored envelope's canonical text.
    pub fn charged(canonical: &str, outcome: &'static str) -> Self {
        let mut answer = Self::new(StatusCode::OK, Value::Null, outcome);
        answer.body = format!(r#"{{"status":"succeeded","charge":{canonical}}}"#);
        answer
    }

    /// 200 `{"status":"succeeded"}`: a success recorded without an envelope (before
    /// envelopes existed, through `complete_command`).
    pub fn succeeded(outcome: &'static str) -> Self {
        Self::new(StatusCode::OK, json!({"status": "succeeded"}), outcome)
    }

    /// 402 `{"status":"failed"}`.
    pub fn failed(outcome: &'static str) -> Self {
        Self::new(
            StatusCode::PAYMENT_REQUIRED,
            json!({"status": "failed"}),
            outcome,
        )
    }

    /// 409 `{"status":"in_progress"}`, `Retry-After: 2`.
    pub fn in_progress(outcome: &'static str) -> Self {
        let mut answer = Self::new(
            StatusCode::CONFLICT,
            json!({"status": "in_progress"}),
            outcome,
        );
        answer.retry_after = Some(BUSY_RETRY_AFTER);
        answer
    }

    /// 503 `{"status":"retry"}`, `Retry-After: after` (at least 1).
    pub fn retry(outcome: &'static str, after: u64) -> Self {
        let mut answer = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "retry"}),
            outcome,
        );
        answer.retry_after = Some(after.max(1));
        answer
    }

    /// 202 `{"status":"pending_reconciliation"}`, `Retry-After: 60`.
    pub fn pending_reconciliation() -> Self {
        let mut answer = Self::new(
            StatusCode::ACCEPTED,
            json!({"status": "pending_reconciliation"}),
            "pending_reconciliation",
        );
        answer.retry_after = Some(PENDING_RETRY_AFTER);
        answer
    }

    /// 202 `{"status":"customer_must_act","action":{"type":"confirm","clientSecret",
    /// "nextAction"}}` (confirm with Stripe.js) or `{…,"action":{"type":"open","url"}}`
    /// (open the hosted page), `Cache-Control: no-store`. Never stored: every retry
    /// asks the provider again, and the customer's return (the same command's next
    /// call) answers the payment's outcome.
    pub fn customer_must_act(action: &CustomerAction) -> Self {
        let action = match action {
            CustomerAction::Confirm {
                client_secret,
                next_action,
            } => json!({
                "type": "confirm",
                "clientSecret": client_secret.expose(),
                "nextAction": next_action.as_str(),
            }),
            CustomerAction::Open { url } => json!({"type": "open", "url": url.expose()}),
        };
        let mut answer = Self::new(
            StatusCode::ACCEPTED,
            json!({"status": "customer_must_act", "action": action}),
            "customer_must_act",
        );
        answer.no_store = true;
        answer
    }

    /// 400 `{"error":"invalid_input","field":field}`.
    pub fn invalid(field: &'static str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_input", "field": field}),
            "invalid_input",
        )
    }

    /// The journal's refusals, each to a fixed answer.
    pub fn journal_error(error: JournalError) -> Self {
        match error {
            JournalError::InvalidInput { field } => Self::invalid(field),
            JournalError::CommandConflict => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({"error": "command_conflict"}),
                "command_conflict",
            ),
            JournalError::Unavailable { .. } => Self::retry("unavailable", BUSY_RETRY_AFTER),
            // The lease passed to another worker while the provider answered: that
            // worker repeats the call with the same key and records the outcome.
            JournalError::LeaseExpired | JournalError::StaleFence | JournalError::LeaseNotHeld => {
                Self::in_progress(error.code())
            }
            JournalError::JournalCorrupt { .. } => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "journal_corrupt", "message": "the checkout could not be processed; nothing was changed"}),
                "journal_corrupt",
            ),
            other => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "internal", "message": "the checkout could not be processed"}),
                other.code(),
            ),
        }
    }

    /// The HTTP response, with what its log line says in its extensions ([`Logged`]).
    pub fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        response.extensions_mut().insert(Logged {
            outcome: self.outcome,
            command_key_hash: self.command_key_hash,
            provider_called: self.provider_called,
        });
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.unauthenticated {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.no_store {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        if self.replayed {
            headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        }
        response
    }
}

/// The log line's severity of an answer of `status`: ERROR for a failure on the
/// service's side, WARNING for a 503, INFO otherwise.
pub fn severity(status: StatusCode) -> super::logging::Severity {
    use super::logging::Severity;
    if status == StatusCode::SERVICE_UNAVAILABLE {
        Severity::Warning
    } else if status.is_server_error() {
        Severity::Error
    } else {
        Severity::Info
    }
}
