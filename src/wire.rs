//! The conversion between the core's document values
//! (`command_journal_core::tools::document::value`) and Firestore's gRPC `Value`
//! messages, at the places that cross the wire: the runner's reads and commits, the
//! pending listing, the verifier's scans and the benchmarks that write documents over
//! raw gRPC. Lossless in both directions: every variant maps to the one of the same
//! name.

use command_journal_core::tools::document::fields::FieldMap;
use command_journal_core::tools::document::value::{self, GeoPoint, ValueTime, ValueType};
use gcloud_sdk::google::firestore::v1 as wire;
use gcloud_sdk::google::r#type::LatLng;
use gcloud_sdk::prost_types;
use std::collections::HashMap;

/// A core value as Firestore sends it.
pub fn to_wire(v: &value::Value) -> wire::Value {
    use wire::value::ValueType as W;
    let value_type = v.value_type.as_ref().map(|t| match t {
        ValueType::NullValue(n) => W::NullValue(*n),
        ValueType::BooleanValue(b) => W::BooleanValue(*b),
        ValueType::IntegerValue(i) => W::IntegerValue(*i),
        ValueType::DoubleValue(d) => W::DoubleValue(*d),
        ValueType::TimestampValue(t) => W::TimestampValue(time_to_wire(*t)),
        ValueType::StringValue(s) => W::StringValue(s.clone()),
        ValueType::BytesValue(b) => W::BytesValue(b.clone()),
        ValueType::ReferenceValue(r) => W::ReferenceValue(r.clone()),
        ValueType::GeoPointValue(g) => W::GeoPointValue(LatLng {
            latitude: g.latitude,
            longitude: g.longitude,
        }),
        ValueType::ArrayValue(a) => W::ArrayValue(wire::ArrayValue {
            values: a.values.iter().map(to_wire).collect(),
        }),
        ValueType::MapValue(m) => W::MapValue(wire::MapValue {
            fields: fields_to_wire(&m.fields),
        }),
    });
    wire::Value { value_type }
}

/// A Firestore value as the core reads it. The query-pipeline expressions (field and
/// variable references, functions, pipelines), which no stored document holds, read
/// as an unknown value, which every codec refuses.
pub fn from_wire(v: wire::Value) -> value::Value {
    use wire::value::ValueType as W;
    let value_type = v.value_type.and_then(|t| {
        Some(match t {
            W::NullValue(n) => ValueType::NullValue(n),
            W::BooleanValue(b) => ValueType::BooleanValue(b),
            W::IntegerValue(i) => ValueType::IntegerValue(i),
            W::DoubleValue(d) => ValueType::DoubleValue(d),
            W::TimestampValue(t) => ValueType::TimestampValue(time_from_wire(&t)),
            W::StringValue(s) => ValueType::StringValue(s),
            W::BytesValue(b) => ValueType::BytesValue(b),
            W::ReferenceValue(r) => ValueType::ReferenceValue(r),
            W::GeoPointValue(g) => ValueType::GeoPointValue(GeoPoint {
                latitude: g.latitude,
                longitude: g.longitude,
            }),
            W::ArrayValue(a) => ValueType::ArrayValue(value::ArrayValue {
                values: a.values.into_iter().map(from_wire).collect(),
            }),
            W::MapValue(m) => ValueType::MapValue(value::MapValue {
                fields: fields_from_wire(m.fields),
            }),
            _ => return None,
        })
    });
    value::Value { value_type }
}

/// A core field map as Firestore sends it.
pub fn fields_to_wire(fields: &FieldMap) -> HashMap<String, wire::Value> {
    fields
        .iter()
        .map(|(k, v)| (k.clone(), to_wire(v)))
        .collect()
}

/// A Firestore field map as the core reads it.
pub fn fields_from_wire(fields: HashMap<String, wire::Value>) -> FieldMap {
    fields.into_iter().map(|(k, v)| (k, from_wire(v))).collect()
}

/// A core timestamp value as a protobuf timestamp.
pub fn time_to_wire(t: ValueTime) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.seconds,
        nanos: t.nanos,
    }
}

/// A protobuf timestamp as a core timestamp value.
pub fn time_from_wire(t: &prost_types::Timestamp) -> ValueTime {
    ValueTime {
        seconds: t.seconds,
        nanos: t.nanos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use command_journal_core::tools::document::fields;

    #[test]
    fn every_variant_round_trips() {
        let nested = value::Value {
            value_type: Some(ValueType::MapValue(value::MapValue {
                fields: HashMap::from([("n".to_owned(), fields::int(7))]),
            })),
        };
        let all = [
            fields::null(),
            fields::boolean(true),
            fields::int(-3),
            value::Value {
                value_type: Some(ValueType::DoubleValue(1.5)),
            },
            value::Value {
                value_type: Some(ValueType::TimestampValue(ValueTime {
                    seconds: 9,
                    nanos: 1_000,
                })),
            },
            fields::string("é"),
            value::Value {
                value_type: Some(ValueType::BytesValue(vec![0, 255])),
            },
            value::Value {
                value_type: Some(ValueType::ReferenceValue("projects/p".to_owned())),
            },
            value::Value {
                value_type: Some(ValueType::GeoPointValue(GeoPoint {
                    latitude: 1.0,
                    longitude: -2.0,
                })),
            },
            value::Value {
                value_type: Some(ValueType::ArrayValue(value::ArrayValue {
                    values: vec![nested.clone()],
                })),
            },
            nested,
            value::Value { value_type: None },
        ];
        for v in all {
            assert_eq!(from_wire(to_wire(&v)), v);
        }
    }
}
