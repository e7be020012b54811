//! `command-journal pending`: every command waiting for someone, one JSON line each
//! (`Journal::pending`), in key-hash order, on stdout; nothing when none waits. The
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
            for waiting in &listing.pending {
                // Through a `serde_json` map, so that the keys print sorted.
                match super::output::to_json(waiting) {
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
