//! Versioning: the bucket's state, deletes that add delete markers or remove one version, tags
//! of one version, and ListObjectVersions.
//!
//! ListObjectVersions merges like LIST ([`crate::list`]), over positions (key, then
//! [`version_rank`]: newest first) instead of names: each drive lists the versions past a
//! position, a version counts when a read quorum of its set's drives holds it, and a round keeps
//! only positions up to the smallest horizon (the last position of a drive that filled its
//! page). The cost follows the page, not the number of versions in the bucket.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use strata_drive::DriveOps;
use strata_drive::{version_rank, DriveError, ListEntry, ListQuery, RANK_LEN};
use strata_meta::{ErasureInfo, ObjectVersion, Versioning};
use strata_types::limits::BLOCK_SIZE;
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::quorum::{agreed, read_quorum, write_quorum};
use crate::set::{commit_on_quorum, commit_stamped, CommitFn, ErasureSet, StampedCommitFn};
use crate::{ObjectInfo, VersionRef};

/// What a DELETE did, for its response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// The version removed or the delete marker added (`None`: the `null` version).
    pub version_id: Option<Uuid>,
    /// A delete marker was added, or the version removed was one.
    pub delete_marker: bool,
    /// Whether the response names a version (`x-amz-version-id`): a bucket that has had
    /// versioning, or a request naming a version.
    pub versioned: bool,
}

/// A ListObjectVersions request.
#[derive(Debug, Clone, Default)]
pub struct VersionsRequest {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// List keys after this one (or, with `version_marker`, this key's versions after it).
    pub key_marker: String,
    /// `Some(None)` is the `null` version.
    pub version_marker: Option<Option<Uuid>>,
    pub max_keys: usize,
}

/// One version in a listing.
#[derive(Debug, Clone)]
pub struct VersionEntry {
    pub info: ObjectInfo,
    /// The key's current version.
    pub is_latest: bool,
}

#[derive(Debug, Clone, Default)]
pub struct VersionsPage {
    /// Key ascending, then newest first.
    pub entries: Vec<VersionEntry>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    pub next_key_marker: Option<String>,
    /// With `next_key_marker` when the page ended on a version.
    pub next_version_marker: Option<Option<Uuid>>,
}

/// A place in a versions listing: the name, then the version's rank; past all of a name's
/// versions (a common prefix, or a key marker alone) is a rank longer than any.
type Position = (String, Vec<u8>);

fn past_name(name: &str) -> Position {
    (name.to_owned(), vec![0xff; RANK_LEN + 1])
}

/// One set's versions in one round: position → the version (`None`: a common prefix).
struct SetVersions {
    entries: BTreeMap<Position, Option<ObjectVersion>>,
    horizon: Option<Position>,
}

async fn list_set_versions(
    set: &ErasureSet,
    bucket: &str,
    req: &VersionsRequest,
    after: &Position,
    limit: usize,
) -> Result<SetVersions, ObjectError> {
    let inside = after.1.len() == RANK_LEN;
    let query = ListQuery {
        prefix: req.prefix.clone(),
        start_after: after.0.clone(),
        delimiter: req.delimiter.clone(),
        limit,
        versions: true,
        start_rank: inside.then(|| after.1.clone()),
    };
    let answers = join_all(set.drives.iter().flatten().map(|d| d.list(bucket, query.clone()))).await;
    let quorum = read_quorum(set.data_count());
    let lists: Vec<Vec<ListEntry>> = answers.iter().filter_map(|a| a.as_ref().ok().cloned()).collect();
    if lists.len() < quorum {
        let missing = answers.iter().filter(|a| matches!(a, Err(DriveError::BucketNotFound))).count();
        if missing >= quorum {
            return Err(ObjectError::BucketNotFound);
        }
        return Err(crate::set::exhausted(&answers)
            .unwrap_or(ObjectError::ReadQuorum { needed: quorum, online: lists.len() }));
    }
    let position = |e: &ListEntry| match e {
        ListEntry::Prefix(p) => past_name(p),
        ListEntry::Object { key, record } => {
            (key.clone(), record.latest().map_or(vec![0xff; RANK_LEN], |v| version_rank(v).to_vec()))
        }
    };
    let horizon = lists.iter().filter(|l| l.len() >= limit).filter_map(|l| l.last().map(position)).min();
    let mut counted: BTreeMap<Position, (usize, Vec<ObjectVersion>)> = BTreeMap::new();
    for entry in lists.into_iter().flatten() {
        let at = position(&entry);
        if horizon.as_ref().is_some_and(|h| at > *h) {
            continue;
        }
        let slot = counted.entry(at).or_default();
        slot.0 += 1;
        if let ListEntry::Object { record, .. } = entry {
            slot.1.extend(record.versions.into_iter().next());
        }
    }
    let mut entries = BTreeMap::new();
    for (at, (n, versions)) in counted {
        if versions.is_empty() {
            if n >= quorum {
                entries.insert(at, None);
            }
        } else if let Some((v, _)) = agreed(versions) {
            entries.insert(at, Some(v));
        }
    }
    Ok(SetVersions { entries, horizon })
}

