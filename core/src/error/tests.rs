use super::{ConfigCause, ErrorClass, GrpcCode, JournalError};

fn unavailable() -> JournalError {
    JournalError::Unavailable {
        last_code: Some(GrpcCode::Aborted),
        attempts: 10,
        deadline: false,
    }
}

#[test]
fn codes_are_stable_and_distinct() {
    let all = [
        JournalError::invalid("x"),
        JournalError::CommandConflict,
        JournalError::NotRegistered,
        JournalError::LeaseNotHeld,
        JournalError::StaleFence,
        JournalError::LeaseExpired,
        JournalError::TerminalConflict,
        JournalError::ClockRegression,
        JournalError::RevisionOverflow,
        JournalError::corrupt("x"),
        JournalError::ReplayMismatch,
        JournalError::ScopeMismatch,
        JournalError::UnsupportedFingerprintVersion,
        JournalError::ObsoleteMultiEffectFingerprint,
        unavailable(),
        JournalError::CredentialsUnavailable,
        JournalError::PermissionDenied {
            grpc: GrpcCode::PermissionDenied,
        },
        JournalError::NotConfigured {
            cause: ConfigCause::DatabaseNotFound,
            grpc: Some(GrpcCode::NotFound),
        },
        JournalError::internal("x"),
    ];
    let codes: Vec<&str> = all.iter().map(JournalError::code).collect();
    assert_eq!(
        codes,
        [
            "invalid_input",
            "command_conflict",
            "not_registered",
            "lease_not_held",
            "stale_fence",
            "lease_expired",
            "terminal_conflict",
            "clock_regression",
            "revision_overflow",
            "journal_corrupt",
            "replay_mismatch",
            "scope_mismatch",
            "unsupported_fingerprint_version",
            "obsolete_multi_effect_fingerprint",
            "unavailable",
            "credentials_unavailable",
            "permission_denied",
            "not_configured",
            "internal",
        ]
    );
    let retryable: Vec<&str> = all
        .iter()
        .filter(|e| e.is_retryable())
        .map(JournalError::code)
        .collect();
    assert_eq!(retryable, ["unavailable"]);
    let configuration: Vec<&str> = all
        .iter()
        .filter(|e| e.class() == ErrorClass::Configuration)
        .map(JournalError::code)
        .collect();
    assert_eq!(
        configuration,
        [
            "credentials_unavailable",
            "permission_denied",
            "not_configured"
        ]
    );
}

#[test]
fn messages_name_the_cause_and_the_grpc_code() {
    assert_eq!(
        unavailable().to_string(),
        "firestore is unavailable after 10 attempts (last gRPC code ABORTED); retrying the whole call later is safe"
    );
    // A connection that could not be made never counts "0 attempts".
    let refused = JournalError::connect_failed().to_string();
    assert_eq!(
        refused,
        "could not connect to firestore (last gRPC code UNAVAILABLE); retrying the whole call later is safe"
    );
    assert!(!JournalError::unreachable().to_string().contains('0'));
    let deadline = JournalError::Unavailable {
        last_code: None,
        attempts: 3,
        deadline: true,
    };
    assert!(deadline.to_string().contains("deadline reached"));
    let denied = JournalError::PermissionDenied {
        grpc: GrpcCode::PermissionDenied,
    };
    assert!(denied.to_string().contains("PERMISSION_DENIED"));
    assert!(denied.to_string().contains("roles/datastore.user"));
    let missing = JournalError::NotConfigured {
        cause: ConfigCause::DatabaseNotFound,
        grpc: Some(GrpcCode::NotFound),
    };
    assert!(missing.to_string().contains("does not exist"));
    assert!(missing.to_string().contains("NOT_FOUND"));
    assert_eq!(missing.grpc_code(), Some(GrpcCode::NotFound));
}

#[test]
fn send_codes_are_stable_refusals() {
    for (error, code) in [
        (JournalError::SendCutoffPassed, "send_cutoff_passed"),
        (JournalError::PlanConflict, "plan_conflict"),
        (JournalError::SendOutcomeRequired, "send_outcome_required"),
        (JournalError::AttemptMismatch, "attempt_mismatch"),
    ] {
        assert_eq!(error.code(), code);
        assert_eq!(error.class(), ErrorClass::Refused);
        assert!(!error.is_retryable());
    }
}
