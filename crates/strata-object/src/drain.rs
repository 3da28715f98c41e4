//! Draining a pool (decommission): every object of the pool moved onto the others, so the pool
//! can leave the drive list.
//!
//! A move takes one key at a time under the key's exclusive lock ([`ObjectLayer::move_key`]):
//! each version the pool holds is read (every frame checked against its bitrot hash), written
//! onto the target pool's set in that set's split, and committed there with its own record (id,
//! time, metadata, tags, retention, legal hold, encryption: the stored bytes are copied as they
//! are, sealed or not), in its place among the key's versions. Only once every version is in
//! the target are they removed from the pool. A crash between the two leaves the key in both
//! pools, which reads take as one (the newest wins, see [`crate::pools`]); the next pass moves
//! what is left, and a version copied twice replaces itself.
//!
//! While a pool drains it takes no new keys and no new uploads; a write to a key it holds goes to
//! another pool (the newest version decides reads). Reads and writes of a key being moved wait
//! for its lock; every other key is untouched.
//!
//! The drain's state is one document on a few drives of the other pools, saved every second: a
//! restart resumes at the saved position, and any node resumes a drain whose worker stopped
//! saving (a node lost mid-drain). Two nodes draining at once would only repeat each other's
//! moves (each key's move is under its lock and finds nothing left the second time).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use strata_drive::DriveOps;
use strata_drive::{DriveError, ListEntry, ListQuery};
use strata_meta::DataLocation;
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::quorum::{normalized, write_quorum};
use crate::set::{commit_on_quorum, CommitFn, ErasureSet};
use crate::VersionRef;

/// The document the drains are kept in, on the drives.
const STATE_NAME: &str = "pools";

/// Where a pool's drain is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DrainState {
    /// Objects are being moved off the pool.
    #[default]
    Draining,
    /// The pool holds nothing: it can leave the drive list.
    Complete,
    /// Stopped by an operator: the pool takes new keys again; what moved stays moved.
    Cancelled,
}

/// A pool's drain, as saved and as `pool status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DrainStatus {
    pub pool: usize,
    pub state: DrainState,
    /// Nanoseconds since the epoch.
    pub started: u64,
    /// When the worker last saved (its heartbeat while it runs).
    pub updated: u64,
    /// The node working on it (`""` alone).
    pub worker: String,
    /// The pass under way (a pass walks every bucket; the drain ends with a pass that finds
    /// nothing left).
    pub pass: u32,
    /// Done up to and including this key of this bucket, in the current pass.
    pub bucket: String,
    pub key: String,
    /// Keys the pool held when the current pass began.
    pub objects_total: u64,
    /// Keys moved (every version of each), in all passes.
    pub objects_moved: u64,
    pub versions_moved: u64,
    /// Bytes moved (as stored: sealed sizes for encrypted objects).
    pub bytes_moved: u64,
    /// Keys whose move failed in the current pass (tried again by the next).
    pub failed: u64,
    pub last_error: Option<String>,
    /// Uploads still in the pool: the drain waits for them to complete or be aborted.
    pub uploads_left: u64,
    /// The pool's free bytes when the drain began (MinIO's admin API reports its rate from it).
    #[serde(default)]
    pub free_at_start: u64,
    /// Seconds to the end of the pass, from the pace so far.
    pub eta_seconds: Option<u64>,
}

/// Every drain ever started (the newest per pool counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PoolsDoc {
    pub drains: Vec<DrainStatus>,
    /// The last rebalance (see [`crate::rebalance`]).
    #[serde(default)]
    pub rebalance: Option<crate::rebalance::RebalanceStatus>,
}

impl PoolsDoc {
    /// When this copy was saved: the latest update of any drain or the rebalance in it.
    fn saved(&self) -> u64 {
        let drains = self.drains.iter().map(|d| d.updated);
        drains.chain(self.rebalance.as_ref().map(|r| r.updated)).max().unwrap_or(0)
    }

    fn of(&self, pool: usize) -> Option<&DrainStatus> {
        self.drains.iter().rev().find(|d| d.pool == pool)
    }
}

