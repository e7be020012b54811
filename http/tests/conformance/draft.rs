//! Every MUST and SHOULD of draft-ietf-httpapi-idempotency-key-header (draft 06) the
//! layer answers, each a test named for it, on the emulator.

use super::support::{Act, Call, Counts, note_call, service};
use http::StatusCode;

const KEY: &str = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";
const BODY: &str = r#"{"text": "buy milk", "list": "home"}"#;

/// The documents of one note command that ended: its root, lifecycle and stored
/// response, and its registration, lease and success events.
const ONE_NOTE: Counts = Counts {
    roots: 1,
    lifecycles: 1,
    results: 1,
    sends: 0,
    events: 3,
};

#[tokio::test]
async fn syntax_the_value_must_be_a_structured_field_string() {
    // "Its value MUST be a String": anything else is 400, and nothing is written.
    let service = service(false).await;
    for key in [
        "8e03978e-40d5-43e8-bc93-6894a57f9324",
        "abc",
        "\"abc\";a=1",
        "\"\"",
        "\"a b\"",
        "\"a\", \"b\"",
    ] {
        let answer = service.send(&note_call("alice", key, BODY)).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{key}");
        assert_eq!(
            answer.problem().as_deref(),
            Some("idempotency_key_malformed"),
            "{key}"
        );
    }
    let long = format!("\"{}\"", "k".repeat(256));
    let answer = service.send(&note_call("alice", &long, BODY)).await;
    assert_eq!(
        answer.problem().as_deref(),
        Some("idempotency_key_malformed")
    );
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, Counts::default());
}

#[tokio::test]
async fn error_handling_a_missing_key_should_be_400_with_a_problem() {
    let service = service(false).await;
    let call = Call {
        key: None,
        ..note_call("alice", KEY, BODY)
    };
    let answer = service.send(&call).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.headers["content-type"], "application/problem+json");
    let problem = answer.json();
    assert_eq!(problem["code"], "idempotency_key_missing");
    assert_eq!(problem["status"], 400);
    assert_eq!(
        problem["type"],
        "tag:command-journal,2026:problem/idempotency-key-missing"
    );
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, Counts::default());
}

#[tokio::test]
async fn enforcement_a_first_request_should_be_processed_normally() {
    let service = service(false).await;
    let answer = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(answer.status, StatusCode::CREATED);
    assert!(!answer.replayed());
    assert_eq!(answer.headers["location"], "/v1/notes/n_1");
    // The first answer is the stored one: headers outside the list are dropped from
    // it too, so that no retry can differ from it.
    assert!(answer.headers.get("set-cookie").is_none());
    assert!(answer.headers.get("x-request-id").is_none());
    assert_eq!(
        answer.json()["note"],
        serde_json::json!({"text": "buy milk", "list": "home"})
    );
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
    service.assert_verified().await;
}

#[tokio::test]
async fn enforcement_a_retry_after_success_should_get_the_stored_result() {
    let service = service(false).await;
    let first = service.send(&note_call("alice", KEY, BODY)).await;
    // Another spacing and member order: the same canonical body, so the same request.
    let reordered = r#"{ "list":"home","text":"buy milk" }"#;
    for body in [BODY, reordered, BODY] {
        let retry = service.send(&note_call("alice", KEY, body)).await;
        assert!(retry.replayed());
        assert_eq!(retry.unmarked(), first.unmarked(), "byte for byte");
        assert!(retry.headers.get("set-cookie").is_none());
    }
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
}

#[tokio::test]
async fn enforcement_a_retry_after_an_error_should_get_the_stored_error() {
    // "success or an error": a handler's 4xx is the completed operation's result.
    let service = service(false).await;
    service.script.acts([Act::Status(422), Act::Status(201)]);
    let first = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(first.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!first.replayed());
    let retry = service.send(&note_call("alice", KEY, BODY)).await;
    assert!(retry.replayed());
    assert_eq!(retry.unmarked(), first.unmarked());
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
}

#[tokio::test]
async fn enforcement_a_concurrent_request_should_be_a_409_conflict() {
    let service = std::sync::Arc::new(service(false).await);
    service.script.acts([Act::Gated]);
    let first = {
        let service = service.clone();
        tokio::spawn(async move { service.send(&note_call("alice", KEY, BODY)).await })
    };
    service.script.started.notified().await;
    // While the first is being processed: every duplicate is 409, none runs.
    let duplicates = futures_join(&service, 8).await;
    for answer in &duplicates {
        assert_eq!(answer.status, StatusCode::CONFLICT);
        assert_eq!(answer.problem().as_deref(), Some("in_progress"));
        assert_eq!(answer.headers["retry-after"], "2");
    }
    service.script.release.notify_one();
    let first = first.await.expect("the first request");
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(!first.replayed());
    let retry = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(retry.unmarked(), first.unmarked());
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
    service.assert_verified().await;
}

