//! The header form of a checkout, on command-journal-http's layer: the command id from
//! `Idempotency-Key`, the body the payload; a replay marked `Idempotent-Replayed: true`
//! (in the body form too); the layer's own refusals as problem details; a body naming
//! a `commandId` besides the key refused; a command bound to the form it was made in.

use super::stub_provider::Action;
use super::{
    COMMAND_ID, Options, PAYLOAD_NOTE, PAYLOAD_SKU, UID, command_id, commerce_documents, payload,
    send_documents, start_service, succeeded,
};
use chrono::TimeDelta;
use command_journal::identity::OperationSlug;
use command_journal::time::ManualClock;
use command_journal::{Clock as _, Journal, LeaseId, LeaseOutput};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const KEY_CANARY: &str = "CANARYorder-17";
const OTHER_UID: &str = "CANARYuid2Other";

#[tokio::test]
async fn checkout_keyed_charges_once_and_marks_its_replays() {
    let service = start_service(Options::default()).await;
    let first = service.keyed(COMMAND_ID, &payload()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(!first.replayed, "a first answer is no replay");
    assert_eq!(first.content_type, "application/json");
    assert_eq!(first.body, succeeded(&service.first_charge()));
    let again = service.keyed(COMMAND_ID, &payload()).await;
    assert_eq!((again.status, again.replayed), (200, true));
    assert_eq!(
        again.text, first.text,
        "the replay is the first answer's bytes"
    );

    // One POST, under the provider key of the layer's command: the key's command id,
    // the verified caller, the payload {"body", "method", "target"}.
    let command = service.keyed_command(COMMAND_ID, &payload());
    let charge = OperationSlug::parse("charge").expect("slug");
    let posts = service.stub.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(
        posts[0].key.as_deref(),
        Some(
            command
                .identity()
                .provider_idempotency_key(&charge)
                .as_str()
        )
    );
    // The key is the command id itself: the command key hash is the body form's
    // for the same id; only the payload's fingerprint differs.
    let hash = command.identity().command_key_hash().to_string();
    let body_form = service.command(COMMAND_ID, &payload());
    assert_eq!(body_form.identity().command_key_hash().to_string(), hash);
    assert_eq!(posts[0].body, payload(), "the body is the charge's payload");
    let mut expected = commerce_documents(3);
    expected.extend(send_documents(2));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.push("providerKeys/H".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    // Every document is this command's: its own, or its key's index naming it.
    assert!(
        service
            .documents()
            .await
            .iter()
            .all(|(name, _)| { name.contains(&hash) || name.contains("/providerKeys/") })
    );

    // A key that is no UUID derives one: a command of its own, charged once.
    let derived = service.keyed(KEY_CANARY, &payload()).await;
    assert_eq!((derived.status, derived.replayed), (200, false));
    let derived_again = service.keyed(KEY_CANARY, &payload()).await;
    assert_eq!((derived_again.status, derived_again.replayed), (200, true));
    assert_eq!(derived_again.text, derived.text);
    assert_eq!(service.stub.posts().len(), 2);

    // The body form marks its replays as well.
    let body = json!({"commandId": command_id(2), "payload": payload()});
    let token = service.token(UID);
    let old = service.send(service.post(Some(&token), &body)).await;
    let old_again = service.send(service.post(Some(&token), &body)).await;
    assert_eq!((old.status, old.replayed), (200, false));
    assert_eq!((old_again.status, old_again.replayed), (200, true));
    assert_eq!(old_again.text, old.text);
    service.assert_verifies_clean(3).await;

    let outcomes: Vec<String> = checkout_lines(&service.lines())
        .iter()
        .map(|line| line["outcome"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        outcomes,
        [
            "succeeded",
            "replayed",
            "succeeded",
            "replayed",
            "succeeded",
            "replayed"
        ]
    );
    service.assert_no_leak(&[KEY_CANARY, &token]).await;
}

#[tokio::test]
async fn checkout_keyed_refusals_write_nothing() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let url = format!("{}/v1/checkouts", service.url);
    let keyed = |key: &str, body: String| {
        service
            .http
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body)
    };
    let text = payload().to_string();

    // The layer's own: a bare token (not a String), an empty String, two keys.
    for key in [COMMAND_ID.to_owned(), "\"\"".to_owned()] {
        let answer = service.send(keyed(&key, text.clone())).await;
        assert_problem(&answer, 400, "idempotency_key_malformed");
    }
    let two = keyed(&format!("\"{COMMAND_ID}\""), text.clone())
        .header("idempotency-key", format!("\"{}\"", command_id(3)));
    assert_problem(&service.send(two).await, 400, "idempotency_key_malformed");
    // A duplicate key at any depth.
    let duplicate = r#"{"amountCents":1,"note":{"a":1,"a":2}}"#.to_owned();
    let answer = service
        .send(keyed(&format!("\"{COMMAND_ID}\""), duplicate))
        .await;
    assert_problem(&answer, 400, "body_malformed");
    // Over the layer's 60 KiB (the service reads up to 64 KiB).
    let big = json!({"blob": "x".repeat(61 * 1024)}).to_string();
    let answer = service.send(keyed(&format!("\"{COMMAND_ID}\""), big)).await;
    assert_problem(&answer, 413, "body_too_large");
    // Two command ids, the key's and the body's: refused, whichever would win.
    let both = json!({"commandId": COMMAND_ID, "payload": payload()});
    let answer = service.keyed(COMMAND_ID, &both).await;
    assert_eq!(
        (answer.status, answer.body),
        (400, json!({"error": "invalid_input", "field": "commandId"}))
    );
    // No token: the service's 401, before the body or the key is read.
    let anonymous = service
        .http
        .post(&url)
        .header("content-type", "application/json")
        .header("idempotency-key", format!("\"{COMMAND_ID}\""))
        .body(text.clone());
    let answer = service.send(anonymous).await;
    assert_eq!(
        (answer.status, answer.body),
        (401, json!({"error": "unauthenticated"}))
    );
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());

    let outcomes: Vec<String> = checkout_lines(&service.lines())
        .iter()
        .map(|line| line["outcome"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        outcomes,
        [
            "idempotency_key_malformed",
            "idempotency_key_malformed",
            "idempotency_key_malformed",
            "body_malformed",
            "body_too_large",
            "invalid_input",
            "token_missing"
        ]
    );
    service.assert_no_leak(&[&token]).await;
}

#[tokio::test]
async fn checkout_keyed_conflicts_and_forms() {
    let service = start_service(Options::default()).await;
    assert_eq!(service.keyed(COMMAND_ID, &payload()).await.status, 200);
    // The key with another payload.
    let changed = service
        .keyed(COMMAND_ID, &json!({"sku": "CANARYchanged"}))
        .await;
    assert_eq!(
        (changed.status, changed.body),
        (422, json!({"error": "command_conflict"}))
    );
    // A command stays in the form it was made in: the same id and payload in the
    // other form is another payload (the layer's wraps the body), 422 both ways.
    let token = service.token(UID);
    let body_form = json!({"commandId": COMMAND_ID, "payload": payload()});
    let answer = service.send(service.post(Some(&token), &body_form)).await;
    assert_eq!(answer.status, 422);
    let id = command_id(4);
    let body_form = json!({"commandId": id, "payload": payload()});
    assert_eq!(
        service
            .send(service.post(Some(&token), &body_form))
            .await
            .status,
        200
    );
    assert_eq!(service.keyed(&id, &payload()).await.status, 422);
    assert_eq!(service.stub.posts().len(), 2);
    service.assert_verifies_clean(2).await;
    service.assert_no_leak(&["CANARYchanged", &token]).await;
}

#[tokio::test]
async fn checkout_keyed_retry_in_flight_is_409() {
    // The stub holds the one POST: whichever request meets the held lease answers
    // 409 while the other's POST is held, then the other answers 200.
    let service = Arc::new(
        start_service(Options {
            gated: true,
            script: vec![Action::Charge],
            ..Options::default()
        })
        .await,
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..2 {
        let service = Arc::clone(&service);
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(service.keyed(COMMAND_ID, &payload()).await);
        });
    }
    let wait = Duration::from_secs(60);
    let busy = tokio::time::timeout(wait, rx.recv()).await.expect("answer");
    let busy = busy.expect("a sender is alive");
    assert_eq!(
        (busy.status, busy.retry_after, busy.body, busy.replayed),
        (409, Some(2), json!({"status": "in_progress"}), false)
    );
    service.stub.release(1);
    let done = tokio::time::timeout(wait, rx.recv()).await.expect("answer");
    let done = done.expect("a sender is alive");
    assert_eq!((done.status, done.replayed), (200, false));
    assert_eq!(service.stub.posts().len(), 1);
}

