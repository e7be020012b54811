//! The strict field reader and the value builders every codec uses.

use super::value::{Value, ValueType};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::sends::attempt_number::AttemptNumber;
use crate::time::Timestamp;
use std::collections::HashMap;

/// A document's raw field map, as Firestore returns and accepts it.
pub type FieldMap = HashMap<String, Value>;

/// Reads a field map whose exact field set was checked on construction. Every
/// failure is `journal_corrupt` with the document kind as its reason and the field's
/// name (never its value) as its detail, which the shell logs; nothing here logs.
pub struct Strict<'a> {
    fields: &'a FieldMap,
    kind: &'static str,
}

impl<'a> Strict<'a> {
    /// Fails unless `fields` has exactly the names in `expected`.
    pub fn new(
        fields: &'a FieldMap,
        expected: &[&str],
        kind: &'static str,
    ) -> Result<Self, JournalError> {
        let exact =
            fields.len() == expected.len() && expected.iter().all(|n| fields.contains_key(*n));
        if !exact {
            return Err(JournalError::corrupt_at(kind, "field set"));
        }
        Ok(Self { fields, kind })
    }

    fn fail(&self, name: &'static str) -> JournalError {
        JournalError::corrupt_at(self.kind, name)
    }

    fn get(&self, name: &'static str) -> Result<&'a ValueType, JournalError> {
        self.fields
            .get(name)
            .and_then(|v| v.value_type.as_ref())
            .ok_or_else(|| self.fail(name))
    }

    /// A boolean value.
    pub fn boolean(&self, name: &'static str) -> Result<bool, JournalError> {
        match self.get(name)? {
            ValueType::BooleanValue(v) => Ok(*v),
            _ => Err(self.fail(name)),
        }
    }

    /// An integer value (not a double).
    pub fn int(&self, name: &'static str) -> Result<i64, JournalError> {
        match self.get(name)? {
            ValueType::IntegerValue(v) => Ok(*v),
            _ => Err(self.fail(name)),
        }
    }

    /// An integer within `range`.
    pub fn int_in(
        &self,
        name: &'static str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64, JournalError> {
        let v = self.int(name)?;
        if range.contains(&v) {
            Ok(v)
        } else {
            Err(self.fail(name))
        }
    }

    /// A fence epoch: an integer from 1 to 9,999,999,999.
    pub fn fence(&self, name: &'static str) -> Result<FenceEpoch, JournalError> {
        FenceEpoch::new(self.int(name)?).map_err(|_| self.fail(name))
    }

    /// A null, or a fence epoch.
    pub fn nullable_fence(&self, name: &'static str) -> Result<Option<FenceEpoch>, JournalError> {
        match self.get(name)? {
            ValueType::NullValue(_) => Ok(None),
            ValueType::IntegerValue(v) => {
                FenceEpoch::new(*v).map(Some).map_err(|_| self.fail(name))
            }
            _ => Err(self.fail(name)),
        }
    }

    /// An attempt number: an integer from 1 to 9,999.
    pub fn attempt(&self, name: &'static str) -> Result<AttemptNumber, JournalError> {
        AttemptNumber::new(self.int(name)?).map_err(|_| self.fail(name))
    }

    /// A string value.
    pub fn string(&self, name: &'static str) -> Result<&'a str, JournalError> {
        match self.get(name)? {
            ValueType::StringValue(v) => Ok(v),
            _ => Err(self.fail(name)),
        }
    }

    /// A string equal to `expected`.
    pub fn string_eq(&self, name: &'static str, expected: &str) -> Result<(), JournalError> {
        if self.string(name)? == expected {
            Ok(())
        } else {
            Err(self.fail(name))
        }
    }

    /// A string parsed by `parse` (an enum or validated newtype).
    pub fn parsed<T, E>(
        &self,
        name: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, JournalError> {
        parse(self.string(name)?).map_err(|_| self.fail(name))
    }

    /// A lowercase hex SHA-256 string.
    pub fn digest(&self, name: &'static str) -> Result<Digest, JournalError> {
        Digest::parse(self.string(name)?).ok_or_else(|| self.fail(name))
    }

    /// A null value (not absent, not an empty string).
    pub fn null(&self, name: &'static str) -> Result<(), JournalError> {
        match self.get(name)? {
            ValueType::NullValue(_) => Ok(()),
            _ => Err(self.fail(name)),
        }
    }

    /// A timestamp value in whole microseconds within Firestore's range.
    pub fn timestamp(&self, name: &'static str) -> Result<Timestamp, JournalError> {
        match self.get(name)? {
            ValueType::TimestampValue(ts) => {
                Timestamp::from_value_time(ts).ok_or_else(|| self.fail(name))
            }
            _ => Err(self.fail(name)),
        }
    }

    /// A null, or a string parsed by `parse`.
    pub fn nullable<T, E>(
        &self,
        name: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, JournalError> {
        match self.get(name)? {
            ValueType::NullValue(_) => Ok(None),
            ValueType::StringValue(v) => parse(v).map(Some).map_err(|_| self.fail(name)),
            _ => Err(self.fail(name)),
        }
    }

    /// A null, or a timestamp value.
    pub fn nullable_timestamp(
        &self,
        name: &'static str,
    ) -> Result<Option<Timestamp>, JournalError> {
        match self.get(name)? {
            ValueType::NullValue(_) => Ok(None),
            ValueType::TimestampValue(ts) => Timestamp::from_value_time(ts)
                .map(Some)
                .ok_or_else(|| self.fail(name)),
            _ => Err(self.fail(name)),
        }
    }

    /// The `journal_corrupt` error of this document kind, for relation checks.
    pub fn corrupt(&self, relation: &'static str) -> JournalError {
        self.fail(relation)
    }
}

/// An integer value.
pub fn int(v: i64) -> Value {
    Value {
        value_type: Some(ValueType::IntegerValue(v)),
    }
}

/// A string value.
pub fn string(v: impl Into<String>) -> Value {
    Value {
        value_type: Some(ValueType::StringValue(v.into())),
    }
}

/// A null value.
pub fn boolean(v: bool) -> Value {
    Value {
        value_type: Some(ValueType::BooleanValue(v)),
    }
}

/// A Firestore null value.
pub fn null() -> Value {
    Value {
        value_type: Some(ValueType::NullValue(0)),
    }
}

/// A timestamp value.
pub fn timestamp(ts: Timestamp) -> Value {
    Value {
        value_type: Some(ValueType::TimestampValue(ts.to_value_time())),
    }
}

/// A string value, or null.
pub fn nullable_string(v: Option<&str>) -> Value {
    v.map_or_else(null, string)
}

/// Builds a field map from `(name, value)` pairs.
pub fn map<const N: usize>(pairs: [(&str, Value); N]) -> FieldMap {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
