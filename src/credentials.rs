//! Application Default Credentials, as far as the journal needs them: whether any are
//! usable (decided from the environment and files, never by calling a server), and the
//! project they name.

use command_journal_core::error::{ConfigCause, JournalError};
use std::path::{Path, PathBuf};

/// Environment variables that show the process runs where Google's metadata server
/// answers (Compute Engine, Cloud Run, Cloud Functions, App Engine, GKE) or that point
/// at one explicitly.
const METADATA_HINTS: [&str; 7] = [
    "GCE_METADATA_HOST",
    "GCE_METADATA_IP",
    "K_SERVICE",
    "CLOUD_RUN_JOB",
    "FUNCTION_TARGET",
    "GAE_SERVICE",
    "KUBERNETES_SERVICE_HOST",
];

/// The machine's DMI product name, which is `Google Compute Engine` on Google's VMs.
const PRODUCT_NAME: &str = "/sys/class/dmi/id/product_name";

/// Where credentials would come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A credentials file (`GOOGLE_APPLICATION_CREDENTIALS` or gcloud's well-known one).
    File(PathBuf),
    /// The metadata server of the Google Cloud runtime.
    MetadataServer,
}

/// What the process can see: environment variables and file contents.
pub(crate) trait Environment {
    /// An environment variable, `None` when unset or empty.
    fn var(&self, name: &str) -> Option<String>;
    /// A file's text, `None` when unreadable.
    fn read(&self, path: &Path) -> Option<String>;
}

/// The real process environment.
pub(crate) struct Process;

impl Environment for Process {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// gcloud's well-known ADC file: `$CLOUDSDK_CONFIG/application_default_credentials.json`,
/// else `$HOME/.config/gcloud/application_default_credentials.json`.
fn well_known(env: &impl Environment) -> Option<PathBuf> {
    let dir = match env.var("CLOUDSDK_CONFIG") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env.var("HOME")?).join(".config/gcloud"),
    };
    Some(dir.join("application_default_credentials.json"))
}

fn is_credentials_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .is_some()
}

/// Where Application Default Credentials would come from, or
/// `credentials_unavailable` when nowhere: a `GOOGLE_APPLICATION_CREDENTIALS` that
/// does not name a readable credentials file is refused outright, as the auth library
/// would refuse it.
pub(crate) fn find(env: &impl Environment) -> Result<Source, JournalError> {
    if let Some(path) = env.var("GOOGLE_APPLICATION_CREDENTIALS") {
        let path = PathBuf::from(path);
        return match env.read(&path) {
            Some(text) if is_credentials_json(&text) => Ok(Source::File(path)),
            _ => Err(JournalError::CredentialsUnavailable),
        };
    }
    if let Some(path) = well_known(env)
        && env.read(&path).is_some_and(|t| is_credentials_json(&t))
    {
        return Ok(Source::File(path));
    }
    let on_google = METADATA_HINTS.iter().any(|name| env.var(name).is_some())
        || env
            .read(Path::new(PRODUCT_NAME))
            .is_some_and(|name| name.trim_start().starts_with("Google"));
    if on_google {
        Ok(Source::MetadataServer)
    } else {
        Err(JournalError::CredentialsUnavailable)
    }
}

/// `Ok` when this process has Application Default Credentials to try.
pub(crate) fn check_available() -> Result<(), JournalError> {
    find(&Process).map(|_| ())
}

/// The error for a failed production connect, after [`check_available`] passed.
///
/// The `firestore` crate wraps gcloud-sdk's connect errors as a system error that
/// keeps only the error kind's name: `CredentialsBuild` (no usable Application
/// Default Credentials) is `credentials_unavailable`, and so is `Credentials` (a
/// token that could not be minted) unless gcloud-sdk marked it transient, which is
/// `unavailable`. Everything else (transport, URL) is `unavailable`.
pub(crate) fn classify_connect_error(error: &firestore::errors::FirestoreError) -> JournalError {
    let firestore::errors::FirestoreError::SystemError(system) = error else {
        return JournalError::unreachable();
    };
    let kind = system.public.code.as_str();
    let transient = kind.contains("is_transient: true");
    if kind.starts_with("CredentialsBuild(") || (kind.starts_with("Credentials(") && !transient) {
        JournalError::CredentialsUnavailable
    } else {
        JournalError::unreachable()
    }
}

/// The project the ADC file names: its `project_id`, else its `quota_project_id`.
fn file_project(env: &impl Environment, path: &Path) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(&env.read(path)?).ok()?;
    ["project_id", "quota_project_id"]
        .iter()
        .find_map(|key| value.get(*key)?.as_str().map(str::to_owned))
        .filter(|p| !p.is_empty())
}

/// The project id as Google's tooling finds it: `explicit` (the `--project` option),
/// then `GOOGLE_CLOUD_PROJECT`, then `GCLOUD_PROJECT` (set by `firebase
/// emulators:exec`), then — for production only — the project of the Application
/// Default Credentials (the file's, or the metadata server's on Google Cloud). None
/// found is `not_configured` (`project_unknown`).
pub async fn resolve_project(
    explicit: Option<&str>,
    production: bool,
) -> Result<String, JournalError> {
    if let Some(project) = resolve_without_server(&Process, explicit, production) {
        return Ok(project);
    }
    if production
        && find(&Process) == Ok(Source::MetadataServer)
        && let Some(project) = gcloud_sdk::GoogleEnvironment::detect_google_project_id().await
    {
        return Ok(project);
    }
    Err(JournalError::NotConfigured {
        cause: ConfigCause::ProjectUnknown,
        grpc: None,
    })
}

/// Every source of [`resolve_project`] but the metadata server.
pub(crate) fn resolve_without_server(
    env: &impl Environment,
    explicit: Option<&str>,
    production: bool,
) -> Option<String> {
    if let Some(project) = explicit.filter(|p| !p.trim().is_empty()) {
        return Some(project.to_owned());
    }
    for name in ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"] {
        if let Some(project) = env.var(name) {
            return Some(project);
        }
    }
    if !production {
        return None;
    }
    match find(env) {
        Ok(Source::File(path)) => file_project(env, &path),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
