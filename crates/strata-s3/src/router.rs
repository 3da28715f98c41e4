//! Request → one S3 operation, named as AWS names it (MinIO's name for its listen API, a GET
//! with `events`). Path-style (`/bucket/key`) and virtual-host-style (`bucket.domain/key`)
//! addressing. A query naming a sub-resource we do not
//! serve yet routes to `NotImplemented`, never to a plain object or bucket operation.

use http::Method;
use percent_encoding::percent_decode_str;
use strata_object::VersionRef;
use strata_types::limits::PART_NUMBER_MAX;
use strata_types::{BucketName, NameError, ObjectKey};
use uuid::Uuid;

use crate::error::{S3Error, S3ErrorCode};

macro_rules! operations {
    (
        service: [$($s:ident),* $(,)?],
        bucket: [$($b:ident),* $(,)?],
        object: [$($o:ident),* $(,)?] $(,)?
    ) => {
        /// Every S3 operation the router knows, named as AWS names it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Operation { $($s,)* $($b,)* $($o,)* }

        /// The operations on the service (no bucket).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ServiceOperation { $($s),* }

        /// The operations on a bucket (no key).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum BucketOperation { $($b),* }

        /// The operations on an object.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ObjectOperation { $($o),* }

        impl Operation {
            /// All of them, for the compatibility table's test and for metrics.
            pub const ALL: &'static [Operation] = &[$(Operation::$s,)* $(Operation::$b,)* $(Operation::$o,)*];

            /// Its place in [`Operation::ALL`] (per-operation counters are kept by it).
            pub fn index(self) -> usize {
                self as usize
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(Operation::$s => stringify!($s),)*
                    $(Operation::$b => stringify!($b),)*
                    $(Operation::$o => stringify!($o),)*
                }
            }

            /// The operation with what it acts on.
            fn scoped(self) -> Scoped {
                match self {
                    $(Operation::$s => Scoped::Service(ServiceOperation::$s),)*
                    $(Operation::$b => Scoped::Bucket(BucketOperation::$b),)*
                    $(Operation::$o => Scoped::Object(ObjectOperation::$o),)*
                }
            }
        }
    };
}

/// An operation split by what it acts on.
enum Scoped {
    Service(ServiceOperation),
    Bucket(BucketOperation),
    Object(ObjectOperation),
}

operations! {
    service: [
        ListBuckets,
        ListenNotification,
    ],
    bucket: [
        CreateBucket,
        DeleteBucket,
        HeadBucket,
        GetBucketLocation,
        GetBucketVersioning,
        PutBucketVersioning,
        ListObjects,
        ListObjectsV2,
        ListMultipartUploads,
        DeleteObjects,
        ListObjectVersions,
        GetBucketAcl,
        PutBucketAcl,
        GetBucketOwnershipControls,
        PutBucketOwnershipControls,
        DeleteBucketOwnershipControls,
        GetPublicAccessBlock,
        PutPublicAccessBlock,
        DeletePublicAccessBlock,
        GetBucketTagging,
        PutBucketTagging,
        DeleteBucketTagging,
        GetBucketCors,
        PutBucketCors,
        DeleteBucketCors,
        PostObject,
        GetBucketPolicy,
        PutBucketPolicy,
        DeleteBucketPolicy,
        GetBucketPolicyStatus,
        GetObjectLockConfiguration,
        PutObjectLockConfiguration,
        GetBucketNotificationConfiguration,
        PutBucketNotificationConfiguration,
        GetBucketEncryption,
        PutBucketEncryption,
        DeleteBucketEncryption,
        GetBucketLifecycleConfiguration,
        PutBucketLifecycleConfiguration,
        DeleteBucketLifecycle,
        GetBucketReplication,
        PutBucketReplication,
        DeleteBucketReplication,
        ListenBucketNotification,
    ],
    object: [
        PutObject,
        GetObject,
        HeadObject,
        DeleteObject,
        CreateMultipartUpload,
        UploadPart,
        CompleteMultipartUpload,
        AbortMultipartUpload,
        ListParts,
        CopyObject,
        GetObjectAcl,
        PutObjectAcl,
        GetObjectTagging,
        PutObjectTagging,
        DeleteObjectTagging,
        GetObjectAttributes,
        UploadPartCopy,
        GetObjectTorrent,
        GetObjectRetention,
        PutObjectRetention,
        GetObjectLegalHold,
        PutObjectLegalHold,
    ],
}

