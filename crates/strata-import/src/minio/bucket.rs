//! A bucket's settings as MinIO keeps them: `.minio.sys/buckets/<bucket>/.metadata.bin`, itself
//! an erasure-coded MinIO object (read through [`ObjectCopies`]).
//!
//! Byte layout: two little-endian `u16` (format 1, version 1), then a MessagePack map keyed by
//! field name: `Name`, `Created` (a time: extension type 5, 12 bytes, seconds as big-endian
//! `i64` then nanoseconds as big-endian `u32`), `LockEnabled`, and each configuration document
//! as bytes (`PolicyConfigJSON`, `VersioningConfigXML`, ...), empty when not set. Unknown fields
//! are skipped.

use rmpv::Value;
use serde::Serialize;

use super::format::{Sets, SYS_DIR};
use super::object::ObjectCopies;
use super::xlmeta::XlVersion;
use super::MinioError;

/// MinIO's time extension type in MessagePack.
const TIME_EXT: i8 = 5;

/// One bucket's settings, as the documents MinIO stored (empty: not set).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct BucketSettings {
    pub name: String,
    /// Nanoseconds since the Unix epoch (`None`: MinIO's zero time).
    pub created: Option<i64>,
    /// Object lock was enabled at creation (MinIO's older flag; newer ones say it in the XML).
    pub lock_enabled: bool,
    pub policy_json: String,
    pub notification_xml: String,
    pub lifecycle_xml: String,
    pub object_lock_xml: String,
    pub versioning_xml: String,
    pub encryption_xml: String,
    pub tagging_xml: String,
    pub quota_json: String,
    pub replication_xml: String,
    /// Replication targets are set (sealed under MinIO's KMS when it has one).
    pub has_targets: bool,
}

#[derive(serde::Deserialize)]
struct Versioning {
    #[serde(rename = "Status")]
    status: Option<String>,
}

#[derive(serde::Deserialize)]
struct ObjectLock {
    #[serde(rename = "ObjectLockEnabled")]
    enabled: Option<String>,
}

impl BucketSettings {
    /// Versioning as S3 names it (`Enabled`, `Suspended`), or `None` when never set. A bucket
    /// with object lock is versioned, whatever its versioning document says.
    pub fn versioning(&self) -> Option<String> {
        if self.object_lock() {
            return Some("Enabled".into());
        }
        let v: Versioning = quick_xml::de::from_str(&self.versioning_xml).ok()?;
        v.status.filter(|s| !s.is_empty())
    }

    pub fn object_lock(&self) -> bool {
        self.lock_enabled
            || quick_xml::de::from_str::<ObjectLock>(&self.object_lock_xml)
                .is_ok_and(|l| l.enabled.as_deref() == Some("Enabled"))
    }

