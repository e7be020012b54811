//! Named databases: every path, read, write and scan goes to the database the
//! connection names, and nothing reaches `(default)`.

use super::support::{self, command, list};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::LeaseId;
use command_journal::LeaseOutput;
use command_journal::{Connection, Target};
use serde_json::json;

#[tokio::test]
async fn register_acquire_and_verify_on_a_named_database_leave_default_empty() {
    let emulator = support::emulator();
    let project = emulator.new_project_id();
    let target = Target::Emulator(emulator.host().to_owned());
    let named = Connection::connect_database(&project, "journal-db", target.clone())
        .await
        .expect("connect to the named database");
    assert_eq!(named.database(), "journal-db");
    assert!(named.database_path().ends_with("/databases/journal-db"));
    let journal = Journal::new(named.clone());
    let cmd = command(800, json!({"db": "named"}));
    journal.register_command(&cmd).await.expect("register");
    let lease = LeaseId::parse(&support::uuid(8, 1)).expect("lease");
    let acquired = journal.acquire_lease(&cmd, &lease).await.expect("acquire");
    assert!(matches!(acquired, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 1));
    let report = command_journal::verify(&named, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean);
    assert_eq!(report.scanned.total(), 4, "root, lifecycle and two events");

    let default = Connection::connect(&project, target)
        .await
        .expect("connect to (default)");
    assert_eq!(default.database(), "(default)");
    assert!(list(&default, "", "checkoutRequests").await.is_empty());
    assert!(list(&default, "", "auditEvents").await.is_empty());
    assert_eq!(list(&named, "", "auditEvents").await.len(), 2);
}

#[tokio::test]
async fn a_malformed_database_id_is_invalid_input() {
    for bad in [
        "",
        "ab",
        "Upper-case",
        "-lead",
        "trail-",
        "has_underscore",
        "(other)",
    ] {
        let result = Connection::connect_database(
            "databases-project",
            bad,
            Target::Emulator(support::emulator().host().to_owned()),
        )
        .await;
        assert_eq!(
            result.err(),
            Some(JournalError::InvalidInput { field: "database" }),
            "{bad:?}"
        );
    }
}
