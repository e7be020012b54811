//! Errors that tell configuration from outage: each class produced for real, by a
//! server answering that gRPC status or by a process without credentials, with the
//! attempts the runner made counted on both sides.

use super::status_server::StatusServer;
use super::support::{self, command};
use command_journal::Journal;
use command_journal::LeaseId;
use command_journal::RetryPolicy;

/// The default policy's attempts.
const MAX_ATTEMPTS: u32 = 10;

#[test]
fn the_default_policy_has_these_attempts() {
    assert_eq!(RetryPolicy::default().attempts.get(), MAX_ATTEMPTS);
}
use command_journal::error::{ConfigCause, ErrorClass, GrpcCode};
use command_journal::{Concurrency, JournalError};
use command_journal::{Connection, Target};
use serde_json::json;
use std::time::{Duration, Instant};

/// gRPC status numbers.
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const PERMISSION_DENIED: i32 = 7;
const RESOURCE_EXHAUSTED: i32 = 8;
const FAILED_PRECONDITION: i32 = 9;
const INTERNAL: i32 = 13;
const UNAUTHENTICATED: i32 = 16;

async fn journal_on(server: &StatusServer, mode: Concurrency) -> Journal {
    let connection = Connection::connect("errors-project", Target::Emulator(server.host()))
        .await
        .expect("connections to a listening port succeed");
    Journal::new(connection).with_concurrency(mode)
}

/// Acquires a lease on one command (an operation that reads first, unlike a new
/// registration's blind creation) against a server answering `code` and returns the
/// error, the journal's attempts and the requests the server saw.
async fn refused_by(
    code: i32,
    message: &'static str,
    mode: Concurrency,
) -> (JournalError, u64, u64) {
    let server = StatusServer::start(code, message).await;
    let journal = journal_on(&server, mode).await;
    let lease = LeaseId::parse(&support::uuid(4, 1)).expect("lease id");
    let error = journal
        .acquire_lease(&command(1, json!({})), &lease)
        .await
        .expect_err("the server refuses everything");
    // Only reads were sent: a refused read never leads to a commit or rollback.
    assert_eq!(server.calls("BatchGetDocuments"), server.total());
    (error, journal.stats().attempts, server.total())
}

#[tokio::test]
async fn configuration_refusals_are_final_after_one_attempt_with_their_own_code() {
    let cases = [
        (
            PERMISSION_DENIED,
            "Missing or insufficient permissions.",
            JournalError::PermissionDenied {
                grpc: GrpcCode::PermissionDenied,
            },
        ),
        (
            UNAUTHENTICATED,
            "Request had invalid authentication credentials.",
            JournalError::PermissionDenied {
                grpc: GrpcCode::Unauthenticated,
            },
        ),
        (
            NOT_FOUND,
            "The database (default) does not exist for project errors-project",
            JournalError::NotConfigured {
                cause: ConfigCause::DatabaseNotFound,
                grpc: Some(GrpcCode::NotFound),
            },
        ),
        (
            INVALID_ARGUMENT,
            "Invalid resource field value in the request.",
            JournalError::NotConfigured {
                cause: ConfigCause::InvalidArgument,
                grpc: Some(GrpcCode::InvalidArgument),
            },
        ),
        (
            FAILED_PRECONDITION,
            "The Cloud Firestore API is not available for Firestore in Datastore Mode database",
            JournalError::NotConfigured {
                cause: ConfigCause::FailedPrecondition,
                grpc: Some(GrpcCode::FailedPrecondition),
            },
        ),
    ];
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        for (code, message, expected) in cases {
            let (error, attempts, requests) = refused_by(code, message, mode).await;
            assert_eq!(error, expected, "{code} in {mode:?}");
            assert_eq!(error.class(), ErrorClass::Configuration);
            assert!(!error.is_retryable());
            assert_eq!(attempts, 1, "{code} in {mode:?}: one attempt");
            assert_eq!(requests, 1, "{code} in {mode:?}: one read, nothing else");
            assert!(
                error
                    .to_string()
                    .contains(error.grpc_code().expect("code").as_str()),
                "the message names the gRPC code: {error}"
            );
        }
    }
}

#[tokio::test]
async fn transient_codes_are_retried_to_the_limit_and_reported_with_the_last_code() {
    let (error, attempts, requests) =
        refused_by(INTERNAL, "internal", Concurrency::Preconditions).await;
    assert_eq!(
        error,
        JournalError::Unavailable {
            last_code: Some(GrpcCode::Internal),
            attempts: MAX_ATTEMPTS,
            deadline: false
        }
    );
    assert!(error.is_retryable());
    assert_eq!(attempts, u64::from(MAX_ATTEMPTS));
    assert_eq!(requests, u64::from(MAX_ATTEMPTS));
}

#[tokio::test]
async fn resource_exhausted_is_retried_with_the_longest_backoff() {
    let began = Instant::now();
    let (error, attempts, requests) = refused_by(
        RESOURCE_EXHAUSTED,
        "Quota exceeded.",
        Concurrency::Preconditions,
    )
    .await;
    assert_eq!(
        error,
        JournalError::Unavailable {
            last_code: Some(GrpcCode::ResourceExhausted),
            attempts: MAX_ATTEMPTS,
            deadline: false
        }
    );
    assert_eq!(attempts, u64::from(MAX_ATTEMPTS));
    assert_eq!(requests, u64::from(MAX_ATTEMPTS));
    // Nine waits between ten attempts, each at least the largest backoff ceiling.
    assert!(
        began.elapsed() >= RetryPolicy::default().backoff_cap * 9,
        "{:?}",
        began.elapsed()
    );
}

