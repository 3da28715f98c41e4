//! The `Drive` trait, the one storage seam, and [`LocalDrive`], a drive on a local folder.
//!
//! The object layer talks to every drive through [`Drive`], whether the drive is a folder in this
//! process or (later) on another node. A drive stores:
//! - its format record (`.strata.sys/format.json`), written once when the deployment is formed;
//! - a metadata index (redb, `.strata.sys/index.redb`): buckets, one [`ObjectRecord`] per object
//!   of its set holding its current version, a row per older version (`versions`: an object's
//!   history costs nothing to reads and listings of current objects), and the framed shard bytes
//!   of inline (small) versions;
//! - shard files for larger versions (`.strata.sys/data/xx/<data id>`), written first under
//!   `.strata.sys/tmp/` and moved into place by [`Drive::commit_version`].
//!
//! Invariants: a version becomes visible only when its record is committed to the index, after its
//! shard file is durable and in place; data of a version is deleted only after the record that
//! dropped it is committed. So a crash leaves the old version or the new one, never a mix; what
//! it can leave is a temp file (swept at open) or an unreferenced shard file (swept by the scanner).
//! Metadata changes that arrive together share one durable commit (group commit).
//!
//! For tests, [`FaultyDrive`] wraps any drive and fails, slows, hangs or cuts short its operations.

pub mod faulty;
pub mod fs;
mod index;
mod local;
mod metered;
pub mod sim;
mod versions;

use std::fmt::Debug;

use async_trait::async_trait;
use bytes::Bytes;
use strata_erasure::bitrot;
use strata_meta::{DecodeError, ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

pub use faulty::FaultyDrive;
pub use index::CommitStats;
pub use local::{LocalDrive, OpenError, OpenOptions};
pub use metered::{DriveObserver, Metered};
pub use versions::{version_rank, RANK_LEN};

/// What went wrong on one drive. Corruption is a value, not a panic: it triggers healing.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("drive is offline: {0}")]
    Offline(String),
    #[error("not found")]
    NotFound,
    #[error("bucket not found")]
    BucketNotFound,
    #[error("bucket exists")]
    BucketExists,
    #[error("bucket not empty")]
    BucketNotEmpty,
    #[error("corrupt data on drive: {0}")]
    Corrupt(String),
    #[error("drive I/O error: {0}")]
    Io(std::io::Error),
    #[error("metadata index error: {0}")]
    Index(String),
    /// The process, not the drive, ran out of something (open files, memory): the drive is
    /// fine, so this neither marks it failed nor starts a heal; the request is answered 503
    /// naming the cause.
    #[error("the server ran out of {0}")]
    Exhausted(String),
    /// A change made under an object lock was refused by the drive's node: its lock table shows
    /// another live holder of that lock (the caller's lease passed on). Not a fault of the
    /// drive; the request may be retried.
    #[error("refused: the object's lock has another holder now ({0})")]
    Fenced(String),
}

impl From<std::io::Error> for DriveError {
    /// I/O errors are the drive's, except those that say the process is out of a resource.
    fn from(e: std::io::Error) -> Self {
        use rustix::io::Errno;
        let errno = e.raw_os_error().map(Errno::from_raw_os_error);
        match errno {
            Some(Errno::MFILE) => DriveError::Exhausted(format!("open files (its limit, ulimit -n): {e}")),
            Some(Errno::NFILE) => DriveError::Exhausted(format!("open files (the system's limit): {e}")),
            Some(Errno::NOMEM) => DriveError::Exhausted(format!("memory: {e}")),
            _ => DriveError::Io(e),
        }
    }
}

impl From<DecodeError> for DriveError {
    fn from(e: DecodeError) -> Self {
        DriveError::Corrupt(e.to_string())
    }
}

pub type DriveResult<T> = Result<T, DriveError>;

/// One entry of a drive listing, in key order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ListEntry {
    Object {
        key: String,
        record: ObjectRecord,
    },
    /// A common prefix (ends with the delimiter).
    Prefix(String),
}

impl ListEntry {
    /// The key or the prefix: what the listing sorts by.
    pub fn name(&self) -> &str {
        match self {
            ListEntry::Object { key, .. } => key,
            ListEntry::Prefix(p) => p,
        }
    }
}

