//! Bucket replication's worker: the versions a bucket's replication rules take, copied to their
//! destination bucket with their own version id and modification time.
//!
//! A client's write that a rule takes is stored PENDING (`strata_object`, in the same record
//! write). Once it succeeded, the S3 handler queues a [`Record`] naming the version in this
//! node's replication queue (a [`strata_notify::queue::Queue`] in the system folder of its
//! first local drive: appends group-committed and durable before the write is answered,
//! delivered in order, at least once). The [`Worker`] takes the records one by one:
//! - it reads the version (gone since: nothing to do; no longer PENDING: done before);
//! - the rule of highest priority that takes it names the destination, which must still be a
//!   bucket with versioning enabled;
//! - it writes the copy there with the version's id, time, metadata, tags, object lock settings
//!   and kind of encryption, as REPLICA (`ObjectLayer::import_version`, which puts an older
//!   version behind newer ones: a copy never replaces a newer version of its key);
//! - it marks the source COMPLETED.
//!
//! What cannot be copied is marked FAILED with the reason, and never retried by itself: SSE-C
//! (this server does not keep the customer's key), SSE-KMS under a rule that does not select
//! it, object lock settings into a bucket without object lock, a destination that is gone or
//! unversioned. Anything else (a quorum lost, the KMS unreachable) fails the attempt, and the
//! queue tries again with back-off: a destination down for hours loses nothing.
//!
//! Delete markers a client's delete made go too when the deciding rule replicates them; they
//! have no status. Markers the lifecycle pass makes are not replicated, as in AWS.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use strata_crypto::Kms;
use strata_meta::{ReplicationRule, ReplicationStatus, SseKind};
use strata_metrics::{Metrics, TargetLabels};
use strata_notify::queue::{Meters, Queue, Sink};
use strata_notify::EventName;
use strata_object::{
    Imported, ObjectError, ObjectInfo, ObjectLayer, PutOptions, StreamBody, VersionRef, Versioning,
};
use strata_types::limits::{REPLICATION_COPIES_MAX, REPLICATION_QUEUE_MAX};
use uuid::Uuid;

use crate::context::ReplicationQueue;
use crate::sse::SseRequest;

/// The destination label of failures no rule's destination explains.
const NO_DESTINATION: &str = "none";

/// One version to replicate, as the queue keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub bucket: String,
    pub key: String,
    /// `None`: the `null` version.
    pub version_id: Option<Uuid>,
    /// A delete marker rather than a version with data.
    #[serde(default)]
    pub marker: bool,
}

/// This node's replication queue and its worker.
pub struct Replicator {
    queue: Arc<Queue>,
}

impl Replicator {
    /// Opens the queue in `dir` and starts working what earlier runs left in it. `rrs_parity`
    /// is the parity of `REDUCED_REDUNDANCY`, for rules that write replicas in it.
    pub fn open(
        fs: Arc<dyn strata_drive::fs::Fs>,
        dir: &Path,
        layer: Arc<ObjectLayer>,
        kms: Option<Arc<dyn Kms>>,
        metrics: Arc<Metrics>,
        rrs_parity: Option<usize>,
    ) -> std::io::Result<Arc<Self>> {
        let meters = Meters {
            depth: metrics.replication_queue_depth.clone(),
            delivered: metrics.replication_queue_worked.clone(),
            failed: metrics.replication_queue_retries.clone(),
            dropped: metrics.replication_queue_dropped.clone(),
        };
        let worker = Arc::new(Worker { layer, kms, metrics, rrs_parity });
        let queue = Queue::open(fs, dir, worker, "replication".into(), meters, REPLICATION_QUEUE_MAX)?;
        Ok(Arc::new(Self { queue }))
    }
}

#[async_trait::async_trait]
impl ReplicationQueue for Replicator {
    async fn enqueue(&self, bucket: &str, key: &str, version_id: Option<Uuid>, marker: bool) -> bool {
        let record = Record { bucket: bucket.to_owned(), key: key.to_owned(), version_id, marker };
        match serde_json::to_vec(&record) {
            Ok(bytes) => self.queue.enqueue(bytes).await,
            Err(_) => false,
        }
    }

    fn backlog(&self) -> u64 {
        self.queue.depth()
    }
}

