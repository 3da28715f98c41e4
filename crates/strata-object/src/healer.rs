//! The healer: a bounded queue of objects to heal (fed by reads that found a missing or bad
//! shard and by writes that missed drives), worked in the background, and heal scans over
//! buckets (`heal start`, the periodic scanner), with their progress for `heal status` and
//! metrics.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::layer::ObjectLayer;
use strata_drive::DriveOps;
use strata_types::limits::{
    DRIVE_STATUS_TIMEOUT, HEAL_PAUSE_LOW_MIN, HEAL_PAUSE_NORMAL_MIN, HEAL_QUEUE_MAX, HEAL_RETRY_ATTEMPTS,
    HEAL_RETRY_FIRST, HEAL_STATE_SAVE_INTERVAL, SCANNER_ORPHAN_AGE, SCANNER_SPEED, SCAN_PAGE_SIZE,
    STATE_COPIES,
};

/// How much I/O healing may take while foreground requests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealPriority {
    Low,
    Normal,
    High,
}

impl HealPriority {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Some(Self::Low),
            "normal" => Some(Self::Normal),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// Objects a scan heals at once.
    fn parallel(self) -> usize {
        match self {
            Self::Low => 1,
            Self::Normal => 4,
            Self::High => 8,
        }
    }

    /// The pause after an object that took `spent` to heal or check: healing runs at most a
    /// quarter of the time at low priority, two thirds at normal, and flat out at high.
    pub(crate) fn pause(self, spent: Duration) -> Duration {
        match self {
            Self::Low => spent * 3 + HEAL_PAUSE_LOW_MIN,
            Self::Normal => spent / 2 + HEAL_PAUSE_NORMAL_MIN,
            Self::High => Duration::ZERO,
        }
    }

    /// The pause after lifecycle work (a page of versions judged, an action) that took `spent`:
    /// lifecycle runs at most 5 % of the time at low priority, 10 % at normal (a pass over a
    /// million objects then takes minutes and costs foreground reads little), flat out at high.
    pub(crate) fn lifecycle_pause(self, spent: Duration) -> Duration {
        match self {
            Self::Low => spent * 19 + HEAL_PAUSE_LOW_MIN,
            Self::Normal => spent * 9 + HEAL_PAUSE_NORMAL_MIN,
            Self::High => Duration::ZERO,
        }
    }
}

/// What a scan covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealScope {
    /// One bucket, or all.
    pub bucket: Option<String>,
    pub prefix: String,
    /// Verify every frame of every shard, not just that shards are there and end well.
    pub deep: bool,
}

/// Progress of the current (or last) scan; objects and bytes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ScanProgress {
    /// `idle`, `queued` (started, about to count), `counting`, `healing`.
    pub state: String,
    /// Scans are numbered from 1 as they are asked for (by `heal start`, the periodic scanner,
    /// a drive's return): wait for "scan N is idle", not for "some scan is idle".
    pub id: u64,
    pub scope: HealScope,
    /// Seconds since the Unix epoch.
    pub started: u64,
    pub finished: Option<u64>,
    pub objects_total: u64,
    pub bytes_total: u64,
    pub objects_scanned: u64,
    pub bytes_scanned: u64,
    pub objects_healed: u64,
    pub bytes_healed: u64,
    pub objects_failed: u64,
    /// Objects that could not reach full redundancy because drives of their set are offline;
    /// the next scan after the drives return heals them.
    pub objects_degraded: u64,
    pub dangling_removed: u64,
    /// Files no record refers to (and old temp files) removed at the end of a full scan.
    pub orphans_removed: u64,
    pub orphan_bytes_removed: u64,
    pub objects_remaining: u64,
    pub bytes_remaining: u64,
    /// Over the scan so far.
    pub objects_per_sec: f64,
    pub bytes_per_sec: f64,
    pub eta_secs: Option<f64>,
    /// Per erasure set (`pool/set`): objects scanned, healed, failed.
    pub sets: BTreeMap<String, SetProgress>,
    /// The last object done (bucket, key): where a scan interrupted by a restart resumes.
    pub position: Option<(String, String)>,
    /// The scan was resumed after a restart (this many times).
    pub resumed: u32,
    /// A background scan, held to [`ScanConfig::speed`].
    pub paced: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SetProgress {
    pub objects_total: u64,
    pub objects_remaining: u64,
    /// Over the scan so far; `None` when nothing is left or nothing was done yet.
    pub eta_secs: Option<f64>,
    /// The set's drives (endpoints).
    pub drives: Vec<String>,
    pub objects_scanned: u64,
    pub objects_healed: u64,
    pub objects_failed: u64,
}

/// Lifetime totals, for `/metrics`.
#[derive(Debug, Default)]
pub struct HealTotals {
    pub objects_scanned: AtomicU64,
    pub objects_healed: AtomicU64,
    pub objects_failed: AtomicU64,
    pub bytes_healed: AtomicU64,
    pub dangling_removed: AtomicU64,
    /// Drive endpoint → (objects healed onto it, object bytes healed onto it, objects it refused).
    pub drives: Mutex<BTreeMap<String, (u64, u64, u64)>>,
}

