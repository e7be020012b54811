//! Every read-write transaction the journal opens is ended, whatever happens to the
//! call: [`Open`] owns one from the moment its id exists (in the read task that
//! received it, before any caller hears of it), a call rolls it back with
//! [`roll_back`] (retried on retryable codes within [`ROLLBACK_BUDGET`]), and one
//! that is dropped unended (its caller gone, its read failed after announcing it, or
//! its rollback undelivered within the bound) goes to the background reaper, which
//! keeps trying for about a minute ([`REAPER_ATTEMPTS`]), logs what became of it and
//! counts it (`command_journal_stranded_transactions_total`). The reaper holds at
//! most [`REAPER_CAPACITY`] transactions at once and its tasks stop with the runtime:
//! what it cannot take or finish is abandoned to the server's expiry, logged and
//! counted, and `Journal::reaped` waits for it to be done.
//!
//! The emulator, like Firestore, keeps an abandoned transaction's locks until it
//! expires (about a minute without activity), and every writer of the documents it
//! read waits on them meanwhile: the lease holder's own commits first.

use super::counters::{Count, Counters, Tally};
use super::policy::RetryPolicy;
use super::retry::{self, Failure, Rpc};
use crate::connection::RawClient;
use crate::metrics;
use command_journal_core::error::GrpcCode;
use gcloud_sdk::google::firestore::v1::RollbackRequest;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rollback attempts a call makes before handing the transaction to the reaper.
pub(super) const ROLLBACK_ATTEMPTS: u32 = 3;
/// The longest a call spends rolling back one transaction, its backoff included: past
/// its deadline, a call lasts at most this much longer for a rollback.
pub(super) const ROLLBACK_BUDGET: Duration = Duration::from_secs(1);
/// Rollback attempts the reaper makes for one transaction: with its backoff (from
/// [`REAPER_FIRST_BACKOFF`], doubling to [`REAPER_BACKOFF_CAP`], ½ to 1½ times that),
/// about a minute, past which the server has expired an idle transaction anyway.
pub(super) const REAPER_ATTEMPTS: u32 = 12;
/// The reaper's first backoff base, after its first attempt (made at once).
const REAPER_FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The reaper's largest backoff base.
const REAPER_BACKOFF_CAP: Duration = Duration::from_secs(10);
/// The longest one of the reaper's rollbacks may take.
const REAPER_RPC_TIMEOUT: Duration = Duration::from_secs(10);
/// The most transactions the reaper of one journal (and its clones) holds at once: a
/// flood of them (rollbacks failing for a minute while reads still open
/// transactions) stays bounded in tasks, memory and rollbacks sent; past it a
/// transaction is abandoned to the server's expiry, logged and counted.
const REAPER_CAPACITY: u64 = 1024;

/// What ends the transactions of one journal: its client, its database, its counters.
#[derive(Clone)]
pub(super) struct Reaper {
    raw: RawClient,
    database: String,
    counters: Arc<Counters>,
}

/// A read-write transaction the journal opened and has not ended. [`Open::ended`]
/// forgets it (committed, or rolled back); dropped otherwise, it is handed to the
/// reaper, so that no path (a caller gone, a failed read, an undelivered rollback)
/// leaves it holding its locks.
pub(super) struct Open {
    id: Option<Vec<u8>>,
    reaper: Reaper,
}

/// Why a transaction reached the reaper.
#[derive(Clone, Copy)]
enum Cause {
    /// Its rollback was not delivered within the call's bound.
    Undelivered,
    /// It was dropped unended: its caller gone, or its read failed after opening it.
    Dropped,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Self::Undelivered => "rollback_undelivered",
            Self::Dropped => "dropped_open",
        }
    }
}

/// How one rollback attempt ended.
enum Rolled {
    /// The server released it.
    Released,
    /// The server refused it for good (the transaction expired, committed, unknown,
    /// or the credentials refused): nothing more to do.
    Refused(GrpcCode),
    /// Worth another attempt.
    Retry(GrpcCode),
}

