//! Immutable registration: the root and its revision-1 audit event, created together
//! exactly once. The documents are described in `docs/documents.md`.

use crate::document::audit::{self, RegistrationEvent};
use crate::document::fields::FieldMap;
use crate::document::lifecycle;
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition, Write};
use serde::Serialize;

/// Whether this call created the registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationOutcome {
    /// The root and its revision-1 audit event were created by this call.
    RegisteredNew,
    /// They already existed, exactly, with the same payload; nothing was written.
    RegisteredExisting,
}

/// The fixed output of registration:
/// `{"journalSchemaVersion":1,"outcome":…,"state":"registered"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationOutput {
    journal_schema_version: u8,
    outcome: RegistrationOutcome,
    state: &'static str,
}

impl RegistrationOutput {
    pub(crate) fn new(outcome: RegistrationOutcome) -> Self {
        Self {
            journal_schema_version: 1,
            outcome,
            state: "registered",
        }
    }

    /// The outcome.
    pub fn outcome(&self) -> RegistrationOutcome {
        self.outcome
    }
}

/// Parses and cross-checks a stored root and revision-1 audit pair against the
/// command being operated on. `Ok(None)` when neither exists; `journal_corrupt` when
/// only one exists or either is malformed or they disagree; `command_conflict` when the
/// payload fingerprint differs.
pub(crate) fn check_registration(
    identity: &CommandIdentity,
    root_fields: Option<&FieldMap>,
    audit_fields: Option<&FieldMap>,
) -> Result<Option<RootDocument>, JournalError> {
    let hash = identity.command_key_hash();
    let (root_fields, audit_fields) = match (root_fields, audit_fields) {
        (None, None) => return Ok(None),
        (Some(r), Some(a)) => (r, a),
        (Some(_), None) => {
            return Err(JournalError::corrupt(
                "registration root without its audit event",
            ));
        }
        (None, Some(_)) => {
            return Err(JournalError::corrupt(
                "registration audit event without its root",
            ));
        }
    };
    let root = RootDocument::parse(hash.as_str(), root_fields)?;
    let event = RegistrationEvent::parse(&audit::id(hash, 1), audit_fields)?;
    let key_matches = root.environment == identity.environment()
        && root.caller_scope_kind == identity.caller_scope_kind()
        && &root.command_type == identity.command_type()
        && root.endpoint_schema_version == identity.endpoint_schema_version();
    if !key_matches {
        return Err(JournalError::corrupt(
            "registration root disagrees with its command key",
        ));
    }
    let pair_matches = event.command_key_hash == root.command_key_hash
        && event.environment == root.environment
        && event.caller_scope_kind == root.caller_scope_kind
        && event.command_type == root.command_type
        && event.occurred_at == root.registered_at;
    if !pair_matches {
        return Err(JournalError::corrupt(
            "registration audit event disagrees with its root",
        ));
    }
    if &root.payload_fingerprint != identity.payload_fingerprint() {
        return Err(JournalError::CommandConflict);
    }
    Ok(Some(root))
}

/// A prepared registration: the derived identity and the captured time.
#[derive(Debug, Clone)]
pub struct Registration {
    identity: CommandIdentity,
    now: Timestamp,
}

impl Registration {
    /// Prepares a registration of `identity` at `now`.
    pub fn new(identity: CommandIdentity, now: Timestamp) -> Self {
        Self { identity, now }
    }

    fn documents(&self) -> (RootDocument, RegistrationEvent) {
        let id = &self.identity;
        let root = RootDocument {
            command_key_hash: id.command_key_hash().clone(),
            environment: id.environment(),
            caller_scope_kind: id.caller_scope_kind(),
            command_type: id.command_type().clone(),
            endpoint_schema_version: id.endpoint_schema_version(),
            payload_fingerprint: id.payload_fingerprint().clone(),
            registered_at: self.now,
        };
        let event = RegistrationEvent {
            command_key_hash: id.command_key_hash().clone(),
            environment: id.environment(),
            caller_scope_kind: id.caller_scope_kind(),
            command_type: id.command_type().clone(),
            occurred_at: self.now,
        };
        (root, event)
    }
}

impl Transition for Registration {
    type Output = RegistrationOutput;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Register
    }

    /// A new registration creates the root and its revision-1 event and depends on
    /// nothing but their absence and the lifecycle's (proven by an absence guard).
    fn blind_create(&self) -> bool {
        true
    }

    /// Read after a refused blind creation, a registration only ever observes or
    /// rejects: no lock is needed.
    fn first_read_unlocked(&self) -> bool {
        true
    }

    fn paths(&self) -> Vec<String> {
        let hash = self.identity.command_key_hash();
        vec![
            root::path(hash),
            audit::path(hash, 1),
            lifecycle::path(hash),
        ]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<RegistrationOutput> {
        let hash = self.identity.command_key_hash();
        let root = snapshot.get(&root::path(hash));
        let audit = snapshot.get(&audit::path(hash, 1));
        match check_registration(&self.identity, root, audit) {
            Ok(Some(_)) => Decision::Observe(RegistrationOutput::new(
                RegistrationOutcome::RegisteredExisting,
            )),
            Ok(None) if snapshot.get(&lifecycle::path(hash)).is_some() => {
                Decision::Reject(JournalError::corrupt("lifecycle without its registration"))
            }
            Ok(None) => {
                let (root, event) = self.documents();
                Decision::Mutate(
                    vec![
                        Write::Create {
                            path: root::path(hash),
                            fields: root.encode(),
                        },
                        Write::Create {
                            path: audit::path(hash, 1),
                            fields: event.encode(),
                        },
                    ],
                    RegistrationOutput::new(RegistrationOutcome::RegisteredNew),
                )
            }
            Err(error) => Decision::Reject(error),
        }
    }
}

#[cfg(test)]
mod tests;
