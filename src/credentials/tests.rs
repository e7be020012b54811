use super::*;
use std::collections::HashMap;

#[derive(Default)]
struct Fake {
    vars: HashMap<&'static str, String>,
    files: HashMap<PathBuf, String>,
}

impl Environment for Fake {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
    fn read(&self, path: &Path) -> Option<String> {
        self.files.get(path).cloned()
    }
}

const KEY: &str = r#"{"type":"service_account","project_id":"key-project"}"#;
const USER: &str = r#"{"type":"authorized_user","quota_project_id":"quota-project"}"#;

fn fake(vars: &[(&'static str, &str)], files: &[(&str, &str)]) -> Fake {
    Fake {
        vars: vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
        files: files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect(),
    }
}

#[test]
fn nothing_anywhere_is_credentials_unavailable() {
    let env = fake(&[("HOME", "/home/u")], &[]);
    assert_eq!(find(&env), Err(JournalError::CredentialsUnavailable));
}

#[test]
fn an_explicit_file_must_exist_and_be_credentials() {
    let missing = fake(&[("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")], &[]);
    assert_eq!(find(&missing), Err(JournalError::CredentialsUnavailable));
    let garbage = fake(
        &[("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")],
        &[("/k.json", "not json")],
    );
    assert_eq!(find(&garbage), Err(JournalError::CredentialsUnavailable));
    // An explicit bad file is refused even on Google Cloud, as the auth library does.
    let on_run = fake(
        &[
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
            ("K_SERVICE", "svc"),
        ],
        &[],
    );
    assert_eq!(find(&on_run), Err(JournalError::CredentialsUnavailable));
    let good = fake(
        &[("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")],
        &[("/k.json", KEY)],
    );
    assert_eq!(find(&good), Ok(Source::File(PathBuf::from("/k.json"))));
}

#[test]
fn the_well_known_file_and_the_metadata_server_are_found() {
    let gcloud = fake(
        &[("HOME", "/home/u")],
        &[(
            "/home/u/.config/gcloud/application_default_credentials.json",
            USER,
        )],
    );
    assert!(matches!(find(&gcloud), Ok(Source::File(_))));
    let config = fake(
        &[("HOME", "/home/u"), ("CLOUDSDK_CONFIG", "/cfg")],
        &[("/cfg/application_default_credentials.json", USER)],
    );
    assert!(matches!(find(&config), Ok(Source::File(_))));
    for hint in METADATA_HINTS {
        let env = fake(&[(hint, "x")], &[]);
        assert_eq!(find(&env), Ok(Source::MetadataServer), "{hint}");
    }
    let vm = fake(&[], &[(PRODUCT_NAME, "Google Compute Engine\n")]);
    assert_eq!(find(&vm), Ok(Source::MetadataServer));
    let laptop = fake(&[], &[(PRODUCT_NAME, "ThinkPad\n")]);
    assert_eq!(find(&laptop), Err(JournalError::CredentialsUnavailable));
}

#[test]
fn the_project_is_found_in_the_documented_order() {
    let all = fake(
        &[
            ("GOOGLE_CLOUD_PROJECT", "env-one"),
            ("GCLOUD_PROJECT", "env-two"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
        ],
        &[("/k.json", KEY)],
    );
    let resolve =
        |env: &Fake, explicit, production| resolve_without_server(env, explicit, production);
    assert_eq!(resolve(&all, Some("flag"), true).as_deref(), Some("flag"));
    assert_eq!(resolve(&all, None, true).as_deref(), Some("env-one"));
    let two = fake(
        &[
            ("GCLOUD_PROJECT", "env-two"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
        ],
        &[("/k.json", KEY)],
    );
    assert_eq!(resolve(&two, None, true).as_deref(), Some("env-two"));
    let key_only = fake(
        &[("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")],
        &[("/k.json", KEY)],
    );
    assert_eq!(
        resolve(&key_only, None, true).as_deref(),
        Some("key-project")
    );
    // The credentials' project is a production fallback only.
    assert_eq!(resolve(&key_only, None, false), None);
    let user = fake(
        &[("GOOGLE_APPLICATION_CREDENTIALS", "/u.json")],
        &[("/u.json", USER)],
    );
    assert_eq!(resolve(&user, None, true).as_deref(), Some("quota-project"));
}

fn connect_error(kind: &str) -> firestore::errors::FirestoreError {
    use firestore::errors::{
        FirestoreError, FirestoreErrorPublicGenericDetails, FirestoreSystemError,
    };
    FirestoreError::SystemError(FirestoreSystemError::new(
        FirestoreErrorPublicGenericDetails::new(kind.to_owned()),
        "GCloud system error".to_owned(),
    ))
}

#[test]
fn connect_errors_are_classified_by_gcloud_error_kind() {
    let cases = [
        (
            "CredentialsBuild(Error { kind: Loading })",
            "credentials_unavailable",
        ),
        (
            "Credentials(CredentialsError { is_transient: false, message: None, source: None })",
            "credentials_unavailable",
        ),
        (
            "Credentials(CredentialsError { is_transient: true, message: None, source: None })",
            "unavailable",
        ),
        (
            "GrpcStatus(tonic::transport::Error(Transport))",
            "unavailable",
        ),
        ("Http(reqwest::Error { kind: Request })", "unavailable"),
        // A word alone decides nothing: only the kind's name does.
        ("InvalidApiUrl(\"no auth token here\")", "unavailable"),
    ];
    for (kind, code) in cases {
        assert_eq!(
            classify_connect_error(&connect_error(kind)).code(),
            code,
            "{kind}"
        );
    }
    let network = firestore::errors::FirestoreError::NetworkError(
        firestore::errors::FirestoreNetworkError::new(
            firestore::errors::FirestoreErrorPublicGenericDetails::new("credentials".into()),
            "credentials".into(),
        ),
    );
    assert_eq!(classify_connect_error(&network).code(), "unavailable");
}
