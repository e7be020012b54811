//! The answers no stand-in gives, classified from status, headers and body alone: an
//! intent of another request, a body that is no intent, a refusal carrying a charged
//! intent, and the statuses Stripe does not document for a create.

use command_journal_stripe::answer::{LookupAnswer, SendAnswer, classify_search, classify_send};
use command_journal_stripe::{Charge, Expected};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

const KEY: &str = "cj1-00000000000000000000000000000000000000000000000000000000000000aa";

fn expected() -> Expected {
    Expected::of(
        &Charge::from_parameters(&json!({"amount": 1250, "currency": "eur"})).expect("charge"),
    )
}

fn intent(status: &str, amount: i64, key: &str) -> serde_json::Value {
    json!({
        "id": "pi_1", "object": "payment_intent", "amount": amount, "currency": "EUR",
        "status": status, "metadata": {"journal_key": key}, "last_payment_error": null,
        "client_secret": "pi_1_secret_x",
    })
}

#[test]
fn what_no_stand_in_answers_is_classified_closed() {
    let plain = HeaderMap::new();
    let mut replayed = HeaderMap::new();
    replayed.insert("idempotent-replayed", HeaderValue::from_static("true"));
    let refusal = |kind: &str, intent: serde_json::Value| {
        json!({"error": {"type": kind, "payment_intent": intent}}).to_string()
    };
    let table: Vec<(u16, &HeaderMap, String, SendAnswer)> = vec![
        (
            200,
            &plain,
            intent("succeeded", 999, KEY).to_string(),
            SendAnswer::Unknown("provider_mismatch"),
        ),
        (
            200,
            &plain,
            intent("succeeded", 1250, "cj1-other").to_string(),
            SendAnswer::Unknown("provider_mismatch"),
        ),
        (
            200,
            &plain,
            intent("requires_capture", 1250, KEY).to_string(),
            SendAnswer::Unknown("requires_capture"),
        ),
        (
            200,
            &plain,
            intent("requires_payment_method", 1250, KEY).to_string(),
            SendAnswer::Unknown("requires_payment_method"),
        ),
        (
            200,
            &plain,
            intent("bogus", 1250, KEY).to_string(),
            SendAnswer::Unknown("unknown_status"),
        ),
        (
            200,
            &plain,
            r#"{"id":"pi_1","id":"pi_2"}"#.to_owned(),
            SendAnswer::Unknown("provider_receipt"),
        ),
        (
            200,
            &plain,
            "[]".to_owned(),
            SendAnswer::Unknown("provider_receipt"),
        ),
        (
            200,
            &replayed,
            intent("succeeded", 1250, KEY).to_string(),
            SendAnswer::Succeeded(
                json!({"id": "pi_1", "amount": 1250, "currency": "EUR", "status": "succeeded"})
                    .as_object()
                    .cloned()
                    .expect("object"),
            ),
        ),
        (
            402,
            &plain,
            refusal("card_error", intent("succeeded", 1250, KEY)),
            SendAnswer::Unknown("provider_contradiction"),
        ),
        (
            402,
            &plain,
            refusal(
                "card_error",
                intent("requires_payment_method", 1250, "cj1-other"),
            ),
            SendAnswer::Unknown("provider_mismatch"),
        ),
        (
            402,
            &plain,
            json!({"error": {"type": "api_error"}}).to_string(),
            SendAnswer::Unknown("provider_unexpected_error"),
        ),
        (
            402,
            &plain,
            "not json".to_owned(),
            SendAnswer::Unknown("provider_receipt"),
        ),
        (
            400,
            &plain,
            json!({"error": {"type": "card_error"}}).to_string(),
            SendAnswer::Unknown("provider_unexpected_error"),
        ),
        (
            400,
            &replayed,
            json!({"error": {"type": "idempotency_error"}}).to_string(),
            SendAnswer::Defect("provider_idempotency_mismatch"),
        ),
        (
            500,
            &plain,
            json!({"error": {"type": "api_error"}}).to_string(),
            SendAnswer::Indeterminate,
        ),
        (
            503,
            &plain,
            json!({"error": {"type": "api_error"}}).to_string(),
            SendAnswer::Unknown("provider_5xx"),
        ),
        (502, &replayed, String::new(), SendAnswer::ReplayedUnknown),
        (
            302,
            &plain,
            String::new(),
            SendAnswer::Unknown("provider_unexpected_status"),
        ),
        (
            405,
            &plain,
            String::new(),
            SendAnswer::Unknown("provider_unexpected_status"),
        ),
    ];
    for (status, headers, body, answer) in table {
        let status = StatusCode::from_u16(status).expect("status");
        assert_eq!(
            classify_send(status, headers, &body, KEY, &expected()),
            answer,
            "{status} {body}"
        );
    }
}

