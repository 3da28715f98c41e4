//! [`RpcServer`]: answers other nodes' requests under [`PREFIX`](crate::PREFIX): this node's
//! drives, its share of the lock table, peer notices. Every request must carry a valid
//! signature (see [`crate::auth`]); anything else is 403.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use strata_drive::{Drive, DriveError, DriveResult, ShardReader, ShardWriter};
use strata_object::ObjectLayer;
use uuid::Uuid;

use crate::auth::{unix_now, RpcKey};
use crate::lock::LockServer;
use crate::remote::END_OF_FRAMES;
use crate::wire::{decode, encode, Batch, DriveCall, DriveReply, LockCall, PeerCall, WireError};
use crate::PREFIX;

pub struct RpcServer {
    key: RpcKey,
    /// This node's drives by path (the drives that opened).
    drives: HashMap<String, Arc<dyn Drive>>,
    locks: Arc<LockServer>,
    /// Set once the object layer exists (peer notices before that are moot).
    layer: OnceLock<Arc<ObjectLayer>>,
    /// Admin operations a peer asks this node to run (its share of a speedtest).
    admin: OnceLock<AdminHook>,
    /// Shard files peers hold open (handle → reader, last use).
    open: Mutex<OpenFiles>,
}

#[derive(Default)]
struct OpenFiles {
    next: u64,
    readers: HashMap<u64, (Arc<dyn ShardReader>, Instant)>,
    swept: Option<Instant>,
}

/// An open shard file unused this long is closed (its reader died without closing it).
const OPEN_IDLE_MAX: Duration = Duration::from_secs(60);

/// Runs admin operation `op` with a JSON request; JSON answer or an error text.
pub type AdminHook = Arc<
    dyn Fn(String, Bytes) -> futures_util::future::BoxFuture<'static, Result<Vec<u8>, String>> + Send + Sync,
>;

fn reply(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}

fn answer<T: serde::Serialize>(result: Result<T, WireError>) -> Response<Bytes> {
    reply(StatusCode::OK, encode(&result))
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_encoding::percent_decode_str(v).decode_utf8_lossy())
    })
}

impl RpcServer {
    pub fn new(key: RpcKey, drives: HashMap<String, Arc<dyn Drive>>, locks: Arc<LockServer>) -> Self {
        Self { key, drives, locks, layer: OnceLock::new(), admin: OnceLock::new(), open: Mutex::default() }
    }

    pub fn set_layer(&self, layer: Arc<ObjectLayer>) {
        let _ = self.layer.set(layer);
    }

    pub fn set_admin(&self, hook: AdminHook) {
        let _ = self.admin.set(hook);
    }

