use super::*;
use serde_json::json;

const COMMAND_ID: &str = "3f2504e0-4f89-41d3-9a0c-0305e82c3301";
const LEASE_ID: &str = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d";

fn payload_value() -> Value {
    json!({"amount": 1250, "sku": "tee"})
}

fn request(payload: &Value) -> CommandRequest<'_> {
    CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "member_1",
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload,
    }
}

fn field_of(result: Result<impl Sized, JournalError>) -> &'static str {
    match result {
        Err(JournalError::InvalidInput { field }) => field,
        Err(other) => panic!("expected invalid_input, got {}", other.code()),
        Ok(_) => panic!("expected invalid_input, got Ok"),
    }
}

#[test]
fn golden_vectors_match_the_independent_python_implementation() {
    let text = include_str!("../../../testdata/identity_vectors.json");
    let vectors: Value = serde_json::from_str(text).expect("vector file parses");
    let commands = vectors["commands"].as_array().expect("commands array");
    assert!(commands.len() >= 10, "too few vectors");
    for case in commands {
        let name = case["name"].as_str().unwrap_or("?");
        let input = &case["input"];
        let expected = &case["expected"];
        let s = |k: &str| input[k].as_str().expect(k);
        let command = CommandInput::new(CommandRequest {
            environment: s("environment"),
            caller_scope_kind: s("callerScopeKind"),
            caller_id: s("callerId"),
            command_id: s("commandId"),
            command_type: s("commandType"),
            endpoint_schema_version: input["endpointSchemaVersion"].as_i64().expect("version"),
            payload: &input["payload"],
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let identity = command.identity();
        let lease = LeaseId::parse(s("leaseId")).expect("lease id");
        let reference = TerminalReferenceFingerprint::parse(s("terminalReferenceFingerprint"))
            .expect("reference");
        let operation = OperationSlug::parse(s("operation")).expect("operation");
        assert_eq!(
            identity.command_key_hash().as_str(),
            expected["commandKeyHash"],
            "{name}"
        );
        assert_eq!(
            command.payload().canonical(),
            expected["canonicalPayload"],
            "{name}"
        );
        assert_eq!(
            identity.payload_fingerprint().as_str(),
            expected["payloadFingerprint"],
            "{name}"
        );
        assert_eq!(
            command
                .lease_owner(&identity, &lease)
                .expect("owner")
                .as_str(),
            expected["leaseOwnerFingerprint"],
            "{name}"
        );
        assert_eq!(
            identity.terminal_commitment(&reference).as_str(),
            expected["terminalCommitmentHash"],
            "{name}"
        );
        assert_eq!(
            identity.provider_idempotency_key(&operation),
            expected["providerIdempotencyKey"],
            "{name}"
        );
    }
    let reservations = vectors["reservations"].as_array().expect("reservations");
    assert!(!reservations.is_empty());
    for case in reservations {
        let key = LedgerKey::new(
            case["classId"].as_str().expect("classId"),
            case["featCode"].as_str().expect("featCode"),
            case["idempotencyKey"].as_str().expect("idempotencyKey"),
        )
        .expect("ledger key");
        assert_eq!(key.reservation_id().as_str(), case["reservationId"]);
    }
}

#[test]
fn valid_request_is_accepted() {
    let payload = payload_value();
    assert!(CommandInput::new(request(&payload)).is_ok());
}

#[test]
fn unknown_environment_is_rejected() {
    let payload = payload_value();
    for bad in ["prod", "Production", "", "production "] {
        let r = CommandRequest {
            environment: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "environment");
    }
}

#[test]
fn unknown_scope_kind_is_rejected() {
    let payload = payload_value();
    for bad in ["admin", "Member", ""] {
        let r = CommandRequest {
            caller_scope_kind: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "callerScopeKind");
    }
}

#[test]
fn caller_id_rules() {
    let payload = payload_value();
    let long = "a".repeat(129);
    for bad in ["", "a b", "a.b", "é", long.as_str(), "a/b"] {
        let r = CommandRequest {
            caller_id: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "callerId");
    }
    let max = "Z".repeat(128);
    let r = CommandRequest {
        caller_id: &max,
        ..request(&payload)
    };
    assert!(CommandInput::new(r).is_ok());
}

#[test]
fn command_id_must_be_canonical_lowercase_uuid_v4() {
    let payload = payload_value();
    for bad in [
        "3F2504E0-4F89-41D3-9A0C-0305E82C3301", // uppercase
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301", // version 1
        "3f2504e0-4f89-41d3-ca0c-0305e82c3301", // not the RFC 4122 variant
        "3f2504e04f8941d39a0c0305e82c3301",     // simple form
        "{3f2504e0-4f89-41d3-9a0c-0305e82c3301}",
        "urn:uuid:3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        "",
    ] {
        let r = CommandRequest {
            command_id: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "commandId", "{bad}");
    }
}

#[test]
fn lease_id_rules() {
    assert_eq!(
        field_of(LeaseId::parse("9B2D7C1E-3A4F-4E5B-8C6D-7E8F9A0B1C2D")),
        "leaseId"
    );
    assert_eq!(
        field_of(LeaseId::parse("9b2d7c1e-3a4f-1e5b-8c6d-7e8f9a0b1c2d")),
        "leaseId"
    );
    let payload = payload_value();
    let command = CommandInput::new(request(&payload)).expect("valid");
    let identity = command.identity();
    let same = LeaseId::parse(COMMAND_ID).expect("format is valid");
    assert_eq!(field_of(command.lease_owner(&identity, &same)), "leaseId");
    let other = LeaseId::parse(LEASE_ID).expect("valid");
    assert!(command.lease_owner(&identity, &other).is_ok());
}

#[test]
fn slug_rules() {
    let payload = payload_value();
    let long = format!("a{}", "b".repeat(63));
    for bad in ["", "Checkout", "1abc", "_a", "a-b", "a b", long.as_str()] {
        let r = CommandRequest {
            command_type: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "commandType", "{bad}");
        assert_eq!(field_of(OperationSlug::parse(bad)), "operation");
    }
    let max = format!("a{}", "b".repeat(62));
    assert!(CommandType::parse(&max).is_ok());
}

#[test]
fn endpoint_schema_version_bounds() {
    let payload = payload_value();
    for bad in [0, -1, 10_000, i64::MAX, i64::MIN] {
        let r = CommandRequest {
            endpoint_schema_version: bad,
            ..request(&payload)
        };
        assert_eq!(field_of(CommandInput::new(r)), "endpointSchemaVersion");
    }
    assert!(EndpointSchemaVersion::new(9999).is_ok());
    assert!(EndpointSchemaVersion::new(1).is_ok());
}

#[test]
fn terminal_reference_rules() {
    for bad in [
        "A".repeat(64),
        "a".repeat(63),
        "a".repeat(65),
        "z".repeat(64),
    ] {
        assert_eq!(
            field_of(TerminalReferenceFingerprint::parse(&bad)),
            "terminalReferenceFingerprint"
        );
    }
}

fn payload_field(value: Value) -> &'static str {
    field_of(Payload::from_value(&value))
}

#[test]
fn payload_must_be_an_object() {
    for bad in [json!([]), json!(1), json!("x"), json!(null), json!(true)] {
        assert_eq!(payload_field(bad), "payload");
    }
}

#[test]
fn payload_rejects_floats() {
    let value: Value = serde_json::from_str(r#"{"a": 1.0}"#).expect("json");
    assert_eq!(payload_field(value), "payload");
    let value: Value = serde_json::from_str(r#"{"a": [1e2]}"#).expect("json");
    assert_eq!(payload_field(value), "payload");
}

#[test]
fn payload_integer_bounds() {
    assert!(Payload::from_value(&json!({"a": 9_007_199_254_740_991_u64})).is_ok());
    assert!(Payload::from_value(&json!({"a": -9_007_199_254_740_991_i64})).is_ok());
    assert_eq!(
        payload_field(json!({"a": 9_007_199_254_740_992_u64})),
        "payload"
    );
    assert_eq!(
        payload_field(json!({"a": -9_007_199_254_740_992_i64})),
        "payload"
    );
    assert_eq!(payload_field(json!({"a": u64::MAX})), "payload");
}

fn nested(depth: usize) -> Value {
    let mut value = json!({});
    for _ in 1..depth {
        value = json!({ "n": value });
    }
    value
}

#[test]
fn payload_depth_limit_is_32() {
    assert!(Payload::from_value(&nested(32)).is_ok());
    assert_eq!(payload_field(nested(33)), "payload");
    // Arrays count as levels too.
    let mut value = json!([]);
    for _ in 2..32 {
        value = json!([value]);
    }
    assert!(Payload::from_value(&json!({ "a": value.clone() })).is_ok());
    assert_eq!(payload_field(json!({ "a": [value] })), "payload");
}

#[test]
fn payload_size_limit_is_65536_canonical_bytes() {
    // {"a":"…"} is 8 bytes of framing around the string.
    let fits = json!({ "a": "x".repeat(MAX_CANONICAL_PAYLOAD_BYTES - 8) });
    assert_eq!(
        Payload::from_value(&fits).expect("fits").canonical().len(),
        MAX_CANONICAL_PAYLOAD_BYTES
    );
    let over = json!({ "a": "x".repeat(MAX_CANONICAL_PAYLOAD_BYTES - 7) });
    assert_eq!(payload_field(over), "payload");
}

#[test]
fn ledger_key_rules() {
    assert_eq!(field_of(LedgerKey::new("", "f", "k")), "classId");
    assert_eq!(field_of(LedgerKey::new("c", "f\n", "k")), "featCode");
    assert_eq!(
        field_of(LedgerKey::new(
            "c",
            "f",
            &"k".repeat(MAX_LEDGER_PART_BYTES + 1)
        )),
        "idempotencyKey"
    );
}

#[test]
fn no_error_or_debug_output_contains_raw_input() {
    let canary_caller = "CANARYcaller_7731";
    let canary_payload = "CANARY-payload-5512";
    let payload = json!({ "secret": canary_payload });
    let command = CommandInput::new(CommandRequest {
        caller_id: canary_caller,
        ..request(&payload)
    })
    .expect("valid");
    let identity = command.identity();
    let lease = LeaseId::parse(LEASE_ID).expect("lease");
    let reference = TerminalReferenceFingerprint::parse(&"c".repeat(64)).expect("reference");
    let rendered = format!(
        "{command:?} {identity:?} {lease:?} {reference:?} {:?} {:?} {:?}",
        command.payload(),
        request(&payload),
        LedgerKey::new("CANARYclass", "CANARYfeat", "CANARYkey").expect("key"),
    );
    for canary in [
        canary_caller,
        canary_payload,
        COMMAND_ID,
        LEASE_ID,
        "cccccccc",
        "CANARY",
    ] {
        assert!(
            !rendered.contains(canary),
            "Debug leaked {canary}: {rendered}"
        );
    }
    // Errors for each invalid field name the field only.
    let bad_inputs: Vec<(JournalError, &str)> = vec![
        (Environment::parse("CANARYenv").unwrap_err(), "CANARYenv"),
        (
            CallerId::parse("CANARY caller").unwrap_err(),
            "CANARY caller",
        ),
        (CommandId::parse("CANARY-id").unwrap_err(), "CANARY-id"),
        (LeaseId::parse("CANARY-lease").unwrap_err(), "CANARY-lease"),
        (CommandType::parse("CANARY").unwrap_err(), "CANARY"),
        (
            Payload::from_value(&json!({"x": 1.5, "CANARYkey": 1})).unwrap_err(),
            "CANARYkey",
        ),
    ];
    for (error, canary) in bad_inputs {
        let text = format!("{error} {error:?} {}", error.code());
        assert!(!text.contains(canary), "error leaked {canary}: {text}");
    }
}

#[test]
fn a_lease_id_from_random_bytes_is_v4_text_and_parses_back() {
    let cases = [
        ([0u8; 16], "00000000-0000-4000-8000-000000000000"),
        ([0xff; 16], "ffffffff-ffff-4fff-bfff-ffffffffffff"),
        (
            0x0123_4567_89ab_cdef_0123_4567_89ab_cdef_u128.to_be_bytes(),
            "01234567-89ab-4def-8123-456789abcdef",
        ),
    ];
    for (bytes, text) in cases {
        let lease = LeaseId::from_random_bytes(bytes);
        assert_eq!(lease.0, text);
        assert_eq!(LeaseId::parse(&lease.0), Ok(lease.clone()));
    }
}
