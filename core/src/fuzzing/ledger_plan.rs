//! Fuzz target `ledger_plan`: ledger plan parsing and fingerprints.

use crate::error::JournalError;
use crate::ledger::fingerprint::{Amount, CommandFamily, FingerprintInput};

/// Parses the input as a `ledger fingerprint` object with
/// [`FingerprintInput::from_json`]; for an accepted plan computes both fingerprints
/// and asserts the digest is the SHA-256 of the canonical text, the canonical text
/// is strict JSON and a fixed point, and the declared version serializes. Also runs
/// [`Amount::parse`] and [`CommandFamily::parse`] on the raw text.
pub fn ledger_plan(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    amount_and_family(text);
    let Some(value) = crate::strict_json::parse(text) else {
        return;
    };
    let plan = match FingerprintInput::from_json(&value) {
        Ok(plan) => plan,
        Err(error) => {
            assert!(
                matches!(
                    error,
                    JournalError::InvalidInput { .. } | JournalError::UnsupportedFingerprintVersion
                ),
                "unexpected ledger error {error:?}"
            );
            return;
        }
    };
    assert!(matches!(plan.version(), 4 | 5));
    assert_eq!(plan.family().is_effect_plan(), plan.transfer().is_none());
    for version in [4, 5] {
        let fingerprint = match plan.fingerprint(version) {
            Ok(fingerprint) => fingerprint,
            Err(error) => panic!("an accepted plan does not serialize under v{version}: {error}"),
        };
        use sha2::Digest as _;
        let expected = hex::encode(sha2::Sha256::digest(fingerprint.canonical.as_bytes()));
        assert_eq!(fingerprint.digest.as_str(), expected);
        let Some(reparsed) = crate::strict_json::parse(&fingerprint.canonical) else {
            panic!("canonical ledger text is not strict JSON");
        };
        let again = serde_json_canonicalizer::to_string(&reparsed).ok();
        assert_eq!(
            again.as_deref(),
            Some(fingerprint.canonical.as_str()),
            "not a fixed point"
        );
    }
    for version in [0, 1, 3, 6, u32::MAX] {
        assert_eq!(
            plan.fingerprint(version).err(),
            Some(JournalError::UnsupportedFingerprintVersion)
        );
    }
}

fn amount_and_family(text: &str) {
    if let Some(amount) = Amount::parse(text) {
        let normalized = amount.as_str();
        assert_eq!(
            Amount::parse(normalized).as_ref(),
            Some(&amount),
            "a normalized amount is not a fixed point"
        );
        let (_, fraction) = normalized.split_once('.').unwrap_or_default();
        assert_eq!(fraction.len(), 2, "not two decimals");
    }
    if let Ok(family) = CommandFamily::parse(text) {
        assert_eq!(family.as_str(), text);
    }
}
