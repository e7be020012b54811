//! What a stored-response handler's answer becomes: the status, the body byte for byte
//! and the allowed headers, on the first answer and every replay; what is never
//! stored.

use super::support::{Act, note_call, service};
use http::StatusCode;

const KEY: &str = "\"stored-cases-1\"";

#[tokio::test]
async fn no_credential_cookie_or_challenge_of_the_handler_is_answered_or_replayed() {
    let service = service(false).await;
    let first = service.send(&note_call("alice", KEY, "{}")).await;
    let replay = service.send(&note_call("alice", KEY, "{}")).await;
    assert!(replay.replayed());
    for answer in [&first, &replay] {
        for name in [
            "set-cookie",
            "authorization",
            "proxy-authorization",
            "www-authenticate",
            "proxy-authenticate",
            "x-request-id",
        ] {
            assert!(answer.headers.get(name).is_none(), "{name}");
        }
        let names: Vec<&str> = answer.headers.keys().map(|n| n.as_str()).collect();
        assert!(
            names.iter().all(|n| [
                "content-type",
                "location",
                "cache-control",
                "link",
                "content-length",
                "idempotent-replayed"
            ]
            .contains(n)),
            "{names:?}"
        );
    }
    assert_eq!(replay.unmarked(), first.unmarked());
}

#[tokio::test]
async fn a_responses_cache_directives_are_kept_on_the_first_answer_and_every_replay() {
    // A handler that marks its answer `no-store` (a secret in it) keeps the mark: the
    // layer never makes an answer cacheable that its handler said must not be.
    let service = service(false).await;
    let first = service.send(&note_call("alice", KEY, "{}")).await;
    let replay = service.send(&note_call("alice", KEY, "{}")).await;
    for answer in [&first, &replay] {
        assert_eq!(
            answer.headers.get("cache-control").map(|v| v.as_bytes()),
            Some(&b"no-store"[..]),
            "{answer:?}"
        );
    }
}

#[tokio::test]
async fn a_binary_body_up_to_the_bound_replays_byte_for_byte() {
    let service = service(false).await;
    let bytes: Vec<u8> = (0..12_000u32).map(|i| (i * 7 % 256) as u8).collect();
    service.script.acts([Act::Bytes(bytes.clone())]);
    let first = service.send(&note_call("alice", KEY, "{}")).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.body.as_ref(), bytes.as_slice());
    let replay = service.send(&note_call("alice", KEY, "{}")).await;
    assert!(replay.replayed());
    assert_eq!(replay.body.as_ref(), bytes.as_slice());
    assert_eq!(replay.headers["content-type"], "application/octet-stream");
    assert_eq!(service.script.runs(), 1);
}

#[tokio::test]
async fn a_handlers_401_keeps_its_challenge_and_is_never_stored() {
    // RFC 9110 §15.5.2: a 401 MUST carry `WWW-Authenticate`, which is never stored: so
    // a 401 is answered as the handler gave it, not stored, and the request runs
    // again (once its lease is over) when the client has other credentials.
    let service = service(false).await;
    service.script.acts([Act::Challenge]);
    let refused = service.send(&note_call("alice", KEY, "{}")).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.headers["www-authenticate"],
        "Bearer error=\"invalid_token\""
    );
    assert!(!refused.replayed());
    assert_eq!(service.counts().await.results, 0);
    service.advance(61);
    let created = service.send(&note_call("alice", KEY, "{}")).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert!(!created.replayed());
    assert_eq!(service.script.runs(), 2);
}
