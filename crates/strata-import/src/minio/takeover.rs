//! The in-place import: MinIO's drives become a Strata deployment's, their shard files taken
//! over as they are.
//!
//! How: each drive gets Strata's format record (MinIO's deployment and drive ids, its set
//! order) and metadata index beside MinIO's files. Every bucket is made with the settings MinIO
//! kept for it, checked as S3 checks them. Every version a read quorum of drives agree on is
//! committed on each drive that holds it, as that drive holds it: the same version id, time,
//! ETag, metadata, tags, retention and legal hold, the same erasure split and shard
//! distribution, its frames marked as hashed under MinIO's key. A shard file is hard-linked into
//! Strata's temp folder and moved into place by the commit, as a written one is: no byte is
//! copied, and MinIO's own name for the file stays until `--commit` removes MinIO's side. A
//! small version's inline shards move into Strata's index.
//!
//! Resumable: a version already committed on a drive is left as it is, so running the import
//! again after a crash finishes what was left (links a crash left in temp are swept when the
//! drive opens).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use futures_util::StreamExt;
use serde::Serialize;
use strata_cluster::format::{Format, FORMAT_VERSION};
use strata_drive::{DriveError, LocalDrive};
use strata_meta::{
    Bitrot, BucketRecord, DataLocation, ErasureInfo, ObjectVersion as StrataVersion, PartInfo, Retention,
};
use strata_types::limits::BLOCK_SIZE;
use strata_types::BucketName;
use uuid::Uuid;

use super::bucket::BucketSettings;
use super::format::Sets;
use super::object::ObjectCopies;
use super::survey::{keys_by_set, list_buckets, plan, unreadable_object, Plan, Skipped, Tally};
use super::xlmeta::{ObjectVersion, XlVersion};
use super::{Deployment, MinioError};

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct TakeoverReport {
    pub buckets: Vec<String>,
    /// Shard files taken over in place (linked).
    pub in_place: Tally,
    /// Inline shards moved into Strata's index.
    pub inline: Tally,
    pub delete_markers: u64,
    /// Bytes written because a link could not be made (another filesystem) or MinIO kept a
    /// large object inline; 0 in the usual case.
    pub bytes_copied: u64,
    /// Version copies (one per drive) found already committed by an earlier run.
    pub already_imported: u64,
    /// Versions left where they are, with the reason.
    pub skipped: Vec<Skipped>,
    /// Copies of `xl.meta` that could not be read (the object was imported from the other
    /// drives, and healing refills these), as `drive: why`.
    pub unreadable: Vec<String>,
    /// Bucket settings Strata refused (the bucket is made without them), with the reason.
    pub settings_refused: Vec<String>,
    /// Versions MinIO encrypted, left on its side for now: they are sealed again under Strata's
    /// KMS by a step that needs a running object layer (`strata import minio` does it when given
    /// MinIO's KMS key).
    pub encrypted: Vec<EncryptedVersion>,
    /// Versions MinIO compressed, left on its side for now: they are written again as plain
    /// bytes by the same later step.
    pub compressed: Vec<EncryptedVersion>,
}

/// A version MinIO encrypted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EncryptedVersion {
    pub bucket: String,
    pub key: String,
    pub version_id: Option<Uuid>,
    /// MinIO's time of the version (nanoseconds).
    pub mod_time: i64,
}

impl EncryptedVersion {
    /// How the import's state file names it.
    pub fn name(&self) -> String {
        match self.version_id {
            Some(id) => format!("{}/{} ({id})", self.bucket, self.key),
            None => format!("{}/{} (null)", self.bucket, self.key),
        }
    }
}

/// Progress, for a caller's bar: told what each object's import did.
pub trait Progress {
    fn object_done(&mut self, done: &TakeoverReport);
}

impl<F: FnMut(&TakeoverReport)> Progress for F {
    fn object_done(&mut self, done: &TakeoverReport) {
        self(done)
    }
}

