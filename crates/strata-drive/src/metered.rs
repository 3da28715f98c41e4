//! [`Metered`]: a [`Drive`] that reports every operation (name, duration, failure) to a
//! [`DriveObserver`] and forwards it unchanged. It wraps any drive, so local and (later) remote
//! drives are measured alike. Shard reads and writes are measured per frame.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use strata_meta::{ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

use crate::{
    DiskInfo, Drive, DriveError, DriveResult, ListEntry, ListQuery, ShardReader, ShardWriter, UploadsQuery,
};

/// Receives one call per drive operation.
pub trait DriveObserver: Send + Sync {
    /// `failed` is true for errors that say something about the drive (not for "not found" and
    /// the other answers a healthy drive gives).
    fn observe(&self, drive: &str, op: &'static str, seconds: f64, failed: bool);
}

/// Whether an error counts against the drive.
fn is_failure(e: &DriveError) -> bool {
    matches!(e, DriveError::Offline(_) | DriveError::Corrupt(_) | DriveError::Io(_) | DriveError::Index(_))
}

#[derive(Clone)]
struct Probe {
    drive: Arc<str>,
    observer: Arc<dyn DriveObserver>,
}

impl Probe {
    async fn time<T>(
        &self,
        op: &'static str,
        fut: impl std::future::Future<Output = DriveResult<T>>,
    ) -> DriveResult<T> {
        let started = Instant::now();
        let r = fut.await;
        let failed = r.as_ref().err().is_some_and(is_failure);
        self.observer.observe(&self.drive, op, started.elapsed().as_secs_f64(), failed);
        r
    }
}

pub struct Metered {
    inner: Arc<dyn Drive>,
    probe: Probe,
}

impl Metered {
    pub fn new(inner: Arc<dyn Drive>, observer: Arc<dyn DriveObserver>) -> Self {
        let drive: Arc<str> = inner.endpoint().into();
        Self { inner, probe: Probe { drive, observer } }
    }
}

impl std::fmt::Debug for Metered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered").field("inner", &self.inner).finish()
    }
}

struct MeteredWriter {
    inner: Box<dyn ShardWriter>,
    probe: Probe,
}

#[async_trait]
impl ShardWriter for MeteredWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        self.probe.clone().time("write_frame", self.inner.write_frame(hash, shard)).await
    }

    async fn finish(&mut self) -> DriveResult<()> {
        self.probe.clone().time("sync_shard_file", self.inner.finish()).await
    }
}

struct MeteredReader {
    inner: Box<dyn ShardReader>,
    probe: Probe,
}

#[async_trait]
impl ShardReader for MeteredReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        self.probe.time("read_frame", self.inner.read_at(offset, len)).await
    }
}

#[async_trait]
impl Drive for Metered {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn with_fence(self: Arc<Self>, fence: crate::Fence) -> Arc<dyn Drive> {
        Arc::new(Metered { inner: self.inner.clone().with_fence(fence), probe: self.probe.clone() })
    }

    async fn disk_info(&self) -> DriveResult<DiskInfo> {
        self.probe.time("disk_info", self.inner.disk_info()).await
    }

