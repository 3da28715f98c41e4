//! The `Drive` trait, the one storage seam, and [`LocalDrive`], a drive on a local folder.
//!
//! The object layer talks to every drive through [`Drive`], whether the drive is a folder in this
//! process or on another node. The drive API is described once ([`call`]): every operation but
//! the shard streams is a [`DriveCall`] through [`Drive::call`], so a wrapper ([`Metered`],
//! [`FaultyDrive`], the object layer's time-outs, the RPC layer's fencing and remote drives) is
//! one method, and callers use the typed methods of [`DriveOps`]. A drive stores:
//! - its format record (`.strata.sys/format.json`), written once when the deployment is formed;
//! - a metadata index (redb, `.strata.sys/index.redb`): buckets, one [`ObjectRecord`] per object
//!   of its set holding its current version, a row per older version (`versions`: an object's
//!   history costs nothing to reads and listings of current objects), and the framed shard bytes
//!   of inline (small) versions;
//! - shard files for larger versions (`.strata.sys/data/xx/<data id>`), written first under
//!   `.strata.sys/tmp/` and moved into place by [`DriveCall::CommitVersion`].
//!
//! Invariants: a version becomes visible only when its record is committed to the index, after its
//! shard file is durable and in place; data of a version is deleted only after the record that
//! dropped it is committed. So a crash leaves the old version or the new one, never a mix; what
//! it can leave is a temp file (swept at open) or an unreferenced shard file (swept by the scanner).
//! Metadata changes that arrive together share one durable commit (group commit).
//!
//! For tests, [`FaultyDrive`] wraps any drive and fails, slows, hangs or cuts short its operations.

pub mod call;
mod commit_log;
pub mod faulty;
pub mod faulty_fs;
pub mod frame;
pub mod fs;
mod index;
mod local;
mod metered;
pub mod sim;
mod snapshot;
mod sync_watch;
mod versions;

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use strata_erasure::bitrot;
use strata_meta::{DecodeError, ObjectRecord};
use uuid::Uuid;

pub use call::{CallContext, DriveCall, DriveOps, DriveReply, Settled};
pub use faulty::FaultyDrive;
pub use index::{Checkpoints, CommitStats};
pub use local::{LocalDrive, OpenError, OpenOptions};
pub use metered::{DriveObserver, Metered};
pub use versions::{version_rank, RANK_LEN};

/// A drive's commit counters, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitTotals {
    /// Durable metadata transactions (group commits).
    pub commits: u64,
    /// Changes those commits applied.
    pub changes: u64,
    /// Changes refused because their operation had ended before they arrived (late ones).
    pub refused_late: u64,
    /// Changes whose operation never ended, settled by the drive after `PENDING_OP_MAX`.
    pub abandoned_ops: u64,
}

/// What went wrong on one drive. Corruption is a value, not a panic: it triggers healing.
///
/// The first six say the drive could not serve this call at all (see
/// [`DriveError::is_unavailable`]): the quorum rules count such a drive as missing, and healing
/// waits for it to come back rather than rewriting it now.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The drive cannot be reached: it was offline at start, its node is down or refuses our
    /// requests, it is not online on its node, or it lost its format (wiped in place).
    #[error("drive unreachable: {0}")]
    Unreachable(String),
    /// No answer within the time allowed (a stalled device, a hung mount, a node that takes
    /// requests and never replies).
    #[error("{op} did not answer within {after:?}")]
    TimedOut { op: String, after: std::time::Duration },
    /// The drive or its node answered outside the protocol: an answer of the wrong kind, one
    /// that does not decode, a call the node refused as malformed.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The drive's own machinery stopped (its metadata writer, a blocking task), or a shard
    /// stream was used after it failed or ended.
    #[error("drive stopped: {0}")]
    Stopped(String),
    /// The drive does not hold what the call needs (the object's current version), so it was
    /// not asked: it missed a write, and a heal brings it up to date.
    #[error("drive is stale: {0}")]
    Stale(String),
    /// The drive refused the call as asked: a format of a drive that is not blank, a change
    /// without its operation id.
    #[error("refused: {0}")]
    Refused(String),
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
    /// A new version was refused because the drive holds a version of the object stamped at or
    /// after it (`newest`): committed, it would not have been the current version. The caller,
    /// under the object's lock, stamps the version again after `newest`.
    #[error("refused: the drive holds a version stamped {newest}, not older than the new one")]
    NotNewest { newest: u64 },
    /// A conditional write's new version was refused because the drive holds a version stamped
    /// `newest`, after the state the write's condition was checked against: another write
    /// came between the check and the commit (a stale lock holder's late commit, say).
    #[error(
        "refused: the object changed after the write's condition was checked (a version stamped {newest})"
    )]
    ConditionChanged { newest: u64 },
}

