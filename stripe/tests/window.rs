//! The customer's window of a client (`StripeConfig::customer_window_seconds`): checked
//! when the client is made, bound into both plans (so a window is part of what a
//! command bound), refused under Stripe's 30 minutes for Checkout, and a session's
//! `expires_at` is the journal's `act_by` for it (the window's end).

mod stand_in;

use command_journal::sends::{AttemptNumber, CustomerAction, act_by};
use command_journal::{JournalError, Provider, ProviderAnswer, SendRequest, Timestamp};
use command_journal_stripe::config::{
    MAX_CUSTOMER_WINDOW_SECONDS, MIN_CHECKOUT_WINDOW_SECONDS, MIN_CUSTOMER_WINDOW_SECONDS,
};
use command_journal_stripe::{
    Account, CheckoutPages, ConfigError, LookupMethod, SecretKey, Stripe, StripeConfig,
};
use serde_json::{Value, json};
use stand_in::{SECRET, START, StandIn};
use std::sync::Arc;
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";
/// One hour.
const WINDOW: i64 = 3_600;

fn config(window: Option<i64>) -> StripeConfig {
    let mut config = StripeConfig::new(
        SecretKey::new(SECRET).expect("key"),
        VERSION,
        Account::Own("acct_CANARYwindow".into()),
    );
    config.customer_window_seconds = window;
    config
}

/// The stand-in's clock as the adapter's (the session's `expires_at` clamp reads it).
struct StandInClock(StandIn);

impl command_journal::Clock for StandInClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.0.now(), 0).expect("a time")
    }
}

fn parameters() -> Value {
    json!({"amount": 1250, "currency": "EUR", "paymentMethod": "pm_card_visa"})
}

#[test]
fn the_window_is_a_minute_to_eighteen_hours() {
    assert_eq!(
        (MIN_CUSTOMER_WINDOW_SECONDS, MAX_CUSTOMER_WINDOW_SECONDS),
        (60, 64_800)
    );
    for (window, ok) in [
        (None, true),
        (Some(-1), false),
        (Some(0), false),
        (Some(59), false),
        (Some(60), true),
        (Some(WINDOW), true),
        (Some(64_800), true),
        (Some(64_801), false),
    ] {
        let made = Stripe::new(config(window));
        assert_eq!(
            made.as_ref().err(),
            (!ok).then_some(&ConfigError::CustomerWindow),
            "{window:?}"
        );
    }
    assert!(
        ConfigError::CustomerWindow
            .to_string()
            .contains("60 to 64800")
    );
}

#[test]
fn both_plans_bind_the_window_and_only_when_configured() {
    let with = Stripe::new(config(Some(WINDOW))).expect("client");
    let without = Stripe::new(config(None)).expect("client");
    assert_eq!(with.terms().customer_window_seconds, Some(WINDOW));
    assert_eq!(without.terms().customer_window_seconds, None);
    let plan = with.plan(&parameters()).expect("plan");
    assert_eq!(plan.customer_window_seconds(), Some(WINDOW));
    let plain = without.plan(&parameters()).expect("plan");
    assert_eq!(plain.customer_window_seconds(), None);
    // Everything else the same: the window alone tells them apart.
    assert_eq!(plan.provider_account(), plain.provider_account());
    assert_ne!(plan, plain);
    assert_eq!(
        plain.clone().with_customer_window(WINDOW).expect("fits"),
        plan
    );
    let session = with.checkout_plan(&parameters()).expect("plan");
    assert_eq!(session.customer_window_seconds(), Some(WINDOW));
    assert_eq!(
        without
            .checkout_plan(&parameters())
            .expect("plan")
            .customer_window_seconds(),
        None
    );
}

#[test]
fn a_checkout_window_under_thirty_two_minutes_is_refused() {
    assert_eq!(MIN_CHECKOUT_WINDOW_SECONDS, 1_920);
    let short = Stripe::new(config(Some(1_919))).expect("a PaymentIntents client takes it");
    assert_eq!(
        short.config().check_checkout(),
        Err(ConfigError::CheckoutWindow)
    );
    assert_eq!(
        short.checkout_plan(&parameters()),
        Err(JournalError::invalid("customerWindowSeconds"))
    );
    // The PaymentIntents plan binds it: Stripe sets no minimum on a 3-D Secure wait.
    assert_eq!(
        short
            .plan(&parameters())
            .expect("plan")
            .customer_window_seconds(),
        Some(1_919)
    );
    let edge = Stripe::new(config(Some(1_920))).expect("client");
    assert_eq!(edge.config().check_checkout(), Ok(()));
    assert!(edge.checkout_plan(&parameters()).is_ok());
    assert_eq!(config(None).check_checkout(), Ok(()));
    assert!(
        ConfigError::CheckoutWindow
            .to_string()
            .contains("under 1920")
    );
}

