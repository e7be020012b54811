//! Every PaymentIntent and Checkout Session event type, classified from signed
//! fixtures; the object's current state read by id; keys absent or foreign; the other
//! mode; duplicates and any order; a forged body refused before classification; and
//! no customer value in any `Debug`.
//!
//! The fixtures are written from Stripe's API reference: the Event object
//! (`https://docs.stripe.com/api/events/object`), the PaymentIntent object
//! (`https://docs.stripe.com/api/payment_intents/object`) and the Checkout Session
//! object (`https://docs.stripe.com/api/checkout/sessions/object`, API version
//! 2025-04-30.basil), each with the journal's key in its metadata.

use command_journal::sends::{CustomerAction, Handoff};
use command_journal::{ProviderAnswer, Timestamp};
use command_journal_stripe::answer::{SendAnswer, retrieve_result, send_result};
use command_journal_stripe::intent::envelope;
use command_journal_stripe::session;
use command_journal_stripe::webhook::{
    Classified, Evidence, Ignored, JournalKey, ObjectKind, ObjectRef, ReadById, Refusal,
    Settlement, VerifiedEvent, Verifier, WebhookSecret, WebhookSecrets, classify, event_types,
    settle, settle_by_id,
};
use command_journal_stripe::{Charge, Expected};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::BTreeMap;

const SECRET: &str = "whsec_eventsEndpointSecret01";
/// 2030-01-01T00:00:00Z.
const T: i64 = 1_893_456_000;
const KEY: &str = "cj1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const OTHER_KEY: &str = "cj1-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
const INTENT: &str = "pi_3CANARYintent0001";
const SESSION: &str = "cs_test_a1CANARYsession0001";
/// Customer values that no `Debug`, code or error may show.
const EMAIL: &str = "CANARY.customer@example.com";
const CLIENT_SECRET: &str = "pi_3CANARYintent0001_secret_CANARYclientSecret";
const PAGE_URL: &str = "https://checkout.stripe.com/c/pay/cs_test_a1CANARYpage";

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn verifier() -> Verifier {
    let secret = WebhookSecret::new(SECRET).expect("secret");
    Verifier::new(WebhookSecrets::new(vec![secret]).expect("secrets"))
}

fn header(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(format!("{T}.").as_bytes());
    mac.update(body);
    format!("t={T},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// The Event object around `object`, as Stripe sends it.
fn event_body(id: &str, event_type: &str, livemode: bool, object: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": id,
        "object": "event",
        "api_version": "2025-04-30.basil",
        "created": T - 5,
        "data": {"object": object, "previous_attributes": {}},
        "livemode": livemode,
        "pending_webhooks": 1,
        "request": {"id": "req_CANARYrequest", "idempotency_key": KEY},
        "type": event_type,
    }))
    .expect("json")
}

/// An event verified as the endpoint verifies it: only what passes reaches classify.
fn verified(id: &str, event_type: &str, livemode: bool, object: &Value) -> VerifiedEvent {
    let body = event_body(id, event_type, livemode, object);
    verifier()
        .verify(Some(&header(&body)), &body, at(T))
        .expect("verified")
}

fn metadata(key: Option<&str>) -> Value {
    match key {
        Some(key) => json!({"journal_key": key}),
        None => json!({"order": "another integration's"}),
    }
}

/// A PaymentIntent of the API reference's shape in `status`.
fn intent(status: &str, key: Option<&str>) -> Value {
    let failed = status == "requires_payment_method";
    json!({
        "id": INTENT,
        "object": "payment_intent",
        "amount": 1250,
        "amount_capturable": 0,
        "amount_details": {"tip": {}},
        "amount_received": if status == "succeeded" { 1250 } else { 0 },
        "application": null,
        "application_fee_amount": null,
        "automatic_payment_methods": null,
        "canceled_at": if status == "canceled" { json!(T - 10) } else { Value::Null },
        "cancellation_reason": if status == "canceled" { json!("abandoned") } else { Value::Null },
        "capture_method": "automatic",
        "client_secret": CLIENT_SECRET,
        "confirmation_method": "automatic",
        "created": T - 60,
        "currency": "eur",
        "customer": null,
        "description": null,
        "last_payment_error": if failed {
            json!({"type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
                   "message": "Your card was declined."})
        } else { Value::Null },
        "latest_charge": if status == "succeeded" { json!("ch_3CANARYcharge") } else { Value::Null },
        "livemode": false,
        "metadata": metadata(key),
        "next_action": if status == "requires_action" {
            json!({"type": "use_stripe_sdk", "use_stripe_sdk": {}})
        } else { Value::Null },
        "on_behalf_of": null,
        "payment_method": "pm_CANARYcard",
        "payment_method_options": {"card": {"request_three_d_secure": "automatic"}},
        "payment_method_types": ["card"],
        "processing": null,
        "receipt_email": EMAIL,
        "review": null,
        "setup_future_usage": null,
        "shipping": null,
        "source": null,
        "statement_descriptor": null,
        "statement_descriptor_suffix": null,
        "status": status,
        "transfer_data": null,
        "transfer_group": null,
    })
}

