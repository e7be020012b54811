//! A loopback TCP proxy between the journal's gRPC client and the emulator, which
//! loses, cuts or delays one chosen exchange.
//!
//! gRPC runs over cleartext HTTP/2. The proxy forwards bytes unchanged but reads the
//! 9-byte frame headers in both directions (never the HPACK-compressed header blocks),
//! so it knows which client stream carries which request and which server frames
//! answer it. The RPC is recognised from the first bytes of the request message: the
//! journal's `CommitRequest` and `BatchGetDocumentsRequest` both start with field 1
//! (the database); field 2 is a `Write` message in a commit and a document name
//! (`projects/…`) in a batch get; a `RollbackRequest` has field 2 too, the transaction
//! id, which names no document.
//!
//! A fault is armed for the next request of one RPC and fires once (or for the next
//! `n` requests of it, [`Proxy::arm_times`]):
//!
//! - [`Fault::LoseRequest`]: the request's headers reach the emulator but its message
//!   does not; the connection is cut before it is forwarded. Nothing is applied.
//! - [`Fault::LoseResponse`]: the request is forwarded whole; from the first frame of
//!   its response on, nothing more reaches the client, and once the emulator has
//!   finished the response (`END_STREAM`) the connection is cut. The emulator applied
//!   the request; the client never hears so.
//! - [`Fault::CutResponse`]: the first `after_frames` frames of the response reach the
//!   client, then the connection is cut: a read cut in the middle.
//! - [`Fault::DelayResponse`]: everything the emulator sends is held back from the
//!   first frame of the response on, for the given time, then forwarded in order.
//!   HTTP/2 header compression state is shared by every stream of a connection, so the
//!   whole server-to-client direction is held, never one stream alone.
//! - [`Fault::HoldResponse`]: the same hold, from the response's first message on
//!   (the emulator has answered the request), until [`Proxy::release`];
//!   [`Proxy::until_held`] resolves once it holds, so a test can act on the emulator
//!   between an answered request and the client hearing the answer.
//! - [`Fault::StallResponse`]: the first `after_frames` frames of the response reach
//!   the client, then the same hold until [`Proxy::release`]: a stream stalled in the
//!   middle (a read whose first message, and with it its transaction, has arrived).
//!
//! [`Proxy::close`] cuts every connection and closes the listening port, so every
//! later connection attempt is refused.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const END_STREAM: u8 = 0x1;
const PADDED: u8 = 0x8;

/// The RPC a request carries, as recognised from its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rpc {
    /// `BatchGetDocuments`.
    BatchGet,
    /// `Commit`.
    Commit,
    /// `Rollback`.
    Rollback,
    /// Anything else (the tests' own owner reads go elsewhere).
    Other,
}

/// What happens to the next request of the armed RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Cut the connection before the request message reaches the emulator.
    LoseRequest,
    /// Forward the request; swallow its whole response, then cut the connection.
    LoseResponse,
    /// Forward this many frames of the response, then cut the connection.
    CutResponse {
        /// Response frames (headers, messages) the client receives before the cut.
        after_frames: usize,
    },
    /// Hold the server-to-client direction back this long from the response's first
    /// frame on.
    DelayResponse(Duration),
    /// Hold the server-to-client direction back from the response's first message
    /// on, until [`Proxy::release`].
    HoldResponse,
    /// Forward this many frames of the response, then hold the server-to-client
    /// direction back until [`Proxy::release`].
    StallResponse {
        /// Response frames (headers, messages) the client receives before the stall.
        after_frames: usize,
    },
}

/// The hold of [`Fault::HoldResponse`]: whether a response is held, whether the test
/// released it.
struct Hold {
    held: watch::Sender<bool>,
    released: watch::Sender<bool>,
}

/// One request seen by the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// Which accepted connection (0-based, in accept order).
    pub connection: usize,
    /// The HTTP/2 stream id.
    pub stream: u32,
    /// The RPC, once its message was seen (`None` if it never was).
    pub rpc: Option<Rpc>,
    /// The fault applied to it, if any.
    pub fault: Option<Fault>,
    /// Whether the emulator finished its response (`END_STREAM` seen).
    pub answered: bool,
    /// Whether the client received the end of the response.
    pub delivered: bool,
}

