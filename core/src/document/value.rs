//! The document values the pure core reads and writes: the shape of Firestore's
//! `Value` message (the same variants and nesting), without its gRPC types, so that
//! no codec depends on a network stack. The runner converts them at the wire
//! (`src/wire.rs`), losslessly in both directions.

use std::collections::HashMap;

/// One field value: `None` is a value the reader does not know (never written by
/// the journal; every codec refuses it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Value {
    /// The value, by type.
    pub value_type: Option<ValueType>,
}

/// A value by its Firestore type (the variant names are the protobuf oneof's, so code
/// reads the same on both sides of the wire).
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::enum_variant_names)]
pub enum ValueType {
    /// `null` (the protobuf enum's only value, 0).
    NullValue(i32),
    /// A boolean.
    BooleanValue(bool),
    /// A 64-bit integer.
    IntegerValue(i64),
    /// A double.
    DoubleValue(f64),
    /// A timestamp, to the nanosecond as Firestore carries it.
    TimestampValue(ValueTime),
    /// UTF-8 text.
    StringValue(String),
    /// Bytes.
    BytesValue(Vec<u8>),
    /// A document reference (its full name).
    ReferenceValue(String),
    /// A geographic point.
    GeoPointValue(GeoPoint),
    /// An array.
    ArrayValue(ArrayValue),
    /// A map.
    MapValue(MapValue),
}

/// A timestamp value as Firestore carries it: seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ValueTime {
    /// Whole seconds.
    pub seconds: i64,
    /// Nanoseconds within the second (0 to 999,999,999 when valid).
    pub nanos: i32,
}

/// A latitude and longitude in degrees.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GeoPoint {
    /// Degrees latitude.
    pub latitude: f64,
    /// Degrees longitude.
    pub longitude: f64,
}

/// An array value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArrayValue {
    /// The elements, in order.
    pub values: Vec<Value>,
}

/// A map value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MapValue {
    /// The entries.
    pub fields: HashMap<String, Value>,
}
