//! Which attempt a status read shows open for the settle program to settle, and from
//! when a lookup of it proves an absence: a caller's rule and a job's, both read from
//! the journal's own records.

use super::Settled;
use super::registered::Registered;
use crate::error::JournalError;
use crate::lease::CommandState;
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{AttemptNumber, AttemptState, CommandStatus, ProviderAccount};
use crate::time::Timestamp;

/// The attempt a status read shows open, and what a lookup of it may prove.
pub(super) struct Open {
    pub(super) attempt: AttemptNumber,
    pub(super) key: String,
    /// Its stored state: one that waits for the customer is read by id.
    pub(super) state: AttemptState,
    /// Its stored cutoff.
    pub(super) send_cutoff_at: Timestamp,
    /// The end of its customer's window (`act_by` of the stored plan and attempt).
    pub(super) act_by: Timestamp,
    /// From when its "not found" proves an absence, for this holder; `None`: never.
    pub(super) provable_from: Option<Timestamp>,
}

/// The open attempt a caller's status shows, if it may settle it now: a lookup
/// only once the attempt needs reconciliation (before, the holder re-sends), an
/// answer given whenever its outcome is unknown.
pub(super) fn caller_open(status: CommandStatus, asks: bool) -> Result<Open, Settled> {
    match status.send {
        Some(send) if send.needs_reconciliation || (!asks && send.state.outcome_unknown()) => {
            Ok(Open {
                attempt: send.attempt,
                key: send.key,
                state: send.state,
                send_cutoff_at: send.send_cutoff_at,
                act_by: send.act_by,
                provable_from: send.absence_provable_from,
            })
        }
        _ => Err(Settled::InProgress),
    }
}

/// The open attempt a job's read shows: the command leased, an attempt whose
/// outcome is unknown, and the plan's account the job's own. Its "not found"
/// proves an absence only at that account, and only when the job's lookups see
/// as far back as the plan's.
pub(super) fn job_open(
    registered: Registered,
    account: Option<&ProviderAccount>,
) -> Result<Result<Open, Settled>, JournalError> {
    let Registered { status, plan, .. } = registered;
    if status.command.state != CommandState::Leased {
        return Ok(Err(Settled::Ended(status.command.state)));
    }
    let Some(send) = status.send else {
        return Ok(Err(Settled::NothingOpen));
    };
    match send.state {
        AttemptState::Ambiguous if reverted(Rule::RecoveryLooksUpAmbiguous) => {
            return Ok(Err(Settled::NothingOpen));
        }
        AttemptState::Sending
        | AttemptState::Ambiguous
        | AttemptState::ReplayedUnknown
        | AttemptState::Indeterminate
        | AttemptState::AwaitingCustomer => {}
        AttemptState::Absent => return Ok(Err(Settled::NothingOpen)),
        AttemptState::Succeeded | AttemptState::Declined => {
            return Err(JournalError::internal(
                "settle: a closed attempt under a leased command",
            ));
        }
    }
    let (at_account, covered) = match (account, &plan) {
        (Some(account), Some(plan)) => {
            (plan.is_account(account), account.lookup_covers(plan.lookup))
        }
        _ => (None, false),
    };
    if at_account == Some(false) {
        return Ok(Err(Settled::OtherAccount));
    }
    let proves = at_account == Some(true) && covered;
    Ok(Ok(Open {
        attempt: send.attempt,
        key: send.key,
        state: send.state,
        send_cutoff_at: send.send_cutoff_at,
        act_by: send.act_by,
        provable_from: send.absence_provable_from.filter(|_| proves),
    }))
}
