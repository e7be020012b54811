//! The runner's counters: every RPC, attempt, conflict and billed document of a
//! journal, cumulative ([`Counters`], read as [`Stats`]) and per operation ([`Tally`]).

use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// Cumulative counters of one [`Journal`](crate::Journal), for tests and metrics.
#[derive(Debug, Default)]
pub struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    batch_gets: AtomicU64,
    commits: AtomicU64,
    rollbacks: AtomicU64,
    conflicts: AtomicU64,
    blind_commits: AtomicU64,
    planned_commits: AtomicU64,
    documents_found: AtomicU64,
    documents_missing: AtomicU64,
    documents_written: AtomicU64,
    absence_guards: AtomicU64,
    reaped: AtomicU64,
    abandoned: AtomicU64,
    /// Transactions the background reaper is still ending.
    reaping: AtomicU64,
    /// Transaction-opening reads still running as their own task: each may yet hand
    /// the transaction it opened to the reaper (its caller gone).
    opening: AtomicU64,
    /// Woken whenever `reaping` or `opening` falls to zero.
    reaper_idle: Notify,
}

/// A journal's counters as read at one moment. Every RPC the runner sends is a BatchGet, a
/// Commit or a Rollback (the reaper's included), so `rpcs()` is their sum: no other RPC
/// exists in the crate's transaction path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations run.
    pub calls: u64,
    /// Attempts: a first read each, or a blind creation.
    pub attempts: u64,
    /// `BatchGetDocuments` RPCs.
    pub batch_gets: u64,
    /// `Commit` RPCs.
    pub commits: u64,
    /// `Rollback` RPCs (transaction mode only), the background reaper's included.
    pub rollbacks: u64,
    /// Commits refused because another writer changed a document first (a lost
    /// precondition) or held its lock (ABORTED), blind creations refused because a
    /// document existed included: `commits - conflicts` is the commits that landed
    /// (or whose answer was lost).
    pub conflicts: u64,
    /// Blind creations sent (a subset of `commits` and of `attempts`): the commit a
    /// new command's operation tries before any read, in preconditions mode.
    pub blind_commits: u64,
    /// Commits decided from what the journal knows without a read of their own (a
    /// subset of `commits` and of `attempts`, blind creations apart): a transition
    /// `execute` decides from the state its own last commit left, under update-time
    /// preconditions.
    pub planned_commits: u64,
    /// Documents the runner's reads returned (billed as one document read each).
    pub documents_found: u64,
    /// Documents the runner's reads asked for and found absent. Counted apart so that
    /// a bill can be computed either way; see `BENCHMARKS.md` ("Billed operations").
    pub documents_missing: u64,
    /// Documents created or replaced by commits Firestore acknowledged (billed as one
    /// document write each).
    pub documents_written: u64,
    /// Absence guards (deletes with `exists: false`, deleting nothing) in commits
    /// Firestore acknowledged (billed as one document delete each).
    pub absence_guards: u64,
    /// Read-write transactions handed to the background reaper, which rolls them back
    /// there: their call was dropped with them open, their read failed after opening
    /// them, or their rollback was not delivered within the call's bound.
    pub reaped: u64,
    /// Of those, the ones no rollback released (the server releases them when they
    /// expire, about a minute idle): the reaper spent its attempts, had more
    /// transactions in hand than it takes, or its runtime shut down first (see
    /// `Journal::reaped`).
    pub abandoned: u64,
}

impl Stats {
    /// RPCs sent.
    pub fn rpcs(&self) -> u64 {
        self.batch_gets + self.commits + self.rollbacks
    }

    /// Document reads as billed, every document asked for counted once, found or not.
    pub fn billed_reads(&self) -> u64 {
        self.documents_found + self.documents_missing
    }

    /// `self - earlier`, field by field (saturating at zero).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            calls: self.calls.saturating_sub(earlier.calls),
            attempts: self.attempts.saturating_sub(earlier.attempts),
            batch_gets: self.batch_gets.saturating_sub(earlier.batch_gets),
            commits: self.commits.saturating_sub(earlier.commits),
            rollbacks: self.rollbacks.saturating_sub(earlier.rollbacks),
            conflicts: self.conflicts.saturating_sub(earlier.conflicts),
            blind_commits: self.blind_commits.saturating_sub(earlier.blind_commits),
            planned_commits: self.planned_commits.saturating_sub(earlier.planned_commits),
            documents_found: self.documents_found.saturating_sub(earlier.documents_found),
            documents_missing: self
                .documents_missing
                .saturating_sub(earlier.documents_missing),
            documents_written: self
                .documents_written
                .saturating_sub(earlier.documents_written),
            absence_guards: self.absence_guards.saturating_sub(earlier.absence_guards),
            reaped: self.reaped.saturating_sub(earlier.reaped),
            abandoned: self.abandoned.saturating_sub(earlier.abandoned),
        }
    }
}

