use super::*;

#[test]
fn backoff_is_bounded_and_grows() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        let (base, cap) = backoff_bounds(mode);
        for attempt in 1..=MAX_ATTEMPTS {
            let ceiling = base.saturating_mul(1 << (attempt - 1)).min(cap);
            for _ in 0..50 {
                assert!(backoff(attempt, Code::Aborted, mode) <= ceiling);
            }
        }
    }
}

#[test]
fn transaction_mode_backs_off_longer_for_lock_contention() {
    assert_eq!(
        backoff_bounds(Concurrency::Preconditions),
        (BACKOFF_BASE, BACKOFF_CAP)
    );
    assert_eq!(
        backoff_bounds(Concurrency::Transaction),
        (TRANSACTION_BACKOFF_BASE, TRANSACTION_BACKOFF_CAP)
    );
    assert!(TRANSACTION_BACKOFF_BASE > BACKOFF_BASE);
    assert!(TRANSACTION_BACKOFF_CAP > BACKOFF_CAP);
}

#[test]
fn resource_exhausted_backs_off_to_the_maximum() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        let (_, cap) = backoff_bounds(mode);
        for attempt in 1..=MAX_ATTEMPTS {
            for _ in 0..50 {
                let wait = backoff(attempt, Code::ResourceExhausted, mode);
                assert!(wait >= cap && wait <= cap * 4, "{wait:?}");
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