impl TakeoverReport {
    /// Versions this report counts (imported, already there, or skipped).
    pub fn versions(&self) -> u64 {
        self.in_place.versions
            + self.inline.versions
            + self.delete_markers
            + self.skipped.len() as u64
            + self.encrypted.len() as u64
            + self.compressed.len() as u64
    }

    /// Bytes of the versions imported.
    pub fn bytes(&self) -> u64 {
        self.in_place.bytes + self.inline.bytes
    }

    /// Adds an object's report to the whole's.
    pub fn merge(&mut self, other: TakeoverReport) {
        self.buckets.extend(other.buckets);
        self.in_place.versions += other.in_place.versions;
        self.in_place.bytes += other.in_place.bytes;
        self.inline.versions += other.inline.versions;
        self.inline.bytes += other.inline.bytes;
        self.delete_markers += other.delete_markers;
        self.bytes_copied += other.bytes_copied;
        self.already_imported += other.already_imported;
        self.skipped.extend(other.skipped);
        self.unreadable.extend(other.unreadable);
        self.settings_refused.extend(other.settings_refused);
        self.encrypted.extend(other.encrypted);
        self.compressed.extend(other.compressed);
    }
}

fn drive_error(drive: &Path, e: impl std::fmt::Display) -> MinioError {
    MinioError::Strata { path: drive.display().to_string(), why: e.to_string() }
}

/// Opens every drive as a Strata drive, formatting it as the MinIO deployment's: its ids, its
/// sets and their order, and MinIO's rule for which set holds an object. A drive formatted by
/// an earlier run must agree.
pub async fn open_drives(deployment: &Deployment) -> Result<Vec<Arc<LocalDrive>>, MinioError> {
    let pools = vec![deployment.sets.clone()];
    // One set holds every object whatever the rule: such a deployment keeps Strata's (and a
    // drive formatted by an import before the rule was recorded still agrees).
    let placement = match deployment.sets.len() {
        1 => strata_cluster::placement::Placement::Strata,
        _ => strata_cluster::placement::Placement::MinioSipmod,
    };
    let mut drives = Vec::new();
    for d in &deployment.drives {
        let path = d.path.clone();
        let opened = tokio::task::spawn_blocking(move || LocalDrive::open(&path))
            .await
            .map_err(|e| drive_error(&d.path, e))?
            .map_err(|e| drive_error(&d.path, e))?;
        let drive = Arc::new(opened);
        let want = Format {
            version: FORMAT_VERSION,
            deployment_id: deployment.id,
            drive_id: d.id,
            pools: pools.clone(),
            placement,
            retired: Vec::new(),
        };
        match drive.read_format().await.map_err(|e| drive_error(&d.path, e))? {
            None => drive.write_format(want.to_json()).await.map_err(|e| drive_error(&d.path, e))?,
            Some(bytes) => {
                let found = Format::from_json(&bytes).map_err(|e| drive_error(&d.path, e))?;
                if found != want {
                    return Err(drive_error(
                        &d.path,
                        format!(
                            "already formatted for Strata deployment {} (drive {}), not as this MinIO deployment's",
                            found.deployment_id, found.drive_id
                        ),
                    ));
                }
            }
        }
        drives.push(drive);
    }
    Ok(drives)
}

