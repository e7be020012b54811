//! A loopback TCP proxy that counts gRPC calls: every call is one HTTP/2 stream, and a
//! client opens a stream with a HEADERS frame on a new (odd) stream id. The proxy
//! forwards bytes unchanged and reads only the 9-byte frame headers of the
//! client-to-server direction, so it counts the calls of any client, this crate's
//! and the Node.js peer's alike, without decoding HPACK.
//!
//! With a one-way delay ([`CountingProxy::start_with_delay`]) every chunk read in either
//! direction is written on only once that delay has passed since it was read, in
//! order and pipelined (later chunks do not wait for earlier ones' delays to add up):
//! a round trip costs twice the delay, as on a network link of that latency with
//! unlimited bandwidth.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const PREFACE_LEN: usize = 24;
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;

/// The proxy; dropping it stops accepting (open connections live on until closed).
pub struct CountingProxy {
    addr: SocketAddr,
    streams: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl CountingProxy {
    /// Listens on a free loopback port and forwards to `upstream` (`HOST:PORT`).
    pub async fn start(upstream: String) -> std::io::Result<Self> {
        Self::start_with_delay(upstream, Duration::ZERO).await
    }

    /// As [`start`](Self::start), delaying every byte by `one_way` in each direction.
    pub async fn start_with_delay(upstream: String, one_way: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let streams = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&streams);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        forward(client, server, counter, one_way).await;
                    }
                });
            }
        });
        Ok(Self {
            addr,
            streams,
            accept,
        })
    }

    /// `HOST:PORT` to connect to instead of the emulator.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// gRPC calls (client-opened HTTP/2 streams) seen so far.
    pub fn calls(&self) -> u64 {
        self.streams.load(Ordering::SeqCst)
    }
}

async fn forward(client: TcpStream, server: TcpStream, streams: Arc<AtomicU64>, one_way: Duration) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let down = tokio::spawn(pump(server_read, client_write, None, one_way));
    pump(client_read, server_write, Some(streams), one_way).await;
    let _ = down.await;
}

/// Copies `from` to `to`, each chunk `one_way` after it was read; counts the streams
/// the client opens when `streams` is given (the client-to-server direction).
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin + Send + 'static,
    streams: Option<Arc<AtomicU64>>,
    one_way: Duration,
) {
    let mut frames = FrameCounter::default();
    let mut buf = vec![0u8; 64 * 1024];
    let (delayed, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    // Without a delay the writer task still runs (sleep_until a past instant returns
    // at once): one code path, one extra copy per chunk.
    let writer = tokio::spawn(async move {
        while let Some((at, bytes)) = due.recv().await {
            if !one_way.is_zero() {
                tokio::time::sleep_until(at).await;
            }
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(streams) = &streams {
            let opened = frames.feed(&buf[..n]);
            if opened > 0 {
                streams.fetch_add(opened, Ordering::SeqCst);
            }
        }
        if delayed
            .send((Instant::now() + one_way, buf[..n].to_vec()))
            .is_err()
        {
            break;
        }
    }
    drop(delayed);
    let _ = writer.await;
}

/// Incremental parser of the client-to-server byte stream: the connection preface,
/// then frames of `9-byte header + payload`.
#[derive(Default)]
struct FrameCounter {
    preface_seen: usize,
    header: Vec<u8>,
    skip: usize,
    max_stream: u32,
}

impl FrameCounter {
    /// Consumes `bytes`; returns how many new streams they opened.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        let mut opened = 0;
        while !bytes.is_empty() {
            if self.preface_seen < PREFACE_LEN {
                let take = (PREFACE_LEN - self.preface_seen).min(bytes.len());
                self.preface_seen += take;
                bytes = &bytes[take..];
            } else if self.skip > 0 {
                let take = self.skip.min(bytes.len());
                self.skip -= take;
                bytes = &bytes[take..];
            } else {
                let take = (FRAME_HEADER - self.header.len()).min(bytes.len());
                self.header.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if self.header.len() == FRAME_HEADER {
                    let h = &self.header;
                    let len =
                        (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                    let kind = h[3];
                    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                    if kind == HEADERS && stream % 2 == 1 && stream > self.max_stream {
                        self.max_stream = stream;
                        opened += 1;
                    }
                    self.skip = len;
                    self.header.clear();
                }
            }
        }
        opened
    }
}
