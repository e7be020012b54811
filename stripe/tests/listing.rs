//! The listing behind a search's "not found": busy accounts, Connect accounts, an
//! intent of another amount, and a request whose parameters this version refuses.

mod stand_in;

use command_journal::sends::AttemptNumber;
use command_journal::sends::LookupRequest;
use command_journal::{Provider, ProviderAnswer, SendRequest};
use command_journal_stripe::client::MAX_LIST_PAGES;
use command_journal_stripe::{
    Account, Charge, Expected, LookupAnswer, LookupMethod, SecretKey, Stripe, StripeConfig,
};
use serde_json::{Value, json};
use stand_in::{Fault, SECRET, StandIn};
use std::sync::Arc;
use std::time::Duration;

const VERSION: &str = "2026-01-28.clover";

fn key(n: u64) -> String {
    format!("cj1-{n:064x}")
}

struct Skewed(StandIn, i64);

impl command_journal::Clock for Skewed {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.0.now() + self.1, 0).expect("a time")
    }
}

fn client(stand_in: &StandIn, account: Account, lookup: LookupMethod, skew: i64) -> Stripe {
    let mut config = StripeConfig::new(SecretKey::new(SECRET).expect("key"), VERSION, account);
    config.api_base = stand_in.url().to_owned();
    config.lookup = lookup;
    config.timeout = Duration::from_secs(10);
    Stripe::new(config)
        .expect("client")
        .with_clock(Arc::new(Skewed(stand_in.clone(), skew)))
}

fn own(stand_in: &StandIn, lookup: LookupMethod) -> Stripe {
    client(stand_in, Account::Own("acct_1own".into()), lookup, 0)
}

fn payload(pm: &str) -> Value {
    json!({"amount": 1250, "currency": "eur", "paymentMethod": pm})
}

