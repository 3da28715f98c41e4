//! [`RpcServer`]: answers other nodes' requests under [`PREFIX`](crate::PREFIX): this node's
//! drives, its share of the lock table, peer notices. Every request must carry a valid
//! signature, a fresh sequence number and, when its body is read whole, that body's signed hash
//! (see [`crate::auth`]); anything else is 403. Every length read from the wire is bounded:
//! bodies ([`RPC_BODY_SIZE_MAX`], else 413), shard frames ([`RPC_FRAME_SIZE_MAX`], else 400 and
//! the temp file aborted), reads ([`RPC_READ_SIZE_MAX`], else 400), batches of drive calls
//! ([`RPC_BATCH_CALLS_MAX`], else 400).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use strata_drive::DriveOps;
use strata_drive::{Drive, DriveError, ShardReader, ShardWriter};
use strata_erasure::bitrot;
use strata_object::{ObjectLayer, SharedState};
use strata_types::limits::{
    REFUSAL_LOG_INTERVAL, RPC_BATCH_CALLS_MAX, RPC_BODY_SIZE_MAX, RPC_FRAME_SIZE_MAX, RPC_OPEN_IDLE_MAX,
    RPC_OPEN_SWEEP_INTERVAL, RPC_READ_SIZE_MAX, SHARD_HASH_INLINE_MAX,
};
use uuid::Uuid;

use crate::auth::{unix_now, AuthError, BodyDigest, FrameKey, ReplayWindows, RpcKey, Signed};
use crate::lock::LockServer;
use crate::peer::{PeerCall, PeerError, PeerReply, PeerService};
use crate::remote::{END_OF_FRAMES, FRAME_HEADER_SIZE};
use crate::wire::{decode, encode, Batch, LockCall, RemoteCall, RemoteReply, WireError};
use crate::PREFIX;

pub struct RpcServer {
    key: RpcKey,
    /// Unix seconds when this server started: requests signed before are refused (this
    /// server's replay windows do not know them).
    started: u64,
    replay: ReplayWindows,
    /// This node's drives by path (the drives that opened).
    drives: HashMap<String, Arc<dyn Drive>>,
    locks: Arc<LockServer>,
    /// Set once the object layer exists (bucket notices before that are moot).
    layer: OnceLock<Arc<ObjectLayer>>,
    /// What this node answers its peers, set once it serves (see [`crate::peer`]).
    peer_service: OnceLock<Arc<dyn PeerService>>,
    /// Shard files peers hold open (handle → reader, last use).
    open: Mutex<OpenFiles>,
    /// Unix seconds when a refused request was last logged (at most one line per
    /// [`REFUSAL_LOG_INTERVAL`]: a peer whose clock is off sends many).
    refusal_logged: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct OpenFiles {
    next: u64,
    readers: HashMap<u64, (Arc<dyn ShardReader>, Instant)>,
    swept: Option<Instant>,
}

fn reply(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

fn answer<T: serde::Serialize>(result: Result<T, WireError>) -> Response<Bytes> {
    reply(StatusCode::OK, encode(&result))
}

/// The answer of drive calls: the bytes of reads made with an open follow the MessagePack
/// ([`crate::wire::TAIL_HEADER`]).
fn drive_answers<T: serde::Serialize>(
    mut result: Result<T, WireError>,
    replies: fn(&mut T) -> Vec<&mut RemoteReply>,
) -> Response<Bytes> {
    let tail = match &mut result {
        Ok(r) => crate::wire::into_tail(replies(r).into_iter()),
        Err(_) => Vec::new(),
    };
    if tail.is_empty() {
        return answer(result);
    }
    let (body, at) = crate::wire::with_tail(encode(&result), &tail);
    let mut r = reply(StatusCode::OK, body);
    r.headers_mut().insert(crate::wire::TAIL_HEADER, http::HeaderValue::from(at));
    r
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_encoding::percent_decode_str(v).decode_utf8_lossy())
    })
}

