//! The checkout service on Stripe (`PROVIDER_NAME=stripe`) against the Stripe
//! stand-in: a payment that succeeds and replays, a declined card, Stripe's stored
//! 500 (with and without the intent behind it), a search that lags inside the settle
//! window, every body the stand-in saw and answered held to Stripe's schemas, the
//! secret key in no body, log or metrics line.

#[path = "../../stripe/tests/stand_in/mod.rs"]
mod stand_in;

use super::{Options, PAYLOAD_NOTE, PAYLOAD_SKU, Service, command_id, start_service, succeeded};
use chrono::TimeDelta;
use serde_json::{Value, json};
use stand_in::{Fault, SECRET, StandIn};

/// The prefix of the stand-in's intent ids (a canary, as the stub's charge ids are).
pub const INTENT_PREFIX: &str = stand_in::state::INTENT_PREFIX;

/// A checkout's payload: what Stripe is sent, and what it never is.
fn payment(payment_method: &str) -> Value {
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
            ("PROVIDER_LOOKUP", "durable".to_owned()),
            ("PROVIDER_TIMEOUT_MS", "2000".to_owned()),
        ],
        now: Some(now),
        ..Options::default()
    })
    .await
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
    // 3-D Secure needed: unknown, never a success or a decline.
    let id = command_id(711);
    let waiting = service
        .checkout(&id, &payment("pm_card_authenticationRequired"))
        .await;
    assert_eq!(
        (waiting.status, &waiting.body),
        (503, &json!({"status": "retry"}))
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
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (first.status, &first.body),
        (503, &json!({"status": "retry"}))
    );
    assert_eq!(stand_in.creates()[0].status, 500, "Stripe answered 500");
    assert_eq!(stand_in.intents().len(), 1, "after making the intent");
    // The client retries once the lease is over (the search caught up long since):
    // the re-send hears the stored 500 replayed, and the same call looks the key up
    // at once and answers the intent. No retry waits for the cutoff.
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let retry = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    assert_eq!(retry.body, succeeded(&envelope(&stand_in, 0)));
    let creates = stand_in.creates();
    assert_eq!(
        creates.len(),
        2,
        "the first POST and the re-send that heard the replay"
    );
    assert!(creates[1].replayed);
    assert_eq!(stand_in.intents().len(), 1, "exactly one intent");
    // Every later retry replays the stored answer without asking Stripe.
    let seen = stand_in.seen().len();
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, retry.text);
    assert_eq!(stand_in.seen().len(), seen);
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[SECRET, "CANARYclientSecret"])
        .await;
}

#[tokio::test]
async fn checkout_on_stripe_a_stored_500_without_the_intent_charges_once_under_attempt_2() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    stand_in.fault(Fault::StoredServerError {
        create_intent: false,
    });
    let id = command_id(730);
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (first.status, &first.body),
        (503, &json!({"status": "retry"}))
    );
    assert!(stand_in.intents().is_empty());
    // The retry's re-send hears the replay; the search finds nothing, but no absence
    // is provable yet (the re-send's lease and the settle window): 202.
    advance(&service, &stand_in, TimeDelta::seconds(61));
    let pending = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (pending.status, &pending.body),
        (202, &json!({"status": "pending_reconciliation"}))
    );
    assert_eq!(stand_in.creates().len(), 2);
    assert!(stand_in.creates()[1].replayed);
    // The key is never sent again: a retry inside the window only looks it up.
    advance(&service, &stand_in, TimeDelta::seconds(120));
    let still = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(still.status, 202, "{}", still.text);
    assert_eq!(stand_in.creates().len(), 2, "no re-send of a replayed 500");
    // Once the last send's lease and the settle window have passed (minutes, not the
    // 18 h cutoff), the absence is proven and attempt 2 charges under its own key.
    advance(&service, &stand_in, TimeDelta::seconds(240));
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    assert_eq!(stand_in.intents().len(), 1, "one intent in the end");
    let keys: Vec<_> = stand_in
        .creates()
        .into_iter()
        .map(|s| s.idempotency_key)
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0], keys[1], "the re-send under attempt 1's key");
    assert_ne!(keys[1], keys[2], "attempt 2 under its own key");
    let replay = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(replay.text, paid.text);
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
    assert_eq!(ok.plan.endpoint(), "POST /v1/payment_intents");
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
        // Promises Stripe does not keep: a key kept past its 24 hours (the cutoff
        // would fall after Stripe forgot it), a settle window inside its search's lag.
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("86401"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("2592000"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("299"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![
                ("PROVIDER_LOOKUP", Some("durable")),
                ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("0")),
            ],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
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
    // What Stripe keeps still passes: a shorter retention (an earlier cutoff), a
    // longer settle window, a durable lookup.
    let careful = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("86400")),
        ("PROVIDER_LOOKUP", Some("durable")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("300")),
    ])
    .expect("Stripe's own figures");
    assert_eq!(
        (
            careful.plan.key_retention_seconds,
            careful.plan.lookup_settle_seconds
        ),
        (86_400, 300)
    );
    let shorter = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("600")),
    ])
    .expect("an earlier cutoff, a longer window");
    assert_eq!(shorter.plan.lookup_settle_seconds, 600);
}
