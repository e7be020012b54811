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
//! terminal + exact terminal retry               -> same terminal (read-only)
//! terminal + acquire                            -> terminal observation (read-only)
//! stale / conflicting / malformed / overflow    -> reject (read-only)
//! ```
//!
//! Inside the decisions a refusal is always `Err(Step::Reject(..))` (a missing read is
//! `Err(Step::Read(..))`), so `?` carries both out of the shared loading; `decide` turns
//! the step into the one [`Decision`] the runner sees.

use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, EventType, TransitionEvent};
use crate::document::lifecycle::{self, LEASE_SECONDS, Lifecycle, LifecycleState};
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::CommandIdentity;
use crate::registration::check_registration;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Step, Transition, Write};

mod output;

pub use output::{LeaseOutput, StatusOutput, TerminalOutput};

/// Audit revisions read speculatively with the lifecycle, so that the common
/// histories (first lease, completion, one takeover) need a single read.
const SPECULATIVE_AUDITS: std::ops::RangeInclusive<i64> = 2..=4;

/// What a terminal call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalRequest {
    /// Success with the command-bound commitment hash.
    Succeed(Digest),
    /// Final failure; stores no reason.
    Fail,
}

/// The inputs every lease operation shares.
#[derive(Debug, Clone)]
pub struct LeaseCall {
    identity: CommandIdentity,
    owner: Digest,
    now: Timestamp,
}

impl LeaseCall {
    /// `owner` is the lease-owner fingerprint of the caller's lease id.
    pub fn new(identity: CommandIdentity, owner: Digest, now: Timestamp) -> Self {
        Self {
            identity,
            owner,
            now,
        }
    }

    /// The command's derived identity.
    pub fn identity(&self) -> &CommandIdentity {
        &self.identity
    }

    /// The caller's lease-owner fingerprint.
    pub fn owner(&self) -> &Digest {
        &self.owner
    }

    /// The one captured time.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The command key hash every path of this call is under.
    pub fn hash(&self) -> &Digest {
        self.identity.command_key_hash()
    }

    /// The paths the first read asks for.
    pub fn first_read(&self) -> Vec<String> {
        let hash = self.hash();
        let mut paths = vec![
            root::path(hash),
            audit::path(hash, 1),
            lifecycle::path(hash),
        ];
        paths.extend(SPECULATIVE_AUDITS.map(|r| audit::path(hash, r)));
        paths
    }

    /// Validates everything that must hold before any write: the registration pair,
    /// the lifecycle, its exact current audit partner and the absence of the next
    /// audit event. Asks for a follow-up read when the partner or next event fell
    /// outside the speculative window.
    pub fn load(&self, snapshot: &Snapshot) -> Result<Loaded, Step> {
        let hash = self.hash();
        let root = check_registration(
            &self.identity,
            snapshot.get(&root::path(hash)),
            snapshot.get(&audit::path(hash, 1)),
        )
        .map_err(Step::Reject)?;
        let Some(root) = root else {
            // Never registered: anything of a lifecycle is an orphan.
            let orphan = snapshot.get(&lifecycle::path(hash)).is_some()
                || SPECULATIVE_AUDITS
                    .clone()
                    .any(|r| snapshot.get(&audit::path(hash, r)).is_some());
            return Err(Step::Reject(if orphan {
                JournalError::corrupt("lifecycle records without a registration")
            } else {
                JournalError::NotRegistered
            }));
        };
        let Some(fields) = snapshot.get(&lifecycle::path(hash)) else {
            // Without a lifecycle no transition event may exist (every one read).
            let stray = SPECULATIVE_AUDITS
                .clone()
                .any(|r| snapshot.get(&audit::path(hash, r)).is_some());
            if stray {
                return Err(Step::Reject(JournalError::corrupt(
                    "transition audit event without a lifecycle",
                )));
            }
            return Ok(Loaded {
                root,
                current: None,
            });
        };
        let current = Lifecycle::parse(hash, fields).map_err(Step::Reject)?;
        let partner_path = audit::path(hash, current.command_revision);
        let next_path = audit::path(hash, current.command_revision + 1);
        let missing: Vec<String> = [&partner_path, &next_path]
            .into_iter()
            .filter(|p| !snapshot.was_read(p))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Step::Read(missing));
        }
        if snapshot.get(&next_path).is_some() {
            return Err(Step::Reject(JournalError::corrupt(
                "the next audit event already exists",
            )));
        }
        let partner = snapshot
            .get(&partner_path)
            .ok_or(Step::Reject(JournalError::corrupt(
                "lifecycle without its current audit event",
            )))?;
        let event = TransitionEvent::parse(&audit::id(hash, current.command_revision), partner)
            .map_err(Step::Reject)?;
        if current.created_at < root.registered_at {
            return Err(Step::Reject(JournalError::corrupt(
                "lifecycle predates its registration",
            )));
        }
        if !partners(&root, &current, &event) {
            return Err(Step::Reject(JournalError::corrupt(
                "lifecycle disagrees with its current audit event",
            )));
        }
        Ok(Loaded {
            root,
            current: Some(current),
        })
    }

    fn event(&self, root: &RootDocument, after: &Lifecycle, event_type: EventType) -> Write {
        let event = TransitionEvent {
            command_key_hash: self.hash().clone(),
            command_revision: after.command_revision,
            event_type,
            environment: root.environment,
            caller_scope_kind: root.caller_scope_kind,
            command_type: root.command_type.clone(),
            fence_epoch: after.fence_epoch,
            lease_expires_at: after.lease_expires_at,
            occurred_at: after.updated_at,
        };
        Write::Create {
            path: audit::path(self.hash(), after.command_revision),
            fields: event.encode(),
        }
    }
}

