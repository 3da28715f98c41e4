//! The lifecycle pass: every so often, each node walks every bucket that has an enabled
//! lifecycle configuration, page by page through its versions (never a whole bucket in memory),
//! feeds each key's versions to a [`KeyWalk`] and carries out what it decides, then aborts the
//! incomplete multipart uploads the rules name.
//!
//! Each action is checked again under the object's exclusive lock against what is stored then
//! (the version is still there, still current or noncurrent, still due, not locked by object
//! lock) and is idempotent: several nodes running their passes over the same buckets do the work
//! once and find nothing left the second time. Work is paced like healing (the heal priority's
//! pause after each action and page).
//!
//! Progress (the pass's start, the bucket, the last key finished) is saved as a small JSON state
//! document on a few drives every [`LIFECYCLE_SAVE_KEYS`] keys or [`LIFECYCLE_SAVE_INTERVAL`],
//! so a restarted node resumes its pass instead of starting over (see `docs/formats.md`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use strata_drive::DriveOps;
use strata_drive::{ListEntry, ListQuery};
use strata_meta::{LifecycleConfig, ObjectVersion, Versioning};
use strata_types::limits::{
    LIFECYCLE_DAY, LIFECYCLE_INTERVAL, LIFECYCLE_PAGE_SIZE, LIFECYCLE_SAVE_INTERVAL, LIFECYCLE_SAVE_KEYS,
    STATE_COPIES,
};
use strata_types::time::now_nanos;
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::lifecycle::{self, Action, Clock, KeyWalk, VersionFacts};
use crate::{ObjectInfo, VersionRef, VersionsRequest};

/// How often passes run and how long a lifecycle day lasts.
#[derive(Debug, Clone, Copy)]
pub struct LifecycleSettings {
    /// Between the end of one pass and the start of the next.
    pub interval: Duration,
    /// A real day, or less with the test-only fast clock (`STRATA_LIFECYCLE_DAY_SECONDS`).
    pub day: Duration,
}

impl Default for LifecycleSettings {
    fn default() -> Self {
        Self { interval: LIFECYCLE_INTERVAL, day: LIFECYCLE_DAY }
    }
}

/// A removal a pass made, for the S3 layer to announce (`s3:LifecycleExpiration:*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleEvent {
    pub bucket: String,
    pub key: String,
    /// A delete marker was added (`DeleteMarkerCreated`); else a version went (`Delete`).
    pub delete_marker_created: bool,
    /// The version removed or the marker added (`None`: the `null` version).
    pub version_id: Option<Uuid>,
    /// The bucket has (had) versioning: the event names the version.
    pub versioned: bool,
}

/// Where lifecycle events go; the binary plugs in the S3 layer's notifier.
#[async_trait::async_trait]
pub trait LifecycleEvents: Send + Sync {
    async fn expired(&self, event: LifecycleEvent);
}

/// Lifetime totals, for `/metrics`.
#[derive(Debug, Default)]
pub struct LifecycleTotals {
    pub objects_scanned: AtomicU64,
    /// Current versions deleted or hidden behind a delete marker.
    pub expired_current: AtomicU64,
    pub expired_noncurrent: AtomicU64,
    pub expired_delete_markers: AtomicU64,
    pub aborted_uploads: AtomicU64,
    pub passes: AtomicU64,
    /// Milliseconds the last finished pass took.
    pub last_pass_millis: AtomicU64,
    /// Unix seconds when the last pass finished.
    pub last_pass_finished: AtomicU64,
}

/// The lifecycle machinery of one node: its day length, totals and state name.
#[derive(Debug)]
pub struct Lifecycle {
    day_nanos: AtomicU64,
    pub totals: LifecycleTotals,
    state_name: String,
}

impl Lifecycle {
    pub(crate) fn new(state_name: String) -> Self {
        Self { day_nanos: AtomicU64::new(86_400_000_000_000), totals: Default::default(), state_name }
    }

    /// Now, with this node's day length.
    pub fn clock(&self) -> Clock {
        Clock { now: now_nanos(), day: Duration::from_nanos(self.day_nanos.load(Ordering::Relaxed).max(1)) }
    }