impl RpcServer {
    pub fn new(key: RpcKey, drives: HashMap<String, Arc<dyn Drive>>, locks: Arc<LockServer>) -> Self {
        Self {
            key,
            started: unix_now(),
            replay: ReplayWindows::default(),
            drives,
            locks,
            layer: OnceLock::new(),
            peer_service: OnceLock::new(),
            open: Mutex::default(),
            refusal_logged: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Logs why a peer's request was refused: never silently, and not once per request.
    fn log_refusal(&self, error: &AuthError) {
        use std::sync::atomic::Ordering;
        let now = unix_now();
        let last = self.refusal_logged.load(Ordering::Relaxed);
        if now.saturating_sub(last) < REFUSAL_LOG_INTERVAL.as_secs()
            || self.refusal_logged.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return;
        }
        match error {
            AuthError::Skewed { time, now, .. } => tracing::warn!(
                skew_secs = i128::from(*time) - i128::from(*now),
                "refused a node's RPC request: {error}"
            ),
            other => tracing::warn!("refused a node's RPC request: {other}"),
        }
    }

    pub fn set_layer(&self, layer: Arc<ObjectLayer>) {
        let _ = self.layer.set(layer);
    }

    pub fn set_peer_service(&self, service: Arc<dyn PeerService>) {
        let _ = self.peer_service.set(service);
    }

    async fn open_shard(&self, d: &dyn Drive, id: Uuid) -> Result<RemoteReply, WireError> {
        let reader: Arc<dyn ShardReader> = Arc::from(d.open_shard_file(id).await?);
        Ok(RemoteReply::Handle(self.hold(reader)?))
    }

    /// [`RpcServer::open_shard`] and the file's first read.
    async fn open_shard_reading(
        &self,
        d: &dyn Drive,
        id: Uuid,
        offset: u64,
        len: u32,
    ) -> Result<RemoteReply, WireError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > RPC_READ_SIZE_MAX {
            return Err(WireError::BadRequest(format!(
                "a read of {len} bytes is more than the {RPC_READ_SIZE_MAX} allowed"
            )));
        }
        let reader: Arc<dyn ShardReader> = Arc::from(d.open_shard_file(id).await?);
        let first = reader.read_at(offset, len).await.ok();
        Ok(RemoteReply::Reading(self.hold(reader)?, first))
    }

    /// Keeps `reader` open under a new handle.
    fn hold(&self, reader: Arc<dyn ShardReader>) -> Result<u64, WireError> {
        let now = Instant::now();
        let mut open = self.open.lock().map_err(|_| WireError::Stopped("open file table poisoned".into()))?;
        if open.swept.is_none_or(|t| now.duration_since(t) > RPC_OPEN_SWEEP_INTERVAL) {
            open.readers.retain(|_, (_, used)| now.duration_since(*used) < RPC_OPEN_IDLE_MAX);
            open.swept = Some(now);
        }
        open.next += 1;
        let handle = open.next;
        open.readers.insert(handle, (reader, now));
        Ok(handle)
    }

    fn held(&self, handle: u64) -> Option<Arc<dyn ShardReader>> {
        let mut open = self.open.lock().ok()?;
        let (reader, used) = open.readers.get_mut(&handle)?;
        *used = Instant::now();
        Some(reader.clone())
    }

    /// Shard files held open for peers (for tests and metrics).
    pub fn open_files(&self) -> usize {
        self.open.lock().map(|o| o.readers.len()).unwrap_or(0)
    }

    /// Checks a request's signature, time and sequence number (see [`crate::auth`]).
    fn authenticate(
        &self,
        req: &Request<Incoming>,
        path_and_query: &str,
    ) -> Result<(Signed, [u8; 32]), AuthError> {
        let (signed, signature) =
            self.key.verify(req.headers(), req.method().as_str(), path_and_query, unix_now())?;
        if signed.time < self.started {
            return Err(AuthError::BeforeStart);
        }
        self.replay.accept(signed.sender, signed.sequence)?;
        Ok((signed, signature))
    }

