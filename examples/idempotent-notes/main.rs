//! A new axum service with one idempotent route, in a few lines: `POST /v1/notes`
//! under the `Idempotency-Key` layer (`command-journal-http`), the caller handed to
//! it by the service's own authentication. The block below the marker is the one
//! http/README.md shows, character for character (a test of that package checks it).
//!
//! `cargo run --release --bin idempotent-notes` starts its own Firestore emulator
//! through the harness (or uses `FIRESTORE_EMULATOR_HOST`) and serves on
//! 127.0.0.1:8080 (`-- --port N` for another port) until interrupted.

use command_journal::{Connection, Target};
use command_journal_emulator::Emulator;
use std::process::ExitCode;

// README block
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Router, routing::post};
use command_journal::identity::{CallerScopeKind, CommandType, Environment};
use command_journal::{Journal, JournalError};
use command_journal_http::{IdempotencyLayer, VerifiedCaller};

/// `POST /v1/notes`, at most once in effect per caller and `Idempotency-Key`.
fn routes(journal: Journal) -> Result<Router, JournalError> {
    let create_note_once = IdempotencyLayer::new(
        journal,
        Environment::Emulator,
        CommandType::parse("create_note")?,
    );
    Ok(Router::new()
        .route("/v1/notes", post(create_note).layer(create_note_once))
        .layer(middleware::from_fn(authenticate)))
}

/// Only computes its answer: the layer stores it with the command and replays it.
async fn create_note(body: String) -> impl IntoResponse {
    (
        StatusCode::CREATED,
        [("content-type", "application/json")],
        format!(r#"{{"note":{body}}}"#),
    )
}

/// The service's authentication: it verifies the caller, then hands it to the layer.
async fn authenticate(mut request: Request, next: Next) -> Response {
    match verify(&request) {
        Some(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None => (StatusCode::UNAUTHORIZED, [("www-authenticate", "Bearer")]).into_response(),
    }
}
// end of README block

/// A stand-in for a real token check, for this example only: `Authorization: Bearer
/// <uid>` is taken at its word. A service verifies a signed token here (the checkout
/// service's `auth.rs` verifies Firebase ID tokens).
fn verify(request: &Request) -> Option<VerifiedCaller> {
    let uid = request
        .headers()
        .get("authorization")?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?;
    VerifiedCaller::new(CallerScopeKind::Member, uid).ok()
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port = match args.as_slice() {
        [] => 8080,
        [flag, port] if flag == "--port" => match port.parse::<u16>() {
            Ok(port) => port,
            Err(_) => return refuse("--port: a port number"),
        },
        _ => return refuse("usage: idempotent-notes [--port N]"),
    };
    let emulator = match Emulator::from_env_or_start() {
        Ok(emulator) => emulator,
        Err(error) => {
            eprintln!("idempotent-notes: cannot start the Firestore emulator: {error}");
            return ExitCode::FAILURE;
        }
    };
    let target = Target::Emulator(emulator.host().to_owned());
    let served = async {
        let connection = Connection::connect("idempotent-notes", target).await?;
        let router = routes(Journal::new(connection))?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|_| "cannot listen on the port")?;
        println!("idempotent-notes: listening on 127.0.0.1:{port}");
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|_| "the server stopped")?;
        Ok::<(), Box<dyn std::error::Error>>(())
    };
    match served.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("idempotent-notes: {error}");
            ExitCode::FAILURE
        }
    }
}

fn refuse(message: &str) -> ExitCode {
    eprintln!("idempotent-notes: {message}");
    ExitCode::from(2)
}
