//! The registration read of a command known by its key hash alone: the root and its
//! revision-1 audit event, strictly parsed and checked against each other, give the
//! command's stored identity (every field of it is on the root).

use crate::digest::Digest;
use crate::document::audit;
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::registration::check_registration;
use crate::transaction::{Decision, OperationName, Snapshot, Transition};

/// The identity `root` stores: every field of a command's derived identity is on its
/// root, so a reader that knows only the key hash operates on the command as
/// registered. `root` comes from a strict parse, checked against its revision-1
/// audit event before the identity is used.
fn registered(root: &RootDocument) -> CommandIdentity {
    CommandIdentity {
        command_key_hash: root.command_key_hash.clone(),
        payload_fingerprint: root.payload_fingerprint.clone(),
        environment: root.environment,
        caller_scope_kind: root.caller_scope_kind,
        command_type: root.command_type.clone(),
        endpoint_schema_version: root.endpoint_schema_version,
    }
}

/// A prepared read of the identity the command `hash` was registered with.
#[derive(Debug, Clone)]
pub struct RegisteredIdentity {
    hash: Digest,
}

impl RegisteredIdentity {
    /// Prepares the read of the command `hash`'s registration.
    pub fn new(hash: Digest) -> Self {
        Self { hash }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<CommandIdentity, JournalError> {
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
    type Output = CommandIdentity;

    fn name(&self) -> OperationName {
        OperationName::Recover
    }

    fn paths(&self) -> Vec<String> {
        vec![root::path(&self.hash), audit::path(&self.hash, 1)]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<CommandIdentity> {
        match self.decide_inner(snapshot) {
            Ok(identity) => Decision::Observe(identity),
            Err(error) => Decision::Reject(error),
        }
    }
}
