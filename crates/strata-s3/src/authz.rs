//! The authorization table: for each routed [`Operation`], the IAM actions S3 documents for it
//! ("Actions, resources, and condition keys for Amazon S3", and each operation's Permissions
//! section), the resource ARN each action is checked on, and the condition keys the request
//! carries. Pure: it reads the route and the headers and decides nothing; the caller evaluates
//! each [`Check`] with `strata_iam` and refuses with 403 `AccessDenied` unless all are allowed.
//!
//! The match over [`Operation`] is exhaustive, so a new operation does not compile until it is
//! given its actions here. Two operations name their objects in the body and cannot be fully
//! decided from the route: DeleteObjects ([`delete_objects_entry`] per key) and POST object
//! uploads ([`post_object`] once the form's fields are read); their [`Authorization::deferred`]
//! says so. Keys that need the stored object (`s3:ExistingObjectTag/<key>`) are added by
//! `Access::authorize`, which reads its tags when a policy asks for them.

use std::net::IpAddr;

use http::HeaderMap;
use strata_iam::ConditionValues;

use crate::error::S3Error;
use crate::router::{parse_query, Operation, Route};

/// One action on one resource; every check of a request must be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub action: &'static str,
    /// `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`; `None` for ListAllMyBuckets.
    pub resource: Option<String>,
}

/// What the body must still tell before the request is fully authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred {
    Nothing,
    /// DeleteObjects: each listed key needs [`delete_objects_entry`].
    EachDeletedKey,
    /// POST object: the form names the key and its headers; see [`post_object`].
    PostForm,
    /// PutObjectTagging: the body's tags are `s3:RequestObjectTag/<key>` and
    /// `s3:RequestObjectTagKeys`; a check a policy conditions on them waits for the body.
    RequestTags,
}

/// The table's answer for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub checks: Vec<Check>,
    /// The request's condition keys (global ones from [`Facts`], and the operation's own).
    pub values: ConditionValues,
    pub deferred: Deferred,
    /// CopyObject's and UploadPartCopy's source, whose read check is judged with the source's
    /// own tags (`s3:ExistingObjectTag/<key>`).
    pub source: Option<CopySource>,
}

/// The object a copy reads (`x-amz-copy-source`), decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySource {
    pub bucket: String,
    pub key: String,
    /// `versionId` as given (`null` or an id).
    pub version: Option<String>,
}

impl CopySource {
    /// The source from the header as sent: `[/]bucket/key[?versionId=v]`, percent-encoded.
    pub fn parse(headers: &HeaderMap) -> Result<Self, S3Error> {
        let raw = header(headers, "x-amz-copy-source").unwrap_or_default();
        let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
        let (bucket, key) = crate::router::parse_source(path)?;
        let version = parse_query(query).into_iter().find(|(k, _)| k == "versionId").map(|(_, v)| v);
        Ok(Self { bucket, key, version })
    }

    pub fn arn(&self) -> String {
        object_arn(&self.bucket, &self.key)
    }
}

/// How a request was authenticated (`s3:authType`, `s3:signatureversion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    /// `Authorization` header, SigV4 (`true`) or SigV2.
    Header {
        v4: bool,
    },
    /// Presigned URL.
    Query {
        v4: bool,
    },
    /// Browser POST form with a signed policy.
    Post {
        v4: bool,
    },
    Anonymous,
}

/// What the connection and authentication tell, beside the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// `aws:SourceIp`: the client's address (the peer, or a trusted proxy's forwarded one).
    pub source_ip: Option<IpAddr>,
    /// `aws:SecureTransport`: the request came over TLS.
    pub secure_transport: bool,
    /// `aws:CurrentTime` and `aws:EpochTime`.
    pub now_unix_secs: u64,
    pub auth: AuthType,
}

pub fn bucket_arn(bucket: &str) -> String {
    format!("arn:aws:s3:::{bucket}")
}

pub fn object_arn(bucket: &str, key: &str) -> String {
    format!("arn:aws:s3:::{bucket}/{key}")
}

