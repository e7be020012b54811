//! The security rules against the real Firestore emulator: every browser context is
//! denied every operation on every journal path, and the harness can tell.
//!
//! One emulator serves the whole binary (`Emulator::shared`); each test loads its
//! ruleset into its own project. Run alone with `cargo test --test rules -- --nocapture`
//! to see the count of denied operations.

mod client;
mod coverage;
mod matrix;
mod rulesets;

use client::{Caller, Outcome, Project};
use matrix::{Cell, Op, TARGETS, Target};
use reqwest::Method;
use serde_json::json;
use std::collections::BTreeSet;

#[tokio::test]
async fn every_browser_context_is_denied_every_operation_on_every_journal_path() {
    let project = Project::with_rules(rulesets::REAL).await;
    let report = matrix::run(&project).await;

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
    assert_eq!(total, matrix::cells().len(), "the whole matrix ran");

    let coverage = coverage::check(&project, rulesets::REAL).await;
    let html = coverage::save_html(&project, "firestore-rules").await;
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
    println!(
        "rules matrix: {} of {total} browser operations denied with PERMISSION_DENIED \
         ({} contexts x {} protected paths); {} guarded allow statements all evaluated; \
         coverage report: {}",
        report.denied(),
        Caller::CLIENTS.len(),
        TARGETS.len(),
        coverage.guarded,
        html.display()
    );
}

#[tokio::test]
async fn journal_blocks_pasted_into_an_app_ruleset_stay_denied_beside_an_app_allow() {
    let app = "    match /public/{id} {\n      allow read, write: if true;\n    }";
    let rules = rulesets::merged_into_app(app);
    let project = Project::with_rules(&rules).await;

    // Here the first write of every mixed commit is allowed on its own, so a denied
    // commit proves the protected write sinks the whole commit.
    let report = matrix::run(&project).await;
    let not_denied = report.not_denied();
    assert!(
        not_denied.is_empty(),
        "merged into an app ruleset, the journal blocks let through:\n{}",
        not_denied.join("\n")
    );
    assert!(report.changed.is_empty(), "changed {:?}", report.changed);
    let coverage = coverage::check(&project, &rules).await;
    coverage::save_html(&project, "app-merged-rules").await;
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
    for caller in Caller::CLIENTS {
        let doc = format!("public/control-{}", caller.name());
        let body = json!({"writes": [{"update": {
            "name": project.name(&doc),
            "fields": {"state": {"stringValue": "written"}},
        }}]});
        let outcome = project
            .rest(caller, Method::POST, project.url(":commit"), Some(body))
            .await;
        assert_eq!(outcome, Outcome::Allowed, "{} public commit", caller.name());
        let outcome = Op::GrpcGet.run(&project, caller, &doc, &doc).await;
        assert_eq!(
            outcome,
            Outcome::Allowed,
            "{} public gRPC get",
            caller.name()
        );
    }
    let written = project.snapshot().await;
    for caller in Caller::CLIENTS {
        let doc = project.name(&format!("public/control-{}", caller.name()));
        assert!(written.contains_key(&doc), "the control commit wrote {doc}");
    }
}

#[tokio::test]
async fn a_catch_all_read_for_signed_in_users_makes_the_matrix_report_leaks() {
    let project = Project::with_rules(&rulesets::leaky()).await;
    let report = matrix::run(&project).await;

    assert!(report.unexpected().is_empty(), "{:#?}", report.unexpected());
    assert!(
        report.changed.is_empty(),
        "a read-only leak changed {:?}",
        report.changed
    );
    let member_gets_root = Cell {
        caller: Caller::Member,
        target: TARGETS[0],
        op: Op::Get,
    };
    let leaks = report.leaks();
    assert!(
        leaks.contains(&member_gets_root),
        "the harness missed a signed-in get of checkoutRequests/{{k}}"
    );
    // Exactly the reads of signed-in contexts leak; anonymous reads and every write
    // (the extra allow grants reads only) stay denied.
    let expected: BTreeSet<Cell> = matrix::cells()
        .into_iter()
        .filter(|cell| cell.caller != Caller::Anonymous && cell.op.is_read())
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
    println!(
        "leaky ruleset: the matrix reported {} leaks of {} operations",
        leaks.len(),
        report.outcomes.len()
    );
}

