//! Which pool an object lives in.
//!
//! Every pool places a key in one of its sets by the same hash, so a key has one candidate set
//! per pool. A key's versions normally all live in one pool: a write goes to the pool that holds
//! the key's newest version, and a key no pool holds goes to a pool picked by free space. Two
//! writers of a new key may still pick different pools, and a move between pools (a drain) has
//! a moment where both hold the key; so reads never assume one pool: the current version is the
//! newest any pool holds, a version id is looked for in every pool, and an overwrite of the
//! `null` version removes the copies other pools hold. One pool (most deployments) costs nothing:
//! every lookup below answers pool 0 without reading.

use std::sync::Mutex;
use std::time::Instant;

use futures_util::future::join_all;
use strata_drive::DriveOps;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::set::ErasureSet;
use crate::VersionRef;

use strata_types::limits::POOL_SPACE_TTL as SPACE_TTL;

/// Free bytes per pool as last measured, for weighting where new keys go.
#[derive(Default)]
pub(crate) struct PoolSpace {
    /// When measured, and each pool's free bytes; `None` until first measured.
    measured: Mutex<Option<(Instant, Vec<u64>)>>,
    /// A measurement is under way (one at a time; others use the last one meanwhile).
    measuring: tokio::sync::Mutex<()>,
}

/// The pool a point in `[0, 2^64)` falls in when the range is cut in proportion to `weights`;
/// all-zero weights share it evenly.
pub(crate) fn weighted_pick(point: u64, weights: &[u64]) -> usize {
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if total == 0 {
        return (point % weights.len().max(1) as u64) as usize;
    }
    let target = (u128::from(point) * total) >> 64;
    let mut acc = 0u128;
    for (i, &w) in weights.iter().enumerate() {
        acc += u128::from(w);
        if target < acc {
            return i;
        }
    }
    weights.len() - 1
}

/// A write into one pool of several, made ready under the object's lock (see [`Self::prepare`]).
#[derive(Clone, Copy)]
pub(crate) struct PoolCheck<'a> {
    pub layer: &'a ObjectLayer,
    pub pool: usize,
}

impl PoolCheck<'_> {
    /// Under the object's lock, before a write into this pool commits: the pool was picked
    /// before the lock, and another writer or a move may have put the key in another pool
    /// meanwhile. The write still goes here (its data is here), and stays the newest version
    /// of the key: this set's stamps are moved past the newest version every other pool holds,
    /// as a drive's newer version moves them within a set. Answers the other pools that hold
    /// the key, where an overwritten `null` version is then removed.
    pub(crate) async fn prepare(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
    ) -> Result<Vec<usize>, ObjectError> {
        // This pool's own newest version stamps the write already (`commit_stamped`).
        let newest = self.layer.newest_per_pool_but(Some(self.pool), bucket, key).await?;
        let elsewhere: Vec<(usize, u64)> = (newest.iter().enumerate())
            .filter(|(p, _)| *p != self.pool)
            .filter_map(|(p, t)| t.map(|t| (p, t)))
            .collect();
        if let Some(latest) = elsewhere.iter().map(|(_, t)| *t).max() {
            set.stamps.after(Some(latest));
        }
        Ok(elsewhere.into_iter().map(|(p, _)| p).collect())
    }

    /// After a write of the `null` version stamped `stamp`: the `null` versions it replaced in
    /// the other pools `elsewhere` are removed (best effort: one left behind is older, so never
    /// read, and a delete removes it with the rest), each under one of `guards`.
    pub(crate) async fn drop_replaced(
        &self,
        elsewhere: &[usize],
        bucket: &str,
        key: &str,
        stamp: u64,
        guards: Vec<crate::LockGuard>,
    ) {
        for (&pool, guard) in elsewhere.iter().zip(guards) {
            let set = self.layer.set_in(pool, bucket, key);
            let removed = self.layer.remove_version_in(set, bucket, key, None, guard, Some(stamp)).await;
            if let Err(e) = removed {
                tracing::warn!(%bucket, %key, pool, error = %e, "a replaced null version stays in another pool");
            }
        }
    }
}