/// The whole heal status, as the admin API reports it.
#[derive(Debug, Clone, Serialize)]
pub struct HealStatus {
    /// `healing` while a scan runs or the queue holds objects, else `idle`.
    pub state: String,
    pub priority: HealPriority,
    pub queue_length: usize,
    pub queue_healed: u64,
    pub queue_failed: u64,
    pub scan: ScanProgress,
    /// A scan asked for while another ran: it starts when that one ends.
    pub scan_queued: Option<QueuedScan>,
    /// Drive endpoint → objects healed onto it, object bytes healed onto it (since start).
    pub drives: BTreeMap<String, DriveHealed>,
    /// Drives of the deployment that cannot take healing now (offline, or blank and not yet
    /// formatted again), with their sets: every object of those sets is short of a shard until
    /// they are back. Filled by [`ObjectLayer::heal_status`], which asks the drives.
    pub unavailable_drives: Vec<UnavailableDrive>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueuedScan {
    pub id: u64,
    pub scope: HealScope,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnavailableDrive {
    pub drive: String,
    /// `pool/set`.
    pub set: String,
    pub reason: String,
    /// Objects of the set short of this drive's shard, from the last scan that counted the set;
    /// `None` (JSON `null`) until a scan has: the number is unknown, not 0.
    pub objects_short: Option<u64>,
}

/// What `heal start` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ScanStart {
    /// The scan runs now (its id).
    Started(u64),
    /// Another scan runs; this one (its id) starts when it ends. A request made while one
    /// already waits joins it (the waiting scan's scope widens to cover both).
    Queued(u64),
}

#[derive(Debug, Clone, Serialize)]
pub struct DriveHealed {
    pub objects: u64,
    pub bytes: u64,
    /// Objects whose heal this drive refused (write errors).
    pub failed: u64,
}

/// The healer's state as saved on drives, so a restart resumes it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct Saved {
    /// Nanoseconds since the Unix epoch: the newest copy wins.
    saved: u64,
    queue: Vec<(String, String)>,
    scan: ScanProgress,
}

/// Name of the state document on drives.
pub(crate) const STATE_NAME: &str = "heal";

/// How scans check and clean.
#[derive(Debug, Clone, Copy)]
pub struct ScanConfig {
    /// 0.0 to 1.0: objects a quick scan verifies frame by frame anyway.
    pub deep_fraction: f64,
    /// Orphaned shard files and temp files older than this are removed by full scans.
    pub orphan_age: Duration,
    /// Objects per second a background scan checks at most (`None`: as fast as the heal
    /// priority lets it).
    pub speed: Option<f64>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        Self { deep_fraction: 0.01, orphan_age: SCANNER_ORPHAN_AGE, speed: Some(SCANNER_SPEED) }
    }
}

/// Holds a walk to at most `speed` objects per second on average since it began: each object
/// done waits until its turn. Shared by the pages of one scan.
pub(crate) struct Pace {
    speed: Option<f64>,
    began: tokio::time::Instant,
    done: std::sync::atomic::AtomicU64,
}

impl Pace {
    pub(crate) fn new(speed: Option<f64>) -> Self {
        Self {
            speed: speed.filter(|s| *s > 0.0),
            began: tokio::time::Instant::now(),
            done: Default::default(),
        }
    }

    pub(crate) async fn step(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(speed) = self.speed {
            tokio::time::sleep_until(self.began + Duration::from_secs_f64(done as f64 / speed)).await;
        }
    }
}

/// Per object (bucket, key): the turn its heals take on this node.
pub(crate) type Healing = Mutex<std::collections::HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>>;

/// Where an object of the heal queue is; `attempt` counts the heals of it that failed for a
/// passing reason ([`crate::heal::worth_retrying`]) and were tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queued {
    Waiting {
        attempt: u32,
    },
    /// Its heal runs; `again`: something was found wrong with it meanwhile (a write that missed
    /// a drive after the heal passed that version, say), so it is queued again once this ends.
    Healing {
        again: bool,
        attempt: u32,
    },
    /// Its last heal failed; it is queued again once its pause ([`retry_pause`]) is over.
    Retrying {
        attempt: u32,
    },
}

/// The pause before try `attempt` (from 1) of a heal that failed: [`HEAL_RETRY_FIRST`], doubled
/// each time.
fn retry_pause(attempt: u32) -> Duration {
    HEAL_RETRY_FIRST * 2u32.saturating_pow(attempt.saturating_sub(1))
}

pub struct Healer {
    /// Something changed since the state was last saved.
    dirty: std::sync::atomic::AtomicBool,
    tx: mpsc::Sender<(String, String)>,
    rx: Mutex<Option<mpsc::Receiver<(String, String)>>>,
    /// The objects in the heal queue, waiting or being healed: counted until their heal ends,
    /// so an idle status means nothing is left to do.
    queued: Mutex<HashMap<(String, String), Queued>>,
    /// The objects being healed on this node, one heal of an object at a time (a heal on read
    /// beside a scan would rebuild the same shards twice).
    pub(crate) healing: Healing,
    queue_healed: AtomicU64,
    queue_failed: AtomicU64,
    priority: AtomicU8,
    scan: Mutex<ScanProgress>,
    /// Serialises scans.
    scanning: Arc<tokio::sync::Mutex<()>>,
    /// The last scan id given out.
    scan_ids: AtomicU64,
    /// The scan waiting for the running one to end.
    next_scan: Mutex<Option<QueuedScan>>,
    /// Share of objects a quick scan checks deeply (every frame), and the age at which files
    /// no record refers to are swept.
    config: Mutex<ScanConfig>,
    pub totals: HealTotals,
    /// What the last full scan counted (see [`crate::usage`]).
    usage: Mutex<crate::usage::DataUsage>,
}

fn now_secs() -> u64 {
    strata_types::time::now_nanos() / 1_000_000_000
}

