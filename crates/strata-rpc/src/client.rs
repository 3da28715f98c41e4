//! [`NodeClient`]: one HTTP/2 connection to one peer node, with signed requests, timeouts, and a
//! health tracker: a node that fails at the transport level is marked offline, so calls to it
//! fail at once instead of each waiting for a timeout, and a background probe brings it back.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::de::DeserializeOwned;
use strata_drive::DriveError;
use tokio::sync::mpsc;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use strata_types::limits::{
    HTTP2_CONNECTION_WINDOW, HTTP2_FRAME_SIZE_MAX, HTTP2_STREAM_WINDOW, NODE_PROBE_INTERVAL,
    NODE_PROBE_TIMEOUT, RPC_ANSWER_SIZE_MAX, RPC_BATCH_CALLS_MAX, RPC_BATCH_CALL_SIZE_MAX, RPC_BATCH_DELAY,
    RPC_KEEPALIVE_INTERVAL, RPC_KEEPALIVE_TIMEOUT, RPC_READ_SIZE_MAX,
};
use tokio::sync::oneshot;

use crate::auth::{unix_now, BodyDigest, FrameKey, RpcKey, Signed, AUTH_HEADER};
use crate::peer::{PeerCall, PeerError, PeerReply};
use crate::wire::{decode, encode, RemoteCall, RemoteReply, WireError};
use crate::PREFIX;

pub type RequestBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// What to do when a node answers again.
type ReturnHook = Box<dyn Fn(&str) + Send + Sync>;

/// How a node reaches its peers.
#[derive(Clone)]
pub struct ClientConfig {
    pub key: RpcKey,
    /// TLS settings when the deployment serves HTTPS (peers are then `https://`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Source address for connections (this node's own address), so a node's traffic is its own.
    pub local_ip: Option<std::net::IpAddr>,
    /// Longest wait for any one call.
    pub timeout: Duration,
    pub connect_timeout: Duration,
}

pub struct NodeClient {
    /// `host:port`.
    pub name: String,
    base: String,
    http: Client<hyper_rustls::HttpsConnector<HttpConnector>, RequestBody>,
    key: RpcKey,
    /// This client's sender id and the last sequence number it signed (see [`crate::auth`]).
    sender: u128,
    sequence: AtomicU64,
    timeout: Duration,
    online: AtomicBool,
    probing: AtomicBool,
    /// Called when the node answers again after being offline.
    on_return: OnceLock<ReturnHook>,
    /// Releases waiting to go out together (see [`NodeClient::defer`]).
    deferred: std::sync::Mutex<Option<crate::wire::Batch>>,
    /// Lock releases of batches sent whose answer has not come back.
    releasing: std::sync::Mutex<std::collections::HashSet<uuid::Uuid>>,
    /// Requests signed, and their header and body bytes (before HTTP/2 compression; a streamed
    /// body counts as 0): what each request costs the two nodes, for tests and tuning.
    requests: AtomicU64,
    request_bytes: AtomicU64,
    /// Drive calls waiting to go out together (see [`NodeClient::drive_call`]).
    queued: std::sync::Mutex<Vec<QueuedCall>>,
}

/// A drive call waiting for its batch: the drive's path, the encoded call, where to answer.
struct QueuedCall {
    drive: String,
    call: Bytes,
    answer: oneshot::Sender<Result<RemoteReply, DriveError>>,
}

impl std::fmt::Debug for NodeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeClient({})", self.name)
    }
}

fn transport(e: impl std::fmt::Display) -> DriveError {
    DriveError::Unreachable(e.to_string())
}

