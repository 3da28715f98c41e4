//! A bucket's replication configuration as PutBucketReplication puts it (validated by the S3
//! layer when put), kept in the bucket record.

use serde::{Deserialize, Serialize};

/// The rules, in the order they were put, and the IAM role the document named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationConfig {
    /// Kept and shown as put; this server replicates as itself, not as a role.
    #[serde(default)]
    pub role: String,
    pub rules: Vec<ReplicationRule>,
}

/// One rule: which versions (its filter), where to (its destination), and what else goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationRule {
    /// Unique within the configuration, at most 255 characters.
    pub id: String,
    pub enabled: bool,
    /// Of the rules matching a version, the one with the highest priority decides (`None`: a
    /// V1 rule, which has none).
    #[serde(default)]
    pub priority: Option<u32>,
    /// A V1 rule: `Prefix` directly under `Rule` (AWS's first schema, with no `Filter`).
    #[serde(default)]
    pub legacy_prefix: bool,
    #[serde(default)]
    pub filter: ReplicationFilter,
    pub destination: ReplicationDestination,
    /// Delete markers are replicated (V1 rules always replicate them).
    #[serde(default)]
    pub delete_markers: bool,
    /// Changes to replicas' metadata (tags, retention) go back to their source.
    #[serde(default)]
    pub replica_modifications: bool,
    /// Versions written before the rule was put are replicated too.
    #[serde(default)]
    pub existing_objects: bool,
    /// `SseKmsEncryptedObjects` (`None`: not given).
    #[serde(default)]
    pub sse_kms_objects: Option<bool>,
}

/// The versions a rule takes: those under `prefix` carrying every one of `tags`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationFilter {
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub tags: Vec<(String, String)>,
}

impl ReplicationFilter {
    /// Whether a version of `key` with `tags` is one this filter takes.
    pub fn matches(&self, key: &str, tags: &std::collections::BTreeMap<String, String>) -> bool {
        key.starts_with(&self.prefix) && self.tags.iter().all(|(k, v)| tags.get(k) == Some(v))
    }
}

/// Where a rule's versions go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationDestination {
    /// The destination bucket's ARN, as put.
    pub bucket_arn: String,
    /// The replicas' storage class (`None`: the source version's).
    #[serde(default)]
    pub storage_class: Option<String>,
    /// `Account`, kept and shown as put.
    #[serde(default)]
    pub account: Option<String>,
    /// `AccessControlTranslation` with `Owner` `Destination`: replicas belong to the
    /// destination bucket's owner.
    #[serde(default)]
    pub owner_is_destination: bool,
    /// `EncryptionConfiguration/ReplicaKmsKeyID`: the KMS key replicas of SSE-KMS versions are
    /// sealed with.
    #[serde(default)]
    pub replica_kms_key_id: Option<String>,
    /// `ReplicationTime` and `Metrics` given and enabled (S3 RTC), kept and shown as put.
    #[serde(default)]
    pub replication_time: bool,
    #[serde(default)]
    pub metrics: bool,
}

/// Where replication stands for one version, as `x-amz-replication-status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicationStatus {
    /// A rule took the version; its copy is not made yet.
    Pending,
    /// The copy is made.
    Completed,
    /// The copy cannot be made (`reason` says why); it is not retried by itself.
    Failed { reason: String },
    /// This version is itself a copy made by replication.
    Replica,
}

impl ReplicationStatus {
    /// The header's value: `PENDING`, `COMPLETED`, `FAILED` or `REPLICA`.
    pub fn name(&self) -> &'static str {
        match self {
            ReplicationStatus::Pending => "PENDING",
            ReplicationStatus::Completed => "COMPLETED",
            ReplicationStatus::Failed { .. } => "FAILED",
            ReplicationStatus::Replica => "REPLICA",
        }
    }
}

impl ReplicationConfig {
    /// The enabled rule that decides for a version of `key` with `tags`: of those whose filter
    /// takes it, the one with the highest priority (V1 rules do not overlap, so at most one
    /// takes it). `delete_marker`: only rules that replicate delete markers.
    pub fn rule_for(
        &self,
        key: &str,
        tags: &std::collections::BTreeMap<String, String>,
        delete_marker: bool,
    ) -> Option<&ReplicationRule> {
        let rule = self
            .rules
            .iter()
            .filter(|r| r.enabled && r.filter.matches(key, tags))
            .max_by_key(|r| r.priority.unwrap_or(0))?;
        (!delete_marker || rule.delete_markers).then_some(rule)
    }
}