impl Healer {
    pub(crate) fn new() -> Self {
        let (tx, rx) = mpsc::channel(HEAL_QUEUE_MAX);
        Self {
            dirty: Default::default(),
            tx,
            rx: Mutex::new(Some(rx)),
            queued: Mutex::new(HashMap::new()),
            healing: Mutex::new(Default::default()),
            queue_healed: AtomicU64::new(0),
            queue_failed: AtomicU64::new(0),
            priority: AtomicU8::new(1),
            scan: Mutex::new(ScanProgress { state: "idle".into(), ..Default::default() }),
            scanning: Arc::new(tokio::sync::Mutex::new(())),
            scan_ids: AtomicU64::new(0),
            next_scan: Mutex::new(None),
            config: Mutex::new(ScanConfig::default()),
            totals: HealTotals::default(),
            usage: Mutex::new(Default::default()),
        }
    }

    /// Queues an object for healing; dropped (the scanner will find it) when the queue is full.
    pub fn notify(&self, bucket: &str, key: &str) {
        let entry = (bucket.to_owned(), key.to_owned());
        let Ok(mut queued) = self.queued.lock() else { return };
        let attempt = match queued.get_mut(&entry) {
            Some(Queued::Waiting { .. }) => return,
            Some(Queued::Healing { again, .. }) => {
                *again = true;
                return;
            }
            // Found wrong anew while it waits to be tried again: healed now.
            Some(Queued::Retrying { attempt }) => *attempt,
            None => 0,
        };
        if self.tx.try_send(entry.clone()).is_ok() {
            queued.insert(entry, Queued::Waiting { attempt });
            self.dirty.store(true, Ordering::Relaxed);
        }
    }

    /// A heal outside the queue (a scan's) failed for a passing reason: the object is healed
    /// again through the queue after a pause, unless the queue already has it.
    pub(crate) fn retry_later(self: &Arc<Self>, bucket: &str, key: &str) {
        let entry = (bucket.to_owned(), key.to_owned());
        let Ok(mut queued) = self.queued.lock() else { return };
        if queued.contains_key(&entry) || queued.len() >= HEAL_QUEUE_MAX {
            return;
        }
        queued.insert(entry.clone(), Queued::Retrying { attempt: 1 });
        self.dirty.store(true, Ordering::Relaxed);
        self.retry_after_pause(entry, 1);
    }

