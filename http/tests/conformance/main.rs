//! Conformance of the `Idempotency-Key` layer on the Firestore emulator: every MUST
//! and SHOULD of the draft it answers (`draft`), the journal's own cases (`journal`),
//! provider handlers (`provider`) and the replay counter (`replays`). The emulator is
//! the harness's shared one; every test has its own project.

mod draft;
mod journal;
mod payload;
mod provider;
mod replays;
mod stored;
mod support;
