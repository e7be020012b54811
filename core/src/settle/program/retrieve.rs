//! The settle program's steps for an attempt that waits for its customer: the
//! provider's object read by id (`Provider::retrieve`), never a lookup's search, and
//! what its answer does.
//!
//! | retrieve answers | what it does |
//! |---|---|
//! | a charge (`Succeeded`) or a refusal (`Declined`) | recorded as evidence under the lease (taken first by a job) |
//! | `Closed`: the object's final state, nothing charged | recorded under the lease as the command's final failure (`reconcile_send` refuses it, `absence_not_provable`, unless the attempt still waits) |
//! | `CustomerMustAct(action)` | nothing written: [`Settled::AwaitingCustomer`] with the action |
//! | anything else (`Unknown`, a `NotFound`) | nothing written: [`Settled::Unavailable`] |
//!
//! The request says what the journal's records allow: `replayable` (the key may be
//! re-sent to learn the object's id) before the attempt's stored cutoff and only for a
//! caller that holds the plan's parameters; `cancel` once the customer's window has
//! passed, only under a lease (a cancel is a mutation at the provider): a caller's, or
//! the one a recovery job takes for it, so that a payment its customer abandoned ends
//! by itself. The window ends at `act_by`, the earlier of the attempt's stored cutoff
//! and the end of the stored plan's customer window (the same instant every send of
//! the key carried). `end_refusal` under any lease: the
//! customer's return after a failed challenge ends the refused object (declined),
//! where a job's read without a lease leaves the customer free to retry on it.

use super::{Holder, OnLost, Settle, State, Then, done};
use crate::call::{Next, Now};
use crate::error::JournalError;
use crate::sends::AttemptNumber;
use crate::sends::provider::{ProviderAnswer, RetrieveRequest};
use crate::sends::reverted::{Rule, reverted};
use crate::settle::open::Open;
use crate::settle::{Held, Settled};
use std::time::Duration;

impl Settle {
    /// Reads `open`'s object by id, within `deadline`, under `under` (or before any
    /// lease, a job's before the customer's window ended: it never cancels).
    pub(super) fn retrieve(
        &mut self,
        under: Option<Held>,
        open: Open,
        deadline: Duration,
        now: Now,
    ) -> Then {
        let act_by = open.act_by;
        let (parameters, caller) = match &self.holder {
            Holder::Caller { plan, .. } => (
                serde_json::from_str(plan.canonical_parameters())
                    .map_err(|_| JournalError::internal("settle: plan parameters"))?,
                true,
            ),
            Holder::Job { .. } => (serde_json::Value::Null, false),
        };
        let request = RetrieveRequest {
            key: open.key,
            parameters,
            attempt: open.attempt,
            replayable: caller
                && (now.at < open.send_cutoff_at || reverted(Rule::ReplayBeforeCutoff)),
            cancel: under.is_some() && now.at >= act_by,
            end_refusal: under.is_some(),
            act_by,
            deadline,
        };
        self.go(
            State::Retrieving {
                under,
                attempt: open.attempt,
            },
            Next::Retrieve(request),
        )
    }

    /// Weighs what the read by id of `attempt`'s object answered.
    pub(super) fn retrieved(
        &mut self,
        under: Option<Held>,
        attempt: AttemptNumber,
        answer: ProviderAnswer,
        now: Now,
    ) -> Then {
        let evidence = match answer {
            ProviderAnswer::CustomerMustAct(action) => {
                return done(Settled::AwaitingCustomer(action));
            }
            ProviderAnswer::NotFound
            | ProviderAnswer::Unknown
            | ProviderAnswer::ReplayedUnknown
            | ProviderAnswer::Indeterminate => return done(Settled::Unavailable),
            found @ (ProviderAnswer::Succeeded(_)
            | ProviderAnswer::SucceededWithReference(_)
            | ProviderAnswer::Declined
            | ProviderAnswer::Closed) => found,
        };
        match under {
            Some(lease) => self.reconcile(lease, attempt, evidence, OnLost::LeaveIt, now),
            None => self.take(attempt, evidence, now),
        }
    }
}
