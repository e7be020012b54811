//! The service's configuration: strict, each refusal naming its variable, and the
//! real binary refusing a bad one with one line and exit 1.

use super::service::config::Config;
use super::{PLAN_ENV, service, service_command};
use command_journal::sends::ProviderLookup;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

#[test]
fn checkout_configuration_is_strict_and_names_the_variable() {
    let mut base = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("JOURNAL_ENVIRONMENT", "production"),
        ("PROVIDER_URL", "https://provider.example/base/"),
    ]);
    base.extend(PLAN_ENV);
    let config = |changes: &[(&'static str, Option<&'static str>)]| {
        let mut env = base.clone();
        for (name, value) in changes {
            match value {
                Some(value) => env.insert(name, value),
                None => env.remove(name),
            };
        }
        Config::from_lookup(|name| env.get(name).map(|v| (*v).to_owned()))
    };
    let ok = config(&[]).expect("valid");
    assert_eq!(ok.port, 8080);
    assert_eq!(
        ok.charges_url().as_str(),
        "https://provider.example/base/v1/charges"
    );
    assert!(!ok.auth_emulator);
    let gcloud = config(&[
        ("GOOGLE_CLOUD_PROJECT", None),
        ("GCLOUD_PROJECT", Some("other-1")),
    ])
    .expect("GCLOUD_PROJECT");
    assert_eq!(gcloud.project, "other-1");
    let refused = [
        (vec![("PORT", Some("http"))], "PORT"),
        (vec![("GOOGLE_CLOUD_PROJECT", None)], "GOOGLE_CLOUD_PROJECT"),
        (
            vec![("GOOGLE_CLOUD_PROJECT", Some("Bad_Project"))],
            "GOOGLE_CLOUD_PROJECT",
        ),
        (vec![("JOURNAL_ENVIRONMENT", None)], "JOURNAL_ENVIRONMENT"),
        (
            vec![("JOURNAL_ENVIRONMENT", Some("prod"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("JOURNAL_ENVIRONMENT", Some("emulator"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("FIRESTORE_EMULATOR_HOST", Some("127.0.0.1:8080"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("FIREBASE_AUTH_EMULATOR_HOST", Some("127.0.0.1:9099"))],
            "FIREBASE_AUTH_EMULATOR_HOST",
        ),
        (vec![("PROVIDER_URL", None)], "PROVIDER_URL"),
        (
            vec![("PROVIDER_URL", Some("http://provider.example"))],
            "PROVIDER_URL",
        ),
        (
            vec![("PROVIDER_URL", Some("https://u:p@provider.example"))],
            "PROVIDER_URL",
        ),
        (vec![("PROVIDER_URL", Some("not a url"))], "PROVIDER_URL"),
        (vec![("PROVIDER_NAME", None)], "PROVIDER_NAME"),
        (vec![("PROVIDER_NAME", Some("Stripe!"))], "PROVIDER_NAME"),
        (vec![("PROVIDER_ACCOUNT", None)], "PROVIDER_ACCOUNT"),
        (
            vec![("PROVIDER_ACCOUNT", Some("acct\u{7}CANARY"))],
            "PROVIDER_ACCOUNT",
        ),
        (vec![("PROVIDER_MODE", None)], "PROVIDER_MODE"),
        (vec![("PROVIDER_MODE", Some("sandbox"))], "PROVIDER_MODE"),
        (
            vec![
                ("JOURNAL_ENVIRONMENT", Some("staging")),
                ("PROVIDER_MODE", Some("live")),
            ],
            "PROVIDER_MODE",
        ),
        (vec![("PROVIDER_API_VERSION", None)], "PROVIDER_API_VERSION"),
        (
            vec![("PROVIDER_API_VERSION", Some("2026 01 01"))],
            "PROVIDER_API_VERSION",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("60"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("a day"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_TIMEOUT_MS", Some("0"))],
            "PROVIDER_TIMEOUT_MS",
        ),
        (
            vec![("PROVIDER_LOOKUP", Some("Durable"))],
            "PROVIDER_LOOKUP",
        ),
        (vec![("PROVIDER_LOOKUP", Some("search"))], "PROVIDER_LOOKUP"),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("-1"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("5 min"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![
                ("PROVIDER_LOOKUP", Some("durable")),
                ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("86401")),
            ],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        // A key-store lookup needs a lease plus the settle window within a quarter
        // of the retention: 60 + 841 > 3600 / 4.
        (
            vec![
                ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
                ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("841")),
            ],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
    ];
    for (changes, variable) in refused {
        let error = config(&changes).expect_err(variable);
        assert_eq!(error.variable, variable, "{changes:?}");
        let text = error.to_string();
        assert!(!text.contains('\n') && text.contains(variable), "{text}");
        assert!(!text.contains("CANARY") && !text.contains("2026"), "{text}");
    }
    // The plan: the environment's settings, the request's payload as parameters,
    // a one-day key retention unless told otherwise; live only in production.
    assert_eq!(ok.plan.key_retention_seconds, 86_400);
    let plan = service::provider::plan(&ok.plan, &json!({"amount": 1250})).expect("plan");
    assert_eq!(plan.provider(), "stub");
    // The lookup: key_store and a 300 s settle window unless told otherwise.
    assert_eq!(
        (plan.lookup(), plan.lookup_settle_seconds()),
        (ProviderLookup::KeyStore, 300)
    );
    let edge = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
        ("PROVIDER_LOOKUP", Some("key_store")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("840")),
    ])
    .expect("60 + 840 = 3600 / 4");
    assert_eq!(
        (edge.plan.lookup, edge.plan.lookup_settle_seconds),
        (ProviderLookup::KeyStore, 840)
    );
    let durable = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
        ("PROVIDER_LOOKUP", Some(" durable ")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("86400")),
    ])
    .expect("a durable lookup is not bound by the retention");
    let plan = service::provider::plan(&durable.plan, &json!({"amount": 1250})).expect("plan");
    assert_eq!(
        (plan.lookup(), plan.lookup_settle_seconds()),
        (ProviderLookup::Durable, 86_400)
    );
    assert_eq!(
        config(&[("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("0"))])
            .expect("no settle window")
            .plan
            .lookup_settle_seconds,
        0
    );
    assert!(
        !format!("{:?}", ok.plan).contains("CANARY"),
        "the account stays out"
    );
    let live = config(&[
        ("PROVIDER_MODE", Some("live")),
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
    ])
    .expect("live in production");
    assert_eq!(
        (live.plan.mode.as_str(), live.plan.key_retention_seconds),
        ("live", 3600)
    );
    assert_eq!(
        service::auth::max_age("public, max-age=19302, must-revalidate"),
        Some(Duration::from_secs(19302))
    );
    assert_eq!(service::auth::max_age("no-store"), Some(Duration::ZERO));
    assert_eq!(service::auth::max_age("public"), None);
}

#[tokio::test]
async fn checkout_binary_refuses_bad_configuration_with_one_line_and_exit_1() {
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "demo-project"),
                ("JOURNAL_ENVIRONMENT", "production"),
            ],
            "PROVIDER_URL",
        ),
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "demo-project"),
                ("JOURNAL_ENVIRONMENT", "production"),
                ("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1"),
                ("PROVIDER_URL", "https://provider.example"),
            ],
            "JOURNAL_ENVIRONMENT",
        ),
        (&[("PORT", "99999")], "PORT"),
    ];
    for (env, variable) in cases {
        let output = service_command(env)
            .output()
            .await
            .expect("run the service");
        assert_eq!(output.status.code(), Some(1), "{variable}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(variable), "{stderr}");
        assert!(output.stdout.is_empty());
    }
}

/// A plants build (feature `plants`, the soak's) refuses `CHAOS_PLANT` outside
/// emulator mode and for a name that is no plant, and with none planted every hook
/// hands back its input. No test here plants one: a plant is for the whole process.
#[cfg(feature = "plants")]
#[test]
fn checkout_plant_is_refused_outside_emulator_mode_and_unknown_names() {
    use super::service::plant;
    use super::service::provider::Looked;
    use command_journal::identity::Environment;
    let given =
        |value: &'static str| move |name: &str| (name == "CHAOS_PLANT").then(|| value.to_owned());
    for environment in [
        Environment::Test,
        Environment::Staging,
        Environment::Production,
    ] {
        let refused = plant::install_from(given("overcharge"), environment).expect_err("refused");
        assert_eq!(refused.variable, "CHAOS_PLANT");
    }
    let unknown = plant::install_from(given("no_such_plant"), Environment::Emulator);
    assert_eq!(unknown.expect_err("unknown").variable, "CHAOS_PLANT");
    assert_eq!(
        plant::install_from(|_| None, Environment::Emulator),
        Ok(None)
    );
    assert_eq!(
        plant::install_from(given(" "), Environment::Emulator),
        Ok(None)
    );
    let payload = json!({"amount": 1250, "currency": "eur"});
    assert_eq!(*plant::charged(&payload), payload);
    assert_eq!(plant::looked(Looked::NotFound), Looked::NotFound);
    // Verified at the journal's clock, whatever time the header signs.
    let now = command_journal::Timestamp::from_micros(1_893_456_000_000_000).expect("a time");
    assert_eq!(plant::verified_at(Some("t=1,v1=00"), now), now);
    assert_eq!(plant::verified_at(None, now), now);
}
