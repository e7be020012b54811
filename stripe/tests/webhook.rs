//! Webhook signature verification: a fixed vector computed independently, signatures
//! computed here with the `hmac` crate, every refusal beside the case that must still
//! pass, the strict event envelope, and the secrets in no output.

use command_journal::Timestamp;
use command_journal_stripe::webhook::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_TOLERANCE_SECONDS, MAX_HEADER_BYTES, MAX_V1_SIGNATURES,
    Refusal, SecretError, VerifiedEvent, Verifier, WebhookSecret, WebhookSecrets,
};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The endpoint's current secret, and the one a roll keeps active beside it: canaries,
/// so that a test finds them in any output they must not reach.
const SECRET: &str = "whsec_CANARYcurrentSecret9Xz";
const ROLLED: &str = "whsec_CANARYrolledSecret4Lm";
const OTHER: &str = "whsec_someoneElsesSecret0000";
/// A value of the body that no refusal may echo.
const BODY_CANARY: &str = "CANARYcustomerEmail";
/// 2030-01-01T00:00:00Z.
const T: i64 = 1_893_456_000;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn secrets(list: &[&str]) -> WebhookSecrets {
    WebhookSecrets::new(
        list.iter()
            .map(|s| WebhookSecret::new(s).expect("secret"))
            .collect(),
    )
    .expect("secrets")
}

fn verifier() -> Verifier {
    Verifier::new(secrets(&[SECRET]))
}

/// A signature computed here, as Stripe computes one: HMAC-SHA256 keyed with the whole
/// secret text, over the timestamp, `.` and the body.
fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn body() -> Vec<u8> {
    format!(
        r#"{{"id":"evt_1Test","object":"event","api_version":"2026-01-28.clover","created":{T},"data":{{"object":{{"id":"pi_1Test","object":"payment_intent","amount":1250, "currency":"eur","receipt_email":"{BODY_CANARY}","metadata":{{"journal_key":"cj1-00"}}}}}},"livemode":false,"pending_webhooks":1,"request":{{"id":null,"idempotency_key":null}},"type":"payment_intent.succeeded"}}"#
    )
    .into_bytes()
}

fn header(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "t={timestamp},v1={}",
        sign(secret, &timestamp.to_string(), body)
    )
}

#[test]
fn a_fixed_vector_computed_independently_verifies() {
    // Computed with Python's standard library, independently of this package:
    //   import hmac, hashlib
    //   hmac.new(b"whsec_CANARYfixedvector0123456789",
    //            b"1893456000." + body, hashlib.sha256).hexdigest()
    let secret = "whsec_CANARYfixedvector0123456789";
    let body = br#"{"id":"evt_fixed0001","object":"event","api_version":"2026-01-28.clover","created":1893456000,"data":{"object":{"id":"pi_fixed0001","object":"payment_intent","amount":1250,"currency":"eur","status":"succeeded","metadata":{"journal_key":"cj1-00"}}},"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"payment_intent.succeeded"}"#;
    let expected = "86a5044530ba5da4ee7fcc1597eb2ac3d734435d0f8026a60a264da2b2d676be";
    assert_eq!(sign(secret, "1893456000", body), expected);
    let verifier = Verifier::new(secrets(&[secret]));
    let header = format!("t=1893456000,v1={expected}");
    let event = verifier
        .verify(Some(&header), body, at(T + 10))
        .expect("verified");
    assert_eq!(event.id(), "evt_fixed0001");
    assert_eq!(event.event_type(), "payment_intent.succeeded");
    assert_eq!(event.created(), 1_893_456_000);
    assert!(!event.livemode());
    assert_eq!(event.api_version(), Some("2026-01-28.clover"));
    assert_eq!(
        event.object().get(),
        r#"{"id":"pi_fixed0001","object":"payment_intent","amount":1250,"currency":"eur","status":"succeeded","metadata":{"journal_key":"cj1-00"}}"#
    );
    // One bit of the signature changed: refused.
    let flipped =
        "t=1893456000,v1=86a5044530ba5da4ee7fcc1597eb2ac3d734435d0f8026a60a264da2b2d676bf";
    assert_eq!(
        verifier.verify(Some(flipped), body, at(T)).map(|_| ()),
        Err(Refusal::SignatureMismatch)
    );
}