/// The identity of a distributed object lock a change is made under: its resource (the object's
/// placement hash) and the holder's id. A drive handle carrying it ([`Drive::with_fence`]) sends
/// it with each change that needs the lock (commit, metadata update, delete, multipart complete),
/// and the drive's node refuses the change ([`DriveError::Fenced`]) when its own lock table
/// shows another live holder of the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fence {
    pub resource: u64,
    pub holder: Uuid,
}

/// Capacity of a drive's filesystem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiskInfo {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub total_inodes: u64,
    pub free_inodes: u64,
}

/// What to list on one drive.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ListQuery {
    pub prefix: String,
    /// List only names greater than this one.
    pub start_after: String,
    /// Roll keys up to common prefixes at the first delimiter after the prefix.
    pub delimiter: Option<String>,
    /// Return at most this many entries.
    pub limit: usize,
    /// List every version of each key (one entry each: a record of that version alone, newest
    /// first, the current one first), not only each key's record of its current version.
    #[serde(default)]
    pub versions: bool,
    /// With `versions`: resume inside key `start_after`, at its versions ranked after this
    /// ([`version_rank`]); `None` resumes after the whole key.
    #[serde(default)]
    pub start_rank: Option<Vec<u8>>,
}

/// Which multipart uploads to list on one drive: those under `prefix` past the position `after`,
/// in (key, upload id) order, at most `limit` of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UploadsQuery {
    pub prefix: String,
    /// An exclusive lower bound on [`upload_position`]s; empty lists from the start.
    pub after: Vec<u8>,
    pub limit: usize,
}

/// Where an upload sorts within its bucket: its key, a 0 byte, its id. So `key ++ [1]` lies past
/// every upload of `key` (and before longer keys), and, keys being UTF-8 (never a 0xff byte),
/// `prefix ++ [0xff]` past every key under `prefix`: how listings skip ahead.
pub fn upload_position(key: &str, upload_id: Uuid) -> Vec<u8> {
    let mut p = Vec::with_capacity(key.len() + 17);
    p.extend_from_slice(key.as_bytes());
    p.push(0);
    p.extend_from_slice(upload_id.as_bytes());
    p
}

/// Writes one shard file; dropped without `finish` leaves a temp file that is swept later.
#[async_trait]
pub trait ShardWriter: Send {
    /// Appends one frame: the bitrot hash, then the shard bytes.
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()>;
    /// Makes the written frames durable.
    async fn finish(&mut self) -> DriveResult<()>;
}

/// Reads byte ranges of one shard file.
#[async_trait]
pub trait ShardReader: Send + Sync {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes>;

    /// Reads the frame at `offset` holding `shard_size` shard bytes, checks its bitrot hash, and
    /// returns the shard bytes (a slice of the frame, no copy). A bad hash is `Corrupt`.
    async fn read_frame(&self, offset: u64, shard_size: usize) -> DriveResult<Bytes> {
        let frame = self.read_at(offset, bitrot::HASH_SIZE + shard_size).await?;
        let range = bitrot::verify(&frame, shard_size).map_err(|e| DriveError::Corrupt(e.to_string()))?;
        Ok(frame.slice(range))
    }

    /// Reads the frame at `offset` holding `shard_size` shard bytes and returns the shard bytes
    /// without hashing them: only for a reader that authenticates every byte another way (an
    /// encrypted object's packages, whose AES-GCM tags catch whatever the hash would) and that
    /// reads again with [`ShardReader::read_frame`] when they do not open.
    async fn read_frame_unhashed(&self, offset: u64, shard_size: usize) -> DriveResult<Bytes> {
        let frame = self.read_at(offset, bitrot::HASH_SIZE + shard_size).await?;
        let range =
            bitrot::shard_range(&frame, shard_size).map_err(|e| DriveError::Corrupt(e.to_string()))?;
        Ok(frame.slice(range))
    }
}

/// The storage seam. All methods are safe to call concurrently.
#[async_trait]
pub trait Drive: Send + Sync + Debug {
    /// Where the drive is, for logs and errors.
    fn endpoint(&self) -> &str;

