//! Configuration from the environment, as Cloud Run passes it.
//!
//! Every setting is validated before the service binds its port; a missing or invalid
//! one stops start-up with a one-line error naming the variable (never echoing its
//! value), and the process exits 1.

use chrono::TimeDelta;
use command_journal::identity::Environment;
use command_journal::sends::ProviderLookup;
use command_journal::{Concurrency, JournalError, ProviderAccount, Target};
use command_journal_stripe::{Account, SecretKey, Stripe, StripeConfig};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// The port Cloud Run sets; 8080 when unset.
pub const DEFAULT_PORT: u16 = 8080;
/// `PROVIDER_TIMEOUT_MS` when unset: the upper bound of one provider call (a POST or
/// a lookup); the lease's remaining time may shorten a POST's, and what is left of
/// the journal's deadline either.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(30);
/// `FIRESTORE_DEADLINE_MS` when unset: the bound on each journal call, retries and
/// the provider's calls included. The journal's own default has no such bound (10 attempts of up to 10 s
/// each), which would keep a client about 100 s for a 503 while Firestore does not
/// answer.
pub const FIRESTORE_DEADLINE: Duration = Duration::from_secs(15);
/// `HTTP_HEADER_TIMEOUT_MS` when unset.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// `HTTP_BODY_TIMEOUT_MS` when unset.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// `HTTP_WRITE_TIMEOUT_MS` when unset.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// `HTTP_MAX_CONNECTIONS` when unset.
pub const MAX_CONNECTIONS: usize = 1000;
/// `HTTP_MAX_REQUESTS` when unset.
pub const MAX_REQUESTS: usize = 250;
/// `PROVIDER_KEY_RETENTION_SECONDS` when unset: one day.
pub const DEFAULT_KEY_RETENTION_SECONDS: i64 = 86_400;
/// `PROVIDER_LOOKUP` when unset, for a provider of the charge contract: it answers
/// lookups from its idempotency-key store, which forgets a key after the retention
/// (the plan's default). A Stripe client's lookup is its own ([`stripe_config`]).
pub const DEFAULT_LOOKUP: ProviderLookup = ProviderLookup::KeyStore;
/// `PROVIDER_LOOKUP_SETTLE_SECONDS` when unset: five minutes (the plan's default).
pub const DEFAULT_LOOKUP_SETTLE_SECONDS: i64 = 300;
/// The largest `JOURNAL_CLOCK_OFFSET_MS` either way: seven days.
pub const MAX_CLOCK_OFFSET_MS: i64 = 7 * 86_400_000;
/// `PROVIDER_NAME` of Stripe PaymentIntents (`STRIPE_SECRET_KEY`, `STRIPE_API_BASE`).
pub const STRIPE: &str = command_journal_stripe::client::PROVIDER;

/// The provider plan's parts that come from the environment. A provider of the charge
/// contract binds all of them with the payload (`service::provider::plan`); a Stripe
/// client binds its own plan (`Stripe::plan`: the account, mode and API version come
/// from here through its configuration, the key retention, lookup and settle window
/// from the client, and these fields must then agree with them, [`stripe_config`]).
/// Validated at start-up. Prints the provider only: the account stays out of logs.
#[derive(Clone, PartialEq, Eq)]
pub struct PlanSettings {
    /// `PROVIDER_NAME`: the provider slug: `stripe` for Stripe PaymentIntents, any
    /// other (`stub`, ...) for a provider of the service's charge contract.
    pub provider: String,
    /// `PROVIDER_ACCOUNT`: the provider account the charges go to.
    pub account: String,
    /// `PROVIDER_MODE`: `test`, or `live` only with `JOURNAL_ENVIRONMENT=production`.
    pub mode: String,
    /// `PROVIDER_API_VERSION`: the provider API version the charges are made with.
    pub api_version: String,
    /// `PROVIDER_KEY_RETENTION_SECONDS`: how long the provider keeps an idempotency
    /// key (default one day); the send cutoff is derived from it.
    pub key_retention_seconds: i64,
    /// `PROVIDER_LOOKUP`: what the provider's lookup answers from, `key_store` (the
    /// default of the charge contract: its idempotency keys, forgotten after the
    /// retention) or `durable` (its own records, never forgotten: the stub provider);
    /// with Stripe, the client's (`durable` for its search).
    pub lookup: ProviderLookup,
    /// `PROVIDER_LOOKUP_SETTLE_SECONDS`: how long the provider's lookup may take to
    /// see a charge (default 300).
    pub lookup_settle_seconds: i64,
}

