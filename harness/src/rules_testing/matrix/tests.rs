use super::*;

#[test]
fn only_the_emulators_lock_timeout_is_tried_again() {
    let rest = r#"HTTP 409: {"error":{"code":409,"message":"Transaction lock timeout.","status":"ABORTED"}}"#;
    assert!(is_lock_timeout(&Outcome::Unexpected(rest.into())));
    assert!(is_lock_timeout(&Outcome::Unexpected(
        "gRPC status: Aborted, message: \"Transaction lock timeout.\"".into()
    )));
    assert!(!is_lock_timeout(&Outcome::Denied));
    assert!(!is_lock_timeout(&Outcome::Unexpected(
        "HTTP 500: boom".into()
    )));
}

#[test]
fn the_matrix_covers_every_context_path_and_operation_once() {
    let cells = cells();
    let per_context: usize = TARGETS.iter().map(|t| Operation::all_for(*t).len()).sum();
    // 79 for the B2B and ledger paths, 40 for the send layer's three, 14 for the
    // result envelope, 13 for the recovery checkpoints, 14 for the correction bounds,
    // 13 for the provider keys' index, 13 for the evidence checkpoints, 13 for the
    // lease releases.
    assert_eq!(per_context, 199);
    assert_eq!(cells.len(), per_context * ClientContext::ALL.len());
    let distinct: BTreeSet<&Cell> = cells.iter().collect();
    assert_eq!(distinct.len(), cells.len());
    assert_eq!(
        cells
            .iter()
            .filter(|c| c.operation.transport() == "grpc")
            .count(),
        2 * TARGETS.len() * ClientContext::ALL.len()
    );
}

#[test]
fn a_report_names_leaks_and_is_clean_only_when_everything_is_denied() {
    let cell = |context, operation| Cell {
        context,
        target: TARGETS[3],
        operation,
    };
    let mut report = MatrixReport {
        outcomes: BTreeMap::from([
            (cell(ClientContext::Admin, Operation::List), Outcome::Denied),
            (
                cell(ClientContext::SignedIn, Operation::Get),
                Outcome::Denied,
            ),
        ]),
        changed: BTreeSet::new(),
    };
    assert!(report.all_denied());
    report.outcomes.insert(
        cell(ClientContext::Admin, Operation::List),
        Outcome::Allowed,
    );
    assert!(!report.all_denied());
    let json = report.to_json();
    assert_eq!(
        json["leaks"],
        json!([{"context": "admin", "path": "auditEvents/{k}", "operation": "list"}])
    );
    // Rows follow the context order: signed-in before admin.
    assert_eq!(json["results"][0]["result"], "denied");
    assert_eq!(json["results"][1]["result"], "allowed");
    assert_eq!(json["results"][1]["transport"], "rest");
    assert_eq!(json["denied"], 1);
    report
        .outcomes
        .insert(cell(ClientContext::Admin, Operation::List), Outcome::Denied);
    report.changed.insert("auditEvents/x".into());
    assert!(!report.all_denied(), "a changed document is never clean");
}
