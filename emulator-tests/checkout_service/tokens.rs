//! The service's bearer tokens: every bad token is 401 and touches nothing; unsigned
//! emulator tokens only with `FIREBASE_AUTH_EMULATOR_HOST`.

use super::{
    KEY_A, KEY_B, Options, UID, claims, command_id, now_secs, payload, signed, start_service,
    succeeded, unsigned,
};
use serde_json::json;
use std::sync::atomic::Ordering;

#[tokio::test]
async fn checkout_bad_tokens_are_401_and_touch_nothing() {
    let service = start_service(Options::default()).await;
    let project = service.project.clone();
    let body = json!({"commandId": command_id(5), "payload": payload()});
    let now = now_secs();
    let mut expired = claims(&project, UID);
    expired["iat"] = json!(now - 7200);
    expired["auth_time"] = json!(now - 7200);
    expired["exp"] = json!(now - 3600);
    let mut audience = claims(&project, UID);
    audience["aud"] = json!("another-project");
    let mut issuer = claims(&project, UID);
    issuer["iss"] = json!("https://securetoken.google.com/another-project");
    let mut empty_sub = claims(&project, UID);
    empty_sub["sub"] = json!("");
    let mut future = claims(&project, UID);
    future["iat"] = json!(now + 600);
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("expired", Some(signed(KEY_A, "test-key-a", &expired))),
        (
            "wrong audience",
            Some(signed(KEY_A, "test-key-a", &audience)),
        ),
        ("wrong issuer", Some(signed(KEY_A, "test-key-a", &issuer))),
        (
            "empty subject",
            Some(signed(KEY_A, "test-key-a", &empty_sub)),
        ),
        (
            "issued in the future",
            Some(signed(KEY_A, "test-key-a", &future)),
        ),
        (
            "alg none without the emulator variable",
            Some(unsigned(&claims(&project, UID))),
        ),
        (
            "unknown key",
            Some(signed(KEY_B, "test-key-b", &claims(&project, UID))),
        ),
        (
            "known kid, wrong key",
            Some(signed(KEY_B, "test-key-a", &claims(&project, UID))),
        ),
        ("malformed", Some("not.a.jwt".to_owned())),
    ];
    for (name, token) in &cases {
        let answer = service.send(service.post(token.as_deref(), &body)).await;
        assert_eq!(answer.status, 401, "{name}");
        assert_eq!(answer.body, json!({"error": "unauthenticated"}), "{name}");
    }
    assert!(
        service.documents().await.is_empty(),
        "the journal was not touched"
    );
    assert!(service.stub.posts().is_empty());

    // The same request with a good token goes through; keys were fetched once and
    // cached per Cache-Control.
    let good = service.token(UID);
    let answer = service.send(service.post(Some(&good), &body)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(service.keys.fetches.load(Ordering::SeqCst), 1);
    let tokens: Vec<&str> = cases.iter().filter_map(|(_, t)| t.as_deref()).collect();
    let mut extra = tokens.clone();
    extra.push(&good);
    service.assert_no_leak(&extra).await;
}

#[tokio::test]
async fn checkout_unsigned_emulator_tokens_only_with_the_auth_emulator_variable() {
    let service = start_service(Options {
        auth_emulator: true,
        ..Options::default()
    })
    .await;
    let project = service.project.clone();
    let mut wrong_audience = claims(&project, UID);
    wrong_audience["aud"] = json!("another-project");
    let body = json!({"commandId": command_id(6), "payload": payload()});
    let refused = service
        .send(service.post(Some(&unsigned(&wrong_audience)), &body))
        .await;
    assert_eq!(refused.status, 401, "claims are still checked");
    assert!(service.documents().await.is_empty());
    let accepted = service
        .send(service.post(Some(&unsigned(&claims(&project, UID))), &body))
        .await;
    assert_eq!(
        (accepted.status, accepted.body),
        (200, succeeded(&service.first_charge()))
    );
    service.assert_no_leak(&[]).await;
}