/// The object an object operation acts on, validated: the bucket's name, the key, and the
/// version the request's `versionId` names (the current one for operations that take none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectTarget {
    pub bucket: BucketName,
    pub key: ObjectKey,
    pub version: VersionRef,
}

/// A routed request whose names are validated: what handlers receive. Built by
/// [`Route::resolve`] once the request is authenticated and authorised (which work on the
/// names as sent), so a handler cannot act on a name nobody checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Service(ServiceOperation),
    Bucket(BucketOperation, BucketName),
    Object(ObjectOperation, ObjectTarget),
}

#[derive(Debug, Clone)]
pub struct Route {
    pub operation: Operation,
    pub bucket: Option<String>,
    pub key: Option<String>,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// The bucket came from the Host header (virtual-host style).
    pub host_style: bool,
}

impl Route {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The operation with its names validated, in the order handlers checked them: the key
    /// (`KeyTooLongError`), the version (`InvalidArgument`), then the bucket: `InvalidBucketName`
    /// for CreateBucket, else `NoSuchBucket` (a name no bucket can have names no bucket).
    pub fn resolve(&self) -> Result<Resolved, S3Error> {
        let routed_without = |what: &str| {
            S3Error::new(
                S3ErrorCode::InternalError,
                &format!("{} was routed without a {what}", self.operation.name()),
            )
        };
        let bucket = || -> Result<BucketName, S3Error> {
            let name = self.bucket.as_deref().ok_or_else(|| routed_without("bucket"))?;
            match BucketName::parse(name) {
                Ok(b) => Ok(b),
                Err(e) if self.operation == Operation::CreateBucket => Err(e.into()),
                Err(_) => Err(S3Error::from(strata_object::ObjectError::BucketNotFound)),
            }
        };
        Ok(match self.operation.scoped() {
            Scoped::Service(op) => Resolved::Service(op),
            Scoped::Bucket(op) => Resolved::Bucket(op, bucket()?),
            Scoped::Object(op) => {
                let key = self.key.as_deref().ok_or_else(|| routed_without("key"))?;
                let key = ObjectKey::parse(key).map_err(|e: NameError| S3Error::from(e))?;
                let version = if op.takes_version() { version_ref(self)? } else { VersionRef::Current };
                Resolved::Object(op, ObjectTarget { bucket: bucket()?, key, version })
            }
        })
    }
}

impl ObjectOperation {
    /// Whether the operation acts on the version `versionId` names (the others ignore it).
    pub fn takes_version(self) -> bool {
        use ObjectOperation as O;
        matches!(
            self,
            O::GetObject
                | O::HeadObject
                | O::DeleteObject
                | O::GetObjectAttributes
                | O::GetObjectAcl
                | O::PutObjectAcl
                | O::GetObjectTagging
                | O::PutObjectTagging
                | O::DeleteObjectTagging
                | O::GetObjectRetention
                | O::PutObjectRetention
                | O::GetObjectLegalHold
                | O::PutObjectLegalHold
        )
    }
}

/// Query names that select a sub-resource (a different operation on the same path).
const SUBRESOURCES: &[&str] = &[
    "accelerate",
    "acl",
    "analytics",
    "attributes",
    "cors",
    "delete",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "partNumber",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "session",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// A bucket name or key from the path: percent-decoded, and refused unless UTF-8 (decoding it
/// loosely would quietly name another object).
fn decode_path(s: &str) -> Result<String, S3Error> {
    percent_decode_str(s).decode_utf8().map(|c| c.into_owned()).map_err(|_| {
        S3Error::new(
            S3ErrorCode::InvalidURI,
            "Couldn't parse the specified URI: the object key or bucket name is not valid UTF-8.",
        )
    })
}

pub fn parse_query(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(&v.replace('+', "%20")))
        })
        .collect()
}