/// The bucket record for MinIO's settings; settings Strata refuses are left out and named.
pub(crate) fn bucket_record(
    name: &BucketName,
    s: &BucketSettings,
    refused: &mut Vec<String>,
) -> BucketRecord {
    let mut r = BucketRecord {
        created: s.created.and_then(|t| u64::try_from(t).ok()).unwrap_or_else(strata_types::time::now_nanos),
        ..Default::default()
    };
    let mut refuse = |what: &str, e: &dyn std::fmt::Display| refused.push(format!("{name}: {what}: {e}"));
    if s.object_lock() {
        // MinIO's older flag says lock without a document; the document adds a default rule.
        let doc = if s.object_lock_xml.trim().is_empty() {
            "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>"
        } else {
            &s.object_lock_xml
        };
        match strata_s3::documents::object_lock(doc.as_bytes()) {
            Ok(lock) => r.object_lock = Some(lock),
            Err(e) => refuse("object lock", &e),
        }
    }
    if r.object_lock.is_some() {
        r.versioning = strata_meta::Versioning::Enabled;
    } else if !s.versioning_xml.trim().is_empty() {
        match strata_s3::documents::versioning(s.versioning_xml.as_bytes()) {
            Ok(v) => r.versioning = v.unwrap_or_default(),
            Err(e) => refuse("versioning", &e),
        }
    }
    if !s.tagging_xml.trim().is_empty() {
        match strata_s3::documents::tagging(s.tagging_xml.as_bytes()) {
            Ok(tags) => r.tags = tags,
            Err(e) => refuse("tags", &e),
        }
    }
    if !s.policy_json.trim().is_empty() {
        match strata_s3::documents::bucket_policy(s.policy_json.as_bytes(), name) {
            Ok(()) => r.policy = Some(s.policy_json.clone()),
            Err(e) => refuse("policy", &e),
        }
    }
    if !s.lifecycle_xml.trim().is_empty() {
        match strata_s3::documents::lifecycle(without_minio_elements(&s.lifecycle_xml).as_bytes()) {
            Ok(l) => r.lifecycle = Some(l),
            Err(e) => refuse("lifecycle", &e),
        }
    }
    if !s.encryption_xml.trim().is_empty() {
        match strata_s3::documents::encryption(s.encryption_xml.as_bytes()) {
            Ok(e) => r.encryption = Some(e),
            Err(e) => refuse("default encryption", &e),
        }
    }
    if !s.notification_xml.trim().is_empty() {
        match strata_s3::documents::notifications(s.notification_xml.as_bytes()) {
            Ok(n) => r.notifications = n,
            Err(e) => refuse("notifications", &e),
        }
    }
    for (doc, what) in [(&s.quota_json, "quota"), (&s.replication_xml, "replication")] {
        if !doc.trim().is_empty() {
            refused.push(format!("{name}: {what}: Strata has no bucket {what} yet; not imported"));
        }
    }
    r
}

/// MinIO adds `<ExpiryUpdatedAt>` to the lifecycle documents it stores; S3 has no such element.
fn without_minio_elements(doc: &str) -> String {
    let (open, close) = ("<ExpiryUpdatedAt>", "</ExpiryUpdatedAt>");
    match (doc.find(open), doc.find(close)) {
        (Some(a), Some(b)) if b > a => format!("{}{}", &doc[..a], &doc[b + close.len()..]),
        _ => doc.to_owned(),
    }
}

/// Makes (or, on a second run, updates) every bucket on every drive.
async fn import_buckets(
    drives: &[Arc<LocalDrive>],
    sets: &Sets,
    report: &mut TakeoverReport,
) -> Result<Vec<BucketName>, MinioError> {
    let paths = sets.all();
    // MinIO's records of the buckets, read (and decoded) off the async threads.
    let owned = sets.clone();
    let found = tokio::task::spawn_blocking(move || {
        list_buckets(&owned.all())?
            .into_iter()
            .map(|name| Ok((BucketSettings::read(&owned, &name)?.unwrap_or_default(), name)))
            .collect::<Result<Vec<_>, MinioError>>()
    })
    .await
    .map_err(|e| MinioError::Unsupported(format!("reading the buckets failed: {e}")))??;
    let mut buckets = Vec::new();
    for (settings, name) in found {
        let Ok(bucket) = BucketName::parse(&name) else {
            report.skipped.push(Skipped {
                key: String::new(),
                version_id: None,
                why: format!("bucket name {name:?} is not one S3 allows"),
            });
            continue;
        };
        let record = bucket_record(&bucket, &settings, &mut report.settings_refused).encode();
        for (drive, path) in drives.iter().zip(&paths) {
            match drive.make_bucket(&name, record.clone()).await {
                Ok(()) => {}
                Err(DriveError::BucketExists) => {
                    drive.update_bucket(&name, record.clone()).await.map_err(|e| drive_error(path, e))?
                }
                Err(e) => return Err(drive_error(path, e)),
            }
        }
        report.buckets.push(name);
        buckets.push(bucket);
    }
    Ok(buckets)
}

