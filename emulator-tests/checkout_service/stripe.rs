//! The checkout service on Stripe (`PROVIDER_NAME=stripe`) against the Stripe
//! stand-in: a payment that succeeds and replays, a declined card, Stripe's stored
//! 500 (with the intent behind it, without it, and completed half an hour later: one
//! key either way), a search that lags inside the settle window, every body the stand-in saw and answered held to Stripe's schemas, the
//! secret key in no body, log or metrics line.

#[path = "../../stripe/tests/stand_in/mod.rs"]
pub(super) mod stand_in;

use super::{Options, PAYLOAD_NOTE, PAYLOAD_SKU, Service, command_id, start_service, succeeded};
use chrono::TimeDelta;
use serde_json::{Value, json};
use stand_in::{Fault, SECRET, StandIn};

/// The prefix of the stand-in's intent ids (a canary, as the stub's charge ids are).
pub const INTENT_PREFIX: &str = stand_in::state::INTENT_PREFIX;

/// A checkout's payload: what Stripe is sent, and what it never is.
pub(super) fn payment(payment_method: &str) -> Value {
    json!({
        "sku": PAYLOAD_SKU,
        "note": PAYLOAD_NOTE,
        "amount": 1250,
        "currency": "eur",
        "paymentMethod": payment_method,
    })
}

/// The service on Stripe at `stand_in`, its journal's clock at the stand-in's time.
async fn service_on(stand_in: &StandIn) -> Service {
    let now = chrono::DateTime::from_timestamp(stand_in.now(), 0).expect("a time");
    start_service(Options {
        env: vec![
            ("PROVIDER_NAME", "stripe".to_owned()),
            ("STRIPE_SECRET_KEY", SECRET.to_owned()),
            ("STRIPE_API_BASE", stand_in.url().to_owned()),
            ("PROVIDER_TIMEOUT_MS", "2000".to_owned()),
        ],
        now: Some(now),
        ..Options::default()
    })
    .await
}

/// A Stripe client of the service's configuration at `stand_in` (the recovery job's).
pub(super) fn client_on(stand_in: &StandIn) -> command_journal_stripe::Stripe {
    let key = command_journal_stripe::SecretKey::new(SECRET).expect("the stand-in's key");
    let account = command_journal_stripe::Account::Own("acct_CANARYaccount".to_owned());
    let mut config = command_journal_stripe::StripeConfig::new(key, "2026-01-01", account);
    config.api_base = stand_in.url().to_owned();
    command_journal_stripe::Stripe::new(config).expect("a client")
}

/// Moves the journal's and the stand-in's clocks together.
fn advance(service: &Service, stand_in: &StandIn, by: TimeDelta) {
    service.clock.advance(by);
    stand_in.advance(by.num_seconds());
}

/// The envelope of the stand-in's intent `at`.
fn envelope(stand_in: &StandIn, at: usize) -> Value {
    let intent = &stand_in.intents()[at];
    json!({
        "id": intent["id"],
        "amount": intent["amount"],
        "currency": intent["currency"],
        "status": intent["status"],
    })
}

#[tokio::test]
async fn checkout_on_stripe_charges_once_and_replays_the_intent() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    let id = command_id(700);
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    assert_eq!(envelope(&stand_in, 0)["status"], "succeeded");
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, paid.text);
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 1, "the replay is the journal's");
    let key = service.expected_key(&id, &payment("pm_card_visa"));
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(creates[0].stripe_version.as_deref(), Some("2026-01-01"));
    assert_eq!(
        creates[0].parameters["metadata"],
        json!({"journal_key": key})
    );
    assert_eq!(creates[0].parameters["payment_method"], "pm_card_visa");
    // A payload that makes no intent is refused before the journal sees it.
    let refused = service
        .checkout(&command_id(701), &json!({"amount": 5}))
        .await;
    assert_eq!(
        (refused.status, &refused.body),
        (400, &json!({"error": "invalid_input", "field": "payload"}))
    );
    assert_eq!(stand_in.intents().len(), 1);
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