    fn drive(&self, query: &str) -> Result<Arc<dyn Drive>, WireError> {
        self.drive_named(&query_param(query, "d").unwrap_or_default())
    }

    fn drive_named(&self, name: &str) -> Result<Arc<dyn Drive>, WireError> {
        self.drives
            .get(name)
            .cloned()
            .ok_or_else(|| WireError::Unreachable(format!("drive {name} is not online on this node")))
    }

    /// One encoded drive call to drive `name` (alone, or one of a batch).
    async fn serve_drive_call(&self, name: &str, call: &[u8]) -> Result<RemoteReply, WireError> {
        let d = self.drive_named(name)?;
        match decode_call::<RemoteCall>(call)? {
            RemoteCall::OpenShard(id) => self.open_shard(d.as_ref(), id).await,
            RemoteCall::OpenShardReading(id, offset, len) => {
                self.open_shard_reading(d.as_ref(), id, offset, len).await
            }
            RemoteCall::Drive(ctx, call) => {
                // A change under an object lock: admitted only while no other holder has the
                // lock in this node's table, and no other holder is granted it here until the
                // change is done.
                let _admitted = match ctx.fence.filter(|_| call.is_fenced()) {
                    Some(fence) => Some(self.locks.admit(fence).ok_or_else(|| {
                        WireError::Fenced(format!(
                            "{} has another holder of lock {:016x}",
                            name, fence.resource
                        ))
                    })?),
                    None => None,
                };
                Ok(RemoteReply::Drive(d.call(ctx, *call).await?))
            }
        }
    }