/// Runs the import of `deployment` (its drives checked and not in use); `progress` hears of
/// every object done. Objects are imported `parallel` at a time
/// ([`strata_types::limits::IMPORT_OBJECTS_IN_FLIGHT`] by default), and a version is committed on
/// its drives at once, so the drives' group commits share their syncs.
pub async fn take_over(
    deployment: &Deployment,
    parallel: usize,
    progress: &mut dyn Progress,
) -> Result<TakeoverReport, MinioError> {
    let sets = deployment.sets();
    let paths: Arc<Vec<PathBuf>> = Arc::new(sets.all());
    let drives = Arc::new(open_drives(deployment).await?);
    let set_size = sets.paths.first().map_or(1, Vec::len).max(1);
    let mut report = TakeoverReport::default();
    let runtime = tokio::runtime::Handle::current();
    for bucket in import_buckets(&drives, &sets, &mut report).await? {
        let walked = (sets.clone(), bucket.as_str().to_owned());
        let keys = tokio::task::spawn_blocking(move || keys_by_set(&walked.0, &walked.1))
            .await
            .map_err(|e| MinioError::Unsupported(format!("listing a bucket failed: {e}")))??;
        let mut done = futures_util::stream::iter(keys)
            .map(|(s, found)| {
                let (paths, drives, bucket, runtime) =
                    (paths.clone(), drives.clone(), bucket.clone(), runtime.clone());
                tokio::task::spawn_blocking(move || {
                    let key = match found {
                        Ok(key) => key,
                        Err(stray) => {
                            return Ok(TakeoverReport { skipped: vec![stray], ..Default::default() })
                        }
                    };
                    // The drives of the object's set (`drives` and `paths` are in set order).
                    let set = s * set_size..(s + 1) * set_size;
                    import_object(&runtime, &drives[set.clone()], &paths[set], &bucket, &key)
                })
            })
            .buffer_unordered(parallel.max(1));
        while let Some(joined) = done.next().await {
            let one =
                joined.map_err(|e| MinioError::Unsupported(format!("an import task failed: {e}")))??;
            progress.object_done(&one);
            report.merge(one);
        }
    }
    let state = ImportState {
        minio_deployment: deployment.id.to_string(),
        finished: strata_types::time::now_nanos(),
        skipped: report.skipped.iter().map(|s| format!("{} ({})", s.key, s.why)).collect(),
        encrypted: report.encrypted.iter().map(EncryptedVersion::name).collect(),
        compressed: report.compressed.iter().map(EncryptedVersion::name).collect(),
    };
    let bytes = serde_json::to_vec_pretty(&state).map_err(|e| MinioError::Unsupported(e.to_string()))?;
    for (drive, path) in drives.iter().zip(paths.iter()) {
        drive.write_state(STATE_NAME, bytes.clone()).await.map_err(|e| drive_error(path, e))?;
    }
    Ok(report)
}

/// The state file (`.strata.sys/state-import-minio.json`) an import that ran to its end leaves
/// on every drive: what `--commit` checks before it removes MinIO's side.
pub const STATE_NAME: &str = "import-minio";

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ImportState {
    pub minio_deployment: String,
    /// Nanoseconds since the Unix epoch.
    pub finished: u64,
    /// Versions left on MinIO's side (they would be lost with it).
    pub skipped: Vec<String>,
    /// Encrypted versions not yet sealed again under Strata's KMS ([`EncryptedVersion::name`]),
    /// also only on MinIO's side until they are.
    #[serde(default)]
    pub encrypted: Vec<String>,
    /// Compressed versions not yet written again as plain bytes: also only on MinIO's side.
    #[serde(default)]
    pub compressed: Vec<String>,
}