/// The actions, resources and condition keys of one routed request.
pub fn authorization(route: &Route, headers: &HeaderMap, facts: &Facts) -> Result<Authorization, S3Error> {
    let mut values = ConditionValues::new();
    global_values(facts, headers, &mut values);
    let bucket = route.bucket.as_deref().unwrap_or_default();
    let key = route.key.as_deref().unwrap_or_default();
    let version = route.param("versionId");
    if let Some(v) = version {
        values.insert("s3:versionid", v);
    }
    let on_bucket = |action| Check { action, resource: Some(bucket_arn(bucket)) };
    let on_object = |action| Check { action, resource: Some(object_arn(bucket, key)) };
    // (plain action, action when a versionId is given)
    let versioned = |plain, with_version| on_object(if version.is_some() { with_version } else { plain });
    use Operation as O;
    let mut deferred = Deferred::Nothing;
    let checks = match route.operation {
        O::ListBuckets => vec![Check { action: "s3:ListAllMyBuckets", resource: None }],
        O::CreateBucket => create_bucket(headers, &mut values).into_iter().map(on_bucket).collect(),
        O::DeleteBucket => vec![on_bucket("s3:DeleteBucket")],
        O::HeadBucket => vec![on_bucket("s3:ListBucket")],
        O::GetBucketLocation => vec![on_bucket("s3:GetBucketLocation")],
        O::GetBucketVersioning => vec![on_bucket("s3:GetBucketVersioning")],
        O::PutBucketVersioning => vec![on_bucket("s3:PutBucketVersioning")],
        O::ListObjects | O::ListObjectsV2 => {
            list_values(route, &mut values);
            vec![on_bucket("s3:ListBucket")]
        }
        O::ListObjectVersions => {
            list_values(route, &mut values);
            vec![on_bucket("s3:ListBucketVersions")]
        }
        O::PutObject | O::CreateMultipartUpload => {
            // Conditional writes: `s3:if-match` and `s3:if-none-match` are the headers' values.
            for (header_name, key) in [("if-match", "s3:if-match"), ("if-none-match", "s3:if-none-match")] {
                if let Some(v) = header(headers, header_name) {
                    values.insert(key, v);
                }
            }
            let mut checks = vec![on_object("s3:PutObject")];
            checks.extend(object_write(headers, &mut values).into_iter().map(on_object));
            checks
        }
        O::GetObject | O::HeadObject => vec![versioned("s3:GetObject", "s3:GetObjectVersion")],
        O::DeleteObject => {
            let mut checks = vec![versioned("s3:DeleteObject", "s3:DeleteObjectVersion")];
            // A conditional delete: `s3:if-match` is its value, and one with an ETag reads the
            // object's, which S3 allows only a caller that may read the object.
            if let Some(etag) = header(headers, "if-match") {
                values.insert("s3:if-match", etag);
                if etag.trim() != "*" {
                    checks.push(on_object("s3:GetObject"));
                }
            }
            checks
        }
        O::UploadPart | O::CompleteMultipartUpload => vec![on_object("s3:PutObject")],
        O::AbortMultipartUpload => vec![on_object("s3:AbortMultipartUpload")],
        O::ListParts => vec![on_object("s3:ListMultipartUploadParts")],
        O::ListMultipartUploads => vec![on_bucket("s3:ListBucketMultipartUploads")],
        O::DeleteObjects => {
            deferred = Deferred::EachDeletedKey;
            Vec::new()
        }
        O::CopyObject => {
            let (source, extra) = copy_object(headers, &mut values)?;
            [on_object("s3:PutObject"), source].into_iter().chain(extra.into_iter().map(on_object)).collect()
        }
        O::UploadPartCopy => vec![on_object("s3:PutObject"), copy_source(headers, &mut values)?],
        O::GetBucketAcl => vec![on_bucket("s3:GetBucketAcl")],
        O::PutBucketAcl => {
            acl_values(headers, &mut values);
            vec![on_bucket("s3:PutBucketAcl")]
        }
        O::GetObjectAcl => vec![versioned("s3:GetObjectAcl", "s3:GetObjectVersionAcl")],
        O::PutObjectAcl => {
            acl_values(headers, &mut values);
            vec![versioned("s3:PutObjectAcl", "s3:PutObjectVersionAcl")]
        }
        O::GetBucketOwnershipControls => vec![on_bucket("s3:GetBucketOwnershipControls")],
        O::PutBucketOwnershipControls | O::DeleteBucketOwnershipControls => {
            vec![on_bucket("s3:PutBucketOwnershipControls")]
        }
        O::GetPublicAccessBlock => vec![on_bucket("s3:GetBucketPublicAccessBlock")],
        O::PutPublicAccessBlock | O::DeletePublicAccessBlock => {
            vec![on_bucket("s3:PutBucketPublicAccessBlock")]
        }
        O::GetObjectTagging => vec![versioned("s3:GetObjectTagging", "s3:GetObjectVersionTagging")],
        O::PutObjectTagging => {
            deferred = Deferred::RequestTags;
            vec![versioned("s3:PutObjectTagging", "s3:PutObjectVersionTagging")]
        }
        O::DeleteObjectTagging => vec![versioned("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging")],
        O::GetObjectAttributes => vec![
            versioned("s3:GetObject", "s3:GetObjectVersion"),
            versioned("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"),
        ],
        O::GetObjectTorrent => vec![versioned("s3:GetObjectTorrent", "s3:GetObjectVersionTorrent")],
        O::GetBucketTagging => vec![on_bucket("s3:GetBucketTagging")],
        O::PutBucketTagging | O::DeleteBucketTagging => vec![on_bucket("s3:PutBucketTagging")],
        O::GetBucketEncryption => vec![on_bucket("s3:GetEncryptionConfiguration")],
        O::PutBucketEncryption | O::DeleteBucketEncryption => {
            vec![on_bucket("s3:PutEncryptionConfiguration")]
        }
        O::GetBucketCors => vec![on_bucket("s3:GetBucketCORS")],
        O::PutBucketCors | O::DeleteBucketCors => vec![on_bucket("s3:PutBucketCORS")],
        O::PostObject => {
            deferred = Deferred::PostForm;
            Vec::new()
        }
        O::GetBucketPolicy => vec![on_bucket("s3:GetBucketPolicy")],
        O::PutBucketPolicy => vec![on_bucket("s3:PutBucketPolicy")],
        O::DeleteBucketPolicy => vec![on_bucket("s3:DeleteBucketPolicy")],
        O::GetBucketPolicyStatus => vec![on_bucket("s3:GetBucketPolicyStatus")],
        O::GetObjectLockConfiguration => vec![on_bucket("s3:GetBucketObjectLockConfiguration")],
        O::PutObjectLockConfiguration => vec![on_bucket("s3:PutBucketObjectLockConfiguration")],
        O::GetObjectRetention => vec![on_object("s3:GetObjectRetention")],
        O::PutObjectRetention => vec![on_object("s3:PutObjectRetention")],
        O::GetObjectLegalHold => vec![on_object("s3:GetObjectLegalHold")],
        O::PutObjectLegalHold => vec![on_object("s3:PutObjectLegalHold")],
        O::GetBucketNotificationConfiguration => vec![on_bucket("s3:GetBucketNotification")],
        O::PutBucketNotificationConfiguration => vec![on_bucket("s3:PutBucketNotification")],
        O::GetBucketLifecycleConfiguration => vec![on_bucket("s3:GetLifecycleConfiguration")],
        // AWS authorizes DeleteBucketLifecycle as a put of the configuration.
        O::PutBucketLifecycleConfiguration | O::DeleteBucketLifecycle => {
            vec![on_bucket("s3:PutLifecycleConfiguration")]
        }
        O::GetBucketReplication => vec![on_bucket("s3:GetReplicationConfiguration")],
        // AWS authorizes DeleteBucketReplication as a put of the configuration.
        O::PutBucketReplication | O::DeleteBucketReplication => {
            vec![on_bucket("s3:PutReplicationConfiguration")]
        }
        // MinIO's listen API: its own actions, on the bucket or on no resource (all buckets).
        O::ListenBucketNotification => vec![on_bucket("s3:ListenBucketNotification")],
        O::ListenNotification => vec![Check { action: "s3:ListenNotification", resource: None }],
    };
    let source = match route.operation {
        O::CopyObject | O::UploadPartCopy => Some(CopySource::parse(headers)?),
        _ => None,
    };
    Ok(Authorization { checks, values, deferred, source })
}

