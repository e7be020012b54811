//! The settle program as a [`Program`] of the call machine: its states, each carrying
//! what the next step needs, and the transition from each answer (the table in
//! [`crate::settle`]).

use super::given::Given;
use super::op::{SettleOp, SettleOutput};
use super::open::{Open, caller_open, job_open};
use super::registered::RegisteredIdentity;
use super::{Held, LOOKUP_DEADLINE, Late, Settled, Source, lease_lost};
use crate::call::{Answered, Next, Now, Program, Run};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::{Acquire, CommandCall, LeaseCall, LeaseOutput, Release, TerminalOutput};
use crate::sends::load::first_read;
use crate::sends::provider::{LookupRequest, ProviderAnswer};
use crate::sends::record::{Mode, Record};
use crate::sends::reverted::{Rule, reverted};
use crate::sends::status::SendStatusRead;
use crate::sends::{AttemptNumber, AttemptState, ProviderAccount, ProviderPlan, SendOutcomeOutput};
use crate::start::Start;
use crate::time::Timestamp;
use std::time::Duration;

mod given;
mod late;
mod retrieve;
mod sent;

/// Who settles, and what it knows of the command.
#[derive(Debug, Clone)]
enum Holder {
    /// A caller that holds the command's identity, its own lease owner and the plan
    /// it sends (`execute`): its plan is checked before any other rule.
    Caller {
        identity: CommandIdentity,
        owner: Digest,
        plan: ProviderPlan,
    },
    /// A job that knows the command by its key hash alone, and the provider account
    /// its lookups ask (recovery): the identity is read from the registration, the
    /// plan is the bound one.
    Job {
        hash: Digest,
        owner: Digest,
        account: Option<ProviderAccount>,
        identity: Option<CommandIdentity>,
    },
}

/// What a lost lease does to evidence not yet recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnLost {
    /// Take the lease once more and record it: the sender's own answer, which no one
    /// else holds.
    TakeAgain,
    /// Leave it: anyone can find it again (or this is the lease taken again).
    LeaveIt,
}

/// Where the program stands between steps.
#[derive(Debug, Clone)]
enum State {
    /// Nothing asked yet: the source decides the first step, under `under` (or
    /// before any lease).
    New { source: Source, under: Option<Held> },
    /// `record_send_outcome` of the sender's own answer is in flight.
    Recording {
        lease: Held,
        attempt: AttemptNumber,
        answer: ProviderAnswer,
        resend: bool,
    },
    /// The status read is in flight, under `under` (or before any lease); `given`:
    /// the answer given to the program, when it asks the provider nothing.
    Reading {
        under: Option<Held>,
        given: Option<Given>,
    },
    /// The provider's read by id of an attempt awaiting the customer is in flight.
    Retrieving {
        under: Option<Held>,
        attempt: AttemptNumber,
    },
    /// The provider's lookup is in flight; its "not found" proves the absence only
    /// when `proves_absence`.
    LookingUp {
        under: Option<Held>,
        attempt: AttemptNumber,
        proves_absence: bool,
    },
    /// The lease is being taken to record `evidence`, its start (or acquisition) made
    /// at the reading `at`.
    Taking {
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        at: Now,
    },
    /// `reconcile_send` of `evidence` is in flight.
    Reconciling {
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        on_lost: OnLost,
    },
    /// `record_late_charge` of a success is in flight, for the reason `late`.
    LateCharging { late: Late },
    /// The program answered.
    Done,
}

/// The settle program of one command (the table in [`crate::settle`]).
#[derive(Debug, Clone)]
pub(crate) struct Settle {
    holder: Holder,
    state: State,
    /// The lease the program took itself to record evidence (a job's, or a caller's
    /// taken again), once taken.
    taken: Option<Held>,
}

fn out_of_turn() -> JournalError {
    JournalError::internal("settle: an answer out of turn")
}

/// What the program does then: its next step, or its answer.
type Then = Result<Next<SettleOp, Settled>, JournalError>;

fn done(settled: Settled) -> Then {
    Ok(Next::Done(settled))
}

impl Settle {
    /// Settles from `source` under the lease `lease` the caller holds on the command
    /// of `identity` as `owner`, sending `plan`.
    pub(crate) fn under(
        identity: CommandIdentity,
        owner: Digest,
        plan: ProviderPlan,
        lease: Held,
        source: Source,
    ) -> Self {
        Self {
            holder: Holder::Caller {
                identity,
                owner,
                plan,
            },
            state: State::New {
                source,
                under: Some(lease),
            },
            taken: None,
        }
    }

