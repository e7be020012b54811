//! The refusal of a client's settings: names the setting, never its value.

use std::fmt;

/// A setting the client refuses. Names the setting, never its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Not a Stripe secret or restricted key.
    SecretKey,
    /// Not an absolute http(s) URL without query, fragment or credentials.
    ApiBase,
    /// Not 1 to 64 printable ASCII characters without spaces.
    ApiVersion,
    /// Not `acct_` followed by letters, digits or `_`.
    Account,
    /// A zero timeout.
    Timeout,
    /// The HTTP client could not be built.
    Client,
    /// A Checkout success or cancel URL that is not an absolute `https` URL (or
    /// `http` to a loopback host), or a product name that is not 1 to 250 printable
    /// characters.
    Pages,
    /// A customer window under 60 s or over 64,800 s (the cutoff span of Stripe's
    /// 24 h key retention).
    CustomerWindow,
    /// A Checkout client's customer window under 1,920 s: Stripe takes a session's
    /// `expires_at` no sooner than 30 minutes after its create.
    CheckoutWindow,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::SecretKey => "the Stripe secret key is not one (sk_ or rk_, test or live)",
            Self::ApiBase => "the Stripe API base is not an absolute http(s) URL",
            Self::ApiVersion => "the Stripe API version is not 1 to 64 printable characters",
            Self::Account => "the Stripe account is not an acct_ id",
            Self::Timeout => "the Stripe request timeout is zero",
            Self::Client => "the HTTP client could not be built",
            Self::Pages => "the Checkout pages are not https URLs with a product name",
            Self::CustomerWindow => "the customer window is not 60 to 64800 seconds",
            Self::CheckoutWindow => "the Checkout customer window is under 1920 seconds",
        })
    }
}

impl std::error::Error for ConfigError {}
