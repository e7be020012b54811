//! `POST /webhooks/stripe` of the checkout service on Stripe against the stand-in,
//! whose events (`stand_in::events`) are delivered signed as Stripe's are: a
//! `payment_intent.succeeded` settles an ambiguous attempt with no lookup, the same
//! event again writes nothing, events in any order settle the same, an event of an
//! object the journal does not know is acknowledged and counted, a forged or stale
//! signature is 400 and writes nothing (its body in no log), and the recovery job's
//! backfill from `GET /v1/events` settles an attempt whose event was dropped.

use super::stripe::stand_in::{self, Fault, SECRET, StandIn};
use super::stripe::{INTENT_PREFIX, payment};
use super::{Options, Service, command_id, start_service, succeeded};
use chrono::TimeDelta;
use serde_json::{Value, json};
use std::time::Instant;

/// The endpoint's secret, and the one it rolled from (both accepted during a roll).
const WEBHOOK_SECRET: &str = "whsec_CANARYwebhookSecret7Hq2";
const OLD_WEBHOOK_SECRET: &str = "whsec_CANARYoldSecret55z";

/// The service on Stripe at `stand_in` with its webhook endpoint, its journal's clock
/// at the stand-in's time.
pub(super) async fn service_with_webhooks(stand_in: &StandIn) -> Service {
    service_with_webhooks_and(stand_in, Vec::new()).await
}

/// The same, with the settings `more` (a flow's).
async fn service_with_webhooks_and(
    stand_in: &StandIn,
    more: Vec<(&'static str, String)>,
) -> Service {
    let now = chrono::DateTime::from_timestamp(stand_in.now(), 0).expect("a time");
    let mut env = vec![
        ("PROVIDER_NAME", "stripe".to_owned()),
        ("STRIPE_SECRET_KEY", SECRET.to_owned()),
        ("STRIPE_API_BASE", stand_in.url().to_owned()),
        ("PROVIDER_TIMEOUT_MS", "2000".to_owned()),
        (
            "STRIPE_WEBHOOK_SECRET",
            format!("{WEBHOOK_SECRET},{OLD_WEBHOOK_SECRET}"),
        ),
    ];
    env.extend(more);
    start_service(Options {
        env,
        now: Some(now),
        ..Options::default()
    })
    .await
}

/// Moves the journal's and the stand-in's clocks together.
pub(super) fn advance(service: &Service, stand_in: &StandIn, seconds: i64) {
    service.clock.advance(TimeDelta::seconds(seconds));
    stand_in.advance(seconds);
}

/// A logger whose lines go nowhere (the job's summary line).
pub(super) fn quiet(service: &Service) -> super::service::logging::Logger {
    super::service::logging::Logger::with_sink(&service.project, std::sync::Arc::new(|_: &str| {}))
}

fn endpoint(service: &Service) -> String {
    format!("{}/webhooks/stripe", service.url)
}

/// The lookups the stand-in answered: every listing and search of intents.
pub(super) fn lookups(stand_in: &StandIn) -> usize {
    stand_in.requests("GET", "/v1/payment_intents").len()
        + stand_in.requests("GET", "/v1/payment_intents/search").len()
}

/// The envelope of the stand-in's intent `at`.
pub(super) fn envelope(stand_in: &StandIn, at: usize) -> Value {
    let intent = &stand_in.intents()[at];
    json!({
        "id": intent["id"],
        "amount": intent["amount"],
        "currency": intent["currency"],
        "status": intent["status"],
    })
}

/// A checkout whose stored 500 Stripe completes `after` seconds later: the first call
/// is answered pending, then the clocks move past the roll-forward. The command id.
async fn ambiguous(service: &Service, stand_in: &StandIn, n: u64, after: i64) -> String {
    stand_in.fault(Fault::StoredServerErrorRolledForward { after });
    let id = command_id(n);
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (first.status, &first.body),
        (202, &json!({"status": "pending_reconciliation"}))
    );
    advance(service, stand_in, after + 1);
    id
}

