//! The per-drive metadata index (redb) and its group-commit writer.
//!
//! Writes go to one writer thread per drive through a bounded queue. The thread takes every
//! change that is pending (up to [`GROUP_COMMIT_BATCH_MAX`]), applies them in one transaction and
//! commits once, durably: N concurrent PUTs on a drive cost one sync, not N. Each change is
//! checked before it mutates anything, so one failing change does not spoil its batch.
//! Reads use their own read transactions and never wait for the writer.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use strata_meta::{DataLocation, ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use strata_types::limits::{
    DRIVE_COMMIT_QUEUE_DEPTH, GROUP_COMMIT_BATCH_MAX, GROUP_COMMIT_LINGER, INDEX_CACHE_SIZE,
    INDEX_CHECKPOINT_INTERVAL, INDEX_LOG_FRAME_MAX, INDEX_LOG_SIZE_MAX,
};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::commit_log::{self, AppendError, CommitLog, LOG_FORMAT};
use crate::fs::Fs;
use crate::snapshot::Snapshots;
use crate::versions::{self, VERSIONS};
use crate::{DriveError, DriveResult, ListEntry, ListQuery};

mod uploads;
use uploads::apply_upload_change;

const BUCKETS: TableDefinition<&str, &[u8]> = TableDefinition::new("buckets");
/// Key: bucket bytes, 0x00, object key bytes. Bucket names never hold 0x00, so this sorts by
/// bucket, then by key in byte order (the S3 listing order).
pub(crate) const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
/// Framed shard bytes of inline versions, by data id.
pub(crate) const INLINE: TableDefinition<u128, &[u8]> = TableDefinition::new("inline");
/// Multipart uploads in progress. Key: bucket, 0x00, object key, 0x00, upload id (16 bytes).
const UPLOADS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("uploads");
/// Parts of uploads in progress, by (upload id, part number).
const PARTS: TableDefinition<(u128, u32), &[u8]> = TableDefinition::new("parts");
/// The index's own state: [`META_LOG`], the id of its commit log, and [`META_APPLIED`], the
/// number of the last batch applied (see [`crate::commit_log`]).
const META: TableDefinition<&str, u128> = TableDefinition::new("meta");
const META_LOG: &str = "log";
const META_APPLIED: &str = "applied";

fn upload_key(bucket: &str, key: &str, upload_id: Uuid) -> Vec<u8> {
    let mut k = object_key(bucket, key);
    k.push(0);
    k.extend_from_slice(upload_id.as_bytes());
    k
}

fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + 1 + key.len());
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    k
}

/// The smallest byte string greater than every string starting with `prefix`
/// (`None` when there is none).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

pub(crate) fn index_err(e: impl std::fmt::Display) -> DriveError {
    DriveError::Index(e.to_string())
}

/// One metadata change, applied by the writer thread (and written to the commit log as it is).
#[derive(Serialize, Deserialize)]
pub(crate) enum Change {
    MakeBucket {
        bucket: String,
        record: Vec<u8>,
    },
    /// Replaces the record of an existing bucket (tags, configuration).
    UpdateBucket {
        bucket: String,
        record: Vec<u8>,
    },
    DeleteBucket {
        bucket: String,
    },
    /// Adds a version; answers the versions it displaced, whose data is kept until `FreeData`.
    /// With `newest`, refused ([`DriveError::NotNewest`]) unless the version is stamped after
    /// every other version of the object.
    PutVersion {
        bucket: String,
        key: String,
        version: Box<ObjectVersion>,
        inline: Option<Bytes>,
        newest: bool,
        /// A conditional write's check: refused ([`DriveError::ConditionChanged`]) when the
        /// object holds a version stamped after this.
        checked: Option<u64>,
    },
    /// Removes a version; answers it, its data kept until `FreeData`. With `checked`, refused
    /// as `PutVersion` is.
    DeleteVersion {
        bucket: String,
        key: String,
        version_id: Option<Uuid>,
        checked: Option<u64>,
    },
    /// Frees the data of versions no record references any more.
    FreeData {
        versions: Vec<ObjectVersion>,
    },
    /// Undoes a change that missed its quorum: takes `remove` out (freeing its data) and puts
    /// `restore` back.
    Restore {
        bucket: String,
        key: String,
        remove: Option<Box<ObjectVersion>>,
        restore: Vec<ObjectVersion>,
    },
    PutUpload {
        bucket: String,
        upload: Box<UploadRecord>,
    },
    /// Records a part (replacing one with the same number, whose file is freed).
    PutPart {
        bucket: String,
        key: String,
        upload_id: Uuid,
        part: Box<PartInfo>,
    },
    /// Ends a part commit (`PutPart` of `new_data`, which replaced `old`): kept, frees the
    /// replaced part's data; undone, puts `old` back (or nothing, when the number was new) and
    /// frees the new part's data. Either only while the slot still holds what the commit put.
    EndPart {
        bucket: String,
        key: String,
        upload_id: Uuid,
        number: u32,
        old: Option<Box<PartInfo>>,
        new_data: Uuid,
        keep: bool,
    },
    /// Adds the completed object's version, if the upload still exists. The upload stays until
    /// `DropUpload`, so an undo leaves it whole for a retry.
    CompleteUpload {
        bucket: String,
        key: String,
        upload_id: Uuid,
        version: Box<ObjectVersion>,
        /// See [`Change::PutVersion`].
        checked: Option<u64>,
    },
    /// Removes an upload and its parts, freeing every part file not in `keep`.
    DropUpload {
        bucket: String,
        key: String,
        upload_id: Uuid,
        keep: Vec<Uuid>,
    },
}