impl std::fmt::Debug for PlanSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanSettings")
            .field("provider", &self.provider)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl PlanSettings {
    /// Where a charge-contract provider's charges and lookups go: the provider,
    /// account and mode, and its lookup, as the recovery job declares them
    /// (`RecoverOptions::account`), so that its "not found" can prove an absence at
    /// the account each plan was bound to. A Stripe client declares its own
    /// (`Stripe::account`).
    pub fn account(&self) -> Result<ProviderAccount, JournalError> {
        Ok(
            ProviderAccount::new(&self.provider, &self.account, &self.mode)?
                .with_lookup(self.lookup),
        )
    }
}

/// Bounds on what one client can hold of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// `HTTP_HEADER_TIMEOUT_MS`: a request's headers must arrive within this time of
    /// the server waiting for them, on a new connection as on a kept-alive idle one,
    /// or the connection is closed (so it is the idle timeout too).
    pub header_timeout: Duration,
    /// `HTTP_BODY_TIMEOUT_MS`: an authenticated request's body must arrive within
    /// this time, or the answer is 408 and the connection is closed.
    pub body_timeout: Duration,
    /// `HTTP_WRITE_TIMEOUT_MS`: a write of an answer that makes no progress for this
    /// long (a client that stopped reading, a pipelining client that never reads)
    /// closes the connection, so that no client pins one of `max_connections`.
    pub write_timeout: Duration,
    /// `HTTP_MAX_CONNECTIONS`: open connections; more wait in the listen backlog.
    pub max_connections: usize,
    /// `HTTP_MAX_REQUESTS`: checkouts handled at once; more wait for a slot.
    /// `/healthz` and `/metrics` never wait for one.
    pub max_requests: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: HEADER_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_requests: MAX_REQUESTS,
        }
    }
}

/// The validated settings of one service instance.
#[derive(Debug, Clone)]
pub struct Config {
    /// The TCP port to listen on (0 picks a free one, for tests).
    pub port: u16,
    /// `BIND_ADDRESS`: the address to listen on; `127.0.0.1` in emulator mode and
    /// `0.0.0.0` otherwise when unset.
    pub bind_address: IpAddr,
    /// The Google Cloud project: Firestore's and the Firebase ID tokens' audience.
    pub project: String,
    /// The emulator named by `FIRESTORE_EMULATOR_HOST`, or production Firestore.
    pub target: Target,
    /// The journal environment every command key is bound to.
    pub environment: Environment,
    /// Base URL of the payment provider: `PROVIDER_URL` (charges go to
    /// `{base}/v1/charges`), or with `PROVIDER_NAME=stripe` `STRIPE_API_BASE`
    /// (Stripe's own API when unset).
    pub provider_url: reqwest::Url,
    /// With `PROVIDER_NAME=stripe`: the Stripe client's settings (`STRIPE_SECRET_KEY`,
    /// the base URL, the plan's account and API version, `PROVIDER_TIMEOUT_MS`).
    pub stripe: Option<StripeConfig>,
    /// True when `FIREBASE_AUTH_EMULATOR_HOST` is set: unsigned emulator tokens are
    /// accepted (their claims are still checked).
    pub auth_emulator: bool,
    /// `PROVIDER_TIMEOUT_MS`: the upper bound of one provider call.
    pub provider_timeout: Duration,
    /// `FIRESTORE_DEADLINE_MS`: the bound on each journal call, its retries and
    /// provider calls included; past it the checkout answers 503 `retry`.
    pub firestore_deadline: Duration,
    /// Timeouts and caps of the HTTP server.
    pub http: HttpLimits,
    /// The provider plan's settings.
    pub plan: PlanSettings,
    /// `JOURNAL_CLOCK_OFFSET_MS`, accepted in emulator mode only: a signed offset
    /// added to the journal's clock (`service::clock`), so that local instances can
    /// disagree about the time and a recovery job can run "later". `None` when unset.
    pub clock_offset: Option<TimeDelta>,
    /// `JOURNAL_CONCURRENCY`: how the journal keeps a decision consistent with what it
    /// read, `preconditions` (the default) or `transaction` (Firestore transactions).
    pub concurrency: Concurrency,
    /// `CHECKOUT_FLOW` and its pages (`service::flow`): PaymentIntents or Checkout.
    pub flow: super::flow::Flow,
}

