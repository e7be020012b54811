//! Talking to one emulator project as a given caller, over REST and gRPC, and
//! classifying each answer as allowed, denied, or something else.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use command_journal::emulator::Emulator;
use gcloud_sdk::google::firestore::v1::firestore_client::FirestoreClient;
use gcloud_sdk::tonic::transport::Channel;
use gcloud_sdk::tonic::{self, Code};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Caller {
    /// Server code: `Bearer owner` bypasses the rules (seeding and inspection only).
    Owner,
    /// A browser with no Firebase Auth session: no `Authorization` header.
    Anonymous,
    /// A signed-in member: a mock ID token with a uid and nothing else.
    Member,
    /// A browser whose ID token carries the custom claim `admin: true`.
    Admin,
}

impl Caller {
    /// The browser contexts every protected path is tried from.
    pub const CLIENTS: [Caller; 3] = [Caller::Anonymous, Caller::Member, Caller::Admin];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Caller::Owner => "owner",
            Caller::Anonymous => "anonymous",
            Caller::Member => "member",
            Caller::Admin => "admin",
        }
    }

    /// The `Authorization` header value this caller sends to `project`, if any.
    pub fn authorization(self, project: &str) -> Option<String> {
        let token = match self {
            Caller::Owner => return Some("Bearer owner".to_owned()),
            Caller::Anonymous => return None,
            Caller::Member => mock_token(project, "member-1", json!({})),
            Caller::Admin => mock_token(project, "admin-1", json!({"admin": true})),
        };
        Some(format!("Bearer {token}"))
    }
}

/// An unsigned ID token exactly as `@firebase/rules-unit-testing` builds it for
/// `authenticatedContext(uid, claims)`: header `{"alg":"none","type":"JWT"}`, the
/// Firebase payload plus `claims`, base64url without padding, and an empty signature.
pub fn mock_token(project: &str, uid: &str, claims: Value) -> String {
    let iat = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs();
    let mut payload = json!({
        "iss": format!("https://securetoken.google.com/{project}"),
        "aud": project,
        "iat": iat,
        "exp": iat + 3600,
        "auth_time": iat,
        "sub": uid,
        "user_id": uid,
        "firebase": {"sign_in_provider": "custom", "identities": {}},
    });
    if let (Some(payload), Value::Object(claims)) = (payload.as_object_mut(), claims) {
        payload.extend(claims);
    }
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","type":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    format!("{header}.{payload}.")
}

/// What the rules made of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The request reached the data: it succeeded, or failed for a reason only the data
    /// can give (`NOT_FOUND`, `ALREADY_EXISTS`, `FAILED_PRECONDITION`). A 404 on a
    /// missing document is an allow.
    Allowed,
    /// `PERMISSION_DENIED`: the rules refused it.
    Denied,
    /// Anything else (a malformed request, a rejected token, a transport error): neither
    /// an allow nor a deny, and never counted as one.
    Unexpected(String),
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

/// The shared emulator (started once per test binary, killed at exit).
pub fn emulator() -> &'static Emulator {
    match Emulator::shared() {
        Ok(emulator) => emulator,
        Err(error) => panic!("the Firestore emulator is required for the rules tests: {error}"),
    }
}

/// One emulator project with its own ruleset.
#[derive(Debug, Clone)]
pub struct Project {
    /// The project id.
    pub id: String,
    host: String,
    http: reqwest::Client,
    grpc: FirestoreClient<Channel>,
}

impl Project {
    /// A fresh project on the shared emulator with `rules` loaded.
    pub async fn with_rules(rules: &str) -> Self {
        let emulator = emulator();
        let id = emulator.new_project_id();
        if let Err(error) = emulator.load_rules(&id, rules).await {
            panic!("the emulator refused the ruleset: {error}\n{rules}");
        }
        let channel = Channel::from_shared(format!("http://{}", emulator.host()))
            .expect("the emulator host is a valid URI")
            .connect_lazy();
        Self {
            id,
            host: emulator.host().to_owned(),
            http: reqwest::Client::new(),
            grpc: FirestoreClient::new(channel),
        }
    }

    /// The emulator's `HOST:PORT`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `projects/{p}/databases/(default)/documents`.
    pub fn root(&self) -> String {
        format!("projects/{}/databases/(default)/documents", self.id)
    }

