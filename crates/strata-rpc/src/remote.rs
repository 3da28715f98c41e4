//! [`RemoteDrive`]: a drive on another node, behind the same `Drive` trait as a local one.
//!
//! Metadata calls are MessagePack messages, batched per node with the other calls of the moment
//! ([`NodeClient::drive_call`]). Shard files stream: a writer is one long
//! request whose body carries the frames as they are produced (with backpressure), ended by an
//! end marker so a writer dropped half way never looks finished; a reader fetches byte ranges,
//! and the bitrot hash is checked here, on the reading node, so corruption on the wire is caught
//! like corruption on the disk.
//!
//! A shard write stream is a sequence of frames, each `length (u32 BE) || bitrot hash (32) ||
//! tag (32) || shard`, ended by a frame header of length [`END_OF_FRAMES`] with a zero hash.
//! The tag is an HMAC of the frame's index, length and hash keyed from the request's signature
//! ([`crate::auth::FrameKey`]); the receiving node checks every tag and every bitrot hash.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::Method;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use strata_drive::{
    CallContext, Drive, DriveCall, DriveError, DriveReply, DriveResult, ShardReader, ShardWriter,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use strata_types::limits::{RPC_ANSWER_SIZE_MAX, RPC_FRAME_SIZE_MAX};

use crate::auth::{BodyDigest, FrameKey};
use crate::client::{read_answer, ChannelBody, NodeClient};
use crate::wire::{decode, RemoteCall, RemoteReply, WireError};
use crate::PREFIX;

/// Shard length of the frame header that ends a shard write stream.
pub(crate) const END_OF_FRAMES: u32 = u32::MAX;
/// Bytes of a frame header: length, bitrot hash, tag.
pub(crate) const FRAME_HEADER_SIZE: usize = 4 + 32 + 32;

#[derive(Debug, Clone)]
pub struct RemoteDrive {
    node: Arc<NodeClient>,
    /// The drive's path on its node.
    path: String,
    /// `http://host:port/path`, for logs.
    endpoint: String,
}

fn unexpected(reply: RemoteReply) -> DriveError {
    DriveError::Protocol(format!("unexpected answer from the remote drive: {reply:?}"))
}

impl RemoteDrive {
    pub fn new(node: Arc<NodeClient>, path: &str) -> Self {
        let endpoint = format!("{}{path}", node.name);
        Self { node, path: path.to_owned(), endpoint }
    }

    fn query(&self) -> String {
        utf8_percent_encode(&self.path, NON_ALPHANUMERIC).to_string()
    }

    /// One call, batched with this node's other calls of the moment.
    async fn remote(&self, call: RemoteCall) -> DriveResult<RemoteReply> {
        self.node.drive_call(&self.path, &call).await
    }
}