    pub async fn handle(&self, req: Request<Incoming>) -> Response<Bytes> {
        let path_and_query = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("").to_owned();
        let (signed, signature) = match self.authenticate(&req, &path_and_query) {
            Ok(s) => s,
            Err(e) => {
                self.log_refusal(&e);
                return reply(StatusCode::FORBIDDEN, Bytes::from(e.to_string()));
            }
        };
        let path = req.uri().path().strip_prefix(PREFIX).unwrap_or("").to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let (parts, body) = req.into_parts();
        match (&parts.method, path.as_str()) {
            (&Method::GET, "health") => reply(StatusCode::OK, Bytes::new()),
            (&Method::GET, "drive/read") => match self.serve_read(&query).await {
                Ok(bytes) => reply(StatusCode::OK, bytes),
                Err(e @ WireError::BadRequest(_)) => reply(StatusCode::BAD_REQUEST, encode(&e)),
                Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, encode(&e)),
            },
            (&Method::POST, "drive/write") => self.serve_write(&query, &signed, &signature, body).await,
            (&Method::POST, route) => match read_body(body, &signed).await {
                Ok(body) => self.serve_call(route, &query, body).await,
                Err(refused) => refused,
            },
            _ => reply(StatusCode::NOT_FOUND, Bytes::from_static(b"no such RPC")),
        }
    }

    async fn serve_read(&self, query: &str) -> Result<Bytes, WireError> {
        let d = self.drive(query)?;
        let id = parse::<Uuid>(query, "id")?;
        let off = parse::<u64>(query, "off")?;
        let len = parse::<usize>(query, "len")?;
        if len > RPC_READ_SIZE_MAX {
            return Err(WireError::BadRequest(format!(
                "a read of {len} bytes is more than the {RPC_READ_SIZE_MAX} allowed"
            )));
        }
        let held = parse::<u64>(query, "h").ok().and_then(|h| self.held(h));
        let reader = match held {
            Some(r) => r,
            // Closed for idleness (or this node restarted): open it again.
            None => Arc::from(d.open_shard_file(id).await?),
        };
        Ok(reader.read_at(off, len).await?)
    }

    /// A streamed shard write: frames into a temp shard file, finished at the end marker; on any
    /// failure the temp file is aborted at once.
    async fn serve_write(
        &self,
        query: &str,
        signed: &Signed,
        signature: &[u8; 32],
        body: Incoming,
    ) -> Response<Bytes> {
        let failed = |status, e: WireError| reply(status, encode(&Err::<(), WireError>(e)));
        if signed.body != BodyDigest::Frames {
            let e = WireError::BadRequest("a shard write must be signed as a frame stream".into());
            return failed(StatusCode::BAD_REQUEST, e);
        }
        let (d, id) = match self.drive(query).and_then(|d| Ok((d, parse::<Uuid>(query, "id")?))) {
            Ok(x) => x,
            Err(e) => return answer::<()>(Err(e)),
        };
        let writer = match d.create_shard_file(id).await {
            Ok(w) => w,
            Err(e) => return answer::<()>(Err(e.into())),
        };
        match receive_frames(writer, body, self.key.frame_key(signature)).await {
            Ok(()) => answer::<()>(Ok(())),
            Err(e) => {
                d.abort_shard_file(id).await;
                let status = e.status();
                failed(status, e.into())
            }
        }
    }

    /// Closes the batch's shard files and releases its locks; the ends of its kept operations,
    /// to be run.
    fn release(&self, batch: Batch) -> Vec<impl std::future::Future<Output = ()> + Send + 'static> {
        if let Ok(mut open) = self.open.lock() {
            for h in &batch.closes {
                open.readers.remove(h);
            }
        }
        for owner in batch.releases {
            self.locks.serve(LockCall::Release { owner });
        }
        let kept = batch.kept.into_iter().filter_map(|(name, op)| {
            let d = self.drive_named(&name).ok()?;
            Some(async move { d.finish_op(op, true).await })
        });
        kept.collect()
    }

    /// The calls whose body is read whole (and checked against its signed hash).
    async fn serve_call(&self, route: &str, query: &str, body: Bytes) -> Response<Bytes> {
        match route {
            "drive/call" => {
                let name = query_param(query, "d").unwrap_or_default();
                let served = self.serve_drive_call(&name, &body).await;
                drive_answers(served, crate::wire::one_reply)
            }
            "drive/calls" | "drive/released-calls" => {
                let served = async {
                    let calls = if route == "drive/calls" {
                        decode_call::<Vec<(String, Bytes)>>(&body)?
                    } else {
                        // What the caller had waiting for its deferred send, applied first
                        // (its kept operations' ends are not waited for: nothing waits on them).
                        let (released, calls) = decode_call::<(Batch, Vec<(String, Bytes)>)>(&body)?;
                        for kept in self.release(released) {
                            tokio::spawn(kept);
                        }
                        calls
                    };
                    if calls.len() > RPC_BATCH_CALLS_MAX {
                        return Err(WireError::BadRequest(format!(
                            "a batch of {} drive calls is more than the {RPC_BATCH_CALLS_MAX} allowed",
                            calls.len()
                        )));
                    }
                    let each = calls.iter().map(|(name, call)| self.serve_drive_call(name, call));
                    Ok(futures_util::future::join_all(each).await)
                };
                drive_answers(served.await, |a| crate::wire::batch_replies(a))
            }
            "lock" => answer(decode_call::<LockCall>(&body).map(|call| self.locks.serve(call))),
            "batch" => {
                let batch = match decode_call::<Batch>(&body) {
                    Ok(b) => b,
                    Err(e) => return answer::<()>(Err(e)),
                };
                futures_util::future::join_all(self.release(batch)).await;
                answer::<()>(Ok(()))
            }
            "peer" => {
                let answer = match decode_call::<PeerCall>(&body) {
                    Ok(call) => self.serve_peer(call).await,
                    Err(e) => Err(PeerError::Refused(format!("{e:?}"))),
                };
                reply(StatusCode::OK, encode(&answer))
            }
            _ => reply(StatusCode::NOT_FOUND, Bytes::from_static(b"no such RPC")),
        }
    }
}