/// One pool as `pool status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PoolView {
    pub pool: usize,
    /// Its argument on the command line.
    pub cmdline: String,
    pub sets: usize,
    pub drives: usize,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// `active`, `draining`, `drained` (or `cancelled`: active again).
    pub state: String,
    pub drain: Option<DrainStatus>,
}

/// What moving one key did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Moved {
    pub versions: u64,
    pub bytes: u64,
}

/// This layer's view of the drains: which pools take no new keys.
#[derive(Default)]
pub(crate) struct Drains {
    draining: std::sync::RwLock<BTreeSet<usize>>,
    /// Drains cancelled through this node (by their start time): a worker here stops before its
    /// next key; one on another node stops at its next save.
    cancelled: std::sync::Mutex<BTreeSet<u64>>,
    /// Rebalances stopped through this node (by their start time), as `cancelled`.
    pub(crate) stopped: std::sync::Mutex<BTreeSet<u64>>,
    /// A drain asked for or cancelled here: the worker looks at once.
    pub wake: tokio::sync::Notify,
}

impl Drains {
    pub(crate) fn is_draining(&self, pool: usize) -> bool {
        self.draining.read().is_ok_and(|d| d.contains(&pool))
    }

    fn is_cancelled(&self, started: u64) -> bool {
        self.cancelled.lock().is_ok_and(|c| c.contains(&started))
    }

    fn set(&self, pools: BTreeSet<usize>) {
        if let Ok(mut d) = self.draining.write() {
            *d = pools;
        }
    }
}

/// How long a drain's worker may go without saving before another node takes it over.
const WORKER_SILENT: Duration = strata_types::limits::DRAIN_WORKER_SILENT;

impl ObjectLayer {
    /// Moves every version of `key` that pool `from` holds to another pool (see the module
    /// documentation). The target is the pool already holding the key's other versions, or the
    /// pool a new key goes to.
    pub(crate) async fn move_key(
        &self,
        bucket: &str,
        key: &str,
        from: usize,
        to: Option<usize>,
    ) -> Result<Moved, ObjectError> {
        let hash = self.hash_of(bucket, key);
        let guard = self.locks.exclusive(hash).await?;
        let src = self.set_in(from, bucket, key);
        let ids = crate::heal::version_ids(src, bucket, key).await;
        if ids.is_empty() {
            return Ok(Moved::default());
        }
        let to = self.move_target(from, bucket, key, to).await?;
        let dst = self.set_in(to, bucket, key);
        let mut guards = guard.split(ids.len() * 2).into_iter();
        let mut moved = Moved::default();
        let mut copied = Vec::with_capacity(ids.len());
        for &id in &ids {
            let open =
                match crate::get::open_version_held(src, bucket, key, VersionRef::Id(id), true, None).await {
                    Ok(o) => o,
                    // On too few drives to be a version: a dangling record, the heal's to remove.
                    Err(ObjectError::ObjectNotFound) => continue,
                    Err(e) => return Err(e),
                };
            let guard = guards.next().ok_or(ObjectError::Poisoned("move guards"))?;
            moved.bytes += copy_version(open, dst, hash, bucket, key, guard).await?;
            moved.versions += 1;
            copied.push(id);
        }
        // Every version is in its new pool: only now do they leave this one.
        for id in copied {
            let guard = guards.next().ok_or(ObjectError::Poisoned("move guards"))?;
            self.remove_version_in(src, bucket, key, id, guard, None).await?;
        }
        Ok(moved)
    }

    /// The pool a key of pool `from` moves to: the newest active pool holding its other
    /// versions, or `to` when given, or the pool a new key goes to.
    async fn move_target(
        &self,
        from: usize,
        bucket: &str,
        key: &str,
        to: Option<usize>,
    ) -> Result<usize, ObjectError> {
        let holders = self.other_holders(from, bucket, key).await?;
        if let Some(&p) = holders.iter().find(|&&p| !self.drains.is_draining(p)) {
            return Ok(p);
        }
        let to = match to {
            Some(to) => to,
            None => self.new_key_pool(bucket, key).await,
        };
        match to == from || self.drains.is_draining(to) {
            true => Err(ObjectError::InvalidRequest("no pool is left to move objects to".into())),
            false => Ok(to),
        }
    }