/// Records on every drive's import state that `done` are now Strata's too (sealed again under
/// its KMS), so `--commit` no longer waits for them.
pub fn settle(paths: &[PathBuf], done: &[EncryptedVersion]) -> Result<(), MinioError> {
    let names: Vec<String> = done.iter().map(EncryptedVersion::name).collect();
    for path in paths {
        let file = path.join(".strata.sys").join(format!("state-{STATE_NAME}.json"));
        let bytes = std::fs::read(&file).map_err(|e| MinioError::io(&file, e))?;
        let mut state: ImportState =
            serde_json::from_slice(&bytes).map_err(|e| MinioError::malformed(&file, e.to_string()))?;
        state.encrypted.retain(|n| !names.contains(n));
        state.compressed.retain(|n| !names.contains(n));
        let bytes = serde_json::to_vec_pretty(&state).map_err(|e| MinioError::Unsupported(e.to_string()))?;
        let temp = file.with_extension("json.tmp");
        write_durably(&temp, &bytes).map_err(|e| MinioError::io(&temp, e))?;
        std::fs::rename(&temp, &file).map_err(|e| MinioError::io(&file, e))?;
    }
    Ok(())
}

/// What `--commit` removed.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct CommitReport {
    pub drives: usize,
    /// Folders of MinIO's removed (its buckets' and `.minio.sys`), over all drives.
    pub folders_removed: usize,
}

/// Confirms an import: removes MinIO's files from every drive (its buckets' folders and
/// `.minio.sys`), leaving Strata's. Refused unless an import of this deployment ran to its end
/// on every drive and left nothing on MinIO's side. The shard files Strata took over stay: they
/// were linked, and only MinIO's names for them go. A second run finishes a first one cut short.
pub fn commit(paths: &[PathBuf]) -> Result<CommitReport, MinioError> {
    let mut states = Vec::new();
    for path in paths {
        let file = path.join(".strata.sys").join(format!("state-{STATE_NAME}.json"));
        let bytes = match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(drive_error(path, "no finished import here: run `strata import minio` first"))
            }
            Err(e) => return Err(MinioError::io(&file, e)),
        };
        let state: ImportState =
            serde_json::from_slice(&bytes).map_err(|e| MinioError::malformed(&file, e.to_string()))?;
        let left: Vec<&String> =
            state.skipped.iter().chain(&state.encrypted).chain(&state.compressed).collect();
        if !left.is_empty() {
            return Err(drive_error(
                path,
                format!(
                    "{} versions are still only on MinIO's side and would be lost: {}",
                    left.len(),
                    left.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
                ),
            ));
        }
        states.push(state);
    }
    if states.windows(2).any(|w| w[0].minio_deployment != w[1].minio_deployment) {
        return Err(MinioError::Unsupported(
            "the drives were imported from different MinIO deployments".into(),
        ));
    }
    let mut report = CommitReport { drives: paths.len(), ..Default::default() };
    for path in paths {
        let entries = std::fs::read_dir(path).map_err(|e| MinioError::io(path, e))?;
        let mut doomed: Vec<PathBuf> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && entry.file_type().is_ok_and(|t| t.is_dir()) {
                doomed.push(entry.path());
            }
        }
        // MinIO's system folder last: while it is there, the drive still reads as MinIO's.
        doomed.push(path.join(super::format::SYS_DIR));
        for folder in doomed {
            match std::fs::remove_dir_all(&folder) {
                Ok(()) => report.folders_removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(MinioError::io(&folder, e)),
            }
        }
        std::fs::File::open(path).and_then(|d| d.sync_all()).map_err(|e| MinioError::io(path, e))?;
    }
    Ok(report)
}

/// One object: where it is on MinIO's side.
struct Target<'a> {
    bucket: &'a BucketName,
    key: &'a str,
    copies: &'a ObjectCopies,
    paths: &'a [PathBuf],
}

