//! What evidence does to a command, decided in one place: the settle program.
//!
//! Every answer a provider gives about an attempt (to the holder's own send, to a
//! lookup by the attempt's key, or given from elsewhere) enters the journal here, as
//! one [`ProviderAnswer`], and this program alone decides what it does to the command:
//!
//! | evidence | what it does |
//! |---|---|
//! | a charge (`Succeeded`) | recorded as the command's success with its envelope: [`Settled::Succeeded`] |
//! | a final refusal (`Declined`) | recorded as its final failure: [`Settled::Declined`] |
//! | a provable absence (`NotFound` from a lookup made under the lease, once the status said it is provable) | the attempt recorded absent, so the next `begin_send` opens the next attempt under a new key: [`Settled::Absent`] |
//! | a `NotFound` that proves nothing, or any answer given as a `NotFound` | nothing written: [`Settled::NotFound`] |
//! | nothing (`Unknown`, `ReplayedUnknown` from a lookup) | nothing written: [`Settled::Unavailable`] |
//! | the sender's own unknown answer | recorded as still open: [`Settled::Open`] (a replayed one is looked up at once instead) |
//! | the sender's own `CustomerMustAct(action)` | recorded as `awaiting_customer`, never re-sent: [`Settled::AwaitingCustomer`] with the action (never stored) |
//!
//! It takes its evidence from a [`Source`]: the holder's own send ([`Source::Sent`]),
//! the provider's lookup by the attempt's key ([`Source::Lookup`]), or an answer given
//! to it with the provider idempotency key the evidence names ([`Source::Given`]): the
//! attempt an answer is about is always proven from the journal's own records (the
//! sender's permit, the stored plan's key of the attempt the status shows, or the
//! attempt whose key, derived from the stored plan, is the key named), never taken
//! from whoever hands the answer over. It runs under a lease its caller holds
//! ([`Settle::under`]: `execute` past the cutoff, or after a replayed unknown, or
//! with its send's answer) or under a lease it takes itself ([`Settle::taking`]: the
//! recovery of a command known by its key hash, and evidence given from outside).
//! `execute`, recovery and recording evidence (`crate::evidence`: a provider's event,
//! found through the key index, is `Given` under a lease the program takes, with the
//! same fence and commit proofs as recovery's) all run it; what comes next adds a
//! source or an answer here, never another path: a backfill of events is `Given` as
//! an event is. An attempt that waits for its customer (`awaiting_customer`) is never
//! looked up: the status read that would look it up reads its object by id instead
//! (`Provider::retrieve`, the `retrieve` step), so the journal's own record, never the
//! caller, decides which question is asked; its answers enter here like a lookup's
//! (the table of `program/retrieve.rs`), and only its `Closed` proves such an attempt
//! over.
//!
//! | step | answer | next |
//! |---|---|---|
//! | `record_send_outcome` (sent) | terminal | [`Settled::Succeeded`] with the envelope sent, or [`Settled::Declined`] |
//! | | ambiguous, the answer a replayed unknown | read the status, then look the key up (below) |
//! | | ambiguous | [`Settled::Open`] |
//! | | awaiting the customer (the answer `CustomerMustAct`) | [`Settled::AwaitingCustomer`] with the answer's action |
//! | | `unavailable`, the call's deadline passed | that error: nothing written, the permit stands (the next call re-sends with the key) |
//! | | refused, the answer a success or decline | `reconcile_send` with it (it is evidence whenever it arrives) |
//! | | `send_cutoff_passed` | read the status, then look the key up |
//! | | awaiting the customer, the send a re-send (its answer the provider's replay) | read the status, then read the object by id (below) |
//! | status (a caller's, its plan checked first) | the attempt awaits its customer, enough lease left | read its object by id (`retrieve`: replayable before the stored cutoff, cancelled from it) |
//! | | the attempt needs reconciliation, enough lease left | look its key up (the stored plan's) |
//! | | too little lease left | [`Settled::LeaseEnding`] |
//! | | anything else | [`Settled::InProgress`] |
//! | status (a job's lookup, by key hash) | not leased | [`Settled::Ended`] |
//! | | no attempt, or the attempt proven absent | [`Settled::NothingOpen`] |
//! | | the plan's account not the job's | [`Settled::OtherAccount`] |
//! | | the attempt awaits its customer, its window (the stored cutoff) not yet passed | read its object by id (never replayable, never cancelled: no lease) |
//! | | the attempt awaits its customer, its window passed | take the lease, then read the status again and the object by id under it (cancelled: the customer abandoned it) |
//! | | the attempt's outcome unknown | look its key up |
//! | status (an answer given: `record_evidence`, the key found through the key index) | the key the open attempt's, awaiting its customer, the answer a `Closed` read by id just now (`Evidence::read_by_id`) | as a retrieve's `Closed` (below) |
//! | | the key the open attempt's | as a lookup's answer (below), never an absence |
//! | | an earlier attempt's, or the current one recorded absent, or any once the command ended: a charge | `record_late_charge` under that attempt ([`Settled::LateCharge`]; the command's own charge: [`Settled::Ended`]) |
//! | | the same, anything else | [`Settled::NothingOpen`], or [`Settled::Ended`] |
//! | | no attempt's of this command | `invalid_input` on `providerIdempotencyKey`, nothing written |
//! | lookup (or the answer given) | a charge or a refusal | under a lease: `reconcile_send`; before any: take the lease |
//! | | `NotFound`, started at or after `absenceProvableFrom` (a job: at the plan's own account, its lookups as durable as the plan's) | under the lease: `reconcile_send`; before any: take the lease, then read the status and look up again under it |
//! | | `NotFound` otherwise | [`Settled::NotFound`] |
//! | | unknown (a lookup's "the customer must act" or "closed" too) | [`Settled::Unavailable`] |
//! | retrieve by id | a charge or a refusal | as a lookup's evidence |
//! | | `Closed` | under a lease: `reconcile_send` (the command's final failure, nothing charged; `absence_not_provable` unless the attempt still waits: [`Settled::Unavailable`]); before any: take the lease |
//! | | `CustomerMustAct(action)` | [`Settled::AwaitingCustomer`] with the action, nothing written |
//! | | unknown, `NotFound` | [`Settled::Unavailable`] |
//! | taking the lease | acquired | as above, under it |
//! | | busy, the evidence the sender's own charge | `record_late_charge` when its attempt moved on ([`Settled::LateCharge`]); [`Settled::InProgress`] for the attempt the running holder settles |
//! | | busy | [`Settled::InProgress`] |
//! | | terminal | [`Settled::Ended`] |
//! | `reconcile_send` | terminal | [`Settled::Succeeded`] with the evidence's envelope, or [`Settled::Declined`] |
//! | | absent (the evidence a `NotFound`) | [`Settled::Absent`] |
//! | | `absence_not_provable` (the evidence a `NotFound`) | [`Settled::NotFound`] |
//! | | the lease lost, the evidence the sender's own answer (once) | take the lease again (`start`), then `reconcile_send` |
//! | | the lease lost | [`Settled::InProgress`] |
//!
//! Every other error ends the program with that error. No state is entered twice but
//! the status read, once before a taken lease and once under it, so every run ends
//! within its table.

