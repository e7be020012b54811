//! What the demo counts: one counter per row of its table, bumped by the workers of
//! every command at once.

use std::sync::atomic::{AtomicU64, Ordering};

/// The demo's counters.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) registrations_new: AtomicU64,
    pub(super) registrations_existing: AtomicU64,
    pub(super) acquisitions: AtomicU64,
    pub(super) takeovers: AtomicU64,
    pub(super) busy: AtomicU64,
    pub(super) lost_responses_retried: AtomicU64,
    pub(super) crashed_holders: AtomicU64,
    pub(super) stale_rejections: AtomicU64,
    pub(super) succeeded: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) terminal_observed: AtomicU64,
    pub(super) ledger_accepted: AtomicU64,
    pub(super) ledger_replayed: AtomicU64,
    pub(super) ledger_mismatches: AtomicU64,
    pub(super) unexpected: AtomicU64,
}

/// Counts one more.
pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