impl NodeClient {
    pub fn new(name: &str, config: &ClientConfig) -> Arc<Self> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        http.set_connect_timeout(Some(config.connect_timeout));
        http.set_local_address(config.local_ip);
        let tls = config.tls.clone().map(|c| (*c).clone()).unwrap_or_else(|| {
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth())
            .unwrap_or_else(|_| {
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            })
        });
        let scheme = if config.tls.is_some() { "https" } else { "http" };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http2()
            .wrap_connector(http);
        let http = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .http2_only(true)
            .http2_initial_stream_window_size(HTTP2_STREAM_WINDOW)
            .http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
            // Whole shard blocks in one DATA frame: the answer arrives as one buffer, no gathering copy.
            .http2_max_frame_size(HTTP2_FRAME_SIZE_MAX)
            .http2_keep_alive_interval(RPC_KEEPALIVE_INTERVAL)
            .http2_keep_alive_timeout(RPC_KEEPALIVE_TIMEOUT)
            .build(connector);
        Arc::new(Self {
            name: name.to_owned(),
            base: format!("{scheme}://{name}"),
            http,
            key: config.key.clone(),
            sender: uuid::Uuid::new_v4().as_u128(),
            sequence: AtomicU64::new(0),
            timeout: config.timeout,
            online: AtomicBool::new(true),
            probing: AtomicBool::new(false),
            on_return: OnceLock::new(),
            deferred: std::sync::Mutex::new(None),
            releasing: Default::default(),
            requests: AtomicU64::new(0),
            request_bytes: AtomicU64::new(0),
            queued: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The longest wait for one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the node answered the last time we tried.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Relaxed)
    }

    /// Requests signed so far, and their header and body bytes (see the fields).
    pub fn sent(&self) -> (u64, u64) {
        (self.requests.load(Ordering::Relaxed), self.request_bytes.load(Ordering::Relaxed))
    }

    /// Sets what to do when the node comes back after being offline (once).
    pub fn on_return(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.on_return.set(Box::new(f));
    }

    /// A signed request with the next sequence number; with the key of its frames' MACs when
    /// the body is a frame stream.
    pub fn request(
        &self,
        method: Method,
        path_and_query: &str,
        digest: BodyDigest,
        body: RequestBody,
    ) -> Result<(Request<RequestBody>, Option<FrameKey>), DriveError> {
        let signed = Signed {
            time: unix_now(),
            sender: self.sender,
            sequence: self.sequence.fetch_add(1, Ordering::Relaxed) + 1,
            body: digest,
        };
        let (auth, signature) = self.key.header(method.as_str(), path_and_query, &signed);
        let body_size = body.size_hint().exact().unwrap_or(0);
        self.requests.fetch_add(1, Ordering::Relaxed);
        let header_size = (path_and_query.len() + AUTH_HEADER.len() + auth.len()) as u64;
        self.request_bytes.fetch_add(header_size + body_size, Ordering::Relaxed);
        let req = Request::builder()
            .method(method)
            .uri(format!("{}{path_and_query}", self.base))
            .header(AUTH_HEADER, auth)
            .body(body)
            .map_err(|e| DriveError::Protocol(format!("bad request to {}: {e}", self.name)))?;
        let frames = (digest == BodyDigest::Frames).then(|| self.key.frame_key(&signature));
        Ok((req, frames))
    }

    /// Signs and sends one request whose whole body is `body` (see [`send_request`](Self::send_request)).
    pub async fn send(
        self: &Arc<Self>,
        method: Method,
        path_and_query: &str,
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Result<Response<Incoming>, DriveError> {
        let (req, _) = self.request(method, path_and_query, BodyDigest::of(&body), full(body))?;
        self.send_request(req, timeout).await
    }

    /// Sends one signed request; `Unreachable` at once when the node is known to be down, and the
    /// node is marked down when the transport fails or the call times out.
    pub async fn send_request(
        self: &Arc<Self>,
        req: Request<RequestBody>,
        timeout: Option<Duration>,
    ) -> Result<Response<Incoming>, DriveError> {
        if !self.is_online() {
            return Err(DriveError::Unreachable(format!("node {} is offline", self.name)));
        }
        let answer = match timeout {
            Some(t) => tokio::time::timeout(t, self.http.request(req)).await,
            None => Ok(self.http.request(req).await),
        };
        match answer {
            Ok(Ok(resp)) if resp.status() == StatusCode::FORBIDDEN => {
                let why = read_answer(resp.into_body(), 4096).await.unwrap_or_default();
                Err(DriveError::Unreachable(format!(
                    "node {} refused our RPC request: {}",
                    self.name,
                    String::from_utf8_lossy(&why)
                )))
            }
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => {
                self.mark_offline(&e.to_string());
                Err(transport(format!("node {}: {e}", self.name)))
            }
            Err(_) => {
                self.mark_offline("timed out");
                Err(DriveError::TimedOut {
                    op: format!("a call to node {}", self.name),
                    after: timeout.unwrap_or(self.timeout),
                })
            }
        }
    }

    /// `call`, bounded by the call time-out; a call that overruns it marks the node offline.
    async fn within_timeout<T>(
        self: &Arc<Self>,
        call: impl std::future::Future<Output = Result<T, DriveError>>,
    ) -> Result<T, DriveError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(r) => r,
            Err(_) => {
                self.mark_offline("timed out");
                Err(DriveError::TimedOut { op: format!("a call to node {}", self.name), after: self.timeout })
            }
        }
    }

    /// A MessagePack call: `body` in, `Result<T, WireError>` out.
    pub async fn call<T: DeserializeOwned>(
        self: &Arc<Self>,
        path_and_query: &str,
        body: Bytes,
    ) -> Result<T, DriveError> {
        self.call_reading(path_and_query, body, |_| Vec::new()).await
    }

    /// [`NodeClient::call`] for drive calls, whose answer may carry the bytes of reads after
    /// its MessagePack ([`crate::wire::TAIL_HEADER`]): put back into the `replies` of the answer.
    async fn call_reading<T: DeserializeOwned>(
        self: &Arc<Self>,
        path_and_query: &str,
        body: Bytes,
        replies: fn(&mut T) -> Vec<&mut RemoteReply>,
    ) -> Result<T, DriveError> {
        let call = async {
            let resp = self.send(Method::POST, path_and_query, body, None).await?;
            let status = resp.status();
            let tail_at: Option<usize> =
                resp.headers().get(crate::wire::TAIL_HEADER).and_then(|v| v.to_str().ok()?.parse().ok());
            let bytes = read_answer(resp.into_body(), RPC_ANSWER_SIZE_MAX)
                .await
                .map_err(|e| transport(format!("node {}: {e}", self.name)))?;
            if status != StatusCode::OK {
                return Err(DriveError::Protocol(format!(
                    "node {} refused the call ({status}): {}",
                    self.name,
                    String::from_utf8_lossy(&bytes)
                )));
            }
            let unreadable = |e: String| {
                DriveError::Protocol(format!("node {} sent an unreadable answer: {e}", self.name))
            };
            let (head, tail) = match tail_at {
                Some(at) if at <= bytes.len() => (bytes.slice(..at), bytes.slice(at..)),
                Some(at) => return Err(unreadable(format!("a tail at {at} of {} bytes", bytes.len()))),
                None => (bytes, Bytes::new()),
            };
            let mut answer = decode::<Result<T, WireError>>(&head)
                .map_err(|e| unreadable(e.to_string()))?
                .map_err(DriveError::from)?;
            crate::wire::from_tail(replies(&mut answer).into_iter(), &tail).map_err(unreadable)?;
            Ok(answer)
        };
        self.within_timeout(call).await
    }

    /// A call whose answer is raw bytes (shard reads): 200 with the bytes, or an error document.
    pub async fn fetch(self: &Arc<Self>, path_and_query: &str) -> Result<Bytes, DriveError> {
        let call = async {
            let resp = self.send(Method::GET, path_and_query, Bytes::new(), None).await?;
            let ok = resp.status() == StatusCode::OK;
            let bytes = read_answer(resp.into_body(), RPC_READ_SIZE_MAX)
                .await
                .map_err(|e| transport(format!("node {}: {e}", self.name)))?;
            if ok {
                return Ok(bytes);
            }
            Err(decode::<WireError>(&bytes).map(DriveError::from).unwrap_or_else(|e| {
                DriveError::Protocol(format!("node {} sent an unreadable error: {e}", self.name))
            }))
        };
        self.within_timeout(call).await
    }

    /// One call to drive `drive` of this node. Calls made at the same moment (the record reads
    /// of a GET, the commits of a PUT: a request calls all drives of its set at once) go out in
    /// one `drive/calls` request, up to [`RPC_BATCH_CALLS_MAX`]: the first call queued schedules
    /// a send that runs once the caller's task yields, by when its other calls have queued.
    /// Calls larger than [`RPC_BATCH_CALL_SIZE_MAX`] go alone.
    pub async fn drive_call(
        self: &Arc<Self>,
        drive: &str,
        call: &RemoteCall,
    ) -> Result<RemoteReply, DriveError> {
        let call = encode(call);
        if call.len() > RPC_BATCH_CALL_SIZE_MAX {
            return self.call_reading(&drive_call_path(drive), call, crate::wire::one_reply).await;
        }
        let (tx, rx) = oneshot::channel();
        let first = {
            let Ok(mut queued) = self.queued.lock() else {
                return Err(DriveError::Stopped("the drive call queue is poisoned".into()));
            };
            queued.push(QueuedCall { drive: drive.to_owned(), call, answer: tx });
            queued.len() == 1
        };
        if first {
            let this = self.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                this.send_queued().await;
            });
        }
        rx.await.unwrap_or_else(|_| Err(DriveError::Stopped("a drive call batch was dropped".into())))
    }

    /// Sends the queued drive calls: one alone as a plain call, more as batches.
    async fn send_queued(self: &Arc<Self>) {
        let queued = match self.queued.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => return,
        };
        let mut queued = queued.into_iter().peekable();
        while queued.peek().is_some() {
            let batch: Vec<QueuedCall> = queued.by_ref().take(RPC_BATCH_CALLS_MAX).collect();
            if queued.peek().is_none() {
                // The last (usually the only) batch goes from this task.
                return self.send_batch(batch).await;
            }
            // The others each on their own: one slow batch does not hold the next.
            let this = self.clone();
            tokio::spawn(async move { this.send_batch(batch).await });
        }
    }

    async fn send_batch(self: &Arc<Self>, mut batch: Vec<QueuedCall>) {
        // What waits for the deferred send goes with these calls instead (one request fewer),
        // and lock releases still on their way go first: a change fenced by a lock that this
        // node took from a majority must not meet, on a node outside it, a grant this node
        // gave back a moment ago (see `crate::lock`).
        let carried = self.take_deferred();
        let releases = self.undelivered_releases();
        if batch.len() == 1 && releases.is_empty() && carried.is_none() {
            if let Some(c) = batch.pop() {
                let answer =
                    self.call_reading(&drive_call_path(&c.drive), c.call, crate::wire::one_reply).await;
                let _ = c.answer.send(answer);
            }
            return;
        }
        let calls: Vec<(&str, &[u8])> = batch.iter().map(|c| (c.drive.as_str(), c.call.as_ref())).collect();
        let (route, body) = match (&carried, releases.is_empty()) {
            (None, true) => ("drive/calls", encode(&serde_bytes_calls(&calls))),
            (carried, _) => {
                let (closes, kept) =
                    carried.as_ref().map(|c| (&c.closes[..], &c.kept[..])).unwrap_or_default();
                let released = crate::wire::BatchRef { closes, releases: &releases, kept };
                ("drive/released-calls", encode(&(released, serde_bytes_calls(&calls))))
            }
        };
        let answers = self
            .call_reading::<Vec<Result<RemoteReply, WireError>>>(&format!("{PREFIX}{route}"), body, |a| {
                crate::wire::batch_replies(a)
            })
            .await;
        if let Some(carried) = &carried {
            self.delivered(carried);
        }
        match answers {
            Ok(answers) if answers.len() == batch.len() => {
                for (c, a) in batch.into_iter().zip(answers) {
                    let _ = c.answer.send(a.map_err(DriveError::from));
                }
            }
            Ok(answers) => {
                let why = format!(
                    "node {} answered {} of a batch of {} drive calls",
                    self.name,
                    answers.len(),
                    batch.len()
                );
                for c in batch {
                    let _ = c.answer.send(Err(DriveError::Protocol(why.clone())));
                }
            }
            Err(e) => {
                for c in batch {
                    let _ = c.answer.send(Err(e.duplicate()));
                }
            }
        }
    }

    /// Queues a release (a closed shard file, a released lock) to go out with the others queued
    /// within the next millisecond: under load one request carries many, instead of one each.
    pub fn defer(self: &Arc<Self>, add: impl FnOnce(&mut crate::wire::Batch)) {
        let Ok(mut pending) = self.deferred.lock() else { return };
        let start = pending.is_none();
        add(pending.get_or_insert_with(Default::default));
        drop(pending);
        if !start {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let this = self.clone();
        rt.spawn(async move {
            tokio::time::sleep(RPC_BATCH_DELAY).await;
            // Gone already when a request to the node carried it meanwhile.
            if let Some(batch) = this.take_deferred() {
                let _ = this.call::<()>(&format!("{PREFIX}batch"), crate::wire::encode(&batch)).await;
                this.delivered(&batch);
            }
        });
    }

    /// The releases waiting for the deferred send, taken to go out now; their lock releases
    /// count as on their way until [`NodeClient::delivered`].
    fn take_deferred(&self) -> Option<crate::wire::Batch> {
        let batch = self.deferred.lock().ok()?.take()?;
        if let Ok(mut r) = self.releasing.lock() {
            r.extend(&batch.releases);
        }
        Some(batch)
    }

    /// The request that carried `batch` has its answer (or failed for good).
    fn delivered(&self, batch: &crate::wire::Batch) {
        if let Ok(mut r) = self.releasing.lock() {
            for owner in &batch.releases {
                r.remove(owner);
            }
        }
    }

    /// The lock releases queued for this node or on their way to it, not yet known to have
    /// arrived: an acquire sent now carries them (see [`crate::wire::LockCall::ReleaseThen`]).
    pub fn undelivered_releases(&self) -> Vec<uuid::Uuid> {
        let mut out: Vec<uuid::Uuid> =
            self.releasing.lock().map(|r| r.iter().copied().collect()).unwrap_or_default();
        if let Ok(pending) = self.deferred.lock() {
            out.extend(pending.iter().flat_map(|b| b.releases.iter().copied()));
        }
        out
    }

    /// A call to the peer itself (a state notice, a speedtest share, a listen poll), answered
    /// within `timeout` (its own: a speedtest runs far longer than a drive call). A peer that
    /// overruns it is not marked offline: these calls wait on work, not on the transport.
    pub async fn peer(self: &Arc<Self>, call: &PeerCall, timeout: Duration) -> Result<PeerReply, PeerError> {
        let path = format!("{PREFIX}peer");
        let exchange = async {
            let resp = self
                .send(Method::POST, &path, encode(call), None)
                .await
                .map_err(|e| PeerError::Unreachable(e.to_string()))?;
            let status = resp.status();
            let bytes = read_answer(resp.into_body(), RPC_ANSWER_SIZE_MAX)
                .await
                .map_err(|e| PeerError::Unreachable(format!("node {}: {e}", self.name)))?;
            if status != StatusCode::OK {
                let why = String::from_utf8_lossy(&bytes);
                return Err(PeerError::Unreachable(format!(
                    "node {} refused the call ({status}): {why}",
                    self.name
                )));
            }
            decode::<Result<PeerReply, PeerError>>(&bytes).map_err(|e| {
                PeerError::Unreachable(format!("node {} sent an unreadable answer: {e}", self.name))
            })?
        };
        tokio::time::timeout(timeout, exchange).await.unwrap_or(Err(PeerError::TimedOut))
    }

    /// Marks the node offline and starts probing it in the background until it answers.
    pub fn mark_offline(self: &Arc<Self>, why: &str) {
        if self.online.swap(false, Ordering::SeqCst) {
            tracing::warn!(node = %self.name, reason = why, "node is offline; retrying in the background");
        }
        if self.probing.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(NODE_PROBE_INTERVAL).await;
                if this.probe().await {
                    // Probing ends before the node counts as online: a call that fails in
                    // between then starts a new probe. (The other order left a node marked
                    // offline in that gap with no probe to bring it back.)
                    this.probing.store(false, Ordering::SeqCst);
                    this.online.store(true, Ordering::SeqCst);
                    tracing::info!(node = %this.name, "node is back online");
                    if let Some(f) = this.on_return.get() {
                        f(&this.name);
                    }
                    return;
                }
            }
        });
    }

    /// One health request, whatever the node's state.
    pub async fn probe(&self) -> bool {
        let path = format!("{PREFIX}health");
        let Ok((req, _)) = self.request(Method::GET, &path, BodyDigest::of(&[]), empty()) else {
            return false;
        };
        matches!(
            tokio::time::timeout(NODE_PROBE_TIMEOUT, self.http.request(req)).await,
            Ok(Ok(r)) if r.status() == StatusCode::OK
        )
    }
}

