//! Object and bucket metadata records, and their versioned binary codec.
//!
//! Every drive of an object's erasure set keeps one [`ObjectRecord`] for the object, holding all
//! of its versions (newest first). The copies differ only in [`ErasureInfo::shard_index`]: which
//! shard that drive holds. A record is stored as one version byte ([`FORMAT_VERSION`]) followed by
//! MessagePack with named fields, so fields can be added without breaking old records.
//!
//! Invariants: `versions` is never empty in a stored record; `erasure.data_count >= 1`;
//! an inline version's shard bytes live in the drive's inline table under its `data_id`.
//! Decoding checks these and every other fact later code relies on (see [`ErasureInfo::check`],
//! [`ObjectVersion::check`], [`PartInfo::check`]): a record read from a drive is outside input,
//! and an impossible one is a [`DecodeError::Invalid`] (healed like any corrupt copy), never a
//! panic in a reader.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strata_types::limits::{BLOCK_SIZE_MAX, PART_NUMBER_MAX, PUT_OBJECT_SIZE_MAX, SET_DRIVE_COUNT_MAX};
use uuid::Uuid;

mod replication;
pub use replication::{
    ReplicationConfig, ReplicationDestination, ReplicationFilter, ReplicationRule, ReplicationStatus,
};

/// First byte of every encoded record.
pub const FORMAT_VERSION: u8 = 1;

/// A record could not be decoded: the drive's copy is corrupt (heal it) or from a newer release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("record is empty")]
    Empty,
    #[error("record format version {0} is not known")]
    UnknownVersion(u8),
    #[error("record does not decode: {0}")]
    Malformed(String),
    /// The record decodes but says something impossible (a block size of 0, a shard index past
    /// the shard count, parts that do not add up to the size, ...).
    #[error("record is invalid: {0}")]
    Invalid(String),
}

fn invalid(what: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(what.into())
}

/// Largest object a record may describe: 10,000 parts of at most 5 GiB each.
const OBJECT_SIZE_MAX: u64 = PART_NUMBER_MAX as u64 * PUT_OBJECT_SIZE_MAX;

/// How one object version is spread over its set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasureInfo {
    pub data_count: u8,
    pub parity_count: u8,
    pub block_size: u32,
    /// Which shard (0-based; data shards first) this drive holds.
    pub shard_index: u8,
    /// `distribution[drive_index]` = shard index held by the set's drive at that position.
    pub distribution: Vec<u8>,
    /// The key the version's shard frames are hashed under: Strata's, or MinIO's for shard
    /// files taken over from a MinIO deployment as they were (absent: Strata's).
    #[serde(default, skip_serializing_if = "Bitrot::is_strata")]
    pub bitrot: Bitrot,
}

/// Whose HighwayHash key a version's shard frames carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bitrot {
    #[default]
    Strata,
    Minio,
}

impl Bitrot {
    pub fn is_strata(&self) -> bool {
        *self == Bitrot::Strata
    }

    pub fn key(self) -> strata_erasure::bitrot::Key {
        match self {
            Bitrot::Strata => strata_erasure::bitrot::Key::STRATA,
            Bitrot::Minio => strata_erasure::bitrot::Key::MINIO,
        }
    }
}

