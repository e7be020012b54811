//! Attacks on the adapter: forged bodies, replay markers, search pages, leaks, an
//! incident's search lag behind a stored 500, keys no header can carry, re-sends of
//! parameters this version refuses. Each answer must stay what the journal can trust.

mod stand_in;

use command_journal::sends::AttemptNumber;
use command_journal::sends::LookupRequest;
use command_journal::{Provider, ProviderAnswer, SendRequest};
use command_journal_stripe::answer::{LookupAnswer, SendAnswer, classify_search, classify_send};
use command_journal_stripe::{
    Account, Charge, Expected, LookupMethod, SecretKey, Stripe, StripeConfig,
};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use stand_in::{Fault, SECRET, StandIn};
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";
const KEY: &str = "cj1-00000000000000000000000000000000000000000000000000000000000000aa";

fn key(n: u64) -> String {
    format!("cj1-{n:064x}")
}

fn stripe(stand_in: &StandIn) -> Stripe {
    let mut config = StripeConfig::new(
        SecretKey::new(SECRET).expect("key"),
        VERSION,
        Account::Own("acct_CANARYown".into()),
    );
    config.api_base = stand_in.url().to_owned();
    config.lookup = LookupMethod::Search;
    config.timeout = Duration::from_secs(10);
    Stripe::new(config).expect("client")
}

fn payload(payment_method: &str) -> Value {
    json!({"amount": 1250, "currency": "eur", "paymentMethod": payment_method})
}

fn request(key: &str, parameters: &Value, resend: bool) -> SendRequest {
    SendRequest {
        key: key.to_owned(),
        parameters: parameters.clone(),
        deadline: Duration::from_secs(10),
        attempt: AttemptNumber::FIRST,
        resend,
        act_by: command_journal::Timestamp::from_micros(1_900_000_000_000_000).expect("a time"),
    }
}

/// A lookup of `key`, as the journal asks one.
fn lookup(key: &str) -> LookupRequest {
    LookupRequest {
        key: key.to_owned(),
        deadline: Duration::from_secs(10),
    }
}

fn expected() -> Expected {
    Expected::of(
        &Charge::from_parameters(&json!({"amount": 1250, "currency": "eur"})).expect("charge"),
    )
}

fn intent(status: &str) -> Value {
    json!({
        "id": "pi_1", "object": "payment_intent", "amount": 1250, "currency": "eur",
        "status": status, "metadata": {"journal_key": KEY}, "last_payment_error": null,
    })
}

fn is_final(answer: &SendAnswer) -> bool {
    matches!(answer, SendAnswer::Succeeded(_) | SendAnswer::Declined(_))
}

