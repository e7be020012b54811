use super::*;
use crate::identity::{CommandInput, CommandRequest};
use serde_json::json;

fn command(value: &Value) -> CommandInput {
    let s = |k: &str| value[k].as_str().expect(k);
    CommandInput::new(CommandRequest {
        environment: s("environment"),
        caller_scope_kind: s("callerScopeKind"),
        caller_id: s("callerId"),
        command_id: s("commandId"),
        command_type: s("commandType"),
        endpoint_schema_version: value["endpointSchemaVersion"].as_i64().expect("version"),
        payload: &value["payload"],
    })
    .expect("valid command")
}

fn plan_of(value: &Value) -> Result<ProviderPlan, JournalError> {
    let s = |k: &str| value[k].as_str().unwrap_or("");
    let lookup = ProviderLookup::parse(value["lookup"].as_str().unwrap_or("key_store"))?;
    let settle = value["lookupSettleSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_LOOKUP_SETTLE_SECONDS);
    ProviderPlan::new(ProviderPlanRequest {
        provider: s("provider"),
        account: s("account"),
        mode: s("mode"),
        api_version: s("apiVersion"),
        operation: s("operation"),
        endpoint: s("endpoint"),
        parameters: &value["parameters"],
        key_retention_seconds: value["keyRetentionSeconds"].as_i64().unwrap_or(0),
    })?
    .with_lookup(lookup, settle)
    .and_then(|plan| match value["customerWindowSeconds"].as_i64() {
        Some(window) => plan.with_customer_window(window),
        None => Ok(plan),
    })
}

fn base() -> Value {
    json!({
        "provider": "stripe", "account": "acct_CANARY", "mode": "test",
        "apiVersion": "2024-06-20", "operation": "charge",
        "endpoint": "POST /v1/payment_intents",
        "parameters": {"amount": 1250, "currency": "usd"},
        "keyRetentionSeconds": 86400,
    })
}

#[test]
fn golden_vectors_match_the_independent_python_implementation() {
    let text = include_str!("../../../../testdata/send_vectors.json");
    let vectors: Value = serde_json::from_str(text).expect("vector file parses");
    let identity = command(&vectors["command"]).identity();
    assert_eq!(
        identity.command_key_hash().as_str(),
        vectors["commandKeyHash"]
    );
    let plans = vectors["plans"].as_array().expect("plans");
    assert!(plans.len() >= 4);
    for case in plans {
        let name = case["name"].as_str().unwrap_or("?");
        let plan = plan_of(&case["plan"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = &case["expected"];
        assert_eq!(
            plan.canonical_parameters(),
            expected["canonicalParameters"],
            "{name}"
        );
        assert_eq!(
            plan.fingerprint(&identity).as_str(),
            expected["planFingerprint"],
            "{name}"
        );
        assert_eq!(
            plan.fingerprint_v(&identity, 1).as_str(),
            expected["planFingerprintV1"],
            "{name} (plan version 1)"
        );
        assert_eq!(
            plan.provider_account()
                .fingerprint(identity.command_key_hash())
                .as_str(),
            expected["accountFingerprint"],
            "{name} (account)"
        );
        assert_eq!(
            cutoff_seconds(plan.key_retention_seconds()),
            expected["cutoffSeconds"],
            "{name}"
        );
        let keys = expected["attemptKeys"].as_object().expect("keys");
        for (n, key) in keys {
            let n = AttemptNumber::new(n.parse().expect("attempt")).expect("in range");
            assert_eq!(
                attempt_key(&identity, plan.operation(), n),
                *key,
                "{name} attempt {n}"
            );
        }
    }
}

#[test]
fn attempt_one_is_the_command_provider_key_and_later_attempts_differ() {
    let identity = command(&json!({
        "environment": "test", "callerScopeKind": "member", "callerId": "m",
        "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "commandType": "checkout",
        "endpointSchemaVersion": 1, "payload": {},
    }))
    .identity();
    let op = OperationSlug::parse("charge").expect("slug");
    assert_eq!(
        attempt_key(&identity, &op, AttemptNumber::FIRST),
        identity.provider_idempotency_key(&op)
    );
    let keys: Vec<String> = (1..=5)
        .map(|n| attempt_key(&identity, &op, AttemptNumber::new(n).unwrap()))
        .collect();
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len());
    assert!(keys.iter().all(|k| k.starts_with("cj1-") && k.len() == 68));
}

#[test]
fn cutoff_is_three_quarters_of_retention_rounded_up() {
    for (retention, cutoff) in [
        (86_400, 64_800),
        (3_600, 2_700),
        (3_601, 2_701),
        (3_603, 2_703),
        (2_592_000, 1_944_000),
    ] {
        assert_eq!(cutoff_seconds(retention), cutoff, "{retention}");
    }
    let first = Timestamp::from_micros(1_800_000_000_123_456).expect("ts");
    assert_eq!(
        send_cutoff_at(first, 86_400).map(Timestamp::micros),
        Some(1_800_000_000_123_456 + 64_800 * 1_000_000)
    );
}

/// One-line cases: (field, replacement value, rejected field or `None` when valid).
#[test]
fn validation_table() {
    let long = |n: usize| "x".repeat(n);
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("provider", json!("stripe_2"), None),
        ("provider", json!("Stripe"), Some("provider")),
        ("provider", json!(""), Some("provider")),
        ("provider", json!("2pay"), Some("provider")),
        ("account", json!(long(255)), None),
        ("account", json!("é".repeat(255)), None),
        ("account", json!(long(256)), Some("account")),
        ("account", json!(""), Some("account")),
        ("account", json!("acct\n1"), Some("account")),
        ("mode", json!("live"), None),
        ("mode", json!("LIVE"), Some("mode")),
        ("mode", json!("sandbox"), Some("mode")),
        ("apiVersion", json!(long(64)), None),
        ("apiVersion", json!(long(65)), Some("apiVersion")),
        ("apiVersion", json!(""), Some("apiVersion")),
        ("apiVersion", json!("2024 06"), Some("apiVersion")),
        ("apiVersion", json!("vé"), Some("apiVersion")),
        ("operation", json!("Charge"), Some("operation")),
        ("endpoint", json!("GET /v1/charges/ch_1%2F"), None),
        ("endpoint", json!("DELETE /a/b:c@d~e"), None),
        ("endpoint", json!("PATCH /"), Some("endpoint")),
        ("endpoint", json!("POST"), Some("endpoint")),
        ("endpoint", json!("post /v1/x"), Some("endpoint")),
        ("endpoint", json!("HEAD /v1/x"), Some("endpoint")),
        ("endpoint", json!("POST  /v1/x"), Some("endpoint")),
        ("endpoint", json!("POST v1/x"), Some("endpoint")),
        ("endpoint", json!("POST /v1//x"), Some("endpoint")),
        ("endpoint", json!("POST /v1/x/"), Some("endpoint")),
        ("endpoint", json!("POST /v1/../x"), Some("endpoint")),
        ("endpoint", json!("POST /v1/./x"), Some("endpoint")),
        ("endpoint", json!("POST /v1/x?a=1"), Some("endpoint")),
        ("endpoint", json!("POST /v1/x#f"), Some("endpoint")),
        ("endpoint", json!("POST /v1/%2"), Some("endpoint")),
        ("endpoint", json!("POST /v1/%2f"), Some("endpoint")),
        ("endpoint", json!("POST /v1/x "), Some("endpoint")),
        ("endpoint", json!("POST /v1/é"), Some("endpoint")),
        ("endpoint", json!(format!("POST /{}", long(506))), None),
        (
            "endpoint",
            json!(format!("POST /{}", long(507))),
            Some("endpoint"),
        ),
        ("parameters", json!({}), None),
        ("parameters", json!([1]), Some("parameters")),
        ("parameters", json!({"a": 1.5}), Some("parameters")),
        (
            "parameters",
            json!({"a": 9_007_199_254_740_992_u64}),
            Some("parameters"),
        ),
        ("parameters", json!(null), Some("parameters")),
        ("keyRetentionSeconds", json!(3_600), None),
        ("keyRetentionSeconds", json!(2_592_000), None),
        (
            "keyRetentionSeconds",
            json!(3_599),
            Some("keyRetentionSeconds"),
        ),
        (
            "keyRetentionSeconds",
            json!(2_592_001),
            Some("keyRetentionSeconds"),
        ),
    ];
    for (field, value, rejected) in cases {
        let mut input = base();
        input[field] = value.clone();
        let result = plan_of(&input);
        match rejected {
            None => assert!(result.is_ok(), "{field} = {value} should be valid"),
            Some(expected) => assert_eq!(
                result.err(),
                Some(JournalError::InvalidInput { field: expected }),
                "{field} = {value}"
            ),
        }
    }
}

#[test]
fn errors_and_debug_never_echo_values() {
    let mut input = base();
    input["account"] = json!("acct_CANARY\u{7}");
    let error = plan_of(&input).expect_err("invalid");
    assert!(!format!("{error} {error:?}").contains("CANARY"));
    let plan = plan_of(&base()).expect("valid");
    assert_eq!(format!("{plan:?}"), "ProviderPlan(<redacted>)");
}

#[test]
fn fingerprint_binds_every_part_and_the_command() {
    let identity = |id: &str| {
        command(&json!({
            "environment": "test", "callerScopeKind": "member", "callerId": "m",
            "commandId": id, "commandType": "checkout",
            "endpointSchemaVersion": 1, "payload": {},
        }))
        .identity()
    };
    let a = identity("3f2504e0-4f89-41d3-9a0c-0305e82c3301");
    let b = identity("3f2504e0-4f89-41d3-9a0c-0305e82c3302");
    let plan = plan_of(&base()).expect("valid");
    assert_ne!(plan.fingerprint(&a), plan.fingerprint(&b));
    let mut seen = vec![plan.fingerprint(&a)];
    for (field, value) in [
        ("provider", json!("adyen")),
        ("account", json!("acct_other")),
        ("mode", json!("live")),
        ("apiVersion", json!("2024-06-21")),
        ("operation", json!("refund")),
        ("endpoint", json!("POST /v1/refunds")),
        ("parameters", json!({"amount": 1251, "currency": "usd"})),
        ("keyRetentionSeconds", json!(86_401)),
    ] {
        let mut input = base();
        input[field] = value;
        let fingerprint = plan_of(&input).expect("valid").fingerprint(&a);
        assert!(!seen.contains(&fingerprint), "{field}");
        seen.push(fingerprint);
    }
    // Key order does not matter: the parameters are canonical.
    let mut reordered = base();
    reordered["parameters"] = json!({"currency": "usd", "amount": 1250});
    assert_eq!(plan_of(&reordered).expect("valid").fingerprint(&a), seen[0]);
}

/// The customer's window: hashed only when set (the same plan without one keeps its
/// version-2 fingerprint byte for byte), and every window another fingerprint.
#[test]
fn a_customer_window_changes_the_fingerprint_only_when_set() {
    let identity = command(&json!({
        "environment": "test", "callerScopeKind": "member", "callerId": "m",
        "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "commandType": "checkout",
        "endpointSchemaVersion": 1, "payload": {},
    }))
    .identity();
    let unset = plan_of(&base()).expect("valid");
    assert_eq!(unset.customer_window_seconds(), None);
    assert_eq!(
        unset.fingerprint(&identity),
        unset.fingerprint_v(&identity, PLAN_VERSION),
        "unset: the version-2 frame"
    );
    let hour = unset.clone().with_customer_window(3_600).expect("fits");
    let two = unset.clone().with_customer_window(7_200).expect("fits");
    assert_eq!(hour.customer_window_seconds(), Some(3_600));
    assert_ne!(hour.fingerprint(&identity), unset.fingerprint(&identity));
    assert_ne!(hour.fingerprint(&identity), two.fingerprint(&identity));
    // The window is no part of the older frames, and the account is unchanged.
    assert_eq!(
        hour.fingerprint_v(&identity, PLAN_VERSION),
        unset.fingerprint(&identity)
    );
    assert_eq!(hour.provider_account(), unset.provider_account());
}

/// `customerWindowSeconds`: 60 to the cutoff span, the first value refused named.
#[test]
fn the_customer_window_is_a_minute_to_the_cutoff_span() {
    let day = plan_of(&base()).expect("valid");
    for (window, ok) in [
        (i64::MIN, false),
        (-60, false),
        (0, false),
        (59, false),
        (60, true),
        (1_800, true),
        (64_800, true),
        (64_801, false),
        (86_400, false),
    ] {
        let result = day.clone().with_customer_window(window);
        match result {
            Ok(plan) => {
                assert!(ok, "{window} accepted");
                assert_eq!(plan.customer_window_seconds(), Some(window));
            }
            Err(error) => {
                assert!(!ok, "{window} refused");
                assert_eq!(error, JournalError::invalid("customerWindowSeconds"));
            }
        }
    }
    // The span follows the plan's retention: an hour's retention allows 2,700 s.
    let mut hour = base();
    hour["keyRetentionSeconds"] = json!(3_600);
    let hour = plan_of(&hour).expect("valid");
    assert!(hour.clone().with_customer_window(2_700).is_ok());
    assert!(hour.with_customer_window(2_701).is_err());
}
