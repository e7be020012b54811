//! A loopback gRPC server that answers every request with one chosen status, as a
//! misconfigured or overloaded Firestore would (PERMISSION_DENIED, NOT_FOUND on the
//! database, RESOURCE_EXHAUSTED, …), and counts the requests it received by method.
//!
//! It speaks cleartext HTTP/2 through `h2` and answers "trailers-only": response
//! headers with `grpc-status` and `END_STREAM`, which is how a gRPC server reports an
//! error before any message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running status server; dropping it stops accepting.
pub struct StatusServer {
    host: String,
    calls: Arc<Mutex<HashMap<String, u64>>>,
    acceptor: JoinHandle<()>,
}

impl StatusServer {
    /// Answers every RPC with gRPC status `code` (its number) and `message`.
    pub async fn start(code: i32, message: &'static str) -> StatusServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let host = listener.local_addr().expect("address").to_string();
        let calls = Arc::new(Mutex::new(HashMap::new()));
        let seen = calls.clone();
        let acceptor = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let Ok(mut connection) = h2::server::handshake(socket).await else {
                        return;
                    };
                    while let Some(Ok((request, mut respond))) = connection.accept().await {
                        let method = request
                            .uri()
                            .path()
                            .rsplit('/')
                            .next()
                            .unwrap_or("")
                            .to_owned();
                        *seen
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .entry(method)
                            .or_insert(0) += 1;
                        let response = http::Response::builder()
                            .status(200)
                            .header("content-type", "application/grpc")
                            .header("grpc-status", code.to_string())
                            .header("grpc-message", message)
                            .body(())
                            .expect("response");
                        let _ = respond.send_response(response, true);
                    }
                });
            }
        });
        StatusServer {
            host,
            calls,
            acceptor,
        }
    }

    /// `HOST:PORT` to give `Target::Emulator`.
    pub fn host(&self) -> String {
        self.host.clone()
    }

    /// Requests received for `method` (e.g. `BatchGetDocuments`).
    pub fn calls(&self, method: &str) -> u64 {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(method)
            .copied()
            .unwrap_or(0)
    }

    /// Requests received for any method.
    pub fn total(&self) -> u64 {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .sum()
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}
