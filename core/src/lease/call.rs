//! The inputs of an operation on one command: [`CommandCall`] (its identity and the
//! captured time, all a read needs) and [`LeaseCall`] (that, and the caller's
//! lease-owner fingerprint, for every operation under a lease).

use crate::digest::Digest;
use crate::document::audit::{self, EventType, TransitionEvent};
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::registration::check_registration;
use crate::time::Timestamp;
use crate::transaction::{Halt, Snapshot, Write};

/// Audit revisions read speculatively with the lifecycle, so that the common
/// histories (first lease, completion, one takeover) need a single read.
const SPECULATIVE_AUDITS: std::ops::RangeInclusive<i64> = 2..=4;

/// The paths the first read of an operation on the command `hash` asks for: the root,
/// its revision-1 event, the lifecycle and the speculative audit events.
pub(crate) fn first_read_of(hash: &Digest) -> Vec<String> {
    let mut paths = vec![
        root::path(hash),
        audit::path(hash, 1),
        lifecycle::path(hash),
    ];
    paths.extend(SPECULATIVE_AUDITS.map(|r| audit::path(hash, r)));
    paths
}

/// The inputs every operation on one command shares: its derived identity and the
/// one captured time. A read (`status`, `send_status`, `result`) needs nothing else.
#[derive(Debug, Clone)]
pub struct CommandCall {
    identity: CommandIdentity,
    now: Timestamp,
}

impl CommandCall {
    /// A call on the command of `identity` at the captured time `now`.
    pub fn new(identity: CommandIdentity, now: Timestamp) -> Self {
        Self { identity, now }
    }

    /// The command's derived identity.
    pub fn identity(&self) -> &CommandIdentity {
        &self.identity
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
        first_read_of(self.hash())
    }

    /// Validates everything that must hold before any write: the registration pair,
    /// the lifecycle, its exact current audit partner and the absence of the next
    /// audit event. Asks for a follow-up read when the partner or next event fell
    /// outside the speculative window.
    pub fn load(&self, snapshot: &Snapshot) -> Result<Loaded, Halt> {
        let hash = self.hash();
        let root = check_registration(
            &self.identity,
            snapshot.get(&root::path(hash)),
            snapshot.get(&audit::path(hash, 1)),
        )
        .map_err(Halt::Reject)?;
        let Some(root) = root else {
            // Never registered: anything of a lifecycle is an orphan.
            let orphan = snapshot.get(&lifecycle::path(hash)).is_some()
                || SPECULATIVE_AUDITS
                    .clone()
                    .any(|r| snapshot.get(&audit::path(hash, r)).is_some());
            return Err(Halt::Reject(if orphan {
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
                return Err(Halt::Reject(JournalError::corrupt(
                    "transition audit event without a lifecycle",
                )));
            }
            return Ok(Loaded {
                root,
                current: None,
            });
        };
        let current = Lifecycle::parse(hash, fields).map_err(Halt::Reject)?;
        let partner_path = audit::path(hash, current.command_revision);
        let next_path = audit::path(hash, current.command_revision + 1);
        let missing: Vec<String> = [&partner_path, &next_path]
            .into_iter()
            .filter(|p| !snapshot.was_read(p))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Halt::Read(missing));
        }
        if snapshot.get(&next_path).is_some() {
            return Err(Halt::Reject(JournalError::corrupt(
                "the next audit event already exists",
            )));
        }
        let partner = snapshot
            .get(&partner_path)
            .ok_or(Halt::Reject(JournalError::corrupt(
                "lifecycle without its current audit event",
            )))?;
        let event = TransitionEvent::parse(&audit::id(hash, current.command_revision), partner)
            .map_err(Halt::Reject)?;
        if current.created_at < root.registered_at {
            return Err(Halt::Reject(JournalError::corrupt(
                "lifecycle predates its registration",
            )));
        }
        if !partners(&root, &current, &event) {
            return Err(Halt::Reject(JournalError::corrupt(
                "lifecycle disagrees with its current audit event",
            )));
        }
        Ok(Loaded {
            root,
            current: Some(current),
        })
    }

    /// The transition audit event of `after`, at its revision.
    pub(super) fn event(
        &self,
        root: &RootDocument,
        after: &Lifecycle,
        event_type: EventType,
    ) -> Write {
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

/// The inputs every lease operation shares: the command's call and the caller's
/// lease-owner fingerprint.
#[derive(Debug, Clone)]
pub struct LeaseCall {
    command: CommandCall,
    owner: Digest,
}

impl LeaseCall {
    /// `owner` is the lease-owner fingerprint of the caller's lease id.
    pub fn new(identity: CommandIdentity, owner: Digest, now: Timestamp) -> Self {
        Self {
            command: CommandCall::new(identity, now),
            owner,
        }
    }

    /// The call without the owner: what the shared loading reads.
    pub fn command(&self) -> &CommandCall {
        &self.command
    }

    /// The command's derived identity.
    pub fn identity(&self) -> &CommandIdentity {
        self.command.identity()
    }

    /// The caller's lease-owner fingerprint.
    pub fn owner(&self) -> &Digest {
        &self.owner
    }

    /// The one captured time.
    pub fn now(&self) -> Timestamp {
        self.command.now()
    }

    /// The command key hash every path of this call is under.
    pub fn hash(&self) -> &Digest {
        self.command.hash()
    }

    /// The paths the first read asks for.
    pub fn first_read(&self) -> Vec<String> {
        self.command.first_read()
    }

    /// [`CommandCall::load`].
    pub fn load(&self, snapshot: &Snapshot) -> Result<Loaded, Halt> {
        self.command.load(snapshot)
    }

    /// [`CommandCall::event`].
    pub(super) fn event(
        &self,
        root: &RootDocument,
        after: &Lifecycle,
        event_type: EventType,
    ) -> Write {
        self.command.event(root, after, event_type)
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
pub(crate) fn partners(root: &RootDocument, current: &Lifecycle, event: &TransitionEvent) -> bool {
    let expected_type = match current.state {
        LifecycleState::Leased if current.fence_epoch == 1 => EventType::LeaseAcquired,
        LifecycleState::Leased => EventType::LeaseTakenOver,
        LifecycleState::Succeeded => EventType::Succeeded,
        LifecycleState::FailedFinal => EventType::FailedFinal,
    };
    // A released lease's event is its acquisition's: the expiry it was granted, at
    // the time it was acquired.
    let (expires, occurred) = match current.released {
        true => (current.granted_until(), current.lease_acquired_at),
        false => (Some(current.lease_expires_at), current.updated_at),
    };
    event.event_type == expected_type
        && event.command_key_hash == current.command_key_hash
        && event.environment == root.environment
        && event.caller_scope_kind == root.caller_scope_kind
        && event.command_type == root.command_type
        && event.fence_epoch == current.fence_epoch
        && Some(event.lease_expires_at) == expires
        && event.occurred_at == occurred
}
