//! Healing: bringing one object back to full redundancy on every online drive of its set.
//!
//! [`ObjectLayer::heal_object`] compares what each drive holds with the version a read quorum
//! agrees on. A drive with no record, a stale record, or shard data that is missing, truncated
//! or fails its bitrot hash (checked on the last frame, or on every frame for a deep heal) is a
//! target. The object is read back through the normal verified read path (parity fills what is
//! missing), re-encoded with the same split, checked against its MD5, and only the targets'
//! shards are written, under the same data id, then committed with the same record. Reading and
//! writing happen without the object's lock; the commit takes it and first checks that the
//! version is still the current one, so a heal never undoes a newer write.
//!
//! An object that no read quorum holds, whose record is left on a few drives after a delete or a
//! failed write, is dangling: when every drive of the set answered, those records go.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::future::join_all;
use md5::Digest;
use strata_drive::DriveOps;
use strata_drive::{version_rank, Drive, DriveError, ListEntry, ListQuery};
use strata_erasure::{bitrot, ShardLayout};
use strata_meta::{DataLocation, ObjectVersion};
use uuid::Uuid;

use crate::error::{BodyError, ObjectError};
use crate::healer::Healing;
use crate::layer::ObjectLayer;
use crate::put::{encode, write_shard_files, BlockReader, BodyReader};
use crate::quorum::{normalized, same_version};
use crate::set::{to_completion, ErasureSet};
use crate::{ObjectStream, OpenObject, VersionRef};

/// What healing one object did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealResult {
    /// Object bytes (its size), for progress accounting.
    pub size: u64,
    /// Drives that now hold shards they lacked (endpoints).
    pub healed_drives: Vec<String>,
    /// Drives that needed healing but could not take it.
    pub failed_drives: Vec<String>,
    /// Records removed from drives because no quorum holds the object.
    pub dangling_removed: usize,
    /// Drives of the set that could not be checked (offline): the object may still lack
    /// redundancy there.
    pub offline_drives: usize,
}

impl HealResult {
    pub fn was_healthy(&self) -> bool {
        self.healed_drives.is_empty() && self.failed_drives.is_empty() && self.dangling_removed == 0
    }

    /// Counts in what healing another version (or the object's copy in another pool) did.
    fn add(&mut self, r: HealResult) {
        self.size += r.size;
        for d in r.healed_drives {
            if !self.healed_drives.contains(&d) {
                self.healed_drives.push(d);
            }
        }
        for d in r.failed_drives {
            if !self.failed_drives.contains(&d) {
                self.failed_drives.push(d);
            }
        }
        self.dangling_removed += r.dangling_removed;
        self.offline_drives = self.offline_drives.max(r.offline_drives);
    }
}

/// Whether a heal that ended this way may do better if tried again soon: a drive refused or
/// failed its part (a stale holder's lease on the object still runs there, a drive stalled), or
/// the heal lost a quorum, its lock or a race. An object gone, or damaged past rebuilding, is
/// not.
pub(crate) fn worth_retrying(r: &Result<HealResult, ObjectError>) -> bool {
    match r {
        Ok(h) => !h.failed_drives.is_empty(),
        Err(e) => matches!(
            e,
            ObjectError::WriteQuorum { .. }
                | ObjectError::ReadQuorum { .. }
                | ObjectError::LockNotHeld(_)
                | ObjectError::Exhausted(_)
                | ObjectError::Raced(_)
        ),
    }
}

/// An object stream read as a body: the source of a heal or a copy.
pub struct StreamBody(pub ObjectStream);

#[async_trait]
impl BodyReader for StreamBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match self.0.recv().await {
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => Err(BodyError::Io(format!("reading the source object: {e}"))),
            None => Ok(None),
        }
    }

    fn checksums(&self) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }
}

/// Whether a drive's shard file `id` is whole: the last frame (or, `deep`, every frame)
/// verifies against its hash.
async fn file_ok(
    drive: &Arc<dyn Drive>,
    id: Uuid,
    layout: &ShardLayout,
    key: bitrot::Key,
    deep: bool,
) -> bool {
    let blocks = layout.block_count();
    if blocks == 0 {
        return true;
    }
    let Ok(reader) = drive.open_shard_file(id).await else { return false };
    let first = if deep { 0 } else { blocks - 1 };
    for block in first..blocks {
        let size = layout.shard_size(block) as usize;
        if reader.read_frame(layout.frame_offset(block), size, key).await.is_err() {
            return false;
        }
    }
    true
}

