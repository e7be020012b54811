//! The `Stripe-Signature` header and its check: `t=<Unix seconds>` and one or more
//! `v1=<hex>` signatures (one per active secret during a roll), each an HMAC-SHA256
//! of the timestamp's text, a `.` and the raw body bytes, compared in constant time
//! (`hmac`'s `verify_slice`).

use super::refusal::Refusal;
use super::secret::WebhookSecrets;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The longest header read: a timestamp and a handful of signatures fit many times.
pub const MAX_HEADER_BYTES: usize = 4_096;
/// The most `v1` signatures read from one header (one per active secret).
pub const MAX_V1_SIGNATURES: usize = 8;

/// The bytes of one HMAC-SHA256.
const SIGNATURE_BYTES: usize = 32;

/// A parsed `Stripe-Signature` header. `Debug` shows how many signatures, not them.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SignatureHeader {
    /// The `t` element's text, exactly as signed.
    timestamp_text: String,
    /// Its value, in Unix seconds.
    timestamp: i64,
    /// Every `v1` signature, decoded.
    v1: Vec<[u8; SIGNATURE_BYTES]>,
}

impl std::fmt::Debug for SignatureHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureHeader")
            .field("timestamp", &self.timestamp)
            .field("v1", &self.v1.len())
            .finish()
    }
}

impl SignatureHeader {
    /// Parses `header`: elements separated by `,`, each `prefix=value` (split at the
    /// first `=`); exactly one `t`, a decimal without sign or leading zero; each `v1` 64
    /// lowercase hex digits; every other scheme (`v` and digits) ignored, never
    /// verified; any other prefix malformed.
    pub(crate) fn parse(header: &str) -> Result<Self, Refusal> {
        if header.len() > MAX_HEADER_BYTES {
            return Err(Refusal::HeaderMalformed);
        }
        let mut timestamp = None;
        let mut v1 = Vec::new();
        for element in header.split(',') {
            let (prefix, value) = element.split_once('=').ok_or(Refusal::HeaderMalformed)?;
            match prefix {
                "t" if timestamp.is_none() => timestamp = Some(parse_seconds(value)?),
                "t" => return Err(Refusal::HeaderMalformed),
                "v1" if v1.len() < MAX_V1_SIGNATURES => v1.push(parse_signature(value)?),
                "v1" => return Err(Refusal::HeaderMalformed),
                // Another scheme (`v` and digits, such as test events' `v0`): ignored.
                _ if scheme(prefix) => {}
                _ => return Err(Refusal::HeaderMalformed),
            }
        }
        let (timestamp_text, timestamp) = timestamp.ok_or(Refusal::HeaderMalformed)?;
        if v1.is_empty() {
            return Err(Refusal::NoV1Signature);
        }
        Ok(Self {
            timestamp_text,
            timestamp,
            v1,
        })
    }

    /// The signed timestamp, in Unix seconds.
    pub(crate) fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// Whether any `v1` signature is the HMAC-SHA256, under any of `secrets`, of the
    /// timestamp's text, `.` and `body`. Every comparison is constant-time.
    pub(crate) fn signs(&self, body: &[u8], secrets: &WebhookSecrets) -> bool {
        let mut matched = false;
        for secret in secrets.iter() {
            let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.key()) else {
                continue;
            };
            mac.update(self.timestamp_text.as_bytes());
            mac.update(b".");
            mac.update(body);
            for signature in &self.v1 {
                // Every pair is checked, matched or not: the time taken does not say
                // which signature or which secret matched.
                matched |= mac.clone().verify_slice(signature).is_ok();
            }
        }
        matched
    }
}

/// Whether `prefix` names a signature scheme: `v` followed by digits.
fn scheme(prefix: &str) -> bool {
    prefix
        .strip_prefix('v')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `value` as Unix seconds: 1 to 12 decimal digits, no leading zero; with its text.
fn parse_seconds(value: &str) -> Result<(String, i64), Refusal> {
    let digits = (1..=12).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_digit())
        && !(value.len() > 1 && value.starts_with('0'));
    let seconds = value
        .parse::<i64>()
        .ok()
        .filter(|_| digits)
        .ok_or(Refusal::HeaderMalformed)?;
    Ok((value.to_owned(), seconds))
}

/// `value` as one signature: exactly 64 lowercase hex digits.
fn parse_signature(value: &str) -> Result<[u8; SIGNATURE_BYTES], Refusal> {
    let lowercase = value
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mut signature = [0u8; SIGNATURE_BYTES];
    match hex::decode_to_slice(value, &mut signature) {
        Ok(()) if lowercase => Ok(signature),
        _ => Err(Refusal::HeaderMalformed),
    }
}
