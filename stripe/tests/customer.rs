//! The customer in the loop, for PaymentIntents, against the Stripe stand-in: a card
//! that asks for 3-D Secure hands the customer its challenge; the challenge passed,
//! failed (still payable with another card until the journal asks to cancel) or
//! abandoned (canceled when asked) is read by id; a replayed 200 of an open intent
//! is read by id at once, never re-sent; after Stripe forgets the key the lookup finds
//! the intent; and no client secret reaches any output.

mod stand_in;

use command_journal_stripe::{
    Account, Charge, CustomerStep, Expected, LookupMethod, Retrieval, RetrieveAnswer, SecretKey,
    SendAnswer, Stripe, StripeConfig,
};
use serde_json::{Value, json};
use stand_in::{SECRET, StandIn};
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";
const SECRET_CANARY: &str = "CANARYclientSecret";

fn key(n: u64) -> String {
    format!("cj1-{n:064x}")
}

fn payload(payment_method: &str) -> Value {
    json!({"amount": 1250, "currency": "EUR", "paymentMethod": payment_method})
}

fn stripe(stand_in: &StandIn, lookup: LookupMethod) -> Stripe {
    let mut config = StripeConfig::new(
        SecretKey::new(SECRET).expect("key"),
        VERSION,
        Account::Own("acct_CANARYplatform".into()),
    );
    config.api_base = stand_in.url().to_owned();
    config.lookup = lookup;
    config.timeout = Duration::from_secs(10);
    Stripe::new(config).expect("client")
}

fn charge() -> Charge {
    Charge::from_parameters(&payload("pm_card_authenticationRequired")).expect("charge")
}

/// A read as a job makes it without a lease (`end_refusal` false): see
/// [`under_lease`] for a caller's return.
fn retrieval(replayable: bool, cancel: bool) -> Retrieval {
    Retrieval {
        replayable,
        cancel,
        end_refusal: false,
        deadline: Duration::from_secs(10),
    }
}

/// A read under the journal's lease before the window ended (the customer's return):
/// a refusal may be ended, nothing open is canceled.
fn under_lease() -> Retrieval {
    Retrieval {
        end_refusal: true,
        ..retrieval(true, false)
    }
}

/// Sends the key's create-and-confirm of a card that asks for 3-D Secure; its client
/// secret.
async fn challenged(stripe: &Stripe, key: &str) -> String {
    match stripe
        .create_and_confirm(key, &charge(), Duration::from_secs(10))
        .await
    {
        SendAnswer::CustomerMustAct(CustomerStep::Confirm {
            client_secret,
            next_action,
        }) => {
            assert_eq!(next_action, "use_stripe_sdk");
            client_secret
        }
        other => panic!("not the customer's step: {other:?}"),
    }
}

async fn retrieve(stripe: &Stripe, key: &str, retrieval: Retrieval) -> RetrieveAnswer {
    stripe
        .retrieve_intent(key, Some(&charge()), &Expected::of(&charge()), retrieval)
        .await
}

fn status(stand_in: &StandIn) -> (String, Value) {
    let intent = &stand_in.intents()[0];
    (
        intent["status"].as_str().expect("status").to_owned(),
        intent["cancellation_reason"].clone(),
    )
}