/// Whether a drive holding `version` (with `inline` frame bytes when inline) has all its data.
async fn data_ok(
    drive: &Arc<dyn Drive>,
    version: &ObjectVersion,
    inline: Option<&Bytes>,
    deep: bool,
) -> bool {
    if version.delete_marker {
        return true; // a marker has no data
    }
    let block_size = version.erasure.block_size as usize;
    let data_count = usize::from(version.erasure.data_count);
    let key = version.erasure.bitrot.key();
    match version.data {
        DataLocation::Inline(_) => {
            let layout = ShardLayout::new(version.size, block_size, data_count);
            let size = layout.shard_size(0) as usize;
            inline.is_some_and(|frame| bitrot::verify_with(key, frame, size).is_ok())
        }
        DataLocation::File(id) => {
            file_ok(drive, id, &ShardLayout::new(version.size, block_size, data_count), key, deep).await
        }
        DataLocation::Multipart(_) => {
            for part in &version.parts {
                let layout = ShardLayout::new(part.size, block_size, data_count);
                if !file_ok(drive, part.data_id, &layout, key, deep).await {
                    return false;
                }
            }
            true
        }
    }
}

/// Positions (in set order) of the online drives that lack `version` or part of its data, and
/// how many drives could not be checked.
async fn targets(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    which: VersionRef,
    version: &ObjectVersion,
    deep: bool,
) -> (Vec<usize>, usize) {
    let reads = set.read_which(bucket, key, which, true).await;
    let offline = set.drives.iter().zip(&reads).filter(|(d, r)| d.is_none() || is_offline(r)).count();
    let checks = set.drives.iter().zip(reads).enumerate().map(|(pos, (drive, read))| async move {
        let drive = drive.as_ref()?;
        let needs = match read {
            Ok((record, inline)) => match record.latest() {
                // The same write with the same metadata (tags can lag behind), and whole data.
                Some(v) if normalized(v) == *version => !data_ok(drive, version, inline.as_ref(), deep).await,
                _ => true,
            },
            Err(DriveError::NotFound) | Err(DriveError::Corrupt(_)) => true,
            // Offline or failing: nothing can be written to it now.
            Err(_) => false,
        };
        needs.then_some(pos)
    });
    (join_all(checks).await.into_iter().flatten().collect(), offline)
}

fn is_offline(read: &crate::set::RecordRead) -> bool {
    matches!(read, Err(e) if e.is_unavailable() || matches!(e, DriveError::Io(_) | DriveError::Index(_) | DriveError::Exhausted(_)))
}

/// Every version id any drive of the set holds for the object, newest first (by rank).
pub(crate) async fn version_ids(set: &ErasureSet, bucket: &str, key: &str) -> Vec<Option<Uuid>> {
    let mut ids: std::collections::BTreeMap<Vec<u8>, Option<Uuid>> = Default::default();
    for d in set.drives.iter().flatten() {
        let mut query =
            ListQuery { prefix: key.to_owned(), versions: true, limit: 1000, ..Default::default() };
        // The object's versions come first (longer keys with this prefix sort after them).
        'pages: loop {
            let Ok(entries) = d.list(bucket, query.clone()).await else { break };
            let full = entries.len() >= query.limit;
            for e in entries {
                let ListEntry::Object { key: k, record } = e else { continue };
                let Some(v) = record.latest() else { continue };
                if k != key {
                    break 'pages;
                }
                let rank = version_rank(v).to_vec();
                query.start_after = k;
                query.start_rank = Some(rank.clone());
                ids.insert(rank, v.version_id);
            }
            if !full {
                break;
            }
        }
    }
    let mut out: Vec<Option<Uuid>> = Vec::new();
    for id in ids.into_values() {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// This node's turn to heal one object; the object's entry goes with the last turn.
struct HealTurn<'a> {
    healing: &'a Healing,
    name: (String, String),
    _held: tokio::sync::OwnedMutexGuard<()>,
}

impl<'a> HealTurn<'a> {
    async fn take(healing: &'a Healing, bucket: &str, key: &str) -> HealTurn<'a> {
        let name = (bucket.to_owned(), key.to_owned());
        let turn = {
            let mut map = healing.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(name.clone()).or_default().clone()
        };
        HealTurn { healing, name, _held: turn.lock_owned().await }
    }
}

impl Drop for HealTurn<'_> {
    fn drop(&mut self) {
        let mut map = self.healing.lock().unwrap_or_else(|p| p.into_inner());
        // Only the map and this turn hold it: nobody waits behind.
        if map.get(&self.name).is_some_and(|m| Arc::strong_count(m) == 2) {
            map.remove(&self.name);
        }
    }
}

