//! The journal's [`Provider`] for Stripe Checkout: one Checkout Session per attempt,
//! whose hosted page the customer opens (`CustomerMustAct(Open { url })`), read by
//! id for its current state, expired when the journal asks, and found after Stripe
//! forgets the key through its PaymentIntent (which carries the key in its metadata).

use crate::answer::{self, RetrieveAnswer};
use crate::charge::{Charge, InvalidParameters};
use crate::client::{ENDPOINT_CHECKOUT, OPERATION_CHECKOUT, PROVIDER, Stripe, journal_key};
use crate::retrieve::object_id;
use crate::session::{self, CheckoutPages};
use command_journal::sends::{LookupRequest, RetrieveRequest};
use command_journal::strict_json;
use command_journal::{
    JournalError, Provider, ProviderAnswer, ProviderPlan, ProviderPlanRequest, SendRequest,
};
use reqwest::Method;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

/// [`Provider`] for one Checkout payment ([`Stripe::checkout`]).
pub struct Checkout<'a> {
    stripe: &'a Stripe,
    charge: Result<Charge, InvalidParameters>,
    pages: CheckoutPages,
    recovery: bool,
    code: Mutex<Option<&'static str>>,
}

impl fmt::Debug for Checkout<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkout")
            .field("code", &self.code())
            .finish_non_exhaustive()
    }
}

impl Stripe {
    /// The plan of a Checkout payment of `parameters`: as [`Stripe::plan`]'s, with
    /// operation `checkout` and endpoint `POST /v1/checkout/sessions`. Its lookup
    /// (the key's PaymentIntent, by search) never answers "not found": a session's
    /// intent may not exist until the customer pays, so only a session read by id
    /// (expired) proves an attempt absent. The client's customer window, when
    /// configured, is bound too: the session's `expires_at` is its end. A window under
    /// 1,920 s ([`StripeConfig::check_checkout`](crate::StripeConfig::check_checkout))
    /// is `invalid_input` on `customerWindowSeconds`, before anything is bound.
    pub fn checkout_plan(&self, parameters: &Value) -> Result<ProviderPlan, JournalError> {
        Charge::from_parameters(parameters).map_err(|_| JournalError::invalid("parameters"))?;
        self.config()
            .check_checkout()
            .map_err(|_| JournalError::invalid("customerWindowSeconds"))?;
        let terms = self.terms();
        terms.bind(ProviderPlan::new(ProviderPlanRequest {
            provider: PROVIDER,
            account: self.config().account.id(),
            mode: self.mode(),
            api_version: &self.config().api_version,
            operation: OPERATION_CHECKOUT,
            endpoint: ENDPOINT_CHECKOUT,
            parameters,
            key_retention_seconds: terms.key_retention_seconds,
        })?)
    }

