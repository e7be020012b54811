//! The checkout service on provider sends: an ambiguous send re-sent with
//! the same key before the cutoff; past the cutoff (the journal's manual clock moved
//! 19 h, beyond 24 h retention's 18 h cutoff) the provider asked first, a held charge
//! answered without a POST, no charge answered by attempt 2's one POST under a new
//! key, an unavailable lookup answered 202 with nothing written; replays byte for
//! byte; a tampered envelope refused; and nothing secret in any body, log line or
//! metrics line along the way.

use super::stub_provider::{Action, LookupAction};
use super::{
    Options, PAYLOAD_NOTE, PAYLOAD_SKU, Service, command_id, start_service, succeeded, support,
};
use chrono::TimeDelta;
use command_journal::sends::AttemptNumber;
use command_journal::{CommandInput, Journal};
use serde_json::{Value, json};

/// The provider's timeout in these tests: a lost answer is given up after it.
const PROVIDER_TIMEOUT_MS: &str = "400";

/// A payload a real charge would carry: the stub echoes `amount` and `currency`.
fn priced() -> Value {
    json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amount": 1250, "currency": "eur"})
}

/// A service whose stub acts `script` on the first POSTs, then charges.
async fn service_with(script: Vec<Action>) -> Service {
    start_service(Options {
        script,
        env: vec![("PROVIDER_TIMEOUT_MS", PROVIDER_TIMEOUT_MS.to_owned())],
        ..Options::default()
    })
    .await
}

/// Past the attempt's send cutoff (and the lease's expiry).
const PAST_THE_CUTOFF: TimeDelta = TimeDelta::hours(19);

impl Service {
    /// The send layer's documents: the plan, the send record and every
    /// `provider_send_*` audit event, with their update times.
    async fn send_documents(&self) -> Vec<(String, String)> {
        self.documents()
            .await
            .into_iter()
            .filter(|(name, _)| name.contains("/providerSends/") || name.contains("provider_send_"))
            .collect()
    }

    /// A journal on the service's own (manual) clock.
    fn journal(&self) -> Journal {
        Journal::new(self.connection.clone()).with_clock(self.clock.clone())
    }

    fn priced_command(&self, id: &str) -> CommandInput {
        self.command(id, &priced())
    }

    async fn operations(&self, operation: &str, outcome: &str) -> u64 {
        self.sample(
            "command_journal_operations_total",
            &[("operation", operation), ("outcome", outcome)],
        )
        .await
    }
}