/// A Checkout Session of the API reference's shape.
fn session(status: &str, payment_status: &str, key: Option<&str>) -> Value {
    let complete = status == "complete";
    json!({
        "id": SESSION,
        "object": "checkout.session",
        "after_expiration": null,
        "allow_promotion_codes": null,
        "amount_subtotal": 1250,
        "amount_total": 1250,
        "automatic_tax": {"enabled": false, "liability": null, "status": null},
        "billing_address_collection": null,
        "cancel_url": "https://shop.example/cancel",
        "client_reference_id": null,
        "consent": null,
        "consent_collection": null,
        "created": T - 600,
        "currency": "eur",
        "custom_fields": [],
        "custom_text": {"shipping_address": null, "submit": null},
        "customer": null,
        "customer_creation": "if_required",
        "customer_details": if complete {
            json!({"email": EMAIL, "name": "CANARY Customer", "phone": null})
        } else { Value::Null },
        "customer_email": null,
        "expires_at": T + 1200,
        "livemode": false,
        "locale": null,
        "metadata": metadata(key),
        "mode": "payment",
        "payment_intent": if complete { json!(INTENT) } else { Value::Null },
        "payment_link": null,
        "payment_method_collection": "always",
        "payment_method_options": {},
        "payment_method_types": ["card"],
        "payment_status": payment_status,
        "recovered_from": null,
        "setup_intent": null,
        "status": status,
        "submit_type": null,
        "subscription": null,
        "success_url": "https://shop.example/success",
        "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
        "url": if status == "open" { json!(PAGE_URL) } else { Value::Null },
    })
}

fn key() -> JournalKey {
    JournalKey::parse(KEY).expect("key")
}

fn intent_ref() -> ObjectRef {
    ObjectRef::new(ObjectKind::PaymentIntent, INTENT).expect("intent id")
}

fn session_ref() -> ObjectRef {
    ObjectRef::new(ObjectKind::CheckoutSession, SESSION).expect("session id")
}

/// The answer the adapter's send builds from a succeeded intent: the one envelope.
fn sent_success() -> ProviderAnswer {
    let intent = intent("succeeded", Some(KEY));
    let fields = envelope(intent.as_object().expect("object")).expect("envelope");
    send_result(SendAnswer::Succeeded(fields))
}

fn ours(evidence: Evidence, object: ObjectRef) -> Classified {
    Classified::Ours {
        key: key(),
        object,
        evidence,
    }
}

/// Every event type of the table, with the object Stripe sends with it.
fn every_event() -> Vec<(&'static str, Value, Classified)> {
    let read = |object: ObjectRef, why: &'static str| Evidence::ReadById(object, why);
    vec![
        (
            "payment_intent.succeeded",
            intent("succeeded", Some(KEY)),
            ours(Evidence::Proves(sent_success()), intent_ref()),
        ),
        (
            "payment_intent.payment_failed",
            intent("requires_payment_method", Some(KEY)),
            ours(read(intent_ref(), "payment_failed"), intent_ref()),
        ),
        (
            "payment_intent.canceled",
            intent("canceled", Some(KEY)),
            ours(read(intent_ref(), "canceled"), intent_ref()),
        ),
        (
            "payment_intent.requires_action",
            intent("requires_action", Some(KEY)),
            ours(read(intent_ref(), "requires_action"), intent_ref()),
        ),
        (
            "payment_intent.processing",
            intent("processing", Some(KEY)),
            ours(Evidence::Nothing, intent_ref()),
        ),
        (
            "payment_intent.created",
            intent("requires_payment_method", Some(KEY)),
            ours(Evidence::Nothing, intent_ref()),
        ),
        (
            "payment_intent.amount_capturable_updated",
            intent("requires_capture", Some(KEY)),
            ours(Evidence::Nothing, intent_ref()),
        ),
        (
            "payment_intent.partially_funded",
            intent("requires_action", Some(KEY)),
            ours(Evidence::Nothing, intent_ref()),
        ),
        (
            "checkout.session.completed",
            session("complete", "paid", Some(KEY)),
            ours(read(intent_ref(), "session_paid"), session_ref()),
        ),
        (
            "checkout.session.async_payment_succeeded",
            session("complete", "paid", Some(KEY)),
            ours(read(intent_ref(), "async_payment_succeeded"), session_ref()),
        ),
        (
            "checkout.session.async_payment_failed",
            session("complete", "unpaid", Some(KEY)),
            ours(read(intent_ref(), "async_payment_failed"), session_ref()),
        ),
        (
            "checkout.session.expired",
            session("expired", "unpaid", Some(KEY)),
            ours(read(session_ref(), "expired"), session_ref()),
        ),
    ]
}

