//! Entry points for the fuzz targets in `fuzz/` and for the stable property tests
//! below. Not part of the public API: hidden from the docs and free to change.
//!
//! Every function takes arbitrary bytes and must return normally for every input. A
//! panic is a finding: either a codec, validator or `decide` that panics on hostile
//! input, or one of the invariants asserted here or by the shared in-memory store
//! ([`crate::testing::Store`]) broken (a `decide` that creates a document it did not
//! see absent, replaces one it did not read, answers differently on one snapshot or
//! writes a document its own strict codec rejects; a validator that accepts a value it
//! then rejects; a canonical form that is not a fixed point; a secret that prints
//! unredacted).
//!
//! Inputs are bounded: the byte decoder below caps every count and nesting depth,
//! so no input can make these functions allocate more than a few kilobytes beyond
//! the size of the input itself.

mod canonical_payload;
mod documents;
mod identity_input;
mod ledger_plan;

pub use canonical_payload::canonical_payload;
pub use documents::parse_documents;
pub use identity_input::identity_input;
pub use ledger_plan::ledger_plan;

use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, RegistrationEvent, TransitionEvent};
use crate::document::fields::FieldMap;
use crate::document::lifecycle::{self, Lifecycle};
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::{
    CallerId, CallerScopeKind, CommandId, CommandIdentity, CommandInput, CommandRequest,
    CommandType, EndpointSchemaVersion, Environment, LeaseId, LedgerKey, OperationSlug, Payload,
    TerminalReferenceFingerprint,
};
use crate::lease::{
    Acquire, LeaseCall, LeaseOutput, StatusRead, Terminal, TerminalOutput, TerminalRequest,
};
use crate::ledger::fingerprint::{Amount, CommandFamily, FingerprintInput};
use crate::registration::{Registration, RegistrationOutcome};
use crate::start::Start;
use crate::testing::{Attempt, Store};
use crate::time::Timestamp;
use crate::transaction::{Decision, Transition, Write};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{ArrayValue, MapValue, Value};
use gcloud_sdk::prost_types;
use serde_json::Value as Json;
use std::collections::HashMap;

/// Largest number of operations and corruptions one `parse_documents` input runs.
const MAX_STEPS: usize = 48;
/// Largest number of fields in a generated map.
const MAX_FIELDS: usize = 16;
/// Deepest generated array or map value.
const MAX_VALUE_DEPTH: usize = 3;
/// Longest generated raw string, in bytes.
const MAX_STRING: usize = 96;
/// Highest audit revision a generated path names.
const MAX_PATH_REVISION: i64 = 12;
/// 2030-03-17T17:46:40Z, the base instant of generated times.
const BASE_MICROS: i64 = 1_900_000_000_000_000;
const LEASE_MICROS: i64 = 60_000_000;

/// Reads fuzz bytes front to back; past the end every read is zero, so any input,
/// the empty one included, decodes to something.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let byte = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        byte
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        for byte in &mut out {
            *byte = self.u8();
        }
        out
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::from(u16::from_le_bytes(self.bytes())) % n
    }

    fn pick<'t, T>(&mut self, table: &'t [T]) -> &'t T {
        &table[self.below(table.len())]
    }

    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.bytes())
    }

    fn take(&mut self, max: usize) -> &'a [u8] {
        let len = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(len).min(self.data.len());
        self.pos = self.pos.saturating_add(len);
        &self.data[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Replays every committed fuzz corpus file through its entry point.
    #[test]
    fn the_committed_corpus_never_panics() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        type Entry = (&'static str, fn(&[u8]));
        let targets: [Entry; 4] = [
            ("documents", parse_documents),
            ("identity_input", identity_input),
            ("canonical_payload", canonical_payload),
            ("ledger_plan", ledger_plan),
        ];
        for (target, entry) in targets {
            let dir = root.join(target);
            let mut files = 0;
            for file in std::fs::read_dir(&dir).expect("corpus directory") {
                let bytes = std::fs::read(file.expect("entry").path()).expect("corpus file");
                entry(&bytes);
                files += 1;
            }
            assert!(files > 0, "{target} has no corpus");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn no_entry_point_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            parse_documents(&bytes);
            identity_input(&bytes);
            canonical_payload(&bytes);
            ledger_plan(&bytes);
        }

        #[test]
        fn no_entry_point_panics_on_arbitrary_text(text in ".{0,256}") {
            identity_input(text.as_bytes());
            canonical_payload(text.as_bytes());
            ledger_plan(text.as_bytes());
        }

        #[test]
        fn json_shaped_inputs_never_panic(value in json(3)) {
            let text = value.to_string();
            canonical_payload(text.as_bytes());
            ledger_plan(text.as_bytes());
            identity_input(text.as_bytes());
        }
    }

    fn json(depth: u32) -> impl Strategy<Value = Json> {
        let key = prop_oneof![
            Just("family".to_owned()),
            Just("fingerprintVersion".to_owned()),
            Just("effects".to_owned()),
            Just("intent".to_owned()),
            Just("transfer".to_owned()),
            Just("amount".to_owned()),
            Just("payload".to_owned()),
            "[a-z_]{1,8}",
        ];
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<f64>().prop_map(Json::from),
            "[0-9.-]{0,8}".prop_map(Json::String),
            ".{0,12}".prop_map(Json::String),
            Just(Json::from("effect_plan")),
            Just(Json::from(5)),
        ];
        leaf.prop_recursive(depth, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }
}