/// Forged or odd 200/400/402 bodies: never a success or a decline unless the body is
/// exactly an intent of this request in a final state.
#[test]
fn held_forged_send_bodies_are_never_final_evidence() {
    let plain = HeaderMap::new();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = intent("succeeded");
        f(&mut v);
        v.to_string()
    };
    let forged_200 = vec![
        // Duplicate keys, top level and nested (serde_json alone keeps the last).
        r#"{"id":"pi_1","object":"payment_intent","amount":1250,"amount":999,"currency":"eur","status":"succeeded","metadata":{"journal_key":"K"}}"#.replace('K', KEY),
        r#"{"id":"pi_1","object":"payment_intent","amount":1250,"currency":"eur","status":"succeeded","metadata":{"journal_key":"x","journal_key":"K"}}"#.replace('K', KEY),
        r#"{"id":"pi_1","object":"payment_intent","amount":1250,"currency":"eur","status":"canceled","status":"succeeded","metadata":{"journal_key":"K"}}"#.replace('K', KEY),
        // Wrong types.
        with(&|v| v["amount"] = json!(1250.0)),
        with(&|v| v["amount"] = json!("1250")),
        with(&|v| v["currency"] = json!(["eur"])),
        with(&|v| v["metadata"]["journal_key"] = json!(0)),
        with(&|v| v["metadata"] = json!(KEY)),
        with(&|v| v["object"] = json!("charge")),
        with(&|v| { v.as_object_mut().unwrap().remove("object"); }),
        with(&|v| v["amount"] = json!(1251)),
        with(&|v| v["currency"] = json!("usd")),
        with(&|v| v["metadata"]["journal_key"] = json!(format!("{KEY} "))),
        with(&|v| v["metadata"]["journal_key"] = json!(KEY.to_uppercase())),
        // Another request's key that merely starts with ours.
        with(&|v| v["metadata"]["journal_key"] = json!(format!("{KEY}0"))),
        // A succeeded intent without a usable envelope: never a success.
        with(&|v| v["id"] = json!(7)),
        with(&|v| { v.as_object_mut().unwrap().remove("id"); }),
        "".to_owned(),
        "null".to_owned(),
        format!("{} trailing", intent("succeeded")),
    ];
    for body in &forged_200 {
        let answer = classify_send(StatusCode::OK, &plain, body, KEY, &expected());
        assert!(!is_final(&answer), "{body} -> {answer:?}");
    }
    // Status with odd types or a new value: never final.
    for status in [
        json!(1),
        json!(null),
        json!("Succeeded"),
        json!("partially_funded"),
    ] {
        let mut v = intent("succeeded");
        v["status"] = status;
        let answer = classify_send(StatusCode::OK, &plain, &v.to_string(), KEY, &expected());
        assert!(!is_final(&answer), "{v} -> {answer:?}");
    }
    // `last_payment_error` of a wrong type does not make a refusal.
    let mut v = intent("requires_payment_method");
    v["last_payment_error"] = json!("declined");
    let answer = classify_send(StatusCode::OK, &plain, &v.to_string(), KEY, &expected());
    assert!(!is_final(&answer), "{answer:?}");
    // Refusals carrying a charged, pending, foreign or malformed intent: never a decline.
    let refusal =
        |kind: &str, pi: Value| json!({"error": {"type": kind, "payment_intent": pi}}).to_string();
    let mut foreign = intent("requires_payment_method");
    foreign["amount"] = json!(5);
    for (status, body) in [
        (402, refusal("card_error", intent("succeeded"))),
        (402, refusal("card_error", intent("processing"))),
        (402, refusal("card_error", intent("requires_capture"))),
        (402, refusal("card_error", intent("requires_action"))),
        (402, refusal("card_error", foreign.clone())),
        (400, refusal("invalid_request_error", intent("succeeded"))),
        (400, refusal("invalid_request_error", foreign)),
        (402, refusal("card_error", json!(null))),
        (402, refusal("card_error", json!("pi_1"))),
        (
            402,
            r#"{"error":{"type":"card_error"},"error":{"type":"card_error"}}"#.to_owned(),
        ),
        (
            402,
            r#"{"error":{"type":"api_error","type":"card_error"}}"#.to_owned(),
        ),
        (402, json!({"error": "card_error"}).to_string()),
        (
            402,
            json!({"error": {"type": "invalid_request_error"}}).to_string(),
        ),
        (400, json!({"error": {"type": "card_error"}}).to_string()),
        (400, json!({"error": {"type": "api_error"}}).to_string()),
        (
            400,
            json!({"error": {"type": "idempotency_error"}}).to_string(),
        ),
    ] {
        let answer = classify_send(
            StatusCode::from_u16(status).unwrap(),
            &plain,
            &body,
            KEY,
            &expected(),
        );
        assert!(!is_final(&answer), "{status} {body} -> {answer:?}");
    }
    // Every other status is never final, whatever its body says.
    for status in [
        201u16, 202, 204, 301, 302, 401, 403, 404, 405, 408, 409, 422, 425, 429, 500, 502, 503, 504,
    ] {
        let answer = classify_send(
            StatusCode::from_u16(status).unwrap(),
            &plain,
            &intent("succeeded").to_string(),
            KEY,
            &expected(),
        );
        assert!(!is_final(&answer), "{status} -> {answer:?}");
    }
}

