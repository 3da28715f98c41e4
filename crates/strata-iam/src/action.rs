//! The action vocabulary: S3 actions as the AWS service authorization reference names them,
//! the STS actions Strata serves, and Strata's own `admin:` actions. A policy naming an exact
//! action outside it is refused (a typo such as `s3:GetObjct` would otherwise grant nothing,
//! silently); a wildcard pattern is checked only for its service prefix.

/// S3 actions (general purpose buckets), from "Actions, resources, and condition keys for
/// Amazon S3", and MinIO's two listen actions.
pub const S3_ACTIONS: &[&str] = &[
    "AbortMultipartUpload",
    "BypassGovernanceRetention",
    "CreateBucket",
    "DeleteBucket",
    "DeleteBucketOwnershipControls",
    "DeleteBucketPolicy",
    "DeleteBucketWebsite",
    "DeleteObject",
    "DeleteObjectTagging",
    "DeleteObjectVersion",
    "DeleteObjectVersionTagging",
    "GetAccelerateConfiguration",
    "GetAnalyticsConfiguration",
    "GetBucketAcl",
    "GetBucketCORS",
    "GetBucketLocation",
    "GetBucketLogging",
    "GetBucketNotification",
    "GetBucketObjectLockConfiguration",
    "GetBucketOwnershipControls",
    "GetBucketPolicy",
    "GetBucketPolicyStatus",
    "GetBucketPublicAccessBlock",
    "GetBucketRequestPayment",
    "GetBucketTagging",
    "GetBucketVersioning",
    "GetBucketWebsite",
    "GetEncryptionConfiguration",
    "GetIntelligentTieringConfiguration",
    "GetInventoryConfiguration",
    "GetLifecycleConfiguration",
    "GetMetricsConfiguration",
    "GetObject",
    "GetObjectAcl",
    "GetObjectAttributes",
    "GetObjectLegalHold",
    "GetObjectRetention",
    "GetObjectTagging",
    "GetObjectTorrent",
    "GetObjectVersion",
    "GetObjectVersionAcl",
    "GetObjectVersionAttributes",
    "GetObjectVersionForReplication",
    "GetObjectVersionTagging",
    "GetObjectVersionTorrent",
    "GetReplicationConfiguration",
    "ListAllMyBuckets",
    "ListBucket",
    "ListBucketMultipartUploads",
    "ListBucketVersions",
    "ListMultipartUploadParts",
    // MinIO's: the listen API (`mc watch`) on one bucket and on all of them.
    "ListenBucketNotification",
    "ListenNotification",
    "PutAccelerateConfiguration",
    "PutAnalyticsConfiguration",
    "PutBucketAcl",
    "PutBucketCORS",
    "PutBucketLogging",
    "PutBucketNotification",
    "PutBucketObjectLockConfiguration",
    "PutBucketOwnershipControls",
    "PutBucketPolicy",
    "PutBucketPublicAccessBlock",
    "PutBucketRequestPayment",
    "PutBucketTagging",
    "PutBucketVersioning",
    "PutBucketWebsite",
    "PutEncryptionConfiguration",
    "PutIntelligentTieringConfiguration",
    "PutInventoryConfiguration",
    "PutLifecycleConfiguration",
    "PutMetricsConfiguration",
    "PutObject",
    "PutObjectAcl",
    "PutObjectLegalHold",
    "PutObjectRetention",
    "PutObjectTagging",
    "PutObjectVersionAcl",
    "PutObjectVersionTagging",
    "PutReplicationConfiguration",
    "ReplicateDelete",
    "ReplicateObject",
    "ReplicateTags",
    "RestoreObject",
];

/// STS actions.
pub const STS_ACTIONS: &[&str] =
    &["AssumeRole", "AssumeRoleWithWebIdentity", "GetCallerIdentity", "GetSessionToken", "TagSession"];

/// Strata's administration actions (the admin API and `strata admin` check these).
pub const ADMIN_ACTIONS: &[&str] = &[
    // Identity and access.
    "CreateUser",
    "DeleteUser",
    "EnableUser",
    "DisableUser",
    "GetUser",
    "ListUsers",
    "AddUserToGroup",
    "RemoveUserFromGroup",
    "GetGroup",
    "ListGroups",
    "EnableGroup",
    "DisableGroup",
    "CreatePolicy",
    "DeletePolicy",
    "GetPolicy",
    "ListPolicies",
    "AttachPolicy",
    "DetachPolicy",
    "CreateServiceAccount",
    "UpdateServiceAccount",
    "RemoveServiceAccount",
    "ListServiceAccounts",
    // Operations and diagnostics.
    "ServerInfo",
    "StorageInfo",
    "DataUsageInfo",
    "ServerTrace",
    "ConsoleLog",
    "Profiling",
    "Prometheus",
    "TopLocksInfo",
    "BandwidthMonitor",
    "HealthInfo",
    "Heal",
    "Speedtest",
    "ConfigUpdate",
    "ServiceRestart",
    "ServiceStop",
];

/// The services a policy may name, with their exact actions.
const SERVICES: &[(&str, &[&str])] = &[("s3", S3_ACTIONS), ("sts", STS_ACTIONS), ("admin", ADMIN_ACTIONS)];

/// Checks one `Action` entry: `*`, or `service:name` where the service is known and `name` is
/// either a wildcard pattern or a known action (both case-insensitive, as in AWS).
pub fn check(action: &str) -> Result<(), String> {
    if action == "*" {
        return Ok(());
    }
    let Some((service, name)) = action.split_once(':') else {
        return Err(format!("{action:?} is not an action: expected service:name, e.g. s3:GetObject"));
    };
    let Some((_, actions)) = SERVICES.iter().find(|(s, _)| s.eq_ignore_ascii_case(service)) else {
        return Err(format!("unknown service {service:?} in {action:?} (known: s3, sts, admin)"));
    };
    if name.is_empty() {
        return Err(format!("{action:?} names no action"));
    }
    if name.contains(['*', '?']) || actions.iter().any(|a| a.eq_ignore_ascii_case(name)) {
        Ok(())
    } else {
        Err(format!("unknown action {action:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        for ok in [
            "*",
            "s3:*",
            "s3:Get*",
            "s3:GetObject",
            "S3:getobject",
            "admin:*",
            "sts:AssumeRole",
            "s3:?etObject",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert!(check("s3:GetObjct").is_err_and(|e| e.contains("unknown action")));
        assert!(check("ec2:*").is_err_and(|e| e.contains("unknown service")));
        assert!(check("GetObject").is_err());
        assert!(check("s3:").is_err());
    }
}
