//! `command-journal emulator [--host H] [--port N] [--rules FILE]`: the official
//! Firestore emulator, in the foreground, until Ctrl-C or SIGTERM, enforcing the rules
//! of `--rules`, else `./firestore.rules` when the directory has one, else the crate's
//! built-in copy; the JSON line says which.

use super::exit;
use crate::emulator::{Emulator, EmulatorError};
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

/// Where the emulator listens.
#[derive(Debug, Clone, clap::Args)]
pub struct EmulatorArgs {
    /// The address to listen on: an IP address (127.0.0.1, ::1, 0.0.0.0 for every
    /// interface) or `localhost`.
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_host)]
    pub host: IpAddr,
    /// The port, 1 to 65535 (without it, a free port); one in use is refused with
    /// `address_unavailable` (exit 2).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// The security rules file to enforce (default: ./firestore.rules when present,
    /// else the crate's built-in firestore.rules). An unreadable file is refused
    /// (exit 2).
    #[arg(long)]
    pub rules: Option<std::path::PathBuf>,
}

/// The rules to enforce and how the JSON line names them: the file asked for, the
/// directory's `firestore.rules`, or `built-in`.
fn rules(asked: Option<&std::path::Path>) -> Result<(String, String), std::io::Error> {
    let local = std::path::Path::new("firestore.rules");
    match asked {
        Some(path) => Ok((std::fs::read_to_string(path)?, path.display().to_string())),
        None if local.is_file() => {
            Ok((std::fs::read_to_string(local)?, local.display().to_string()))
        }
        None => Ok((crate::emulator::RULES.to_owned(), "built-in".to_owned())),
    }
}

/// `--host`: an IP address, or `localhost` for 127.0.0.1.
fn parse_host(text: &str) -> Result<IpAddr, String> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.parse().map_err(|_| {
        "expected an IP address such as 127.0.0.1, ::1 or 0.0.0.0, or localhost".to_owned()
    })
}

/// Prints the refusal of an address that cannot be listened on; exit 2.
fn address_unavailable(error: &EmulatorError) -> ExitCode {
    eprintln!("command-journal: {error}");
    let line = json!({"error": "address_unavailable", "message": error.to_string()});
    println!("{line}");
    exit::Exit::Input.into()
}

/// Runs the emulator until Ctrl-C or SIGTERM.
pub async fn run(args: EmulatorArgs) -> ExitCode {
    let (text, named) = match rules(args.rules.as_deref()) {
        Ok(found) => found,
        Err(error) => {
            eprintln!("command-journal: the rules file cannot be read: {error}");
            let line = json!({"error": "invalid_input", "field": "rules",
                "problem": "unreadable", "expected": "a readable Firestore security rules file"});
            println!("{line}");
            return exit::Exit::Input.into();
        }
    };
    let started = tokio::task::spawn_blocking(move || match (args.host, args.port) {
        (IpAddr::V4(Ipv4Addr::LOCALHOST), None) => Emulator::start_with_rules(&text),
        (host, port) => {
            let port = match port {
                Some(port) => port,
                // A free port of the address asked for.
                None => std::net::TcpListener::bind((host, 0))
                    .and_then(|listener| listener.local_addr())
                    .map(|address| address.port())
                    .map_err(EmulatorError::Io)?,
            };
            Emulator::start_on_with_rules(SocketAddr::new(host, port), &text)
        }
    })
    .await;
    let emulator = match started {
        Ok(Ok(emulator)) => emulator,
        Ok(Err(error @ EmulatorError::AddressUnavailable { .. })) => {
            return address_unavailable(&error);
        }
        Ok(Err(error)) => {
            eprintln!("command-journal: {error}");
            return exit::emulator_unavailable();
        }
        Err(_) => return exit::emulator_unavailable(),
    };
    let line = json!({
        "host": emulator.host(),
        "pid": emulator.pid(),
        "rules": named,
    });
    let stop = super::Stop::listen();
    println!("{line}");
    eprintln!(
        "emulator ready: export FIRESTORE_EMULATOR_HOST={} (Ctrl-C stops it)",
        emulator.host()
    );
    stop.wait().await;
    drop(emulator);
    exit::Exit::Success.into()
}