    /// The names of the settings that are set, for a report.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.versioning() {
            out.push(format!("versioning {v}"));
        }
        if self.object_lock() {
            out.push("object lock".into());
        }
        for (doc, name) in [
            (&self.policy_json, "policy"),
            (&self.lifecycle_xml, "lifecycle"),
            (&self.tagging_xml, "tags"),
            (&self.encryption_xml, "default encryption"),
            (&self.notification_xml, "notifications"),
            (&self.quota_json, "quota"),
            (&self.replication_xml, "replication"),
        ] {
            if !doc.trim().is_empty() {
                out.push(name.to_owned());
            }
        }
        if self.has_targets {
            out.push("replication targets".into());
        }
        out
    }

    /// Parses the bytes of a `.metadata.bin`.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let (head, mut rest) = bytes.split_at_checked(4).ok_or("cut short in its header")?;
        let (format, version) =
            (u16::from_le_bytes([head[0], head[1]]), u16::from_le_bytes([head[2], head[3]]));
        if (format, version) != (1, 1) {
            return Err(format!("bucket metadata format {format}, version {version} (1, 1 is read)"));
        }
        let value = rmpv::decode::read_value(&mut rest).map_err(|e| e.to_string())?;
        let Value::Map(entries) = value else { return Err("not a map".into()) };
        let mut s = Self::default();
        for (k, v) in &entries {
            let Some(k) = k.as_str() else { continue };
            let text = |v: &Value| -> Result<String, String> {
                match v {
                    Value::Binary(b) => String::from_utf8(b.clone()).map_err(|_| format!("{k} is not UTF-8")),
                    Value::String(t) => {
                        t.as_str().map(str::to_owned).ok_or_else(|| format!("{k} is not UTF-8"))
                    }
                    Value::Nil => Ok(String::new()),
                    _ => Err(format!("{k} is not a document")),
                }
            };
            match k {
                "Name" => s.name = text(v)?,
                "Created" => s.created = time(v).map_err(|e| format!("Created: {e}"))?,
                "LockEnabled" => s.lock_enabled = v.as_bool().unwrap_or(false),
                "PolicyConfigJSON" => s.policy_json = text(v)?,
                "NotificationConfigXML" => s.notification_xml = text(v)?,
                "LifecycleConfigXML" => s.lifecycle_xml = text(v)?,
                "ObjectLockConfigXML" => s.object_lock_xml = text(v)?,
                "VersioningConfigXML" => s.versioning_xml = text(v)?,
                "EncryptionConfigXML" => s.encryption_xml = text(v)?,
                "TaggingConfigXML" => s.tagging_xml = text(v)?,
                "QuotaConfigJSON" => s.quota_json = text(v)?,
                "ReplicationConfigXML" => s.replication_xml = text(v)?,
                "BucketTargetsConfigJSON" => s.has_targets = matches!(v, Value::Binary(b) if !b.is_empty()),
                _ => {}
            }
        }
        Ok(s)
    }

    /// Reads `bucket`'s settings from the drives of the set holding them (`None`: MinIO
    /// stored none).
    pub fn read(sets: &Sets, bucket: &str) -> Result<Option<Self>, MinioError> {
        let key = format!("buckets/{bucket}/.metadata.bin");
        let drives = sets.of(&key);
        let copies = ObjectCopies::read(drives, SYS_DIR, &key);
        let newest = copies.agreed_versions().into_iter().find_map(|a| match a.version {
            XlVersion::Object(o) => Some(o),
            _ => None,
        });
        let Some(version) = newest else { return Ok(None) };
        let mut bytes = Vec::new();
        copies.read_version(&version, |b| {
            bytes.extend_from_slice(&b);
            Ok(())
        })?;
        let path = drives.first().map(|d| d.join(SYS_DIR).join(&key)).unwrap_or_default();
        Self::parse(&bytes).map(Some).map_err(|why| MinioError::malformed(&path, why))
    }
}

/// MinIO's time extension: `None` for Go's zero time (year 1).
fn time(v: &Value) -> Result<Option<i64>, String> {
    match v {
        Value::Ext(TIME_EXT, b) if b.len() == 12 => {
            let mut secs = [0u8; 8];
            secs.copy_from_slice(&b[..8]);
            let mut nanos = [0u8; 4];
            nanos.copy_from_slice(&b[8..]);
            let (secs, nanos) = (i64::from_be_bytes(secs), i64::from(u32::from_be_bytes(nanos)));
            if secs < 0 {
                return Ok(None);
            }
            Ok(secs.checked_mul(1_000_000_000).and_then(|n| n.checked_add(nanos)))
        }
        Value::Nil => Ok(None),
        _ => Err("not a time".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(entries: Vec<(&str, Value)>) -> Vec<u8> {
        let mut out = vec![1, 0, 1, 0];
        let map = Value::Map(entries.into_iter().map(|(k, v)| (Value::from(k), v)).collect());
        rmpv::encode::write_value(&mut out, &map).expect("encodes");
        out
    }

    #[test]
    fn metadata_is_read_by_field_name_and_fuzzed() {
        let mut created = 1_795_421_202i64.to_be_bytes().to_vec();
        created.extend_from_slice(&7u32.to_be_bytes());
        let bytes = encoded(vec![
            ("Name", Value::from("b")),
            ("Unknown", Value::from(3)),
            ("Created", Value::Ext(TIME_EXT, created)),
            ("LockEnabled", Value::from(false)),
            (
                "VersioningConfigXML",
                Value::Binary(
                    b"<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>".to_vec(),
                ),
            ),
            ("PolicyConfigJSON", Value::Binary(Vec::new())),
        ]);
        let s = BucketSettings::parse(&bytes).expect("parses");
        assert_eq!(s.name, "b");
        assert_eq!(s.created, Some(1_795_421_202_000_000_007));
        assert_eq!(s.versioning().as_deref(), Some("Suspended"));
        assert_eq!(s.summary(), vec!["versioning Suspended".to_owned()]);
        assert!(BucketSettings::parse(&bytes[..3]).is_err());
        assert!(BucketSettings::parse(&encoded(vec![("Created", Value::from("soon"))])).is_err());
        strata_types::fuzz::run("minio bucket metadata", &[&bytes], |b| {
            let _ = BucketSettings::parse(b);
        });
    }
}
