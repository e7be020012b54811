//! A client context (who sends a request) and every operation it can attempt, over
//! REST and gRPC, each classified as allowed, denied or unexpected.

use super::environment::{OWNER, TestEnvironment};
use super::outcome::{Outcome, RulesTestError, classify_grpc, classify_rest};
use super::token;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{
    ArrayValue, BatchGetDocumentsRequest, CommitRequest, Document, GetDocumentRequest, MapValue,
    Precondition, Value as FsValue, Write, precondition, write,
};
use gcloud_sdk::tonic;
use reqwest::Method;
use serde_json::{Value, json};

/// One write of a commit: set `fields` (a JSON object) on the document `path`,
/// optionally only if it does (`Some(true)`) or does not (`Some(false)`) exist.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitWrite {
    /// The document's path below the database root, e.g. `public/a`.
    pub path: String,
    /// The fields to set, as plain JSON.
    pub fields: Value,
    /// The existence precondition, if any.
    pub exists: Option<bool>,
}

/// Who sends a request: no session, a signed-in user's mock ID token, or the
/// rules-bypassing owner. Made by [`TestEnvironment`].
#[derive(Clone)]
pub struct Context {
    environment: TestEnvironment,
    authorization: Option<String>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token names its user: never print it.
        f.debug_struct("Context")
            .field("project", &self.environment.project_id())
            .field("authenticated", &self.authorization.is_some())
            .finish()
    }
}

/// The contexts an environment makes, and seeding through the rules-bypassing one.
impl TestEnvironment {
    /// A browser with no Firebase Auth session (`unauthenticatedContext`).
    pub fn unauthenticated_context(&self) -> Context {
        Context::new(self.clone(), None)
    }

    /// A browser signed in as `uid` whose ID token also carries `claims` (a JSON
    /// object, possibly empty; `authenticatedContext(uid, tokenOptions)`). The token
    /// is unsigned and built as [`token::mock_user_token`] describes; `claims` may
    /// override the defaults, for example `firebase.sign_in_provider`.
    pub fn authenticated_context(
        &self,
        uid: &str,
        claims: Value,
    ) -> Result<Context, RulesTestError> {
        let mut options = match claims {
            Value::Object(options) => options,
            Value::Null => serde_json::Map::new(),
            _ => {
                return Err(RulesTestError::InvalidToken(
                    "the claims are not a JSON object",
                ));
            }
        };
        options.insert("sub".to_owned(), Value::String(uid.to_owned()));
        let token = token::mock_user_token(self.project_id(), &Value::Object(options))?;
        Ok(Context::new(self.clone(), Some(format!("Bearer {token}"))))
    }

    /// Server code that bypasses the rules, for seeding and inspecting data
    /// (`withSecurityRulesDisabled`).
    pub fn rules_disabled_context(&self) -> Context {
        Context::new(self.clone(), Some(OWNER.to_owned()))
    }

    /// Writes `fields` (a JSON object) at the document `path`, rules bypassed.
    pub async fn seed(&self, path: &str, fields: &Value) -> Result<(), RulesTestError> {
        match self.rules_disabled_context().upsert(path, fields).await {
            Outcome::Allowed => Ok(()),
            got => Err(RulesTestError::Seed {
                path: path.to_owned(),
                got,
            }),
        }
    }
}

impl Context {
    pub(super) fn new(environment: TestEnvironment, authorization: Option<String>) -> Self {
        Self {
            environment,
            authorization,
        }
    }

    /// The environment this context talks to.
    pub fn environment(&self) -> &TestEnvironment {
        &self.environment
    }