impl Counters {
    /// Counts one operation run.
    pub(super) fn count_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one to `count`, outside any operation (the reaper's).
    pub(super) fn bump(&self, count: Count) {
        self.counter(count).fetch_add(1, Ordering::Relaxed);
    }

    /// The counter `count` bumps.
    fn counter(&self, count: Count) -> &AtomicU64 {
        match count {
            Count::Attempt => &self.attempts,
            Count::BatchGet => &self.batch_gets,
            Count::Commit => &self.commits,
            Count::Rollback => &self.rollbacks,
            Count::Conflict => &self.conflicts,
            Count::BlindCommit => &self.blind_commits,
            Count::PlannedCommit => &self.planned_commits,
            Count::Found => &self.documents_found,
            Count::Missing => &self.documents_missing,
            Count::Written => &self.documents_written,
            Count::Guard => &self.absence_guards,
            Count::Reaped => &self.reaped,
            Count::Abandoned => &self.abandoned,
        }
    }

    /// The current values.
    pub fn stats(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            calls: get(&self.calls),
            attempts: get(&self.attempts),
            batch_gets: get(&self.batch_gets),
            commits: get(&self.commits),
            rollbacks: get(&self.rollbacks),
            conflicts: get(&self.conflicts),
            blind_commits: get(&self.blind_commits),
            planned_commits: get(&self.planned_commits),
            documents_found: get(&self.documents_found),
            documents_missing: get(&self.documents_missing),
            documents_written: get(&self.documents_written),
            absence_guards: get(&self.absence_guards),
            reaped: get(&self.reaped),
            abandoned: get(&self.abandoned),
        }
    }

    /// Counts one more transaction in the reaper's hands, unless it already holds
    /// `capacity`: whether it was admitted.
    pub(super) fn admit_reap(&self, capacity: u64) -> bool {
        let admit = |running: u64| (running < capacity).then_some(running + 1);
        self.reaping
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, admit)
            .is_ok()
    }

    /// One transaction admitted by [`Counters::admit_reap`] is out of the reaper's
    /// hands.
    pub(super) fn reap_ended(&self) {
        if self.reaping.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.reaper_idle.notify_waiters();
        }
    }

    /// One more transaction-opening read runs as its own task.
    pub(super) fn opening_began(&self) {
        self.opening.fetch_add(1, Ordering::AcqRel);
    }

    /// A transaction-opening read's task ended: its transaction, if any, was handed
    /// over (to its caller, or to the reaper) before this.
    pub(super) fn opening_ended(&self) {
        if self.opening.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.reaper_idle.notify_waiters();
        }
    }

    /// Resolves once the reaper holds no transaction and no transaction-opening read
    /// still runs that could hand it one.
    pub(crate) async fn reaped(&self) {
        loop {
            let idle = self.reaper_idle.notified();
            let mut idle = std::pin::pin!(idle);
            idle.as_mut().enable();
            if self.opening.load(Ordering::Acquire) == 0
                && self.reaping.load(Ordering::Acquire) == 0
            {
                return;
            }
            idle.await;
        }
    }
}

/// Which counter an event bumps.
#[derive(Clone, Copy)]
pub(super) enum Count {
    Attempt,
    BatchGet,
    Commit,
    Rollback,
    Conflict,
    BlindCommit,
    PlannedCommit,
    Found,
    Missing,
    Written,
    Guard,
    Reaped,
    Abandoned,
}

/// The journal's cumulative counters and this operation's own, bumped together.
pub(super) struct Tally<'a> {
    global: &'a Counters,
    local: Counters,
}

impl<'a> Tally<'a> {
    /// A tally adding to `global`, its own counters at zero.
    pub(super) fn new(global: &'a Counters) -> Self {
        Self {
            global,
            local: Counters::default(),
        }
    }

    /// This operation's own counters as they stand.
    pub(super) fn local(&self) -> Stats {
        self.local.stats()
    }

    /// Adds one to `count`.
    pub(super) fn bump(&self, count: Count) {
        self.add(count, 1);
    }

    /// Adds `n` to `count`.
    pub(super) fn add(&self, count: Count, n: u64) {
        if n == 0 {
            return;
        }
        for counters in [self.global, &self.local] {
            counters.counter(count).fetch_add(n, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reaper_admits_up_to_its_capacity_and_again_once_one_ended() {
        let counters = Counters::default();
        assert!(counters.admit_reap(2));
        assert!(counters.admit_reap(2));
        assert!(!counters.admit_reap(2), "a third in hand");
        counters.reap_ended();
        assert!(counters.admit_reap(2), "room again");
    }

    #[tokio::test]
    async fn reaped_resolves_once_the_reaper_holds_nothing() {
        let counters = std::sync::Arc::new(Counters::default());
        counters.reaped().await;
        assert!(counters.admit_reap(8));
        assert!(counters.admit_reap(8));
        let waiting = tokio::spawn({
            let counters = counters.clone();
            async move { counters.reaped().await }
        });
        counters.reap_ended();
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one still in hand");
        counters.opening_began();
        counters.reap_ended();
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "a transaction-opening read still runs"
        );
        counters.opening_ended();
        tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("resolved")
            .expect("joined");
    }
}