    /// The full resource name of a document or collection `path`.
    pub fn name(&self, path: &str) -> String {
        format!("{}/{path}", self.root())
    }

    /// The REST URL of `suffix` under the documents root (`suffix` starts with `/`
    /// or `:`, or is empty).
    pub fn url(&self, suffix: &str) -> String {
        format!("http://{}/v1/{}{suffix}", self.host, self.root())
    }

    /// Sends one REST request as `caller` and classifies the answer.
    pub async fn rest(
        &self,
        caller: Caller,
        method: reqwest::Method,
        url: String,
        body: Option<Value>,
    ) -> Outcome {
        let mut request = self.http.request(method, url);
        if let Some(authorization) = caller.authorization(&self.id) {
            request = request.header(reqwest::header::AUTHORIZATION, authorization);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        match request.send().await {
            Ok(response) => {
                let http = response.status().as_u16();
                let body = response.text().await.unwrap_or_default();
                classify_rest(http, &body)
            }
            Err(error) => Outcome::Unexpected(format!("transport: {error}")),
        }
    }

    /// A gRPC request carrying `caller`'s authorization metadata.
    pub fn grpc_request<T>(&self, caller: Caller, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(authorization) = caller.authorization(&self.id) {
            let value = authorization
                .parse()
                .expect("a mock token is valid metadata");
            request.metadata_mut().insert("authorization", value);
        }
        request
    }

    /// The gRPC client (authorization goes on each request, see
    /// [`grpc_request`](Self::grpc_request)).
    pub fn grpc(&self) -> FirestoreClient<Channel> {
        self.grpc.clone()
    }

    /// Writes `fields` (plain JSON strings) at `path` as the owner.
    pub async fn seed(&self, path: &str, fields: &[(&str, &str)]) {
        let fields: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!({"stringValue": v})))
            .collect();
        let outcome = self
            .rest(
                Caller::Owner,
                reqwest::Method::PATCH,
                self.url(&format!("/{path}")),
                Some(json!({"fields": fields})),
            )
            .await;
        assert_eq!(outcome, Outcome::Allowed, "seeding {path} as the owner");
    }

    /// Every document of the project, read as the owner with a kindless
    /// all-descendants query: name to the whole document (fields, createTime,
    /// updateTime).
    pub async fn snapshot(&self) -> BTreeMap<String, Value> {
        let response = self
            .http
            .post(self.url(":runQuery"))
            .header(reqwest::header::AUTHORIZATION, "Bearer owner")
            .json(&json!({"structuredQuery": {"from": [{"allDescendants": true}]}}))
            .send()
            .await
            .expect("owner query reaches the emulator");
        assert!(
            response.status().is_success(),
            "owner snapshot query failed"
        );
        let items: Vec<Value> = response.json().await.expect("runQuery answers an array");
        items
            .into_iter()
            .filter_map(|mut item| item.get_mut("document").map(Value::take))
            .map(|document| {
                let name = document["name"].as_str().unwrap_or_default().to_owned();
                (name, document)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_tokens_are_unsigned_jwts_shaped_like_rules_unit_testing() {
        let token = mock_token("demo-p", "u1", json!({"admin": true}));
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        assert_eq!(parts[2], "", "the signature is empty");
        assert!(!token.contains('='), "base64url without padding");
        let header = URL_SAFE_NO_PAD
            .decode(parts[0])
            .expect("header is base64url");
        assert_eq!(header, br#"{"alg":"none","type":"JWT"}"#);
        let payload: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("base64url"))
                .expect("payload is JSON");
        assert_eq!(payload["iss"], "https://securetoken.google.com/demo-p");
        assert_eq!(payload["aud"], "demo-p");
        assert_eq!(payload["sub"], "u1");
        assert_eq!(payload["user_id"], "u1");
        assert_eq!(payload["admin"], true);
        assert_eq!(payload["firebase"]["sign_in_provider"], "custom");
        assert_eq!(
            payload["exp"].as_u64(),
            payload["iat"].as_u64().map(|iat| iat + 3600)
        );
        assert_eq!(payload["auth_time"], payload["iat"]);
    }

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
}
