//! The journal's security rules as an application merges them: the marked blocks of
//! `firestore.rules`, and a ruleset made by pasting them into an application's own.

use crate::emulator::RULES;

/// The line that opens the journal's blocks in `firestore.rules`.
pub const BEGIN_MARKER: &str = "// ---- BEGIN command-journal server-only rules ----";
/// The line that closes them.
pub const END_MARKER: &str = "// ---- END command-journal server-only rules ----";

/// What an application pastes into its own ruleset: everything from the BEGIN marker
/// to the END marker of the crate's `firestore.rules`.
pub fn journal_blocks() -> &'static str {
    let start = RULES.find(BEGIN_MARKER).unwrap_or(0);
    let end = RULES
        .find(END_MARKER)
        .map_or(RULES.len(), |at| at + END_MARKER.len());
    RULES.get(start..end).unwrap_or(RULES)
}

/// An application's ruleset made as the crate's documentation says: its own
/// `app_matches`, then the journal blocks pasted unchanged inside
/// `match /databases/{database}/documents`.
pub fn merged_into_app(app_matches: &str) -> String {
    format!(
        "rules_version = '2';\nservice cloud.firestore {{\n  match /databases/{{database}}/documents {{\n{app_matches}\n\n    {}\n  }}\n}}\n",
        journal_blocks()
    )
}
