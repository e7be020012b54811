//! The settle program's steps for the sender's own answer: `record_send_outcome` of
//! what the provider answered the holder's send, and what that record answered (a
//! terminal outcome, an open attempt, a wait for the customer, or a look-up at once
//! when the key can no longer tell).

use super::{Holder, OnLost, Settle, State, Then, done};
use crate::call::{Next, Now, Run};
use crate::error::JournalError;
use crate::lease::TerminalOutput;
use crate::sends::provider::ProviderAnswer;
use crate::sends::record::{Mode, Record};
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{AttemptNumber, SendOutcomeOutput};
use crate::settle::op::SettleOp;
use crate::settle::{Held, Settled, lease_lost};

impl Settle {
    /// `record_send_outcome` of the sender's own `answer` on `attempt`.
    pub(super) fn record(
        &mut self,
        lease: Held,
        attempt: AttemptNumber,
        answer: ProviderAnswer,
        resend: bool,
        now: Now,
    ) -> Then {
        let Holder::Caller { plan, .. } = &self.holder else {
            return Err(JournalError::internal("settle: a job records no send"));
        };
        let plan = Some(plan.clone());
        match Record::prepare(
            self.call(now.at)?,
            lease.fence,
            attempt,
            &answer,
            plan,
            Mode::Outcome,
        ) {
            Ok(op) => self.go(
                State::Recording {
                    lease,
                    attempt,
                    answer,
                    resend,
                },
                Next::Run(Run::op(SettleOp::Record(Box::new(op)))),
            ),
            Err(error) => self.recorded(lease, attempt, answer, resend, Err(error), now),
        }
    }

    /// What recording the sender's own answer answered.
    pub(super) fn recorded(
        &mut self,
        lease: Held,
        attempt: AttemptNumber,
        answer: ProviderAnswer,
        resend: bool,
        result: Result<SendOutcomeOutput, JournalError>,
        now: Now,
    ) -> Then {
        match result {
            Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) => {
                done(Settled::Succeeded(answer.envelope().cloned()))
            }
            Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)) => done(Settled::Declined),
            // The key can no longer tell (a replay of its stored unknown answer, or an
            // answer the provider documents as indeterminate): look it up now, under
            // the same lease, instead of waiting for a re-send or the cutoff.
            Ok(SendOutcomeOutput::Ambiguous { .. })
                if answer == ProviderAnswer::Indeterminate
                    || (answer == ProviderAnswer::ReplayedUnknown
                        && !reverted(Rule::ReplayedLookedUp)) =>
            {
                self.read(Some(lease), None, now)
            }
            Ok(SendOutcomeOutput::Ambiguous { .. }) => done(Settled::Open),
            // A re-send's answer is the provider's replay of the key's first answer
            // (Stripe replays the stored 200: the object's state then, not now): the
            // object is read by id at once, under the same lease, never re-sent.
            Ok(SendOutcomeOutput::AwaitingCustomer { .. }) if resend => {
                self.read(Some(lease), None, now)
            }
            Ok(SendOutcomeOutput::AwaitingCustomer { .. }) => match answer {
                ProviderAnswer::CustomerMustAct(action) => done(Settled::AwaitingCustomer(action)),
                _ => Err(JournalError::internal("settle: a wait for no customer")),
            },
            Ok(SendOutcomeOutput::Absent { .. }) => Err(JournalError::internal(
                "settle: a send outcome recorded absence",
            )),
            // The call's deadline passed before the answer was recorded: it starts
            // nothing more. The permit stands: the next call re-sends under the same
            // key and records what the provider answers it.
            Err(error @ JournalError::Unavailable { deadline: true, .. }) => Err(error),
            // The answer is evidence whenever it arrives: where recording it as the
            // sender's outcome is refused, offer it to reconciliation.
            Err(_) if answer.evidence().is_some() => {
                self.reconcile(lease, attempt, answer, OnLost::TakeAgain, now)
            }
            Err(JournalError::SendCutoffPassed) => self.read(Some(lease), None, now),
            Err(error) if lease_lost(&error) => done(Settled::InProgress),
            Err(error) => Err(error),
        }
    }
}