#[test]
fn each_refusal_beside_the_case_that_still_passes() {
    let body = body();
    let good = header(SECRET, T, &body);
    let v = verifier();
    let verify = |verifier: &Verifier, header: Option<&str>, body: &[u8], now: i64| {
        verifier
            .verify(header, body, at(now))
            .map(|event| event.id().to_owned())
    };
    let ok = Ok("evt_1Test".to_owned());
    assert_eq!(verify(&v, Some(&good), &body, T), ok);

    // No header at all.
    assert_eq!(verify(&v, None, &body, T), Err(Refusal::HeaderMissing));

    // Only other schemes (a test event's fake v0): never verified.
    let v0_only = format!("t={T},v0={}", sign(SECRET, &T.to_string(), &body));
    assert_eq!(
        verify(&v, Some(&v0_only), &body, T),
        Err(Refusal::NoV1Signature)
    );
    let with_v0 = format!("{good},v0={}", "0".repeat(64));
    assert_eq!(verify(&v, Some(&with_v0), &body, T), ok);

    // Signed with another secret; a second v1 that is valid still passes.
    let wrong = header(OTHER, T, &body);
    assert_eq!(
        verify(&v, Some(&wrong), &body, T),
        Err(Refusal::SignatureMismatch)
    );
    let second_valid = format!("{wrong},v1={}", sign(SECRET, &T.to_string(), &body));
    assert_eq!(verify(&v, Some(&second_valid), &body, T), ok);

    // A roll: the endpoint holds both secrets; a delivery signed by the old one alone,
    // the new one alone, or both passes; a verifier without the old one refuses it.
    let rolled = Verifier::new(secrets(&[SECRET, ROLLED]));
    let by_old = header(ROLLED, T, &body);
    assert_eq!(verify(&rolled, Some(&by_old), &body, T), ok);
    assert_eq!(verify(&rolled, Some(&good), &body, T), ok);
    let by_both = format!("{good},v1={}", sign(ROLLED, &T.to_string(), &body));
    assert_eq!(verify(&rolled, Some(&by_both), &body, T), ok);
    assert_eq!(
        verify(&v, Some(&by_old), &body, T),
        Err(Refusal::SignatureMismatch)
    );

    // The body altered by one byte (inside the object, and a trailing space).
    let mut altered = body.clone();
    let at_amount = altered
        .windows(4)
        .position(|w| w == b"1250")
        .expect("amount");
    altered[at_amount] = b'9';
    assert_eq!(
        verify(&v, Some(&good), &altered, T),
        Err(Refusal::SignatureMismatch)
    );
    let mut spaced = body.clone();
    spaced.push(b' ');
    assert_eq!(
        verify(&v, Some(&good), &spaced, T),
        Err(Refusal::SignatureMismatch)
    );

    // The timestamp on the journal's clock: the tolerance either way, inclusive.
    let tolerance = DEFAULT_TOLERANCE_SECONDS;
    assert_eq!(verify(&v, Some(&good), &body, T + tolerance), ok);
    assert_eq!(
        verify(&v, Some(&good), &body, T + tolerance + 1),
        Err(Refusal::TimestampTooOld)
    );
    assert_eq!(verify(&v, Some(&good), &body, T - tolerance), ok);
    assert_eq!(
        verify(&v, Some(&good), &body, T - tolerance - 1),
        Err(Refusal::TimestampInFuture)
    );
    let tight = verifier().with_tolerance(10);
    assert_eq!(verify(&tight, Some(&good), &body, T + 10), ok);
    assert_eq!(
        verify(&tight, Some(&good), &body, T + 11),
        Err(Refusal::TimestampTooOld)
    );
    // A stale delivery with a forged signature is a mismatch: the signature first.
    assert_eq!(
        verify(&v, Some(&wrong), &body, T + tolerance + 1),
        Err(Refusal::SignatureMismatch)
    );

    // The body limit, exact.
    let limited = verifier().with_max_body(body.len());
    assert_eq!(verify(&limited, Some(&good), &body, T), ok);
    let smaller = verifier().with_max_body(body.len() - 1);
    assert_eq!(
        verify(&smaller, Some(&good), &body, T),
        Err(Refusal::BodyTooLarge)
    );
    let huge = vec![b' '; DEFAULT_MAX_BODY_BYTES + 1];
    assert_eq!(verify(&v, None, &huge, T), Err(Refusal::BodyTooLarge));
}

