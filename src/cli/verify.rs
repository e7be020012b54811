//! `command-journal verify`: the JSON report on stdout, a human summary and progress
//! on stderr, exit 5 when anything is broken.

use super::Global;
use super::exit;
use std::process::ExitCode;

/// Runs the verifier against the selected project.
pub async fn run(options: &Global) -> ExitCode {
    let journal = match options.journal().await {
        Ok(journal) => journal,
        Err(error) => return exit::report(Err(error)),
    };
    let mut progress = |read: u64| eprintln!("verify: {read} documents read");
    let report = match command_journal::verify::verify(journal.connection(), &mut progress).await {
        Ok(report) => report,
        Err(error) => return exit::report(Err(error)),
    };
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        Err(_) => return exit::internal("report serialization failed"),
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