#[tokio::test]
async fn a_passed_challenge_is_read_by_id_as_the_payment() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(1);
    let secret = challenged(&stripe, &key).await;
    assert!(secret.contains(SECRET_CANARY));
    // Before the customer acts: still their step, the same secret, read by id.
    match retrieve(&stripe, &key, retrieval(true, false)).await {
        RetrieveAnswer::CustomerMustAct(CustomerStep::Confirm { client_secret, .. }) => {
            assert_eq!(client_secret, secret);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stand_in.authenticate(&secret, true), Some("succeeded"));
    match retrieve(&stripe, &key, retrieval(true, false)).await {
        RetrieveAnswer::Succeeded(fields) => assert_eq!(
            Value::Object(fields),
            json!({"id": "pi_CANARYstandin00000001", "amount": 1250, "currency": "eur", "status": "succeeded"})
        ),
        other => panic!("{other:?}"),
    }
    // One intent; the re-sends were replays, each followed by a read by id.
    assert_eq!(stand_in.intents().len(), 1);
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 3);
    assert!(creates.iter().skip(1).all(|seen| seen.replayed));
    let reads = stand_in.requests("GET", "/v1/payment_intents/pi_CANARYstandin00000001");
    assert_eq!(reads.len(), 2);
    assert!(
        stand_in
            .requests(
                "POST",
                "/v1/payment_intents/pi_CANARYstandin00000001/cancel"
            )
            .is_empty()
    );
    stand_in.assert_schemas_held();
}

/// A failed challenge leaves the intent in `requires_payment_method` with its error,
/// and the customer, who holds the client secret, may still pay on it with another
/// card: unless the journal asks to cancel, the adapter answers unknown and cancels
/// nothing, and the customer's second card is the payment.
#[tokio::test]
async fn a_failed_challenge_stays_payable_until_the_journal_asks_to_cancel() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(2);
    let secret = challenged(&stripe, &key).await;
    assert_eq!(
        stand_in.authenticate(&secret, false),
        Some("requires_payment_method")
    );
    for replayable in [true, false] {
        stand_in.advance(61);
        assert_eq!(
            retrieve(&stripe, &key, retrieval(replayable, false)).await,
            RetrieveAnswer::Unknown("requires_payment_method")
        );
    }
    assert_eq!(
        status(&stand_in),
        ("requires_payment_method".to_owned(), Value::Null)
    );
    let cancel = "/v1/payment_intents/pi_CANARYstandin00000001/cancel";
    assert!(
        stand_in.requests("POST", cancel).is_empty(),
        "no cancel asked"
    );
    // The customer picks another card on the same intent: the payment.
    assert_eq!(stand_in.confirm_again(&secret), Some("succeeded"));
    match retrieve(&stripe, &key, retrieval(true, false)).await {
        RetrieveAnswer::Succeeded(fields) => assert_eq!(fields["status"], "succeeded"),
        other => panic!("{other:?}"),
    }
    assert!(stand_in.requests("POST", cancel).is_empty());
    assert_eq!(stand_in.intents().len(), 1);
    stand_in.assert_schemas_held();
}

/// The customer's return after a failed challenge, a read under the journal's lease:
/// the refused intent is canceled and the answer is a final decline (the return page
/// tells the customer); an intent still waiting for its challenge is never canceled
/// by such a read (only a refusal is ended before the window ends).
#[tokio::test]
async fn a_failed_challenge_is_declined_on_the_customers_return_under_a_lease() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let waiting = key(13);
    challenged(&stripe, &waiting).await;
    assert!(matches!(
        retrieve(&stripe, &waiting, under_lease()).await,
        RetrieveAnswer::CustomerMustAct(_)
    ));
    let key = key(14);
    let secret = challenged(&stripe, &key).await;
    assert_eq!(
        stand_in.authenticate(&secret, false),
        Some("requires_payment_method")
    );
    assert_eq!(
        retrieve(&stripe, &key, under_lease()).await,
        RetrieveAnswer::Declined("declined")
    );
    let states: Vec<Value> = stand_in
        .intents()
        .iter()
        .map(|intent| intent["status"].clone())
        .collect();
    assert_eq!(states, ["requires_action", "canceled"]);
    let cancels = stand_in.requests(
        "POST",
        "/v1/payment_intents/pi_CANARYstandin00000002/cancel",
    );
    assert_eq!(cancels.len(), 1, "the refused intent canceled once");
    assert_eq!(
        stand_in.confirm_again(&secret),
        None,
        "nothing payable on it"
    );
    stand_in.assert_schemas_held();
}

