//! PutObject: stream a body into erasure-coded, bitrot-framed shards on every drive of a set.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures_util::future::join_all;
use md5::{Digest, Md5};
use strata_crypto::package::{PACKAGE_SIZE, SEALED_PACKAGE_SIZE};
use strata_drive::DriveOps;
use strata_drive::{DriveError, ShardWriter};
use strata_erasure::{bitrot, Erasure};
use strata_meta::{DataLocation, ErasureInfo, ObjectVersion};
use strata_types::limits::{BLOCK_SIZE, BLOCK_SIZE_MAX, INLINE_SIZE_MAX, MD5_APART_MIN, PUT_OBJECT_SIZE_MAX};
use uuid::Uuid;

use crate::error::{BodyError, ObjectError};
use crate::quorum::write_quorum;
use crate::set::{commit_stamped, Drives, ErasureSet, StampedCommitFn};
use crate::ObjectInfo;

/// The request body as the S3 layer decodes and verifies it (chunk signatures, payload hash,
/// checksums). `next_chunk` returns `None` at the end, and an error if verification failed there.
#[async_trait]
pub trait BodyReader: Send {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError>;
    /// Verified S3 checksums of the whole body (algorithm → base64), valid after the end.
    fn checksums(&self) -> BTreeMap<String, String>;
    /// The S3 checksum this body computes, if any.
    fn checksum_algorithm(&self) -> Option<crate::checksum::Algorithm> {
        None
    }
    /// The MD5 of the plaintext, when this body seals what it reads (valid after the end).
    fn plain_md5(&self) -> Option<[u8; 16]> {
        None
    }
    /// Whether this body seals what it reads: then the layer computes no MD5 of the stored
    /// (sealed) bytes, which no ETag uses (see [`crate::sse::digests`]).
    fn seals(&self) -> bool {
        false
    }
    /// The MD5 of a sealed body's package tags (valid after the end): the ETag digest of
    /// SSE-KMS and SSE-C objects, which AWS says is not an MD5 of the data.
    fn tags_md5(&self) -> Option<[u8; 16]> {
        None
    }
    /// Appends the body's next bytes to `block` until it holds `block_size` bytes (`Ok(true)`)
    /// or the body has ended (`Ok(false)`); `rest` carries a chunk's bytes past the block to
    /// the next call. A sealing body seals straight into `block` instead (and keeps its own rest).
    async fn fill_block(
        &mut self,
        block: &mut BytesMut,
        block_size: usize,
        rest: &mut Option<Bytes>,
    ) -> Result<bool, BodyError> {
        copy_chunks(self, block, block_size, rest).await
    }
}

/// A body served from bytes already in memory, in pieces of at most 1 MiB sliced from them (no
/// copy): a speedtest object cut from one shared random buffer, a sealed system document.
pub struct BytesBody {
    data: Bytes,
    sent: usize,
}

impl BytesBody {
    pub fn new(data: Bytes) -> Self {
        Self { data, sent: 0 }
    }
}

#[async_trait]
impl BodyReader for BytesBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        if self.sent == self.data.len() {
            return Ok(None);
        }
        let end = (self.sent + strata_types::limits::BLOCK_SIZE).min(self.data.len());
        let chunk = self.data.slice(self.sent..end);
        self.sent = end;
        Ok(Some(chunk))
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// [`BodyReader::fill_block`] by copying `body`'s chunks into `block`.
pub(crate) async fn copy_chunks<B: BodyReader + ?Sized>(
    body: &mut B,
    block: &mut BytesMut,
    block_size: usize,
    rest: &mut Option<Bytes>,
) -> Result<bool, BodyError> {
    while block.len() < block_size {
        let chunk = match rest.take() {
            Some(c) => c,
            None => match body.next_chunk().await? {
                Some(c) => c,
                None => return Ok(false),
            },
        };
        let room = block_size - block.len();
        if chunk.len() > room {
            block.extend_from_slice(&chunk[..room]);
            *rest = Some(chunk.slice(room..));
        } else {
            block.extend_from_slice(&chunk);
        }
    }
    Ok(true)
}