#[derive(Default)]
struct Shared {
    /// The armed fault, its RPC and how many more requests of it it applies to.
    armed: Option<(Rpc, Fault, usize)>,
    exchanges: Vec<Exchange>,
    connections: Vec<watch::Sender<bool>>,
    fired: usize,
    /// Set by [`Proxy::close`]: no frame is forwarded any more, even by a
    /// connection whose cut has not yet taken effect.
    closed: bool,
}

/// A running proxy; dropping it stops accepting and cuts every connection.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    hold: Arc<Hold>,
    acceptor: Option<JoinHandle<()>>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Mutex::new(Shared::default()));
        let hold = Arc::new(Hold {
            held: watch::channel(false).0,
            released: watch::channel(false).0,
        });
        let upstream = upstream.to_owned();
        let state = shared.clone();
        let holding = hold.clone();
        let acceptor = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (cut, cut_seen) = watch::channel(false);
                let id = {
                    let mut shared = lock(&state);
                    shared.connections.push(cut);
                    shared.connections.len() - 1
                };
                Connection::spawn(id, client, server, state.clone(), holding.clone(), cut_seen);
            }
        });
        Proxy {
            addr,
            shared,
            hold,
            acceptor: Some(acceptor),
        }
    }

    /// Resolves once a [`Fault::HoldResponse`] holds its response: the emulator has
    /// answered that request, and the client has not heard it.
    pub async fn until_held(&self) {
        let _ = self.hold.held.subscribe().wait_for(|held| *held).await;
    }

    /// Lets a response held by [`Fault::HoldResponse`] through, and every later one.
    pub fn release(&self) {
        self.hold.released.send_replace(true);
    }

    /// `HOST:PORT` to give `Target::Emulator`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Applies `fault` to the next request of `rpc`, once.
    pub fn arm(&self, rpc: Rpc, fault: Fault) {
        self.arm_times(rpc, fault, 1);
    }

    /// Applies `fault` to each of the next `times` requests of `rpc`.
    pub fn arm_times(&self, rpc: Rpc, fault: Fault, times: usize) {
        let mut shared = lock(&self.shared);
        assert!(shared.armed.is_none(), "a fault is already armed");
        assert!(times > 0, "a fault armed for no request");
        shared.armed = Some((rpc, fault, times));
    }

    /// Arms `fault` for the next request of `rpc` unless a fault is still armed;
    /// returns whether it armed.
    pub fn try_arm(&self, rpc: Rpc, fault: Fault) -> bool {
        let mut shared = lock(&self.shared);
        if shared.armed.is_some() {
            return false;
        }
        shared.armed = Some((rpc, fault, 1));
        true
    }

    /// Removes an armed fault that has not fired.
    pub fn disarm(&self) {
        lock(&self.shared).armed = None;
    }

    /// How many requests an armed fault was applied to.
    pub fn fired(&self) -> usize {
        lock(&self.shared).fired
    }

    /// Every request seen so far, in the order their headers arrived.
    pub fn exchanges(&self) -> Vec<Exchange> {
        lock(&self.shared).exchanges.clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        lock(&self.shared).connections.len()
    }

    /// Cuts every connection and closes the port: from the call on no request frame
    /// is forwarded (a connection whose cut is still under way included), and once
    /// it returns every connection attempt is refused.
    pub async fn close(&mut self) {
        lock(&self.shared).closed = true;
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.abort();
            // The listener is dropped when the aborted task is.
            let _ = acceptor.await;
        }
        self.cut_all();
    }

    fn cut_all(&self) {
        for cut in &lock(&self.shared).connections {
            let _ = cut.send(true);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.abort();
        }
        self.cut_all();
    }
}

/// Per-connection state both directions share.
#[derive(Default)]
struct Streams {
    /// Stream id → index into `Shared::exchanges`.
    index: HashMap<u32, usize>,
    /// Response faults waiting for their response, by stream.
    pending: HashMap<u32, Fault>,
}

struct Connection {
    id: usize,
    shared: Arc<Mutex<Shared>>,
    hold: Arc<Hold>,
    streams: Mutex<Streams>,
    cut: watch::Sender<bool>,
}

