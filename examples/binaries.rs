//! The examples' binaries as a user starts them: a wrong argument is answered on
//! stderr with the usage and exit 2, before any emulator, socket or provider is
//! touched; the README's handler only links.

use std::process::{Command, Output};

fn run(binary: &str, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .env_clear()
        .output()
        .unwrap_or_else(|error| panic!("run {binary}: {error}"))
}

/// Asserts exit 2, nothing on stdout and `usage` on stderr.
fn assert_refused(output: &Output, usage: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty(), "{output:?}");
    assert!(stderr.contains(usage), "{stderr}");
}

#[test]
fn the_checkout_service_takes_no_argument_but_recover() {
    let output = run(env!("CARGO_BIN_EXE_checkout-service"), &["serve"]);
    assert_refused(&output, "usage: checkout-service [recover]");
}

#[test]
fn the_stub_provider_refuses_an_unknown_option() {
    let output = run(env!("CARGO_BIN_EXE_stub-provider"), &["--colour", "red"]);
    assert_refused(&output, "stub-provider: unknown option --colour");
    let output = run(env!("CARGO_BIN_EXE_stub-provider"), &["--port", "http"]);
    assert_refused(&output, "stub-provider: --port: a port number");
}

#[test]
fn the_payout_worker_refuses_a_list_it_cannot_drain() {
    let output = run(env!("CARGO_BIN_EXE_payout-worker"), &["--payouts", "0"]);
    assert_refused(&output, "--payouts must be a whole number from 1 to");
    let output = run(env!("CARGO_BIN_EXE_payout-worker"), &["--fast"]);
    assert_refused(&output, "usage: payout-worker [--payouts N]");
}

#[test]
fn the_idempotent_notes_service_refuses_an_unknown_argument() {
    let output = run(env!("CARGO_BIN_EXE_idempotent-notes"), &["serve"]);
    assert_refused(&output, "usage: idempotent-notes [--port N]");
    let output = run(env!("CARGO_BIN_EXE_idempotent-notes"), &["--port", "http"]);
    assert_refused(&output, "idempotent-notes: --port: a port number");
}

#[test]
fn the_readme_handler_links_and_exits_at_once() {
    let output = run(env!("CARGO_BIN_EXE_readme-handler"), &[]);
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn the_stripe_stand_in_refuses_an_unknown_option() {
    let output = run(env!("CARGO_BIN_EXE_stripe-stand-in"), &["--colour", "red"]);
    assert_refused(&output, "usage: stripe-stand-in [--port N]");
    let output = run(env!("CARGO_BIN_EXE_stripe-stand-in"), &["--port", "http"]);
    assert_refused(&output, "stripe-stand-in: --port: a port number");
}