/// The path of a single drive call to the drive at `drive`.
pub(crate) fn drive_call_path(drive: &str) -> String {
    format!("{PREFIX}drive/call?d={}", utf8_percent_encode(drive, NON_ALPHANUMERIC))
}

/// A batch's calls as MessagePack wants them: each call's encoded bytes as binary.
fn serde_bytes_calls<'a>(calls: &'a [(&'a str, &'a [u8])]) -> Vec<(&'a str, BinRef<'a>)> {
    calls.iter().map(|(d, c)| (*d, BinRef(c))).collect()
}

/// Borrowed bytes that serialize as MessagePack binary.
struct BinRef<'a>(&'a [u8]);

impl serde::Serialize for BinRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// An answer's body, read whole up to `limit` bytes; an error past it.
pub async fn read_answer(body: Incoming, limit: usize) -> Result<Bytes, AnswerError> {
    match Limited::new(body, limit).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(AnswerError::TooLarge(limit)),
        Err(e) => Err(AnswerError::Broken(e)),
    }
}

/// Why an answer's body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("answer too large (more than {0} bytes)")]
    TooLarge(usize),
    /// The connection broke while the answer came.
    #[error("the answer broke off: {0}")]
    Broken(Box<dyn std::error::Error + Send + Sync>),
}

pub fn full(bytes: Bytes) -> RequestBody {
    UnsyncBoxBody::new(Full::new(bytes).map_err(|never| match never {}))
}

pub fn empty() -> RequestBody {
    UnsyncBoxBody::new(Empty::new().map_err(|never| match never {}))
}

/// A request body fed through a channel: what a shard writer streams.
pub struct ChannelBody(pub mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}
