//! The header table of `key.rs`, row by row.

use super::*;
use http::HeaderValue;

fn key(field: &str) -> Result<IdempotencyKey, KeyError> {
    IdempotencyKey::parse_field(field.as_bytes())
}

#[test]
fn a_string_item_within_the_limits_is_a_key() {
    let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
    assert_eq!(
        key(&format!("\"{uuid}\"")).map(|k| k.0),
        Ok(uuid.to_owned())
    );
    for text in [
        "clkyoesmbgybucifusbbtdsbohtyuuwz",
        "a",
        "order:2026/04#1+x=~_.-!",
        &"k".repeat(MAX_KEY_LENGTH),
    ] {
        assert_eq!(
            key(&format!("\"{text}\"")).map(|k| k.0),
            Ok(text.to_owned())
        );
    }
    // Optional whitespace around the item is RFC 8941's, not the key's.
    assert!(key("  \"abc\"  ").is_ok());
}

#[test]
fn every_other_field_value_is_malformed() {
    for field in [
        "8e03978e-40d5-43e8-bc93-6894a57f9324", // Stripe's unquoted style: a number, then junk
        "abc",                                  // a token, not a string
        "123",
        "?1",
        ":YWJj:",           // a byte sequence
        "\"abc\";scope=1",  // a parameter
        "\"abc\", \"def\"", // a list
        "\"\"",             // empty
        "\"a b\"",          // a space
        "\"a\\\"b\"",       // an escaped quote
        "\"a\\\\b\"",       // an escaped backslash
        "\"abc",            // unterminated
        "",
        "(\"abc\")",       // an inner list
        "\"abc\";a",       // a boolean parameter
        "%\"abc\"",        // an RFC 9651 Display String
        "@1700000000",     // an RFC 9651 Date
        "\"a\\u0062\"",    // an escape RFC 8941 does not have
        "\"a\tb\"",        // a tab inside
        "\t\"abc\"",       // a tab outside (HTTP strips it before a field value)
        "\"abc\" \"def\"", // two items
        "\"abc\",",        // a trailing comma
        "*abc",            // a token again
    ] {
        assert_eq!(key(field), Err(KeyError::Malformed), "{field}");
    }
    let long = format!("\"{}\"", "k".repeat(MAX_KEY_LENGTH + 1));
    assert_eq!(key(&long), Err(KeyError::Malformed));
    // Not ASCII: RFC 8941 strings are printable ASCII only.
    assert_eq!(
        IdempotencyKey::parse_field("\"caf\u{e9}\"".as_bytes()),
        Err(KeyError::Malformed)
    );
}

#[test]
fn a_missing_field_and_two_field_lines_are_refused() {
    let mut headers = HeaderMap::new();
    assert_eq!(
        IdempotencyKey::from_headers(&headers),
        Err(KeyError::Missing)
    );
    headers.append(IDEMPOTENCY_KEY, HeaderValue::from_static("\"a\""));
    assert!(IdempotencyKey::from_headers(&headers).is_ok());
    headers.append(IDEMPOTENCY_KEY, HeaderValue::from_static("\"a\""));
    assert_eq!(
        IdempotencyKey::from_headers(&headers),
        Err(KeyError::Malformed)
    );
}

#[test]
fn a_uuid_v4_key_is_the_command_id_and_any_other_key_derives_one() {
    let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
    assert_eq!(
        key(&format!("\"{uuid}\"")).map(|k| k.command_id()),
        Ok(uuid.to_owned())
    );
    let derived = |text: &str| key(&format!("\"{text}\"")).map(|k| k.command_id());
    let id = derived("clkyoesmbgybucifusbbtdsbohtyuuwz").expect("a key");
    assert!(CommandId::parse(&id).is_ok(), "{id}");
    // Pinned (computed apart, in Python): the derivation is part of the stored
    // identity of every such command.
    assert_eq!(id, "1efdf2fb-f502-41be-84cd-7fdd2115009a");
    assert_eq!(derived("clkyoesmbgybucifusbbtdsbohtyuuwz"), Ok(id.clone()));
    // Case counts: an uppercase UUID is another key, so another command.
    let upper = derived(&uuid.to_uppercase()).expect("a key");
    assert_ne!(upper, uuid);
    assert_ne!(derived("CLKYOESMBGYBUCIFUSBBTDSBOHTYUUWZ"), Ok(id.clone()));
    // The one pair named on purpose, as the module says: the derived UUID sent as a key
    // is the command id itself.
    assert_eq!(derived(&id), Ok(id));
}

#[test]
fn a_key_never_prints() {
    let printed = format!("{:?}", key("\"CANARYkey\"").expect("a key"));
    assert_eq!(printed, "IdempotencyKey(<redacted>)");
}
