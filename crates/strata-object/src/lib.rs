//! The object layer: S3 semantics over pools of erasure sets.
//!
//! [`ObjectLayer`] owns the pools → sets → drives tree built at start-up. It places each object in
//! one set by a keyed hash of `bucket/key`, and every operation on that object runs against that
//! set's drives through the [`Drive`](strata_drive::Drive) trait, never knowing whether a drive is
//! local or remote.
//!
//! Data path:
//! - PUT ([`put`]) cuts the body into 1 MiB blocks, erasure-codes each block on the blocking pool
//!   (MD5 for the ETag runs in the same pass), and writes bitrot-framed shards to every drive in
//!   parallel, with at most two blocks in flight. Small objects go inline into the metadata records.
//!   A PUT succeeds only when a write quorum of drives holds shards and metadata durably.
//! - GET ([`get`]) reads the records of the set, takes the newest version a read quorum agrees on,
//!   reads data shards (verifying every frame), falls back to parity only for missing or bad
//!   shards, and streams the requested range.
//! - LIST ([`list`]) merges one sorted stream per drive, keeping entries a read quorum holds;
//!   ListObjectVersions ([`versions`]) merges every version the same way.
//!
//! Versioning: a bucket's [`Versioning`] state decides whether a write gets a new version id
//! (UUIDv7) or replaces the `null` version, and whether a delete removes the `null` version or
//! adds a delete marker. Each drive keeps an object's current version apart from its older ones
//! (see `strata_drive`), so reads and listings of current objects cost the same however many
//! versions a key has.
//!
//! Every drive of a set is wrapped in a time-out ([`LayerOptions::drive_op_timeout`]): a drive
//! that stops answering counts as failed for the request instead of holding it.
//!
//! Full heal scans also count each bucket's objects and bytes as they list them: the
//! data usage ([`usage`]) the metrics report.
//!
//! Invariants: a version is visible only once committed on a write quorum; per-object striped
//! locks serialise commits and metadata reads of one key, so drives never disagree on order.

pub mod checksum;
mod drain;
mod error;
mod get;
mod heal;
mod healer;
mod import;
mod layer;
pub mod lifecycle;
mod lifecycle_pass;
mod list;
mod lock;
mod multipart;
mod pools;
mod put;
mod quorum;
mod rebalance;
mod retention;
mod set;
pub mod sim;
mod sse;
mod tagging;
mod timed;
pub mod usage;
mod versions;

pub use drain::{DrainState, DrainStatus, PoolView};
pub use error::{BodyError, ObjectError};
pub use get::{ObjectStream, OpenObject};
pub use heal::{HealResult, StreamBody};
pub use healer::{
    DriveHealed, HealPriority, HealScope, HealStatus, Healer, QueuedScan, ScanConfig, ScanProgress,
    ScanStart, SetProgress, UnavailableDrive,
};
pub use import::Imported;
pub use layer::{Cluster, DriveSlot, LayerOptions, ObjectLayer, Peers, SetView, SharedState};
pub use lifecycle_pass::{
    Lifecycle, LifecycleEvent, LifecycleEvents, LifecycleSettings, LifecycleState, LifecycleTotals,
    PassPosition,
};
pub use list::{ListPage, ListRequest};
pub use lock::{Lease, LockGuard, LockTable, Locker};
pub use multipart::{CompleteOptions, CompletePart, UploadsPage};
pub use put::{BodyReader, BytesBody, PutOptions, WriteCondition, SEALED_BLOCK_SIZE};
pub use rebalance::{PoolShare, RebalanceState, RebalanceStatus};
pub use sse::{open_part_checksums, SsePut};
pub use strata_drive::{upload_position, DiskInfo};
pub use strata_meta::{
    Acl, BucketRecord, CorsRule, DefaultRetention, Grant, Grantee, Group, LifecycleConfig,
    LifecycleExpiration, LifecycleFilter, LifecycleRule, NoncurrentExpiration, ObjectLockConfig,
    ObjectOwnership, Owner, PartInfo, Permission, PublicAccessBlock, Retention, RetentionMode, UploadRecord,
    Versioning,
};
pub use usage::{BucketUsage, DataUsage};
pub use versions::{DeleteIf, DeleteOutcome, VersionEntry, VersionsPage, VersionsRequest};

/// Which version of an object a request names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VersionRef {
    /// The current version (no `versionId`).
    #[default]
    Current,
    /// The version with this id; `None` is the `null` version.
    Id(Option<uuid::Uuid>),
}
pub use strata_meta::{BucketEncryption, SseEnvelope, SseKind};

use std::collections::BTreeMap;

/// What S3 reports about one object version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub bucket: String,
    pub key: String,
    pub size: u64,
    /// Without quotes.
    pub etag: String,
    /// Nanoseconds since the Unix epoch.
    pub mod_time: u64,
    pub headers: BTreeMap<String, String>,
    pub user_metadata: BTreeMap<String, String>,
    pub checksums: BTreeMap<String, String>,
    /// The parts of a multipart object, in order (empty otherwise). Sizes are plain sizes.
    pub parts: Vec<PartInfo>,
    pub tags: BTreeMap<String, String>,
    /// `None`: the `null` version.
    pub version_id: Option<uuid::Uuid>,
    pub delete_marker: bool,
    /// Object lock: the version's retention and legal hold.
    pub retention: Option<strata_meta::Retention>,
    pub legal_hold: bool,
    /// How the object is encrypted at rest, if it is (`size` and part sizes are then still the
    /// plaintext's).
    pub sse: Option<strata_meta::SseEnvelope>,
    /// Owner and ACL (`None`: the bucket owner's, private).
    pub acl: Option<strata_meta::Acl>,
    /// Where replication stands for the version (`None`: no rule took it).
    pub replication: Option<strata_meta::ReplicationStatus>,
}

impl ObjectInfo {
    fn from_version(bucket: &str, key: &str, v: &strata_meta::ObjectVersion) -> Self {
        Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            size: v.plain_size(),
            etag: v.etag.clone(),
            mod_time: v.mod_time,
            headers: v.headers.clone(),
            user_metadata: v.user_metadata.clone(),
            checksums: v.checksums.clone(),
            parts: match &v.sse {
                None => v.parts.clone(),
                Some(_) => v
                    .parts
                    .iter()
                    .map(|p| {
                        let mut p = p.clone();
                        p.size = strata_crypto::package::plain_size(p.size).unwrap_or(0);
                        p
                    })
                    .collect(),
            },
            tags: v.tags.clone(),
            version_id: v.version_id,
            delete_marker: v.delete_marker,
            retention: v.retention,
            legal_hold: v.legal_hold,
            sse: v.sse.as_deref().cloned(),
            acl: v.acl.clone(),
            replication: v.replication.clone(),
        }
    }
}

/// A bucket as ListBuckets shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    pub name: String,
    /// Nanoseconds since the Unix epoch.
    pub created: u64,
    pub tags: BTreeMap<String, String>,
}