impl ErasureInfo {
    /// Checks the split and placement: 1 or more data shards, no more parity than data, at most
    /// a set's worth of shards, a block size in `1..=BLOCK_SIZE_MAX`, this drive's shard index
    /// and the distribution within the shard count, and the distribution a permutation.
    pub fn check(&self) -> Result<(), DecodeError> {
        let (data, parity) = (usize::from(self.data_count), usize::from(self.parity_count));
        let shards = data + parity;
        if data == 0 || parity > data || shards > SET_DRIVE_COUNT_MAX {
            return Err(invalid(format!("erasure split {data}+{parity}")));
        }
        if self.block_size == 0 || self.block_size as usize > BLOCK_SIZE_MAX {
            return Err(invalid(format!("block size {}", self.block_size)));
        }
        if usize::from(self.shard_index) >= shards {
            return Err(invalid(format!("shard index {} of {shards}", self.shard_index)));
        }
        let mut seen = [false; SET_DRIVE_COUNT_MAX];
        if self.distribution.len() != shards {
            return Err(invalid(format!("distribution of {} for {shards} shards", self.distribution.len())));
        }
        for &d in &self.distribution {
            match seen.get_mut(usize::from(d)) {
                Some(slot) if usize::from(d) < shards && !*slot => *slot = true,
                _ => return Err(invalid(format!("distribution {:?}", self.distribution))),
            }
        }
        Ok(())
    }
}

/// Where a version's shard bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataLocation {
    /// In the drive's inline table, keyed by this id (objects up to the inline limit).
    Inline(Uuid),
    /// In a shard file named by this id.
    File(Uuid),
    /// In one shard file per part (`parts[*].data_id`); the id is the upload's.
    Multipart(Uuid),
}

impl DataLocation {
    pub fn data_id(&self) -> Uuid {
        match self {
            DataLocation::Inline(id) | DataLocation::File(id) | DataLocation::Multipart(id) => *id,
        }
    }
}

/// One part of a multipart object (or of an upload in progress), in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartInfo {
    pub number: u32,
    pub size: u64,
    /// Hex MD5 of the part, without quotes.
    pub etag: String,
    /// The part's shard file on every drive of the set.
    #[serde(default)]
    pub data_id: Uuid,
    /// Nanoseconds since the Unix epoch (when the part was uploaded).
    #[serde(default)]
    pub mod_time: u64,
    /// Verified S3 checksums of the part (algorithm name → base64); empty when they are sealed.
    #[serde(default)]
    pub checksums: BTreeMap<String, String>,
    /// A part of an SSE-C upload: its checksums (the plaintext's) sealed under the upload's data
    /// key, shown only to a caller with the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_checksums: Option<Vec<u8>>,
}

/// A multipart upload in progress, as every drive of its set records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub upload_id: Uuid,
    pub key: String,
    /// Nanoseconds since the Unix epoch.
    pub initiated: u64,
    pub headers: BTreeMap<String, String>,
    pub user_metadata: BTreeMap<String, String>,
    /// Split and placement every part uses (`shard_index` is this drive's).
    pub erasure: ErasureInfo,
    /// Tags the completed object gets.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// The S3 checksum every part carries (`CRC32`, ...), if the upload chose one.
    #[serde(default)]
    pub checksum_algorithm: Option<String>,
    /// `COMPOSITE` or `FULL_OBJECT`, with `checksum_algorithm`.
    #[serde(default)]
    pub checksum_type: Option<String>,
    /// Object lock retention the completed object gets.
    #[serde(default)]
    pub retention: Option<Retention>,
    /// Object lock legal hold the completed object gets.
    #[serde(default)]
    pub legal_hold: bool,
    /// The encryption every part is sealed with (each part its own segment).
    #[serde(default)]
    pub sse: Option<Box<SseEnvelope>>,
    /// Owner and ACL the completed object gets (`None`: the bucket owner's, private).
    #[serde(default)]
    pub acl: Option<Acl>,
}

impl UploadRecord {
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// Decodes and checks the erasure split (see [`ErasureInfo::check`]).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let upload: Self = decode(bytes)?;
        upload.erasure.check()?;
        Ok(upload)
    }
}

impl PartInfo {
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// Decodes and checks the part (see [`PartInfo::check`]).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let part: Self = decode(bytes)?;
        part.check()?;
        Ok(part)
    }

    /// A part number in `1..=PART_NUMBER_MAX` and a size a single upload can have.
    pub fn check(&self) -> Result<(), DecodeError> {
        if self.number == 0 || self.number > PART_NUMBER_MAX {
            return Err(invalid(format!("part number {}", self.number)));
        }
        if self.size > PUT_OBJECT_SIZE_MAX {
            return Err(invalid(format!("part {} of {} bytes", self.number, self.size)));
        }
        Ok(())
    }
}