impl Connection {
    fn spawn(
        id: usize,
        client: TcpStream,
        server: TcpStream,
        shared: Arc<Mutex<Shared>>,
        hold: Arc<Hold>,
        cut_seen: watch::Receiver<bool>,
    ) {
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (cut, _) = watch::channel(false);
        let conn = Arc::new(Connection {
            id,
            shared,
            hold,
            streams: Mutex::new(Streams::default()),
            cut,
        });
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let up = tokio::spawn(conn.clone().upstream(client_read, server_write));
        let down = tokio::spawn(conn.clone().downstream(server_read, client_write));
        let mut local_cut = conn.cut.subscribe();
        let mut external_cut = cut_seen;
        tokio::spawn(async move {
            tokio::select! {
                _ = local_cut.wait_for(|cut| *cut) => {}
                _ = external_cut.wait_for(|cut| *cut) => {}
            }
            // Aborting both pumps drops all four halves: both sockets close.
            up.abort();
            down.abort();
        });
    }

    fn streams(&self) -> MutexGuard<'_, Streams> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cut(&self) {
        let _ = self.cut.send(true);
    }

    /// Client to emulator: records requests, recognises their RPC, applies faults.
    async fn upstream(self: Arc<Self>, mut from: OwnedReadHalf, mut to: OwnedWriteHalf) {
        let mut buffer = Vec::new();
        let mut preface_done = false;
        loop {
            let mut chunk = [0u8; 16 * 1024];
            let n = match from.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            };
            buffer.extend_from_slice(&chunk[..n]);
            if !preface_done {
                if buffer.len() < PREFACE.len() {
                    continue;
                }
                let preface: Vec<u8> = buffer.drain(..PREFACE.len()).collect();
                if to.write_all(&preface).await.is_err() {
                    return;
                }
                preface_done = true;
            }
            while let Some(frame) = take_frame(&mut buffer) {
                if !self.on_request_frame(&frame) {
                    self.cut();
                    return;
                }
                if to.write_all(&frame.bytes).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Books a client frame; `false` to cut the connection instead of forwarding it.
    fn on_request_frame(&self, frame: &Frame) -> bool {
        let mut streams = self.streams();
        let mut shared = lock(&self.shared);
        if shared.closed {
            // Closed: the cut may not have reached this connection yet, but nothing
            // it sends reaches the emulator any more.
            return false;
        }
        if frame.kind == HEADERS
            && frame.stream % 2 == 1
            && !streams.index.contains_key(&frame.stream)
        {
            shared.exchanges.push(Exchange {
                connection: self.id,
                stream: frame.stream,
                rpc: None,
                fault: None,
                answered: false,
                delivered: false,
            });
            streams
                .index
                .insert(frame.stream, shared.exchanges.len() - 1);
        }
        if frame.kind != DATA {
            return true;
        }
        let Some(&index) = streams.index.get(&frame.stream) else {
            return true;
        };
        if shared.exchanges[index].rpc.is_some() {
            return true;
        }
        let rpc = recognise(frame.data_payload());
        shared.exchanges[index].rpc = Some(rpc);
        let Some((armed_rpc, fault, times)) = shared.armed else {
            return true;
        };
        if armed_rpc != rpc {
            return true;
        }
        shared.armed = (times > 1).then_some((armed_rpc, fault, times - 1));
        shared.fired += 1;
        shared.exchanges[index].fault = Some(fault);
        if fault == Fault::LoseRequest {
            return false;
        }
        streams.pending.insert(frame.stream, fault);
        true
    }

    /// Emulator to client: forwards frames, applying a pending response fault.
    async fn downstream(self: Arc<Self>, mut from: OwnedReadHalf, mut to: OwnedWriteHalf) {
        let mut buffer = Vec::new();
        // Set while a response is being swallowed: nothing more reaches the client.
        let mut swallowing = false;
        let mut forwarded_of_faulted = 0usize;
        loop {
            let mut chunk = [0u8; 16 * 1024];
            let n = match from.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            };
            buffer.extend_from_slice(&chunk[..n]);
            while let Some(frame) = take_frame(&mut buffer) {
                let ends = frame.stream != 0
                    && ((matches!(frame.kind, DATA | HEADERS) && frame.flags & END_STREAM != 0)
                        || frame.kind == RST_STREAM);
                if ends {
                    self.mark(frame.stream, |e| e.answered = true);
                }
                let fault = self.streams().pending.get(&frame.stream).copied();
                match fault {
                    Some(Fault::LoseResponse) => {
                        swallowing = true;
                        if ends {
                            self.cut();
                            return;
                        }
                        continue;
                    }
                    Some(Fault::CutResponse { after_frames }) => {
                        if forwarded_of_faulted >= after_frames {
                            self.cut();
                            return;
                        }
                        forwarded_of_faulted += 1;
                    }
                    Some(Fault::DelayResponse(delay)) => {
                        self.streams().pending.remove(&frame.stream);
                        tokio::time::sleep(delay).await;
                    }
                    // From the first message on: the emulator has answered.
                    Some(Fault::HoldResponse) if frame.kind == DATA => {
                        self.streams().pending.remove(&frame.stream);
                        let mut released = self.hold.released.subscribe();
                        self.hold.held.send_replace(true);
                        let _ = released.wait_for(|released| *released).await;
                    }
                    Some(Fault::HoldResponse) => {}
                    Some(Fault::StallResponse { after_frames }) => {
                        if forwarded_of_faulted >= after_frames {
                            self.streams().pending.remove(&frame.stream);
                            let mut released = self.hold.released.subscribe();
                            self.hold.held.send_replace(true);
                            let _ = released.wait_for(|released| *released).await;
                        } else {
                            forwarded_of_faulted += 1;
                        }
                    }
                    Some(Fault::LoseRequest) | None => {}
                }
                if swallowing {
                    continue;
                }
                if to.write_all(&frame.bytes).await.is_err() {
                    return;
                }
                if ends {
                    self.mark(frame.stream, |e| e.delivered = true);
                }
            }
        }
    }

    fn mark(&self, stream: u32, update: impl FnOnce(&mut Exchange)) {
        let index = self.streams().index.get(&stream).copied();
        if let Some(index) = index {
            update(&mut lock(&self.shared).exchanges[index]);
        }
    }
}

