//! Shared helpers: the process-wide emulator, a fresh project per test, raw owner
//! reads and writes that bypass the journal, and command builders.

use command_journal::Journal;
use command_journal::{Clock, CommandInput, CommandRequest, Concurrency};
use command_journal::{Connection, Target};
use command_journal_emulator::Emulator;
use gcloud_sdk::google::firestore::v1::{
    CommitRequest, Document, GetDocumentRequest, ListDocumentsRequest, Value, Write, write,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The emulator every test of this binary shares (started once, killed at exit).
pub fn emulator() -> &'static Emulator {
    match Emulator::shared() {
        Ok(emulator) => emulator,
        Err(error) => panic!("the Firestore emulator is required for these tests: {error}"),
    }
}

/// A connection to a project no other test uses.
pub async fn fresh_connection() -> Connection {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let emulator = emulator();
    let project = emulator.new_project_id();
    match Connection::connect(&project, Target::Emulator(emulator.host().to_owned())).await {
        Ok(connection) => connection,
        Err(error) => panic!("cannot connect to the emulator: {error}"),
    }
}

/// The concurrency mode of this test binary: `emulator` runs every module in
/// preconditions mode, `emulator-transaction` runs the race modules in transaction
/// mode through these same helpers.
pub fn mode() -> Concurrency {
    crate::MODE
}

/// A journal with the system clock on a fresh project, in this binary's mode.
pub async fn fresh_journal() -> Journal {
    Journal::new(fresh_connection().await).with_concurrency(mode())
}

/// A journal with `clock` on `connection`, in this binary's mode.
pub fn clocked_journal(connection: Connection, clock: Arc<dyn Clock>) -> Journal {
    Journal::new(connection)
        .with_clock(clock)
        .with_concurrency(mode())
}

/// RPCs of an operation that only observes: one read, plus the rollback that
/// releases its transaction in transaction mode.
pub fn observation_rpcs() -> u64 {
    match mode() {
        Concurrency::Preconditions => 1,
        Concurrency::Transaction => 2,
    }
}

/// A canonical UUID v4 text that differs for every `(tag, n)`.
pub fn uuid(tag: u16, n: u64) -> String {
    format!("{:08x}-{tag:04x}-4000-8000-{n:012x}", 0x5eed_0000_u32)
}

/// A valid command whose id depends on `n` and whose payload carries `payload`.
pub fn command(n: u64, payload: serde_json::Value) -> CommandInput {
    let id = uuid(1, n);
    CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller_9f3a",
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("valid test command")
}

/// The full resource name of `path`.
pub fn name(connection: &Connection, path: &str) -> String {
    format!("{}/{path}", connection.documents_path())
}

/// Reads one document as the owner, bypassing the journal.
pub async fn get(connection: &Connection, path: &str) -> Option<Document> {
    let request = GetDocumentRequest {
        name: name(connection, path),
        mask: None,
        consistency_selector: None,
        request_options: None,
    };
    match connection.raw().get_document(request).await {
        Ok(response) => Some(response.into_inner()),
        Err(status) if status.code() == gcloud_sdk::tonic::Code::NotFound => None,
        Err(status) => panic!("get failed: {status}"),
    }
}

/// Writes (creates or overwrites) one document as the owner, bypassing the journal.
pub async fn put(connection: &Connection, path: &str, fields: HashMap<String, Value>) {
    let request = CommitRequest {
        database: connection.database_path(),
        writes: vec![Write {
            update_mask: None,
            update_transforms: Vec::new(),
            current_document: None,
            operation: Some(write::Operation::Update(Document {
                name: name(connection, path),
                fields,
                create_time: None,
                update_time: None,
            })),
        }],
        transaction: Vec::new(),
        request_options: None,
    };
    connection.raw().commit(request).await.expect("owner write");
}

/// Deletes one document as the owner, bypassing the journal.
pub async fn delete(connection: &Connection, path: &str) {
    let request = CommitRequest {
        database: connection.database_path(),
        writes: vec![Write {
            update_mask: None,
            update_transforms: Vec::new(),
            current_document: None,
            operation: Some(write::Operation::Delete(name(connection, path))),
        }],
        transaction: Vec::new(),
        request_options: None,
    };
    connection
        .raw()
        .commit(request)
        .await
        .expect("owner delete");
}

/// Every document of collection `collection_id` under `parent` (relative path, ""
/// for the root), as the owner.
pub async fn list(connection: &Connection, parent: &str, collection_id: &str) -> Vec<Document> {
    let parent = if parent.is_empty() {
        connection.documents_path()
    } else {
        name(connection, parent)
    };
    let mut documents = Vec::new();
    let mut page_token = String::new();
    loop {
        let request = ListDocumentsRequest {
            parent: parent.clone(),
            collection_id: collection_id.to_owned(),
            page_size: 300,
            page_token: page_token.clone(),
            order_by: String::new(),
            mask: None,
            show_missing: false,
            consistency_selector: None,
            request_options: None,
        };
        let response = connection
            .raw()
            .list_documents(request)
            .await
            .expect("list")
            .into_inner();
        documents.extend(response.documents);
        if response.next_page_token.is_empty() {
            return documents;
        }
        page_token = response.next_page_token;
    }
}

/// Every journal document of the project (roots, audit events, lifecycles, send
/// documents, results, late charges, lease releases, the provider keys' index, the evidence checkpoints) as `(name, update time)`, sorted: two equal listings mean
/// nothing was written in between.
pub async fn documents(connection: &Connection) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for collection in [
        "checkoutRequests",
        "auditEvents",
        "recoveryCheckpoints",
        "providerKeys",
        "evidenceCheckpoints",
    ] {
        for document in list(connection, "", collection).await {
            all.push((document.name.clone(), format!("{:?}", document.update_time)));
        }
    }
    for root in list(connection, "", "checkoutRequests").await {
        let relative = root
            .name
            .rsplit_once("/documents/")
            .map(|(_, path)| path.to_owned())
            .expect("relative path");
        for collection in [
            "lifecycle",
            "providerSends",
            "results",
            "lateCharges",
            "leaseReleases",
        ] {
            for document in list(connection, &relative, collection).await {
                all.push((document.name.clone(), format!("{:?}", document.update_time)));
            }
        }
    }
    all.sort();
    all
}

/// Runs `f(0..n)` as concurrent tasks and returns their answers in task order.
pub async fn race<T, F, Fut>(n: u64, f: F) -> Vec<Result<T, command_journal::JournalError>>
where
    T: Send + 'static,
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<T, command_journal::JournalError>> + Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(f(i))).collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task"));
    }
    results
}

/// The fence numbered `n` (1 or more).
pub fn fence_at(n: i64) -> command_journal::FenceEpoch {
    command_journal::FenceEpoch::new(n).expect("a fence in range")
}

/// The attempt numbered `n` (1 to 9,999).
pub fn attempt_at(n: i64) -> command_journal::sends::AttemptNumber {
    command_journal::sends::AttemptNumber::new(n).expect("an attempt in range")
}
