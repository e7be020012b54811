//! Command identity: validated inputs and the derived hashes. `docs/identity.md` gives
//! the framing and every derived value with its frame parts.
//!
//! Every input is a newtype whose only constructor validates it; a rejection is
//! [`JournalError::InvalidInput`] naming the field, never echoing the value. Values a
//! caller must keep secret (caller id, command id, lease id, payload, terminal
//! reference) print as `<redacted>` in `Debug`.

use crate::digest::{frame_digest, is_lower_hex_64};
use crate::error::JournalError;
use serde_json::Value;
use std::fmt;

pub use crate::digest::Digest;

/// Largest accepted result envelope, in RFC 8785 canonical bytes (16 KiB): the
/// input limit of `ResultEnvelope::new`.
pub const MAX_RESULT_ENVELOPE_BYTES: usize = 16 * 1024;

/// Largest integer magnitude a payload may carry (2^53 - 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// Deepest nesting of objects and arrays a payload may have (the payload itself is 1).
pub const MAX_PAYLOAD_DEPTH: usize = 32;
/// Largest class id, feat code or idempotency key, in bytes.
pub const MAX_LEDGER_PART_BYTES: usize = 1024;
/// Largest canonical payload, in bytes.
pub const MAX_CANONICAL_PAYLOAD_BYTES: usize = 65_536;

macro_rules! redacted_debug {
    ($name:ident) => {
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(<redacted>)"))
            }
        }
    };
}

macro_rules! closed_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Parses the exact lowercase text; anything else is `invalid_input`.
            pub fn parse(text: &str) -> Result<Self, JournalError> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(JournalError::invalid($field)),
                }
            }

            /// The exact text stored and hashed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }
    };
}

closed_enum!(
    /// Where the command runs; part of the command key.
    Environment, "environment", {
        /// The local Firestore emulator.
        Emulator => "emulator",
        /// Automated test environments.
        Test => "test",
        /// Pre-production.
        Staging => "staging",
        /// Production.
        Production => "production",
    }
);

closed_enum!(
    /// The kind of principal the caller id belongs to.
    CallerScopeKind, "callerScopeKind", {
        /// A signed-in member.
        Member => "member",
        /// A guest session.
        Guest => "guest",
        /// An officer acting for the organisation.
        Officer => "officer",
        /// A trusted service.
        Service => "service",
    }
);

/// The caller's id: 1–128 bytes of `[A-Za-z0-9_-]`.
#[derive(Clone, PartialEq, Eq)]
pub struct CallerId(String);
redacted_debug!(CallerId);

impl CallerId {
    /// Validates the caller id.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        let ok = (1..=128).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        ok.then(|| Self(text.to_owned()))
            .ok_or(JournalError::invalid("callerId"))
    }
}

/// True for a version 4 UUID with the RFC 4122 variant.
fn is_v4(uuid: &uuid::Uuid) -> bool {
    uuid.get_version_num() == 4 && uuid.get_variant() == uuid::Variant::RFC4122
}

/// Parses canonical lowercase UUID v4 text with the RFC 4122 variant.
fn parse_uuid_v4(text: &str) -> Option<String> {
    let uuid = uuid::Uuid::try_parse(text).ok()?;
    let canonical = uuid.hyphenated().to_string();
    (canonical == text && is_v4(&uuid)).then_some(canonical)
}

/// The caller's command id: canonical lowercase UUID v4 text.
#[derive(Clone, PartialEq, Eq)]
pub struct CommandId(String);
redacted_debug!(CommandId);

impl CommandId {
    /// Validates the command id.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        parse_uuid_v4(text)
            .map(Self)
            .ok_or(JournalError::invalid("commandId"))
    }
}

/// A worker attempt's lease id: canonical lowercase UUID v4 text, distinct from the
/// command id (checked where both are known, see [`CommandInput::lease_owner`]).
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseId(pub(crate) String);
redacted_debug!(LeaseId);

impl LeaseId {
    /// The lease id of 16 random bytes the caller drew, with the version 4 and RFC 4122
    /// variant bits set over them, so the result is always canonical UUID v4 text. The
    /// core draws no randomness: trusted server code draws fresh bytes per logical
    /// worker attempt (the library's `identity::generate_lease_id`), never taking them
    /// from a browser.
    pub fn from_random_bytes(bytes: [u8; 16]) -> Self {
        let uuid = uuid::Builder::from_random_bytes(bytes).into_uuid();
        Self(uuid.hyphenated().to_string())
    }

