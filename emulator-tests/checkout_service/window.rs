//! The customer's window the service is configured with (`CUSTOMER_WINDOW_SECONDS`),
//! end to end on the Stripe stand-in: an abandoned 3-D Secure intent is canceled by
//! the recovery job once the window (one hour, not the 18 h cutoff) ended, and not a
//! second before; the command fails with nothing charged, under one key. The job's
//! client carries no window: it reads the window from the stored plan.

use super::service::recovery::{self, JobSettings};
use super::stripe::payment;
use super::stripe::stand_in::{SECRET, StandIn};
use super::webhooks::{advance, quiet};
use super::{Options, Service, command_id, start_service};
use command_journal::Journal;
use command_journal::recovery::{RecoverOptions, Recovered};
use serde_json::json;

/// One hour.
const WINDOW: i64 = 3_600;

/// A card that asks for 3-D Secure.
const AUTHENTICATED: &str = "pm_card_authenticationRequired";

/// The service on Stripe at `stand_in` with a one-hour customer window.
async fn service_on(stand_in: &StandIn) -> Service {
    let now = chrono::DateTime::from_timestamp(stand_in.now(), 0).expect("a time");
    start_service(Options {
        env: vec![
            ("PROVIDER_NAME", "stripe".to_owned()),
            ("STRIPE_SECRET_KEY", SECRET.to_owned()),
            ("STRIPE_API_BASE", stand_in.url().to_owned()),
            ("PROVIDER_TIMEOUT_MS", "5000".to_owned()),
            ("CUSTOMER_WINDOW_SECONDS", WINDOW.to_string()),
        ],
        now: Some(now),
        ..Options::default()
    })
    .await
}

/// One run of the recovery job on the service's journal, with a client of the
/// service's account and no window of its own.
async fn job(service: &Service, stand_in: &StandIn) -> command_journal::recovery::Recovery {
    let stripe = super::stripe::client_on(stand_in);
    assert_eq!(stripe.config().customer_window_seconds, None);
    let settings = JobSettings {
        options: RecoverOptions {
            account: Some(stripe.account().expect("the service's account")),
            ..RecoverOptions::default()
        },
    };
    let journal = Journal::new(service.connection.clone()).with_clock(service.clock.clone());
    recovery::run_with(&journal, &stripe.recovery(), &settings, &quiet(service))
        .await
        .expect("the job ran")
}

#[tokio::test]
async fn abandoned_3d_secure_is_canceled_by_the_recovery_job_once_the_configured_window_ended() {
    let stand_in = StandIn::start().await;
    let service = service_on(&stand_in).await;
    let id = command_id(960);
    let body = payment(AUTHENTICATED);
    let first = service.checkout(&id, &body).await;
    assert_eq!(first.status, 202, "{}", first.text);
    assert_eq!(first.body["status"], "customer_must_act");
    assert_eq!(stand_in.intents()[0]["status"], "requires_action");
    let key = service.expected_key(&id, &body);

    // The customer never comes back. A second before the window's end the job reads
    // the intent and leaves it to its customer: nothing canceled, nothing written.
    advance(&service, &stand_in, WINDOW - 1);
    let before = service.documents().await;
    let waiting = job(&service, &stand_in).await;
    assert_eq!(waiting.count(Recovered::AwaitingCustomer), 1);
    assert_eq!(waiting.count(Recovered::Declined), 0);
    assert_eq!(stand_in.intents()[0]["status"], "requires_action");
    assert!(
        stand_in
            .requests(
                "POST",
                &format!(
                    "/v1/payment_intents/{}/cancel",
                    stand_in.intents()[0]["id"].as_str().expect("id")
                )
            )
            .is_empty(),
        "canceled before the window ended"
    );
    assert_eq!(
        service.documents().await,
        before,
        "a job wrote while the customer could still act"
    );

    // At the window's end (one hour, far before the 18 h cutoff): the job takes the
    // lease, cancels the abandoned intent and fails the command, nothing charged.
    advance(&service, &stand_in, 1);
    let ended = job(&service, &stand_in).await;
    assert_eq!(ended.count(Recovered::Declined), 1);
    let intents = stand_in.intents();
    assert_eq!(intents.len(), 1, "one intent");
    assert_eq!(intents[0]["status"], "canceled");
    assert_eq!(intents[0]["cancellation_reason"], "abandoned");
    assert!(
        stand_in
            .creates()
            .iter()
            .all(|seen| seen.idempotency_key.as_deref() == Some(key.as_str())),
        "one key"
    );
    // The client's late call is told the payment failed, and nothing was charged.
    let late = service.checkout(&id, &body).await;
    assert_eq!(
        (late.status, &late.body),
        (402, &json!({"status": "failed"})),
        "{}",
        late.text
    );
    assert_eq!(stand_in.intents().len(), 1);
    let kinds = service.document_kinds().await;
    assert!(
        !kinds.iter().any(|kind| kind.ends_with("/results/current")),
        "no stored charge: {kinds:?}"
    );
    // The plan document of the window's version: the window stored, nothing secret.
    assert!(kinds.contains(&"checkoutRequests/H/providerSends/plan".to_owned()));
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[SECRET]).await;
}
