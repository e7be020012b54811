//! Retry classification and backoff: which failed RPC is worth another attempt, how
//! long to wait before it under the journal's [`RetryPolicy`].
//!
//! A lost precondition race (ALREADY_EXISTS, FAILED_PRECONDITION or NOT_FOUND on a
//! commit), ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED,
//! CANCELLED and UNKNOWN are retried; configuration refusals (credentials,
//! PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND or FAILED_PRECONDITION on a read,
//! INVALID_ARGUMENT) are the operation's answer.

use super::concurrency::Concurrency;
use super::policy::RetryPolicy;
use command_journal_core::error::{ConfigCause, JournalError};
use command_journal_core::tools::call::{RetryCause, RpcFailure};
use gcloud_sdk::google_cloud_auth::errors::CredentialsError;
use gcloud_sdk::tonic::{Code, Status};
use std::time::Duration;

/// Backoff after failed attempt `attempt` (1-based) that failed for `cause`, under
/// `policy`.
///
/// - RESOURCE_EXHAUSTED waits between the backoff cap and four times it, as the
///   official clients back off to their maximum on that code.
/// - ABORTED in transaction mode (a lock conflict) waits ½ to 1½ times a base of
///   the contention backoff base growing 1.5× per attempt up to its cap.
/// - Everything else waits with full jitter under a ceiling of the backoff base
///   doubled per attempt up to the cap.
pub(super) fn backoff(
    attempt: u32,
    cause: RetryCause,
    mode: Concurrency,
    policy: &RetryPolicy,
) -> Duration {
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let retries = attempt.saturating_sub(1).min(16);
    match (cause, mode) {
        (RetryCause::Exhausted, _) => Duration::from_micros(fastrand::u64(
            micros(policy.backoff_cap)..=micros(policy.backoff_cap.saturating_mul(4)),
        )),
        (RetryCause::Contention, Concurrency::Transaction) => {
            // `retries` is at most 16: 1.5^16 s is finite, so `mul_f64` cannot panic.
            let base = policy
                .contention_backoff_base
                .mul_f64(1.5_f64.powi(retries as i32))
                .min(policy.contention_backoff_cap);
            Duration::from_micros(fastrand::u64(micros(base) / 2..=micros(base) * 3 / 2))
        }
        _ => {
            let ceiling = policy
                .backoff_base
                .saturating_mul(1 << retries)
                .min(policy.backoff_cap);
            Duration::from_micros(fastrand::u64(0..=micros(ceiling)))
        }
    }
}

pub(super) enum Failure {
    /// Worth another attempt.
    Retry { code: Code },
    /// The operation's deadline passed.
    Deadline,
    /// The operation's answer.
    Final(JournalError),
}

impl Failure {
    /// Worth another attempt, with no transaction to name.
    pub(super) fn retry(code: Code) -> Self {
        Self::Retry { code }
    }
}

/// Which RPC failed: the same code means different things on a read and a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rpc {
    Read,
    Commit,
    /// A rollback's refusals are the read's: NOT_FOUND or FAILED_PRECONDITION are
    /// final, and so (classified in preconditions mode) is an expired or unknown
    /// transaction: it holds nothing any more.
    Rollback,
}

/// Whether `status` was caused by credentials that could not produce a token, and
/// whether that cause is transient.
fn credentials_failure(status: &Status) -> Option<bool> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(credentials) = error.downcast_ref::<CredentialsError>() {
            return Some(credentials.is_transient());
        }
        source = error.source();
    }
    None
}