/// A replay marker only ever makes a 5xx a replayed unknown (never a 2xx/4xx anything
/// but what it is), in any case; a fresh 500 is indeterminate, a fresh 503 a plain
/// unknown.
#[test]
fn held_replay_marker_is_read_only_on_a_5xx() {
    for value in ["true", "TRUE", "True"] {
        let mut headers = HeaderMap::new();
        headers.insert("idempotent-replayed", HeaderValue::from_static(value));
        assert_eq!(
            classify_send(
                StatusCode::INTERNAL_SERVER_ERROR,
                &headers,
                "",
                KEY,
                &expected()
            ),
            SendAnswer::ReplayedUnknown
        );
        assert!(matches!(
            classify_send(
                StatusCode::OK,
                &headers,
                &intent("succeeded").to_string(),
                KEY,
                &expected()
            ),
            SendAnswer::Succeeded(_)
        ));
        assert_eq!(
            classify_send(StatusCode::CONFLICT, &headers, "", KEY, &expected()),
            SendAnswer::Unknown("provider_key_in_use")
        );
    }
    for value in ["false", "1", "yes", ""] {
        let mut headers = HeaderMap::new();
        headers.insert("idempotent-replayed", HeaderValue::from_str(value).unwrap());
        assert_eq!(
            classify_send(
                StatusCode::INTERNAL_SERVER_ERROR,
                &headers,
                "",
                KEY,
                &expected()
            ),
            SendAnswer::Indeterminate
        );
        assert_eq!(
            classify_send(
                StatusCode::SERVICE_UNAVAILABLE,
                &headers,
                "",
                KEY,
                &expected()
            ),
            SendAnswer::Unknown("provider_5xx")
        );
    }
}

/// Search pages that are not exactly one intent of this request are never evidence,
/// and never "not found" when they hold anything.
#[test]
fn held_forged_search_pages() {
    let page = |data: Value, has_more: Value| {
        json!({"object": "search_result", "data": data, "has_more": has_more}).to_string()
    };
    let mut other_amount = intent("succeeded");
    other_amount["amount"] = json!(1);
    let mut other_key = intent("succeeded");
    other_key["metadata"]["journal_key"] = json!("cj1-other");
    let cases = [
        page(json!([intent("succeeded")]), json!("false")),
        page(json!([intent("succeeded")]), json!(null)),
        page(json!([intent("succeeded")]), json!(true)),
        page(
            json!([intent("succeeded"), other_key.clone()]),
            json!(false),
        ),
        page(json!([other_key]), json!(false)),
        page(json!([other_amount]), json!(false)),
        page(json!({"0": intent("succeeded")}), json!(false)),
        page(json!([intent("succeeded"), 1]), json!(false)),
        page(json!([]), json!(true)),
        json!({"object": "list", "data": [], "has_more": false}).to_string(),
        json!({"data": [], "has_more": false}).to_string(),
        r#"{"object":"search_result","data":[],"data":[{}],"has_more":false}"#.to_owned(),
        r#"{"object":"search_result","has_more":false,"has_more":true,"data":[]}"#.to_owned(),
    ];
    for body in cases {
        let answer = classify_search(StatusCode::OK, &body, KEY, &expected());
        assert!(
            matches!(answer, LookupAnswer::Unavailable(_)),
            "{body} -> {answer:?}"
        );
    }
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::UNAUTHORIZED,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::INTERNAL_SERVER_ERROR,
        StatusCode::FOUND,
    ] {
        let answer = classify_search(
            status,
            &json!({"object":"search_result","data":[],"has_more":false}).to_string(),
            KEY,
            &expected(),
        );
        assert!(
            matches!(answer, LookupAnswer::Unavailable(_)),
            "{status} -> {answer:?}"
        );
    }
}

