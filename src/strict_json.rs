//! JSON text to `serde_json::Value`, rejecting duplicate object keys at any depth.
//!
//! `serde_json` keeps the last of two equal keys; for a payment command that silently
//! picks one of two amounts. Input read from callers goes through [`parse`] instead.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Parses `text` as one JSON value; `None` for malformed JSON or a duplicate key.
pub fn parse(text: &str) -> Option<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = StrictValue::deserialize(&mut deserializer).ok()?.0;
    deserializer.end().ok()?;
    Some(value)
}

struct StrictValue(Value);

impl StrictValue {
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

impl<'de> de::Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StrictValue::deserialize(deserializer)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value without duplicate keys")
    }

    fn visit_bool<E>(self, v: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(StrictValue(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<StrictValue, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let StrictValue(value) = access.next_value()?;
            if map.insert(key, value).is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(StrictValue(Value::Object(map)))
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use serde_json::json;

    #[test]
    fn parses_ordinary_json() {
        assert_eq!(
            parse(r#"{"a":[1,-2,"x",null,true,{"b":{}}]}"#),
            Some(json!({"a":[1,-2,"x",null,true,{"b":{}}]}))
        );
    }

    #[test]
    fn rejects_duplicate_keys_at_any_depth() {
        assert_eq!(parse(r#"{"a":1,"a":2}"#), None);
        assert_eq!(parse(r#"{"x":[{"a":1,"a":1}]}"#), None);
    }

    #[test]
    fn rejects_trailing_garbage_and_malformed_text() {
        assert_eq!(parse(r#"{"a":1} x"#), None);
        assert_eq!(parse(r#"{"a":"#), None);
    }

    #[test]
    fn floats_survive_as_floats_for_the_validators_to_reject() {
        assert!(parse(r#"{"a":1.0}"#).is_some_and(|v| v["a"].is_f64()));
    }
}
