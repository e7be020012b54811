//! The one closed error type of the crate, and the classes callers act on.

mod grpc;

pub use grpc::GrpcCode;

/// Every way an operation of the journal can fail.
///
/// Each variant has a stable snake_case [`code`](Self::code) and belongs to one
/// [`ErrorClass`]: a caller retries only what [`is_retryable`](Self::is_retryable)
/// says, and a configuration refusal is never reported as `unavailable`. Messages
/// never contain raw input, hashes, document paths or ids: `InvalidInput` names the
/// offending field only, and `JournalCorrupt` carries a fixed description of which
/// invariant failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// An input failed validation; `field` is its camelCase name, never its value.
    #[error("invalid input: {field}")]
    InvalidInput {
        /// camelCase name of the rejected input field.
        field: &'static str,
    },
    /// The command id was registered with a different payload.
    #[error("command conflict: the command is registered with a different payload")]
    CommandConflict,
    /// The command has no registration.
    #[error("the command is not registered")]
    NotRegistered,
    /// The caller's lease id is not the one holding the lease.
    #[error("the lease is not held by this lease id")]
    LeaseNotHeld,
    /// The caller's fence epoch is not the current one.
    #[error("the fence epoch is stale")]
    StaleFence,
    /// The caller's lease expired before the terminal transition.
    #[error("the lease has expired")]
    LeaseExpired,
    /// A different terminal outcome or commitment is already recorded.
    #[error("a different terminal outcome is already recorded")]
    TerminalConflict,
    /// The trusted clock is earlier than a stored time the transition needs to follow.
    #[error("the trusted clock is earlier than the stored state")]
    ClockRegression,
    /// A fence epoch or command revision would exceed its bound.
    #[error("the revision or fence would exceed its maximum")]
    RevisionOverflow,
    /// A stored document broke an invariant; nothing was written.
    #[error("journal corrupt: {reason}{}", detail_text(*detail))]
    JournalCorrupt {
        /// Fixed description of the invariant that failed.
        reason: &'static str,
        /// Where a strict parse failed, when one did: the stored field's name (never
        /// its value), `field set` or `field relations`. The core logs nothing; the
        /// shell logs this.
        detail: Option<&'static str>,
    },
    /// A ledger retry does not match the reservation it replays.
    #[error("the replay does not match the accepted reservation")]
    ReplayMismatch,
    /// A ledger replay named a seat or actor outside the reservation's scope.
    #[error("the replay is outside the reservation's scope")]
    ScopeMismatch,
    /// The stored fingerprint version has no serializer in this crate.
    #[error("the stored fingerprint version is not supported")]
    UnsupportedFingerprintVersion,
    /// A new reversal would return more than an original effect booked: with the
    /// reversals of it already accepted (under any key), the magnitudes of their
    /// amounts would exceed the magnitude of the original's amount. Nothing was
    /// written; an exact retry of an accepted reversal still replays.
    #[error("the reversal would return more than the original effect booked")]
    ReversalExceedsOriginal,
    /// A version 1 or 2 historical command with more than one effect: its fingerprint
    /// covers principal material that version 3 removed; the migration refuses to link it.
    #[error("a version 1 or 2 multi-effect command cannot be linked")]
    ObsoleteMultiEffectFingerprint,
    /// The attempt's outcome is unknown and its stored send cutoff has passed (equality
    /// counts as passed), or its send time is unknown: no permit for anyone, and no
    /// outcome but reconciliation moves it. Final for automation.
    #[error("the send cutoff has passed: the attempt needs reconciliation")]
    SendCutoffPassed,
    /// Another holder sent the attempt last, and its request may still be on its way
    /// to the provider until the lease it was sent under would have ended
    /// (`lastSentAt + 60 s`, even when that lease was released sooner): the key is
    /// re-sent only from `from`. Nothing was written; retry from then.
    #[error("an earlier request for the attempt may still be in flight: re-send later")]
    ResendNotYet {
        /// The instant from which a re-send of the key is permitted.
        from: crate::time::Timestamp,
    },
    /// The command is bound to a different provider plan.
    #[error("the command is bound to a different provider plan")]
    PlanConflict,
    /// The command has a bound provider plan: it ends only through the send layer
    /// (`record_send_outcome` or `reconcile_send`).
    #[error("the command has a provider send: record its outcome through the send layer")]
    SendOutcomeRequired,
    /// The attempt named is not the command's current one, is no longer open for this
    /// answer, or was not sent by the caller's fence.
    #[error("the attempt does not match the command's current provider attempt")]
    AttemptMismatch,
    /// `NotFound` evidence for an attempt whose absence the journal cannot prove from
    /// its own records (`docs/providers.md`, "Proven absence"): a lease under which the
    /// attempt was permitted may still be running, the plan's settle window has not
    /// passed since, or the provider may have forgotten the key. Nothing was written.
    /// `provable_from` is the instant from which the same evidence will be accepted,
    /// when one exists; `None` means never without an operator.
    #[error("the provider's absence cannot be proven from the journal's records{}", provable_text(*provable_from))]
    AbsenceNotProvable {
        /// When the absence becomes provable, if it ever does.
        provable_from: Option<crate::time::Timestamp>,
    },
    /// Firestore could not be reached, kept aborting, or the operation's deadline
    /// passed. Every operation is idempotent: retrying the whole call later is safe.
    ///
    /// The message never counts zero attempts: a connection that could not be made
    /// says so, with the code gRPC gives a transport failure (UNAVAILABLE).
    #[error("{}", unavailable_text(*last_code, *attempts, *deadline))]
    Unavailable {
        /// The last gRPC status code seen: the one Firestore answered, or UNAVAILABLE
        /// when no connection could be made; `None` when nothing answered at all.
        last_code: Option<GrpcCode>,
        /// Attempts made (reads started); 0 when the connection itself failed.
        attempts: u32,
        /// Whether the operation's deadline ended it.
        deadline: bool,
    },
    /// No usable Google credentials: Application Default Credentials are absent or
    /// cannot be loaded. Fix the deployment; retrying does not help.
    #[error(
        "no usable Google credentials: set GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default login`, or run on Google Cloud with a service account"
    )]
    CredentialsUnavailable,
    /// Firestore rejected the credentials (UNAUTHENTICATED) or they lack permission on
    /// the database (PERMISSION_DENIED; grant `roles/datastore.user`).
    #[error("firestore refused the credentials ({}): {}", grpc.as_str(), permission_hint(*grpc))]
    PermissionDenied {
        /// `PermissionDenied` or `Unauthenticated`.
        grpc: GrpcCode,
    },
    /// The target is not usable as configured: the project or database does not exist,
    /// it is not a Firestore Native database, or a request was invalid for it.
    #[error("firestore is not configured for the journal: {}{}", cause.describe(), grpc_text(*grpc))]
    NotConfigured {
        /// What is wrong.
        cause: ConfigCause,
        /// The gRPC code Firestore answered, when it answered.
        grpc: Option<GrpcCode>,
    },
    /// A defect inside this process (an output that failed to serialize, a worker task
    /// that panicked); nothing about the journal is implied. Not retryable.
    #[error("internal error: {reason}")]
    Internal {
        /// Fixed description of what failed.
        reason: &'static str,
    },
}

