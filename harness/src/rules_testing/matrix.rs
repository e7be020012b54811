//! The journal's denial matrix: every client context × every journal path × every
//! operation, against one test environment, with the database compared before and
//! after.

use super::context::{CommitWrite, Context};
use super::environment::TestEnvironment;
use super::outcome::Outcome;
use super::outcome::RulesTestError;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// The command key every seeded journal document is filed under.
pub const SEEDED_KEY: &str = "5eed0c0ffee0000000000000000000000000000000000000000000000000cafe";

/// How many requests the matrix keeps in flight.
const IN_FLIGHT: usize = 12;

/// A journal document shape; `{k}` is a command key or document id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// Every journal path the matrix covers (the send layer's, then the result
/// envelope's, then the recovery checkpoints', the provider keys', the correction
/// bounds' and the evidence checkpoints', last).
pub const TARGETS: [Target; 15] = [
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
    Target {
        template: "checkoutRequests/{k}/providerSends/plan",
        groups: &["providerSends"],
    },
    Target {
        template: "checkoutRequests/{k}/providerSends/current",
        groups: &["providerSends", "current"],
    },
    Target {
        template: "auditEvents/provider_send_{k}_0000000001",
        groups: &["auditEvents"],
    },
    Target {
        template: "checkoutRequests/{k}/results/current",
        groups: &["results", "current"],
    },
    Target {
        template: "recoveryCheckpoints/{k}",
        groups: &["recoveryCheckpoints"],
    },
    Target {
        template: "providerKeys/{k}",
        groups: &["providerKeys"],
    },
    Target {
        template: "ledgerTransactions/{k}/corrections/current",
        groups: &["corrections", "current"],
    },
    Target {
        template: "evidenceCheckpoints/{k}",
        groups: &["evidenceCheckpoints"],
    },
    Target {
        template: "checkoutRequests/{k}/leaseReleases/0000000001",
        groups: &["leaseReleases"],
    },
];

/// The client contexts real applications write rules for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientContext {
    /// A browser with no Firebase Auth session: no `Authorization` header.
    Unauthenticated,
    /// A user of Firebase anonymous sign-in (`sign_in_provider: "anonymous"`).
    Anonymous,
    /// A signed-in user: a uid and the library's default claims.
    SignedIn,
    /// A signed-in user with a verified email, signed in with a password.
    VerifiedEmail,
    /// A signed-in user holding the custom claim `admin: true`.
    Admin,
}

impl ClientContext {
    /// Every context, in report order.
    pub const ALL: [ClientContext; 5] = [
        ClientContext::Unauthenticated,
        ClientContext::Anonymous,
        ClientContext::SignedIn,
        ClientContext::VerifiedEmail,
        ClientContext::Admin,
    ];

    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            ClientContext::Unauthenticated => "unauthenticated",
            ClientContext::Anonymous => "anonymous",
            ClientContext::SignedIn => "signed-in",
            ClientContext::VerifiedEmail => "verified-email",
            ClientContext::Admin => "admin",
        }
    }

    /// True for every context that carries an ID token.
    pub fn is_authenticated(self) -> bool {
        self != ClientContext::Unauthenticated
    }

    /// This context in `environment`.
    pub fn context(self, environment: &TestEnvironment) -> Result<Context, RulesTestError> {
        let (uid, claims) = match self {
            ClientContext::Unauthenticated => return Ok(environment.unauthenticated_context()),
            ClientContext::Anonymous => (
                "anonymous-user",
                json!({"firebase": {"sign_in_provider": "anonymous", "identities": {}}}),
            ),
            ClientContext::SignedIn => ("signed-in-user", json!({})),
            ClientContext::VerifiedEmail => (
                "verified-user",
                json!({
                    "email": "verified-user@example.com",
                    "email_verified": true,
                    "firebase": {
                        "sign_in_provider": "password",
                        "identities": {"email": ["verified-user@example.com"]},
                    },
                }),
            ),
            ClientContext::Admin => ("admin-user", json!({"admin": true})),
        };
        environment.authenticated_context(uid, claims)
    }
}

/// One operation a client could attempt on a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
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
    /// gRPC `Commit` of the same two writes as [`Operation::MixedCommit`].
    GrpcMixedCommit,
}

