//! What the rules made of one request: allowed, denied, or neither, read from the
//! answer's status (never from the HTTP code alone), and the error of a rules test
//! that could not run or did not see what it expected.

use crate::emulator::EmulatorError;
use gcloud_sdk::tonic::{self, Code};
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// What the rules made of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    /// The request reached the data: it succeeded, or failed for a reason only the data
    /// can give (`NOT_FOUND`, `ALREADY_EXISTS`, `FAILED_PRECONDITION`). A 404 on a
    /// missing document is an allow.
    Allowed,
    /// `PERMISSION_DENIED`: the rules refused it.
    Denied,
    /// Anything else (a malformed request, a rejected token, a transport error): neither
    /// an allow nor a deny, and never counted as one. Holds what was answered.
    Unexpected(String),
}

impl Outcome {
    /// `allowed`, `denied` or `unexpected`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::Unexpected(_) => "unexpected",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Unexpected(detail) => write!(f, "unexpected ({detail})"),
            other => f.write_str(other.label()),
        }
    }
}

/// Succeeds when the rules refused the request with `PERMISSION_DENIED` (the
/// equivalent of `assertFails`, but stricter: any other failure is not a deny).
pub fn assert_denied(outcome: Outcome) -> Result<(), RulesTestError> {
    match outcome {
        Outcome::Denied => Ok(()),
        other => Err(RulesTestError::Expected {
            expected: "denied",
            got: other,
        }),
    }
}

/// Succeeds when the rules let the request reach the data (the equivalent of
/// `assertSucceeds`; a `NOT_FOUND` read of a missing document counts as allowed).
pub fn assert_allowed(outcome: Outcome) -> Result<(), RulesTestError> {
    match outcome {
        Outcome::Allowed => Ok(()),
        other => Err(RulesTestError::Expected {
            expected: "allowed",
            got: other,
        }),
    }
}

fn classify_status(status: &str, detail: impl FnOnce() -> String) -> Outcome {
    match status {
        "PERMISSION_DENIED" => Outcome::Denied,
        "NOT_FOUND" | "ALREADY_EXISTS" | "FAILED_PRECONDITION" => Outcome::Allowed,
        _ => Outcome::Unexpected(detail()),
    }
}

/// Classifies a REST answer by its JSON `error.status`, never by the HTTP code alone
/// (403 also means other things). A streamed answer (`runQuery`) that is a 200 array
/// can still carry an error element.
pub fn classify_rest(http: u16, body: &str) -> Outcome {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = match &parsed {
        Some(Value::Array(items)) => items.iter().find_map(|item| item.get("error")),
        Some(value) => value.get("error"),
        None => None,
    };
    match error {
        Some(error) => {
            let status = error.get("status").and_then(Value::as_str).unwrap_or("");
            classify_status(status, || format!("HTTP {http}: {body}"))
        }
        None if (200..300).contains(&http) && parsed.is_some() => Outcome::Allowed,
        None => Outcome::Unexpected(format!("HTTP {http}: {body}")),
    }
}

/// Classifies a gRPC answer by its status code.
pub fn classify_grpc<T>(result: Result<T, tonic::Status>) -> Outcome {
    match result {
        Ok(_) => Outcome::Allowed,
        Err(status) => match status.code() {
            Code::PermissionDenied => Outcome::Denied,
            Code::NotFound | Code::AlreadyExists | Code::FailedPrecondition => Outcome::Allowed,
            _ => Outcome::Unexpected(format!("gRPC {status}")),
        },
    }
}

/// Why a rules test could not run or did not see what it expected.
#[derive(Debug, thiserror::Error)]
pub enum RulesTestError {
    /// The emulator could not be started or reached.
    #[error(transparent)]
    Emulator(#[from] EmulatorError),
    /// The emulator refused the ruleset: it does not compile. Holds its message.
    #[error("the ruleset does not compile: {0}")]
    RulesRejected(String),
    /// A request to the emulator failed outside the rules.
    #[error("emulator request failed: {0}")]
    Http(String),
    /// Mock token options the JavaScript library would refuse too.
    #[error("invalid mock token: {0}")]
    InvalidToken(&'static str),
    /// An assertion on an outcome failed.
    #[error("expected the request to be {expected}, but it was {got}")]
    Expected {
        /// `denied` or `allowed`.
        expected: &'static str,
        /// What the emulator answered.
        got: Outcome,
    },
    /// Seeding a document with the rules bypassed did not succeed.
    #[error("seeding {path} with the rules bypassed answered {got}")]
    Seed {
        /// The document.
        path: String,
        /// What the emulator answered.
        got: Outcome,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_permission_denied_status_counts_as_denied() {
        let denied = r#"{"error":{"code":403,"status":"PERMISSION_DENIED"}}"#;
        assert_eq!(classify_rest(403, denied), Outcome::Denied);
        let other_403 = r#"{"error":{"code":403,"status":"UNAUTHENTICATED"}}"#;
        assert!(matches!(
            classify_rest(403, other_403),
            Outcome::Unexpected(_)
        ));
        assert!(matches!(
            classify_rest(403, "Forbidden"),
            Outcome::Unexpected(_)
        ));
        let bad_token = r#"{"error":{"code":400,"status":"INVALID_ARGUMENT"}}"#;
        assert!(matches!(
            classify_rest(400, bad_token),
            Outcome::Unexpected(_)
        ));
        let missing = r#"{"error":{"code":404,"status":"NOT_FOUND"}}"#;
        assert_eq!(classify_rest(404, missing), Outcome::Allowed);
        assert_eq!(classify_rest(200, r#"{"name":"x"}"#), Outcome::Allowed);
        let streamed = r#"[{"readTime":"t"},{"error":{"status":"PERMISSION_DENIED"}}]"#;
        assert_eq!(classify_rest(200, streamed), Outcome::Denied);
        let status = tonic::Status::permission_denied("no");
        assert_eq!(classify_grpc::<()>(Err(status)), Outcome::Denied);
        let status = tonic::Status::unauthenticated("no");
        assert!(matches!(
            classify_grpc::<()>(Err(status)),
            Outcome::Unexpected(_)
        ));
        assert_eq!(
            classify_grpc::<()>(Err(tonic::Status::not_found("x"))),
            Outcome::Allowed
        );
    }

    #[test]
    fn assertions_accept_only_their_own_outcome() {
        assert!(assert_denied(Outcome::Denied).is_ok());
        assert!(assert_denied(Outcome::Allowed).is_err());
        assert!(assert_denied(Outcome::Unexpected("HTTP 403: Forbidden".into())).is_err());
        assert!(assert_allowed(Outcome::Allowed).is_ok());
        assert!(assert_allowed(Outcome::Denied).is_err());
        assert!(assert_allowed(Outcome::Unexpected("x".into())).is_err());
    }
}