/// A setting that stops start-up: names the variable, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration error: {variable} {problem}")]
pub struct ConfigError {
    /// The environment variable at fault.
    pub variable: &'static str,
    /// What is wrong with it.
    pub problem: &'static str,
}

fn refuse(variable: &'static str, problem: &'static str) -> ConfigError {
    ConfigError { variable, problem }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `get` (empty values count as unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| get(name).filter(|value| !value.trim().is_empty());

        let port = match get("PORT") {
            None => DEFAULT_PORT,
            Some(text) => text
                .trim()
                .parse::<u16>()
                .map_err(|_| refuse("PORT", "must be a TCP port number (0-65535)"))?,
        };

        let (project_variable, project) = match get("GOOGLE_CLOUD_PROJECT") {
            Some(project) => ("GOOGLE_CLOUD_PROJECT", project),
            None => (
                "GCLOUD_PROJECT",
                get("GCLOUD_PROJECT").ok_or(refuse(
                    "GOOGLE_CLOUD_PROJECT",
                    "is missing (or set GCLOUD_PROJECT)",
                ))?,
            ),
        };
        if !valid_project_id(&project) {
            return Err(refuse(
                project_variable,
                "must be a project id of lowercase letters, digits and hyphens",
            ));
        }

        let emulator_host = get("FIRESTORE_EMULATOR_HOST");
        let environment = get("JOURNAL_ENVIRONMENT")
            .ok_or(refuse("JOURNAL_ENVIRONMENT", "is missing"))
            .and_then(|text| {
                Environment::parse(text.trim()).map_err(|_| {
                    refuse(
                        "JOURNAL_ENVIRONMENT",
                        "must be emulator, test, staging or production",
                    )
                })
            })?;
        let target = match (&emulator_host, environment) {
            (Some(host), Environment::Emulator) => Target::Emulator(host.trim().to_owned()),
            (None, Environment::Emulator) => {
                return Err(refuse(
                    "JOURNAL_ENVIRONMENT",
                    "is emulator but FIRESTORE_EMULATOR_HOST is not set",
                ));
            }
            (Some(_), _) => {
                return Err(refuse(
                    "JOURNAL_ENVIRONMENT",
                    "must be emulator while FIRESTORE_EMULATOR_HOST is set",
                ));
            }
            (None, _) => Target::Production,
        };

        let auth_emulator = get("FIREBASE_AUTH_EMULATOR_HOST").is_some();
        if auth_emulator && environment != Environment::Emulator {
            return Err(refuse(
                "FIREBASE_AUTH_EMULATOR_HOST",
                "is only accepted with JOURNAL_ENVIRONMENT=emulator",
            ));
        }

        let bind_address = match get("BIND_ADDRESS") {
            Some(text) => text
                .trim()
                .parse::<IpAddr>()
                .map_err(|_| refuse("BIND_ADDRESS", "must be an IPv4 or IPv6 address"))?,
            None if environment == Environment::Emulator => IpAddr::V4(Ipv4Addr::LOCALHOST),
            None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        };

        let millis = |variable: &'static str, default: Duration| match get(variable) {
            None => Ok(default),
            Some(text) => match text.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
                _ => Err(refuse(
                    variable,
                    "must be a positive number of milliseconds",
                )),
            },
        };
        let count = |variable: &'static str, default: usize| match get(variable) {
            None => Ok(default),
            Some(text) => match text.trim().parse::<usize>() {
                Ok(n) if (1..=100_000).contains(&n) => Ok(n),
                _ => Err(refuse(variable, "must be a whole number from 1 to 100000")),
            },
        };
        let provider_timeout = millis("PROVIDER_TIMEOUT_MS", PROVIDER_TIMEOUT)?;
        let firestore_deadline = millis("FIRESTORE_DEADLINE_MS", FIRESTORE_DEADLINE)?;
        let http = HttpLimits {
            header_timeout: millis("HTTP_HEADER_TIMEOUT_MS", HEADER_TIMEOUT)?,
            body_timeout: millis("HTTP_BODY_TIMEOUT_MS", BODY_TIMEOUT)?,
            write_timeout: millis("HTTP_WRITE_TIMEOUT_MS", WRITE_TIMEOUT)?,
            max_connections: count("HTTP_MAX_CONNECTIONS", MAX_CONNECTIONS)?,
            max_requests: count("HTTP_MAX_REQUESTS", MAX_REQUESTS)?,
        };

        // Stripe's base URL is its own variable; the rest of the plan is read after
        // the URL, as before Stripe had one.
        let stripe_provider = get("PROVIDER_NAME").is_some_and(|name| name.trim() == STRIPE);
        let url_variable = if stripe_provider {
            "STRIPE_API_BASE"
        } else {
            "PROVIDER_URL"
        };
        let url_text = match get(url_variable) {
            Some(text) => text,
            None if stripe_provider => command_journal_stripe::config::DEFAULT_API_BASE.to_owned(),
            None => return Err(refuse("PROVIDER_URL", "is missing")),
        };
        let provider_url = parse_provider_url(url_text.trim(), environment)
            .ok_or(refuse(url_variable, "must be an absolute http(s) base URL without query or credentials (https outside emulator and test)"))?;
        if environment == Environment::Emulator && !is_loopback(&provider_url) {
            return Err(refuse(
                url_variable,
                "must name a loopback host (127.0.0.1, ::1 or localhost) in emulator mode",
            ));
        }
        let mut plan = plan_settings(&get, environment)?;
        let stripe = if stripe_provider {
            Some(stripe_config(
                &get,
                &mut plan,
                &provider_url,
                provider_timeout,
            )?)
        } else {
            None
        };
        let flow = super::flow::Flow::from_lookup(&get, stripe.is_some())?;
        let stripe = super::flow::customer_window(&get, stripe, &flow)?;
        let clock_offset = clock_offset(&get, environment)?;
        let concurrency = match get("JOURNAL_CONCURRENCY") {
            None => Concurrency::default(),
            Some(text) => Concurrency::parse(text.trim()).map_err(|_| {
                refuse(
                    "JOURNAL_CONCURRENCY",
                    "must be preconditions or transaction",
                )
            })?,
        };

        Ok(Self {
            port,
            bind_address,
            project,
            target,
            environment,
            provider_url,
            stripe,
            auth_emulator,
            provider_timeout,
            firestore_deadline,
            http,
            plan,
            clock_offset,
            concurrency,
            flow,
        })
    }
}