    /// Validates the lease id's format.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        parse_uuid_v4(text)
            .map(Self)
            .ok_or(JournalError::invalid("leaseId"))
    }
}

/// True for a slug: `^[a-z][a-z0-9_]{0,62}$` (a command type, a provider name).
pub(crate) fn is_slug(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// A command type: `^[a-z][a-z0-9_]{0,62}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommandType(String);

impl CommandType {
    /// Validates the command type.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        is_slug(text)
            .then(|| Self(text.to_owned()))
            .ok_or(JournalError::invalid("commandType"))
    }

    /// The slug text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A provider operation slug: `^[a-z][a-z0-9_]{0,62}$`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationSlug(String);

impl OperationSlug {
    /// Validates the operation slug.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        is_slug(text)
            .then(|| Self(text.to_owned()))
            .ok_or(JournalError::invalid("operation"))
    }

    /// The slug text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The endpoint schema version: an integer from 1 to 9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointSchemaVersion(u16);

impl EndpointSchemaVersion {
    /// Validates the version.
    pub fn new(version: i64) -> Result<Self, JournalError> {
        u16::try_from(version)
            .ok()
            .filter(|v| (1..=9999).contains(v))
            .map(Self)
            .ok_or(JournalError::invalid("endpointSchemaVersion"))
    }

    /// The version number.
    pub fn get(self) -> u16 {
        self.0
    }
}

/// An already-redacted terminal reference: 64 lowercase hex characters.
#[derive(Clone, PartialEq, Eq)]
pub struct TerminalReferenceFingerprint(String);
redacted_debug!(TerminalReferenceFingerprint);

impl TerminalReferenceFingerprint {
    /// Validates the fingerprint.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        is_lower_hex_64(text)
            .then(|| Self(text.to_owned()))
            .ok_or(JournalError::invalid("terminalReferenceFingerprint"))
    }

    /// The fingerprint of a receipt's bytes: their lowercase hex SHA-256, so a caller
    /// needs neither a hash nor a hex crate to redact a provider's answer.
    ///
    /// ```
    /// use command_journal_core::identity::TerminalReferenceFingerprint;
    /// let reference = TerminalReferenceFingerprint::of_receipt(b"{\"id\":\"ch_1\"}");
    /// # let _ = reference;
    /// ```
    pub fn of_receipt(bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        Self(hex::encode(sha2::Sha256::digest(bytes)))
    }
}

/// A command payload: a JSON object of integers (|n| <= 2^53-1), strings, booleans,
/// nulls, arrays and objects, at most 32 deep, whose RFC 8785 canonical form is at
/// most 65,536 bytes. Holds only the canonical text.
#[derive(Clone, PartialEq, Eq)]
pub struct Payload {
    canonical: String,
}
redacted_debug!(Payload);

impl Payload {
    /// Validates `value` and computes its canonical text.
    pub fn from_value(value: &Value) -> Result<Self, JournalError> {
        canonical_object(value, "payload").map(|canonical| Self { canonical })
    }

    /// The RFC 8785 canonical JSON text that is fingerprinted.
    pub fn canonical(&self) -> &str {
        &self.canonical
    }
}

/// The RFC 8785 canonical text of `value` under the payload rules (a JSON object,
/// integers within ±(2^53−1), at most 32 deep, at most 65,536 canonical bytes);
/// `invalid_input` naming `field` otherwise.
pub(crate) fn canonical_object(value: &Value, field: &'static str) -> Result<String, JournalError> {
    let invalid = || JournalError::invalid(field);
    if !value.is_object() || !within_rules(value, 1) {
        return Err(invalid());
    }
    let canonical = serde_json_canonicalizer::to_string(value).map_err(|_| invalid())?;
    if canonical.len() > MAX_CANONICAL_PAYLOAD_BYTES {
        return Err(invalid());
    }
    Ok(canonical)
}

/// Checks number and depth rules; `depth` is the depth of `value` if it is a container.
fn within_rules(value: &Value, depth: usize) -> bool {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => true,
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u <= MAX_SAFE_INTEGER,
            (None, Some(i)) => i.unsigned_abs() <= MAX_SAFE_INTEGER,
            (None, None) => false,
        },
        Value::Array(items) => {
            depth <= MAX_PAYLOAD_DEPTH && items.iter().all(|v| within_rules(v, depth + 1))
        }
        Value::Object(map) => {
            depth <= MAX_PAYLOAD_DEPTH && map.values().all(|v| within_rules(v, depth + 1))
        }
    }
}