/// Why an index did not open.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexOpenError {
    /// Another process holds the index open.
    #[error("the index is open in another process")]
    InUse,
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Io(std::io::Error),
}

impl From<IndexOpenError> for DriveError {
    fn from(e: IndexOpenError) -> Self {
        match e {
            IndexOpenError::Io(e) => DriveError::from(e),
            e => DriveError::Index(e.to_string()),
        }
    }
}

/// What a change answers: the versions it displaced (empty for most changes).
pub(crate) type Displaced = Vec<ObjectVersion>;

struct Pending {
    change: Change,
    /// Folders whose new names (shard files renamed in) must be durable before the change is
    /// committed: synced by the writer, once per batch for every change that shares one.
    sync_dirs: Vec<PathBuf>,
    reply: oneshot::Sender<DriveResult<Displaced>>,
}

/// Handle to one drive's index: reads run on the caller's (blocking) thread, writes go through
/// the group-commit queue.
pub(crate) struct Index {
    db: Arc<Database>,
    snapshots: Arc<Snapshots>,
    /// `None` only while dropping.
    queue: Option<mpsc::Sender<Pending>>,
    writer: Option<std::thread::JoinHandle<()>>,
    stats: Arc<CommitStats>,
}

impl Drop for Index {
    /// Closes the queue and waits for the writer to finish what it holds, so the database is
    /// closed (and can be opened again) when the drive is gone.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Counters of the group-commit writer (for metrics and tests).
#[derive(Debug, Default)]
pub struct CommitStats {
    /// Durable transactions committed.
    pub commits: AtomicU64,
    /// Changes applied (successfully or not) by those commits.
    pub changes: AtomicU64,
    /// Commits that failed (a sync of the index's file, an I/O error): the index then refuses
    /// every later write, and the drive takes none until the server restarts.
    pub failed_commits: AtomicU64,
}

impl Index {
    /// Opens (or creates) the index, applies what its commit log holds past the last checkpoint,
    /// and starts its writer thread. `data_dir` is where shard files live, so the writer can free
    /// the files of replaced versions after commit.
    pub fn open(
        fs: Arc<dyn Fs>,
        path: &Path,
        data_dir: PathBuf,
        name: &str,
        checkpoints: Checkpoints,
    ) -> Result<Self, IndexOpenError> {
        let db = fs.open_database(Database::builder().set_cache_size(INDEX_CACHE_SIZE), path).map_err(
            |e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => IndexOpenError::InUse,
                // redb reports a file that is not (or no longer) an index as invalid data.
                redb::DatabaseError::Storage(redb::StorageError::Io(e))
                    if e.kind() != std::io::ErrorKind::InvalidData =>
                {
                    IndexOpenError::Io(e)
                }
                e => IndexOpenError::Corrupt(e.to_string()),
            },
        )?;
        let corrupt = |e: &dyn std::fmt::Display| IndexOpenError::Corrupt(e.to_string());
        let txn = db.begin_write().map_err(|e| corrupt(&e))?;
        let (log_id, applied) = {
            txn.open_table(BUCKETS).map_err(|e| corrupt(&e))?;
            txn.open_table(OBJECTS).map_err(|e| corrupt(&e))?;
            txn.open_table(INLINE).map_err(|e| corrupt(&e))?;
            txn.open_table(UPLOADS).map_err(|e| corrupt(&e))?;
            txn.open_table(PARTS).map_err(|e| corrupt(&e))?;
            txn.open_table(VERSIONS).map_err(|e| corrupt(&e))?;
            let mut meta = txn.open_table(META).map_err(|e| corrupt(&e))?;
            let get = |key| meta.get(key).map(|v| v.map(|v| v.value())).map_err(|e| corrupt(&e));
            let (log_id, applied) = (get(META_LOG)?, get(META_APPLIED)?);
            let log_id = match log_id {
                Some(id) => id,
                None => {
                    let id = Uuid::new_v4().as_u128();
                    meta.insert(META_LOG, id).map_err(|e| corrupt(&e))?;
                    id
                }
            };
            (log_id, u64::try_from(applied.unwrap_or(0)).map_err(|e| corrupt(&e))?)
        };
        txn.commit().map_err(|e| corrupt(&e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let last = replay(&db, fs.as_ref(), dir, &data_dir, log_id, applied)?;
        let log = CommitLog::start(fs.clone(), dir, log_id, last + 1).map_err(IndexOpenError::Io)?;
        let db = Arc::new(db);
        let (queue, rx) = mpsc::channel(DRIVE_COMMIT_QUEUE_DEPTH);
        let writer_db = db.clone();
        let stats = Arc::new(CommitStats::default());
        let snapshots = Arc::new(Snapshots::new(db.clone()));
        let writer = Writer {
            db: writer_db,
            snapshots: snapshots.clone(),
            fs,
            data_dir,
            stats: stats.clone(),
            log,
            last,
            checkpoints,
        };
        let writer = std::thread::Builder::new()
            .name(format!("commit:{name}"))
            .spawn(move || writer.run(rx))
            .map_err(IndexOpenError::Io)?;
        Ok(Self { db, snapshots, queue: Some(queue), writer: Some(writer), stats })
    }

    pub fn stats(&self) -> &Arc<CommitStats> {
        &self.stats
    }

    /// Commits an empty write transaction, durably (a check that the index's file still syncs).
    /// Blocking; it waits for a commit of the writer in progress.
    pub fn probe_commit(&self) -> DriveResult<()> {
        let txn = self.db.begin_write().map_err(index_err)?;
        txn.commit().map_err(index_err)
    }

    pub async fn apply(&self, change: Change) -> DriveResult<Displaced> {
        self.apply_after_syncing(change, Vec::new()).await
    }

    /// Applies `change` once the folders in `sync_dirs` are durable (see [`Pending::sync_dirs`]).
    pub async fn apply_after_syncing(
        &self,
        change: Change,
        sync_dirs: Vec<PathBuf>,
    ) -> DriveResult<Displaced> {
        let (reply, rx) = oneshot::channel();
        let closed = || DriveError::Stopped("metadata writer stopped".into());
        let queue = self.queue.as_ref().ok_or_else(closed)?;
        queue.send(Pending { change, sync_dirs, reply }).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    pub fn read_record(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        let snapshot = self.snapshots.get()?;
        let value = snapshot.objects.get(object_key(bucket, key).as_slice()).map_err(index_err)?;
        let record = ObjectRecord::decode(value.ok_or(DriveError::NotFound)?.value())?;
        let data = match record.latest() {
            Some(v) if inline => inline_of(&snapshot.inline, v)?,
            _ => None,
        };
        Ok((record, data))
    }

    /// The object's version with id `version_id` (the current one or an older one) as a record
    /// of that version alone; with `inline`, its inline frame, from the same snapshot.
    pub fn read_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        inline: bool,
    ) -> DriveResult<(ObjectRecord, Option<Bytes>)> {
        let snapshot = self.snapshots.get()?;
        let k = object_key(bucket, key);
        let value = snapshot.objects.get(k.as_slice()).map_err(index_err)?;
        let record = ObjectRecord::decode(value.ok_or(DriveError::NotFound)?.value())?;
        let found = match record.versions.into_iter().find(|v| v.version_id == version_id) {
            Some(v) => v,
            None => {
                let rows = snapshot.txn.open_table(VERSIONS).map_err(index_err)?;
                versions::find_row(&rows, &k, version_id)?.ok_or(DriveError::NotFound)?
            }
        };
        let data = if inline { inline_of(&snapshot.inline, &found)? } else { None };
        Ok((ObjectRecord { versions: vec![found] }, data))
    }

    pub fn read_inline(&self, data_id: Uuid) -> DriveResult<Bytes> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(INLINE).map_err(index_err)?;
        let value = table.get(data_id.as_u128()).map_err(index_err)?;
        Ok(Bytes::copy_from_slice(value.ok_or(DriveError::NotFound)?.value()))
    }

