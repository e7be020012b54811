//! How an `execute` call that holds a lease ends without a terminal outcome
//! (`RetryLater`, `PendingReconciliation`, `CustomerMustAct`): it releases the lease
//! first (`release_lease`, one more fenced transaction: a read and a commit), so that
//! the command's next caller (the customer's return, a provider's event, the recovery
//! job) takes it over at once rather than after its 60 s. A call whose send went
//! unanswered (`Unknown`: a timeout, a dropped connection) releases it too: its
//! request may still be on its way to the provider until the lease would have ended,
//! so `begin_send` permits no other holder to re-send the key before `lastSentAt +
//! 60 s` (`resend_not_yet`), while a provider's event or the recovery job may record
//! the key's answer at once. The call's answer does not
//! depend on the release: a lease lost meanwhile, a refused or contended commit, or
//! any error but a corrupt journal leaves the answer as it was (the lease then simply
//! expires); a corrupt document is `journal_corrupt`, as everywhere.

use super::{ExecuteOp, ExecuteOutput, ExecuteProgram, State, Then};
use crate::call::{Next, Now, Run};
use crate::error::JournalError;
use crate::execute::Execution;
use crate::fence::FenceEpoch;
use crate::lease::Release;
use crate::settle::Held;
use crate::time::Timestamp;
use std::time::Duration;

/// What a call's release needs to know of the call.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Leaving {
    /// The fence of a lease the settle program took again (its first one lost): the
    /// one the release gives up.
    pub(super) retaken: Option<FenceEpoch>,
}

impl ExecuteProgram {
    /// Releases `lease`, then answers `execution`. `RetryLater.after` stays the
    /// lease's remaining time (conservative: a takeover may come sooner).
    pub(super) fn leave(&mut self, lease: Held, execution: Execution, now: Now) -> Then {
        let fence = self.leaving.retaken.unwrap_or(lease.fence);
        let op = Release::new(self.call(now.at), fence);
        let mut run = Run::op(ExecuteOp::Release(op)).fresh();
        run.keep = false;
        self.go(State::Releasing { execution }, Next::Run(run))
    }

    /// Releases `lease` after `begin_send` refused a re-send of the key until `from`
    /// (the last sender's request may still be on its way): retry once it cannot,
    /// the time left rounded up to whole seconds.
    pub(super) fn leave_until(&mut self, lease: Held, from: Timestamp, now: Now) -> Then {
        let left = u64::try_from(from.micros().saturating_sub(now.at.micros())).unwrap_or(0);
        let after = Duration::from_secs(left.div_ceil(1_000_000).max(1));
        self.leave(lease, Execution::RetryLater { after }, now)
    }

    /// The release answered `ran`: the call answers `execution` whatever it was,
    /// unless the journal was found corrupt.
    pub(super) fn left(
        &mut self,
        execution: Execution,
        ran: Result<ExecuteOutput, JournalError>,
    ) -> Then {
        match ran {
            Ok(ExecuteOutput::Released(_)) => self.done(execution),
            Ok(_) => Err(JournalError::internal("execute: an answer out of turn")),
            Err(error @ JournalError::JournalCorrupt { .. }) => Err(error),
            Err(_) => self.done(execution),
        }
    }
}
