//! The Stripe secret key: checked once, sent only as the `Authorization` header (marked
//! sensitive, so that no HTTP log shows it), and never printed.

use crate::error::ConfigError;
use reqwest::header::HeaderValue;
use std::fmt;

/// A Stripe secret or restricted key (`sk_test_…`, `sk_live_…`, `rk_test_…`,
/// `rk_live_…`). `Debug` prints `SecretKey(<redacted>)`; there is no `Display`, and no
/// error of this package carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey(String);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

/// The prefixes of Stripe's API keys, and the mode each one's requests run in.
const PREFIXES: [(&str, &str); 4] = [
    ("sk_test_", "test"),
    ("sk_live_", "live"),
    ("rk_test_", "test"),
    ("rk_live_", "live"),
];

impl SecretKey {
    /// Checks `text`: one of Stripe's key prefixes, then 1 to 240 ASCII letters,
    /// digits or `_`. [`ConfigError::SecretKey`] otherwise (the text is never echoed).
    pub fn new(text: &str) -> Result<Self, ConfigError> {
        let rest = PREFIXES
            .iter()
            .find_map(|(prefix, _)| text.strip_prefix(prefix))
            .ok_or(ConfigError::SecretKey)?;
        let valid = (1..=240).contains(&rest.len())
            && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        valid
            .then(|| Self(text.to_owned()))
            .ok_or(ConfigError::SecretKey)
    }

    /// `test` or `live`: the mode of every request made with this key, and the plan's
    /// `mode`.
    pub fn mode(&self) -> &'static str {
        PREFIXES
            .iter()
            .find(|(prefix, _)| self.0.starts_with(prefix))
            .map_or("test", |(_, mode)| mode)
    }

    /// The `Authorization` header's value, marked sensitive.
    pub(crate) fn bearer(&self) -> Result<HeaderValue, ConfigError> {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", self.0))
            .map_err(|_| ConfigError::SecretKey)?;
        value.set_sensitive(true);
        Ok(value)
    }
}