/// The `checkout` lines of a service's log, parsed.
fn checkout_lines(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == "checkout")
        .collect()
}

/// `answer` is the layer's problem `code` with `status`.
fn assert_problem(answer: &super::Answer, status: u16, code: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert_eq!(answer.content_type, "application/problem+json");
    assert_eq!(answer.body["code"], json!(code));
    assert_eq!(answer.body["status"], json!(status));
    assert!(!answer.replayed);
}

#[tokio::test]
async fn checkout_keyed_reordered_retry_after_a_503_and_another_callers_key() {
    // The first send is answered 503 (nothing charged, nothing stored); the retry,
    // once the lease has expired, carries the same body reordered and respaced: the
    // same command (RFC 8785 canonical payload), re-sent under the same provider
    // key, a first answer (not marked); only the answer after it is a replay.
    let service = start_service(Options {
        script: vec![Action::Status(503)],
        ..Options::default()
    })
    .await;
    let url = format!("{}/v1/checkouts", service.url);
    let raw = |uid: &str, key: &str, body: &str| {
        service
            .http
            .post(&url)
            .bearer_auth(service.token(uid))
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.to_owned())
    };
    let key = format!("\"{KEY_CANARY}\"");
    let compact = payload().to_string();
    let spaced = format!(
        "{{ \"sku\" : \"{PAYLOAD_SKU}\",\n \"note\":\"{PAYLOAD_NOTE}\" , \"amountCents\" : 1250 }}"
    );
    let first = service.send(raw(UID, &key, &compact)).await;
    assert_eq!(
        (first.status, first.retry_after, first.replayed),
        (503, Some(60), false)
    );
    service.clock.advance(TimeDelta::seconds(61));
    let retried = service.send(raw(UID, &key, &spaced)).await;
    assert_eq!(
        (retried.status, retried.replayed),
        (200, false),
        "{}",
        retried.text
    );
    assert_eq!(retried.body, succeeded(&service.first_charge()));
    let again = service.send(raw(UID, &key, &spaced)).await;
    assert_eq!((again.status, again.replayed), (200, true));
    assert_eq!(again.text, retried.text);
    let posts = service.stub.posts();
    assert_eq!(posts.len(), 2, "one re-send, under the same key");
    assert_eq!(posts[0].key, posts[1].key);

    // Another caller's request under the same key is its own command: charged once
    // under its own provider key, its own charge, never the first caller's answer.
    let other = service.send(raw(OTHER_UID, &key, &compact)).await;
    assert_eq!(
        (other.status, other.replayed),
        (200, false),
        "{}",
        other.text
    );
    assert_ne!(other.text, retried.text);
    let other_again = service.send(raw(OTHER_UID, &key, &spaced)).await;
    assert_eq!((other_again.status, other_again.replayed), (200, true));
    assert_eq!(other_again.text, other.text);
    let posts = service.stub.posts();
    assert_eq!(posts.len(), 3);
    assert_ne!(posts[2].key, posts[0].key);
    assert_eq!(service.stub.charges().len(), 2);
    // And the first caller's command is still its own.
    let mine = service.send(raw(UID, &key, &compact)).await;
    assert_eq!((mine.status, mine.replayed), (200, true));
    assert_eq!(mine.text, retried.text);
    service.assert_verifies_clean(2).await;
    let token = service.token(OTHER_UID);
    service
        .assert_no_leak(&[KEY_CANARY, OTHER_UID, &token])
        .await;
}