/// The check for one key of a DeleteObjects request.
pub fn delete_objects_entry(bucket: &str, key: &str, version_id: Option<&str>) -> Check {
    let action = if version_id.is_some() { "s3:DeleteObjectVersion" } else { "s3:DeleteObject" };
    Check { action, resource: Some(object_arn(bucket, key)) }
}

/// The checks of a POST object upload once its form is read: `fields` are the form's fields
/// (names lowercased), whose `acl`, `tagging` (an XML document), `x-amz-server-side-encryption`
/// and `x-amz-storage-class` play the part of PUT's headers. Adds their condition keys.
pub fn post_object(
    bucket: &str,
    key: &str,
    fields: &[(String, String)],
    values: &mut ConditionValues,
) -> Vec<Check> {
    let field = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let on_object = |action| Check { action, resource: Some(object_arn(bucket, key)) };
    let mut checks = vec![on_object("s3:PutObject")];
    if let Some(acl) = field("acl") {
        values.insert("s3:x-amz-acl", acl);
        checks.push(on_object("s3:PutObjectAcl"));
    }
    if field("tagging").is_some() {
        checks.push(on_object("s3:PutObjectTagging"));
    }
    for name in ["x-amz-server-side-encryption", "x-amz-storage-class"] {
        if let Some(v) = field(name) {
            values.insert(&format!("s3:{name}"), v);
        }
    }
    checks
}