/// The acceptance: a stored 500 that Stripe completes 30 minutes later. The customer
/// is told pending until then; the signed `payment_intent.succeeded` settles the
/// command with no lookup; the client's next call gets 200 from the journal alone;
/// the same event again writes nothing; one key, one charge.
#[tokio::test]
async fn webhook_a_signed_succeeded_settles_an_ambiguous_attempt_with_no_lookup() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1_800 });
    let id = command_id(900);
    let pending = json!({"status": "pending_reconciliation"});
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!((first.status, &first.body), (202, &pending));
    advance(&service, &stand_in, 1_500);
    let waiting = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(
        (waiting.status, &waiting.body),
        (202, &pending),
        "at 25 min"
    );
    advance(&service, &stand_in, 301);
    // Stripe completed it: its events are delivered, signed.
    let seen = stand_in.seen().len();
    let before = lookups(&stand_in);
    let delivered = stand_in
        .deliver_new(
            &endpoint(&service),
            WEBHOOK_SECRET,
            &["payment_intent.succeeded"],
        )
        .await;
    let succeeded_event = stand_in.events()[1].clone();
    let started = Instant::now();
    let settling = stand_in
        .deliver(
            &endpoint(&service),
            WEBHOOK_SECRET,
            &succeeded_event,
            stand_in.now(),
        )
        .await;
    let settled_in = started.elapsed();
    let kinds: Vec<Value> = stand_in
        .events()
        .iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("payment_intent.created"),
            json!("payment_intent.succeeded")
        ]
    );
    assert_eq!(
        delivered
            .iter()
            .map(|(_, status)| *status)
            .collect::<Vec<_>>(),
        [200],
        "payment_intent.created: nothing to record"
    );
    assert_eq!(settling, 200);
    // Printed for docs/webhooks.md: from the delivery's POST to its 200, the command
    // settled (the emulator, in-process).
    eprintln!("payment_intent.succeeded delivered to settled command: {settled_in:?}");
    assert_eq!(lookups(&stand_in), before, "no lookup");
    assert_eq!(stand_in.seen().len(), seen, "not even a read by id");
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_recorded_total",
                &[("result", "recorded")]
            )
            .await,
        1
    );
    // The client's next call: 200 from the journal, Stripe not asked.
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    assert_eq!(stand_in.seen().len(), seen, "answered by the journal alone");
    // The same event again writes nothing.
    let documents = service.documents().await;
    let again = stand_in
        .deliver(
            &endpoint(&service),
            WEBHOOK_SECRET,
            &succeeded_event,
            stand_in.now(),
        )
        .await;
    assert_eq!(again, 200);
    assert_eq!(
        service.documents().await,
        documents,
        "the duplicate wrote nothing"
    );
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_recorded_total",
                &[("result", "duplicate")]
            )
            .await,
        1
    );
    // One key, one charge.
    let key = service.expected_key(&id, &payment("pm_card_visa"));
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 1, "one POST");
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(stand_in.intents().len(), 1, "one charge");
    assert!(service.pending().await.is_empty());
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
    service
        .assert_no_leak(&[
            SECRET,
            WEBHOOK_SECRET,
            OLD_WEBHOOK_SECRET,
            "CANARYclientSecret",
            INTENT_PREFIX,
        ])
        .await;
}

/// A Checkout command left to expire: nobody pays, nobody calls again. Its signed
/// `checkout.session.expired`, the session read by id (`settle_by_id`: a `Closed`
/// read by id just now), ends it: failed finally, nothing charged, no lookup; the same
/// event again writes nothing; the client's next call is 402 from the journal alone.
#[tokio::test]
async fn webhook_an_expired_checkout_session_ends_its_command_with_nothing_charged() {
    let stand_in = StandIn::start().await;
    let pages = "http://127.0.0.1:9";
    let service = service_with_webhooks_and(
        &stand_in,
        vec![
            ("CHECKOUT_FLOW", "checkout".to_owned()),
            ("CHECKOUT_SUCCESS_URL", format!("{pages}/return")),
            ("CHECKOUT_CANCEL_URL", format!("{pages}/cancel")),
        ],
    )
    .await;
    let order = json!({"amount": 1250, "currency": "eur"});
    let id = command_id(930);
    let first = service.checkout(&id, &order).await;
    assert_eq!(
        (first.status, &first.body["status"]),
        (202, &json!("customer_must_act")),
        "{}",
        first.text
    );
    let session = stand_in.sessions()[0].clone();
    assert_eq!(session["payment_intent"], Value::Null, "unpaid: no intent");
    let expires_at = session["expires_at"].as_i64().expect("expires_at");
    advance(&service, &stand_in, expires_at - stand_in.now() + 1);
    let expired = stand_in
        .events()
        .into_iter()
        .find(|event| event["type"] == "checkout.session.expired")
        .expect("the session's expiry event");
    let (seen, before) = (stand_in.seen().len(), lookups(&stand_in));
    let url = endpoint(&service);
    let delivered = stand_in
        .deliver(&url, WEBHOOK_SECRET, &expired, stand_in.now())
        .await;
    assert_eq!(delivered, 200);
    assert_eq!(lookups(&stand_in), before, "no lookup");
    let reads = stand_in.seen().len() - seen;
    assert_eq!(reads, 1, "one read by id: the session");
    let recorded = |result: &'static str| {
        let service = &service;
        async move {
            service
                .sample(
                    "checkout_service_webhooks_recorded_total",
                    &[("result", result)],
                )
                .await
        }
    };
    assert_eq!(recorded("recorded").await, 1);
    // The same event again writes nothing.
    let documents = service.documents().await;
    let again = stand_in
        .deliver(&url, WEBHOOK_SECRET, &expired, stand_in.now())
        .await;
    assert_eq!(again, 200);
    assert_eq!(
        service.documents().await,
        documents,
        "the duplicate wrote nothing"
    );
    assert_eq!(recorded("duplicate").await, 1);
    // The client's next call: failed, from the journal alone.
    let seen = stand_in.seen().len();
    let closed = service.checkout(&id, &order).await;
    assert_eq!(
        (closed.status, &closed.body),
        (402, &json!({"status": "failed"})),
        "{}",
        closed.text
    );
    assert_eq!(stand_in.seen().len(), seen, "Stripe not asked");
    assert_eq!(lookups(&stand_in), before, "no lookup, ever");
    assert_eq!(stand_in.sessions().len(), 1, "no second session");
    assert!(stand_in.intents().is_empty(), "nothing charged");
    assert!(service.pending().await.is_empty());
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
}

