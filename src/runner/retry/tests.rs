use super::*;
use command_journal_core::error::GrpcCode;

fn policy() -> RetryPolicy {
    RetryPolicy::default()
}
const MAX_ATTEMPTS: u32 = 10;
const BACKOFF_BASE: Duration = Duration::from_millis(4);
const BACKOFF_CAP: Duration = Duration::from_millis(250);
const TRANSACTION_BACKOFF_BASE: Duration = Duration::from_secs(1);

#[test]
fn the_default_policy_is_the_documented_one() {
    let p = policy();
    assert_eq!(p.attempts.get(), MAX_ATTEMPTS);
    assert_eq!((p.backoff_base, p.backoff_cap), (BACKOFF_BASE, BACKOFF_CAP));
    assert_eq!(
        (p.contention_backoff_base, p.contention_backoff_cap),
        (TRANSACTION_BACKOFF_BASE, Duration::from_secs(10))
    );
    assert_eq!((p.rpc_timeout, p.deadline), (Duration::from_secs(10), None));
}

#[test]
fn backoff_is_full_jitter_under_a_doubling_ceiling() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        for code in [Code::Unavailable, Code::FailedPrecondition, Code::Internal] {
            for attempt in 1..=MAX_ATTEMPTS {
                let ceiling = BACKOFF_BASE
                    .saturating_mul(1 << (attempt - 1))
                    .min(BACKOFF_CAP);
                for _ in 0..50 {
                    assert!(backoff(attempt, cause(code), mode, &policy()) <= ceiling);
                }
            }
        }
    }
    for attempt in 1..=MAX_ATTEMPTS {
        let ceiling = BACKOFF_BASE
            .saturating_mul(1 << (attempt - 1))
            .min(BACKOFF_CAP);
        for _ in 0..50 {
            assert!(
                backoff(
                    attempt,
                    cause(Code::Aborted),
                    Concurrency::Preconditions,
                    &policy()
                ) <= ceiling
            );
        }
    }
}

#[test]
fn an_aborted_transaction_waits_half_to_one_and_a_half_times_a_growing_base() {
    let bases_ms = [
        1_000, 1_500, 2_250, 3_375, 5_062, 7_593, 10_000, 10_000, 10_000,
    ];
    for (attempt, base_ms) in (1..).zip(bases_ms) {
        let (low, high) = (base_ms * 1_000 / 2, base_ms * 1_000 * 3 / 2);
        for _ in 0..50 {
            let wait = backoff(
                attempt,
                cause(Code::Aborted),
                Concurrency::Transaction,
                &policy(),
            )
            .as_micros();
            // A millisecond of slack for the rounded bases above.
            assert!(
                (low - 1_000..=high + 1_000).contains(&(wait as u64)),
                "attempt {attempt}: {wait} µs"
            );
        }
    }
    assert!(TRANSACTION_BACKOFF_BASE / 2 > BACKOFF_CAP);
}

#[test]
fn resource_exhausted_backs_off_to_the_maximum() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        for attempt in 1..=MAX_ATTEMPTS {
            for _ in 0..50 {
                let wait = backoff(attempt, cause(Code::ResourceExhausted), mode, &policy());
                assert!(wait >= BACKOFF_CAP && wait <= BACKOFF_CAP * 4, "{wait:?}");
            }
        }
    }
}

fn verdict(rpc: Rpc, mode: Concurrency, status: Status) -> Result<Code, JournalError> {
    match classify(rpc, mode, &status) {
        Failure::Retry { code, .. } => Ok(code),
        Failure::Final(error) => Err(error),
        Failure::Deadline => panic!("classify never answers Deadline"),
    }
}

#[test]
fn transient_and_race_codes_are_retried() {
    for code in [
        Code::Aborted,
        Code::Unavailable,
        Code::DeadlineExceeded,
        Code::Internal,
        Code::ResourceExhausted,
        Code::Cancelled,
        Code::Unknown,
    ] {
        for rpc in [Rpc::Read, Rpc::Commit] {
            let status = Status::new(code, "x");
            assert_eq!(verdict(rpc, Concurrency::Preconditions, status), Ok(code));
        }
    }
    for code in [
        Code::AlreadyExists,
        Code::FailedPrecondition,
        Code::NotFound,
    ] {
        let status = Status::new(code, "x");
        assert_eq!(
            verdict(Rpc::Commit, Concurrency::Preconditions, status),
            Ok(code)
        );
    }
}

#[test]
fn configuration_codes_are_final_with_their_own_error() {
    let cases = [
        (
            Code::PermissionDenied,
            JournalError::PermissionDenied {
                grpc: GrpcCode::PermissionDenied,
            },
        ),
        (
            Code::Unauthenticated,
            JournalError::PermissionDenied {
                grpc: GrpcCode::Unauthenticated,
            },
        ),
        (
            Code::NotFound,
            JournalError::NotConfigured {
                cause: ConfigCause::DatabaseNotFound,
                grpc: Some(GrpcCode::NotFound),
            },
        ),
        (
            Code::FailedPrecondition,
            JournalError::NotConfigured {
                cause: ConfigCause::FailedPrecondition,
                grpc: Some(GrpcCode::FailedPrecondition),
            },
        ),
        (
            Code::InvalidArgument,
            JournalError::NotConfigured {
                cause: ConfigCause::InvalidArgument,
                grpc: Some(GrpcCode::InvalidArgument),
            },
        ),
        (
            Code::Unimplemented,
            JournalError::NotConfigured {
                cause: ConfigCause::Unsupported,
                grpc: Some(GrpcCode::Unimplemented),
            },
        ),
    ];
    for (code, expected) in cases {
        let status = Status::new(code, "x");
        assert_eq!(
            verdict(Rpc::Read, Concurrency::Preconditions, status),
            Err(expected),
            "{code:?}"
        );
        assert!(!expected.is_retryable());
    }
    // Permission and argument refusals are final on a commit too.
    let status = Status::new(Code::PermissionDenied, "x");
    assert!(verdict(Rpc::Commit, Concurrency::Preconditions, status).is_err());
}

#[test]
fn an_expired_transaction_is_retried_only_in_transaction_mode() {
    let expired = || {
        Status::new(
            Code::InvalidArgument,
            "The referenced transaction has expired",
        )
    };
    assert_eq!(
        verdict(Rpc::Commit, Concurrency::Transaction, expired()),
        Ok(Code::Aborted)
    );
    assert!(verdict(Rpc::Commit, Concurrency::Preconditions, expired()).is_err());
}

#[test]
fn concurrency_names_round_trip() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        assert_eq!(Concurrency::parse(mode.as_str()), Ok(mode));
    }
    assert_eq!(
        Concurrency::parse("optimistic"),
        Err(JournalError::invalid("concurrency"))
    );
}