    pub fn read_upload(&self, bucket: &str, key: &str, upload_id: Uuid) -> DriveResult<UploadRecord> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(UPLOADS).map_err(index_err)?;
        let value = table.get(upload_key(bucket, key, upload_id).as_slice()).map_err(index_err)?;
        Ok(UploadRecord::decode(value.ok_or(DriveError::NotFound)?.value())?)
    }

    /// Part `number` of the upload, if the drive holds it.
    pub fn read_part(&self, upload_id: Uuid, number: u32) -> DriveResult<Option<PartInfo>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(PARTS).map_err(index_err)?;
        match table.get((upload_id.as_u128(), number)).map_err(index_err)? {
            Some(v) => Ok(Some(PartInfo::decode(v.value())?)),
            None => Ok(None),
        }
    }

    pub fn list_parts(&self, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(PARTS).map_err(index_err)?;
        let id = upload_id.as_u128();
        let mut out = Vec::new();
        for item in table.range((id, 0)..=(id, u32::MAX)).map_err(index_err)? {
            let (_, v) = item.map_err(index_err)?;
            out.push(PartInfo::decode(v.value())?);
        }
        Ok(out)
    }

    /// Every shard file id a record or an upload's part refers to (what must not be swept).
    pub fn referenced_files(&self) -> DriveResult<std::collections::HashSet<Uuid>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let mut ids = std::collections::HashSet::new();
        let mut add = |bytes: &[u8]| -> DriveResult<()> {
            for version in ObjectRecord::decode(bytes)?.versions {
                match version.data {
                    DataLocation::File(id) => {
                        ids.insert(id);
                    }
                    DataLocation::Multipart(_) => ids.extend(version.parts.iter().map(|p| p.data_id)),
                    DataLocation::Inline(_) => {}
                }
            }
            Ok(())
        };
        for item in txn.open_table(OBJECTS).map_err(index_err)?.iter().map_err(index_err)? {
            add(item.map_err(index_err)?.1.value())?;
        }
        for item in txn.open_table(VERSIONS).map_err(index_err)?.iter().map_err(index_err)? {
            add(item.map_err(index_err)?.1.value())?;
        }
        for item in txn.open_table(PARTS).map_err(index_err)?.iter().map_err(index_err)? {
            let (_, v) = item.map_err(index_err)?;
            ids.insert(PartInfo::decode(v.value())?.data_id);
        }
        Ok(ids)
    }

    /// Uploads in progress in `bucket` whose key starts with the query's prefix, past its
    /// position, in (key, upload id) order.
    pub fn list_uploads(&self, bucket: &str, query: &crate::UploadsQuery) -> DriveResult<Vec<UploadRecord>> {
        use std::ops::Bound;
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(UPLOADS).map_err(index_err)?;
        let first = object_key(bucket, &query.prefix);
        // An upload's index key is `bucket ++ 0 ++ position`.
        let mut after = object_key(bucket, "");
        after.extend_from_slice(&query.after);
        let start = if !query.after.is_empty() && after >= first {
            Bound::Excluded(after.as_slice())
        } else {
            Bound::Included(first.as_slice())
        };
        let end = prefix_successor(&first);
        if let (Bound::Excluded(a), Some(e)) = (start, &end) {
            if a >= e.as_slice() {
                return Ok(Vec::new());
            }
        }
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut out = Vec::new();
        for item in table.range::<&[u8]>((start, end)).map_err(index_err)? {
            if out.len() >= query.limit {
                break;
            }
            let (_, v) = item.map_err(index_err)?;
            out.push(UploadRecord::decode(v.value())?);
        }
        Ok(out)
    }

    pub fn stat_bucket(&self, bucket: &str) -> DriveResult<Vec<u8>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(BUCKETS).map_err(index_err)?;
        let value = table.get(bucket).map_err(index_err)?;
        Ok(value.ok_or(DriveError::BucketNotFound)?.value().to_vec())
    }

    pub fn list_buckets(&self) -> DriveResult<Vec<(String, Vec<u8>)>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        let table = txn.open_table(BUCKETS).map_err(index_err)?;
        let mut out = Vec::new();
        for item in table.iter().map_err(index_err)? {
            let (k, v) = item.map_err(index_err)?;
            out.push((k.value().to_owned(), v.value().to_vec()));
        }
        Ok(out)
    }

    /// Lists keys of `bucket` as the query asks, rolling keys up at the delimiter and seeking
    /// past each common prefix, so the cost follows the entries returned, not the bucket size.
    pub fn list(&self, bucket: &str, q: &ListQuery) -> DriveResult<Vec<ListEntry>> {
        let txn = self.db.begin_read().map_err(index_err)?;
        if txn.open_table(BUCKETS).map_err(index_err)?.get(bucket).map_err(index_err)?.is_none() {
            return Err(DriveError::BucketNotFound);
        }
        let table = txn.open_table(OBJECTS).map_err(index_err)?;
        let rows = txn.open_table(VERSIONS).map_err(index_err)?;
        let base = object_key(bucket, "");
        let full_prefix = object_key(bucket, &q.prefix);
        let end = prefix_successor(&full_prefix);
        let mut start = Bound::Included(full_prefix.clone());
        // Resuming inside a key's versions starts at that key.
        let inside = q.versions && q.start_rank.is_some();
        if q.start_after.as_str() >= q.prefix.as_str() {
            let at = object_key(bucket, &q.start_after);
            start = if inside { Bound::Included(at) } else { Bound::Excluded(at) };
        }
        let mut out = Vec::new();
        'seek: while out.len() < q.limit {
            let end_bound = end.as_ref().map_or(Bound::Unbounded, |e| Bound::Excluded(e.as_slice()));
            let start_bound = match &start {
                Bound::Included(s) => Bound::Included(s.as_slice()),
                Bound::Excluded(s) => Bound::Excluded(s.as_slice()),
                Bound::Unbounded => Bound::Unbounded,
            };
            let range = table.range::<&[u8]>((start_bound, end_bound)).map_err(index_err)?;
            for item in range {
                let (k, v) = item.map_err(index_err)?;
                let key_bytes = &k.value()[base.len()..];
                let key = std::str::from_utf8(key_bytes).map_err(|e| DriveError::Corrupt(e.to_string()))?;
                if let Some(delim) = q.delimiter.as_deref().filter(|d| !d.is_empty()) {
                    if let Some(pos) = key[q.prefix.len()..].find(delim) {
                        let common = &key[..q.prefix.len() + pos + delim.len()];
                        if common > q.start_after.as_str() {
                            out.push(ListEntry::Prefix(common.to_owned()));
                        }
                        match prefix_successor(&object_key(bucket, common)) {
                            Some(next) => start = Bound::Included(next),
                            None => break 'seek,
                        }
                        continue 'seek;
                    }
                }
                let record = ObjectRecord::decode(v.value())?;
                if !q.versions {
                    out.push(ListEntry::Object { key: key.to_owned(), record });
                } else {
                    let after = q.start_rank.as_deref().filter(|_| inside && key == q.start_after);
                    for v in record.versions {
                        if after.is_none_or(|a| versions::version_rank(&v).as_slice() > a) {
                            out.push(ListEntry::Object { key: key.to_owned(), record: one(v) });
                        }
                    }
                    let room = q.limit.saturating_sub(out.len());
                    for v in versions::rows(&rows, k.value(), after, room)? {
                        out.push(ListEntry::Object { key: key.to_owned(), record: one(v) });
                    }
                }
                if out.len() >= q.limit {
                    break 'seek;
                }
            }
            break;
        }
        Ok(out)
    }
}

