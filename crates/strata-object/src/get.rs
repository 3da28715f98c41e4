//! GetObject and HeadObject: resolve the version, then stream a range of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use strata_drive::{Drive, DriveOps, ShardReader};
use strata_erasure::{bitrot, Erasure, ShardLayout};
use strata_meta::{DataLocation, ObjectVersion};
use tokio::sync::mpsc;

use crate::error::ObjectError;
use crate::healer::Healer;
use crate::set::ErasureSet;
use crate::{ObjectInfo, VersionRef};

/// Where each shard of an opened version can be read.
enum ShardSource {
    /// Frames of an inline version, by shard index (one frame each).
    Inline(Vec<Option<Bytes>>),
    /// Open shard files, by shard index.
    Files(Vec<Option<Arc<dyn ShardReader>>>),
    /// A multipart version: the drives holding it, by shard index; each part's files are opened
    /// when the stream reaches that part.
    Parts(Vec<Option<Arc<dyn Drive>>>),
}

/// Opens shard file `id` on each drive (by shard index) that has one. A drive that holds the
/// version's record but lost the file (or cannot read it) needs healing (`heal` is told),
/// whether or not a read will need that shard. Fails only when too few open because the process
/// ran out of open files (or memory): more drives would not help, and nothing is wrong with the
/// shards, so no heal either.
async fn open_files(
    drives: &[Option<Arc<dyn Drive>>],
    id: uuid::Uuid,
    data_count: usize,
    first: Option<(u64, usize)>,
    heal: Option<&HealNotice>,
) -> Result<Vec<Option<Arc<dyn ShardReader>>>, ObjectError> {
    let opened = open_each(drives, id, data_count, first).await;
    if opened.iter().filter(|f| f.is_ok()).count() < data_count {
        if let Some(e) = crate::set::exhausted(&opened) {
            return Err(e);
        }
    }
    // Missing or unreadable, that is; a drive that timed out (offline) or a process out of open
    // files has nothing a heal could fix now.
    if let (true, Some(h)) = (opened.iter().any(lost), heal) {
        h.send();
    }
    Ok(opened.into_iter().map(Result::ok).collect())
}

/// Opens shard file `id` on each drive (by shard index). With `first`, each of the first
/// `data_count` (the data shards') is told the read that comes first (see
/// [`Drive::open_shard_file_first`]).
async fn open_each(
    drives: &[Option<Arc<dyn Drive>>],
    id: uuid::Uuid,
    data_count: usize,
    first: Option<(u64, usize)>,
) -> Vec<Result<Arc<dyn ShardReader>, strata_drive::DriveError>> {
    join_all(drives.iter().enumerate().map(|(i, d)| async move {
        let first = first.filter(|_| i < data_count);
        match d {
            Some(d) => d.open_shard_file_first(id, first).await.map(Arc::from),
            None => Err(strata_drive::DriveError::Unreachable("offline at start".into())),
        }
    }))
    .await
}

/// The read a whole-file version of one block begins with: its data shards' one frame, which
/// any range of it reads. `None` for a larger version, whose first read depends on the range.
fn first_read(version: &ObjectVersion) -> Option<(u64, usize)> {
    let block_size = version.erasure.block_size as usize;
    if version.size > block_size as u64 {
        return None;
    }
    let layout = ShardLayout::new(version.size, block_size, usize::from(version.erasure.data_count));
    Some((layout.frame_offset(0), bitrot::HASH_SIZE + layout.shard_size(0) as usize))
}

/// Whether a failed open or read found the data missing or bad (a heal could fix it), rather
/// than its drive not answering or the process out of a resource.
fn lost<T>(r: &Result<T, strata_drive::DriveError>) -> bool {
    matches!(
        r,
        Err(strata_drive::DriveError::NotFound
            | strata_drive::DriveError::Corrupt(_)
            | strata_drive::DriveError::Io(_))
    )
}

/// An object version resolved and opened for reading: its shard files stay readable even if a
/// newer version replaces it while the body streams.
pub struct OpenObject {
    pub info: ObjectInfo,
    pub(crate) version: ObjectVersion,
    erasure: Arc<Erasure>,
    source: ShardSource,
    /// Told (once) when a read finds a shard missing or bad.
    heal: Option<HealNotice>,
    /// By shard index: its drive stopped answering (timed out); later blocks do not wait on it.
    given_up: Vec<AtomicBool>,
}

