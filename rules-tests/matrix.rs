//! The access matrix: every browser context × every protected path × every operation.

use crate::client::{Caller, Outcome, Project, classify_grpc};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{
    CommitRequest, Document, GetDocumentRequest, Precondition, Value as FsValue, Write,
    precondition, write,
};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// The command key every seeded journal document is filed under.
pub const SEEDED_KEY: &str = "5eed0c0ffee0000000000000000000000000000000000000000000000000cafe";

/// A protected document shape; `{k}` is a command key or document id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    /// The path, with `{k}` where the key goes.
    pub template: &'static str,
    /// Collection ids to run collection-group queries over.
    pub groups: &'static [&'static str],
}

impl Target {
    /// The document with key `key`.
    pub fn path(self, key: &str) -> String {
        self.template.replace("{k}", key)
    }
}

/// Every protected path the matrix covers.
pub const TARGETS: [Target; 6] = [
    Target {
        template: "checkoutRequests/{k}",
        groups: &["checkoutRequests"],
    },
    Target {
        template: "checkoutRequests/{k}/lifecycle/current",
        groups: &["lifecycle", "current"],
    },
    Target {
        template: "checkoutRequests/{k}/lifecycle/current/deeper/x",
        groups: &["deeper"],
    },
    Target {
        template: "auditEvents/{k}",
        groups: &["auditEvents"],
    },
    Target {
        template: "ledgerReservations/{k}",
        groups: &["ledgerReservations"],
    },
    Target {
        template: "ledgerTransactions/{k}",
        groups: &["ledgerTransactions"],
    },
];

/// One operation a browser could attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// REST get of the document.
    Get,
    /// REST list of its collection.
    List,
    /// REST structured query (`runQuery`) over its collection, with a filter.
    Query,
    /// REST collection-group query (`allDescendants`) over the named collection id.
    GroupQuery(&'static str),
    /// REST aggregation count (`runAggregationQuery`) over its collection.
    Count,
    /// REST `batchGet` of the document.
    BatchGet,
    /// REST create (`POST` with `documentId`) of an absent document of the same shape.
    Create,
    /// REST update (`PATCH` with `currentDocument.exists=true`) of the document.
    Update,
    /// REST upsert (`PATCH` without precondition) of the document.
    Upsert,
    /// REST delete of the document.
    Delete,
    /// REST commit: an unprotected write (`public/{id}`) first, then the protected one.
    MixedCommit,
    /// gRPC `GetDocument`.
    GrpcGet,
    /// gRPC `Commit` of the same two writes as [`Op::MixedCommit`].
    GrpcMixedCommit,
}