#[test]
fn every_event_type_classifies_as_its_row() {
    let events = every_event();
    let types: Vec<&str> = events.iter().map(|(t, _, _)| *t).collect();
    assert_eq!(
        types,
        event_types().collect::<Vec<_>>(),
        "the table is complete"
    );
    for (n, (event_type, object, expected)) in events.into_iter().enumerate() {
        let event = verified(&format!("evt_CANARYevent{n}"), event_type, false, &object);
        assert_eq!(classify(&event, false), expected, "{event_type}");
    }
}

#[test]
fn a_succeeded_event_carries_the_adapters_envelope_and_never_an_absence() {
    let event = verified(
        "evt_ok",
        "payment_intent.succeeded",
        false,
        &intent("succeeded", Some(KEY)),
    );
    let Classified::Ours {
        evidence: Evidence::Proves(answer),
        ..
    } = classify(&event, false)
    else {
        panic!("a success");
    };
    assert_eq!(answer, sent_success());
    // No event of any type, in any state, proves an absence.
    let states = [
        "succeeded",
        "canceled",
        "processing",
        "requires_action",
        "requires_payment_method",
    ];
    for event_type in event_types() {
        for state in states {
            let object = if event_type.starts_with("checkout") {
                session("complete", state, Some(KEY))
            } else {
                intent(state, Some(KEY))
            };
            let classified = classify(&verified("evt_x", event_type, false, &object), false);
            if let Classified::Ours {
                evidence: Evidence::Proves(answer),
                ..
            } = &classified
            {
                assert!(
                    matches!(answer, ProviderAnswer::Succeeded(_)),
                    "{event_type} {state}"
                );
                assert_eq!(
                    (event_type, state),
                    ("payment_intent.succeeded", "succeeded")
                );
            }
        }
    }
}

#[test]
fn a_succeeded_event_is_checked_against_the_plan_through_settle() {
    let key = key();
    let event = verified(
        "evt_ok",
        "payment_intent.succeeded",
        false,
        &intent("succeeded", Some(KEY)),
    );
    let Classified::Ours { object, .. } = classify(&event, false) else {
        panic!("ours");
    };
    let json = event.object().get();
    assert_eq!(
        settle(&object, json, &key, &expected_charge()),
        Settlement::Answer(sent_success())
    );
    let other =
        Charge::from_parameters(&json!({"amount": 1250, "currency": "usd"})).expect("charge");
    assert_eq!(
        settle(&object, json, &key, &Expected::of(&other)),
        Settlement::Answer(ProviderAnswer::Unknown)
    );
}

#[test]
fn a_succeeded_event_whose_intent_says_otherwise_is_read_by_id() {
    for state in ["processing", "canceled"] {
        let event = verified(
            "evt_odd",
            "payment_intent.succeeded",
            false,
            &intent(state, Some(KEY)),
        );
        assert_eq!(
            classify(&event, false),
            ours(
                Evidence::ReadById(intent_ref(), "succeeded_unreadable"),
                intent_ref()
            )
        );
    }
}