    fn commit_totals(&self) -> Option<(u64, u64)> {
        self.inner.commit_totals()
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        self.probe.time("read_format", self.inner.read_format()).await
    }

    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        self.probe.time("write_format", self.inner.write_format(format)).await
    }

    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        self.probe.time("read_state", self.inner.read_state(name)).await
    }

    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        self.probe.time("write_state", self.inner.write_state(name, bytes)).await
    }

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.probe.time("make_bucket", self.inner.make_bucket(bucket, record)).await
    }

    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        self.probe.time("delete_bucket", self.inner.delete_bucket(bucket)).await
    }

    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.probe.time("update_bucket", self.inner.update_bucket(bucket, record)).await
    }

    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        self.probe.time("list_buckets", self.inner.list_buckets()).await
    }

    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        self.probe.time("stat_bucket", self.inner.stat_bucket(bucket)).await
    }

    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.probe.time("read_record", self.inner.read_record(bucket, key, inline)).await
    }

    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.probe.time("read_version", self.inner.read_version(bucket, key, version_id, inline)).await
    }

    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        self.probe.time("read_inline", self.inner.read_inline(data_id)).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let inner = self.probe.time("create_shard_file", self.inner.create_shard_file(data_id)).await?;
        Ok(Box::new(MeteredWriter { inner, probe: self.probe.clone() }))
    }

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        let inner = self.probe.time("open_shard_file", self.inner.open_shard_file(data_id)).await?;
        Ok(Box::new(MeteredReader { inner, probe: self.probe.clone() }))
    }

    async fn abort_shard_file(&self, data_id: Uuid) {
        self.inner.abort_shard_file(data_id).await
    }

    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.probe.time("commit_version", self.inner.commit_version(bucket, key, version, inline, op)).await
    }

    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.probe.time("update_version", self.inner.update_version(bucket, key, version, op)).await
    }

    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.probe.time("delete_version", self.inner.delete_version(bucket, key, version_id, op)).await
    }

    async fn finish_op(&self, op: Uuid, keep: bool) {
        self.inner.finish_op(op, keep).await
    }

    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        self.probe.time("put_upload", self.inner.put_upload(bucket, upload)).await
    }

    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        self.probe.time("read_upload", self.inner.read_upload(bucket, key, upload_id)).await
    }

    async fn commit_part(&self, bucket: &str, key: &str, upload_id: Uuid, part: PartInfo) -> DriveResult<()> {
        self.probe.time("commit_part", self.inner.commit_part(bucket, key, upload_id, part)).await
    }

    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        self.probe.time("list_parts", self.inner.list_parts(upload_id)).await
    }

    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.probe
            .time("complete_upload", self.inner.complete_upload(bucket, key, upload_id, version, op))
            .await
    }

    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        self.probe.time("drop_upload", self.inner.drop_upload(bucket, key, upload_id, keep)).await
    }

    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        self.probe.time("list_uploads", self.inner.list_uploads(bucket, query)).await
    }

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        self.probe.time("list", self.inner.list(bucket, query)).await
    }

    async fn sweep_orphans(&self, min_age: std::time::Duration) -> DriveResult<(u64, u64)> {
        self.probe.time("sweep_orphans", self.inner.sweep_orphans(min_age)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::LocalDrive;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(&'static str, bool)>>);

    impl DriveObserver for Seen {
        fn observe(&self, _drive: &str, op: &'static str, seconds: f64, failed: bool) {
            assert!(seconds >= 0.0);
            if let Ok(mut v) = self.0.lock() {
                v.push((op, failed));
            }
        }
    }

    #[tokio::test]
    async fn reports_each_operation_and_only_real_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = LocalDrive::open(dir.path()).expect("open");
        let seen = Arc::new(Seen::default());
        let drive = Metered::new(Arc::new(local), seen.clone());
        drive.write_format(b"{}".to_vec()).await.expect("format");
        drive.make_bucket("b", vec![1]).await.expect("make");
        assert!(matches!(drive.read_record("b", "nope", false).await, Err(DriveError::NotFound)));
        let id = Uuid::new_v4();
        let mut w = drive.create_shard_file(id).await.expect("create");
        w.write_frame([0; 32], Bytes::from_static(b"abc")).await.expect("write");
        w.finish().await.expect("finish");
        drop(w);
        drive.abort_shard_file(id).await;
        let seen = seen.0.lock().expect("lock").clone();
        assert!(is_failure(&DriveError::Io(std::io::Error::other("disk"))));
        assert!(!is_failure(&DriveError::BucketExists));
        assert_eq!(
            seen,
            [
                ("write_format", false),
                ("make_bucket", false),
                ("read_record", false),
                ("create_shard_file", false),
                ("write_frame", false),
                ("sync_shard_file", false),
            ]
        );
    }
}