    /// The index among this layer's pools of the pool numbered `number` in the records.
    pub(crate) fn pool_index(&self, number: usize) -> Result<usize, ObjectError> {
        self.pool_numbers.iter().position(|&n| n == number).ok_or_else(|| {
            let numbers: Vec<String> = self.pool_numbers.iter().map(usize::to_string).collect();
            ObjectError::InvalidArgument(format!(
                "there is no pool {number}: the deployment's pools are {}",
                numbers.join(", ")
            ))
        })
    }

    /// Marks pool `number` drained in every reachable drive's format record, so a start without
    /// it in the drive list is accepted (see `strata_cluster::format::resolve`). A drive that
    /// misses it now is brought up to date at a start, from the others.
    async fn retire(&self, number: usize) {
        for d in self.all_sets().flat_map(|s| s.drives.iter().flatten()) {
            let Ok(Some(bytes)) = d.read_format().await else { continue };
            let Ok(mut format) = strata_cluster::format::Format::from_json(&bytes) else { continue };
            if format.retired.contains(&number) {
                continue;
            }
            format.retired.push(number);
            format.retired.sort_unstable();
            if let Err(e) = d.write_format(format.to_json()).await {
                tracing::warn!(drive = d.endpoint(), error = %e, "cannot mark the drained pool in the drive's format record");
            }
        }
    }

    /// The online drives of the pool at `index`, set by set.
    fn pool_drives(&self, index: usize) -> impl Iterator<Item = &Arc<dyn strata_drive::Drive>> {
        self.pools.get(index).into_iter().flat_map(|sets| sets.iter().flat_map(|s| s.drives.iter().flatten()))
    }

    /// The free bytes of the pools at `indexes`, each file system counted once.
    async fn free_space(&self, indexes: &[usize]) -> u64 {
        let drives: Vec<_> = indexes.iter().flat_map(|&i| self.pool_drives(i)).collect();
        let infos = join_all(drives.iter().map(|d| d.disk_info())).await;
        let known: Vec<(Option<&str>, strata_drive::DiskInfo)> =
            drives.iter().zip(infos).filter_map(|(d, i)| Some((d.node(), i.ok()?))).collect();
        distinct_free(&known)
    }

    /// Every pool with its space and drain.
    pub async fn pool_status(&self) -> Vec<PoolView> {
        let doc = self.load_pools().await;
        let mut out = Vec::new();
        for (index, sets) in self.pools.iter().enumerate() {
            let pool = self.pool_numbers[index];
            let drives: Vec<_> = self.pool_drives(index).collect();
            let infos = join_all(drives.iter().map(|d| d.disk_info())).await;
            let (total_bytes, free_bytes) =
                infos.iter().flatten().fold((0, 0), |(t, f), i| (t + i.total_bytes, f + i.free_bytes));
            let drain = doc.of(pool).cloned();
            let state = match drain.as_ref().map(|d| d.state) {
                Some(DrainState::Draining) => "draining",
                Some(DrainState::Complete) => "drained",
                Some(DrainState::Cancelled) => "cancelled",
                None => "active",
            };
            let drive_count = sets.iter().map(|s| s.drives.len()).sum();
            out.push(PoolView {
                pool,
                cmdline: self.pool_args[index].clone(),
                sets: sets.len(),
                drives: drive_count,
                total_bytes,
                free_bytes,
                state: state.into(),
                drain,
            });
        }
        out
    }

