//! Canonical forms, so that the checker counts states that behave the same as one:
//! fingerprints of documents and of what a call knows, and the renumbering of the
//! store's logical write times.
//!
//! The operations compare write times only with each other (a precondition's update
//! time with the stored one, a send record's with its event's), and every new commit
//! time is later than all before it. So two states whose write times, taken together
//! (the store's and those every call keeps known), are in the same order behave the
//! same; [`Ranks`] renumbers them all to their rank, and a state is then hashed with
//! its times as they are.

use crate::document::fields::FieldMap;
use crate::document::value::{Value, ValueType};
use crate::known::Known;
use crate::transaction::{CommitStamps, CommitTime, Snapshot};
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::Hash;

/// Hashes a field map in key order (its own iteration order is not canonical).
pub(super) fn hash_fields(fields: &FieldMap, hasher: &mut DefaultHasher) {
    let mut names: Vec<&String> = fields.keys().collect();
    names.sort();
    names.len().hash(hasher);
    for name in names {
        name.hash(hasher);
        hash_value(&fields[name], hasher);
    }
}

fn hash_value(value: &Value, hasher: &mut DefaultHasher) {
    match &value.value_type {
        Some(ValueType::MapValue(map)) => {
            "map".hash(hasher);
            hash_fields(&map.fields, hasher);
        }
        Some(ValueType::ArrayValue(array)) => {
            ("array", array.values.len()).hash(hasher);
            for item in &array.values {
                hash_value(item, hasher);
            }
        }
        Some(ValueType::NullValue(n)) => ("null", n).hash(hasher),
        Some(ValueType::BooleanValue(b)) => ("bool", b).hash(hasher),
        Some(ValueType::IntegerValue(i)) => ("int", i).hash(hasher),
        Some(ValueType::DoubleValue(d)) => ("double", d.to_bits()).hash(hasher),
        Some(ValueType::TimestampValue(t)) => ("time", t.seconds, t.nanos).hash(hasher),
        Some(ValueType::StringValue(text)) => ("string", text).hash(hasher),
        Some(ValueType::BytesValue(bytes)) => ("bytes", bytes).hash(hasher),
        Some(ValueType::ReferenceValue(name)) => ("reference", name).hash(hasher),
        Some(ValueType::GeoPointValue(point)) => {
            let degrees = (point.latitude.to_bits(), point.longitude.to_bits());
            ("geo", degrees).hash(hasher);
        }
        None => "none".hash(hasher),
    }
}

/// A fingerprint of what a call knows: every known path, its document or absence,
/// and its write times.
pub(super) fn hash_known(known: &Known<u64>, hasher: &mut DefaultHasher) {
    let snapshot = known.snapshot();
    let mut paths: Vec<&String> = snapshot.docs.keys().collect();
    paths.sort();
    paths.len().hash(hasher);
    for path in paths {
        path.hash(hasher);
        match &snapshot.docs[path] {
            Some(fields) => hash_fields(fields, hasher),
            None => "absent".hash(hasher),
        }
        snapshot
            .stamps(path)
            .map(|s| (s.created, s.updated))
            .hash(hasher);
    }
}

/// The logical time of a comparable commit time of the store.
fn logical(time: CommitTime) -> u64 {
    u64::try_from(time.0).expect("a store's logical time")
}

/// The write times `known` holds.
pub(super) fn known_times(known: &Known<u64>, into: &mut Vec<u64>) {
    for stamps in known.snapshot().stamps.values() {
        into.push(logical(stamps.created));
        into.push(logical(stamps.updated));
    }
}

/// The order-preserving renumbering of a set of write times to their ranks (from 1).
pub(super) struct Ranks(Vec<u64>);

impl Ranks {
    /// The ranks of `times`; `None` when they already are their ranks.
    pub(super) fn of(mut times: Vec<u64>) -> Option<Self> {
        times.sort_unstable();
        times.dedup();
        let dense = times.iter().zip(1..).all(|(t, rank)| *t == rank);
        (!dense).then_some(Self(times))
    }

    /// The rank of `t`, one of the times ranked.
    pub(super) fn map(&self, t: u64) -> u64 {
        let index = self.0.binary_search(&t).expect("a ranked time");
        u64::try_from(index).expect("a small index") + 1
    }

    /// Whether every time `known` holds is its own rank.
    pub(super) fn keeps(&self, known: &Known<u64>) -> bool {
        let kept = |t: CommitTime| self.map(logical(t)) == logical(t);
        known
            .snapshot()
            .stamps
            .values()
            .all(|s| kept(s.created) && kept(s.updated))
    }

    /// `known` with its times renumbered. The store answers every document read
    /// present with its update time as both the version and the comparable time, and
    /// a commit's write results likewise, so the versions are the update times.
    pub(super) fn known(&self, known: &Known<u64>) -> Known<u64> {
        let old = known.snapshot();
        let stamped = |(path, doc): (&String, &Option<FieldMap>)| {
            doc.is_none() || old.stamps.contains_key(path)
        };
        assert!(
            old.docs.iter().all(stamped),
            "a known document without times"
        );
        let mut snapshot = Snapshot {
            docs: old.docs.clone(),
            stamps: HashMap::new(),
        };
        let mut versions = HashMap::new();
        for (path, stamps) in &old.stamps {
            let time = |t: CommitTime| {
                let rank = self.map(logical(t));
                (i64::try_from(rank).expect("a small rank"), 0)
            };
            let stamps = CommitStamps {
                created: time(stamps.created),
                updated: time(stamps.updated),
            };
            versions.insert(path.clone(), Some(logical(stamps.updated)));
            snapshot.stamps.insert(path.clone(), stamps);
        }
        Known::read(snapshot, &versions)
    }
}