/// One whole HTTP/2 frame.
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    bytes: Vec<u8>,
}

impl Frame {
    /// The payload of a DATA frame without its padding.
    fn data_payload(&self) -> &[u8] {
        let payload = &self.bytes[FRAME_HEADER..];
        if self.flags & PADDED == 0 {
            return payload;
        }
        let Some((&pad, rest)) = payload.split_first() else {
            return &[];
        };
        &rest[..rest.len().saturating_sub(usize::from(pad))]
    }
}

/// Removes the first complete frame from `buffer`, if there is one.
fn take_frame(buffer: &mut Vec<u8>) -> Option<Frame> {
    if buffer.len() < FRAME_HEADER {
        return None;
    }
    let length =
        usize::from(buffer[0]) << 16 | usize::from(buffer[1]) << 8 | usize::from(buffer[2]);
    if buffer.len() < FRAME_HEADER + length {
        return None;
    }
    let bytes: Vec<u8> = buffer.drain(..FRAME_HEADER + length).collect();
    Some(Frame {
        kind: bytes[3],
        flags: bytes[4],
        stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff,
        bytes,
    })
}

/// Recognises the RPC from the start of a gRPC request message (5-byte prefix, then
/// protobuf): field 1 (tag 0x0a) is the database in the journal's three RPCs; field 2
/// (tag 0x12) is a document name in a batch get, a `Write` message (which names its
/// document) in a commit, and the transaction id, naming no document, in a rollback.
fn recognise(data: &[u8]) -> Rpc {
    let Some(message) = data.get(5..) else {
        return Rpc::Other;
    };
    let Some(rest) = field(message, 0x0a) else {
        return Rpc::Other;
    };
    if rest.first() != Some(&0x12) {
        return Rpc::Other;
    }
    let value = value_of(rest);
    if value.starts_with(b"projects/") {
        Rpc::BatchGet
    } else if value.windows(9).any(|w| w == b"projects/") {
        Rpc::Commit
    } else {
        Rpc::Rollback
    }
}

/// Skips one whole length-delimited field with tag `tag`; the bytes after it.
fn field(bytes: &[u8], tag: u8) -> Option<&[u8]> {
    let (&first, rest) = bytes.split_first()?;
    if first != tag {
        return None;
    }
    let (len, used) = varint(rest)?;
    rest.get(used + usize::try_from(len).ok()?..)
}

/// The (possibly truncated) value of the length-delimited field starting `bytes`.
fn value_of(bytes: &[u8]) -> &[u8] {
    match varint(bytes.get(1..).unwrap_or_default()) {
        Some((_, used)) => bytes.get(1 + used..).unwrap_or_default(),
        None => &[],
    }
}

fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}
