use super::*;
use serde_json::json;

#[test]
fn canonical_form_sorts_keys_and_is_the_reference_preimage() {
    let envelope = ResultEnvelope::new(&json!({"z": 1, "a": {"c": true, "b": null}})).unwrap();
    assert_eq!(envelope.canonical(), r#"{"a":{"b":null,"c":true},"z":1}"#);
    let expected = TerminalReferenceFingerprint::of_receipt(envelope.canonical().as_bytes());
    assert_eq!(envelope.reference(), expected);
    assert_eq!(
        envelope.value(),
        &json!({"a": {"b": null, "c": true}, "z": 1})
    );
}

#[test]
fn only_objects_under_the_payload_rules_and_the_size_limit() {
    for bad in [
        json!([1]),
        json!("text"),
        json!(null),
        json!({"n": 9_007_199_254_740_992_u64}),
        json!({"f": 1.5}),
    ] {
        let error = ResultEnvelope::new(&bad).unwrap_err();
        assert_eq!(error, JournalError::invalid("result"), "{bad}");
    }
    // `{"s":"…"}` is 8 bytes of framing around the string.
    let fits = json!({"s": "x".repeat(MAX_RESULT_ENVELOPE_BYTES - 8)});
    assert_eq!(
        ResultEnvelope::new(&fits).unwrap().canonical().len(),
        MAX_RESULT_ENVELOPE_BYTES
    );
    let over = json!({"s": "x".repeat(MAX_RESULT_ENVELOPE_BYTES - 7)});
    assert_eq!(
        ResultEnvelope::new(&over).unwrap_err(),
        JournalError::invalid("result")
    );
}

#[test]
fn stored_text_must_be_exactly_canonical() {
    let envelope = ResultEnvelope::new(&json!({"amount": 500, "id": "ch_1"})).unwrap();
    assert_eq!(
        ResultEnvelope::from_canonical(envelope.canonical()),
        Some(envelope)
    );
    for altered in [
        r#"{"id":"ch_1","amount":500}"#,
        r#"{"amount": 500,"id":"ch_1"}"#,
        r#"{"amount":500,"amount":500,"id":"ch_1"}"#,
        r#"{"amount":500,"id":"ch_1"} "#,
        r#"[1]"#,
        "",
    ] {
        assert_eq!(ResultEnvelope::from_canonical(altered), None, "{altered}");
    }
}

#[test]
fn debug_never_shows_the_value() {
    let envelope = ResultEnvelope::new(&json!({"canary": "canary-7f3a"})).unwrap();
    assert_eq!(format!("{envelope:?}"), "ResultEnvelope(<redacted>)");
}