/// How an encrypted version's data key is held (see `docs/formats.md`, "Encrypted objects").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SseKind {
    /// SSE-S3: sealed by the KMS's default key.
    S3,
    /// SSE-KMS: sealed by the KMS key the client named.
    Kms,
    /// SSE-C: sealed by the client's own key, of which only a salted MAC is kept.
    C,
    /// DSSE-KMS (`aws:kms:dsse`): two layers, each under its own data key from the KMS key the
    /// client named (the second key in `sealed_outer_key`).
    Dsse,
}

/// The encryption of a version (or of an upload, whose parts all use it). Present only on
/// encrypted versions: records written before encryption existed read as unencrypted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SseEnvelope {
    pub kind: SseKind,
    /// The random id every package of the object is bound to.
    pub object_id: Uuid,
    /// The data key, sealed: the KMS's ciphertext (S3, Kms), or sealed by the client's key (C).
    pub sealed_key: Vec<u8>,
    /// The KMS key that sealed it (S3, Kms).
    #[serde(default)]
    pub kms_key_id: Option<String>,
    /// The SSE-KMS encryption context in clear (canonical JSON), bound to the sealed key: only
    /// in records written before contexts were sealed; newer ones have `sealed_context`.
    #[serde(default)]
    pub context: Option<String>,
    /// The SSE-KMS encryption context (canonical JSON) sealed under the object's data key: the
    /// client's data, unreadable without the KMS, as the object's bytes are.
    #[serde(default)]
    pub sealed_context: Option<Vec<u8>>,
    /// Dsse: the second layer's data key, sealed by the same KMS key (context: the object id and
    /// "outer").
    #[serde(default)]
    pub sealed_outer_key: Option<Vec<u8>>,
    /// SSE-C: salt and HMAC of the client's key, to recognise it without storing it.
    #[serde(default)]
    pub key_mac: Option<Vec<u8>>,
    /// SSE-C: the object's checksums (the plaintext's) sealed under its data key; the version's
    /// `checksums` are then empty. Shown only to a caller with the key, as AWS does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_checksums: Option<Vec<u8>>,
}

/// One version of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectVersion {
    /// `None` is the S3 "null" version (unversioned buckets).
    pub version_id: Option<Uuid>,
    /// Nanoseconds since the Unix epoch.
    pub mod_time: u64,
    pub delete_marker: bool,
    pub size: u64,
    /// Lowercase hex MD5 of the bytes (or the multipart form `hex-N`), without quotes.
    pub etag: String,
    /// Standard headers kept with the object: content-type, cache-control, content-disposition,
    /// content-encoding, content-language, expires.
    pub headers: BTreeMap<String, String>,
    /// `x-amz-meta-*` entries, names lowercased without the prefix.
    pub user_metadata: BTreeMap<String, String>,
    /// S3 additional checksums: algorithm name (`CRC32`, ...) → base64 value.
    pub checksums: BTreeMap<String, String>,
    pub erasure: ErasureInfo,
    pub data: DataLocation,
    pub parts: Vec<PartInfo>,
    /// Object tags (key → value), at most 10.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Object lock retention: the version cannot be removed before `until`.
    #[serde(default)]
    pub retention: Option<Retention>,
    /// Object lock legal hold: the version cannot be removed while it is on.
    #[serde(default)]
    pub legal_hold: bool,
    /// Encryption at rest: `size`, the part sizes and the shard bytes are then the sealed
    /// packages' (see `strata_crypto::package`); the plain sizes follow from them.
    #[serde(default)]
    pub sse: Option<Box<SseEnvelope>>,
    /// The version's owner and ACL (`None`: owned by the bucket owner, private; records
    /// written before ACLs existed read so).
    #[serde(default)]
    pub acl: Option<Acl>,
    /// Where replication stands for this version (`None`: no rule took it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationStatus>,
}