/// The session a one-hour window makes expires at the window's end, the `act_by` the
/// journal computes from the attempt's first send, not at the 18 h cutoff.
#[tokio::test]
async fn a_sessions_expires_at_is_the_windows_end() {
    let stand_in = StandIn::start().await;
    let mut config = config(Some(WINDOW));
    config.api_base = stand_in.url().to_owned();
    config.timeout = Duration::from_secs(10);
    config.lookup = LookupMethod::Search;
    let clock = Arc::new(StandInClock(stand_in.clone()));
    let stripe = Stripe::new(config).expect("client").with_clock(clock);
    let pages = CheckoutPages::new(
        "https://shop.example/ok?session={CHECKOUT_SESSION_ID}",
        "https://shop.example/no",
        "Order",
    )
    .expect("pages");
    let first_sent = Timestamp::from_micros(START * 1_000_000).expect("a time");
    let cutoff = first_sent.plus_seconds(64_800).expect("a time");
    let end = act_by(first_sent, cutoff, Some(WINDOW));
    assert_eq!(end.seconds(), START + WINDOW);
    let provider = stripe.checkout(&parameters(), &pages);
    let answer = provider
        .send(SendRequest {
            key: format!("cj1-{:064x}", 7),
            parameters: parameters(),
            deadline: Duration::from_secs(10),
            attempt: AttemptNumber::FIRST,
            resend: false,
            act_by: end,
        })
        .await;
    assert!(
        matches!(
            answer,
            ProviderAnswer::CustomerMustAct(CustomerAction::Open { .. })
        ),
        "{answer:?}"
    );
    assert_eq!(stand_in.sessions()[0]["expires_at"], json!(START + WINDOW));
}

/// Adversary (pinned, documented in `session::expires_at`): with Checkout's shortest
/// window (1,920 s), a first send lost on the way (it never reached Stripe) and a
/// re-send permitted at `lastSentAt + 60 s` still fits Stripe's 30 minutes, but a
/// re-send a few minutes later (a customer who retries after the `Retry-After`) does
/// not: Stripe refuses its `expires_at` with a 400 and the journal records the
/// command's final refusal, nothing charged and no session ever shown. The window's
/// slack for a re-send is `window − 1,860 s`.
#[tokio::test]
async fn adversary_a_late_resend_under_the_shortest_checkout_window_is_a_final_refusal() {
    let stand_in = StandIn::start().await;
    let mut config = config(Some(MIN_CHECKOUT_WINDOW_SECONDS));
    config.api_base = stand_in.url().to_owned();
    config.timeout = Duration::from_secs(10);
    config.lookup = LookupMethod::Search;
    let clock = Arc::new(StandInClock(stand_in.clone()));
    let stripe = Stripe::new(config).expect("client").with_clock(clock);
    let pages = CheckoutPages::new(
        "https://shop.example/ok?session={CHECKOUT_SESSION_ID}",
        "https://shop.example/no",
        "Order",
    )
    .expect("pages");
    let first_sent = Timestamp::from_micros(START * 1_000_000).expect("a time");
    let cutoff = first_sent.plus_seconds(64_800).expect("a time");
    let end = act_by(first_sent, cutoff, Some(MIN_CHECKOUT_WINDOW_SECONDS));
    let provider = stripe.checkout(&parameters(), &pages);
    let resend = |key: u64| SendRequest {
        key: format!("cj1-{key:064x}"),
        parameters: parameters(),
        deadline: Duration::from_secs(10),
        attempt: AttemptNumber::FIRST,
        resend: true,
        act_by: end,
    };
    // The earliest re-send another holder is permitted: still 31 minutes ahead.
    stand_in.advance(60);
    let answer = provider.send(resend(8)).await;
    assert!(
        matches!(answer, ProviderAnswer::CustomerMustAct(_)),
        "{answer:?}"
    );
    // Five minutes after the first send: refused, a final refusal.
    stand_in.advance(240);
    let answer = provider.send(resend(9)).await;
    assert_eq!(answer, ProviderAnswer::Declined);
    assert_eq!(
        stand_in.sessions().len(),
        1,
        "the late re-send made nothing"
    );
}
