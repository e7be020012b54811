//! The commands that wait for someone: [`Journal::pending`](crate::Journal::pending)
//! lists every command whose lease expired without a terminal transition, with its
//! send state and what would move it on, redacted as `status` is. One
//! collection-group query on the lifecycle's `state` finds the candidates (its cost
//! grows with the commands not yet settled, not with the journal), and each expired
//! one is read with its send documents and decided by the core
//! (`command_journal_core::tools::pending`). A [`KeyRange`] limits a listing to one
//! range of the key-hash space, a recovery task's share. `docs/recovery.md` explains
//! the index.

pub(crate) mod listing;

pub use command_journal_core::pending::{
    KeyRange, LifecycleState, MAX_KEY_RANGES, PendingCommand, PendingSend, Unblock,
};
pub use listing::Listing;