#[async_trait]
impl Drive for RemoteDrive {
    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn node(&self) -> Option<&str> {
        Some(&self.node.name)
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        // A kept operation's end rides with the lock releases sent at the same moment (a PUT
        // ends its operation and releases its lock together): one request per node, not two.
        if let (DriveCall::FinishOp { keep: true }, Some(op)) = (&call, ctx.op) {
            let path = self.path.clone();
            self.node.defer(|b| b.kept.push((path, op)));
            return Ok(DriveReply::Done);
        }
        match self.remote(RemoteCall::Drive(ctx, Box::new(call))).await? {
            RemoteReply::Drive(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let (tx, rx) = mpsc::channel::<Bytes>(8);
        let node = self.node.clone();
        let path = format!("{PREFIX}drive/write?d={}&id={data_id}", self.query());
        let body = http_body_util::combinators::UnsyncBoxBody::new(ChannelBody(rx));
        let (req, frames) = node.request(Method::POST, &path, BodyDigest::Frames, body)?;
        let frames =
            frames.ok_or_else(|| DriveError::Protocol("a shard stream without a frame key".into()))?;
        let sent = tokio::spawn(async move {
            let resp = node.send_request(req, None).await?;
            let bytes = read_answer(resp.into_body(), RPC_ANSWER_SIZE_MAX)
                .await
                .map_err(|e| DriveError::Unreachable(e.to_string()))?;
            decode::<Result<(), WireError>>(&bytes)
                .map_err(|e| DriveError::Protocol(format!("unreadable answer: {e}")))?
                .map_err(DriveError::from)
        });
        Ok(Box::new(RemoteWriter {
            tx: Some(tx),
            sent: Some(sent),
            timeout: strata_types::limits::SHARD_WRITE_TIMEOUT,
            frames,
            index: 0,
        }))
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        let first = first.and_then(|(offset, len)| Some((offset, u32::try_from(len).ok()?)));
        let call = match first {
            Some((offset, len)) => RemoteCall::OpenShardReading(data_id, offset, len),
            None => RemoteCall::OpenShard(data_id),
        };
        let (handle, bytes) = match self.remote(call).await? {
            RemoteReply::Handle(h) => (h, None),
            RemoteReply::Reading(h, bytes) => (h, bytes),
            r => return Err(unexpected(r)),
        };
        let first = match (first, bytes) {
            (Some((offset, len)), Some(b)) if b.len() == len as usize => Some((offset, b)),
            _ => None,
        };
        Ok(Box::new(RemoteReader {
            node: self.node.clone(),
            base: format!("{PREFIX}drive/read?d={}&id={data_id}&h={handle}", self.query()),
            handle,
            first: std::sync::Mutex::new(first),
        }))
    }
}

/// Frame header on the wire: shard length (big-endian u32), the 32-byte bitrot hash, and the
/// frame's 32-byte tag.
pub(crate) fn frame_header(frames: &FrameKey, index: u64, len: u32, hash: &[u8; 32]) -> Bytes {
    let mut h = Vec::with_capacity(FRAME_HEADER_SIZE);
    h.extend_from_slice(&len.to_be_bytes());
    h.extend_from_slice(hash);
    h.extend_from_slice(&frames.tag(index, len, hash));
    Bytes::from(h)
}

struct RemoteWriter {
    tx: Option<mpsc::Sender<Bytes>>,
    sent: Option<JoinHandle<DriveResult<()>>>,
    timeout: Duration,
    /// The key of this stream's frame tags, and the index of the next frame.
    frames: FrameKey,
    index: u64,
}

impl RemoteWriter {
    /// The request's outcome once its body has ended (or the node stopped reading it).
    async fn outcome(&mut self) -> DriveResult<()> {
        let Some(sent) = self.sent.take() else {
            return Err(DriveError::Stopped("the shard write already ended".into()));
        };
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(DriveError::Stopped(format!("shard write task failed: {e}"))),
            Err(_) => Err(DriveError::TimedOut { op: "shard write".into(), after: self.timeout }),
        }
    }

    async fn push(&mut self, bytes: Bytes) -> DriveResult<()> {
        let Some(tx) = &self.tx else {
            return Err(DriveError::Stopped("the shard write already ended".into()));
        };
        match tokio::time::timeout(self.timeout, tx.send(bytes)).await {
            Ok(Ok(())) => Ok(()),
            // The request ended early: its answer says why.
            Ok(Err(_)) => {
                self.tx = None;
                Err(self
                    .outcome()
                    .await
                    .err()
                    .unwrap_or_else(|| DriveError::Stopped("shard write ended early".into())))
            }
            Err(_) => Err(DriveError::TimedOut { op: "shard write".into(), after: self.timeout }),
        }
    }
}

#[async_trait]
impl ShardWriter for RemoteWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        let len = u32::try_from(shard.len()).ok().filter(|_| shard.len() <= RPC_FRAME_SIZE_MAX).ok_or_else(
            || DriveError::Corrupt(format!("shard of {} bytes is too large to send", shard.len())),
        )?;
        let header = frame_header(&self.frames, self.index, len, &hash);
        self.index += 1;
        self.push(header).await?;
        self.push(shard).await
    }

    async fn finish(&mut self) -> DriveResult<()> {
        let end = frame_header(&self.frames, self.index, END_OF_FRAMES, &[0; 32]);
        self.push(end).await?;
        self.tx = None;
        self.outcome().await
    }
}

impl Drop for RemoteWriter {
    fn drop(&mut self) {
        // Without the end marker the remote side drops the temp file's writer unfinished.
        if let Some(sent) = self.sent.take() {
            self.tx = None;
            sent.abort();
        }
    }
}

struct RemoteReader {
    node: Arc<NodeClient>,
    base: String,
    handle: u64,
    /// The bytes the open brought, at their offset: the first read of exactly them takes them.
    first: std::sync::Mutex<Option<(u64, Bytes)>>,
}

impl Drop for RemoteReader {
    fn drop(&mut self) {
        let handle = self.handle;
        self.node.defer(|b| b.closes.push(handle));
    }
}

#[async_trait]
impl ShardReader for RemoteReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        if let Ok(mut first) = self.first.lock() {
            if first.as_ref().is_some_and(|(at, b)| *at == offset && b.len() == len) {
                if let Some((_, bytes)) = first.take() {
                    return Ok(bytes);
                }
            }
        }
        self.node.fetch(&format!("{}&off={offset}&len={len}", self.base)).await
    }
}