/// What the client asked to store with the object.
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    pub headers: BTreeMap<String, String>,
    pub user_metadata: BTreeMap<String, String>,
    /// From `Content-MD5`: the body must hash to this or the PUT fails with `BadDigest`.
    pub content_md5: Option<[u8; 16]>,
    /// Parity for this object (storage class); `None` = the set's default.
    pub parity_count: Option<usize>,
    /// Object tags (`x-amz-tagging`), already validated.
    pub tags: BTreeMap<String, String>,
    /// A conditional write (`If-None-Match: *`, `If-Match`), checked under the object's lock
    /// just before commit.
    pub condition: Option<WriteCondition>,
    /// Multipart uploads only: the checksum every part carries and how they combine.
    pub checksum: Option<(crate::checksum::Algorithm, crate::checksum::ChecksumType)>,
    /// Object lock retention of the new version (the bucket's default applies without one).
    pub retention: Option<strata_meta::Retention>,
    /// Object lock legal hold of the new version.
    pub legal_hold: bool,
    /// Encrypt the object (or, on CreateMultipartUpload, every part) at rest.
    pub sse: Option<crate::sse::SsePut>,
    /// The new object's owner and ACL (`None`: the bucket owner's, private).
    pub acl: Option<strata_meta::Acl>,
    /// An imported version's ETag as the store it came from gave it (a multipart object's
    /// `<md5 of the parts' md5s>-<parts>`, which the importer checked against the parts it read);
    /// set by [`crate::ObjectLayer::import_version`] from its [`crate::Imported`]. `None`: the
    /// body's MD5.
    pub imported_etag: Option<String>,
    /// The new version's replication status. `None` on a client's write: PENDING when a rule
    /// of the bucket's replication configuration takes it (see [`crate::ObjectLayer::put_object`]).
    pub replication: Option<strata_meta::ReplicationStatus>,
}

/// What must hold of the current object for a conditional write to go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    /// `If-None-Match: *`: the key must not exist.
    NoneMatchAny,
    /// `If-Match`: the current object's ETag (without quotes) must be this.
    Match(String),
    /// `If-Match: *` (DeleteObject's): the key must exist.
    MatchAny,
}

/// Checks a write condition against the object's current version (caller holds the lock).
pub(crate) async fn check_condition(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    condition: &Option<WriteCondition>,
) -> Result<(), ObjectError> {
    if condition.is_none() {
        return Ok(());
    }
    check_condition_on(set, set.read_records(bucket, key, false).await, condition)
}

/// The last step of a write under the object's lock: one read of the drives' current versions
/// checks the write's `condition` and gives the new version its stamp
/// ([`ErasureSet::stamp_after`]); answers that stamp and the newest stamp any drive answered (0:
/// none), which a conditional commit carries so that a drive holding anything newer refuses it.
pub(crate) async fn checked_stamp(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    condition: &Option<WriteCondition>,
) -> Result<(u64, u64), ObjectError> {
    let reads = set.read_records(bucket, key, false).await;
    let stamp = set.stamp_after(&reads)?;
    let newest = newest_stamp(&reads);
    check_condition_on(set, reads, condition)?;
    Ok((stamp, newest))
}

/// The newest stamp of any version the drives answered (0: none).
pub(crate) fn newest_stamp(reads: &[crate::set::RecordRead]) -> u64 {
    reads.iter().flatten().filter_map(|(r, _)| r.latest().map(|v| v.mod_time)).max().unwrap_or(0)
}

/// The write's `condition`, checked under the object's lock against the drives' current
/// versions (nothing is read without one). The stamps read move this node's clock past them
/// ([`checked_stamp`]), so the commit that follows is not refused for them. Answers the
/// newest stamp the condition was checked against, for the commit to carry
/// ([`strata_drive::DriveOps::commit_checked_version`]): the lock alone does not keep the
/// object still between the check and the commit (a holder paused past its lease commits after
/// the next holder has come and gone), the drives do.
pub(crate) async fn check_locked(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    condition: &Option<WriteCondition>,
) -> Result<Option<u64>, ObjectError> {
    match condition {
        None => Ok(None),
        Some(_) => checked_stamp(set, bucket, key, condition).await.map(|(_, newest)| Some(newest)),
    }
}