/// The bucket a virtual-host-style `host` names under one of `domains` (comma-separated, as
/// `MINIO_DOMAIN` lists them; the longest that matches wins, so `s3.example.com` beats
/// `example.com` for `photos.s3.example.com`). A port is ignored.
fn host_bucket(host: &str, domains: &str) -> Option<String> {
    let host = host.rsplit_once(':').map_or(host, |(name, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            name
        } else {
            host
        }
    });
    let mut domains: Vec<&str> = domains.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    if domains.contains(&host) {
        // The endpoint itself: path style.
        return None;
    }
    domains.sort_by_key(|d| std::cmp::Reverse(d.len()));
    domains.into_iter().find_map(|d| {
        host.strip_suffix(d).and_then(|b| b.strip_suffix('.')).filter(|b| !b.is_empty()).map(str::to_owned)
    })
}

/// Routes one request. `domain` enables virtual-host-style addressing under it (or under each
/// of several, comma-separated).
pub fn route(
    method: &Method,
    path: &str,
    query: &str,
    host: Option<&str>,
    domain: Option<&str>,
) -> Result<Route, S3Error> {
    let query = parse_query(query);
    let host_bucket = match (host, domain) {
        (Some(h), Some(d)) => host_bucket(h, d),
        _ => None,
    };
    let path = path.strip_prefix('/').unwrap_or(path);
    let host_style = host_bucket.is_some();
    let (bucket, key) = match host_bucket {
        Some(b) => (Some(b), Some(decode_path(path)?).filter(|k| !k.is_empty())),
        None => match path.split_once('/') {
            Some((b, k)) => (Some(decode_path(b)?), Some(decode_path(k)?).filter(|k| !k.is_empty())),
            None => (Some(decode_path(path)?).filter(|b| !b.is_empty()), None),
        },
    };
    let has = |name: &str| query.iter().any(|(k, _)| k == name);
    let sub = query.iter().map(|(k, _)| k.as_str()).find(|k| SUBRESOURCES.contains(k));
    let not_implemented = || {
        S3Error::new(
            S3ErrorCode::NotImplemented,
            "A header or query you provided implies functionality that is not implemented",
        )
    };
    use Operation as O;
    let operation = match (&bucket, &key, method) {
        (None, _, &Method::GET) if sub.is_none() && has("events") => O::ListenNotification,
        (None, _, &Method::GET) if sub.is_none() => O::ListBuckets,
        (None, _, _) => {
            return Err(S3Error::new(
                S3ErrorCode::MethodNotAllowed,
                "The specified method is not allowed against this resource.",
            ))
        }
        (Some(_), None, m) => match (m, sub) {
            (&Method::GET, Some("location")) => O::GetBucketLocation,
            (&Method::GET, Some("versioning")) => O::GetBucketVersioning,
            (&Method::PUT, Some("versioning")) => O::PutBucketVersioning,
            (&Method::GET, Some("uploads")) => O::ListMultipartUploads,
            (&Method::POST, Some("delete")) => O::DeleteObjects,
            (&Method::GET, Some("versions")) => O::ListObjectVersions,
            (&Method::GET, Some("encryption")) => O::GetBucketEncryption,
            (&Method::PUT, Some("encryption")) => O::PutBucketEncryption,
            (&Method::DELETE, Some("encryption")) => O::DeleteBucketEncryption,
            (&Method::GET, Some("cors")) => O::GetBucketCors,
            (&Method::PUT, Some("cors")) => O::PutBucketCors,
            (&Method::DELETE, Some("cors")) => O::DeleteBucketCors,
            (&Method::GET, Some("tagging")) => O::GetBucketTagging,
            (&Method::PUT, Some("tagging")) => O::PutBucketTagging,
            (&Method::DELETE, Some("tagging")) => O::DeleteBucketTagging,
            (&Method::GET, Some("acl")) => O::GetBucketAcl,
            (&Method::PUT, Some("acl")) => O::PutBucketAcl,
            (&Method::GET, Some("ownershipControls")) => O::GetBucketOwnershipControls,
            (&Method::PUT, Some("ownershipControls")) => O::PutBucketOwnershipControls,
            (&Method::DELETE, Some("ownershipControls")) => O::DeleteBucketOwnershipControls,
            (&Method::GET, Some("publicAccessBlock")) => O::GetPublicAccessBlock,
            (&Method::PUT, Some("publicAccessBlock")) => O::PutPublicAccessBlock,
            (&Method::DELETE, Some("publicAccessBlock")) => O::DeletePublicAccessBlock,
            (&Method::GET, Some("policy")) => O::GetBucketPolicy,
            (&Method::PUT, Some("policy")) => O::PutBucketPolicy,
            (&Method::DELETE, Some("policy")) => O::DeleteBucketPolicy,
            (&Method::GET, Some("policyStatus")) => O::GetBucketPolicyStatus,
            (&Method::GET, Some("object-lock")) => O::GetObjectLockConfiguration,
            (&Method::PUT, Some("object-lock")) => O::PutObjectLockConfiguration,
            (&Method::GET, Some("notification")) => O::GetBucketNotificationConfiguration,
            (&Method::PUT, Some("notification")) => O::PutBucketNotificationConfiguration,
            (&Method::GET, Some("lifecycle")) => O::GetBucketLifecycleConfiguration,
            (&Method::PUT, Some("lifecycle")) => O::PutBucketLifecycleConfiguration,
            (&Method::DELETE, Some("lifecycle")) => O::DeleteBucketLifecycle,
            (&Method::GET, Some("replication")) => O::GetBucketReplication,
            (&Method::PUT, Some("replication")) => O::PutBucketReplication,
            (&Method::DELETE, Some("replication")) => O::DeleteBucketReplication,
            (_, Some(_)) => return Err(not_implemented()),
            (&Method::PUT, None) => O::CreateBucket,
            (&Method::DELETE, None) => O::DeleteBucket,
            (&Method::HEAD, None) => O::HeadBucket,
            (&Method::POST, None) => O::PostObject,
            (&Method::GET, None) if has("events") => O::ListenBucketNotification,
            (&Method::GET, None) if query.iter().any(|(k, v)| k == "list-type" && v == "2") => {
                O::ListObjectsV2
            }
            (&Method::GET, None) if has("list-type") => {
                return Err(S3Error::new(S3ErrorCode::InvalidArgument, "list-type must be 2"))
            }
            (&Method::GET, None) => O::ListObjects,
            _ => {
                return Err(S3Error::new(
                    S3ErrorCode::MethodNotAllowed,
                    "The specified method is not allowed against this resource.",
                ))
            }
        },
        (Some(_), Some(_), m) => {
            // `versionId` names the version an object operation acts on, not another operation.
            let sub =
                query.iter().map(|(k, _)| k.as_str()).find(|k| *k != "versionId" && SUBRESOURCES.contains(k));
            let multipart = if has("uploadId") {
                match *m {
                    Method::PUT if has("partNumber") => Some(O::UploadPart),
                    Method::POST => Some(O::CompleteMultipartUpload),
                    Method::DELETE => Some(O::AbortMultipartUpload),
                    Method::GET => Some(O::ListParts),
                    _ => return Err(not_implemented()),
                }
            } else if has("uploads") && *m == Method::POST {
                Some(O::CreateMultipartUpload)
            } else {
                None
            };
            match (m, sub, multipart) {
                (_, _, Some(op)) => op,
                (&Method::GET, Some("tagging"), None) => O::GetObjectTagging,
                (&Method::GET, Some("attributes"), None) => O::GetObjectAttributes,
                (&Method::GET, Some("torrent"), None) => O::GetObjectTorrent,
                (&Method::GET, Some("partNumber"), None) if query.len() <= 2 => O::GetObject,
                (&Method::HEAD, Some("partNumber"), None) if query.len() <= 2 => O::HeadObject,
                (&Method::PUT, Some("tagging"), None) => O::PutObjectTagging,
                (&Method::DELETE, Some("tagging"), None) => O::DeleteObjectTagging,
                (&Method::GET, Some("acl"), None) => O::GetObjectAcl,
                (&Method::PUT, Some("acl"), None) => O::PutObjectAcl,
                (&Method::GET, Some("retention"), None) => O::GetObjectRetention,
                (&Method::PUT, Some("retention"), None) => O::PutObjectRetention,
                (&Method::GET, Some("legal-hold"), None) => O::GetObjectLegalHold,
                (&Method::PUT, Some("legal-hold"), None) => O::PutObjectLegalHold,
                (_, Some(_), None) => return Err(not_implemented()),
                (&Method::PUT, None, None) => O::PutObject,
                (&Method::GET, None, None) => O::GetObject,
                (&Method::HEAD, None, None) => O::HeadObject,
                (&Method::DELETE, None, None) => O::DeleteObject,
                _ => {
                    return Err(S3Error::new(
                        S3ErrorCode::MethodNotAllowed,
                        "The specified method is not allowed against this resource.",
                    ))
                }
            }
        }
    };
    Ok(Route { operation, bucket, key, query, host_style })
}