mod given;
pub(crate) mod op;
mod open;
mod program;
pub(crate) mod registered;
#[cfg(test)]
mod tests;

pub(crate) use given::Given;
pub(crate) use op::{SettleOp, SettleOutput};
pub(crate) use program::Settle;

use crate::call::{Labelled, Now};
use crate::document::lifecycle::LEASE_SECONDS;
use crate::envelope::ResultEnvelope;
use crate::fence::FenceEpoch;
use crate::lease::{CommandState, LeaseOutput, TerminalOutput};
use crate::sends::customer::CustomerAction;
use crate::sends::provider::ProviderAnswer;
use crate::time::Timestamp;
use std::time::Duration;

/// Lease time kept back after a provider call's deadline, to record its answer.
pub(crate) const SEND_MARGIN: Duration = Duration::from_secs(10);
/// The shortest provider call worth starting under a held lease.
pub(crate) const MIN_SEND_DEADLINE: Duration = Duration::from_secs(1);
/// How long a job's lookup may take (it is made before any lease is taken).
pub const LOOKUP_DEADLINE: Duration = Duration::from_secs(30);
/// A whole lease: the most a lease heard can have left.
const LEASE: Duration = Duration::from_secs(LEASE_SECONDS.unsigned_abs());

/// Where the settle program's evidence comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The provider's answer to the holder's own send of `attempt` (a held lease
    /// only): recorded as the sender's outcome first, and, refused, offered as
    /// evidence.
    Sent {
        /// The attempt sent.
        attempt: crate::sends::AttemptNumber,
        /// What the provider answered (a `NotFound` is taken as `Unknown`).
        answer: ProviderAnswer,
        /// Whether the send was a re-send of the key by a later holder: its answer is
        /// then the provider's replay of the first one.
        resend: bool,
    },
    /// The provider's lookup of the open attempt's key, derived from the stored plan.
    Lookup,
    /// An answer given to the program (a retrieve by id, an event, a backfill) with
    /// the provider idempotency key the evidence names: the attempt it is about is the
    /// one whose key, derived from the stored plan, that is (never the giver's word).
    /// The open attempt's: evidence like a lookup's, never an absence; an earlier
    /// attempt's, or any once the command ended: a charge recorded late, anything
    /// else nothing written; no attempt's: refused (the `given` module's table). The
    /// entry those sources land on: recording evidence (`crate::evidence`) gives its
    /// answers here. `Debug` never shows the key.
    Given(Given),
}