/// Queues the object for healing the first time a read finds something wrong.
struct HealNotice {
    healer: Arc<Healer>,
    bucket: String,
    key: String,
    sent: std::sync::atomic::AtomicBool,
}

impl HealNotice {
    fn new(healer: &Arc<Healer>, bucket: &str, key: &str) -> Self {
        Self {
            healer: healer.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            sent: Default::default(),
        }
    }

    fn send(&self) {
        if !self.sent.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.healer.notify(&self.bucket, &self.key);
        }
    }
}

/// The body of a GET: chunks in order; an `Err` ends the stream (the client sees a short body).
pub type ObjectStream = mpsc::Receiver<Result<Bytes, ObjectError>>;

/// How a read checks the shard blocks it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// By their bitrot hashes: a block that fails is read from parity instead.
    Hashes,
    /// Not at all here: the caller opens every byte of the stream under AES-GCM, whose tags
    /// catch whatever the hashes would (and more: bytes of another object or package), and reads
    /// again with [`Check::Hashes`] from the first package that does not open.
    Tags,
}

/// Resolves and opens a version of an object; with `healer`, a version some online drive lacks
/// (or holds badly) is queued for healing. A delete marker is [`ObjectError::DeleteMarker`]; a
/// version id no read quorum holds is [`ObjectError::NoSuchVersion`].
pub(crate) async fn open_object(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    hash: u64,
    which: VersionRef,
    for_read: bool,
    healer: Option<&Arc<Healer>>,
) -> Result<OpenObject, ObjectError> {
    let unlocked = match which {
        VersionRef::Current => open_unlocked(set, bucket, key, hash, for_read, healer).await,
        _ => None,
    };
    let open = match unlocked {
        Some(open) => open,
        None => open_version(set, bucket, key, hash, which, for_read, healer).await,
    };
    match open {
        Ok(o) if o.version.delete_marker => Err(ObjectError::DeleteMarker {
            version_id: o.version.version_id,
            mod_time: o.version.mod_time,
            current: which == VersionRef::Current,
        }),
        Err(ObjectError::ObjectNotFound) if which != VersionRef::Current => Err(ObjectError::NoSuchVersion),
        other => other,
    }
}

/// [`open_object`], delete markers included (healing copies them like any version).
pub(crate) async fn open_version(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    hash: u64,
    which: VersionRef,
    for_read: bool,
    healer: Option<&Arc<Healer>>,
) -> Result<OpenObject, ObjectError> {
    let _guard = set.locks.shared(hash).await?;
    open_version_held(set, bucket, key, which, for_read, healer).await
}

/// [`open_version`] by a caller that holds the object's lock already (a move between pools).
pub(crate) async fn open_version_held(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    which: VersionRef,
    for_read: bool,
    healer: Option<&Arc<Healer>>,
) -> Result<OpenObject, ObjectError> {
    let reads = set.read_which(bucket, key, which, for_read).await;
    // Drives that answered (not offline): those without the current version need healing;
    // an offline drive cannot take it, so it does not queue work on every read.
    let answered = reads
        .iter()
        .filter(|r| {
            matches!(
                r,
                Ok(_) | Err(strata_drive::DriveError::NotFound | strata_drive::DriveError::Corrupt(_))
            )
        })
        .count();
    let resolved = set.resolve_any(reads)?;
    let heal = healer.map(|h| HealNotice::new(h, bucket, key));
    // An answering drive without the current version (missing or stale record) needs healing.
    if resolved.holders.iter().filter(|h| h.is_some()).count() < answered {
        if let Some(h) = &heal {
            h.send();
        }
    }
    let version = resolved.version;
    let info = ObjectInfo::from_version(bucket, key, &version);
    let (data_count, parity_count) =
        (usize::from(version.erasure.data_count), usize::from(version.erasure.parity_count));
    let erasure = set.erasure_of(&version.erasure)?;
    let shard_count = data_count + parity_count;
    let dist = &version.erasure.distribution;
    let source = match version.data {
        _ if !for_read || version.delete_marker => ShardSource::Inline(vec![None; shard_count]),
        DataLocation::Inline(_) => {
            let mut frames = vec![None; shard_count];
            for (pos, holder) in resolved.holders.into_iter().enumerate() {
                if let (Some(Some(frame)), Some(&shard)) = (holder, dist.get(pos)) {
                    if let Some(slot) = frames.get_mut(usize::from(shard)) {
                        *slot = Some(frame);
                    }
                }
            }
            ShardSource::Inline(frames)
        }
        DataLocation::File(_) | DataLocation::Multipart(_) => {
            let by_shard = by_shard(set, dist, shard_count, |pos| {
                resolved.holders.get(pos).is_some_and(Option::is_some)
            });
            match version.data {
                DataLocation::File(id) => {
                    let first = first_read(&version);
                    let heal = heal.as_ref();
                    ShardSource::Files(open_files(&by_shard, id, erasure.data_count(), first, heal).await?)
                }
                _ => ShardSource::Parts(by_shard),
            }
        }
    };
    let given_up = (0..shard_count).map(|_| AtomicBool::new(false)).collect();
    Ok(OpenObject { info, version, erasure, source, heal, given_up })
}