/// `JOURNAL_CLOCK_OFFSET_MS`: a whole number of milliseconds, at most
/// [`MAX_CLOCK_OFFSET_MS`] either way, and only in emulator mode (a deployment's
/// journal runs on the system clock).
fn clock_offset(
    get: &impl Fn(&str) -> Option<String>,
    environment: Environment,
) -> Result<Option<TimeDelta>, ConfigError> {
    const VARIABLE: &str = "JOURNAL_CLOCK_OFFSET_MS";
    let Some(text) = get(VARIABLE) else {
        return Ok(None);
    };
    if environment != Environment::Emulator {
        return Err(refuse(
            VARIABLE,
            "is only accepted with JOURNAL_ENVIRONMENT=emulator (FIRESTORE_EMULATOR_HOST set)",
        ));
    }
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|ms| ms.abs() <= MAX_CLOCK_OFFSET_MS)
        .map(|ms| Some(TimeDelta::milliseconds(ms)))
        .ok_or(refuse(
            VARIABLE,
            "must be a whole number of milliseconds within seven days either way",
        ))
}

/// The `PROVIDER_*` plan variables, each required but the retention, the lookup and
/// its settle window, validated together by [`ProviderPlan::new`] and
/// [`ProviderPlan::with_lookup`] over empty parameters; a refusal names the plan
/// field, mapped back to the variable.
fn plan_settings(
    get: &impl Fn(&str) -> Option<String>,
    environment: Environment,
) -> Result<PlanSettings, ConfigError> {
    let required = |variable: &'static str| {
        get(variable)
            .map(|text| text.trim().to_owned())
            .ok_or(refuse(variable, "is missing"))
    };
    let provider = required("PROVIDER_NAME")?;
    let account = required("PROVIDER_ACCOUNT")?;
    let mode = required("PROVIDER_MODE")?;
    if mode == "live" && environment != Environment::Production {
        return Err(refuse(
            "PROVIDER_MODE",
            "may be live only with JOURNAL_ENVIRONMENT=production",
        ));
    }
    let api_version = required("PROVIDER_API_VERSION")?;
    let key_retention_seconds = match get("PROVIDER_KEY_RETENTION_SECONDS") {
        None => DEFAULT_KEY_RETENTION_SECONDS,
        Some(text) => text.trim().parse::<i64>().map_err(|_| {
            refuse(
                "PROVIDER_KEY_RETENTION_SECONDS",
                "must be a whole number of seconds from 3600 to 2592000",
            )
        })?,
    };
    let lookup = match get("PROVIDER_LOOKUP") {
        None => DEFAULT_LOOKUP,
        Some(text) => ProviderLookup::parse(text.trim())
            .map_err(|_| refuse("PROVIDER_LOOKUP", LOOKUP_PROBLEM))?,
    };
    let lookup_settle_seconds = match get("PROVIDER_LOOKUP_SETTLE_SECONDS") {
        None => DEFAULT_LOOKUP_SETTLE_SECONDS,
        Some(text) => text
            .trim()
            .parse::<i64>()
            .map_err(|_| refuse("PROVIDER_LOOKUP_SETTLE_SECONDS", SETTLE_PROBLEM))?,
    };
    let settings = PlanSettings {
        provider,
        account,
        mode,
        api_version,
        key_retention_seconds,
        lookup,
        lookup_settle_seconds,
    };
    match super::provider::plan(&settings, &Value::Object(serde_json::Map::new())) {
        Ok(_) => Ok(settings),
        Err(JournalError::InvalidInput { field }) => Err(match field {
            "provider" => refuse(
                "PROVIDER_NAME",
                "must be a lowercase slug (a letter, then letters, digits or _; at most 63)",
            ),
            "account" => refuse(
                "PROVIDER_ACCOUNT",
                "must be 1 to 255 characters without control characters",
            ),
            "mode" => refuse("PROVIDER_MODE", "must be test or live"),
            "apiVersion" => refuse(
                "PROVIDER_API_VERSION",
                "must be 1 to 64 printable ASCII characters without spaces",
            ),
            "keyRetentionSeconds" => refuse(
                "PROVIDER_KEY_RETENTION_SECONDS",
                "must be a whole number of seconds from 3600 to 2592000",
            ),
            "lookup" => refuse("PROVIDER_LOOKUP", LOOKUP_PROBLEM),
            "lookupSettleSeconds" => refuse("PROVIDER_LOOKUP_SETTLE_SECONDS", SETTLE_PROBLEM),
            // The operation, endpoint and parameters are this file's constants.
            _ => refuse("PROVIDER_NAME", "does not make a valid provider plan"),
        }),
        Err(_) => Err(refuse(
            "PROVIDER_NAME",
            "does not make a valid provider plan",
        )),
    }
}

