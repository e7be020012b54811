//! The problem table against every code the journal has, and the bodies it answers.

use super::*;

/// The `"code"` strings of `JournalError::code`'s match arms, read from the core's
/// source (as the CLI's `explain` table test does): a code added there without a row
/// here fails this test.
fn journal_codes() -> Vec<String> {
    let source = include_str!("../../../core/src/error.rs");
    let body = source
        .split("The stable snake_case code used by the CLI and logs.")
        .nth(1)
        .and_then(|rest| rest.split("\n    }\n").next())
        .unwrap_or_default();
    body.lines()
        .filter_map(|line| line.split("=> \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_journal_error_code_has_exactly_its_own_row() {
    let codes = journal_codes();
    assert!(codes.len() >= 24, "{codes:?}");
    let rows: Vec<&str> = JOURNAL_PROBLEMS.iter().map(|row| row.code).collect();
    assert_eq!(
        rows, codes,
        "one row per code, in the order of JournalError"
    );
}

#[test]
fn codes_and_type_uris_are_distinct_and_stable() {
    let all: Vec<&ProblemType> = JOURNAL_PROBLEMS.iter().chain(EDGE_PROBLEMS).collect();
    for (i, row) in all.iter().enumerate() {
        assert!(
            all[..i].iter().all(|earlier| earlier.code != row.code),
            "{} twice",
            row.code
        );
        assert!(StatusCode::from_u16(row.status).is_ok(), "{}", row.code);
        assert!(row.status >= 400, "{} is not an error", row.code);
    }
    assert_eq!(
        problem_type("command_conflict").uri(),
        "tag:command-journal,2026:problem/command-conflict"
    );
    assert_eq!(problem_type("a_code_added_later"), problem_type("internal"));
}

#[test]
fn the_drafts_answers_have_their_statuses() {
    for (code, status) in [
        ("idempotency_key_missing", 400),
        ("idempotency_key_malformed", 400),
        ("command_conflict", 422),
        ("in_progress", 409),
        ("invalid_input", 400),
        ("unavailable", 503),
        ("caller_missing", 500),
    ] {
        assert_eq!(problem_type(code).status, status, "{code}");
    }
}

fn body(response: Response<Body>) -> (StatusCode, http::HeaderMap, serde_json::Value) {
    let (parts, body) = response.into_parts();
    let bytes = futures_bytes(body);
    let value = serde_json::from_slice(&bytes).expect("a JSON body");
    (parts.status, parts.headers, value)
}

fn futures_bytes(body: Body) -> bytes::Bytes {
    use http_body_util::BodyExt as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(body.collect()).expect("a body").to_bytes()
}

#[test]
fn a_problem_body_is_the_row_and_never_the_input() {
    let (status, headers, value) =
        body(Problem::journal(JournalError::invalid("payload")).into_response());
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers[header::CONTENT_TYPE], PROBLEM_JSON);
    assert!(headers.get(header::RETRY_AFTER).is_none());
    assert_eq!(
        value,
        json!({
            "code": "invalid_input",
            "field": "payload",
            "status": 400,
            "title": "The request is not a valid command",
            "type": "tag:command-journal,2026:problem/invalid-input",
        })
    );
    let (status, headers, value) = body(Problem::new("in_progress").into_response());
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(headers[header::RETRY_AFTER], "2");
    assert_eq!(
        value["type"],
        "tag:command-journal,2026:problem/in-progress"
    );
    let later = Problem::new("retry_later").retry_after(Duration::from_millis(4_200));
    let (status, headers, _) = body(later.into_response());
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[header::RETRY_AFTER], "5");
    // A corrupt journal's fixed reason stays in the logs' error, never in the answer.
    let (_, _, value) =
        body(Problem::journal(JournalError::corrupt("CANARY reason")).into_response());
    assert!(!value.to_string().contains("CANARY"), "{value}");
}