/// Whether `error` says the lease a write was made under is no longer held.
pub(crate) fn lease_lost(error: &crate::error::JournalError) -> bool {
    use crate::error::JournalError as E;
    matches!(error, E::LeaseExpired | E::StaleFence | E::LeaseNotHeld)
}

/// A lease held: its fence, its expiry, and the reading it was heard at.
///
/// What is left of it is read on both of the trusted clock's readings: until its
/// expiry on the trusted time, and, on the steady time, what was left when it was
/// heard (never more than a whole lease) less the time since. A duration that bounds
/// work under it (a provider's deadline, a lookup's) is the lesser
/// ([`Held::remaining`]): a wall clock stepped back after the lease was heard
/// lengthens none of them, and a request leaves within the lease less
/// [`SEND_MARGIN`] of the permit, in real time. A `Retry-After` is the greater
/// ([`Held::retry_after`]): it promises no takeover before the lease has run out on
/// either reading, whichever the next caller's clock agrees with. A lease is heard at
/// the reading its start (or acquisition) captured, as its expiry was set, never
/// later: a step back of the trusted clock while it is taken lengthens nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The fence every write under it presents.
    pub(crate) fence: FenceEpoch,
    /// When it expires (exclusive).
    pub(crate) expires_at: Timestamp,
    /// When it was heard: the reading its remaining time is measured from on the
    /// steady time.
    pub(crate) heard: Now,
}

impl Held {
    /// The lease `lease` answers, when it is one, heard at `heard`.
    pub(crate) fn of(lease: LeaseOutput, heard: Now) -> Option<Self> {
        match lease {
            LeaseOutput::Acquired {
                fence_epoch,
                lease_expires_at,
            } => Some(Self {
                fence: fence_epoch,
                expires_at: lease_expires_at,
                heard,
            }),
            LeaseOutput::Busy | LeaseOutput::Succeeded | LeaseOutput::FailedFinal => None,
        }
    }

    /// The lease's time left at `now` on the trusted clock's two readings: until its
    /// expiry on its time; on its steady time, what was left when the lease was heard
    /// (at most a lease) less the time since.
    fn left(self, now: Now) -> (Duration, Duration) {
        let trusted = now.at.until(self.expires_at);
        let then = self.heard.at.until(self.expires_at).min(LEASE);
        let since = now.steady.saturating_sub(self.heard.steady);
        (trusted, then.saturating_sub(since))
    }

    /// The time work under the lease may take at `now`: the lesser of its readings.
    pub(crate) fn remaining(self, now: Now) -> Duration {
        let (trusted, steady) = self.left(now);
        trusted.min(steady)
    }

    /// How long a provider call started at `now` may take: the lease's remaining
    /// time less [`SEND_MARGIN`]; `None` when that is less than [`MIN_SEND_DEADLINE`].
    pub(crate) fn deadline(self, now: Now) -> Option<Duration> {
        let deadline = self.remaining(now).saturating_sub(SEND_MARGIN);
        (deadline >= MIN_SEND_DEADLINE).then_some(deadline)
    }

