//! The drive API, described once: every operation of a drive but the shard streams is a
//! [`DriveCall`] answered by a [`DriveReply`], made in a [`CallContext`] (the operation it
//! belongs to and the lock it is made under). A drive implements one method for all of them
//! ([`Drive::call`]), so a wrapper (metering, time-outs, faults, fencing, the
//! RPC layer) is a short middleware over one method, and the same enum is what travels between
//! nodes. [`DriveOps`] gives callers the typed methods (`read_record`, `commit_version`, ...).
//!
//! Adding a call: a variant here, its reply in [`DriveOps`], and its implementation in
//! [`LocalDrive`](crate::LocalDrive). Nothing else.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use strata_meta::{ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

use crate::{DiskInfo, Drive, DriveError, DriveResult, Fence, ListEntry, ListQuery, UploadsQuery};

/// What a call is made in: the operation it belongs to (a change kept or undone later by
/// [`DriveCall::FinishOp`]) and the lock it is made under (refused by the drive's node while
/// another holder has it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallContext {
    pub op: Option<Uuid>,
    pub fence: Option<Fence>,
}

impl CallContext {
    /// The context of a change belonging to operation `op`.
    pub fn op(op: Uuid) -> Self {
        Self { op: Some(op), fence: None }
    }
}

/// One drive operation (everything of the drive API but shard bytes, which stream).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum DriveCall {
    /// Capacity of the drive; an error when it is offline.
    DiskInfo,
    ReadFormat,
    WriteFormat(Bytes),
    /// A small named state document kept on this drive for its node (the healer's progress),
    /// replaced atomically.
    ReadState(String),
    WriteState(String, Bytes),
    MakeBucket(String, Bytes),
    DeleteBucket(String),
    /// Replaces an existing bucket's record.
    UpdateBucket(String, Bytes),
    /// Bucket name → encoded bucket record, in name order.
    ListBuckets,
    StatBucket(String),
    /// The object's record of its current version; with `inline`, also the framed shard bytes
    /// of that version when it is inline (read in the same snapshot).
    ReadRecord {
        bucket: String,
        key: String,
        inline: bool,
    },
    /// [`DriveCall::ReadRecord`] for a read without the object's lock: the record (none when the
    /// drive has none) and whether it is settled, read at one moment: no change of the object is
    /// on its way or waiting for its operation to end (kept or undone) on this drive.
    ReadSettled {
        bucket: String,
        key: String,
        inline: bool,
    },
    /// One version of the object (`None` = the `null` version), current or older, as a record of
    /// that version alone; `NotFound` when the object has no such version.
    ReadVersion {
        bucket: String,
        key: String,
        version_id: Option<Uuid>,
        inline: bool,
    },
    /// The framed shard bytes of an inline version.
    ReadInline(Uuid),
    /// Drops a temp shard file of a write that will not be committed.
    AbortShard(Uuid),
    /// Adds `version` to the object's record, replacing a version with the same id, and makes it
    /// durable (a file version's finished temp shard file moves into place first; an inline
    /// one's framed bytes come in `inline`). The data it replaces is kept until
    /// [`DriveCall::FinishOp`] for the context's operation. With `newest`, the version must be
    /// stamped after every other version of the object the drive holds, else nothing changes
    /// and the answer is [`DriveError::NotNewest`]. With `checked` (a conditional write: the
    /// newest stamp its condition was checked against), the drive must hold nothing stamped
    /// after it, else nothing changes and the answer is [`DriveError::ConditionChanged`].
    CommitVersion {
        bucket: String,
        key: String,
        version: ObjectVersion,
        inline: Option<Bytes>,
        newest: bool,
        #[serde(default)]
        checked: Option<u64>,
    },
    /// Replaces a version's metadata (tags, ...) keeping its data where it is.
    UpdateVersion {
        bucket: String,
        key: String,
        version: ObjectVersion,
    },
    /// Removes one version (`None` = the null version); its data is kept until `FinishOp`.
    /// With `checked` (a conditional delete: the newest stamp its condition was checked
    /// against), refused as [`DriveCall::CommitVersion`] is.
    DeleteVersion {
        bucket: String,
        key: String,
        version_id: Option<Uuid>,
        #[serde(default)]
        checked: Option<u64>,
    },
    /// Ends the context's operation: `keep` frees the data it displaced, otherwise the change is
    /// undone (the quorum was missed).
    FinishOp {
        keep: bool,
    },
    /// Records a new multipart upload.
    PutUpload {
        bucket: String,
        upload: UploadRecord,
    },
    ReadUpload {
        bucket: String,
        key: String,
        upload_id: Uuid,
    },
    /// Moves the finished temp shard file of `part.data_id` into place and records the part,
    /// replacing an earlier upload of the same part number, whose data is kept until
    /// [`DriveCall::FinishOp`] for the context's operation (freed when kept, the earlier part
    /// put back when undone).
    CommitPart {
        bucket: String,
        key: String,
        upload_id: Uuid,
        part: PartInfo,
    },
    ListParts(Uuid),
    /// Adds the completed object's version (its data is the listed parts' files) while the
    /// upload exists; finished like a commit by `FinishOp`. With `checked` (a conditional
    /// Complete), refused as [`DriveCall::CommitVersion`] is.
    CompleteUpload {
        bucket: String,
        key: String,
        upload_id: Uuid,
        version: ObjectVersion,
        #[serde(default)]
        checked: Option<u64>,
    },
    /// Removes an upload and its part records, freeing every part file not in `keep`.
    DropUpload {
        bucket: String,
        key: String,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    },
    /// Uploads in progress, in [`upload_position`](crate::upload_position) order.
    ListUploads {
        bucket: String,
        query: UploadsQuery,
    },
    List {
        bucket: String,
        query: ListQuery,
    },
    /// Deletes shard files no record refers to and temp files, both older than `min_age`.
    SweepOrphans {
        min_age: Duration,
    },
}