#[tokio::test]
async fn checkout_on_stripe_a_declined_card_fails_for_good() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    let id = command_id(710);
    let declined = service
        .checkout(&id, &payment("pm_card_chargeDeclined"))
        .await;
    assert_eq!(
        (declined.status, &declined.body),
        (402, &json!({"status": "failed"}))
    );
    let replay = service
        .checkout(&id, &payment("pm_card_chargeDeclined"))
        .await;
    assert_eq!(replay.text, declined.text);
    assert_eq!(stand_in.creates().len(), 1);
    assert_eq!(stand_in.intents()[0]["status"], "requires_payment_method");
    // 3-D Secure needed: the customer must act, never a success or a decline
    // (`customer.rs` completes the challenge).
    let id = command_id(711);
    let waiting = service
        .checkout(&id, &payment("pm_card_authenticationRequired"))
        .await;
    assert_eq!(
        (waiting.status, &waiting.body["status"]),
        (202, &json!("customer_must_act"))
    );
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

#[tokio::test]
async fn checkout_on_stripe_a_stored_500_with_the_intent_settles_with_that_intent() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    stand_in.fault(Fault::StoredServerError {
        create_intent: true,
    });
    let id = command_id(720);
    // Stripe answers 500 after making the intent: indeterminate, so the same call
    // looks the key up at once (never re-sends it); the search has not caught up yet,
    // the listing (read after write) shows the intent, and the checkout is paid.
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 1, "one POST, never re-sent");
    assert_eq!(creates[0].status, 500, "Stripe answered 500");
    assert_eq!(stand_in.intents().len(), 1, "exactly one intent");
    // Every later retry replays the stored answer without asking Stripe.
    let seen = stand_in.seen().len();
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, paid.text);
    assert_eq!(stand_in.seen().len(), seen);
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

/// A stored 500 behind which Stripe made nothing (yet): Stripe documents the result of
/// a 500 as indeterminate and may complete it during the incident's remediation, so no
/// "not found" proves an absence and no second key is ever issued. The customer is
/// told the payment is pending, the key is never sent again, and `pending` lists the
/// command as waiting for Stripe's final state.
#[tokio::test]
async fn checkout_on_stripe_a_stored_500_without_the_intent_never_issues_a_second_key() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    stand_in.fault(Fault::StoredServerError {
        create_intent: false,
    });
    let id = command_id(730);
    let pending = json!({"status": "pending_reconciliation"});
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!((first.status, &first.body), (202, &pending));
    // Past the lease and the settle window (427 s, when attempt 2 used to go out), past
    // the key's 18 h cutoff, a day later: still pending, still one key, one POST.
    for by in [61, 366, 18 * 3_600, 86_400] {
        advance(&service, &stand_in, TimeDelta::seconds(by));
        let again = service.checkout(&id, &payment("pm_card_visa")).await;
        assert_eq!((again.status, &again.body), (202, &pending), "after {by} s");
    }
    let creates = stand_in.creates();
    assert_eq!(
        creates.len(),
        1,
        "the key is never sent again, no attempt 2"
    );
    assert!(stand_in.intents().is_empty());
    // Once the last call's lease has run out, the command is listed as waiting.
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let listed = service.pending().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["unblockedBy"], "final_evidence");
    assert_eq!(listed[0]["send"]["state"], "indeterminate");
    assert_eq!(listed[0]["send"]["absenceProvableFrom"], Value::Null);
    // `verify` finds nothing broken, and lists the attempt for a person.
    let report = command_journal::verify(&service.connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.finding_counts);
    let attention: Vec<_> = report.attention.iter().map(|a| a.code.as_str()).collect();
    assert_eq!(attention, ["indeterminate_send"]);
    assert!(report.attention[0].path.ends_with("/providerSends/current"));
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

