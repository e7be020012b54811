//! Every error this package answers, as an RFC 9457 problem details object
//! (`application/problem+json`), from one table: a stable snake_case `code` (each
//! `JournalError::code()`, and the edge's own), its HTTP status, and a fixed title.
//!
//! The `type` URI of a code is [`PROBLEM_TYPE_BASE`] followed by the code with `-` for
//! `_` (`tag:command-journal,2026:problem/command-conflict`): a tag URI (RFC 4151),
//! which RFC 9457 §3.1.1 allows for a type that is not dereferenced; it never changes
//! for a code. The body is `{"code", "status", "title", "type"}` (plus `field` for
//! `invalid_input`, the field's name and never its value): no input, id, key, hash or
//! payload value is ever echoed.

use axum::body::Body;
use command_journal::JournalError;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;
use std::time::Duration;

/// The prefix of every problem `type` URI.
pub const PROBLEM_TYPE_BASE: &str = "tag:command-journal,2026:problem/";

/// The media type of every problem body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// `Retry-After` of a 409 while another request holds the command, and of a 503
/// while Firestore is unavailable, in seconds.
pub const BUSY_RETRY_AFTER: u64 = 2;

/// One row of the table: a code, its status and its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProblemType {
    /// The stable snake_case code (the `code` member).
    pub code: &'static str,
    /// The HTTP status.
    pub status: u16,
    /// A fixed, human-readable summary (the `title` member).
    pub title: &'static str,
}

const fn row(code: &'static str, status: u16, title: &'static str) -> ProblemType {
    ProblemType {
        code,
        status,
        title,
    }
}

/// One row per `JournalError::code()`, in the order of `JournalError`. A lost lease is
/// 409 (the request is being finished by another: retry it); a configuration or
/// internal failure, or a refusal no request of this layer can cause, is 500.
pub const JOURNAL_PROBLEMS: &[ProblemType] = &[
    row("invalid_input", 400, "The request is not a valid command"),
    row(
        "command_conflict",
        422,
        "Idempotency-Key is already used with another request",
    ),
    row("not_registered", 500, "The command is not registered"),
    row(
        "lease_not_held",
        409,
        "Another request is finishing this command",
    ),
    row(
        "stale_fence",
        409,
        "Another request is finishing this command",
    ),
    row(
        "lease_expired",
        409,
        "Another request is finishing this command",
    ),
    row(
        "terminal_conflict",
        409,
        "The command ended with another outcome",
    ),
    row(
        "clock_regression",
        500,
        "The server's clock is behind the journal",
    ),
    row(
        "revision_overflow",
        500,
        "The command cannot change any more",
    ),
    row(
        "journal_corrupt",
        500,
        "The request could not be processed; nothing was changed",
    ),
    row(
        "replay_mismatch",
        422,
        "The ledger command does not match its reservation",
    ),
    row(
        "scope_mismatch",
        422,
        "The ledger command is outside its reservation's scope",
    ),
    row(
        "unsupported_fingerprint_version",
        500,
        "The stored reservation's version is not supported",
    ),
    row(
        "reversal_exceeds_original",
        422,
        "The reversal would return more than the original booked",
    ),
    row(
        "obsolete_multi_effect_fingerprint",
        422,
        "The historical command cannot be linked",
    ),
    row(
        "send_cutoff_passed",
        500,
        "The payment's outcome is unknown and needs reconciliation",
    ),
    row(
        "resend_not_yet",
        503,
        "An earlier request for the payment may still be on its way: retry shortly",
    ),
    row(
        "plan_conflict",
        409,
        "The command is bound to another provider plan",
    ),
    row(
        "send_outcome_required",
        500,
        "The command has a provider send and ends only through it",
    ),
    row(
        "attempt_mismatch",
        500,
        "The provider attempt is not the current one",
    ),
    row(
        "absence_not_provable",
        500,
        "The payment's absence cannot be proven yet",
    ),
    row(
        "unavailable",
        503,
        "The journal is unavailable; retrying later is safe",
    ),
    row(
        "credentials_unavailable",
        500,
        "The server is not configured",
    ),
    row("permission_denied", 500, "The server is not configured"),
    row("not_configured", 500, "The server is not configured"),
    row("internal", 500, "The request could not be processed"),
];

