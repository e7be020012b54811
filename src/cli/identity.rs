//! `command-journal identity`: the derived identity of one command.

use super::input::{Failure, Input};
use super::schema::Subject;
use crate::identity::OperationSlug;
use crate::{CommandInput, JournalError, LeaseId, TerminalReferenceFingerprint};
use serde_json::{Value, json};

/// The stdin object of `identity`, validated: the command and the optional inputs of
/// the lease-owner fingerprint, the terminal commitment and the provider key.
#[derive(Debug)]
pub struct Request {
    command: CommandInput,
    lease: Option<LeaseId>,
    reference: Option<TerminalReferenceFingerprint>,
    operation: Option<OperationSlug>,
}

impl Request {
    /// Validates the whole stdin object (its keys first, then each value in order).
    pub fn parse(stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&Subject::Identity.keys())?;
        let command = input.command()?;
        let lease = input.optional_string("leaseId")?;
        let reference = input.optional_string("terminalReferenceFingerprint")?;
        let operation = input.optional_string("operation")?;
        input.finish()?;
        Ok(Self {
            command,
            lease: lease.as_deref().map(LeaseId::parse).transpose()?,
            reference: reference
                .as_deref()
                .map(TerminalReferenceFingerprint::parse)
                .transpose()?,
            operation: operation.as_deref().map(OperationSlug::parse).transpose()?,
        })
    }

    /// Derives `commandKeyHash`, `payloadFingerprint`, `canonicalPayload` and, when
    /// their inputs are present, the lease-owner fingerprint, terminal commitment and
    /// provider key.
    pub fn derive(&self) -> Result<Value, JournalError> {
        let command = &self.command;
        let identity = command.identity();
        let mut out = json!({
            "commandKeyHash": identity.command_key_hash().as_str(),
            "payloadFingerprint": identity.payload_fingerprint().as_str(),
            "canonicalPayload": command.payload().canonical(),
        });
        if let Some(lease) = &self.lease {
            out["leaseOwnerFingerprint"] = json!(command.lease_owner(&identity, lease)?.as_str());
        }
        if let Some(reference) = &self.reference {
            out["terminalCommitmentHash"] = json!(identity.terminal_commitment(reference).as_str());
        }
        if let Some(operation) = &self.operation {
            out["providerIdempotencyKey"] = json!(identity.provider_idempotency_key(operation));
        }
        Ok(out)
    }
}
