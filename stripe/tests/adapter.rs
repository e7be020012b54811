//! The adapter against the Stripe stand-in: every row of the README's table, the
//! lookups by search and by listing, a concurrent request with the key, the stored
//! 500 and its replay, and the secret key in no output.

mod stand_in;

use command_journal::sends::LookupRequest;
use command_journal::sends::{AttemptNumber, CustomerAction, ProviderLookup};
use command_journal::{Provider, ProviderAnswer, SendRequest};
use command_journal_stripe::{
    Account, ConfigError, Expected, LookupAnswer, LookupMethod, SecretKey, SendAnswer, Stripe,
    StripeConfig,
};
use serde_json::{Value, json};
use stand_in::{Fault, SECRET, StandIn};
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";
const ACCOUNT: &str = "acct_CANARYplatform";
const CONNECTED: &str = "acct_CANARYconnected";
const PAYLOAD_CANARY: &str = "CANARYskuQ8";

fn key(n: u64) -> String {
    format!("cj1-{n:064x}")
}

fn payload(payment_method: &str) -> Value {
    json!({"amount": 1250, "currency": "EUR", "paymentMethod": payment_method, "sku": PAYLOAD_CANARY})
}

fn config(stand_in: &StandIn, account: Account, lookup: LookupMethod) -> StripeConfig {
    let mut config = StripeConfig::new(SecretKey::new(SECRET).expect("key"), VERSION, account);
    config.api_base = stand_in.url().to_owned();
    config.lookup = lookup;
    config.timeout = Duration::from_secs(10);
    config
}

fn stripe(stand_in: &StandIn) -> Stripe {
    Stripe::new(config(
        stand_in,
        Account::Own(ACCOUNT.into()),
        LookupMethod::Search,
    ))
    .expect("client")
}

fn charge(payment_method: &str) -> command_journal_stripe::Charge {
    command_journal_stripe::Charge::from_parameters(&payload(payment_method)).expect("charge")
}

async fn send(stripe: &Stripe, key: &str, payment_method: &str) -> SendAnswer {
    stripe
        .create_and_confirm(key, &charge(payment_method), Duration::from_secs(10))
        .await
}

fn request(key: &str, parameters: &Value) -> SendRequest {
    SendRequest {
        key: key.to_owned(),
        parameters: parameters.clone(),
        deadline: Duration::from_secs(10),
        attempt: AttemptNumber::FIRST,
        resend: false,
        act_by: command_journal::Timestamp::from_micros(1_900_000_000_000_000).expect("a time"),
    }
}

/// A lookup of `key`, as the journal asks one.
fn lookup(key: &str) -> LookupRequest {
    LookupRequest {
        key: key.to_owned(),
        deadline: Duration::from_secs(10),
    }
}

fn expected(payment_method: &str) -> Expected {
    Expected::of(&charge(payment_method))
}

/// The code of an answer that is not a success.
fn code(answer: &SendAnswer) -> (&'static str, &'static str) {
    let kind = match answer {
        SendAnswer::Succeeded(_) => "succeeded",
        SendAnswer::Declined(_) => "declined",
        SendAnswer::Unknown(_) => "unknown",
        SendAnswer::ReplayedUnknown => "replayed_unknown",
        SendAnswer::Indeterminate => "indeterminate",
        SendAnswer::Configuration(_) => "configuration",
        SendAnswer::Defect(_) => "defect",
        SendAnswer::CustomerMustAct(_) => "customer_must_act",
        SendAnswer::ReplayedOpen(_) => "replayed_open",
    };
    (kind, answer.code())
}

