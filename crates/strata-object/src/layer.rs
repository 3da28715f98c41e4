//! [`ObjectLayer`]: buckets and objects over pools of erasure sets.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use futures_util::future::join_all;
use strata_cluster::placement;
use strata_drive::DriveOps;
use strata_drive::{Drive, DriveError};
use strata_meta::BucketRecord;
use uuid::Uuid;

use crate::error::ObjectError;
use crate::get::{open_object, OpenObject};
use crate::list::{list_objects, ListPage, ListRequest};
use crate::lock::{Locker, Locks};
use crate::put::{put_object_sealing, BodyReader, PutOptions, PutTarget};
use crate::quorum::write_quorum;
use crate::set::ErasureSet;
use crate::{BucketInfo, ObjectInfo, VersionRef};

/// A drive position in the layout: the drive, or `None` when it was offline at start.
pub type DriveSlot = Option<Arc<dyn Drive>>;

/// One erasure set as health checks and metrics see it.
pub struct SetView {
    pub pool: usize,
    pub set: usize,
    pub drives: Vec<DriveSlot>,
    pub read_quorum: usize,
    pub write_quorum: usize,
}

pub struct ObjectLayer {
    deployment_id: Uuid,
    pub(crate) placement: placement::Placement,
    /// pools → sets.
    pub(crate) pools: Vec<Vec<ErasureSet>>,
    /// The objects' locks, one for all sets: a key has a set in every pool and one lock.
    pub(crate) locks: Locks,
    /// Each pool's free space, for placing new keys (see [`crate::pools`]).
    pub(crate) space: crate::pools::PoolSpace,
    /// Pools that drain (or are drained) take no new keys (see [`crate::drain`]).
    pub(crate) drains: crate::drain::Drains,
    /// Per pool: its number in the format records ([`LayerOptions::pool_numbers`]).
    pub(crate) pool_numbers: Vec<usize>,
    /// Per pool: its command-line argument ([`LayerOptions::pool_args`]), or `""`.
    pub(crate) pool_args: Vec<String>,
    /// Bucket name → creation time; loaded at start, kept current by make/delete.
    buckets: RwLock<BTreeMap<String, BucketRecord>>,
    pub(crate) healer: Arc<crate::healer::Healer>,
    /// Other nodes to tell about changes of the state they cache (distributed mode).
    peers: Option<Arc<dyn Peers>>,
    /// The name this node's heal state is kept under on the drives.
    pub(crate) state_name: String,
    /// Lifecycle passes: day length, totals, and this node's state name.
    pub(crate) lifecycle: crate::lifecycle_pass::Lifecycle,
}

/// Settings of the object layer that are not part of the layout.
#[derive(Debug, Clone)]
pub struct LayerOptions {
    /// How long one drive operation may take before that drive counts as failed for the request.
    pub drive_op_timeout: std::time::Duration,
    /// The clock new versions are stamped by (tests give nodes clocks that disagree).
    pub clock: Arc<dyn strata_types::time::Clock>,
    /// How objects find their set (from the drives' format records).
    pub placement: placement::Placement,
    /// Pools from this one on are being added at this start: their drives are blank, so they
    /// do not vote on which buckets exist, and are given the buckets the others hold.
    pub added_pools_from: Option<usize>,
    /// Each pool's number in the drives' format records (its name for operators, which stays
    /// when a drained pool before it leaves the drive list); empty: 0, 1, 2, ...
    pub pool_numbers: Vec<usize>,
    /// Each pool's argument on the command line (how MinIO's admin API names pools); empty:
    /// none known.
    pub pool_args: Vec<String>,
}

impl Default for LayerOptions {
    fn default() -> Self {
        Self {
            drive_op_timeout: strata_types::limits::DRIVE_OP_TIMEOUT,
            clock: Arc::new(strata_types::time::SystemClock),
            placement: placement::Placement::Strata,
            added_pools_from: None,
            pool_numbers: Vec::new(),
            pool_args: Vec::new(),
        }
    }
}

/// State every node caches, kept on the drives, that any node may change: the node that
/// changes it tells the others, which read it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SharedState {
    /// The bucket records (versioning, policies, lifecycle, tags, ...).
    Buckets,
    /// The IAM state (users, groups, policies, keys, sessions) in the system bucket.
    Iam,
}

