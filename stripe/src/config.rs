//! What a [`Stripe`](crate::Stripe) client is configured with, each part checked before
//! the first request.

use command_journal::sends::ProviderLookup;
use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::secret::SecretKey;

/// Stripe's own API: the default [`StripeConfig::api_base`].
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The bound on one request when [`StripeConfig::new`] sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The shortest customer window a client takes: a minute (the journal's own minimum).
pub const MIN_CUSTOMER_WINDOW_SECONDS: i64 = command_journal::sends::MIN_CUSTOMER_WINDOW_SECONDS;
/// The longest: the cutoff span of Stripe's 24 h key retention (18 h), after which the
/// key is never re-sent.
pub const MAX_CUSTOMER_WINDOW_SECONDS: i64 = 64_800;
/// The shortest customer window a Checkout client takes: a session's `expires_at`
/// "must be between 30 minutes and 24 hours after the current time"
/// (<https://docs.stripe.com/api/checkout/sessions/create>, `expires_at`;
/// <https://docs.stripe.com/payments/checkout/managing-limited-inventory>), and the
/// adapter keeps a first send's `expires_at` at least 31 minutes out (a minute for the
/// clocks); 32 minutes, so that a send made within its lease (a minute) of the
/// attempt's first permit never needs that clamp and every re-send of the key carries
/// the same `expires_at` (another would be Stripe's `idempotency_error`).
pub const MIN_CHECKOUT_WINDOW_SECONDS: i64 = 1_920;

/// Whose PaymentIntents these are. The id is the plan's `account` either way.
#[derive(Clone, PartialEq, Eq)]
pub enum Account {
    /// The key's own account (`acct_…`): no `Stripe-Account` header.
    Own(String),
    /// A Connect account of the key's platform: every request carries
    /// `Stripe-Account: <id>`.
    Connected(String),
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The account id stays out of logs, as the plan's does.
        f.write_str(match self {
            Self::Own(_) => "Own(<redacted>)",
            Self::Connected(_) => "Connected(<redacted>)",
        })
    }
}

impl Account {
    /// The account id.
    pub fn id(&self) -> &str {
        match self {
            Self::Own(id) | Self::Connected(id) => id,
        }
    }

    fn valid(&self) -> bool {
        let id = self.id();
        id.strip_prefix("acct_").is_some_and(|rest| {
            (1..=250).contains(&rest.len())
                && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    }
}

/// How a lookup finds the intent that carries an attempt's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupMethod {
    /// `GET /v1/payment_intents/search?query=metadata['journal_key']:'<key>'`: Stripe's
    /// own records, kept after the key is forgotten (it reads `durable` records),
    /// and eventually consistent: a "not found" is confirmed by a listing (read after
    /// write) of the last three hours
    /// ([`SEARCH_CONFIRM_WINDOW_SECONDS`](crate::client::SEARCH_CONFIRM_WINDOW_SECONDS)),
    /// so that a lag longer than the plan's settle window (an incident) never proves
    /// an absence. An account with more intents in three hours than the listing reads
    /// ([`MAX_LIST_PAGES`](crate::client::MAX_LIST_PAGES) of 100) gets
    /// `lookup_too_many` instead of "not found".
    Search,
    /// Where search is not offered: `GET /v1/payment_intents?created[gte]=…` over the
    /// last day and an hour, every page, filtered on `metadata.journal_key`. Read after
    /// write, but only as far back as the window (it reads the `key_store` span of
    /// Stripe's 24 h retention).
    List,
}

impl LookupMethod {
    /// The plan's `lookup` for this method: `final_state` for both. Stripe may still
    /// complete a request it never answered (a 500 is indeterminate, and its incident
    /// remediation may roll the request forward: <https://docs.stripe.com/error-low-level>),
    /// and a request whose answer was lost may have met one, so no lookup's "not
    /// found" proves an attempt absent, however far back it reads: a re-send of the
    /// key (answered), the object's final state, or an event ends the attempt.
    pub fn plan_lookup(self) -> ProviderLookup {
        match self {
            Self::Search | Self::List => ProviderLookup::FinalState,
        }
    }
}

/// A client's settings. `Debug` shows the base URL, the API version, the mode and the
/// lookup method only.
#[derive(Clone)]
pub struct StripeConfig {
    /// The secret key: its prefix is the plan's `mode`.
    pub secret_key: SecretKey,
    /// Where the API is: [`DEFAULT_API_BASE`], or a stand-in's loopback URL in tests
    /// (plain `http` only to a loopback host: anything else is [`ConfigError::ApiBase`]).
    pub api_base: String,
    /// `Stripe-Version` of every request: the plan's `apiVersion`.
    pub api_version: String,
    /// Whose intents these are.
    pub account: Account,
    /// How lookups find an intent.
    pub lookup: LookupMethod,
    /// The bound on one request (a send's also by the journal's deadline).
    pub timeout: Duration,
    /// The customer's window in seconds, bound into every plan of the client
    /// (`customerWindowSeconds`): a customer asked to act (a 3-D Secure challenge, a
    /// Checkout page) has this long after the attempt's first send, then the journal
    /// cancels the intent or expires the session. `None` (the default): until the
    /// attempt's cutoff, 18 h. [`MIN_CUSTOMER_WINDOW_SECONDS`] to
    /// [`MAX_CUSTOMER_WINDOW_SECONDS`] ([`ConfigError::CustomerWindow`] otherwise); a
    /// Checkout client's at least [`MIN_CHECKOUT_WINDOW_SECONDS`]
    /// ([`ConfigError::CheckoutWindow`]).
    pub customer_window_seconds: Option<i64>,
}

impl fmt::Debug for StripeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripeConfig")
            .field("api_base", &self.api_base)
            .field("api_version", &self.api_version)
            .field("mode", &self.secret_key.mode())
            .field("lookup", &self.lookup)
            .field("customer_window_seconds", &self.customer_window_seconds)
            .finish_non_exhaustive()
    }
}

