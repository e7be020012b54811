//! The service in transaction mode (`JOURNAL_CONCURRENCY=transaction`): a checkout and
//! its replays answer and store exactly what the default mode does, through
//! Firestore transactions.

use super::{
    Options, command_id, commerce_documents, payload, send_documents, start_service, succeeded,
};
use serde_json::Value;

#[tokio::test]
async fn checkout_in_transaction_mode_charges_once_and_replays_byte_for_byte() {
    let service = start_service(Options {
        env: vec![("JOURNAL_CONCURRENCY", "transaction".to_owned())],
        ..Options::default()
    })
    .await;
    let id = command_id(901);
    let first = service.checkout(&id, &payload()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let charge = service.first_charge();
    assert_eq!(
        serde_json::from_str::<Value>(&first.text).expect("JSON"),
        succeeded(&charge)
    );
    for _ in 0..3 {
        let again = service.checkout(&id, &payload()).await;
        assert_eq!(again.text, first.text, "a replay is the first answer");
    }
    assert_eq!(service.stub.posts().len(), 1, "one POST");
    let mut expected = commerce_documents(3);
    expected.extend(send_documents(2));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.push("providerKeys/H".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    let ops = "command_journal_operations_total";
    let start = |outcome| [("operation", "start"), ("outcome", outcome)];
    assert_eq!(service.sample(ops, &start("acquired")).await, 1);
    assert_eq!(service.sample(ops, &start("replayed")).await, 3);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}