impl ObjectLayer {
    /// Heals every version of one object (see the module documentation), the current one first;
    /// `deep` verifies every frame of every drive's data instead of the last one.
    pub async fn heal_object(&self, bucket: &str, key: &str, deep: bool) -> Result<HealResult, ObjectError> {
        self.bucket_info(bucket)?;
        // A second heal of the object waits for the first, then finds little or nothing to do.
        let _turn = HealTurn::take(&self.healer.healing, bucket, key).await;
        if self.pool_count() == 1 {
            return self.heal_in(self.set_in(0, bucket, key), bucket, key, deep).await;
        }
        // Each pool's set of the key heals what it holds; a pool without the key has nothing to.
        let mut total = HealResult::default();
        let mut outcome = Err(ObjectError::ObjectNotFound);
        for pool in 0..self.pool_count() {
            match self.heal_in(self.set_in(pool, bucket, key), bucket, key, deep).await {
                Ok(r) => {
                    total.add(r);
                    outcome = Ok(());
                }
                Err(ObjectError::ObjectNotFound) => {}
                Err(e) => return Err(e),
            }
        }
        outcome.map(|()| total)
    }

    /// [`Self::heal_object`] in one set.
    async fn heal_in(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        deep: bool,
    ) -> Result<HealResult, ObjectError> {
        let hash = self.hash_of(bucket, key);
        let ids = version_ids(set, bucket, key).await;
        if ids.is_empty() {
            return self.heal_version(set, hash, bucket, key, VersionRef::Current, deep).await;
        }
        let mut total = HealResult::default();
        let mut first_error = None;
        for id in ids {
            match self.heal_version(set, hash, bucket, key, VersionRef::Id(id), deep).await {
                Ok(r) => total.add(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if total.was_healthy() => Err(e),
            _ => Ok(total),
        }
    }

    /// Heals one version of the object (`which`).
    async fn heal_version(
        &self,
        set: &ErasureSet,
        hash: u64,
        bucket: &str,
        key: &str,
        which: VersionRef,
        deep: bool,
    ) -> Result<HealResult, ObjectError> {
        let open = match crate::get::open_version(set, bucket, key, hash, which, true, None).await {
            Ok(o) => o,
            Err(ObjectError::ObjectNotFound) => {
                return self.remove_dangling(set, bucket, key, hash, which).await
            }
            Err(e) => return Err(e),
        };
        let version = open.version.clone();
        let (positions, offline_drives) = targets(set, bucket, key, which, &version, deep).await;
        let mut result = HealResult { size: version.size, offline_drives, ..Default::default() };
        if positions.is_empty() {
            return Ok(result);
        }
        let mut drives: Vec<Option<Arc<dyn Drive>>> = vec![None; set.drives.len()];
        for &p in &positions {
            drives[p] = set.drives[p].clone();
        }
        let erasure = set.erasure_of(&version.erasure)?;
        // The ETag of an encrypted object (and of its parts) is the plaintext's MD5 or a digest
        // of its package tags, which a heal (never decrypting) does not compute; its frames were
        // verified as they were read. Only unencrypted objects are compared with their ETags.
        let etag_checked = version.sse.is_none();
        // Rebuild the targets' shards from a verified read of the object.
        let (written, inline) =
            write_version_data(open, &version, erasure, &version.erasure.distribution, &drives, etag_checked)
                .await?;
        // Commit under the lock, if the version is still the current one.
        let op = Uuid::new_v4();
        let guard = match set.locks.exclusive(hash).await {
            Ok(g) => g,
            Err(e) => {
                abort_data(&drives, &version).await;
                return Err(e);
            }
        };
        let current = set.resolve_any(set.read_which(bucket, key, which, false).await);
        if !current.is_ok_and(|r| same_version(&r.version, &version)) {
            abort_data(&drives, &version).await;
            return Err(ObjectError::Raced("the object changed while it was healed".into()));
        }
        if let Err(e) = guard.ensure_held() {
            abort_data(&drives, &version).await;
            return Err(e);
        }
        // Commit and finish in a task of their own: a heal dropped half way (shutdown, an admin
        // request gone) never leaves a commit pending on a drive. The commits carry the lock's
        // fence: a heal whose lease passed on is refused by the drives' nodes.
        let (b, k, healed, targets) =
            (bucket.to_owned(), key.to_owned(), version.clone(), guard.fenced(&drives));
        let outcomes = to_completion(async move {
            let commits = targets.iter().enumerate().map(|(pos, d)| {
                let mut v = healed.clone();
                v.erasure.shard_index = v.erasure.distribution.get(pos).copied().unwrap_or(0);
                let frame = inline.as_ref().and_then(|f| f.get(usize::from(v.erasure.shard_index)).cloned());
                let ok = written.get(pos).copied().unwrap_or(false);
                let (b, k) = (&b, &k);
                async move {
                    match d {
                        Some(d) if ok => {
                            let committed = d.commit_version(b, k, v, frame, op).await;
                            if committed.is_ok() {
                                d.finish_op(op, true).await;
                            }
                            Some(committed)
                        }
                        Some(d) => {
                            Some(Err(DriveError::Stopped(format!("{}: writing shards failed", d.endpoint()))))
                        }
                        None => None,
                    }
                }
            });
            let outcomes = join_all(commits).await;
            drop(guard);
            outcomes
        })
        .await?;
        for (pos, r) in outcomes.into_iter().enumerate() {
            let Some(drive) = &set.drives[pos] else { continue };
            // What a drive acknowledged is read back against the record before it counts as
            // healed: a drive that stored something else (or a slip in the rebuild) is a failure
            // to report, not a success; reads would find it as bitrot and heal it again.
            let r = match r {
                Some(Ok(())) if !matches!(version.data, DataLocation::Inline(_)) => {
                    if data_ok(drive, &version, None, true).await {
                        Some(Ok(()))
                    } else {
                        tracing::error!(drive = drive.endpoint(), %bucket, %key, "healed data does not read back");
                        Some(Err(DriveError::Io(std::io::Error::other("healed data does not read back"))))
                    }
                }
                r => r,
            };
            match r {
                Some(Ok(())) => result.healed_drives.push(drive.endpoint().to_owned()),
                Some(Err(e)) => {
                    tracing::warn!(drive = drive.endpoint(), %bucket, %key, error = %e, "heal failed on drive");
                    result.failed_drives.push(drive.endpoint().to_owned());
                }
                None => {}
            }
        }
        Ok(result)
    }

    /// Removes the records of an object no read quorum holds, when every drive answered (an
    /// offline drive might hold the copies that make a quorum).
    async fn remove_dangling(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        hash: u64,
        which: VersionRef,
    ) -> Result<HealResult, ObjectError> {
        let guard = set.locks.exclusive(hash).await?;
        let reads = set.read_which(bucket, key, which, false).await;
        let mut result = HealResult::default();
        if reads.iter().any(|r| !matches!(r, Ok(_) | Err(DriveError::NotFound))) {
            return Ok(result);
        }
        if set.resolve_any(set.read_which(bucket, key, which, false).await).is_ok() {
            return Ok(result); // written meanwhile
        }
        guard.ensure_held()?;
        let op = Uuid::new_v4();
        for (drive, read) in guard.fenced(&set.drives).iter().zip(&reads) {
            let (Some(d), Ok((record, _))) = (drive, read) else { continue };
            let Some(latest) = record.latest() else { continue };
            // Healing restores, never removes, a version object lock keeps.
            if latest.locked_at(strata_types::time::now_nanos()).is_some() {
                tracing::warn!(drive = d.endpoint(), %bucket, %key, "a locked version no quorum holds is kept");
                continue;
            }
            match d.delete_version(bucket, key, latest.version_id, op).await {
                Ok(()) => {
                    d.finish_op(op, true).await;
                    result.dangling_removed += 1;
                }
                Err(e) => {
                    tracing::warn!(drive = d.endpoint(), %bucket, %key, error = %e, "cannot remove a dangling record")
                }
            }
        }
        Ok(result)
    }
}

/// `reader`, hashing what it reads only when `keep` (a heal compares only unencrypted objects
/// with their ETags).
fn hashing(reader: BlockReader<'_>, keep: bool) -> BlockReader<'_> {
    if keep {
        reader
    } else {
        reader.without_md5()
    }
}

/// Removes the shard files of `version`'s data that `drives` hold in temp (written by
/// [`write_version_data`], and not committed).
pub(crate) async fn abort_data(drives: &[Option<Arc<dyn Drive>>], version: &ObjectVersion) {
    let ids: Vec<Uuid> = match version.data {
        DataLocation::File(id) => vec![id],
        DataLocation::Multipart(_) => version.parts.iter().map(|p| p.data_id).collect(),
        DataLocation::Inline(_) => vec![],
    };
    for id in ids {
        join_all(drives.iter().flatten().map(|d| d.abort_shard_file(id))).await;
    }
}

/// Writes the data of `version`, read through `open` (every frame verified as it is read), as
/// shards in the split `erasure` with the shard distribution `dist` onto `drives` (those that are
/// `Some`), under the version's own data ids: what a heal writes onto the drives that lack it,
/// and a move between pools onto every drive of the set it moves to. Answers per drive whether
/// it holds the whole data, and for an inline version its frames. With `etag_checked`, data that
/// does not match the version's ETag (or a part's) is an error.
pub(crate) async fn write_version_data(
    open: OpenObject,
    version: &ObjectVersion,
    erasure: Arc<strata_erasure::Erasure>,
    dist: &[u8],
    drives: &[Option<Arc<dyn Drive>>],
    etag_checked: bool,
) -> Result<(Vec<bool>, Option<Vec<Bytes>>), ObjectError> {
    // Rebuilt in the record's blocks (a shard file's frames follow them).
    let block_size = version.erasure.block_size as usize;
    let size = version.size;
    Ok(match version.data {
        // A delete marker is its record alone.
        _ if version.delete_marker => (drives.iter().map(Option::is_some).collect(), None),
        DataLocation::Inline(_) => {
            let mut body = StreamBody(open.stream(0, size));
            let reader = BlockReader::new(&mut body, erasure.data_count(), block_size);
            let mut reader = hashing(reader, etag_checked);
            let block = reader.next_block().await?;
            let encoded = encode(erasure.clone(), reader.take_md5(), block, false).await?;
            if etag_checked
                && encoded.md5.clone().map(|m| hex::encode(m.finalize())) != Some(version.etag.clone())
            {
                return Err(ObjectError::Corrupt("the rebuilt object does not match its ETag".into()));
            }
            (drives.iter().map(Option::is_some).collect(), Some(encoded.inline_frames()))
        }
        DataLocation::File(id) => {
            let mut body = StreamBody(open.stream(0, size));
            let reader = BlockReader::new(&mut body, erasure.data_count(), block_size);
            let mut reader = hashing(reader, etag_checked);
            let first = reader.next_block().await?;
            let (md5, written, temp) =
                write_shard_files(drives, &mut reader, first, &erasure, dist, id, 1).await?;
            // Cleaned by `abort_data` on the paths that do not commit.
            temp.disarm();
            if etag_checked && md5.map(|m| hex::encode(m.finalize())) != Some(version.etag.clone()) {
                join_all(drives.iter().flatten().map(|d| d.abort_shard_file(id))).await;
                return Err(ObjectError::Corrupt("the rebuilt object does not match its ETag".into()));
            }
            (written, None)
        }
        DataLocation::Multipart(_) => {
            let mut written: Vec<bool> = drives.iter().map(Option::is_some).collect();
            let mut offset = 0;
            let open = Arc::new(open);
            for part in &version.parts {
                let stream = open.stream_shared(offset, part.size, crate::get::Check::Hashes);
                offset += part.size;
                let mut body = StreamBody(stream);
                let reader = BlockReader::new(&mut body, erasure.data_count(), block_size);
                let mut reader = hashing(reader, etag_checked);
                let first = reader.next_block().await?;
                let (md5, ok, temp) =
                    write_shard_files(drives, &mut reader, first, &erasure, dist, part.data_id, 1).await?;
                temp.disarm();
                // A part taken over from MinIO has no ETag of its own (MinIO keeps none once
                // an upload completes): its frames' hashes were checked as it was read.
                let known = !part.etag.is_empty();
                if etag_checked && known && md5.map(|m| hex::encode(m.finalize())) != Some(part.etag.clone())
                {
                    return Err(ObjectError::Corrupt(format!(
                        "rebuilt part {} does not match its ETag",
                        part.number
                    )));
                }
                for (w, ok) in written.iter_mut().zip(ok) {
                    *w &= ok;
                }
            }
            (written, None)
        }
    })
}
