//! The index of provider idempotency keys: `providerKeys/{digest of the key}`, created
//! in the same commit that opens an attempt (`begin_send`'s permit of attempt n), never
//! changed, so that evidence naming only the key (an event's object carries the key
//! in its metadata) finds its command without any raw value.
//!
//! The key (`cj1-…`) is itself a digest of the command key hash and cannot be
//! inverted; the document id is a digest of the key under its own domain
//! (`command-journal.provider-key-index`), and the document holds exactly
//! `providerKeySchemaVersion` 1, the `commandKeyHash` and the `attempt` whose key it
//! is: no caller id, command id, payload or plan parameter. What it says is never
//! taken on its word: the settle program proves the attempt from the stored plan
//! (the key derived at that attempt must be the key given), and `verify` holds every
//! index document to its command.
//!
//! Attempts opened before the index existed have none: evidence naming their key is
//! an unknown object (acknowledged, nothing written), and those attempts settle as
//! before, by the client's retry or recovery's lookup.

use super::attempt_number::AttemptNumber;
use crate::digest::{Digest, frame_digest};
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::transaction::Write;

/// The top-level collection of the index.
pub const COLLECTION: &str = "providerKeys";
/// The `journal_corrupt` reason of a malformed index document.
pub(crate) const KIND: &str = "malformed provider key index document";
/// The exact field set of an index document (`providerKeySchemaVersion` 1).
pub(crate) const FIELDS: [&str; 3] = ["providerKeySchemaVersion", "commandKeyHash", "attempt"];

/// The index document's id for the provider idempotency key `key`: its digest under
/// the index's own domain.
pub fn id(key: &str) -> Digest {
    frame_digest("command-journal.provider-key-index", 1, &[key.as_bytes()])
}

/// The index document of `key`, relative to the documents root.
pub fn path(key: &str) -> String {
    format!("{COLLECTION}/{}", id(key))
}

/// One index document: the command and attempt whose provider idempotency key its id
/// is the digest of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyIndex {
    /// The command's key hash.
    pub command_key_hash: Digest,
    /// The attempt whose key it is.
    pub attempt: AttemptNumber,
}

impl KeyIndex {
    /// Parses strictly: exactly the three fields, of their types.
    pub fn parse(map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("providerKeySchemaVersion", 1..=1)?;
        Ok(Self {
            command_key_hash: f.digest("commandKeyHash")?,
            attempt: f.attempt("attempt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("providerKeySchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("attempt", fields::int(self.attempt.get())),
        ])
    }

    /// The creation of the index document of `key` (the key of `attempt` of the
    /// command `hash`), in the commit that opens the attempt.
    pub(crate) fn create(hash: &Digest, attempt: AttemptNumber, key: &str) -> Write {
        let index = Self {
            command_key_hash: hash.clone(),
            attempt,
        };
        Write::Create {
            path: path(key),
            fields: index.encode(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> Digest {
        Digest::parse(&"a".repeat(64)).expect("hash")
    }

    fn index() -> KeyIndex {
        KeyIndex {
            command_key_hash: hash(),
            attempt: AttemptNumber::new(2).expect("attempt"),
        }
    }

    #[test]
    fn the_index_path_is_a_digest_of_the_key_and_never_the_key() {
        let key = format!("cj1-{}", "b".repeat(64));
        // Pinned: the id's frame (domain, version, key).
        assert_eq!(
            id(&key),
            frame_digest("command-journal.provider-key-index", 1, &[key.as_bytes()])
        );
        let path = path(&key);
        assert!(path.starts_with("providerKeys/"));
        assert!(!path.contains(&key["cj1-".len()..]), "{path}");
        assert_ne!(id(&key), id(&format!("cj1-{}", "c".repeat(64))));
    }

    #[test]
    fn an_index_document_round_trips_and_anything_else_is_corrupt() {
        let stored = index().encode();
        assert_eq!(stored.len(), 3);
        assert_eq!(KeyIndex::parse(&stored), Ok(index()));
        let corrupt = |map: &FieldMap| KeyIndex::parse(map).map_err(|e| e.code());
        let mut extra = stored.clone();
        extra.insert("key".into(), fields::string("cj1-x"));
        let mut missing = stored.clone();
        missing.remove("attempt");
        let mut version = stored.clone();
        version.insert("providerKeySchemaVersion".into(), fields::int(2));
        let mut hash = stored.clone();
        hash.insert("commandKeyHash".into(), fields::string("A".repeat(64)));
        let mut zero = stored.clone();
        zero.insert("attempt".into(), fields::int(0));
        let mut text = stored.clone();
        text.insert("attempt".into(), fields::string("2"));
        for map in [extra, missing, version, hash, zero, text] {
            assert_eq!(corrupt(&map), Err("journal_corrupt"), "{map:?}");
        }
    }

    #[test]
    fn the_creation_writes_exactly_the_document_at_the_keys_path() {
        let key = "cj1-key";
        let write = KeyIndex::create(&hash(), AttemptNumber::new(2).expect("attempt"), key);
        assert_eq!(
            write,
            Write::Create {
                path: path(key),
                fields: index().encode(),
            }
        );
    }
}