    /// Sends one REST request (`url` absolute, `body` JSON) with this context's
    /// credentials and classifies the answer.
    pub async fn rest(&self, method: Method, url: String, body: Option<Value>) -> Outcome {
        let mut request = self.environment.http().request(method, url);
        if let Some(authorization) = &self.authorization {
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

    /// A gRPC request carrying this context's credentials.
    pub fn grpc_request<T>(&self, message: T) -> Result<tonic::Request<T>, Outcome> {
        let mut request = tonic::Request::new(message);
        if let Some(authorization) = &self.authorization {
            let value = authorization
                .parse()
                .map_err(|_| Outcome::Unexpected("the token is not valid metadata".into()))?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }

    /// REST get of the document `path`.
    pub async fn get(&self, path: &str) -> Outcome {
        let url = self.environment.url(&format!("/{path}"));
        self.rest(Method::GET, url, None).await
    }

    /// REST list of the collection `collection` (a path such as `a/b/c`).
    pub async fn list(&self, collection: &str) -> Outcome {
        let url = self.environment.url(&format!("/{collection}"));
        self.rest(Method::GET, url, None).await
    }

    /// REST structured query (`runQuery`) over `collection` where `field == value`.
    pub async fn query(&self, collection: &str, field: &str, value: &Value) -> Outcome {
        let (parent_url, id) = self.parent_url(collection);
        let query = json!({"structuredQuery": {
            "from": [{"collectionId": id}],
            "where": {"fieldFilter": {
                "field": {"fieldPath": field},
                "op": "EQUAL",
                "value": rest_value(value),
            }},
            "limit": 10,
        }});
        self.rest(Method::POST, format!("{parent_url}:runQuery"), Some(query))
            .await
    }

    /// REST collection-group query (`allDescendants`) over every collection named
    /// `collection_id`.
    pub async fn collection_group_query(&self, collection_id: &str) -> Outcome {
        let query = json!({"structuredQuery": {
            "from": [{"collectionId": collection_id, "allDescendants": true}],
        }});
        let url = self.environment.url(":runQuery");
        self.rest(Method::POST, url, Some(query)).await
    }

    /// REST aggregation count (`runAggregationQuery`) over `collection`.
    pub async fn count(&self, collection: &str) -> Outcome {
        let (parent_url, id) = self.parent_url(collection);
        let query = json!({"structuredAggregationQuery": {
            "structuredQuery": {"from": [{"collectionId": id}]},
            "aggregations": [{"alias": "n", "count": {}}],
        }});
        let url = format!("{parent_url}:runAggregationQuery");
        self.rest(Method::POST, url, Some(query)).await
    }

    /// REST `batchGet` of the documents `paths`.
    pub async fn batch_get(&self, paths: &[&str]) -> Outcome {
        let names: Vec<String> = paths.iter().map(|p| self.environment.name(p)).collect();
        let url = self.environment.url(":batchGet");
        self.rest(Method::POST, url, Some(json!({"documents": names})))
            .await
    }

    /// REST create (`POST` with `documentId`) of the document `path`.
    pub async fn create(&self, path: &str, fields: &Value) -> Outcome {
        let (collection, id) = path.rsplit_once('/').unwrap_or(("", path));
        let url = self
            .environment
            .url(&format!("/{collection}?documentId={id}"));
        self.rest(Method::POST, url, Some(rest_document(fields)))
            .await
    }

    /// REST update (`PATCH` with `currentDocument.exists=true`) of the document `path`.
    pub async fn update(&self, path: &str, fields: &Value) -> Outcome {
        let url = self
            .environment
            .url(&format!("/{path}?currentDocument.exists=true"));
        self.rest(Method::PATCH, url, Some(rest_document(fields)))
            .await
    }

    /// REST upsert (`PATCH` without precondition) of the document `path`.
    pub async fn upsert(&self, path: &str, fields: &Value) -> Outcome {
        let url = self.environment.url(&format!("/{path}"));
        self.rest(Method::PATCH, url, Some(rest_document(fields)))
            .await
    }

    /// REST delete of the document `path`.
    pub async fn delete(&self, path: &str) -> Outcome {
        let url = self.environment.url(&format!("/{path}"));
        self.rest(Method::DELETE, url, None).await
    }

    /// REST commit of `writes`, atomically.
    pub async fn commit(&self, writes: &[CommitWrite]) -> Outcome {
        let writes: Vec<Value> = writes
            .iter()
            .map(|w| {
                let mut write = json!({"update": {
                    "name": self.environment.name(&w.path),
                    "fields": rest_fields(&w.fields),
                }});
                if let Some(exists) = w.exists {
                    write["currentDocument"] = json!({"exists": exists});
                }
                write
            })
            .collect();
        let url = self.environment.url(":commit");
        self.rest(Method::POST, url, Some(json!({"writes": writes})))
            .await
    }

    /// gRPC `GetDocument` of the document `path`.
    pub async fn grpc_get(&self, path: &str) -> Outcome {
        let message = GetDocumentRequest {
            name: self.environment.name(path),
            ..Default::default()
        };
        match self.grpc_request(message) {
            Ok(request) => classify_grpc(self.environment.grpc().get_document(request).await),
            Err(outcome) => outcome,
        }
    }

    /// gRPC `BatchGetDocuments` of the documents `paths` (the stream's first error
    /// decides).
    pub async fn grpc_batch_get(&self, paths: &[&str]) -> Outcome {
        let message = BatchGetDocumentsRequest {
            database: self.database(),
            documents: paths.iter().map(|p| self.environment.name(p)).collect(),
            ..Default::default()
        };
        let request = match self.grpc_request(message) {
            Ok(request) => request,
            Err(outcome) => return outcome,
        };
        match self.environment.grpc().batch_get_documents(request).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(_)) => continue,
                        Ok(None) => return Outcome::Allowed,
                        Err(status) => return classify_grpc::<()>(Err(status)),
                    }
                }
            }
            Err(status) => classify_grpc::<()>(Err(status)),
        }
    }

    /// gRPC `Commit` of `writes`, atomically.
    pub async fn grpc_commit(&self, writes: &[CommitWrite]) -> Outcome {
        let message = CommitRequest {
            database: self.database(),
            writes: writes
                .iter()
                .map(|w| grpc_write(self.environment.name(&w.path), &w.fields, w.exists))
                .collect(),
            ..Default::default()
        };
        match self.grpc_request(message) {
            Ok(request) => classify_grpc(self.environment.grpc().commit(request).await),
            Err(outcome) => outcome,
        }
    }

    fn database(&self) -> String {
        format!(
            "projects/{}/databases/(default)",
            self.environment.project_id()
        )
    }

    /// The REST URL of `collection`'s parent document (or the root) and its id.
    fn parent_url(&self, collection: &str) -> (String, String) {
        match collection.rsplit_once('/') {
            Some((parent, id)) => (self.environment.url(&format!("/{parent}")), id.to_owned()),
            None => (self.environment.url(""), collection.to_owned()),
        }
    }
}

