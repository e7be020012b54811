//! `command-journal dev-token --project demo-… --uid U`: an unsigned Firebase ID
//! token for local testing against the emulators.
//!
//! The token is what the Firebase Auth emulator's conventions and
//! `@firebase/rules-unit-testing` produce: header `{"alg":"none","type":"JWT"}`,
//! claims `iss` = `https://securetoken.google.com/<project>`, `aud` = the project,
//! `sub` = `user_id` = the uid, `iat` = `auth_time` = now, `exp` one hour later, and
//! an empty signature. No real Firebase project can accept it: the project must be a
//! `demo-` project, which Firebase reserves for the emulators and which no deployment
//! has. The checkout service accepts unsigned tokens only when
//! `FIREBASE_AUTH_EMULATOR_HOST` is set, and checks their claims all the same.

use super::input::{Failure, Problem};
use crate::Connection;
use crate::rules_testing::token::mock_user_token;
use serde_json::json;

/// The prefix every emulator-only project id has.
pub const DEMO_PREFIX: &str = "demo-";
/// What `--project` must be.
pub const EXPECTED_PROJECT: &str =
    "an emulator-only project id: demo- then 1 to 95 characters of a-z, 0-9 and -";
/// What `--uid` must be.
pub const EXPECTED_UID: &str = "a Firebase uid: 1 to 128 characters, no control characters";
/// How long the token is valid.
pub const LIFETIME_SECONDS: i64 = 3600;

/// `dev-token`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct DevTokenArgs {
    /// The emulator project the token is for: must start with `demo-`.
    #[arg(long, value_name = "demo-…")]
    pub project: String,
    /// The user id the token names (`sub`).
    #[arg(long, value_name = "UID")]
    pub uid: String,
}

/// The token for `args` at Unix time `now`, or `invalid_input` on `project` or `uid`.
pub fn token(args: &DevTokenArgs, now: i64) -> Result<String, Failure> {
    let emulator_only = args.project.starts_with(DEMO_PREFIX)
        && args.project.len() > DEMO_PREFIX.len()
        && Connection::check_ids(&args.project, "(default)").is_ok();
    if !emulator_only {
        return Err(Failure::input(
            "project",
            Problem::Invalid,
            EXPECTED_PROJECT,
        ));
    }
    let uid_ok =
        (1..=128).contains(&args.uid.chars().count()) && !args.uid.chars().any(char::is_control);
    if !uid_ok {
        return Err(Failure::input("uid", Problem::Invalid, EXPECTED_UID));
    }
    let claims = json!({"sub": args.uid, "iat": now, "exp": now + LIFETIME_SECONDS});
    mock_user_token(&args.project, &claims).map_err(|_| {
        Failure::Journal(crate::JournalError::Internal {
            reason: "the token could not be built",
        })
    })
}

/// Prints the token alone on stdout (so that `$(command-journal dev-token …)` is the
/// token), or the `invalid_input` line (exit 2).
pub fn run(args: &DevTokenArgs) -> std::process::ExitCode {
    let now = chrono::Utc::now().timestamp();
    match token(args, now) {
        Ok(token) => {
            println!("{token}");
            super::exit::Exit::Success.into()
        }
        Err(failure) => super::exit::report_failure(failure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn args(project: &str, uid: &str) -> DevTokenArgs {
        DevTokenArgs {
            project: project.to_owned(),
            uid: uid.to_owned(),
        }
    }

    #[test]
    fn the_token_carries_the_claims_the_checkout_service_checks() {
        let token = token(&args("demo-checkout", "alice"), 1_900_000_000).expect("token");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "", "unsigned");
        let decode = |part: &str| -> serde_json::Value {
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("JSON")
        };
        assert_eq!(decode(parts[0])["alg"], "none");
        let claims = decode(parts[1]);
        assert_eq!(
            claims["iss"],
            "https://securetoken.google.com/demo-checkout"
        );
        assert_eq!(claims["aud"], "demo-checkout");
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["iat"], 1_900_000_000);
        assert_eq!(claims["auth_time"], 1_900_000_000);
        assert_eq!(claims["exp"], 1_900_003_600);
    }

    #[test]
    fn only_demo_projects_and_plain_uids_are_accepted() {
        for project in ["my-project", "demo-", "demo-UPPER", "xdemo-a", ""] {
            assert_eq!(
                token(&args(project, "alice"), 0),
                Err(Failure::input(
                    "project",
                    Problem::Invalid,
                    EXPECTED_PROJECT
                )),
                "{project}"
            );
        }
        for uid in ["", "a\nb", &"u".repeat(129)] {
            assert_eq!(
                token(&args("demo-p", uid), 0),
                Err(Failure::input("uid", Problem::Invalid, EXPECTED_UID)),
            );
        }
        assert!(token(&args("demo-p", &"u".repeat(128)), 0).is_ok());
    }
}