    async fn open_shard(&self, d: &dyn Drive, id: Uuid) -> Result<DriveReply, WireError> {
        let reader: Arc<dyn ShardReader> = Arc::from(d.open_shard_file(id).await?);
        let now = Instant::now();
        let mut open = self.open.lock().map_err(|_| WireError::Io("open file table poisoned".into()))?;
        if open.swept.is_none_or(|t| now.duration_since(t) > Duration::from_secs(10)) {
            open.readers.retain(|_, (_, used)| now.duration_since(*used) < OPEN_IDLE_MAX);
            open.swept = Some(now);
        }
        open.next += 1;
        let handle = open.next;
        open.readers.insert(handle, (reader, now));
        Ok(DriveReply::Handle(handle))
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

    pub async fn handle(&self, req: Request<Incoming>) -> Response<Bytes> {
        let path_and_query = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("").to_owned();
        if !self.key.verify(req.headers(), req.method().as_str(), &path_and_query, unix_now()) {
            return reply(StatusCode::FORBIDDEN, Bytes::from_static(b"RPC signature missing or wrong"));
        }
        let path = req.uri().path().strip_prefix(PREFIX).unwrap_or("").to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let drive = || {
            let name = query_param(&query, "d").unwrap_or_default();
            self.drives
                .get(name.as_ref())
                .cloned()
                .ok_or_else(|| WireError::Offline(format!("drive {name} is not online on this node")))
        };
        match (req.method(), path.as_str()) {
            (&Method::GET, "health") => reply(StatusCode::OK, Bytes::new()),
            (&Method::POST, "drive/call") => {
                let served = async {
                    let d = drive()?;
                    let call = read_call::<DriveCall>(req.into_body()).await?;
                    match call {
                        DriveCall::OpenShard(id) => self.open_shard(d.as_ref(), id).await,
                        call => serve_drive_call(d.as_ref(), call).await.map_err(WireError::from),
                    }
                };
                answer(served.await)
            }
            (&Method::GET, "drive/read") => {
                let read = async {
                    let d = drive()?;
                    let id = parse::<Uuid>(&query, "id")?;
                    let off = parse::<u64>(&query, "off")?;
                    let len = parse::<usize>(&query, "len")?;
                    let held = parse::<u64>(&query, "h").ok().and_then(|h| self.held(h));
                    let reader = match held {
                        Some(r) => r,
                        // Closed for idleness (or this node restarted): open it again.
                        None => Arc::from(d.open_shard_file(id).await?),
                    };
                    Ok::<_, WireError>(reader.read_at(off, len).await?)
                };
                match read.await {
                    Ok(bytes) => reply(StatusCode::OK, bytes),
                    Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, encode(&e)),
                }
            }
            (&Method::POST, "drive/write") => {
                let write = async {
                    let d = drive()?;
                    let id = parse::<Uuid>(&query, "id")?;
                    let writer = d.create_shard_file(id).await?;
                    receive_frames(writer, req.into_body()).await
                };
                answer(write.await)
            }
            (&Method::POST, "lock") => {
                answer(read_call::<LockCall>(req.into_body()).await.map(|call| self.locks.serve(call)))
            }
            (&Method::POST, "batch") => {
                let batch = match read_call::<Batch>(req.into_body()).await {
                    Ok(b) => b,
                    Err(e) => return answer::<()>(Err(e)),
                };
                if let Ok(mut open) = self.open.lock() {
                    for h in &batch.closes {
                        open.readers.remove(h);
                    }
                }
                for owner in batch.releases {
                    self.locks.serve(LockCall::Release { owner });
                }
                answer::<()>(Ok(()))
            }
            (&Method::POST, "peer") => {
                let served = async {
                    let PeerCall::BucketsChanged = read_call::<PeerCall>(req.into_body()).await?;
                    if let Some(layer) = self.layer.get() {
                        layer.reload_buckets().await.map_err(|e| WireError::Io(e.to_string()))?;
                    }
                    Ok(())
                };
                answer::<()>(served.await)
            }
            (&Method::POST, op) if op.starts_with("admin/") => {
                let Some(hook) = self.admin.get().cloned() else {
                    return reply(StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(b"not serving yet"));
                };
                let body = match req.into_body().collect().await {
                    Ok(b) => b.to_bytes(),
                    Err(e) => return reply(StatusCode::BAD_REQUEST, Bytes::from(e.to_string())),
                };
                match hook(op["admin/".len()..].to_owned(), body).await {
                    Ok(answer) => reply(StatusCode::OK, Bytes::from(answer)),
                    Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, Bytes::from(e)),
                }
            }
            _ => reply(StatusCode::NOT_FOUND, Bytes::from_static(b"no such RPC")),
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

/// Reads a request body and decodes the call in it.
async fn read_call<T: serde::de::DeserializeOwned>(body: Incoming) -> Result<T, WireError> {
    let bytes = body.collect().await.map_err(|e| WireError::BadRequest(e.to_string()))?.to_bytes();
    decode::<T>(&bytes).map_err(WireError::BadRequest)
}

/// Writes the frames of a shard write stream; finishes the file only at the end marker.
async fn receive_frames(mut writer: Box<dyn ShardWriter>, mut body: Incoming) -> Result<(), WireError> {
    let mut buf = Chunks::default();
    // The header of the frame being received: shard length and bitrot hash.
    let mut header: Option<(usize, [u8; 32])> = None;
    loop {
        loop {
            if header.is_none() && buf.len >= 36 {
                let h = buf.take(36);
                let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                if len == END_OF_FRAMES {
                    writer.finish().await?;
                    return Ok(());
                }
                let mut hash = [0u8; 32];
                hash.copy_from_slice(&h[4..36]);
                header = Some((len as usize, hash));
            }
            match header {
                Some((len, hash)) if buf.len >= len => {
                    header = None;
                    writer.write_frame(hash, buf.take(len)).await?;
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
            Some(Err(e)) => return Err(WireError::Io(format!("shard stream broke: {e}"))),
            None => return Err(WireError::Io("shard stream ended without its end marker".into())),
        }
    }
}

async fn serve_drive_call(d: &dyn Drive, call: DriveCall) -> DriveResult<DriveReply> {
    use DriveCall as C;
    use DriveReply as R;
    Ok(match call {
        C::DiskInfo => R::DiskInfo(d.disk_info().await?),
        C::ReadFormat => R::Bytes(d.read_format().await?.map(Bytes::from)),
        C::WriteFormat(f) => {
            d.write_format(f.to_vec()).await?;
            R::Done
        }
        C::ReadState(name) => R::Bytes(d.read_state(&name).await?.map(Bytes::from)),
        C::WriteState(name, b) => {
            d.write_state(&name, b.to_vec()).await?;
            R::Done
        }
        C::MakeBucket(b, r) => {
            d.make_bucket(&b, r.to_vec()).await?;
            R::Done
        }
        C::DeleteBucket(b) => {
            d.delete_bucket(&b).await?;
            R::Done
        }
        C::UpdateBucket(b, r) => {
            d.update_bucket(&b, r.to_vec()).await?;
            R::Done
        }
        C::ListBuckets => {
            R::Buckets(d.list_buckets().await?.into_iter().map(|(n, r)| (n, Bytes::from(r))).collect())
        }
        C::StatBucket(b) => R::Bytes(Some(Bytes::from(d.stat_bucket(&b).await?))),
        C::ReadRecord { bucket, key, inline } => {
            let (r, b) = d.read_record(&bucket, &key, inline).await?;
            R::Record(r, b)
        }
        C::ReadInline(id) => R::Bytes(Some(d.read_inline(id).await?)),
        // Answered by `RpcServer::open_shard`, which keeps the file open under a handle.
        C::OpenShard(_) => return Err(DriveError::Offline("OpenShard reached the plain dispatcher".into())),
        C::AbortShard(id) => {
            d.abort_shard_file(id).await;
            R::Done
        }
        C::CommitVersion { bucket, key, version, inline, op } => {
            d.commit_version(&bucket, &key, version, inline, op).await?;
            R::Done
        }
        C::UpdateVersion { bucket, key, version, op } => {
            d.update_version(&bucket, &key, version, op).await?;
            R::Done
        }
        C::DeleteVersion { bucket, key, version_id, op } => {
            d.delete_version(&bucket, &key, version_id, op).await?;
            R::Done
        }
        C::FinishOp { op, keep } => {
            d.finish_op(op, keep).await;
            R::Done
        }
        C::PutUpload { bucket, upload } => {
            d.put_upload(&bucket, upload).await?;
            R::Done
        }
        C::ReadUpload { bucket, key, upload_id } => R::Upload(d.read_upload(&bucket, &key, upload_id).await?),
        C::CommitPart { bucket, key, upload_id, part } => {
            d.commit_part(&bucket, &key, upload_id, part).await?;
            R::Done
        }
        C::ListParts(id) => R::Parts(d.list_parts(id).await?),
        C::CompleteUpload { bucket, key, upload_id, version, op } => {
            d.complete_upload(&bucket, &key, upload_id, version, op).await?;
            R::Done
        }
        C::DropUpload { bucket, key, upload_id, keep } => {
            d.drop_upload(&bucket, &key, upload_id, keep).await?;
            R::Done
        }
        C::ListUploads { bucket, prefix, limit } => {
            R::Uploads(d.list_uploads(&bucket, &prefix, limit).await?)
        }
        C::List { bucket, query } => R::List(d.list(&bucket, query).await?),
        C::SweepOrphans { min_age_ms } => {
            let (f, b) = d.sweep_orphans(Duration::from_millis(min_age_ms)).await?;
            R::Swept(f, b)
        }
    })
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
