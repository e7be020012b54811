//! The one framing and digest helper every derived value goes through.

use sha2::{Digest as _, Sha256};
use std::fmt;

/// A lowercase hex SHA-256 digest (64 characters).
///
/// Only constructed by the crate's framing (`frame_digest`) or by [`Digest::parse`],
/// which accepts exactly 64 lowercase hex characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Accepts exactly 64 lowercase hex characters.
    pub fn parse(text: &str) -> Option<Self> {
        is_lower_hex_64(text).then(|| Self(text.to_owned()))
    }

    /// The 64-character lowercase hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `text` is exactly 64 lowercase hex characters.
pub(crate) fn is_lower_hex_64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// SHA-256 over the frame `domain, version, parts...`, where each part is its byte
/// length as a 4-byte big-endian integer followed by its bytes.
///
/// Parts longer than `u32::MAX` bytes cannot occur: every input is bounded far below
/// that by validation, and the function saturates rather than wrapping if one did.
pub(crate) fn frame_digest(domain: &str, version: u32, parts: &[&[u8]]) -> Digest {
    let mut hasher = Sha256::new();
    let version = version.to_string();
    for part in [domain.as_bytes(), version.as_bytes()]
        .into_iter()
        .chain(parts.iter().copied())
    {
        let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
        hasher.update(len.to_be_bytes());
        hasher.update(part);
    }
    Digest(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_is_length_prefixed_big_endian() {
        // Independent computation of SHA-256(00000002 'ab' 00000001 '1' 00000000).
        let mut frame = Vec::new();
        frame.extend_from_slice(&[0, 0, 0, 2, b'a', b'b', 0, 0, 0, 1, b'1', 0, 0, 0, 0]);
        let expected = hex::encode(Sha256::digest(&frame));
        assert_eq!(frame_digest("ab", 1, &[b""]).as_str(), expected);
    }

    #[test]
    fn framing_separates_part_boundaries() {
        assert_ne!(
            frame_digest("d", 1, &[b"ab", b"c"]),
            frame_digest("d", 1, &[b"a", b"bc"])
        );
    }

    #[test]
    fn parse_accepts_only_lowercase_hex_64() {
        assert!(Digest::parse(&"a".repeat(64)).is_some());
        assert!(Digest::parse(&"A".repeat(64)).is_none());
        assert!(Digest::parse(&"a".repeat(63)).is_none());
        assert!(Digest::parse(&"g".repeat(64)).is_none());
    }
}