impl Operation {
    /// Operations that only read.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Operation::Get
                | Operation::List
                | Operation::Query
                | Operation::GroupQuery(_)
                | Operation::Count
                | Operation::BatchGet
                | Operation::GrpcGet
        )
    }

    /// `rest` or `grpc`.
    pub fn transport(self) -> &'static str {
        match self {
            Operation::GrpcGet | Operation::GrpcMixedCommit => "grpc",
            _ => "rest",
        }
    }

    /// Every operation tried on `target`.
    pub fn all_for(target: Target) -> Vec<Operation> {
        let mut ops = vec![Operation::Get, Operation::List, Operation::Query];
        ops.extend(
            target
                .groups
                .iter()
                .map(|group| Operation::GroupQuery(group)),
        );
        ops.extend([
            Operation::Count,
            Operation::BatchGet,
            Operation::Create,
            Operation::Update,
            Operation::Upsert,
            Operation::Delete,
            Operation::MixedCommit,
            Operation::GrpcGet,
            Operation::GrpcMixedCommit,
        ]);
        ops
    }

    /// Runs the operation in `context` against the existing document `seeded` (reads,
    /// updates, deletes) or the absent document `fresh` (creates; its path also names
    /// the `public/` document of a mixed commit).
    pub async fn run(self, context: &Context, seeded: &str, fresh: &str) -> Outcome {
        let collection = seeded.rsplit_once('/').map_or("", |(c, _)| c);
        let forged = json!({"state": "forged"});
        let mixed = || {
            [
                CommitWrite {
                    path: format!("public/{}", fresh.replace('/', "_")),
                    fields: forged.clone(),
                    exists: None,
                },
                CommitWrite {
                    path: seeded.to_owned(),
                    fields: forged.clone(),
                    exists: Some(true),
                },
            ]
        };
        match self {
            Operation::Get => context.get(seeded).await,
            Operation::List => context.list(collection).await,
            Operation::Query => context.query(collection, "state", &json!("seeded")).await,
            Operation::GroupQuery(group) => context.collection_group_query(group).await,
            Operation::Count => context.count(collection).await,
            Operation::BatchGet => context.batch_get(&[seeded]).await,
            Operation::Create => context.create(fresh, &forged).await,
            Operation::Update => context.update(seeded, &forged).await,
            Operation::Upsert => context.upsert(seeded, &forged).await,
            Operation::Delete => context.delete(seeded).await,
            Operation::MixedCommit => context.commit(&mixed()).await,
            Operation::GrpcGet => context.grpc_get(seeded).await,
            Operation::GrpcMixedCommit => context.grpc_commit(&mixed()).await,
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Get => "get",
            Operation::List => "list",
            Operation::Query => "query",
            Operation::GroupQuery(group) => return write!(f, "collection-group query {group}"),
            Operation::Count => "count",
            Operation::BatchGet => "batch get",
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Upsert => "upsert",
            Operation::Delete => "delete",
            Operation::MixedCommit => "mixed commit",
            Operation::GrpcGet => "gRPC get",
            Operation::GrpcMixedCommit => "gRPC mixed commit",
        })
    }
}

/// One attempt: who, on what, how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    /// Who.
    pub context: ClientContext,
    /// On what.
    pub target: Target,
    /// How.
    pub operation: Operation,
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} on {}",
            self.context.name(),
            self.operation,
            self.target.template
        )
    }
}

/// Every cell of the matrix, in a stable order.
pub fn cells() -> Vec<Cell> {
    ClientContext::ALL
        .into_iter()
        .flat_map(|context| {
            TARGETS.into_iter().flat_map(move |target| {
                Operation::all_for(target)
                    .into_iter()
                    .map(move |operation| Cell {
                        context,
                        target,
                        operation,
                    })
            })
        })
        .collect()
}

/// One row of a report, as JSON.
#[derive(Debug, Serialize)]
struct Row<'a> {
    context: &'static str,
    path: &'static str,
    operation: String,
    transport: &'static str,
    #[serde(flatten)]
    outcome: &'a Outcome,
}

/// What the matrix saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixReport {
    /// Every cell's outcome.
    pub outcomes: BTreeMap<Cell, Outcome>,
    /// Documents (paths below the database root) whose fields, `createTime` or
    /// `updateTime` differ after the run, or that appeared or vanished.
    pub changed: BTreeSet<String>,
}

impl MatrixReport {
    /// How many operations answered `PERMISSION_DENIED`.
    pub fn denied(&self) -> usize {
        self.outcomes
            .values()
            .filter(|o| **o == Outcome::Denied)
            .count()
    }

    /// The cells the rules let through.
    pub fn leaks(&self) -> Vec<Cell> {
        self.cells_where(|o| *o == Outcome::Allowed)
    }

    /// The cells whose answer was neither an allow nor a deny.
    pub fn unexpected(&self) -> Vec<Cell> {
        self.cells_where(|o| matches!(o, Outcome::Unexpected(_)))
    }