/// The other nodes of a deployment, as the object layer needs them.
#[async_trait::async_trait]
pub trait Peers: Send + Sync {
    /// Tells every other node that `what` changed (they reload it before this returns, or are
    /// unreachable and reload when they start or next refresh).
    async fn changed(&self, what: SharedState);
}

/// What a deployment over several nodes plugs into the object layer; the layer itself never
/// knows how nodes talk.
pub struct Cluster {
    pub locker: Arc<dyn Locker>,
    pub peers: Arc<dyn Peers>,
    /// This node's name (`host:port`); its heal state is kept under it.
    pub node: String,
}

impl std::fmt::Debug for ObjectLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectLayer({}, {} pools)", self.deployment_id, self.pools.len())
    }
}

fn poisoned() -> ObjectError {
    ObjectError::Poisoned("bucket cache")
}

/// A drive (when online) and its buckets with their records (when it answered).
type DriveBuckets = (Option<Arc<dyn Drive>>, Option<BTreeMap<String, Vec<u8>>>);

impl ObjectLayer {
    /// The deployment's id (in every drive's format record).
    pub fn deployment_id(&self) -> Uuid {
        self.deployment_id
    }

    /// `pools[p][s]` lists set `s` of pool `p`'s drives in set order. Loads the bucket list.
    pub async fn new(
        deployment_id: Uuid,
        pools: Vec<Vec<Vec<DriveSlot>>>,
        parity_count: usize,
    ) -> Result<Self, ObjectError> {
        Self::new_in(deployment_id, pools, parity_count, None).await
    }

    /// [`Self::new`] for one node of a deployment over several (`cluster`), or alone (`None`).
    pub async fn new_in(
        deployment_id: Uuid,
        pools: Vec<Vec<Vec<DriveSlot>>>,
        parity_count: usize,
        cluster: Option<Cluster>,
    ) -> Result<Self, ObjectError> {
        Self::new_with(deployment_id, pools, parity_count, cluster, LayerOptions::default()).await
    }