/// What a [`DriveCall`] answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum DriveReply {
    Done,
    DiskInfo(DiskInfo),
    Bytes(Option<Bytes>),
    Buckets(Vec<(String, Bytes)>),
    Record(ObjectRecord, Option<Bytes>),
    Settled(Settled),
    Upload(Box<UploadRecord>),
    Parts(Vec<PartInfo>),
    Uploads(Vec<UploadRecord>),
    List(Vec<ListEntry>),
    /// Files and bytes swept.
    Swept(u64, u64),
}

impl DriveCall {
    /// The call's name, as metrics and logs show it.
    pub fn name(&self) -> &'static str {
        use DriveCall as C;
        match self {
            C::DiskInfo => "disk_info",
            C::ReadFormat => "read_format",
            C::WriteFormat(_) => "write_format",
            C::ReadState(_) => "read_state",
            C::WriteState(..) => "write_state",
            C::MakeBucket(..) => "make_bucket",
            C::DeleteBucket(_) => "delete_bucket",
            C::UpdateBucket(..) => "update_bucket",
            C::ListBuckets => "list_buckets",
            C::StatBucket(_) => "stat_bucket",
            C::ReadRecord { .. } => "read_record",
            C::ReadSettled { .. } => "read_settled",
            C::ReadVersion { .. } => "read_version",
            C::ReadInline(_) => "read_inline",
            C::AbortShard(_) => "abort_shard_file",
            C::CommitVersion { .. } => "commit_version",
            C::UpdateVersion { .. } => "update_version",
            C::DeleteVersion { .. } => "delete_version",
            C::FinishOp { .. } => "finish_op",
            C::PutUpload { .. } => "put_upload",
            C::ReadUpload { .. } => "read_upload",
            C::CommitPart { .. } => "commit_part",
            C::ListParts(_) => "list_parts",
            C::CompleteUpload { .. } => "complete_upload",
            C::DropUpload { .. } => "drop_upload",
            C::ListUploads { .. } => "list_uploads",
            C::List { .. } => "list",
            C::SweepOrphans { .. } => "sweep_orphans",
        }
    }

    /// The changes made under an object's lock: the drive's node refuses them while its lock
    /// table shows another live holder of the context's fence.
    pub fn is_fenced(&self) -> bool {
        matches!(
            self,
            DriveCall::CommitVersion { .. }
                | DriveCall::UpdateVersion { .. }
                | DriveCall::DeleteVersion { .. }
                | DriveCall::CompleteUpload { .. }
                | DriveCall::CommitPart { .. }
                | DriveCall::DropUpload { .. }
                | DriveCall::PutUpload { .. }
        )
    }

    /// Calls that change what the drive holds (all but reads; the removal of a temp shard file
    /// of a write that failed is not a change): refused while the drive's writes are stopped.
    pub fn changes_drive(&self) -> bool {
        use DriveCall as C;
        !matches!(
            self,
            C::DiskInfo
                | C::ReadFormat
                | C::ReadState(_)
                | C::ListBuckets
                | C::StatBucket(_)
                | C::ReadRecord { .. }
                | C::ReadSettled { .. }
                | C::ReadVersion { .. }
                | C::ReadInline(_)
                | C::AbortShard(_)
                | C::ReadUpload { .. }
                | C::ListParts(_)
                | C::ListUploads { .. }
                | C::List { .. }
        )
    }

    /// Calls whose caller waits for no answer (a lost one is as good as a failed one): not
    /// metered, and given up on like any other past a time-out.
    pub fn answers_nothing(&self) -> bool {
        matches!(self, DriveCall::FinishOp { .. } | DriveCall::AbortShard(_))
    }
}