#[test]
fn malformed_headers_are_refused_and_well_formed_ones_read() {
    let body = body();
    let signature = sign(SECRET, &T.to_string(), &body);
    let v = verifier();
    let malformed = [
        String::new(),
        "t=".to_owned(),
        format!("v1={signature}"),
        format!("t=abc,v1={signature}"),
        format!("t=+{T},v1={signature}"),
        format!("t=0{T},v1={signature}"),
        format!("t={T},t={T},v1={signature}"),
        format!("t={T};v1={signature}"),
        format!("t={T}, v1={signature}"),
        format!("t={T},v1={}", signature.to_uppercase()),
        format!("t={T},v1={}", &signature[..63]),
        format!("t={T},v1={signature}0"),
        format!("t={T},v1=zz{}", &signature[2..]),
        format!("t={T},v1={signature},"),
        format!("t={T},v1={signature},v0"),
        format!("t={T},=x,v1={signature}"),
        format!("t={T},v1={signature},x=y"),
        format!("t={T},v1={signature},v0={}", "y".repeat(MAX_HEADER_BYTES)),
        format!(
            "t={T}{}",
            format!(",v1={signature}").repeat(MAX_V1_SIGNATURES + 1)
        ),
    ];
    for header in &malformed {
        assert_eq!(
            v.verify(Some(header), &body, at(T)).map(|_| ()),
            Err(Refusal::HeaderMalformed),
            "{header}"
        );
    }
    // The neighbours that pass: the elements in any order, unknown schemes beside v1,
    // as many v1 as the limit.
    let passing = [
        format!("v1={signature},t={T}"),
        format!("t={T},v2=anything,v1={signature}"),
        format!(
            "t={T}{}",
            format!(",v1={signature}").repeat(MAX_V1_SIGNATURES)
        ),
    ];
    for header in &passing {
        assert!(v.verify(Some(header), &body, at(T)).is_ok(), "{header}");
    }
}

/// Signs `body` with the current secret at `T` and verifies it.
fn verified(body: &str) -> Result<VerifiedEvent, Refusal> {
    let header = header(SECRET, T, body.as_bytes());
    verifier().verify(Some(&header), body.as_bytes(), at(T))
}