/// The borrowed, unvalidated parts of a command, as a caller holds them.
#[derive(Clone, Copy)]
pub struct CommandRequest<'a> {
    /// `emulator` | `test` | `staging` | `production`.
    pub environment: &'a str,
    /// `member` | `guest` | `officer` | `service`.
    pub caller_scope_kind: &'a str,
    /// 1–128 bytes of `[A-Za-z0-9_-]`.
    pub caller_id: &'a str,
    /// Canonical lowercase UUID v4.
    pub command_id: &'a str,
    /// `^[a-z][a-z0-9_]{0,62}$`.
    pub command_type: &'a str,
    /// 1–9999.
    pub endpoint_schema_version: i64,
    /// A JSON object within the payload rules.
    pub payload: &'a Value,
}

impl fmt::Debug for CommandRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CommandRequest(<redacted>)")
    }
}

/// A fully validated command, with its identity derived once, at construction.
#[derive(Clone, PartialEq, Eq)]
pub struct CommandInput {
    environment: Environment,
    caller_scope_kind: CallerScopeKind,
    caller_id: CallerId,
    command_id: CommandId,
    command_type: CommandType,
    endpoint_schema_version: EndpointSchemaVersion,
    payload: Payload,
    /// Derived from the fields above by [`CommandInput::derive_identity`].
    identity: CommandIdentity,
}
redacted_debug!(CommandInput);

impl CommandInput {
    /// Validates every part, reporting the first invalid field in declaration order.
    pub fn new(request: CommandRequest<'_>) -> Result<Self, JournalError> {
        let environment = Environment::parse(request.environment)?;
        let caller_scope_kind = CallerScopeKind::parse(request.caller_scope_kind)?;
        let caller_id = CallerId::parse(request.caller_id)?;
        let command_id = CommandId::parse(request.command_id)?;
        let command_type = CommandType::parse(request.command_type)?;
        let endpoint_schema_version = EndpointSchemaVersion::new(request.endpoint_schema_version)?;
        let payload = Payload::from_value(request.payload)?;
        let identity = Self::derive_identity(
            environment,
            caller_scope_kind,
            &caller_id,
            &command_id,
            &command_type,
            endpoint_schema_version,
            &payload,
        );
        Ok(Self {
            environment,
            caller_scope_kind,
            caller_id,
            command_id,
            command_type,
            endpoint_schema_version,
            payload,
            identity,
        })
    }

    /// The command identity (command key hash and payload fingerprint), derived once
    /// when the input was validated.
    pub fn identity(&self) -> CommandIdentity {
        self.identity.clone()
    }

    /// Derives the command identity from the validated parts.
    fn derive_identity(
        environment: Environment,
        caller_scope_kind: CallerScopeKind,
        caller_id: &CallerId,
        command_id: &CommandId,
        command_type: &CommandType,
        endpoint_schema_version: EndpointSchemaVersion,
        payload: &Payload,
    ) -> CommandIdentity {
        let version = endpoint_schema_version.get().to_string();
        let command_key_hash = frame_digest(
            "command-journal.command-key",
            1,
            &[
                environment.as_str().as_bytes(),
                caller_scope_kind.as_str().as_bytes(),
                caller_id.0.as_bytes(),
                command_type.as_str().as_bytes(),
                version.as_bytes(),
                command_id.0.as_bytes(),
            ],
        );
        let payload_fingerprint = frame_digest(
            "command-journal.payload",
            1,
            &[
                command_key_hash.as_str().as_bytes(),
                payload.canonical().as_bytes(),
            ],
        );
        CommandIdentity {
            command_key_hash,
            payload_fingerprint,
            environment,
            caller_scope_kind,
            command_type: command_type.clone(),
            endpoint_schema_version,
        }
    }

    /// The validated payload.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// Checks that `lease` differs from the command id and derives the lease-owner
    /// fingerprint bound to this command.
    pub fn lease_owner(
        &self,
        identity: &CommandIdentity,
        lease: &LeaseId,
    ) -> Result<Digest, JournalError> {
        if lease.0 == self.command_id.0 {
            return Err(JournalError::invalid("leaseId"));
        }
        Ok(frame_digest(
            "command-journal.lease-owner",
            1,
            &[
                identity.command_key_hash.as_str().as_bytes(),
                lease.0.as_bytes(),
            ],
        ))
    }
}