#[tokio::test]
async fn every_intent_state_on_a_send_maps_as_the_table_says() {
    // (payment method, the replay's kind and code, the journal's answer to the fresh
    // send, the provider's code of it)
    let table: [(&str, &str, &str, &str, Option<&str>); 7] = [
        ("pm_card_visa", "succeeded", "succeeded", "succeeded", None),
        (
            "pm_card_chargeDeclined",
            "declined",
            "declined",
            "declined",
            Some("declined"),
        ),
        (
            "pm_standin_refused",
            "declined",
            "declined",
            "declined",
            Some("declined"),
        ),
        (
            "pm_standin_canceled",
            "declined",
            "declined",
            "declined",
            Some("declined"),
        ),
        // A fresh `requires_action` hands the customer the challenge; its replay is
        // the first answer's state, read by id at once.
        (
            "pm_card_authenticationRequired",
            "replayed_open",
            "provider_replayed_open",
            "customer",
            Some("customer_must_act"),
        ),
        (
            "pm_standin_processing",
            "replayed_open",
            "provider_replayed_open",
            "ambiguous",
            Some("processing"),
        ),
        (
            "pm_card_unknownToStripe",
            "declined",
            "invalid_request",
            "declined",
            Some("invalid_request"),
        ),
    ];
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    for (n, (payment_method, kind, code_, result, noted)) in table.into_iter().enumerate() {
        let key = key(n as u64);
        let parameters = payload(payment_method);
        let provider = stripe.payment(&parameters);
        let sent = provider.send(request(&key, &parameters)).await;
        let answer = send(&stripe, &key, payment_method).await; // the replay of the same key
        assert_eq!(code(&answer), (kind, code_), "{payment_method}");
        let journal = match sent {
            ProviderAnswer::Succeeded(envelope) => {
                assert_eq!(
                    envelope.value(),
                    &json!({"id": "pi_CANARYstandin00000001", "amount": 1250, "currency": "eur", "status": "succeeded"}),
                    "the envelope holds the id, amount, currency and status only"
                );
                "succeeded"
            }
            ProviderAnswer::Declined => "declined",
            ProviderAnswer::Unknown => "ambiguous",
            other => customer_or_panic(other),
        };
        assert_eq!(journal, result, "{payment_method}");
        assert_eq!(provider.code(), noted, "{payment_method}");
    }
    // One intent per key but for the refused request, and every replay replayed.
    assert_eq!(stand_in.intents().len(), 6);
    let creates = stand_in.creates();
    assert_eq!(creates.len(), 14);
    assert!(creates.iter().skip(1).step_by(2).all(|seen| seen.replayed));
    stand_in.assert_schemas_held();
}

/// `customer` for the journal's "the customer must act"; a panic for any other answer
/// a send cannot give.
fn customer_or_panic(answer: ProviderAnswer) -> &'static str {
    match answer {
        ProviderAnswer::CustomerMustAct(CustomerAction::Confirm {
            client_secret,
            next_action,
        }) => {
            assert!(
                client_secret
                    .expose()
                    .ends_with("_secret_CANARYclientSecret")
            );
            assert_eq!(next_action.as_str(), "use_stripe_sdk");
            "customer"
        }
        other => panic!("a send answers no {other:?}"),
    }
}