impl DriveError {
    /// The drive could not serve the call at all (unreachable, timed out, out of protocol,
    /// stopped, stale or refusing): for the quorum rules, a missing drive.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            DriveError::Unreachable(_)
                | DriveError::TimedOut { .. }
                | DriveError::Protocol(_)
                | DriveError::Stopped(_)
                | DriveError::Stale(_)
                | DriveError::Refused(_)
        )
    }

    /// The same error again (an I/O error keeps its kind and message): for an answer shared by
    /// several callers, such as a batch of calls that failed as one.
    pub fn duplicate(&self) -> DriveError {
        use DriveError as E;
        match self {
            E::Unreachable(m) => E::Unreachable(m.clone()),
            E::TimedOut { op, after } => E::TimedOut { op: op.clone(), after: *after },
            E::Protocol(m) => E::Protocol(m.clone()),
            E::Stopped(m) => E::Stopped(m.clone()),
            E::Stale(m) => E::Stale(m.clone()),
            E::Refused(m) => E::Refused(m.clone()),
            E::NotFound => E::NotFound,
            E::BucketNotFound => E::BucketNotFound,
            E::BucketExists => E::BucketExists,
            E::BucketNotEmpty => E::BucketNotEmpty,
            E::Corrupt(m) => E::Corrupt(m.clone()),
            E::Io(e) => E::Io(std::io::Error::new(e.kind(), e.to_string())),
            E::Index(m) => E::Index(m.clone()),
            E::Exhausted(m) => E::Exhausted(m.clone()),
            E::NotNewest { newest } => E::NotNewest { newest: *newest },
            E::ConditionChanged { newest } => E::ConditionChanged { newest: *newest },
            E::Fenced(m) => E::Fenced(m.clone()),
        }
    }
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
/// placement hash) and the holder's id. A drive handle carrying it ([`fenced`]) sends it with
/// each change that needs the lock ([`DriveCall::is_fenced`]), and the drive's node refuses the
/// change ([`DriveError::Fenced`]) when its own lock table shows another live holder of the
/// resource.
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
    /// The filesystem's device number on the drive's node (`st_dev` of the drive's folder), so
    /// drives sharing one filesystem count its space once; 0 when unknown.
    #[serde(default)]
    pub device: u64,
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

    /// Reads the frame at `offset` holding `shard_size` shard bytes, checks its bitrot hash
    /// (under `key`, the version's), and returns the shard bytes (a slice of the frame, no copy).
    /// A bad hash is `Corrupt`.
    async fn read_frame(&self, offset: u64, shard_size: usize, key: bitrot::Key) -> DriveResult<Bytes> {
        let frame = self.read_at(offset, bitrot::HASH_SIZE + shard_size).await?;
        let range =
            bitrot::verify_with(key, &frame, shard_size).map_err(|e| DriveError::Corrupt(e.to_string()))?;
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
///
/// Every operation but the shard streams is one [`DriveCall`] through [`Drive::call`] (typed
/// methods for callers: [`DriveOps`]); shard files are written and read through their own
/// streams.
#[async_trait]
pub trait Drive: Send + Sync + Debug {
    /// Where the drive is, for logs and errors.
    fn endpoint(&self) -> &str;

    /// The node that serves the drive; `None` for a drive of this process. Reads that need
    /// only some drives pick this process's own first, then whole nodes.
    fn node(&self) -> Option<&str> {
        None
    }

    /// One operation, in its context (see [`call`]).
    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply>;

    /// A new temp shard file, moved into place by the commit of its version or part.
    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>>;

    /// Opens shard file `data_id` for reading. `first`, when given, is the read (offset and
    /// length) that will come first: a drive across the network makes it in the same round trip
    /// as the open and answers it from what it brought (a drive here ignores it).
    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>>;

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        self.open_shard_file_first(data_id, None).await
    }

    /// Commit counters for metrics, when the drive keeps them.
    fn commit_totals(&self) -> Option<crate::CommitTotals> {
        None
    }
}

/// `drive` with its changes made under the lock `fence` names: the changes that need the lock
/// ([`DriveCall::is_fenced`]) carry it to the node that owns the drive, which refuses them while
/// another holder has the lock there. A drive no node fences (one process alone) ignores it.
pub fn fenced(drive: Arc<dyn Drive>, fence: Fence) -> Arc<dyn Drive> {
    Arc::new(Fenced { inner: drive, fence })
}

/// See [`fenced`].
#[derive(Debug)]
struct Fenced {
    inner: Arc<dyn Drive>,
    fence: Fence,
}

#[async_trait]
impl Drive for Fenced {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn node(&self) -> Option<&str> {
        self.inner.node()
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        self.inner.call(CallContext { fence: Some(self.fence), ..ctx }, call).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.inner.create_shard_file(data_id).await
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        self.inner.open_shard_file_first(data_id, first).await
    }

    fn commit_totals(&self) -> Option<crate::CommitTotals> {
        self.inner.commit_totals()
    }
}