/// A forged signature (another secret), a stale one (signed 301 s ago), an unsigned
/// body and a malformed header: 400 each, nothing written, the body in no log line.
/// The old secret of a roll still verifies.
#[tokio::test]
async fn webhook_forged_stale_or_unsigned_is_400_and_writes_nothing() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let _id = ambiguous(&service, &stand_in, 910, 60).await;
    let events = stand_in.events();
    let succeeded_event = events.last().expect("an event").clone();
    assert_eq!(succeeded_event["type"], "payment_intent.succeeded");
    let documents = service.documents().await;
    let url = endpoint(&service);
    let now = stand_in.now();
    let forged = stand_in
        .deliver(&url, "whsec_CANARYforgedSecret", &succeeded_event, now)
        .await;
    let stale = stand_in
        .deliver(&url, WEBHOOK_SECRET, &succeeded_event, now - 301)
        .await;
    let body = serde_json::to_vec(&succeeded_event).expect("json");
    let unsigned = stand_in::events::deliver_signed(&url, "", body.clone()).await;
    let malformed = stand_in::events::deliver_signed(&url, "t=1,v1=zz", body).await;
    // Over 256 KiB: refused before the signature is even read.
    let large = vec![b' '; 300 * 1024];
    let too_large = stand_in::events::deliver_signed(&url, "t=1,v1=00", large).await;
    assert_eq!(too_large, 400);
    assert_eq!([forged, stale, unsigned, malformed], [400, 400, 400, 400]);
    assert_eq!(service.documents().await, documents, "nothing written");
    for (code, count) in [
        ("webhook_signature_mismatch", 1),
        ("webhook_timestamp_too_old", 1),
        ("webhook_signature_missing", 1),
        ("webhook_signature_malformed", 1),
        ("webhook_body_too_large", 1),
    ] {
        let counted = service
            .sample(
                "checkout_service_webhooks_refused_total",
                &[("code", code), ("status", "400")],
            )
            .await;
        assert_eq!(counted, count, "{code}");
    }
    // No line carries the body, the object id, the signature or a secret.
    let id = succeeded_event["data"]["object"]["id"]
        .as_str()
        .expect("id");
    for line in service.lines() {
        assert!(
            !line.contains(id) && !line.contains("evt_standin"),
            "{line}"
        );
    }
    // The old secret of a roll verifies and settles.
    let rolled = stand_in
        .deliver(&url, OLD_WEBHOOK_SECRET, &succeeded_event, now)
        .await;
    assert_eq!(rolled, 200);
    assert_ne!(service.documents().await, documents, "settled");
    service
        .assert_no_leak(&[
            SECRET,
            WEBHOOK_SECRET,
            OLD_WEBHOOK_SECRET,
            "whsec_CANARYforgedSecret",
            INTENT_PREFIX,
        ])
        .await;
}

