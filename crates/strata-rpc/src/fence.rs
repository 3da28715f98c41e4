//! [`FencedLocal`]: this node's own drives, as the object layer of this node sees them, with the
//! lock fence checked against this node's lock table, as [`RpcServer`](crate::RpcServer) checks
//! it for changes that come from peers: a holder whose lock passed on cannot change the drives of
//! a node that granted it to the new holder, whether the holder runs on that node or another.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::{
    DiskInfo, Drive, DriveError, DriveResult, Fence, ListEntry, ListQuery, ShardReader, ShardWriter,
    UploadsQuery,
};
use strata_meta::{ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

use crate::lock::{Admitted, LockServer};

/// A drive of this node whose fenced changes ([`Drive::with_fence`]) are admitted by this node's
/// [`LockServer`] first ([`LockServer::admit`]).
pub struct FencedLocal {
    inner: Arc<dyn Drive>,
    locks: Arc<LockServer>,
    fence: Option<Fence>,
}

impl std::fmt::Debug for FencedLocal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FencedLocal({})", self.inner.endpoint())
    }
}

impl FencedLocal {
    pub fn new(inner: Arc<dyn Drive>, locks: Arc<LockServer>) -> Self {
        Self { inner, locks, fence: None }
    }

    /// Admission of a change under this handle's fence (none without one).
    fn admit(&self) -> DriveResult<Option<Admitted>> {
        let Some(fence) = self.fence else { return Ok(None) };
        match self.locks.admit(fence) {
            Some(a) => Ok(Some(a)),
            None => Err(DriveError::Fenced(format!(
                "{} has another holder of lock {:016x}",
                self.inner.endpoint(),
                fence.resource
            ))),
        }
    }
}

#[async_trait]
impl Drive for FencedLocal {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn with_fence(self: Arc<Self>, fence: Fence) -> Arc<dyn Drive> {
        Arc::new(FencedLocal { inner: self.inner.clone(), locks: self.locks.clone(), fence: Some(fence) })
    }

    async fn disk_info(&self) -> DriveResult<DiskInfo> {
        self.inner.disk_info().await
    }

    fn commit_totals(&self) -> Option<(u64, u64)> {
        self.inner.commit_totals()
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        self.inner.read_format().await
    }

    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        self.inner.write_format(format).await
    }

    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        self.inner.read_state(name).await
    }

    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        self.inner.write_state(name, bytes).await
    }

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.inner.make_bucket(bucket, record).await
    }

    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        self.inner.delete_bucket(bucket).await
    }

    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        self.inner.update_bucket(bucket, record).await
    }

    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        self.inner.list_buckets().await
    }

    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        self.inner.stat_bucket(bucket).await
    }

    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.inner.read_record(bucket, key, inline).await
    }

    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        self.inner.read_version(bucket, key, version_id, inline).await
    }

    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        self.inner.read_inline(data_id).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.inner.create_shard_file(data_id).await
    }

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        self.inner.open_shard_file(data_id).await
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
        let _admitted = self.admit()?;
        self.inner.commit_version(bucket, key, version, inline, op).await
    }

    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        let _admitted = self.admit()?;
        self.inner.update_version(bucket, key, version, op).await
    }

    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        let _admitted = self.admit()?;
        self.inner.delete_version(bucket, key, version_id, op).await
    }

    async fn finish_op(&self, op: Uuid, keep: bool) {
        self.inner.finish_op(op, keep).await
    }

    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        self.inner.put_upload(bucket, upload).await
    }

    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        self.inner.read_upload(bucket, key, upload_id).await
    }

    async fn commit_part(&self, bucket: &str, key: &str, upload_id: Uuid, part: PartInfo) -> DriveResult<()> {
        self.inner.commit_part(bucket, key, upload_id, part).await
    }

    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        self.inner.list_parts(upload_id).await
    }

    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        let _admitted = self.admit()?;
        self.inner.complete_upload(bucket, key, upload_id, version, op).await
    }

    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        self.inner.drop_upload(bucket, key, upload_id, keep).await
    }

    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        self.inner.list_uploads(bucket, query).await
    }

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        self.inner.list(bucket, query).await
    }

    async fn sweep_orphans(&self, min_age: std::time::Duration) -> DriveResult<(u64, u64)> {
        self.inner.sweep_orphans(min_age).await
    }
}
