//! Command leases, monotonic fencing and terminal commitments; `docs/leases.md` gives
//! the full transition table.
//!
//! Pure: each prepared operation holds the derived identity, the holder's lease-owner
//! fingerprint and the one captured time, and `decide`s over the strictly parsed
//! root, revision-1 audit, lifecycle, its current audit partner and the (absent) next
//! audit event.
//!
//! State machine:
//!
//! ```text
//! registered + acquire                          -> leased, fence 1, revision 2
//! leased + same active holder                   -> leased (read-only recovery)
//! leased + another active holder                -> busy (read-only)
//! leased + expired (any holder, same included)  -> leased, fence + 1, revision + 1
//! leased + exact active holder/fence + success  -> succeeded, revision + 1
//! leased + exact active holder/fence + failure  -> failed_final, revision + 1
//! leased + exact active holder/fence + release  -> leased, released (v2), no event
//! released + acquire (any holder)               -> leased, fence + 1, revision + 1
//! terminal + exact terminal retry               -> same terminal (read-only)
//! terminal + acquire                            -> terminal observation (read-only)
//! stale / conflicting / malformed / overflow    -> reject (read-only)
//! ```
//!
//! Inside the decisions a refusal is always `Err(Halt::Reject(..))` (a missing read is
//! `Err(Halt::Read(..))`), so `?` carries both out of the shared loading; `decide` turns
//! the step into the one [`Decision`] the runner sees.

use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::EventType;
use crate::document::lifecycle::{self, LEASE_SECONDS, Lifecycle, LifecycleState};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::transaction::{Decision, Halt, Snapshot, Transition, Write};

mod call;
mod output;
mod release;

pub(crate) use call::Loaded;
pub use call::{CommandCall, LeaseCall};
pub(crate) use call::{first_read_of, partners};
pub use output::{CommandState, LeaseOutput, StatusOutput, TerminalOutput};
pub use release::{Release, ReleaseOutput};

/// What a terminal call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalRequest {
    /// Success with the command-bound commitment hash.
    Succeed(Digest),
    /// Final failure; stores no reason.
    Fail,
}

/// A prepared `acquire_lease`.
#[derive(Debug, Clone)]
pub struct Acquire {
    call: LeaseCall,
    /// Whether its first read in transaction mode takes no lock
    /// ([`Transition::first_read_unlocked`]).
    unlocked: bool,
}

impl Acquire {
    /// Prepares an acquisition by the holder in `call`. A first acquisition creates
    /// the lifecycle and a busy one observes, so in transaction mode its first read
    /// takes no lock.
    pub fn new(call: LeaseCall) -> Self {
        Self {
            call,
            unlocked: true,
        }
    }