#[tokio::test]
async fn checkout_ambiguous_send_is_resent_with_the_same_key_before_the_cutoff() {
    let service = service_with(vec![Action::Lose]).await;
    let id = command_id(100);
    let lost = service.checkout(&id, &priced()).await;
    assert_eq!(
        (lost.status, &lost.body),
        (503, &json!({"status": "retry"}))
    );
    assert!(lost.retry_after.is_some());
    assert_eq!(
        service.stub.charges().len(),
        1,
        "the lost POST made the charge"
    );

    // The lost request may still be in flight: the lease was released, but no
    // other holder re-sends its key before its send + 60 s: retry later, no POST.
    let busy = service.checkout(&id, &priced()).await;
    assert_eq!(
        (busy.status, &busy.body, busy.retry_after),
        (503, &json!({"status": "retry"}), Some(60))
    );
    assert_eq!(service.stub.posts().len(), 1);
    assert_eq!(service.operations("begin_send", "resend_not_yet").await, 1);

    service.clock.advance(TimeDelta::seconds(61));
    let retried = service.checkout(&id, &priced()).await;
    let charge = service.first_charge();
    assert_eq!(
        charge,
        json!({"id": "ch_CANARYreceipt1", "amount": 1250, "currency": "eur", "status": "succeeded"})
    );
    assert_eq!((retried.status, retried.body), (200, succeeded(&charge)));
    let posts = service.stub.posts();
    let key = service.expected_key(&id, &priced());
    assert_eq!(posts.len(), 2, "the takeover re-sends once");
    assert!(posts.iter().all(|p| p.key.as_deref() == Some(key.as_str())));
    assert_eq!(service.stub.charges().len(), 1, "the provider deduplicated");
    assert!(
        service.stub.lookups().is_empty(),
        "no lookup before the cutoff"
    );
    assert_eq!(service.operations("begin_send", "resent").await, 1);
    // Two takeovers of a released lease: the early retry's and the re-sender's.
    assert_eq!(service.operations("start", "recovered").await, 2);
    let status = service
        .journal()
        .send_status(&service.priced_command(&id))
        .await
        .expect("status");
    let send = status.send.expect("a plan is bound");
    assert_eq!(
        (status.command.state.as_str(), send.attempt),
        ("succeeded", AttemptNumber::FIRST)
    );
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_after_the_cutoff_a_held_charge_is_found_and_nothing_is_posted() {
    let service = service_with(vec![Action::Lose]).await;
    let id = command_id(101);
    assert_eq!(service.checkout(&id, &priced()).await.status, 503);
    service.clock.advance(PAST_THE_CUTOFF);

    let late = service.checkout(&id, &priced()).await;
    let charge = service.first_charge();
    assert_eq!((late.status, &late.body), (200, &succeeded(&charge)));
    let key = service.expected_key(&id, &priced());
    assert_eq!(service.stub.posts().len(), 1, "no POST after the cutoff");
    assert_eq!(service.stub.lookups(), [key], "the provider was asked once");
    assert_eq!(
        service.operations("begin_send", "send_cutoff_passed").await,
        1
    );
    assert_eq!(service.operations("reconcile_send", "succeeded").await, 1);

    // Replays answer the same bytes without asking anyone again.
    let replay = service.checkout(&id, &priced()).await;
    assert_eq!(replay.text, late.text);
    assert_eq!(service.stub.lookups().len(), 1);
    assert_eq!(service.stub.posts().len(), 1);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_after_the_cutoff_no_charge_opens_attempt_2_and_posts_once() {
    let service = service_with(vec![Action::Status(503)]).await;
    let id = command_id(102);
    assert_eq!(service.checkout(&id, &priced()).await.status, 503);
    assert!(service.stub.charges().is_empty(), "a 503 made nothing");
    service.clock.advance(PAST_THE_CUTOFF);

    let late = service.checkout(&id, &priced()).await;
    let charge = service.first_charge();
    assert_eq!((late.status, late.body), (200, succeeded(&charge)));
    let first_key = service.expected_key(&id, &priced());
    let posts = service.stub.posts();
    assert_eq!(posts.len(), 2, "one POST for attempt 2");
    assert_eq!(posts[0].key.as_deref(), Some(first_key.as_str()));
    let second_key = posts[1].key.clone().expect("attempt 2's key");
    assert_ne!(second_key, first_key, "attempt 2 has a key of its own");
    assert_eq!(service.stub.lookups(), [first_key], "asked before the POST");
    let charges = service.stub.charges();
    assert_eq!(charges.len(), 1, "exactly one charge for the command");
    assert_eq!(charges[0].key, second_key);
    assert_eq!(service.operations("reconcile_send", "absent").await, 1);
    let status = service
        .journal()
        .send_status(&service.priced_command(&id))
        .await
        .expect("status");
    let send = status.send.expect("a plan is bound");
    assert_eq!(
        (
            status.command.state.as_str(),
            send.attempt,
            send.state.as_str()
        ),
        ("succeeded", crate::support::attempt_at(2), "succeeded")
    );
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_after_the_cutoff_an_unavailable_lookup_is_202_and_writes_no_send_state() {
    let service = service_with(vec![Action::Lose]).await;
    let id = command_id(103);
    assert_eq!(service.checkout(&id, &priced()).await.status, 503);
    service.clock.advance(PAST_THE_CUTOFF);
    service.stub.script_lookups([LookupAction::Status(503)]);
    let before = service.send_documents().await;

    let pending = service.checkout(&id, &priced()).await;
    assert_eq!(
        (pending.status, &pending.body),
        (202, &json!({"status": "pending_reconciliation"}))
    );
    assert!(pending.retry_after.is_some_and(|s| s >= 1));
    assert_eq!(
        service.send_documents().await,
        before,
        "no send record, plan or send event written"
    );
    assert_eq!(service.stub.posts().len(), 1, "no POST without an answer");
    assert_eq!(service.stub.lookups().len(), 1);
    let status = service
        .journal()
        .send_status(&service.priced_command(&id))
        .await
        .expect("status");
    assert!(status.send.expect("bound").needs_reconciliation);

    // Once the provider answers, the next retry settles it.
    service.clock.advance(TimeDelta::seconds(61));
    let settled = service.checkout(&id, &priced()).await;
    assert_eq!(
        (settled.status, settled.body),
        (200, succeeded(&service.first_charge()))
    );
    assert_eq!(service.stub.posts().len(), 1);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_ten_retries_answer_the_first_body_byte_for_byte() {
    let service = service_with(Vec::new()).await;
    let id = command_id(104);
    let first = service.checkout(&id, &priced()).await;
    assert_eq!(first.status, 200);
    assert_eq!(
        first.text,
        r#"{"status":"succeeded","charge":{"amount":1250,"currency":"eur","id":"ch_CANARYreceipt1","status":"succeeded"}}"#
    );
    for n in 0..10 {
        if n == 5 {
            // Past the lease and the cutoff: still the stored answer.
            service.clock.advance(PAST_THE_CUTOFF);
        }
        let retry = service.checkout(&id, &priced()).await;
        assert_eq!((retry.status, &retry.text), (200, &first.text), "retry {n}");
    }
    assert_eq!(service.stub.posts().len(), 1);
    assert!(service.stub.lookups().is_empty());
    assert_eq!(service.operations("start", "replayed").await, 10);
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_a_pending_charge_is_no_success_until_the_provider_finishes_it() {
    let service = service_with(vec![Action::Pending]).await;
    let id = command_id(106);
    let pending = service.checkout(&id, &priced()).await;
    assert_eq!(
        (pending.status, &pending.body),
        (503, &json!({"status": "retry"})),
        "a 2xx pending charge is ambiguous"
    );
    assert_eq!(service.stub.charges().len(), 1, "held, pending");
    let key = service.expected_key(&id, &priced());

    // Re-sent with the same key once the lease expired: still pending, still 503.
    service.clock.advance(TimeDelta::seconds(61));
    assert_eq!(service.checkout(&id, &priced()).await.status, 503);
    assert_eq!(service.stub.posts().len(), 2);

    // Past the cutoff the lookup reads it pending: nothing concluded, nothing sent.
    service.clock.advance(PAST_THE_CUTOFF);
    let before = service.send_documents().await;
    assert_eq!(service.checkout(&id, &priced()).await.status, 202);
    assert_eq!(service.send_documents().await, before);

    // Once the provider finishes it, the next retry finds it.
    assert!(service.stub.settle(&key, "succeeded"));
    service.clock.advance(TimeDelta::seconds(61));
    let settled = service.checkout(&id, &priced()).await;
    assert_eq!(
        (settled.status, settled.body),
        (200, succeeded(&service.first_charge()))
    );
    assert_eq!(service.stub.posts().len(), 2, "no POST after the cutoff");
    assert_eq!(service.stub.charges().len(), 1);
    assert_eq!(service.stub.lookups(), [key.clone(), key]);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_a_lookup_answering_another_amount_or_currency_concludes_nothing() {
    let service = service_with(vec![Action::Status(503), Action::Status(503)]).await;
    let mut other_amount = priced();
    other_amount["amount"] = json!(99_900);
    let mut other_currency = priced();
    other_currency["currency"] = json!("usd");
    for (n, other) in [(108, other_amount), (109, other_currency)] {
        let id = command_id(n);
        assert_eq!(service.checkout(&id, &priced()).await.status, 503);
        let key = service.expected_key(&id, &priced());
        // The provider answers the key with a charge made from another body.
        service.stub.hold(&key, &other);
        service.clock.advance(PAST_THE_CUTOFF);
        let before = service.send_documents().await;
        let posts = service.stub.posts().len();

        let pending = service.checkout(&id, &priced()).await;
        assert_eq!(
            (pending.status, &pending.body),
            (202, &json!({"status": "pending_reconciliation"})),
            "{other}"
        );
        assert_eq!(service.send_documents().await, before, "nothing written");
        assert_eq!(service.stub.posts().len(), posts, "nothing sent");
        assert_eq!(service.stub.lookups().last(), Some(&key));
    }
    assert_eq!(service.operations("reconcile_send", "succeeded").await, 0);
    service.assert_no_leak(&[]).await;
}

/// Rewrites every string in a Firestore value that holds `from`.
fn forge(value: &mut gcloud_sdk::google::firestore::v1::Value, from: &str, to: &str) -> usize {
    use gcloud_sdk::google::firestore::v1::value::ValueType;
    match value.value_type.as_mut() {
        Some(ValueType::StringValue(text)) if text.contains(from) => {
            *text = text.replace(from, to);
            1
        }
        Some(ValueType::MapValue(map)) => map.fields.values_mut().map(|v| forge(v, from, to)).sum(),
        Some(ValueType::ArrayValue(array)) => {
            array.values.iter_mut().map(|v| forge(v, from, to)).sum()
        }
        _ => 0,
    }
}

#[tokio::test]
async fn checkout_tampered_envelope_is_500_journal_corrupt_and_writes_nothing() {
    let service = service_with(Vec::new()).await;
    let id = command_id(105);
    assert_eq!(service.checkout(&id, &priced()).await.status, 200);
    let hash = service
        .priced_command(&id)
        .identity()
        .command_key_hash()
        .to_string();
    let path = format!("checkoutRequests/{hash}/results/current");
    let stored = support::get(&service.connection, &path)
        .await
        .expect("the results document");
    let mut fields = stored.fields.clone();
    let forged: usize = fields
        .values_mut()
        .map(|v| forge(v, "ch_CANARYreceipt1", "ch_CANARYreceipt2"))
        .sum();
    assert!(forged >= 1, "the stored envelope holds the charge id");
    support::put(&service.connection, &path, fields).await;
    let before = service.documents().await;

    let refused = service.checkout(&id, &priced()).await;
    assert_eq!(refused.status, 500);
    assert_eq!(refused.body["error"], "journal_corrupt");
    assert_eq!(service.documents().await, before, "nothing written");
    assert_eq!(service.stub.posts().len(), 1, "nothing sent");
    let report = command_journal::verify(&service.connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(!report.clean, "verify finds the forged envelope");
    service.assert_no_leak(&["ch_CANARYreceipt2"]).await;
}

#[tokio::test]
async fn checkout_every_send_path_leaks_nothing_in_bodies_logs_or_metrics() {
    let service = service_with(vec![
        Action::Lose,
        Action::Status(500),
        Action::Decline,
        Action::Status(429),
    ])
    .await;
    let token = service.token(super::UID);
    // Lost, then 500 (no charge), then a decline, then 429 (no charge).
    let ids: Vec<String> = (110..114).map(command_id).collect();
    for id in &ids[..2] {
        assert_eq!(service.checkout(id, &priced()).await.status, 503);
    }
    assert_eq!(service.checkout(&ids[2], &priced()).await.status, 402);
    assert_eq!(service.checkout(&ids[3], &priced()).await.status, 503);
    service.clock.advance(PAST_THE_CUTOFF);
    // The first lookup fails (202); then the held charge is found, the missing one
    // is sent as attempt 2, and the decline stays a decline.
    service.stub.script_lookups([LookupAction::Status(502)]);
    assert_eq!(service.checkout(&ids[0], &priced()).await.status, 202);
    // The 202's request took the lease over: the next one waits for its expiry.
    service.clock.advance(TimeDelta::seconds(61));
    assert_eq!(service.checkout(&ids[0], &priced()).await.status, 200);
    assert_eq!(service.checkout(&ids[1], &priced()).await.status, 200);
    assert_eq!(service.checkout(&ids[2], &priced()).await.status, 402);
    // A lost send's held decline, found by the lookup after the cutoff: 402.
    let key = service.expected_key(&ids[3], &priced());
    service.stub.hold_declined(&key, &priced());
    assert_eq!(service.checkout(&ids[3], &priced()).await.status, 402);
    let lines = service.lines();
    assert!(lines.len() >= 9, "{lines:?}");
    service.assert_verifies_clean(4).await;
    service.assert_no_leak(&[&token, "acct_"]).await;
}

/// The key the checks below are made under.
const KEY: &str = "cj1-CANARYkey";

/// A charge of `priced()` under [`KEY`], `status` succeeded, with `changes` applied
/// (a `null` removes the field).
fn charge_with(changes: Value) -> Value {
    let mut charge = json!({
        "id": "ch_1", "object": "charge", "amount": 1250, "currency": "eur",
        "status": "succeeded", "metadata": {"journal_key": KEY},
    });
    for (field, value) in changes.as_object().expect("changes").clone() {
        match value {
            Value::Null => charge.as_object_mut().expect("object").remove(&field),
            value => charge.as_object_mut().expect("object").insert(field, value),
        };
    }
    charge
}

/// The envelope of a charge of `priced()` in `status`.
fn priced_envelope(status: &str) -> serde_json::Map<String, Value> {
    json!({"id": "ch_1", "amount": 1250, "currency": "eur", "status": status})
        .as_object()
        .cloned()
        .expect("object")
}

/// Charges that are not `priced()`'s under [`KEY`], though in its final state: another
/// key, amount or currency, a missing one, or a key field that is no evidence.
fn other_charges() -> Vec<Value> {
    vec![
        charge_with(json!({"metadata": {"journal_key": "cj1-other"}})),
        charge_with(json!({"metadata": {"journal_key": 7}})),
        charge_with(json!({"metadata": "cj1-CANARYkey"})),
        charge_with(json!({"amount": 1251})),
        charge_with(json!({"amount": null})),
        charge_with(json!({"currency": "usd"})),
        charge_with(json!({"currency": null})),
    ]
}

#[test]
fn checkout_provider_lookup_bodies_are_read_strictly() {
    use super::service::provider::{Expected, Looked, classify_lookup};
    let expected = Expected::of(&priced());
    let lookup = |charges: Vec<Value>| {
        classify_lookup(&json!({"data": charges}).to_string(), KEY, &expected)
    };
    assert_eq!(
        lookup(vec![charge_with(json!({}))]),
        Looked::Found(priced_envelope("succeeded"))
    );
    // A provider that records no key is taken at its word; ISO codes ignore case.
    assert_eq!(
        lookup(vec![charge_with(json!({"metadata": null}))]),
        Looked::Found(priced_envelope("succeeded"))
    );
    assert_eq!(
        lookup(vec![charge_with(json!({"metadata": {}}))]),
        Looked::Found(priced_envelope("succeeded"))
    );
    let mut upper = priced_envelope("succeeded");
    upper.insert("currency".into(), json!("EUR"));
    assert_eq!(
        lookup(vec![charge_with(json!({"currency": "EUR"}))]),
        Looked::Found(upper)
    );
    assert_eq!(
        lookup(vec![charge_with(json!({"status": "failed"}))]),
        Looked::Declined
    );
    assert_eq!(lookup(Vec::new()), Looked::NotFound);
    // Another request's charge is no evidence about this one, succeeded or failed.
    for charge in other_charges() {
        assert_eq!(
            lookup(vec![charge.clone()]),
            Looked::Unavailable("lookup_mismatch"),
            "{charge}"
        );
        let mut failed = charge.clone();
        failed["status"] = json!("failed");
        assert_eq!(
            lookup(vec![failed]),
            Looked::Unavailable("lookup_mismatch"),
            "{charge}"
        );
    }
    for status in [json!("pending"), json!("processing"), json!(null)] {
        assert_eq!(
            lookup(vec![charge_with(json!({"status": status}))]),
            Looked::Unavailable("lookup_pending"),
            "{status}"
        );
    }
    let unavailable = [
        json!({"data": [{"status": "succeeded", "amount": "5"}]}).to_string(),
        json!({"data": [charge_with(json!({})), charge_with(json!({}))]}).to_string(),
        json!({"data": charge_with(json!({}))}).to_string(),
        json!({"data": ["ch_1"]}).to_string(),
        r#"{"data":[],"data":[]}"#.to_owned(),
        "not json".to_owned(),
        "{}".to_owned(),
    ];
    for body in unavailable {
        assert!(
            matches!(
                classify_lookup(&body, KEY, &expected),
                Looked::Unavailable(_)
            ),
            "{body}"
        );
    }
    // A request without an amount or currency owns only a charge without them.
    let bare = Expected::of(&json!({"sku": PAYLOAD_SKU}));
    let without = charge_with(json!({"amount": null, "currency": null}));
    assert!(matches!(
        classify_lookup(&json!({"data": [without]}).to_string(), KEY, &bare),
        Looked::Found(_)
    ));
    assert_eq!(
        classify_lookup(
            &json!({"data": [charge_with(json!({}))]}).to_string(),
            KEY,
            &bare
        ),
        Looked::Unavailable("lookup_mismatch")
    );
}

/// A provider answering every POST and lookup with the next of `answers` (status,
/// body), whatever was asked; its base URL.
async fn canned(answers: Vec<(u16, Value)>) -> String {
    use axum::extract::State;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};
    type Answers = Arc<Mutex<VecDeque<(u16, Value)>>>;
    async fn next(State(answers): State<Answers>) -> (axum::http::StatusCode, String) {
        let (status, body) = answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .unwrap_or((500, json!({})));
        (
            axum::http::StatusCode::from_u16(status).expect("status"),
            body.to_string(),
        )
    }
    let answers: Answers = Arc::new(Mutex::new(answers.into()));
    let router = axum::Router::new()
        .route("/v1/charges", axum::routing::post(next).get(next))
        .with_state(answers);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn checkout_provider_2xx_is_a_success_only_for_a_final_charge_of_the_request() {
    use super::service::provider::{Charges, Sent};
    let mut answers: Vec<(u16, Value)> = vec![
        (200, charge_with(json!({"status": "pending"}))),
        (201, charge_with(json!({"status": "failed"}))),
        (200, charge_with(json!({"status": null}))),
    ];
    answers.extend(other_charges().into_iter().map(|charge| (200, charge)));
    answers.push((
        200,
        charge_with(json!({"currency": "EUR", "metadata": null})),
    ));
    answers.push((200, charge_with(json!({}))));
    let url = canned(answers).await;
    let charges = Charges::new(
        format!("{url}/v1/charges").parse().expect("url"),
        std::time::Duration::from_secs(5),
    )
    .expect("client");
    let body = priced();
    let post = || charges.post(KEY, &body, std::time::Duration::from_secs(5));
    // Not final: pending, failed (a 2xx is no decline) or no status at all.
    for _ in 0..3 {
        assert_eq!(post().await, Sent::Ambiguous("provider_not_final"));
    }
    for charge in other_charges() {
        assert_eq!(
            post().await,
            Sent::Ambiguous("provider_mismatch"),
            "{charge}"
        );
    }
    let mut upper = priced_envelope("succeeded");
    upper.insert("currency".into(), json!("EUR"));
    assert_eq!(post().await, Sent::Charged(upper));
    assert_eq!(post().await, Sent::Charged(priced_envelope("succeeded")));
}

#[tokio::test]
async fn checkout_request_provider_finds_only_the_requests_charge() {
    use super::service::provider::{Charges, RequestProvider};
    use command_journal::{Provider as _, ProviderAnswer};
    let mut answers: Vec<(u16, Value)> = other_charges()
        .into_iter()
        .map(|charge| (200, json!({"data": [charge]})))
        .collect();
    answers.push((
        200,
        json!({"data": [charge_with(json!({"status": "pending"}))]}),
    ));
    answers.push((
        200,
        json!({"data": [charge_with(json!({"status": "failed"}))]}),
    ));
    answers.push((200, json!({"data": []})));
    answers.push((200, json!({"data": [charge_with(json!({}))]})));
    let url = canned(answers).await;
    let charges = Charges::new(
        format!("{url}/v1/charges").parse().expect("url"),
        std::time::Duration::from_secs(5),
    )
    .expect("client");
    let provider = RequestProvider::new(&charges, &priced());
    for charge in other_charges() {
        assert_eq!(
            provider.lookup(lookup_of(KEY)).await,
            ProviderAnswer::Unknown,
            "{charge}"
        );
    }
    assert_eq!(
        provider.lookup(lookup_of(KEY)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(
        provider.lookup(lookup_of(KEY)).await,
        ProviderAnswer::Declined
    );
    assert_eq!(
        provider.lookup(lookup_of(KEY)).await,
        ProviderAnswer::NotFound
    );
    match provider.lookup(lookup_of(KEY)).await {
        ProviderAnswer::Succeeded(envelope) => assert_eq!(
            envelope.canonical(),
            r#"{"amount":1250,"currency":"eur","id":"ch_1","status":"succeeded"}"#
        ),
        other => panic!("{other:?}"),
    }
    assert!(provider.called());
}

#[tokio::test]
async fn checkout_provider_answers_are_classified_as_the_contract_says() {
    use super::service::provider::{Charges, Sent};
    use super::stub_provider::Stub;
    let stub = Stub::new(Action::Charge, "ch_t");
    stub.script([
        Action::Status(402),
        Action::Status(400),
        Action::Status(409),
        Action::Status(429),
        Action::Status(503),
        Action::Status(301),
        Action::Lose,
    ]);
    let (stub, url) = super::start_stub(stub).await;
    let charges = Charges::new(
        format!("{url}/v1/charges").parse().expect("url"),
        std::time::Duration::from_millis(300),
    )
    .expect("client");
    let body = priced();
    let post = |key: &'static str| charges.post(key, &body, std::time::Duration::from_millis(300));
    assert_eq!(post("k1").await, Sent::Declined);
    assert_eq!(post("k2").await, Sent::Declined);
    assert_eq!(post("k3").await, Sent::Ambiguous("provider_busy"));
    assert_eq!(post("k4").await, Sent::Ambiguous("provider_busy"));
    assert_eq!(post("k5").await, Sent::Ambiguous("provider_5xx"));
    assert_eq!(
        post("k6").await,
        Sent::Ambiguous("provider_unexpected_status")
    );
    assert_eq!(post("k7").await, Sent::Ambiguous("provider_timeout"));
    let charged = post("k7").await;
    let envelope = json!({"id": "ch_t1", "amount": 1250, "currency": "eur", "status": "succeeded"});
    assert_eq!(
        charged,
        Sent::Charged(envelope.as_object().cloned().expect("object")),
        "the lost charge, answered again for its key"
    );
    assert_eq!(stub.charges().len(), 1);
    // The same key with another body is refused, as a real provider does.
    let other = charges
        .post(
            "k7",
            &json!({"amount": 1}),
            std::time::Duration::from_millis(300),
        )
        .await;
    assert_eq!(other, Sent::Declined);
    assert_eq!(stub.charges().len(), 1);
    use super::service::provider::{Expected, Looked};
    let expected = Expected::of(&body);
    assert!(matches!(
        charges.lookup("k7", &expected).await,
        Looked::Found(_)
    ));
    assert_eq!(charges.lookup("k1", &expected).await, Looked::NotFound);
    stub.script_lookups([LookupAction::Status(500)]);
    assert!(matches!(
        charges.lookup("k7", &expected).await,
        Looked::Unavailable(_)
    ));
    assert_eq!(stub.lookups(), ["k7", "k1", "k7"]);
    assert_eq!(stub.posts().len(), 9);
}

#[tokio::test]
async fn checkout_stub_provider_is_scripted_and_read_over_http() {
    use super::stub_provider::Stub;
    let (stub, url) = super::start_stub(Stub::new(Action::Charge, "ch_h")).await;
    let http = reqwest::Client::new();
    let script = |body: Value| http.post(format!("{url}/_stub/script")).json(&body).send();
    let refused = script(json!({"charges": ["explode"]}))
        .await
        .expect("answer");
    assert_eq!(refused.status().as_u16(), 400);
    let scripted = script(json!({"charges": ["decline", 503], "lookups": [502]}))
        .await
        .expect("answer");
    assert_eq!(scripted.status().as_u16(), 200);
    let post = |key: &'static str| {
        http.post(format!("{url}/v1/charges"))
            .header("Idempotency-Key", key)
            .json(&priced())
            .send()
    };
    assert_eq!(post("a").await.expect("answer").status().as_u16(), 402);
    assert_eq!(post("b").await.expect("answer").status().as_u16(), 503);
    assert_eq!(
        post("a").await.expect("answer").status().as_u16(),
        402,
        "kept"
    );
    let lookup = |key: &'static str| {
        http.get(format!("{url}/v1/charges"))
            .query(&[("idempotency_key", key)])
            .send()
    };
    assert_eq!(lookup("a").await.expect("answer").status().as_u16(), 502);
    let held: Value = lookup("a")
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(held["data"][0]["status"], "failed");
    let calls: Value = http
        .get(format!("{url}/_stub/calls"))
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(calls["posts"].as_array().map(Vec::len), Some(3));
    assert_eq!(calls["lookups"], json!(["a", "a"]));
    assert_eq!(calls["charges"][0]["idempotencyKey"], "a");
    assert_eq!(stub.charges().len(), 1, "the 503 made nothing");
}

/// A lookup of `key`, as the journal asks one.
fn lookup_of(key: &str) -> command_journal::sends::LookupRequest {
    command_journal::sends::LookupRequest {
        key: key.to_owned(),
        deadline: std::time::Duration::from_secs(30),
    }
}
