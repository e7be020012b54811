//! The security rules against the real Firestore emulator, through the library's
//! rules harness (`command_journal_emulator::rules_testing`):
//! every client context is denied every operation on every journal path, the harness
//! can tell, and `command-journal rules check` reports it.
//!
//! One emulator serves the whole binary (`Emulator::shared`); each test loads its
//! ruleset into its own project. Run alone with
//! `cargo test --test rules -- --nocapture` to see the count
//! of denied operations.

mod cli;
mod coverage;
mod rulesets;

use command_journal_emulator::rules_testing::{
    Cell, ClientContext, CommitWrite, JOURNAL_GUARD, Operation, SEEDED_KEY as SEEDED, TARGETS,
    Target, TestEnvironment, assert_allowed, assert_denied, cells, changed_documents,
    guard_coverage, journal_blocks, journal_denial_matrix, merged_into_app,
};
use serde_json::json;
use std::collections::BTreeSet;

async fn environment(rules: &str) -> TestEnvironment {
    match TestEnvironment::new(rules).await {
        Ok(environment) => environment,
        Err(error) => panic!("the Firestore emulator is required for the rules tests: {error}"),
    }
}

#[tokio::test]
async fn every_browser_context_is_denied_every_operation_on_every_journal_path() {
    let env = environment(rulesets::REAL).await;
    let report = journal_denial_matrix(&env).await.expect("the matrix runs");

    let not_denied = report.not_denied();
    assert!(
        not_denied.is_empty(),
        "firestore.rules let {} browser operations through or answered oddly:\n{}",
        not_denied.len(),
        not_denied.join("\n")
    );
    assert!(
        report.changed.is_empty(),
        "browser requests changed {:?}",
        report.changed
    );
    let total = report.outcomes.len();
    assert_eq!(report.denied(), total);
    assert_eq!(total, cells().len(), "the whole matrix ran");
    assert!(report.all_denied());

    let coverage = guard_coverage(&env, JOURNAL_GUARD)
        .await
        .expect("coverage report");
    let html = coverage::save_html(&env, "firestore-rules").await;
    assert!(
        coverage.never_evaluated.is_empty(),
        "protected match blocks never evaluated by the matrix: {:?} (report: {})",
        coverage.never_evaluated,
        html.display()
    );
    assert!(coverage.granted.is_empty(), "{:?}", coverage.granted);
    assert!(
        coverage.guarded >= 7,
        "the seven protected blocks each have a journalServerOnly() allow"
    );
    let counts = format!(
        "rules matrix: {} of {total} browser operations denied with PERMISSION_DENIED \
         ({} contexts x {} protected paths);",
        report.denied(),
        ClientContext::ALL.len(),
        TARGETS.len(),
    );
    println!(
        "{counts} {} guarded allow statements all evaluated; coverage report: {}",
        coverage.guarded,
        html.display()
    );
    // docs/rules.md shows this line, with the counts of today's matrix.
    let docs = include_str!("../docs/rules.md");
    assert!(docs.contains(&counts), "docs/rules.md lacks {counts}");
}