impl Op {
    /// Operations that only read.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Op::Get
                | Op::List
                | Op::Query
                | Op::GroupQuery(_)
                | Op::Count
                | Op::BatchGet
                | Op::GrpcGet
        )
    }

    /// Every operation tried on `target`.
    pub fn all_for(target: Target) -> Vec<Op> {
        let mut ops = vec![Op::Get, Op::List, Op::Query];
        ops.extend(target.groups.iter().map(|group| Op::GroupQuery(group)));
        ops.extend([
            Op::Count,
            Op::BatchGet,
            Op::Create,
            Op::Update,
            Op::Upsert,
            Op::Delete,
            Op::MixedCommit,
            Op::GrpcGet,
            Op::GrpcMixedCommit,
        ]);
        ops
    }

    /// Runs the operation as `caller` against the existing document `seeded` (reads,
    /// updates, deletes) or the absent document `fresh` (creates; its key also names
    /// the `public/` document of a mixed commit).
    pub async fn run(
        self,
        project: &Project,
        caller: Caller,
        seeded: &str,
        fresh: &str,
    ) -> Outcome {
        let (parent, collection) = parent_and_collection(seeded);
        let parent_url = project.url(&parent.map(|p| format!("/{p}")).unwrap_or_default());
        let forged = json!({"fields": {"state": {"stringValue": "forged"}}});
        let public = format!("public/{}", fresh.replace('/', "_"));
        match self {
            Op::Get => {
                let url = project.url(&format!("/{seeded}"));
                project.rest(caller, Method::GET, url, None).await
            }
            Op::List => {
                let url = format!("{parent_url}/{collection}");
                project.rest(caller, Method::GET, url, None).await
            }
            Op::Query => {
                let query = json!({"structuredQuery": {
                    "from": [{"collectionId": collection}],
                    "where": {"fieldFilter": {
                        "field": {"fieldPath": "state"},
                        "op": "EQUAL",
                        "value": {"stringValue": "seeded"},
                    }},
                    "limit": 10,
                }});
                let url = format!("{parent_url}:runQuery");
                project.rest(caller, Method::POST, url, Some(query)).await
            }
            Op::GroupQuery(group) => {
                let query = json!({"structuredQuery": {
                    "from": [{"collectionId": group, "allDescendants": true}],
                }});
                let url = project.url(":runQuery");
                project.rest(caller, Method::POST, url, Some(query)).await
            }
            Op::Count => {
                let query = json!({"structuredAggregationQuery": {
                    "structuredQuery": {"from": [{"collectionId": collection}]},
                    "aggregations": [{"alias": "n", "count": {}}],
                }});
                let url = format!("{parent_url}:runAggregationQuery");
                project.rest(caller, Method::POST, url, Some(query)).await
            }
            Op::BatchGet => {
                let body = json!({"documents": [project.name(seeded)]});
                let url = project.url(":batchGet");
                project.rest(caller, Method::POST, url, Some(body)).await
            }
            Op::Create => {
                let (fresh_parent, fresh_collection) = parent_and_collection(fresh);
                let id = fresh.rsplit('/').next().unwrap_or(fresh);
                let parent = fresh_parent.map(|p| format!("/{p}")).unwrap_or_default();
                let url = project.url(&format!("{parent}/{fresh_collection}?documentId={id}"));
                project.rest(caller, Method::POST, url, Some(forged)).await
            }
            Op::Update => {
                let url = project.url(&format!("/{seeded}?currentDocument.exists=true"));
                project.rest(caller, Method::PATCH, url, Some(forged)).await
            }
            Op::Upsert => {
                let url = project.url(&format!("/{seeded}"));
                project.rest(caller, Method::PATCH, url, Some(forged)).await
            }
            Op::Delete => {
                let url = project.url(&format!("/{seeded}"));
                project.rest(caller, Method::DELETE, url, None).await
            }
            Op::MixedCommit => {
                let body = json!({"writes": [
                    {"update": {"name": project.name(&public), "fields": forged["fields"]}},
                    {
                        "update": {"name": project.name(seeded), "fields": forged["fields"]},
                        "currentDocument": {"exists": true},
                    },
                ]});
                let url = project.url(":commit");
                project.rest(caller, Method::POST, url, Some(body)).await
            }
            Op::GrpcGet => {
                let message = GetDocumentRequest {
                    name: project.name(seeded),
                    ..Default::default()
                };
                let request = project.grpc_request(caller, message);
                classify_grpc(project.grpc().get_document(request).await)
            }
            Op::GrpcMixedCommit => {
                let message = CommitRequest {
                    database: format!("projects/{}/databases/(default)", project.id),
                    writes: vec![
                        forged_write(project.name(&public), None),
                        forged_write(project.name(seeded), Some(true)),
                    ],
                    ..Default::default()
                };
                let request = project.grpc_request(caller, message);
                classify_grpc(project.grpc().commit(request).await)
            }
        }
    }
}

/// A gRPC write setting `state: "forged"` on `name`, with an optional existence
/// precondition.
fn forged_write(name: String, exists: Option<bool>) -> Write {
    let forged = FsValue {
        value_type: Some(ValueType::StringValue("forged".to_owned())),
    };
    Write {
        operation: Some(write::Operation::Update(Document {
            name,
            fields: [("state".to_owned(), forged)].into(),
            ..Default::default()
        })),
        current_document: exists.map(|exists| Precondition {
            condition_type: Some(precondition::ConditionType::Exists(exists)),
        }),
        ..Default::default()
    }
}

