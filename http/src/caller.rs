//! The caller the service verified: a typed request extension its authentication layer
//! sets, and the scope every idempotency key is taken in.
//!
//! The layer never reads a token, a cookie or a header for the caller: it takes the
//! [`VerifiedCaller`] the service's own authentication put in the request's
//! extensions. A key is scoped to it (its kind and id are parts of the command key), so
//! the same key from two callers names two commands, and neither can read or block
//! the other's. A request without one runs no command: the answer is a 500 problem
//! `caller_missing`, because it means the service's stack is assembled without
//! authentication in front of the layer (an unauthenticated request must have been
//! refused there, with the scheme's own 401 and `WWW-Authenticate`).

use command_journal::JournalError;
use command_journal::identity::{CallerId, CallerScopeKind};

/// A caller the service has authenticated. `Debug` never prints the id.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifiedCaller {
    kind: CallerScopeKind,
    id: String,
}

impl std::fmt::Debug for VerifiedCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedCaller")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl VerifiedCaller {
    /// The caller `id` (1–128 bytes of `[A-Za-z0-9_-]`, the journal's caller id rule)
    /// of scope `kind`; `invalid_input` on `callerId` otherwise, the id never echoed.
    pub fn new(kind: CallerScopeKind, id: &str) -> Result<Self, JournalError> {
        CallerId::parse(id)?;
        Ok(Self {
            kind,
            id: id.to_owned(),
        })
    }

    /// The caller's scope kind.
    pub fn kind(&self) -> CallerScopeKind {
        self.kind
    }

    /// The caller's id, as the journal hashes it.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

#[cfg(test)]
mod tests;
