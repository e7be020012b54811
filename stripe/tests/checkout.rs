//! The Checkout Sessions provider against the Stripe stand-in: a session made once per
//! key whose hosted page the customer opens; every status read by id (open, paid at
//! once, paid later by a delayed method or failed, expired, expired when asked);
//! found through its PaymentIntent after Stripe forgets the key; never two sessions
//! for one key; and no URL in any output.

mod stand_in;

use command_journal::sends::{AttemptNumber, CustomerAction, LookupRequest, RetrieveRequest};
use command_journal::{Provider, ProviderAnswer, SendRequest, Timestamp};
use command_journal_stripe::session::{self, CheckoutPages};
use command_journal_stripe::{
    Account, Charge, ConfigError, LookupMethod, RetrieveAnswer, SecretKey, Stripe, StripeConfig,
};
use serde_json::{Value, json};
use stand_in::session::Payment;
use stand_in::{SECRET, START, StandIn};
use std::sync::Arc;
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";
const SUCCESS: &str = "https://shop.example/CANARYreturn?session={CHECKOUT_SESSION_ID}";
const CANCEL: &str = "https://shop.example/CANARYcancel";
/// The customer's deadline: two hours after the stand-in's start.
const ACT_BY: i64 = START + 2 * 3_600;

/// A JSON object, as Stripe's objects are read.
type Object = serde_json::Map<String, Value>;

fn key(n: u64) -> String {
    format!("cj1-{n:064x}")
}

fn parameters() -> Value {
    json!({"amount": 4200, "currency": "EUR", "sku": "CANARYsku"})
}

fn pages() -> CheckoutPages {
    CheckoutPages::new(SUCCESS, CANCEL, "Order").expect("pages")
}

fn stripe(stand_in: &StandIn, lookup: LookupMethod) -> Stripe {
    let mut config = StripeConfig::new(
        SecretKey::new(SECRET).expect("key"),
        VERSION,
        Account::Own("acct_CANARYplatform".into()),
    );
    config.api_base = stand_in.url().to_owned();
    config.lookup = lookup;
    config.timeout = Duration::from_secs(10);
    let at = stand_in.clone();
    let clock = Arc::new(StandInClock(at));
    Stripe::new(config).expect("client").with_clock(clock)
}

/// The stand-in's clock as the adapter's (the session's `expires_at` clamp reads it).
struct StandInClock(StandIn);

impl command_journal::Clock for StandInClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.0.now(), 0).expect("a time")
    }
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("a time")
}

fn send_request(key: &str, resend: bool, act_by: i64) -> SendRequest {
    SendRequest {
        key: key.to_owned(),
        parameters: parameters(),
        deadline: Duration::from_secs(10),
        attempt: AttemptNumber::FIRST,
        resend,
        act_by: at(act_by),
    }
}

fn retrieve_request(key: &str, replayable: bool, cancel: bool) -> RetrieveRequest {
    RetrieveRequest {
        key: key.to_owned(),
        parameters: parameters(),
        attempt: AttemptNumber::FIRST,
        replayable,
        cancel,
        end_refusal: false,
        act_by: at(ACT_BY),
        deadline: Duration::from_secs(10),
    }
}

/// The hosted page's URL of an answer, or a panic.
fn url(answer: &ProviderAnswer) -> String {
    match answer {
        ProviderAnswer::CustomerMustAct(CustomerAction::Open { url }) => url.expose().to_owned(),
        other => panic!("not the hosted page: {other:?}"),
    }
}