/// No Debug or Display of the package's values shows an intent id, an amount, an
/// account id, the secret key or an idempotency key.
#[tokio::test]
async fn held_no_output_carries_an_id_amount_account_or_key() {
    let stand_in = StandIn::with_accounts(&["acct_CANARYconnected"]).await;
    let mut config = StripeConfig::new(
        SecretKey::new(SECRET).expect("key"),
        VERSION,
        Account::Connected("acct_CANARYconnected".into()),
    );
    config.api_base = stand_in.url().to_owned();
    let stripe = Stripe::new(config.clone()).expect("client");
    let parameters =
        json!({"amount": 98_765_431, "currency": "eur", "paymentMethod": "pm_card_visa"});
    let provider = stripe.payment(&parameters);
    let mut outputs = vec![
        format!("{config:?}"),
        format!("{:?}", config.account),
        format!("{stripe:?}"),
        format!("{provider:?}"),
        format!("{:?}", Charge::from_parameters(&parameters)),
        format!(
            "{:?}",
            Expected::of(&Charge::from_parameters(&parameters).unwrap())
        ),
    ];
    let key = key(0xCAFE);
    let sent = provider.send(request(&key, &parameters, false)).await;
    assert!(matches!(sent, ProviderAnswer::Succeeded(_)), "{sent:?}");
    outputs.push(format!("{sent:?}"));
    outputs.push(format!("{provider:?}"));
    stand_in.advance(61);
    let found = provider.lookup(lookup(&key)).await;
    assert!(matches!(found, ProviderAnswer::Succeeded(_)), "{found:?}");
    outputs.push(format!("{found:?}"));
    let answer = stripe
        .create_and_confirm(
            &key,
            &Charge::from_parameters(&parameters).unwrap(),
            Duration::from_secs(5),
        )
        .await;
    outputs.push(format!("{answer:?}"));
    outputs.push(format!(
        "{:?}",
        stripe.find(&key, &Expected::key_only()).await
    ));
    for bad in [
        json!({"amount": 98_765_431}),
        json!({"amount": 98_765_431, "currency": "eur", "paymentMethod": "pm CANARYpm"}),
    ] {
        let error = Charge::from_parameters(&bad).unwrap_err();
        outputs.push(format!("{error:?} {error}"));
    }
    for output in &outputs {
        for secret in ["CANARY", "98765431", "cafe", &SECRET["sk_test_".len()..]] {
            assert!(!output.contains(secret), "{secret} in {output}");
        }
    }
}

/// A stored 500 during an incident, whose search lags by far more than its usual
/// minute: the 500 (fresh, then replayed) makes the journal look the key up at once.
/// The search's "not found" is confirmed by the listing (read after write), which
/// finds the charged intent: one charge.
#[tokio::test]
async fn a_stored_500_in_an_incident_is_found_by_the_listing_behind_the_search() {
    let stand_in = StandIn::start().await;
    stand_in.search_lag(900); // an incident: 15 min instead of 1
    let stripe = stripe(&stand_in);
    let parameters = payload("pm_card_visa");
    // Attempt 1, fence 1: Stripe charges, then fails with a 500 it stores.
    stand_in.fault(Fault::StoredServerError {
        create_intent: true,
    });
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(1), &parameters, false)).await,
        ProviderAnswer::Indeterminate
    );
    assert_eq!(provider.code(), Some("provider_500"));
    // Fence 2 takes over after fence 1's lease (60 s) and re-sends: the replayed 500.
    stand_in.advance(61);
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(1), &parameters, true)).await,
        ProviderAnswer::ReplayedUnknown
    );
    // 421 s after the first send (an ordinary attempt's absence would be provable by
    // then), inside the search's lag: the lookup finds the charge.
    stand_in.advance(360);
    let looked = stripe.payment(&parameters).lookup(lookup(&key(1))).await;
    assert!(
        matches!(looked, ProviderAnswer::Succeeded(_)),
        "the lookup answered {looked:?} for a charged key"
    );
    // And a key never sent is not found by either.
    assert_eq!(
        stripe.payment(&parameters).lookup(lookup(&key(2))).await,
        ProviderAnswer::NotFound
    );
    let charged = stand_in
        .intents()
        .iter()
        .filter(|i| i["status"] == "succeeded")
        .count();
    assert_eq!(charged, 1);
}