/// Events delivered newest first (as late retries arrive) settle the command exactly
/// as in order: one record, then only duplicates and states on the way.
#[tokio::test]
async fn webhook_events_in_reverse_order_settle_the_same() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let id = ambiguous(&service, &stand_in, 920, 60).await;
    let url = endpoint(&service);
    let mut events = stand_in.events();
    events.reverse();
    events.extend(stand_in.events());
    let mut statuses = Vec::new();
    for event in &events {
        statuses.push(
            stand_in
                .deliver(&url, WEBHOOK_SECRET, event, stand_in.now())
                .await,
        );
    }
    assert_eq!(statuses, [200, 200, 200, 200]);
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_recorded_total",
                &[("result", "recorded")]
            )
            .await,
        1
    );
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_recorded_total",
                &[("result", "duplicate")]
            )
            .await,
        1
    );
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    service.assert_verifies_clean(1).await;
}

/// An event of an object the journal does not know: a key of the journal's form no
/// attempt holds (another deployment on the account), and an object without a key
/// (another integration). 200 each, counted, nothing written.
#[tokio::test]
async fn webhook_an_unknown_object_is_acknowledged_and_counted() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let _id = ambiguous(&service, &stand_in, 930, 60).await;
    let mut event = stand_in.events().last().expect("an event").clone();
    let documents = service.documents().await;
    let url = endpoint(&service);
    event["id"] = json!("evt_standinUnknown1");
    event["data"]["object"]["metadata"]["journal_key"] = json!(format!("cj1-{}", "ab".repeat(32)));
    let unknown = stand_in
        .deliver(&url, WEBHOOK_SECRET, &event, stand_in.now())
        .await;
    event["id"] = json!("evt_standinUnknown2");
    event["data"]["object"]["metadata"] = json!({"order": "another-integration"});
    let not_ours = stand_in
        .deliver(&url, WEBHOOK_SECRET, &event, stand_in.now())
        .await;
    assert_eq!([unknown, not_ours], [200, 200]);
    assert_eq!(service.documents().await, documents, "nothing written");
    assert_eq!(
        service
            .sample("checkout_service_webhooks_unknown_object_total", &[])
            .await,
        1
    );
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_ignored_total",
                &[("code", "webhook_not_ours")]
            )
            .await,
        1
    );
    assert_eq!(
        service
            .sample("checkout_service_webhooks_verified_total", &[])
            .await,
        2
    );
}

/// The endpoint was down when Stripe completed the payment (the event dropped): the
/// recovery job's backfill reads it from `GET /v1/events` and settles the command,
/// with no lookup for it; a second run writes nothing.
#[tokio::test]
async fn webhook_backfill_settles_an_attempt_whose_event_was_dropped() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let id = ambiguous(&service, &stand_in, 940, 1_800).await;
    let dropped = stand_in
        .deliver_new(
            &endpoint(&service),
            WEBHOOK_SECRET,
            &["payment_intent.succeeded"],
        )
        .await;
    assert_eq!(dropped.len(), 1, "only payment_intent.created arrived");
    let stripe = super::stripe::client_on(&stand_in);
    let journal =
        command_journal::Journal::new(service.connection.clone()).with_clock(service.clock.clone());
    let before = lookups(&stand_in);
    let now = journal.now().expect("now").seconds();
    let report =
        super::service::event_backfill::run(&journal, &stripe, now, 3_600, &quiet(&service)).await;
    assert_eq!(report.listed, 2);
    assert_eq!(report.outcomes.get("recorded"), Some(&1), "{report:?}");
    assert!(report.clean());
    assert_eq!(lookups(&stand_in), before, "no lookup");
    // The hour listed in slices, oldest first: 600 s, then doubled after each quiet
    // one, the last cut at the run's second.
    assert_eq!(stand_in.requests("GET", "/v1/events").len(), 3);
    let documents = service.documents().await;
    let again =
        super::service::event_backfill::run(&journal, &stripe, now, 3_600, &quiet(&service)).await;
    assert_eq!(again.outcomes.get("duplicate"), Some(&1), "{again:?}");
    assert_eq!(
        service.documents().await,
        documents,
        "the second run wrote nothing"
    );
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    assert_eq!(stand_in.intents().len(), 1, "one charge");
    service.assert_verifies_clean(1).await;
}