/// Imports every version of one object, oldest first (each commit is then the newest its drive
/// holds, as when it was written). Runs on a blocking thread: MinIO's files are read and linked
/// here, and the commits are waited for on `runtime`.
fn import_object(
    runtime: &tokio::runtime::Handle,
    drives: &[Arc<LocalDrive>],
    paths: &[PathBuf],
    bucket: &BucketName,
    key: &str,
) -> Result<TakeoverReport, MinioError> {
    let mut report = TakeoverReport::default();
    let copies = ObjectCopies::read(paths, bucket.as_str(), key);
    let mut agreed = copies.agreed_versions();
    agreed.reverse();
    if let Some(why) = unreadable_object(&copies, &agreed) {
        report.skipped.push(Skipped { key: key.to_owned(), version_id: None, why });
        return Ok(report);
    }
    for (position, why) in &copies.unreadable {
        report.unreadable.push(format!("{}: {why}", paths[*position].display()));
    }
    let t = Target { bucket, key, copies: &copies, paths };
    for a in agreed {
        let skip = |why: String| Skipped {
            key: key.to_owned(),
            version_id: a.version.version_id().map(|id| id.to_string()),
            why,
        };
        match plan(&a.version) {
            Plan::Skip(why) => {
                report.skipped.push(skip(why));
                continue;
            }
            later @ (Plan::Reencrypt | Plan::Decompress) => {
                let v = EncryptedVersion {
                    bucket: bucket.as_str().to_owned(),
                    key: key.to_owned(),
                    version_id: a.version.version_id(),
                    mod_time: a.version.mod_time(),
                };
                match later {
                    Plan::Reencrypt => report.encrypted.push(v),
                    _ => report.compressed.push(v),
                }
                continue;
            }
            Plan::InPlace | Plan::Inline | Plan::Marker => {}
        }
        import_version(runtime, &t, drives, &a.version, &a.positions, &mut report)?;
    }
    Ok(report)
}

/// Commits `version` on every drive in `positions` that does not hold it yet, on all of them at
/// once.
fn import_version(
    runtime: &tokio::runtime::Handle,
    t: &Target<'_>,
    drives: &[Arc<LocalDrive>],
    version: &XlVersion,
    positions: &[usize],
    report: &mut TakeoverReport,
) -> Result<(), MinioError> {
    let n = drives.len();
    let ids = DataIds {
        version: Uuid::new_v4(),
        parts: match version {
            XlVersion::Object(o) => o.parts.iter().map(|_| Uuid::new_v4()).collect(),
            _ => Vec::new(),
        },
    };
    let held = runtime.block_on(join_all(positions.iter().map(|&p| holds(&drives[p], t, version))));
    let mut commits = Vec::new();
    for (&p, held) in positions.iter().zip(held) {
        if held {
            report.already_imported += 1;
            continue;
        }
        let (record, inline) = match version {
            XlVersion::DeleteMarker(m) => (marker(m.version_id, m.mod_time, ids.version, (n, p)), None),
            XlVersion::Object(o) => {
                let Some((mine, inline)) = t.copies.on_drive(p, o) else { continue };
                place_data(t, p, o, mine, inline, &ids, report)?
            }
            XlVersion::Unknown { .. } => return Ok(()),
        };
        commits.push((p, record, inline));
    }
    if commits.is_empty() {
        return Ok(());
    }
    let results = runtime.block_on(join_all(commits.into_iter().map(|(p, record, inline)| async move {
        let drive = &drives[p];
        let op = Uuid::new_v4();
        let committed = drive.commit_version(t.bucket.as_str(), t.key, record, inline, op).await;
        drive.finish_op(op, committed.is_ok()).await;
        committed.map_err(|e| drive_error(&t.paths[p], e))
    })));
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    match version {
        XlVersion::DeleteMarker(_) => report.delete_markers += 1,
        XlVersion::Object(o) if o.is_inline() => report.inline.add(o.size),
        XlVersion::Object(o) => report.in_place.add(o.size),
        XlVersion::Unknown { .. } => {}
    }
    Ok(())
}