    /// Starts draining `pool`: refused for a pool that does not exist or drains already, for
    /// the last pool taking new keys, and when the other active pools have less free space than
    /// the pool uses.
    pub async fn start_drain(&self, pool: usize) -> Result<DrainStatus, ObjectError> {
        let index = self.pool_index(pool)?;
        let mut doc = self.load_pools().await;
        if doc.rebalance.as_ref().is_some_and(|r| r.state == crate::rebalance::RebalanceState::Running) {
            return Err(ObjectError::InvalidRequest(
                "a rebalance is running: stop it (strata admin pool rebalance --stop) before draining a pool"
                    .into(),
            ));
        }
        if let Some(d) = doc.of(pool).filter(|d| d.state != DrainState::Cancelled) {
            let what = if d.state == DrainState::Draining { "is draining" } else { "is drained" };
            return Err(ObjectError::InvalidRequest(format!("pool {pool} {what} already")));
        }
        let views = self.pool_status().await;
        let others: Vec<&PoolView> = views
            .iter()
            .filter(|v| v.pool != pool && matches!(v.state.as_str(), "active" | "cancelled"))
            .collect();
        if others.is_empty() {
            return Err(ObjectError::InvalidRequest(format!(
                "pool {pool} is the last pool taking new objects: add a pool before draining it"
            )));
        }
        // What the pool holds, with the other pools' parity on top (at most twice the data):
        // counted from its records, since pools may share a file system; and the other pools'
        // free space with each file system counted once.
        let used = self.pool_stored_bytes(index).await?.saturating_mul(2);
        let mut indexes = Vec::new();
        for v in &others {
            indexes.push(self.pool_index(v.pool)?);
        }
        let room = self.free_space(&indexes).await;
        if used > room {
            return Err(ObjectError::InvalidRequest(format!(
                "pool {pool} holds objects that need up to {used} bytes elsewhere, and the other pools \
                 have {room} bytes free: add space before draining it"
            )));
        }
        let now = strata_types::time::now_nanos();
        let worker = self.state_name.clone();
        let free_at_start = views[index].free_bytes;
        let status =
            DrainStatus { pool, started: now, updated: now, worker, free_at_start, ..Default::default() };
        doc.drains.retain(|d| d.pool != pool);
        doc.drains.push(status.clone());
        self.save_pools(&doc).await?;
        self.apply_pools(&doc);
        self.drains.wake.notify_one();
        Ok(status)
    }

    /// Stops draining `pool`: it takes new keys again.
    pub async fn cancel_drain(&self, pool: usize) -> Result<DrainStatus, ObjectError> {
        let mut doc = self.load_pools().await;
        let Some(d) = doc.drains.iter_mut().rev().find(|d| d.pool == pool) else {
            return Err(ObjectError::InvalidRequest(format!("pool {pool} is not draining")));
        };
        if d.state != DrainState::Draining {
            return Err(ObjectError::InvalidRequest(format!("pool {pool} is not draining")));
        }
        d.state = DrainState::Cancelled;
        d.updated = strata_types::time::now_nanos();
        if let Ok(mut c) = self.drains.cancelled.lock() {
            c.insert(d.started);
        }
        let status = d.clone();
        self.save_pools(&doc).await?;
        self.apply_pools(&doc);
        Ok(status)
    }

    /// Starts the drain worker: it follows the saved drains (which pools take no new keys) and
    /// works any drain no other node is working on, from its saved position.
    /// `speed`: keys per second a drain moves at most (`None`: as fast as it can).
    pub fn start_drains(self: &Arc<Self>, speed: Option<f64>) {
        // One pool has nothing to drain to.
        if self.pools.len() < 2 {
            return;
        }
        let layer = self.clone();
        tokio::spawn(async move {
            // Drained pools whose records this process has marked (once each: a crash between
            // the end of a drain and its marking is made good here).
            let mut marked = BTreeSet::new();
            loop {
                let doc = layer.load_pools().await;
                layer.apply_pools(&doc);
                for d in doc.drains.iter().filter(|d| d.state == DrainState::Complete) {
                    if marked.insert(d.pool) {
                        layer.retire(d.pool).await;
                    }
                }
                let now = strata_types::time::now_nanos();
                let orphaned = doc.drains.iter().find(|d| {
                    d.state == DrainState::Draining
                        && (d.worker == layer.state_name
                            || now.saturating_sub(d.updated) > WORKER_SILENT.as_nanos() as u64)
                });
                if let Some(d) = orphaned.cloned() {
                    if let Err(e) = layer.run_drain(d, speed).await {
                        tracing::warn!(error = %e, "the pool drain stopped; it resumes shortly");
                    }
                }
                let rebalance = doc.rebalance.as_ref().filter(|r| {
                    r.state == crate::rebalance::RebalanceState::Running
                        && (r.worker == layer.state_name
                            || now.saturating_sub(r.updated) > WORKER_SILENT.as_nanos() as u64)
                });
                if let Some(r) = rebalance.cloned() {
                    if let Err(e) = layer.run_rebalance(r, speed).await {
                        tracing::warn!(error = %e, "the rebalance stopped; it resumes shortly");
                    }
                }
                tokio::select! {
                    _ = layer.drains.wake.notified() => {}
                    _ = tokio::time::sleep(strata_types::limits::DRAIN_CHECK_INTERVAL) => {}
                }
            }
        });
    }

