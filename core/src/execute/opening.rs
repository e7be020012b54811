//! The opening of an `execute` call: its `start` and, when that lease lets it send,
//! the `begin_send` after it, decided once ([`after_start`]) and committed with the
//! start. In preconditions mode the two are one blind commit (`crate::known::chain`,
//! asked through [`Opening::permit`]); in transaction mode one transaction over one
//! read ([`Opening`] as a transition). Either way the call goes on from the permit it
//! was answered, never deciding the opening again.
//!
//! Two transitions decided as one, over one snapshot, for one commit: the first over
//! what was read, the second (built from the first's answer) over the state the
//! first's writes leave. The second never sees a document the first did not leave: a
//! path the first writes reads as written, its commit times dropped (the commit will
//! change them); every other path reads as the snapshot holds it. The writes merge
//! into one commit: a path both write is written once, with the second's fields, as a
//! creation when the first created it; a second creation of a path the first wrote,
//! or an assertion about it, is refused (`internal`): no transition of the journal
//! does either.

use super::Execution;
use crate::call::Now;
use crate::error::JournalError;
use crate::lease::{LeaseCall, LeaseOutput};
use crate::sends::begin::{BeginSend, first_index};
use crate::sends::load::first_read;
use crate::sends::plan::ProviderPlan;
use crate::settle::Held;
use crate::start::{Start, StartOutput};
use crate::transaction::{Decision, OperationName, Snapshot, Transition, Write};
use std::time::Duration;

/// What follows a start's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterStart {
    /// `begin_send` under this lease.
    Permit(Held),
    /// The command succeeded: read its stored result.
    Fetch,
    /// The call's answer.
    Answer(Execution),
}

/// What follows a start that answered `lease`, heard at `heard` (the reading the
/// start captured, as the lease's expiry was set), at `now`: a permit under the lease
/// while a send can still start under it, the answer otherwise.
pub(crate) fn after_start(lease: LeaseOutput, heard: Now, now: Now) -> AfterStart {
    match lease {
        LeaseOutput::Acquired {
            fence_epoch,
            lease_expires_at,
        } => {
            let held = Held {
                fence: fence_epoch,
                expires_at: lease_expires_at,
                heard,
            };
            match held.deadline(now) {
                Some(_) => AfterStart::Permit(held),
                // Too little lease left to send: retry once it has run out.
                None => AfterStart::Answer(Execution::RetryLater {
                    after: held.retry_after(now),
                }),
            }
        }
        LeaseOutput::Busy => AfterStart::Answer(Execution::InProgress),
        LeaseOutput::Succeeded => AfterStart::Fetch,
        LeaseOutput::FailedFinal => AfterStart::Answer(Execution::Declined),
    }
}

/// `start`, then the `begin_send` that follows its lease, as one transition: it reads
/// what `begin_send` reads (which covers `start`'s reads and the stored result) and
/// commits both or neither.
#[derive(Debug, Clone)]
pub struct Opening {
    start: Start,
    call: LeaseCall,
    plan: ProviderPlan,
}

impl Opening {
    /// The opening of a call by the holder of `call`, with its `start` and `plan`.
    pub(crate) fn new(start: Start, call: LeaseCall, plan: ProviderPlan) -> Self {
        Self { start, call, plan }
    }

    /// The `begin_send` that follows `started` at the start's captured time, if any:
    /// the lease heard at that time and asked nothing later, so only the lease left
    /// then counts, whatever the steady reading.
    pub(crate) fn permit(&self, started: &StartOutput) -> Option<BeginSend> {
        let captured = Now {
            at: self.call.now(),
            steady: Duration::ZERO,
            elapsed: Duration::ZERO,
        };
        match after_start(started.lease, captured, captured) {
            AfterStart::Permit(lease) => Some(BeginSend::new(
                self.call.clone(),
                lease.fence,
                self.plan.clone(),
            )),
            AfterStart::Fetch | AfterStart::Answer(_) => None,
        }
    }

    /// The start alone, on the opening's read set.
    pub(crate) fn start(&self) -> Start {
        self.start.clone()
    }

    /// Everything the opening reads: `begin_send`'s first read, attempt 1's key index
    /// included.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut paths = first_read(self.call.command());
        paths.push(first_index(self.call.identity(), &self.plan));
        paths
    }
}

impl Transition for Opening {
    type Output = (StartOutput, Second<BeginSend>);

    fn name(&self) -> OperationName {
        OperationName::Start
    }

    fn paths(&self) -> Vec<String> {
        Opening::paths(self)
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Self::Output> {
        decide_then(&self.start, snapshot, |started| self.permit(started))
    }
}

/// What the second transition answered, when the first's answer asked for one.
pub(crate) type Second<B> = Option<Result<<B as Transition>::Output, JournalError>>;

/// Decides `first` over `snapshot`, then the transition `then` builds from its answer
/// (none: the first alone) over the state the first's writes leave; one decision of
/// both. A refusal of the first is the whole refusal; a refusal of the second is its
/// answer beside the first's, whose writes still commit. A follow-up read of either
/// is the whole decision's.
fn decide_then<A, B, F>(first: &A, snapshot: &Snapshot, then: F) -> Decision<(A::Output, Second<B>)>
where
    A: Transition,
    B: Transition,
    F: FnOnce(&A::Output) -> Option<B>,
{
    let (writes, output) = match first.decide(snapshot) {
        Decision::Read(paths) => return Decision::Read(paths),
        Decision::Reject(error) => return Decision::Reject(error),
        Decision::Observe(output) => (Vec::new(), output),
        Decision::Mutate(writes, output) => (writes, output),
    };
    let Some(second) = then(&output) else {
        return finish(writes, (output, None));
    };
    let after = overlay(snapshot, &writes);
    match second.decide(&after) {
        Decision::Read(paths) => Decision::Read(paths),
        Decision::Reject(error) => finish(writes, (output, Some(Err(error)))),
        Decision::Observe(answer) => finish(writes, (output, Some(Ok(answer)))),
        Decision::Mutate(more, answer) => match merge(writes, more) {
            Ok(writes) => finish(writes, (output, Some(Ok(answer)))),
            Err(error) => Decision::Reject(error),
        },
    }
}

fn finish<O>(writes: Vec<Write>, output: O) -> Decision<O> {
    if writes.is_empty() {
        Decision::Observe(output)
    } else {
        Decision::Mutate(writes, output)
    }
}

/// `snapshot` with `writes` applied: written documents read as written, without
/// commit times.
fn overlay(snapshot: &Snapshot, writes: &[Write]) -> Snapshot {
    let mut after = snapshot.clone();
    for write in writes {
        match write {
            Write::Create { path, fields } | Write::Replace { path, fields } => {
                after.docs.insert(path.clone(), Some(fields.clone()));
                after.stamps.remove(path);
            }
            Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {}
        }
    }
    after
}

/// The first's writes followed by the second's, one write per path.
fn merge(mut writes: Vec<Write>, more: Vec<Write>) -> Result<Vec<Write>, JournalError> {
    for write in more {
        let Some(index) = writes.iter().position(|w| w.path() == write.path()) else {
            writes.push(write);
            continue;
        };
        let created = matches!(writes[index], Write::Create { .. });
        writes[index] = match (write, created) {
            (Write::Replace { path, fields }, true) => Write::Create { path, fields },
            (Write::Replace { path, fields }, false) => Write::Replace { path, fields },
            _ => {
                return Err(JournalError::internal(
                    "a chained transition created or asserted a document the first wrote",
                ));
            }
        };
    }
    Ok(writes)
}