/// What a failed RPC means for the operation: another attempt or its answer.
pub(super) fn classify(rpc: Rpc, mode: Concurrency, status: &Status) -> Failure {
    let code = status.code();
    tracing::trace!(
        ?rpc,
        code = crate::grpc::grpc_code(code).as_str(),
        "rpc failed"
    );
    if let Some(transient) = credentials_failure(status) {
        return if transient {
            Failure::retry(Code::Unavailable)
        } else {
            Failure::Final(JournalError::CredentialsUnavailable)
        };
    }
    let config = |cause| {
        Failure::Final(JournalError::NotConfigured {
            cause,
            grpc: Some(crate::grpc::grpc_code(code)),
        })
    };
    match code {
        Code::Aborted
        | Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Internal
        | Code::ResourceExhausted
        | Code::Cancelled
        // tonic's answer for a connection lost mid-RPC: the outcome is unknown, and
        // every operation re-reads and converges.
        | Code::Unknown => Failure::retry(code),
        // A precondition of this crate's own commit lost a race.
        Code::AlreadyExists | Code::FailedPrecondition | Code::NotFound
            if rpc == Rpc::Commit =>
        {
            Failure::retry(code)
        }
        // An expired or unknown transaction id: the transaction is gone, start anew.
        Code::InvalidArgument
            if mode == Concurrency::Transaction && status.message().contains("ransaction") =>
        {
            Failure::retry(Code::Aborted)
        }
        Code::PermissionDenied | Code::Unauthenticated => {
            Failure::Final(JournalError::PermissionDenied {
                grpc: crate::grpc::grpc_code(code),
            })
        }
        Code::NotFound => config(ConfigCause::DatabaseNotFound),
        Code::FailedPrecondition => config(ConfigCause::FailedPrecondition),
        Code::InvalidArgument | Code::AlreadyExists => config(ConfigCause::InvalidArgument),
        Code::Unimplemented | Code::OutOfRange => config(ConfigCause::Unsupported),
        Code::DataLoss | Code::Ok => {
            Failure::Final(JournalError::internal("firestore reported data loss"))
        }
    }
}

/// Why a retryable `code` failed, for the call machine: a commit's refusal with
/// ALREADY_EXISTS or FAILED_PRECONDITION means one of its preconditions failed (the
/// emulator answers ALREADY_EXISTS for a create and for an absence guard alike;
/// FAILED_PRECONDITION is the documented answer to a failed precondition).
pub(super) fn cause(code: Code) -> RetryCause {
    match code {
        Code::AlreadyExists | Code::FailedPrecondition => RetryCause::PreconditionLost,
        Code::Aborted => RetryCause::Contention,
        Code::ResourceExhausted => RetryCause::Exhausted,
        _ => RetryCause::Transient,
    }
}

impl Failure {
    /// The failure as the call machine hears it; `None` for a passed deadline.
    pub(super) fn into_rpc(self) -> Option<RpcFailure> {
        match self {
            Self::Retry { code, .. } => Some(RpcFailure::Retry {
                code: crate::grpc::grpc_code(code),
                cause: cause(code),
            }),
            Self::Final(error) => Some(RpcFailure::Final(error)),
            Self::Deadline => None,
        }
    }
}

/// The error of a single RPC outside the runner (the verifier's scans): a retryable
/// code is `unavailable` after that one attempt, anything else its own refusal.
pub(crate) fn status_error(status: &Status) -> JournalError {
    match classify(Rpc::Read, Concurrency::Preconditions, status) {
        Failure::Retry { code, .. } => {
            JournalError::unavailable(Some(crate::grpc::grpc_code(code)), 1, false)
        }
        Failure::Deadline => JournalError::unavailable(None, 1, true),
        Failure::Final(error) => error,
    }
}

/// The error of a `firestore` crate call (the verifier's streamed queries), classified
/// by the gRPC code it carries, as [`status_error`] does.
pub(crate) fn firestore_error(error: &firestore::errors::FirestoreError) -> JournalError {
    use firestore::errors::FirestoreError as E;
    let name = match error {
        E::DatabaseError(e) => e.public.code.as_str(),
        E::DataConflictError(e) => e.public.code.as_str(),
        E::DataNotFoundError(e) => e.public.code.as_str(),
        _ => return JournalError::unreachable(),
    };
    let code = [
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ]
    .into_iter()
    .find(|code| format!("{code:?}") == name)
    .unwrap_or(Code::Unknown);
    status_error(&Status::new(code, ""))
}

#[cfg(test)]
mod tests;
