//! A drive on a local folder: files for shards, redb for metadata.
//!
//! Blocking filesystem and index calls run on tokio's blocking pool, never on the async
//! core threads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use strata_meta::{DataLocation, ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

use crate::fs::{write_file_durably, FileMeta, Fs, RealFs};
use crate::index::{Change, Index, IndexOpenError};
use crate::sync_watch::{Watched, WriteStop};

mod ops;
mod shard;
use crate::{
    CallContext, DiskInfo, Drive, DriveCall, DriveError, DriveReply, DriveResult, ListEntry, ListQuery,
    ShardReader, ShardWriter, UploadsQuery,
};
use ops::{Ops, PendingPart};
use shard::{AbandonedCreate, CreateClaim, LocalShardReader, LocalShardWriter};
use strata_types::limits::DRIVE_ONLINE_RECHECK;

const SYS_DIR: &str = ".strata.sys";
const FORMAT_FILE: &str = "format.json";

/// Path of a committed shard file: `data/xx/<id>`, fanned out over 256 folders.
pub(crate) fn data_path(data_dir: &Path, id: Uuid) -> PathBuf {
    let s = id.simple().to_string();
    data_dir.join(&s[..2]).join(s)
}

/// A drive on a local folder.
pub struct LocalDrive {
    endpoint: String,
    fs: Arc<dyn Fs>,
    sys: SysDir,
    tmp: PathBuf,
    data: PathBuf,
    /// Swapped for a new one when a wiped drive is formatted again in its slot.
    index: std::sync::RwLock<Arc<Index>>,
    /// Changes committed and not yet finished, and operations ended before their change came.
    ops: Mutex<Ops>,
    /// Changes refused because their operation ended before they arrived.
    refused_late: std::sync::atomic::AtomicU64,
    /// Pending changes whose operation never ended (see [`OpenOptions::pending_op_max`]).
    abandoned_ops: std::sync::atomic::AtomicU64,
    pending_op_max: std::time::Duration,
    /// Set when a sync failed: the drive then takes no change until [`Self::check_writes`].
    write_stop: Arc<WriteStop>,
    /// The index was corrupt at open and started empty: the drive needs refilling.
    index_rebuilt: bool,
    /// When its index is checkpointed.
    checkpoints: crate::index::Checkpoints,
    /// The drive's folder, held under an exclusive lock while the drive is open.
    _lock: Box<dyn Send + Sync>,
}

/// The last sighting of a drive's format record, as ms since an arbitrary process-wide instant.
#[derive(Default)]
struct OnlineSeen(std::sync::atomic::AtomicU64);

impl OnlineSeen {
    fn now_ms() -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        // +1: zero means never seen.
        START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64 + 1
    }

    fn fresh(&self) -> bool {
        let seen = self.0.load(std::sync::atomic::Ordering::Relaxed);
        seen != 0 && Self::now_ms().saturating_sub(seen) < DRIVE_ONLINE_RECHECK.as_millis() as u64
    }

    fn record(&self) {
        self.0.store(Self::now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    fn forget(&self) {
        self.0.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A drive's system folder, with the last sighting of its format record: every check of it,
/// on any thread, shares the sighting, and a failed one forgets it, so record reads stop
/// trusting the drive as soon as anything finds it gone.
#[derive(Clone)]
struct SysDir {
    path: PathBuf,
    seen: Arc<OnlineSeen>,
}

impl std::ops::Deref for SysDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

/// How to open a local drive.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// A metadata index that does not open is renamed aside and an empty one started (the drive
    /// is then refilled by healing). Off, such a drive is refused with
    /// [`OpenError::IndexCorrupt`] and nothing is changed: the caller decides, knowing whether
    /// the rest of the drive's set can refill it.
    pub set_aside_corrupt_index: bool,
    /// When the index is checkpointed (the default, but for tests).
    pub index_checkpoints: crate::index::Checkpoints,
    /// How long a change waits for its operation's end before the drive settles it itself
    /// (`None`: [`PENDING_OP_MAX`](strata_types::limits::PENDING_OP_MAX); tests set it short).
    pub pending_op_max: Option<std::time::Duration>,
}

/// Why a local drive did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process (or this one, given the drive twice) holds the drive's lock.
    #[error("drive {0} is in use by another process (is another strata server running on it?); nothing on it was changed")]
    InUse(String),
    /// The metadata index does not open; nothing was changed.
    #[error("the metadata index of drive {drive} does not open: {why}")]
    IndexCorrupt { drive: String, why: String },
    #[error("drive {drive}: {source}")]
    Drive {
        drive: String,
        #[source]
        source: DriveError,
    },
}

/// Opens a drive's index, telling a corrupt index (or a panicking reader) from an I/O error and
/// from an index another process holds open.
fn open_index(
    fs: &Arc<dyn Fs>,
    path: &Path,
    data: &Path,
    endpoint: &str,
    checkpoints: crate::index::Checkpoints,
) -> Result<Index, OpenError> {
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Index::open(fs.clone(), path, data.to_path_buf(), endpoint, checkpoints)
    }));
    let drive = endpoint.to_owned();
    match opened {
        Ok(Ok(index)) => Ok(index),
        Ok(Err(IndexOpenError::InUse)) => Err(OpenError::InUse(drive)),
        Ok(Err(IndexOpenError::Io(e))) => Err(OpenError::Drive { drive, source: DriveError::from(e) }),
        Ok(Err(IndexOpenError::Corrupt(why))) => Err(OpenError::IndexCorrupt { drive, why }),
        Err(_) => Err(OpenError::IndexCorrupt { drive, why: "the index reader panicked".to_owned() }),
    }
}