    /// The provider of one Checkout payment of `parameters` (the plan's), its hosted
    /// page returning the customer to `pages`.
    pub fn checkout(&self, parameters: &Value, pages: &CheckoutPages) -> Checkout<'_> {
        Checkout {
            stripe: self,
            charge: Charge::from_parameters(parameters),
            pages: pages.clone(),
            recovery: false,
            code: Mutex::new(None),
        }
    }

    /// The Checkout provider of a recovery job: retrieves (the plan's parameters
    /// come with each request) and lookups by key alone, never a send. Its retrieve
    /// may replay the key's create: a session charges nothing until the customer pays
    /// on its page, and since API version 2022-08-01 an open session has no
    /// PaymentIntent the lookup could find, so the replay is how a recovery job reads
    /// an open or expired session before the cutoff.
    pub fn checkout_recovery(&self, pages: &CheckoutPages) -> Checkout<'_> {
        Checkout {
            stripe: self,
            charge: Err(InvalidParameters {
                field: "parameters",
            }),
            pages: pages.clone(),
            recovery: true,
            code: Mutex::new(None),
        }
    }

    /// `GET /v1/checkout/sessions/{id}`: the session as it is now, if it is this
    /// request's.
    async fn session_by_id(
        &self,
        id: &str,
        key: &str,
        charge: Option<&Charge>,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        if !object_id(id) {
            return Err("provider_receipt");
        }
        let path = format!("/v1/checkout/sessions/{id}");
        let answered = self.call(Method::GET, &path, None, None, deadline).await?;
        if answered.status != reqwest::StatusCode::OK {
            return Err("retrieve_status");
        }
        owned(&answered.body, key, charge)
    }

    /// `POST /v1/checkout/sessions/{id}/expire`: the expired session, or
    /// `provider_unexpected_state` when it is no longer `open` ("Returns an error if
    /// the Checkout Session has already expired or isn't in an expireable state":
    /// `https://docs.stripe.com/api/checkout/sessions/expire`).
    async fn expire_session(
        &self,
        id: &str,
        key: &str,
        charge: Option<&Charge>,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        let path = format!("/v1/checkout/sessions/{id}/expire");
        let answered = self
            .call(Method::POST, &path, None, Some(&[]), deadline)
            .await?;
        match answered.status.as_u16() {
            200 => owned(&answered.body, key, charge),
            400 => Err("provider_unexpected_state"),
            _ => Err("provider_unexpected_status"),
        }
    }

    /// The session the key's PaymentIntent pays, after Stripe forgot the key: the
    /// intent by the lookup, then `GET /v1/checkout/sessions?payment_intent=…`.
    async fn session_by_intent(
        &self,
        key: &str,
        charge: Option<&Charge>,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        let intents = self.located(key).await?;
        let [intent] = intents.as_slice() else {
            return Err(if intents.is_empty() {
                "lookup_not_found"
            } else {
                "lookup_several"
            });
        };
        let Some(id) = intent
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| object_id(id))
        else {
            return Err("lookup_body");
        };
        let sent = self
            .request(Method::GET, "/v1/checkout/sessions")
            .query(&[("payment_intent", id), ("limit", "10")])
            .timeout(deadline)
            .send()
            .await;
        let (status, body) = crate::client::read(sent).await?;
        if status != reqwest::StatusCode::OK {
            return Err("lookup_status");
        }
        let Some((sessions, false)) = answer::page(&body, "list") else {
            return Err("lookup_body");
        };
        match sessions.as_slice() {
            [session] if session::owns(session, key, charge) => Ok(session.clone()),
            [_] => Err("lookup_mismatch"),
            [] => Err("lookup_not_found"),
            _ => Err("lookup_several"),
        }
    }

    /// `GET /v1/payment_intents/{id}` of the intent a session's answer rests on
    /// ([`session::intent_to_read`]: a complete session's, an expired one's): `None`
    /// when there is none, or it cannot be read.
    async fn session_intent(
        &self,
        session: &Map<String, Value>,
        key: &str,
        deadline: Duration,
    ) -> Option<Map<String, Value>> {
        let intent = session::intent_to_read(session)?;
        self.intent_by_id(
            intent.id(),
            key,
            &crate::intent::Expected::key_only(),
            deadline,
        )
        .await
        .ok()
    }

    /// What the current `session` answers ([`session::current`]), the intent it rests
    /// on read by id first.
    async fn session_answer(
        &self,
        session: &Map<String, Value>,
        key: &str,
        deadline: Duration,
    ) -> RetrieveAnswer {
        let intent = self.session_intent(session, key, deadline).await;
        session::current(session, intent.as_ref())
    }
}

/// A body that is a session of this request.
fn owned(
    body: &str,
    key: &str,
    charge: Option<&Charge>,
) -> Result<Map<String, Value>, &'static str> {
    let session = strict_json::parse_object(body).map_err(|_| "provider_receipt")?;
    if session::owns(&session, key, charge) {
        Ok(session)
    } else {
        Err("provider_mismatch")
    }
}