/// `terminalCommitmentHash` of `reference` for the command whose key hash is `hash`:
/// what [`CommandIdentity::terminal_commitment`] computes, for the verifier and the
/// result reads, which know the command only by its hash.
pub fn terminal_commitment(hash: &Digest, reference: &TerminalReferenceFingerprint) -> Digest {
    frame_digest(
        "command-journal.terminal-commitment",
        1,
        &[
            hash.as_str().as_bytes(),
            b"business_record_digest",
            reference.0.as_bytes(),
        ],
    )
}

/// The derived, storable identity of a command. Holds no raw caller input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandIdentity {
    pub(crate) command_key_hash: Digest,
    pub(crate) payload_fingerprint: Digest,
    pub(crate) environment: Environment,
    pub(crate) caller_scope_kind: CallerScopeKind,
    pub(crate) command_type: CommandType,
    pub(crate) endpoint_schema_version: EndpointSchemaVersion,
}

impl CommandIdentity {
    /// `commandKeyHash`: names the command's documents.
    pub fn command_key_hash(&self) -> &Digest {
        &self.command_key_hash
    }

    /// `payloadFingerprint`: detects a different payload under the same command.
    pub fn payload_fingerprint(&self) -> &Digest {
        &self.payload_fingerprint
    }

    /// The environment the command was keyed under.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The caller scope kind.
    pub fn caller_scope_kind(&self) -> CallerScopeKind {
        self.caller_scope_kind
    }

    /// The command type.
    pub fn command_type(&self) -> &CommandType {
        &self.command_type
    }

    /// The endpoint schema version.
    pub fn endpoint_schema_version(&self) -> EndpointSchemaVersion {
        self.endpoint_schema_version
    }

    /// `terminalCommitmentHash` of kind `business_record_digest`, bound to this command.
    pub fn terminal_commitment(&self, reference: &TerminalReferenceFingerprint) -> Digest {
        terminal_commitment(&self.command_key_hash, reference)
    }

    /// The provider idempotency key `cj1-<digest>` for one provider operation.
    pub fn provider_idempotency_key(&self, operation: &OperationSlug) -> String {
        let digest = frame_digest(
            "command-journal.provider-key",
            1,
            &[
                self.command_key_hash.as_str().as_bytes(),
                operation.0.as_bytes(),
            ],
        );
        format!("cj1-{digest}")
    }
}

/// The ledger reservation identity `(class_id, feat_code, idempotency_key)`.
///
/// Each part is 1–1024 bytes of UTF-8 with no control characters.
#[derive(Clone, PartialEq, Eq)]
pub struct LedgerKey {
    class_id: String,
    feat_code: String,
    idempotency_key: String,
}
redacted_debug!(LedgerKey);

fn ledger_part(text: &str, field: &'static str) -> Result<String, JournalError> {
    let ok =
        (1..=MAX_LEDGER_PART_BYTES).contains(&text.len()) && !text.chars().any(char::is_control);
    ok.then(|| text.to_owned())
        .ok_or(JournalError::invalid(field))
}

impl LedgerKey {
    /// Validates the three parts.
    pub fn new(
        class_id: &str,
        feat_code: &str,
        idempotency_key: &str,
    ) -> Result<Self, JournalError> {
        Ok(Self {
            class_id: ledger_part(class_id, "classId")?,
            feat_code: ledger_part(feat_code, "featCode")?,
            idempotency_key: ledger_part(idempotency_key, "idempotencyKey")?,
        })
    }

    /// The class id (the authority boundary).
    pub(crate) fn class_id(&self) -> &str {
        &self.class_id
    }

    /// The feat code (the originating command family).
    pub(crate) fn feat_code(&self) -> &str {
        &self.feat_code
    }

    /// The caller's idempotency key within the feat code.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// The ledger reservation id: the document id of the reservation.
    pub fn reservation_id(&self) -> Digest {
        frame_digest(
            "ledger.reservation",
            1,
            &[
                self.class_id.as_bytes(),
                self.feat_code.as_bytes(),
                self.idempotency_key.as_bytes(),
            ],
        )
    }
}

#[cfg(test)]
mod tests;