#[test]
fn the_event_is_read_strictly_after_its_signature() {
    let event = |fields: &str| {
        format!(
            r#"{{"id":"evt_1","object":"event","created":{T},"livemode":true,{fields}"type":"payment_intent.canceled"}}"#
        )
    };
    let data = r#""data":{"object":{"object":"payment_intent"}},"#;
    let api = r#""api_version":"2026-01-28.clover","#;
    let passing = [
        event(&format!("{api}{data}")),
        event(&format!(r#""api_version":null,{data}"#)),
        // Properties Stripe may add later are not read.
        event(&format!(r#"{api}{data}"context":"x","newProperty":[1,2],"#)),
        event(&format!(
            r#"{api}"data":{{"object":{{}},"previous_attributes":{{"status":"processing"}}}},"account":"acct_1","pending_webhooks":0,"request":null,"#
        )),
    ];
    for body in &passing {
        assert!(verified(body).is_ok(), "{body}");
    }
    let malformed = [
        "not json".to_owned(),
        "[]".to_owned(),
        event(&format!("{api}{data}")).replace(r#""object":"event""#, r#""object":"charge""#),
        event(&format!("{api}{data}")).replace(r#""id":"evt_1""#, r#""id":"""#),
        event(&format!("{api}{data}")).replace(r#""id":"evt_1""#, r#""id":"evt 1""#),
        event(&format!("{api}{data}")).replace(r#""id":"evt_1""#, r#""id":7"#),
        event(&format!("{api}{data}")).replace(&format!("{T}"), "-1"),
        event(&format!("{api}{data}")).replace(&format!("{T}"), "1.5"),
        event(&format!("{api}{data}")).replace("true", r#""true""#),
        event(&format!("{api}{data}")).replace("payment_intent.canceled", "payment intent"),
        event(&format!(r#""api_version":20260128,{data}"#)),
        event(data),
        event(api),
        event(&format!(r#"{api}"data":{{"object":[]}},"#)),
        event(&format!(r#"{api}"data":{{}},"#)),
        event(&format!(
            r#"{api}"data":{{"object":{{}},"previous_attributes":1}},"#
        )),
        event(&format!(r#"{api}{data}"account":1,"#)),
        event(&format!(r#"{api}{data}"pending_webhooks":-1,"#)),
        event(&format!(r#"{api}{data}"request":"req_1","#)),
        // A duplicate key, at the top and deep inside the object.
        event(&format!(r#"{api}{data}"type":"charge.succeeded","#)),
        event(&format!(
            r#"{api}"data":{{"object":{{"amount":1,"amount":2}}}},"#
        )),
    ];
    for body in &malformed {
        assert_eq!(
            verified(body).map(|_| ()),
            Err(Refusal::EventMalformed),
            "{body}"
        );
    }
    // Bytes that are not UTF-8, signed: refused as an event, not as a signature.
    let bytes = [b'{', 0xff, b'}'];
    let header = header(SECRET, T, &bytes);
    assert_eq!(
        verifier().verify(Some(&header), &bytes, at(T)).map(|_| ()),
        Err(Refusal::EventMalformed)
    );
    // data.object is the exact signed text, spacing and key order included.
    let spaced = event(&format!(
        r#"{api}"data":{{"object": {{ "z" : 1,"a":[ 2 ] }} }},"#
    ));
    assert_eq!(
        verified(&spaced).expect("event").object().get(),
        r#"{ "z" : 1,"a":[ 2 ] }"#
    );
}

#[test]
fn secrets_are_checked_and_in_no_output() {
    for refused in [
        "",
        "whsec_",
        "sk_test_abc",
        "whsec_abc def",
        "whsec_abc-def",
        "WHSEC_abc",
    ] {
        assert_eq!(
            WebhookSecret::new(refused),
            Err(SecretError::NotASecret),
            "{refused}"
        );
    }
    assert_eq!(WebhookSecrets::new(Vec::new()), Err(SecretError::Count));
    assert_eq!(
        WebhookSecrets::from_list(&format!("{SECRET},{SECRET}")),
        Err(SecretError::Count)
    );
    assert_eq!(
        WebhookSecrets::from_list(&format!("{SECRET}, {ROLLED}")),
        Err(SecretError::NotASecret)
    );
    let five = (0..5).map(|n| format!("whsec_{n}")).collect::<Vec<_>>();
    assert_eq!(
        WebhookSecrets::from_list(&five.join(",")),
        Err(SecretError::Count)
    );
    assert!(WebhookSecrets::from_list(&five[..4].join(",")).is_ok());
    let both = WebhookSecrets::from_list(&format!("{SECRET},{ROLLED}")).expect("two");
    assert_eq!(both, secrets(&[SECRET, ROLLED]));

    let body = body();
    let verifier = Verifier::new(both.clone());
    let mut outputs = vec![
        format!("{:?}", WebhookSecret::new(SECRET).expect("secret")),
        format!("{both:?}"),
        format!("{verifier:?}"),
        SecretError::NotASecret.to_string(),
        SecretError::Count.to_string(),
    ];
    let mut altered = body.clone();
    altered.push(b' ');
    let requests: [(Option<String>, &[u8], i64); 6] = [
        (None, &body, T),
        (Some(format!("t={T},v0={SECRET}")), &body, T),
        (Some(format!("t={T},v1={SECRET}")), &body, T),
        (Some(header(SECRET, T, &body)), &altered, T),
        (Some(header(SECRET, T, &body)), &body, T + 3_600),
        (Some(header(ROLLED, T, &body)), &body, T),
    ];
    for (header, body, now) in &requests {
        match verifier.verify(header.as_deref(), body, at(*now)) {
            Err(refusal) => {
                outputs.push(format!("{refusal:?}"));
                outputs.push(refusal.to_string());
                outputs.push(refusal.code().to_owned());
            }
            Ok(event) => outputs.push(format!("{event:?}")),
        }
    }
    for output in &outputs {
        for canary in ["CANARYcurrentSecret", "CANARYrolledSecret", BODY_CANARY] {
            assert!(!output.contains(canary), "{canary} in {output}");
        }
    }
}
