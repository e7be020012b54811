//! Unsigned Firebase ID tokens for the emulator, built byte for byte as
//! `@firebase/rules-unit-testing` builds them (through `createMockUserToken`).

use super::outcome::RulesTestError;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// The JOSE header of every mock token: unsigned (`alg: none`), with the library's
/// `type` (not `typ`) field.
pub const HEADER: &str = r#"{"alg":"none","type":"JWT"}"#;

/// Builds the unsigned ID token the emulator accepts as `request.auth`.
///
/// `token` holds the token's claims as `createMockUserToken` takes them: it must name
/// the user in `sub` or `user_id` (a `uid` field is refused, as the library refuses
/// it). The payload starts from the library's defaults (`iss` and `aud` for `project`,
/// `iat` from `token` or 0, `exp` one hour later, `auth_time`, `sub`, `user_id`, and
/// `firebase: {sign_in_provider: "custom", identities: {}}`), then every field of
/// `token` overrides or extends it, top-level only, as a JavaScript object spread
/// does. Header and payload are JSON, base64url without padding; the signature is
/// empty.
pub fn mock_user_token(project: &str, token: &Value) -> Result<String, RulesTestError> {
    let Value::Object(options) = token else {
        return Err(RulesTestError::InvalidToken(
            "the token options are not a JSON object",
        ));
    };
    if options.contains_key("uid") {
        return Err(RulesTestError::InvalidToken(
            "a mock token names its user in `sub`, never `uid`",
        ));
    }
    let sub = match (options.get("sub"), options.get("user_id")) {
        (Some(sub), _) if !is_falsy(sub) => sub.clone(),
        (_, Some(user_id)) if !is_falsy(user_id) => user_id.clone(),
        _ => {
            return Err(RulesTestError::InvalidToken(
                "a mock token must contain `sub` or `user_id`",
            ));
        }
    };
    let iat = options.get("iat").and_then(Value::as_i64).unwrap_or(0);
    // Raw JSON text per key, so the defaults keep the library's key order.
    let mut payload: Vec<(String, String)> = vec![
        (
            "iss".into(),
            json!(format!("https://securetoken.google.com/{project}")).to_string(),
        ),
        ("aud".into(), json!(project).to_string()),
        ("iat".into(), iat.to_string()),
        ("exp".into(), iat.saturating_add(3600).to_string()),
        ("auth_time".into(), iat.to_string()),
        ("sub".into(), sub.to_string()),
        ("user_id".into(), sub.to_string()),
        (
            "firebase".into(),
            r#"{"sign_in_provider":"custom","identities":{}}"#.into(),
        ),
    ];
    for (key, value) in options {
        let value = value.to_string();
        match payload.iter_mut().find(|(existing, _)| existing == key) {
            Some(slot) => slot.1 = value,
            None => payload.push((key.clone(), value)),
        }
    }
    let mut text = String::from("{");
    for (index, (key, value)) in payload.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&Value::String(key.clone()).to_string());
        text.push(':');
        text.push_str(value);
    }
    text.push('}');
    Ok(format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(HEADER),
        URL_SAFE_NO_PAD.encode(text)
    ))
}

/// JavaScript falsiness, for `token.sub || token.user_id`.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(_) | Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(part: &str) -> String {
        String::from_utf8(URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("utf-8")
    }

    #[test]
    fn mock_tokens_are_unsigned_jwts_shaped_like_rules_unit_testing() {
        let token = mock_user_token("demo-p", &json!({"sub": "u1", "admin": true})).expect("token");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        assert_eq!(parts[2], "", "the signature is empty");
        assert!(!token.contains('='), "base64url without padding");
        assert_eq!(decode(parts[0]), HEADER);
        // The library's key order, defaults first, then the caller's extra claims.
        assert_eq!(
            decode(parts[1]),
            r#"{"iss":"https://securetoken.google.com/demo-p","aud":"demo-p","iat":0,"exp":3600,"auth_time":0,"sub":"u1","user_id":"u1","firebase":{"sign_in_provider":"custom","identities":{}},"admin":true}"#
        );
    }

    #[test]
    fn claims_override_the_defaults_top_level_only_and_iat_moves_exp() {
        let token = mock_user_token(
            "p",
            &json!({
                "sub": "u2",
                "iat": 1_000,
                "email_verified": true,
                "firebase": {"sign_in_provider": "password"},
            }),
        )
        .expect("token");
        let payload: Value =
            serde_json::from_str(&decode(token.split('.').nth(1).expect("payload part")))
                .expect("JSON payload");
        assert_eq!(payload["iat"], 1_000);
        assert_eq!(payload["exp"], 4_600);
        assert_eq!(payload["auth_time"], 1_000);
        assert_eq!(payload["email_verified"], true);
        assert_eq!(
            payload["firebase"],
            json!({"sign_in_provider": "password"}),
            "a spread replaces the whole firebase object"
        );
        let by_user_id = mock_user_token("p", &json!({"user_id": "u3"})).expect("token");
        assert!(decode(by_user_id.split('.').nth(1).expect("payload")).contains(r#""sub":"u3""#));
    }

    #[test]
    fn a_token_without_a_subject_or_with_uid_is_refused() {
        for options in [
            json!({}),
            json!({"uid": "u"}),
            json!({"sub": ""}),
            json!("u"),
        ] {
            assert!(
                mock_user_token("p", &options).is_err(),
                "{options} was accepted"
            );
        }
    }
}