/// What is wrong with a target that is [`NotConfigured`](JournalError::NotConfigured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigCause {
    /// NOT_FOUND on the database: the project or the database does not exist.
    DatabaseNotFound,
    /// INVALID_ARGUMENT: Firestore refused the request as malformed for this target.
    InvalidArgument,
    /// FAILED_PRECONDITION on a read (for example a Datastore-mode database).
    FailedPrecondition,
    /// The server does not implement the request (UNIMPLEMENTED, OUT_OF_RANGE).
    Unsupported,
    /// No project id was given and none could be found in the environment.
    ProjectUnknown,
}

impl ConfigCause {
    /// A stable snake_case name.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DatabaseNotFound => "database_not_found",
            Self::InvalidArgument => "invalid_argument",
            Self::FailedPrecondition => "failed_precondition",
            Self::Unsupported => "unsupported",
            Self::ProjectUnknown => "project_unknown",
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Self::DatabaseNotFound => "the project or database does not exist",
            Self::InvalidArgument => "firestore refused the request as invalid for this target",
            Self::FailedPrecondition => {
                "the database refused the request (is it a Firestore Native database?)"
            }
            Self::Unsupported => "the server does not support the request",
            Self::ProjectUnknown => {
                "no project id: pass --project or set GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT"
            }
        }
    }
}