    /// Queues `entry` again once try `attempt`'s pause is over, if it still waits for that try.
    fn retry_after_pause(self: &Arc<Self>, entry: (String, String), attempt: u32) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let this = self.clone();
        runtime.spawn(async move {
            tokio::time::sleep(retry_pause(attempt)).await;
            let Ok(mut q) = this.queued.lock() else { return };
            if q.get(&entry) != Some(&Queued::Retrying { attempt }) {
                return;
            }
            if this.tx.try_send(entry.clone()).is_ok() {
                q.insert(entry, Queued::Waiting { attempt });
            } else {
                // The queue is full: the next scan finds it.
                q.remove(&entry);
            }
        });
    }

    /// The queue's worker took `entry` and heals it now.
    fn heal_begins(&self, entry: &(String, String)) {
        if let Ok(mut q) = self.queued.lock() {
            let attempt = match q.get(entry) {
                Some(Queued::Waiting { attempt } | Queued::Retrying { attempt }) => *attempt,
                _ => 0,
            };
            q.insert(entry.clone(), Queued::Healing { again: false, attempt });
        }
    }

    /// `entry`'s heal ended: out of the queue only now; or straight back in if it was found
    /// wrong again while healing (what the heal had passed by then, it did not see); or back in
    /// after a pause if it failed for a passing reason (`retry`) and has tries left. Returns
    /// whether it was queued again (at once or later).
    fn heal_ends(self: &Arc<Self>, entry: &(String, String), retry: bool) -> bool {
        let Ok(mut q) = self.queued.lock() else { return false };
        let (again, attempt) = match q.get(entry) {
            Some(Queued::Healing { again, attempt }) => (*again, *attempt),
            _ => (false, 0),
        };
        if again && self.tx.try_send(entry.clone()).is_ok() {
            q.insert(entry.clone(), Queued::Waiting { attempt });
            return true;
        }
        if retry && attempt < HEAL_RETRY_ATTEMPTS {
            q.insert(entry.clone(), Queued::Retrying { attempt: attempt + 1 });
            self.retry_after_pause(entry.clone(), attempt + 1);
            return true;
        }
        q.remove(entry);
        false
    }

    pub fn set_config(&self, config: ScanConfig) {
        if let Ok(mut c) = self.config.lock() {
            *c = config;
        }
    }

    fn config(&self) -> ScanConfig {
        self.config.lock().map(|c| *c).unwrap_or_default()
    }

    pub fn priority(&self) -> HealPriority {
        match self.priority.load(Ordering::Relaxed) {
            0 => HealPriority::Low,
            2 => HealPriority::High,
            _ => HealPriority::Normal,
        }
    }

    pub fn set_priority(&self, p: HealPriority) {
        self.priority.store(p as u8, Ordering::Relaxed);
    }

    pub fn queue_length(&self) -> usize {
        self.queued.lock().map(|q| q.len()).unwrap_or(0)
    }

    pub fn status(&self) -> HealStatus {
        let mut scan = self.scan.lock().map(|s| s.clone()).unwrap_or_default();
        let elapsed = scan.finished.unwrap_or_else(now_secs).saturating_sub(scan.started).max(1) as f64;
        scan.objects_remaining = scan.objects_total.saturating_sub(scan.objects_scanned);
        scan.bytes_remaining = scan.bytes_total.saturating_sub(scan.bytes_scanned);
        scan.objects_per_sec = scan.objects_scanned as f64 / elapsed;
        scan.bytes_per_sec = scan.bytes_scanned as f64 / elapsed;
        scan.eta_secs = (scan.state == "healing" && scan.objects_per_sec > 0.0)
            .then(|| scan.objects_remaining as f64 / scan.objects_per_sec);
        let healing = scan.state == "healing";
        for set in scan.sets.values_mut() {
            set.objects_remaining = set.objects_total.saturating_sub(set.objects_scanned);
            let rate = set.objects_scanned as f64 / elapsed;
            set.eta_secs = (healing && rate > 0.0 && set.objects_remaining > 0)
                .then(|| set.objects_remaining as f64 / rate);
        }
        let drives = self
            .totals
            .drives
            .lock()
            .map(|d| {
                d.iter()
                    .map(|(k, &(objects, bytes, failed))| (k.clone(), DriveHealed { objects, bytes, failed }))
                    .collect()
            })
            .unwrap_or_default();
        let queue_length = self.queue_length();
        let scan_queued = self.next_scan.lock().ok().and_then(|q| q.clone());
        let busy = scan.state != "idle" || queue_length > 0 || scan_queued.is_some();
        HealStatus {
            state: if busy { "healing" } else { "idle" }.into(),
            priority: self.priority(),
            queue_length,
            queue_healed: self.queue_healed.load(Ordering::Relaxed),
            queue_failed: self.queue_failed.load(Ordering::Relaxed),
            scan,
            scan_queued,
            drives,
            unavailable_drives: Vec::new(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut ScanProgress)) {
        if let Ok(mut s) = self.scan.lock() {
            f(&mut s);
            self.dirty.store(true, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> Saved {
        Saved {
            saved: strata_types::time::now_nanos(),
            queue: self.queued.lock().map(|q| q.keys().cloned().collect()).unwrap_or_default(),
            scan: self.scan.lock().map(|s| s.clone()).unwrap_or_default(),
        }
    }

    /// The data usage the last full scan counted (`updated` is 0 before the first).
    pub fn usage(&self) -> crate::usage::DataUsage {
        self.usage.lock().map(|u| u.clone()).unwrap_or_default()
    }

    fn set_usage(&self, usage: crate::usage::DataUsage) {
        if let Ok(mut u) = self.usage.lock() {
            *u = usage;
        }
    }

    /// Counts one heal's outcome in the lifetime totals; returns whether it healed something.
    fn account(&self, r: &Result<crate::HealResult, crate::ObjectError>) -> (bool, bool) {
        let t = &self.totals;
        t.objects_scanned.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(h) => {
                let healed = !h.healed_drives.is_empty() || h.dangling_removed > 0;
                if healed {
                    t.objects_healed.fetch_add(1, Ordering::Relaxed);
                    t.bytes_healed.fetch_add(h.size * h.healed_drives.len() as u64, Ordering::Relaxed);
                    t.dangling_removed.fetch_add(h.dangling_removed as u64, Ordering::Relaxed);
                    if let Ok(mut d) = t.drives.lock() {
                        for e in &h.healed_drives {
                            let entry = d.entry(e.clone()).or_default();
                            entry.0 += 1;
                            entry.1 += h.size;
                        }
                    }
                }
                if let Ok(mut d) = t.drives.lock() {
                    for e in &h.failed_drives {
                        d.entry(e.clone()).or_default().2 += 1;
                    }
                }
                let failed = !h.failed_drives.is_empty();
                if failed {
                    t.objects_failed.fetch_add(1, Ordering::Relaxed);
                }
                (healed, failed)
            }
            Err(_) => {
                t.objects_failed.fetch_add(1, Ordering::Relaxed);
                (false, true)
            }
        }
    }
}

impl ObjectLayer {
    pub fn healer(&self) -> &Arc<Healer> {
        &self.healer
    }

    /// Saves the healer's state (queue, scan progress) on a few drives.
    async fn save_heal_state(&self) {
        self.save_heal_snapshot(&self.healer.snapshot()).await
    }

    async fn save_heal_snapshot(&self, snapshot: &Saved) {
        let Ok(bytes) = serde_json::to_vec(snapshot) else { return };
        let drives: Vec<_> =
            self.all_sets().flat_map(|s| s.drives.iter().flatten()).take(STATE_COPIES).collect();
        for d in drives {
            if let Err(e) = d.write_state(&self.state_name, bytes.clone()).await {
                tracing::debug!(drive = d.endpoint(), error = %e, "cannot save the heal state");
            }
        }
    }

    /// The data usage's state document: `usage`, or `usage-<node>` beside `heal-<node>`. It is
    /// apart from the heal state, which is saved every second while a scan runs; this is saved
    /// once per full scan.
    fn usage_state_name(&self) -> String {
        format!("usage{}", self.state_name.strip_prefix(STATE_NAME).unwrap_or_default())
    }

    /// Saves the data usage a full scan counted on a few drives.
    async fn save_usage(&self, usage: &crate::usage::DataUsage) {
        let Ok(bytes) = serde_json::to_vec(usage) else { return };
        let name = self.usage_state_name();
        let drives: Vec<_> =
            self.all_sets().flat_map(|s| s.drives.iter().flatten()).take(STATE_COPIES).collect();
        for d in drives {
            if let Err(e) = d.write_state(&name, bytes.clone()).await {
                tracing::debug!(drive = d.endpoint(), error = %e, "cannot save the data usage");
            }
        }
    }

    /// The newest saved data usage on any drive.
    async fn load_usage(&self) -> Option<crate::usage::DataUsage> {
        let name = self.usage_state_name();
        let mut newest: Option<crate::usage::DataUsage> = None;
        for d in self.all_sets().flat_map(|s| s.drives.iter().flatten()) {
            let Ok(Some(bytes)) = d.read_state(&name).await else { continue };
            let Ok(usage) = serde_json::from_slice::<crate::usage::DataUsage>(&bytes) else { continue };
            if newest.as_ref().is_none_or(|n| usage.updated > n.updated) {
                newest = Some(usage);
            }
        }
        newest
    }

    /// The newest saved heal state on any drive.
    async fn load_heal_state(&self) -> Option<Saved> {
        let mut newest: Option<Saved> = None;
        for d in self.all_sets().flat_map(|s| s.drives.iter().flatten()) {
            let Ok(Some(bytes)) = d.read_state(&self.state_name).await else { continue };
            let Ok(saved) = serde_json::from_slice::<Saved>(&bytes) else { continue };
            if newest.as_ref().is_none_or(|n| saved.saved > n.saved) {
                newest = Some(saved);
            }
        }
        newest
    }

    /// Starts the heal queue's worker and, with an interval, the periodic scanner (a quick scan
    /// of everything, the first one right away when `scan_now`). A queue or a scan saved before
    /// a restart is picked up where it stopped.
    pub fn start_healing(self: &Arc<Self>, scan_every: Option<Duration>, scan_now: bool) {
        let layer = self.clone();
        tokio::spawn(async move {
            let saved = layer.load_heal_state().await.unwrap_or_default();
            for (bucket, key) in &saved.queue {
                layer.healer.notify(bucket, key);
            }
            let interrupted = saved.scan.state != "idle" && !saved.scan.state.is_empty();
            let paced = saved.scan.paced;
            if let Some(usage) = layer.load_usage().await {
                layer.healer.set_usage(usage);
            }
            if !interrupted {
                layer.healer.update(|s| *s = ScanProgress { state: "idle".into(), ..saved.scan.clone() });
            }
            if interrupted {
                tracing::info!(
                    scanned = saved.scan.objects_scanned,
                    "resuming the heal scan a restart interrupted"
                );
                let scope = saved.scan.scope.clone();
                layer.heal_scan_from(scope, Some(saved.scan), paced).await;
            }
            if scan_now {
                layer.heal_scan(HealScope::default()).await;
            }
            let Some(every) = scan_every else { return };
            // A continuous walk: a pass held to the configured speed, the next one starting
            // `every` after the last began, or at once when the pass took longer.
            tokio::time::sleep(every).await;
            loop {
                let began = tokio::time::Instant::now();
                layer.heal_scan_paced().await;
                tokio::time::sleep_until(began + every).await;
            }
        });
        let layer = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEAL_STATE_SAVE_INTERVAL).await;
                if layer.healer.dirty.swap(false, Ordering::Relaxed) {
                    layer.save_heal_state().await;
                }
            }
        });
        let rx = self.healer.rx.lock().ok().and_then(|mut r| r.take());
        if let Some(mut rx) = rx {
            let layer = self.clone();
            tokio::spawn(async move {
                while let Some(entry) = rx.recv().await {
                    layer.healer.heal_begins(&entry);
                    let (bucket, key) = (&entry.0, &entry.1);
                    // Deep: something was found wrong with this object, so every frame is checked.
                    let began = std::time::Instant::now();
                    let r = layer.heal_object(bucket, key, true).await;
                    let spent = began.elapsed();
                    layer.healer.heal_ends(&entry, crate::heal::worth_retrying(&r));
                    let (_, failed) = layer.healer.account(&r);
                    if let Err(e) = &r {
                        tracing::warn!(%bucket, %key, error = %e, "queued heal failed");
                    }
                    let counter =
                        if failed { &layer.healer.queue_failed } else { &layer.healer.queue_healed };
                    counter.fetch_add(1, Ordering::Relaxed);
                    layer.healer.dirty.store(true, Ordering::Relaxed);
                    tokio::time::sleep(layer.healer.priority().pause(spent)).await;
                }
            });
        }
    }

    /// Starts a scan in the background, or queues it behind the one running (see
    /// [`ScanStart`]). Either way the status shows it at once.
    pub fn start_heal_scan(self: &Arc<Self>, scope: HealScope) -> ScanStart {
        let h = &self.healer;
        if let Ok(running) = h.scanning.clone().try_lock_owned() {
            let id = h.scan_ids.fetch_add(1, Ordering::Relaxed) + 1;
            h.update(|s| {
                *s = ScanProgress { state: "queued".into(), id, scope: scope.clone(), ..Default::default() }
            });
            let layer = self.clone();
            tokio::spawn(async move { layer.heal_scan_locked(scope, None, id, running, false).await });
            return ScanStart::Started(id);
        }
        let Ok(mut next) = h.next_scan.lock() else { return ScanStart::Queued(0) };
        if let Some(waiting) = next.as_mut() {
            waiting.scope = widen(&waiting.scope, &scope);
            return ScanStart::Queued(waiting.id);
        }
        let id = h.scan_ids.fetch_add(1, Ordering::Relaxed) + 1;
        *next = Some(QueuedScan { id, scope });
        drop(next);
        let layer = self.clone();
        tokio::spawn(async move {
            let running = layer.healer.scanning.clone().lock_owned().await;
            let waiting = layer.healer.next_scan.lock().ok().and_then(|mut n| n.take());
            if let Some(QueuedScan { id, scope }) = waiting {
                layer.heal_scan_locked(scope, None, id, running, false).await;
            }
        });
        ScanStart::Queued(id)
    }

    /// The heal status with the drives that cannot take healing now: each drive of every set
    /// is asked (at most a second each) whether it is there and formatted.
    pub async fn heal_status(&self) -> HealStatus {
        let mut status = self.healer.status();
        // Both walk pools then sets in order.
        let sets: Vec<(String, Vec<crate::DriveSlot>)> = self
            .set_drive_names()
            .into_iter()
            .zip(self.all_sets())
            .map(|((name, _), set)| (name, set.drives.clone()))
            .collect();
        let checks = sets.iter().flat_map(|(set, drives)| {
            drives.iter().enumerate().map(move |(i, d)| async move {
                let reason = match d {
                    None => Some(("offline at start".to_owned(), format!("{set} drive {i}"))),
                    Some(d) => {
                        let answer = tokio::time::timeout(DRIVE_STATUS_TIMEOUT, d.disk_info()).await;
                        let why = match answer {
                            Ok(Ok(_)) => None,
                            Ok(Err(e)) => Some(e.to_string()),
                            Err(_) => Some("not answering".to_owned()),
                        };
                        why.map(|w| (w, d.endpoint().to_owned()))
                    }
                };
                reason.map(|(reason, drive)| (set.clone(), drive, reason))
            })
        });
        let unavailable = futures_util::future::join_all(checks).await;
        for (set, drive, reason) in unavailable.into_iter().flatten() {
            let objects_short = status.scan.sets.get(&set).map(|p| p.objects_total.max(p.objects_scanned));
            status.unavailable_drives.push(UnavailableDrive { drive, set, reason, objects_short });
        }
        if !status.unavailable_drives.is_empty() && status.state == "idle" {
            status.state = "degraded".into();
        }
        status
    }

    /// Checks and heals every object in `scope`: counts them first (so progress and ETA are
    /// true), then heals one after another at the current priority.
    pub async fn heal_scan(&self, scope: HealScope) {
        self.heal_scan_from(scope, None, false).await
    }

    /// The background scan: everything, at most [`ScanConfig::speed`] objects per second.
    pub async fn heal_scan_paced(&self) {
        self.heal_scan_from(HealScope::default(), None, true).await
    }

    /// A scan, or the rest of one interrupted after `resume.position` with its counters.
    async fn heal_scan_from(&self, scope: HealScope, resume: Option<ScanProgress>, paced: bool) {
        let running = self.healer.scanning.clone().lock_owned().await;
        let id = self.healer.scan_ids.fetch_add(1, Ordering::Relaxed) + 1;
        self.heal_scan_locked(scope, resume, id, running, paced).await;
    }

    /// The scan itself, numbered `id`, run while holding the scan lock (`_running`); a scan
    /// queued meanwhile starts when this one has ended.
    async fn heal_scan_locked(
        &self,
        scope: HealScope,
        resume: Option<ScanProgress>,
        id: u64,
        _running: tokio::sync::OwnedMutexGuard<()>,
        paced: bool,
    ) {
        let h = &self.healer;
        let start = match resume {
            Some(r) => ScanProgress {
                state: "counting".into(),
                id,
                scope: scope.clone(),
                resumed: r.resumed + 1,
                paced,
                ..r
            },
            None => ScanProgress {
                state: "counting".into(),
                id,
                scope: scope.clone(),
                started: now_secs(),
                paced,
                ..Default::default()
            },
        };
        let position = start.position.clone();
        let config = h.config();
        let pace = Pace::new(if paced { config.speed } else { None });
        let pace = &pace;
        let salt = strata_types::time::now_nanos();
        h.update(|s| *s = start);
        if scope.bucket.is_none() && scope.prefix.is_empty() {
            self.heal_buckets().await;
        }
        let buckets: Vec<String> = match &scope.bucket {
            Some(b) => vec![b.clone()],
            None => self.list_buckets().map(|b| b.into_iter().map(|b| b.name).collect()).unwrap_or_default(),
        };
        let (mut objects, mut bytes) = (0u64, 0u64);
        let mut per_set: BTreeMap<String, u64> = BTreeMap::new();
        let mut usage = crate::usage::DataUsage::default();
        for bucket in &buckets {
            let counted = usage.buckets.entry(bucket.clone()).or_default();
            self.each_key_any(bucket, &scope.prefix, "", |page| {
                for (key, size, delete_marker) in page {
                    objects += 1;
                    bytes += size;
                    counted.add(size, delete_marker);
                    *per_set.entry(self.set_name(bucket, &key)).or_default() += 1;
                }
                async {}
            })
            .await;
        }
        // Only a scan of everything counts every bucket whole.
        if scope.bucket.is_none() && scope.prefix.is_empty() {
            usage.updated = strata_types::time::now_nanos();
            self.save_usage(&usage).await;
            h.set_usage(usage);
        }
        let set_drives = self.set_drive_names();
        h.update(|s| {
            s.state = "healing".into();
            // Resumed: what was done before the restart is part of the total.
            s.objects_total = objects.max(s.objects_scanned);
            s.bytes_total = bytes.max(s.bytes_scanned);
            for (name, drives) in set_drives {
                let entry = s.sets.entry(name.clone()).or_default();
                entry.objects_total = per_set.get(&name).copied().unwrap_or(0).max(entry.objects_scanned);
                entry.drives = drives;
            }
        });
        for bucket in &buckets {
            // Resuming: buckets before the position are done, and its own up to the key.
            let after = match &position {
                Some((b, _)) if bucket < b => continue,
                Some((b, k)) if bucket == b => k.clone(),
                _ => String::new(),
            };
            self.each_key_any(bucket, &scope.prefix, &after, |page| async move {
                // Several objects at once (their commits share group commits), results taken in
                // key order so the saved position only ever covers finished objects.
                let width = h.priority().parallel();
                let mut results = futures_util::stream::iter(page.into_iter().map(|(key, size, _)| {
                    let deep = scope.deep || sampled(bucket, &key, salt, config.deep_fraction);
                    async move {
                        let began = std::time::Instant::now();
                        let r = self.heal_object(bucket, &key, deep).await;
                        tokio::time::sleep(h.priority().pause(began.elapsed())).await;
                        (key, size, r)
                    }
                }))
                .buffered(width);
                while let Some((key, size, r)) = results.next().await {
                    let (healed, failed) = h.account(&r);
                    let set = self.set_name(bucket, &key);
                    h.update(|s| {
                        s.objects_scanned += 1;
                        s.bytes_scanned += size;
                        let per_set = s.sets.entry(set).or_default();
                        per_set.objects_scanned += 1;
                        if healed {
                            s.objects_healed += 1;
                            per_set.objects_healed += 1;
                            if let Ok(r) = &r {
                                s.bytes_healed += size * r.healed_drives.len() as u64;
                                s.dangling_removed += r.dangling_removed as u64;
                            }
                        }
                        if failed {
                            s.objects_failed += 1;
                            per_set.objects_failed += 1;
                        }
                        if r.as_ref().is_ok_and(|r| r.offline_drives > 0) {
                            s.objects_degraded += 1;
                        }
                        s.position = Some((bucket.clone(), key.clone()));
                    });
                    if crate::heal::worth_retrying(&r) {
                        h.retry_later(bucket, &key);
                    }
                    if let Err(e) = r {
                        tracing::warn!(%bucket, %key, error = %e, "heal failed");
                    }
                    pace.step().await;
                }
            })
            .await;
        }
        if scope.bucket.is_none() && scope.prefix.is_empty() {
            let (mut files, mut bytes) = (0, 0);
            for d in self.all_sets().flat_map(|s| s.drives.iter().flatten()) {
                match d.sweep_orphans(config.orphan_age).await {
                    Ok((f, b)) => (files, bytes) = (files + f, bytes + b),
                    Err(e) => tracing::warn!(drive = d.endpoint(), error = %e, "cannot sweep orphaned files"),
                }
            }
            if files > 0 {
                tracing::info!(files, bytes, "removed files no record refers to");
            }
            h.update(|s| {
                s.orphans_removed += files;
                s.orphan_bytes_removed += bytes;
            });
        }
        let finished = now_secs();
        let finish = |s: &mut ScanProgress| {
            s.state = "idle".into();
            s.finished = Some(finished);
            // Objects deleted while the scan ran were counted but not scanned.
            s.objects_total = s.objects_scanned;
            s.bytes_total = s.bytes_scanned;
            for set in s.sets.values_mut() {
                set.objects_total = set.objects_scanned;
            }
        };
        // The end is saved before the status says idle, and the scan lock goes with that word:
        // a scan asked for once the status reads idle starts at once rather than queueing.
        let mut ended = h.snapshot();
        finish(&mut ended.scan);
        self.save_heal_snapshot(&ended).await;
        h.update(finish);
    }

    /// Calls `f(page)` with every key any drive holds under `prefix` after `after`, with the
    /// size of its current version and whether that is a delete marker (on every drive that has
    /// the key), page by page in key order: objects a read quorum holds, and the dangling ones
    /// no listing shows.
    async fn each_key_any<F, Fut>(&self, bucket: &str, prefix: &str, after: &str, mut f: F)
    where
        F: FnMut(Vec<(String, u64, bool)>) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let drives: Vec<Arc<dyn strata_drive::Drive>> =
            self.all_sets().flat_map(|s| s.drives.iter().flatten().cloned()).collect();
        let mut after = after.to_owned();
        loop {
            let pages = futures_util::future::join_all(drives.iter().map(|d| {
                let q = strata_drive::ListQuery {
                    prefix: prefix.to_owned(),
                    start_after: after.clone(),
                    delimiter: None,
                    limit: SCAN_PAGE_SIZE,
                    ..Default::default()
                };
                d.list(bucket, q)
            }))
            .await;
            // Keys up to the smallest last key of a full page are known from every drive.
            let mut bound: Option<String> = None;
            let mut keys: BTreeMap<String, (u64, bool)> = BTreeMap::new();
            for page in pages.into_iter().flatten() {
                if page.len() == SCAN_PAGE_SIZE {
                    if let Some(last) = page.last() {
                        let last = last.name().to_owned();
                        bound = Some(bound.map_or(last.clone(), |b| b.min(last)));
                    }
                }
                for entry in page {
                    if let strata_drive::ListEntry::Object { key, record } = entry {
                        let (size, marker) =
                            record.latest().map_or((0, false), |v| (v.size, v.delete_marker));
                        let slot = keys.entry(key).or_insert((0, true));
                        *slot = (slot.0.max(size), slot.1 && marker);
                    }
                }
            }
            let page: Vec<(String, u64, bool)> = keys
                .into_iter()
                .take_while(|(key, _)| bound.as_ref().is_none_or(|b| key <= b))
                .map(|(key, (size, marker))| (key, size, marker))
                .collect();
            if !page.is_empty() {
                f(page).await;
            }
            match bound {
                Some(b) => after = b,
                None => return,
            }
        }
    }
}