/// Whether `drive` already holds `version` (an earlier run committed it).
async fn holds(drive: &LocalDrive, t: &Target<'_>, version: &XlVersion) -> bool {
    match drive.read_version(t.bucket.as_str(), t.key, version.version_id(), false).await {
        Ok((record, _)) => record.versions.iter().any(|v| {
            v.version_id == version.version_id() && i64::try_from(v.mod_time).ok() == Some(version.mod_time())
        }),
        Err(_) => false,
    }
}

/// A delete marker as Strata records one on the drive at `position` of `n`: the same on every
/// drive but for its shard index (the id keeps its versions' data ids distinct).
fn marker(
    version_id: Option<Uuid>,
    mod_time: i64,
    data_id: Uuid,
    (n, position): (usize, usize),
) -> StrataVersion {
    let parity = n / 2;
    let erasure = ErasureInfo {
        data_count: (n - parity) as u8,
        parity_count: parity as u8,
        block_size: BLOCK_SIZE as u32,
        shard_index: position as u8,
        distribution: (0..n).map(|i| i as u8).collect(),
        bitrot: Bitrot::Strata,
    };
    StrataVersion::delete_marker(version_id, u64::try_from(mod_time).unwrap_or(0), erasure, data_id)
}

/// Looks up a header MinIO kept, without regard to case.
fn user_value<'a>(v: &'a ObjectVersion, name: &str) -> Option<&'a str> {
    v.meta_user.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// What Strata keeps of a MinIO version's headers and metadata.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    /// The stored headers ([`strata_s3::object::STORED_HEADERS`]).
    pub headers: BTreeMap<String, String>,
    /// `x-amz-meta-*`, by the name after the prefix.
    pub user_metadata: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub retention: Option<Retention>,
    pub legal_hold: bool,
}

/// The headers, metadata, tags and object lock MinIO kept with `o`.
pub fn metadata(o: &ObjectVersion) -> Metadata {
    let mut headers = BTreeMap::new();
    for name in strata_s3::object::STORED_HEADERS {
        if let Some(v) = user_value(o, name) {
            headers.insert(name.to_owned(), v.to_owned());
        }
    }
    let mut user_metadata = BTreeMap::new();
    for (k, v) in &o.meta_user {
        let lower = k.to_ascii_lowercase();
        if let Some(name) = lower.strip_prefix("x-amz-meta-") {
            user_metadata.insert(name.to_owned(), v.clone());
        }
    }
    let tags = user_value(o, "x-amz-tagging")
        .and_then(|t| strata_s3::documents::tagging_header(t).ok())
        .unwrap_or_default();
    let retention =
        match (user_value(o, "x-amz-object-lock-mode"), user_value(o, "x-amz-object-lock-retain-until-date"))
        {
            (Some(mode), Some(until)) => strata_s3::documents::retention(mode, until)
                .ok()
                .map(|(mode, until)| Retention { mode, until }),
            _ => None,
        };
    let legal_hold =
        user_value(o, "x-amz-object-lock-legal-hold").is_some_and(|h| h.eq_ignore_ascii_case("ON"));
    Metadata { headers, user_metadata, tags, retention, legal_hold }
}

/// Strata's record of MinIO's version `o` on the drive at `position` (`mine`: that drive's copy,
/// for its shard index).
fn strata_version(
    o: &ObjectVersion,
    mine: &ObjectVersion,
    data: DataLocation,
    parts: Vec<PartInfo>,
) -> StrataVersion {
    let Metadata { headers, user_metadata, tags, retention, legal_hold } = metadata(o);
    let e = &o.erasure;
    StrataVersion {
        version_id: o.version_id,
        mod_time: u64::try_from(o.mod_time).unwrap_or(0),
        delete_marker: false,
        size: o.size,
        etag: user_value(o, "etag").unwrap_or_default().to_owned(),
        headers,
        user_metadata,
        // A multipart object's composite checksum is not carried over (see `checksums`).
        checksums: if o.parts.len() == 1 { o.checksums() } else { BTreeMap::new() },
        erasure: ErasureInfo {
            data_count: e.data_count,
            parity_count: e.parity_count,
            block_size: e.block_size,
            shard_index: mine.erasure.index - 1,
            // MinIO counts shards from 1; Strata from 0.
            distribution: e.distribution.iter().map(|s| s - 1).collect(),
            bitrot: Bitrot::Minio,
        },
        data,
        parts,
        tags,
        retention,
        legal_hold,
        sse: None,
        acl: None,
        // MinIO's replication state is not carried (nor its replication configuration).
        replication: None,
    }
}