#[test]
fn an_object_without_the_key_is_not_ours_and_a_foreign_key_is_counted_apart() {
    for (event_type, _, _) in every_event() {
        let absent = if event_type.starts_with("checkout") {
            session("complete", "paid", None)
        } else {
            intent("succeeded", None)
        };
        let event = verified("evt_other", event_type, false, &absent);
        assert_eq!(
            classify(&event, false),
            Classified::Ignored(Ignored::NotOurs),
            "{event_type}"
        );
    }
    let mut null_metadata = session("expired", "unpaid", None);
    null_metadata["metadata"] = Value::Null;
    let event = verified(
        "evt_null",
        "checkout.session.expired",
        false,
        &null_metadata,
    );
    assert_eq!(
        classify(&event, false),
        Classified::Ignored(Ignored::NotOurs)
    );

    let upper = KEY.to_ascii_uppercase().replacen("CJ1", "cj1", 1);
    for foreign in [
        json!("order-1234"),
        json!(upper),
        json!(&KEY[..60]),
        json!(12),
    ] {
        let mut object = intent("succeeded", Some(KEY));
        object["metadata"]["journal_key"] = foreign.clone();
        let event = verified("evt_foreign", "payment_intent.succeeded", false, &object);
        assert_eq!(
            classify(&event, false),
            Classified::Ignored(Ignored::KeyInvalid),
            "{foreign}"
        );
    }
    // The payment's intent carries the key, the session does not: the session's event
    // is not ours (its own metadata decides), its intent's events are.
    let event = verified(
        "evt_s",
        "checkout.session.completed",
        false,
        &session("complete", "paid", None),
    );
    assert_eq!(
        classify(&event, false),
        Classified::Ignored(Ignored::NotOurs)
    );
}

#[test]
fn an_object_of_another_kind_or_without_an_id_is_unexpected() {
    let charge = json!({"id": "ch_1", "object": "charge", "metadata": {"journal_key": KEY}});
    let event = verified("evt_c", "payment_intent.succeeded", false, &charge);
    assert_eq!(
        classify(&event, false),
        Classified::Ignored(Ignored::ObjectUnexpected)
    );
    let event = verified(
        "evt_s",
        "checkout.session.expired",
        false,
        &intent("canceled", Some(KEY)),
    );
    assert_eq!(
        classify(&event, false),
        Classified::Ignored(Ignored::ObjectUnexpected)
    );
    for id in [
        json!("cs_1"),
        json!(""),
        json!("pi_"),
        json!("pi_1/../x"),
        json!(7),
    ] {
        let mut object = intent("succeeded", Some(KEY));
        object["id"] = id.clone();
        let event = verified("evt_i", "payment_intent.succeeded", false, &object);
        assert_eq!(
            classify(&event, false),
            Classified::Ignored(Ignored::ObjectUnexpected),
            "{id}"
        );
    }
}

#[test]
fn unknown_types_are_acknowledged_and_record_nothing() {
    for event_type in [
        "charge.succeeded",
        "payment_intent.updated",
        "checkout.session.updated",
        "invoice.paid",
    ] {
        let event = verified("evt_u", event_type, false, &intent("succeeded", Some(KEY)));
        assert_eq!(
            classify(&event, false),
            Classified::Ignored(Ignored::TypeUnhandled),
            "{event_type}"
        );
        assert_eq!(Ignored::TypeUnhandled.code(), "webhook_type_unhandled");
    }
}

#[test]
fn an_event_of_the_other_mode_is_ignored_and_the_same_mode_still_counts() {
    let object = intent("succeeded", Some(KEY));
    let test_event = verified("evt_t", "payment_intent.succeeded", false, &object);
    let live_event = verified("evt_l", "payment_intent.succeeded", true, &object);
    assert_eq!(
        classify(&test_event, true),
        Classified::Ignored(Ignored::OtherMode)
    );
    assert_eq!(
        classify(&live_event, false),
        Classified::Ignored(Ignored::OtherMode)
    );
    let expected = ours(Evidence::Proves(sent_success()), intent_ref());
    assert_eq!(classify(&live_event, true), expected);
    assert_eq!(classify(&test_event, false), expected);
}

/// An event of a connected account (its top-level `account`, as Stripe sends a
/// platform's Connect endpoint) is not this account's: acknowledged under its own code
/// and never evidence, even when its object carries a key of the journal's form and
/// the right mode; the same event without `account` still counts.
#[test]
fn an_event_of_a_connected_account_is_ignored_under_its_own_code() {
    let object = intent("succeeded", Some(KEY));
    let mut body: Value = serde_json::from_slice(&event_body(
        "evt_c",
        "payment_intent.succeeded",
        false,
        &object,
    ))
    .expect("json");
    body["account"] = json!("acct_CANARYconnected");
    let bytes = serde_json::to_vec(&body).expect("json");
    let connected = verifier()
        .verify(Some(&header(&bytes)), &bytes, at(T))
        .expect("verified");
    assert!(connected.from_connect_account());
    assert_eq!(
        classify(&connected, false),
        Classified::Ignored(Ignored::ConnectAccount)
    );
    assert_eq!(Ignored::ConnectAccount.code(), "webhook_connect_account");
    assert!(!format!("{connected:?}").contains("acct_CANARYconnected"));
    let own = verified("evt_o", "payment_intent.succeeded", false, &object);
    assert!(!own.from_connect_account());
    assert_eq!(
        classify(&own, false),
        ours(Evidence::Proves(sent_success()), intent_ref())
    );
}

