//! Entry points for the fuzz targets in `fuzz/` and for the stable property tests
//! below (cargo feature `fuzzing`): harness code with oracle assertions, which the
//! fuzz crate calls; they change with the targets.
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
//! Inputs are bounded: the byte decoder (`bytes.rs`) caps every count and nesting depth,
//! so no input can make these functions allocate more than a few kilobytes beyond
//! the size of the input itself.

mod bytes;
mod canonical_payload;
mod documents;
mod identity_input;
mod ledger_plan;

pub use canonical_payload::canonical_payload;
pub use documents::parse_documents;
pub use identity_input::identity_input;
pub use ledger_plan::ledger_plan;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value as Json;

    /// Replays every committed fuzz corpus file through its entry point.
    #[test]
    fn the_committed_corpus_never_panics() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
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
