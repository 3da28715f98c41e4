//! Multipart uploads: parts are erasure-coded as they arrive (one shard file per part per
//! drive); Complete stitches the chosen parts into the object's version without copying data.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::join_all;
use md5::{Digest, Md5};
use strata_drive::DriveOps;
use strata_drive::{upload_position, Drive, DriveError, UploadsQuery};
use strata_meta::{DataLocation, ErasureInfo, ObjectVersion, PartInfo, UploadRecord};
use strata_types::limits::{PART_NUMBER_MAX, PART_SIZE_MIN, UPLOADS_ROUND};
use uuid::Uuid;

use crate::checksum::{self, Algorithm, ChecksumType, WithChecksum};
use crate::error::{BodyError, ObjectError};
use crate::layer::ObjectLayer;
use crate::put::{
    block_size_for, checked_stamp, unfinished, write_file_data, BodyReader, PutOptions, WriteCondition,
};
use crate::quorum::{read_quorum, write_quorum};
use crate::set::{apply_and_finish, finish_op, reduce_writes, to_completion, CommitFn, ErasureSet};
use crate::ObjectInfo;

/// One entry of a CompleteMultipartUpload request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompletePart {
    pub number: u32,
    /// Without quotes.
    pub etag: String,
    /// Checksums the client expects the part to have (algorithm name → base64).
    pub checksums: BTreeMap<String, String>,
}

/// What a CompleteMultipartUpload asks of the result beyond its parts.
#[derive(Debug, Clone, Default)]
pub struct CompleteOptions {
    pub condition: Option<WriteCondition>,
    /// A whole-object checksum the client computed (`x-amz-checksum-*` on the request).
    pub checksum: Option<(Algorithm, String)>,
    /// An SSE-C upload: the cipher of the request's customer key, which opens the parts' sealed
    /// checksums (needed when they have any).
    pub customer_cipher: Option<strata_crypto::package::ObjectCipher>,
    /// An import's version: its own id, time and ETag instead of new ones (see
    /// [`ObjectLayer::import_parts`]).
    pub imported: Option<crate::import::Imported>,
}

/// An upload's checksum algorithm and type.
fn upload_checksum(upload: &UploadRecord) -> Option<(Algorithm, ChecksumType)> {
    let a = Algorithm::parse(upload.checksum_algorithm.as_deref()?)?;
    let t = upload.checksum_type.as_deref().and_then(ChecksumType::parse).unwrap_or(a.default_type());
    Some((a, t))
}

/// The completed object's checksums: checks what the request says of each part, then combines
/// the parts' checksums as the upload's type says.
fn completed_checksums(
    upload: &UploadRecord,
    requested: &[CompletePart],
    chosen: &[PartInfo],
    opts: &CompleteOptions,
) -> Result<BTreeMap<String, String>, ObjectError> {
    let expected = &opts.checksum;
    // SSE-C parts' checksums are sealed: opened with the request's key, which is needed only
    // when they are (an upload with a checksum algorithm, or a request naming part checksums).
    let open = |p: &PartInfo| crate::sse::part_checksums(p, opts.customer_cipher.as_ref());
    for (want, part) in requested.iter().zip(chosen) {
        if want.checksums.is_empty() {
            continue;
        }
        let stored = open(part)?;
        for (algorithm, value) in &want.checksums {
            if stored.get(algorithm).is_some_and(|stored| stored != value) {
                return Err(ObjectError::InvalidPart(want.number));
            }
        }
    }
    let Some((a, t)) = upload_checksum(upload) else { return Ok(BTreeMap::new()) };
    if t == ChecksumType::Composite {
        if let Some(missing) = requested.iter().find(|p| !p.checksums.contains_key(a.name())) {
            return Err(ObjectError::InvalidRequest(format!(
                "The upload was created using a {} checksum. The complete request must include the checksum for each part. It was missing for part {} in the request.",
                a.name().to_ascii_lowercase(),
                missing.number
            )));
        }
    }
    let parts: Vec<BTreeMap<String, String>> = chosen.iter().map(open).collect::<Result<_, _>>()?;
    let mut values = Vec::with_capacity(chosen.len());
    for (p, checksums) in chosen.iter().zip(&parts) {
        let v = checksums
            .get(a.name())
            .ok_or_else(|| ObjectError::Corrupt(format!("part {} has no {} checksum", p.number, a.name())))?;
        values.push((v.as_str(), p.size));
    }
    let value = checksum::combine_parts(a, t, &values)
        .ok_or_else(|| ObjectError::Corrupt(format!("part {} checksums do not combine", a.name())))?;
    if let Some((ea, ev)) = expected {
        // A composite value may come with its `-N` part count (as it is shown) or without it
        // (as MinIO's client sends it): the checksum itself must match either way.
        let bare = value.rsplit_once('-').map_or(value.as_str(), |(v, _)| v);
        let same = *ev == value || (t == ChecksumType::Composite && *ev == bare);
        if *ea != a || !same {
            return Err(ObjectError::Body(BodyError::ChecksumMismatch(ea.name().to_owned())));
        }
    }
    Ok(BTreeMap::from([(a.name().to_owned(), value)]))
}