#[tokio::test]
async fn journal_blocks_pasted_into_an_app_ruleset_stay_denied_beside_an_app_allow() {
    let app = "    match /public/{id} {\n      allow read, write: if true;\n    }";
    let rules = merged_into_app(app);
    let env = environment(&rules).await;

    // Here the first write of every mixed commit is allowed on its own, so a denied
    // commit proves the protected write sinks the whole commit.
    let report = journal_denial_matrix(&env).await.expect("the matrix runs");
    let not_denied = report.not_denied();
    assert!(
        not_denied.is_empty(),
        "merged into an app ruleset, the journal blocks let through:\n{}",
        not_denied.join("\n")
    );
    assert!(report.changed.is_empty(), "changed {:?}", report.changed);
    let coverage = guard_coverage(&env, JOURNAL_GUARD)
        .await
        .expect("coverage report");
    coverage::save_html(&env, "app-merged-rules").await;
    assert!(
        coverage.never_evaluated.is_empty(),
        "never evaluated: {:?}",
        coverage.never_evaluated
    );
    assert!(coverage.granted.is_empty(), "{:?}", coverage.granted);
    println!(
        "rules matrix (blocks merged into an app ruleset): {} of {} denied",
        report.denied(),
        report.outcomes.len()
    );

    // Control: the public half alone is allowed for every context, over REST and gRPC.
    for client in ClientContext::ALL {
        let context = client.context(&env).expect("context");
        let doc = format!("public/control-{}", client.name());
        let write = CommitWrite {
            path: doc.clone(),
            fields: json!({"state": "written"}),
            exists: None,
        };
        assert_allowed(context.commit(&[write]).await)
            .unwrap_or_else(|e| panic!("{} public commit: {e}", client.name()));
        assert_allowed(context.grpc_get(&doc).await)
            .unwrap_or_else(|e| panic!("{} public gRPC get: {e}", client.name()));
    }
    let written = env.documents().await.expect("documents");
    for client in ClientContext::ALL {
        let doc = env.name(&format!("public/control-{}", client.name()));
        assert!(written.contains_key(&doc), "the control commit wrote {doc}");
    }
}

#[tokio::test]
async fn a_catch_all_read_for_signed_in_users_makes_the_matrix_report_leaks() {
    let env = environment(&rulesets::leaky()).await;
    let report = journal_denial_matrix(&env).await.expect("the matrix runs");

    assert!(report.unexpected().is_empty(), "{:#?}", report.unexpected());
    assert!(
        report.changed.is_empty(),
        "a read-only leak changed {:?}",
        report.changed
    );
    let signed_in_gets_root = Cell {
        context: ClientContext::SignedIn,
        target: TARGETS[0],
        operation: Operation::Get,
    };
    let leaks = report.leaks();
    assert!(
        leaks.contains(&signed_in_gets_root),
        "the harness missed a signed-in get of checkoutRequests/{{k}}"
    );
    // Exactly the reads of contexts with an ID token leak; unauthenticated reads and
    // every write (the extra allow grants reads only) stay denied.
    let expected: BTreeSet<Cell> = cells()
        .into_iter()
        .filter(|cell| cell.context.is_authenticated() && cell.operation.is_read())
        .collect();
    let leaks: BTreeSet<Cell> = leaks.into_iter().collect();
    let shown =
        |cells: BTreeSet<&Cell>| cells.iter().map(|c| format!("\n  {c}")).collect::<String>();
    assert!(
        leaks == expected,
        "leaks seen but not opened by the extra allow:{}\nleaks opened but not seen:{}",
        shown(leaks.difference(&expected).collect()),
        shown(expected.difference(&leaks).collect()),
    );
    assert!(!report.all_denied());
    println!(
        "leaky ruleset: the matrix reported {} leaks of {} operations",
        leaks.len(),
        report.outcomes.len()
    );
}