/// The message of [`JournalError::Unavailable`]: what failed, the last gRPC code, and
/// that retrying is safe; never "0 attempts".
fn unavailable_text(last_code: Option<GrpcCode>, attempts: u32, deadline: bool) -> String {
    let code = match last_code {
        Some(code) => format!("last gRPC code {}", code.as_str()),
        None => "no gRPC status received".to_owned(),
    };
    let what = match (attempts, deadline) {
        (0, true) => "the operation's deadline passed before any attempt".to_owned(),
        (0, false) => "could not connect to firestore".to_owned(),
        (n, deadline) => format!(
            "firestore is unavailable after {n} attempt{}{}",
            if n == 1 { "" } else { "s" },
            if deadline { ", deadline reached" } else { "" }
        ),
    };
    format!("{what} ({code}); retrying the whole call later is safe")
}

fn provable_text(from: Option<crate::time::Timestamp>) -> &'static str {
    match from {
        Some(_) => " yet",
        None => ": the key may be forgotten; it needs evidence or an operator",
    }
}

fn detail_text(detail: Option<&'static str>) -> String {
    detail.map(|d| format!(" ({d})")).unwrap_or_default()
}

fn grpc_text(code: Option<GrpcCode>) -> String {
    code.map(|c| format!(" (gRPC {})", c.as_str()))
        .unwrap_or_default()
}

fn permission_hint(code: GrpcCode) -> &'static str {
    match code {
        GrpcCode::Unauthenticated => "the credentials are invalid or expired",
        _ => "the service account needs roles/datastore.user on the project",
    }
}

/// How a caller should act on an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The input is invalid: fix the request.
    Input,
    /// The journal refused the transition (conflict, stale fence, corruption, …):
    /// retrying the same call gives the same answer.
    Refused,
    /// Firestore is briefly unavailable: retrying the whole call later is safe.
    Unavailable,
    /// The deployment is misconfigured (credentials, permissions, project, database):
    /// page whoever owns the configuration.
    Configuration,
    /// A defect inside this process.
    Internal,
}

impl ErrorClass {
    /// A stable snake_case name.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Refused => "refused",
            Self::Unavailable => "unavailable",
            Self::Configuration => "configuration",
            Self::Internal => "internal",
        }
    }
}