async fn on_drives<'a, T, F, Fut>(set: &'a ErasureSet, f: F) -> Vec<Result<T, DriveError>>
where
    F: Fn(usize, &'a Arc<dyn Drive>) -> Fut,
    Fut: std::future::Future<Output = Result<T, DriveError>>,
{
    join_all(set.drives.iter().enumerate().map(|(i, d)| {
        let fut = d.as_ref().map(|d| f(i, d));
        async move {
            match fut {
                Some(fut) => fut.await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }
    }))
    .await
}

impl ObjectLayer {
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        opts: PutOptions,
    ) -> Result<Uuid, ObjectError> {
        let opts = self.with_lock_defaults(bucket, opts)?;
        // Time-ordered ids: a key's uploads list in the order they were started, as S3 lists them.
        let upload_id = Uuid::now_v7();
        self.create_upload(bucket, key, opts, upload_id).await?;
        Ok(upload_id)
    }

    /// Starts the upload `upload_id` of `key` with `opts` as given (no bucket defaults added).
    pub(crate) async fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        opts: PutOptions,
        upload_id: Uuid,
    ) -> Result<(), ObjectError> {
        // The key's pool, or for a new key the pool new keys go to; its parts and Complete follow.
        let (set, hash) = self.key_set(bucket, key).await?;
        let n = set.drives.len();
        let parity = opts.parity_count.unwrap_or(set.parity_count);
        if parity > n / 2 {
            return Err(ObjectError::InvalidParity(parity));
        }
        let distribution = strata_cluster::placement::distribution(hash, n);
        let record = UploadRecord {
            upload_id,
            key: key.to_owned(),
            initiated: strata_types::time::now_nanos(),
            headers: opts.headers,
            user_metadata: opts.user_metadata,
            erasure: ErasureInfo {
                bitrot: Default::default(),
                data_count: (n - parity) as u8,
                parity_count: parity as u8,
                block_size: block_size_for(opts.sse.is_some()) as u32,
                shard_index: 0,
                distribution: distribution.clone(),
            },
            tags: opts.tags,
            checksum_algorithm: opts.checksum.map(|(a, _)| a.name().to_owned()),
            checksum_type: opts.checksum.map(|(_, t)| t.name().to_owned()),
            retention: opts.retention,
            legal_hold: opts.legal_hold,
            sse: opts.sse.map(|s| Box::new(s.envelope)),
            acl: opts.acl,
        };
        let results = on_drives(set, |i, d| {
            let mut r = record.clone();
            r.erasure.shard_index = distribution[i];
            async move { d.put_upload(bucket, r).await }
        })
        .await;
        reduce_writes(&results, write_quorum(n - parity, parity))
    }

    /// The upload's record as a read quorum holds it.
    async fn read_upload(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<UploadRecord, ObjectError> {
        let reads = on_drives(set, |_, d| d.read_upload(bucket, key, upload_id)).await;
        let not_found = reads.iter().filter(|r| matches!(r, Err(DriveError::NotFound))).count();
        let found: Vec<UploadRecord> = reads.into_iter().flatten().collect();
        match found.first() {
            Some(r) if found.len() >= read_quorum(usize::from(r.erasure.data_count)) => Ok(r.clone()),
            _ if not_found >= read_quorum(set.data_count()) || not_found > 0 && found.is_empty() => {
                Err(ObjectError::NoSuchUpload)
            }
            _ => Err(ObjectError::ReadQuorum { needed: read_quorum(set.data_count()), online: found.len() }),
        }
    }

    /// The upload's record (its encryption, to check a part's SSE-C key against).
    pub async fn upload_info(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<UploadRecord, ObjectError> {
        self.bucket_info(bucket)?;
        Ok(self.find_upload(bucket, key, upload_id).await?.1)
    }

    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part_number: u32,
        body: &mut dyn BodyReader,
        content_md5: Option<[u8; 16]>,
    ) -> Result<PartInfo, ObjectError> {
        self.upload_part_sealed(bucket, key, upload_id, part_number, body, content_md5, None).await
    }

    /// [`Self::upload_part`] of an encrypted upload: the part is sealed as its own segment
    /// (numbered by the part number) with `sse`'s cipher.
    #[allow(clippy::too_many_arguments)]
    pub async fn upload_part_sealed(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part_number: u32,
        body: &mut dyn BodyReader,
        content_md5: Option<[u8; 16]>,
        sse: Option<&crate::sse::SsePut>,
    ) -> Result<PartInfo, ObjectError> {
        self.bucket_info(bucket)?;
        let (pool, upload) = self.find_upload(bucket, key, upload_id).await?;
        let (set, hash) = (self.set_in(pool, bucket, key), self.hash_of(bucket, key));
        let e = &upload.erasure;
        let erasure = set.erasure_for(usize::from(e.data_count), usize::from(e.parity_count))?;
        let block_size = e.block_size as usize;
        let quorum = write_quorum(usize::from(e.data_count), usize::from(e.parity_count));
        let mut with_checksum;
        let body: &mut dyn BodyReader = match (upload_checksum(&upload), body.checksum_algorithm()) {
            (Some((want, _)), Some(got)) if want != got => {
                return Err(ObjectError::InvalidRequest(format!(
                    "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                    want.name().to_ascii_lowercase(),
                    got.name().to_ascii_lowercase()
                )))
            }
            (Some((want, _)), None) => {
                with_checksum = WithChecksum::new(body, want);
                &mut with_checksum
            }
            _ => body,
        };
        if upload.sse.is_some() != sse.is_some() {
            return Err(ObjectError::Corrupt("a part sealed unlike its upload".into()));
        }
        let (written, checksums, etag) = match sse {
            None => {
                let written =
                    write_file_data(set, body, &erasure, block_size, &e.distribution, quorum, content_md5)
                        .await?;
                let etag = written.md5.unwrap_or_default();
                (written, body.checksums(), etag)
            }
            Some(sse) => {
                let mut sealing = crate::sse::SealingBody::new(body, sse, part_number);
                let written =
                    write_file_data(set, &mut sealing, &erasure, block_size, &e.distribution, quorum, None)
                        .await?;
                let (etag, checked) = crate::sse::digests(Some(sse), written.md5, &sealing);
                if content_md5.is_some_and(|want| want != checked) {
                    written.temp.abort().await;
                    return Err(ObjectError::BadDigest);
                }
                (written, sealing.checksums(), etag)
            }
        };
        // SSE-C: stored sealed; the reply still shows them.
        let (stored_checksums, sealed_checksums) =
            crate::sse::seal_checksums(sse.map(|s| (&s.envelope, &s.cipher)), part_number, &checksums)?;
        let part = PartInfo {
            number: part_number,
            size: written.size,
            etag: hex::encode(etag),
            data_id: written.data_id,
            mod_time: strata_types::time::now_nanos(),
            checksums: stored_checksums,
            sealed_checksums,
        };
        // Part commits and Complete of one object take its lock, so every drive sees them in the
        // same order (two uploads of one part number end the same everywhere) and Complete reads
        // the parts it commits while no part can change.
        let guard = set.locks.exclusive(hash).await?;
        // Dropped on this error, `written.temp` removes the part's files.
        guard.ensure_held()?;
        let drives = set.drives.clone();
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let (finished, temp, committed) = (written.finished, written.temp, part.clone());
        let op = Uuid::new_v4();
        // From here the commit task owns the temp files and the lock.
        temp.disarm();
        let results = to_completion(async move {
            let results = join_all(drives.iter().enumerate().map(|(pos, d)| {
                let (b, k, p) = (&b, &k, committed.clone());
                let ok = finished.get(pos).copied().unwrap_or(false);
                async move {
                    let Some(d) = d else { return Err(DriveError::Unreachable("offline at start".into())) };
                    if !ok {
                        return Err(unfinished(d.as_ref(), p.data_id).await);
                    }
                    let id = p.data_id;
                    let committed = d.commit_part(b, k, upload_id, p, op).await;
                    if committed.is_err() {
                        d.abort_shard_file(id).await;
                    }
                    committed
                }
            }))
            .await;
            // Kept, the parts this one replaced are freed; without a quorum, every drive that took
            // it puts back the part it replaced (the one acknowledged before), under the lock.
            let kept = reduce_writes(&results, quorum).is_ok();
            finish_op(&drives, op, kept).await;
            drop(guard);
            if !kept {
                join_all(drives.iter().flatten().map(|d| d.abort_shard_file(committed.data_id))).await;
            }
            results
        })
        .await?;
        if let Err(e) = reduce_writes(&results, quorum) {
            if results.iter().filter(|r| matches!(r, Err(DriveError::NotFound))).count()
                >= quorum.min(set.drives.len())
            {
                return Err(ObjectError::NoSuchUpload);
            }
            return Err(e);
        }
        Ok(PartInfo { checksums, ..part })
    }

    /// Parts a read quorum of drives agrees on, by part number.
    async fn agreed_parts(
        &self,
        set: &ErasureSet,
        upload: &UploadRecord,
    ) -> Result<BTreeMap<u32, PartInfo>, ObjectError> {
        let lists = on_drives(set, |_, d| d.list_parts(upload.upload_id)).await;
        let mut counts: BTreeMap<(u32, Uuid), (usize, PartInfo)> = BTreeMap::new();
        for p in lists.into_iter().flatten().flatten() {
            counts.entry((p.number, p.data_id)).or_insert((0, p)).0 += 1;
        }
        let needed = read_quorum(usize::from(upload.erasure.data_count));
        let mut out: BTreeMap<u32, PartInfo> = BTreeMap::new();
        for ((number, _), (n, p)) in counts {
            if n >= needed && out.get(&number).is_none_or(|old| p.mod_time > old.mod_time) {
                out.insert(number, p);
            }
        }
        Ok(out)
    }

    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(UploadRecord, Vec<PartInfo>), ObjectError> {
        self.bucket_info(bucket)?;
        let (pool, upload) = self.find_upload(bucket, key, upload_id).await?;
        let set = self.set_in(pool, bucket, key);
        let parts = self.agreed_parts(set, &upload).await?.into_values().collect();
        Ok((upload, parts))
    }

    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        requested: &[CompletePart],
        opts: CompleteOptions,
    ) -> Result<ObjectInfo, ObjectError> {
        self.bucket_info(bucket)?;
        // Held from reading the parts to dropping the upload: no part commit comes between.
        let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        if requested.is_empty() {
            return Err(ObjectError::InvalidPart(0));
        }
        if requested.windows(2).any(|w| w[1].number < w[0].number) {
            return Err(ObjectError::InvalidPartOrder);
        }
        let (pool, upload) = match self.find_upload(bucket, key, upload_id).await {
            Err(ObjectError::NoSuchUpload) => {
                let (set, _) = self.key_set(bucket, key).await?;
                return completed_before(set, bucket, key, upload_id, requested).await;
            }
            other => other?,
        };
        let set = self.set_in(pool, bucket, key);
        let available = self.agreed_parts(set, &upload).await?;
        let requested = &last_of_each_number(requested, &available);
        let mut chosen = Vec::with_capacity(requested.len());
        for (i, want) in requested.iter().enumerate() {
            let part = available
                .get(&want.number)
                .filter(|p| p.etag == want.etag.trim_matches('"'))
                .ok_or(ObjectError::InvalidPart(want.number))?;
            let plain = match upload.sse {
                Some(_) => strata_crypto::package::plain_size(part.size).unwrap_or(0),
                None => part.size,
            };
            if i + 1 < requested.len() && plain < PART_SIZE_MIN {
                return Err(ObjectError::EntityTooSmall(want.number));
            }
            chosen.push(part.clone());
        }
        let checksums = completed_checksums(&upload, requested, &chosen, &opts)?;
        // SSE-C: the object's checksums are sealed like its parts'; the reply still shows them.
        let (stored_checksums, sealed) = crate::sse::seal_checksums(
            upload.sse.as_deref().zip(opts.customer_cipher.as_ref()),
            0,
            &checksums,
        )?;
        let sse =
            upload.sse.clone().map(|e| Box::new(strata_meta::SseEnvelope { sealed_checksums: sealed, ..*e }));
        let mut md5 = Md5::new();
        for p in &chosen {
            md5.update(
                hex::decode(&p.etag)
                    .map_err(|e| ObjectError::Corrupt(format!("part {} ETag: {e}", p.number)))?,
            );
        }
        // A conditional Complete carries the newest stamp its condition saw (see `check_locked`).
        // An imported version keeps its own id and time, and takes its place among the others.
        let mut elsewhere = Vec::new();
        let (version_id, stamp, checked) = match &opts.imported {
            Some(i) => (i.version_id, i.mod_time, None),
            None => {
                if let Some(check) = self.pool_check(pool) {
                    elsewhere = check.prepare(set, bucket, key).await?;
                }
                let (stamp, newest) = checked_stamp(set, bucket, key, &opts.condition).await?;
                (self.new_version_id(bucket)?, stamp, opts.condition.as_ref().map(|_| newest))
            }
        };
        let etag = match opts.imported.as_ref().and_then(|i| i.etag.clone()) {
            Some(etag) => etag,
            None => format!("{}-{}", hex::encode(md5.finalize()), chosen.len()),
        };
        let version = ObjectVersion {
            version_id,
            mod_time: stamp,
            delete_marker: false,
            size: chosen.iter().map(|p| p.size).sum(),
            etag,
            headers: upload.headers.clone(),
            user_metadata: upload.user_metadata.clone(),
            checksums: stored_checksums,
            erasure: upload.erasure.clone(),
            data: DataLocation::Multipart(upload_id),
            parts: chosen,
            tags: upload.tags.clone(),
            retention: upload.retention,
            legal_hold: upload.legal_hold,
            sse,
            acl: upload.acl.clone(),
            replication: match &opts.imported {
                Some(i) => i.replica.then_some(strata_meta::ReplicationStatus::Replica),
                None => self.replication_pending(bucket, key, &upload.tags),
            },
        };
        let e = &upload.erasure;
        let quorum = write_quorum(usize::from(e.data_count), usize::from(e.parity_count));
        let op = Uuid::new_v4();
        guard.ensure_held()?;
        // A `null` version replaced in other pools goes once this one is in, under the same lock.
        let replaced = if version_id.is_none() { elsewhere.len() } else { 0 };
        let (guard, guards) = guard.with_spares(replaced);
        let (b, k, committed, distribution) =
            (bucket.to_owned(), key.to_owned(), version.clone(), e.distribution.clone());
        let commit: CommitFn = Box::new(move |pos, d| {
            let mut v = committed.clone();
            v.erasure.shard_index = distribution.get(pos).copied().unwrap_or(0);
            let (b, k) = (b.clone(), k.clone());
            Box::pin(async move { d.complete_upload(&b, &k, upload_id, v, op, checked).await })
        });
        let keep: Vec<Uuid> = version.parts.iter().map(|p| p.data_id).collect();
        let drives = guard.fenced(&set.drives);
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let (results, outcome) = to_completion(async move {
            let (results, outcome) = apply_and_finish(&drives, quorum, op, &commit).await;
            if outcome.is_ok() {
                // The upload goes once its object is committed (its parts' files stay with it),
                // before the lock is released: a part retried after Complete finds no upload.
                join_all(drives.iter().flatten().map(|d| d.drop_upload(&b, &k, upload_id, keep.clone())))
                    .await;
            }
            drop(guard);
            (results, outcome)
        })
        .await?;
        outcome?;
        if crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        if let (Some(check), false) = (self.pool_check(pool), guards.is_empty()) {
            check.drop_replaced(&elsewhere, bucket, key, version.mod_time, guards).await;
        }
        let mut info = ObjectInfo::from_version(bucket, key, &version);
        info.checksums = checksums;
        Ok(info)
    }

    /// The pool holding upload `upload_id` of the key, and the upload's record: an upload stays
    /// in the pool it began in (with one pool: pool 0).
    async fn find_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(usize, UploadRecord), ObjectError> {
        if self.pool_count() == 1 {
            return Ok((0, self.read_upload(self.set_in(0, bucket, key), bucket, key, upload_id).await?));
        }
        let reads = join_all(
            (0..self.pool_count())
                .map(|p| self.read_upload(self.set_in(p, bucket, key), bucket, key, upload_id)),
        )
        .await;
        let mut failed = None;
        for (pool, read) in reads.into_iter().enumerate() {
            match read {
                Ok(upload) => return Ok((pool, upload)),
                Err(ObjectError::NoSuchUpload) => {}
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        Err(failed.unwrap_or(ObjectError::NoSuchUpload))
    }

    pub async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(), ObjectError> {
        self.bucket_info(bucket)?;
        // Not in the middle of a Complete or a part commit of this object.
        let _guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        let set = match self.pool_count() {
            1 => self.set_in(0, bucket, key),
            _ => self.set_in(self.find_upload(bucket, key, upload_id).await?.0, bucket, key),
        };
        let results = on_drives(set, |_, d| d.drop_upload(bucket, key, upload_id, Vec::new())).await;
        let not_found = results.iter().filter(|r| matches!(r, Err(DriveError::NotFound))).count();
        let quorum = write_quorum(set.data_count(), set.parity_count);
        if not_found >= quorum || (not_found > 0 && results.iter().all(|r| r.is_err())) {
            return Err(ObjectError::NoSuchUpload);
        }
        reduce_writes(&results, quorum.saturating_sub(not_found).max(1))
    }

    /// Uploads in progress whose key starts with `prefix`, past position `after` (see
    /// [`strata_drive::upload_position`]), in (key, upload id) order: one bounded round of at most
    /// about `limit` per drive, from every set. Memory stays O(limit) whatever the bucket holds.
    pub async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: &[u8],
        limit: usize,
    ) -> Result<UploadsPage, ObjectError> {
        self.bucket_info(bucket)?;
        let query = UploadsQuery { prefix: prefix.to_owned(), after: after.to_vec(), limit };
        let mut seen: BTreeMap<Vec<u8>, (usize, UploadRecord)> = BTreeMap::new();
        // Past the last upload of a drive that answered a full round, that drive's answer is
        // unknown: only positions up to the lowest such horizon are complete.
        let mut horizon: Option<Vec<u8>> = None;
        for set in self.all_sets() {
            let lists = on_drives(set, |_, d| d.list_uploads(bucket, query.clone())).await;
            for list in lists.into_iter().flatten() {
                if list.len() >= limit {
                    if let Some(last) = list.last() {
                        let at = upload_position(&last.key, last.upload_id);
                        horizon = Some(horizon.map_or(at.clone(), |h| h.min(at)));
                    }
                }
                for u in list {
                    seen.entry(upload_position(&u.key, u.upload_id)).or_insert((0, u)).0 += 1;
                }
            }
        }
        let uploads = seen
            .into_iter()
            .filter(|(at, _)| horizon.as_ref().is_none_or(|h| at <= h))
            .filter(|(_, (n, u))| *n >= read_quorum(usize::from(u.erasure.data_count)))
            .map(|(_, (_, u))| u)
            .collect();
        Ok(UploadsPage { uploads, next: horizon })
    }
}

/// A part list naming a number more than once (a part re-sent while its first send was still in
/// flight) keeps, for each number, the entry of the part as last uploaded (the one whose ETag
/// the upload holds), else the list's last entry (which then fails as `InvalidPart`).
fn last_of_each_number(requested: &[CompletePart], available: &BTreeMap<u32, PartInfo>) -> Vec<CompletePart> {
    let mut out: Vec<CompletePart> = Vec::with_capacity(requested.len());
    for want in requested {
        let held = available.get(&want.number).is_some_and(|p| p.etag == want.etag.trim_matches('"'));
        match out.last_mut() {
            Some(last) if last.number == want.number => {
                let last_held =
                    available.get(&last.number).is_some_and(|p| p.etag == last.etag.trim_matches('"'));
                if held || !last_held {
                    *last = want.clone();
                }
            }
            _ => out.push(want.clone()),
        }
    }
    out
}

/// CompleteMultipartUpload for an upload that is gone: when the object's current version was
/// completed from this upload with this part list, the earlier Complete succeeded and its answer
/// was lost (an SDK retries then): the same success again. Otherwise `NoSuchUpload`.
async fn completed_before(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
    upload_id: Uuid,
    requested: &[CompletePart],
) -> Result<ObjectInfo, ObjectError> {
    let Ok(resolved) = set.resolve(set.read_records(bucket, key, false).await) else {
        return Err(ObjectError::NoSuchUpload);
    };
    let v = resolved.version;
    let from_upload = matches!(v.data, DataLocation::Multipart(id) if id == upload_id);
    let by_number: BTreeMap<u32, PartInfo> = v.parts.iter().map(|p| (p.number, p.clone())).collect();
    let wanted = last_of_each_number(requested, &by_number);
    let same_parts = wanted.len() == v.parts.len()
        && wanted
            .iter()
            .zip(&v.parts)
            .all(|(w, p)| w.number == p.number && w.etag.trim_matches('"') == p.etag);
    if from_upload && same_parts {
        Ok(ObjectInfo::from_version(bucket, key, &v))
    } else {
        Err(ObjectError::NoSuchUpload)
    }
}

/// One round of [`ObjectLayer::list_multipart_uploads`].
#[derive(Debug)]
pub struct UploadsPage {
    /// In (key, upload id) order.
    pub uploads: Vec<UploadRecord>,
    /// Where the next round starts; `None` when this round reached the end.
    pub next: Option<Vec<u8>>,
}

impl ObjectLayer {
    /// Aborts every upload initiated more than `age` ago; returns how many went.
    pub async fn expire_uploads(&self, age: std::time::Duration) -> usize {
        let cutoff = strata_types::time::now_nanos().saturating_sub(age.as_nanos() as u64);
        let buckets = match self.list_buckets() {
            Ok(b) => b,
            Err(_) => return 0,
        };
        let mut expired = 0;
        for bucket in buckets {
            let mut after = Vec::new();
            loop {
                let Ok(page) = self.list_multipart_uploads(&bucket.name, "", &after, UPLOADS_ROUND).await
                else {
                    break;
                };
                expired += self.expire_page(&bucket.name, page.uploads, cutoff).await;
                match page.next {
                    Some(next) => after = next,
                    None => break,
                }
            }
        }
        expired
    }

    async fn expire_page(&self, bucket: &str, uploads: Vec<UploadRecord>, cutoff: u64) -> usize {
        let mut expired = 0;
        for u in uploads.into_iter().filter(|u| u.initiated < cutoff) {
            match self.abort_multipart_upload(bucket, &u.key, u.upload_id).await {
                Ok(()) => expired += 1,
                Err(e) => tracing::warn!(bucket, key = %u.key, error = %e, "cannot expire upload"),
            }
        }
        expired
    }
}

const _: () = assert!(PART_NUMBER_MAX == 10_000);