/// Queues the version a write made when replication takes it: a new version stored PENDING
/// (`ObjectCreated:*`), or a delete marker a client's delete made in a bucket whose deciding
/// rule replicates markers. Called by the S3 handlers after the write succeeded.
pub(crate) async fn queue_write(
    replicator: Option<&dyn ReplicationQueue>,
    layer: &ObjectLayer,
    name: EventName,
    bucket: &str,
    key: &str,
    object: Option<&ObjectInfo>,
    version: Option<Uuid>,
) {
    let Some(replicator) = replicator else { return };
    let marker = match name {
        EventName::ObjectRemovedDeleteMarkerCreated => true,
        EventName::ObjectCreatedPut
        | EventName::ObjectCreatedPost
        | EventName::ObjectCreatedCopy
        | EventName::ObjectCreatedCompleteMultipartUpload => false,
        _ => return,
    };
    let taken = if marker {
        let none = Default::default();
        layer
            .with_bucket_record(bucket, |r| {
                r.replication.as_ref().is_some_and(|c| c.rule_for(key, &none, true).is_some())
            })
            .unwrap_or(false)
    } else {
        object.is_some_and(|o| o.replication == Some(ReplicationStatus::Pending))
    };
    if !taken {
        return;
    }
    if !replicator.enqueue(bucket, key, version, marker).await {
        tracing::error!(bucket, key, "replication: version not queued (it stays PENDING)");
    }
}

/// Works the queue's records (see the module's documentation).
struct Worker {
    layer: Arc<ObjectLayer>,
    kms: Option<Arc<dyn Kms>>,
    metrics: Arc<Metrics>,
    rrs_parity: Option<usize>,
}

/// How one record ended when it did not need another attempt.
enum Outcome {
    /// Copied to the destination (its ARN), this many bytes.
    Copied(String, u64),
    /// Left FAILED on the source, for this reason.
    Failed(String, String),
    /// Nothing to do (the version is gone, or was replicated before).
    Nothing,
}

#[async_trait::async_trait]
impl Sink for Worker {
    /// Versions of different keys are copied side by side (each copy waits on its drives'
    /// syncs, which concurrent copies share); one key's, in the order they were queued.
    fn concurrency(&self) -> usize {
        REPLICATION_COPIES_MAX
    }

    fn order_key(&self, bytes: &[u8]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        if let Ok(r) = serde_json::from_slice::<Record>(bytes) {
            (r.bucket, r.key).hash(&mut h);
        }
        h.finish()
    }

    async fn send(&self, bytes: &[u8]) -> Result<(), String> {
        let Ok(record) = serde_json::from_slice::<Record>(bytes) else {
            tracing::error!("replication: an unreadable record skipped");
            return Ok(());
        };
        let outcome = if record.marker { self.marker(&record).await? } else { self.version(&record).await? };
        match outcome {
            Outcome::Copied(arn, bytes) => {
                let labels = TargetLabels { target: arn };
                self.metrics.replication_versions.get_or_create(&labels).inc();
                self.metrics.replication_bytes.get_or_create(&labels).inc_by(bytes);
            }
            Outcome::Failed(arn, reason) => {
                tracing::warn!(bucket = %record.bucket, key = %record.key, %reason, "replication failed");
                let labels = TargetLabels { target: arn };
                self.metrics.replication_failed_versions.get_or_create(&labels).inc();
                if !record.marker {
                    let failed = ReplicationStatus::Failed { reason };
                    let set = self.layer.set_replication_status(
                        &record.bucket,
                        &record.key,
                        record.version_id,
                        failed,
                    );
                    gone_is_done(set.await)?;
                }
            }
            Outcome::Nothing => {}
        }
        Ok(())
    }
}