#[test]
fn a_search_page_is_evidence_only_when_it_is_exactly_one() {
    let page = |data: serde_json::Value, has_more: bool| {
        json!({"object": "search_result", "data": data, "has_more": has_more, "url": "/v1/payment_intents/search"})
            .to_string()
    };
    let ok = StatusCode::OK;
    let table = [
        (ok, page(json!([]), false), LookupAnswer::NotFound),
        (
            ok,
            page(json!([]), true),
            LookupAnswer::Unavailable("lookup_several"),
        ),
        (
            ok,
            page(
                json!([
                    intent("succeeded", 1250, KEY),
                    intent("succeeded", 1250, KEY)
                ]),
                false,
            ),
            LookupAnswer::Unavailable("lookup_several"),
        ),
        (
            ok,
            page(json!([intent("succeeded", 999, KEY)]), false),
            LookupAnswer::Unavailable("lookup_mismatch"),
        ),
        (
            ok,
            page(json!(["pi_1"]), false),
            LookupAnswer::Unavailable("lookup_body"),
        ),
        (
            ok,
            json!({"object": "list", "data": [], "has_more": false}).to_string(),
            LookupAnswer::Unavailable("lookup_body"),
        ),
        (
            StatusCode::TOO_MANY_REQUESTS,
            String::new(),
            LookupAnswer::Unavailable("lookup_status"),
        ),
        (
            StatusCode::BAD_REQUEST,
            String::new(),
            LookupAnswer::Unavailable("search_unavailable"),
        ),
    ];
    for (status, body, answer) in table {
        assert_eq!(
            classify_search(status, &body, KEY, &expected()),
            answer,
            "{body}"
        );
    }
}

#[test]
fn parameters_that_make_no_intent_are_refused_by_name() {
    let table = [
        (json!([]), "parameters"),
        (json!({"currency": "eur"}), "amount"),
        (json!({"amount": 0, "currency": "eur"}), "amount"),
        (json!({"amount": 100_000_000, "currency": "eur"}), "amount"),
        (json!({"amount": 1.5, "currency": "eur"}), "amount"),
        (json!({"amount": 1}), "currency"),
        (json!({"amount": 1, "currency": "euro"}), "currency"),
        (
            json!({"amount": 1, "currency": "eur", "paymentMethod": 7}),
            "paymentMethod",
        ),
        (
            json!({"amount": 1, "currency": "eur", "paymentMethod": "pm x"}),
            "paymentMethod",
        ),
    ];
    for (parameters, field) in table {
        let refused = Charge::from_parameters(&parameters).expect_err("refused");
        assert_eq!(refused.field, field, "{parameters}");
        assert!(!refused.to_string().contains("pm x"));
    }
}

#[test]
fn no_debug_shows_an_intents_fields_or_the_payload() {
    let charge =
        Charge::from_parameters(&json!({"amount": 987654, "currency": "xts"})).expect("charge");
    let expected = Expected::of(&charge);
    let mut paid = intent("succeeded", 987654, KEY);
    paid["id"] = json!("pi_CANARYdebug");
    paid["currency"] = json!("xts");
    let sent = classify_send(
        StatusCode::OK,
        &HeaderMap::new(),
        &paid.to_string(),
        KEY,
        &expected,
    );
    assert!(matches!(sent, SendAnswer::Succeeded(_)), "{sent:?}");
    let page = json!({"object": "search_result", "data": [paid.clone()], "has_more": false});
    let found = classify_search(StatusCode::OK, &page.to_string(), KEY, &expected);
    assert!(matches!(found, LookupAnswer::Found(_)), "{found:?}");
    let state = command_journal_stripe::intent::state(paid.as_object().expect("object"));
    for output in [
        format!("{sent:?}"),
        format!("{found:?}"),
        format!("{charge:?}"),
        format!("{expected:?}"),
        format!("{state:?}"),
    ] {
        for secret in ["CANARY", "987654", "xts"] {
            assert!(!output.contains(secret), "{secret} in {output}");
        }
    }
}

#[test]
fn plain_http_goes_only_to_this_machine() {
    use command_journal_stripe::{Account, ConfigError, SecretKey, Stripe, StripeConfig};
    // (api base, whether a client is made): the secret key travels in every request.
    let cases = [
        ("https://api.stripe.com", true),
        ("http://127.0.0.1:9", true),
        ("http://127.8.0.1:9", true),
        ("http://localhost:9/base", true),
        ("http://[::1]:9", true),
        ("http://api.stripe.com", false),
        ("http://10.0.0.1:9", false),
        ("http://127.0.0.1.example.com", false),
        ("http://localhost.example.com", false),
        ("ftp://127.0.0.1", false),
    ];
    for (base, made) in cases {
        let key = SecretKey::new("sk_test_CANARYplainHttp").expect("key");
        let mut config = StripeConfig::new(key, "2026-01-28.clover", Account::Own("acct_1".into()));
        config.api_base = base.to_owned();
        match Stripe::new(config) {
            Ok(_) => assert!(made, "{base} made a client"),
            Err(error) => {
                assert!(!made, "{base}: {error}");
                assert_eq!(error, ConfigError::ApiBase, "{base}");
            }
        }
    }
}

#[test]
fn a_plan_of_parameters_no_intent_can_be_made_from_is_refused() {
    use command_journal_stripe::{Account, SecretKey, Stripe, StripeConfig};
    let key = SecretKey::new("sk_test_CANARYplan").expect("key");
    let stripe = Stripe::new(StripeConfig::new(
        key,
        "2026-01-28.clover",
        Account::Own("acct_1".into()),
    ))
    .expect("client");
    assert!(
        stripe
            .plan(&json!({"amount": 1250, "currency": "eur"}))
            .is_ok()
    );
    for parameters in [
        json!({"amount": 0, "currency": "eur"}),
        json!({"amount": 1250, "currency": "euro"}),
        json!({"amount": 1250}),
        json!([1250, "eur"]),
    ] {
        assert_eq!(
            stripe.plan(&parameters).map(|_| ()),
            Err(command_journal::JournalError::invalid("parameters")),
            "{parameters}"
        );
    }
}