/// An object's record on one drive, as [`DriveCall::ReadSettled`] answers it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settled {
    /// The record and, when asked for, the current version's inline shard; `None`: no record.
    pub record: Option<(ObjectRecord, Option<Bytes>)>,
    /// No change of the object was applied but not yet kept or undone when the record was read.
    pub settled: bool,
}

/// A reply of another kind than the call's: the drive (or the node serving it) broke the
/// protocol.
fn unexpected(call: &'static str, reply: DriveReply) -> DriveError {
    DriveError::Protocol(format!("unexpected answer to {call}: {reply:?}"))
}

/// The drive API as typed methods, for every [`Drive`]: each builds its [`DriveCall`] and takes
/// its reply apart.
#[async_trait]
pub trait DriveOps {
    async fn disk_info(&self) -> DriveResult<DiskInfo>;
    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>>;
    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()>;
    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>>;
    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()>;
    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()>;
    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()>;
    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()>;
    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>>;
    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>>;
    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)>;
    /// See [`DriveCall::ReadSettled`].
    async fn read_settled(&self, bucket: &str, key: &str, inline: bool) -> DriveResult<Settled>;
    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)>;
    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes>;
    async fn abort_shard_file(&self, data_id: Uuid);
    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()>;
    /// [`Self::commit_version`] of a new version, which must be stamped after every version
    /// the drive holds ([`DriveError::NotNewest`] otherwise, with nothing changed).
    async fn commit_new_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()>;
    /// [`Self::commit_new_version`] of a conditional write, whose condition was checked against
    /// versions stamped `checked` at the newest (0: none): a drive holding a version stamped
    /// after that refuses it ([`DriveError::ConditionChanged`], nothing changed), so a write that
    /// came between the check and this commit is never overwritten, whatever the locks did.
    async fn commit_checked_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
        checked: u64,
    ) -> DriveResult<()>;
    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()>;
    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()>;
    /// [`Self::delete_version`] of a conditional delete, whose condition was checked against
    /// versions stamped `checked` at the newest: refused ([`DriveError::ConditionChanged`],
    /// nothing changed) by a drive holding a version stamped after that.
    async fn delete_checked_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
        checked: u64,
    ) -> DriveResult<()>;
    async fn finish_op(&self, op: Uuid, keep: bool);
    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()>;
    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord>;
    /// Commits a part in operation `op`, ended by [`Self::finish_op`]: kept, the part it
    /// replaced is freed; undone, that part is back.
    async fn commit_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part: PartInfo,
        op: Uuid,
    ) -> DriveResult<()>;
    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>>;
    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
        checked: Option<u64>,
    ) -> DriveResult<()>;
    async fn drop_upload(&self, bucket: &str, key: &str, upload_id: Uuid, keep: Vec<Uuid>)
        -> DriveResult<()>;
    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>>;
    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>>;
    async fn sweep_orphans(&self, min_age: Duration) -> DriveResult<(u64, u64)>;
}

/// A call answered [`DriveReply::Done`].
async fn done<D: Drive + ?Sized>(d: &D, ctx: CallContext, call: DriveCall) -> DriveResult<()> {
    let name = call.name();
    match d.call(ctx, call).await? {
        DriveReply::Done => Ok(()),
        r => Err(unexpected(name, r)),
    }
}

/// A call answered [`DriveReply::Bytes`].
async fn bytes<D: Drive + ?Sized>(d: &D, call: DriveCall) -> DriveResult<Option<Bytes>> {
    let name = call.name();
    match d.call(CallContext::default(), call).await? {
        DriveReply::Bytes(b) => Ok(b),
        r => Err(unexpected(name, r)),
    }
}

/// A call answered [`DriveReply::Record`].
async fn record<D: Drive + ?Sized>(d: &D, call: DriveCall) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
    let name = call.name();
    match d.call(CallContext::default(), call).await? {
        DriveReply::Record(r, b) => Ok((r, b)),
        r => Err(unexpected(name, r)),
    }
}

