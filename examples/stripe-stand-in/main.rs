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

#[path = "../../stripe/tests/stand_in/mod.rs"]
mod stand_in;

use std::process::ExitCode;
use std::sync::Arc;

/// The port from the arguments (`--port N`, 12111 unless given).
fn port(mut args: impl Iterator<Item = String>) -> Result<u16, String> {
    let mut port = 12_111;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                port = value.parse().map_err(|_| "--port: a port number")?;
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(port)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let port = match port(std::env::args().skip(1)) {
        Ok(port) => port,
        Err(message) => {
            eprintln!("stripe-stand-in: {message}");
            eprintln!("usage: stripe-stand-in [--port N]");
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