impl RpcServer {
    /// One peer call: bucket notices go to the object layer, the rest to the peer service.
    async fn serve_peer(&self, call: PeerCall) -> Result<PeerReply, PeerError> {
        if let PeerCall::Changed(SharedState::Buckets) = call {
            if let Some(layer) = self.layer.get() {
                layer.reload_buckets().await.map_err(|e| PeerError::Failed(e.to_string()))?;
            }
            return Ok(PeerReply::Done);
        }
        let service = self.peer_service.get().ok_or(PeerError::NotReady)?;
        match call {
            PeerCall::Changed(SharedState::Buckets) => Ok(PeerReply::Done),
            PeerCall::Changed(SharedState::Iam) => service.iam_changed().await.map(|()| PeerReply::Done),
            PeerCall::Speedtest(share) => {
                service.speedtest(share).await.map(|r| PeerReply::Speedtest(Box::new(r)))
            }
            PeerCall::ListenPoll(poll) => {
                service.listen_poll(poll).await.map(PeerReply::Listen).map_err(PeerError::Listen)
            }
            PeerCall::Service { restart } => service.service(restart).await.map(|()| PeerReply::Done),
        }
    }
}

fn parse<T: std::str::FromStr>(query: &str, name: &str) -> Result<T, WireError> {
    query_param(query, name)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| WireError::BadRequest(format!("missing or bad parameter {name}")))
}

/// Received bytes not yet parsed, kept as the chunks they came in: taking a run that lies within
/// one chunk (a whole shard, as HTTP/2 delivers it) is a slice, not a copy.
#[derive(Default)]
struct Chunks {
    parts: std::collections::VecDeque<Bytes>,
    len: usize,
}

impl Chunks {
    fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.len += b.len();
            self.parts.push_back(b);
        }
    }

    /// The first `n` bytes (the caller checked `n <= len`).
    fn take(&mut self, n: usize) -> Bytes {
        self.len -= n;
        if let Some(front) = self.parts.front_mut() {
            if front.len() >= n {
                let out = front.split_to(n);
                if front.is_empty() {
                    self.parts.pop_front();
                }
                return out;
            }
        }
        // Spread over several chunks (small headers, odd splits): gather them.
        let mut out = BytesMut::with_capacity(n);
        while out.len() < n {
            let Some(mut front) = self.parts.pop_front() else { break };
            let want = n - out.len();
            if front.len() > want {
                out.extend_from_slice(&front.split_to(want));
                self.parts.push_front(front);
            } else {
                out.extend_from_slice(&front);
            }
        }
        out.freeze()
    }
}

/// Reads a request body whole, at most [`RPC_BODY_SIZE_MAX`] bytes (else 413), and checks it
/// against its signed hash (else 403).
async fn read_body(body: Incoming, signed: &Signed) -> Result<Bytes, Response<Bytes>> {
    let bytes = match Limited::new(body, RPC_BODY_SIZE_MAX).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => {
            let why = format!("RPC request body larger than {RPC_BODY_SIZE_MAX} bytes");
            return Err(reply(StatusCode::PAYLOAD_TOO_LARGE, Bytes::from(why)));
        }
        Err(e) => return Err(reply(StatusCode::BAD_REQUEST, Bytes::from(e.to_string()))),
    };
    if !signed.body.matches(&bytes) {
        return Err(reply(StatusCode::FORBIDDEN, Bytes::from(AuthError::BodyMismatch.to_string())));
    }
    Ok(bytes)
}

/// Decodes the call in a request body. MessagePack lengths cannot make this allocate more
/// than a bounded multiple of the body: byte and string lengths are checked against the bytes
/// left, and collections preallocate at most 1 MiB whatever length they declare (serde's
/// cautious size hint), growing only with elements actually present.
fn decode_call<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, WireError> {
    decode::<T>(body).map_err(|e| WireError::BadRequest(e.to_string()))
}

