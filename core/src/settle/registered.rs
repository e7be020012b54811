//! A job's first read of a command known by its key hash alone: the root
//! and its revision-1 audit event, strictly parsed and checked against each other,
//! give the command's stored identity (every field of it is on the root); the same
//! snapshot, with the lifecycle and the send documents, answers its send status as
//! `send_status` does, and the bound plan (whose account fingerprint says which
//! provider account an absence must be proven at). One batch get.

use crate::digest::Digest;
use crate::document::audit;
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::CommandCall;
use crate::lease::first_read_of;
use crate::registration::check_registration;
use crate::sends::CommandStatus;
use crate::sends::bound_plan::{self, BoundPlan};
use crate::sends::load::send_paths;
use crate::sends::status::SendStatusRead;
use crate::time::Timestamp;
use crate::transaction::{Decision, OperationName, Snapshot, Transition};

/// The identity `root` stores: every field of a command's derived identity is on its
/// root, so a reader that knows only the key hash operates on the command as
/// registered. `root` comes from a strict parse, checked against its revision-1
/// audit event before the identity is used.
pub(crate) fn registered(root: &RootDocument) -> CommandIdentity {
    CommandIdentity {
        command_key_hash: root.command_key_hash.clone(),
        payload_fingerprint: root.payload_fingerprint.clone(),
        environment: root.environment,
        caller_scope_kind: root.caller_scope_kind,
        command_type: root.command_type.clone(),
        endpoint_schema_version: root.endpoint_schema_version,
    }
}

/// A registered command's identity, its send status and its bound plan, read
/// together at one captured time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The identity the command was registered with.
    pub identity: CommandIdentity,
    /// Its status with the send state, at `read_at`.
    pub status: CommandStatus,
    /// The plan the command bound, strictly parsed; `None` while none is bound.
    pub plan: Option<BoundPlan>,
}

/// A prepared read of the command `hash`'s registration and send status.
#[derive(Debug, Clone)]
pub struct RegisteredIdentity {
    hash: Digest,
    now: Timestamp,
}

impl RegisteredIdentity {
    /// Prepares the read of the command `hash` at the captured time `now`.
    pub fn new(hash: Digest, now: Timestamp) -> Self {
        Self { hash, now }
    }

    fn identity(&self, snapshot: &Snapshot) -> Result<CommandIdentity, JournalError> {
        let root_fields = snapshot
            .get(&root::path(&self.hash))
            .ok_or(JournalError::NotRegistered)?;
        let root = RootDocument::parse(self.hash.as_str(), root_fields)?;
        let identity = registered(&root);
        // The pair as every operation checks it: the event's presence, its fields and
        // its agreement with the root.
        match check_registration(
            &identity,
            Some(root_fields),
            snapshot.get(&audit::path(&self.hash, 1)),
        )? {
            Some(_) => Ok(identity),
            None => Err(JournalError::internal("registration read without a root")),
        }
    }
}

impl Transition for RegisteredIdentity {
    type Output = Registered;

    fn name(&self) -> OperationName {
        OperationName::Recover
    }

    /// Every path `send_status` reads first.
    fn paths(&self) -> Vec<String> {
        let mut paths = first_read_of(&self.hash);
        paths.extend(send_paths(&self.hash));
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Registered> {
        let identity = match self.identity(snapshot) {
            Ok(identity) => identity,
            Err(error) => return Decision::Reject(error),
        };
        let status = SendStatusRead::new(CommandCall::new(identity.clone(), self.now));
        match status.decide(snapshot) {
            Decision::Observe(status) => {
                let plan = snapshot
                    .get(&bound_plan::path(&self.hash))
                    .map(|fields| BoundPlan::parse(&self.hash, fields))
                    .transpose();
                match plan {
                    Ok(plan) => Decision::Observe(Registered {
                        identity,
                        status,
                        plan,
                    }),
                    Err(error) => Decision::Reject(error),
                }
            }
            Decision::Read(paths) => Decision::Read(paths),
            Decision::Reject(error) => Decision::Reject(error),
            Decision::Mutate(..) => Decision::Reject(JournalError::internal("status wrote")),
        }
    }
}