/// [`check_condition`] against drive answers already read.
fn check_condition_on(
    set: &ErasureSet,
    reads: Vec<crate::set::RecordRead>,
    condition: &Option<WriteCondition>,
) -> Result<(), ObjectError> {
    let Some(condition) = condition else { return Ok(()) };
    let current = set.resolve(reads);
    match (condition, current) {
        (WriteCondition::NoneMatchAny, Ok(_)) => Err(ObjectError::PreconditionFailed),
        (WriteCondition::NoneMatchAny, Err(ObjectError::ObjectNotFound)) => Ok(()),
        (WriteCondition::Match(etag), Ok(r)) if r.version.etag == *etag => Ok(()),
        (WriteCondition::Match(_), Ok(_)) => Err(ObjectError::PreconditionFailed),
        (WriteCondition::MatchAny, Ok(_)) => Ok(()),
        (_, Err(e)) => Err(e),
    }
}

/// The erasure block size a new object (or upload) is stored with: [`BLOCK_SIZE`] of plain
/// bytes, or for a sealed body the same 16 packages sealed ([`SEALED_BLOCK_SIZE`]), so a sealed
/// package never straddles two blocks and a 1 MiB object stays one block once sealed.
pub(crate) fn block_size_for(sealed: bool) -> usize {
    if sealed {
        SEALED_BLOCK_SIZE
    } else {
        BLOCK_SIZE
    }
}

/// The erasure block size of encrypted objects: the packages of [`BLOCK_SIZE`] plain bytes,
/// sealed.
pub const SEALED_BLOCK_SIZE: usize = BLOCK_SIZE / PACKAGE_SIZE * SEALED_PACKAGE_SIZE;
const _: () = assert!(BLOCK_SIZE.is_multiple_of(PACKAGE_SIZE) && SEALED_BLOCK_SIZE <= BLOCK_SIZE_MAX);

/// Cuts the body into blocks of exactly `block_size` (the last may be shorter).
pub(crate) struct BlockReader<'a> {
    body: &'a mut dyn BodyReader,
    block_size: usize,
    pending: Option<Bytes>,
    eof: bool,
    total: u64,
    /// Room for zero padding to a multiple of the data count, so encoding never reallocates.
    capacity: usize,
    /// The MD5 of the bytes stored, until the blocks' encoding takes it (none for sealed
    /// bodies, whose ETags are other digests, and for heals that need none).
    md5: Option<Md5>,
}

impl<'a> BlockReader<'a> {
    /// A reader of `body` in blocks of `block_size` (the record's; see [`block_size_for`]).
    pub(crate) fn new(body: &'a mut dyn BodyReader, data_count: usize, block_size: usize) -> Self {
        let md5 = (!body.seals()).then(Md5::new);
        let capacity = block_size + data_count;
        Self { body, block_size, pending: None, eof: false, total: 0, capacity, md5 }
    }

    /// Computes no MD5 of the bytes read.
    pub(crate) fn without_md5(mut self) -> Self {
        self.md5 = None;
        self
    }

    /// The MD5 state, for the encoding of the first block to carry on.
    pub(crate) fn take_md5(&mut self) -> Option<Md5> {
        self.md5.take()
    }
}

impl BlockReader<'_> {
    pub(crate) async fn next_block(&mut self) -> Result<BytesMut, ObjectError> {
        let mut block = BytesMut::with_capacity(self.capacity);
        if !self.eof {
            self.eof = !self.body.fill_block(&mut block, self.block_size, &mut self.pending).await?;
        }
        self.total += block.len() as u64;
        if self.total > PUT_OBJECT_SIZE_MAX {
            return Err(ObjectError::EntityTooLarge);
        }
        Ok(block)
    }
}

/// One encoded block: the running MD5 (if one is kept) and, per shard index, the frame's hash
/// and shard bytes.
pub(crate) struct Encoded {
    pub md5: Option<Md5>,
    pub frames: Vec<([u8; 32], Bytes)>,
}

impl Encoded {
    /// Each shard's frame (hash then shard bytes) as one buffer: the inline form.
    pub(crate) fn inline_frames(&self) -> Vec<Bytes> {
        self.frames
            .iter()
            .map(|(hash, shard)| {
                let mut f = BytesMut::with_capacity(32 + shard.len());
                f.extend_from_slice(hash);
                f.extend_from_slice(shard);
                f.freeze()
            })
            .collect()
    }
}

/// Streams of blocks being written to shard files now (see [`md5_apart`]).
static STREAMS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts a stream in [`STREAMS`] while it lives.
struct Streaming;

