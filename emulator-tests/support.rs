//! Shared helpers: the process-wide emulator and a fresh project per test.

use command_journal::connection::{Connection, Target};
use command_journal::emulator::Emulator;

/// The emulator every test of this binary shares (started once, killed at exit).
pub fn emulator() -> &'static Emulator {
    match Emulator::shared() {
        Ok(emulator) => emulator,
        Err(error) => panic!("the Firestore emulator is required for these tests: {error}"),
    }
}

/// A connection to a project no other test uses.
pub async fn fresh_connection() -> Connection {
    let emulator = emulator();
    let project = emulator.new_project_id();
    match Connection::connect(&project, Target::Emulator(emulator.host().to_owned())).await {
        Ok(connection) => connection,
        Err(error) => panic!("cannot connect to the emulator: {error}"),
    }
}