#[tokio::test]
async fn checkout_keyed_odd_keys_and_bodies() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let url = format!("{}/v1/checkouts", service.url);
    let raw = |key: reqwest::header::HeaderValue, body: &str| {
        service
            .http
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.to_owned())
    };
    let text = payload().to_string();
    let value = |bytes: &[u8]| reqwest::header::HeaderValue::from_bytes(bytes).expect("value");
    let long = format!("\"{}\"", "~".repeat(256));
    let malformed: Vec<Vec<u8>> = vec![
        br#""CANARYq\"uote""#.to_vec(),
        br#""CANARYback\\slash""#.to_vec(),
        br#""CANARY space""#.to_vec(),
        b"\"CANARY\xc3\xa9\"".to_vec(),
        long.into_bytes(),
        br#""CANARYparam";a=1"#.to_vec(),
        br#""CANARYa", "CANARYb""#.to_vec(),
        b":Q0FOQVJZ:".to_vec(),
        b"?1".to_vec(),
        b"12345".to_vec(),
        b"".to_vec(),
        b"\"CANARYopen".to_vec(),
    ];
    for key in &malformed {
        let answer = service.send(raw(value(key), &text)).await;
        assert_problem(&answer, 400, "idempotency_key_malformed");
    }
    // A body that is no JSON at all is the layer's body_malformed (as a key given
    // twice is); an empty one is no payload.
    let quoted = value(b"\"CANARYbody\"");
    let answer = service.send(raw(quoted.clone(), "CANARYnot json")).await;
    assert_problem(&answer, 400, "body_malformed");
    let answer = service.send(raw(quoted.clone(), "")).await;
    assert_eq!(
        (answer.status, answer.body),
        (400, json!({"error": "invalid_input", "field": "payload"}))
    );
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());

    // The longest key is accepted; spaces around the String are no part of it.
    let longest = format!("\"{}\"", "~".repeat(255));
    let answer = service.send(raw(value(longest.as_bytes()), &text)).await;
    assert_eq!(
        (answer.status, answer.replayed),
        (200, false),
        "{}",
        answer.text
    );
    let answer = service.send(raw(quoted.clone(), &text)).await;
    assert_eq!((answer.status, answer.replayed), (200, false));
    let padded = service.send(raw(value(b"  \"CANARYbody\" "), &text)).await;
    assert_eq!((padded.status, padded.replayed), (200, true));
    assert_eq!(padded.text, answer.text);
    assert_eq!(service.stub.posts().len(), 2);
    let canaries = [
        "CANARYq",
        "CANARYback",
        "CANARY space",
        "CANARYparam",
        "CANARYa",
        "CANARYb",
        "Q0FOQVJZ",
        "CANARYopen",
        "CANARYbody",
        "CANARYnot json",
    ];
    let mut extra = canaries.to_vec();
    extra.push(&token);
    service.assert_no_leak(&extra).await;
}

