//! The `Idempotency-Key` request header: an RFC 8941 Item whose value is a String
//! (draft-ietf-httpapi-idempotency-key-header, "Syntax"), within this package's
//! published limits, and the journal command id it names.
//!
//! | the field | answer |
//! |---|---|
//! | absent | [`KeyError::Missing`] (400) |
//! | more than one field line, not an Item, an Item that is not a String (a bare token, Stripe's unquoted style, included), an Item with parameters | [`KeyError::Malformed`] (400) |
//! | a String of 0 or more than [`MAX_KEY_LENGTH`] characters, or with a character outside `%x21 / %x23-5B / %x5D-7E` (no space, `"` or `\`) | [`KeyError::Malformed`] (400) |
//! | anything else | the key, compared as an exact string |
//!
//! The journal's command id is a canonical lowercase UUID v4, so a key that is one is
//! the command id itself (a command the reference service registered from a body's
//! `commandId` is the same command under that key); any other key names the UUID v4
//! built from the first 16 bytes of the framed SHA-256 of domain
//! `command-journal-http.idempotency-key`, version `1`, the key. Two keys that differ
//! in any character (case included) are two commands, but for one pair a caller can
//! only make on purpose: a key, and the UUID it derives sent as a key, name one command
//! (within that caller's scope, as every key).

use command_journal::identity::CommandId;
use http::HeaderMap;
use sha2::{Digest as _, Sha256};

/// The request header's name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The longest key accepted, in characters (Stripe's limit).
pub const MAX_KEY_LENGTH: usize = 255;

/// The domain of the frame a non-UUID key is hashed in.
const DERIVATION_DOMAIN: &str = "command-journal-http.idempotency-key";

/// Why a request's `Idempotency-Key` is not usable. Never carries the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyError {
    /// The request has no `Idempotency-Key` field.
    Missing,
    /// The field is not one RFC 8941 String Item within the published limits.
    Malformed,
}

/// A validated idempotency key. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl std::fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdempotencyKey(<redacted>)")
    }
}

impl IdempotencyKey {
    /// The key of `headers`' `Idempotency-Key` field, by the table of this module.
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, KeyError> {
        let mut lines = headers.get_all(IDEMPOTENCY_KEY).iter();
        let line = lines.next().ok_or(KeyError::Missing)?;
        // RFC 8941 §4.2: several lines are combined with commas, which no Item parses.
        if lines.next().is_some() {
            return Err(KeyError::Malformed);
        }
        Self::parse_field(line.as_bytes())
    }

    /// The key in one field value: an RFC 8941 Item, a String, no parameters.
    pub fn parse_field(value: &[u8]) -> Result<Self, KeyError> {
        let item = sfv::Parser::new(value)
            .parse::<sfv::Item>()
            .map_err(|_| KeyError::Malformed)?;
        if !item.params.is_empty() {
            return Err(KeyError::Malformed);
        }
        let sfv::BareItem::String(text) = item.bare_item else {
            return Err(KeyError::Malformed);
        };
        let text = text.as_str();
        let allowed = |b: u8| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e);
        if text.is_empty() || text.len() > MAX_KEY_LENGTH || !text.bytes().all(allowed) {
            return Err(KeyError::Malformed);
        }
        Ok(Self(text.to_owned()))
    }

    /// The journal command id this key names: the key itself when it is a canonical
    /// lowercase UUID v4, otherwise the UUID v4 derived from the key's framed digest.
    pub fn command_id(&self) -> String {
        if CommandId::parse(&self.0).is_ok() {
            return self.0.clone();
        }
        let mut hasher = Sha256::new();
        for part in [DERIVATION_DOMAIN, "1", &self.0] {
            hasher.update((part.len() as u32).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        let digest = hasher.finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }
}

#[cfg(test)]
mod tests;