/// Why a shard write stream was refused.
#[derive(Debug)]
enum StreamError {
    /// A frame declared more than [`RPC_FRAME_SIZE_MAX`] bytes of shard.
    FrameTooLarge(u64),
    /// A frame header's tag is not this stream's (changed, reordered, or from another request).
    BadTag(u64),
    /// A shard's bytes do not match its bitrot hash.
    BadHash(u64),
    Broken(String),
    Drive(DriveError),
}

impl StreamError {
    fn status(&self) -> StatusCode {
        match self {
            StreamError::FrameTooLarge(_) | StreamError::BadHash(_) => StatusCode::BAD_REQUEST,
            StreamError::BadTag(_) => StatusCode::FORBIDDEN,
            StreamError::Broken(_) | StreamError::Drive(_) => StatusCode::OK,
        }
    }
}

impl From<StreamError> for WireError {
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::FrameTooLarge(len) => WireError::BadRequest(format!(
                "shard frame of {len} bytes is more than the {RPC_FRAME_SIZE_MAX} allowed"
            )),
            StreamError::BadTag(i) => WireError::BadRequest(format!("shard frame {i} is not authenticated")),
            StreamError::BadHash(i) => {
                WireError::Corrupt(format!("shard frame {i} does not match its bitrot hash"))
            }
            StreamError::Broken(m) => WireError::Io { kind: "Other".into(), message: m },
            StreamError::Drive(e) => e.into(),
        }
    }
}

/// Whether a received shard matches the bitrot hash it came with, under Strata's key or MinIO's
/// (a heal of a version whose shard files were taken over from MinIO writes MinIO's frames): on
/// a blocking thread when it is large enough to take a while (HighwayHash runs at ~11 GB/s: a
/// 1 MiB shard is ~0.1 ms).
async fn shard_matches(shard: &Bytes, hash: [u8; 32]) -> Result<bool, StreamError> {
    let check = move |shard: &[u8]| {
        bitrot::hash(shard) == hash || bitrot::hash_with(bitrot::Key::MINIO, shard) == hash
    };
    if shard.len() < SHARD_HASH_INLINE_MAX {
        return Ok(check(shard));
    }
    let shard = shard.clone();
    tokio::task::spawn_blocking(move || check(&shard))
        .await
        .map_err(|e| StreamError::Broken(format!("hashing a shard failed: {e}")))
}

