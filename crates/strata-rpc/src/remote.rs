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
    DiskInfo, Drive, DriveError, DriveResult, Fence, ListEntry, ListQuery, ShardReader, ShardWriter,
    UploadsQuery,
};
use strata_meta::{ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use strata_types::limits::{RPC_ANSWER_SIZE_MAX, RPC_FRAME_SIZE_MAX};

use crate::auth::{BodyDigest, FrameKey};
use crate::client::{read_answer, ChannelBody, NodeClient};
use crate::wire::{decode, DriveCall, DriveReply, WireError};
use crate::PREFIX;

/// Shard length of the frame header that ends a shard write stream.
pub(crate) const END_OF_FRAMES: u32 = u32::MAX;
/// Bytes of a frame header: length, bitrot hash, tag.
pub(crate) const FRAME_HEADER_SIZE: usize = 4 + 32 + 32;

#[derive(Debug, Clone)]
pub struct RemoteDrive {
    node: Arc<NodeClient>,
    /// The object lock this handle's changes are made under ([`Drive::with_fence`]).
    fence: Option<Fence>,
    /// The drive's path on its node.
    path: String,
    /// `http://host:port/path`, for logs.
    endpoint: String,
}

fn unexpected(reply: DriveReply) -> DriveError {
    DriveError::Offline(format!("unexpected answer from the remote drive: {reply:?}"))
}

impl RemoteDrive {
    pub fn new(node: Arc<NodeClient>, path: &str) -> Self {
        let endpoint = format!("{}{path}", node.name);
        Self { node, fence: None, path: path.to_owned(), endpoint }
    }

    fn query(&self) -> String {
        utf8_percent_encode(&self.path, NON_ALPHANUMERIC).to_string()
    }

    /// One drive call, batched with this node's other calls of the moment.
    async fn call(&self, call: DriveCall) -> DriveResult<DriveReply> {
        self.node.drive_call(&self.path, &call).await
    }

    async fn done(&self, call: DriveCall) -> DriveResult<()> {
        match self.call(call).await? {
            DriveReply::Done => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    async fn bytes(&self, call: DriveCall) -> DriveResult<Option<Bytes>> {
        match self.call(call).await? {
            DriveReply::Bytes(b) => Ok(b),
            r => Err(unexpected(r)),
        }
    }
}

#[async_trait]
impl Drive for RemoteDrive {
    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn with_fence(self: Arc<Self>, fence: Fence) -> Arc<dyn Drive> {
        Arc::new(RemoteDrive { fence: Some(fence), ..(*self).clone() })
    }

    async fn disk_info(&self) -> DriveResult<DiskInfo> {
        match self.call(DriveCall::DiskInfo).await? {
            DriveReply::DiskInfo(i) => Ok(i),
            r => Err(unexpected(r)),
        }
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        Ok(self.bytes(DriveCall::ReadFormat).await?.map(|b| b.to_vec()))
    }

    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        self.done(DriveCall::WriteFormat(format.into())).await
    }

    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        Ok(self.bytes(DriveCall::ReadState(name.to_owned())).await?.map(|b| b.to_vec()))
    }

    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        self.done(DriveCall::WriteState(name.to_owned(), bytes.into())).await
    }

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.done(DriveCall::MakeBucket(bucket.to_owned(), record.into())).await
    }

    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        self.done(DriveCall::DeleteBucket(bucket.to_owned())).await
    }

    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.done(DriveCall::UpdateBucket(bucket.to_owned(), record.into())).await
    }

    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        match self.call(DriveCall::ListBuckets).await? {
            DriveReply::Buckets(b) => Ok(b.into_iter().map(|(n, r)| (n, r.to_vec())).collect()),
            r => Err(unexpected(r)),
        }
    }

    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        Ok(self.bytes(DriveCall::StatBucket(bucket.to_owned())).await?.unwrap_or_default().to_vec())
    }

    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        let call = DriveCall::ReadRecord { bucket: bucket.to_owned(), key: key.to_owned(), inline };
        match self.call(call).await? {
            DriveReply::Record(r, b) => Ok((r, b)),
            r => Err(unexpected(r)),
        }
    }

    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        match self.call(DriveCall::ReadVersion { bucket, key, version_id, inline }).await? {
            DriveReply::Record(r, b) => Ok((r, b)),
            r => Err(unexpected(r)),
        }
    }

    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        self.bytes(DriveCall::ReadInline(data_id)).await?.ok_or(DriveError::NotFound)
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let (tx, rx) = mpsc::channel::<Bytes>(8);
        let node = self.node.clone();
        let path = format!("{PREFIX}drive/write?d={}&id={data_id}", self.query());
        let body = http_body_util::combinators::UnsyncBoxBody::new(ChannelBody(rx));
        let (req, frames) = node.request(Method::POST, &path, BodyDigest::Frames, body)?;
        let frames =
            frames.ok_or_else(|| DriveError::Offline("a shard stream without a frame key".into()))?;
        let sent = tokio::spawn(async move {
            let resp = node.send_request(req, None).await?;
            let bytes =
                read_answer(resp.into_body(), RPC_ANSWER_SIZE_MAX).await.map_err(DriveError::Offline)?;
            decode::<Result<(), WireError>>(&bytes)
                .map_err(|e| DriveError::Offline(format!("unreadable answer: {e}")))?
                .map_err(DriveError::from)
        });
        Ok(Box::new(RemoteWriter {
            tx: Some(tx),
            sent: Some(sent),
            timeout: Duration::from_secs(30),
            frames,
            index: 0,
        }))
    }

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        let handle = match self.call(DriveCall::OpenShard(data_id)).await? {
            DriveReply::Handle(h) => h,
            r => return Err(unexpected(r)),
        };
        Ok(Box::new(RemoteReader {
            node: self.node.clone(),
            base: format!("{PREFIX}drive/read?d={}&id={data_id}&h={handle}", self.query()),
            handle,
        }))
    }

    async fn abort_shard_file(&self, data_id: Uuid) {
        let _ = self.done(DriveCall::AbortShard(data_id)).await;
    }

    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        let fence = self.fence;
        self.done(DriveCall::CommitVersion {
            bucket: bucket.into(),
            key: key.into(),
            version,
            inline,
            op,
            fence,
        })
        .await
    }

    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        let fence = self.fence;
        self.done(DriveCall::UpdateVersion { bucket: bucket.into(), key: key.into(), version, op, fence })
            .await
    }

    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        let fence = self.fence;
        self.done(DriveCall::DeleteVersion { bucket: bucket.into(), key: key.into(), version_id, op, fence })
            .await
    }

    async fn finish_op(&self, op: Uuid, keep: bool) {
        if let Err(e) = self.done(DriveCall::FinishOp { op, keep }).await {
            tracing::debug!(drive = %self.endpoint, error = %e, "cannot finish an operation on a remote drive");
        }
    }

    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        self.done(DriveCall::PutUpload { bucket: bucket.into(), upload }).await
    }

    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        match self.call(DriveCall::ReadUpload { bucket: bucket.into(), key: key.into(), upload_id }).await? {
            DriveReply::Upload(u) => Ok(*u),
            r => Err(unexpected(r)),
        }
    }

    async fn commit_part(&self, bucket: &str, key: &str, upload_id: Uuid, part: PartInfo) -> DriveResult<()> {
        self.done(DriveCall::CommitPart { bucket: bucket.into(), key: key.into(), upload_id, part }).await
    }

    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        match self.call(DriveCall::ListParts(upload_id)).await? {
            DriveReply::Parts(p) => Ok(p),
            r => Err(unexpected(r)),
        }
    }

    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.done(DriveCall::CompleteUpload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id,
            version,
            op,
            fence: self.fence,
        })
        .await
    }

    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        self.done(DriveCall::DropUpload { bucket: bucket.into(), key: key.into(), upload_id, keep }).await
    }

    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        match self.call(DriveCall::ListUploads { bucket: bucket.into(), query }).await? {
            DriveReply::Uploads(u) => Ok(u),
            r => Err(unexpected(r)),
        }
    }

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        match self.call(DriveCall::List { bucket: bucket.into(), query }).await? {
            DriveReply::List(l) => Ok(l),
            r => Err(unexpected(r)),
        }
    }

    async fn sweep_orphans(&self, min_age: Duration) -> DriveResult<(u64, u64)> {
        let min_age_ms = u64::try_from(min_age.as_millis()).unwrap_or(u64::MAX);
        match self.call(DriveCall::SweepOrphans { min_age_ms }).await? {
            DriveReply::Swept(f, b) => Ok((f, b)),
            r => Err(unexpected(r)),
        }
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
            return Err(DriveError::Offline("the shard write already ended".into()));
        };
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(DriveError::Offline(format!("shard write task failed: {e}"))),
            Err(_) => Err(DriveError::Offline("shard write timed out".into())),
        }
    }

    async fn push(&mut self, bytes: Bytes) -> DriveResult<()> {
        let Some(tx) = &self.tx else {
            return Err(DriveError::Offline("the shard write already ended".into()));
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
                    .unwrap_or_else(|| DriveError::Offline("shard write ended early".into())))
            }
            Err(_) => Err(DriveError::Offline("shard write timed out".into())),
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
        self.node.fetch(&format!("{}&off={offset}&len={len}", self.base)).await
    }
}
