//! One constructor for the `FirestoreDb` and the raw gcloud-sdk Firestore client of a
//! project's database, against the emulator or production.

use command_journal_core::error::JournalError;
use firestore::{FirestoreDb, FirestoreDbOptions};
use gcloud_sdk::google::firestore::v1::firestore_client::FirestoreClient;
use gcloud_sdk::google_cloud_auth::credentials::{
    CacheableResource, Credentials, CredentialsProvider, EntityTag,
};
use gcloud_sdk::google_cloud_auth::errors::CredentialsError;
use gcloud_sdk::tonic::codegen::http::Extensions;
use gcloud_sdk::tonic::codegen::http::header::{AUTHORIZATION, HeaderValue};
use gcloud_sdk::{GoogleAuthMiddleware, HeaderMap};

/// The raw gRPC client the transaction shell uses.
pub type RawClient = FirestoreClient<GoogleAuthMiddleware>;

/// Where a connection goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The emulator at `HOST:PORT`, authenticated as the owner (bypasses rules).
    Emulator(String),
    /// Cloud Firestore with Application Default Credentials.
    Production,
}

impl Target {
    /// True for the emulator.
    pub fn is_emulator(&self) -> bool {
        matches!(self, Self::Emulator(_))
    }
}

/// A project's `FirestoreDb` (queries, scans) and raw client (transactions).
#[derive(Clone)]
pub struct Connection {
    db: FirestoreDb,
    raw: RawClient,
    project: String,
    database: String,
    target: Target,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("project", &self.project)
            .field("database", &self.database)
            .field("target", &self.target)
            .finish()
    }
}

fn valid_project_id(project: &str) -> bool {
    (1..=100).contains(&project.len())
        && project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

pub use crate::credentials::resolve_project;

/// The id of a project's default database.
pub const DEFAULT_DATABASE: &str = "(default)";

/// `(default)`, or a named database id: 4–63 characters of lowercase letters, digits
/// and hyphens, starting with a letter and not ending with a hyphen.
fn valid_database_id(database: &str) -> bool {
    if database == DEFAULT_DATABASE {
        return true;
    }
    let bytes = database.as_bytes();
    (4..=63).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1] != b'-'
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

impl Connection {
    /// Connects to the default database of `project` on `target`; see
    /// [`connect_database`](Self::connect_database).
    pub async fn connect(project: &str, target: Target) -> Result<Self, JournalError> {
        Self::connect_database(project, DEFAULT_DATABASE, target).await
    }

    /// Checks a project id and a database id as [`connect_database`](Self::connect_database)
    /// does, with no network call: `invalid_input` on `project` or `database`.
    pub fn check_ids(project: &str, database: &str) -> Result<(), JournalError> {
        if !valid_project_id(project) {
            return Err(JournalError::invalid("project"));
        }
        if !valid_database_id(database) {
            return Err(JournalError::invalid("database"));
        }
        Ok(())
    }

    /// Connects to database `database` of `project` on `target`. A malformed project
    /// or database id is `invalid_input` (`project`, `database`); production without
    /// usable Application Default Credentials is `credentials_unavailable`, decided
    /// without any network call; an emulator that cannot be reached is `unavailable`.
    pub async fn connect_database(
        project: &str,
        database: &str,
        target: Target,
    ) -> Result<Self, JournalError> {
        Self::check_ids(project, database)?;
        let options =
            FirestoreDbOptions::new(project.to_owned()).with_database_id(database.to_owned());
        let db = match &target {
            Target::Emulator(host) => {
                let options = options.with_firebase_api_url(format!("http://{host}"));
                FirestoreDb::with_options_auth(options, Credentials::from(OwnerToken::default()))
                    .await
                    .map_err(|error| {
                        tracing::warn!(%error, "could not connect to the emulator");
                        JournalError::connect_failed()
                    })?
            }
            Target::Production => {
                crate::credentials::check_available()?;
                FirestoreDb::with_options(options).await.map_err(|error| {
                    tracing::warn!(%error, "could not connect to firestore");
                    crate::credentials::classify_connect_error(&error)
                })?
            }
        };
        let raw = db.client().get();
        Ok(Self {
            db,
            raw,
            project: project.to_owned(),
            database: database.to_owned(),
            target,
        })
    }

    /// The `firestore` crate handle on this connection's channel, for queries and
    /// scans of your own (the verifier streams through it). Reads only see; a write
    /// through it bypasses every check of the journal, and `verify` reports what it
    /// breaks.
    pub fn db(&self) -> &FirestoreDb {
        &self.db
    }

    /// A clone of the raw Firestore gRPC client on this connection's channel (cheap:
    /// it shares the channel), for calls the journal does not make (tests that write
    /// documents directly, tooling). A write through it bypasses every check of the
    /// journal, and `verify` reports what it breaks.
    pub fn raw(&self) -> RawClient {
        self.raw.clone()
    }

    /// The project id.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// Where this connection goes.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The database id (`(default)` unless another was given).
    pub fn database(&self) -> &str {
        &self.database
    }

    /// `projects/{p}/databases/{d}`.
    pub fn database_path(&self) -> String {
        format!("projects/{}/databases/{}", self.project, self.database)
    }

    /// `projects/{p}/databases/{d}/documents`.
    pub fn documents_path(&self) -> String {
        format!("{}/documents", self.database_path())
    }
}

/// The emulator's owner token: requests bypass security rules, as server code using
/// IAM does in production.
#[derive(Debug, Default)]
struct OwnerToken {
    tag: EntityTag,
}

impl CredentialsProvider for OwnerToken {
    async fn headers(
        &self,
        extensions: Extensions,
    ) -> Result<CacheableResource<HeaderMap>, CredentialsError> {
        if extensions.get::<EntityTag>() == Some(&self.tag) {
            return Ok(CacheableResource::NotModified);
        }
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer owner"));
        Ok(CacheableResource::New {
            entity_tag: self.tag.clone(),
            data: headers,
        })
    }

    async fn universe_domain(&self) -> Option<String> {
        None
    }
}