/// Routes with the headers that change the operation (`x-amz-copy-source`).
pub fn route_with_headers(
    method: &Method,
    path: &str,
    query: &str,
    headers: &http::HeaderMap,
    domain: Option<&str>,
) -> Result<Route, S3Error> {
    let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok());
    let mut r = route(method, path, query, host, domain)?;
    if headers.contains_key("x-amz-copy-source") {
        match r.operation {
            Operation::PutObject => r.operation = Operation::CopyObject,
            Operation::UploadPart => r.operation = Operation::UploadPartCopy,
            _ => {}
        }
    }
    Ok(r)
}

/// The parameters object operations share: `versionId`, `uploadId`, `partNumber`, and the
/// `x-amz-copy-source` header.
fn invalid_version() -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, "Invalid version id specified")
        .with_detail("ArgumentName", "versionId")
}

/// Parses a version id: `null`, or one of ours: 32 hex digits as Strata writes them, or the
/// hyphenated form MinIO gave the versions `strata import minio` took over (so the ids clients
/// kept still name them). Anything else is `InvalidArgument`.
pub fn parse_version_id(value: &str) -> Result<Option<Uuid>, S3Error> {
    if value == "null" {
        return Ok(None);
    }
    let hyphenated = value.len() == 36 && value.chars().filter(|c| *c == '-').count() == 4;
    if value.len() != 32 && !hyphenated {
        return Err(invalid_version());
    }
    Uuid::try_parse(value).map(Some).map_err(|_| invalid_version())
}