/// `{"fields": ...}` for a REST document body.
fn rest_document(fields: &Value) -> Value {
    json!({"fields": rest_fields(fields)})
}

/// A JSON object as Firestore REST `fields`.
fn rest_fields(fields: &Value) -> Value {
    match fields {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), rest_value(v)))
                .collect(),
        ),
        _ => json!({}),
    }
}

/// One JSON value as a Firestore REST value.
fn rest_value(value: &Value) -> Value {
    match value {
        Value::Null => json!({"nullValue": null}),
        Value::Bool(b) => json!({"booleanValue": b}),
        Value::Number(n) => match n.as_i64() {
            Some(i) => json!({"integerValue": i.to_string()}),
            None => json!({"doubleValue": n.as_f64()}),
        },
        Value::String(s) => json!({"stringValue": s}),
        Value::Array(items) => {
            json!({"arrayValue": {"values": items.iter().map(rest_value).collect::<Vec<_>>()}})
        }
        Value::Object(_) => json!({"mapValue": {"fields": rest_fields(value)}}),
    }
}

/// One JSON value as a Firestore gRPC value.
fn grpc_value(value: &Value) -> FsValue {
    let value_type = match value {
        Value::Null => ValueType::NullValue(0),
        Value::Bool(b) => ValueType::BooleanValue(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => ValueType::IntegerValue(i),
            None => ValueType::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => ValueType::StringValue(s.clone()),
        Value::Array(items) => ValueType::ArrayValue(ArrayValue {
            values: items.iter().map(grpc_value).collect(),
        }),
        Value::Object(map) => ValueType::MapValue(MapValue {
            fields: map
                .iter()
                .map(|(k, v)| (k.clone(), grpc_value(v)))
                .collect(),
        }),
    };
    FsValue {
        value_type: Some(value_type),
    }
}

/// A gRPC write setting `fields` on `name`, with an optional existence precondition.
fn grpc_write(name: String, fields: &Value, exists: Option<bool>) -> Write {
    let fields = match fields {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), grpc_value(v)))
            .collect(),
        _ => Default::default(),
    };
    Write {
        operation: Some(write::Operation::Update(Document {
            name,
            fields,
            ..Default::default()
        })),
        current_document: exists.map(|exists| Precondition {
            condition_type: Some(precondition::ConditionType::Exists(exists)),
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fields_become_typed_firestore_values() {
        let fields =
            json!({"s": "x", "n": 3, "d": 1.5, "b": true, "z": null, "a": [1], "m": {"k": "v"}});
        assert_eq!(
            rest_fields(&fields),
            json!({
                "s": {"stringValue": "x"},
                "n": {"integerValue": "3"},
                "d": {"doubleValue": 1.5},
                "b": {"booleanValue": true},
                "z": {"nullValue": null},
                "a": {"arrayValue": {"values": [{"integerValue": "1"}]}},
                "m": {"mapValue": {"fields": {"k": {"stringValue": "v"}}}},
            })
        );
        let write = grpc_write("n".into(), &fields, Some(true));
        let Some(write::Operation::Update(document)) = write.operation else {
            panic!("an update write")
        };
        assert_eq!(
            document.fields["n"].value_type,
            Some(ValueType::IntegerValue(3))
        );
        assert_eq!(document.fields.len(), 7);
        assert!(write.current_document.is_some());
    }
}