/// The condition of a conditional delete (S3's `If-Match` on DeleteObject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteIf<'a> {
    /// `*`: the object exists.
    Exists,
    /// The current version has this ETag (without quotes).
    ETag(&'a str),
}

/// Checks a conditional delete's `condition` against the object's current version (the caller
/// holds the object's lock); answers the newest stamp it was checked against, which the
/// delete's commit carries so that drives holding anything newer refuse it (as a conditional
/// write's does: [`crate::put::check_locked`]).
async fn check_delete_condition(
    set: &crate::set::ErasureSet,
    bucket: &str,
    key: &str,
    condition: Option<DeleteIf<'_>>,
) -> Result<Option<u64>, ObjectError> {
    let wanted = match condition {
        None => return Ok(None),
        Some(DeleteIf::Exists) => crate::WriteCondition::MatchAny,
        Some(DeleteIf::ETag(etag)) => crate::WriteCondition::Match(etag.to_owned()),
    };
    crate::put::check_locked(set, bucket, key, &Some(wanted)).await
}

impl ObjectLayer {
    /// The bucket's versioning state.
    pub fn versioning(&self, bucket: &str) -> Result<Versioning, ObjectError> {
        self.with_bucket_record(bucket, |r| r.versioning)
    }

    /// The id a new write in `bucket` gets: new in a versioning-enabled bucket, else the `null`
    /// version's.
    pub(crate) fn new_version_id(&self, bucket: &str) -> Result<Option<Uuid>, ObjectError> {
        Ok(self.versioning(bucket)?.enabled().then(Uuid::now_v7))
    }

    /// PutBucketVersioning: `Enabled` or `Suspended` (a bucket never goes back to unversioned).
    pub async fn put_bucket_versioning(&self, bucket: &str, state: Versioning) -> Result<(), ObjectError> {
        if state == Versioning::Unversioned {
            return Err(ObjectError::InvalidRequest("versioning can only be enabled or suspended".into()));
        }
        self.try_update_bucket(bucket, |r| {
            if state == Versioning::Suspended && r.object_lock.is_some() {
                return Err(ObjectError::InvalidBucketState(
                    "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
                        .into(),
                ));
            }
            if state == Versioning::Suspended && r.replication.is_some() {
                return Err(ObjectError::InvalidBucketState(
                    "A replication configuration is present on this bucket, so versioning cannot be suspended."
                        .into(),
                ));
            }
            r.versioning = state;
            Ok(())
        })
        .await
    }

    /// PutBucketReplication: `config` (validated by the caller) becomes the bucket's, which must
    /// have versioning enabled (checked under the bucket's lock, as a suspension checks for a
    /// configuration).
    pub async fn put_bucket_replication(
        &self,
        bucket: &str,
        config: strata_meta::ReplicationConfig,
    ) -> Result<(), ObjectError> {
        self.try_update_bucket(bucket, |r| {
            if r.versioning != Versioning::Enabled {
                return Err(ObjectError::InvalidRequest(
                    "Versioning must be enabled on the bucket to put a replication configuration".into(),
                ));
            }
            r.replication = Some(config);
            Ok(())
        })
        .await
    }