#[tokio::test]
async fn every_refusal_before_an_intent_maps_as_the_table_says() {
    let stand_in = StandIn::with_accounts(&[CONNECTED]).await;
    let stripe = stripe(&stand_in);
    // 429 and 503 before execution: nothing stored, the re-send charges.
    stand_in.fault(Fault::Unstored(429));
    assert_eq!(
        code(&send(&stripe, &key(1), "pm_card_visa").await),
        ("unknown", "provider_rate_limited")
    );
    assert_eq!(
        code(&send(&stripe, &key(1), "pm_card_visa").await).0,
        "succeeded"
    );
    stand_in.fault(Fault::Unstored(503));
    assert_eq!(
        code(&send(&stripe, &key(2), "pm_card_visa").await),
        ("unknown", "provider_5xx")
    );
    assert_eq!(
        code(&send(&stripe, &key(2), "pm_card_visa").await).0,
        "succeeded"
    );
    // The same key with other parameters: a defect, never evidence.
    let other = command_journal_stripe::Charge::from_parameters(
        &json!({"amount": 999, "currency": "eur", "paymentMethod": "pm_card_visa"}),
    )
    .expect("charge");
    let mismatch = stripe
        .create_and_confirm(&key(1), &other, Duration::from_secs(10))
        .await;
    assert_eq!(code(&mismatch), ("defect", "provider_idempotency_mismatch"));
    let parameters = json!({"amount": 999, "currency": "eur", "paymentMethod": "pm_card_visa"});
    let journal = stripe
        .payment(&parameters)
        .send(request(&key(1), &parameters))
        .await;
    assert_eq!(journal, ProviderAnswer::Unknown);
    // Configuration: a wrong key, an account the key may not act for, a wrong base.
    let mut wrong_key = config(
        &stand_in,
        Account::Own(ACCOUNT.into()),
        LookupMethod::Search,
    );
    wrong_key.secret_key = SecretKey::new("sk_test_anotherKey").expect("key");
    let wrong_key = Stripe::new(wrong_key).expect("client");
    assert_eq!(
        code(&send(&wrong_key, &key(3), "pm_card_visa").await),
        ("configuration", "provider_authentication")
    );
    let foreign = Stripe::new(config(
        &stand_in,
        Account::Connected("acct_notConnected".into()),
        LookupMethod::Search,
    ))
    .expect("client");
    assert_eq!(
        code(&send(&foreign, &key(3), "pm_card_visa").await),
        ("configuration", "provider_permission")
    );
    let mut misplaced = config(
        &stand_in,
        Account::Own(ACCOUNT.into()),
        LookupMethod::Search,
    );
    misplaced.api_base = format!("{}/elsewhere", stand_in.url());
    let misplaced = Stripe::new(misplaced).expect("client");
    assert_eq!(
        code(&send(&misplaced, &key(3), "pm_card_visa").await),
        ("configuration", "provider_not_found")
    );
    // Each configuration error leaves the key sendable: nothing ran.
    let parameters = payload("pm_card_visa");
    let provider = wrong_key.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(3), &parameters)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(provider.code(), Some("provider_authentication"));
    assert_eq!(
        code(&send(&stripe, &key(3), "pm_card_visa").await).0,
        "succeeded"
    );
    // Nothing listens: unreachable.
    let mut closed = config(
        &stand_in,
        Account::Own(ACCOUNT.into()),
        LookupMethod::Search,
    );
    closed.api_base = "http://127.0.0.1:9".to_owned();
    let closed = Stripe::new(closed).expect("client");
    assert_eq!(
        code(&send(&closed, &key(4), "pm_card_visa").await),
        ("unknown", "provider_unreachable")
    );
    assert_eq!(stand_in.intents().len(), 3);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_stored_500_is_replayed_and_only_a_lookup_can_tell() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    for (n, create_intent) in [(1, true), (2, false)] {
        stand_in.fault(Fault::StoredServerError { create_intent });
        let key = key(n);
        // A fresh 500: indeterminate (Stripe may still complete it).
        assert_eq!(
            code(&send(&stripe, &key, "pm_card_visa").await),
            ("indeterminate", "provider_500")
        );
        let parameters = payload("pm_card_visa");
        let provider = stripe.payment(&parameters);
        for _ in 0..3 {
            // The key can no longer tell: the journal looks it up, never re-sends it.
            assert_eq!(
                provider.send(request(&key, &parameters)).await,
                ProviderAnswer::ReplayedUnknown
            );
            assert_eq!(provider.code(), Some("provider_replayed_5xx"));
        }
        stand_in.advance(60);
        let found = provider.lookup(lookup(&key)).await;
        match create_intent {
            true => assert!(matches!(found, ProviderAnswer::Succeeded(_)), "{found:?}"),
            false => assert_eq!(found, ProviderAnswer::NotFound),
        }
    }
    assert_eq!(stand_in.intents().len(), 1);
    // 24 h after its first use the key is pruned: the same key makes a new intent.
    // The journal never sends it then (its cutoff is at 18 h).
    stand_in.advance(86_400);
    assert_eq!(
        code(&send(&stripe, &key(1), "pm_card_visa").await).0,
        "succeeded"
    );
    assert_eq!(stand_in.intents().len(), 2);
    stand_in.assert_schemas_held();
}