#[test]
fn duplicated_and_reordered_events_classify_the_same() {
    let events: Vec<VerifiedEvent> = every_event()
        .into_iter()
        .enumerate()
        .map(|(n, (t, object, _))| verified(&format!("evt_{n}"), t, false, &object))
        .collect();
    let once: BTreeMap<String, Classified> = events
        .iter()
        .map(|event| (event.id().to_owned(), classify(event, false)))
        .collect();
    // Reversed, rotated, each one delivered three times: the same classification per
    // event id, whatever came before it.
    let mut orders: Vec<Vec<&VerifiedEvent>> = vec![events.iter().rev().collect()];
    for shift in 1..events.len() {
        let mut rotated: Vec<&VerifiedEvent> = events.iter().collect();
        rotated.rotate_left(shift);
        orders.push(rotated);
    }
    orders.push(
        events
            .iter()
            .flat_map(|event| [event, event, event])
            .collect(),
    );
    for order in orders {
        for event in order {
            assert_eq!(once.get(event.id()), Some(&classify(event, false)));
        }
    }
}

/// The objects a read by id finds: their current state, as a stand-in would answer.
struct Objects(BTreeMap<String, Value>);

impl ReadById for Objects {
    async fn read(&self, object: &ObjectRef) -> Option<String> {
        self.0.get(object.id()).map(Value::to_string)
    }
}

/// `answer`, as the adapter read it by id at the test's time `T`: the evidence the
/// journal records with that provenance.
fn by_id(answer: ProviderAnswer) -> Option<command_journal::evidence::Evidence> {
    Some(command_journal::evidence::Evidence::read_by_id(
        KEY,
        answer,
        at(T),
    ))
}

fn objects(list: &[Value]) -> Objects {
    Objects(
        list.iter()
            .map(|object| {
                (
                    object["id"].as_str().expect("id").to_owned(),
                    object.clone(),
                )
            })
            .collect(),
    )
}

fn expected_charge() -> Expected {
    Expected::of(
        &Charge::from_parameters(&json!({"amount": 1250, "currency": "eur"})).expect("charge"),
    )
}

#[test]
fn an_intents_current_state_settles_as_the_adapters_lookup_reads_it() {
    let key = key();
    let settle_intent = |object: &Value, expected: &Expected| {
        settle(&intent_ref(), &object.to_string(), &key, expected)
    };
    let answer = |answer| Settlement::Answer(answer);
    for expected in [expected_charge(), Expected::key_only()] {
        assert_eq!(
            settle_intent(&intent("succeeded", Some(KEY)), &expected),
            answer(sent_success())
        );
        // A refused confirmation the customer may still retry on the same intent: the
        // lookup reads it as a decline (no customer acts on a looked-up attempt), an
        // event never makes it final.
        assert_eq!(
            settle_intent(&intent("requires_payment_method", Some(KEY)), &expected),
            answer(ProviderAnswer::Unknown)
        );
        assert_eq!(
            settle_intent(&intent("canceled", Some(KEY)), &expected),
            answer(ProviderAnswer::Declined)
        );
        for open in [
            "requires_action",
            "processing",
            "requires_capture",
            "requires_confirmation",
        ] {
            assert_eq!(
                settle_intent(&intent(open, Some(KEY)), &expected),
                answer(ProviderAnswer::Unknown),
                "{open}"
            );
        }
    }
    // Another key's intent, another amount, another object, a body that is no object:
    // unknown, never a decline and never an absence.
    assert_eq!(
        settle_intent(&intent("succeeded", Some(OTHER_KEY)), &Expected::key_only()),
        answer(ProviderAnswer::Unknown)
    );
    let mut dearer = intent("succeeded", Some(KEY));
    dearer["amount"] = json!(9999);
    assert_eq!(
        settle_intent(&dearer, &expected_charge()),
        answer(ProviderAnswer::Unknown)
    );
    let mut moved = intent("succeeded", Some(KEY));
    moved["id"] = json!("pi_3someOtherIntent");
    assert_eq!(
        settle_intent(&moved, &Expected::key_only()),
        answer(ProviderAnswer::Unknown)
    );
    assert_eq!(
        settle(
            &intent_ref(),
            "{\"id\":1,\"id\":2}",
            &key,
            &Expected::key_only()
        ),
        answer(ProviderAnswer::Unknown)
    );
}