/// The version the request's `versionId` names (the current one without it).
pub fn version_ref(route: &Route) -> Result<VersionRef, S3Error> {
    match route.param("versionId") {
        None => Ok(VersionRef::Current),
        Some("") => Err(S3Error::new(S3ErrorCode::InvalidArgument, "Version id cannot be the empty string")
            .with_detail("ArgumentName", "versionId")),
        Some(v) => parse_version_id(v).map(VersionRef::Id),
    }
}

pub(crate) fn upload_id(route: &Route) -> Result<Uuid, S3Error> {
    route.param("uploadId").and_then(|id| Uuid::try_parse(id).ok()).ok_or_else(|| {
        S3Error::new(
            S3ErrorCode::NoSuchUpload,
            "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        )
    })
}

/// `partNumber`, 1 to 10,000.
pub(crate) fn part_number(route: &Route) -> Result<u32, S3Error> {
    route
        .param("partNumber")
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=PART_NUMBER_MAX).contains(n))
        .ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Part number must be an integer between 1 and 10000, inclusive",
            )
        })
}

/// `/bucket/key` or `bucket/key`, URL-encoded, with an optional `?versionId=...`.
pub(crate) fn parse_source(value: &str) -> Result<(String, String), S3Error> {
    parse_source_version(value).map(|(b, k, _)| (b, k))
}

