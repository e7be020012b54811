//! The downstream test docs/emulator.md shows, compiled and run as written: a crate that
//! depends on command-journal uses the harness exactly like this.

// ---- BEGIN docs/emulator.md example ----
use command_journal::identity::generate_lease_id;
use command_journal::{CommandInput, CommandRequest, Connection, Journal, LeaseOutput, Target};
use command_journal_emulator::Emulator;

#[tokio::test]
async fn a_second_worker_is_told_busy() {
    // FIRESTORE_EMULATOR_HOST when set, otherwise one JVM for the whole test binary.
    let emulator = Emulator::shared().expect("the Firestore emulator");
    // One project per test: tests share the emulator and run in parallel.
    let project = emulator.new_project_id();
    let target = Target::Emulator(emulator.host().to_owned());
    let journal = Journal::new(
        Connection::connect(&project, target)
            .await
            .expect("connect"),
    );

    let payload = serde_json::json!({"sku": "tee", "quantity": 1});
    let command = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "member",
        caller_id: "member_42",
        command_id: "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("a valid command");

    let first = journal
        .start(&command, &generate_lease_id())
        .await
        .expect("start");
    assert!(matches!(first.lease, LeaseOutput::Acquired { fence_epoch, .. } if fence_epoch == 1));
    let second = journal
        .start(&command, &generate_lease_id())
        .await
        .expect("start");
    assert_eq!(second.lease, LeaseOutput::Busy);
}
// ---- END docs/emulator.md example ----

#[test]
fn docs_emulator_md_shows_this_test_as_it_is() {
    let source = include_str!("downstream.rs");
    let example = source
        .split("// ---- BEGIN docs/emulator.md example ----\n")
        .nth(1)
        .and_then(|rest| {
            rest.split("// ---- END docs/emulator.md example ----")
                .next()
        })
        .expect("the marked example");
    let docs = include_str!("../docs/emulator.md");
    assert!(
        docs.contains(example),
        "docs/emulator.md must show emulator-tests/downstream.rs's example verbatim"
    );
}
