//! The journal's key as an event carries it: `metadata.journal_key` of the object, in
//! the only form the journal ever makes.

use std::fmt;

/// The journal's prefix of every provider idempotency key.
const PREFIX: &str = "cj1-";
/// The digest after the prefix: SHA-256, as 64 lowercase hex digits.
const DIGEST_CHARS: usize = 64;

/// A provider idempotency key of the journal, read from an object's metadata: `cj1-`
/// then 64 lowercase hex digits, exactly what the journal derives for every attempt
/// (`provider_idempotency_key`, `attempt_key`). The adapter sets it on every object it
/// creates (`metadata[journal_key]`), so an object without it, or with any other
/// value, is not the journal's. `Debug` prints `JournalKey(<redacted>)`: the key
/// names a command's attempt and stays out of logs, as the journal's own requests
/// keep it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JournalKey(String);

impl fmt::Debug for JournalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JournalKey(<redacted>)")
    }
}

impl JournalKey {
    /// `text` when it is a key of the journal's form; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let digest = text.strip_prefix(PREFIX)?;
        let valid = digest.len() == DIGEST_CHARS
            && digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| Self(text.to_owned()))
    }

    /// The key, for the journal's settle program (which proves the attempt from the
    /// stored plan) and for comparing with an object's metadata.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_journal_form_is_a_key() {
        let digest = "0123456789abcdef".repeat(4);
        let key = format!("cj1-{digest}");
        assert_eq!(
            JournalKey::parse(&key).map(|k| k.as_str().to_owned()),
            Some(key.clone())
        );
        for other in [
            String::new(),
            "cj1-".to_owned(),
            digest.clone(),
            format!("cj2-{digest}"),
            format!("cj1-{}", digest.to_ascii_uppercase()),
            format!("cj1-{digest}0"),
            format!("cj1-{}", &digest[1..]),
            format!("cj1-{}g", &digest[1..]),
            format!(" cj1-{digest}"),
            "order-1234".to_owned(),
        ] {
            assert_eq!(JournalKey::parse(&other), None, "{other:?}");
        }
        let debug = format!("{:?}", JournalKey::parse(&key));
        assert!(!debug.contains(&digest), "{debug}");
    }
}