    /// Works one drain until it is complete or cancelled, saving as it goes.
    pub async fn run_drain(
        &self,
        mut d: DrainStatus,
        speed: Option<f64>,
    ) -> Result<DrainStatus, ObjectError> {
        let number = d.pool;
        let pool = self.pool_index(number)?;
        d.worker = self.state_name.clone();
        tracing::info!(pool = number, pass = d.pass, bucket = %d.bucket, key = %d.key, "draining the pool");
        let pace = crate::healer::Pace::new(speed);
        loop {
            if d.pass == 0 || (d.bucket.is_empty() && d.key.is_empty() && d.objects_total == 0) {
                d.pass = d.pass.max(1);
                d.objects_total = self.count_pool_keys(pool).await?;
                d.failed = 0;
            }
            let began = std::time::Instant::now();
            let moved_before = d.objects_moved;
            let mut last_save = std::time::Instant::now();
            let mut found = 0u64;
            let mut buckets: Vec<String> = self.bucket_names()?;
            buckets.retain(|b| *b >= d.bucket);
            for bucket in buckets {
                let mut after = if bucket == d.bucket { d.key.clone() } else { String::new() };
                loop {
                    let keys =
                        self.pool_keys(pool, &bucket, &after, strata_types::limits::SCAN_PAGE_SIZE).await?;
                    let Some(last) = keys.last().cloned() else { break };
                    // Several keys move at once (their commits share the drives' group commits);
                    // results are taken in key order, so the saved position only ever covers
                    // keys whose move has ended.
                    let started = d.started;
                    let mut moves = futures_util::stream::iter(keys.into_iter().map(|key| {
                        let (pace, bucket) = (&pace, &bucket);
                        async move {
                            if self.drains.is_cancelled(started) {
                                return (key, None);
                            }
                            pace.step().await;
                            let moved = self.move_key(bucket, &key, pool, None).await;
                            (key, Some(moved))
                        }
                    }))
                    .buffered(strata_types::limits::DRAIN_PARALLEL);
                    while let Some((key, moved)) = moves.next().await {
                        let Some(moved) = moved else {
                            d.state = DrainState::Cancelled;
                            return Ok(d);
                        };
                        found += 1;
                        match moved {
                            Ok(m) if m.versions > 0 => {
                                d.objects_moved += 1;
                                d.versions_moved += m.versions;
                                d.bytes_moved += m.bytes;
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(pool, %bucket, %key, error = %e, "an object did not move; the next pass tries again");
                                d.failed += 1;
                                d.last_error = Some(format!("{bucket}/{key}: {e}"));
                            }
                        }
                        (d.bucket, d.key) = (bucket.clone(), key);
                        if last_save.elapsed() >= strata_types::limits::DRAIN_SAVE_INTERVAL {
                            let done = d.objects_moved - moved_before;
                            d.eta_seconds = eta(began.elapsed(), done, d.objects_total);
                            if !self.save_progress(&mut d).await? {
                                return Ok(d);
                            }
                            last_save = std::time::Instant::now();
                        }
                    }
                    after = last;
                }
            }
            d.uploads_left = self.pool_uploads(pool).await?;
            let clean = found == 0 && d.uploads_left == 0;
            if clean {
                d.state = DrainState::Complete;
                d.eta_seconds = Some(0);
                tracing::info!(pool = number, moved = d.objects_moved, "the pool is drained");
            } else {
                // Another pass: writes that landed meanwhile, failures, uploads still open.
                d.pass += 1;
                d.bucket.clear();
                d.key.clear();
                d.objects_total = 0;
                if found == 0 {
                    tokio::time::sleep(strata_types::limits::DRAIN_CHECK_INTERVAL).await;
                }
            }
            if !self.save_progress(&mut d).await? {
                return Ok(d);
            }
            if clean {
                self.retire(number).await;
                return Ok(d);
            }
        }
    }