/// `Ok` for a version that is gone (deleted since it was queued): nothing is left to do.
fn gone_is_done(r: Result<(), ObjectError>) -> Result<(), String> {
    match r {
        Ok(())
        | Err(ObjectError::BucketNotFound | ObjectError::ObjectNotFound | ObjectError::NoSuchVersion) => {
            Ok(())
        }
        Err(ObjectError::DeleteMarker { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

impl Worker {
    /// The rule that decides for `key`, and its destination bucket; `Err`: why there is none.
    fn rule(
        &self,
        bucket: &str,
        key: &str,
        tags: &std::collections::BTreeMap<String, String>,
        marker: bool,
    ) -> Result<Option<(ReplicationRule, String)>, String> {
        let config = match self.layer.with_bucket_record(bucket, |r| r.replication.clone()) {
            Ok(c) => c,
            Err(_) => return Ok(None),
        };
        let Some(config) = config else {
            return Err("the bucket's replication configuration was removed".into());
        };
        let Some(rule) = config.rule_for(key, tags, marker) else {
            return Err("no enabled rule of the bucket's replication configuration takes it any more".into());
        };
        let dest = rule.destination.bucket_arn.strip_prefix("arn:aws:s3:::").unwrap_or_default().to_owned();
        match self.layer.versioning(&dest) {
            Ok(Versioning::Enabled) => Ok(Some((rule.clone(), dest))),
            Ok(_) => Err(format!("the destination bucket {dest} no longer has versioning enabled")),
            Err(ObjectError::BucketNotFound) => Err(format!("the destination bucket {dest} does not exist")),
            Err(e) => Err(format!("the destination bucket {dest}: {e}")),
        }
    }

    async fn marker(&self, record: &Record) -> Result<Outcome, String> {
        let (bucket, key) = (&record.bucket, &record.key);
        let which = VersionRef::Id(record.version_id);
        let mod_time = match self.layer.open_object_version(bucket, key, which, false).await {
            Err(ObjectError::DeleteMarker { mod_time, .. }) => mod_time,
            // Not a marker (any more): nothing to replicate.
            Ok(_)
            | Err(ObjectError::BucketNotFound | ObjectError::ObjectNotFound | ObjectError::NoSuchVersion) => {
                return Ok(Outcome::Nothing)
            }
            Err(e) => return Err(e.to_string()),
        };
        let (rule, dest) = match self.rule(bucket, key, &Default::default(), true) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(Outcome::Nothing),
            Err(reason) => return Ok(Outcome::Failed(NO_DESTINATION.into(), reason)),
        };
        self.layer
            .import_delete_marker(&dest, key, record.version_id, mod_time)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Outcome::Copied(rule.destination.bucket_arn, 0))
    }

    async fn version(&self, record: &Record) -> Result<Outcome, String> {
        let (bucket, key) = (&record.bucket, &record.key);
        let which = VersionRef::Id(record.version_id);
        let open = match self.layer.open_object_version(bucket, key, which, true).await {
            Ok(open) => open,
            Err(
                ObjectError::BucketNotFound
                | ObjectError::ObjectNotFound
                | ObjectError::NoSuchVersion
                | ObjectError::DeleteMarker { .. },
            ) => return Ok(Outcome::Nothing),
            Err(e) => return Err(e.to_string()),
        };
        let info = open.info.clone();
        if info.replication != Some(ReplicationStatus::Pending) {
            return Ok(Outcome::Nothing);
        }
        let (rule, dest) = match self.rule(bucket, key, &info.tags, false) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(Outcome::Nothing),
            Err(reason) => return Ok(Outcome::Failed(NO_DESTINATION.into(), reason)),
        };
        let arn = rule.destination.bucket_arn.clone();
        let failed = |reason: &str| Ok(Outcome::Failed(arn.clone(), reason.to_owned()));
        let locked = info.retention.is_some() || info.legal_hold;
        if locked && self.layer.object_lock_config(&dest).map_err(|e| e.to_string())?.is_none() {
            return failed(
                "the version has object lock settings and the destination bucket has no object lock",
            );
        }
        // The copy's encryption: the same kind, under a key of its own.
        let (cipher, sse) = match info.sse.as_ref() {
            None => (None, None),
            Some(e) if e.kind == SseKind::C => {
                return failed(
                    "SSE-C versions are not replicated: the server does not keep the customer's key",
                )
            }
            Some(e) => {
                let asked = match e.kind {
                    SseKind::S3 => SseRequest::S3,
                    _ if rule.sse_kms_objects != Some(true) => return failed(
                        "SSE-KMS versions are replicated only by a rule with SseKmsEncryptedObjects enabled",
                    ),
                    kind => SseRequest::Kms {
                        key_id: rule.destination.replica_kms_key_id.clone().or_else(|| e.kms_key_id.clone()),
                        context: None,
                        dual: kind == SseKind::Dsse,
                    },
                };
                let cipher =
                    crate::sse::open_envelope(self.kms.as_ref(), e, None).await.map_err(|e| e.message)?;
                let (put, _) =
                    crate::sse::seal_new_with(self.kms.as_ref(), asked, true).await.map_err(|e| e.message)?;
                (Some(cipher), Some(put))
            }
        };
        let keeps_etag = !matches!(info.sse.as_ref().map(|e| e.kind), Some(SseKind::Kms | SseKind::Dsse));
        let imported = Imported {
            version_id: info.version_id,
            mod_time: info.mod_time,
            etag: keeps_etag.then(|| info.etag.clone()),
            replica: true,
        };
        let opts = PutOptions {
            headers: info.headers.clone(),
            user_metadata: info.user_metadata.clone(),
            tags: info.tags.clone(),
            retention: info.retention,
            legal_hold: info.legal_hold,
            sse,
            acl: if rule.destination.owner_is_destination { None } else { info.acl.clone() },
            parity_count: match rule.destination.storage_class.as_deref() {
                Some("REDUCED_REDUNDANCY") => self.rrs_parity,
                _ => None,
            },
            ..Default::default()
        };
        let size = info.size;
        let mut body = StreamBody(match cipher {
            Some(c) => open.stream_decrypted(c, 0, size),
            None => open.stream(0, size),
        });
        let written = if info.parts.len() > 1 {
            let sizes: Vec<u64> = info.parts.iter().map(|p| p.size).collect();
            self.layer.import_parts(&dest, key, imported, &sizes, &mut body, opts).await
        } else {
            self.layer.import_version(&dest, key, imported, &mut body, opts).await
        };
        written.map_err(|e| format!("writing the copy into {dest}: {e}"))?;
        let done =
            self.layer.set_replication_status(bucket, key, record.version_id, ReplicationStatus::Completed);
        gone_is_done(done.await)?;
        Ok(Outcome::Copied(arn, size))
    }
}