/// A failed challenge the customer never retries: once the journal asks (its window
/// ended), the adapter cancels the intent and the refusal is final, declined; read
/// again, declined without a second cancel.
#[tokio::test]
async fn a_failed_challenge_is_canceled_and_declined_when_asked() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(12);
    let secret = challenged(&stripe, &key).await;
    assert_eq!(
        stand_in.authenticate(&secret, false),
        Some("requires_payment_method")
    );
    assert_eq!(
        retrieve(&stripe, &key, retrieval(true, true)).await,
        RetrieveAnswer::Declined("declined")
    );
    assert_eq!(status(&stand_in), ("canceled".to_owned(), Value::Null));
    assert_eq!(
        stand_in.confirm_again(&secret),
        None,
        "nothing can be paid on it any more"
    );
    for cancel in [true, false] {
        assert_eq!(
            retrieve(&stripe, &key, retrieval(true, cancel)).await,
            RetrieveAnswer::Declined("declined")
        );
    }
    let cancels = stand_in.requests(
        "POST",
        "/v1/payment_intents/pi_CANARYstandin00000001/cancel",
    );
    assert_eq!(cancels.len(), 1);
    assert_eq!(stand_in.intents().len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn an_abandoned_challenge_is_canceled_when_asked_and_closed() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(3);
    let secret = challenged(&stripe, &key).await;
    stand_in.advance(3_600);
    // Not asked to cancel: still the customer's step.
    assert!(matches!(
        retrieve(&stripe, &key, retrieval(true, false)).await,
        RetrieveAnswer::CustomerMustAct(_)
    ));
    // Asked (the journal's window passed): canceled as abandoned, closed.
    assert_eq!(
        retrieve(&stripe, &key, retrieval(true, true)).await,
        RetrieveAnswer::Closed
    );
    assert_eq!(
        status(&stand_in),
        ("canceled".to_owned(), json!("abandoned"))
    );
    assert_eq!(
        stand_in.authenticate(&secret, true),
        None,
        "the challenge is gone"
    );
    // Asked again: already canceled, closed, no second cancel.
    assert_eq!(
        retrieve(&stripe, &key, retrieval(true, true)).await,
        RetrieveAnswer::Closed
    );
    let cancels = stand_in.requests(
        "POST",
        "/v1/payment_intents/pi_CANARYstandin00000001/cancel",
    );
    assert_eq!(cancels.len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_customer_who_pays_before_the_cancel_is_the_payment() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(4);
    let secret = challenged(&stripe, &key).await;
    stand_in.authenticate(&secret, true);
    // Asked to cancel, but it succeeded first: nothing to cancel, the payment.
    assert!(matches!(
        retrieve(&stripe, &key, retrieval(true, true)).await,
        RetrieveAnswer::Succeeded(_)
    ));
    assert!(
        stand_in
            .requests(
                "POST",
                "/v1/payment_intents/pi_CANARYstandin00000001/cancel"
            )
            .is_empty()
    );
    assert_eq!(status(&stand_in).0, "succeeded");
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_replayed_open_intent_is_read_by_id_not_resent() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(5);
    let secret = challenged(&stripe, &key).await;
    stand_in.authenticate(&secret, true);
    // The replay still says `requires_action` (the first answer): only its id is used.
    let replay = stripe
        .create_and_confirm(&key, &charge(), Duration::from_secs(10))
        .await;
    let SendAnswer::ReplayedOpen(id) = replay else {
        panic!("{replay:?}");
    };
    assert_eq!(
        format!("{:?}", SendAnswer::ReplayedOpen(id.clone())),
        "ReplayedOpen(<redacted>)"
    );
    let now = stripe
        .retrieve_by_id(&id, &key, &Expected::of(&charge()), Duration::from_secs(10))
        .await;
    assert!(matches!(now, RetrieveAnswer::Succeeded(_)), "{now:?}");
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 2);
    assert!(creates[1].replayed);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn after_the_key_is_forgotten_the_lookup_finds_the_intent_by_its_key() {
    for lookup in [LookupMethod::Search, LookupMethod::List] {
        let stand_in = StandIn::start().await;
        let stripe = stripe(&stand_in, lookup);
        let key = key(6);
        let secret = challenged(&stripe, &key).await;
        stand_in.advance(19 * 3_600); // past the 18 h cutoff: no re-send of the key
        assert!(matches!(
            retrieve(&stripe, &key, retrieval(false, false)).await,
            RetrieveAnswer::CustomerMustAct(_)
        ));
        assert_eq!(
            retrieve(&stripe, &key, retrieval(false, true)).await,
            RetrieveAnswer::Closed
        );
        assert_eq!(stand_in.authenticate(&secret, true), None);
        // The key was never sent again.
        assert_eq!(stand_in.creates().len(), 1, "{lookup:?}");
        stand_in.assert_schemas_held();
    }
}

#[tokio::test]
async fn a_retrieve_finds_nothing_for_a_key_never_sent_and_says_unknown() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    stand_in.advance(19 * 3_600);
    assert_eq!(
        retrieve(&stripe, &key(7), retrieval(false, true)).await,
        RetrieveAnswer::Unknown("lookup_not_found")
    );
    assert!(stand_in.creates().is_empty());
}