/// Stripe's remediation completes a stored 500 half an hour later: until then the key
/// replays the 500 and the lookup finds nothing; from then on it finds the intent,
/// made under the same key, the only one.
#[tokio::test]
async fn a_stored_500_rolled_forward_later_is_found_under_the_same_key() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1_800 });
    let parameters = payload("pm_card_visa");
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(1), &parameters)).await,
        ProviderAnswer::Indeterminate
    );
    assert_eq!(provider.code(), Some("provider_500"));
    for _ in 0..2 {
        stand_in.advance(600);
        assert_eq!(
            provider.lookup(lookup(&key(1))).await,
            ProviderAnswer::NotFound
        );
        assert_eq!(
            provider.send(request(&key(1), &parameters)).await,
            ProviderAnswer::ReplayedUnknown
        );
    }
    assert!(stand_in.intents().is_empty());
    stand_in.advance(600);
    let found = provider.lookup(lookup(&key(1))).await;
    let ProviderAnswer::Succeeded(envelope) = found else {
        panic!("{found:?}");
    };
    let intents = stand_in.intents();
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0]["created"], json!(stand_in::START + 1_800));
    assert_eq!(intents[0]["metadata"]["journal_key"], json!(key(1)));
    assert!(envelope.canonical().contains("\"status\":\"succeeded\""));
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_concurrent_request_with_the_key_is_a_409_and_a_later_resend_gets_the_intent() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    let parameters = payload("pm_card_visa");
    let key = key(7);
    stand_in.hold_next();
    let first = {
        let stripe = stripe.clone();
        let key = key.clone();
        tokio::spawn(async move { send(&stripe, &key, "pm_card_visa").await })
    };
    stand_in.entered(1).await;
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key, &parameters)).await,
        ProviderAnswer::Unknown
    );
    assert_eq!(provider.code(), Some("provider_key_in_use"));
    stand_in.release();
    let first = first.await.expect("the first send");
    let resend = provider.send(request(&key, &parameters)).await;
    let ProviderAnswer::Succeeded(envelope) = resend else {
        panic!("the re-send with the same key: {resend:?}");
    };
    assert_eq!(
        SendAnswer::Succeeded(envelope.value().as_object().cloned().expect("object")),
        first
    );
    assert_eq!(stand_in.intents().len(), 1);
    let keys: Vec<_> = stand_in
        .creates()
        .into_iter()
        .map(|s| (s.idempotency_key, s.status))
        .collect();
    assert_eq!(
        keys,
        [
            (Some(key.clone()), 409),
            (Some(key.clone()), 200),
            (Some(key), 200)
        ]
    );
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_send_past_its_deadline_is_unknown() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    stand_in.hold_next();
    let sent = stripe
        .create_and_confirm(&key(1), &charge("pm_card_visa"), Duration::from_millis(200))
        .await;
    assert_eq!(code(&sent), ("unknown", "provider_timeout"));
    stand_in.release();
    stand_in.answered(1).await;
    // The intent exists: a timeout is never a decline.
    assert_eq!(stand_in.intents().len(), 1);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_send_carries_the_key_version_account_and_form_and_nothing_else() {
    let stand_in = StandIn::with_accounts(&[CONNECTED]).await;
    for (account, header) in [
        (Account::Own(ACCOUNT.into()), None),
        (
            Account::Connected(CONNECTED.into()),
            Some(CONNECTED.to_owned()),
        ),
    ] {
        let stripe = Stripe::new(config(&stand_in, account, LookupMethod::Search)).expect("client");
        let parameters = payload("pm_card_visa");
        let sent = stripe
            .payment(&parameters)
            .send(request(&key(1), &parameters))
            .await;
        assert!(matches!(sent, ProviderAnswer::Succeeded(_)), "{sent:?}");
        let seen = stand_in.creates().pop().expect("a create");
        assert_eq!(seen.idempotency_key.as_deref(), Some(key(1).as_str()));
        assert_eq!(seen.stripe_version.as_deref(), Some(VERSION));
        assert_eq!(seen.stripe_account, header);
        assert!(seen.authorized);
        assert_eq!(
            seen.parameters,
            json!({
                "amount": 1250,
                "currency": "eur",
                "confirm": true,
                "payment_method": "pm_card_visa",
                "payment_method_types": ["card"],
                "metadata": {"journal_key": key(1)},
            })
        );
    }
    // Keys are per account: two intents, one on each.
    assert_eq!(stand_in.intents().len(), 2);
    assert!(!format!("{:?}", stand_in.seen()).contains(PAYLOAD_CANARY));
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn search_finds_the_intent_only_after_its_lag_and_maps_each_state() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    for (n, payment_method) in [
        "pm_card_visa",
        "pm_card_chargeDeclined",
        "pm_standin_canceled",
        "pm_card_authenticationRequired",
        "pm_standin_processing",
    ]
    .into_iter()
    .enumerate()
    {
        let _ = send(&stripe, &key(n as u64), payment_method).await;
    }
    // Inside the lag Stripe's search sees nothing; its "not found" is confirmed by
    // the listing, read after write, which answers for every intent at once.
    let inside = [
        stripe.find(&key(0), &expected("pm_card_visa")).await,
        stripe.find(&key(1), &expected("x")).await,
        stripe.find(&key(9), &expected("x")).await,
    ];
    assert!(matches!(inside[0], LookupAnswer::Found(_)), "{inside:?}");
    assert_eq!(inside[1], LookupAnswer::Declined);
    assert_eq!(inside[2], LookupAnswer::NotFound);
    stand_in.advance(60);
    let found = stripe.find(&key(0), &expected("pm_card_visa")).await;
    assert_eq!(
        found,
        LookupAnswer::Found(
            json!({"id": "pi_CANARYstandin00000001", "amount": 1250, "currency": "eur", "status": "succeeded"})
                .as_object()
                .cloned()
                .expect("object")
        )
    );
    assert_eq!(
        stripe.find(&key(1), &expected("x")).await,
        LookupAnswer::Declined
    );
    assert_eq!(
        stripe.find(&key(2), &expected("x")).await,
        LookupAnswer::Declined
    );
    assert_eq!(
        stripe.find(&key(3), &expected("x")).await,
        LookupAnswer::Unavailable("lookup_pending")
    );
    assert_eq!(
        stripe.find(&key(4), &expected("x")).await,
        LookupAnswer::Unavailable("lookup_pending")
    );
    assert_eq!(
        stripe.find(&key(9), &expected("x")).await,
        LookupAnswer::NotFound
    );
    // Another request's amount under the key is no evidence; the key alone (a
    // recovery job) is.
    let other = Expected::of(
        &command_journal_stripe::Charge::from_parameters(&json!({"amount": 5, "currency": "eur"}))
            .expect("charge"),
    );
    assert_eq!(
        stripe.find(&key(0), &other).await,
        LookupAnswer::Unavailable("lookup_mismatch")
    );
    assert!(matches!(
        stripe.recovery().lookup(lookup(&key(0))).await,
        ProviderAnswer::Succeeded(_)
    ));
    assert_eq!(
        stripe
            .recovery()
            .send(request(&key(0), &payload("pm_card_visa")))
            .await,
        ProviderAnswer::Unknown
    );
    // Where search is not offered, every lookup is unavailable, never not found.
    stand_in.search_unavailable();
    assert_eq!(
        stripe.find(&key(9), &expected("x")).await,
        LookupAnswer::Unavailable("search_unavailable")
    );
    let seen = stand_in.seen();
    let searches = seen.iter().filter(|s| s.path.ends_with("/search"));
    assert!(
        searches
            .clone()
            .all(|s| s.stripe_version.as_deref() == Some(VERSION))
    );
    assert_eq!(searches.count(), 12);
    // A listing behind each search that found nothing (the three inside the lag, key
    // 9 after it), none behind the others nor behind a search Stripe does not offer.
    let listings = seen
        .iter()
        .filter(|s| s.method == "GET" && s.path.ends_with("/v1/payment_intents"));
    assert_eq!(listings.count(), 4);
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn the_listing_reads_after_write_across_pages_and_within_its_window() {
    let stand_in = StandIn::start().await;
    let stripe = Stripe::new(config(
        &stand_in,
        Account::Own(ACCOUNT.into()),
        LookupMethod::List,
    ))
    .expect("client");
    let stripe = stripe.with_clock(std::sync::Arc::new(StandInClock(stand_in.clone())));
    let _ = send(&stripe, &key(0), "pm_card_visa").await;
    // 150 newer intents of other keys: ours is on the second page.
    for n in 1..=150 {
        let _ = send(&stripe, &key(n), "pm_card_chargeDeclined").await;
    }
    // No lag: found at once.
    assert!(matches!(
        stripe.find(&key(0), &expected("x")).await,
        LookupAnswer::Found(_)
    ));
    assert_eq!(
        stripe.find(&key(150), &expected("x")).await,
        LookupAnswer::Declined
    );
    assert_eq!(
        stripe.find(&key(999), &expected("x")).await,
        LookupAnswer::NotFound
    );
    let lists = stand_in
        .seen()
        .into_iter()
        .filter(|s| s.method == "GET")
        .count();
    assert_eq!(lists, 6, "two pages each");
    // The window is the retention and an hour: an older intent is not listed (the
    // plan's final_state lookup keeps the journal from taking any "not found", and
    // the job declares what the listing reads: the key store).
    stand_in.advance(86_400 + 3_601);
    assert_eq!(
        stripe.find(&key(0), &expected("x")).await,
        LookupAnswer::NotFound
    );
    assert_eq!(
        stripe
            .plan(&payload("pm_card_visa"))
            .expect("plan")
            .lookup(),
        ProviderLookup::FinalState
    );
    assert_eq!(
        stripe.account().expect("account").lookup(),
        Some(ProviderLookup::FinalState)
    );
    stand_in.assert_schemas_held();
}

/// The journal's clock, read from the stand-in's.
struct StandInClock(StandIn);

impl command_journal::Clock for StandInClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.0.now(), 0).expect("a time")
    }
}