    /// Settles from `source` the command of key hash `hash`, under a lease it takes
    /// itself as `owner` once it holds evidence, its lookups asking `account` (`None`:
    /// undeclared, so no "not found" proves an absence). A `Sent` source is refused:
    /// a job never sends.
    pub(crate) fn taking(
        hash: Digest,
        owner: Digest,
        account: Option<ProviderAccount>,
        source: Source,
    ) -> Self {
        Self {
            holder: Holder::Job {
                hash,
                owner,
                account,
                identity: None,
            },
            state: State::New {
                source,
                under: None,
            },
            taken: None,
        }
    }

    /// The lease the program took itself, if it took one.
    pub(crate) fn lease_taken(&self) -> Option<Held> {
        self.taken
    }

    /// The release, at `now`, of the lease the program took itself, if it took one:
    /// what a job runs when it ends without settling the command (`release_lease`),
    /// so that the next holder need not wait the lease out.
    pub(crate) fn release_taken(&self, now: Timestamp) -> Option<Release> {
        let lease = self.taken?;
        let call = self.call(now).ok()?;
        Some(Release::new(call, lease.fence))
    }

    /// The lease call of this holder at `now`.
    fn call(&self, now: Timestamp) -> Result<LeaseCall, JournalError> {
        match &self.holder {
            Holder::Caller {
                identity, owner, ..
            } => Ok(LeaseCall::new(identity.clone(), owner.clone(), now)),
            Holder::Job {
                owner, identity, ..
            } => {
                let identity = identity.clone().ok_or(JournalError::internal(
                    "settle: a step before the first read",
                ))?;
                Ok(LeaseCall::new(identity, owner.clone(), now))
            }
        }
    }

    /// Goes to `state` and asks for `next`.
    fn go(&mut self, state: State, next: Next<SettleOp, Settled>) -> Then {
        self.state = state;
        Ok(next)
    }

    /// The first step, from `source`.
    fn begin(&mut self, source: Source, under: Option<Held>, now: Now) -> Then {
        match (source, under) {
            (
                Source::Sent {
                    attempt,
                    answer,
                    resend,
                },
                Some(lease),
            ) => {
                // A send cannot prove an absence: its "not found" tells nothing.
                let answer = match answer {
                    ProviderAnswer::NotFound => ProviderAnswer::Unknown,
                    other => other,
                };
                self.record(lease, attempt, answer, resend, now)
            }
            (Source::Sent { .. }, None) => Err(JournalError::internal(
                "settle: a send's answer without a held lease",
            )),
            (Source::Lookup, under) => self.read(under, None, now),
            (Source::Given(given), under) => self.read(under, Some(given), now),
        }
    }

    /// The status read, under `under` (or before any lease), to learn the open
    /// attempt; `given`: the answer given, asking the provider nothing.
    fn read(&mut self, under: Option<Held>, given: Option<Given>, now: Now) -> Then {
        let run = match &self.holder {
            // A call of its own, as `send_status` is: what the call knows is neither
            // planned from nor replaced by it.
            Holder::Caller { identity, plan, .. } => {
                let read =
                    SendStatusRead::new(CommandCall::new(identity.clone(), now.at)).for_plan(plan);
                let mut run = Run::op(SettleOp::Status(read));
                run.keep = false;
                run
            }
            Holder::Job { hash, .. } => {
                let read = RegisteredIdentity::new(hash.clone(), now.at);
                Run::op(SettleOp::Registered(read)).tool()
            }
        };
        self.go(State::Reading { under, given }, Next::Run(run))
    }

    /// The status read answered: look the open attempt's key up, or weigh the answer
    /// given.
    fn status(
        &mut self,
        under: Option<Held>,
        given: Option<Given>,
        output: SettleOutput,
        now: Now,
    ) -> Then {
        if let Some(given) = given {
            return self.given(under, given, output, now);
        }
        let open = match (&mut self.holder, output) {
            (Holder::Caller { .. }, SettleOutput::Status(status)) => caller_open(status, true),
            (
                Holder::Job {
                    account, identity, ..
                },
                SettleOutput::Registered(registered),
            ) => {
                *identity = Some(registered.identity.clone());
                job_open(*registered, account.as_ref())?
            }
            _ => return Err(out_of_turn()),
        };
        let open = match open {
            Ok(open) => open,
            Err(settled) => return done(settled),
        };
        // The lookup starts after this instant: its "not found" proves the absence
        // only if the absence was provable already.
        let proves_absence =
            open.provable_from.is_some_and(|from| now.at >= from) || reverted(Rule::SenderSettled);
        let deadline = match under {
            Some(lease) if matches!(self.holder, Holder::Caller { .. }) => {
                match lease.deadline(now) {
                    Some(deadline) => deadline,
                    None => return done(Settled::LeaseEnding),
                }
            }
            _ => LOOKUP_DEADLINE,
        };
        // An attempt that waits for its customer is read by id, never looked up. Past
        // the customer's window a job cancels the object, a mutation at the provider
        // made only under a lease: it takes the lease first (no evidence in hand, so
        // it reads the status again under it).
        if open.state == AttemptState::AwaitingCustomer {
            let job = matches!(self.holder, Holder::Job { .. });
            if job && under.is_none() && now.at >= open.act_by {
                return self.take(open.attempt, ProviderAnswer::NotFound, now);
            }
            return self.retrieve(under, open, deadline, now);
        }
        self.ask(under, open, proves_absence, deadline)
    }