    fn count(&self, action: &Action) {
        let t = &self.totals;
        let counter = match action {
            Action::ExpireCurrent { .. } => &t.expired_current,
            Action::RemoveNoncurrent { .. } => &t.expired_noncurrent,
            Action::RemoveDeleteMarker { .. } => &t.expired_delete_markers,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The pass's progress as saved on drives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LifecycleState {
    /// Nanoseconds since the Unix epoch: the newest copy wins.
    pub saved: u64,
    /// The pass in progress, if one is.
    pub running: Option<PassPosition>,
    /// Nanoseconds since the Unix epoch when the last pass finished (0: never).
    pub last_finished: u64,
    pub passes: u64,
}

/// Where a pass is: it started at `started` and has finished every key of `bucket` up to and
/// including `key` (and every bucket before it, in name order).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PassPosition {
    pub started: u64,
    pub bucket: String,
    pub key: String,
}

/// Facts of a listed version for the rules.
fn facts(info: &ObjectInfo, now: u64) -> VersionFacts<'_> {
    VersionFacts {
        version_id: info.version_id,
        mod_time: info.mod_time,
        delete_marker: info.delete_marker,
        size: info.size,
        tags: &info.tags,
        locked: info.legal_hold || info.retention.is_some_and(|r| r.until > now),
    }
}

fn is(v: &ObjectVersion, version_id: Option<Uuid>, mod_time: u64) -> bool {
    v.version_id == version_id && v.mod_time == mod_time
}

/// Keys finished since the state was last saved, and when it was.
struct Saving {
    keys: u64,
    at: Instant,
}

impl ObjectLayer {
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// What `x-amz-expiration` says of the current version `info` of `bucket`: when it expires
    /// and by which rule; `None` when no enabled Days or Date rule matches it.
    pub fn lifecycle_expiration(&self, bucket: &str, info: &ObjectInfo) -> Option<(u64, String)> {
        let clock = self.lifecycle.clock();
        self.with_bucket_record(bucket, |r| {
            let config = r.lifecycle.as_ref()?;
            lifecycle::current_expiry(config, &info.key, &facts(info, clock.now), &clock)
                .map(|(at, id)| (at, id.to_owned()))
        })
        .ok()
        .flatten()
    }

    fn lifecycle_config(&self, bucket: &str) -> Result<Option<LifecycleConfig>, ObjectError> {
        self.with_bucket_record(bucket, |r| r.lifecycle.clone().filter(lifecycle::any_enabled))
    }