/// An object lock retention period of one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub mode: RetentionMode,
    /// Nanoseconds since the Unix epoch.
    pub until: u64,
}

/// How strictly a retention period holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetentionMode {
    /// Callers allowed `s3:BypassGovernanceRetention` may shorten or remove it (with
    /// `x-amz-bypass-governance-retention: true`).
    Governance,
    /// Nobody may shorten or remove it, the root user included.
    Compliance,
}

impl RetentionMode {
    /// The S3 name (`GOVERNANCE`, `COMPLIANCE`).
    pub fn name(self) -> &'static str {
        match self {
            RetentionMode::Governance => "GOVERNANCE",
            RetentionMode::Compliance => "COMPLIANCE",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "GOVERNANCE" => Some(RetentionMode::Governance),
            "COMPLIANCE" => Some(RetentionMode::Compliance),
            _ => None,
        }
    }
}

impl ObjectVersion {
    /// A delete marker: no data, no metadata; `data_id` only keeps every version's data id
    /// distinct (the same on every drive of the set, as its `erasure` but for `shard_index`).
    pub fn delete_marker(
        version_id: Option<Uuid>,
        mod_time: u64,
        erasure: ErasureInfo,
        data_id: Uuid,
    ) -> Self {
        ObjectVersion {
            version_id,
            mod_time,
            delete_marker: true,
            size: 0,
            etag: String::new(),
            headers: BTreeMap::new(),
            user_metadata: BTreeMap::new(),
            checksums: BTreeMap::new(),
            erasure,
            data: DataLocation::Inline(data_id),
            parts: vec![],
            tags: BTreeMap::new(),
            retention: None,
            legal_hold: false,
            sse: None,
            acl: None,
            replication: None,
        }
    }

    /// Whether object lock keeps this version at `now` (ns): a legal hold, or a retention
    /// period not yet over.
    pub fn locked_at(&self, now: u64) -> Option<LockedBy> {
        if self.legal_hold {
            return Some(LockedBy::LegalHold);
        }
        match self.retention {
            Some(r) if r.until > now => Some(LockedBy::Retention(r.mode)),
            _ => None,
        }
    }
}

/// What keeps a version from being removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockedBy {
    LegalHold,
    Retention(RetentionMode),
}

/// The order of an object's versions, and how a new one is stamped: the one place that says
/// which version is newer. The drive index, the object layer's quorum, listings, heal and
/// lifecycle all follow [`ObjectVersion::order_key`].
///
/// A version's stamp (`mod_time`) is not trusted as a wall-clock reading: nodes' clocks differ,
/// and a write coordinated by a node whose clock is behind must still sort after the write it
/// follows. So a new version is stamped under its object's lock with [`next_stamp`]: later
/// than the clock's now and than every version the drives hold (a hybrid logical clock). The
/// stamp stays close to real time (it only runs ahead by the skew of the fastest clock that
/// wrote the object), so it still serves as `Last-Modified` and for lifecycle ages.
impl ObjectVersion {
    /// Where this version sorts among its object's versions, oldest first: its stamp, then its
    /// version id (the `null` version lowest), then its data id (two writes with equal stamps
    /// and ids are still ordered, the same way everywhere).
    pub fn order_key(&self) -> (u64, [u8; 16], [u8; 16]) {
        (self.mod_time, self.version_id.map_or([0; 16], |id| *id.as_bytes()), *self.data.data_id().as_bytes())
    }
}

/// The stamp of a version written now (`now`, the coordinating node's clock) after `newest`,
/// the highest stamp the object's drives hold: later than both.
pub fn next_stamp(now: u64, newest: Option<u64>) -> u64 {
    newest.map_or(now, |n| now.max(n.saturating_add(1)))
}