/// A stored 500 whose payment Stripe completes 30 minutes later: one key, one charge;
/// the customer is told pending until then, and 200 (the intent Stripe made) after.
#[tokio::test]
async fn checkout_on_stripe_a_stored_500_completed_30_minutes_later_charges_once_under_one_key() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1_800 });
    let id = command_id(735);
    let pending = json!({"status": "pending_reconciliation"});
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!((first.status, &first.body), (202, &pending));
    // 61 s, 427 s (when attempt 2 used to go out under a new key), 29 minutes.
    for by in [61, 366, 1_313] {
        advance(&service, &stand_in, TimeDelta::seconds(by));
        let again = service.checkout(&id, &payment("pm_card_visa")).await;
        assert_eq!((again.status, &again.body), (202, &pending), "after {by} s");
    }
    assert!(stand_in.intents().is_empty(), "not completed yet");
    // Stripe completes it at 30 minutes; the search lags a minute behind, the listing
    // does not: the next retry is answered with the intent.
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    let intents = stand_in.intents();
    assert_eq!(intents.len(), 1, "one charge");
    assert_eq!(intents[0]["status"], "succeeded");
    let key = service.expected_key(&id, &payment("pm_card_visa"));
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 1, "one POST");
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(intents[0]["metadata"]["journal_key"], json!(key), "one key");
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, paid.text);
    assert!(service.pending().await.is_empty());
    service.assert_verifies_clean(1).await;
    let report = command_journal::verify(&service.connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.attention.is_empty(), "{:?}", report.attention);
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

#[tokio::test]
async fn checkout_on_stripe_search_lag_never_proves_an_absence() {
    let stand_in = StandIn::start().await;
    stand_in.search_lag(120);
    let service = service_on(&stand_in).await;
    // Attempt 1's first send is refused at Stripe's edge (nothing made).
    stand_in.fault(Fault::Unstored(503));
    let id = command_id(740);
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (first.status, &first.body),
        (503, &json!({"status": "retry"}))
    );
    // 30 s before the cutoff the retry re-sends the key; Stripe makes the intent but
    // the answer comes after the service stopped waiting.
    advance(
        &service,
        &stand_in,
        TimeDelta::hours(18) - TimeDelta::seconds(30),
    );
    stand_in.hold_next();
    let lost = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (lost.status, &lost.body),
        (503, &json!({"status": "retry"}))
    );
    stand_in.release();
    stand_in.answered(2).await;
    assert_eq!(stand_in.intents().len(), 1);
    // Past the cutoff, 61 s after that re-send, the search does not show the intent
    // yet: the adapter confirms its "not found" by the listing (read after write),
    // which shows it. The one intent is the answer at once: no attempt 2.
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    let seen = stand_in.seen();
    let searched = seen.iter().filter(|s| s.path.ends_with("/search")).count();
    let listed = seen
        .iter()
        .filter(|s| s.method == "GET" && s.path.ends_with("/v1/payment_intents"))
        .count();
    assert_eq!(
        (searched, listed),
        (1, 1),
        "searched, found nothing, listed"
    );
    assert_eq!(stand_in.intents().len(), 1);
    assert_eq!(stand_in.creates().len(), 2, "no attempt 2");
    // Once the window has passed, the replay answers the same bytes.
    advance(&service, &stand_in, TimeDelta::seconds(300));
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, paid.text);
    assert_eq!(stand_in.creates().len(), 2);
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

