//! A handler that sends to a provider, under the layer's provider mode: the journal's
//! `execute_marked` with the layer's command, its answer through the package's table,
//! and the replay marker from the journal's own answer.

use super::support::{Call, Service, charged, service};
use command_journal::ProviderAnswer;
use http::StatusCode;
use std::sync::Arc;

const KEY: &str = "\"2f6c1f0e-6a53-4f6e-9a0b-6c1d2e3f4a5b\"";
const BODY: &str = r#"{"amount": 1250, "currency": "eur"}"#;

fn charge_call(key: &str) -> Call<'_> {
    Call {
        path: "/v1/charges",
        caller: Some("alice"),
        key: Some(key),
        content_type: Some("application/json"),
        body: BODY,
    }
}

#[tokio::test]
async fn a_charge_is_sent_once_and_replayed_with_the_marker() {
    let service = service(false).await;
    service
        .script
        .answers([ProviderAnswer::Succeeded(charged("ch_1"))]);
    let first = service.send(&charge_call(KEY)).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(!first.replayed());
    assert_eq!(first.body, charged("ch_1").canonical().as_bytes());
    for _ in 0..2 {
        let retry = service.send(&charge_call(KEY)).await;
        assert!(retry.replayed());
        assert_eq!(retry.unmarked(), first.unmarked());
    }
    assert_eq!(service.script.sends(), 1);
    let counts = service.counts().await;
    assert_eq!((counts.roots, counts.results), (1, 1));
    service.assert_verified().await;
}

#[tokio::test]
async fn a_decline_is_replayed_as_the_same_problem() {
    let service = service(false).await;
    service.script.answers([ProviderAnswer::Declined]);
    let first = service.send(&charge_call(KEY)).await;
    assert_eq!(first.status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(first.problem().as_deref(), Some("declined"));
    assert!(!first.replayed());
    let retry = service.send(&charge_call(KEY)).await;
    assert!(retry.replayed());
    assert_eq!(retry.unmarked(), first.unmarked());
    assert_eq!(service.script.sends(), 1);
}

#[tokio::test]
async fn a_duplicate_while_the_send_is_in_flight_is_409_and_sends_nothing() {
    let service: Arc<Service> = Arc::new(service(true).await);
    service
        .script
        .answers([ProviderAnswer::Succeeded(charged("ch_2"))]);
    let first = {
        let service = service.clone();
        tokio::spawn(async move { service.send(&charge_call(KEY)).await })
    };
    service.script.started.notified().await;
    let duplicate = service.send(&charge_call(KEY)).await;
    assert_eq!(duplicate.status, StatusCode::CONFLICT);
    assert_eq!(duplicate.problem().as_deref(), Some("in_progress"));
    service.script.release.notify_one();
    let first = first.await.expect("the first request");
    assert_eq!(first.status, StatusCode::OK);
    assert!(!first.replayed());
    assert_eq!(service.script.sends(), 1);
}

#[tokio::test]
async fn an_ambiguous_send_is_503_never_stored_and_resent_under_the_same_key() {
    // The draft is open on a 5xx whose outcome is unknown: the journal records the
    // ambiguity, the answer says when to retry, and the retry re-sends the same
    // attempt (the provider deduplicates its key) and gets the final answer.
    let service = service(false).await;
    service.script.answers([
        ProviderAnswer::Unknown,
        ProviderAnswer::Succeeded(charged("ch_3")),
    ]);
    let unknown = service.send(&charge_call(KEY)).await;
    assert_eq!(unknown.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(unknown.problem().as_deref(), Some("retry_later"));
    assert_eq!(unknown.headers["retry-after"], "60");
    service.advance(61);
    let settled = service.send(&charge_call(KEY)).await;
    assert_eq!(settled.status, StatusCode::OK);
    assert!(!settled.replayed());
    assert_eq!(service.script.sends(), 2);
    let replay = service.send(&charge_call(KEY)).await;
    assert!(replay.replayed());
    assert_eq!(replay.unmarked(), settled.unmarked());
}

#[tokio::test]
async fn a_provider_handler_without_its_mode_has_no_command() {
    // The notes route stores responses: its handler gets no command, so a provider
    // handler mounted there would answer 500 command_missing instead of sending.
    use axum::routing::post;
    use command_journal_http::IdempotentCommand;
    let service = service(false).await;
    let request = http::Request::post("/")
        .body(axum::body::Body::empty())
        .expect("a request");
    let router = axum::Router::new().route("/", post(|_: IdempotentCommand| async { "sent" }));
    let response = tower::ServiceExt::oneshot(router, request)
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(service.script.sends(), 0);
}
