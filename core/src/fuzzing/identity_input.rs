//! Fuzz target `identity_input`: the command input validators and derived values.

use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::{
    CallerId, CallerScopeKind, CommandId, CommandInput, CommandRequest, CommandType,
    EndpointSchemaVersion, Environment, LeaseId, LedgerKey, OperationSlug,
    TerminalReferenceFingerprint,
};
use serde_json::Value as Json;

/// Runs every identity validator on the input text and, when the text is one JSON
/// object in the CLI's `identity` shape, the full derivation. Asserts that a value a
/// validator accepts is accepted again, that every rejection is `invalid_input`, that
/// derived digests are 64 lowercase hex characters, and that secrets print redacted.
pub fn identity_input(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    single_fields(text);
    let Some(Json::Object(map)) = crate::strict_json::parse(text) else {
        return;
    };
    let string = |key: &str| map.get(key).and_then(Json::as_str).unwrap_or_default();
    for value in map.values() {
        if let Json::String(value) = value {
            single_fields(value);
        }
    }
    let version = map
        .get("endpointSchemaVersion")
        .and_then(Json::as_i64)
        .unwrap_or(0);
    let payload = map.get("payload").cloned().unwrap_or(Json::Null);
    let request = CommandRequest {
        environment: string("environment"),
        caller_scope_kind: string("callerScopeKind"),
        caller_id: string("callerId"),
        command_id: string("commandId"),
        command_type: string("commandType"),
        endpoint_schema_version: version,
        payload: &payload,
    };
    let command = match CommandInput::new(request) {
        Ok(command) => command,
        Err(error) => {
            assert_invalid_input(&error);
            return;
        }
    };
    assert_eq!(format!("{command:?}"), "CommandInput(<redacted>)");
    let identity = command.identity();
    assert_digest(identity.command_key_hash().as_str());
    assert_digest(identity.payload_fingerprint().as_str());
    assert_eq!(command.identity(), identity, "identity is deterministic");
    if let Ok(lease) = LeaseId::parse(string("leaseId")) {
        match command.lease_owner(&identity, &lease) {
            Ok(owner) => assert_digest(owner.as_str()),
            Err(error) => assert_invalid_input(&error),
        }
    }
    if let Ok(reference) =
        TerminalReferenceFingerprint::parse(string("terminalReferenceFingerprint"))
    {
        assert_digest(identity.terminal_commitment(&reference).as_str());
    }
    if let Ok(operation) = OperationSlug::parse(string("operation")) {
        let key = identity.provider_idempotency_key(&operation);
        assert!(key.starts_with("cj1-"), "provider key prefix");
        assert_digest(&key[4..]);
    }
}

/// Each single-value validator on `text`: acceptance is stable and secrets redact.
fn single_fields(text: &str) {
    let stable = |a: bool, b: bool| assert_eq!(a, b, "a validator changed its mind");
    if let Ok(env) = Environment::parse(text) {
        assert_eq!(env.as_str(), text);
    }
    if let Ok(kind) = CallerScopeKind::parse(text) {
        assert_eq!(kind.as_str(), text);
    }
    if let Ok(id) = CallerId::parse(text) {
        assert_eq!(format!("{id:?}"), "CallerId(<redacted>)");
        assert!((1..=128).contains(&text.len()));
    }
    if let Ok(id) = CommandId::parse(text) {
        assert_eq!(format!("{id:?}"), "CommandId(<redacted>)");
        assert_eq!(text.len(), 36);
    }
    if let Ok(id) = LeaseId::parse(text) {
        assert_eq!(format!("{id:?}"), "LeaseId(<redacted>)");
        stable(true, CommandId::parse(text).is_ok());
    }
    if let Ok(command_type) = CommandType::parse(text) {
        assert_eq!(command_type.as_str(), text);
        stable(true, OperationSlug::parse(text).is_ok());
    }
    if let Ok(reference) = TerminalReferenceFingerprint::parse(text) {
        assert_eq!(
            format!("{reference:?}"),
            "TerminalReferenceFingerprint(<redacted>)"
        );
        stable(true, Digest::parse(text).is_some());
    }
    if let Ok(number) = text.trim().parse::<i64>()
        && let Ok(version) = EndpointSchemaVersion::new(number)
    {
        assert_eq!(i64::from(version.get()), number);
    }
    let (a, rest) = text.split_at(char_floor(text, text.len() / 2));
    let (b, c) = rest.split_at(char_floor(rest, rest.len() / 2));
    if let Ok(key) = LedgerKey::new(a, b, c) {
        assert_digest(key.reservation_id().as_str());
        assert_eq!(format!("{key:?}"), "LedgerKey(<redacted>)");
    }
    for error in [
        Environment::parse(text).err(),
        CallerScopeKind::parse(text).err(),
        CallerId::parse(text).err(),
        CommandId::parse(text).err(),
        LeaseId::parse(text).err(),
        CommandType::parse(text).err(),
        OperationSlug::parse(text).err(),
        TerminalReferenceFingerprint::parse(text).err(),
    ]
    .into_iter()
    .flatten()
    {
        assert_invalid_input(&error);
    }
}

/// The largest char boundary of `text` at or below `index`.
fn char_floor(text: &str, index: usize) -> usize {
    (0..=index.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn assert_invalid_input(error: &JournalError) {
    assert!(
        matches!(error, JournalError::InvalidInput { .. }),
        "a validation failure that is not invalid_input: {error:?}"
    );
}

fn assert_digest(text: &str) {
    assert!(
        Digest::parse(text).is_some(),
        "a derived value is not 64 lowercase hex characters"
    );
}