/// Applies the batches the commit log holds past `applied` (see [`crate::commit_log`]) in one
/// durable commit, then removes the log's files; answers the number of the last batch applied.
fn replay(
    db: &Database,
    fs: &dyn Fs,
    dir: &Path,
    data_dir: &Path,
    log_id: u128,
    applied: u64,
) -> Result<u64, IndexOpenError> {
    let corrupt = |e: &dyn std::fmt::Display| IndexOpenError::Corrupt(e.to_string());
    let found = commit_log::recover(fs, dir, log_id, applied).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => corrupt(&e),
        _ => IndexOpenError::Io(e),
    })?;
    let mut last = applied;
    if let Some((number, _)) = found.batches.last() {
        last = *number;
        let txn = db.begin_write().map_err(|e| corrupt(&e))?;
        let mut freed = Vec::new();
        {
            let mut tables = OpenTables::open(&txn).map_err(|e| corrupt(&e))?;
            for (number, record) in &found.batches {
                let changes = record.get(commit_log::BATCH_CHANGES..).unwrap_or_default();
                let changes = decode_batch(changes).map_err(|e| corrupt(&format!("batch {number}: {e}")))?;
                for change in &changes {
                    // As the first time: a change refused then is refused again.
                    let _ = apply_change(&mut tables.tables(), change, &mut freed);
                }
            }
            tables.meta.insert(META_APPLIED, u128::from(last)).map_err(|e| corrupt(&e))?;
        }
        txn.commit().map_err(|e| corrupt(&e))?;
        for id in freed {
            let _ = fs.remove_file(&crate::local::data_path(data_dir, id));
        }
        tracing::info!(batches = found.batches.len(), last, "metadata index: applied its commit log");
    }
    for file in found.files {
        let _ = fs.remove_file(&file);
    }
    Ok(last)
}

