//! A loopback TCP proxy that counts gRPC calls: every call is one HTTP/2 stream, and a
//! client opens a stream with a HEADERS frame on a new (odd) stream id. The proxy
//! forwards bytes unchanged and reads only the 9-byte frame headers of the
//! client-to-server direction, so it counts the calls of any client, this crate's
//! and the Node.js peer's alike, without decoding HPACK.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

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
                        forward(client, server, counter).await;
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

async fn forward(client: TcpStream, server: TcpStream, streams: Arc<AtomicU64>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    });
    let mut frames = FrameCounter::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let opened = frames.feed(&buf[..n]);
        if opened > 0 {
            streams.fetch_add(opened, Ordering::SeqCst);
        }
        if server_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = server_write.shutdown().await;
    let _ = down.await;
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