impl Checkout<'_> {
    /// The code of the last answer that was not a success, if any.
    pub fn code(&self) -> Option<&'static str> {
        *self.code.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, code: Option<&'static str>) {
        *self.code.lock().unwrap_or_else(|e| e.into_inner()) = code;
    }

    fn noted(&self, answer: RetrieveAnswer) -> ProviderAnswer {
        self.note(match &answer {
            RetrieveAnswer::Succeeded(_) => None,
            other => Some(other.code()),
        });
        answer::retrieve_result(answer)
    }

    /// One create of the key's session: a replay names the session (its state then
    /// is the first answer's, so it is read by id); a fresh 200 is current.
    async fn create(
        &self,
        key: &str,
        charge: &Charge,
        act_by: i64,
        resend: bool,
        deadline: Duration,
    ) -> RetrieveAnswer {
        if !journal_key(key) {
            return RetrieveAnswer::Unknown("provider_key");
        }
        let expires_at = session::expires_at(act_by, self.stripe.now_seconds(), resend);
        let form = session::form(charge, &self.pages, key, expires_at);
        let answered = match self
            .stripe
            .call(
                Method::POST,
                "/v1/checkout/sessions",
                Some(key),
                Some(&form),
                deadline,
            )
            .await
        {
            Ok(answered) => answered,
            Err(code) => return RetrieveAnswer::Unknown(code),
        };
        let replayed = answered.replayed();
        match answered.status.as_u16() {
            200 => match owned(&answered.body, key, Some(charge)) {
                Ok(session) if replayed => {
                    let Some(id) = session.get("id").and_then(Value::as_str) else {
                        return RetrieveAnswer::Unknown("provider_receipt");
                    };
                    match self
                        .stripe
                        .session_by_id(id, key, Some(charge), deadline)
                        .await
                    {
                        Ok(now) => self.stripe.session_answer(&now, key, deadline).await,
                        Err(code) => RetrieveAnswer::Unknown(code),
                    }
                }
                Ok(session) => self.stripe.session_answer(&session, key, deadline).await,
                Err(code) => RetrieveAnswer::Unknown(code),
            },
            // Stripe validates before it executes: a 400 made nothing and stored
            // nothing (`https://docs.stripe.com/api/idempotent_requests`), and these
            // parameters stay refused. A replayed 400 is the first request's.
            400 => match error_type(&answered.body) {
                Some("invalid_request_error") => RetrieveAnswer::Declined("invalid_request"),
                Some("idempotency_error") => {
                    RetrieveAnswer::Unknown("provider_idempotency_mismatch")
                }
                _ => RetrieveAnswer::Unknown("provider_unexpected_error"),
            },
            401 => RetrieveAnswer::Unknown("provider_authentication"),
            403 => RetrieveAnswer::Unknown("provider_permission"),
            404 => RetrieveAnswer::Unknown("provider_not_found"),
            409 => RetrieveAnswer::Unknown("provider_key_in_use"),
            429 => RetrieveAnswer::Unknown("provider_rate_limited"),
            500..=599 if replayed => RetrieveAnswer::Unknown("provider_replayed_5xx"),
            500 => RetrieveAnswer::Unknown("provider_500"),
            _ => RetrieveAnswer::Unknown("provider_unexpected_status"),
        }
    }

    /// The key's session, named by a replay of its create (the same key and form),
    /// then read by id for its current state.
    async fn replayed_session(
        &self,
        key: &str,
        charge: &Charge,
        act_by: i64,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        let expires_at = session::expires_at(act_by, self.stripe.now_seconds(), true);
        let form = session::form(charge, &self.pages, key, expires_at);
        let answered = self
            .stripe
            .call(
                Method::POST,
                "/v1/checkout/sessions",
                Some(key),
                Some(&form),
                deadline,
            )
            .await?;
        if answered.status != reqwest::StatusCode::OK {
            return Err("retrieve_replay");
        }
        let first = owned(&answered.body, key, Some(charge))?;
        let id = first
            .get("id")
            .and_then(Value::as_str)
            .ok_or("provider_receipt")?;
        self.stripe
            .session_by_id(id, key, Some(charge), deadline)
            .await
    }

    /// The key's session read by id (learned by a replay of the create before the
    /// cutoff, or through its intent after), expired first when `cancel` and still
    /// open.
    async fn current(
        &self,
        key: &str,
        charge: Option<&Charge>,
        act_by: i64,
        replayable: bool,
        cancel: bool,
        deadline: Duration,
    ) -> RetrieveAnswer {
        if !journal_key(key) {
            return RetrieveAnswer::Unknown("provider_key");
        }
        let by_replay = match charge {
            Some(charge) if replayable => {
                self.replayed_session(key, charge, act_by, deadline).await
            }
            _ => Err("retrieve_not_replayable"),
        };
        // A replay that names no session (a first send clamped its `expires_at`, so
        // this form is another's: `idempotency_error`) falls back to the session's
        // intent, as after the cutoff.
        let session = match by_replay {
            Ok(session) => Ok(session),
            Err(_) => self.stripe.session_by_intent(key, charge, deadline).await,
        };
        let session = match session {
            Ok(session) => session,
            Err(code) => return RetrieveAnswer::Unknown(code),
        };
        let open = session.get("status").and_then(Value::as_str) == Some("open");
        if !(cancel && open) {
            return self.stripe.session_answer(&session, key, deadline).await;
        }
        let Some(id) = session.get("id").and_then(Value::as_str) else {
            return RetrieveAnswer::Unknown("provider_receipt");
        };
        match self.stripe.expire_session(id, key, charge, deadline).await {
            Ok(expired) => self.stripe.session_answer(&expired, key, deadline).await,
            // Completed meanwhile: read it again and answer that, never open.
            Err("provider_unexpected_state") => {
                match self.stripe.session_by_id(id, key, charge, deadline).await {
                    Ok(now) => match self.stripe.session_answer(&now, key, deadline).await {
                        RetrieveAnswer::CustomerMustAct(_) => RetrieveAnswer::Unknown("open"),
                        other => other,
                    },
                    Err(code) => RetrieveAnswer::Unknown(code),
                }
            }
            Err(code) => RetrieveAnswer::Unknown(code),
        }
    }
}