#[tokio::test]
async fn the_harness_sees_an_allow_as_an_allow() {
    use Caller::{Admin, Anonymous, Member};
    let project = Project::with_rules(rulesets::ALLOWING_FIXTURE).await;
    for path in [
        "open/seeded",
        "closed/seeded",
        "membersOnly/x",
        "adminOnly/x",
    ] {
        project.seed(path, &[("state", "seeded")]).await;
    }
    let before = project.snapshot().await;
    let allowed = Outcome::Allowed;
    let denied = Outcome::Denied;
    // (caller, operation, existing document, absent document, expected)
    let cases = [
        (Anonymous, Op::Get, "open/missing", "", &allowed), // a 404 is an allow
        (Member, Op::Get, "open/missing", "", &allowed),
        (Admin, Op::GrpcGet, "open/missing", "", &allowed),
        (Anonymous, Op::GrpcGet, "open/seeded", "", &allowed),
        (Member, Op::BatchGet, "open/seeded", "", &allowed),
        (Anonymous, Op::List, "open/seeded", "", &allowed),
        (Admin, Op::Count, "open/seeded", "", &allowed),
        (Anonymous, Op::Create, "", "open/new-anonymous", &allowed),
        (Anonymous, Op::Update, "open/seeded", "", &denied),
        (Member, Op::Get, "closed/seeded", "", &denied),
        (Anonymous, Op::Get, "membersOnly/x", "", &denied),
        (Member, Op::Get, "membersOnly/x", "", &allowed),
        (Member, Op::Get, "adminOnly/x", "", &denied),
        (Admin, Op::Get, "adminOnly/x", "", &allowed),
        (Admin, Op::GrpcGet, "adminOnly/x", "", &allowed),
        (Member, Op::GrpcGet, "adminOnly/x", "", &denied),
    ];
    for (caller, op, seeded, fresh, expected) in cases {
        let outcome = op.run(&project, caller, seeded, fresh).await;
        assert_eq!(
            &outcome,
            expected,
            "{} {op} on {seeded}{fresh}",
            caller.name()
        );
    }

    let after = project.snapshot().await;
    let changed: Vec<String> = matrix::changed_documents(&before, &after)
        .into_iter()
        .collect();
    assert_eq!(changed, [project.name("open/new-anonymous")]);
}

#[tokio::test]
async fn every_matrix_operation_reads_as_allowed_where_the_rules_allow_it() {
    let project = Project::with_rules(rulesets::ALLOWING_FIXTURE).await;
    let writable = Target {
        template: "writable/{k}",
        groups: &["writable"],
    };
    project.seed("closed/seeded", &[("state", "seeded")]).await;
    for caller in Caller::CLIENTS {
        let path = writable.path(caller.name());
        project.seed(&path, &[("state", "seeded")]).await;
    }
    let before = project.snapshot().await;

    // Every operation the matrix uses is well-formed: where the rules allow it, it is
    // allowed (and writes land), so a deny in the matrix is the rules' doing.
    let mut ops = Op::all_for(writable);
    ops.sort_by_key(|op| *op == Op::Delete); // delete last, so the commits find the document
    let mut expected_changes = BTreeSet::new();
    for caller in Caller::CLIENTS {
        let seeded = writable.path(caller.name());
        let fresh = writable.path(&format!("new-{}", caller.name()));
        for &op in &ops {
            let outcome = op.run(&project, caller, &seeded, &fresh).await;
            assert_eq!(
                outcome,
                Outcome::Allowed,
                "{} {op} on {seeded}",
                caller.name()
            );
        }
        expected_changes.insert(project.name(&seeded)); // deleted
        expected_changes.insert(project.name(&fresh)); // created
        expected_changes.insert(project.name(&format!("public/writable_new-{}", caller.name())));
    }

    // The before/after comparison sees every created, rewritten and deleted document,
    // and nothing else.
    let after = project.snapshot().await;
    assert_eq!(matrix::changed_documents(&before, &after), expected_changes);
}

#[tokio::test]
async fn coverage_names_the_protected_blocks_a_run_never_evaluated() {
    let project = Project::with_rules(rulesets::REAL).await;
    let outcome = Op::Get
        .run(&project, Caller::Member, "auditEvents/a", "")
        .await;
    assert_eq!(outcome, Outcome::Denied);

    let coverage = coverage::check(&project, rulesets::REAL).await;
    let unevaluated = coverage.never_evaluated.join("\n");
    for block in [
        "match /checkoutRequests/{commandKeyHash}",
        "match /{descendant=**}",
        "match /{path=**}/lifecycle/{lifecycleDoc}",
        "match /{path=**}/current/{currentDoc}",
        "match /ledgerReservations/{reservation=**}",
        "match /ledgerTransactions/{transaction=**}",
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
    let blocks = rulesets::journal_blocks();
    for collection in [
        "match /checkoutRequests/{",
        "match /{path=**}/lifecycle/{",
        "match /{path=**}/current/{",
        "match /auditEvents/{",
        "match /ledgerReservations/{",
        "match /ledgerTransactions/{",
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