/// The validated state a decision starts from.
pub struct Loaded {
    /// The registration root.
    pub root: RootDocument,
    /// The current lifecycle, `None` before the first lease.
    pub current: Option<Lifecycle>,
}

/// The lifecycle and its current audit event describe the same transition.
pub fn partners(root: &RootDocument, current: &Lifecycle, event: &TransitionEvent) -> bool {
    let expected_type = match current.state {
        LifecycleState::Leased if current.fence_epoch == 1 => EventType::LeaseAcquired,
        LifecycleState::Leased => EventType::LeaseTakenOver,
        LifecycleState::Succeeded => EventType::Succeeded,
        LifecycleState::FailedFinal => EventType::FailedFinal,
    };
    event.event_type == expected_type
        && event.command_key_hash == current.command_key_hash
        && event.environment == root.environment
        && event.caller_scope_kind == root.caller_scope_kind
        && event.command_type == root.command_type
        && event.fence_epoch == current.fence_epoch
        && event.lease_expires_at == current.lease_expires_at
        && event.occurred_at == current.updated_at
}

/// A prepared `acquire_lease`.
#[derive(Debug, Clone)]
pub struct Acquire {
    call: LeaseCall,
}

impl Acquire {
    /// Prepares an acquisition by the holder in `call`.
    pub fn new(call: LeaseCall) -> Self {
        Self { call }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<LeaseOutput>, Step> {
        let call = &self.call;
        let Loaded { root, current } = call.load(snapshot)?;
        let now = call.now;
        let Some(current) = current else {
            if now < root.registered_at {
                return Err(Step::Reject(JournalError::ClockRegression));
            }
            let Some(expires) = now.plus_seconds(LEASE_SECONDS) else {
                return Err(Step::Reject(JournalError::ClockRegression));
            };
            let after = Lifecycle {
                command_key_hash: call.hash().clone(),
                state: LifecycleState::Leased,
                command_revision: 2,
                fence_epoch: 1,
                lease_owner_fingerprint: call.owner.clone(),
                lease_acquired_at: now,
                lease_expires_at: expires,
                created_at: now,
                updated_at: now,
                terminal_commitment: None,
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
                    fence_epoch: FenceEpoch::stored(1),
                    lease_expires_at: expires,
                },
            ));
        };
        let same_holder = current.lease_owner_fingerprint == call.owner;
        let held = LeaseOutput::Acquired {
            fence_epoch: FenceEpoch::stored(current.fence_epoch),
            lease_expires_at: current.lease_expires_at,
        };
        match current.state {
            LifecycleState::Succeeded => return Ok(Decision::Observe(LeaseOutput::Succeeded)),
            LifecycleState::FailedFinal => return Ok(Decision::Observe(LeaseOutput::FailedFinal)),
            LifecycleState::Leased => {}
        }
        // An earlier-captured time only observes: it never takes over.
        if now < current.updated_at || now < current.lease_expires_at {
            return Ok(Decision::Observe(if same_holder {
                held
            } else {
                LeaseOutput::Busy
            }));
        }
        // Expired: a takeover by any holder, the same one included.
        let fence_epoch = current.fence_epoch + 1;
        let command_revision = current.command_revision + 1;
        if command_revision > MAX_REVISION || fence_epoch > MAX_REVISION {
            return Err(Step::Reject(JournalError::RevisionOverflow));
        }
        let Some(expires) = now.plus_seconds(LEASE_SECONDS) else {
            return Err(Step::Reject(JournalError::ClockRegression));
        };
        let after = Lifecycle {
            state: LifecycleState::Leased,
            command_revision,
            fence_epoch,
            lease_owner_fingerprint: call.owner.clone(),
            lease_acquired_at: now,
            lease_expires_at: expires,
            updated_at: now,
            terminal_commitment: None,
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
                fence_epoch: FenceEpoch::stored(fence_epoch),
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

    fn paths(&self) -> Vec<String> {
        self.call.first_read()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LeaseOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Step::decision)
    }
}

