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

#[tokio::test]
async fn the_same_json_however_spelled_is_a_replay() {
    // RFC 8785: member order, spacing, escapes and the spelling of an integer never
    // make another payload.
    let service = service(false).await;
    let first = service
        .send(&note_call("alice", KEY, r#"{"a":1,"b":[true,null,"x/y"]}"#))
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    for body in [
        "{\n  \"b\" : [ true , null , \"x\\/y\" ] ,\n  \"a\" : 1\n}\n",
        r#"{"\u0062":[true,null,"x\u002fy"],"a":1}"#,
        r#"{"a":1,"b":[true,null,"x/y"]}"#,
    ] {
        let retry = service.send(&note_call("alice", KEY, body)).await;
        assert!(retry.replayed(), "{body}");
        assert_eq!(retry.unmarked(), first.unmarked(), "{body}");
    }
    assert_eq!(service.script.runs(), 1);
}

#[tokio::test]
async fn another_value_method_or_spelling_of_the_target_is_422() {
    use axum::Router;
    use axum::routing::any;
    use command_journal::identity::{CommandType, Environment};
    use command_journal_http::IdempotencyLayer;
    let mut service = service(false).await;
    let layer = IdempotencyLayer::new(
        service.journal.clone(),
        Environment::Emulator,
        CommandType::parse("create_note").expect("a type"),
    );
    service.router = Router::new()
        .route(
            "/v1/notes",
            any(|| async { (StatusCode::CREATED, "created") }).layer(layer),
        )
        .layer(axum::middleware::from_fn(super::support::authenticate));
    let at = |path| Call {
        path,
        ..note_call("alice", KEY, r#"{"n":1}"#)
    };
    let first = service.send(&at("/v1/notes?a=1&b=%2F")).await;
    assert_eq!(first.status, StatusCode::CREATED);
    // Compared byte for byte: an equivalent query spelled otherwise is refused, never
    // answered with another request's response.
    for path in [
        "/v1/notes?b=%2F&a=1",
        "/v1/notes?a=1&b=%2f",
        "/v1/notes?a=1&b=/",
        "/v1/notes?a=1&b=%2F&",
        "/v1/notes",
    ] {
        let answer = service.send(&at(path)).await;
        assert_eq!(
            answer.problem().as_deref(),
            Some("command_conflict"),
            "{path}"
        );
    }
    for body in [
        r#"{"n":2}"#,
        r#"{"n":1,"m":null}"#,
        r#"[{"n":1}]"#,
        r#""{\"n\":1}""#,
    ] {
        let answer = service
            .send(&Call {
                path: "/v1/notes?a=1&b=%2F",
                ..note_call("alice", KEY, body)
            })
            .await;
        assert_eq!(
            answer.problem().as_deref(),
            Some("command_conflict"),
            "{body}"
        );
    }
    let request = http::Request::put("/v1/notes?a=1&b=%2F")
        .header(super::support::CALLER, "alice")
        .header("idempotency-key", KEY)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(r#"{"n":1}"#))
        .expect("a request");
    let put = service.send_request(request).await;
    assert_eq!(put.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(put.problem().as_deref(), Some("command_conflict"));
    assert_eq!(service.counts().await.results, 1);
}

#[tokio::test]
async fn a_body_the_journal_cannot_hold_exactly_is_refused_with_nothing_written() {
    let service = service(false).await;
    let cases = [
        (r#"{"n": 9007199254740992}"#, "invalid_input"),
        (r#"{"n": -9007199254740992}"#, "invalid_input"),
        (r#"{"n": 18446744073709551616}"#, "invalid_input"),
        (r#"{"n": 1.5}"#, "invalid_input"),
        (r#"{"n": 1.0}"#, "invalid_input"),
        (r#"{"n": 1e2}"#, "invalid_input"),
        (r#"{"n": -0}"#, "invalid_input"),
        (r#"{"n": 1e400}"#, "body_malformed"),
        (r#"{"a": 1, "\u0061": 2}"#, "body_malformed"),
        (r#"{"o": {"a": 1, "a": 1}}"#, "body_malformed"),
        ("\u{feff}{}", "body_malformed"),
        (r#"{"s": "\ud800"}"#, "body_malformed"),
        ("  ", "body_malformed"),
        ("{} {}", "body_malformed"),
    ];
    for (body, code) in cases {
        let answer = service.send(&note_call("alice", KEY, body)).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.problem().as_deref(), Some(code), "{body}");
    }
    // Exactly 2^53 - 1 is a payload.
    let edge = r#"{"n": 9007199254740991, "m": -9007199254740991}"#;
    let answer = service.send(&note_call("alice", KEY, edge)).await;
    assert_eq!(answer.status, StatusCode::CREATED);
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await.roots, 1);
}

#[tokio::test]
async fn a_body_in_another_media_type_is_415() {
    let service = service(false).await;
    for media in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/jsonx"),
        Some("application/merge-patch+json"),
        Some("multipart/form-data; boundary=x"),
    ] {
        let call = Call {
            content_type: media,
            ..note_call("alice", KEY, "{}")
        };
        let answer = service.send(&call).await;
        assert_eq!(
            answer.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{media:?}"
        );
        assert_eq!(
            answer.problem().as_deref(),
            Some("unsupported_media_type"),
            "{media:?}"
        );
    }
    // The media type's case and parameters are not the payload: the second is a replay.
    for media in ["Application/JSON", "application/json; charset=utf-8"] {
        let call = Call {
            content_type: Some(media),
            ..note_call("alice", KEY, "{}")
        };
        assert_eq!(
            service.send(&call).await.status,
            StatusCode::CREATED,
            "{media}"
        );
    }
    assert_eq!(service.script.runs(), 1);
}

#[tokio::test]
async fn a_streamed_body_is_cut_at_the_limit_whatever_its_length_says() {
    // A chunked body that says it is short (its `content-length` and size hint) and
    // goes on: the layer counts the bytes it reads, 413 past the limit. A body that
    // breaks off is 400. Nothing is written either way.
    let service = service(false).await;
    let chunk = bytes::Bytes::from(vec![b' '; 1024]);
    let lying = scripted(
        std::iter::repeat_n(chunk, 40)
            .chain([bytes::Bytes::from_static(b"{}")])
            .map(Ok),
        2,
    );
    let answer = service.send_request(body_request(lying, "2")).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.problem().as_deref(), Some("body_too_large"));
    let broken = scripted(
        [
            Ok(bytes::Bytes::from_static(b"{\"a\":")),
            Err(std::io::Error::other("the client went away")),
        ],
        6,
    );
    let answer = service.send_request(body_request(broken, "6")).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.problem().as_deref(), Some("body_malformed"));
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, super::support::Counts::default());
}

/// A body of `items`, in order, whose size hint says it holds `claimed` bytes.
struct Scripted {
    items: std::collections::VecDeque<Result<bytes::Bytes, std::io::Error>>,
    claimed: u64,
}

impl http_body::Body for Scripted {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        let next = self.items.pop_front();
        std::task::Poll::Ready(next.map(|item| item.map(http_body::Frame::data)))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.claimed)
    }
}

fn scripted(
    items: impl IntoIterator<Item = Result<bytes::Bytes, std::io::Error>>,
    claimed: u64,
) -> axum::body::Body {
    axum::body::Body::new(Scripted {
        items: items.into_iter().collect(),
        claimed,
    })
}

fn body_request(body: axum::body::Body, length: &str) -> http::Request<axum::body::Body> {
    http::Request::post("/v1/notes")
        .header(super::support::CALLER, "alice")
        .header("idempotency-key", KEY)
        .header("content-type", "application/json")
        .header("content-length", length)
        .body(body)
        .expect("a request")
}

#[tokio::test]
async fn two_payloads_racing_under_one_key_make_one_command() {
    // Twelve requests at once, half with each of two bodies: exactly one runs; every
    // request with its body is its answer or 409, every request with the other is 422.
    let service = std::sync::Arc::new(service(false).await);
    let bodies = [r#"{"text": "one"}"#, r#"{"text": "two"}"#];
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let service = service.clone();
            let body = bodies[i % 2];
            tokio::spawn(async move { (body, service.send(&note_call("alice", KEY, body)).await) })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("a request"));
    }
    let firsts: Vec<_> = answers
        .iter()
        .filter(|(_, a)| a.status == StatusCode::CREATED && !a.replayed())
        .collect();
    assert_eq!(firsts.len(), 1, "{answers:?}");
    let winner = firsts[0].0;
    for (body, answer) in &answers {
        let code = answer.problem();
        if *body == winner {
            assert!(
                answer.status == StatusCode::CREATED || code.as_deref() == Some("in_progress"),
                "{answer:?}"
            );
        } else {
            assert_eq!(code.as_deref(), Some("command_conflict"), "{answer:?}");
        }
    }
    assert_eq!(service.script.runs(), 1);
    assert_eq!(
        service.counts().await,
        super::support::Counts {
            roots: 1,
            lifecycles: 1,
            results: 1,
            sends: 0,
            events: 3
        }
    );
    service.assert_verified().await;
}