impl ObjectLayer {
    /// The check a write into `pool` makes under the object's lock; `None` with one pool.
    pub(crate) fn pool_check(&self, pool: usize) -> Option<PoolCheck<'_>> {
        (self.pools.len() > 1).then_some(PoolCheck { layer: self, pool })
    }

    /// How many pools the deployment has.
    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    /// The key's set in pool `pool`.
    pub(crate) fn set_in(&self, pool: usize, bucket: &str, key: &str) -> &ErasureSet {
        let sets = &self.pools[pool];
        &sets[self.placement.set_index(self.deployment_id(), bucket, key, sets.len())]
    }

    /// Per pool (in order): the mod time of the key's newest version there (a delete marker
    /// counts), or `None` where the pool does not hold the key. With one pool, nothing is read
    /// and the answer is `[None]`: callers use pool 0 whatever it holds.
    async fn newest_per_pool(&self, bucket: &str, key: &str) -> Result<Vec<Option<u64>>, ObjectError> {
        self.newest_per_pool_but(None, bucket, key).await
    }

    /// [`Self::newest_per_pool`] without reading pool `skip` (answered `None`).
    async fn newest_per_pool_but(
        &self,
        skip: Option<usize>,
        bucket: &str,
        key: &str,
    ) -> Result<Vec<Option<u64>>, ObjectError> {
        if self.pools.len() == 1 {
            return Ok(vec![None]);
        }
        let reads = join_all((0..self.pools.len()).map(|p| async move {
            if Some(p) == skip {
                return Err(ObjectError::ObjectNotFound);
            }
            let set = self.set_in(p, bucket, key);
            let reads = set.read_records(bucket, key, false).await;
            // A pool whose drives lack the bucket (given to a pool just added at its first
            // start) holds none of its objects.
            let no_bucket =
                reads.iter().filter(|r| matches!(r, Err(strata_drive::DriveError::BucketNotFound))).count();
            if no_bucket >= crate::quorum::read_quorum(set.data_count()) {
                return Err(ObjectError::ObjectNotFound);
            }
            set.resolve_any(reads)
        }))
        .await;
        reads
            .into_iter()
            .map(|r| match r {
                Ok(r) => Ok(Some(r.version.mod_time)),
                Err(ObjectError::ObjectNotFound) => Ok(None),
                Err(e) => Err(e),
            })
            .collect()
    }

    /// The pool that holds the key's newest version, if any pool holds the key (with one pool:
    /// pool 0, unread).
    pub(crate) async fn holding_pool(&self, bucket: &str, key: &str) -> Result<Option<usize>, ObjectError> {
        if self.pools.len() == 1 {
            return Ok(Some(0));
        }
        let newest = self.newest_per_pool(bucket, key).await?;
        Ok((newest.iter().enumerate())
            .filter_map(|(p, t)| t.map(|t| (t, p)))
            // The newest; between equals (one version in two pools while it is moved), either
            // holds it whole: the higher number.
            .max()
            .map(|(_, p)| p))
    }

    /// The pools other than `pool` that hold a version of the key.
    pub(crate) async fn other_holders(
        &self,
        pool: usize,
        bucket: &str,
        key: &str,
    ) -> Result<Vec<usize>, ObjectError> {
        if self.pools.len() == 1 {
            return Ok(Vec::new());
        }
        let newest = self.newest_per_pool(bucket, key).await?;
        Ok((newest.iter().enumerate()).filter(|(p, t)| *p != pool && t.is_some()).map(|(p, _)| p).collect())
    }

    /// The set to act on for the key's current state: the pool holding its newest version, or
    /// for a key no pool holds, the pool a new key goes to. With the placement hash.
    pub(crate) async fn key_set(&self, bucket: &str, key: &str) -> Result<(&ErasureSet, u64), ObjectError> {
        let pool = self.key_pool(bucket, key).await?;
        Ok((self.set_in(pool, bucket, key), self.hash_of(bucket, key)))
    }

    /// [`Self::key_set`]'s pool.
    pub(crate) async fn key_pool(&self, bucket: &str, key: &str) -> Result<usize, ObjectError> {
        match self.holding_pool(bucket, key).await? {
            // A draining pool takes no writes: the key's next version goes where a new key
            // would, and is the newest (the drain moves the older ones after it).
            Some(p) if !self.drains.is_draining(p) => Ok(p),
            _ => Ok(self.new_key_pool(bucket, key).await),
        }
    }

    /// The set holding version `which` of the key: the current version's pool, or for a
    /// version id, the pool holding that version (with one pool: pool 0, unread). A version no
    /// pool holds resolves to the current version's pool, whose set then reports it missing.
    pub(crate) async fn version_set(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
    ) -> Result<(&ErasureSet, u64), ObjectError> {
        let hash = self.hash_of(bucket, key);
        let VersionRef::Id(id) = which else { return self.key_set(bucket, key).await };
        if self.pools.len() == 1 {
            return Ok((self.set_in(0, bucket, key), hash));
        }
        for (p, r) in self.find_version(bucket, key, id).await.into_iter().enumerate().rev() {
            match r {
                Ok(_) => return Ok((self.set_in(p, bucket, key), hash)),
                Err(ObjectError::ObjectNotFound) => {}
                Err(e) => return Err(e),
            }
        }
        self.key_set(bucket, key).await
    }

    /// The sets holding version `id` of the key (one per pool that holds it; with one pool, that
    /// pool's set, unread). A pool that cannot say is counted in: a removal there reports why.
    pub(crate) async fn sets_holding_version(
        &self,
        bucket: &str,
        key: &str,
        id: Option<uuid::Uuid>,
    ) -> Vec<&ErasureSet> {
        if self.pools.len() == 1 {
            return vec![self.set_in(0, bucket, key)];
        }
        (self.find_version(bucket, key, id).await.into_iter().enumerate())
            .filter(|(_, r)| !matches!(r, Err(ObjectError::ObjectNotFound)))
            .map(|(p, _)| self.set_in(p, bucket, key))
            .collect()
    }

    /// Per pool: version `id` of the key as its set resolves it.
    async fn find_version(
        &self,
        bucket: &str,
        key: &str,
        id: Option<uuid::Uuid>,
    ) -> Vec<Result<crate::set::Resolved, ObjectError>> {
        join_all((0..self.pools.len()).map(|p| async move {
            let set = self.set_in(p, bucket, key);
            set.resolve_any(set.read_which(bucket, key, VersionRef::Id(id), false).await)
        }))
        .await
    }

    /// The pool a key no pool holds goes to: picked by the key's hash among the pools in
    /// proportion to their free space, so two writers of one new key pick the same pool unless
    /// the free space changed between them.
    pub async fn new_key_pool(&self, bucket: &str, key: &str) -> usize {
        if self.pools.len() == 1 {
            return 0;
        }
        let mut free = self.pool_free_space().await;
        // Draining pools take nothing; with no measure yet, the others share evenly.
        let active: Vec<bool> = (0..free.len()).map(|p| !self.drains.is_draining(p)).collect();
        for (f, a) in free.iter_mut().zip(&active) {
            if !a {
                *f = 0;
            }
        }
        if free.iter().all(|f| *f == 0) {
            free = active.iter().map(|&a| u64::from(a)).collect();
        }
        // Mixed again, so the pool pick does not follow the set pick of the same hash.
        let point = self.hash_of(bucket, key).rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        weighted_pick(point, &free)
    }

    /// Each pool's free bytes (the sum over its online drives), measured at most every
    /// [`SPACE_TTL`]; while one caller measures, others use the last measure (or even weights
    /// before the first).
    pub(crate) async fn pool_free_space(&self) -> Vec<u64> {
        let fresh = |m: &Option<(Instant, Vec<u64>)>| {
            m.as_ref().filter(|(at, _)| at.elapsed() < SPACE_TTL).map(|(_, f)| f.clone())
        };
        let last = || {
            let m = self.space.measured.lock().ok()?;
            m.as_ref().map(|(_, f)| f.clone())
        };
        if let Some(f) = self.space.measured.lock().ok().and_then(|m| fresh(&m)) {
            return f;
        }
        let Ok(_measuring) = self.space.measuring.try_lock() else {
            return last().unwrap_or_else(|| vec![0; self.pools.len()]);
        };
        let free = join_all(self.pools.iter().map(|sets| async move {
            let drives = sets.iter().flat_map(|s| s.drives.iter().flatten());
            let infos = join_all(drives.map(|d| d.disk_info())).await;
            infos.into_iter().flatten().map(|i| i.free_bytes).sum::<u64>()
        }))
        .await;
        if let Ok(mut m) = self.space.measured.lock() {
            *m = Some((Instant::now(), free.clone()));
        }
        free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_go_to_pools_in_proportion_to_their_free_space() {
        let weights = [100, 300, 0];
        let mut counts = [0usize; 3];
        let steps = 10_000u64;
        for i in 0..steps {
            counts[weighted_pick(i.wrapping_mul(u64::MAX / steps), &weights)] += 1;
        }
        assert_eq!(counts[2], 0, "a full pool takes no new keys");
        assert!((2_400..2_600).contains(&counts[0]), "{counts:?}");
        assert!((7_400..7_600).contains(&counts[1]), "{counts:?}");
        assert_eq!(weighted_pick(u64::MAX, &weights), 1);
        assert_eq!(weighted_pick(0, &[0, 0]), 0);
        assert_eq!(weighted_pick(1, &[0, 0]), 1);
    }
}