    /// When the next holder may take the lease over (what a `Retry-After` carries):
    /// the greater of its readings at `now`, so that it has run out on both once it
    /// has passed, in whole seconds, rounded up, at least one. The one place a wait is
    /// rounded.
    pub(crate) fn retry_after(self, now: Now) -> Duration {
        let (trusted, steady) = self.left(now);
        let remaining = trusted.max(steady);
        let seconds = remaining.as_secs() + u64::from(remaining.subsec_nanos() > 0);
        Duration::from_secs(seconds.max(1))
    }
}

/// Why the settle program offers a success as a late charge (`record_late_charge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Late {
    /// The command ended so, as the lease taken to record it (or the status read of
    /// an answer given) answered.
    Ended(TerminalOutput),
    /// The reconciliation refused it (`terminal_conflict`, `attempt_mismatch`).
    Refused,
    /// Another holder's lease runs: late only if its attempt moved on; a charge for
    /// the attempt that holder settles is its own (`attempt_mismatch`: in progress).
    WhileRunning,
    /// The answer given names an attempt recorded absent, or one a later attempt
    /// followed (as the status read showed).
    MovedOn,
}

/// What the settle program did with its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The command's success is recorded (or was, with this same evidence): the
    /// envelope the evidence carried, if any.
    Succeeded(Option<ResultEnvelope>),
    /// The command's final failure is recorded.
    Declined,
    /// The attempt is recorded absent: the next `begin_send` opens the next attempt.
    Absent,
    /// The sender's unknown answer is recorded: the attempt stays open, to be re-sent
    /// with the same key before its cutoff.
    Open,
    /// The sender's answer "the customer must act" is recorded (`awaiting_customer`):
    /// the attempt waits for the customer, never re-sent; the action goes to the
    /// caller, never stored.
    AwaitingCustomer(CustomerAction),
    /// Nothing written: the provider holds nothing for the key, and that proves no
    /// absence (yet, at this account, or from this source).
    NotFound,
    /// Nothing written: the provider could not tell.
    Unavailable,
    /// Nothing written: another holder's lease runs, or this one was lost.
    InProgress,
    /// Nothing written: the command is not leased (it ended, or was never leased).
    Ended(CommandState),
    /// Nothing written: no attempt is open (none was sent, or the last one was proven
    /// absent), or the answer given is no charge and names an attempt no longer open.
    NothingOpen,
    /// Nothing asked or written: the plan sends to another provider account than the
    /// one the job declared.
    OtherAccount,
    /// Nothing asked or written: too little of the held lease is left for a provider
    /// call.
    LeaseEnding,
    /// The success the evidence carried is recorded as a late charge (a charge its
    /// command ended, or its attempt moved on, without): `Some`, the command had ended
    /// so, as the lease taken to record it (or the status read of an answer given)
    /// answered; `None`, the reconciliation refused it (`terminal_conflict`,
    /// `attempt_mismatch`), or the answer given names an attempt that moved on.
    LateCharge(Option<TerminalOutput>),
}

impl Settled {
    /// Whether a program that took its own lease gives it up before it answers this
    /// (`release_lease`): every ending that leaves the command leased, unsettled, to
    /// its next holder. Not a settled or ended command, nor a lease another holder
    /// runs or that this one lost: nothing of the program's to give up.
    pub(crate) fn leaves_lease(&self) -> bool {
        !matches!(
            self,
            Self::Succeeded(_)
                | Self::Declined
                | Self::LateCharge(_)
                | Self::Ended(_)
                | Self::InProgress
        )
    }
}

impl Labelled for Settled {
    fn label(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::Declined => "declined",
            Self::Absent => "absent",
            Self::Open => "open",
            Self::AwaitingCustomer(_) => "awaiting_customer",
            Self::NotFound => "not_found",
            Self::Unavailable => "unavailable",
            Self::InProgress => "in_progress",
            Self::Ended(_) => "ended",
            Self::NothingOpen => "nothing_open",
            Self::OtherAccount => "other_account",
            Self::LeaseEnding => "lease_ending",
            Self::LateCharge(_) => "late_charge",
        }
    }
}