/// A prepared `complete_command` or `fail_command`.
#[derive(Debug, Clone)]
pub struct Terminal {
    call: LeaseCall,
    expected_fence_epoch: i64,
    request: TerminalRequest,
}

impl Terminal {
    /// Prepares a terminal transition by the holder in `call` at the fence it holds.
    pub fn new(call: LeaseCall, expected_fence_epoch: i64, request: TerminalRequest) -> Self {
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

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<TerminalOutput>, Step> {
        let call = &self.call;
        let Loaded { root, current } = call.load(snapshot)?;
        let Some(current) = current else {
            return Err(Step::Reject(JournalError::LeaseNotHeld));
        };
        if current.lease_owner_fingerprint != call.owner {
            return Err(Step::Reject(JournalError::LeaseNotHeld));
        }
        if current.fence_epoch != self.expected_fence_epoch {
            return Err(Step::Reject(JournalError::StaleFence));
        }
        let wanted = match &self.request {
            TerminalRequest::Succeed(commitment) => (LifecycleState::Succeeded, Some(commitment)),
            TerminalRequest::Fail => (LifecycleState::FailedFinal, None),
        };
        if current.state != LifecycleState::Leased {
            // Exact retry (even after the lease expired) observes; anything else conflicts.
            let stored = (current.state, current.terminal_commitment.as_ref());
            if stored != wanted {
                return Err(Step::Reject(JournalError::TerminalConflict));
            }
            return Ok(Decision::Observe(self.output()));
        }
        let now = call.now;
        // An earlier-captured time never finalizes.
        if now < current.updated_at {
            return Err(Step::Reject(JournalError::ClockRegression));
        }
        if now >= current.lease_expires_at {
            return Err(Step::Reject(JournalError::LeaseExpired));
        }
        let command_revision = current.command_revision + 1;
        if command_revision > MAX_REVISION {
            return Err(Step::Reject(JournalError::RevisionOverflow));
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
        self.decide_inner(snapshot).unwrap_or_else(Step::decision)
    }
}

/// A prepared read-only `status`.
#[derive(Debug, Clone)]
pub struct StatusRead {
    call: LeaseCall,
}

impl StatusRead {
    /// Prepares a status read; `call`'s owner is not used.
    pub fn new(call: LeaseCall) -> Self {
        Self { call }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<StatusOutput>, Step> {
        let Loaded { current, .. } = self.call.load(snapshot)?;
        let output = match current {
            None => StatusOutput {
                journal_schema_version: 1,
                state: "registered",
                command_revision: 1,
                fence_epoch: None,
                lease_active: false,
            },
            Some(lifecycle) => StatusOutput {
                journal_schema_version: 1,
                state: lifecycle.state.as_str(),
                command_revision: lifecycle.command_revision,
                fence_epoch: Some(FenceEpoch::stored(lifecycle.fence_epoch)),
                lease_active: lifecycle.state == LifecycleState::Leased
                    && self.call.now < lifecycle.lease_expires_at,
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
        self.decide_inner(snapshot).unwrap_or_else(Step::decision)
    }
}

#[cfg(test)]
mod tests;