/// The set's online drives by the shard index `dist` gives each position, those whose position
/// `uses` says.
fn by_shard(
    set: &ErasureSet,
    dist: &[u8],
    shard_count: usize,
    uses: impl Fn(usize) -> bool,
) -> Vec<Option<Arc<dyn Drive>>> {
    let mut by_shard: Vec<Option<Arc<dyn Drive>>> = vec![None; shard_count];
    for (pos, (drive, &shard)) in set.drives.iter().zip(dist).enumerate() {
        if let (Some(d), true, Some(slot)) = (drive, uses(pos), by_shard.get_mut(usize::from(shard))) {
            *slot = Some(d.clone());
        }
    }
    by_shard
}

/// The drives (by set position) a read without the lock asks first: enough that every
/// acknowledged write is on at least one of them and that they can rebuild a version of the set's
/// default split: `need` drives. This process's own drives come first (all of them), then whole
/// nodes, starting at one picked by the object's hash so that the nodes share the reads.
fn quorum_drives(set: &ErasureSet, hash: u64, need: usize) -> Vec<usize> {
    let mut chosen = Vec::with_capacity(set.drives.len());
    let mut nodes: Vec<(&str, Vec<usize>)> = Vec::new();
    for (pos, d) in set.drives.iter().enumerate() {
        let Some(d) = d else { continue };
        match d.node() {
            None => chosen.push(pos),
            Some(name) => match nodes.iter_mut().find(|(n, _)| *n == name) {
                Some((_, drives)) => drives.push(pos),
                None => nodes.push((name, vec![pos])),
            },
        }
    }
    let start = if nodes.is_empty() { 0 } else { (hash % nodes.len() as u64) as usize };
    for i in 0..nodes.len() {
        if chosen.len() >= need {
            break;
        }
        chosen.extend_from_slice(&nodes[(start + i) % nodes.len()].1);
    }
    chosen
}

