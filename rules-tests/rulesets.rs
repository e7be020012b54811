//! The rulesets the tests load: the real one, the real blocks pasted into an
//! application's ruleset, a deliberately leaky one, and a fixture with allowed paths.

/// `firestore.rules` as compiled into the library.
pub const REAL: &str = command_journal::emulator::RULES;

const BEGIN: &str = "// ---- BEGIN command-journal server-only rules ----";
const END: &str = "// ---- END command-journal server-only rules ----";

fn end_of_blocks() -> usize {
    REAL.find(END)
        .map(|at| at + END.len())
        .expect("firestore.rules has the END marker")
}

/// What an application pastes into its own ruleset: everything from the BEGIN marker
/// to the END marker of `firestore.rules`.
pub fn journal_blocks() -> &'static str {
    let start = REAL
        .find(BEGIN)
        .expect("firestore.rules has the BEGIN marker");
    &REAL[start..end_of_blocks()]
}

/// An application's ruleset, made as the README says: its own `app_matches`, then the
/// journal blocks pasted unchanged inside `match /databases/{database}/documents`.
pub fn merged_into_app(app_matches: &str) -> String {
    format!(
        "rules_version = '2';\nservice cloud.firestore {{\n  match /databases/{{database}}/documents {{\n{app_matches}\n\n    {}\n  }}\n}}\n",
        journal_blocks()
    )
}

/// The real rules plus the mistake `firestore.rules` warns about: a catch-all read for
/// signed-in users, which ORs with (and so overrides) every `if false`.
pub fn leaky() -> String {
    let (blocks, rest) = REAL.split_at(end_of_blocks());
    format!("{blocks}\n    match /{{document=**}} {{ allow read: if request.auth != null; }}{rest}")
}

/// A fixture whose allows the harness must recognise as allows.
pub const ALLOWING_FIXTURE: &str = r#"rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /open/{id} {
      allow read, create: if true;
    }
    match /writable/{id} {
      allow read, write: if true;
    }
    match /{path=**}/writable/{id} {
      allow read: if true;
    }
    match /public/{id} {
      allow write: if true;
    }
    match /membersOnly/{id} {
      allow read: if request.auth != null;
    }
    match /adminOnly/{id} {
      allow read: if request.auth.token.admin == true;
    }
  }
}
"#;
