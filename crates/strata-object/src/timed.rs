//! [`Timed`]: every drive operation of the object layer under a time-out.
//!
//! A drive that stops answering (a stalled device, a hung mount, a node that takes requests and
//! never replies) must cost a request one time-out, not the request: each set wraps its drives in
//! [`Timed`] at start, and an operation (or a shard writer's or reader's call) that has not
//! answered within [`LayerOptions::drive_op_timeout`](crate::LayerOptions) fails with
//! `DriveError::Offline`, which every quorum rule counts as a failed drive. Operations that answer
//! nothing (`finish_op`, `abort_shard_file`) are given up on the same way. `sweep_orphans` walks
//! a whole drive and runs in the background, so it has no time-out.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::{
    DiskInfo, Drive, DriveError, DriveResult, ListEntry, ListQuery, ShardReader, ShardWriter, UploadsQuery,
};
use strata_meta::{ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

/// A drive whose every operation fails past a time-out.
#[derive(Debug)]
pub(crate) struct Timed {
    inner: Arc<dyn Drive>,
    timeout: Duration,
}

impl Timed {
    pub fn wrap(inner: Arc<dyn Drive>, timeout: Duration) -> Arc<dyn Drive> {
        Arc::new(Self { inner, timeout })
    }
}

/// Runs `fut`; past `timeout`, drops it and answers the drive offline.
async fn within<T>(
    endpoint: &str,
    timeout: Duration,
    op: &'static str,
    fut: impl Future<Output = DriveResult<T>>,
) -> DriveResult<T> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(drive = endpoint, op, ?timeout, "drive operation timed out");
            Err(DriveError::Offline(format!("{endpoint}: {op} did not answer within {timeout:?}")))
        }
    }
}

struct TimedWriter {
    inner: Box<dyn ShardWriter>,
    endpoint: String,
    timeout: Duration,
}

#[async_trait]
impl ShardWriter for TimedWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        within(&self.endpoint, self.timeout, "write_frame", self.inner.write_frame(hash, shard)).await
    }

    async fn finish(&mut self) -> DriveResult<()> {
        within(&self.endpoint, self.timeout, "finish", self.inner.finish()).await
    }
}

struct TimedReader {
    inner: Box<dyn ShardReader>,
    endpoint: String,
    timeout: Duration,
}

#[async_trait]
impl ShardReader for TimedReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        within(&self.endpoint, self.timeout, "read_at", self.inner.read_at(offset, len)).await
    }

    async fn read_frame(&self, offset: u64, shard_size: usize) -> DriveResult<Bytes> {
        within(&self.endpoint, self.timeout, "read_frame", self.inner.read_frame(offset, shard_size)).await
    }
}

impl Timed {
    async fn run<T>(&self, op: &'static str, fut: impl Future<Output = DriveResult<T>>) -> DriveResult<T> {
        within(self.inner.endpoint(), self.timeout, op, fut).await
    }
}

#[async_trait]
impl Drive for Timed {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn with_fence(self: Arc<Self>, fence: strata_drive::Fence) -> Arc<dyn Drive> {
        Timed::wrap(self.inner.clone().with_fence(fence), self.timeout)
    }

    async fn disk_info(&self) -> DriveResult<DiskInfo> {
        self.run("disk_info", self.inner.disk_info()).await
    }

    fn commit_totals(&self) -> Option<(u64, u64)> {
        self.inner.commit_totals()
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        self.run("read_format", self.inner.read_format()).await
    }

    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        self.run("write_format", self.inner.write_format(format)).await
    }

    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        self.run("read_state", self.inner.read_state(name)).await
    }

    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        self.run("write_state", self.inner.write_state(name, bytes)).await
    }

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.run("make_bucket", self.inner.make_bucket(bucket, record)).await
    }

    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        self.run("delete_bucket", self.inner.delete_bucket(bucket)).await
    }

    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.run("update_bucket", self.inner.update_bucket(bucket, record)).await
    }

    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        self.run("list_buckets", self.inner.list_buckets()).await
    }

    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        self.run("stat_bucket", self.inner.stat_bucket(bucket)).await
    }

    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.run("read_record", self.inner.read_record(bucket, key, inline)).await
    }

    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.run("read_version", self.inner.read_version(bucket, key, version_id, inline)).await
    }

    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        self.run("read_inline", self.inner.read_inline(data_id)).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let inner = self.run("create_shard_file", self.inner.create_shard_file(data_id)).await?;
        let endpoint = self.inner.endpoint().to_owned();
        Ok(Box::new(TimedWriter { inner, endpoint, timeout: self.timeout }))
    }

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        let inner = self.run("open_shard_file", self.inner.open_shard_file(data_id)).await?;
        let endpoint = self.inner.endpoint().to_owned();
        Ok(Box::new(TimedReader { inner, endpoint, timeout: self.timeout }))
    }

    async fn abort_shard_file(&self, data_id: Uuid) {
        let abort = async {
            self.inner.abort_shard_file(data_id).await;
            Ok(())
        };
        let _ = self.run("abort_shard_file", abort).await;
    }

    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.run("commit_version", self.inner.commit_version(bucket, key, version, inline, op)).await
    }

    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.run("update_version", self.inner.update_version(bucket, key, version, op)).await
    }

    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.run("delete_version", self.inner.delete_version(bucket, key, version_id, op)).await
    }

    async fn finish_op(&self, op: Uuid, keep: bool) {
        let finish = async {
            self.inner.finish_op(op, keep).await;
            Ok(())
        };
        let _ = self.run("finish_op", finish).await;
    }

    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        self.run("put_upload", self.inner.put_upload(bucket, upload)).await
    }

    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        self.run("read_upload", self.inner.read_upload(bucket, key, upload_id)).await
    }

    async fn commit_part(&self, bucket: &str, key: &str, upload_id: Uuid, part: PartInfo) -> DriveResult<()> {
        self.run("commit_part", self.inner.commit_part(bucket, key, upload_id, part)).await
    }

    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        self.run("list_parts", self.inner.list_parts(upload_id)).await
    }

    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.run("complete_upload", self.inner.complete_upload(bucket, key, upload_id, version, op)).await
    }

    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        self.run("drop_upload", self.inner.drop_upload(bucket, key, upload_id, keep)).await
    }

    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        self.run("list_uploads", self.inner.list_uploads(bucket, query)).await
    }

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        self.run("list", self.inner.list(bucket, query)).await
    }

    async fn sweep_orphans(&self, min_age: Duration) -> DriveResult<(u64, u64)> {
        self.inner.sweep_orphans(min_age).await
    }
}