/// [`open_version`] of the current version without the object's lock: the common case of a
/// read, at one round of record reads to the fewest nodes. `None` when this cannot answer and
/// the locked read must (the drives asked disagree or did not all answer, a change of the object
/// is in flight on one of them, the object is missing, or a shard it needs is missing or bad).
///
/// Why no lock is needed when it answers: the drives asked are at least half the set, so every
/// write acknowledged before this read began (on a write quorum, more than half the set) is on
/// at least one of them; they all hold the same version as their newest; and every one of them
/// says no change of the object was applied there and not yet kept or undone
/// ([`strata_drive::DriveCall::ReadSettled`]), so the version is kept for good (a write undone
/// after a read returned it cannot happen). A write still in flight is ordered after this read.
/// The data of a version that a newer write replaces while the body streams stays readable
/// through the shard files opened here, as under the lock.
async fn open_unlocked(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    hash: u64,
    for_read: bool,
    healer: Option<&Arc<Healer>>,
) -> Option<Result<OpenObject, ObjectError>> {
    let n = set.drives.len();
    let chosen = quorum_drives(set, hash, set.data_count().max(n.div_ceil(2)));
    let reads = join_all(chosen.iter().map(|&pos| async move {
        let d = set.drives.get(pos)?.as_ref()?;
        d.read_settled(bucket, key, for_read).await.ok()
    }))
    .await;
    // Every drive asked answered, settled, with a record.
    let mut records = Vec::with_capacity(reads.len());
    for read in reads {
        let read = read.filter(|r| r.settled)?;
        records.push(read.record?);
    }
    // The drives' copies differ only in their shard index.
    for (record, _) in &mut records {
        record.versions.first_mut()?.erasure.shard_index = 0;
    }
    let (first, _) = records.first()?;
    if records[1..].iter().any(|(r, _)| r.latest() != first.latest()) {
        return None;
    }
    let version = first.latest()?.clone();
    let data_count = usize::from(version.erasure.data_count);
    if for_read && records.len() < data_count {
        return None;
    }
    let info = ObjectInfo::from_version(bucket, key, &version);
    let erasure = match set.erasure_of(&version.erasure) {
        Ok(e) => e,
        Err(e) => return Some(Err(e)),
    };
    let shard_count = data_count + usize::from(version.erasure.parity_count);
    let dist = &version.erasure.distribution;
    let heal = healer.map(|h| HealNotice::new(h, bucket, key));
    // Every online drive by shard index: a drive not asked is read from too, when it has the
    // version's data (its data id is the version's own).
    let all_by_shard = || by_shard(set, dist, shard_count, |_| true);
    let source = match version.data {
        _ if !for_read || version.delete_marker => ShardSource::Inline(vec![None; shard_count]),
        DataLocation::Inline(_) => {
            let layout = ShardLayout::new(version.size, version.erasure.block_size as usize, data_count);
            let shard_size = layout.shard_size(0) as usize;
            let mut frames = vec![None; shard_count];
            for (&pos, (_, frame)) in chosen.iter().zip(records) {
                // A frame that fails its hash is read again, and healed, under the lock.
                let frame =
                    frame.filter(|f| bitrot::verify_with(erasure.frame_key(), f, shard_size).is_ok())?;
                *frames.get_mut(usize::from(*dist.get(pos)?))? = Some(frame);
            }
            ShardSource::Inline(frames)
        }
        DataLocation::File(id) => {
            let opened = open_each(&all_by_shard(), id, data_count, first_read(&version)).await;
            // A drive asked lacks the data: replaced since it answered, or lost (the locked read
            // sees which, and heals).
            for &pos in &chosen {
                if opened.get(usize::from(*dist.get(pos)?))?.is_err() {
                    return None;
                }
            }
            if let (true, Some(h)) = (opened.iter().any(lost), &heal) {
                h.send();
            }
            ShardSource::Files(opened.into_iter().map(Result::ok).collect())
        }
        DataLocation::Multipart(_) => ShardSource::Parts(all_by_shard()),
    };
    let given_up = (0..shard_count).map(|_| AtomicBool::new(false)).collect();
    Some(Ok(OpenObject { info, version, erasure, source, heal, given_up }))
}

impl OpenObject {
    /// Streams bytes `[offset, offset + len)` (already checked against the size). Blocks are
    /// read, verified and decoded one ahead of the client, through a bounded channel.
    pub fn stream(self, offset: u64, len: u64) -> ObjectStream {
        Arc::new(self).stream_shared(offset, len, Check::Hashes)
    }