    /// Every cell that did not answer `PERMISSION_DENIED`, with what it answered.
    pub fn not_denied(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, o)| **o != Outcome::Denied)
            .map(|(cell, outcome)| format!("{cell}: {outcome}"))
            .collect()
    }

    /// True when every operation was denied and no document changed.
    pub fn all_denied(&self) -> bool {
        self.denied() == self.outcomes.len() && self.changed.is_empty()
    }

    fn cells_where(&self, keep: impl Fn(&Outcome) -> bool) -> Vec<Cell> {
        self.outcomes
            .iter()
            .filter(|(_, o)| keep(o))
            .map(|(cell, _)| *cell)
            .collect()
    }

    /// The report as JSON: totals, the leaks, the unexpected answers, the changed
    /// documents, and every operation with its result.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Row<'_>> = self
            .outcomes
            .iter()
            .map(|(cell, outcome)| Row {
                context: cell.context.name(),
                path: cell.target.template,
                operation: cell.operation.to_string(),
                transport: cell.operation.transport(),
                outcome,
            })
            .collect();
        let named = |cells: Vec<Cell>| -> Vec<Value> {
            cells
                .into_iter()
                .map(|cell| {
                    json!({
                        "context": cell.context.name(),
                        "path": cell.target.template,
                        "operation": cell.operation.to_string(),
                    })
                })
                .collect()
        };
        json!({
            "operations": self.outcomes.len(),
            "denied": self.denied(),
            "leaks": named(self.leaks()),
            "unexpected": named(self.unexpected()),
            "changedDocuments": self.changed,
            "results": rows,
        })
    }
}

/// Seeds every journal document of [`TARGETS`] with the rules bypassed.
pub async fn seed_journal(environment: &TestEnvironment) -> Result<(), RulesTestError> {
    for target in TARGETS {
        let path = target.path(SEEDED_KEY);
        let fields = json!({"state": "seeded", "path": path});
        environment.seed(&path, &fields).await?;
    }
    Ok(())
}

/// The journal's denial matrix: seeds every journal document with the rules
/// bypassed, tries every [`ClientContext`] × [`TARGETS`] × [`Operation`] (REST and
/// gRPC), and compares the whole database before and after (every document's fields,
/// `createTime` and `updateTime`; no new document, so no create and no half of a
/// mixed commit landed). Every cell should be [`Outcome::Denied`].
pub async fn journal_denial_matrix(
    environment: &TestEnvironment,
) -> Result<MatrixReport, RulesTestError> {
    seed_journal(environment).await?;
    let before = environment.documents().await?;
    let seeded = TARGETS
        .iter()
        .filter(|t| before.contains_key(&environment.name(&t.path(SEEDED_KEY))))
        .count();
    if seeded != TARGETS.len() {
        return Err(RulesTestError::Http(format!(
            "{seeded} of {} journal documents read back after seeding",
            TARGETS.len()
        )));
    }
    let mut contexts = BTreeMap::new();
    for context in ClientContext::ALL {
        contexts.insert(context, context.context(environment)?);
    }

    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for (index, cell) in cells().into_iter().enumerate() {
        let Some(context) = contexts.get(&cell.context).cloned() else {
            continue;
        };
        let limit = Arc::clone(&limit);
        tasks.spawn(async move {
            // The semaphore is never closed, so a permit always comes.
            let _permit = limit.acquire_owned().await.ok();
            let seeded = cell.target.path(SEEDED_KEY);
            let fresh = cell.target.path(&format!("fresh{index:04}"));
            // Concurrent cells touch the same seeded documents, and the emulator locks
            // what it reads even for a request its rules deny: under load a request can
            // time out on such a lock (ABORTED) before rules run. That says nothing of
            // the rules, so the cell is tried again, a bounded number of times.
            let mut outcome = cell.operation.run(&context, &seeded, &fresh).await;
            for _ in 1..LOCK_TIMEOUT_TRIES {
                if !is_lock_timeout(&outcome) {
                    break;
                }
                outcome = cell.operation.run(&context, &seeded, &fresh).await;
            }
            (cell, outcome)
        });
    }
    let mut outcomes = BTreeMap::new();
    while let Some(joined) = tasks.join_next().await {
        let (cell, outcome) =
            joined.map_err(|e| RulesTestError::Http(format!("a matrix task failed: {e}")))?;
        outcomes.insert(cell, outcome);
    }

    let after = environment.documents().await?;
    let root = format!("{}/", environment.root());
    let changed = changed_documents(&before, &after)
        .into_iter()
        .map(|name| name.strip_prefix(&root).unwrap_or(&name).to_owned())
        .collect();
    Ok(MatrixReport { outcomes, changed })
}

/// How often a cell that timed out on an emulator lock is tried in all.
const LOCK_TIMEOUT_TRIES: usize = 5;

/// Whether `outcome` is the emulator's lock timeout (ABORTED), not a rules answer.
fn is_lock_timeout(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Unexpected(detail)
        if detail.contains("ABORTED") || detail.contains("Aborted"))
}

/// The documents that differ between two reads of every document (changed, deleted
/// or created).
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

#[cfg(test)]
mod tests;
