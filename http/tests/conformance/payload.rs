//! The request as the command's payload: which requests are the same (a replay) and
//! which are another (422), however the client spells them.

use super::support::{Call, note_call, service};
use http::StatusCode;

const KEY: &str = "\"payload-cases-1\"";

#[tokio::test]
async fn an_empty_body_and_a_json_null_are_two_payloads() {
    // No body and the JSON value `null` are two requests a handler tells apart (an
    // extractor of `Json<T>` refuses the first and reads the second): the same key
    // with the other is the key with another payload, never the first one's answer.
    let service = service(false).await;
    let empty = service.send(&note_call("alice", KEY, "")).await;
    assert_eq!(empty.status, StatusCode::CREATED);
    let null = service.send(&note_call("alice", KEY, "null")).await;
    assert_eq!(null.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(null.problem().as_deref(), Some("command_conflict"));
    // And the other way round, under another key.
    let other = "\"payload-cases-2\"";
    service.send(&note_call("alice", other, "null")).await;
    let empty = service.send(&note_call("alice", other, "")).await;
    assert_eq!(empty.problem().as_deref(), Some("command_conflict"));
    assert_eq!(service.script.runs(), 2);
}

#[tokio::test]
async fn one_layer_nested_under_two_prefixes_is_two_targets() {
    // The target is the one the client sent, not the path below a nest: a request to
    // `/v2/notes` is never answered with what `/v1/notes` stored under the same key.
    use axum::Router;
    use axum::routing::post;
    use command_journal::identity::{CommandType, Environment};
    use command_journal_http::IdempotencyLayer;
    let mut service = service(false).await;
    let notes = IdempotencyLayer::new(
        service.journal.clone(),
        Environment::Emulator,
        CommandType::parse("create_note").expect("a type"),
    );
    let versioned = Router::new().route(
        "/notes",
        post(|uri: axum::http::Uri| async move { (StatusCode::CREATED, uri.to_string()) })
            .layer(notes),
    );
    service.router = Router::new()
        .nest("/v1", versioned.clone())
        .nest("/v2", versioned)
        .layer(axum::middleware::from_fn(super::support::authenticate));
    let v1 = service
        .send(&Call {
            path: "/v1/notes",
            ..note_call("alice", KEY, "{}")
        })
        .await;
    assert_eq!(v1.status, StatusCode::CREATED);
    let v2 = service
        .send(&Call {
            path: "/v2/notes",
            ..note_call("alice", KEY, "{}")
        })
        .await;
    assert_eq!(v2.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v2.problem().as_deref(), Some("command_conflict"));
    assert_eq!(service.counts().await.results, 1);
}