/// `n` duplicates sent at once.
async fn futures_join(
    service: &std::sync::Arc<super::support::Service>,
    n: usize,
) -> Vec<super::support::Answer> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let service = service.clone();
            tokio::spawn(async move { service.send(&note_call("alice", KEY, BODY)).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("a duplicate"));
    }
    answers
}

#[tokio::test]
async fn enforcement_racing_duplicates_run_the_handler_once() {
    // No gate: 12 identical requests at once. Exactly one runs; every other is a 409
    // or the replay, and the journal holds exactly one command.
    let service = std::sync::Arc::new(service(false).await);
    let answers = futures_join(&service, 12).await;
    let created: Vec<_> = answers
        .iter()
        .filter(|a| a.status == StatusCode::CREATED)
        .collect();
    assert!(!created.is_empty());
    assert_eq!(created.iter().filter(|a| !a.replayed()).count(), 1);
    for answer in &answers {
        assert!(
            answer.status == StatusCode::CREATED
                || answer.problem().as_deref() == Some("in_progress"),
            "{answer:?}"
        );
    }
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
    service.assert_verified().await;
}

#[tokio::test]
async fn error_handling_the_key_with_another_payload_should_be_422() {
    let service = service(false).await;
    let first = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let changed = r#"{"text": "buy bread", "list": "home"}"#;
    let other_target = Call {
        path: "/v1/notes?draft=1",
        ..note_call("alice", KEY, BODY)
    };
    for call in [note_call("alice", KEY, changed), other_target] {
        let answer = service.send(&call).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(answer.problem().as_deref(), Some("command_conflict"));
        assert_eq!(
            answer.json()["type"],
            "tag:command-journal,2026:problem/command-conflict"
        );
    }
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
}

#[tokio::test]
async fn error_handling_an_uncorrected_retry_must_fail_again() {
    // "Clients MUST correct the requests (except 409) ... or the resource MUST fail
    // the request and return one of the above errors."
    let service = service(false).await;
    service.send(&note_call("alice", KEY, BODY)).await;
    let changed = note_call("alice", KEY, r#"{"text": "buy bread"}"#);
    let missing = Call {
        key: None,
        ..note_call("alice", KEY, BODY)
    };
    for _ in 0..3 {
        assert_eq!(
            service.send(&changed).await.status,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(service.send(&missing).await.status, StatusCode::BAD_REQUEST);
    }
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await, ONE_NOTE);
}

#[tokio::test]
async fn security_a_key_is_scoped_to_its_caller() {
    // "a unique composite key ... combining the idempotency key sent by the client with
    // other client specific attributes known only to the resource": another caller's
    // request with the same key is a first request of its own, never the other's
    // replay or conflict.
    let service = service(false).await;
    let alice = service.send(&note_call("alice", KEY, BODY)).await;
    let other = r#"{"text": "mallory's note"}"#;
    let mallory = service.send(&note_call("mallory", KEY, other)).await;
    assert_eq!(mallory.status, StatusCode::CREATED);
    assert!(!mallory.replayed());
    assert_ne!(mallory.body, alice.body);
    assert_eq!(service.script.runs(), 2);
    let counts = service.counts().await;
    assert_eq!(
        counts,
        Counts {
            roots: 2,
            lifecycles: 2,
            results: 2,
            sends: 0,
            events: 6
        }
    );
}

#[tokio::test]
async fn no_caller_runs_no_command() {
    let service = service(false).await;
    let call = Call {
        caller: None,
        ..note_call("alice", KEY, BODY)
    };
    let answer = service.send(&call).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.problem().as_deref(), Some("caller_missing"));
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, Counts::default());
}

