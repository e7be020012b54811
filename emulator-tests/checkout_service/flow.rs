//! `CHECKOUT_FLOW` and its pages: PaymentIntents unless told, Checkout only on Stripe
//! and only with both pages, each refusal naming its variable and never its value.

use super::PLAN_ENV;
use super::service::config::Config;
use super::service::flow::Flow;
use command_journal_stripe::CheckoutPages;
use std::collections::HashMap;

/// A Stripe service's settings in production, changed by `changes`.
fn config(changes: &[(&'static str, Option<&'static str>)]) -> Result<Config, (String, String)> {
    let mut env = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("JOURNAL_ENVIRONMENT", "production"),
        ("STRIPE_SECRET_KEY", "sk_test_CANARYflowKey"),
        ("PROVIDER_ACCOUNT", "acct_CANARYflow"),
    ]);
    for (name, value) in PLAN_ENV {
        env.entry(name).or_insert(value);
    }
    env.insert("PROVIDER_NAME", "stripe");
    for (name, value) in changes {
        match value {
            Some(value) => env.insert(name, value),
            None => env.remove(name),
        };
    }
    Config::from_lookup(|name| env.get(name).map(|v| (*v).to_owned()))
        .map_err(|error| (error.variable.to_owned(), error.to_string()))
}

/// Settings set (`Some`) or removed (`None`).
type Changes = Vec<(&'static str, Option<&'static str>)>;

const SUCCESS: &str = "https://shop.example/CANARYreturn?session={CHECKOUT_SESSION_ID}";
const CANCEL: &str = "https://shop.example/CANARYcancel";

#[test]
fn checkout_flow_is_payment_intents_unless_told_and_checkout_needs_both_pages() {
    assert_eq!(config(&[]).expect("valid").flow, Flow::PaymentIntents);
    assert_eq!(
        config(&[("CHECKOUT_FLOW", Some(" payment_intents "))])
            .expect("named")
            .flow,
        Flow::PaymentIntents
    );
    let checkout = config(&[
        ("CHECKOUT_FLOW", Some("checkout")),
        ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
        ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
    ])
    .expect("checkout");
    assert_eq!(
        checkout.flow,
        Flow::Checkout(CheckoutPages::new(SUCCESS, CANCEL, "Checkout").expect("pages"))
    );
    assert_eq!(checkout.flow.as_str(), "checkout");
    let named = config(&[
        ("CHECKOUT_FLOW", Some("checkout")),
        ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
        ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
        ("CHECKOUT_PRODUCT_NAME", Some("Order")),
    ])
    .expect("named product");
    assert_eq!(
        named.flow,
        Flow::Checkout(CheckoutPages::new(SUCCESS, CANCEL, "Order").expect("pages"))
    );
    // A loopback page over http, for a local run.
    config(&[
        ("CHECKOUT_FLOW", Some("checkout")),
        ("CHECKOUT_SUCCESS_URL", Some("http://127.0.0.1:8090/return")),
        ("CHECKOUT_CANCEL_URL", Some("http://localhost:8090/cancel")),
    ])
    .expect("loopback pages");
    // The URLs stay out of `Debug`.
    assert!(!format!("{checkout:?}").contains("CANARY"));
    let long = "x".repeat(251);
    let long: &'static str = Box::leak(long.into_boxed_str());
    let refused: [(Changes, &str); 8] = [
        (vec![("CHECKOUT_FLOW", Some("hosted"))], "CHECKOUT_FLOW"),
        (
            vec![
                ("CHECKOUT_FLOW", Some("checkout")),
                ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
            ],
            "CHECKOUT_SUCCESS_URL",
        ),
        (
            vec![
                ("CHECKOUT_FLOW", Some("checkout")),
                ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
            ],
            "CHECKOUT_CANCEL_URL",
        ),
        (
            vec![
                ("CHECKOUT_FLOW", Some("checkout")),
                (
                    "CHECKOUT_SUCCESS_URL",
                    Some("http://shop.example/CANARYreturn"),
                ),
                ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
            ],
            "CHECKOUT_SUCCESS_URL",
        ),
        (
            vec![
                ("CHECKOUT_FLOW", Some("checkout")),
                ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
                ("CHECKOUT_CANCEL_URL", Some("/CANARYcancel")),
            ],
            "CHECKOUT_CANCEL_URL",
        ),
        (
            vec![
                ("CHECKOUT_FLOW", Some("checkout")),
                ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
                ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
                ("CHECKOUT_PRODUCT_NAME", Some(long)),
            ],
            "CHECKOUT_PRODUCT_NAME",
        ),
        // Pages without the flow that uses them.
        (
            vec![("CHECKOUT_SUCCESS_URL", Some(SUCCESS))],
            "CHECKOUT_SUCCESS_URL",
        ),
        // Checkout is Stripe's.
        (
            vec![
                ("PROVIDER_NAME", Some("stub")),
                ("PROVIDER_URL", Some("https://provider.example")),
                ("STRIPE_SECRET_KEY", None),
                ("CHECKOUT_FLOW", Some("checkout")),
                ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
                ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
            ],
            "CHECKOUT_FLOW",
        ),
    ];
    for (changes, variable) in refused {
        let (named, message) = config(&changes).expect_err(variable);
        assert_eq!(named, variable, "{changes:?}");
        assert!(
            !message.contains("CANARY"),
            "the value is echoed: {message}"
        );
    }
}

/// `CUSTOMER_WINDOW_SECONDS`: unset, no window; set, on the Stripe client's
/// configuration (bound into every plan); refused, naming it and never its value, out
/// of 60 to 64800, under 1920 with Checkout, or without Stripe.
#[test]
fn the_customer_window_is_a_whole_number_of_seconds_on_stripe_only() {
    let window = |config: Config| config.stripe.expect("stripe").customer_window_seconds;
    assert_eq!(window(config(&[]).expect("valid")), None);
    assert_eq!(
        window(config(&[("CUSTOMER_WINDOW_SECONDS", Some(" 3600 "))]).expect("an hour")),
        Some(3_600)
    );
    assert_eq!(
        window(config(&[("CUSTOMER_WINDOW_SECONDS", Some("60"))]).expect("a minute")),
        Some(60)
    );
    let checkout = |seconds: &'static str| {
        config(&[
            ("CHECKOUT_FLOW", Some("checkout")),
            ("CHECKOUT_SUCCESS_URL", Some(SUCCESS)),
            ("CHECKOUT_CANCEL_URL", Some(CANCEL)),
            ("CUSTOMER_WINDOW_SECONDS", Some(seconds)),
        ])
    };
    assert_eq!(window(checkout("1920").expect("32 minutes")), Some(1_920));
    for refused in [
        checkout("1919"),
        config(&[("CUSTOMER_WINDOW_SECONDS", Some("59"))]),
        config(&[("CUSTOMER_WINDOW_SECONDS", Some("64801"))]),
        config(&[("CUSTOMER_WINDOW_SECONDS", Some("1h"))]),
        config(&[("CUSTOMER_WINDOW_SECONDS", Some("-3600"))]),
        config(&[
            ("PROVIDER_NAME", Some("stub")),
            ("PROVIDER_URL", Some("https://stub.example")),
            ("CUSTOMER_WINDOW_SECONDS", Some("3600")),
        ]),
    ] {
        let (variable, text) = refused.expect_err("refused");
        assert_eq!(variable, "CUSTOMER_WINDOW_SECONDS", "{text}");
        assert!(
            !text.contains("1799") && !text.contains("64801") && !text.contains("1h"),
            "{text}"
        );
    }
}
