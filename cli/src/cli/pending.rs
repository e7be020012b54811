//! `command-journal pending`: every command waiting for someone, one JSON line each
//! (`Journal::pending`), in key-hash order, then every late charge (a charge its
//! command ended without: `lateCharge`, `unblockedBy: refund`), on stdout; nothing
//! when none waits. The
//! usual Firestore options choose the journal, `--at` its time (emulator only),
//! `--key-range INDEX/COUNT` one range of the key-hash space.

use super::Global;
use super::exit::{self, Exit};
use std::process::ExitCode;

/// Lists the pending commands of the selected journal, in `key_range` (`INDEX/COUNT`;
/// every command when `None`).
pub async fn run(options: &Global, key_range: Option<&str>) -> ExitCode {
    let range = match key_range.map(str::parse::<crate::pending::KeyRange>) {
        None => crate::pending::KeyRange::ALL,
        Some(Ok(range)) => range,
        Some(Err(error)) => return exit::report(Err(error)),
    };
    let journal = match options.journal().await {
        Ok(journal) => journal,
        Err(error) => return exit::report(Err(error)),
    };
    match journal.pending_in(range).await {
        Ok(listing) => {
            // Through a `serde_json` map, so that the keys print sorted: the waiting
            // commands, then the late charges.
            let lines = listing
                .pending
                .iter()
                .map(super::output::to_json)
                .chain(listing.late_charges.iter().map(super::output::to_json));
            for line in lines {
                match line {
                    Ok(line) => println!("{line}"),
                    Err(_) => {
                        return exit::report(Err(crate::JournalError::internal("pending: output")));
                    }
                }
            }
            Exit::Success.into()
        }
        Err(error) => exit::report(Err(error)),
    }
}