/// CreateBucket's actions: the ACL, ownership and object-lock headers each need their own.
fn create_bucket(headers: &HeaderMap, values: &mut ConditionValues) -> Vec<&'static str> {
    acl_values(headers, values);
    header_value(headers, "x-amz-object-ownership", "s3:x-amz-object-ownership", values);
    let mut actions = vec!["s3:CreateBucket"];
    if has_acl(headers) {
        actions.push("s3:PutBucketAcl");
    }
    if headers.contains_key("x-amz-object-ownership") {
        actions.push("s3:PutBucketOwnershipControls");
    }
    if header(headers, "x-amz-bucket-object-lock-enabled").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        actions.push("s3:PutBucketObjectLockConfiguration");
    }
    actions
}

/// CopyObject beyond `s3:PutObject` on the destination: the read check on the source, and the
/// new object's header actions (tagging only when the copy replaces the tags).
fn copy_object(
    headers: &HeaderMap,
    values: &mut ConditionValues,
) -> Result<(Check, Vec<&'static str>), S3Error> {
    header_value(headers, "x-amz-metadata-directive", "s3:x-amz-metadata-directive", values);
    let source = copy_source(headers, values)?;
    let replaces_tags =
        header(headers, "x-amz-tagging-directive").is_some_and(|d| d.eq_ignore_ascii_case("REPLACE"));
    let mut extra = object_write(headers, values);
    extra.retain(|a| *a != "s3:PutObjectTagging" || replaces_tags);
    Ok((source, extra))
}

