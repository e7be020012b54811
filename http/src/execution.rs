//! The answer of a provider handler: one table from `Journal::execute_marked`'s
//! answer to the HTTP response.
//!
//! | `Execution` | status | body | headers |
//! |---|---|---|---|
//! | `Succeeded(result)` | 200 | the stored result's canonical JSON, byte for byte | `Content-Type: application/json` |
//! | `SucceededWithoutResult` | 200 | `{"status":"succeeded"}` | `Content-Type: application/json` |
//! | `Declined` | 402 | problem `declined` | |
//! | `InProgress` | 409 | problem `in_progress` | `Retry-After: 2` |
//! | `RetryLater { after }` | 503 | problem `retry_later` | `Retry-After: after` |
//! | `PendingReconciliation` | 202 | `{"status":"pending_reconciliation"}` | `Retry-After: 60` |
//! | `CustomerMustAct(action)` | 202 | `{"status":"customer_must_act","action":{"type":"confirm","clientSecret":…,"nextAction":…}}` or `{…,"action":{"type":"open","url":…}}` | `Cache-Control: no-store` |
//! | an error | the problem table's | problem of its code | |
//!
//! A replay (`replayed`: the terminal outcome stored before this call) answers the same
//! status and bytes with `Idempotent-Replayed: true`.
//!
//! Where the draft is open: a payment whose outcome is not known yet is never stored
//! as an answer. An ambiguous send (the provider's timeout or 5xx) is 503 with the time
//! after which a retry takes the lease over and re-sends under the same provider key,
//! which the provider deduplicates; past the send cutoff, with the provider's lookup
//! unavailable, the request was accepted and its outcome waits for evidence: 202,
//! asked again by the next retry or settled by the recovery job. In both cases a later
//! retry gets the final answer, which is then stored and replayed.

use crate::problem::{BUSY_RETRY_AFTER, Problem};
use crate::replay::mark_replayed;
use axum::body::Body;
use command_journal::sends::{CustomerAction, Executed};
use command_journal::{Execution, JournalError};
use http::{HeaderValue, Response, StatusCode, header};
use std::time::Duration;

/// `Retry-After` of a 202 pending reconciliation, in seconds: once the lease the
/// request took has expired, so that the retry may take it and ask the provider again.
pub const PENDING_RETRY_AFTER: u64 = 60;

/// The response of an execution, by the table of this module.
pub fn execution_response(answer: Result<Executed, JournalError>) -> Response<Body> {
    let executed = match answer {
        Ok(executed) => executed,
        Err(error) => return Problem::journal(error).into_response(),
    };
    let mut response = match executed.execution {
        Execution::Succeeded(result) => json(StatusCode::OK, result.canonical().to_owned()),
        Execution::SucceededWithoutResult => {
            json(StatusCode::OK, r#"{"status":"succeeded"}"#.to_owned())
        }
        Execution::Declined => Problem::new("declined").into_response(),
        Execution::InProgress => Problem::new("in_progress")
            .retry_after(Duration::from_secs(BUSY_RETRY_AFTER))
            .into_response(),
        Execution::RetryLater { after } => Problem::new("retry_later")
            .retry_after(after)
            .into_response(),
        Execution::PendingReconciliation => {
            let mut response = json(
                StatusCode::ACCEPTED,
                r#"{"status":"pending_reconciliation"}"#.to_owned(),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(PENDING_RETRY_AFTER));
            response
        }
        Execution::CustomerMustAct(action) => customer_must_act(&action),
    };
    if executed.replayed {
        mark_replayed(&mut response);
    }
    response
}

/// The 202 that hands the customer's action to the browser: never cached, since it
/// carries the client secret or the hosted page's URL.
fn customer_must_act(action: &CustomerAction) -> Response<Body> {
    let action = match action {
        CustomerAction::Confirm {
            client_secret,
            next_action,
        } => serde_json::json!({
            "type": "confirm",
            "clientSecret": client_secret.expose(),
            "nextAction": next_action.as_str(),
        }),
        CustomerAction::Open { url } => serde_json::json!({"type": "open", "url": url.expose()}),
    };
    let body = serde_json::json!({"status": "customer_must_act", "action": action});
    let mut response = json(StatusCode::ACCEPTED, body.to_string());
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn json(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests;
