//! Object tags, ACLs, and every metadata-only change of one version (tags, ACL, retention,
//! legal hold): under the object's lock and with the same quorum and undo rules as a write.

use std::collections::BTreeMap;

use strata_drive::DriveError;
use strata_drive::DriveOps;
use strata_meta::{Acl, ObjectVersion};
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::quorum::write_quorum;
use crate::set::{commit_on_quorum, CommitFn};
use crate::VersionRef;

impl ObjectLayer {
    /// Replaces the tags of the object's current version (`tags` empty = remove them all).
    pub async fn put_object_tags(
        &self,
        bucket: &str,
        key: &str,
        tags: BTreeMap<String, String>,
    ) -> Result<(), ObjectError> {
        self.put_object_tags_version(bucket, key, VersionRef::Current, tags).await.map(drop)
    }

    /// Replaces the tags of the version `which` names; answers its id. A delete marker has no
    /// tags ([`ObjectError::DeleteMarker`]).
    pub async fn put_object_tags_version(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        tags: BTreeMap<String, String>,
    ) -> Result<Option<Uuid>, ObjectError> {
        self.update_version_meta(bucket, key, which, move |v| {
            v.tags = tags;
            Ok(())
        })
        .await
    }

    /// Sets the replication status of version `version_id` (a delete marker has none:
    /// [`ObjectError::DeleteMarker`]).
    pub async fn set_replication_status(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        status: strata_meta::ReplicationStatus,
    ) -> Result<(), ObjectError> {
        self.update_version_meta(bucket, key, VersionRef::Id(version_id), move |v| {
            v.replication = Some(status);
            Ok(())
        })
        .await
        .map(drop)
    }

    /// Replaces the owner and ACL of the object's current version.
    pub async fn put_object_acl(&self, bucket: &str, key: &str, acl: Acl) -> Result<(), ObjectError> {
        self.put_object_acl_version(bucket, key, VersionRef::Current, acl).await.map(drop)
    }

    /// Replaces the owner and ACL of the version `which` names; answers its id. A delete marker
    /// has no ACL ([`ObjectError::DeleteMarker`]).
    pub async fn put_object_acl_version(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        acl: Acl,
    ) -> Result<Option<Uuid>, ObjectError> {
        self.update_version_meta(bucket, key, which, move |v| {
            v.acl = Some(acl);
            Ok(())
        })
        .await
    }

    /// Changes the metadata of the version `which` names with `change` (which may refuse),
    /// under the object's lock; answers the version's id.
    pub(crate) async fn update_version_meta(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        change: impl FnOnce(&mut ObjectVersion) -> Result<(), ObjectError>,
    ) -> Result<Option<Uuid>, ObjectError> {
        self.bucket_info(bucket)?;
        let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        let (set, _) = self.version_set(bucket, key, which).await?;
        let resolved = match set.resolve_any(set.read_which(bucket, key, which, false).await) {
            Err(ObjectError::ObjectNotFound) if which != VersionRef::Current => {
                Err(ObjectError::NoSuchVersion)
            }
            other => other,
        }?;
        if resolved.version.delete_marker {
            return Err(ObjectError::DeleteMarker {
                version_id: resolved.version.version_id,
                mod_time: resolved.version.mod_time,
                current: which == VersionRef::Current,
            });
        }
        let mut version = resolved.version;
        let version_id = version.version_id;
        change(&mut version)?;
        let e = &version.erasure;
        let quorum = write_quorum(usize::from(e.data_count), usize::from(e.parity_count));
        let op = Uuid::new_v4();
        guard.ensure_held()?;
        let held: Vec<bool> = resolved.holders.iter().map(Option::is_some).collect();
        let (b, k) = (bucket.to_owned(), key.to_owned());
        let commit: CommitFn = Box::new(move |pos, d| {
            let mut v = version.clone();
            v.erasure.shard_index = v.erasure.distribution.get(pos).copied().unwrap_or(0);
            let (b, k, held) = (b.clone(), k.clone(), held.get(pos).copied().unwrap_or(false));
            Box::pin(async move {
                if !held {
                    return Err(DriveError::Stale("does not hold the current version".into()));
                }
                d.update_version(&b, &k, v, op).await
            })
        });
        let (results, outcome) = commit_on_quorum(set.drives.clone(), quorum, op, guard, commit).await?;
        if outcome.is_ok() && crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        outcome.map(|()| version_id)
    }
}
