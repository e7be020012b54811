use super::*;
use serde_json::json;

#[test]
fn a_send_request_never_prints_its_key_or_parameters() {
    let parameters = json!({"card": "CANARYparameter_value"});
    let request = SendRequest {
        key: "cj1-CANARYkey",
        parameters: &parameters,
        deadline: Duration::from_secs(5),
        attempt: AttemptNumber::new(2).unwrap(),
        resend: true,
    };
    let printed = format!("{request:?}");
    assert!(!printed.contains("CANARY"), "{printed}");
    assert_eq!(
        printed,
        "SendRequest { attempt: 2, resend: true, deadline: 5s, .. }"
    );
    let results = format!(
        "{:?} {:?}",
        ProviderAnswer::Succeeded(ResultEnvelope::new(&parameters).unwrap()),
        ProviderAnswer::Succeeded(ResultEnvelope::new(&parameters).unwrap())
    );
    assert!(!results.contains("CANARY"), "{results}");
}
