//! Ledger idempotency reservations (SPEC-LED-002, seed 003) as DESIGN.md maps them
//! onto Firestore.
//!
//! [`fingerprint`] holds the pure, versioned replay-fingerprint serializers; it does
//! no I/O.

pub mod fingerprint;
