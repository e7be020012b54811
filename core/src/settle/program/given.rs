//! The settle program's step for an answer given: the status read shows which attempt
//! the key the evidence names is about (the table in [`crate::settle::given`]), and
//! the answer is weighed for the open attempt, recorded late for an attempt that can
//! no longer take it, or writes nothing. A `Closed` read by id just now, of an attempt
//! that waits for its customer, is weighed as a retrieve's `Closed`; any other given
//! `Closed` as a lookup's (nothing written).

use super::{Holder, Settle, Then, done, out_of_turn};
use crate::call::Now;
use crate::error::JournalError;
use crate::sends::AttemptState;
use crate::sends::provider::ProviderAnswer;
use crate::settle::given::{Given, Named, named};
use crate::settle::op::SettleOutput;
use crate::settle::open::{caller_open, job_open};
use crate::settle::{Held, Settled};

impl Settle {
    /// The status read answered, under `under` (or before any lease), with `given` in
    /// hand: the attempt its key names decides, asking the provider nothing. A job
    /// declaring another account than the plan's is refused first, as for a lookup.
    pub(super) fn given(
        &mut self,
        under: Option<Held>,
        given: Given,
        output: SettleOutput,
        now: Now,
    ) -> Then {
        let (attempt, open) = match (&mut self.holder, output) {
            (Holder::Caller { identity, plan, .. }, SettleOutput::Status(status)) => {
                match named(&given, identity, Some(plan.operation()), &status)? {
                    Named::Open(attempt) => (attempt, caller_open(status, false)),
                    other => return self.unopened(other, given.answer, now),
                }
            }
            (
                Holder::Job {
                    account, identity, ..
                },
                SettleOutput::Registered(registered),
            ) => {
                *identity = Some(registered.identity.clone());
                let elsewhere = match (account.as_ref(), &registered.plan) {
                    (Some(account), Some(plan)) => plan.is_account(account) == Some(false),
                    _ => false,
                };
                if elsewhere {
                    return done(Settled::OtherAccount);
                }
                let operation = registered.plan.as_ref().map(|plan| &plan.operation);
                match named(&given, &registered.identity, operation, &registered.status)? {
                    Named::Open(attempt) => (attempt, job_open(*registered, account.as_ref())?),
                    other => return self.unopened(other, given.answer, now),
                }
            }
            _ => return Err(out_of_turn()),
        };
        let open = match open {
            Ok(open) => open,
            Err(settled) => return done(settled),
        };
        if open.attempt != attempt {
            return Err(JournalError::internal(
                "settle: the attempt named is not the one open",
            ));
        }
        // The object's own final state, read by id just now, of an attempt that waits
        // for its customer: weighed as a retrieve's `Closed` (the final failure,
        // nothing charged; `reconcile_send` proves the attempt still waits).
        if open.state == AttemptState::AwaitingCustomer && given.closed_by_id(now.at) {
            return self.retrieved(under, attempt, given.answer, now);
        }
        // An answer given proves no absence: only a lookup made under the lease does.
        self.weigh(under, attempt, false, given.answer, now)
    }

    /// An answer given about an attempt that is not open: a charge recorded late, or
    /// nothing.
    fn unopened(&mut self, named: Named, answer: ProviderAnswer, now: Now) -> Then {
        match named {
            Named::Late(attempt, late) => self.late(attempt, &answer, late, now),
            Named::Done(settled) => done(settled),
            Named::Open(_) => Err(out_of_turn()),
        }
    }
}