#[tokio::test]
async fn the_body_is_read_strictly_within_its_limit() {
    let service = service(false).await;
    let cases: Vec<(Call<'_>, StatusCode, &str)> = vec![
        (
            note_call("alice", KEY, r#"{"text": "a", "text": "b"}"#),
            StatusCode::BAD_REQUEST,
            "body_malformed",
        ),
        (
            note_call("alice", KEY, r#"{"text": "a"} trailing"#),
            StatusCode::BAD_REQUEST,
            "body_malformed",
        ),
        (
            Call {
                content_type: Some("text/plain"),
                ..note_call("alice", KEY, BODY)
            },
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            note_call("alice", KEY, r#"{"amount": 12.5}"#),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
    ];
    for (call, status, code) in cases {
        let answer = service.send(&call).await;
        assert_eq!(
            (answer.status, answer.problem().as_deref()),
            (status, Some(code))
        );
    }
    let huge = format!(r#"{{"text": "{}"}}"#, "a".repeat(40_000));
    let answer = service.send(&note_call("alice", KEY, &huge)).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, Counts::default());
}

#[tokio::test]
async fn syntax_one_field_line_of_visible_ascii_only() {
    // Two field lines (even equal ones), bytes outside ASCII, an empty field: 400, and
    // nothing runs or is written.
    let service = service(false).await;
    let request = |lines: &[&[u8]]| {
        let mut request = http::Request::post("/v1/notes")
            .header(super::support::CALLER, "alice")
            .header("content-type", "application/json");
        for line in lines {
            let value = http::HeaderValue::from_bytes(line).expect("a field value");
            request = request.header("idempotency-key", value);
        }
        request
            .body(axum::body::Body::from(BODY))
            .expect("a request")
    };
    let cases: [&[&[u8]]; 5] = [
        &[b"\"abc\"", b"\"abc\""],
        &[b"\"abc\"", b"\"def\""],
        &[b"\"caf\xc3\xa9\""],
        &[b"\"caf\xe9\""],
        &[b""],
    ];
    for lines in cases {
        let answer = service.send_request(request(lines)).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{lines:?}");
        assert_eq!(
            answer.problem().as_deref(),
            Some("idempotency_key_malformed"),
            "{lines:?}"
        );
    }
    assert_eq!(service.script.runs(), 0);
    assert_eq!(service.counts().await, Counts::default());
}

#[tokio::test]
async fn a_key_is_an_exact_string_case_included() {
    // A UUID in capitals is another key than the same UUID in small letters: two
    // commands, two first answers, never one the other's replay.
    let service = service(false).await;
    let upper = KEY.to_uppercase();
    for key in [KEY, upper.as_str(), "\"Order-1\"", "\"order-1\""] {
        let answer = service.send(&note_call("alice", key, BODY)).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{key}");
        assert!(!answer.replayed(), "{key}");
    }
    assert_eq!(service.script.runs(), 4);
    assert_eq!(service.counts().await.roots, 4);
}

#[tokio::test]
async fn error_handling_the_layers_errors_link_to_the_documentation() {
    // "SHOULD reply with an HTTP 400 (422) status code with body containing a link
    // pointing to relevant documentation", or the `Link` header the draft shows: a
    // layer given its documentation's URI links every answer of its own to it, with
    // `rel="describedby"`; a handler's answer and its replay are left as they are.
    use axum::Router;
    use axum::routing::post;
    use command_journal::identity::{CommandType, Environment};
    use command_journal_http::IdempotencyLayer;
    let mut service = service(false).await;
    let docs = "https://docs.example.com/api/idempotency";
    let layer = IdempotencyLayer::new(
        service.journal.clone(),
        Environment::Emulator,
        CommandType::parse("create_note").expect("a type"),
    )
    .documentation(docs)
    .expect("a documentation URI");
    service.router = Router::new()
        .route(
            "/v1/notes",
            post(|body: String| async move {
                match body.contains("unavailable") {
                    true => (StatusCode::SERVICE_UNAVAILABLE, "try again"),
                    false => (StatusCode::CREATED, "created"),
                }
            })
            .layer(layer),
        )
        .layer(axum::middleware::from_fn(super::support::authenticate));
    let link = format!("<{docs}>; rel=\"describedby\"");
    let missing = Call {
        key: None,
        ..note_call("alice", KEY, BODY)
    };
    let first = service.send(&note_call("alice", KEY, BODY)).await;
    let replay = service.send(&note_call("alice", KEY, BODY)).await;
    // A 503 of the handler holds the command until its lease ends: the retry is 409.
    let unavailable = note_call("alice", "\"busy-1\"", r#"{"unavailable": true}"#);
    let handlers = service.send(&unavailable).await;
    for answer in [&first, &replay, &handlers] {
        assert!(answer.headers.get("link").is_none(), "{answer:?}");
    }
    for (call, status) in [
        (missing, StatusCode::BAD_REQUEST),
        (note_call("alice", "abc", BODY), StatusCode::BAD_REQUEST),
        (
            note_call("alice", KEY, r#"{"text": "other"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (unavailable, StatusCode::CONFLICT),
    ] {
        let answer = service.send(&call).await;
        assert_eq!(answer.status, status);
        assert_eq!(answer.headers["link"], link.as_str());
        assert_eq!(answer.headers["content-type"], "application/problem+json");
    }
    // A documentation URI that is not one absolute URI fit for a `Link` is refused.
    for refused in [
        "",
        "docs/idempotency",
        "https://docs.example.com/a>b",
        "https://a b",
    ] {
        let layer = IdempotencyLayer::new(
            service.journal.clone(),
            Environment::Emulator,
            CommandType::parse("create_note").expect("a type"),
        );
        assert!(layer.documentation(refused).is_err(), "{refused}");
    }
}
