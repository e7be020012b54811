//! `checkoutRequests/{commandKeyHash}`: the immutable registration root.

use super::fields::{self, FieldMap, Strict};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::{CallerScopeKind, CommandType, EndpointSchemaVersion, Environment};
use crate::time::Timestamp;

/// The collection of roots.
pub const COLLECTION: &str = "checkoutRequests";
const KIND: &str = "malformed registration root";
/// The exact field set of a registration root.
pub const FIELDS: [&str; 10] = [
    "journalSchemaVersion",
    "commandKeyHash",
    "state",
    "commandRevision",
    "environment",
    "callerScopeKind",
    "commandType",
    "endpointSchemaVersion",
    "payloadFingerprint",
    "registeredAt",
];

/// The root's path relative to the documents root.
pub fn path(hash: &Digest) -> String {
    format!("{COLLECTION}/{hash}")
}

/// A parsed root: version 1, state `registered`, revision 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootDocument {
    /// Equals the document id.
    pub command_key_hash: Digest,
    /// Environment of the command key.
    pub environment: Environment,
    /// Caller scope kind of the command key.
    pub caller_scope_kind: CallerScopeKind,
    /// Command type of the command key.
    pub command_type: CommandType,
    /// Endpoint schema version of the command key.
    pub endpoint_schema_version: EndpointSchemaVersion,
    /// Fingerprint of the registered payload.
    pub payload_fingerprint: Digest,
    /// Registration time.
    pub registered_at: Timestamp,
}

impl RootDocument {
    /// Parses strictly; `document_id` is the id the document was read under.
    pub fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("journalSchemaVersion", 1..=1)?;
        f.string_eq("state", "registered")?;
        f.int_in("commandRevision", 1..=1)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if command_key_hash.as_str() != document_id {
            return Err(f.corrupt("commandKeyHash"));
        }
        let version = f.int("endpointSchemaVersion")?;
        Ok(Self {
            command_key_hash,
            environment: f.parsed("environment", Environment::parse)?,
            caller_scope_kind: f.parsed("callerScopeKind", CallerScopeKind::parse)?,
            command_type: f.parsed("commandType", CommandType::parse)?,
            endpoint_schema_version: EndpointSchemaVersion::new(version)
                .map_err(|_| f.corrupt("endpointSchemaVersion"))?,
            payload_fingerprint: f.digest("payloadFingerprint")?,
            registered_at: f.timestamp("registeredAt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("journalSchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("state", fields::string("registered")),
            ("commandRevision", fields::int(1)),
            ("environment", fields::string(self.environment.as_str())),
            (
                "callerScopeKind",
                fields::string(self.caller_scope_kind.as_str()),
            ),
            ("commandType", fields::string(self.command_type.as_str())),
            (
                "endpointSchemaVersion",
                fields::int(i64::from(self.endpoint_schema_version.get())),
            ),
            (
                "payloadFingerprint",
                fields::string(self.payload_fingerprint.as_str()),
            ),
            ("registeredAt", fields::timestamp(self.registered_at)),
        ])
    }
}