    /// The same acquisition expected to take an expired lease over (recovery's): a
    /// takeover replaces the lifecycle and needs the lock, so in transaction mode its
    /// first read opens the transaction.
    pub fn expecting_takeover(self) -> Self {
        Self {
            unlocked: false,
            ..self
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<LeaseOutput>, Halt> {
        let call = &self.call;
        let Loaded { root, current } = call.load(snapshot)?;
        let now = call.now();
        let Some(current) = current else {
            if now < root.registered_at {
                return Err(Halt::Reject(JournalError::ClockRegression));
            }
            let Some(expires) = now.plus_seconds(LEASE_SECONDS) else {
                return Err(Halt::Reject(JournalError::ClockRegression));
            };
            let after = Lifecycle {
                command_key_hash: call.hash().clone(),
                state: LifecycleState::Leased,
                command_revision: 2,
                fence_epoch: FenceEpoch::FIRST,
                lease_owner_fingerprint: call.owner().clone(),
                lease_acquired_at: now,
                lease_expires_at: expires,
                created_at: now,
                updated_at: now,
                terminal_commitment: None,
                released: false,
            };
            let writes = vec![
                Write::Create {
                    path: lifecycle::path(call.hash()),
                    fields: after.encode(),
                },
                call.event(&root, &after, EventType::LeaseAcquired),
            ];
            return Ok(Decision::Mutate(
                writes,
                LeaseOutput::Acquired {
                    fence_epoch: FenceEpoch::FIRST,
                    lease_expires_at: expires,
                },
            ));
        };
        let same_holder = current.lease_owner_fingerprint == *call.owner();
        let held = LeaseOutput::Acquired {
            fence_epoch: current.fence_epoch,
            lease_expires_at: current.lease_expires_at,
        };
        match current.state {
            LifecycleState::Succeeded => return Ok(Decision::Observe(LeaseOutput::Succeeded)),
            LifecycleState::FailedFinal => return Ok(Decision::Observe(LeaseOutput::FailedFinal)),
            LifecycleState::Leased => {}
        }
        // An earlier-captured time only observes: it never takes over. A released lease
        // (`leaseExpiresAt == updatedAt`) is expired from its release on.
        if now < current.updated_at || now < current.lease_expires_at {
            // A released lease is no one's: not even its holder's to keep.
            return Ok(Decision::Observe(if same_holder && !current.released {
                held
            } else {
                LeaseOutput::Busy
            }));
        }
        // Expired: a takeover by any holder, the same one included.
        let command_revision = current.command_revision + 1;
        let next = current.fence_epoch.next();
        let Some(fence_epoch) = next.filter(|_| command_revision <= MAX_REVISION) else {
            return Err(Halt::Reject(JournalError::RevisionOverflow));
        };
        let Some(expires) = now.plus_seconds(LEASE_SECONDS) else {
            return Err(Halt::Reject(JournalError::ClockRegression));
        };
        let after = Lifecycle {
            state: LifecycleState::Leased,
            command_revision,
            fence_epoch,
            lease_owner_fingerprint: call.owner().clone(),
            lease_acquired_at: now,
            lease_expires_at: expires,
            updated_at: now,
            terminal_commitment: None,
            released: false,
            ..current
        };
        let writes = vec![
            Write::Replace {
                path: lifecycle::path(call.hash()),
                fields: after.encode(),
            },
            call.event(&root, &after, EventType::LeaseTakenOver),
        ];
        Ok(Decision::Mutate(
            writes,
            LeaseOutput::Acquired {
                fence_epoch,
                lease_expires_at: expires,
            },
        ))
    }
}

impl Transition for Acquire {
    type Output = LeaseOutput;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Acquire
    }

    fn first_read_unlocked(&self) -> bool {
        self.unlocked
    }

    fn paths(&self) -> Vec<String> {
        self.call.first_read()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LeaseOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

/// A prepared `complete_command` or `fail_command`.
#[derive(Debug, Clone)]
pub struct Terminal {
    call: LeaseCall,
    expected_fence_epoch: FenceEpoch,
    request: TerminalRequest,
}

impl Terminal {
    /// Prepares a terminal transition by the holder in `call` at the fence it holds.
    pub fn new(
        call: LeaseCall,
        expected_fence_epoch: FenceEpoch,
        request: TerminalRequest,
    ) -> Self {
        Self {
            call,
            expected_fence_epoch,
            request,
        }
    }

    fn output(&self) -> TerminalOutput {
        match self.request {
            TerminalRequest::Succeed(_) => TerminalOutput::Succeeded,
            TerminalRequest::Fail => TerminalOutput::FailedFinal,
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<TerminalOutput>, Halt> {
        let call = &self.call;
        let Loaded { root, current } = call.load(snapshot)?;
        let Some(current) = current else {
            return Err(Halt::Reject(JournalError::LeaseNotHeld));
        };
        if current.lease_owner_fingerprint != *call.owner() {
            return Err(Halt::Reject(JournalError::LeaseNotHeld));
        }
        if current.fence_epoch != self.expected_fence_epoch {
            return Err(Halt::Reject(JournalError::StaleFence));
        }
        let wanted = match &self.request {
            TerminalRequest::Succeed(commitment) => (LifecycleState::Succeeded, Some(commitment)),
            TerminalRequest::Fail => (LifecycleState::FailedFinal, None),
        };
        if current.state != LifecycleState::Leased {
            // Exact retry (even after the lease expired) observes; anything else conflicts.
            let stored = (current.state, current.terminal_commitment.as_ref());
            if stored != wanted {
                return Err(Halt::Reject(JournalError::TerminalConflict));
            }
            return Ok(Decision::Observe(self.output()));
        }
        let now = call.now();
        // A released lease is expired from its release on, whatever the clock.
        if current.released {
            return Err(Halt::Reject(JournalError::LeaseExpired));
        }
        // An earlier-captured time never finalizes.
        if now < current.updated_at {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        if now >= current.lease_expires_at {
            return Err(Halt::Reject(JournalError::LeaseExpired));
        }
        let command_revision = current.command_revision + 1;
        if command_revision > MAX_REVISION {
            return Err(Halt::Reject(JournalError::RevisionOverflow));
        }
        let (state, commitment) = wanted;
        let after = Lifecycle {
            state,
            command_revision,
            updated_at: now,
            terminal_commitment: commitment.cloned(),
            ..current
        };
        let event_type = match state {
            LifecycleState::Succeeded => EventType::Succeeded,
            _ => EventType::FailedFinal,
        };
        let writes = vec![
            Write::Replace {
                path: lifecycle::path(call.hash()),
                fields: after.encode(),
            },
            call.event(&root, &after, event_type),
        ];
        Ok(Decision::Mutate(writes, self.output()))
    }
}

impl Transition for Terminal {
    type Output = TerminalOutput;

    fn name(&self) -> crate::transaction::OperationName {
        match self.request {
            TerminalRequest::Succeed(_) => crate::transaction::OperationName::Complete,
            TerminalRequest::Fail => crate::transaction::OperationName::Fail,
        }
    }

    fn paths(&self) -> Vec<String> {
        self.call.first_read()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<TerminalOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

/// A prepared read-only `status`.
#[derive(Debug, Clone)]
pub struct StatusRead {
    call: CommandCall,
}

impl StatusRead {
    /// Prepares a status read: a read needs no lease, so it takes no owner.
    pub fn new(call: CommandCall) -> Self {
        Self { call }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<StatusOutput>, Halt> {
        let Loaded { current, .. } = self.call.load(snapshot)?;
        let output = match current {
            None => StatusOutput {
                journal_schema_version: 1,
                state: CommandState::Registered,
                command_revision: 1,
                fence_epoch: None,
                lease_active: false,
            },
            Some(lifecycle) => StatusOutput {
                journal_schema_version: 1,
                state: lifecycle.state.into(),
                command_revision: lifecycle.command_revision,
                fence_epoch: Some(lifecycle.fence_epoch),
                lease_active: lifecycle.state == LifecycleState::Leased
                    && self.call.now() < lifecycle.lease_expires_at,
            },
        };
        Ok(Decision::Observe(output))
    }
}

impl Transition for StatusRead {
    type Output = StatusOutput;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        self.call.first_read()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<StatusOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

#[cfg(test)]
mod tests;