/// One scope covering both: the same bucket and prefix or everything, deep if either is.
fn widen(a: &HealScope, b: &HealScope) -> HealScope {
    let same = a.bucket == b.bucket && a.prefix == b.prefix;
    HealScope {
        bucket: if same { a.bucket.clone() } else { None },
        prefix: if same { a.prefix.clone() } else { String::new() },
        deep: a.deep || b.deep,
    }
}

/// Whether a quick scan checks this object deeply: a `fraction` of objects, a different sample
/// each scan (`salt`).
fn sampled(bucket: &str, key: &str, salt: u64, fraction: f64) -> bool {
    use std::hash::{Hash, Hasher};
    if fraction <= 0.0 {
        return false;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (bucket, key, salt).hash(&mut h);
    (h.finish() % 1_000_000) as f64 / 1_000_000.0 < fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_about_the_fraction_asked() {
        let hits = (0..20_000).filter(|i| sampled("b", &format!("k{i}"), 7, 0.05)).count();
        assert!((800..1200).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|i| sampled("b", &format!("k{i}"), 7, 0.0)));
        assert!((0..1000).all(|i| sampled("b", &format!("k{i}"), 7, 1.0)));
    }

    /// An object counts as queued until its heal ends; found wrong while it heals, it goes back
    /// in when the heal ends (once, however often it was found); waiting, it is not queued twice.
    #[test]
    fn the_queue_counts_heals_until_they_end_and_takes_back_what_was_found_meanwhile() {
        let h = Arc::new(Healer::new());
        let mut rx = h.rx.lock().expect("lock").take().expect("receiver");
        let entry = ("b".to_owned(), "k".to_owned());
        h.notify("b", "k");
        h.notify("b", "k");
        assert_eq!(rx.try_recv().ok(), Some(entry.clone()));
        assert!(rx.try_recv().is_err(), "queued once while waiting");
        h.heal_begins(&entry);
        assert_eq!(h.queue_length(), 1, "counted while it heals");
        assert_eq!(h.status().state, "healing");
        assert!(!h.heal_ends(&entry, false));
        assert_eq!((h.queue_length(), h.status().state.as_str()), (0, "idle"));
        // Found wrong twice during the next heal: queued again once, when it ends.
        h.notify("b", "k");
        assert_eq!(rx.try_recv().ok(), Some(entry.clone()));
        h.heal_begins(&entry);
        h.notify("b", "k");
        h.notify("b", "k");
        assert!(rx.try_recv().is_err(), "not sent while its heal runs");
        assert!(h.heal_ends(&entry, false));
        assert_eq!(h.queue_length(), 1);
        assert_eq!(rx.try_recv().ok(), Some(entry.clone()));
        assert!(rx.try_recv().is_err());
        h.heal_begins(&entry);
        assert!(!h.heal_ends(&entry, false));
        assert_eq!(h.queue_length(), 0);
    }

    /// A heal that failed for a passing reason is queued again after a pause that doubles with
    /// each try, counted in the queue's length meanwhile, until its tries run out; a new finding
    /// while it waits queues it at once.
    #[tokio::test(start_paused = true)]
    async fn a_failed_heal_is_tried_again_after_doubling_pauses_until_its_tries_run_out() {
        let h = Arc::new(Healer::new());
        let mut rx = h.rx.lock().expect("lock").take().expect("receiver");
        let entry = ("b".to_owned(), "k".to_owned());
        h.retry_later("b", "k");
        h.retry_later("b", "k");
        assert_eq!(h.queue_length(), 1, "counted once while it waits");
        let mut waited = Vec::new();
        for attempt in 1..=HEAL_RETRY_ATTEMPTS {
            let began = tokio::time::Instant::now();
            assert_eq!(rx.recv().await, Some(entry.clone()), "try {attempt}");
            waited.push(began.elapsed().as_secs());
            assert!(rx.try_recv().is_err(), "sent once");
            h.heal_begins(&entry);
            let last = attempt == HEAL_RETRY_ATTEMPTS;
            assert_eq!(h.heal_ends(&entry, true), !last, "try {attempt}");
        }
        assert_eq!(waited, [1, 2, 4, 8, 16, 32]);
        assert_eq!(h.queue_length(), 0, "out of the queue when its tries ran out");
        // A success ends the tries; a finding while it waits for a try heals it at once.
        h.retry_later("b", "k");
        h.notify("b", "k");
        assert_eq!(rx.try_recv().ok(), Some(entry.clone()));
        h.heal_begins(&entry);
        assert!(!h.heal_ends(&entry, false));
        assert_eq!(h.queue_length(), 0);
        tokio::time::sleep(retry_pause(1) * 2).await;
        assert!(rx.try_recv().is_err(), "the pause that was running sends nothing");
    }

    #[test]
    fn lifecycle_works_a_tenth_of_the_time_at_normal_priority_and_less_than_healing() {
        let spent = Duration::from_millis(20);
        let duty = |p: HealPriority| spent.as_secs_f64() / (spent + p.lifecycle_pause(spent)).as_secs_f64();
        assert!((0.09..=0.10).contains(&duty(HealPriority::Normal)), "{}", duty(HealPriority::Normal));
        assert!(duty(HealPriority::Low) <= 0.05);
        assert_eq!(HealPriority::High.lifecycle_pause(spent), Duration::ZERO);
        for p in [HealPriority::Low, HealPriority::Normal] {
            assert!(p.lifecycle_pause(spent) > p.pause(spent), "{p:?}: lifecycle yields more than healing");
        }
    }
}
