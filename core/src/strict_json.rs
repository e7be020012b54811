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

/// Why text is not one acceptable JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectError {
    /// Malformed JSON, trailing text, or a JSON value that is not an object.
    NotAnObject,
    /// A duplicate key: the top-level key that is given twice, or whose value holds a
    /// duplicate key at some depth (nested key names are not reported).
    DuplicateKey(String),
}

/// Parses `text` as one JSON object without duplicate keys at any depth, naming the
/// top-level key at fault when a key is duplicated.
pub fn parse_object(text: &str) -> Result<Map<String, Value>, ObjectError> {
    if !serde_json::from_str::<Value>(text).is_ok_and(|value| value.is_object()) {
        return Err(ObjectError::NotAnObject);
    }
    let mut current = None;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = deserializer.deserialize_map(TopLevel {
        current: &mut current,
    });
    match parsed {
        Ok(map) if deserializer.end().is_ok() => Ok(map),
        // The text is one valid JSON object, so the strict parse failed on a duplicate.
        _ => Err(current.map_or(ObjectError::NotAnObject, ObjectError::DuplicateKey)),
    }
}

/// Visits the top-level object, remembering the key whose value is being read.
struct TopLevel<'a> {
    current: &'a mut Option<String>,
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object without duplicate keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            *self.current = Some(key.clone());
            let StrictValue(value) = access.next_value()?;
            if map.insert(key, value).is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(map)
    }
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
    fn parse_object_names_the_top_level_key_at_fault() {
        use super::{ObjectError, parse_object};
        let dup = |key: &str| Err(ObjectError::DuplicateKey(key.to_owned()));
        assert_eq!(parse_object(r#"{"a":1,"b":2,"b":3}"#), dup("b"));
        assert_eq!(
            parse_object(r#"{"a":1,"p":{"x":[{"k":1,"k":2}]}}"#),
            dup("p")
        );
        assert_eq!(parse_object("[1]"), Err(ObjectError::NotAnObject));
        assert_eq!(parse_object(r#"{"a":1} {}"#), Err(ObjectError::NotAnObject));
        assert_eq!(parse_object(""), Err(ObjectError::NotAnObject));
        let map = parse_object(r#"{"a":{"b":1}}"#).expect("object");
        assert_eq!(map.get("a"), Some(&json!({"b":1})));
    }

    #[test]
    fn floats_survive_as_floats_for_the_validators_to_reject() {
        assert!(parse(r#"{"a":1.0}"#).is_some_and(|v| v["a"].is_f64()));
    }
}