#[async_trait]
impl<D: Drive + ?Sized> DriveOps for D {
    async fn disk_info(&self) -> DriveResult<DiskInfo> {
        match self.call(CallContext::default(), DriveCall::DiskInfo).await? {
            DriveReply::DiskInfo(i) => Ok(i),
            r => Err(unexpected("disk_info", r)),
        }
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        Ok(bytes(self, DriveCall::ReadFormat).await?.map(Vec::from))
    }

    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::WriteFormat(format.into())).await
    }

    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        Ok(bytes(self, DriveCall::ReadState(name.to_owned())).await?.map(Vec::from))
    }

    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::WriteState(name.to_owned(), bytes.into())).await
    }

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::MakeBucket(bucket.to_owned(), record.into())).await
    }

    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::DeleteBucket(bucket.to_owned())).await
    }

    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::UpdateBucket(bucket.to_owned(), record.into())).await
    }

    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        match self.call(CallContext::default(), DriveCall::ListBuckets).await? {
            DriveReply::Buckets(b) => Ok(b.into_iter().map(|(n, r)| (n, Vec::from(r))).collect()),
            r => Err(unexpected("list_buckets", r)),
        }
    }

    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        let record = bytes(self, DriveCall::StatBucket(bucket.to_owned())).await?;
        record.map(Vec::from).ok_or(DriveError::BucketNotFound)
    }

    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        record(self, DriveCall::ReadRecord { bucket: bucket.to_owned(), key: key.to_owned(), inline }).await
    }

    async fn read_settled(&self, bucket: &str, key: &str, inline: bool) -> DriveResult<Settled> {
        let call = DriveCall::ReadSettled { bucket: bucket.to_owned(), key: key.to_owned(), inline };
        match self.call(CallContext::default(), call).await? {
            DriveReply::Settled(s) => Ok(s),
            r => Err(unexpected("read_settled", r)),
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
        record(self, DriveCall::ReadVersion { bucket, key, version_id, inline }).await
    }

    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        bytes(self, DriveCall::ReadInline(data_id)).await?.ok_or(DriveError::NotFound)
    }

    async fn abort_shard_file(&self, data_id: Uuid) {
        if let Err(e) = done(self, CallContext::default(), DriveCall::AbortShard(data_id)).await {
            tracing::debug!(drive = %self.endpoint(), error = %e, "cannot abort a shard file");
        }
    }

    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call = DriveCall::CommitVersion { bucket, key, version, inline, newest: false, checked: None };
        done(self, CallContext::op(op), call).await
    }

    async fn commit_new_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call = DriveCall::CommitVersion { bucket, key, version, inline, newest: true, checked: None };
        done(self, CallContext::op(op), call).await
    }

    async fn commit_checked_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
        checked: u64,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call =
            DriveCall::CommitVersion { bucket, key, version, inline, newest: true, checked: Some(checked) };
        done(self, CallContext::op(op), call).await
    }

    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        done(self, CallContext::op(op), DriveCall::UpdateVersion { bucket, key, version }).await
    }

    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call = DriveCall::DeleteVersion { bucket, key, version_id, checked: None };
        done(self, CallContext::op(op), call).await
    }

    async fn delete_checked_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
        checked: u64,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call = DriveCall::DeleteVersion { bucket, key, version_id, checked: Some(checked) };
        done(self, CallContext::op(op), call).await
    }

    async fn finish_op(&self, op: Uuid, keep: bool) {
        if let Err(e) = done(self, CallContext::op(op), DriveCall::FinishOp { keep }).await {
            tracing::debug!(drive = %self.endpoint(), error = %e, "cannot finish an operation");
        }
    }

    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        done(self, CallContext::default(), DriveCall::PutUpload { bucket: bucket.to_owned(), upload }).await
    }

    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        let call = DriveCall::ReadUpload { bucket: bucket.to_owned(), key: key.to_owned(), upload_id };
        match self.call(CallContext::default(), call).await? {
            DriveReply::Upload(u) => Ok(*u),
            r => Err(unexpected("read_upload", r)),
        }
    }

    async fn commit_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part: PartInfo,
        op: Uuid,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        done(self, CallContext::op(op), DriveCall::CommitPart { bucket, key, upload_id, part }).await
    }

    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        match self.call(CallContext::default(), DriveCall::ListParts(upload_id)).await? {
            DriveReply::Parts(p) => Ok(p),
            r => Err(unexpected("list_parts", r)),
        }
    }

    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
        checked: Option<u64>,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        let call = DriveCall::CompleteUpload { bucket, key, upload_id, version, checked };
        done(self, CallContext::op(op), call).await
    }

    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        done(self, CallContext::default(), DriveCall::DropUpload { bucket, key, upload_id, keep }).await
    }

    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        let call = DriveCall::ListUploads { bucket: bucket.to_owned(), query };
        match self.call(CallContext::default(), call).await? {
            DriveReply::Uploads(u) => Ok(u),
            r => Err(unexpected("list_uploads", r)),
        }
    }

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        match self.call(CallContext::default(), DriveCall::List { bucket: bucket.to_owned(), query }).await? {
            DriveReply::List(l) => Ok(l),
            r => Err(unexpected("list", r)),
        }
    }

    async fn sweep_orphans(&self, min_age: Duration) -> DriveResult<(u64, u64)> {
        match self.call(CallContext::default(), DriveCall::SweepOrphans { min_age }).await? {
            DriveReply::Swept(files, bytes) => Ok((files, bytes)),
            r => Err(unexpected("sweep_orphans", r)),
        }
    }
}