/// The batch's changes for the commit log, after the room its frame needs
/// ([`commit_log::FRAME_ROOM`]).
fn encode_batch(batch: &[Pending]) -> Vec<u8> {
    let changes: Vec<&Change> = batch.iter().map(|p| &p.change).collect();
    let mut out = vec![0; commit_log::FRAME_ROOM];
    out.push(LOG_FORMAT);
    // Changes are plain data (strings, numbers, bytes): serialising them into a Vec cannot fail.
    let _ = rmp_serde::encode::write_named(&mut out, &changes);
    out
}

fn decode_batch(bytes: &[u8]) -> Result<Vec<Change>, String> {
    match bytes.split_first() {
        Some((&LOG_FORMAT, rest)) => rmp_serde::from_slice(rest).map_err(|e| e.to_string()),
        Some((v, _)) => Err(format!("unknown log format {v}")),
        None => Err("an empty batch".to_owned()),
    }
}

/// When the writer checkpoints the index (see [`crate::commit_log`]).
#[derive(Debug, Clone, Copy)]
pub struct Checkpoints {
    /// At least this often while changes arrive, and this long after the last change.
    pub interval: std::time::Duration,
    /// When the log passes this many bytes.
    pub log_size: u64,
    /// After this many batches (tests set it low, so a few changes cross checkpoints).
    pub batches: u64,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Self { interval: INDEX_CHECKPOINT_INTERVAL, log_size: INDEX_LOG_SIZE_MAX, batches: u64::MAX }
    }
}

