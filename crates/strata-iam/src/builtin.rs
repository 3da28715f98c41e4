//! The built-in policies, by the names MinIO users know them by. Each is an ordinary identity
//! policy document (see the crate documentation for what each grants).

use crate::policy::{Policy, PolicyKind};

/// Download any object and find buckets' regions; no listing, no writes.
pub const READONLY: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Action": ["s3:GetBucketLocation", "s3:GetObject"],
    "Resource": ["arn:aws:s3:::*"]
  }]
}"#;

/// Every S3 action on every bucket and object; no administration.
pub const READWRITE: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Action": ["s3:*"],
    "Resource": ["arn:aws:s3:::*"]
  }]
}"#;

/// Upload objects only (multipart included); no reading, listing or deleting.
pub const WRITEONLY: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Action": ["s3:PutObject"],
    "Resource": ["arn:aws:s3:::*"]
  }]
}"#;

/// Look at the deployment without changing it: server and storage information, traces, logs,
/// profiles, metrics, lock and bandwidth views, health reports; no data access.
pub const DIAGNOSTICS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Action": [
      "admin:ServerInfo", "admin:StorageInfo", "admin:DataUsageInfo", "admin:ServerTrace",
      "admin:ConsoleLog", "admin:Profiling", "admin:Prometheus", "admin:TopLocksInfo",
      "admin:BandwidthMonitor", "admin:HealthInfo"
    ],
    "Resource": ["arn:aws:s3:::*"]
  }]
}"#;

/// Everything: every S3, STS and administration action (what the console's administrators get).
pub const CONSOLE_ADMIN: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Action": ["admin:*", "s3:*", "sts:*"],
    "Resource": ["arn:aws:s3:::*"]
  }]
}"#;

/// Name → document, in the order they are listed.
pub const BUILTIN: &[(&str, &str)] = &[
    ("readonly", READONLY),
    ("readwrite", READWRITE),
    ("writeonly", WRITEONLY),
    ("diagnostics", DIAGNOSTICS),
    ("consoleAdmin", CONSOLE_ADMIN),
];

/// The built-in document called `name`, if any.
pub fn document(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// The compiled built-in policy called `name`, if any.
pub fn policy(name: &str) -> Option<Policy> {
    // The documents are ours and tested to parse; an error here would be a bug in this file.
    document(name).and_then(|d| Policy::parse(d.as_bytes(), PolicyKind::Identity).ok())
}