impl Reaper {
    /// The reaper of the journal on `raw` and `database`, counting in `counters`.
    pub(super) fn new(raw: RawClient, database: String, counters: Arc<Counters>) -> Self {
        Self {
            raw,
            database,
            counters,
        }
    }

    /// Counts a transaction-opening read's task as running until the guard drops, so
    /// that `Journal::reaped` also waits for a transaction such a task may still hand
    /// over. Drop the guard after the task has handed its transaction on.
    pub(super) fn opening(&self) -> Opening {
        self.counters.opening_began();
        Opening {
            counters: Arc::clone(&self.counters),
        }
    }

    /// Takes ownership of transaction `id`, the moment it exists.
    pub(super) fn own(&self, id: Vec<u8>) -> Open {
        Open {
            id: Some(id),
            reaper: self.clone(),
        }
    }

    /// One rollback of `id`, bounded by `timeout`.
    async fn attempt(&self, id: &[u8], timeout: Duration) -> Rolled {
        let request = RollbackRequest {
            database: self.database.clone(),
            transaction: id.to_vec(),
            request_options: None,
        };
        let answered = tokio::time::timeout(timeout, self.raw.clone().rollback(request)).await;
        let rolled = match answered {
            Ok(Ok(_)) => Rolled::Released,
            Ok(Err(status)) => {
                let code = crate::grpc::grpc_code(status.code());
                match retry::classify(Rpc::Rollback, super::Concurrency::Preconditions, &status) {
                    Failure::Retry { .. } => Rolled::Retry(code),
                    Failure::Final(_) | Failure::Deadline => Rolled::Refused(code),
                }
            }
            Err(_) => Rolled::Retry(GrpcCode::DeadlineExceeded),
        };
        let code = match rolled {
            Rolled::Released => GrpcCode::Ok,
            Rolled::Refused(code) | Rolled::Retry(code) => code,
        };
        metrics::rpc(metrics::RPC_ROLLBACK, code);
        rolled
    }

    /// Hands `id` to the background: rolled back there, at once and then with
    /// backoff, until released, refused or [`REAPER_ATTEMPTS`] are spent. Abandoned to
    /// the server's expiry when there is no runtime to run it on or the reaper holds
    /// [`REAPER_CAPACITY`] already; if the runtime shuts down before the reaper is
    /// done with it, likewise (its task dropped, [`Reaping`] counts it).
    fn hand_off(&self, id: Vec<u8>, cause: Cause) {
        self.counters.bump(Count::Reaped);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime left to run it on (the process is ending).
            abandoned(&self.counters, cause, "transaction abandoned: no runtime");
            return;
        };
        if !self.counters.admit_reap(REAPER_CAPACITY) {
            abandoned(
                &self.counters,
                cause,
                "transaction abandoned: the reaper is full",
            );
            return;
        }
        tracing::info!(cause = cause.as_str(), "transaction handed to the reaper");
        let reaping = Reaping {
            counters: Arc::clone(&self.counters),
            cause,
            done: false,
        };
        let reaper = self.clone();
        runtime.spawn(async move {
            let mut reaping = reaping;
            reaper.reap(id).await;
            reaping.done = true;
        });
    }

    /// The reaper's tries for one transaction.
    async fn reap(self, id: Vec<u8>) {
        let mut base = REAPER_FIRST_BACKOFF;
        for attempt in 1..=REAPER_ATTEMPTS {
            if attempt > 1 {
                let micros = u64::try_from(base.as_micros()).unwrap_or(u64::MAX);
                let wait = fastrand::u64(micros / 2..=micros.saturating_mul(3) / 2);
                tokio::time::sleep(Duration::from_micros(wait)).await;
                base = base.saturating_mul(2).min(REAPER_BACKOFF_CAP);
            }
            self.counters.bump(Count::Rollback);
            match self.attempt(&id, REAPER_RPC_TIMEOUT).await {
                Rolled::Released => {
                    tracing::info!(attempt, "the reaper released a transaction");
                    metrics::stranded(metrics::STRANDED_RELEASED);
                    return;
                }
                Rolled::Refused(code) => {
                    tracing::info!(
                        attempt,
                        code = code.as_str(),
                        "the reaper's transaction was already gone"
                    );
                    metrics::stranded(metrics::STRANDED_GONE);
                    return;
                }
                Rolled::Retry(code) => {
                    tracing::debug!(
                        attempt,
                        code = code.as_str(),
                        "the reaper's rollback failed"
                    );
                }
            }
        }
        tracing::warn!(
            attempts = REAPER_ATTEMPTS,
            "the reaper gave up a transaction: the server releases it when it expires"
        );
        self.counters.bump(Count::Abandoned);
        metrics::stranded(metrics::STRANDED_ABANDONED);
    }
}

