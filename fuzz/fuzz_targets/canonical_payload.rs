//! `cargo +nightly fuzz run canonical_payload`: see fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    command_journal_core::fuzzing::canonical_payload(data);
});