impl ObjectVersion {
    /// The size of the object's plaintext: `size` unless encrypted.
    pub fn plain_size(&self) -> u64 {
        match (&self.sse, self.parts.is_empty()) {
            (None, _) => self.size,
            (Some(_), true) => strata_crypto::package::plain_size(self.size).unwrap_or(0),
            (Some(_), false) => {
                self.parts.iter().map(|p| strata_crypto::package::plain_size(p.size).unwrap_or(0)).sum()
            }
        }
    }

    /// Checks what readers rely on: a valid erasure split, a size within limits, an inline
    /// version within one block, a file version without parts, and a multipart version whose
    /// parts are valid, in ascending order, and add up to its size.
    pub fn check(&self) -> Result<(), DecodeError> {
        self.erasure.check()?;
        if self.sse.is_some() {
            let sealed = |size: u64| strata_crypto::package::plain_size(size).is_some();
            let whole = self.parts.is_empty() && !self.delete_marker;
            if (whole && !sealed(self.size)) || self.parts.iter().any(|p| !sealed(p.size)) {
                return Err(invalid(format!("encrypted version of {} bytes", self.size)));
            }
        }
        if self.size > OBJECT_SIZE_MAX {
            return Err(invalid(format!("size {}", self.size)));
        }
        match self.data {
            DataLocation::Inline(_) if self.size > u64::from(self.erasure.block_size) => {
                Err(invalid(format!("inline version of {} bytes", self.size)))
            }
            DataLocation::Inline(_) | DataLocation::File(_) if !self.parts.is_empty() => {
                Err(invalid("parts on a version that is not multipart"))
            }
            DataLocation::Multipart(_) => {
                let mut total = 0u64;
                for (i, part) in self.parts.iter().enumerate() {
                    part.check()?;
                    if i > 0 && part.number <= self.parts[i - 1].number {
                        return Err(invalid("parts out of order"));
                    }
                    total = total.saturating_add(part.size);
                }
                if total != self.size {
                    return Err(invalid(format!("parts add up to {total}, not to the size {}", self.size)));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Versions of one object on one drive, newest first. A drive's index keeps the current version
/// alone in the object's record (so listings and GETs of the current version never read older
/// versions) and each older version in a row of its own; a record read from a drive holds the
/// version asked for. Records of earlier releases (every version in one record) still decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRecord {
    pub versions: Vec<ObjectVersion>,
}

impl ObjectRecord {
    /// The newest version, if any.
    pub fn latest(&self) -> Option<&ObjectVersion> {
        self.versions.first()
    }

    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// Decodes and checks every version (see [`ObjectVersion::check`]); a stored record always
    /// has one.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let record: Self = decode(bytes)?;
        if record.versions.is_empty() {
            return Err(invalid("a record without versions"));
        }
        for v in &record.versions {
            v.check()?;
        }
        Ok(record)
    }
}

/// A bucket, as every drive records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketRecord {
    /// Nanoseconds since the Unix epoch.
    pub created: u64,
    /// Bucket tags (key → value), at most 50.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// CORS rules, in the order they are matched.
    #[serde(default)]
    pub cors: Vec<CorsRule>,
    /// The bucket's public access block, if one was put.
    #[serde(default)]
    pub public_access_block: Option<PublicAccessBlock>,
    /// The bucket policy document (JSON, as put; checked when put).
    #[serde(default)]
    pub policy: Option<String>,
    /// S3 versioning: never set (every write replaces the `null` version), enabled, or suspended.
    #[serde(default)]
    pub versioning: Versioning,
    /// Object lock, when the bucket has it (then versioning stays enabled).
    #[serde(default)]
    pub object_lock: Option<ObjectLockConfig>,
    /// Event notification configurations, in the order they were put.
    #[serde(default)]
    pub notifications: Vec<NotificationRule>,
    /// Default encryption of new objects sent without encryption headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BucketEncryption>,
    /// The bucket's owner and ACL (`None`: owned by the root user, private; records written
    /// before owners existed read so).
    #[serde(default)]
    pub acl: Option<Acl>,
    /// The bucket's ownership controls (absent in older records: `BucketOwnerEnforced`, which
    /// is what every bucket had then).
    #[serde(default)]
    pub object_ownership: ObjectOwnership,
    /// The bucket's lifecycle configuration (PutBucketLifecycleConfiguration), if one was put.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<LifecycleConfig>,
    /// The bucket's replication configuration (PutBucketReplication), if one was put.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationConfig>,
}

/// A bucket's lifecycle configuration: rules in the order they were put (validated when put).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleConfig {
    pub rules: Vec<LifecycleRule>,
}

/// One lifecycle rule: which objects (the filter) and what happens to them (the actions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleRule {
    /// Unique within the configuration, at most 255 characters.
    pub id: String,
    /// `Status` `Enabled`; a disabled rule is kept but never applied.
    pub enabled: bool,
    /// Put with the legacy rule-level `Prefix` instead of a `Filter` (printed back so).
    #[serde(default)]
    pub legacy_prefix: bool,
    #[serde(default)]
    pub filter: LifecycleFilter,
    #[serde(default)]
    pub expiration: Option<LifecycleExpiration>,
    #[serde(default)]
    pub noncurrent_expiration: Option<NoncurrentExpiration>,
    /// `AbortIncompleteMultipartUpload`: days after initiation.
    #[serde(default)]
    pub abort_upload_days: Option<u32>,
}