/// The index's writer thread: group commits through the commit log, and checkpoints.
struct Writer {
    db: Arc<Database>,
    snapshots: Arc<Snapshots>,
    fs: Arc<dyn Fs>,
    data_dir: PathBuf,
    stats: Arc<CommitStats>,
    log: CommitLog,
    /// The number of the last batch committed.
    last: u64,
    checkpoints: Checkpoints,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Pending>) {
        // The thread's own clock for the checkpoint deadline (the queue is a tokio channel).
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_time().build() else {
            tracing::error!("the metadata writer cannot start its timer");
            return;
        };
        // Since the last checkpoint: when the first batch came, and how many.
        let mut since: Option<(std::time::Instant, u64)> = None;
        // Changes in the last batch.
        let mut last_size = 0;
        loop {
            let next = rt.block_on(async {
                match since {
                    Some((at, _)) => {
                        tokio::time::timeout_at((at + self.checkpoints.interval).into(), rx.recv())
                            .await
                            .map_err(|_| ())
                    }
                    None => Ok(rx.recv().await),
                }
            });
            let first = match next {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(()) => {
                    self.checkpoint();
                    since = None;
                    continue;
                }
            };
            let mut batch = vec![first];
            let take = |batch: &mut Vec<Pending>, rx: &mut mpsc::Receiver<Pending>| {
                while batch.len() < GROUP_COMMIT_BATCH_MAX {
                    match rx.try_recv() {
                        Ok(p) => batch.push(p),
                        Err(_) => break,
                    }
                }
            };
            take(&mut batch, &mut rx);
            if last_size > 1 && batch.len() < GROUP_COMMIT_BATCH_MAX {
                std::thread::sleep(GROUP_COMMIT_LINGER);
                take(&mut batch, &mut rx);
            }
            last_size = batch.len();
            self.commit(batch);
            let (at, batches) = since.get_or_insert((std::time::Instant::now(), 0));
            *batches += 1;
            if *batches >= self.checkpoints.batches
                || at.elapsed() >= self.checkpoints.interval
                || self.log.len() >= self.checkpoints.log_size
            {
                self.checkpoint();
                since = None;
            }
        }
        // Closing: the index holds everything, and the log nothing it lacks.
        if self.checkpoint() {
            self.log.remove();
        }
    }

    fn commit(&mut self, batch: Vec<Pending>) {
        let mut batch = sync_dirs(self.fs.as_ref(), batch);
        if batch.is_empty() {
            return;
        }
        let mut freed_files = Vec::new();
        let number = self.last + 1;
        let (outcome, committed) =
            commit_batch(&self.db, &mut self.log, number, &mut batch, &mut freed_files);
        // Before any change of the batch is answered (see `Snapshots`).
        self.snapshots.forget();
        let stats = &self.stats;
        match committed {
            Committed::Yes => self.last = number,
            // The batch left no trace: the next one takes its number.
            Committed::NotLogged => {}
            Committed::Failed => {
                self.last = number;
                stats.failed_commits.fetch_add(1, Ordering::Relaxed);
            }
        }
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats.changes.fetch_add(batch.len() as u64, Ordering::Relaxed);
        // Files go before the replies, so a change that frees data has freed it when it returns.
        for id in freed_files {
            // A file that cannot be removed is an orphan for the scanner to sweep.
            let _ = self.fs.remove_file(&crate::local::data_path(&self.data_dir, id));
        }
        for (pending, result) in batch.into_iter().zip(outcome) {
            let _ = pending.reply.send(result);
        }
    }

    /// A durable commit of the index (making every batch so far durable in it), then a new log.
    /// A failure stops the drive's writes, as a failed commit does. (A batch whose number was
    /// used without reaching the index, one that failed, is in no log the next start reads.)
    fn checkpoint(&mut self) -> bool {
        // The last batch number is recorded again: one that failed (and left the log) is then
        // not looked for by the next start.
        let last = u128::from(self.last);
        let durable = || -> Result<(), String> {
            let txn = self.db.begin_write().map_err(|e| e.to_string())?;
            {
                let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
                meta.insert(META_APPLIED, last).map_err(|e| e.to_string())?;
            }
            txn.commit().map_err(|e| e.to_string())
        };
        let done = durable().and_then(|()| self.log.restart().map_err(|e| e.to_string()));
        // The durable commit frees the pages the batches since the last one replaced, unless a
        // read transaction still sees them.
        self.snapshots.forget();
        match done {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "a checkpoint of the metadata index failed: the drive takes no more writes");
                self.stats.failed_commits.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}

/// Makes the folders the batch's changes renamed files into durable, each folder once, before
/// their records commit: the record must never say "here" for a name a power cut could forget.
/// A change whose folder cannot be synced fails alone; the rest of the batch goes on.
fn sync_dirs(fs: &dyn Fs, batch: Vec<Pending>) -> Vec<Pending> {
    let mut dirs: Vec<&PathBuf> = batch.iter().flat_map(|p| &p.sync_dirs).collect();
    if dirs.is_empty() {
        return batch;
    }
    dirs.sort();
    dirs.dedup();
    let failed: Vec<(PathBuf, std::io::Error)> =
        dirs.into_iter().filter_map(|d| fs.sync_dir(d).err().map(|e| (d.clone(), e))).collect();
    if failed.is_empty() {
        return batch;
    }
    let mut kept = Vec::with_capacity(batch.len());
    for p in batch {
        match failed.iter().find(|(d, _)| p.sync_dirs.contains(d)) {
            Some((d, e)) => {
                let err = match e.raw_os_error().map(|code| std::io::Error::from_raw_os_error(code).into()) {
                    Some(exhausted @ DriveError::Exhausted(_)) => exhausted,
                    _ => {
                        DriveError::Io(std::io::Error::new(e.kind(), format!("syncing {}: {e}", d.display())))
                    }
                };
                let _ = p.reply.send(Err(err));
            }
            None => kept.push(p),
        }
    }
    kept
}

/// The index's tables, open in a write transaction.
struct OpenTables<'t> {
    buckets: redb::Table<'t, &'static str, &'static [u8]>,
    objects: redb::Table<'t, &'static [u8], &'static [u8]>,
    inline: redb::Table<'t, u128, &'static [u8]>,
    uploads: redb::Table<'t, &'static [u8], &'static [u8]>,
    parts: redb::Table<'t, (u128, u32), &'static [u8]>,
    versions: redb::Table<'t, (&'static [u8], &'static [u8]), &'static [u8]>,
    meta: redb::Table<'t, &'static str, u128>,
}

impl<'t> OpenTables<'t> {
    fn open(txn: &'t redb::WriteTransaction) -> Result<Self, redb::TableError> {
        Ok(Self {
            buckets: txn.open_table(BUCKETS)?,
            objects: txn.open_table(OBJECTS)?,
            inline: txn.open_table(INLINE)?,
            uploads: txn.open_table(UPLOADS)?,
            parts: txn.open_table(PARTS)?,
            versions: txn.open_table(VERSIONS)?,
            meta: txn.open_table(META)?,
        })
    }