/// The edge's own codes: the header, the caller, the body, the stored response and
/// the execution's answers that are errors.
pub const EDGE_PROBLEMS: &[ProblemType] = &[
    row("idempotency_key_missing", 400, "Idempotency-Key is missing"),
    row(
        "idempotency_key_malformed",
        400,
        "Idempotency-Key is not a String of 1 to 255 visible characters other than quote and backslash",
    ),
    row(
        "caller_missing",
        500,
        "No verified caller: the service's authentication did not run before the idempotency layer",
    ),
    row(
        "unsupported_media_type",
        415,
        "The request body must be application/json",
    ),
    row("body_too_large", 413, "The request body is too large"),
    row(
        "body_malformed",
        400,
        "The request body is not one JSON value without duplicate keys",
    ),
    row(
        "in_progress",
        409,
        "A request is outstanding for this Idempotency-Key",
    ),
    row(
        "handler_timeout",
        503,
        "The request did not finish within its lease; retry after Retry-After",
    ),
    row(
        "response_unstorable",
        500,
        "The response could not be stored; nothing was recorded",
    ),
    row(
        "stored_response_unreadable",
        500,
        "The stored response could not be read; nothing was changed",
    ),
    row(
        "no_stored_response",
        500,
        "The command ended without a response this layer stored",
    ),
    row(
        "command_missing",
        500,
        "No command: the handler runs without the idempotency layer for provider handlers",
    ),
    row("declined", 402, "The payment was declined"),
    row(
        "retry_later",
        503,
        "The payment's outcome is not known yet; retry after Retry-After",
    ),
];

/// The row of `code`: the journal's or the edge's; an unknown code (a journal error
/// added after this table) is `internal`'s row.
pub fn problem_type(code: &str) -> &'static ProblemType {
    JOURNAL_PROBLEMS
        .iter()
        .chain(EDGE_PROBLEMS)
        .find(|row| row.code == code)
        .unwrap_or(&JOURNAL_PROBLEMS[JOURNAL_PROBLEMS.len() - 1])
}

impl ProblemType {
    /// The stable `type` URI of this row.
    pub fn uri(&self) -> String {
        format!("{PROBLEM_TYPE_BASE}{}", self.code.replace('_', "-"))
    }
}

/// One problem answer: a row, the field of an `invalid_input`, a `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    kind: &'static ProblemType,
    field: Option<&'static str>,
    retry_after: Option<u64>,
}

impl Problem {
    /// The problem of the edge's or the journal's `code`.
    pub fn new(code: &str) -> Self {
        let kind = problem_type(code);
        // Answers a retry may clear soon: another request holding the command, or
        // Firestore unavailable.
        let soon = matches!(
            kind.code,
            "in_progress" | "unavailable" | "lease_not_held" | "stale_fence" | "lease_expired"
        );
        Self {
            kind,
            field: None,
            retry_after: soon.then_some(BUSY_RETRY_AFTER),
        }
    }

    /// The problem of a journal error: its code's row, with the field of an
    /// `invalid_input`.
    pub fn journal(error: JournalError) -> Self {
        let mut problem = Self::new(error.code());
        if let JournalError::InvalidInput { field } = error {
            problem.field = Some(field);
        }
        problem
    }

    /// The same problem with `Retry-After: after` (whole seconds, rounded up, at least
    /// one).
    pub fn retry_after(mut self, after: Duration) -> Self {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// The row of this problem.
    pub fn kind(&self) -> &'static ProblemType {
        self.kind
    }

    /// The `application/problem+json` response.
    pub fn into_response(self) -> Response<Body> {
        let mut body = json!({
            "code": self.kind.code,
            "status": self.kind.status,
            "title": self.kind.title,
            "type": self.kind.uri(),
        });
        if let (Some(field), Some(object)) = (self.field, body.as_object_mut()) {
            object.insert("field".to_owned(), json!(field));
        }
        let mut response = Response::new(Body::from(body.to_string()));
        response.extensions_mut().insert(OwnProblem);
        *response.status_mut() =
            StatusCode::from_u16(self.kind.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// Marks a response as one of this package's problems (never sent: an extension), so
/// that the layer links it to the documentation; a handler's stored answer, rebuilt
/// from the journal, never carries it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnProblem;

/// Adds `link` to `response` when it is one of this package's problems.
pub(crate) fn link_documentation(response: &mut Response<Body>, link: Option<&HeaderValue>) {
    if let Some(link) = link
        && response.extensions().get::<OwnProblem>().is_some()
    {
        response.headers_mut().append(header::LINK, link.clone());
    }
}

impl axum::response::IntoResponse for Problem {
    fn into_response(self) -> axum::response::Response {
        Problem::into_response(self)
    }
}

#[cfg(test)]
mod tests;
