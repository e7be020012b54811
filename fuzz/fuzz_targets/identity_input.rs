//! `cargo +nightly fuzz run identity_input`: see fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    command_journal_core::fuzzing::identity_input(data);
});