#[tokio::test]
async fn the_harness_sees_an_allow_as_an_allow() {
    use ClientContext::{Admin, Anonymous, SignedIn, Unauthenticated, VerifiedEmail};
    let env = environment(rulesets::ALLOWING_FIXTURE).await;
    for path in [
        "open/seeded",
        "closed/seeded",
        "membersOnly/x",
        "adminOnly/x",
        "verifiedOnly/x",
        "anonymousOnly/x",
    ] {
        env.seed(path, &json!({"state": "seeded"}))
            .await
            .expect("seed with the rules bypassed");
    }
    let before = env.documents().await.expect("documents");
    let (allowed, denied) = (true, false);
    // (context, operation, existing document, absent document, allowed?)
    let cases = [
        (Unauthenticated, Operation::Get, "open/missing", "", allowed), // a 404 is an allow
        (SignedIn, Operation::Get, "open/missing", "", allowed),
        (Admin, Operation::GrpcGet, "open/missing", "", allowed),
        (
            Unauthenticated,
            Operation::GrpcGet,
            "open/seeded",
            "",
            allowed,
        ),
        (SignedIn, Operation::BatchGet, "open/seeded", "", allowed),
        (Unauthenticated, Operation::List, "open/seeded", "", allowed),
        (Admin, Operation::Count, "open/seeded", "", allowed),
        (
            Unauthenticated,
            Operation::Create,
            "",
            "open/new-anonymous",
            allowed,
        ),
        (
            Unauthenticated,
            Operation::Update,
            "open/seeded",
            "",
            denied,
        ),
        (SignedIn, Operation::Get, "closed/seeded", "", denied),
        (Unauthenticated, Operation::Get, "membersOnly/x", "", denied),
        (SignedIn, Operation::Get, "membersOnly/x", "", allowed),
        (Anonymous, Operation::Get, "membersOnly/x", "", allowed),
        (SignedIn, Operation::Get, "adminOnly/x", "", denied),
        (Admin, Operation::Get, "adminOnly/x", "", allowed),
        (Admin, Operation::GrpcGet, "adminOnly/x", "", allowed),
        (SignedIn, Operation::GrpcGet, "adminOnly/x", "", denied),
        (VerifiedEmail, Operation::Get, "verifiedOnly/x", "", allowed),
        (
            VerifiedEmail,
            Operation::GrpcGet,
            "verifiedOnly/x",
            "",
            allowed,
        ),
        (SignedIn, Operation::Get, "verifiedOnly/x", "", denied),
        (Anonymous, Operation::Get, "anonymousOnly/x", "", allowed),
        (SignedIn, Operation::Get, "anonymousOnly/x", "", denied),
    ];
    for (client, op, seeded, fresh, expect_allowed) in cases {
        let context = client.context(&env).expect("context");
        let outcome = op.run(&context, seeded, fresh).await;
        let checked = if expect_allowed {
            assert_allowed(outcome)
        } else {
            assert_denied(outcome)
        };
        if let Err(error) = checked {
            panic!("{} {op} on {seeded}{fresh}: {error}", client.name());
        }
    }

    let after = env.documents().await.expect("documents");
    let changed: Vec<String> = changed_documents(&before, &after).into_iter().collect();
    assert_eq!(changed, [env.name("open/new-anonymous")]);
}

#[tokio::test]
async fn every_matrix_operation_reads_as_allowed_where_the_rules_allow_it() {
    let env = environment(rulesets::ALLOWING_FIXTURE).await;
    let writable = Target {
        template: "writable/{k}",
        groups: &["writable"],
    };
    env.seed("closed/seeded", &json!({"state": "seeded"}))
        .await
        .expect("seed");
    for client in ClientContext::ALL {
        let path = writable.path(client.name());
        env.seed(&path, &json!({"state": "seeded"}))
            .await
            .expect("seed");
    }
    let before = env.documents().await.expect("documents");

    // Every operation the matrix uses is well-formed: where the rules allow it, it is
    // allowed (and writes land), so a deny in the matrix is the rules' doing.
    let mut ops = Operation::all_for(writable);
    ops.sort_by_key(|op| *op == Operation::Delete); // delete last, so the commits find the document
    let mut expected_changes = BTreeSet::new();
    for client in ClientContext::ALL {
        let context = client.context(&env).expect("context");
        let seeded = writable.path(client.name());
        let fresh = writable.path(&format!("new-{}", client.name()));
        for &op in &ops {
            let outcome = op.run(&context, &seeded, &fresh).await;
            if let Err(error) = assert_allowed(outcome) {
                panic!("{} {op} on {seeded}: {error}", client.name());
            }
        }
        expected_changes.insert(env.name(&seeded)); // deleted
        expected_changes.insert(env.name(&fresh)); // created
        expected_changes.insert(env.name(&format!("public/writable_new-{}", client.name())));
    }

    // The before/after comparison sees every created, rewritten and deleted document,
    // and nothing else.
    let after = env.documents().await.expect("documents");
    assert_eq!(changed_documents(&before, &after), expected_changes);
}