    /// This drive, with its changes made under the lock `fence` names: `commit_version`,
    /// `update_version`, `delete_version` and `complete_upload` carry it to the node that owns
    /// the drive, which refuses them while another holder has the lock there. A drive that no
    /// node fences (one process alone) returns itself; a wrapper returns itself around its inner
    /// drive's fenced handle.
    fn with_fence(self: std::sync::Arc<Self>, fence: Fence) -> std::sync::Arc<dyn Drive>;

    /// Capacity of the drive; an error when it is offline.
    async fn disk_info(&self) -> DriveResult<DiskInfo>;
    /// Group-commit totals (commits, changes) for metrics, when the drive keeps them.
    fn commit_totals(&self) -> Option<(u64, u64)> {
        None
    }

    async fn read_format(&self) -> DriveResult<Option<Vec<u8>>>;
    async fn write_format(&self, format: Vec<u8>) -> DriveResult<()>;

    /// A small named state document kept on this drive for its node (the healer's progress),
    /// replaced atomically; `None` when never written.
    async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>>;
    async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()>;

    async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()>;
    async fn delete_bucket(&self, bucket: &str) -> DriveResult<()>;
    /// Replaces an existing bucket's record.
    async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()>;
    /// Bucket name → encoded bucket record, in name order.
    async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>>;
    async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>>;

    /// The object's record of its current version (older versions are kept apart, see
    /// [`Drive::read_version`] and [`ListQuery::versions`]); with `inline`, also the framed shard
    /// bytes of that version when it is inline (read in the same snapshot, so they always match).
    async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)>;
    /// One version of the object (`None` = the `null` version), current or older, as a record of
    /// that version alone; with `inline`, its framed shard bytes when inline (same snapshot).
    /// `NotFound` when the object has no such version.
    async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)>;
    /// The framed shard bytes of an inline version.
    async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes>;
    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>>;
    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>>;
    /// Drops a temp shard file of a write that will not be committed.
    async fn abort_shard_file(&self, data_id: Uuid);

    /// Adds `version` to the object's record, replacing a version with the same id, and makes it
    /// durable. For a file version, the finished temp shard file moves into place first; for an
    /// inline version, `inline` holds its framed shard bytes. The data of a replaced version is
    /// kept until [`Drive::finish_op`] says whether operation `op` met its quorum.
    async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()>;
    /// Replaces a version's metadata (tags, …) keeping its data where it is; finished like
    /// [`Drive::commit_version`] by [`Drive::finish_op`].
    async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()>;
    /// Removes one version (`None` = the null version); the record goes when its last version does.
    /// Its data is kept until [`Drive::finish_op`].
    async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()>;
    /// Ends operation `op` on this drive: `keep` frees the data it displaced; otherwise the change
    /// is undone (the quorum was missed), so a failed write never replaces what was there.
    async fn finish_op(&self, op: Uuid, keep: bool);

    /// Records a new multipart upload.
    async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()>;
    async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord>;
    /// Moves the finished temp shard file of `part.data_id` into place and records the part,
    /// replacing (and freeing) an earlier upload of the same part number.
    async fn commit_part(&self, bucket: &str, key: &str, upload_id: Uuid, part: PartInfo) -> DriveResult<()>;
    async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>>;
    /// Adds the completed object's version (its data is the listed parts' files) while the
    /// upload exists; finished like [`Drive::commit_version`] by [`Drive::finish_op`].
    async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()>;
    /// Removes an upload and its part records, freeing every part file not in `keep`.
    async fn drop_upload(&self, bucket: &str, key: &str, upload_id: Uuid, keep: Vec<Uuid>)
        -> DriveResult<()>;
    /// Uploads in progress whose key starts with `prefix`, in key order, at most `limit`.
    /// Uploads in progress, in [`upload_position`] order (see [`UploadsQuery`]).
    async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>>;

    async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>>;

    /// Deletes shard files no record refers to and temp files, both older than `min_age` (what
    /// a crash between writing data and committing its record leaves). Returns (files, bytes).
    async fn sweep_orphans(&self, min_age: std::time::Duration) -> DriveResult<(u64, u64)>;
}
