//! The journal caller id of a Firebase uid.
//!
//! A Firebase uid is any string of 1 to 128 characters; a journal caller id is 1 to
//! 128 bytes of `A-Z a-z 0-9 _ -`. The mapping, exactly:
//!
//! - a uid that is a valid caller id and does not start with [`HASHED_PREFIX`]
//!   (`uid-sha256-`) is its own caller id: every uid Firebase generates (28 letters
//!   and digits) and every conforming custom uid keeps its identity, so existing
//!   journals are unchanged;
//! - every other uid (an e-mail-like custom uid, `a/b`, unicode, or a conforming uid
//!   that starts with `uid-sha256-`) maps to `uid-sha256-` followed by the 64
//!   lowercase hex digits of the SHA-256 of its UTF-8 bytes (75 bytes, a valid
//!   caller id).
//!
//! The mapping is injective: the first branch never yields an id starting with
//! `uid-sha256-`, the second always does, and distinct uids in the second branch
//! differ in their SHA-256. The one identity change it imposes is on custom uids
//! that themselves start with `uid-sha256-`, which no Firebase-generated uid does.

use command_journal::identity::CallerId;
use sha2::{Digest as _, Sha256};

/// The prefix of a hashed caller id; reserved, so uids starting with it are hashed
/// too.
pub const HASHED_PREFIX: &str = "uid-sha256-";

/// The caller id of `uid`, as the module documentation defines it.
pub fn caller_id(uid: &str) -> String {
    if !uid.starts_with(HASHED_PREFIX) && CallerId::parse(uid).is_ok() {
        return uid.to_owned();
    }
    format!(
        "{HASHED_PREFIX}{}",
        hex::encode(Sha256::digest(uid.as_bytes()))
    )
}