/// A 200 of an intent of this request still `processing` proves the intent exists: a
/// lookup inside the search's lag never answers "not found" for it.
#[tokio::test]
async fn an_intent_in_hand_is_never_reported_not_found() {
    let stand_in = StandIn::start().await;
    stand_in.search_lag(900);
    let stripe = stripe(&stand_in);
    let parameters = payload("pm_standin_processing");
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(3), &parameters, false)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(provider.code(), Some("processing"));
    stand_in.advance(360); // lastSentAt + 60 s + 300 s
    let looked = stripe.payment(&parameters).lookup(lookup(&key(3))).await;
    assert_eq!(looked, ProviderAnswer::Unknown, "pending, never absent");
}

/// A key no header can carry is never sent: without it Stripe could not deduplicate a
/// re-send.
#[tokio::test]
async fn a_key_no_header_can_carry_is_never_sent() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    let charge = Charge::from_parameters(&payload("pm_card_visa")).expect("charge");
    for bad in ["cj1-\nbad", "cj1-\u{7f}", "cj1 spaced", ""] {
        let answer = stripe
            .create_and_confirm(bad, &charge, Duration::from_secs(5))
            .await;
        assert_eq!(answer, SendAnswer::Unknown("provider_key"), "{bad:?}");
    }
    assert!(stand_in.creates().is_empty(), "a create was sent");
}

/// A re-send (the key was already sent, perhaps charged) whose parameters this version
/// cannot send is never a decline; a first send of them is.
#[tokio::test]
async fn a_resend_this_version_cannot_make_is_never_a_decline() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    // Say an older version accepted this payment method id and sent it.
    let parameters = json!({"amount": 1250, "currency": "eur", "paymentMethod": "pm-old-format"});
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(4), &parameters, true)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(
        provider.send(request(&key(5), &parameters, false)).await,
        ProviderAnswer::Declined
    );
    assert!(
        stand_in.creates().is_empty(),
        "nothing is sent for such parameters"
    );
}

/// A Stripe recovery job's "not found" must prove no Stripe attempt absent, whatever
/// plan its command bound: a plan a client of the previous release bound (`durable`
/// for the search, `key_store` for the listing) is still in flight at the upgrade, and
/// its unanswered attempt may have met a stored 500 that Stripe rolls forward
/// (<https://docs.stripe.com/error-low-level>), exactly as a `final_state` plan's.
/// The job declares `final_state`, which covers no plan: else it would record them
/// absent, and any instance of the previous release still serving would open
/// attempt 2 under a new key.
#[test]
fn adversary_a_stripe_job_proves_no_absence_of_any_plan_a_stripe_client_bound() {
    use command_journal::sends::ProviderLookup;
    for method in [LookupMethod::Search, LookupMethod::List] {
        let mut config = StripeConfig::new(
            SecretKey::new(SECRET).expect("key"),
            VERSION,
            Account::Own("acct_CANARYown".into()),
        );
        config.lookup = method;
        let account = Stripe::new(config)
            .expect("client")
            .account()
            .expect("account");
        for bound in [
            ProviderLookup::Durable,
            ProviderLookup::KeyStore,
            ProviderLookup::FinalState,
        ] {
            assert!(
                !account.lookup_covers(bound),
                "{method:?} job covers a {bound:?} plan"
            );
        }
    }
}