#[test]
fn a_sessions_current_state_settles_through_its_payment_intent() {
    let key = key();
    let settle_session = |object: &Value| {
        settle(
            &session_ref(),
            &object.to_string(),
            &key,
            &Expected::key_only(),
        )
    };
    let unknown = Settlement::Answer(ProviderAnswer::Unknown);
    assert_eq!(
        settle_session(&session("complete", "paid", Some(KEY))),
        Settlement::ReadById(intent_ref())
    );
    assert_eq!(
        settle_session(&session("complete", "unpaid", Some(KEY))),
        Settlement::ReadById(intent_ref())
    );
    assert_eq!(
        settle_session(&session("complete", "no_payment_required", Some(KEY))),
        unknown
    );
    assert_eq!(
        settle_session(&session("open", "unpaid", Some(KEY))),
        Settlement::Answer(ProviderAnswer::CustomerMustAct(CustomerAction::Open {
            url: Handoff::new(PAGE_URL)
        }))
    );
    let mut no_page = session("open", "unpaid", Some(KEY));
    no_page["url"] = json!("javascript:alert(1)");
    assert_eq!(settle_session(&no_page), unknown);
    no_page["url"] = Value::Null;
    assert_eq!(settle_session(&no_page), unknown);
    assert_eq!(
        settle_session(&session("expired", "unpaid", Some(KEY))),
        Settlement::Answer(ProviderAnswer::Closed)
    );
    assert_eq!(
        settle_session(&session("expired", "unpaid", Some(OTHER_KEY))),
        unknown
    );
    assert_eq!(
        settle_session(&session("complete", "paid", Some(OTHER_KEY))),
        unknown
    );
    assert_eq!(settle_session(&session("complete", "paid", None)), unknown);
}

#[tokio::test]
async fn an_order_dependent_event_settles_from_what_came_after_it() {
    let key = key();
    // The customer's card was refused, then they paid with another on the same intent:
    // the late `payment_failed` settles as the success, with the same envelope.
    let failed = verified(
        "evt_f",
        "payment_intent.payment_failed",
        false,
        &intent("requires_payment_method", Some(KEY)),
    );
    let Classified::Ours {
        evidence: Evidence::ReadById(object, _),
        ..
    } = classify(&failed, false)
    else {
        panic!("read by id");
    };
    let now_paid = objects(&[intent("succeeded", Some(KEY))]);
    assert_eq!(
        settle_by_id(&now_paid, object.clone(), &key, &expected_charge(), at(T)).await,
        by_id(sent_success())
    );
    // Still refused, the customer may still retry: nothing final.
    let still_refused = objects(&[intent("requires_payment_method", Some(KEY))]);
    assert_eq!(
        settle_by_id(
            &still_refused,
            object.clone(),
            &key,
            &expected_charge(),
            at(T)
        )
        .await,
        by_id(ProviderAnswer::Unknown)
    );
    // A read that fails tells nothing: read again later.
    assert_eq!(
        settle_by_id(&objects(&[]), object, &key, &expected_charge(), at(T)).await,
        None
    );

    // A paid session: its PaymentIntent, read by id, is the success.
    let paid = verified(
        "evt_p",
        "checkout.session.completed",
        false,
        &session("complete", "paid", Some(KEY)),
    );
    let Classified::Ours {
        evidence: Evidence::ReadById(object, _),
        ..
    } = classify(&paid, false)
    else {
        panic!("read by id");
    };
    let both = objects(&[
        session("complete", "paid", Some(KEY)),
        intent("succeeded", Some(KEY)),
    ]);
    assert_eq!(
        settle_by_id(&both, object, &key, &expected_charge(), at(T)).await,
        by_id(sent_success())
    );
    // An expired session read by id is closed (final: nothing paid, nothing payable),
    // and says it was read by id (the journal weighs such a `Closed` for an attempt
    // awaiting its customer); a complete one whose intent cannot be read tells
    // nothing yet (read again later).
    let expired = verified(
        "evt_e",
        "checkout.session.expired",
        false,
        &session("expired", "unpaid", Some(KEY)),
    );
    let Classified::Ours {
        evidence: Evidence::ReadById(object, _),
        ..
    } = classify(&expired, false)
    else {
        panic!("read by id");
    };
    let closed = objects(&[session("expired", "unpaid", Some(KEY))]);
    assert_eq!(
        settle_by_id(&closed, object.clone(), &key, &expected_charge(), at(T)).await,
        by_id(ProviderAnswer::Closed)
    );
    let only_session = objects(&[session("complete", "paid", Some(KEY))]);
    assert_eq!(
        settle_by_id(&only_session, object, &key, &expected_charge(), at(T)).await,
        None
    );
}

