//! The customer in the loop, end to end: the service on Stripe against the stand-in,
//! headless Chromium completing the stand-in's own pages as a customer's browser would.
//!
//! - 3-D Secure (`CHECKOUT_FLOW=payment_intents`): the first call answers the action
//!   (202 `customer_must_act`, the intent's client secret), a retry the same; Chromium
//!   passes (or fails) the stand-in's challenge; the return call answers 200 with the
//!   charge (or 402); exactly one intent.
//! - Checkout (`CHECKOUT_FLOW=checkout`): every retry answers the same hosted page's
//!   URL; Chromium pays on it and lands on the success page; the return call answers
//!   200 with its PaymentIntent's envelope; a session left to expire is pending on
//!   return (no intent to find it by) and ends 402 by its `checkout.session.expired`
//!   event, nothing charged; exactly one session either way.
//! - The action's secret and URL reach the browser's answer only: no log line, metrics
//!   line or stored document holds them.
//!
//! Without a browser a local run skips each test, saying why; a CI run (`CI` set)
//! fails it (`Browser::launch_or_skip`).

use super::list;
use super::stripe::stand_in::session::SESSION_PREFIX;
use super::stripe::stand_in::{SECRET, StandIn};
use super::{
    Answer, Options, PAYLOAD_NOTE, PAYLOAD_SKU, Service, assert_no_secrets, command_id,
    commerce_documents, send_documents, start_service, succeeded,
};
use axum::response::Html;
use chrono::TimeDelta;
use command_journal_emulator::browser::Browser;
use serde_json::{Value, json};
use std::time::Duration;

/// The webhook endpoint's signing secret, where a test serves it.
const WEBHOOK_SECRET: &str = "whsec_CANARYcustomerWebhook4Zr";

/// How long the browser may take to come back from a page.
const RETURN_WITHIN: Duration = Duration::from_secs(30);

/// What a challenge or a session is paid with (a card that asks for 3-D Secure).
const AUTHENTICATED: &str = "pm_card_authenticationRequired";

/// The service's and the stand-in's clocks move 61 s on: past any lease the last call
/// took (a call that answered the customer's action released its lease already, so
/// the customer's return need not wait; the journal-level tests in
/// emulator-tests/customer.rs return at once).
fn lease_runs_out(service: &Service, stand_in: &StandIn) {
    service.clock.advance(TimeDelta::seconds(61));
    stand_in.advance(61);
}

/// A 3-D Secure payment's payload.
fn payment(payment_method: &str) -> Value {
    json!({
        "sku": PAYLOAD_SKU,
        "note": PAYLOAD_NOTE,
        "amount": 1250,
        "currency": "eur",
        "paymentMethod": payment_method,
    })
}

/// A Checkout payment's payload: the hosted page takes the card.
fn order() -> Value {
    json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amount": 1250, "currency": "eur"})
}