/// The data ids of Strata's copy of a version: the version's, and one per part (the same on
/// every drive, as a written version's).
struct DataIds {
    version: Uuid,
    parts: Vec<Uuid>,
}

/// Puts the drive's shards of `o` where Strata's commit finds them (links in its temp folder, or
/// the inline bytes) and returns the record to commit.
fn place_data(
    t: &Target<'_>,
    position: usize,
    o: &ObjectVersion,
    mine: &ObjectVersion,
    inline: Option<&Bytes>,
    ids: &DataIds,
    report: &mut TakeoverReport,
) -> Result<(StrataVersion, Option<Bytes>), MinioError> {
    let data_id = ids.version;
    let path = &t.paths[position];
    let tmp = path.join(".strata.sys").join("tmp");
    if o.is_inline() {
        let bytes = match inline {
            Some(bytes) if !bytes.is_empty() => bytes.clone(),
            // MinIO keeps nothing for an empty object; Strata keeps the frame of its one empty
            // shard.
            _ => Bytes::copy_from_slice(&strata_erasure::bitrot::hash_with(
                strata_erasure::bitrot::Key::MINIO,
                &[],
            )),
        };
        if o.size <= u64::from(o.erasure.block_size) {
            return Ok((strata_version(o, mine, DataLocation::Inline(data_id), vec![]), Some(bytes)));
        }
        // Inline in MinIO but more than one block: a shard file in Strata.
        write_durably(&tmp.join(data_id.simple().to_string()), &bytes)
            .map_err(|e| MinioError::io(&tmp, e))?;
        report.bytes_copied += bytes.len() as u64;
        return Ok((strata_version(o, mine, DataLocation::File(data_id), vec![]), None));
    }
    let dir = t.copies.dirs[position].join(mine.data_dir.to_string());
    let mut link = |number: u32, id: Uuid| -> Result<(), MinioError> {
        let from = dir.join(format!("part.{number}"));
        let to = tmp.join(id.simple().to_string());
        report.bytes_copied += link_or_copy(&from, &to)?;
        Ok(())
    };
    if let [only] = o.parts.as_slice() {
        link(only.number, data_id)?;
        return Ok((strata_version(o, mine, DataLocation::File(data_id), vec![]), None));
    }
    let mut parts = Vec::new();
    for (part, &id) in o.parts.iter().zip(&ids.parts) {
        link(part.number, id)?;
        parts.push(PartInfo {
            number: part.number,
            size: part.size,
            // MinIO keeps no part ETags once an upload completes.
            etag: part.etag.clone().unwrap_or_default(),
            data_id: id,
            mod_time: u64::try_from(o.mod_time).unwrap_or(0),
            checksums: BTreeMap::new(),
            sealed_checksums: None,
        });
    }
    Ok((strata_version(o, mine, DataLocation::Multipart(data_id), parts), None))
}

/// Hard-links `from` as `to`; copies (and syncs) when the filesystem cannot link them. Returns
/// the bytes copied.
fn link_or_copy(from: &Path, to: &Path) -> Result<u64, MinioError> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(to).map_err(|e| MinioError::io(to, e))?;
            link_or_copy(from, to)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(MinioError::io(from, e)),
        Err(_) => {
            let copied = std::fs::copy(from, to).map_err(|e| MinioError::io(from, e))?;
            std::fs::File::open(to).and_then(|f| f.sync_all()).map_err(|e| MinioError::io(to, e))?;
            Ok(copied)
        }
    }
}

fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}