impl JournalError {
    /// The stable snake_case code used by the CLI and logs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidInput { .. } => "invalid_input",
            Self::CommandConflict => "command_conflict",
            Self::NotRegistered => "not_registered",
            Self::LeaseNotHeld => "lease_not_held",
            Self::StaleFence => "stale_fence",
            Self::LeaseExpired => "lease_expired",
            Self::TerminalConflict => "terminal_conflict",
            Self::ClockRegression => "clock_regression",
            Self::RevisionOverflow => "revision_overflow",
            Self::JournalCorrupt { .. } => "journal_corrupt",
            Self::ReplayMismatch => "replay_mismatch",
            Self::ScopeMismatch => "scope_mismatch",
            Self::UnsupportedFingerprintVersion => "unsupported_fingerprint_version",
            Self::ReversalExceedsOriginal => "reversal_exceeds_original",
            Self::ObsoleteMultiEffectFingerprint => "obsolete_multi_effect_fingerprint",
            Self::SendCutoffPassed => "send_cutoff_passed",
            Self::ResendNotYet { .. } => "resend_not_yet",
            Self::PlanConflict => "plan_conflict",
            Self::SendOutcomeRequired => "send_outcome_required",
            Self::AttemptMismatch => "attempt_mismatch",
            Self::AbsenceNotProvable { .. } => "absence_not_provable",
            Self::Unavailable { .. } => "unavailable",
            Self::CredentialsUnavailable => "credentials_unavailable",
            Self::PermissionDenied { .. } => "permission_denied",
            Self::NotConfigured { .. } => "not_configured",
            Self::Internal { .. } => "internal",
        }
    }

    /// The class of this error: what the caller should do about it.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::InvalidInput { .. } => ErrorClass::Input,
            Self::Unavailable { .. } => ErrorClass::Unavailable,
            Self::CredentialsUnavailable
            | Self::PermissionDenied { .. }
            | Self::NotConfigured { .. } => ErrorClass::Configuration,
            Self::Internal { .. } => ErrorClass::Internal,
            _ => ErrorClass::Refused,
        }
    }

    /// Whether retrying the whole call later may succeed. True only for
    /// `unavailable`: every other error answers the same until something changes.
    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Unavailable
    }

    /// The gRPC code behind a Firestore refusal or outage, when one answered.
    pub fn grpc_code(&self) -> Option<GrpcCode> {
        match self {
            Self::Unavailable { last_code, .. } => *last_code,
            Self::PermissionDenied { grpc } => Some(*grpc),
            Self::NotConfigured { grpc, .. } => *grpc,
            _ => None,
        }
    }

    /// For `invalid_input`, the fixed rule its field must follow; never the value received.
    pub fn expected(&self) -> Option<&'static str> {
        match self {
            Self::InvalidInput { field } => crate::expected::expected_for(field),
            _ => None,
        }
    }

    /// Shorthand for an [`InvalidInput`](Self::InvalidInput) naming `field`.
    pub fn invalid(field: &'static str) -> Self {
        Self::InvalidInput { field }
    }

    /// Shorthand for a [`JournalCorrupt`](Self::JournalCorrupt) with a fixed reason.
    pub fn corrupt(reason: &'static str) -> Self {
        Self::JournalCorrupt {
            reason,
            detail: None,
        }
    }

    /// A [`JournalCorrupt`](Self::JournalCorrupt) with a fixed reason and the detail of
    /// where the strict parse failed (a field name, never a value).
    pub fn corrupt_at(reason: &'static str, detail: &'static str) -> Self {
        Self::JournalCorrupt {
            reason,
            detail: Some(detail),
        }
    }

    /// `unavailable` after `attempts` attempts, the last answering `last_code` (if an RPC
    /// answered at all); `deadline` when the operation's deadline ended it.
    pub fn unavailable(last_code: Option<GrpcCode>, attempts: u32, deadline: bool) -> Self {
        Self::Unavailable {
            last_code,
            attempts,
            deadline,
        }
    }

    /// No connection to Firestore could be made: gRPC's UNAVAILABLE, before any attempt.
    pub fn connect_failed() -> Self {
        Self::unavailable(Some(GrpcCode::Unavailable), 0, false)
    }

    /// Firestore could not be reached at all (no RPC answered).
    pub fn unreachable() -> Self {
        Self::Unavailable {
            last_code: None,
            attempts: 0,
            deadline: false,
        }
    }

    /// Shorthand for an [`Internal`](Self::Internal) error.
    pub fn internal(reason: &'static str) -> Self {
        Self::Internal { reason }
    }
}

#[cfg(test)]
mod tests;