/// An expired session whose customer began to pay names a PaymentIntent: read by id,
/// it decides, by the one session mapping the adapter's retrieve uses too
/// (`session::current`): `succeeded` is the payment, `processing` or
/// `requires_capture` (still on its way, funds held) and a refusal are unknown, and
/// `canceled` is closed, not declined (the lookup mapping's reading of a canceled
/// intent alone). With no intent, closed; an intent that cannot be read, nothing yet.
#[tokio::test]
async fn an_expired_session_with_an_intent_is_decided_by_its_intent() {
    let key = key();
    let mut expired = session("expired", "unpaid", Some(KEY));
    expired["payment_intent"] = json!(INTENT);
    assert_eq!(
        settle(
            &session_ref(),
            &expired.to_string(),
            &key,
            &expected_charge()
        ),
        Settlement::ReadById(intent_ref())
    );
    for (status, answer) in [
        ("succeeded", sent_success()),
        ("processing", ProviderAnswer::Unknown),
        ("requires_capture", ProviderAnswer::Unknown),
        ("requires_payment_method", ProviderAnswer::Unknown),
        ("canceled", ProviderAnswer::Closed),
    ] {
        let intent = intent(status, Some(KEY));
        let both = objects(&[expired.clone(), intent.clone()]);
        assert_eq!(
            settle_by_id(&both, session_ref(), &key, &expected_charge(), at(T)).await,
            by_id(answer.clone()),
            "{status}"
        );
        // The adapter's retrieve maps the same objects the same way.
        let adapter = session::current(expired.as_object().expect("session"), intent.as_object());
        assert_eq!(retrieve_result(adapter), answer, "{status}");
    }
    // Another request's intent is none of this one's: unknown.
    let foreign = objects(&[expired.clone(), intent("canceled", Some(OTHER_KEY))]);
    assert_eq!(
        settle_by_id(&foreign, session_ref(), &key, &expected_charge(), at(T)).await,
        by_id(ProviderAnswer::Unknown)
    );
    assert_eq!(
        settle_by_id(
            &objects(&[expired.clone()]),
            session_ref(),
            &key,
            &expected_charge(),
            at(T)
        )
        .await,
        None
    );
    let unpaid = session("expired", "unpaid", Some(KEY));
    assert_eq!(
        settle_by_id(
            &objects(std::slice::from_ref(&unpaid)),
            session_ref(),
            &key,
            &expected_charge(),
            at(T)
        )
        .await,
        by_id(ProviderAnswer::Closed)
    );
    assert_eq!(
        retrieve_result(session::current(unpaid.as_object().expect("session"), None)),
        ProviderAnswer::Closed
    );
}

/// The webhook's settlement and the adapter's retrieve read every session state
/// through one mapping: the same answer for the same session and intent.
#[tokio::test]
async fn the_webhook_and_the_adapter_read_a_session_alike() {
    let key = key();
    for (status, payment, intent_status) in [
        ("open", "unpaid", None),
        ("complete", "paid", Some("succeeded")),
        ("complete", "paid", Some("processing")),
        ("complete", "unpaid", Some("processing")),
        ("complete", "unpaid", Some("succeeded")),
        ("complete", "unpaid", Some("canceled")),
        ("complete", "no_payment_required", None),
        ("expired", "unpaid", None),
    ] {
        let session_json = session(status, payment, Some(KEY));
        let intent_json = intent_status.map(|status| intent(status, Some(KEY)));
        let adapter = retrieve_result(session::current(
            session_json.as_object().expect("session"),
            intent_json.as_ref().and_then(Value::as_object),
        ));
        let label = format!("{status} {payment} {intent_status:?}");
        match settle(
            &session_ref(),
            &session_json.to_string(),
            &key,
            &Expected::key_only(),
        ) {
            Settlement::Answer(answer) => assert_eq!(answer, adapter, "{label}"),
            Settlement::ReadById(_) => {
                let mut both = vec![session_json.clone()];
                both.extend(intent_json.clone());
                let read = settle_by_id(
                    &objects(&both),
                    session_ref(),
                    &key,
                    &Expected::key_only(),
                    at(T),
                )
                .await;
                assert_eq!(read, by_id(adapter), "{label}");
            }
        }
    }
}