/// A transaction abandoned to the server's expiry before any rollback released it
/// (`why` says how): logged (warning, no id), counted in `Stats::abandoned` and the
/// metric.
fn abandoned(counters: &Counters, cause: Cause, why: &'static str) {
    tracing::warn!(cause = cause.as_str(), "{why}");
    counters.bump(Count::Abandoned);
    metrics::stranded(metrics::STRANDED_ABANDONED);
}

/// One transaction in the reaper's hands, for as long as its task runs: dropped, it
/// leaves them (`Journal::reaped` waits for none left); dropped before the reaper was
/// done with it (the runtime shut down and dropped its task), it is abandoned.
struct Reaping {
    counters: Arc<Counters>,
    cause: Cause,
    done: bool,
}

impl Drop for Reaping {
    fn drop(&mut self) {
        if !self.done {
            let why = "transaction abandoned: the runtime shut down before the reaper was done";
            abandoned(&self.counters, self.cause, why);
        }
        self.counters.reap_ended();
    }
}

/// A transaction-opening read's task, counted while it runs ([`Reaper::opening`]).
pub(super) struct Opening {
    counters: Arc<Counters>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.counters.opening_ended();
    }
}

impl Open {
    /// The transaction's id.
    pub(super) fn id(&self) -> &[u8] {
        self.id.as_deref().unwrap_or_default()
    }

    /// The transaction is ended (committed, or rolled back): nothing to release.
    pub(super) fn ended(mut self) {
        self.id = None;
    }

    /// Hands the transaction to the reaper now, for `cause`.
    fn hand_off(mut self, cause: Cause) {
        if let Some(id) = self.id.take() {
            self.reaper.hand_off(id, cause);
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.reaper.hand_off(id, Cause::Dropped);
        }
    }
}

/// Rolls `open` back within the call's bound: up to [`ROLLBACK_ATTEMPTS`] attempts in
/// [`ROLLBACK_BUDGET`], each after `policy`'s backoff and within its RPC timeout,
/// retried on the codes an operation retries. Answered (released, or refused for good:
/// the transaction is gone), it is ended; undelivered, it goes to the reaper. A call
/// dropped while this runs drops `open` with it: the reaper takes it then.
pub(super) async fn roll_back(open: Open, tally: &Tally<'_>, policy: &RetryPolicy) {
    let began = Instant::now();
    for attempt in 1..=ROLLBACK_ATTEMPTS {
        let left = ROLLBACK_BUDGET.saturating_sub(began.elapsed());
        if left.is_zero() {
            break;
        }
        tally.bump(Count::Rollback);
        match open
            .reaper
            .attempt(open.id(), left.min(policy.rpc_timeout))
            .await
        {
            Rolled::Released => return open.ended(),
            Rolled::Refused(code) => {
                tracing::debug!(
                    code = code.as_str(),
                    "rollback refused: the transaction is gone"
                );
                return open.ended();
            }
            Rolled::Retry(code) => {
                tracing::debug!(attempt, code = code.as_str(), "rollback failed");
                let wait = retry::backoff(
                    attempt,
                    command_journal_core::tools::call::RetryCause::Transient,
                    super::Concurrency::Preconditions,
                    policy,
                );
                let left = ROLLBACK_BUDGET.saturating_sub(began.elapsed());
                if attempt == ROLLBACK_ATTEMPTS || wait >= left {
                    break;
                }
                tokio::time::sleep(wait).await;
            }
        }
    }
    open.hand_off(Cause::Undelivered);
}
