//! The provider boundary's requests and answers never print a key, a parameter or a
//! result.

use crate::envelope::ResultEnvelope;
use crate::sends::AttemptNumber;
use crate::sends::provider::{LookupRequest, ProviderAnswer, SendRequest};
use crate::time::Timestamp;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_request_never_prints_its_key_or_parameters() {
    let parameters = json!({"card": "CANARYparameter_value"});
    let request = SendRequest {
        key: "cj1-CANARYkey".to_owned(),
        parameters: parameters.clone(),
        deadline: Duration::from_secs(5),
        attempt: AttemptNumber::new(2).unwrap(),
        resend: true,
        act_by: Timestamp::from_micros(1_000_000).unwrap(),
    };
    let printed = format!("{request:?}");
    assert!(!printed.contains("CANARY"), "{printed}");
    assert_eq!(
        printed,
        "SendRequest { attempt: 2, resend: true, deadline: 5s, .. }"
    );
    let lookup = LookupRequest {
        key: "cj1-CANARYkey".to_owned(),
        deadline: Duration::from_secs(30),
    };
    assert_eq!(format!("{lookup:?}"), "LookupRequest { deadline: 30s, .. }");
    let results = format!(
        "{:?} {:?}",
        ProviderAnswer::Succeeded(ResultEnvelope::new(&parameters).unwrap()),
        ProviderAnswer::Succeeded(ResultEnvelope::new(&parameters).unwrap())
    );
    assert!(!results.contains("CANARY"), "{results}");
}
