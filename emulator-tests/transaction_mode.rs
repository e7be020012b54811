//! The emulator race suite again, with every journal in transaction mode: the same
//! modules as the `emulator` binary (registration, lease, start, ledger, randomized),
//! the same exact counts of documents and events, and no `unavailable` answer. Only
//! the mode differs; `support` applies [`MODE`] to every journal it builds.
//!
//! `cargo test --all-features --test emulator-transaction` runs it; the long forms
//! (`CJ_LONG=1`) apply here as in the `emulator` binary. The module `locks` shows the
//! two modes differ on the server: a transaction holding a lock on a lifecycle
//! document delays or aborts a transaction-mode operation, never a
//! preconditions-mode one.

// `support` carries helpers only the other binary's modules use.
#![allow(dead_code)]

/// The concurrency mode every journal built by `support` uses in this binary.
pub const MODE: command_journal::Concurrency = command_journal::Concurrency::Transaction;

mod billing;
mod lease;
mod ledger;
mod ledger_bookkeeping;
mod locks;
mod pending;
mod provider_model;
mod randomized;
mod recovery;
mod registration;
mod send_randomized;
mod sends;
mod start;
mod support;
mod tampering;