    /// Bytes `[offset, offset + len)` collected in memory (a small document, a test's check).
    pub async fn read_range(self, offset: u64, len: u64) -> Result<Vec<u8>, ObjectError> {
        let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        let mut rx = self.stream(offset, len);
        while let Some(chunk) = rx.recv().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    /// The whole object in memory (see [`OpenObject::read_range`]).
    pub async fn read_whole(self) -> Result<Vec<u8>, ObjectError> {
        let size = self.info.size;
        self.read_range(0, size).await
    }

    /// As [`OpenObject::stream`], for several ranges of one opened object.
    pub(crate) fn stream_shared(self: &Arc<Self>, offset: u64, len: u64, check: Check) -> ObjectStream {
        let (tx, rx) = mpsc::channel(2 * self.erasure.data_count().max(2));
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.produce(offset, len, check, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        rx
    }

    async fn produce(
        &self,
        offset: u64,
        len: u64,
        check: Check,
        tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
    ) -> Result<(), ObjectError> {
        let block_size = self.version.erasure.block_size as usize;
        let data_count = self.erasure.data_count();
        let ShardSource::Parts(drives) = &self.source else {
            let layout = ShardLayout::new(self.version.size, block_size, data_count);
            self.stream_range(&self.source, &layout, offset, len, check, tx).await?;
            return Ok(());
        };
        let end = offset + len;
        let mut part_start = 0u64;
        for part in &self.version.parts {
            let part_end = part_start + part.size;
            let (from, to) = (offset.max(part_start), end.min(part_end));
            if from < to {
                let files = open_files(drives, part.data_id, data_count, None, self.heal.as_ref()).await?;
                let source = ShardSource::Files(files);
                let layout = ShardLayout::new(part.size, block_size, data_count);
                if !self.stream_range(&source, &layout, from - part_start, to - from, check, tx).await? {
                    return Ok(());
                }
            }
            part_start = part_end;
        }
        Ok(())
    }

    /// Streams `[offset, offset + len)` of one shard-file set; `false` when the client went away.
    async fn stream_range(
        &self,
        source: &ShardSource,
        layout: &ShardLayout,
        offset: u64,
        len: u64,
        check: Check,
        tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
    ) -> Result<bool, ObjectError> {
        let end = offset + len;
        for block in layout.blocks_for_range(offset, len) {
            let shards = self.read_block(source, layout, block, check).await?;
            let block_start = block * layout.block_size;
            let mut pos = block_start;
            for shard in shards {
                let shard_len = shard.len() as u64;
                let shard_end = (pos + shard_len).min(block_start + layout.block_len(block));
                let (from, to) = (offset.max(pos), end.min(shard_end));
                if from < to {
                    let piece = shard.slice((from - pos) as usize..(to - pos) as usize);
                    if tx.send(Ok(piece)).await.is_err() {
                        return Ok(false);
                    }
                }
                pos += shard_len;
            }
        }
        Ok(true)
    }

    /// Reads (and checks, as `check` says) the data shards of one block, reaching for parity
    /// shards only when a data shard is missing or bad.
    async fn read_block(
        &self,
        source: &ShardSource,
        layout: &ShardLayout,
        block: u64,
        check: Check,
    ) -> Result<Vec<Bytes>, ObjectError> {
        let data_count = self.erasure.data_count();
        let shard_count = self.erasure.shard_count();
        let shard_size = layout.shard_size(block) as usize;
        let key = self.erasure.frame_key();
        let mut shards: Vec<Option<Bytes>> =
            read_shards(source, 0..data_count, layout, block, shard_size, (check, key), &self.given_up).await;
        if shards.iter().any(Option::is_none) {
            // A shard that was there to read and failed (rot, a vanished file) needs healing; one
            // on a drive that is offline has nothing to read and nothing a heal could fix now.
            let failed = shards.iter().enumerate().any(|(i, s)| s.is_none() && has_source(source, i));
            if let (true, Some(h)) = (failed, &self.heal) {
                h.send();
            }
            let parity = read_shards(
                source,
                data_count..shard_count,
                layout,
                block,
                shard_size,
                (check, key),
                &self.given_up,
            )
            .await;
            shards.extend(parity);
        } else {
            shards.resize(shard_count, None);
        }
        self.erasure.decode_block(shards).map_err(|e| ObjectError::ReadQuorum {
            needed: data_count,
            online: match e {
                strata_erasure::ErasureError::TooFewShards { available, .. } => available,
                _ => 0,
            },
        })
    }
}

/// Whether shard `index` has somewhere to be read from.
fn has_source(source: &ShardSource, index: usize) -> bool {
    match source {
        ShardSource::Inline(frames) => frames.get(index).is_some_and(Option::is_some),
        ShardSource::Files(readers) => readers.get(index).is_some_and(Option::is_some),
        ShardSource::Parts(_) => false,
    }
}

async fn read_shards(
    source: &ShardSource,
    indexes: std::ops::Range<usize>,
    layout: &ShardLayout,
    block: u64,
    shard_size: usize,
    (check, key): (Check, bitrot::Key),
    given_up: &[AtomicBool],
) -> Vec<Option<Bytes>> {
    match source {
        ShardSource::Inline(frames) => indexes
            .map(|i| {
                let frame = frames.get(i)?.as_ref()?;
                let range = match check {
                    Check::Hashes => bitrot::verify_with(key, frame, shard_size),
                    Check::Tags => bitrot::shard_range(frame, shard_size),
                };
                range.ok().map(|r| frame.slice(r))
            })
            .collect(),
        ShardSource::Files(readers) => {
            let offset = layout.frame_offset(block);
            join_all(indexes.map(|i| async move {
                let reader = readers.get(i)?.as_ref()?;
                let gone = given_up.get(i)?;
                if gone.load(Ordering::Relaxed) {
                    return None;
                }
                let read = match check {
                    Check::Hashes => reader.read_frame(offset, shard_size, key).await,
                    Check::Tags => reader.read_frame_unhashed(offset, shard_size).await,
                };
                match read {
                    Ok(shard) => Some(shard),
                    // Unavailable mid-read is a time-out (or a vanished drive): one is enough.
                    Err(e) if e.is_unavailable() => {
                        gone.store(true, Ordering::Relaxed);
                        None
                    }
                    Err(_) => None,
                }
            }))
            .await
        }
        ShardSource::Parts(_) => indexes.map(|_| None).collect(),
    }
}
