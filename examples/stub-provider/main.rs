//! A stub payment provider for trying the checkout service locally: it answers the
//! service's provider contract (`docs/providers.md`), deduplicates by
//! `Idempotency-Key`, and can be scripted to decline, fail, leave a charge pending or
//! lose an answer. It keeps every charge and key while it runs (its lookup is
//! durable: run the service in front of it with `PROVIDER_LOOKUP=durable`).
//!
//! `cargo run --release --bin stub-provider -- --port 9090` prints its base URL (give it to
//! the service as `PROVIDER_URL`) and serves until interrupted. Options: `--port N`
//! (0, the default, picks a free one), `--bind ADDRESS` (default `127.0.0.1`),
//! `--hang-seconds S` (how long a lost answer is held, default 120). Script it with
//! `curl -X POST {url}/_stub/script -d '{"charges":["lose"]}'`; read what it received
//! with `curl {url}/_stub/calls`.

// Shared with the emulator tests, which use the parts the binary does not.
#[allow(dead_code)]
mod stub;

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use stub::{Action, Stub};

struct Options {
    bind: IpAddr,
    port: u16,
    hang: Duration,
}

fn options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        bind: IpAddr::from([127, 0, 0, 1]),
        port: 0,
        hang: Duration::from_secs(120),
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => options.port = value.parse().map_err(|_| "--port: a port number")?,
            "--bind" => options.bind = value.parse().map_err(|_| "--bind: an IP address")?,
            "--hang-seconds" => {
                let seconds: u64 = value.parse().map_err(|_| "--hang-seconds: seconds")?;
                options.hang = Duration::from_secs(seconds);
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("stub-provider: {message}");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind((options.bind, options.port)).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("stub-provider: cannot bind: {error}");
            return ExitCode::from(1);
        }
    };
    let stub = Arc::new(Stub::new(Action::Charge, "ch_stub_").hanging_for(options.hang));
    let url = match stub::spawn(stub, listener) {
        Ok(url) => url,
        Err(error) => {
            eprintln!("stub-provider: {error}");
            return ExitCode::from(1);
        }
    };
    println!("stub provider listening on {url}");
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
