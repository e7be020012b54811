//! The HTTP client: one create-and-confirm, one search, one listing, each bounded and
//! classified ([`crate::answer`]). Redirects are never followed, and nothing here logs.

use crate::answer::{self, LookupAnswer, SendAnswer};
use crate::charge::Charge;
use crate::config::{Account, LookupMethod, StripeConfig};
use crate::error::ConfigError;
use crate::intent::Expected;
use command_journal::sends::ProviderLookup;
use command_journal::time::SystemClock;
use command_journal::{Clock, JournalError, ProviderAccount, ProviderPlan, ProviderPlanRequest};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{Method, RequestBuilder, Url};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The plan's provider.
pub const PROVIDER: &str = "stripe";
/// The plan's operation: its provider idempotency key is attempt 1's.
pub const OPERATION: &str = "charge";
/// The plan's endpoint.
pub const ENDPOINT: &str = "POST /v1/payment_intents";
/// The operation of a Checkout plan ([`Stripe::checkout_plan`]).
pub const OPERATION_CHECKOUT: &str = "checkout";
/// The endpoint of a Checkout plan.
pub const ENDPOINT_CHECKOUT: &str = "POST /v1/checkout/sessions";
/// How long Stripe keeps an idempotency key: the plan's retention (an 18 h cutoff).
pub const KEY_RETENTION_SECONDS: i64 = 86_400;
/// The plan's settle window: Stripe's search shows a new intent after about a minute
/// (longer during an incident).
pub const LOOKUP_SETTLE_SECONDS: i64 = 300;
/// How far back a [`LookupMethod::List`] lookup reads: the retention and an hour for
/// the clocks' disagreement.
pub const LIST_WINDOW_SECONDS: i64 = KEY_RETENTION_SECONDS + 3_600;
/// How far back a search's "not found" is confirmed by the listing: two hours of
/// search lag (Stripe's "about a minute" many times over, as in an incident) and an
/// hour for the clocks' disagreement. An intent older than that is taken to be
/// searchable; the listing reads only what the search might not show yet, so a busy
/// day behind it costs nothing.
pub const SEARCH_CONFIRM_WINDOW_SECONDS: i64 = 3 * 3_600;
/// The pages of 100 intents one listing reads at most; past them it answers
/// unavailable (never "not found").
pub const MAX_LIST_PAGES: usize = 50;

/// One HTTP answer: its status, headers and body.
pub(crate) struct Answered {
    pub(crate) status: reqwest::StatusCode,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Answered {
    /// Whether Stripe replayed it (`Idempotent-Replayed: true`).
    pub(crate) fn replayed(&self) -> bool {
        answer::replayed(&self.headers)
    }
}

/// What every plan of a [`Stripe`] client binds besides the payment itself: Stripe's
/// key retention, the client's lookup and the settle window its lookups need. A
/// service reads them from the client rather than restating them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanTerms {
    /// How long Stripe keeps an idempotency key ([`KEY_RETENTION_SECONDS`]).
    pub key_retention_seconds: i64,
    /// The plans' lookup ([`LookupMethod::plan_lookup`]): `final_state`, since Stripe
    /// may complete a request it never answered, so no lookup proves an absence.
    pub lookup: ProviderLookup,
    /// How long a new intent may take to show in a lookup
    /// ([`LOOKUP_SETTLE_SECONDS`]).
    pub lookup_settle_seconds: i64,
    /// The customer's window, seconds after an attempt's first send
    /// ([`StripeConfig::customer_window_seconds`]); `None`: until the cutoff.
    pub customer_window_seconds: Option<i64>,
}

impl PlanTerms {
    /// `plan` with these terms' lookup, settle window and customer window.
    pub(crate) fn bind(&self, plan: ProviderPlan) -> Result<ProviderPlan, JournalError> {
        let plan = plan.with_lookup(self.lookup, self.lookup_settle_seconds)?;
        match self.customer_window_seconds {
            Some(seconds) => plan.with_customer_window(seconds),
            None => Ok(plan),
        }
    }
}

