//! Object tags: a metadata-only change of the current version, under the object's lock and with
//! the same quorum and undo rules as a write.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use strata_drive::DriveError;
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::set::{finish_op, reduce_writes, write_quorum};

impl ObjectLayer {
    /// Replaces the tags of the object's current version (`tags` empty = remove them all).
    pub async fn put_object_tags(
        &self,
        bucket: &str,
        key: &str,
        tags: BTreeMap<String, String>,
    ) -> Result<(), ObjectError> {
        self.bucket_info(bucket)?;
        let (set, hash) = self.locate(bucket, key);
        let _guard = set.locks.exclusive(hash).await?;
        let resolved = set.resolve(set.read_records(bucket, key, false).await)?;
        let mut version = resolved.version;
        version.tags = tags;
        let e = &version.erasure;
        let quorum = write_quorum(usize::from(e.data_count), usize::from(e.parity_count));
        let op = Uuid::new_v4();
        _guard.ensure_held()?;
        let results =
            join_all(set.drives.iter().zip(&resolved.holders).enumerate().map(|(pos, (d, held))| {
                let mut v = version.clone();
                v.erasure.shard_index = v.erasure.distribution.get(pos).copied().unwrap_or(0);
                async move {
                    match (d, held) {
                        (Some(d), Some(_)) => d.update_version(bucket, key, v, op).await,
                        _ => Err(DriveError::Offline("does not hold the current version".into())),
                    }
                }
            }))
            .await;
        let outcome = reduce_writes(&results, quorum);
        finish_op(set, &results, op, outcome.is_ok()).await;
        if outcome.is_ok() && crate::set::missed_answering_drive(&results) {
            self.healer.notify(bucket, key);
        }
        outcome
    }
}