#[tokio::test]
async fn coverage_names_the_protected_blocks_a_run_never_evaluated() {
    let env = environment(rulesets::REAL).await;
    let context = ClientContext::SignedIn.context(&env).expect("context");
    assert_denied(Operation::Get.run(&context, "auditEvents/a", "").await)
        .expect("a signed-in get of an audit event is denied");

    let coverage = guard_coverage(&env, JOURNAL_GUARD)
        .await
        .expect("coverage report");
    let unevaluated = coverage.never_evaluated.join("\n");
    for block in [
        "match /checkoutRequests/{commandKeyHash}",
        "match /{descendant=**}",
        "match /{path=**}/lifecycle/{lifecycleDoc}",
        "match /{path=**}/current/{currentDoc}",
        "match /ledgerReservations/{reservation=**}",
        "match /ledgerTransactions/{transaction=**}",
        "match /recoveryCheckpoints/{checkpoint=**}",
        "match /providerKeys/{providerKey=**}",
        "match /evidenceCheckpoints/{evidenceCheckpoint=**}",
    ] {
        assert!(
            unevaluated.contains(block),
            "{block} missing from:\n{unevaluated}"
        );
    }
    assert!(!unevaluated.contains("auditEvents"), "{unevaluated}");
    assert!(!unevaluated.contains("{document=**}"), "{unevaluated}");
}

#[test]
fn the_journal_blocks_are_marked_for_pasting_and_guard_every_protected_collection() {
    let blocks = journal_blocks();
    for collection in [
        "match /checkoutRequests/{",
        "match /{path=**}/lifecycle/{",
        "match /{path=**}/current/{",
        "match /{path=**}/providerSends/{",
        "match /{path=**}/results/{",
        "match /{path=**}/corrections/{",
        "match /auditEvents/{",
        "match /ledgerReservations/{",
        "match /ledgerTransactions/{",
        "match /recoveryCheckpoints/{",
        "match /providerKeys/{",
        "match /evidenceCheckpoints/{",
    ] {
        assert!(
            blocks.contains(collection),
            "{collection} is not in the blocks"
        );
    }
    assert!(blocks.contains("function journalServerOnly() {\n      return false;\n    }"));
    assert!(!blocks.contains("if true"));
    assert!(
        blocks
            .lines()
            .filter(|line| line.trim_start().starts_with("allow "))
            .all(|line| line.trim_end().ends_with("if journalServerOnly();")),
        "every allow in the blocks is the server-only guard"
    );
}

#[tokio::test]
async fn no_browser_reads_or_writes_a_result_envelope() {
    let env = environment(rulesets::REAL).await;
    let path = format!("checkoutRequests/{SEEDED}/results/current");
    let seeded = json!({"resultSchemaVersion": 1, "envelope": "{\"id\":\"ch_CANARY\"}"});
    env.seed(&path, &seeded)
        .await
        .expect("seed with the rules bypassed");
    let fresh = format!("checkoutRequests/{}/results/current", "f".repeat(64));
    let before = env.documents().await.expect("documents");
    for client in [
        ClientContext::Anonymous,
        ClientContext::SignedIn,
        ClientContext::Admin,
        ClientContext::Unauthenticated,
    ] {
        let context = client.context(&env).expect("context");
        let forged = json!({"envelope": "{}"});
        let name = client.name();
        let outcomes = [
            ("get", context.get(&path).await),
            ("gRPC get", context.grpc_get(&path).await),
            ("batch get", context.batch_get(&[&path]).await),
            (
                "list",
                context
                    .list(&format!("checkoutRequests/{SEEDED}/results"))
                    .await,
            ),
            (
                "group query",
                context.collection_group_query("results").await,
            ),
            ("create", context.create(&fresh, &forged).await),
            ("update", context.update(&path, &forged).await),
            ("upsert", context.upsert(&path, &forged).await),
            ("delete", context.delete(&path).await),
        ];
        for (operation, outcome) in outcomes {
            assert_denied(outcome).unwrap_or_else(|e| panic!("{name} {operation}: {e}"));
        }
    }
    let after = env.documents().await.expect("documents");
    assert!(changed_documents(&before, &after).is_empty());
}