    /// [`Self::new_in`] with settings other than the defaults.
    pub async fn new_with(
        deployment_id: Uuid,
        pools: Vec<Vec<Vec<DriveSlot>>>,
        parity_count: usize,
        cluster: Option<Cluster>,
        options: LayerOptions,
    ) -> Result<Self, ObjectError> {
        let timeout = options.drive_op_timeout;
        let pool_count = pools.len();
        let mut pools = pools
            .into_iter()
            .map(|sets| {
                sets.into_iter()
                    .map(|drives| ErasureSet::new(drives, parity_count, timeout, options.clock.clone()))
                    .collect()
            })
            .collect::<Result<Vec<Vec<_>>, _>>()?;
        let mut state_name = crate::healer::STATE_NAME.to_owned();
        let mut peers = None;
        let mut locks = Locks(Arc::new(crate::lock::LockTable::new()));
        if let Some(c) = cluster {
            locks = Locks(c.locker.clone());
            state_name =
                format!("{state_name}-{}", c.node.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
            peers = Some(c.peers);
        }
        for set in pools.iter_mut().flatten() {
            set.locks = locks.clone();
        }
        // `lifecycle` or `lifecycle-<node>`, beside the heal state.
        let node_suffix = state_name.strip_prefix(crate::healer::STATE_NAME).unwrap_or_default();
        let lifecycle = crate::lifecycle_pass::Lifecycle::new(format!("lifecycle{node_suffix}"));
        let layer = Self {
            deployment_id,
            placement: options.placement,
            pools,
            locks,
            space: Default::default(),
            drains: Default::default(),
            pool_numbers: match options.pool_numbers.len() == pool_count {
                true => options.pool_numbers.clone(),
                false => (0..pool_count).collect(),
            },
            pool_args: match options.pool_args.len() == pool_count {
                true => options.pool_args.clone(),
                false => vec![String::new(); pool_count],
            },
            buckets: RwLock::new(BTreeMap::new()),
            healer: Arc::new(crate::healer::Healer::new()),
            peers,
            state_name,
            lifecycle,
        };
        let voters: Vec<&DriveSlot> = match options.added_pools_from {
            Some(p) => {
                layer.pools[..p.min(layer.pools.len())].iter().flatten().flat_map(|s| &s.drives).collect()
            }
            None => layer.all_drives().collect(),
        };
        let listed = layer.read_bucket_list_from(&voters).await?;
        layer.give_drives_their_buckets(&listed).await;
        *layer.buckets.write().map_err(|_| poisoned())? = listed;
        Ok(layer)
    }

    /// Reads the bucket list from the drives again (another node changed it).
    pub async fn reload_buckets(&self) -> Result<(), ObjectError> {
        let listed = self.read_bucket_list().await?;
        *self.buckets.write().map_err(|_| poisoned())? = listed;
        Ok(())
    }

    /// Tells the other nodes (if any) that `what` changed.
    pub async fn tell_peers(&self, what: SharedState) {
        if let Some(p) = &self.peers {
            p.changed(what).await;
        }
    }

    /// Gives every online drive every bucket the quorum knows (a replaced, blank drive has none),
    /// so writes to it count toward quorum again. At start, without the buckets' locks (the
    /// other nodes may not answer yet); [`Self::heal_buckets`] later does the rest under them.
    async fn give_drives_their_buckets(&self, buckets: &BTreeMap<String, BucketRecord>) {
        for (name, record) in buckets {
            let record = record.encode();
            join_all(self.all_drives().flatten().map(|d| {
                let record = record.clone();
                async move {
                    if let Err(DriveError::BucketNotFound) = d.stat_bucket(name).await {
                        match d.make_bucket(name, record).await {
                            Ok(()) => tracing::info!(drive = d.endpoint(), bucket = %name, "healed bucket"),
                            Err(e) => tracing::warn!(drive = d.endpoint(), bucket = %name, error = %e, "cannot heal bucket"),
                        }
                    }
                }
            }))
            .await;
        }
    }

    /// Every set with its place and drives, for health and metrics.
    pub fn sets(&self) -> Vec<SetView> {
        let mut out = Vec::new();
        for (pool, sets) in self.pools.iter().enumerate() {
            for (set, s) in sets.iter().enumerate() {
                out.push(SetView {
                    pool,
                    set,
                    drives: s.drives.clone(),
                    read_quorum: s.data_count(),
                    write_quorum: write_quorum(s.data_count(), s.parity_count),
                });
            }
        }
        out
    }

    pub(crate) fn all_sets(&self) -> impl Iterator<Item = &ErasureSet> {
        self.pools.iter().flatten()
    }

    fn all_drives(&self) -> impl Iterator<Item = &DriveSlot> {
        self.pools.iter().flatten().flat_map(|s| s.drives.iter())
    }

    /// Quorum for bucket operations, which touch every drive: a majority.
    fn bucket_quorum(&self) -> usize {
        crate::quorum::majority(self.all_drives().count())
    }

    /// The lock that makes, deletes, changes and heals of one bucket take turns (on every node:
    /// it is the namespace lock of the bucket's empty key, which no object can have).
    async fn lock_bucket(&self, bucket: &str) -> Result<crate::lock::LockGuard, ObjectError> {
        self.locks.exclusive(self.hash_of(bucket, "")).await
    }

    /// Every drive's buckets with their records (`None`: the drive did not answer).
    async fn bucket_lists(&self) -> Vec<DriveBuckets> {
        join_all(self.all_drives().map(|d| async move {
            let list = match d {
                Some(d) => d.list_buckets().await.ok().map(|l| l.into_iter().collect()),
                None => None,
            };
            (d.clone(), list)
        }))
        .await
    }

    /// Brings every drive's buckets in line with the deployment's, as [`Self::read_bucket_list`]
    /// decides them: a bucket on at least half of the drives that answer is made on the drives
    /// missing it (and its record written where a drive holds another form of it); a bucket on
    /// fewer (a make or delete that a crash cut short) is removed from the drives holding it,
    /// unless one of them holds objects in it. It decides only when a majority of all the
    /// drives answer: an acknowledged delete left the bucket on fewer than a majority, so a
    /// majority answering never sees it on half, whereas a few drives (the deleted ones offline)
    /// could. Each bucket is healed under its lock, so a make or delete running on any node is
    /// never undone. Full heal scans run it first. Returns the drives a bucket was made or
    /// rewritten on, and those it was removed from.
    pub async fn heal_buckets(&self) -> (usize, usize) {
        let differs = |lists: &[DriveBuckets]| {
            let answered: Vec<&BTreeMap<String, Vec<u8>>> =
                lists.iter().filter_map(|(_, l)| l.as_ref()).collect();
            let mut names: Vec<String> = answered.iter().flat_map(|l| l.keys().cloned()).collect();
            names.sort();
            names.dedup();
            names.retain(|n| {
                let forms: Vec<Option<&Vec<u8>>> = answered.iter().map(|l| l.get(n)).collect();
                forms.windows(2).any(|w| w[0] != w[1])
            });
            names
        };
        let (mut made, mut removed) = (0, 0);
        for bucket in differs(&self.bucket_lists().await) {
            let Ok(_lock) = self.lock_bucket(&bucket).await else { continue };
            // Read again under the lock: a make or delete may have finished meanwhile.
            let lists = self.bucket_lists().await;
            if !differs(&lists).contains(&bucket) {
                continue;
            }
            let answered = lists.iter().filter(|(_, l)| l.is_some()).count();
            if answered < self.bucket_quorum() {
                tracing::info!(%bucket, answered, "bucket not healed: too few drives answer to decide");
                continue;
            }
            let holding =
                lists.iter().filter(|(_, l)| l.as_ref().is_some_and(|l| l.contains_key(&bucket))).count();
            if holding * 2 >= answered {
                let mut forms: BTreeMap<&Vec<u8>, usize> = BTreeMap::new();
                for record in lists.iter().filter_map(|(_, l)| l.as_ref()?.get(&bucket)) {
                    *forms.entry(record).or_default() += 1;
                }
                let Some(form) = forms.into_iter().max_by_key(|(_, n)| *n).map(|(f, _)| f.clone()) else {
                    continue;
                };
                for (d, list) in &lists {
                    let (Some(d), Some(list)) = (d, list) else { continue };
                    let result = match list.get(&bucket) {
                        None => d.make_bucket(&bucket, form.clone()).await,
                        Some(r) if *r != form => d.update_bucket(&bucket, form.clone()).await,
                        Some(_) => continue,
                    };
                    match result {
                        Ok(()) => made += 1,
                        Err(e) => {
                            tracing::warn!(%bucket, drive = d.endpoint(), error = %e, "bucket not healed")
                        }
                    }
                }
                if let Ok(mut buckets) = self.buckets.write() {
                    buckets.insert(bucket.clone(), BucketRecord::decode(&form).unwrap_or_default());
                }
            } else {
                for (d, list) in &lists {
                    let (Some(d), Some(list)) = (d, list) else { continue };
                    if !list.contains_key(&bucket) {
                        continue;
                    }
                    match d.delete_bucket(&bucket).await {
                        Ok(()) => removed += 1,
                        Err(e) => {
                            tracing::warn!(%bucket, drive = d.endpoint(), error = %e, "a bucket on too few drives to exist was kept")
                        }
                    }
                }
                if let Ok(mut buckets) = self.buckets.write() {
                    buckets.remove(&bucket);
                }
            }
            tracing::info!(%bucket, made, removed, "bucket healed");
        }
        if made + removed > 0 {
            self.tell_peers(SharedState::Buckets).await;
        }
        (made, removed)
    }

    async fn read_bucket_list(&self) -> Result<BTreeMap<String, BucketRecord>, ObjectError> {
        self.read_bucket_list_from(&self.all_drives().collect::<Vec<_>>()).await
    }

    /// The buckets as `drives` hold them: each bucket on at least half of those that answer,
    /// with the form of its record most of them hold; half of them must answer.
    async fn read_bucket_list_from(
        &self,
        drives: &[&DriveSlot],
    ) -> Result<BTreeMap<String, BucketRecord>, ObjectError> {
        let answers = join_all(drives.iter().map(|d| async move {
            match d {
                Some(d) => d.list_buckets().await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }))
        .await;
        let answered = answers.iter().filter(|a| a.is_ok()).count();
        let needed = drives.len().div_ceil(2);
        if answered < needed {
            return Err(crate::set::exhausted(&answers)
                .unwrap_or(ObjectError::ReadQuorum { needed, online: answered }));
        }
        // Per bucket: how many drives have it, and how many hold each form of its record.
        let mut seen: BTreeMap<String, (usize, BTreeMap<Vec<u8>, usize>)> = BTreeMap::new();
        for (name, record) in answers.into_iter().flatten().flatten() {
            let slot = seen.entry(name).or_default();
            slot.0 += 1;
            *slot.1.entry(record).or_default() += 1;
        }
        Ok(seen
            .into_iter()
            .filter(|(_, (n, _))| *n * 2 >= answered)
            .map(|(name, (_, forms))| {
                let most = forms.into_iter().max_by_key(|(_, n)| *n).map(|(r, _)| r).unwrap_or_default();
                let record = BucketRecord::decode(&most).unwrap_or_default();
                (name, record)
            })
            .collect())
    }

    pub fn bucket_info(&self, bucket: &str) -> Result<BucketInfo, ObjectError> {
        let buckets = self.buckets.read().map_err(|_| poisoned())?;
        let record = buckets.get(bucket).ok_or(ObjectError::BucketNotFound)?;
        Ok(BucketInfo { name: bucket.to_owned(), created: record.created, tags: record.tags.clone() })
    }

    pub fn list_buckets(&self) -> Result<Vec<BucketInfo>, ObjectError> {
        let buckets = self.buckets.read().map_err(|_| poisoned())?;
        Ok(buckets
            .iter()
            .map(|(name, r)| BucketInfo { name: name.clone(), created: r.created, tags: r.tags.clone() })
            .collect())
    }

    pub async fn make_bucket(&self, bucket: &str) -> Result<(), ObjectError> {
        self.make_bucket_with(bucket, false).await
    }

    /// Creates a bucket; with `object_lock`, one with object lock enabled (and so versioning).
    pub async fn make_bucket_with(&self, bucket: &str, object_lock: bool) -> Result<(), ObjectError> {
        let record = match object_lock {
            true => BucketRecord {
                versioning: strata_meta::Versioning::Enabled,
                object_lock: Some(Default::default()),
                ..Default::default()
            },
            false => BucketRecord::default(),
        };
        self.make_bucket_record(bucket, record).await
    }

    /// Makes a bucket whose record starts as `record` (owner, ownership controls, ACL,
    /// versioning, object lock); its creation time is now.
    pub async fn make_bucket_record(&self, bucket: &str, record: BucketRecord) -> Result<(), ObjectError> {
        let _lock = self.lock_bucket(bucket).await?;
        let created = strata_types::time::now_nanos();
        let record = BucketRecord { created, ..record };
        let encoded = record.encode();
        let results = join_all(self.all_drives().map(|d| {
            let record = encoded.clone();
            async move {
                match d {
                    Some(d) => d.make_bucket(bucket, record).await,
                    None => Err(DriveError::Unreachable("offline at start".into())),
                }
            }
        }))
        .await;
        let quorum = self.bucket_quorum();
        let exists = results.iter().filter(|r| matches!(r, Err(DriveError::BucketExists))).count();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        if exists >= quorum || (ok == 0 && exists > 0) {
            return Err(ObjectError::BucketExists);
        }
        if ok + exists < quorum {
            return Err(ObjectError::WriteQuorum { needed: quorum, online: ok + exists });
        }
        self.buckets.write().map_err(|_| poisoned())?.insert(bucket.to_owned(), record);
        self.tell_peers(SharedState::Buckets).await;
        Ok(())
    }

    pub async fn delete_bucket(&self, bucket: &str) -> Result<(), ObjectError> {
        self.bucket_info(bucket)?;
        let _lock = self.lock_bucket(bucket).await?;
        // Older versions and delete markers keep a bucket from being empty, as in S3.
        let probe = crate::VersionsRequest { max_keys: 1, ..Default::default() };
        if !self.list_object_versions(bucket, &probe).await?.entries.is_empty() {
            return Err(ObjectError::BucketNotEmpty);
        }
        let results = join_all(self.all_drives().map(|d| async move {
            match d {
                Some(d) => d.delete_bucket(bucket).await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }))
        .await;
        if results.iter().any(|r| matches!(r, Err(DriveError::BucketNotEmpty))) {
            // Undo on the drives that deleted, so the bucket stays whole.
            let record = self.bucket_record(bucket)?.encode();
            join_all(self.all_drives().zip(&results).filter(|(_, r)| r.is_ok()).map(|(d, _)| {
                let record = record.clone();
                async move {
                    if let Some(d) = d {
                        let _ = d.make_bucket(bucket, record).await;
                    }
                }
            }))
            .await;
            return Err(ObjectError::BucketNotEmpty);
        }
        let gone = results.iter().filter(|r| matches!(r, Ok(()) | Err(DriveError::BucketNotFound))).count();
        if gone < self.bucket_quorum() {
            return Err(ObjectError::WriteQuorum { needed: self.bucket_quorum(), online: gone });
        }
        self.buckets.write().map_err(|_| poisoned())?.remove(bucket);
        self.tell_peers(SharedState::Buckets).await;
        Ok(())
    }

    /// The bucket's whole record (tags, CORS rules).
    pub fn bucket_record(&self, bucket: &str) -> Result<BucketRecord, ObjectError> {
        let buckets = self.buckets.read().map_err(|_| poisoned())?;
        buckets.get(bucket).cloned().ok_or(ObjectError::BucketNotFound)
    }

    /// Calls `f` with the bucket's record (no copy), or `BucketNotFound`.
    pub fn with_bucket_record<R>(
        &self,
        bucket: &str,
        f: impl FnOnce(&BucketRecord) -> R,
    ) -> Result<R, ObjectError> {
        let buckets = self.buckets.read().map_err(|_| poisoned())?;
        buckets.get(bucket).map(f).ok_or(ObjectError::BucketNotFound)
    }

    /// Changes a bucket's record on every drive (a majority must take it).
    pub async fn update_bucket(
        &self,
        bucket: &str,
        change: impl FnOnce(&mut BucketRecord),
    ) -> Result<(), ObjectError> {
        self.try_update_bucket(bucket, |r| {
            change(r);
            Ok(())
        })
        .await
    }

    /// Changes a bucket's record when `change` allows it (it sees the record under the bucket's
    /// lock, so what it checks still holds when the change is written).
    pub async fn try_update_bucket(
        &self,
        bucket: &str,
        change: impl FnOnce(&mut BucketRecord) -> Result<(), ObjectError>,
    ) -> Result<(), ObjectError> {
        let _lock = self.lock_bucket(bucket).await?;
        let mut record = self.bucket_record(bucket)?;
        change(&mut record)?;
        let bytes = record.encode();
        let results = join_all(self.all_drives().map(|d| {
            let bytes = bytes.clone();
            async move {
                match d {
                    Some(d) => d.update_bucket(bucket, bytes).await,
                    None => Err(DriveError::Unreachable("offline at start".into())),
                }
            }
        }))
        .await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        if ok < self.bucket_quorum() {
            return Err(ObjectError::WriteQuorum { needed: self.bucket_quorum(), online: ok });
        }
        self.buckets.write().map_err(|_| poisoned())?.insert(bucket.to_owned(), record);
        self.tell_peers(SharedState::Buckets).await;
        Ok(())
    }

    /// Replaces a bucket's tags.
    pub async fn put_bucket_tags(
        &self,
        bucket: &str,
        tags: BTreeMap<String, String>,
    ) -> Result<(), ObjectError> {
        self.update_bucket(bucket, |r| r.tags = tags).await
    }

    /// Every set's `pool/set` name with its drives' endpoints (offline slots as `offline`).
    pub(crate) fn set_drive_names(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for (p, sets) in self.pools.iter().enumerate() {
            for (i, set) in sets.iter().enumerate() {
                let drives = set
                    .drives
                    .iter()
                    .map(|d| d.as_ref().map_or("offline".into(), |d| d.endpoint().to_owned()));
                out.push((format!("{p}/{i}"), drives.collect()));
            }
        }
        out
    }

    /// `pool/set` of the key's set, for progress reports. With several pools, the key's set in
    /// the first: a scan counts each key once, and which pool holds it would take a read.
    pub(crate) fn set_name(&self, bucket: &str, key: &str) -> String {
        let sets = self.pools[0].len();
        format!("0/{}", self.placement.set_index(self.deployment_id, bucket, key, sets))
    }

    /// PENDING when an enabled rule of the bucket's replication configuration takes a new
    /// version of `key` with `tags` (the status a client's write is stored with).
    pub(crate) fn replication_pending(
        &self,
        bucket: &str,
        key: &str,
        tags: &BTreeMap<String, String>,
    ) -> Option<strata_meta::ReplicationStatus> {
        let takes = self.with_bucket_record(bucket, |r| {
            r.replication.as_ref().is_some_and(|c| c.rule_for(key, tags, false).is_some())
        });
        takes.unwrap_or(false).then_some(strata_meta::ReplicationStatus::Pending)
    }

    /// The object's placement hash: it names the object's lock, picks its set in every pool, and
    /// rotates its shards over the set's drives.
    pub(crate) fn hash_of(&self, bucket: &str, key: &str) -> u64 {
        placement::object_hash(self.deployment_id, bucket, key)
    }

    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: &mut dyn BodyReader,
        opts: PutOptions,
    ) -> Result<ObjectInfo, ObjectError> {
        let version_id = self.new_version_id(bucket)?;
        let mut opts = self.with_lock_defaults(bucket, opts)?;
        if opts.replication.is_none() {
            opts.replication = self.replication_pending(bucket, key, &opts.tags);
        }
        let pool = self.key_pool(bucket, key).await?;
        let (set, hash) = (self.set_in(pool, bucket, key), self.hash_of(bucket, key));
        let target = PutTarget {
            set,
            bucket,
            key,
            hash,
            healer: &self.healer,
            version_id,
            imported_at: None,
            pool: self.pool_check(pool),
        };
        put_object_sealing(target, body, opts).await
    }

    /// Resolves an object's current version; with `for_read`, also opens its data for
    /// [`OpenObject::stream`]. A current delete marker is [`ObjectError::DeleteMarker`].
    pub async fn open_object(
        &self,
        bucket: &str,
        key: &str,
        for_read: bool,
    ) -> Result<OpenObject, ObjectError> {
        self.open_object_version(bucket, key, VersionRef::Current, for_read).await
    }

    /// [`Self::open_object`] for the version `which` names.
    pub async fn open_object_version(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        for_read: bool,
    ) -> Result<OpenObject, ObjectError> {
        self.bucket_info(bucket)?;
        let hash = self.hash_of(bucket, key);
        if self.pools.len() > 1 && which == VersionRef::Current {
            return self.open_newest(bucket, key, for_read).await;
        }
        let (set, hash) = match which {
            VersionRef::Current => (self.set_in(0, bucket, key), hash),
            _ => self.version_set(bucket, key, which).await?,
        };
        open_object(set, bucket, key, hash, which, for_read, Some(&self.healer)).await
    }

    /// The current version with several pools: opened in every pool at once, the newest wins
    /// (a delete marker too). When no pool holds the key, it is looked for once more: a move
    /// between pools copies before it removes, so a key that one look missed in both places
    /// (the copy not yet there, the original already gone) is in its new pool by the second.
    async fn open_newest(&self, bucket: &str, key: &str, for_read: bool) -> Result<OpenObject, ObjectError> {
        let hash = self.hash_of(bucket, key);
        let mut outcome = Err(ObjectError::ObjectNotFound);
        for _ in 0..2 {
            let opened = join_all((0..self.pools.len()).map(|p| {
                let set = self.set_in(p, bucket, key);
                open_object(set, bucket, key, hash, VersionRef::Current, for_read, Some(&self.healer))
            }))
            .await;
            let mut newest: Option<(u64, Result<OpenObject, ObjectError>)> = None;
            for open in opened {
                let at = match &open {
                    Ok(o) => o.version.mod_time,
                    Err(ObjectError::DeleteMarker { mod_time, .. }) => *mod_time,
                    Err(ObjectError::ObjectNotFound) => continue,
                    Err(_) => return open,
                };
                if newest.as_ref().is_none_or(|(t, _)| at > *t) {
                    newest = Some((at, open));
                }
            }
            outcome = match newest {
                Some((_, open)) => return open,
                None => Err(ObjectError::ObjectNotFound),
            };
        }
        outcome
    }

    /// Deletes an object's current version as the bucket's versioning says (see
    /// [`Self::delete_object_version`]); deleting a missing object succeeds (S3 semantics).
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), ObjectError> {
        self.delete_object_version(bucket, key, VersionRef::Current, false).await.map(drop)
    }

    pub async fn list_objects(&self, bucket: &str, req: &ListRequest) -> Result<ListPage, ObjectError> {
        self.bucket_info(bucket)?;
        let sets: Vec<&ErasureSet> = self.pools.iter().flatten().collect();
        list_objects(&sets, bucket, req).await
    }
}
