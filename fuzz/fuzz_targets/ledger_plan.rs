//! `cargo +nightly fuzz run ledger_plan`: see fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    command_journal_core::fuzzing::ledger_plan(data);
});
