//! What every send decision shares: the holder and lease checks, and the writes of
//! one send mutation (the send document and its one new event), optionally joined
//! with B2B's own terminal transition in the same commit.

use super::attempt::{self, SendAttempt};
use super::event::{self, SendEvent, SendEventType};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::lifecycle::Lifecycle;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::{LeaseCall, Terminal, TerminalOutput, TerminalRequest};
use crate::time::Timestamp;
use crate::transaction::{Decision, Halt, Snapshot, Transition, Write};

/// The lifecycle, if `owner` holds it at `fence`: `lease_not_held` without a lifecycle
/// or for another holder, `stale_fence` for another fence.
pub(crate) fn held<'a>(
    lifecycle: Option<&'a Lifecycle>,
    owner: &Digest,
    fence: FenceEpoch,
) -> Result<&'a Lifecycle, Halt> {
    let lifecycle = lifecycle.ok_or(Halt::Reject(JournalError::LeaseNotHeld))?;
    if &lifecycle.lease_owner_fingerprint != owner {
        return Err(Halt::Reject(JournalError::LeaseNotHeld));
    }
    if lifecycle.fence_epoch != fence {
        return Err(Halt::Reject(JournalError::StaleFence));
    }
    Ok(lifecycle)
}

/// A mutation needs the lease active at `now`: `lease_expired` once released,
/// `clock_regression` before the last transition, `lease_expired` at or after the
/// expiry.
pub(crate) fn active(lifecycle: &Lifecycle, now: Timestamp) -> Result<(), Halt> {
    // A released lease is expired from its release on, whatever the caller's clock.
    if lifecycle.released {
        return Err(Halt::Reject(JournalError::LeaseExpired));
    }
    if now < lifecycle.updated_at {
        return Err(Halt::Reject(JournalError::ClockRegression));
    }
    if now >= lifecycle.lease_expires_at {
        return Err(Halt::Reject(JournalError::LeaseExpired));
    }
    Ok(())
}

/// The revision after `before` (1 for the first send), bounded.
pub(crate) fn next_revision(before: Option<&SendAttempt>) -> Result<i64, Halt> {
    let next = before.map_or(1, |a| a.send_revision + 1);
    if next > MAX_REVISION {
        return Err(Halt::Reject(JournalError::RevisionOverflow));
    }
    Ok(next)
}

/// The send document `after` (created when there was none `before`) and its event.
pub(crate) fn record(
    hash: &Digest,
    before: Option<&SendAttempt>,
    after: &SendAttempt,
    event_type: SendEventType,
) -> Vec<Write> {
    let path = attempt::path(hash);
    let fields = after.encode();
    let document = match before {
        None => Write::Create { path, fields },
        Some(_) => Write::Replace { path, fields },
    };
    let event = SendEvent {
        command_key_hash: hash.clone(),
        send_revision: after.send_revision,
        event_type,
        attempt: after.attempt,
        from_state: before.map(|b| b.state),
        fence_epoch: after.updated_by(),
        send_cutoff_at: after.send_cutoff_at,
        occurred_at: after.updated_at(),
    };
    vec![
        document,
        Write::Create {
            path: event::path(hash, after.send_revision),
            fields: event.encode(),
        },
    ]
}

/// B2B's terminal transition for the holder in `call` at `fence`, decided over the
/// same snapshot: the lifecycle replacement and its version-2 event. Only called once
/// the lease checks passed, so anything but a mutation is a refusal to pass on.
pub(crate) fn end_command(
    call: &LeaseCall,
    fence: FenceEpoch,
    request: TerminalRequest,
    snapshot: &Snapshot,
) -> Result<(Vec<Write>, TerminalOutput), Halt> {
    match Terminal::new(call.clone(), fence, request).decide(snapshot) {
        Decision::Mutate(writes, output) => Ok((writes, output)),
        Decision::Reject(error) => Err(Halt::Reject(error)),
        Decision::Observe(_) | Decision::Read(_) => Err(Halt::Reject(JournalError::corrupt(
            "the terminal transition did not mutate a leased lifecycle",
        ))),
    }
}
