//! Recovery: settling a command whose send outcome is unknown from the provider's
//! evidence, by a job that knows the command by its key hash alone.
//!
//! The job holds no raw command, no caller and no plan parameters, so it can never
//! send: it only asks the provider what it holds for the attempt's key and records
//! that evidence under the same rules as `reconcile_send`. What it needs of the
//! command it reads from the journal's own records (`RegisteredIdentity`: the
//! registration root holds every field of the derived identity, and the same batch
//! get answers the send status).
//!
//! **The recovery holder.** The job takes the command's lease like any holder: by
//! `acquire_lease`, which takes an expired lease over with the next fence (event
//! `lease_taken_over`) and answers busy while another holder's lease runs. Its
//! lease-owner fingerprint is the recovery owner of the key hash and a fresh random
//! lease id, framed under its own domain: it never equals a client's, and two jobs
//! never share one. Its fence excludes every other
//! holder (the client whose lease it took over, another job, a client that comes back)
//! exactly as it does between clients: every write of the send layer is checked
//! against the lifecycle's holder and fence in the commit that makes it. Its audit
//! trail is that takeover, then the `provider_send_reconciled_succeeded` or
//! `_declined` send event and the terminal transition in one commit, or the
//! `provider_send_reconciled_absent` event alone: a recovery never writes an `opened`
//! or `resent` event.
//!
//! **Nothing written without evidence.** The job reads the send status and asks the
//! provider before it takes any lease: a lookup that fails, or a "not found" that
//! proves nothing, leaves the command exactly as it was (and listed). Only evidence
//! takes the lease, and is recorded right after the takeover, by `reconcile_send`,
//! which checks every rule again in the commit that records it.
//!
//! **Absence only at the proven account.** A "not found" lets the client's next call
//! open attempt n + 1 under a new key, so it is recorded only when it proves the
//! absence, as `execute` records it: the lookup started once the attempt's absence was
//! provable (`absenceProvableFrom`: no lease that permitted the send runs, the settle
//! window has passed, the provider still keeps the key), and it asked the account the
//! plan sends to. The job holds no plan, so it declares the account its provider
//! adapter asks ([`ProviderAccount`](crate::sends::ProviderAccount)), and the plan
//! document keeps that account's command-bound fingerprint (`accountFingerprint`,
//! plan documents of version 3): only
//! where the two agree is the job's "not found" an absence. And as `execute` proves
//! an absence under its own lease, so does the job: its first lookup is made before
//! any lease (a re-send by a returning client may still be under way then), so a "not
//! found" only takes the lease; under it, where no permit can be given, the job reads
//! the status and looks the key up once more, and only that second "not found" is
//! recorded. A job that declares no
//! account, or a plan bound before version 3, proves no absence ("not found", left
//! listed, for the client, which holds the plan, to prove). A job that declares
//! another account than the plan's asks nothing and writes nothing (`other_account`):
//! it would find nothing for a key that holds a charge. A charge or a decline found
//! needs no such proof: the key derives from the command key hash, so no other
//! command's request carries it, and an account that never received the key holds no
//! object for it.
//!
//! The job runs the settle program (`crate::settle`) from a lookup, under a lease it
//! takes itself: its table is the settle program's, a job's rows (the status read by
//! key hash, the lookup before the lease, the takeover, the confirming read and
//! lookup under it). What it settles is told as a [`Recovered`]:
//!
//! | settled | recovered |
//! |---|---|
//! | succeeded, declined, absent | `Succeeded`, `Declined`, `Absent` |
//! | not found (proving nothing, or refused at the commit) | `NotFound` (left listed) |
//! | unavailable | `LookupUnavailable` (left listed) |
//! | in progress (busy, or the lease lost) | `InProgress` |
//! | ended (not leased, or terminal when the lease is taken) | `AlreadySettled` |
//! | nothing open | `NothingToLookUp` |
//! | other account | `OtherAccount` |
//! | late charge (a charge found for a command that ended, or whose attempt moved on, without it) | `LateCharge` (never dropped: listed for a person, a refund) |
//!
//! Every other error ends the command's recovery with that error.

pub(crate) mod checkpoint;
pub(crate) mod owner;
pub(crate) mod program;
pub(crate) mod schedule;
#[cfg(test)]
mod tests;

pub use crate::settle::LOOKUP_DEADLINE;
pub use checkpoint::{Checkpoint, Recorded};
pub use schedule::{Lookups, Stop, Verdict};

use serde::Serialize;

/// How the recovery of one command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovered {
    /// The provider held a successful charge for the key: recorded as the command's
    /// success with its result, which every later call replays.
    Succeeded,
    /// The provider held a final refusal for the key: the command failed for good.
    Declined,
    /// Someone settled it first (a returning client or another job).
    AlreadySettled,
    /// Another holder's lease runs: it is being worked on.
    InProgress,
    /// No attempt is open (nothing was sent, or the last attempt was proven absent):
    /// only the client, which holds the parameters, can go on.
    NothingToLookUp,
    /// The provider holds nothing for the key, and that proves nothing yet (the job
    /// declared no account or the plan keeps none, the lookup started before the
    /// absence was provable, or the provider may have forgotten the key): nothing
    /// written, left listed.
    NotFound,
    /// The lookup failed or was inconclusive: nothing written, left listed.
    LookupUnavailable,
    /// The provider holds nothing for the key at the plan's own account, from the
    /// instant the absence was provable: the attempt is recorded absent, and the
    /// client's next call opens the next attempt under a new key (left listed, for
    /// that call).
    Absent,
    /// The command's plan sends to another provider account than the one the job
    /// declared: nothing asked, nothing written, left listed (a job configured for
    /// another account).
    OtherAccount,
    /// The provider held a successful charge for the key, but the command had ended,
    /// or its attempt moved on, without it: recorded as a late charge
    /// (`lateCharges`), listed for a person (a refund).
    LateCharge,
    /// The attempt waits for its customer, and the provider's object read by id says
    /// the customer may still act: nothing written, left listed (never re-sent, never
    /// a new key).
    AwaitingCustomer,
}

impl Recovered {
    /// The label of the `outcome` field and of the metrics: the serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Declined => "declined",
            Self::AlreadySettled => "already_settled",
            Self::InProgress => "in_progress",
            Self::NothingToLookUp => "nothing_to_look_up",
            Self::NotFound => "not_found",
            Self::LookupUnavailable => "lookup_unavailable",
            Self::Absent => "absent",
            Self::OtherAccount => "other_account",
            Self::LateCharge => "late_charge",
            Self::AwaitingCustomer => "awaiting_customer",
        }
    }

    /// Every outcome, in declaration order.
    pub const ALL: [Self; 11] = [
        Self::Succeeded,
        Self::Declined,
        Self::AlreadySettled,
        Self::InProgress,
        Self::NothingToLookUp,
        Self::NotFound,
        Self::LookupUnavailable,
        Self::Absent,
        Self::OtherAccount,
        Self::LateCharge,
        Self::AwaitingCustomer,
    ];

    /// Whether the command left the pending list by this recovery (or before it):
    /// `false` for the outcomes that leave it listed.
    pub fn settled(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Declined | Self::AlreadySettled
        )
    }
}
