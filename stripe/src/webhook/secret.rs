//! An endpoint's signing secrets: each checked once, used only as an HMAC key, and
//! never printed.

use std::fmt;

/// The most secrets one endpoint holds at once: Stripe keeps a rolled secret active
/// beside the new one for up to 24 hours, so two is the usual number.
pub const MAX_SECRETS: usize = 4;

/// One webhook endpoint's signing secret (`whsec_…`). `Debug` prints
/// `WebhookSecret(<redacted>)`; there is no `Display`, and no error of this package
/// carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// A secret or a list of secrets the verifier refuses. Names no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretError {
    /// Not `whsec_` followed by 1 to 240 ASCII letters and digits.
    NotASecret,
    /// No secret, more than [`MAX_SECRETS`], or the same secret twice.
    Count,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotASecret => "a webhook signing secret is not whsec_ and letters or digits",
            Self::Count => "the webhook signing secrets are none, too many, or repeated",
        })
    }
}

impl std::error::Error for SecretError {}

impl WebhookSecret {
    /// Checks `text`: `whsec_`, then 1 to 240 ASCII letters or digits.
    /// [`SecretError::NotASecret`] otherwise (the text is never echoed).
    pub fn new(text: &str) -> Result<Self, SecretError> {
        let rest = text.strip_prefix("whsec_").ok_or(SecretError::NotASecret)?;
        let valid =
            (1..=240).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric());
        valid
            .then(|| Self(text.to_owned()))
            .ok_or(SecretError::NotASecret)
    }

    /// The HMAC key: the whole secret text, prefix included, as Stripe's own libraries
    /// key it.
    pub(crate) fn key(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The secrets an endpoint accepts at once (during a roll, the old one and the new
/// one): 1 to [`MAX_SECRETS`], no two equal. `Debug` prints only how many.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecrets(Vec<WebhookSecret>);

impl fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookSecrets")
            .field("count", &self.0.len())
            .finish()
    }
}

impl WebhookSecrets {
    /// The secrets `secrets`: [`SecretError::Count`] for none, more than
    /// [`MAX_SECRETS`], or one given twice.
    pub fn new(secrets: Vec<WebhookSecret>) -> Result<Self, SecretError> {
        let repeated = secrets
            .iter()
            .enumerate()
            .any(|(i, secret)| secrets[..i].contains(secret));
        if secrets.is_empty() || secrets.len() > MAX_SECRETS || repeated {
            return Err(SecretError::Count);
        }
        Ok(Self(secrets))
    }

    /// The comma-separated list `text` (as a variable holds it during a roll, such as
    /// `whsec_new,whsec_old`), each checked by [`WebhookSecret::new`]. No spaces.
    pub fn from_list(text: &str) -> Result<Self, SecretError> {
        let secrets = text
            .split(',')
            .map(WebhookSecret::new)
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(secrets)
    }

    /// The secrets, in the order given.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &WebhookSecret> {
        self.0.iter()
    }
}