/// Which objects a rule applies to; every condition given must hold (an empty filter matches
/// every object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleFilter {
    #[serde(default)]
    pub prefix: String,
    /// Tags the object must carry, (key, value), keys unique.
    #[serde(default)]
    pub tags: Vec<(String, String)>,
    /// Bytes; the object must be larger.
    #[serde(default)]
    pub size_greater_than: Option<u64>,
    /// Bytes; the object must be smaller.
    #[serde(default)]
    pub size_less_than: Option<u64>,
}

/// The `Expiration` action of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LifecycleExpiration {
    /// Days after the object's creation (rounded up to the next midnight UTC).
    Days(u32),
    /// A date: Unix seconds of a midnight UTC.
    Date(u64),
    /// Remove a delete marker that is the only version left of its key.
    ExpiredObjectDeleteMarker,
}

/// The `NoncurrentVersionExpiration` action of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoncurrentExpiration {
    /// Days after the version became noncurrent (its successor's creation).
    pub days: u32,
    /// The newest this many noncurrent versions are kept however old.
    #[serde(default)]
    pub newer_versions: Option<u32>,
}

/// The three kinds of entries of S3's NotificationConfiguration; they differ only in the
/// element names (`Queue`, `Topic`, `CloudFunction`) the target ARN is given under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NotificationKind {
    Queue,
    Topic,
    CloudFunction,
}

/// One notification configuration of a bucket: which events, of which keys, go to which target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRule {
    pub id: String,
    pub kind: NotificationKind,
    /// The target's ARN, as given (`arn:minio:sqs::ID:webhook`).
    pub target_arn: String,
    /// Event names or patterns (`s3:ObjectCreated:*`), validated when put.
    pub events: Vec<String>,
    /// Key filters; empty matches every key.
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub suffix: String,
}

/// S3 object ownership: who owns new objects, and whether ACLs count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectOwnership {
    /// ACLs are disabled; the bucket owner owns every object.
    #[default]
    BucketOwnerEnforced,
    /// The writer owns a new object, unless it is written with `bucket-owner-full-control`.
    BucketOwnerPreferred,
    /// The writer owns a new object.
    ObjectWriter,
    /// No ownership controls (deleted, or never set): behaves as `ObjectWriter`, and
    /// GetBucketOwnershipControls finds none.
    NotSet,
}