/// `a/b/c/d` → (`Some("a/b")`, `"c"`); `a/b` → (`None`, `"a"`).
fn parent_and_collection(document: &str) -> (Option<&str>, &str) {
    let collection_path = document.rsplit_once('/').map_or("", |(c, _)| c);
    match collection_path.rsplit_once('/') {
        Some((parent, collection)) => (Some(parent), collection),
        None => (None, collection_path),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::GroupQuery(group) => write!(f, "collection-group query over {group}"),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// One attempt: who, on what, how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cell {
    pub caller: Caller,
    pub target: Target,
    pub op: Op,
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.target.path("{k}");
        write!(f, "{} {} on {path}", self.caller.name(), self.op)
    }
}

/// Every cell of the matrix, in a stable order.
pub fn cells() -> Vec<Cell> {
    Caller::CLIENTS
        .into_iter()
        .flat_map(|caller| {
            TARGETS.into_iter().flat_map(move |target| {
                Op::all_for(target)
                    .into_iter()
                    .map(move |op| Cell { caller, target, op })
            })
        })
        .collect()
}

/// Seeds every protected document (as the owner) in `project`.
pub async fn seed(project: &Project) {
    for target in TARGETS {
        let path = target.path(SEEDED_KEY);
        project
            .seed(&path, &[("state", "seeded"), ("path", &path)])
            .await;
    }
}

/// What the matrix saw.
#[derive(Debug)]
pub struct Report {
    /// Every cell's outcome.
    pub outcomes: BTreeMap<Cell, Outcome>,
    /// Documents whose fields, createTime or updateTime differ after the run, or that
    /// appeared or vanished (read as the owner before and after).
    pub changed: BTreeSet<String>,
}

impl Report {
    /// How many operations answered `PERMISSION_DENIED`.
    pub fn denied(&self) -> usize {
        self.outcomes
            .values()
            .filter(|o| **o == Outcome::Denied)
            .count()
    }

    /// The cells the rules let through.
    pub fn leaks(&self) -> Vec<Cell> {
        self.outcomes
            .iter()
            .filter(|(_, o)| **o == Outcome::Allowed)
            .map(|(cell, _)| *cell)
            .collect()
    }

    /// Every cell that did not answer `PERMISSION_DENIED`, with what it answered.
    pub fn not_denied(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, o)| **o != Outcome::Denied)
            .map(|(cell, outcome)| format!("{cell}: {outcome:?}"))
            .collect()
    }

    /// Every cell whose answer was neither an allow nor a deny.
    pub fn unexpected(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Unexpected(_)))
            .map(|(cell, outcome)| format!("{cell}: {outcome:?}"))
            .collect()
    }
}

/// How many requests the matrix keeps in flight (the machine has 2 cores).
const IN_FLIGHT: usize = 12;

/// Seeds `project`, runs every cell against it concurrently, and compares the whole
/// database before and after (every document's fields, createTime and updateTime, and
/// no new document: no create and no half of a mixed commit landed).
pub async fn run(project: &Project) -> Report {
    seed(project).await;
    let before = project.snapshot().await;
    assert_eq!(
        before.len(),
        TARGETS.len(),
        "every protected path is seeded"
    );

    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for (index, cell) in cells().into_iter().enumerate() {
        let project = project.clone();
        let limit = Arc::clone(&limit);
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await.expect("semaphore is open");
            let seeded = cell.target.path(SEEDED_KEY);
            let fresh = cell.target.path(&format!("fresh{index:04}"));
            let outcome = cell.op.run(&project, cell.caller, &seeded, &fresh).await;
            (cell, outcome)
        });
    }
    let mut outcomes = BTreeMap::new();
    while let Some(joined) = tasks.join_next().await {
        let (cell, outcome) = joined.expect("a matrix task panicked");
        outcomes.insert(cell, outcome);
    }

    let after = project.snapshot().await;
    let changed = changed_documents(&before, &after);
    Report { outcomes, changed }
}

/// The documents that differ between two snapshots (changed, deleted or created).
pub fn changed_documents(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
) -> BTreeSet<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .cloned()
        .collect()
}
