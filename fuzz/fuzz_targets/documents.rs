//! `cargo +nightly fuzz run documents`: see fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    command_journal_core::fuzzing::parse_documents(data);
});