/// Keys every request has: source address, transport, time, authentication.
fn global_values(facts: &Facts, headers: &HeaderMap, values: &mut ConditionValues) {
    if let Some(ip) = facts.source_ip {
        values.insert("aws:SourceIp", ip.to_string());
    }
    values.insert("aws:SecureTransport", if facts.secure_transport { "true" } else { "false" });
    values.insert(
        "aws:CurrentTime",
        strata_types::time::iso8601(facts.now_unix_secs.saturating_mul(1_000_000_000)),
    );
    values.insert("aws:EpochTime", facts.now_unix_secs.to_string());
    header_value(headers, "user-agent", "aws:UserAgent", values);
    header_value(headers, "referer", "aws:Referer", values);
    let (auth_type, v4) = match facts.auth {
        AuthType::Header { v4 } => ("REST-HEADER", v4),
        AuthType::Query { v4 } => ("REST-QUERY-STRING", v4),
        AuthType::Post { v4 } => ("POST", v4),
        AuthType::Anonymous => return,
    };
    values.insert("s3:authType", auth_type);
    values.insert("s3:signatureversion", if v4 { "AWS4-HMAC-SHA256" } else { "AWS" });
    // AWS reads this key from the header only, never from a presigned query.
    header_value(headers, "x-amz-content-sha256", "s3:x-amz-content-sha256", values);
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn header_value(headers: &HeaderMap, name: &str, key: &str, values: &mut ConditionValues) {
    if let Some(v) = header(headers, name) {
        values.insert(key, v);
    }
}

fn list_values(route: &Route, values: &mut ConditionValues) {
    for (param, key) in [("prefix", "s3:prefix"), ("delimiter", "s3:delimiter"), ("max-keys", "s3:max-keys")]
    {
        if let Some(v) = route.param(param) {
            values.insert(key, v);
        }
    }
}

const GRANT_HEADERS: &[&str] = &[
    "x-amz-grant-full-control",
    "x-amz-grant-read",
    "x-amz-grant-read-acp",
    "x-amz-grant-write",
    "x-amz-grant-write-acp",
];

fn has_acl(headers: &HeaderMap) -> bool {
    headers.contains_key("x-amz-acl") || GRANT_HEADERS.iter().any(|h| headers.contains_key(*h))
}

fn acl_values(headers: &HeaderMap, values: &mut ConditionValues) {
    header_value(headers, "x-amz-acl", "s3:x-amz-acl", values);
    for h in GRANT_HEADERS {
        header_value(headers, h, &format!("s3:{h}"), values);
    }
}

/// Condition keys of a new object's headers, and the extra actions they call for.
fn object_write(headers: &HeaderMap, values: &mut ConditionValues) -> Vec<&'static str> {
    acl_values(headers, values);
    for h in [
        "x-amz-server-side-encryption",
        "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-server-side-encryption-customer-algorithm",
        "x-amz-storage-class",
    ] {
        header_value(headers, h, &format!("s3:{h}"), values);
    }
    header_value(headers, "x-amz-object-lock-mode", "s3:object-lock-mode", values);
    header_value(headers, "x-amz-object-lock-retain-until-date", "s3:object-lock-retain-until-date", values);
    header_value(headers, "x-amz-object-lock-legal-hold", "s3:object-lock-legal-hold", values);
    let mut extra = Vec::new();
    if has_acl(headers) {
        extra.push("s3:PutObjectAcl");
    }
    if let Some(tagging) = header(headers, "x-amz-tagging") {
        for (k, v) in parse_query(tagging) {
            values.insert(&format!("s3:RequestObjectTag/{k}"), v);
            values.insert("s3:RequestObjectTagKeys", k);
        }
        extra.push("s3:PutObjectTagging");
    }
    if headers.contains_key("x-amz-object-lock-mode")
        || headers.contains_key("x-amz-object-lock-retain-until-date")
    {
        extra.push("s3:PutObjectRetention");
    }
    if headers.contains_key("x-amz-object-lock-legal-hold") {
        extra.push("s3:PutObjectLegalHold");
    }
    extra
}

/// The read check on a copy's source (`x-amz-copy-source: /bucket/key[?versionId=v]`).
fn copy_source(headers: &HeaderMap, values: &mut ConditionValues) -> Result<Check, S3Error> {
    let source = CopySource::parse(headers)?;
    let CopySource { bucket, key, version } = &source;
    // The source as one spelling, `bucket/key` decoded (and `?versionId=v`): the header may
    // lead with `/` and percent-encode any character, and a policy's pattern must not be
    // passed by spelling the same object another way.
    let canonical = match version {
        Some(v) => format!("{bucket}/{key}?versionId={v}"),
        None => format!("{bucket}/{key}"),
    };
    values.insert("s3:x-amz-copy-source", &canonical);
    let action = if version.is_some() { "s3:GetObjectVersion" } else { "s3:GetObject" };
    Ok(Check { action, resource: Some(source.arn()) })
}

#[cfg(test)]
#[path = "authz_tests.rs"]
mod tests;