#[tokio::test]
async fn a_new_registration_refused_for_configuration_is_final_after_its_blind_commit() {
    // The first request of a new registration is its blind creation: a Commit. A
    // configuration refusal of it is as final as one of a read.
    let server = StatusServer::start(PERMISSION_DENIED, "Missing permissions.").await;
    let journal = journal_on(&server, Concurrency::Preconditions).await;
    let error = journal
        .register_command(&command(3, json!({})))
        .await
        .expect_err("refused");
    assert_eq!(
        error,
        JournalError::PermissionDenied {
            grpc: GrpcCode::PermissionDenied
        }
    );
    let stats = journal.stats();
    assert_eq!((stats.attempts, stats.blind_commits), (1, 1));
    assert_eq!((server.calls("Commit"), server.total()), (1, 1));
}

#[tokio::test]
async fn a_deadline_ends_retries_early_with_unavailable_deadline() {
    let server = StatusServer::start(RESOURCE_EXHAUSTED, "Quota exceeded.").await;
    let journal = journal_on(&server, Concurrency::Preconditions)
        .await
        .with_retry_policy(command_journal::RetryPolicy {
            deadline: Some(Duration::from_millis(600)),
            ..Default::default()
        });
    let error = journal
        .register_command(&command(2, json!({})))
        .await
        .expect_err("refused");
    let JournalError::Unavailable {
        last_code,
        attempts,
        deadline,
    } = error
    else {
        panic!("expected unavailable, got {error:?}");
    };
    assert!(deadline, "the deadline ended it");
    assert_eq!(last_code, Some(GrpcCode::ResourceExhausted));
    // 600 ms allows at most three attempts with RESOURCE_EXHAUSTED's 250 ms floor.
    assert!((1..=3).contains(&attempts), "{attempts}");
    assert_eq!(server.total(), u64::from(attempts));
}

#[tokio::test]
async fn a_deadline_passed_before_the_first_attempt_sends_nothing_and_counts_no_attempt() {
    let server = StatusServer::start(INTERNAL, "internal").await;
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        let journal =
            journal_on(&server, mode)
                .await
                .with_retry_policy(command_journal::RetryPolicy {
                    deadline: Some(Duration::ZERO),
                    ..Default::default()
                });
        // A new registration (a blind creation first in preconditions mode) and an
        // acquisition (a read first).
        let registered = journal.register_command(&command(5, json!({}))).await;
        let lease = LeaseId::parse(&support::uuid(4, 1)).expect("lease id");
        let acquired = journal.acquire_lease(&command(5, json!({})), &lease).await;
        for error in [registered.map(|_| ()), acquired.map(|_| ())] {
            assert_eq!(
                error,
                Err(JournalError::Unavailable {
                    last_code: None,
                    attempts: 0,
                    deadline: true
                }),
                "{mode:?}"
            );
        }
        let stats = journal.stats();
        assert_eq!(
            (stats.calls, stats.attempts, stats.blind_commits),
            (2, 0, 0),
            "{mode:?}"
        );
    }
    assert_eq!(server.total(), 0, "nothing sent");
}

/// The CLI binary built for this test run.
fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_command-journal")
}

#[test]
fn production_without_credentials_is_a_configuration_error_at_once() {
    let home = std::env::temp_dir().join(format!("cj-no-adc-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("home");
    let input = json!({
        "environment": "production",
        "callerScopeKind": "member",
        "callerId": "CANARYcaller_1",
        "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        "commandType": "checkout",
        "endpointSchemaVersion": 1,
        "payload": {"sku": "CANARYsku"}
    });
    let began = Instant::now();
    let mut child = std::process::Command::new(binary())
        .args(["--project", "some-project", "register"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("write stdin");
    }
    let output = child.wait_with_output().expect("wait");
    let elapsed = began.elapsed();
    let _ = std::fs::remove_dir_all(&home);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(8), "stdout {stdout}");
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(line["error"], "credentials_unavailable");
    assert_eq!(line["class"], "configuration");
    assert!(
        line["message"]
            .as_str()
            .is_some_and(|m| m.contains("GOOGLE_APPLICATION_CREDENTIALS")),
        "{line}"
    );
    assert!(!stdout.contains("CANARY"));
    // No retries and no network: decided from the environment alone.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn a_demo_project_without_an_emulator_host_is_told_to_name_one() {
    // `demo-` projects exist only on an emulator: without a host the CLI aims at
    // production, and its error says how to aim at the emulator instead.
    let home = std::env::temp_dir().join(format!("cj-demo-no-host-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("home");
    let output = std::process::Command::new(binary())
        .args(["verify", "--project", "demo-x"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the CLI");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(8), "stdout {stdout}");
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(line["error"], "credentials_unavailable");
    let message = line["message"].as_str().unwrap_or_default();
    for named in ["FIRESTORE_EMULATOR_HOST", "--emulator-host", "demo-"] {
        assert!(message.contains(named), "{named}: {message}");
    }
    // Another project gets the credentials advice alone.
    let output = std::process::Command::new(binary())
        .args(["verify", "--project", "some-project"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the CLI");
    let _ = std::fs::remove_dir_all(&home);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(8), "stdout {stdout}");
    assert!(!stdout.contains("FIRESTORE_EMULATOR_HOST"), "{stdout}");
}
