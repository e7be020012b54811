//! Stripe's webhook signatures, verified before anything is read from a request: the
//! `Stripe-Signature` header's timestamp and every `v1` signature, each an HMAC-SHA256
//! (the `hmac` and `sha2` crates) of the timestamp, a `.` and the **raw body bytes**
//! under one of the endpoint's secrets, compared in constant time; the timestamp
//! within a tolerance of the journal's clock (300 s unless set); a body size limit.
//! What passes is a [`VerifiedEvent`], read strictly; anything else is a
//! [`Refusal`] with a fixed code. The package's `README.md` cites Stripe's page.
//!
//! A verified event is then [`classify`]d, from its `data.object` alone: the journal's
//! key in the object's metadata (none: another integration's object, acknowledged and
//! counted) and what the event proves: a success, "read the object by id and
//! [`settle`] from its current state" (Stripe does not order its events), or nothing.
//! The package's `docs/events.md` gives every event type with the Stripe page of each.
//!
//! ```
//! use command_journal::Timestamp;
//! use command_journal_stripe::webhook::{Refusal, Verifier, WebhookSecrets};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let secrets = WebhookSecrets::from_list("whsec_new0000,whsec_old0000")?; // a roll
//! let verifier = Verifier::new(secrets);
//! let now = Timestamp::from_micros(1_893_456_000_000_000).ok_or("time")?; // the journal's clock
//! let refused = verifier.verify(None, b"{}", now).expect_err("unsigned");
//! assert_eq!(refused, Refusal::HeaderMissing);
//! assert_eq!(refused.code(), "webhook_signature_missing");
//! # Ok(())
//! # }
//! ```

mod classify;
mod event;
mod key;
mod object;
mod refusal;
mod secret;
mod settle;
mod signature;

pub use classify::{Classified, Evidence, Ignored, classify, event_types};
pub use event::VerifiedEvent;
pub use key::JournalKey;
pub use object::{ObjectKind, ObjectRef};
pub use refusal::Refusal;
pub use secret::{MAX_SECRETS, SecretError, WebhookSecret, WebhookSecrets};
pub use settle::{MAX_READS, ReadById, Settlement, settle, settle_by_id};
pub use signature::{MAX_HEADER_BYTES, MAX_V1_SIGNATURES};

use command_journal::Timestamp;
use signature::SignatureHeader;
use std::fmt;

/// The tolerance Stripe's own libraries default to: 5 minutes either side of the
/// signed timestamp.
pub const DEFAULT_TOLERANCE_SECONDS: i64 = 300;
/// The largest body verified unless set: a PaymentIntent or Checkout Session event is
/// a few KiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

/// Verifies the webhook requests of one endpoint. `Debug` shows the number of secrets,
/// the tolerance and the limit, never a secret.
#[derive(Clone)]
pub struct Verifier {
    secrets: WebhookSecrets,
    tolerance_seconds: i64,
    max_body_bytes: usize,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("secrets", &self.secrets)
            .field("tolerance_seconds", &self.tolerance_seconds)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish()
    }
}

impl Verifier {
    /// A verifier accepting a signature by any of `secrets`, with the default
    /// tolerance and body limit.
    pub fn new(secrets: WebhookSecrets) -> Self {
        Self {
            secrets,
            tolerance_seconds: DEFAULT_TOLERANCE_SECONDS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// The same verifier with a tolerance of `seconds` either way, at least 1 (Stripe:
    /// a tolerance of 0 would disable the recency check; it is raised to 1 here).
    pub fn with_tolerance(mut self, seconds: u32) -> Self {
        self.tolerance_seconds = i64::from(seconds.max(1));
        self
    }

    /// The same verifier refusing bodies longer than `bytes`.
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Verifies one request: `header` is its `Stripe-Signature` (if any), `body` its
    /// raw bytes as received, `now` the journal's time. In order: the body's size, the
    /// header (present, well formed, with a `v1` signature), a signature of the body by
    /// one of the secrets, the timestamp within the tolerance of `now` (older:
    /// [`Refusal::TimestampTooOld`]; later: [`Refusal::TimestampInFuture`]), and the
    /// event itself.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: Timestamp,
    ) -> Result<VerifiedEvent, Refusal> {
        if body.len() > self.max_body_bytes {
            return Err(Refusal::BodyTooLarge);
        }
        let header = SignatureHeader::parse(header.ok_or(Refusal::HeaderMissing)?)?;
        if !header.signs(body, &self.secrets) {
            return Err(Refusal::SignatureMismatch);
        }
        let age = now.seconds().saturating_sub(header.timestamp());
        if age > self.tolerance_seconds {
            return Err(Refusal::TimestampTooOld);
        }
        if age < -self.tolerance_seconds {
            return Err(Refusal::TimestampInFuture);
        }
        VerifiedEvent::parse(body)
    }
}