/// [`parse_source`] with the version it names.
pub(crate) fn parse_source_version(value: &str) -> Result<(String, String, VersionRef), S3Error> {
    let invalid = || {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
        )
    };
    let (path, query) = value.split_once('?').unwrap_or((value, ""));
    let which = match query.strip_prefix("versionId=") {
        _ if query.is_empty() => VersionRef::Current,
        Some(id) => VersionRef::Id(parse_version_id(id)?),
        None => return Err(invalid()),
    };
    let decoded = percent_decode_str(path.trim_start_matches('/')).decode_utf8().map_err(|_| invalid())?;
    let (bucket, key) = decoded.split_once('/').ok_or_else(invalid)?;
    if bucket.is_empty() || key.is_empty() {
        return Err(invalid());
    }
    Ok((bucket.to_owned(), key.to_owned(), which))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(m: Method, path: &str, q: &str) -> Result<Operation, S3ErrorCode> {
        route(&m, path, q, None, None).map(|r| r.operation).map_err(|e| e.code)
    }

    #[test]
    fn virtual_hosts_under_one_or_several_domains() {
        let bucket_key = |host: &str, domains: &str| {
            let r =
                route(&Method::GET, "/photos/2026/cat.jpg", "", Some(host), Some(domains)).expect("routes");
            (r.bucket.map(|b| b.as_str().to_owned()), r.key)
        };
        let one = bucket_key("media.example.com:9000", "example.com");
        assert_eq!(one, (Some("media".into()), Some("photos/2026/cat.jpg".into())));
        for domains in
            ["example.com,s3.example.com", "s3.example.com, example.com", " example.com ,s3.example.com,"]
        {
            let longest = bucket_key("media.s3.example.com", domains);
            assert_eq!(longest, (Some("media".into()), Some("photos/2026/cat.jpg".into())), "{domains}");
            let other = bucket_key("media.example.com", domains);
            assert_eq!(other.0.as_deref(), Some("media"), "{domains}");
        }
        // A host under none of them, or a domain itself: path style.
        let path_style = bucket_key("s3.example.com", "example.com,s3.example.com");
        assert_eq!(path_style, (Some("photos".into()), Some("2026/cat.jpg".into())));
        assert_eq!(bucket_key("127.0.0.1:9000", "example.com,other.org").0.as_deref(), Some("photos"));
    }

    #[test]
    fn an_operation_is_at_its_index_in_all() {
        for (i, op) in Operation::ALL.iter().enumerate() {
            assert_eq!(op.index(), i, "{op:?}");
        }
    }

    #[test]
    fn routes() {
        assert_eq!(op(Method::GET, "/", ""), Ok(Operation::ListBuckets));
        assert_eq!(op(Method::PUT, "/b", ""), Ok(Operation::CreateBucket));
        assert_eq!(op(Method::PUT, "/b/", ""), Ok(Operation::CreateBucket));
        assert_eq!(op(Method::GET, "/b", "list-type=2&prefix=a"), Ok(Operation::ListObjectsV2));
        assert_eq!(op(Method::GET, "/b", "location"), Ok(Operation::GetBucketLocation));
        assert_eq!(op(Method::PUT, "/b", "versioning"), Ok(Operation::PutBucketVersioning));
        assert_eq!(op(Method::GET, "/b/k", "versionId=0192"), Ok(Operation::GetObject));
        assert_eq!(op(Method::DELETE, "/b/k", "versionId=0192"), Ok(Operation::DeleteObject));
        assert_eq!(op(Method::GET, "/b/k", "versionId=0192&tagging"), Ok(Operation::GetObjectTagging));
        assert_eq!(op(Method::PUT, "/b/k", "tagging"), Ok(Operation::PutObjectTagging));
        assert_eq!(op(Method::PUT, "/b", "tagging"), Ok(Operation::PutBucketTagging));
        assert_eq!(op(Method::PUT, "/b", "cors"), Ok(Operation::PutBucketCors));
        assert_eq!(op(Method::PUT, "/b", "lifecycle"), Ok(Operation::PutBucketLifecycleConfiguration));
        assert_eq!(op(Method::GET, "/b", "lifecycle"), Ok(Operation::GetBucketLifecycleConfiguration));
        assert_eq!(op(Method::DELETE, "/b", "lifecycle"), Ok(Operation::DeleteBucketLifecycle));
        assert_eq!(op(Method::PUT, "/b", "replication"), Ok(Operation::PutBucketReplication));
        assert_eq!(op(Method::GET, "/b", "replication"), Ok(Operation::GetBucketReplication));
        assert_eq!(op(Method::DELETE, "/b", "replication"), Ok(Operation::DeleteBucketReplication));
        assert_eq!(op(Method::PUT, "/b", "website"), Err(S3ErrorCode::NotImplemented));
        assert_eq!(op(Method::PUT, "/b", "object-lock"), Ok(Operation::PutObjectLockConfiguration));
        assert_eq!(op(Method::PUT, "/b/k", "retention&versionId=null"), Ok(Operation::PutObjectRetention));
        assert_eq!(op(Method::GET, "/b/k", "legal-hold"), Ok(Operation::GetObjectLegalHold));
        assert_eq!(op(Method::PUT, "/b", "policy"), Ok(Operation::PutBucketPolicy));
        assert_eq!(op(Method::GET, "/b", "policy"), Ok(Operation::GetBucketPolicy));
        assert_eq!(op(Method::DELETE, "/b", "policy"), Ok(Operation::DeleteBucketPolicy));
        assert_eq!(op(Method::GET, "/b", "policyStatus"), Ok(Operation::GetBucketPolicyStatus));
        assert_eq!(op(Method::POST, "/b/k", "uploads"), Ok(Operation::CreateMultipartUpload));
        assert_eq!(op(Method::PUT, "/b/k", "partNumber=1&uploadId=x"), Ok(Operation::UploadPart));
        assert_eq!(op(Method::POST, "/b/k", "uploadId=x"), Ok(Operation::CompleteMultipartUpload));
        assert_eq!(op(Method::DELETE, "/b/k", "uploadId=x"), Ok(Operation::AbortMultipartUpload));
        assert_eq!(op(Method::GET, "/b/k", "uploadId=x"), Ok(Operation::ListParts));
        assert_eq!(op(Method::GET, "/b", "uploads"), Ok(Operation::ListMultipartUploads));
        assert_eq!(op(Method::POST, "/b", "delete"), Ok(Operation::DeleteObjects));
        assert_eq!(op(Method::GET, "/b", "versions"), Ok(Operation::ListObjectVersions));
        assert_eq!(op(Method::GET, "/b/k", "acl"), Ok(Operation::GetObjectAcl));
        assert_eq!(op(Method::PUT, "/b", "acl"), Ok(Operation::PutBucketAcl));
        assert_eq!(op(Method::PUT, "/b/k", "uploadId=x"), Err(S3ErrorCode::NotImplemented));
        assert_eq!(op(Method::GET, "/b/k", "x-id=GetObject"), Ok(Operation::GetObject));
        assert_eq!(op(Method::GET, "/b/k", "versionId=null"), Ok(Operation::GetObject));
        assert_eq!(op(Method::POST, "/b/k", ""), Err(S3ErrorCode::MethodNotAllowed));
        assert_eq!(op(Method::POST, "/b", ""), Ok(Operation::PostObject));
        assert_eq!(op(Method::GET, "/b/k", "torrent"), Ok(Operation::GetObjectTorrent));
        assert_eq!(op(Method::GET, "/b", "torrent"), Err(S3ErrorCode::NotImplemented));
        let listen =
            "ping=10&prefix=p&suffix=s&events=s3%3AObjectCreated%3A%2A&events=s3%3AObjectRemoved%3A%2A";
        assert_eq!(op(Method::GET, "/b", listen), Ok(Operation::ListenBucketNotification));
        assert_eq!(op(Method::GET, "/", listen), Ok(Operation::ListenNotification));
        assert_eq!(op(Method::GET, "/b", "prefix=p"), Ok(Operation::ListObjects));
        assert_eq!(op(Method::GET, "/b/k", "events=x"), Ok(Operation::GetObject));
        assert_eq!(op(Method::PUT, "/b", "events=x"), Ok(Operation::CreateBucket));
        let r = route(&Method::GET, "/b//a%20b/../c", "", None, None).expect("route");
        assert_eq!((r.bucket.as_deref(), r.key.as_deref()), (Some("b"), Some("/a b/../c")));
    }

    #[test]
    fn virtual_host() {
        let r =
            route(&Method::GET, "/k/x", "", Some("mybucket.s3.local:9000"), Some("s3.local")).expect("route");
        assert_eq!(
            (r.bucket.as_deref(), r.key.as_deref(), r.operation),
            (Some("mybucket"), Some("k/x"), Operation::GetObject)
        );
        let r = route(&Method::GET, "/b/k", "", Some("s3.local:9000"), Some("s3.local")).expect("route");
        assert_eq!(r.bucket.as_deref(), Some("b"));
    }

    #[test]
    fn sources() {
        assert_eq!(parse_source("/b/k%20x/y").expect("ok"), ("b".into(), "k x/y".into()));
        assert_eq!(parse_source("b/k?versionId=null").expect("ok"), ("b".into(), "k".into()));
        assert!(parse_source("b").is_err());
        assert!(parse_source("/b/").is_err());
        assert_eq!(
            parse_source("b/k?versionId=abc").map_err(|e| e.code).err(),
            Some(S3ErrorCode::InvalidArgument)
        );
        let id = uuid::Uuid::now_v7();
        let with_id = format!("b/k?versionId={}", id.simple());
        assert_eq!(
            parse_source_version(&with_id).ok().map(|s| s.2),
            Some(strata_object::VersionRef::Id(Some(id)))
        );
        assert_eq!(
            parse_source_version("b/k?other=1").map_err(|e| e.code).err(),
            Some(S3ErrorCode::InvalidArgument)
        );
    }

    #[test]
    fn version_ids() {
        let id = uuid::Uuid::now_v7();
        assert_eq!(parse_version_id(&crate::version::version_string(Some(id))).ok(), Some(Some(id)));
        assert_eq!(parse_version_id("null").ok(), Some(None));
        assert_eq!(parse_version_id(&id.hyphenated().to_string()).ok(), Some(Some(id)), "MinIO's spelling");
        let braced = id.braced().to_string();
        let urn = id.urn().to_string();
        for bad in ["", "abc", "NULL", &braced, &urn, "zz0000000000000000000000000000zz"] {
            assert_eq!(
                parse_version_id(bad).map_err(|e| e.code).err(),
                Some(S3ErrorCode::InvalidArgument),
                "{bad}"
            );
        }
    }

    #[test]
    fn resolved_names_are_validated_for_every_operation() {
        let resolve = |m: Method, path: &str, q: &str| {
            route(&m, path, q, None, None).expect("routes").resolve().map_err(|e| e.code)
        };
        let long = format!("/b-1/{}", "k".repeat(1025));
        // Every object operation validates its key, Complete, Abort and ListParts included.
        for (m, q) in [
            (Method::PUT, ""),
            (Method::GET, ""),
            (Method::POST, "uploadId=0192"),
            (Method::DELETE, "uploadId=0192"),
            (Method::GET, "uploadId=0192"),
        ] {
            assert_eq!(resolve(m.clone(), &long, q), Err(S3ErrorCode::KeyTooLongError), "{m} {q}");
        }
        // A version is parsed where the operation takes one, and ignored where it does not.
        assert_eq!(resolve(Method::GET, "/b-1/k", "versionId=bad"), Err(S3ErrorCode::InvalidArgument));
        assert!(matches!(
            resolve(Method::PUT, "/b-1/k", "versionId=bad"),
            Ok(Resolved::Object(
                ObjectOperation::PutObject,
                ObjectTarget { version: VersionRef::Current, .. }
            ))
        ));
        let id = uuid::Uuid::now_v7();
        let named = format!("versionId={}", id.simple());
        match resolve(Method::GET, "/b-1/k", &named) {
            Ok(Resolved::Object(ObjectOperation::GetObject, t)) => {
                assert_eq!(
                    (t.bucket.as_str(), t.key.as_str(), t.version),
                    ("b-1", "k", VersionRef::Id(Some(id)))
                )
            }
            other => panic!("{other:?}"),
        }
        // A name no bucket can have: refused as invalid when made, as missing otherwise.
        assert_eq!(resolve(Method::PUT, "/Bad_Name", ""), Err(S3ErrorCode::InvalidBucketName));
        assert_eq!(resolve(Method::GET, "/Bad_Name", "list-type=2"), Err(S3ErrorCode::NoSuchBucket));
        assert_eq!(resolve(Method::GET, "/Bad_Name/k", ""), Err(S3ErrorCode::NoSuchBucket));
        assert_eq!(resolve(Method::GET, "/", ""), Ok(Resolved::Service(ServiceOperation::ListBuckets)));
        assert!(matches!(
            resolve(Method::DELETE, "/b-1", "lifecycle"),
            Ok(Resolved::Bucket(BucketOperation::DeleteBucketLifecycle, b)) if b.as_str() == "b-1"
        ));
    }
}
