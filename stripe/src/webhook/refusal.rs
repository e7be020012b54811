//! Why a webhook request was refused: one fixed code per reason, never a byte of the
//! request, a header value or a secret.

use std::fmt;

/// A refused webhook request. `Display` and [`Refusal::code`] are fixed texts: no
/// body, header value, signature or secret is ever part of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The body is larger than the verifier's limit (checked before anything else).
    BodyTooLarge,
    /// No `Stripe-Signature` header.
    HeaderMissing,
    /// A `Stripe-Signature` header that is not `t=<seconds>` and `scheme=value`
    /// elements: an element without `=`, no `t` or two, a timestamp that is not a
    /// decimal without leading zeros, a `v1` that is not 64 lowercase hex digits, or
    /// more than the verifier reads.
    HeaderMalformed,
    /// No `v1` signature (other schemes, such as the `v0` of test events, are never
    /// verified: Stripe's docs ask to ignore every scheme but `v1`).
    NoV1Signature,
    /// No `v1` signature matches the body under any of the endpoint's secrets.
    SignatureMismatch,
    /// Signed, but longer ago than the tolerance (a replayed delivery).
    TimestampTooOld,
    /// Signed, but further in the future than the tolerance.
    TimestampInFuture,
    /// Signed, but the body is not one Stripe event object as this package reads it.
    EventMalformed,
}

impl Refusal {
    /// The stable snake_case code, for a log line or a metric label.
    pub fn code(self) -> &'static str {
        match self {
            Self::BodyTooLarge => "webhook_body_too_large",
            Self::HeaderMissing => "webhook_signature_missing",
            Self::HeaderMalformed => "webhook_signature_malformed",
            Self::NoV1Signature => "webhook_no_v1_signature",
            Self::SignatureMismatch => "webhook_signature_mismatch",
            Self::TimestampTooOld => "webhook_timestamp_too_old",
            Self::TimestampInFuture => "webhook_timestamp_in_future",
            Self::EventMalformed => "webhook_event_malformed",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::BodyTooLarge => "the webhook body is larger than the limit",
            Self::HeaderMissing => "the webhook has no Stripe-Signature header",
            Self::HeaderMalformed => "the Stripe-Signature header is malformed",
            Self::NoV1Signature => "the Stripe-Signature header has no v1 signature",
            Self::SignatureMismatch => "no v1 signature matches the body",
            Self::TimestampTooOld => "the webhook was signed longer ago than the tolerance",
            Self::TimestampInFuture => "the webhook is signed in the future beyond the tolerance",
            Self::EventMalformed => "the signed body is not a Stripe event object",
        })
    }
}

impl std::error::Error for Refusal {}