#[test]
fn checkout_on_stripe_configuration_names_the_variable() {
    use super::service::config::Config;
    use command_journal::sends::ProviderLookup;
    use std::collections::HashMap;
    let base: HashMap<&str, &str> = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("JOURNAL_ENVIRONMENT", "production"),
        ("PROVIDER_NAME", "stripe"),
        ("PROVIDER_ACCOUNT", "acct_CANARYaccount"),
        ("PROVIDER_MODE", "test"),
        ("PROVIDER_API_VERSION", "2026-01-28.clover"),
        ("STRIPE_SECRET_KEY", SECRET),
    ]);
    let config = |changes: &[(&'static str, Option<&'static str>)]| {
        let mut env = base.clone();
        for (name, value) in changes {
            match value {
                Some(value) => env.insert(name, value),
                None => env.remove(name),
            };
        }
        Config::from_lookup(|name| env.get(name).map(|v| (*v).to_owned()))
    };
    let ok = config(&[]).expect("valid");
    assert_eq!(ok.provider_url.as_str(), "https://api.stripe.com/");
    // The plan is the Stripe client's own (`Stripe::plan`), its lookup the client's
    // (final_state: Stripe may complete what it never answered) with no
    // PROVIDER_LOOKUP set; the job declares final_state too (it proves no absence).
    let backend = super::service::backend::Backend::new(&ok).expect("a client");
    let payload = json!({"amount": 1250, "currency": "eur", "paymentMethod": "pm_card_visa"});
    let plan = backend.plan(&payload).expect("plan");
    let stripe_client = match &backend {
        super::service::backend::Backend::Stripe(stripe) => stripe.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(plan, stripe_client.plan(&payload).expect("Stripe's plan"));
    assert_eq!(
        (plan.lookup(), plan.lookup_settle_seconds()),
        (ProviderLookup::FinalState, 300)
    );
    let account = backend.account().expect("account");
    assert_eq!(account.lookup(), Some(ProviderLookup::FinalState));
    assert!(!account.lookup_covers(plan.lookup()));
    assert_eq!(
        backend.plan(&json!({"amount": 5})),
        Err(command_journal::JournalError::invalid("parameters"))
    );
    let stripe = ok.stripe.expect("a Stripe client's settings");
    assert_eq!(stripe.api_version, "2026-01-28.clover");
    assert!(!format!("{stripe:?}").contains("CANARY"), "{stripe:?}");
    let refused = [
        (vec![("STRIPE_SECRET_KEY", None)], "STRIPE_SECRET_KEY"),
        (
            vec![("STRIPE_SECRET_KEY", Some("pk_test_publishable"))],
            "STRIPE_SECRET_KEY",
        ),
        (vec![("PROVIDER_MODE", Some("live"))], "PROVIDER_MODE"),
        (vec![("PROVIDER_ACCOUNT", Some("1234"))], "PROVIDER_ACCOUNT"),
        (
            vec![("STRIPE_API_BASE", Some("http://api.stripe.test"))],
            "STRIPE_API_BASE",
        ),
        (
            vec![
                ("JOURNAL_ENVIRONMENT", Some("emulator")),
                ("FIRESTORE_EMULATOR_HOST", Some("127.0.0.1:8080")),
            ],
            "STRIPE_API_BASE",
        ),
        // The client's own terms, which no variable overrides: a retention, a lookup
        // or a settle window other than the client binds.
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("86401"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("3600"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("299"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("600"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP", Some("key_store"))],
            "PROVIDER_LOOKUP",
        ),
    ];
    for (changes, variable) in refused {
        let error = config(&changes).expect_err("refused");
        assert_eq!(error.variable, variable, "{changes:?}");
        assert!(!error.to_string().contains("CANARY"), "{error}");
    }
    // PROVIDER_URL is the charge contract's: not read for Stripe.
    let local =
        config(&[("STRIPE_API_BASE", Some("https://stripe.internal/base"))]).expect("valid");
    assert_eq!(local.provider_url.as_str(), "https://stripe.internal/base");
    // The client's own figures, set explicitly, pass.
    let careful = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("86400")),
        ("PROVIDER_LOOKUP", Some("final_state")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("300")),
    ])
    .expect("the client's own figures");
    assert_eq!(
        (
            careful.plan.key_retention_seconds,
            careful.plan.lookup,
            careful.plan.lookup_settle_seconds
        ),
        (86_400, ProviderLookup::FinalState, 300)
    );
    // A deployment of the earlier documentation (`PROVIDER_LOOKUP=durable`) is
    // refused at start, naming the variable: a durable plan would let a lookup prove
    // an unanswered attempt absent, which Stripe may still complete.
    let earlier = config(&[("PROVIDER_LOOKUP", Some("durable"))]).expect_err("refused");
    assert_eq!(earlier.variable, "PROVIDER_LOOKUP");
}