/// A Stripe client for one account: the plan it binds and the provider it drives.
/// `Debug` shows the configuration without the key or the account.
#[derive(Clone)]
pub struct Stripe {
    http: reqwest::Client,
    base: Url,
    bearer: HeaderValue,
    config: StripeConfig,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Stripe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stripe")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Stripe {
    /// Checks `config` and builds the HTTP client.
    pub fn new(config: StripeConfig) -> Result<Self, ConfigError> {
        let base = config.check()?;
        let bearer = config.secret_key.bearer()?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ConfigError::Client)?;
        Ok(Self {
            http,
            base,
            bearer,
            config,
            clock: Arc::new(SystemClock),
        })
    }

    /// The same client reading `clock` for a listing's window (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// This client's clock, in Unix seconds (a session's `expires_at` clamp).
    pub(crate) fn now_seconds(&self) -> i64 {
        self.clock.now().timestamp()
    }

    /// `test` or `live`, by the secret key.
    pub fn mode(&self) -> &'static str {
        self.config.secret_key.mode()
    }

    /// The configuration.
    pub fn config(&self) -> &StripeConfig {
        &self.config
    }

    /// The terms every plan of this client binds ([`PlanTerms`]).
    pub fn terms(&self) -> PlanTerms {
        PlanTerms {
            key_retention_seconds: KEY_RETENTION_SECONDS,
            lookup: self.config.lookup.plan_lookup(),
            lookup_settle_seconds: LOOKUP_SETTLE_SECONDS,
            customer_window_seconds: self.config.customer_window_seconds,
        }
    }

    /// The plan of a payment of `parameters`: provider `stripe`, this account, mode
    /// and API version, operation `charge`, endpoint `POST /v1/payment_intents`, and
    /// this client's [`terms`](Self::terms): a 24 h key retention, the lookup of its
    /// method with a 300 s settle window, and its customer window when configured (a
    /// 3-D Secure intent its customer abandoned is canceled at its end).
    ///
    /// Parameters no intent can be made from ([`Charge::from_parameters`]) are
    /// `invalid_input` on `parameters`, before anything is bound.
    pub fn plan(&self, parameters: &Value) -> Result<ProviderPlan, JournalError> {
        Charge::from_parameters(parameters).map_err(|_| JournalError::invalid("parameters"))?;
        let terms = self.terms();
        terms.bind(ProviderPlan::new(ProviderPlanRequest {
            provider: PROVIDER,
            account: self.config.account.id(),
            mode: self.mode(),
            api_version: &self.config.api_version,
            operation: OPERATION,
            endpoint: ENDPOINT,
            parameters,
            key_retention_seconds: terms.key_retention_seconds,
        })?)
    }

    /// Where this client's requests go and what its lookups answer from, as a
    /// recovery job declares it: `final_state`, so that its "not found" proves no
    /// absence of any plan, a plan bound `durable` or `key_store` before Stripe plans
    /// were `final_state` included (Stripe may complete a request it never answered).
    pub fn account(&self) -> Result<ProviderAccount, JournalError> {
        Ok(
            ProviderAccount::new(PROVIDER, self.config.account.id(), self.mode())?
                .with_lookup(ProviderLookup::FinalState),
        )
    }

    pub(crate) fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut url = self.base.clone();
        url.set_path(&format!("{}{path}", self.base.path().trim_end_matches('/')));
        let mut request = self
            .http
            .request(method, url)
            .header(AUTHORIZATION, self.bearer.clone())
            .header("Stripe-Version", &self.config.api_version)
            .timeout(self.config.timeout);
        if let Account::Connected(id) = &self.config.account {
            request = request.header("Stripe-Account", sensitive(id));
        }
        request
    }

    /// One create-and-confirm of `charge` under `key`, answered within `deadline` (and
    /// the configured timeout).
    pub async fn create_and_confirm(
        &self,
        key: &str,
        charge: &Charge,
        deadline: Duration,
    ) -> SendAnswer {
        // The key is the journal's (`cj1-` and hex): one no header can carry is never
        // sent, since without it Stripe could not deduplicate a re-send.
        if !journal_key(key) {
            return SendAnswer::Unknown("provider_key");
        }
        let form = charge.form(key);
        match self
            .call(
                Method::POST,
                "/v1/payment_intents",
                Some(key),
                Some(&form),
                deadline,
            )
            .await
        {
            Ok(answered) => answer::classify_send(
                answered.status,
                &answered.headers,
                &answered.body,
                key,
                &Expected::of(charge),
            ),
            Err(code) => SendAnswer::Unknown(code),
        }
    }

    /// One request to `path`: a `POST` carries `form` (and `key` as its
    /// `Idempotency-Key`), bounded by `deadline` and the configured timeout. The fixed
    /// code `provider_timeout` or `provider_unreachable` when no answer came.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        form: Option<&[(&'static str, String)]>,
        deadline: Duration,
    ) -> Result<Answered, &'static str> {
        let mut request = self
            .request(method, path)
            .timeout(deadline.min(self.config.timeout));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", sensitive(key));
        }
        if let Some(form) = form {
            request = request.form(form);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return Err("provider_timeout"),
            Err(_) => return Err("provider_unreachable"),
        };
        let status = response.status();
        let headers = response.headers().clone();
        match response.text().await {
            Ok(body) => Ok(Answered {
                status,
                headers,
                body,
            }),
            Err(error) if error.is_timeout() => Err("provider_timeout"),
            Err(_) => Err("provider_unreachable"),
        }
    }

    /// What Stripe holds for `key`, as evidence about the request `expected` describes,
    /// by this client's lookup method.
    pub async fn find(&self, key: &str, expected: &Expected) -> LookupAnswer {
        // The key is the journal's (`cj1-` and hex): nothing to escape in a query.
        if !journal_key(key) {
            return LookupAnswer::Unavailable("lookup_key");
        }
        match self.config.lookup {
            // Stripe's search shows a new intent after about a minute, and far later in
            // an incident (when stored 5xx happen, and with them the lookups a replayed
            // one asks for at once): its "not found" is confirmed by the listing, read
            // after write, of the last three hours. An intent older than that is
            // searchable; one younger is listed. The listing can only turn "not found"
            // into evidence or unavailable.
            LookupMethod::Search => match self.search(key, expected).await {
                LookupAnswer::NotFound => {
                    self.list(key, expected, SEARCH_CONFIRM_WINDOW_SECONDS)
                        .await
                }
                other => other,
            },
            LookupMethod::List => self.list(key, expected, LIST_WINDOW_SECONDS).await,
        }
    }

    async fn search(&self, key: &str, expected: &Expected) -> LookupAnswer {
        let query = format!("metadata['journal_key']:'{key}'");
        let sent = self
            .request(Method::GET, "/v1/payment_intents/search")
            .query(&[("query", query.as_str()), ("limit", "10")])
            .send()
            .await;
        match read(sent).await {
            Ok((status, body)) => answer::classify_search(status, &body, key, expected),
            Err(code) => LookupAnswer::Unavailable(code),
        }
    }

    /// The intents created in the last `window` seconds (by this client's clock) that
    /// carry `key`, every page, as evidence.
    async fn list(&self, key: &str, expected: &Expected, window: i64) -> LookupAnswer {
        match self.listed(key, window).await {
            Ok(found) => answer::evidence(&found, key, expected),
            Err(code) => LookupAnswer::Unavailable(code),
        }
    }

    /// The intents created in the last `window` seconds (by this client's clock) that
    /// carry `key`, every page; the fixed code of why not.
    pub(crate) async fn listed(
        &self,
        key: &str,
        window: i64,
    ) -> Result<Vec<Map<String, Value>>, &'static str> {
        let since = (self.clock.now().timestamp() - window).to_string();
        let mut found = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut query = vec![("created[gte]", since.clone()), ("limit", "100".to_owned())];
            if let Some(id) = &after {
                query.push(("starting_after", id.clone()));
            }
            let sent = self
                .request(Method::GET, "/v1/payment_intents")
                .query(&query)
                .send()
                .await;
            let body = match read(sent).await {
                Ok((status, body)) if status == reqwest::StatusCode::OK => body,
                Ok(_) => return Err("lookup_status"),
                Err(code) => return Err(code),
            };
            let Some((intents, has_more)) = answer::page(&body, "list") else {
                return Err("lookup_body");
            };
            after = intents
                .last()
                .and_then(|intent| intent.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            found.extend(answer::keyed(intents, key));
            if !has_more {
                return Ok(found);
            }
            if after.is_none() {
                return Err("lookup_body");
            }
        }
        Err("lookup_too_many")
    }

    /// The intents Stripe's search finds carrying `key` (one page of ten); the fixed
    /// code of why not. For an intent made long ago (past the key's cutoff), which
    /// the search shows by then.
    pub(crate) async fn searched(
        &self,
        key: &str,
    ) -> Result<Vec<Map<String, Value>>, &'static str> {
        let query = format!("metadata['journal_key']:'{key}'");
        let sent = self
            .request(Method::GET, "/v1/payment_intents/search")
            .query(&[("query", query.as_str()), ("limit", "10")])
            .send()
            .await;
        match read(sent).await {
            Ok((status, body)) if status == reqwest::StatusCode::OK => {
                match answer::page(&body, "search_result") {
                    Some((_, true)) => Err("lookup_several"),
                    Some((intents, false)) => Ok(answer::keyed(intents, key)),
                    None => Err("lookup_body"),
                }
            }
            Ok((status, _)) if status == reqwest::StatusCode::BAD_REQUEST => {
                Err("search_unavailable")
            }
            Ok(_) => Err("lookup_status"),
            Err(code) => Err(code),
        }
    }

    /// The intents carrying `key` by this client's lookup method (search, or the
    /// listing of the last day and an hour).
    pub(crate) async fn located(&self, key: &str) -> Result<Vec<Map<String, Value>>, &'static str> {
        match self.config.lookup {
            LookupMethod::Search => self.searched(key).await,
            LookupMethod::List => self.listed(key, LIST_WINDOW_SECONDS).await,
        }
    }
}

/// Whether `key` has the shape of the journal's keys (`cj1-` and hex: non-empty, ASCII
/// letters, digits and `-`), which a header and a search query carry as they are.
pub(crate) fn journal_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A header value marked sensitive, so that no `Debug` of a request shows it. The key
/// is checked before (`create_and_confirm`), and an account id is `acct_` and
/// alphanumerics ([`StripeConfig`]'s check): a value no header can carry is never
/// made here, and would be sent empty (Stripe refuses it: nothing is charged).
pub(crate) fn sensitive(text: &str) -> HeaderValue {
    let mut value = HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// A lookup's status and body, or the fixed code of why there is none.
pub(crate) async fn read(
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<(reqwest::StatusCode, String), &'static str> {
    let response = match sent {
        Ok(response) => response,
        Err(error) if error.is_timeout() => return Err("lookup_timeout"),
        Err(_) => return Err("lookup_unreachable"),
    };
    let status = response.status();
    response
        .text()
        .await
        .map(|body| (status, body))
        .map_err(|_| "lookup_unreachable")
}