#[tokio::test]
async fn no_client_secret_is_in_any_debug_or_code() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(8);
    let step = stripe
        .create_and_confirm(&key, &charge(), Duration::from_secs(10))
        .await;
    let read = retrieve(&stripe, &key, retrieval(true, false)).await;
    let outputs = [
        format!("{step:?}"),
        step.code().to_owned(),
        format!("{read:?}"),
        read.code().to_owned(),
        format!("{:?}", retrieve(&stripe, &key, retrieval(true, true)).await),
    ];
    assert!(outputs[0].contains("use_stripe_sdk"), "{outputs:?}");
    for output in &outputs {
        assert!(
            !output.contains(SECRET_CANARY),
            "a client secret in {output}"
        );
        assert!(!output.contains("pi_CANARY"), "an intent id in {output}");
    }
}

#[test]
fn nothing_in_the_adapter_logs() {
    // The client secret and the hosted page's URL pass through the adapter's memory
    // only: no line of it writes to a log, stdout or stderr.
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("the sources").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source");
            for marker in [
                "tracing::",
                "log::",
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "dbg!(",
            ] {
                if text.contains(marker) {
                    found.push(format!("{}: {marker}", path.display()));
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(found.is_empty(), "the adapter logs: {found:?}");
}

#[tokio::test]
async fn a_recovery_jobs_retrieve_never_resends_the_key() {
    use command_journal::Provider;
    use command_journal::sends::{AttemptNumber, RetrieveRequest};
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in, LookupMethod::Search);
    let key = key(9);
    let secret = challenged(&stripe, &key).await;
    stand_in.advance(61); // the search shows the intent
    stand_in.authenticate(&secret, true);
    let request = RetrieveRequest {
        key: key.clone(),
        parameters: payload("pm_card_authenticationRequired"),
        attempt: AttemptNumber::FIRST,
        replayable: true,
        cancel: false,
        end_refusal: false,
        act_by: command_journal::Timestamp::from_micros(1_900_000_000_000_000).expect("a time"),
        deadline: Duration::from_secs(10),
    };
    let answer = stripe.recovery().retrieve(request.clone()).await;
    assert!(
        matches!(answer, command_journal::ProviderAnswer::Succeeded(_)),
        "{answer:?}"
    );
    assert_eq!(stand_in.creates().len(), 1, "a recovery job sent the key");
    // The payment's own provider may replay it.
    let parameters = payload("pm_card_authenticationRequired");
    let answer = stripe.payment(&parameters).retrieve(request).await;
    assert!(
        matches!(answer, command_journal::ProviderAnswer::Succeeded(_)),
        "{answer:?}"
    );
    assert_eq!(stand_in.creates().len(), 2);
    stand_in.assert_schemas_held();
}