    /// DeleteObject. Without a version id: in an unversioned bucket the `null` version goes; in
    /// a versioning-enabled one a delete marker with a new id becomes the current version; in a
    /// suspended one a `null` delete marker replaces the `null` version. With a version id, that
    /// version goes (deleting one that does not exist succeeds, as in S3) unless object lock keeps
    /// it ([`ObjectError::ObjectLocked`]; `bypass_governance` lets a governance retention yield).
    pub async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        bypass_governance: bool,
    ) -> Result<DeleteOutcome, ObjectError> {
        self.delete_object_version_if(bucket, key, which, bypass_governance, None).await
    }

    /// [`Self::delete_object_version`] of the current version only if it passes `condition`
    /// (S3's `If-Match` on DeleteObject), checked under the object's lock: `PreconditionFailed`
    /// when its ETag differs, `ObjectNotFound` when there is no object (or a delete marker is
    /// on top). S3 evaluates the condition on the current version only: with a version id it is
    /// `InvalidArgument`.
    pub async fn delete_object_version_if(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        bypass_governance: bool,
        condition: Option<DeleteIf<'_>>,
    ) -> Result<DeleteOutcome, ObjectError> {
        let versioning = self.versioning(bucket)?;
        let versioned = versioning != Versioning::Unversioned;
        match which {
            VersionRef::Id(_) if condition.is_some() => {
                Err(ObjectError::InvalidArgument("a conditional delete acts on the current version".into()))
            }
            VersionRef::Id(id) => self.remove_version(bucket, key, id, bypass_governance).await,
            VersionRef::Current if !versioned => {
                let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
                let (set, _) = self.key_set(bucket, key).await?;
                let checked = check_delete_condition(set, bucket, key, condition).await?;
                self.remove_version_locked(bucket, key, None, guard, checked).await?;
                Ok(DeleteOutcome::default())
            }
            VersionRef::Current => {
                let id = versioning.enabled().then(Uuid::now_v7);
                let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
                let (set, _) = self.key_set(bucket, key).await?;
                let checked = check_delete_condition(set, bucket, key, condition).await?;
                self.add_delete_marker_locked(bucket, key, id, guard, checked).await?;
                Ok(DeleteOutcome { version_id: id, delete_marker: true, versioned })
            }
        }
    }

    /// Adds a delete marker with id `id` as the current version, under the object's lock `guard`.
    /// With `checked` (the newest stamp a condition was checked against under that lock), a
    /// drive holding a newer version refuses it: the object changed after the check, whatever
    /// the lock did meanwhile.
    pub(crate) async fn add_delete_marker_locked(
        &self,
        bucket: &str,
        key: &str,
        id: Option<Uuid>,
        guard: crate::LockGuard,
        checked: Option<u64>,
    ) -> Result<(), ObjectError> {
        let (set, hash) = self.key_set(bucket, key).await?;
        let (erasure, distribution) = marker_erasure(set, hash);
        // Stamped at the commit (see `commit_stamped`).
        let marker = ObjectVersion::delete_marker(id, 0, erasure, Uuid::new_v4());
        let quorum = write_quorum(set.data_count(), set.parity_count);
        let op = Uuid::new_v4();
        guard.ensure_held()?;
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let commit: StampedCommitFn = Box::new(move |pos, d, stamp, again| {
            let mut v = marker.clone();
            v.erasure.shard_index = distribution.get(pos).copied().unwrap_or(0);
            v.mod_time = stamp;
            let (b, k) = (b.clone(), k.clone());
            Box::pin(async move {
                match (again, checked) {
                    (true, _) => d.update_version(&b, &k, v, op).await,
                    (false, Some(checked)) => d.commit_checked_version(&b, &k, v, None, op, checked).await,
                    (false, None) => d.commit_new_version(&b, &k, v, None, op).await,
                }
            })
        });
        let (results, outcome) =
            commit_stamped(set.drives.clone(), quorum, op, guard, set.stamps.clone(), commit).await?;
        if outcome.is_ok() && crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        outcome.map(drop)
    }

    /// Writes a delete marker another store kept (an import): with its own id and time
    /// (nanoseconds), committed in its place among the object's versions, as
    /// [`Self::import_version`] does for versions with data. A marker with that id and time
    /// already there is replaced by the same.
    pub async fn import_delete_marker(
        &self,
        bucket: &str,
        key: &str,
        id: Option<Uuid>,
        mod_time: u64,
    ) -> Result<(), ObjectError> {
        self.bucket_info(bucket)?;
        let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        let (set, hash) = self.key_set(bucket, key).await?;
        let (erasure, distribution) = marker_erasure(set, hash);
        let marker = ObjectVersion::delete_marker(id, mod_time, erasure, Uuid::new_v4());
        let quorum = write_quorum(set.data_count(), set.parity_count);
        let op = Uuid::new_v4();
        guard.ensure_held()?;
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let commit: crate::set::CommitFn = Box::new(move |pos, d| {
            let mut v = marker.clone();
            v.erasure.shard_index = distribution.get(pos).copied().unwrap_or(0);
            let (b, k) = (b.clone(), k.clone());
            Box::pin(async move { d.commit_version(&b, &k, v, None, op).await })
        });
        let (results, outcome) =
            crate::set::commit_on_quorum(set.drives.clone(), quorum, op, guard, commit).await?;
        if outcome.is_ok() && crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        outcome.map(drop)
    }

    /// Removes one version from every drive of the set (a drive without it counts as done).
    async fn remove_version(
        &self,
        bucket: &str,
        key: &str,
        id: Option<Uuid>,
        bypass: bool,
    ) -> Result<DeleteOutcome, ObjectError> {
        let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        let (set, _) = self.version_set(bucket, key, VersionRef::Id(id)).await?;
        // Checked under the lock: a retention or hold put meanwhile is seen.
        let delete_marker =
            match set.resolve_any(set.read_which(bucket, key, VersionRef::Id(id), false).await) {
                Ok(r) => {
                    crate::retention::check_removable(&r.version, bypass)?;
                    r.version.delete_marker
                }
                Err(ObjectError::ObjectNotFound) => false,
                Err(e) => return Err(e),
            };
        self.remove_version_locked(bucket, key, id, guard, None).await?;
        Ok(DeleteOutcome { version_id: id, delete_marker, versioned: true })
    }

    /// Removes version `id` from every drive of the object's set (a drive without it counts as
    /// done), under the object's lock `guard`; the caller has checked that it may go. With
    /// `checked`, as [`Self::add_delete_marker_locked`]: refused by drives holding a version
    /// stamped after it. With several pools, from every pool that holds it (an overwritten
    /// `null` version can be left in another pool; see [`crate::pools`]).
    pub(crate) async fn remove_version_locked(
        &self,
        bucket: &str,
        key: &str,
        id: Option<Uuid>,
        guard: crate::LockGuard,
        checked: Option<u64>,
    ) -> Result<(), ObjectError> {
        let mut sets = self.sets_holding_version(bucket, key, id).await;
        if sets.is_empty() {
            // No pool holds it: the key's first-pool set finds nothing to remove.
            sets.push(self.set_in(0, bucket, key));
        }
        let (first, rest) = guard.with_spares(sets.len() - 1);
        for (set, guard) in sets.into_iter().zip(std::iter::once(first).chain(rest)) {
            self.remove_version_in(set, bucket, key, id, guard, checked).await?;
        }
        Ok(())
    }

    /// [`Self::remove_version_locked`] in one set.
    pub(crate) async fn remove_version_in(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        id: Option<Uuid>,
        guard: crate::LockGuard,
        checked: Option<u64>,
    ) -> Result<(), ObjectError> {
        let op = Uuid::new_v4();
        guard.ensure_held()?;
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let commit: CommitFn = Box::new(move |_, d| {
            let (b, k) = (b.clone(), k.clone());
            Box::pin(async move {
                let removed = match checked {
                    Some(checked) => d.delete_checked_version(&b, &k, id, op, checked).await,
                    None => d.delete_version(&b, &k, id, op).await,
                };
                match removed {
                    Err(DriveError::NotFound) => Ok(()),
                    other => other,
                }
            })
        });
        let quorum = write_quorum(set.data_count(), set.parity_count);
        let (results, outcome) = commit_on_quorum(set.drives.clone(), quorum, op, guard, commit).await?;
        if outcome.is_ok() && crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        outcome
    }

    /// ListObjectVersions: versions and delete markers, key ascending then newest first, and
    /// common prefixes, up to `max_keys` in all.
    pub async fn list_object_versions(
        &self,
        bucket: &str,
        req: &VersionsRequest,
    ) -> Result<VersionsPage, ObjectError> {
        self.bucket_info(bucket)?;
        let mut page = VersionsPage::default();
        if req.max_keys == 0 {
            return Ok(page);
        }
        let mut after = self.start_position(bucket, req).await?;
        // A listing that resumes inside a key does not show that key's current version again.
        let resumed_key = (after.1.len() == RANK_LEN).then(|| after.0.clone());
        let sets: Vec<&ErasureSet> = self.all_sets().collect();
        let want = req.max_keys + 1;
        let mut found: Vec<(Position, Option<ObjectVersion>)> = Vec::new();
        loop {
            let limit = want - found.len();
            let rounds =
                join_all(sets.iter().map(|s| list_set_versions(s, bucket, req, &after, limit))).await;
            let mut merged = BTreeMap::new();
            let mut horizon: Option<Position> = None;
            for round in rounds {
                let round = round?;
                if let Some(h) = round.horizon {
                    horizon = Some(horizon.map_or(h.clone(), |old| old.min(h)));
                }
                merged.extend(round.entries);
            }
            for (at, v) in merged {
                if horizon.as_ref().is_some_and(|h| at > *h) || found.len() >= want {
                    break;
                }
                found.push((at, v));
            }
            match horizon {
                Some(h) if found.len() < want => after = h,
                _ => break,
            }
        }
        page.truncated = found.len() > req.max_keys;
        found.truncate(req.max_keys);
        if page.truncated {
            if let Some(((name, _), v)) = found.last() {
                page.next_key_marker = Some(name.clone());
                page.next_version_marker = v.as_ref().map(|v| v.version_id);
            }
        }
        let mut last_key: Option<String> = resumed_key;
        for ((name, _), v) in found {
            match v {
                Some(v) => {
                    let is_latest = last_key.as_deref() != Some(name.as_str());
                    last_key = Some(name.clone());
                    page.entries
                        .push(VersionEntry { info: ObjectInfo::from_version(bucket, &name, &v), is_latest });
                }
                None => page.prefixes.push(name),
            }
        }
        Ok(page)
    }

    /// Where a versions listing starts: after the key marker, or inside it after the version
    /// marker (found by its rank; a version that is gone resumes after the whole key).
    async fn start_position(&self, bucket: &str, req: &VersionsRequest) -> Result<Position, ObjectError> {
        let Some(marker) = req.version_marker else { return Ok(past_name(&req.key_marker)) };
        let (set, _) = self.version_set(bucket, &req.key_marker, VersionRef::Id(marker)).await?;
        let reads = set.read_which(bucket, &req.key_marker, VersionRef::Id(marker), false).await;
        match set.resolve_any(reads) {
            Ok(r) => Ok((req.key_marker.clone(), version_rank(&r.version).to_vec())),
            Err(ObjectError::ObjectNotFound) => Ok(past_name(&req.key_marker)),
            Err(e) => Err(e),
        }
    }
}

/// A delete marker's erasure record in `set` for the object placed by `hash`, and its shard
/// distribution (each drive's copy records its own index in it).
fn marker_erasure(set: &crate::set::ErasureSet, hash: u64) -> (ErasureInfo, Vec<u8>) {
    let distribution = strata_cluster::placement::distribution(hash, set.drives.len());
    let erasure = ErasureInfo {
        bitrot: Default::default(),
        data_count: set.data_count() as u8,
        parity_count: set.parity_count as u8,
        block_size: BLOCK_SIZE as u32,
        shard_index: 0,
        distribution: distribution.clone(),
    };
    (erasure, distribution)
}