impl std::fmt::Debug for LocalDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalDrive({})", self.endpoint)
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> DriveResult<T> + Send + 'static) -> DriveResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DriveError::Stopped(format!("blocking task failed: {e}")))?
}

impl LocalDrive {
    /// The index was found corrupt when the drive opened and was started empty.
    pub fn index_was_rebuilt(&self) -> bool {
        self.index_rebuilt
    }

    /// Changes committed and not yet finished by [`DriveCall::FinishOp`](crate::DriveCall::FinishOp) (for tests: every commit
    /// is finished, kept or undone, so this returns to its baseline once requests are done).
    pub fn pending_count(&self) -> usize {
        self.ops.lock().map(|o| o.versions.len() + o.parts.len()).unwrap_or(0)
    }

    /// Refuses every change while writes are stopped: a sync failed (see [`crate::sync_watch`]),
    /// or the metadata index failed to commit (it then needs the server restarted to reopen it).
    fn writable(&self) -> DriveResult<()> {
        if let Some(why) = self.write_stop.reason() {
            return Err(DriveError::Stopped(format!(
                "writes to {} stopped: {why}; they resume once a check of the drive passes",
                self.endpoint
            )));
        }
        let failed = self.index().stats().failed_commits.load(std::sync::atomic::Ordering::Relaxed);
        if failed > 0 {
            return Err(DriveError::Stopped(format!(
                "writes to {} stopped: a commit of its metadata index failed; restart the server to reopen the index",
                self.endpoint
            )));
        }
        Ok(())
    }

    /// Why this drive takes no writes now, if it does not.
    pub fn writes_stopped(&self) -> Option<String> {
        self.writable().err().map(|e| e.to_string())
    }