    /// The provider's lookup of `open`'s key.
    fn ask(
        &mut self,
        under: Option<Held>,
        open: Open,
        proves_absence: bool,
        deadline: Duration,
    ) -> Then {
        self.go(
            State::LookingUp {
                under,
                attempt: open.attempt,
                proves_absence,
            },
            Next::Lookup(LookupRequest {
                key: open.key,
                deadline,
            }),
        )
    }

    /// Weighs `answer` about `attempt`: evidence is recorded under the lease (taken
    /// first when there is none), a "not found" only when it proves the absence.
    fn weigh(
        &mut self,
        under: Option<Held>,
        attempt: AttemptNumber,
        proves_absence: bool,
        answer: ProviderAnswer,
        now: Now,
    ) -> Then {
        let evidence = match answer {
            ProviderAnswer::NotFound if proves_absence => ProviderAnswer::NotFound,
            // Looked up before the absence was provable (the charge may not be
            // visible yet), or never provable: nothing is written.
            ProviderAnswer::NotFound => return done(Settled::NotFound),
            // "The customer must act" or a closed object, from a lookup, tells no
            // charge, refusal or absence: only a retrieve by id weighs them.
            ProviderAnswer::Unknown
            | ProviderAnswer::ReplayedUnknown
            | ProviderAnswer::Indeterminate
            | ProviderAnswer::CustomerMustAct(_)
            | ProviderAnswer::Closed => {
                return done(Settled::Unavailable);
            }
            found => found,
        };
        match under {
            Some(lease) => self.reconcile(lease, attempt, evidence, OnLost::LeaveIt, now),
            // Only evidence takes the lease.
            None => self.take(attempt, evidence, now),
        }
    }

    /// Takes the lease to record `evidence`: a job's takeover, or a caller's `start`
    /// once more (reading anew, keeping nothing it reads).
    fn take(&mut self, attempt: AttemptNumber, evidence: ProviderAnswer, now: Now) -> Then {
        let run = match &self.holder {
            Holder::Job { .. } => {
                let call = self.call(now.at)?;
                let paths = first_read(call.command());
                // A job acquires only an expired lease: a takeover, which needs the
                // lock in transaction mode.
                let op = Acquire::new(call).expecting_takeover();
                Run::op(SettleOp::Acquire(op)).reading(paths)
            }
            Holder::Caller {
                identity, owner, ..
            } => {
                let start = Start::new(identity.clone(), owner.clone(), now.at);
                let mut run = Run::op(SettleOp::Start(start)).fresh();
                run.keep = false;
                run
            }
        };
        self.go(
            State::Taking {
                attempt,
                evidence,
                at: now,
            },
            Next::Run(run),
        )
    }

    /// The lease taken at the reading `at` to record `evidence` answered `lease`: it
    /// is heard at `at`, as its expiry was set.
    fn taken(
        &mut self,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        lease: LeaseOutput,
        at: Now,
        now: Now,
    ) -> Then {
        match lease {
            LeaseOutput::Busy => self.busy(attempt, evidence, now),
            LeaseOutput::Succeeded => self.ended(attempt, evidence, TerminalOutput::Succeeded, now),
            LeaseOutput::FailedFinal => {
                self.ended(attempt, evidence, TerminalOutput::FailedFinal, now)
            }
            LeaseOutput::Acquired { .. } => {
                let lease = Held::of(lease, at).ok_or(out_of_turn())?;
                self.taken = Some(lease);
                match evidence {
                    // Looked up before the lease, a "not found" may have missed a
                    // re-send made since: confirm it under the lease, where no permit
                    // can be given. (A job past a waiting customer's window takes the
                    // lease so, too: to read the object by id under it, and cancel.)
                    ProviderAnswer::NotFound => self.read(Some(lease), None, now),
                    evidence => self.reconcile(lease, attempt, evidence, OnLost::LeaveIt, now),
                }
            }
        }
    }

