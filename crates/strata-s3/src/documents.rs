//! The bucket and object configuration documents as S3 takes them, for callers outside the S3
//! surface (`strata import`, which reads MinIO's copies of what clients put): each parsed and
//! checked exactly as its PUT would, refused with the same error (its code and message, as
//! text).

use std::collections::BTreeMap;

use strata_iam::{Policy, PolicyKind};
use strata_meta::{
    BucketEncryption, LifecycleConfig, NotificationRule, ObjectLockConfig, RetentionMode, Versioning,
};
use strata_types::BucketName;

use crate::error::S3Error;

/// An S3 error as one line: `Code: message`.
fn text(e: S3Error) -> String {
    format!("{}: {}", e.code.as_str(), e.message)
}

/// A `<VersioningConfiguration>` (`None`: it sets no status).
pub fn versioning(doc: &[u8]) -> Result<Option<Versioning>, String> {
    crate::versioning::parse_versioning(doc).map_err(text)
}

/// An `<ObjectLockConfiguration>`.
pub fn object_lock(doc: &[u8]) -> Result<ObjectLockConfig, String> {
    crate::object_lock::parse_lock_config(doc).map_err(text)
}

/// A `<Tagging>` document's tags.
pub fn tagging(doc: &[u8]) -> Result<BTreeMap<String, String>, String> {
    crate::tagging::parse_document(doc).map_err(text)
}

/// Tags in the `x-amz-tagging` header's form (`k=v&k2=v2`, URL-encoded).
pub fn tagging_header(value: &str) -> Result<BTreeMap<String, String>, String> {
    crate::tagging::from_header(value).map_err(text)
}

/// A `<LifecycleConfiguration>`.
pub fn lifecycle(doc: &[u8]) -> Result<LifecycleConfig, String> {
    crate::lifecycle::parse(doc).map_err(text)
}

/// A `<ServerSideEncryptionConfiguration>`.
pub fn encryption(doc: &[u8]) -> Result<BucketEncryption, String> {
    crate::encryption::parse(doc).map_err(text)
}

/// A `<NotificationConfiguration>`.
pub fn notifications(doc: &[u8]) -> Result<Vec<NotificationRule>, String> {
    crate::notification::parse(doc).map_err(text)
}

/// Checks a bucket policy for `bucket` as PutBucketPolicy does.
pub fn bucket_policy(doc: &[u8], bucket: &BucketName) -> Result<(), String> {
    Policy::parse(doc, PolicyKind::Bucket(bucket)).map(drop).map_err(|e| text(S3Error::from(e)))
}

/// An object lock mode (`GOVERNANCE`, `COMPLIANCE`) and retain-until date (ISO 8601) as the
/// `x-amz-object-lock-*` headers carry them: the mode and the date in nanoseconds.
pub fn retention(mode: &str, until: &str) -> Result<(RetentionMode, u64), String> {
    let mode = crate::object_lock::parse_mode(mode).map_err(text)?;
    Ok((mode, crate::object_lock::parse_date(until).map_err(text)?)).map_err(text)
}
