//! The request as the command's payload: which requests are the same (a replay) and
//! which are another (422), however the client spells them.

use super::support::{Call, Counts, note_call, service};
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