fn session_id(stand_in: &StandIn) -> String {
    stand_in.sessions()[0]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

#[tokio::test]
async fn a_send_makes_one_session_and_every_retry_answers_its_page() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let key = key(1);
    let first = url(&provider.send(send_request(&key, false, ACT_BY)).await);
    assert_eq!(
        first,
        format!(
            "{}/stand-in/checkout/{}",
            stand_in.url(),
            session_id(&stand_in)
        )
    );
    // A lost answer's retry, a second tab, the return page before paying: the same
    // page, from Stripe (a replay, then the session read by id), never from storage.
    stand_in.advance(600);
    assert_eq!(
        url(&provider.send(send_request(&key, true, ACT_BY)).await),
        first
    );
    assert_eq!(
        url(&provider.retrieve(retrieve_request(&key, true, false)).await),
        first
    );
    assert_eq!(stand_in.sessions().len(), 1, "one session for the key");
    // The form: one line item of the plan's amount and currency, the pages, the
    // deadline, the key in both metadata; the same bytes on every re-send.
    let creates = stand_in.requests("POST", "/v1/checkout/sessions");
    assert_eq!(creates.len(), 3);
    assert!(creates.iter().skip(1).all(|seen| seen.replayed));
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    assert!(
        creates
            .iter()
            .all(|seen| seen.parameters == creates[0].parameters)
    );
    assert_eq!(
        creates[0].parameters,
        json!({
            "mode": "payment",
            "line_items": [{"price_data": {"currency": "eur", "unit_amount": 4200, "product_data": {"name": "Order"}}, "quantity": 1}],
            "success_url": SUCCESS,
            "cancel_url": CANCEL,
            "expires_at": ACT_BY,
            "metadata": {"journal_key": key},
            "payment_intent_data": {"metadata": {"journal_key": key}},
        })
    );
    // An open session has no PaymentIntent until its customer pays (Stripe's API
    // since 2022-08-01); its intent carries the key once made.
    assert_eq!(stand_in.sessions()[0]["payment_intent"], Value::Null);
    assert!(stand_in.intents().is_empty());
    assert!(
        stand_in
            .pay(&session_id(&stand_in), Payment::Card)
            .is_some()
    );
    assert_eq!(stand_in.intents()[0]["metadata"]["journal_key"], json!(key));
    assert_eq!(provider.code(), Some("customer_must_act"));
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_session_paid_at_once_is_the_payment_on_return() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let key = key(2);
    provider.send(send_request(&key, false, ACT_BY)).await;
    let id = session_id(&stand_in);
    let back = stand_in.pay(&id, Payment::Card).expect("open");
    assert_eq!(back, SUCCESS.replace("{CHECKOUT_SESSION_ID}", &id));
    stand_in.advance(61); // the search shows the session's intent after its lag
    for answer in [
        provider.retrieve(retrieve_request(&key, true, false)).await,
        // The same command's next call re-sends the key: the replay says `open`,
        // the session read by id says paid.
        provider.send(send_request(&key, true, ACT_BY)).await,
        provider
            .lookup(LookupRequest {
                key: key.clone(),
                deadline: Duration::from_secs(10),
            })
            .await,
    ] {
        match answer {
            // The envelope is its PaymentIntent's, as a PaymentIntents payment's.
            ProviderAnswer::Succeeded(envelope) => assert_eq!(
                envelope.value(),
                &json!({"id": "pi_CANARYstandin00000001", "amount": 4200, "currency": "eur", "status": "succeeded"})
            ),
            other => panic!("{other:?}"),
        }
    }
    // Asked to cancel after it was paid: nothing to expire, still the payment.
    assert!(matches!(
        provider.retrieve(retrieve_request(&key, true, true)).await,
        ProviderAnswer::Succeeded(_)
    ));
    assert!(
        stand_in
            .requests("POST", &format!("/v1/checkout/sessions/{id}/expire"))
            .is_empty()
    );
    assert_eq!(provider.code(), None);
    assert_eq!(stand_in.sessions().len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_delayed_payment_is_unknown_until_it_settles() {
    for succeeded in [true, false] {
        let stand_in = StandIn::start().await;
        let stripe = stripe(&stand_in, LookupMethod::Search);
        let provider = stripe.checkout(&parameters(), &pages());
        let key = key(3);
        provider.send(send_request(&key, false, ACT_BY)).await;
        let id = session_id(&stand_in);
        stand_in.pay(&id, Payment::Delayed).expect("open");
        // `complete` and `unpaid`: not final, whatever the journal asks.
        assert_eq!(
            provider.retrieve(retrieve_request(&key, true, false)).await,
            ProviderAnswer::Unknown
        );
        assert_eq!(provider.code(), Some("unpaid"));
        assert_eq!(
            provider.retrieve(retrieve_request(&key, true, true)).await,
            ProviderAnswer::Unknown
        );
        assert!(
            stand_in
                .requests("POST", &format!("/v1/checkout/sessions/{id}/expire"))
                .is_empty()
        );
        stand_in.advance(3 * 24 * 3_600); // the bank answers days later
        assert!(stand_in.settle(&id, succeeded));
        let answer = provider
            .retrieve(retrieve_request(&key, false, false))
            .await;
        if succeeded {
            assert!(matches!(answer, ProviderAnswer::Succeeded(_)), "{answer:?}");
        } else {
            // `checkout.session.async_payment_failed`: its intent refused.
            assert_eq!(answer, ProviderAnswer::Declined);
        }
        stand_in.assert_schemas_held();
    }
}

#[tokio::test]
async fn a_session_expires_at_its_deadline_and_is_closed() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let key = key(4);
    provider.send(send_request(&key, false, ACT_BY)).await;
    let id = session_id(&stand_in);
    stand_in.advance(ACT_BY - START - 1);
    assert!(matches!(
        provider.retrieve(retrieve_request(&key, true, false)).await,
        ProviderAnswer::CustomerMustAct(_)
    ));
    stand_in.advance(1);
    assert_eq!(
        provider.retrieve(retrieve_request(&key, true, false)).await,
        ProviderAnswer::Closed
    );
    assert_eq!(
        stand_in.pay(&id, Payment::Card),
        None,
        "an expired session takes no payment"
    );
    assert!(
        stand_in.intents().is_empty(),
        "never paid: no intent ever made"
    );
    // The same key re-sent replays the first answer; read by id, still closed.
    assert_eq!(
        provider.send(send_request(&key, true, ACT_BY)).await,
        ProviderAnswer::Closed
    );
    assert_eq!(stand_in.sessions().len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn an_abandoned_session_is_expired_when_asked_and_closed() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let key = key(5);
    provider.send(send_request(&key, false, ACT_BY)).await;
    let id = session_id(&stand_in);
    assert_eq!(
        provider.retrieve(retrieve_request(&key, true, true)).await,
        ProviderAnswer::Closed
    );
    assert_eq!(stand_in.sessions()[0]["status"], json!("expired"));
    assert_eq!(stand_in.pay(&id, Payment::Card), None);
    // Asked again: already expired, no second expire.
    assert_eq!(
        provider.retrieve(retrieve_request(&key, true, true)).await,
        ProviderAnswer::Closed
    );
    assert_eq!(
        stand_in
            .requests("POST", &format!("/v1/checkout/sessions/{id}/expire"))
            .len(),
        1
    );
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn after_the_key_is_forgotten_the_session_is_found_by_its_intent() {
    for lookup in [LookupMethod::Search, LookupMethod::List] {
        let stand_in = StandIn::start().await;
        let stripe = stripe(&stand_in, lookup);
        let provider = stripe.checkout(&parameters(), &pages());
        let key = key(6);
        provider.send(send_request(&key, false, ACT_BY)).await;
        let id = session_id(&stand_in);
        stand_in.pay(&id, Payment::Card);
        stand_in.advance(19 * 3_600); // past the cutoff: the key is never sent again
        assert!(
            matches!(
                provider
                    .retrieve(retrieve_request(&key, false, false))
                    .await,
                ProviderAnswer::Succeeded(_)
            ),
            "{lookup:?}"
        );
        assert_eq!(stand_in.requests("POST", "/v1/checkout/sessions").len(), 1);
        assert_eq!(stand_in.requests("GET", "/v1/checkout/sessions").len(), 1);
        stand_in.assert_schemas_held();
    }
}

#[tokio::test]
async fn a_recovery_job_retrieves_with_the_plans_parameters_and_never_sends() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(12);
    stripe
        .checkout(&parameters(), &pages())
        .send(send_request(&key, false, ACT_BY))
        .await;
    let recovery = stripe.checkout_recovery(&pages());
    assert_eq!(
        recovery.send(send_request(&key, true, ACT_BY)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(
        stand_in.requests("POST", "/v1/checkout/sessions").len(),
        1,
        "no send"
    );
    assert!(matches!(
        recovery.retrieve(retrieve_request(&key, true, false)).await,
        ProviderAnswer::CustomerMustAct(_)
    ));
    stand_in.pay(&session_id(&stand_in), Payment::Card);
    stand_in.advance(61);
    let lookup = LookupRequest {
        key: key.clone(),
        deadline: Duration::from_secs(10),
    };
    assert!(matches!(
        recovery.lookup(lookup).await,
        ProviderAnswer::Succeeded(_)
    ));
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_lookup_never_answers_not_found() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let lookup = |n| LookupRequest {
        key: key(n),
        deadline: Duration::from_secs(10),
    };
    stand_in.advance(600);
    // No session for the key: unknown, never an absence.
    assert_eq!(provider.lookup(lookup(7)).await, ProviderAnswer::Unknown);
    assert_eq!(provider.code(), Some("lookup_not_found"));
    // An open session, then an expired one: no intent carries the key (one is made
    // only when the customer pays), and no intent proves no session: unknown, never
    // an absence; closed is the retrieve's (by id) to say.
    provider.send(send_request(&key(8), false, ACT_BY)).await;
    stand_in.advance(120);
    assert_eq!(provider.lookup(lookup(8)).await, ProviderAnswer::Unknown);
    assert_eq!(provider.code(), Some("lookup_not_found"));
    stand_in.advance(3 * 3_600);
    assert_eq!(stand_in.sessions()[0]["status"], json!("expired"));
    assert_eq!(provider.lookup(lookup(8)).await, ProviderAnswer::Unknown);
    assert_eq!(provider.code(), Some("lookup_not_found"));
    // A session paid by a delayed method, its intent processing: not final.
    provider.send(send_request(&key(9), false, ACT_BY)).await;
    let paying = stand_in.sessions()[1]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(stand_in.pay(&paying, Payment::Delayed).is_some());
    stand_in.advance(120);
    assert_eq!(provider.lookup(lookup(9)).await, ProviderAnswer::Unknown);
    assert_eq!(provider.code(), Some("unpaid"));
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn expires_at_is_the_customers_deadline_clamped_into_stripes_window_on_a_first_send() {
    assert_eq!(session::expires_at(ACT_BY, START, false), ACT_BY);
    assert_eq!(
        session::expires_at(START + 60, START, false),
        START + 31 * 60
    );
    assert_eq!(
        session::expires_at(START + 48 * 3_600, START, false),
        START + 24 * 3_600 - 60
    );
    // A re-send repeats the deadline as it is (Stripe replays only the same bytes).
    assert_eq!(session::expires_at(START + 60, START, true), START + 60);
    // A first send whose deadline is too soon gets a session Stripe accepts.
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    url(&provider
        .send(send_request(&key(9), false, START + 60))
        .await);
    assert_eq!(stand_in.sessions()[0]["expires_at"], json!(START + 31 * 60));
    // A re-send of a key whose first send never reached Stripe, past the deadline:
    // refused before execution (nothing made), a final refusal.
    assert_eq!(
        provider
            .send(send_request(&key(10), true, START + 60))
            .await,
        ProviderAnswer::Declined
    );
    assert_eq!(provider.code(), Some("invalid_request"));
    assert_eq!(stand_in.sessions().len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn every_session_status_maps_as_the_table_says() {
    let charge = Charge::from_parameters(&parameters()).expect("charge");
    let session = |status: &str, payment: &str| {
        let value = json!({
            "id": "cs_test_1", "object": "checkout.session", "mode": "payment",
            "amount_total": 4200, "currency": "eur", "status": status,
            "payment_status": payment, "url": if status == "open" { json!("https://pay.example/x") } else { Value::Null },
            "metadata": {"journal_key": "cj1-ab"},
        });
        value.as_object().cloned().expect("an object")
    };
    let refused = json!({"object": "payment_intent", "status": "requires_payment_method",
        "last_payment_error": {"type": "card_error"}})
    .as_object()
    .cloned();
    let processing = json!({"object": "payment_intent", "status": "processing"})
        .as_object()
        .cloned();
    let succeeded = json!({"object": "payment_intent", "status": "succeeded", "id": "pi_1",
        "amount": 4200, "currency": "eur"})
    .as_object()
    .cloned();
    let rows: [(&str, &str, Option<&Object>, &str); 9] = [
        ("open", "unpaid", None, "customer_must_act"),
        ("complete", "paid", succeeded.as_ref(), "succeeded"),
        ("complete", "paid", None, "paid_intent"),
        ("complete", "unpaid", succeeded.as_ref(), "succeeded"),
        ("complete", "unpaid", processing.as_ref(), "unpaid"),
        ("complete", "unpaid", refused.as_ref(), "declined"),
        (
            "complete",
            "no_payment_required",
            None,
            "no_payment_required",
        ),
        ("expired", "unpaid", None, "closed"),
        ("unknown", "unpaid", None, "unknown_status"),
    ];
    for (status, payment, intent, code) in rows {
        let shown = session::current(&session(status, payment), intent);
        assert_eq!(shown.code(), code, "{status} {payment}");
        assert!(session::owns(
            &session(status, payment),
            "cj1-ab",
            Some(&charge)
        ));
    }
    assert!(!session::owns(
        &session("open", "unpaid"),
        "cj1-cd",
        Some(&charge)
    ));
    let other = Charge::from_parameters(&json!({"amount": 1, "currency": "eur"})).expect("charge");
    assert!(!session::owns(
        &session("open", "unpaid"),
        "cj1-ab",
        Some(&other)
    ));
    assert!(matches!(
        session::current(&session("complete", "paid"), succeeded.as_ref()),
        RetrieveAnswer::Succeeded(_)
    ));
}

#[tokio::test]
async fn no_url_or_secret_is_in_any_output() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let pages = pages();
    let provider = stripe.checkout(&parameters(), &pages);
    let sent = provider.send(send_request(&key(11), false, ACT_BY)).await;
    let read = provider
        .retrieve(retrieve_request(&key(11), true, false))
        .await;
    let outputs = [
        format!("{sent:?}"),
        format!("{read:?}"),
        format!("{provider:?}"),
        format!("{pages:?}"),
        format!("{:?}", provider.code()),
        format!(
            "{:?}",
            session::current(
                &stand_in.sessions()[0].as_object().cloned().expect("object"),
                None
            )
        ),
        ConfigError::Pages.to_string(),
    ];
    for output in &outputs {
        for canary in [
            "CANARYreturn",
            "CANARYcancel",
            "stand-in/checkout",
            "cs_test_CANARY",
            "CANARYsku",
            &SECRET[8..],
        ] {
            assert!(!output.contains(canary), "{canary} in {output}");
        }
    }
    for (success, cancel, name) in [
        ("http://shop.example/ok", CANCEL, "Order"),
        (SUCCESS, "not a url", "Order"),
        (SUCCESS, CANCEL, ""),
        (SUCCESS, CANCEL, "Order\n"),
    ] {
        assert_eq!(
            CheckoutPages::new(success, cancel, name),
            Err(ConfigError::Pages)
        );
    }
    assert!(CheckoutPages::new("http://127.0.0.1:8080/ok", "http://localhost/no", "Order").is_ok());
}

#[tokio::test]
async fn the_client_reads_an_object_by_id_for_the_webhook_settlement() {
    use command_journal_stripe::webhook::{ObjectKind, ObjectRef, ReadById};
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    stripe
        .checkout(&parameters(), &pages())
        .send(send_request(&key(13), false, ACT_BY))
        .await;
    let id = session_id(&stand_in);
    let session = ObjectRef::new(ObjectKind::CheckoutSession, &id).expect("a ref");
    let read: Value =
        serde_json::from_str(&stripe.read(&session).await.expect("read")).expect("json");
    assert_eq!(read["status"], json!("open"));
    assert_eq!(
        read["payment_intent"],
        Value::Null,
        "no intent before payment"
    );
    assert!(stand_in.pay(&id, Payment::Card).is_some());
    let read: Value =
        serde_json::from_str(&stripe.read(&session).await.expect("read")).expect("json");
    let made = read["payment_intent"]
        .as_str()
        .expect("its intent, once paid");
    let intent = ObjectRef::new(ObjectKind::PaymentIntent, made).expect("a ref");
    let read: Value =
        serde_json::from_str(&stripe.read(&intent).await.expect("read")).expect("json");
    assert_eq!(read["metadata"]["journal_key"], json!(key(13)));
    let missing = ObjectRef::new(ObjectKind::PaymentIntent, "pi_missing").expect("a ref");
    assert_eq!(stripe.read(&missing).await, None, "a 404 is no body");
    stand_in.assert_schemas_held();
}

/// The recovery job's read of an attempt that waits for its customer carries no
/// parameters and may neither replay nor cancel (`RetrieveRequest` with
/// `parameters: null`): a customer who paid on the hosted page and closed the tab
/// before the return page is still settled, the session found through its intent.
#[tokio::test]
async fn the_recovery_job_reads_a_paid_session_its_customer_never_returned_from() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let provider = stripe.checkout(&parameters(), &pages());
    let key = key(77);
    provider.send(send_request(&key, false, ACT_BY)).await;
    let id = session_id(&stand_in);
    assert!(stand_in.pay(&id, Payment::Card).is_some(), "paid");
    stand_in.advance(61); // the search shows the session's intent
    let recovery = stripe.checkout_recovery(&pages());
    let job = RetrieveRequest {
        parameters: Value::Null,
        ..retrieve_request(&key, false, false)
    };
    let answer = recovery.retrieve(job).await;
    assert!(
        matches!(answer, ProviderAnswer::Succeeded(_)),
        "a paid session, read by the recovery job: {answer:?} (code {:?})",
        recovery.code()
    );
    // Parameters that are no charge are still refused.
    let bad = RetrieveRequest {
        parameters: serde_json::json!({"amount": "x"}),
        ..retrieve_request(&key, false, false)
    };
    assert_eq!(recovery.retrieve(bad).await, ProviderAnswer::Unknown);
    assert_eq!(recovery.code(), Some("invalid_parameters"));
    stand_in.assert_schemas_held();
}