    /// Saves a drain's progress unless it was cancelled meanwhile (on any node): `false` then.
    async fn save_progress(&self, d: &mut DrainStatus) -> Result<bool, ObjectError> {
        let mut doc = self.load_pools().await;
        let Some(saved) = doc.drains.iter_mut().rev().find(|s| s.pool == d.pool) else { return Ok(false) };
        if saved.state == DrainState::Cancelled || saved.started != d.started {
            tracing::info!(pool = d.pool, "the pool drain was cancelled");
            d.state = DrainState::Cancelled;
            return Ok(false);
        }
        d.updated = strata_types::time::now_nanos();
        *saved = d.clone();
        self.save_pools(&doc).await?;
        self.apply_pools(&doc);
        Ok(true)
    }

    pub(crate) fn bucket_names(&self) -> Result<Vec<String>, ObjectError> {
        Ok(self.list_buckets()?.into_iter().map(|b| b.name).collect())
    }

    /// Up to `limit` keys after `after` that any drive of pool `pool` lists in `bucket` (a key
    /// only one drive still lists is moved too, or found dangling and left to the heal).
    pub(crate) async fn pool_keys(
        &self,
        pool: usize,
        bucket: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<String>, ObjectError> {
        let query = ListQuery { start_after: after.to_owned(), limit, ..Default::default() };
        let mut names = BTreeSet::new();
        let mut horizon: Option<String> = None;
        for set in &self.pools[pool] {
            let lists = join_all(set.drives.iter().flatten().map(|d| d.list(bucket, query.clone()))).await;
            // Every version is on a write quorum of the set's drives, so a read quorum of
            // answers lists every key; fewer could miss one and end the drain too soon.
            let answered =
                lists.iter().filter(|l| matches!(l, Ok(_) | Err(DriveError::BucketNotFound))).count();
            if answered < crate::quorum::read_quorum(set.data_count()) {
                return Err(ObjectError::ReadQuorum {
                    needed: crate::quorum::read_quorum(set.data_count()),
                    online: answered,
                });
            }
            for list in lists.into_iter().flatten() {
                if list.len() >= limit {
                    if let Some(last) = list.last() {
                        let last = last.name().to_owned();
                        horizon = Some(horizon.map_or(last.clone(), |h: String| h.min(last)));
                    }
                }
                for e in list {
                    if let ListEntry::Object { key, .. } = e {
                        names.insert(key);
                    }
                }
            }
        }
        Ok(names.into_iter().filter(|n| horizon.as_ref().is_none_or(|h| n <= h)).collect())
    }

    /// The bytes of every version pool `pool` holds (as stored: sealed sizes), from one
    /// answering drive of each set: an estimate for the space check (a drive that missed a
    /// write lists less), read without waiting on the drives' data.
    pub(crate) async fn pool_stored_bytes(&self, pool: usize) -> Result<u64, ObjectError> {
        let mut total = 0;
        for bucket in self.bucket_names()? {
            for set in &self.pools[pool] {
                let mut best: Option<u64> = None;
                for d in set.drives.iter().flatten() {
                    if let Some(bytes) = drive_stored_bytes(d.as_ref(), &bucket).await {
                        best = Some(best.map_or(bytes, |b| b.max(bytes)));
                        break;
                    }
                }
                total += best.unwrap_or(0);
            }
        }
        Ok(total)
    }

    /// How many keys pool `pool` holds (for progress).
    async fn count_pool_keys(&self, pool: usize) -> Result<u64, ObjectError> {
        let mut n = 0;
        for bucket in self.bucket_names()? {
            let mut after = String::new();
            loop {
                let keys =
                    self.pool_keys(pool, &bucket, &after, strata_types::limits::SCAN_PAGE_SIZE).await?;
                let Some(last) = keys.last().cloned() else { break };
                n += keys.len() as u64;
                after = last;
            }
        }
        Ok(n)
    }

    /// Uploads in progress in pool `pool` (any drive listing one).
    async fn pool_uploads(&self, pool: usize) -> Result<u64, ObjectError> {
        let drives: Vec<_> = self.pool_drives(pool).collect();
        let mut ids = BTreeSet::new();
        for bucket in self.bucket_names()? {
            let query = strata_drive::UploadsQuery { limit: 1000, ..Default::default() };
            for d in &drives {
                if let Ok(list) = d.list_uploads(&bucket, query.clone()).await {
                    ids.extend(list.into_iter().map(|u| u.upload_id));
                }
            }
        }
        Ok(ids.len() as u64)
    }

    /// The drains as the drives of the pools that do not drain hold them (the newest copy).
    pub(crate) async fn load_pools(&self) -> PoolsDoc {
        let reads = join_all(self.pools_state_drives().map(|d| d.read_state(STATE_NAME))).await;
        let docs = reads.into_iter().filter_map(|r| serde_json::from_slice::<PoolsDoc>(&r.ok()??).ok());
        // The copy saved last (copies differ only where a save missed a drive).
        docs.max_by_key(PoolsDoc::saved).unwrap_or_default()
    }

    /// Saves the drains on a few drives of every pool (a drained pool's copies go with it).
    pub(crate) async fn save_pools(&self, doc: &PoolsDoc) -> Result<(), ObjectError> {
        let bytes = serde_json::to_vec(doc).map_err(|e| ObjectError::Corrupt(e.to_string()))?;
        let saved =
            join_all(self.pools_state_drives().map(|d| d.write_state(STATE_NAME, bytes.clone()))).await;
        match saved.iter().any(Result::is_ok) {
            true => Ok(()),
            false => Err(ObjectError::WriteQuorum { needed: 1, online: 0 }),
        }
    }

    /// The drives the drains' document is kept on: the first few online drives of every pool.
    fn pools_state_drives(&self) -> impl Iterator<Item = &Arc<dyn strata_drive::Drive>> {
        (0..self.pools.len()).flat_map(|i| self.pool_drives(i).take(strata_types::limits::STATE_COPIES))
    }

    fn apply_pools(&self, doc: &PoolsDoc) {
        let draining = (0..self.pools.len())
            .filter(|&p| {
                let drain = doc.of(self.pool_numbers[p]);
                drain.is_some_and(|d| matches!(d.state, DrainState::Draining | DrainState::Complete))
            })
            .collect();
        self.drains.set(draining);
    }
}

/// The bytes of every version one drive lists in `bucket` (`None`: it did not answer).
async fn drive_stored_bytes(d: &dyn strata_drive::Drive, bucket: &str) -> Option<u64> {
    let mut query =
        ListQuery { versions: true, limit: strata_types::limits::SCAN_PAGE_SIZE, ..Default::default() };
    let mut total = 0;
    loop {
        let entries = match d.list(bucket, query.clone()).await {
            Ok(e) => e,
            Err(DriveError::BucketNotFound) => return Some(0),
            Err(_) => return None,
        };
        let full = entries.len() >= query.limit;
        for e in entries {
            let ListEntry::Object { key, record } = e else { continue };
            let Some(v) = record.latest() else { continue };
            total += v.size;
            query.start_rank = Some(strata_drive::version_rank(v).to_vec());
            query.start_after = key;
        }
        if !full {
            return Some(total);
        }
    }
}

fn eta(elapsed: Duration, done: u64, total: u64) -> Option<u64> {
    if done == 0 {
        return None;
    }
    let per = elapsed.as_secs_f64() / done as f64;
    Some((per * total.saturating_sub(done) as f64).ceil() as u64)
}

/// Copies one version (opened in its pool) onto `dst`, in `dst`'s split, committed in its place
/// among the key's versions there; answers its stored size.
async fn copy_version(
    open: crate::OpenObject,
    dst: &ErasureSet,
    hash: u64,
    bucket: &str,
    key: &str,
    guard: crate::LockGuard,
) -> Result<u64, ObjectError> {
    let mut version = normalized(&open.version);
    let n = dst.drives.len();
    let shards = usize::from(version.erasure.data_count) + usize::from(version.erasure.parity_count);
    if shards != n {
        version.erasure.data_count = (n - dst.parity_count) as u8;
        version.erasure.parity_count = dst.parity_count as u8;
    }
    version.erasure.distribution = strata_cluster::placement::distribution(hash, n);
    // New data ids: a copy tried again must not share files with one a drive already took.
    match &mut version.data {
        DataLocation::File(id) => *id = Uuid::new_v4(),
        DataLocation::Multipart(_) => {
            for part in &mut version.parts {
                part.data_id = Uuid::new_v4();
            }
        }
        DataLocation::Inline(_) => {}
    }
    let erasure = dst.erasure_of(&version.erasure)?;
    let dist = version.erasure.distribution.clone();
    let (written, inline) =
        crate::heal::write_version_data(open, &version, erasure, &dist, &dst.drives, false).await?;
    let quorum =
        write_quorum(usize::from(version.erasure.data_count), usize::from(version.erasure.parity_count));
    let op = Uuid::new_v4();
    if let Err(e) = guard.ensure_held() {
        crate::heal::abort_data(&dst.drives, &version).await;
        return Err(e);
    }
    let (b, k, committed) = (bucket.to_owned(), key.to_owned(), version.clone());
    let commit: CommitFn = Box::new(move |pos, d| {
        let (v, frame) = crate::put::drive_copy(&committed, inline.as_ref(), pos);
        let ok = written.get(pos).copied().unwrap_or(false);
        let (b, k) = (b.clone(), k.clone());
        Box::pin(async move {
            if !ok {
                return Err(DriveError::Stopped(format!(
                    "{}: writing the moved shards failed",
                    d.endpoint()
                )));
            }
            d.commit_version(&b, &k, v, frame, op).await
        })
    });
    let (_, outcome) = commit_on_quorum(dst.drives.clone(), quorum, op, guard, commit).await?;
    if let Err(e) = outcome {
        crate::heal::abort_data(&dst.drives, &version).await;
        return Err(e);
    }
    Ok(version.size)
}

/// The free bytes of these drives (with the node serving each), counting a file system once: drives
/// of one node that report the same device share its space. A drive whose device is unknown (0)
/// counts on its own.
fn distinct_free(drives: &[(Option<&str>, strata_drive::DiskInfo)]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    drives
        .iter()
        .filter(|(node, info)| info.device == 0 || seen.insert((*node, info.device)))
        .map(|(_, info)| info.free_bytes)
        .sum()
}

#[cfg(test)]
mod tests {
    use strata_drive::DiskInfo;

    use super::*;

    #[test]
    fn a_file_system_shared_by_drives_counts_its_free_space_once() {
        let on = |device, free_bytes| DiskInfo { free_bytes, device, ..Default::default() };
        // Four drives of this node on one file system, two on another.
        let here: Vec<_> = [on(7, 100), on(7, 100), on(7, 100), on(7, 100), on(8, 50), on(8, 50)]
            .into_iter()
            .map(|i| (None, i))
            .collect();
        assert_eq!(distinct_free(&here), 150);
        // The same device number on another node is another file system; unknown devices count
        // one by one.
        let mixed = [(None, on(7, 100)), (Some("n2:9000"), on(7, 100)), (None, on(0, 10)), (None, on(0, 10))];
        assert_eq!(distinct_free(&mixed), 220);
    }
}