/// `STRIPE_WEBHOOK_SECRET` is checked at start-up: 1 to 4 distinct `whsec_` secrets
/// with `PROVIDER_NAME=stripe`, no endpoint when unset; every refusal names the
/// variable and never echoes a secret.
#[test]
fn webhook_secrets_are_checked_at_start_up_and_never_echoed() {
    use super::service::config::Config;
    use super::service::webhook::WebhookSettings;
    let settings = |provider: &str, secret: Option<&str>| {
        let mut env: std::collections::HashMap<&str, String> = super::PLAN_ENV
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned()))
            .collect();
        env.extend([
            ("GOOGLE_CLOUD_PROJECT", "demo-webhooks".to_owned()),
            ("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1".to_owned()),
            ("JOURNAL_ENVIRONMENT", "emulator".to_owned()),
            ("PROVIDER_URL", "http://127.0.0.1:1".to_owned()),
            ("STRIPE_API_BASE", "http://127.0.0.1:1".to_owned()),
            ("PROVIDER_NAME", provider.to_owned()),
        ]);
        if provider == "stripe" {
            env.insert("STRIPE_SECRET_KEY", SECRET.to_owned());
        }
        if let Some(secret) = secret {
            env.insert("STRIPE_WEBHOOK_SECRET", secret.to_owned());
        }
        let config = Config::from_lookup(|name| env.get(name).cloned()).expect("config");
        WebhookSettings::from_lookup(|name| env.get(name).cloned(), &config)
    };
    assert!(matches!(settings("stripe", None), Ok(None)));
    assert!(matches!(settings("stripe", Some("")), Ok(None)));
    let both = format!("{WEBHOOK_SECRET},{OLD_WEBHOOK_SECRET}");
    let accepted = settings("stripe", Some(&both)).expect("a roll's two secrets");
    let shown = format!("{accepted:?}");
    assert!(!shown.contains("CANARY"), "{shown}");
    let repeated = format!("{WEBHOOK_SECRET},{WEBHOOK_SECRET}");
    let spaced = format!("{WEBHOOK_SECRET}, {OLD_WEBHOOK_SECRET}");
    for (provider, secret) in [
        ("stripe", "whsec_CANARY-bad"),
        ("stripe", "sk_test_CANARYnotAWebhookSecret"),
        ("stripe", repeated.as_str()),
        ("stripe", spaced.as_str()),
        ("stub", WEBHOOK_SECRET),
    ] {
        let error = settings(provider, Some(secret)).expect_err(secret);
        assert_eq!(error.variable, "STRIPE_WEBHOOK_SECRET");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("CANARY"), "{shown}");
    }
}

/// An event that arrives after the client's call answered (a stored 500, rolled
/// forward by Stripe 2 s later) settles the command at once: the call released its
/// lease before answering, so the event's recovery holder takes it over with no wait
/// (no clock moved past the lease), and the client's next call is answered from the
/// journal.
#[tokio::test]
async fn webhook_an_event_after_the_clients_call_answered_settles_at_once() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1 });
    let id = command_id(950);
    let first = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(first.status, 202);
    advance(&service, &stand_in, 2);
    let succeeded_event = stand_in.events().last().expect("an event").clone();
    assert_eq!(succeeded_event["type"], "payment_intent.succeeded");
    let url = endpoint(&service);
    let delivered = stand_in
        .deliver(&url, WEBHOOK_SECRET, &succeeded_event, stand_in.now())
        .await;
    assert_eq!(delivered, 200, "the client's lease was released");
    assert_eq!(
        service
            .sample(
                "checkout_service_webhooks_recorded_total",
                &[("result", "recorded")]
            )
            .await,
        1
    );
    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 0)));
    assert_eq!(stand_in.intents().len(), 1, "one charge");
    service.assert_verifies_clean(1).await;
}

/// A journal error recording an event: `invalid_input` is refused under its own code
/// (400 `evidence_invalid_input`), never a corrupt journal nor a 503 to wait out; a
/// corrupt document or an unavailable journal is still a 503 Stripe retries.
#[test]
fn webhook_an_invalid_input_is_refused_under_its_own_code() {
    use super::service::webhook_event::{Taken, taken_error};
    use command_journal::JournalError;
    assert_eq!(
        taken_error(&JournalError::invalid("providerAnswer")),
        Taken::Refused("evidence_invalid_input")
    );
    assert_eq!(
        taken_error(&JournalError::corrupt(
            "a provider key index names no registered command"
        )),
        Taken::Unavailable("journal_corrupt")
    );
    assert_eq!(
        taken_error(&JournalError::NotRegistered),
        Taken::Unavailable("not_registered")
    );
}