/// The merchant's own pages the customer comes back to: `GET /return` and `GET
/// /cancel`, each a page that says where the browser is.
async fn merchant_pages() -> String {
    let router = axum::Router::new()
        .route(
            "/return",
            axum::routing::get(|| async { Html("<p id=\"page\">returned</p>") }),
        )
        .route(
            "/cancel",
            axum::routing::get(|| async { Html("<p id=\"page\">canceled</p>") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the merchant's pages");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// The service on Stripe at `stand_in` with the flow settings `flow`, its journal's
/// clock at the stand-in's time.
async fn service_on(stand_in: &StandIn, flow: Vec<(&'static str, String)>) -> Service {
    let now = chrono::DateTime::from_timestamp(stand_in.now(), 0).expect("a time");
    let mut env = vec![
        ("PROVIDER_NAME", "stripe".to_owned()),
        ("STRIPE_SECRET_KEY", SECRET.to_owned()),
        ("STRIPE_API_BASE", stand_in.url().to_owned()),
        ("PROVIDER_TIMEOUT_MS", "5000".to_owned()),
    ];
    env.extend(flow);
    start_service(Options {
        env,
        now: Some(now),
        ..Options::default()
    })
    .await
}

/// The Checkout flow's settings, returning to `pages`.
fn checkout_flow(pages: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CHECKOUT_FLOW", "checkout".to_owned()),
        (
            "CHECKOUT_SUCCESS_URL",
            format!("{pages}/return?session={{CHECKOUT_SESSION_ID}}"),
        ),
        ("CHECKOUT_CANCEL_URL", format!("{pages}/cancel")),
    ]
}

/// Chromium, or `None` when a local run has none (said on stderr); a CI run fails.
async fn browser() -> Option<Browser> {
    Browser::launch_or_skip()
        .await
        .expect("headless Chromium (CI installs the Debian package chromium)")
}

/// The action of a 202 `customer_must_act`, checked for its shape and headers.
fn action(answer: &Answer) -> &Value {
    assert_eq!(answer.status, 202, "{}", answer.text);
    assert_eq!(
        answer.body["status"], "customer_must_act",
        "{}",
        answer.text
    );
    assert_eq!(answer.retry_after, None);
    assert!(
        !answer.replayed,
        "the action is never stored, so never replayed"
    );
    &answer.body["action"]
}

/// The envelope of the stand-in's intent `at`.
fn intent_envelope(stand_in: &StandIn, at: usize) -> Value {
    let intent = &stand_in.intents()[at];
    json!({
        "id": intent["id"],
        "amount": intent["amount"],
        "currency": intent["currency"],
        "status": intent["status"],
    })
}

/// The journal's documents after a payment that waited for the customer and was then
/// settled on the customer's return, after `calls` calls of the command that took the
/// lease (the send, recorded as awaiting the customer; the retries, each answered from
/// a read by id; the return, which settled it): the command's creation, one lease per
/// call and its end; the permit, the wait and the outcome; the attempt's key index;
/// the stored charge when `charged`.
fn settled_after_the_customer(calls: u32, charged: bool) -> Vec<String> {
    let mut expected = commerce_documents(calls + 2);
    expected.extend(send_documents(3));
    expected.push("providerKeys/H".to_owned());
    // Each call but the last ended without settling, and released its lease.
    for fence in 1..calls {
        expected.push(format!("checkoutRequests/H/leaseReleases/{fence:010}"));
    }
    if charged {
        expected.push("checkoutRequests/H/results/current".to_owned());
    }
    expected.sort();
    expected
}

/// The challenge page of the intent whose client secret is `secret`, coming back to
/// `pages`' `/return`.
fn challenge(stand_in: &StandIn, secret: &str, pages: &str) -> String {
    let mut url =
        reqwest::Url::parse(&format!("{}/stand-in/authenticate", stand_in.url())).expect("url");
    url.query_pairs_mut()
        .append_pair("client_secret", secret)
        .append_pair("return_url", &format!("{pages}/return"));
    url.to_string()
}

#[tokio::test]
async fn a_3d_secure_challenge_passed_in_chromium_is_charged_once_on_the_return() {
    let Some(browser) = browser().await else {
        return;
    };
    let stand_in = StandIn::start().await;
    let pages = merchant_pages().await;
    let service = service_on(&stand_in, Vec::new()).await;
    let id = command_id(800);
    let body = payment(AUTHENTICATED);
    let first = service.checkout(&id, &body).await;
    let intent = stand_in.intents()[0].clone();
    assert_eq!(intent["status"], "requires_action");
    let secret = intent["client_secret"].as_str().expect("a client secret");
    assert_eq!(
        action(&first),
        &json!({"type": "confirm", "clientSecret": secret, "nextAction": "use_stripe_sdk"})
    );
    // A lost answer, a second tab, at once (no clock moved): the first call released
    // its lease, so the same action, asked of Stripe again, not 409.
    let again = service.checkout(&id, &body).await;
    assert_eq!((again.status, &again.text), (first.status, &first.text));
    // The customer's browser: Stripe.js's challenge, here the stand-in's page.
    browser
        .open(&challenge(&stand_in, secret, &pages))
        .await
        .expect("the challenge page");
    browser
        .click("#authenticate-pass")
        .await
        .expect("pass the challenge");
    browser
        .wait_for_url_prefix(&format!("{pages}/return"), RETURN_WITHIN)
        .await
        .expect("back on the return page");
    // The return page's call at once: the same command again.
    let paid = service.checkout(&id, &body).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    assert_eq!(paid.body, succeeded(&intent_envelope(&stand_in, 0)));
    assert_eq!(intent_envelope(&stand_in, 0)["status"], "succeeded");
    let replay = service.checkout(&id, &body).await;
    assert_eq!(
        (replay.text.as_str(), replay.replayed),
        (paid.text.as_str(), true)
    );
    assert_eq!(stand_in.intents().len(), 1, "exactly one intent");
    assert_eq!(
        stand_in.creates().len(),
        3,
        "the first send and two replays of its key"
    );
    assert_eq!(
        service.document_kinds().await,
        settled_after_the_customer(3, true)
    );
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_3d_secure_challenge_failed_in_chromium_ends_declined_in_the_header_form() {
    let Some(browser) = browser().await else {
        return;
    };
    let stand_in = StandIn::start().await;
    let pages = merchant_pages().await;
    let service = service_on(&stand_in, Vec::new()).await;
    let key = command_id(810);
    let body = payment(AUTHENTICATED);
    let first = service.keyed(&key, &body).await;
    let secret = stand_in.intents()[0]["client_secret"]
        .as_str()
        .expect("a client secret")
        .to_owned();
    assert_eq!(action(&first)["clientSecret"], secret.as_str());
    browser
        .open(&challenge(&stand_in, &secret, &pages))
        .await
        .expect("the challenge page");
    browser
        .click("#authenticate-fail")
        .await
        .expect("fail the challenge");
    browser
        .wait_for_url_prefix(&format!("{pages}/return"), RETURN_WITHIN)
        .await
        .expect("back on the return page");
    // The return page's call, under its lease: the intent is back in
    // `requires_payment_method` (the customer could retry on it with another card);
    // the customer's return ends it: canceled, a final decline, nothing charged.
    lease_runs_out(&service, &stand_in);
    let declined = service.keyed(&key, &body).await;
    assert_eq!(
        (declined.status, &declined.body),
        (402, &json!({"status": "failed"})),
        "{}",
        declined.text
    );
    assert_eq!(stand_in.intents()[0]["status"], "canceled");
    let replay = service.keyed(&key, &body).await;
    assert_eq!(
        (replay.text.as_str(), replay.replayed),
        (declined.text.as_str(), true)
    );
    let intents = stand_in.intents();
    assert_eq!(intents.len(), 1, "exactly one intent");
    assert_ne!(intents[0]["status"], "succeeded");
    assert_eq!(intents[0]["amount_received"], 0, "nothing charged");
    assert_eq!(
        service.document_kinds().await,
        settled_after_the_customer(2, false)
    );
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_checkout_paid_in_chromium_answers_the_same_page_until_the_return_charges_it() {
    let Some(browser) = browser().await else {
        return;
    };
    let stand_in = StandIn::start().await;
    let pages = merchant_pages().await;
    let service = service_on(&stand_in, checkout_flow(&pages)).await;
    let id = command_id(820);
    let first = service.checkout(&id, &order()).await;
    assert_eq!(
        stand_in.sessions().len(),
        1,
        "{}: {:?}",
        first.text,
        stand_in.seen()
    );
    let session = stand_in.sessions()[0].clone();
    assert_eq!(session["status"], "open");
    let url = session["url"].as_str().expect("a hosted page");
    assert_eq!(action(&first), &json!({"type": "open", "url": url}));
    // Every retry while the customer pays: the same page.
    for _ in 0..2 {
        lease_runs_out(&service, &stand_in);
        let again = service.checkout(&id, &order()).await;
        assert_eq!(again.text, first.text);
    }
    assert_eq!(stand_in.sessions().len(), 1, "one session");
    browser.open(url).await.expect("the hosted page");
    assert_eq!(browser.text("#amount").await.expect("amount"), "1250");
    browser.click("#pay-card").await.expect("pay by card");
    let back = browser
        .wait_for_url_prefix(&format!("{pages}/return"), RETURN_WITHIN)
        .await
        .expect("back on the success page");
    let session_id = session["id"].as_str().expect("an id");
    assert_eq!(back, format!("{pages}/return?session={session_id}"));
    lease_runs_out(&service, &stand_in);
    let paid = service.checkout(&id, &order()).await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    // The charge is the session's PaymentIntent, made when the customer paid (an open
    // session has none), as a lookup or an event finds it.
    assert_eq!(session["payment_intent"], Value::Null);
    let paid_session = stand_in.sessions()[0].clone();
    let intent = paid_session["payment_intent"].as_str().expect("its intent");
    assert_eq!(
        paid.body,
        succeeded(&json!({"id": intent, "amount": 1250, "currency": "eur", "status": "succeeded"}))
    );
    let replay = service.checkout(&id, &order()).await;
    assert_eq!(
        (replay.text.as_str(), replay.replayed),
        (paid.text.as_str(), true)
    );
    let sessions = stand_in.sessions();
    assert_eq!(sessions.len(), 1, "exactly one session");
    assert_eq!(
        (&sessions[0]["status"], &sessions[0]["payment_status"]),
        (&json!("complete"), &json!("paid"))
    );
    assert_eq!(
        stand_in.requests("POST", "/v1/payment_intents").len(),
        0,
        "no intent of the service's own"
    );
    assert_eq!(
        service.document_kinds().await,
        settled_after_the_customer(4, true)
    );
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn a_checkout_left_to_expire_ends_with_nothing_charged() {
    let Some(browser) = browser().await else {
        return;
    };
    let stand_in = StandIn::start().await;
    let pages = merchant_pages().await;
    let mut flow = checkout_flow(&pages);
    flow.push(("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()));
    let service = service_on(&stand_in, flow).await;
    let id = command_id(830);
    let first = service.checkout(&id, &order()).await;
    assert_eq!(
        stand_in.sessions().len(),
        1,
        "{}: {:?}",
        first.text,
        stand_in.seen()
    );
    let session = stand_in.sessions()[0].clone();
    let url = session["url"].as_str().expect("a hosted page").to_owned();
    assert_eq!(action(&first)["url"], url.as_str());
    // Nobody pays: the session expires at its `expires_at`.
    let expires_at = session["expires_at"].as_i64().expect("expires_at");
    let by = TimeDelta::seconds(expires_at - stand_in.now() + 1);
    service.clock.advance(by);
    stand_in.advance(by.num_seconds());
    assert_eq!(stand_in.sessions()[0]["status"], "expired");
    // A customer who comes back to the page finds nothing to pay.
    browser.open(&url).await.expect("the hosted page");
    assert_eq!(browser.text("#status").await.expect("status"), "expired");
    // Past `act_by` (the key's cutoff) the return call cannot replay the key, and an
    // unpaid session has no PaymentIntent to find it by: pending, nothing written.
    lease_runs_out(&service, &stand_in);
    let pending = service.checkout(&id, &order()).await;
    assert_eq!(
        (pending.status, &pending.body),
        (202, &json!({"status": "pending_reconciliation"})),
        "{}",
        pending.text
    );
    // Its `checkout.session.expired`, delivered signed once the return call's lease
    // has run out (503 before: Stripe delivers it again), ends it: the session read by
    // id, expired.
    lease_runs_out(&service, &stand_in);
    let expired = stand_in
        .events()
        .into_iter()
        .find(|event| event["type"] == "checkout.session.expired")
        .expect("the expiry event");
    let url = format!("{}/webhooks/stripe", service.url);
    let delivered = stand_in
        .deliver(&url, WEBHOOK_SECRET, &expired, stand_in.now())
        .await;
    assert_eq!(delivered, 200);
    let closed = service.checkout(&id, &order()).await;
    assert_eq!(
        (closed.status, &closed.body),
        (402, &json!({"status": "failed"})),
        "{}",
        closed.text
    );
    let replay = service.checkout(&id, &order()).await;
    assert_eq!(
        (replay.text.as_str(), replay.replayed),
        (closed.text.as_str(), true)
    );
    let sessions = stand_in.sessions();
    assert_eq!(sessions.len(), 1, "no second session");
    assert_eq!(sessions[0]["payment_status"], "unpaid");
    assert!(
        stand_in
            .intents()
            .iter()
            .all(|intent| intent["amount_received"] == 0),
        "nothing charged"
    );
    // Leased three times: the first call, the pending return, the event's takeover.
    assert_eq!(
        service.document_kinds().await,
        settled_after_the_customer(3, false)
    );
    service.assert_verifies_clean(1).await;
    stand_in.assert_schemas_held();
}

/// Every stored document of the project (roots, audit events, lifecycles, send
/// documents, results), as its `Debug` text: every field and value.
async fn stored(service: &Service) -> Vec<String> {
    let connection = &service.connection;
    let mut all = Vec::new();
    for collection in ["checkoutRequests", "auditEvents", "recoveryCheckpoints"] {
        for document in list(connection, "", collection).await {
            all.push(format!("{document:?}"));
        }
    }
    for root in list(connection, "", "checkoutRequests").await {
        let relative = root
            .name
            .rsplit_once("/documents/")
            .map(|(_, path)| path.to_owned())
            .expect("relative path");
        for collection in ["lifecycle", "providerSends", "results"] {
            for document in list(connection, &relative, collection).await {
                all.push(format!("{document:?}"));
            }
        }
    }
    all
}

/// The action's secret or URL in no log line, no metrics line and no stored
/// document; each canary checked to be where it must be (the 202's body) first.
async fn assert_action_only_in_its_answer(service: &Service, first: &Answer, handoff: &str) {
    assert!(first.text.contains(handoff));
    let metrics = service.scrape().await;
    assert!(
        metrics.contains("outcome=\"customer_must_act\""),
        "{metrics}"
    );
    let documents = stored(service).await;
    assert!(!documents.is_empty());
    let canaries = [handoff, "CANARYclientSecret", "/stand-in/", SESSION_PREFIX];
    for text in documents
        .iter()
        .chain(service.lines().iter())
        .chain([&metrics])
    {
        for canary in canaries {
            assert!(!text.contains(canary), "{canary:?} leaked: {text}");
        }
    }
    // And the service's own canaries, the secret key included.
    assert_no_secrets(&service.lines(), &[metrics], &[SECRET], &[]);
}

#[tokio::test]
async fn the_customer_action_reaches_the_browser_answer_only() {
    let stand_in = StandIn::start().await;
    let pages = merchant_pages().await;
    // 3-D Secure: the client secret.
    let service = service_on(&stand_in, Vec::new()).await;
    let body = payment(AUTHENTICATED);
    let first = service.checkout(&command_id(840), &body).await;
    let secret = action(&first)["clientSecret"]
        .as_str()
        .expect("a client secret")
        .to_owned();
    let keyed = service.keyed(&command_id(841), &body).await;
    assert_eq!(action(&keyed)["type"], "confirm");
    assert_action_only_in_its_answer(&service, &first, &secret).await;
    // Checkout: the hosted page's URL.
    let service = service_on(&stand_in, checkout_flow(&pages)).await;
    let first = service.checkout(&command_id(842), &order()).await;
    let url = action(&first)["url"].as_str().expect("a URL").to_owned();
    assert!(url.starts_with(stand_in.url()), "{url}");
    assert_action_only_in_its_answer(&service, &first, &url).await;
    stand_in.assert_schemas_held();
}
