//! A test environment: one ruleset loaded into its own project of an emulator (the
//! contexts that talk to it are made in `context.rs`).

use super::outcome::RulesTestError;
use crate::emulator::Emulator;
use gcloud_sdk::google::firestore::v1::firestore_client::FirestoreClient;
use gcloud_sdk::tonic::transport::Channel;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The `Authorization` header that makes the emulator bypass the rules.
pub(super) const OWNER: &str = "Bearer owner";

/// One ruleset loaded into a project of its own on a running emulator: the Rust
/// counterpart of `initializeTestEnvironment` of `@firebase/rules-unit-testing`.
///
/// Cheap to clone; every clone talks to the same project.
#[derive(Clone)]
pub struct TestEnvironment {
    project: String,
    host: String,
    rules: String,
    http: reqwest::Client,
    grpc: FirestoreClient<Channel>,
}

impl std::fmt::Debug for TestEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnvironment")
            .field("project", &self.project)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl TestEnvironment {
    /// Loads `rules` into a fresh project of the process-wide emulator
    /// ([`Emulator::shared`]: `FIRESTORE_EMULATOR_HOST`, or one started on first use).
    pub async fn new(rules: &str) -> Result<Self, RulesTestError> {
        let emulator = Emulator::shared()?;
        Self::on(emulator, rules).await
    }

    /// Loads `rules` into a fresh project of `emulator`. A ruleset that does not
    /// compile is [`RulesTestError::RulesRejected`] with the emulator's message.
    pub async fn on(emulator: &Emulator, rules: &str) -> Result<Self, RulesTestError> {
        Self::at_host(emulator.host(), &emulator.new_project_id(), rules).await
    }

    /// Loads `rules` into `project` of the emulator at `host` (`HOST:PORT`).
    pub async fn at_host(host: &str, project: &str, rules: &str) -> Result<Self, RulesTestError> {
        let channel = Channel::from_shared(format!("http://{host}"))
            .map_err(|_| RulesTestError::Http(format!("{host} is not HOST:PORT")))?
            .connect_lazy();
        let environment = Self {
            project: project.to_owned(),
            host: host.to_owned(),
            rules: rules.to_owned(),
            http: reqwest::Client::new(),
            grpc: FirestoreClient::new(channel),
        };
        environment.load_rules().await?;
        Ok(environment)
    }

    async fn load_rules(&self) -> Result<(), RulesTestError> {
        let body =
            json!({"rules": {"files": [{"name": "firestore.rules", "content": self.rules}]}});
        let url = format!(
            "http://{}/emulator/v1/projects/{}:securityRules",
            self.host, self.project
        );
        let response = self
            .http
            .put(url)
            .json(&body)
            .send()
            .await
            .map_err(|e| RulesTestError::Http(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(());
        }
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let error = parsed.as_ref().and_then(|body| body.get("error"));
        match error {
            Some(error) if error["status"] == "INVALID_ARGUMENT" => {
                let message = error["message"].as_str().unwrap_or(&text);
                Err(RulesTestError::RulesRejected(message.to_owned()))
            }
            _ => Err(RulesTestError::Http(format!(
                "loading the rules answered {status}: {text}"
            ))),
        }
    }

    /// The project id this environment loaded its ruleset into.
    pub fn project_id(&self) -> &str {
        &self.project
    }

    /// The emulator's `HOST:PORT`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The ruleset under test.
    pub fn rules(&self) -> &str {
        &self.rules
    }

    /// Every document of the project, read with the rules bypassed by a kindless
    /// all-descendants query: full resource name to the whole document (fields,
    /// `createTime`, `updateTime`).
    pub async fn documents(&self) -> Result<BTreeMap<String, Value>, RulesTestError> {
        let response = self
            .http
            .post(self.url(":runQuery"))
            .header(reqwest::header::AUTHORIZATION, OWNER)
            .json(&json!({"structuredQuery": {"from": [{"allDescendants": true}]}}))
            .send()
            .await
            .map_err(|e| RulesTestError::Http(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(RulesTestError::Http(format!(
                "the all-documents query answered {status}"
            )));
        }
        let items: Vec<Value> = response.json().await.map_err(|e| {
            RulesTestError::Http(format!("the all-documents answer is not JSON: {e}"))
        })?;
        Ok(items
            .into_iter()
            .filter_map(|mut item| item.get_mut("document").map(Value::take))
            .map(|document| {
                let name = document["name"].as_str().unwrap_or_default().to_owned();
                (name, document)
            })
            .collect())
    }

    /// Deletes every document of the project (`clearFirestore`).
    pub async fn clear_firestore(&self) -> Result<(), RulesTestError> {
        let url = format!(
            "http://{}/emulator/v1/projects/{}/databases/(default)/documents",
            self.host, self.project
        );
        let response = self
            .http
            .delete(url)
            .send()
            .await
            .map_err(|e| RulesTestError::Http(e.to_string()))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(RulesTestError::Http(format!(
                "clearing the project answered {}",
                response.status()
            )))
        }
    }

    /// The emulator's rule-coverage report of this project (`:ruleCoverage`), JSON.
    pub async fn coverage(&self) -> Result<Value, RulesTestError> {
        let url = format!(
            "http://{}/emulator/v1/projects/{}:ruleCoverage",
            self.host, self.project
        );
        self.get_text(url).await.and_then(|text| {
            serde_json::from_str(&text)
                .map_err(|e| RulesTestError::Http(format!("the coverage report is not JSON: {e}")))
        })
    }

    /// The emulator's rule-coverage report of this project as an HTML page.
    pub async fn coverage_html(&self) -> Result<String, RulesTestError> {
        let url = format!(
            "http://{}/emulator/v1/projects/{}:ruleCoverage.html",
            self.host, self.project
        );
        self.get_text(url).await
    }

    async fn get_text(&self, url: String) -> Result<String, RulesTestError> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| RulesTestError::Http(e.to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| RulesTestError::Http(e.to_string()))?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(RulesTestError::Http(format!("{status}: {text}")))
        }
    }

    /// `projects/{p}/databases/(default)/documents`.
    pub fn root(&self) -> String {
        format!("projects/{}/databases/(default)/documents", self.project)
    }

    /// The full resource name of the document or collection `path`.
    pub fn name(&self, path: &str) -> String {
        format!("{}/{path}", self.root())
    }

    /// The REST URL of `suffix` under the documents root (`suffix` starts with `/`
    /// or `:`, or is empty).
    pub fn url(&self, suffix: &str) -> String {
        format!("http://{}/v1/{}{suffix}", self.host, self.root())
    }

    pub(super) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(super) fn grpc(&self) -> FirestoreClient<Channel> {
        self.grpc.clone()
    }
}