impl Streaming {
    fn new() -> Self {
        STREAMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        STREAMS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether a stream's next block may have its MD5 computed apart from its coding: only when
/// fewer streams run than the machine has cores. Alone, a stream's blocks then take the longer
/// of the two rather than their sum; among others, the cores are busy anyway and the second
/// thread hop per block is only a cost (the first block of each object keeps to one hop too).
fn md5_apart() -> bool {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    STREAMS.load(std::sync::atomic::Ordering::Relaxed) < cores
}

/// Codes one block and carries its MD5 on. `apart`: the MD5 may run on a thread of its own
/// beside the coding (see [`md5_apart`]).
pub(crate) async fn encode(
    erasure: Arc<Erasure>,
    md5: Option<Md5>,
    mut block: BytesMut,
    apart: bool,
) -> Result<Encoded, ObjectError> {
    let failed = |e: tokio::task::JoinError| ObjectError::TaskFailed(format!("encoding a block: {e}"));
    let len = block.len();
    erasure.pad(&mut block);
    let block = block.freeze();
    let data = block.slice(..len);
    let code = move || -> Result<Vec<([u8; 32], Bytes)>, ObjectError> {
        let shards = erasure.encode_padded(block)?;
        let key = erasure.frame_key();
        Ok(shards.into_iter().map(|s| (bitrot::hash_with(key, &s), s)).collect())
    };
    match md5 {
        // A large block's MD5 (strictly one byte after another, ~1.5 ms per MiB) runs on one
        // blocking thread while another codes it and hashes its shards: a single stream's
        // blocks then take the longer of the two, not their sum.
        Some(mut m) if apart && len >= MD5_APART_MIN => {
            let md5 = tokio::task::spawn_blocking(move || {
                m.update(&data);
                m
            });
            let (md5, frames) = tokio::join!(md5, tokio::task::spawn_blocking(code));
            Ok(Encoded { md5: Some(md5.map_err(failed)?), frames: frames.map_err(failed)?? })
        }
        md5 => tokio::task::spawn_blocking(move || {
            let md5 = md5.map(|mut m| {
                m.update(&data);
                m
            });
            Ok(Encoded { md5, frames: code()? })
        })
        .await
        .map_err(failed)?,
    }
}

/// Writers per drive position; `None` once a drive failed (it will miss this version).
type Writers = Vec<Option<Box<dyn ShardWriter>>>;

fn alive(writers: &Writers) -> usize {
    writers.iter().filter(|w| w.is_some()).count()
}

/// Writes one block's frames; answers how many writers failed because their drive is full.
async fn write_frames(writers: &mut Writers, distribution: &[u8], frames: &[([u8; 32], Bytes)]) -> usize {
    let full = join_all(writers.iter_mut().zip(distribution).map(|(slot, &shard)| async move {
        if let Some(w) = slot {
            let (hash, bytes) = &frames[usize::from(shard)];
            if let Err(e) = w.write_frame(*hash, bytes.clone()).await {
                tracing::warn!(error = %e, "a shard write failed");
                *slot = None;
                return crate::set::is_full(&e);
            }
        }
        false
    }))
    .await;
    full.into_iter().filter(|f| *f).count()
}

pub(crate) struct PutTarget<'a> {
    pub set: &'a ErasureSet,
    pub bucket: &'a str,
    pub key: &'a str,
    pub hash: u64,
    /// Told when the write met its quorum but missed drives.
    pub healer: &'a crate::healer::Healer,
    /// The new version's id: a new one in a versioning-enabled bucket, else `None` (the write
    /// replaces the `null` version).
    pub version_id: Option<Uuid>,
    /// An imported version's own time (nanoseconds): it is committed in its place among the
    /// object's versions, not stamped as the newest (see [`crate::ObjectLayer::import_version`]).
    pub imported_at: Option<u64>,
    /// With several pools: the check that the key still belongs in this pool, made under the lock.
    pub pool: Option<crate::pools::PoolCheck<'a>>,
}

/// [`put_object`] of `body` sealed first when `opts.sse` asks for it (a single PUT is one
/// segment, numbered 0).
pub(crate) async fn put_object_sealing(
    t: PutTarget<'_>,
    body: &mut dyn BodyReader,
    opts: PutOptions,
) -> Result<ObjectInfo, ObjectError> {
    match opts.sse.clone() {
        Some(sse) => {
            let mut sealing = crate::sse::SealingBody::new(body, &sse, 0);
            put_object(t, &mut sealing, opts).await
        }
        None => put_object(t, body, opts).await,
    }
}

pub(crate) async fn put_object(
    t: PutTarget<'_>,
    body: &mut dyn BodyReader,
    opts: PutOptions,
) -> Result<ObjectInfo, ObjectError> {
    let set = t.set;
    let n = set.drives.len();
    let parity_count = opts.parity_count.unwrap_or(set.parity_count);
    if parity_count > n / 2 {
        return Err(ObjectError::InvalidParity(parity_count));
    }
    let data_count = n - parity_count;
    let erasure = set.erasure_for(data_count, parity_count)?;
    let quorum = write_quorum(data_count, parity_count);
    // Fail fast before reading the body; the check that counts runs again under the lock.
    check_condition(set, t.bucket, t.key, &opts.condition).await?;
    let condition = opts.condition.clone();
    if set.online_count() < quorum {
        return Err(ObjectError::WriteQuorum { needed: quorum, online: set.online_count() });
    }
    let distribution = strata_cluster::placement::distribution(t.hash, n);
    let block_size = block_size_for(body.seals());
    let mut reader = BlockReader::new(body, data_count, block_size);

    let first = reader.next_block().await?;
    // `finished[pos]`: the drive at `pos` holds the whole data (a file write may fail half way).
    let (md5, data, inline, finished, temp) = if reader.eof && first.len() as u64 <= INLINE_SIZE_MAX {
        let encoded = encode(erasure.clone(), reader.take_md5(), first, false).await?;
        let frames = encoded.inline_frames();
        (encoded.md5, DataLocation::Inline(Uuid::new_v4()), Some(frames), vec![true; n], TempShards::none())
    } else {
        let data_id = Uuid::new_v4();
        let (md5, finished, temp) =
            write_shard_files(&set.drives, &mut reader, first, &erasure, &distribution, data_id, quorum)
                .await?;
        (md5, DataLocation::File(data_id), None, finished, temp)
    };
    let size = reader.total;
    let (digest, checked) =
        crate::sse::digests(opts.sse.as_ref(), md5.map(|m| m.finalize().into()), &*reader.body);
    if opts.content_md5.is_some_and(|want| want != checked) {
        temp.abort().await;
        return Err(ObjectError::BadDigest);
    }
    // SSE-C: the checksums go into the envelope sealed; the reply still shows them.
    let checksums = reader.body.checksums();
    let imported_etag = opts.imported_etag;
    let (stored_checksums, sealed) =
        crate::sse::seal_checksums(opts.sse.as_ref().map(|s| (&s.envelope, &s.cipher)), 0, &checksums)?;
    let mut version = ObjectVersion {
        version_id: t.version_id,
        // Stamped under the lock, below.
        mod_time: 0,
        delete_marker: false,
        size,
        etag: hex::encode(digest),
        headers: opts.headers,
        user_metadata: opts.user_metadata,
        checksums: stored_checksums,
        erasure: ErasureInfo {
            bitrot: Default::default(),
            data_count: data_count as u8,
            parity_count: parity_count as u8,
            block_size: block_size as u32,
            shard_index: 0,
            distribution: distribution.clone(),
        },
        data,
        parts: vec![],
        tags: opts.tags,
        retention: opts.retention,
        legal_hold: opts.legal_hold,
        sse: opts.sse.map(|s| Box::new(strata_meta::SseEnvelope { sealed_checksums: sealed, ..s.envelope })),
        acl: opts.acl,
        replication: opts.replication,
    };
    let op = Uuid::new_v4();
    let guard = match set.locks.exclusive(t.hash).await {
        Ok(g) => g,
        Err(e) => {
            temp.abort().await;
            return Err(e);
        }
    };
    let checked = match check_locked(set, t.bucket, t.key, &condition).await {
        Ok(checked) => checked,
        Err(e) => {
            temp.abort().await;
            return Err(e);
        }
    };
    let elsewhere = match &t.pool {
        Some(pool) => match pool.prepare(set, t.bucket, t.key).await {
            Ok(elsewhere) => elsewhere,
            Err(e) => {
                temp.abort().await;
                return Err(e);
            }
        },
        None => Vec::new(),
    };
    if let Err(e) = guard.ensure_held() {
        temp.abort().await;
        return Err(e);
    }
    if let Some(at) = t.imported_at {
        version.mod_time = at;
        if let Some(etag) = imported_etag {
            version.etag = etag;
        }
        return commit_imported(t, version, inline, finished, temp, guard, quorum, op).await;
    }
    // A `null` version replaced in other pools goes once this one is in, under the same lock.
    let replaced = if t.version_id.is_none() { elsewhere.len() } else { 0 };
    let (guard, guards) = guard.with_spares(replaced);
    let (bucket, key, committed) = (t.bucket.to_owned(), t.key.to_owned(), version.clone());
    let (data_id, file) = (data.data_id(), matches!(data, DataLocation::File(_)));
    let commit: StampedCommitFn = Box::new(move |pos, d, stamp, again| {
        let (mut v, frame) = drive_copy(&committed, inline.as_ref(), pos);
        v.mod_time = stamp;
        let (bucket, key, ok) = (bucket.clone(), key.clone(), finished[pos]);
        Box::pin(async move {
            if !ok {
                return Err(unfinished(d.as_ref(), data_id).await);
            }
            if again {
                return d.update_version(&bucket, &key, v, op).await;
            }
            let committed = match checked {
                Some(checked) => d.commit_checked_version(&bucket, &key, v, frame, op, checked).await,
                None => d.commit_new_version(&bucket, &key, v, frame, op).await,
            };
            // What the drive did not take stays in its temp folder: remove it now, unless it
            // waits for the version stamped again.
            if file && committed.as_ref().is_err_and(|e| !matches!(e, DriveError::NotNewest { .. })) {
                d.abort_shard_file(data_id).await;
            }
            committed
        })
    });
    // From here the commit task owns the temp files (and the lock).
    temp.disarm();
    let (results, outcome) =
        commit_stamped(set.drives.clone(), quorum, op, guard, set.stamps.clone(), commit).await?;
    version.mod_time = outcome?;
    if crate::set::missed_answering_drive(&results) {
        t.healer.notify(t.bucket, t.key);
    }
    if let (Some(pool), false) = (&t.pool, guards.is_empty()) {
        pool.drop_replaced(&elsewhere, t.bucket, t.key, version.mod_time, guards).await;
    }
    let mut info = ObjectInfo::from_version(t.bucket, t.key, &version);
    info.checksums = checksums;
    Ok(info)
}

/// The commit of an imported version: at its own time, in its place among the versions the
/// drives hold (older versions imported later go behind newer ones), on a write quorum.
#[allow(clippy::too_many_arguments)]
async fn commit_imported(
    t: PutTarget<'_>,
    version: ObjectVersion,
    inline: Option<Vec<Bytes>>,
    finished: Vec<bool>,
    temp: TempShards,
    guard: crate::lock::LockGuard,
    quorum: usize,
    op: Uuid,
) -> Result<ObjectInfo, ObjectError> {
    let (bucket, key, committed) = (t.bucket.to_owned(), t.key.to_owned(), version.clone());
    let (data_id, file) = (version.data.data_id(), matches!(version.data, DataLocation::File(_)));
    let commit: crate::set::CommitFn = Box::new(move |pos, d| {
        let (v, frame) = drive_copy(&committed, inline.as_ref(), pos);
        let (bucket, key, ok) = (bucket.clone(), key.clone(), finished[pos]);
        Box::pin(async move {
            if !ok {
                return Err(unfinished(d.as_ref(), data_id).await);
            }
            let committed = d.commit_version(&bucket, &key, v, frame, op).await;
            if file && committed.is_err() {
                d.abort_shard_file(data_id).await;
            }
            committed
        })
    });
    temp.disarm();
    let (results, outcome) =
        crate::set::commit_on_quorum(t.set.drives.clone(), quorum, op, guard, commit).await?;
    outcome?;
    if crate::set::missed_answering_drive(&results) {
        t.healer.notify(t.bucket, t.key);
    }
    Ok(ObjectInfo::from_version(t.bucket, t.key, &version))
}

/// Drive `pos`'s copy of a new version's record (with the shard index it holds) and, for an
/// inline version, that shard's frame.
pub(crate) fn drive_copy(
    version: &ObjectVersion,
    inline: Option<&Vec<Bytes>>,
    pos: usize,
) -> (ObjectVersion, Option<Bytes>) {
    let shard = version.erasure.distribution[pos];
    let mut v = version.clone();
    v.erasure.shard_index = shard;
    (v, inline.map(|f| f[usize::from(shard)].clone()))
}

/// A drive whose shard write did not finish holds only part of the data: committing it would
/// move a truncated file into place and count it toward the quorum. Its file goes, and the
/// commit fails on it.
pub(crate) async fn unfinished(d: &dyn strata_drive::Drive, data_id: Uuid) -> DriveError {
    d.abort_shard_file(data_id).await;
    shard_write_failed(d).await
}

/// The error of a drive whose shard write did not finish: it takes no commit. Offline (its file
/// could not even be created), it says so, and healing waits for its return; otherwise it
/// answered and needs healing now.
pub(crate) async fn shard_write_failed(d: &dyn strata_drive::Drive) -> DriveError {
    match d.disk_info().await {
        Err(e) if e.is_unavailable() => e,
        _ => DriveError::Io(std::io::Error::other("its shard write did not finish")),
    }
}

/// What [`write_file_data`] stored: a shard file per drive under `data_id`, still in temp.
pub(crate) struct Written {
    pub data_id: Uuid,
    pub size: u64,
    /// The MD5 of the bytes stored (none for a sealed body).
    pub md5: Option<[u8; 16]>,
    /// Per drive position: its shard file is whole (only those may be committed).
    pub finished: Vec<bool>,
    /// Removes the files if the request goes away before their commit.
    pub temp: TempShards,
}

/// Streams a whole body into new temp shard files in blocks of `block_size` (no inline form:
/// multipart parts). Checks the Content-MD5 before returning; on any error the temp files are
/// gone.
pub(crate) async fn write_file_data(
    set: &ErasureSet,
    body: &mut dyn BodyReader,
    erasure: &Arc<Erasure>,
    block_size: usize,
    distribution: &[u8],
    quorum: usize,
    content_md5: Option<[u8; 16]>,
) -> Result<Written, ObjectError> {
    let mut reader = BlockReader::new(body, erasure.data_count(), block_size);
    let first = reader.next_block().await?;
    let data_id = Uuid::new_v4();
    let (md5, finished, temp) =
        write_shard_files(&set.drives, &mut reader, first, erasure, distribution, data_id, quorum).await?;
    let md5: Option<[u8; 16]> = md5.map(|m| m.finalize().into());
    if content_md5.is_some_and(|want| Some(want) != md5) {
        temp.abort().await;
        return Err(ObjectError::BadDigest);
    }
    Ok(Written { data_id, size: reader.total, md5, finished, temp })
}

/// Streams every block into temp shard files on the given drives (`None` positions are skipped);
/// returns the body's MD5 state and which positions hold a finished file. On an error, or when
/// fewer than `quorum` drives kept up, no temp file is left.
pub(crate) async fn write_shard_files(
    drives: &[Option<Arc<dyn strata_drive::Drive>>],
    reader: &mut BlockReader<'_>,
    first: BytesMut,
    erasure: &Arc<Erasure>,
    distribution: &[u8],
    data_id: Uuid,
    quorum: usize,
) -> Result<(Option<Md5>, Vec<bool>, TempShards), ObjectError> {
    // A create cancelled while it runs, and a writer dropped before it finished, remove their
    // own files (the drive sees to it); the guard removes files that finished but were never
    // committed.
    let temp = TempShards::new(drives, data_id);
    let created = join_all(drives.iter().map(|d| async move {
        match d {
            Some(d) => {
                let created = d.create_shard_file(data_id).await;
                match &created {
                    // An offline drive is reported by the health checks, not once per write.
                    Err(e) if e.is_unavailable() => {
                        tracing::debug!(drive = d.endpoint(), error = %e, "cannot create a shard file")
                    }
                    Err(e) => tracing::warn!(drive = d.endpoint(), error = %e, "cannot create a shard file"),
                    Ok(_) => {}
                }
                created
            }
            None => Err(strata_drive::DriveError::Unreachable("offline at start".into())),
        }
    }))
    .await;
    // Out of file descriptors on every drive at once is the process's limit, not the drives'.
    let starved = crate::set::exhausted(&created).map(|e| e.to_string());
    // Drives that failed because they are full: a write short of its quorum because of them
    // says so (507), not "too few drives" (503, retried in vain).
    let mut full = created.iter().filter(|r| matches!(r, Err(e) if crate::set::is_full(e))).count();
    let quorum_lost = |online: usize, full: usize| match &starved {
        Some(m) => ObjectError::Exhausted(m.clone()),
        None => crate::set::quorum_missed(quorum, online, full),
    };
    let mut writers: Writers = created.into_iter().map(Result::ok).collect();
    let result = async {
        let mut md5 = reader.take_md5();
        // Three blocks in flight, each at its own stage at once: the next one read from the body,
        // this one coded (with its MD5) on the blocking pool, the last one written. A single
        // stream so keeps the network, a core and the drives busy together, where one block
        // coded while none was read or written held it near 100 MiB/s.
        let mut block = Some(first);
        let mut coded: Option<Vec<([u8; 32], Bytes)>> = None;
        let _streaming = Streaming::new();
        let mut later = false;
        while block.is_some() || coded.is_some() {
            let read_more = block.is_some() && !reader.eof;
            let code = async {
                match block.take() {
                    Some(b) => Some(encode(erasure.clone(), md5.take(), b, later && md5_apart()).await),
                    None => None,
                }
            };
            let write = async {
                match coded.take() {
                    Some(frames) => write_frames(&mut writers, distribution, &frames).await,
                    None => 0,
                }
            };
            let read = async {
                match read_more {
                    true => Some(reader.next_block().await),
                    false => None,
                }
            };
            let (encoded, now_full, next) = tokio::join!(code, write, read);
            full += now_full;
            if alive(&writers) < quorum {
                return Err(quorum_lost(alive(&writers), full));
            }
            if let Some(encoded) = encoded {
                let encoded = encoded?;
                md5 = encoded.md5;
                coded = Some(encoded.frames);
                later = true;
            }
            // A body that ends on a block boundary ends with an empty block: nothing to code.
            block = next.transpose()?.filter(|b| !b.is_empty());
        }
        let finished = join_all(writers.iter_mut().map(|slot| async move {
            if let Some(w) = slot {
                if let Err(e) = w.finish().await {
                    tracing::warn!(error = %e, "a shard file did not finish");
                    *slot = None;
                    return crate::set::is_full(&e);
                }
            }
            false
        }))
        .await;
        full += finished.into_iter().filter(|f| *f).count();
        if alive(&writers) < quorum {
            return Err(quorum_lost(alive(&writers), full));
        }
        Ok((md5, writers.iter().map(Option::is_some).collect()))
    }
    .await;
    match result {
        Ok((md5, finished)) => Ok((md5, finished, temp)),
        Err(e) => {
            temp.abort().await;
            Err(e)
        }
    }
}

/// The temp shard files of one write, until a commit takes them over. Dropped armed (the request
/// went away before its commit began), it removes them in the background, so temp files of
/// cancelled requests do not wait for the sweep.
pub(crate) struct TempShards {
    drives: Drives,
    data_id: Option<Uuid>,
}

impl TempShards {
    fn new(drives: &[Option<Arc<dyn strata_drive::Drive>>], data_id: Uuid) -> Self {
        Self { drives: drives.to_vec(), data_id: Some(data_id) }
    }

    /// Nothing to clean (an inline write).
    pub fn none() -> Self {
        Self { drives: Vec::new(), data_id: None }
    }

    /// The commit owns the files now.
    pub fn disarm(mut self) {
        self.data_id = None;
    }

    /// Removes the files now.
    pub async fn abort(mut self) {
        if let Some(id) = self.data_id.take() {
            join_all(self.drives.iter().flatten().map(|d| d.abort_shard_file(id))).await;
        }
    }
}

impl Drop for TempShards {
    fn drop(&mut self) {
        let Some(id) = self.data_id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let drives = std::mem::take(&mut self.drives);
        runtime.spawn(async move {
            join_all(drives.iter().flatten().map(|d| d.abort_shard_file(id))).await;
        });
    }
}
