//! The one closed error type of the crate.

/// Every way an operation of the journal can fail.
///
/// The set is closed and each variant has a stable snake_case [`code`](Self::code).
/// Messages never contain raw input, hashes, document paths or ids: `InvalidInput`
/// names the offending field only, and `JournalCorrupt` carries a fixed description
/// of which invariant failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
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
    #[error("journal corrupt: {reason}")]
    JournalCorrupt {
        /// Fixed description of the invariant that failed.
        reason: &'static str,
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
    /// Firestore could not be reached or kept aborting; retrying the whole call is safe.
    #[error("firestore is unavailable")]
    Unavailable,
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
            Self::Unavailable => "unavailable",
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
    pub(crate) fn invalid(field: &'static str) -> Self {
        Self::InvalidInput { field }
    }

    /// Shorthand for a [`JournalCorrupt`](Self::JournalCorrupt) with a fixed reason.
    pub(crate) fn corrupt(reason: &'static str) -> Self {
        Self::JournalCorrupt { reason }
    }
}

#[cfg(test)]
mod tests {
    use super::JournalError;

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
            JournalError::Unavailable,
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
                "unavailable",
            ]
        );
    }
}