/// Writes the frames of a shard write stream; finishes the file only at the end marker. Every
/// frame header's tag and every shard's bitrot hash is checked before the shard is written.
async fn receive_frames<B>(
    mut writer: Box<dyn ShardWriter>,
    mut body: B,
    frames: FrameKey,
) -> Result<(), StreamError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut buf = Chunks::default();
    // The header of the frame being received: shard length and bitrot hash.
    let mut header: Option<(usize, [u8; 32])> = None;
    let mut index = 0u64;
    loop {
        loop {
            if header.is_none() && buf.len >= FRAME_HEADER_SIZE {
                let h = buf.take(FRAME_HEADER_SIZE);
                let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                let mut hash = [0u8; 32];
                hash.copy_from_slice(&h[4..36]);
                if !frames.verify(index, len, &hash, &h[36..FRAME_HEADER_SIZE]) {
                    return Err(StreamError::BadTag(index));
                }
                if len == END_OF_FRAMES {
                    writer.finish().await.map_err(StreamError::Drive)?;
                    return Ok(());
                }
                if len as usize > RPC_FRAME_SIZE_MAX {
                    return Err(StreamError::FrameTooLarge(u64::from(len)));
                }
                header = Some((len as usize, hash));
            }
            match header {
                Some((len, hash)) if buf.len >= len => {
                    header = None;
                    let shard = buf.take(len);
                    if !shard_matches(&shard, hash).await? {
                        return Err(StreamError::BadHash(index));
                    }
                    writer.write_frame(hash, shard).await.map_err(StreamError::Drive)?;
                    index += 1;
                }
                _ => break,
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.push(data);
                }
            }
            Some(Err(e)) => return Err(StreamError::Broken(format!("shard stream broke: {e}"))),
            None => return Err(StreamError::Broken("shard stream ended without its end marker".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Chunks;
    use bytes::Bytes;

    #[test]
    fn chunks_slice_within_a_chunk_and_gather_across() {
        let whole: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for split in [1usize, 7, 36, 100, 999] {
            let mut c = Chunks::default();
            for piece in whole.chunks(split) {
                c.push(Bytes::copy_from_slice(piece));
            }
            let mut got = Vec::new();
            for n in [36usize, 300, 0, 5, 659] {
                got.extend_from_slice(&c.take(n));
            }
            assert_eq!(got, whole, "split {split}");
            assert_eq!(c.len, 0);
        }
        // A run inside one chunk is that chunk's memory, not a copy.
        let big = Bytes::from(vec![7u8; 4096]);
        let mut c = Chunks::default();
        c.push(Bytes::from_static(&[1; 36]));
        c.push(big.clone());
        c.take(36);
        let shard = c.take(4096);
        assert_eq!(shard.as_ptr(), big.as_ptr());
    }
}

#[cfg(test)]
mod frame_fuzz {
    use super::*;
    use strata_drive::DriveResult;

    /// A shard file in memory: the frames written (hash, shard), and whether it was finished.
    type File = (Vec<([u8; 32], Bytes)>, bool);

    struct Recorded(Arc<Mutex<File>>);

    #[async_trait::async_trait]
    impl ShardWriter for Recorded {
        async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
            self.0.lock().map_err(|_| DriveError::Stopped("poisoned".into()))?.0.push((hash, shard));
            Ok(())
        }
        async fn finish(&mut self) -> DriveResult<()> {
            self.0.lock().map_err(|_| DriveError::Stopped("poisoned".into()))?.1 = true;
            Ok(())
        }
    }

    /// Mutated shard streams, delivered in pieces cut at varying points: the receiver refuses or
    /// writes, never panics, and writes only frames whose tag and bitrot hash verify.
    #[test]
    fn fuzz_shard_stream_frames() {
        let key = crate::auth::RpcKey::derive("admin", "secret");
        let frame_key = || key.frame_key(&[7u8; 32]);
        let mut stream = Vec::new();
        for (i, shard) in [&b"first shard"[..], &[0u8; 300][..], b"x"].iter().enumerate() {
            let hash = bitrot::hash(shard);
            let header = crate::remote::frame_header(&frame_key(), i as u64, shard.len() as u32, &hash);
            stream.extend_from_slice(&header);
            stream.extend_from_slice(shard);
        }
        let end = crate::remote::frame_header(&frame_key(), 3, crate::remote::END_OF_FRAMES, &[0; 32]);
        stream.extend_from_slice(&end);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let receive = |bytes: &[u8]| {
            let cut = bytes.len().min(bytes.first().copied().unwrap_or(0) as usize + 1);
            let pieces: Vec<Result<http_body::Frame<Bytes>, std::io::Error>> = vec![
                Ok(http_body::Frame::data(Bytes::copy_from_slice(&bytes[..cut]))),
                Ok(http_body::Frame::data(Bytes::copy_from_slice(&bytes[cut..]))),
            ];
            let body = http_body_util::StreamBody::new(futures_util::stream::iter(pieces));
            let file = Arc::new(Mutex::new((Vec::new(), false)));
            let result =
                runtime.block_on(receive_frames(Box::new(Recorded(file.clone())), body, frame_key()));
            let (written, finished) = file.lock().map(|f| f.clone()).unwrap_or_default();
            for (hash, shard) in &written {
                assert_eq!(bitrot::hash(shard), *hash, "a frame was written whose hash does not verify");
            }
            (result.is_ok(), written.len(), finished)
        };
        assert_eq!(receive(&stream), (true, 3, true), "the unmutated stream is received whole");
        strata_types::fuzz::run("rpc shard stream", &[stream.as_slice()], |b| {
            receive(b);
        });
    }
}