#[tokio::test]
async fn checkout_keyed_holder_taken_over_during_its_post_records_nothing() {
    // The stub holds the header form's POST; another holder, 61 s ahead, takes the
    // lease over; the held request then answers 409 and records nothing, and the
    // retry after it re-sends under the same key: one charge, its first answer
    // unmarked.
    let service = Arc::new(
        start_service(Options {
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let id = command_id(6);
    let arrived = service.stub.arrived.notified();
    let held = {
        let service = Arc::clone(&service);
        let id = id.clone();
        tokio::spawn(async move { service.keyed(&id, &payload()).await })
    };
    tokio::time::timeout(Duration::from_secs(60), arrived)
        .await
        .expect("the checkout reaches the provider");
    let ahead = ManualClock::new(service.clock.now() + TimeDelta::seconds(61));
    let other = Journal::new(service.connection.clone()).with_clock(Arc::new(ahead));
    let lease = LeaseId::parse(&crate::support::uuid(0x51, 6)).expect("lease id");
    let command = service.keyed_command(&id, &payload());
    let taken = other
        .acquire_lease(&command, &lease)
        .await
        .expect("takeover");
    assert!(matches!(taken, LeaseOutput::Acquired { .. }), "{taken:?}");
    let before = service.documents().await;
    service.stub.release(1);
    let answer = held.await.expect("the held checkout");
    assert_eq!(
        (answer.status, answer.body, answer.replayed),
        (409, json!({"status": "in_progress"}), false)
    );
    assert_eq!(service.documents().await, before);
    // The other holder's lease expires too: the retry takes it and re-sends.
    service.clock.advance(TimeDelta::seconds(130));
    service.stub.release(1);
    let retry = service.keyed(&id, &payload()).await;
    assert_eq!(
        (retry.status, retry.replayed),
        (200, false),
        "{}",
        retry.text
    );
    let again = service.keyed(&id, &payload()).await;
    assert_eq!((again.status, again.replayed), (200, true));
    assert_eq!(again.text, retry.text);
    assert_eq!(service.stub.charges().len(), 1, "the provider charged once");
    let posts = service.stub.posts();
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].key, posts[1].key);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}