impl StripeConfig {
    /// Stripe's own API, search lookups, a 30 s bound on each request and no customer
    /// window (the customer may act until the attempt's cutoff).
    pub fn new(secret_key: SecretKey, api_version: &str, account: Account) -> Self {
        Self {
            secret_key,
            api_base: DEFAULT_API_BASE.to_owned(),
            api_version: api_version.to_owned(),
            account,
            lookup: LookupMethod::Search,
            timeout: DEFAULT_TIMEOUT,
            customer_window_seconds: None,
        }
    }

    /// Whether a Checkout Session may be made under this configuration: a customer
    /// window under [`MIN_CHECKOUT_WINDOW_SECONDS`] is [`ConfigError::CheckoutWindow`]
    /// (Stripe refuses an `expires_at` sooner than 30 minutes after the create).
    pub fn check_checkout(&self) -> Result<(), ConfigError> {
        match self.customer_window_seconds {
            Some(window) if window < MIN_CHECKOUT_WINDOW_SECONDS => {
                Err(ConfigError::CheckoutWindow)
            }
            _ => Ok(()),
        }
    }

    /// Checks every part but the key (checked when it was made).
    pub(crate) fn check(&self) -> Result<reqwest::Url, ConfigError> {
        let version = &self.api_version;
        if !(1..=64).contains(&version.len()) || !version.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ConfigError::ApiVersion);
        }
        if !self.account.valid() {
            return Err(ConfigError::Account);
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::Timeout);
        }
        let window = MIN_CUSTOMER_WINDOW_SECONDS..=MAX_CUSTOMER_WINDOW_SECONDS;
        if self
            .customer_window_seconds
            .is_some_and(|seconds| !window.contains(&seconds))
        {
            return Err(ConfigError::CustomerWindow);
        }
        let url = reqwest::Url::parse(&self.api_base).map_err(|_| ConfigError::ApiBase)?;
        // The secret key travels in every request's header: in clear text only to this
        // machine (a stand-in in tests), never over a network.
        let loopback = url.host_str().is_some_and(|host| {
            host.eq_ignore_ascii_case("localhost")
                || host == "[::1]"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        let scheme = url.scheme() == "https" || (url.scheme() == "http" && loopback);
        let ok = scheme
            && url.has_host()
            && url.query().is_none()
            && url.fragment().is_none()
            && url.username().is_empty()
            && url.password().is_none();
        ok.then_some(url).ok_or(ConfigError::ApiBase)
    }
}
