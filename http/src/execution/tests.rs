//! The execution table, row by row.

use super::*;
use crate::replay::IDEMPOTENT_REPLAYED;
use command_journal::ResultEnvelope;
use http_body_util::BodyExt as _;
use serde_json::json;

fn answer(execution: Execution, replayed: bool) -> (StatusCode, http::HeaderMap, String) {
    let response = execution_response(Ok(Executed {
        execution,
        replayed,
    }));
    let (parts, body) = response.into_parts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let bytes = runtime.block_on(body.collect()).expect("a body").to_bytes();
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
    (parts.status, parts.headers, text)
}

#[test]
fn every_execution_has_its_row() {
    let result = ResultEnvelope::new(&json!({"id": "ch_1", "amount": 1250})).expect("envelope");
    let (status, headers, body) = answer(Execution::Succeeded(result.clone()), false);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, result.canonical());
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    assert!(headers.get(IDEMPOTENT_REPLAYED).is_none());
    let (status, _, body) = answer(Execution::SucceededWithoutResult, false);
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, r#"{"status":"succeeded"}"#)
    );
    let (status, headers, body) = answer(Execution::Declined, false);
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(headers[header::CONTENT_TYPE], "application/problem+json");
    assert!(body.contains("problem/declined"), "{body}");
    let (status, headers, _) = answer(Execution::InProgress, false);
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(headers[header::RETRY_AFTER], "2");
    let later = Execution::RetryLater {
        after: Duration::from_secs(37),
    };
    let (status, headers, _) = answer(later, false);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[header::RETRY_AFTER], "37");
    let (status, headers, body) = answer(Execution::PendingReconciliation, false);
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(headers[header::RETRY_AFTER], "60");
    assert_eq!(body, r#"{"status":"pending_reconciliation"}"#);
}

#[test]
fn a_replay_answers_the_same_bytes_marked() {
    let result = ResultEnvelope::new(&json!({"id": "ch_1"})).expect("envelope");
    for execution in [
        Execution::Succeeded(result),
        Execution::SucceededWithoutResult,
        Execution::Declined,
    ] {
        let first = answer(execution.clone(), false);
        let (status, mut headers, body) = answer(execution, true);
        assert_eq!(
            headers
                .remove(IDEMPOTENT_REPLAYED)
                .as_ref()
                .map(|v| v.as_bytes()),
            Some(&b"true"[..])
        );
        assert_eq!((status, headers, body), first);
    }
}

#[test]
fn an_error_is_its_problem() {
    let response = execution_response(Err(JournalError::CommandConflict));
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let response = execution_response(Err(JournalError::unavailable(None, 3, true)));
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[header::RETRY_AFTER], "2");
}