/// The Stripe client of `PROVIDER_NAME=stripe`: `STRIPE_SECRET_KEY` (required, its mode
/// `PROVIDER_MODE`), the plan's account (`PROVIDER_ACCOUNT`, an `acct_` id: the key's
/// own account) and API version (`Stripe-Version`), the base URL and the timeout. The
/// client binds its plans itself (`Stripe::plan`), with its own key retention, lookup
/// and settle window ([`command_journal_stripe::PlanTerms`]): `plan` takes them, and
/// each of `PROVIDER_KEY_RETENTION_SECONDS`, `PROVIDER_LOOKUP` and
/// `PROVIDER_LOOKUP_SETTLE_SECONDS` that is set must be the client's, so that no
/// deployment believes it binds another.
fn stripe_config(
    get: &impl Fn(&str) -> Option<String>,
    plan: &mut PlanSettings,
    base: &reqwest::Url,
    timeout: Duration,
) -> Result<StripeConfig, ConfigError> {
    let key = get("STRIPE_SECRET_KEY").ok_or(refuse("STRIPE_SECRET_KEY", "is missing"))?;
    let key = SecretKey::new(key.trim()).map_err(|_| {
        refuse(
            "STRIPE_SECRET_KEY",
            "must be a Stripe secret or restricted key (sk_ or rk_, test or live)",
        )
    })?;
    if key.mode() != plan.mode {
        return Err(refuse(
            "PROVIDER_MODE",
            "must be the mode of STRIPE_SECRET_KEY (test for a _test_ key, live for a _live_ key)",
        ));
    }
    let mut config = StripeConfig::new(key, &plan.api_version, Account::Own(plan.account.clone()));
    config.api_base = base.as_str().to_owned();
    config.timeout = timeout;
    let terms = match Stripe::new(config.clone()) {
        Ok(client) => client.terms(),
        Err(command_journal_stripe::ConfigError::Account) => {
            return Err(refuse(
                "PROVIDER_ACCOUNT",
                "must be a Stripe account id (acct_...) with PROVIDER_NAME=stripe",
            ));
        }
        Err(command_journal_stripe::ConfigError::ApiVersion) => {
            return Err(refuse(
                "PROVIDER_API_VERSION",
                "must be 1 to 64 printable ASCII characters without spaces",
            ));
        }
        Err(_) => return Err(refuse("STRIPE_API_BASE", "does not make a Stripe client")),
    };
    let set = |variable: &str| get(variable).is_some();
    let differs = [
        (
            "PROVIDER_KEY_RETENTION_SECONDS",
            plan.key_retention_seconds != terms.key_retention_seconds,
        ),
        ("PROVIDER_LOOKUP", plan.lookup != terms.lookup),
        (
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
            plan.lookup_settle_seconds != terms.lookup_settle_seconds,
        ),
    ];
    if let Some((variable, _)) = differs
        .into_iter()
        .find(|(variable, differs)| set(variable) && *differs)
    {
        return Err(refuse(
            variable,
            "is the Stripe client's own with PROVIDER_NAME=stripe (Stripe::plan binds it): unset it",
        ));
    }
    plan.key_retention_seconds = terms.key_retention_seconds;
    plan.lookup = terms.lookup;
    plan.lookup_settle_seconds = terms.lookup_settle_seconds;
    Ok(config)
}

/// Why `PROVIDER_LOOKUP` was refused.
const LOOKUP_PROBLEM: &str = "must be key_store or durable";
/// Why `PROVIDER_LOOKUP_SETTLE_SECONDS` was refused.
const SETTLE_PROBLEM: &str = "must be a whole number of seconds from 0 to 86400, and with \
     PROVIDER_LOOKUP=key_store at most a quarter of PROVIDER_KEY_RETENTION_SECONDS less 60";

fn valid_project_id(project: &str) -> bool {
    (1..=100).contains(&project.len())
        && project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The URL's host is `localhost` or a loopback address.
fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

fn parse_provider_url(text: &str, environment: Environment) -> Option<reqwest::Url> {
    let url = reqwest::Url::parse(text).ok()?;
    let plain_http_allowed = matches!(environment, Environment::Emulator | Environment::Test);
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && plain_http_allowed);
    let ok = scheme_ok
        && url.has_host()
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    ok.then_some(url)
}

impl Config {
    /// `{PROVIDER_URL}/v1/charges`, keeping any base path.
    pub fn charges_url(&self) -> reqwest::Url {
        let mut url = self.provider_url.clone();
        let path = format!("{}/v1/charges", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }
}