impl ObjectOwnership {
    /// Do ACLs grant access in this bucket?
    pub fn acls_enabled(self) -> bool {
        self != ObjectOwnership::BucketOwnerEnforced
    }
}

/// An owner (or grantee): canonical user id and display name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub id: String,
    pub display_name: String,
}

/// The predefined groups an ACL can grant to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Group {
    /// Everyone, signed or not.
    AllUsers,
    /// Every signed request.
    AuthenticatedUsers,
    /// The log delivery group (grants nothing in Strata, which writes no access logs).
    LogDelivery,
}

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grantee {
    User(Owner),
    Group(Group),
}

/// An ACL permission, as S3 names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Permission {
    FullControl,
    Read,
    Write,
    ReadAcp,
    WriteAcp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub grantee: Grantee,
    pub permission: Permission,
}

/// A resource's owner and access control list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    pub owner: Owner,
    pub grants: Vec<Grant>,
}

/// A bucket's object lock configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLockConfig {
    /// The retention new versions get when their write names none.
    pub default_retention: Option<DefaultRetention>,
}

/// A bucket's default retention: a mode and a period in days or years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultRetention {
    pub mode: RetentionMode,
    pub days: Option<u32>,
    pub years: Option<u32>,
}

impl DefaultRetention {
    /// The retention of a version written at `now` (ns).
    pub fn from(&self, now: u64) -> Retention {
        const DAY: u64 = 86_400 * 1_000_000_000;
        let days = u64::from(self.days.unwrap_or(0)) + 365 * u64::from(self.years.unwrap_or(0));
        Retention { mode: self.mode, until: now.saturating_add(days.saturating_mul(DAY)) }
    }
}

/// A bucket's versioning state. Once enabled, a bucket can be suspended but never unversioned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Versioning {
    /// Never enabled: writes replace the `null` version, deletes remove it.
    #[default]
    Unversioned,
    /// Every write adds a version with a new id; a delete without a version id adds a delete
    /// marker.
    Enabled,
    /// Writes replace the `null` version (older versions stay); a delete without a version id
    /// replaces the `null` version with a `null` delete marker.
    Suspended,
}

impl Versioning {
    /// Whether new writes get version ids.
    pub fn enabled(self) -> bool {
        self == Versioning::Enabled
    }
}

/// A bucket's default encryption (`PutBucketEncryption`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketEncryption {
    /// `AES256`, `aws:kms` or `aws:kms:dsse`.
    pub algorithm: String,
    /// With `aws:kms` and `aws:kms:dsse`: the key (default: the KMS's default key).
    #[serde(default)]
    pub kms_key_id: Option<String>,
    #[serde(default)]
    pub bucket_key_enabled: bool,
}

/// S3's PublicAccessBlockConfiguration: four switches, each false unless set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicAccessBlock {
    pub block_public_acls: bool,
    pub ignore_public_acls: bool,
    pub block_public_policy: bool,
    pub restrict_public_buckets: bool,
}

/// One CORS rule of a bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorsRule {
    pub id: Option<String>,
    /// Origins; one `*` wildcard each at most.
    pub allowed_origins: Vec<String>,
    /// GET, PUT, POST, DELETE, HEAD.
    pub allowed_methods: Vec<String>,
    /// Request headers a preflight may ask for; one `*` wildcard each at most.
    pub allowed_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    pub max_age_secs: Option<u32>,
}

impl BucketRecord {
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode(bytes)
    }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    // Serialising plain structs of strings, numbers and maps into a Vec cannot fail.
    rmp_serde::encode::write_named(&mut out, value).expect("record serialises");
    out
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, DecodeError> {
    match bytes.split_first() {
        None => Err(DecodeError::Empty),
        Some((&FORMAT_VERSION, rest)) => {
            rmp_serde::from_slice(rest).map_err(|e| DecodeError::Malformed(e.to_string()))
        }
        Some((v, _)) => Err(DecodeError::UnknownVersion(*v)),
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
