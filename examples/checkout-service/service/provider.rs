//! The payment provider call: `POST {PROVIDER_URL}/v1/charges` with the command's
//! provider idempotency key, so that a second holder's call after a lease expiry is
//! deduplicated by the provider rather than charged twice.

use command_journal::TerminalReferenceFingerprint;
use sha2::{Digest as _, Sha256};
use std::time::Duration;

/// What the provider said, reduced to what the journal records.
#[derive(Debug)]
pub enum Charge {
    /// A 2xx answer: the terminal reference is the SHA-256 of its body, so the raw
    /// receipt is never stored.
    Charged(TerminalReferenceFingerprint),
    /// A final decline: 402, or any other 4xx except the transient ones.
    Declined,
    /// Nothing final is known (5xx, 408/409/425/429, a redirect, a timeout or a lost
    /// connection): record nothing; a later attempt repeats the call with the same key.
    Unknown(&'static str),
}

/// The provider's HTTP client.
#[derive(Debug, Clone)]
pub struct Provider {
    client: reqwest::Client,
    charges: reqwest::Url,
}

impl Provider {
    /// Charges go to `charges` (`{PROVIDER_URL}/v1/charges`). Redirects are not
    /// followed: a payment POST is never replayed somewhere else.
    pub fn new(charges: reqwest::Url) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { client, charges })
    }

    /// One charge attempt, bounded by `timeout` (body included).
    pub async fn charge(
        &self,
        idempotency_key: &str,
        payload: &serde_json::Value,
        timeout: Duration,
    ) -> Charge {
        let sent = self
            .client
            .post(self.charges.clone())
            .header("Idempotency-Key", idempotency_key)
            .json(payload)
            .timeout(timeout)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return Charge::Unknown("provider_timeout"),
            Err(_) => return Charge::Unknown("provider_unreachable"),
        };
        let status = response.status();
        if status.is_success() {
            return match response.bytes().await {
                Ok(body) => {
                    let hex = hex::encode(Sha256::digest(&body));
                    match TerminalReferenceFingerprint::parse(&hex) {
                        Ok(reference) => Charge::Charged(reference),
                        Err(_) => Charge::Unknown("provider_receipt"),
                    }
                }
                Err(error) if error.is_timeout() => Charge::Unknown("provider_timeout"),
                Err(_) => Charge::Unknown("provider_unreachable"),
            };
        }
        match status.as_u16() {
            408 | 409 | 425 | 429 => Charge::Unknown("provider_busy"),
            400..=499 => Charge::Declined,
            500..=599 => Charge::Unknown("provider_5xx"),
            _ => Charge::Unknown("provider_unexpected_status"),
        }
    }
}