    /// Starts this node's passes: one right away when none ran for `interval` (or one a restart
    /// interrupted, from where it stopped), then one `interval` after each.
    pub fn start_lifecycle(
        self: &Arc<Self>,
        settings: LifecycleSettings,
        events: Option<Arc<dyn LifecycleEvents>>,
    ) {
        let day = u64::try_from(settings.day.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.lifecycle.day_nanos.store(day, Ordering::Relaxed);
        let layer = self.clone();
        tokio::spawn(async move {
            let mut state = layer.load_lifecycle_state().await.unwrap_or_default();
            if let Some(p) = &state.running {
                tracing::info!(bucket = %p.bucket, key = %p.key, "resuming the lifecycle pass a restart interrupted");
            }
            loop {
                if state.running.is_none() {
                    let interval = u64::try_from(settings.interval.as_nanos()).unwrap_or(u64::MAX);
                    let next = state.last_finished.saturating_add(interval);
                    let now = now_nanos();
                    if next > now {
                        tokio::time::sleep(Duration::from_nanos(next - now)).await;
                    }
                    state.running = Some(PassPosition { started: now_nanos(), ..Default::default() });
                }
                state = layer.lifecycle_pass(state, events.as_deref()).await;
            }
        });
    }

    /// Runs the pass `state.running` describes (from its position) to its end; returns the
    /// state after it.
    pub async fn lifecycle_pass(
        &self,
        mut state: LifecycleState,
        events: Option<&dyn LifecycleEvents>,
    ) -> LifecycleState {
        let began = Instant::now();
        let Some(start) = state.running.clone() else { return state };
        let buckets: Vec<String> =
            self.list_buckets().unwrap_or_default().into_iter().map(|b| b.name).collect();
        let mut saving = Saving { keys: 0, at: Instant::now() };
        for bucket in buckets.into_iter().filter(|b| *b >= start.bucket) {
            let after = if bucket == start.bucket { start.key.clone() } else { String::new() };
            if let Some(p) = state.running.as_mut() {
                (p.bucket, p.key) = (bucket.clone(), after.clone());
            }
            if let Err(e) = self.lifecycle_bucket(&bucket, &after, &mut state, &mut saving, events).await {
                tracing::warn!(%bucket, error = %e, "lifecycle pass: bucket skipped");
            }
        }
        state.running = None;
        state.last_finished = now_nanos();
        state.passes += 1;
        let t = &self.lifecycle.totals;
        t.passes.fetch_add(1, Ordering::Relaxed);
        t.last_pass_millis.store(began.elapsed().as_millis() as u64, Ordering::Relaxed);
        t.last_pass_finished.store(state.last_finished / 1_000_000_000, Ordering::Relaxed);
        self.save_lifecycle_state(&mut state).await;
        state
    }

    /// One bucket's part of a pass: its uploads (when starting it), then its versions after the
    /// key `after`.
    async fn lifecycle_bucket(
        &self,
        bucket: &str,
        after: &str,
        state: &mut LifecycleState,
        saving: &mut Saving,
        events: Option<&dyn LifecycleEvents>,
    ) -> Result<(), ObjectError> {
        let Some(config) = self.lifecycle_config(bucket)? else { return Ok(()) };
        if after.is_empty() {
            self.lifecycle_uploads(bucket, &config).await?;
        }
        let mut req = VersionsRequest {
            prefix: lifecycle::common_prefix(&config),
            key_marker: after.to_owned(),
            max_keys: LIFECYCLE_PAGE_SIZE,
            ..Default::default()
        };
        let mut walk: Option<KeyWalk> = None;
        loop {
            let listed = Instant::now();
            let page = self.list_object_versions(bucket, &req).await?;
            tokio::time::sleep(self.healer.priority().lifecycle_pause(listed.elapsed())).await;
            // A configuration changed or removed meanwhile is the next pass's.
            if self.lifecycle_config(bucket)?.as_ref() != Some(&config) {
                return Ok(());
            }
            let clock = self.lifecycle.clock();
            for entry in &page.entries {
                let info = &entry.info;
                if walk.as_ref().is_some_and(|w| w.key() != info.key) {
                    if let Some(done) = walk.take() {
                        self.finish_key(bucket, done, &config, state, saving, events).await;
                    }
                }
                let w = walk.get_or_insert_with(|| KeyWalk::new(&config, &info.key));
                self.lifecycle.totals.objects_scanned.fetch_add(1, Ordering::Relaxed);
                if let Some(action) = w.next(&facts(info, clock.now), &clock) {
                    self.lifecycle_apply(bucket, &info.key, action, &config, events).await;
                }
            }
            match (page.truncated, page.next_key_marker) {
                (true, Some(key)) => {
                    req.key_marker = key;
                    req.version_marker = page.next_version_marker;
                }
                _ => break,
            }
        }
        if let Some(done) = walk.take() {
            self.finish_key(bucket, done, &config, state, saving, events).await;
        }
        Ok(())
    }

    /// A key's last version was seen: its expired delete marker goes, and the position moves
    /// past it (saved every so often).
    async fn finish_key(
        &self,
        bucket: &str,
        walk: KeyWalk<'_>,
        config: &LifecycleConfig,
        state: &mut LifecycleState,
        saving: &mut Saving,
        events: Option<&dyn LifecycleEvents>,
    ) {
        let key = walk.key().to_owned();
        if let Some(action) = walk.finish(&self.lifecycle.clock()) {
            self.lifecycle_apply(bucket, &key, action, config, events).await;
        }
        if let Some(p) = state.running.as_mut() {
            p.key = key;
        }
        saving.keys += 1;
        if saving.keys >= LIFECYCLE_SAVE_KEYS || saving.at.elapsed() >= LIFECYCLE_SAVE_INTERVAL {
            self.save_lifecycle_state(state).await;
            *saving = Saving { keys: 0, at: Instant::now() };
        }
    }

    /// Carries out one action (checked again under the object's lock), counts it, announces it,
    /// and pauses as the heal priority says.
    async fn lifecycle_apply(
        &self,
        bucket: &str,
        key: &str,
        action: Action,
        config: &LifecycleConfig,
        events: Option<&dyn LifecycleEvents>,
    ) {
        let began = Instant::now();
        let done = match &action {
            Action::ExpireCurrent { version_id, mod_time, .. } => {
                self.expire_current(bucket, key, *version_id, *mod_time, config).await
            }
            Action::RemoveNoncurrent { version_id, mod_time, .. } => {
                self.expire_noncurrent(bucket, key, *version_id, *mod_time).await
            }
            Action::RemoveDeleteMarker { version_id, mod_time, .. } => {
                self.expire_delete_marker(bucket, key, *version_id, *mod_time).await
            }
        };
        match done {
            Ok(Some(event)) => {
                self.lifecycle.count(&action);
                tracing::debug!(%bucket, %key, ?action, "lifecycle expired");
                if let Some(events) = events {
                    events.expired(event).await;
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(%bucket, %key, error = %e, "lifecycle action failed"),
        }
        tokio::time::sleep(self.healer.priority().lifecycle_pause(began.elapsed())).await;
    }

    /// The current version `version_id` made at `mod_time`, if it still is current and due:
    /// deleted (unversioned bucket) or hidden behind a new delete marker.
    async fn expire_current(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        mod_time: u64,
        config: &LifecycleConfig,
    ) -> Result<Option<LifecycleEvent>, ObjectError> {
        let (locked, current) = self.lock_current(bucket, key).await?;
        let Some(current) = current.filter(|c| !c.delete_marker && is(c, version_id, mod_time)) else {
            return Ok(None);
        };
        let clock = self.lifecycle.clock();
        let info = ObjectInfo::from_version(bucket, key, &current);
        let due = lifecycle::current_expiry(config, key, &facts(&info, clock.now), &clock);
        if due.is_none_or(|(at, _)| at > clock.now) {
            return Ok(None);
        }
        let event = |delete_marker_created, version_id, versioned| LifecycleEvent {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            delete_marker_created,
            version_id,
            versioned,
        };
        match self.versioning(bucket)? {
            Versioning::Unversioned => {
                self.remove_version_locked(bucket, key, version_id, locked.guard, Some(locked.checked))
                    .await?;
                Ok(Some(event(false, version_id, false)))
            }
            state => {
                let id = state.enabled().then(Uuid::now_v7);
                self.add_delete_marker_locked(bucket, key, id, locked.guard, Some(locked.checked)).await?;
                Ok(Some(event(true, id, true)))
            }
        }
    }

    /// Takes `key`'s exclusive lock and reads its current version (`None`: no such object), for
    /// an action to check what is stored before it acts. The action's change carries the newest
    /// stamp read ([`Locked::checked`]), so that a pass whose lock ran out while it was paused
    /// cannot remove what another node wrote after the check.
    async fn lock_current(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(Locked, Option<ObjectVersion>), ObjectError> {
        let guard = self.locks.exclusive(self.hash_of(bucket, key)).await?;
        let (set, _) = self.key_set(bucket, key).await?;
        let reads = set.read_records(bucket, key, false).await;
        let locked = Locked { guard, checked: crate::put::newest_stamp(&reads) };
        match set.resolve_any(reads) {
            Ok(r) => Ok((locked, Some(r.version))),
            Err(ObjectError::ObjectNotFound) => Ok((locked, None)),
            Err(e) => Err(e),
        }
    }

    /// The noncurrent version `version_id` made at `mod_time`, if it still is noncurrent and
    /// object lock does not keep it: removed.
    async fn expire_noncurrent(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        mod_time: u64,
    ) -> Result<Option<LifecycleEvent>, ObjectError> {
        let (locked, current) = self.lock_current(bucket, key).await?;
        if current.is_none_or(|c| c.version_id == version_id) {
            return Ok(None);
        }
        let (set, _) = self.version_set(bucket, key, VersionRef::Id(version_id)).await?;
        let version =
            match set.resolve_any(set.read_which(bucket, key, VersionRef::Id(version_id), false).await) {
                Ok(r) => r.version,
                Err(ObjectError::ObjectNotFound) => return Ok(None),
                Err(e) => return Err(e),
            };
        if !is(&version, version_id, mod_time) || crate::retention::check_removable(&version, false).is_err()
        {
            return Ok(None);
        }
        self.remove_version_locked(bucket, key, version_id, locked.guard, Some(locked.checked)).await?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        Ok(Some(LifecycleEvent { bucket, key, delete_marker_created: false, version_id, versioned: true }))
    }

    /// The current delete marker `version_id` made at `mod_time`, if it still is the key's only
    /// version (a read quorum of drives answers, and too few list any other to make it
    /// readable): removed.
    async fn expire_delete_marker(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<Uuid>,
        mod_time: u64,
    ) -> Result<Option<LifecycleEvent>, ObjectError> {
        let (locked, current) = self.lock_current(bucket, key).await?;
        if !current.is_some_and(|c| c.delete_marker && is(&c, version_id, mod_time)) {
            return Ok(None);
        }
        let pool = self.key_pool(bucket, key).await?;
        // Versions the key has in another pool keep the marker as much as those in its own.
        if !self.other_holders(pool, bucket, key).await?.is_empty() {
            return Ok(None);
        }
        let set = self.set_in(pool, bucket, key);
        let query = ListQuery { prefix: key.to_owned(), limit: 2, versions: true, ..Default::default() };
        let lists = futures_util::future::join_all(
            set.drives.iter().flatten().map(|d| d.list(bucket, query.clone())),
        )
        .await;
        let answered: Vec<Vec<ListEntry>> = lists.into_iter().filter_map(Result::ok).collect();
        let other = |e: &ListEntry| {
            matches!(e, ListEntry::Object { key: k, record }
                if k == key && record.versions.iter().any(|v| v.version_id != version_id))
        };
        // Another version is real only if a read quorum could hold it: one that fewer drives
        // list (a removal that failed on a drive or two) is a dangling record the healer clears,
        // and must not keep the marker forever.
        let holding = answered.iter().filter(|l| l.iter().any(other)).count();
        let read_quorum = crate::quorum::read_quorum(set.data_count());
        if answered.len() < read_quorum || holding + (set.drives.len() - answered.len()) >= read_quorum {
            return Ok(None);
        }
        if holding > 0 {
            self.healer.notify(bucket, key);
        }
        self.remove_version_locked(bucket, key, version_id, locked.guard, Some(locked.checked)).await?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        Ok(Some(LifecycleEvent { bucket, key, delete_marker_created: false, version_id, versioned: true }))
    }

    /// Aborts the bucket's incomplete multipart uploads that a rule says are old enough.
    async fn lifecycle_uploads(&self, bucket: &str, config: &LifecycleConfig) -> Result<(), ObjectError> {
        if !config.rules.iter().any(|r| r.enabled && r.abort_upload_days.is_some()) {
            return Ok(());
        }
        let prefix = lifecycle::common_prefix(config);
        let mut after = Vec::new();
        loop {
            let page = self.list_multipart_uploads(bucket, &prefix, &after, LIFECYCLE_PAGE_SIZE).await?;
            let clock = self.lifecycle.clock();
            for u in page.uploads {
                if lifecycle::upload_expired(config, &u.key, u.initiated, &clock).is_none() {
                    continue;
                }
                let began = Instant::now();
                match self.abort_multipart_upload(bucket, &u.key, u.upload_id).await {
                    Ok(()) => {
                        self.lifecycle.totals.aborted_uploads.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(ObjectError::NoSuchUpload) => {}
                    Err(e) => {
                        tracing::warn!(%bucket, key = %u.key, error = %e, "lifecycle: cannot abort upload")
                    }
                }
                tokio::time::sleep(self.healer.priority().lifecycle_pause(began.elapsed())).await;
            }
            match page.next {
                Some(next) => after = next,
                None => return Ok(()),
            }
        }
    }

    /// Saves the pass's state on a few drives.
    async fn save_lifecycle_state(&self, state: &mut LifecycleState) {
        state.saved = now_nanos();
        let Ok(bytes) = serde_json::to_vec(state) else { return };
        let name = &self.lifecycle.state_name;
        let drives: Vec<_> =
            self.all_sets().flat_map(|s| s.drives.iter().flatten()).take(STATE_COPIES).collect();
        for d in drives {
            if let Err(e) = d.write_state(name, bytes.clone()).await {
                tracing::debug!(drive = d.endpoint(), error = %e, "cannot save the lifecycle state");
            }
        }
    }

    /// The newest saved lifecycle state on any drive.
    pub async fn load_lifecycle_state(&self) -> Option<LifecycleState> {
        let mut newest: Option<LifecycleState> = None;
        for d in self.all_sets().flat_map(|s| s.drives.iter().flatten()) {
            let Ok(Some(bytes)) = d.read_state(&self.lifecycle.state_name).await else { continue };
            let Ok(saved) = serde_json::from_slice::<LifecycleState>(&bytes) else { continue };
            if newest.as_ref().is_none_or(|n| saved.saved > n.saved) {
                newest = Some(saved);
            }
        }
        newest
    }
}

/// An object's lock taken for a lifecycle action, with the newest stamp the drives answered
/// under it: the action's change carries it ([`ObjectLayer::remove_version_locked`]).
struct Locked {
    guard: crate::LockGuard,
    checked: u64,
}