/// The `error.type` of an error body.
fn error_type(body: &str) -> Option<&'static str> {
    let object = strict_json::parse_object(body).ok()?;
    match object.get("error")?.get("type")?.as_str()? {
        "invalid_request_error" => Some("invalid_request_error"),
        "idempotency_error" => Some("idempotency_error"),
        _ => Some("other"),
    }
}

impl Provider for Checkout<'_> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        if self.recovery {
            // `Journal::recover` never sends.
            return ProviderAnswer::Unknown;
        }
        let charge = match &self.charge {
            Ok(charge) => charge,
            Err(_) if request.resend => {
                self.note(Some("invalid_parameters"));
                return ProviderAnswer::Unknown;
            }
            Err(_) => {
                self.note(Some("invalid_parameters"));
                return ProviderAnswer::Declined;
            }
        };
        self.note(Some("provider_timeout"));
        let act_by = request.act_by.seconds();
        let answer = self
            .create(
                &request.key,
                charge,
                act_by,
                request.resend,
                request.deadline,
            )
            .await;
        self.noted(answer)
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        // The key's PaymentIntent, and the session it pays: a success or a final
        // refusal is evidence; "not found" never is (a session's intent may not
        // exist until the customer pays).
        // A recovery job knows the key alone.
        let charge = self.charge.as_ref().ok();
        let answer = match self
            .stripe
            .session_by_intent(&request.key, charge, request.deadline)
            .await
        {
            Ok(session) => {
                match self
                    .stripe
                    .session_answer(&session, &request.key, request.deadline)
                    .await
                {
                    found @ (RetrieveAnswer::Succeeded(_) | RetrieveAnswer::Declined(_)) => found,
                    RetrieveAnswer::CustomerMustAct(_) => RetrieveAnswer::Unknown("lookup_pending"),
                    RetrieveAnswer::Closed => RetrieveAnswer::Unknown("lookup_closed"),
                    other => other,
                }
            }
            Err(code) => RetrieveAnswer::Unknown(code),
        };
        self.noted(answer)
    }

    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        // The plan's parameters, as the request carries them (a recovery job's
        // provider serves every command): without them (a job's read, which carries
        // none) the session is found through its intent by the key alone.
        let charge = match &request.parameters {
            Value::Null => None,
            parameters => match Charge::from_parameters(parameters) {
                Ok(charge) => Some(charge),
                Err(_) => {
                    self.note(Some("invalid_parameters"));
                    return ProviderAnswer::Unknown;
                }
            },
        };
        let answer = self
            .current(
                &request.key,
                charge.as_ref(),
                request.act_by.seconds(),
                request.replayable,
                request.cancel,
                request.deadline,
            )
            .await;
        self.noted(answer)
    }
}