#[test]
fn a_forged_body_never_reaches_classify() {
    let object = intent("succeeded", Some(KEY));
    let body = event_body("evt_forged", "payment_intent.succeeded", false, &object);
    let signed = header(&body);
    // The same signature over a body that claims a success for another key.
    let forged = String::from_utf8(body.clone())
        .expect("utf8")
        .replace(KEY, OTHER_KEY);
    assert_eq!(
        verifier()
            .verify(Some(&signed), forged.as_bytes(), at(T))
            .map(|_| ()),
        Err(Refusal::SignatureMismatch)
    );
    assert_eq!(
        verifier().verify(None, &body, at(T)).map(|_| ()),
        Err(Refusal::HeaderMissing)
    );
    assert_eq!(
        verifier()
            .verify(Some(&signed), &body, at(T + 301))
            .map(|_| ()),
        Err(Refusal::TimestampTooOld)
    );
    // The case that must still pass.
    assert!(verifier().verify(Some(&signed), &body, at(T)).is_ok());
}

#[tokio::test]
async fn no_customer_value_appears_in_debug_or_codes() {
    let canaries = [
        EMAIL,
        CLIENT_SECRET,
        PAGE_URL,
        INTENT,
        SESSION,
        &KEY[4..],
        "CANARY",
    ];
    let mut shown = Vec::new();
    for (n, (event_type, object, _)) in every_event().into_iter().enumerate() {
        let event = verified(&format!("evt_CANARYevent{n}"), event_type, false, &object);
        let classified = classify(&event, false);
        shown.push(format!("{event:?} {classified:?} {classified:#?}"));
        if let Classified::Ours {
            evidence: Evidence::ReadById(object, why),
            key,
            ..
        } = &classified
        {
            shown.push(format!("{object:?} {why} {key:?}"));
        }
    }
    for ignored in [
        Ignored::TypeUnhandled,
        Ignored::OtherMode,
        Ignored::ObjectUnexpected,
        Ignored::NotOurs,
        Ignored::KeyInvalid,
        Ignored::ConnectAccount,
    ] {
        shown.push(format!("{ignored:?} {}", ignored.code()));
    }
    let key = key();
    for object in [
        session("open", "unpaid", Some(KEY)),
        session("complete", "paid", Some(KEY)),
    ] {
        shown.push(format!(
            "{:?}",
            settle(
                &session_ref(),
                &object.to_string(),
                &key,
                &Expected::key_only()
            )
        ));
    }
    let all = objects(&[
        session("complete", "paid", Some(KEY)),
        intent("succeeded", Some(KEY)),
    ]);
    shown.push(format!(
        "{:?}",
        settle_by_id(&all, session_ref(), &key, &Expected::key_only(), at(T)).await
    ));
    for text in shown {
        for canary in canaries {
            assert!(!text.contains(canary), "{canary} in {text}");
        }
    }
}

/// A `payment_intent.payment_failed` read by id while the customer can still retry on
/// the same intent (a failed 3-D Secure challenge with the client secret in the
/// browser; a declined card on a Checkout page that stays open) is no final refusal.
#[test]
fn a_refused_confirmation_the_customer_can_still_retry_is_no_decline() {
    let key_text = format!("cj1-{}", "ab".repeat(32));
    let key = JournalKey::parse(&key_text).expect("key");
    let object = ObjectRef::new(ObjectKind::PaymentIntent, "pi_retryable1").expect("ref");
    let intent = |status: &str| {
        serde_json::json!({
            "id": "pi_retryable1",
            "object": "payment_intent",
            "amount": 1000,
            "currency": "eur",
            "status": status,
            "last_payment_error": {"type": "card_error", "code": "card_declined"},
            "metadata": {"journal_key": key_text},
        })
        .to_string()
    };
    let open = settle(
        &object,
        &intent("requires_payment_method"),
        &key,
        &Expected::key_only(),
    );
    assert_eq!(open, Settlement::Answer(ProviderAnswer::Unknown));
    // Canceled after the refusal: final, a decline.
    let canceled = settle(&object, &intent("canceled"), &key, &Expected::key_only());
    assert_eq!(canceled, Settlement::Answer(ProviderAnswer::Declined));
}