    /// `reconcile_send` of `evidence` on `attempt` under `lease`.
    fn reconcile(
        &mut self,
        lease: Held,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        on_lost: OnLost,
        now: Now,
    ) -> Then {
        let plan = match &self.holder {
            Holder::Caller { plan, .. } => Some(plan.clone()),
            // Under the plan the command bound.
            Holder::Job { .. } => None,
        };
        let prepared = Record::prepare(
            self.call(now.at)?,
            lease.fence,
            attempt,
            &evidence,
            plan,
            Mode::Reconciliation,
        );
        match prepared {
            Ok(op) => self.go(
                State::Reconciling {
                    attempt,
                    evidence,
                    on_lost,
                },
                Next::Run(Run::op(SettleOp::Record(Box::new(op)))),
            ),
            Err(error) => self.reconciled(attempt, evidence, on_lost, Err(error), now),
        }
    }

    /// What reconciling `evidence` answered.
    fn reconciled(
        &mut self,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        on_lost: OnLost,
        result: Result<SendOutcomeOutput, JournalError>,
        now: Now,
    ) -> Then {
        let absence = evidence == ProviderAnswer::NotFound;
        match result {
            Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) => {
                done(Settled::Succeeded(evidence.envelope().cloned()))
            }
            Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)) => done(Settled::Declined),
            Ok(SendOutcomeOutput::Absent { .. }) if absence => done(Settled::Absent),
            Ok(
                SendOutcomeOutput::Absent { .. }
                | SendOutcomeOutput::Ambiguous { .. }
                | SendOutcomeOutput::AwaitingCustomer { .. },
            ) => Err(JournalError::internal(
                "settle: evidence recorded as another outcome",
            )),
            // The lease ran out before the answer only this holder has was recorded:
            // take a lease once more and record it then.
            Err(error) if lease_lost(&error) && on_lost == OnLost::TakeAgain => {
                self.take(attempt, evidence, now)
            }
            // Provable when the lookup started, not any more at the commit (a later
            // permit, or the provider's retention ran out meanwhile): nothing written.
            Err(JournalError::AbsenceNotProvable { .. }) if absence => done(Settled::NotFound),
            // A closed object proves only an attempt that still waits for its customer.
            Err(JournalError::AbsenceNotProvable { .. }) if evidence == ProviderAnswer::Closed => {
                done(Settled::Unavailable)
            }
            Err(error) if lease_lost(&error) => done(Settled::InProgress),
            // The command ended, or its attempt moved on, without the charge offered:
            // recorded as a late charge, never dropped.
            Err(JournalError::TerminalConflict | JournalError::AttemptMismatch)
                if evidence.charged() =>
            {
                self.late(attempt, &evidence, Late::Refused, now)
            }
            Err(error) => Err(error),
        }
    }
}

impl Program for Settle {
    type Op = SettleOp;
    type Output = Settled;

    fn remembers(&self) -> bool {
        true
    }

    fn next(&mut self, last: Answered<SettleOp>, now: Now) -> Then {
        let recorded = |ran: Result<SettleOutput, JournalError>| match ran? {
            SettleOutput::Recorded(output) => Ok(output),
            _ => Err(out_of_turn()),
        };
        match (std::mem::replace(&mut self.state, State::Done), last) {
            (State::New { source, under }, Answered::Nothing) => self.begin(source, under, now),
            (
                State::Recording {
                    lease,
                    attempt,
                    answer,
                    resend,
                },
                Answered::Ran(ran),
            ) => self.recorded(lease, attempt, answer, resend, recorded(ran), now),
            (State::Reading { under, given }, Answered::Ran(ran)) => {
                self.status(under, given, ran?, now)
            }
            (
                State::LookingUp {
                    under,
                    attempt,
                    proves_absence,
                },
                Answered::LookedUp(answer),
            ) => self.weigh(under, attempt, proves_absence, answer, now),
            (State::Retrieving { under, attempt }, Answered::Retrieved(answer)) => {
                self.retrieved(under, attempt, answer, now)
            }
            (
                State::Taking {
                    attempt,
                    evidence,
                    at,
                },
                Answered::Ran(ran),
            ) => match ran? {
                SettleOutput::Leased(lease) => self.taken(attempt, evidence, lease, at, now),
                _ => Err(out_of_turn()),
            },
            (
                State::Reconciling {
                    attempt,
                    evidence,
                    on_lost,
                },
                Answered::Ran(ran),
            ) => self.reconciled(attempt, evidence, on_lost, recorded(ran), now),
            (State::LateCharging { late }, Answered::Ran(ran)) => self.charged_late(late, ran),
            _ => Err(out_of_turn()),
        }
    }
}