    fn tables(&mut self) -> Tables<'_, 't> {
        Tables {
            buckets: &mut self.buckets,
            objects: &mut self.objects,
            inline: &mut self.inline,
            uploads: &mut self.uploads,
            parts: &mut self.parts,
            versions: &mut self.versions,
        }
    }
}

/// How a batch ended.
enum Committed {
    Yes,
    /// Refused before anything of it was kept (a full disk): the drive goes on.
    NotLogged,
    /// The index (or its log) failed: the drive takes no more writes.
    Failed,
}

/// Applies a batch (numbered `number`) in one transaction, made durable by the commit log;
/// returns one result per change, and how the batch ended. Unless it committed, every change of
/// the batch fails and no file is freed.
fn commit_batch(
    db: &Database,
    log: &mut CommitLog,
    number: u64,
    batch: &mut [Pending],
    freed: &mut Vec<Uuid>,
) -> (Vec<DriveResult<Displaced>>, Committed) {
    let n = batch.len();
    let all_fail = |e: &dyn std::fmt::Display| -> (Vec<DriveResult<Displaced>>, Committed) {
        ((0..n).map(|_| Err(index_err(e))).collect(), Committed::Failed)
    };
    let mut txn = match db.begin_write() {
        Ok(t) => t,
        Err(e) => return all_fail(&e),
    };
    // Durable through the log; the index's pages are written at the next checkpoint.
    if let Err(e) = txn.set_durability(Durability::None) {
        return all_fail(&e);
    }
    let mut results = Vec::with_capacity(n);
    let mut batch_freed = Vec::new();
    {
        let mut tables = match OpenTables::open(&txn) {
            Ok(t) => t,
            Err(e) => return all_fail(&e),
        };
        for p in batch.iter() {
            results.push(apply_change(&mut tables.tables(), &p.change, &mut batch_freed));
        }
        let recorded = tables.meta.insert(META_APPLIED, u128::from(number)).map(drop);
        if let Err(e) = recorded {
            return all_fail(&e);
        }
    }
    // From here, returning without the commit drops the transaction, which undoes the batch.
    let encoded = encode_batch(batch);
    if encoded.len() > INDEX_LOG_FRAME_MAX {
        let e = "a batch too large for the commit log";
        return ((0..n).map(|_| Err(index_err(e))).collect(), Committed::NotLogged);
    }
    match log.append(number, encoded) {
        Ok(()) => {}
        Err(AppendError::NotWritten(e)) => {
            let each = (0..n).map(|_| Err(copy_io_error(&e).into())).collect();
            return (each, Committed::NotLogged);
        }
        Err(AppendError::Broken(e)) => {
            tracing::error!(error = %e, "a write to the metadata commit log failed: the drive takes no more writes");
            return all_fail(&e);
        }
    }
    match txn.commit() {
        Ok(()) => {
            freed.extend(batch_freed);
            (results, Committed::Yes)
        }
        Err(e) => {
            tracing::error!(error = %e, "a commit of the metadata index failed: the drive takes no more writes");
            all_fail(&e)
        }
    }
}

