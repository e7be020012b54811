//! The Stripe stand-in of `command-journal-stripe`'s tests as a local server, for
//! trying the checkout service's 3-D Secure and Checkout flows without Stripe
//! (docs/local-service.md). The same code as the tests' (`stripe/tests/stand_in/`):
//! Stripe's documented semantics, its own challenge and hosted Checkout pages (their
//! URLs and element ids are in that module's documentation), every body validated
//! against Stripe's OpenAPI description, on the system clock.
//!
//! `cargo run --release --bin stripe-stand-in -- --port 12111` prints its base URL
//! (the service's `STRIPE_API_BASE`) and the only secret key it accepts (the
//! service's `STRIPE_SECRET_KEY`), and serves on 127.0.0.1 until interrupted; it
//! then prints every body that was off Stripe's schemas, if any. `--port 0` picks a
//! free port.
//!
//! `--forward-to URL --webhook-secret whsec_…` also delivers its events to `URL`
//! every second, each signed with the secret as Stripe signs them, the way
//! `stripe listen --forward-to` does (docs/webhooks.md).

#[path = "../../stripe/tests/stand_in/mod.rs"]
mod stand_in;

use std::process::ExitCode;
use std::sync::Arc;

/// What the arguments ask for.
struct Options {
    /// `--port N`, 12111 unless given.
    port: u16,
    /// `--forward-to URL` and `--webhook-secret whsec_…`, given together.
    forward: Option<(String, String)>,
}

/// The options from the arguments.
fn options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut port = 12_111;
    let (mut to, mut secret) = (None, None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--port" => port = value()?.parse().map_err(|_| "--port: a port number")?,
            "--forward-to" => to = Some(value()?),
            "--webhook-secret" => secret = Some(value()?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    let forward = match (to, secret) {
        (None, None) => None,
        (Some(to), Some(secret)) => Some((to, secret)),
        _ => return Err("--forward-to and --webhook-secret go together".to_owned()),
    };
    Ok(Options { port, forward })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Options { port, forward } = match options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("stripe-stand-in: {message}");
            eprintln!(
                "usage: stripe-stand-in [--port N] [--forward-to URL --webhook-secret whsec_...]"
            );
            return ExitCode::from(2);
        }
    };
    let clock: stand_in::Clock = Arc::new(|| chrono::Utc::now().timestamp());
    let stand_in = match stand_in::StandIn::listen(&format!("127.0.0.1:{port}"), clock).await {
        Ok(stand_in) => stand_in,
        Err(error) => {
            eprintln!("stripe-stand-in: cannot bind: {error}");
            return ExitCode::from(1);
        }
    };
    println!("stripe stand-in listening on {}", stand_in.url());
    println!("secret key it accepts: {}", stand_in::SECRET);
    if let Some((to, secret)) = forward {
        println!("forwarding events to {to}");
        let forwarding = stand_in.clone();
        tokio::spawn(async move {
            loop {
                for (id, status) in forwarding.deliver_new(&to, &secret, &[]).await {
                    println!("event {id} delivered: {status}");
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
    }
    let _ = tokio::signal::ctrl_c().await;
    let failures = stand_in.schema_failures();
    for failure in &failures {
        eprintln!("off Stripe's schemas: {failure}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