    /// Checks a drive whose writes stopped on a failed sync: a probe file written and synced
    /// with its folder, and a commit of the metadata index. Writes resume when both pass (the
    /// caller then heals the drive: it missed the writes made meanwhile). A drive whose index
    /// failed to commit stays stopped: its index is not used again until the server restarts.
    /// Answers `None` when writes were not stopped, else whether they resumed. Blocking.
    pub fn check_writes(&self) -> Option<bool> {
        self.writes_stopped()?;
        if self.index().stats().failed_commits.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return Some(false);
        }
        // Through the watched filesystem: a sync failing again keeps writes stopped.
        let probe = self.sys.join("write-check");
        let passed = write_file_durably(self.fs.as_ref(), &probe, b"strata write check").is_ok()
            && self.fs.remove_file(&probe).is_ok()
            && self.fs.sync_dir(&self.sys).is_ok()
            && self.index().probe_commit().is_ok();
        if passed {
            self.write_stop.resume();
            tracing::warn!(drive = %self.endpoint, "a check of the drive passed: writes resume");
        }
        Some(passed)
    }

    fn index(&self) -> Arc<Index> {
        match self.index.read() {
            Ok(i) => i.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The drive's folder exists and is empty: a wiped or new drive put in this slot (a missing
    /// folder is not blank: it may be an unmounted mount point). A drive wiped while the server
    /// ran may keep a state file written in the middle of the wipe, in an otherwise empty
    /// system folder (no format record, no index, no data): that is blank too, or the drive
    /// would wait for an operator forever.
    pub fn root_is_blank(&self) -> bool {
        let Some(root) = self.sys.parent() else { return false };
        let Ok(entries) = self.fs.read_dir(root) else { return false };
        match entries.as_slice() {
            [] => true,
            [only] if self.sys.file_name().is_some_and(|n| n == only.name.as_str()) => {
                self.sys_holds_only_leftovers()
            }
            _ => false,
        }
    }

    /// The system folder holds nothing but state files and empty `tmp`/`data` folders.
    fn sys_holds_only_leftovers(&self) -> bool {
        let Ok(entries) = self.fs.read_dir(&self.sys) else { return false };
        entries.iter().all(|e| match (e.meta.is_file, e.name.as_str()) {
            // A commit log without its index is of no use to any index.
            (true, name) => name.starts_with("state-") || crate::commit_log::is_log_file(name),
            (false, name @ ("tmp" | "data")) => {
                self.fs.read_dir(&self.sys.join(name)).is_ok_and(|inner| inner.is_empty())
            }
            (false, _) => false,
        })
    }

    /// Formats a blank drive again in its slot while the server runs: its folders, a new empty
    /// index, and `format` as its format record. Refuses a drive that is not blank.
    pub fn reinitialize(&self, format: &[u8]) -> DriveResult<()> {
        if !self.root_is_blank() {
            return Err(DriveError::Refused(format!("{} is not blank", self.endpoint)));
        }
        make_folders(self.fs.as_ref(), &self.sys)?;
        let path = self.sys.join("index.redb");
        let index = Index::open(self.fs.clone(), &path, self.data.clone(), &self.endpoint, self.checkpoints)?;
        write_file_durably(self.fs.as_ref(), &self.sys.join(FORMAT_FILE), format)?;
        if let Ok(mut ops) = self.ops.lock() {
            ops.clear();
        }
        match self.index.write() {
            Ok(mut i) => *i = Arc::new(index),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(index),
        }
        Ok(())
    }

    /// Opens the drive at `root` (see [`LocalDrive::open_with`]); a corrupt index is refused, not
    /// set aside.
    pub fn open(root: &Path) -> Result<Self, OpenError> {
        Self::open_with(root, OpenOptions::default())
    }

    /// Opens the drive at `root`. First it takes the drive's lock (an exclusive `flock` on the
    /// drive's folder, held while the drive is open), before anything on the drive is read or
    /// changed: a drive another process (or this one) already serves is refused as in use, and
    /// nothing on it is touched. Then it creates its folders when blank and sweeps the temp files
    /// a crash left (no other writer can hold them: we hold the lock). Call from a blocking
    /// context (start-up).
    pub fn open_with(root: &Path, options: OpenOptions) -> Result<Self, OpenError> {
        Self::open_on(Arc::new(RealFs), root, options)
    }

    /// Opens the drive at `root` on the filesystem `fs` (the real one, or a simulated one in
    /// crash tests).
    pub fn open_on(fs: Arc<dyn Fs>, root: &Path, options: OpenOptions) -> Result<Self, OpenError> {
        let endpoint = root.display().to_string();
        let write_stop = Arc::new(WriteStop::default());
        let fs: Arc<dyn Fs> =
            Arc::new(Watched { inner: fs, stop: write_stop.clone(), endpoint: endpoint.clone() });
        let io =
            |e: std::io::Error| OpenError::Drive { drive: endpoint.clone(), source: DriveError::from(e) };
        create_dir_durably(fs.as_ref(), root).map_err(io)?;
        let Some(lock) = fs.lock(root).map_err(io)? else {
            return Err(OpenError::InUse(endpoint));
        };
        let sys = root.join(SYS_DIR);
        let tmp = sys.join("tmp");
        let data = sys.join("data");
        make_folders(fs.as_ref(), &sys).map_err(io)?;
        // Temp files are writes that never committed: nothing references them.
        for entry in fs.read_dir(&tmp).map_err(io)? {
            let _ = fs.remove_file(&tmp.join(entry.name));
        }
        let path = sys.join("index.redb");
        let checkpoints = options.index_checkpoints;
        let (index, index_rebuilt) = match open_index(&fs, &path, &data, &endpoint, checkpoints) {
            Ok(index) => (index, false),
            Err(OpenError::IndexCorrupt { why, .. }) if options.set_aside_corrupt_index => {
                // Keep the corrupt index for inspection and start an empty one; the drive keeps
                // its slot and healing refills it from its set.
                let aside = sys.join(format!("index.redb.corrupt-{}", strata_types::time::now_nanos()));
                tracing::error!(drive = %endpoint, error = %why, aside = %aside.display(), "metadata index is corrupt: set aside, starting empty");
                fs.rename(&path, &aside).map_err(io)?;
                fs.sync_dir(&sys).map_err(io)?;
                (open_index(&fs, &path, &data, &endpoint, checkpoints)?, true)
            }
            Err(e) => return Err(e),
        };
        // The index file may be new: its name must outlive a power cut like its contents.
        fs.sync_dir(&sys).map_err(io)?;
        Ok(Self {
            endpoint,
            fs,
            sys: SysDir { path: sys, seen: Arc::default() },
            tmp,
            data,
            index: std::sync::RwLock::new(Arc::new(index)),
            ops: Mutex::new(Ops::default()),
            refused_late: Default::default(),
            abandoned_ops: Default::default(),
            pending_op_max: options.pending_op_max.unwrap_or(strata_types::limits::PENDING_OP_MAX),
            write_stop,
            index_rebuilt,
            checkpoints,
            _lock: lock,
        })
    }

    /// Group-commit counters of this drive's index.
    pub fn commit_stats(&self) -> Arc<crate::index::CommitStats> {
        self.index().stats().clone()
    }

    /// A drive whose folder vanished is offline, even though open files still work.
    fn ensure_online(fs: &dyn Fs, sys: &SysDir) -> DriveResult<()> {
        match fs.metadata(&sys.join(FORMAT_FILE)) {
            Ok(_) => {
                sys.seen.record();
                Ok(())
            }
            Err(e) => {
                sys.seen.forget();
                Err(DriveError::Unreachable(format!(
                    "{}: no format record ({e}): a wiped or new drive, formatted again in its slot shortly",
                    sys.display()
                )))
            }
        }
    }

    /// [`Self::ensure_online`] for record reads: one `stat` per [`DRIVE_ONLINE_RECHECK`] unless a
    /// check failed meanwhile. A read in that window from a drive just wiped still sees the records its open index holds, which
    /// are as true as a moment before (and every shard block is bitrot-checked anyway).
    fn ensure_online_for_read(&self) -> DriveResult<()> {
        if self.sys.seen.fresh() {
            return Ok(());
        }
        Self::ensure_online(self.fs.as_ref(), &self.sys)
    }

    /// (fs, sys) for a blocking closure.
    fn at(&self) -> (Arc<dyn Fs>, SysDir) {
        (self.fs.clone(), self.sys.clone())
    }
}

/// The folders of `files`, each once.
fn parents(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = files.iter().filter_map(|f| f.parent().map(Path::to_path_buf)).collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Creates `path` and its missing parents, and makes each new name durable in its parent.
fn create_dir_durably(fs: &dyn Fs, path: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = path.ancestors().take_while(|p| fs.metadata(p).is_err()).collect();
    fs.create_dir_all(path)?;
    for dir in missing.iter().rev() {
        if let Some(parent) = dir.parent() {
            fs.sync_dir(if parent.as_os_str().is_empty() { Path::new(".") } else { parent })?;
        }
    }
    Ok(())
}

/// Creates the drive's folders (temp, and the 256 fan-out folders of data) where missing, and
/// makes the new names durable: a shard file renamed into a folder whose own name a power cut
/// then forgets would be lost with it.
fn make_folders(fs: &dyn Fs, sys: &Path) -> std::io::Result<()> {
    let (tmp, data) = (sys.join("tmp"), sys.join("data"));
    let mut created = fs.metadata(&tmp).is_err();
    fs.create_dir_all(&tmp)?;
    for i in 0..=255u8 {
        let dir = data.join(format!("{i:02x}"));
        if fs.metadata(&dir).is_err() {
            fs.create_dir_all(&dir)?;
            created = true;
        }
    }
    if created {
        fs.sync_dir(&data)?;
        fs.sync_dir(sys)?;
        if let Some(root) = sys.parent() {
            fs.sync_dir(root)?;
        }
    }
    Ok(())
}

/// The drive API's operations on a local folder ([`Drive::call`] dispatches to them).
impl LocalDrive {
    pub async fn disk_info(&self) -> DriveResult<DiskInfo> {
        let (fs, sys) = self.at();
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            let (total_bytes, free_bytes, total_inodes, free_inodes) = fs.capacity(&sys)?;
            let device = fs.device(&sys);
            Ok(DiskInfo { total_bytes, free_bytes, total_inodes, free_inodes, device })
        })
        .await
    }

    pub async fn read_format(&self) -> DriveResult<Option<Vec<u8>>> {
        let (fs, path) = (self.fs.clone(), self.sys.join(FORMAT_FILE));
        blocking(move || match fs.read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        })
        .await
    }

    pub async fn write_format(&self, format: Vec<u8>) -> DriveResult<()> {
        let (fs, sys) = self.at();
        blocking(move || Ok(write_file_durably(fs.as_ref(), &sys.join(FORMAT_FILE), &format)?)).await
    }

    pub async fn read_state(&self, name: &str) -> DriveResult<Option<Vec<u8>>> {
        let path = self.sys.join(format!("state-{name}.json"));
        let (fs, sys) = self.at();
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            match fs.read(&path) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    pub async fn write_state(&self, name: &str, bytes: Vec<u8>) -> DriveResult<()> {
        let ((fs, sys), name) = (self.at(), name.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            let path = sys.join(format!("state-{name}.json"));
            write_file_durably(fs.as_ref(), &path, &bytes)?;
            // Wiped while we wrote: leave nothing behind in the emptied drive (it would no
            // longer look blank, and would not be formatted again).
            if let Err(e) = Self::ensure_online(fs.as_ref(), &sys) {
                let _ = fs.remove_file(&path);
                return Err(e);
            }
            Ok(())
        })
        .await
    }

    pub async fn make_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        self.index().apply(Change::MakeBucket { bucket: bucket.to_owned(), record }).await.map(drop)
    }

    pub async fn update_bucket(&self, bucket: &str, record: Vec<u8>) -> DriveResult<()> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        self.index().apply(Change::UpdateBucket { bucket: bucket.to_owned(), record }).await.map(drop)
    }

    pub async fn delete_bucket(&self, bucket: &str) -> DriveResult<()> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        self.index().apply(Change::DeleteBucket { bucket: bucket.to_owned() }).await.map(drop)
    }

    pub async fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        let (index, (fs, sys)) = (self.index(), self.at());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.list_buckets()
        })
        .await
    }

    pub async fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        let (index, (fs, sys), bucket) = (self.index(), self.at(), bucket.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.stat_bucket(&bucket)
        })
        .await
    }

    pub async fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        // On the calling task, not the blocking pool: a record read is a lookup in redb's page
        // cache almost always (hot metadata; 64 MiB cache per drive), and handing it to another
        // thread cost more than the read (GET 4 KiB: 8,000 → 15,000 objects/s on 2 cores). A
        // cache miss blocks this runtime worker for one disk read.
        self.ensure_online_for_read()?;
        self.index().read_record(bucket, key, inline)
    }

    pub async fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        // Older versions are a range scan of the object's rows: on the blocking pool.
        let (index, (fs, sys)) = (self.index(), self.at());
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.read_version(&bucket, &key, version_id, inline)
        })
        .await
    }

    pub async fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        // As `read_record`: a cached lookup, cheaper here than on another thread.
        self.index().read_inline(data_id)
    }

    pub async fn abort_shard_file(&self, data_id: Uuid) {
        let (fs, path) = (self.fs.clone(), self.tmp.join(data_id.simple().to_string()));
        let _ = blocking(move || Ok(fs.remove_file(&path)?)).await;
    }

    pub async fn commit_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.commit(bucket, key, version, inline, op, (false, None)).await
    }

    /// [`DriveCall::CommitVersion`]: with `newest`, refused ([`DriveError::NotNewest`]) when the
    /// drive holds a version stamped at or after this one; its data then goes back to temp,
    /// for the commit of the same version stamped again. With `checked` (a conditional write),
    /// refused ([`DriveError::ConditionChanged`]) when the drive holds a version stamped after it.
    async fn commit(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        inline: Option<Bytes>,
        op: Uuid,
        (newest, checked): (bool, Option<u64>),
    ) -> DriveResult<()> {
        self.refuse_ended(op)?;
        let _changing = self.begin_change(bucket, key);
        let moved: Vec<(PathBuf, PathBuf)> = match version.data {
            DataLocation::File(id) => {
                let from = self.tmp.join(id.simple().to_string());
                let to = data_path(&self.data, id);
                let (fs, sys) = self.at();
                // The rename is made durable (a sync of its folder, shared by the batch) before
                // the index commits the record that points at it.
                blocking(move || {
                    Self::ensure_online(fs.as_ref(), &sys)?;
                    match fs.rename(&from, &to) {
                        // Two heals of one version rebuilt this data id here, and the other's
                        // commit moved the whole file in first.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound && fs.metadata(&to).is_ok() => {}
                        r => r?,
                    }
                    Ok(vec![(from, to)])
                })
                .await?
            }
            DataLocation::Multipart(_) => {
                // Parts are committed one by one as they are uploaded; a healed version brings
                // its rebuilt part files in temp, moved into place here.
                let ids: Vec<Uuid> = version.parts.iter().map(|p| p.data_id).collect();
                let (tmp, data, (fs, sys)) = (self.tmp.clone(), self.data.clone(), self.at());
                blocking(move || {
                    Self::ensure_online(fs.as_ref(), &sys)?;
                    let mut moved = Vec::new();
                    for id in ids {
                        let from = tmp.join(id.simple().to_string());
                        if fs.metadata(&from).is_ok() {
                            let to = data_path(&data, id);
                            fs.rename(&from, &to)?;
                            moved.push((from, to));
                        }
                    }
                    Ok(moved)
                })
                .await?
            }
            DataLocation::Inline(_) => {
                Self::ensure_online(self.fs.as_ref(), &self.sys)?;
                Vec::new()
            }
        };
        let change = Change::PutVersion {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            version: Box::new(version.clone()),
            inline,
            newest,
            checked,
        };
        let placed: Vec<PathBuf> = moved.iter().map(|(_, to)| to.clone()).collect();
        match self.index().apply_after_syncing(change, parents(&placed)).await {
            Ok(displaced) => self.remember(op, bucket, key, Some(version), displaced).await,
            Err(e @ DriveError::NotNewest { .. }) => {
                // Refused before any change: the data waits in temp for the restamped commit.
                for (from, to) in moved {
                    let _ = self.fs.rename(&to, &from);
                }
                Err(e)
            }
            Err(e) => {
                for (_, path) in moved {
                    let _ = self.fs.remove_file(&path);
                }
                Err(e)
            }
        }
    }

    pub async fn update_version(
        &self,
        bucket: &str,
        key: &str,
        version: ObjectVersion,
        op: Uuid,
    ) -> DriveResult<()> {
        self.refuse_ended(op)?;
        let _changing = self.begin_change(bucket, key);
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let change = Change::PutVersion {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            version: Box::new(version.clone()),
            inline: None,
            newest: false,
            checked: None,
        };
        let displaced = self.index().apply(change).await?;
        self.remember(op, bucket, key, Some(version), displaced).await
    }

    pub async fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
    ) -> DriveResult<()> {
        self.delete_version_checked(bucket, key, version_id, op, None).await
    }

    /// [`Self::delete_version`], refused ([`DriveError::ConditionChanged`]) with `checked` when
    /// the object holds a version stamped after it.
    async fn delete_version_checked(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        op: Uuid,
        checked: Option<u64>,
    ) -> DriveResult<()> {
        self.refuse_ended(op)?;
        let _changing = self.begin_change(bucket, key);
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let change = Change::DeleteVersion { bucket: b, key: k, version_id, checked };
        let displaced = self.index().apply(change).await?;
        self.remember(op, bucket, key, None, displaced).await
    }

    pub async fn put_upload(&self, bucket: &str, upload: UploadRecord) -> DriveResult<()> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let change = Change::PutUpload { bucket: bucket.to_owned(), upload: Box::new(upload) };
        self.index().apply(change).await.map(drop)
    }

    pub async fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        let (index, (fs, sys)) = (self.index(), self.at());
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.read_upload(&bucket, &key, upload_id)
        })
        .await
    }

    /// Moves the part's shard file into place and records the part, in operation `op`: the part
    /// it replaces keeps its record-less data until [`Self::finish_op`], which frees it (kept)
    /// or puts that part back (undone), so a failed retry of a part never replaces the part
    /// acknowledged before it.
    pub async fn commit_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part: PartInfo,
        op: Uuid,
    ) -> DriveResult<()> {
        self.refuse_ended(op)?;
        let from = self.tmp.join(part.data_id.simple().to_string());
        let to = data_path(&self.data, part.data_id);
        let ((fs, sys), moved_to, index) = (self.at(), to.clone(), self.index());
        let number = part.number;
        // Read before the change: the object's lock, held by the caller, keeps the slot still.
        let old = blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            let old = index.read_part(upload_id, number)?;
            fs.rename(&from, &to)?;
            Ok(old)
        })
        .await?;
        let new_data = part.data_id;
        let change = Change::PutPart {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            upload_id,
            part: Box::new(part),
        };
        let result = self
            .index()
            .apply_after_syncing(change, parents(std::slice::from_ref(&moved_to)))
            .await
            .map(drop);
        match result {
            Ok(()) => {
                let ended = self.ops.lock().ok().and_then(|mut ops| {
                    let (bucket, key) = (bucket.to_owned(), key.to_owned());
                    let began = std::time::Instant::now();
                    ops.parts
                        .insert(op, PendingPart { bucket, key, upload_id, number, new_data, old, began });
                    ops.ended.get(&op).copied()
                });
                self.settle_late(op, ended).await
            }
            Err(e) => {
                let _ = self.fs.remove_file(&moved_to);
                Err(e)
            }
        }
    }

    pub async fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        let index = self.index();
        blocking(move || index.list_parts(upload_id)).await
    }

    pub async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        version: ObjectVersion,
        op: Uuid,
        checked: Option<u64>,
    ) -> DriveResult<()> {
        self.refuse_ended(op)?;
        let _changing = self.begin_change(bucket, key);
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let change = Change::CompleteUpload {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            upload_id,
            version: Box::new(version.clone()),
            checked,
        };
        let displaced = self.index().apply(change).await?;
        self.remember(op, bucket, key, Some(version), displaced).await
    }

    pub async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    ) -> DriveResult<()> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let change = Change::DropUpload { bucket: bucket.to_owned(), key: key.to_owned(), upload_id, keep };
        self.index().apply(change).await.map(drop)
    }

    pub async fn list_uploads(&self, bucket: &str, query: UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        let (index, (fs, sys), bucket) = (self.index(), self.at(), bucket.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.list_uploads(&bucket, &query)
        })
        .await
    }

    pub async fn list(&self, bucket: &str, query: ListQuery) -> DriveResult<Vec<ListEntry>> {
        let (index, (fs, sys), bucket) = (self.index(), self.at(), bucket.to_owned());
        blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            index.list(&bucket, &query)
        })
        .await
    }

    pub async fn sweep_orphans(&self, min_age: std::time::Duration) -> DriveResult<(u64, u64)> {
        Self::ensure_online(self.fs.as_ref(), &self.sys)?;
        let index = self.index();
        let (fs, data, tmp) = (self.fs.clone(), self.data.clone(), self.tmp.clone());
        blocking(move || {
            let old = |m: &FileMeta| m.modified.elapsed().is_ok_and(|a| a >= min_age);
            let (mut files, mut bytes) = (0u64, 0u64);
            let mut remove = |path: &Path, m: &FileMeta| {
                if fs.remove_file(path).is_ok() {
                    files += 1;
                    bytes += m.len;
                }
            };
            for entry in fs.read_dir(&tmp)? {
                if entry.meta.is_file && old(&entry.meta) {
                    remove(&tmp.join(&entry.name), &entry.meta);
                }
            }
            // Read the references after listing the files: a file committed meanwhile is young.
            let mut candidates = Vec::new();
            for dir in fs.read_dir(&data)? {
                let dir = data.join(&dir.name);
                for entry in fs.read_dir(&dir)? {
                    if let Ok(id) = Uuid::try_parse(&entry.name) {
                        if entry.meta.is_file && old(&entry.meta) {
                            candidates.push((dir.join(&entry.name), entry.meta, id));
                        }
                    }
                }
            }
            let referenced = index.referenced_files()?;
            for (path, m, id) in candidates {
                if !referenced.contains(&id) {
                    remove(&path, &m);
                }
            }
            Ok((files, bytes))
        })
        .await
    }
}