/// The same I/O error again (one per change it fails), keeping its OS code (a full disk's
/// `ENOSPC` is answered as the drive being full).
fn copy_io_error(e: &std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

pub(crate) struct Tables<'a, 't> {
    buckets: &'a mut redb::Table<'t, &'static str, &'static [u8]>,
    objects: &'a mut redb::Table<'t, &'static [u8], &'static [u8]>,
    inline: &'a mut redb::Table<'t, u128, &'static [u8]>,
    uploads: &'a mut redb::Table<'t, &'static [u8], &'static [u8]>,
    parts: &'a mut redb::Table<'t, (u128, u32), &'static [u8]>,
    /// Older versions of objects (see [`crate::versions`]).
    pub(crate) versions: &'a mut redb::Table<'t, (&'static [u8], &'static [u8]), &'static [u8]>,
}

fn apply_change(t: &mut Tables, change: &Change, freed: &mut Vec<Uuid>) -> DriveResult<Displaced> {
    match change {
        Change::MakeBucket { bucket, record } => {
            if t.buckets.get(bucket.as_str()).map_err(index_err)?.is_some() {
                return Err(DriveError::BucketExists);
            }
            t.buckets.insert(bucket.as_str(), record.as_slice()).map_err(index_err)?;
        }
        Change::UpdateBucket { bucket, record } => {
            if t.buckets.get(bucket.as_str()).map_err(index_err)?.is_none() {
                return Err(DriveError::BucketNotFound);
            }
            t.buckets.insert(bucket.as_str(), record.as_slice()).map_err(index_err)?;
        }
        Change::DeleteBucket { bucket } => {
            if t.buckets.get(bucket.as_str()).map_err(index_err)?.is_none() {
                return Err(DriveError::BucketNotFound);
            }
            let base = object_key(bucket, "");
            let end = prefix_successor(&base);
            let range = match &end {
                Some(e) => t.objects.range::<&[u8]>(base.as_slice()..e.as_slice()),
                None => t.objects.range::<&[u8]>(base.as_slice()..),
            };
            if range.map_err(index_err)?.next().is_some() {
                return Err(DriveError::BucketNotEmpty);
            }
            t.buckets.remove(bucket.as_str()).map_err(index_err)?;
        }
        Change::PutVersion { bucket, key, version, inline, newest, checked } => {
            if t.buckets.get(bucket.as_str()).map_err(index_err)?.is_none() {
                return Err(DriveError::BucketNotFound);
            }
            let k = object_key(bucket, key);
            if let Some(checked) = *checked {
                if let Some(newest) = versions::newest_stamp(t, &k)?.filter(|s| *s > checked) {
                    return Err(DriveError::ConditionChanged { newest });
                }
            }
            if *newest {
                if let Some(stamp) = versions::newest_other(t, &k, version.version_id)? {
                    if stamp >= version.mod_time {
                        return Err(DriveError::NotNewest { newest: stamp });
                    }
                }
            }
            // A corrupt old head is replaced: the new version is what the quorum writes.
            let displaced = versions::insert(t, &k, version)?;
            if let (DataLocation::Inline(id), Some(bytes)) = (version.data, inline.as_ref()) {
                t.inline.insert(id.as_u128(), bytes.as_ref()).map_err(index_err)?;
            }
            return Ok(displaced);
        }
        Change::DeleteVersion { bucket, key, version_id, checked } => {
            let k = object_key(bucket, key);
            if let Some(checked) = *checked {
                if let Some(newest) = versions::newest_stamp(t, &k)?.filter(|s| *s > checked) {
                    return Err(DriveError::ConditionChanged { newest });
                }
            }
            return versions::remove(t, &k, *version_id);
        }
        Change::FreeData { versions } => free_versions(t, versions, freed)?,
        Change::PutUpload { .. }
        | Change::PutPart { .. }
        | Change::EndPart { .. }
        | Change::CompleteUpload { .. }
        | Change::DropUpload { .. } => {
            return apply_upload_change(t, change, freed);
        }
        Change::Restore { bucket, key, remove, restore } => {
            let k = object_key(bucket, key);
            if let Some(gone) = remove {
                if versions::remove_exact(t, &k, gone)? {
                    // A multipart version's parts still belong to its upload, which an undo keeps;
                    // a metadata-only change shares its data with the version it restores.
                    let shared = restore.iter().any(|r| r.data.data_id() == gone.data.data_id());
                    if !matches!(gone.data, DataLocation::Multipart(_)) && !shared {
                        free_versions(t, std::slice::from_ref(&**gone), freed)?;
                    }
                }
            }
            for v in restore.iter() {
                if !versions::holds(t, &k, v.version_id)? {
                    versions::insert(t, &k, v)?;
                }
            }
        }
    }
    Ok(Vec::new())
}

/// The record at `k`. A corrupt one reads as absent, so the change replaces it (the new version
/// is what the quorum writes; healing restores older versions), but never silently.
pub(crate) fn read(t: &Tables, k: &[u8]) -> DriveResult<Option<ObjectRecord>> {
    match t.objects.get(k).map_err(index_err)? {
        Some(v) => match ObjectRecord::decode(v.value()) {
            Ok(record) => Ok(Some(record)),
            Err(e) => {
                let drive = std::thread::current().name().unwrap_or("?").to_owned();
                let key = String::from_utf8_lossy(k).replace('\0', "/");
                tracing::error!(%drive, %key, error = %e, "corrupt object record replaced by a change");
                Ok(None)
            }
        },
        None => Ok(None),
    }
}

fn one(v: ObjectVersion) -> ObjectRecord {
    ObjectRecord { versions: vec![v] }
}

/// The inline frame of `v`, read from the table of a snapshot (delete markers have none). The
/// frame is copied out of redb's page: a page may be reused once no read transaction sees it,
/// and bytes that held the transaction instead would let a slow reader keep every page the
/// writer frees from being reused.
fn inline_of(
    table: &redb::ReadOnlyTable<u128, &'static [u8]>,
    v: &ObjectVersion,
) -> DriveResult<Option<Bytes>> {
    match v.data {
        DataLocation::Inline(id) if !v.delete_marker => {
            let value = table.get(id.as_u128()).map_err(index_err)?;
            Ok(Some(Bytes::copy_from_slice(value.ok_or(DriveError::NotFound)?.value())))
        }
        _ => Ok(None),
    }
}

/// Writes the record, or removes it when its last version is gone.
pub(crate) fn write(t: &mut Tables, k: &[u8], record: &ObjectRecord) -> DriveResult<()> {
    if record.versions.is_empty() {
        t.objects.remove(k).map_err(index_err)?;
    } else {
        t.objects.insert(k, record.encode().as_slice()).map_err(index_err)?;
    }
    Ok(())
}

/// Frees the data of versions that left their record: inline bytes now (same transaction), shard
/// files after the commit.
fn free_versions(t: &mut Tables, gone: &[ObjectVersion], freed: &mut Vec<Uuid>) -> DriveResult<()> {
    for v in gone {
        match v.data {
            DataLocation::Inline(id) => {
                t.inline.remove(id.as_u128()).map_err(index_err)?;
            }
            DataLocation::File(id) => freed.push(id),
            DataLocation::Multipart(_) => freed.extend(v.parts.iter().map(|p| p.data_id)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor() {
        assert_eq!(prefix_successor(b"ab/"), Some(b"ab0".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xff, 0xff]), None);
    }
}
