//! `command-journal verify`: the JSON report on stdout, a human summary and progress
//! on stderr; exit 5 when anything is broken, and exit 7 when it scanned no journal
//! document at all (a wrong project or database must not pass as clean) unless
//! `--allow-empty`.

use super::Global;
use super::exit;
use command_journal::Scanned;
use std::process::ExitCode;

/// The exit code of a scan that found no journal document.
pub const EMPTY: u8 = 7;

/// Runs the verifier against the selected project.
pub async fn run(options: &Global, allow_empty: bool) -> ExitCode {
    let journal = match options.journal().await {
        Ok(journal) => journal,
        Err(error) => return exit::report(Err(error)),
    };
    let mut progress = |read: u64| eprintln!("verify: {read} documents read");
    let report = match command_journal::verify(journal.connection(), &mut progress).await {
        Ok(report) => report,
        Err(error) => return exit::report(Err(error)),
    };
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        Err(_) => return exit::internal("report serialization failed"),
    }
    let connection = journal.connection();
    let database_path = connection.database_path();
    let database = database_path.rsplit('/').next().unwrap_or_default();
    eprintln!(
        "verify: project {}, database {database}; scanned:",
        connection.project()
    );
    for (collection, count) in per_collection(&report.scanned) {
        eprintln!("  {collection:<34} {count:>10}");
    }
    if report.scanned.total() == 0 && !allow_empty {
        eprintln!(
            "verify: scanned no journal document in project {} database {database}: is \
             this the right project and database? (--allow-empty accepts an empty journal)",
            connection.project()
        );
        return ExitCode::from(EMPTY);
    }
    if report.clean {
        eprintln!("verify: clean ({} documents)", report.scanned.total());
        ExitCode::SUCCESS
    } else {
        let total: u64 = report.finding_counts.values().sum();
        eprintln!("verify: {total} broken invariants");
        for (code, count) in &report.finding_counts {
            eprintln!("  {code}: {count}");
        }
        ExitCode::from(5)
    }
}

/// The scanned counts by collection, as their documents are named.
fn per_collection(scanned: &Scanned) -> [(&'static str, u64); 5] {
    [
        ("checkoutRequests", scanned.checkout_requests),
        ("checkoutRequests/*/lifecycle", scanned.lifecycles),
        ("auditEvents", scanned.audit_events),
        ("ledgerReservations", scanned.ledger_reservations),
        ("ledgerTransactions", scanned.ledger_transactions),
    ]
}
