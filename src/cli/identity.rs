//! `command-journal identity`: the derived identity of one command.

use super::input::{Failure, Input};
use super::schema::Subject;
use crate::identity::OperationSlug;
use crate::{LeaseId, TerminalReferenceFingerprint};
use serde_json::{Value, json};

/// Derives `commandKeyHash`, `payloadFingerprint`, `canonicalPayload` and, when their
/// inputs are present, the lease-owner fingerprint, terminal commitment and provider key.
pub fn run(stdin: &str) -> Result<Value, Failure> {
    let mut input = Input::parse(stdin)?;
    input.only(&Subject::Identity.keys())?;
    let command = input.command()?;
    let lease = input.optional_string("leaseId")?;
    let reference = input.optional_string("terminalReferenceFingerprint")?;
    let operation = input.optional_string("operation")?;
    input.finish()?;
    let identity = command.identity();
    let mut out = json!({
        "commandKeyHash": identity.command_key_hash().as_str(),
        "payloadFingerprint": identity.payload_fingerprint().as_str(),
        "canonicalPayload": command.payload().canonical(),
    });
    if let Some(lease) = lease {
        let lease = LeaseId::parse(&lease)?;
        out["leaseOwnerFingerprint"] = json!(command.lease_owner(&identity, &lease)?.as_str());
    }
    if let Some(reference) = reference {
        let reference = TerminalReferenceFingerprint::parse(&reference)?;
        out["terminalCommitmentHash"] = json!(identity.terminal_commitment(&reference).as_str());
    }
    if let Some(operation) = operation {
        let operation = OperationSlug::parse(&operation)?;
        out["providerIdempotencyKey"] = json!(identity.provider_idempotency_key(&operation));
    }
    Ok(out)
}