fn request(key: &str, parameters: &Value, resend: bool) -> SendRequest {
    SendRequest {
        key: key.to_owned(),
        parameters: parameters.clone(),
        deadline: Duration::from_secs(10),
        attempt: AttemptNumber::FIRST,
        resend,
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

fn lists(stand_in: &StandIn) -> usize {
    stand_in
        .seen()
        .iter()
        .filter(|s| s.method == "GET" && s.path == "/v1/payment_intents")
        .count()
}

/// Creates `count` declined intents under keys of their own, 100 at a time.
async fn busy(stripe: &Stripe, count: u64, from: u64) {
    let charge = Charge::from_parameters(&payload("pm_card_chargeDeclined")).expect("charge");
    let mut n = 0;
    while n < count {
        let mut batch = Vec::new();
        for k in n..(n + 100).min(count) {
            let (stripe, charge) = (stripe.clone(), charge.clone());
            batch.push(tokio::spawn(async move {
                stripe
                    .create_and_confirm(&key(from + k), &charge, Duration::from_secs(10))
                    .await
            }));
        }
        for task in batch {
            task.await.expect("task");
        }
        n += 100;
    }
}

/// A stored 500 that made no intent (never re-sent: the key can no longer tell) on an
/// account that made more intents earlier in the day than a listing reads: the
/// confirmation lists only the last three hours, so the lookup answers "not found" at
/// the cost of one page (the journal proves no absence from it: Stripe may still
/// complete the 500, and the lookup is asked again). Inside those hours the same
/// traffic makes the lookup unavailable, never "not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_day_behind_the_confirmation_window_costs_the_lookup_one_page() {
    let stand_in = StandIn::start().await;
    let stripe = own(&stand_in, LookupMethod::Search);
    let many = (MAX_LIST_PAGES * 100 + 1) as u64;
    busy(&stripe, many, 1_000_000).await;
    // Attempt 1, four hours later: Stripe stored a 500 before making any intent; the
    // re-send replays it.
    stand_in.advance(4 * 3_600);
    let parameters = payload("pm_card_visa");
    stand_in.fault(Fault::StoredServerError {
        create_intent: false,
    });
    let provider = stripe.payment(&parameters);
    assert_eq!(
        provider.send(request(&key(1), &parameters, false)).await,
        ProviderAnswer::Indeterminate
    );
    stand_in.advance(61);
    assert_eq!(
        stripe
            .payment(&parameters)
            .send(request(&key(1), &parameters, true))
            .await,
        ProviderAnswer::ReplayedUnknown
    );
    // Past lastSentAt + 60 s + 300 s: nothing exists under the key.
    stand_in.advance(400);
    let before = lists(&stand_in);
    let found = stripe.find(&key(1), &Expected::key_only()).await;
    let pages = lists(&stand_in) - before;
    assert_eq!((found, pages), (LookupAnswer::NotFound, 1));
    // The same day's traffic inside the window: too many to read, never "not found".
    busy(&stripe, many, 2_000_000).await;
    stand_in.advance(400);
    assert_eq!(
        stripe.find(&key(1), &Expected::key_only()).await,
        LookupAnswer::Unavailable("lookup_too_many")
    );
}

/// Listing across pages with a Connect account: every request carries the account,
/// an intent of the same key on the platform's own account is not taken for it, and
/// a charged intent on the second page is found behind a lagging search.
#[tokio::test]
async fn a_connect_listing_across_pages_behind_a_lagging_search() {
    let stand_in = StandIn::with_accounts(&["acct_1connected"]).await;
    stand_in.search_lag(7_200);
    let connected = client(
        &stand_in,
        Account::Connected("acct_1connected".into()),
        LookupMethod::Search,
        0,
    );
    let platform = own(&stand_in, LookupMethod::Search);
    let parameters = payload("pm_card_visa");
    let sent = connected
        .payment(&parameters)
        .send(request(&key(3), &parameters, false))
        .await;
    assert!(matches!(sent, ProviderAnswer::Succeeded(_)));
    let declined = Charge::from_parameters(&payload("pm_card_chargeDeclined")).unwrap();
    for n in 0..150 {
        connected
            .create_and_confirm(&key(10_000 + n), &declined, Duration::from_secs(5))
            .await;
    }
    // The platform's own account has a declined intent under the same key.
    platform
        .create_and_confirm(&key(3), &declined, Duration::from_secs(5))
        .await;
    stand_in.advance(400);
    let found = connected.find(&key(3), &Expected::key_only()).await;
    assert!(matches!(found, LookupAnswer::Found(_)), "{found:?}");
    let gets: Vec<_> = stand_in
        .seen()
        .into_iter()
        .filter(|s| s.method == "GET")
        .collect();
    assert_eq!(gets.len(), 3, "a search and two pages");
    assert!(
        gets.iter()
            .all(|s| s.stripe_account.as_deref() == Some("acct_1connected"))
    );
    // The platform's own lookup sees only its own declined intent.
    assert_eq!(
        platform.find(&key(3), &Expected::key_only()).await,
        LookupAnswer::Declined
    );
    stand_in.assert_schemas_held();
}

/// An intent carrying the key whose amount differs is never evidence for the request,
/// through the search or behind it through the listing.
#[tokio::test]
async fn an_intent_of_another_amount_is_never_evidence() {
    let stand_in = StandIn::start().await;
    stand_in.search_lag(7_200);
    let stripe = own(&stand_in, LookupMethod::Search);
    let other = Charge::from_parameters(
        &json!({"amount": 999, "currency": "eur", "paymentMethod": "pm_card_visa"}),
    )
    .unwrap();
    stripe
        .create_and_confirm(&key(4), &other, Duration::from_secs(5))
        .await;
    stand_in.advance(400);
    let mine = Charge::from_parameters(&payload("pm_card_visa")).unwrap();
    assert_eq!(
        stripe.find(&key(4), &Expected::of(&mine)).await,
        LookupAnswer::Unavailable("lookup_mismatch")
    );
    stand_in.advance(7_200);
    assert_eq!(
        stripe.find(&key(4), &Expected::of(&mine)).await,
        LookupAnswer::Unavailable("lookup_mismatch")
    );
}

/// A re-send of parameters this version refuses is unknown, and the request's own
/// lookup finds the charge an older version made under the key (by the key alone, as
/// a recovery job's does), so that `execute` settles it.
#[tokio::test]
async fn a_refused_payloads_own_lookup_finds_its_charge_by_the_key() {
    let stand_in = StandIn::start().await;
    let stripe = own(&stand_in, LookupMethod::Search);
    // An older version charged key 5 (its parameters are not reproducible here).
    let older = Charge::from_parameters(&payload("pm_card_visa")).unwrap();
    stripe
        .create_and_confirm(&key(5), &older, Duration::from_secs(5))
        .await;
    stand_in.advance(400);
    let refused = json!({"amount": 1250, "currency": "eur", "paymentMethod": "pm-old-format"});
    let provider = stripe.payment(&refused);
    assert_eq!(
        provider.send(request(&key(5), &refused, true)).await,
        ProviderAnswer::Unknown
    );
    let looked = provider.lookup(lookup(&key(5))).await;
    assert!(
        matches!(looked, ProviderAnswer::Succeeded(_)),
        "the charged key answered {looked:?} to the request's own lookup"
    );
}

/// The stand-in's `GET /v1/events` as Stripe documents it: newest first ("reverse
/// chronological order", <https://docs.stripe.com/pagination>), none created before
/// `created[gte]` (<https://docs.stripe.com/api/events/list>), an event of the very
/// second `created[gte]` names included; a backfill's checkpoint rests on both.
#[tokio::test]
async fn the_events_list_is_newest_first_and_honours_created_gte_and_lt() {
    let stand_in = StandIn::start().await;
    let stripe = own(&stand_in, LookupMethod::Search);
    let charge = Charge::from_parameters(&payload("pm_card_visa")).expect("charge");
    let start = stand_in.now();
    for n in 0..3 {
        stripe
            .create_and_confirm(&key(900 + n), &charge, Duration::from_secs(10))
            .await;
        // A look: the intent's events are made now.
        stand_in.events();
        stand_in.advance(1_000);
    }
    let types = ["payment_intent.created", "payment_intent.succeeded"];
    let slice = |gte: i64, lt: Option<i64>| {
        let stripe = stripe.clone();
        async move {
            let query = command_journal_stripe::EventsQuery {
                types: &types,
                created_gte: gte,
                created_lt: lt,
                starting_after: None,
            };
            let page = stripe.events_page(&query).await.expect("a page");
            assert!(!page.has_more);
            page.events
                .iter()
                .map(|e| (e.created(), e.event_type().to_owned()))
                .collect::<Vec<_>>()
        }
    };
    let list = |gte: i64| slice(gte, None);
    let all = list(start).await;
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(all.windows(2).all(|w| w[0].0 >= w[1].0), "{all:?}");
    // Within one second, the later event first.
    assert_eq!(
        all[0],
        (start + 2_000, "payment_intent.succeeded".to_owned())
    );
    assert_eq!(all[1], (start + 2_000, "payment_intent.created".to_owned()));
    let since = list(start + 1_000).await;
    assert_eq!(since, all[..4]);
    assert_eq!(list(start + 1_001).await, all[..2]);
    assert!(list(start + 2_001).await.is_empty());
    // `created[lt]` cuts a slice: before that second, the second itself excluded.
    assert_eq!(slice(start, Some(start + 2_000)).await, all[2..]);
    assert_eq!(slice(start, Some(start + 1_001)).await, all[2..]);
    assert_eq!(slice(start, Some(start + 1_000)).await, all[4..]);
    assert!(slice(start + 1, Some(start + 1_000)).await.is_empty());
    let queries = stand_in.requests("GET", "/v1/events");
    assert_eq!(queries.len(), 8);
}
