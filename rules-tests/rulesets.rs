//! The rulesets the tests load: the real one, a deliberately leaky one, and a fixture
//! with allowed paths. (Merging into an application's ruleset is the library's
//! `rules_testing::merged_into_app`.)

use command_journal_emulator::rules_testing::END_MARKER;

/// `firestore.rules` as compiled into the library.
pub const REAL: &str = command_journal_emulator::emulator::RULES;

/// The real rules plus the mistake `firestore.rules` warns about: a catch-all read for
/// signed-in users, which ORs with (and so overrides) every `if false`.
pub fn leaky() -> String {
    let end = REAL
        .find(END_MARKER)
        .map(|at| at + END_MARKER.len())
        .expect("firestore.rules has the END marker");
    let (blocks, rest) = REAL.split_at(end);
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
    match /verifiedOnly/{id} {
      allow read: if request.auth.token.email_verified == true
        && request.auth.token.firebase.sign_in_provider == 'password';
    }
    match /anonymousOnly/{id} {
      allow read: if request.auth.token.firebase.sign_in_provider == 'anonymous';
    }
  }
}
"#;
