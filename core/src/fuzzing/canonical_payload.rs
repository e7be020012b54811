//! Fuzz target `canonical_payload`: payload validation and its canonical form.

use crate::error::JournalError;
use crate::identity::Payload;
use serde_json::Value as Json;

/// Validates the input as a command payload (strict JSON, then the payload rules) and
/// asserts that an accepted payload's RFC 8785 text is within the size limit, parses
/// back strictly, and is a fixed point of canonicalization. The same value read by
/// plain `serde_json` (which keeps the last of duplicate keys) goes through the same
/// checks.
pub fn canonical_payload(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Some(value) = crate::strict_json::parse(text)
    {
        payload_round_trip(&value);
    }
    if let Ok(value) = serde_json::from_slice::<Json>(bytes) {
        payload_round_trip(&value);
    }
}

fn payload_round_trip(value: &Json) {
    let payload = match Payload::from_value(value) {
        Ok(payload) => payload,
        Err(error) => {
            assert_eq!(error, JournalError::invalid("payload"));
            return;
        }
    };
    assert_eq!(format!("{payload:?}"), "Payload(<redacted>)");
    let canonical = payload.canonical();
    assert!(canonical.len() <= crate::identity::MAX_CANONICAL_PAYLOAD_BYTES);
    let Some(reparsed) = crate::strict_json::parse(canonical) else {
        panic!("canonical payload text is not strict JSON");
    };
    assert_eq!(
        &reparsed, value,
        "canonical text reads back as another value"
    );
    match Payload::from_value(&reparsed) {
        Ok(again) => assert_eq!(again.canonical(), canonical, "not a fixed point"),
        Err(error) => panic!("a canonical payload is rejected when read back: {error}"),
    }
}