#[tokio::test]
async fn the_plan_is_the_clients_and_its_account_the_recovery_jobs() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    let plan = stripe.plan(&payload("pm_card_visa")).expect("plan");
    // Stripe may complete a request it never answered: no lookup proves an absence.
    assert_eq!(plan.lookup(), ProviderLookup::FinalState);
    let account = stripe.account().expect("account");
    let same = command_journal::ProviderAccount::new("stripe", ACCOUNT, "test").expect("account");
    // The job declares `final_state`: its "not found" proves no absence of any plan,
    // one bound `durable` before plans were `final_state` included.
    assert_eq!(
        account,
        same.clone().with_lookup(ProviderLookup::FinalState)
    );
    assert_eq!(plan.provider_account(), same);
    assert!(!account.lookup_covers(plan.lookup()));
    assert!(!account.lookup_covers(ProviderLookup::Durable));
    let mut config = stripe.config().clone();
    config.lookup = LookupMethod::List;
    let listing = Stripe::new(config).expect("client");
    let listing = listing.account().expect("account");
    assert_eq!(listing.lookup(), Some(ProviderLookup::FinalState));
    assert_eq!(stripe.mode(), "test");
    assert_eq!(SecretKey::new("rk_live_abc").expect("key").mode(), "live");
}

#[tokio::test]
async fn the_secret_key_is_in_no_output() {
    let stand_in = StandIn::start().await;
    let stripe = stripe(&stand_in);
    let parameters = payload("pm_card_visa");
    let provider = stripe.payment(&parameters);
    let mut outputs = vec![
        format!("{:?}", SecretKey::new(SECRET).expect("key")),
        format!("{:?}", stripe.config()),
        format!("{stripe:?}"),
        format!("{provider:?}"),
    ];
    for sent in [
        provider.send(request(&key(1), &parameters)).await,
        Stripe::new({
            let mut closed = config(
                &stand_in,
                Account::Own(ACCOUNT.into()),
                LookupMethod::Search,
            );
            closed.api_base = "http://127.0.0.1:9".into();
            closed
        })
        .expect("client")
        .payment(&parameters)
        .send(request(&key(2), &parameters))
        .await,
    ] {
        outputs.push(format!("{sent:?}"));
        if let ProviderAnswer::Succeeded(envelope) = &sent {
            outputs.push(envelope.canonical().to_owned());
        }
    }
    outputs.push(format!(
        "{:?}",
        send(&stripe, &key(3), "pm_card_chargeDeclined").await
    ));
    outputs.push(format!("{:?}", stripe.find(&key(1), &expected("x")).await));
    for refused in [
        "sk_test_",
        SECRET.replace('_', "-").as_str(),
        &format!("{SECRET} "),
    ] {
        let error = SecretKey::new(refused).expect_err("refused");
        assert_eq!(error, ConfigError::SecretKey);
        outputs.push(error.to_string());
    }
    let secret_part = &SECRET["sk_test_".len()..];
    for output in &outputs {
        assert!(!output.contains(secret_part), "the secret key in {output}");
        assert!(
            !output.contains("CANARYclientSecret"),
            "a client secret in {output}"
        );
        assert!(
            !output.contains(PAYLOAD_CANARY),
            "a payload value in {output}"
        );
    }
    stand_in.assert_schemas_held();
}