#[async_trait]
impl Drive for LocalDrive {
    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn commit_totals(&self) -> Option<crate::CommitTotals> {
        let index = self.index();
        let s = index.stats();
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        Some(crate::CommitTotals {
            commits: load(&s.commits),
            changes: load(&s.changes),
            refused_late: load(&self.refused_late),
            abandoned_ops: load(&self.abandoned_ops),
        })
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.writable()?;
        let (named, (fs, sys)) = (self.tmp.join(data_id.simple().to_string()), self.at());
        // A temp file is never shared: a write's data id is new, but two heals of one object
        // (two nodes, or a heal on read beside a scan) rebuild the same data id on the same
        // drive. The first writes `tmp/<data id>` itself; a writer that finds the name taken
        // writes a name of its own and moves it onto `tmp/<data id>` once its frames are
        // durable, so whichever file a commit moves into place is a whole one.
        let own = self.tmp.join(format!("{}.{}", data_id.simple(), Uuid::new_v4().simple()));
        // The create runs on another thread and finishes even if this call is cancelled
        // meanwhile: whichever of the two comes second removes the file nobody will write.
        let claim = Arc::new(Mutex::new(CreateClaim::default()));
        let mut guard = AbandonedCreate { claim: claim.clone(), fs: fs.clone(), armed: true };
        let (at, alt) = (named.clone(), own.clone());
        let (file, path) = blocking(move || {
            Self::ensure_online(fs.as_ref(), &sys)?;
            let (file, path) = match fs.create_new_direct(&at) {
                Ok(f) => (f, at),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => (fs.create_new_direct(&alt)?, alt),
                Err(e) => return Err(e.into()),
            };
            let mut c = claim.lock().map_err(|_| DriveError::Stopped("create claim poisoned".into()))?;
            if c.abandoned {
                let _ = fs.remove_file(&path);
            }
            c.created = Some(path.clone());
            Ok((file, path))
        })
        .await?;
        guard.armed = false;
        let rename_to = (path != named).then_some(named);
        Ok(Box::new(LocalShardWriter {
            file: Some(file),
            path,
            rename_to,
            fs: self.fs.clone(),
            finished: false,
        }))
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        _first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        let (fs, path) = (self.fs.clone(), data_path(&self.data, data_id));
        let file = blocking(move || match fs.open(&path) {
            Ok(f) => Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DriveError::NotFound),
            Err(e) => Err(e.into()),
        })
        .await?;
        Ok(Box::new(LocalShardReader { file: Arc::from(file) }))
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        if call.changes_drive() {
            self.writable()?;
        }
        use DriveCall as C;
        use DriveReply as R;
        // Each operation's future is boxed at its own size: unboxed, this future would be as large
        // as the largest of them (2.5 KB) for every call, the smallest included.
        // A change without its operation's id could never be finished (kept or undone).
        let name = call.name();
        let op = || ctx.op.ok_or_else(|| DriveError::Refused(format!("{name} without an operation id")));
        Ok(match call {
            C::DiskInfo => R::DiskInfo(Box::pin(self.disk_info()).await?),
            C::ReadFormat => R::Bytes(Box::pin(self.read_format()).await?.map(Bytes::from)),
            C::WriteFormat(f) => {
                Box::pin(self.write_format(f.into())).await?;
                R::Done
            }
            C::ReadState(name) => R::Bytes(Box::pin(self.read_state(&name)).await?.map(Bytes::from)),
            C::WriteState(name, b) => {
                Box::pin(self.write_state(&name, b.into())).await?;
                R::Done
            }
            C::MakeBucket(b, r) => {
                Box::pin(self.make_bucket(&b, r.into())).await?;
                R::Done
            }
            C::DeleteBucket(b) => {
                Box::pin(self.delete_bucket(&b)).await?;
                R::Done
            }
            C::UpdateBucket(b, r) => {
                Box::pin(self.update_bucket(&b, r.into())).await?;
                R::Done
            }
            C::ListBuckets => R::Buckets(
                Box::pin(self.list_buckets()).await?.into_iter().map(|(n, r)| (n, Bytes::from(r))).collect(),
            ),
            C::StatBucket(b) => R::Bytes(Some(Bytes::from(Box::pin(self.stat_bucket(&b)).await?))),
            C::ReadRecord { bucket, key, inline } => {
                let (r, b) = Box::pin(self.read_record(&bucket, &key, inline)).await?;
                R::Record(r, b)
            }
            C::ReadSettled { bucket, key, inline } => {
                self.ensure_online_for_read()?;
                R::Settled(self.read_settled_now(&bucket, &key, inline)?)
            }
            C::ReadVersion { bucket, key, version_id, inline } => {
                let (r, b) = Box::pin(self.read_version(&bucket, &key, version_id, inline)).await?;
                R::Record(r, b)
            }
            C::ReadInline(id) => R::Bytes(Some(Box::pin(self.read_inline(id)).await?)),
            C::AbortShard(id) => {
                Box::pin(self.abort_shard_file(id)).await;
                R::Done
            }
            C::CommitVersion { bucket, key, version, inline, newest, checked } => {
                let op = op()?;
                Box::pin(self.commit(&bucket, &key, version, inline, op, (newest, checked))).await?;
                R::Done
            }
            C::UpdateVersion { bucket, key, version } => {
                let op = op()?;
                Box::pin(self.update_version(&bucket, &key, version, op)).await?;
                R::Done
            }
            C::DeleteVersion { bucket, key, version_id, checked } => {
                let op = op()?;
                Box::pin(self.delete_version_checked(&bucket, &key, version_id, op, checked)).await?;
                R::Done
            }
            C::FinishOp { keep } => {
                let op = op()?;
                Box::pin(self.finish_op(op, keep)).await;
                R::Done
            }
            C::PutUpload { bucket, upload } => {
                Box::pin(self.put_upload(&bucket, upload)).await?;
                R::Done
            }
            C::ReadUpload { bucket, key, upload_id } => {
                R::Upload(Box::new(Box::pin(self.read_upload(&bucket, &key, upload_id)).await?))
            }
            C::CommitPart { bucket, key, upload_id, part } => {
                let op = op()?;
                Box::pin(self.commit_part(&bucket, &key, upload_id, part, op)).await?;
                R::Done
            }
            C::ListParts(id) => R::Parts(Box::pin(self.list_parts(id)).await?),
            C::CompleteUpload { bucket, key, upload_id, version, checked } => {
                let op = op()?;
                Box::pin(self.complete_upload(&bucket, &key, upload_id, version, op, checked)).await?;
                R::Done
            }
            C::DropUpload { bucket, key, upload_id, keep } => {
                Box::pin(self.drop_upload(&bucket, &key, upload_id, keep)).await?;
                R::Done
            }
            C::ListUploads { bucket, query } => {
                R::Uploads(Box::pin(self.list_uploads(&bucket, query)).await?)
            }
            C::List { bucket, query } => R::List(Box::pin(self.list(&bucket, query)).await?),
            C::SweepOrphans { min_age } => {
                let (files, bytes) = Box::pin(self.sweep_orphans(min_age)).await?;
                R::Swept(files, bytes)
            }
        })
    }
}
