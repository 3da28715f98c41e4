//! Dispatch: one S3 request, already admitted by the front door, routed to its operation,
//! authenticated, authorized, its headers checked, and handed to the handler the operation
//! names. This module imports every handler; nothing in this crate imports it.

use http::HeaderMap;
use hyper::body::Incoming;
use strata_metrics::bucket::BucketCall;
use strata_types::limits::{LISTEN_CLIENT_MEMORY, REQUEST_MEMORY_STREAM, XML_BODY_SIZE_MAX};
use strata_types::BucketName;

use crate::access::{Access, Checked};
use crate::budget::Admission;
use crate::context::{Node, Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{
    route_with_headers, BucketOperation, ObjectOperation, ObjectTarget, Operation, Resolved, Route,
    ServiceOperation,
};
use crate::{
    acl, bucket, bucket_policy, copy, cors, delete, encryption, lifecycle, listen, multipart, notification,
    object, object_lock, post, replication, tagging, versioning,
};

/// The reply of an error: its XML document (none for HEAD, or `304 Not Modified`), its status,
/// and its headers.
pub fn error_reply(e: &S3Error, request_id: &str, is_head: bool) -> Reply {
    let mut r = if is_head || e.code == S3ErrorCode::NotModified {
        Reply::empty(e.code.status())
    } else {
        let mut r = Reply::xml(e.to_xml(request_id));
        r.status = e.code.status();
        r
    };
    for (name, value) in &e.headers {
        r = r.header(name, value);
    }
    r
}

/// Serves one S3 request: the operation's name (for metrics), its count on its bucket (while
/// the bucket is counted: see `strata_metrics::bucket`), and its reply or error.
pub async fn dispatch(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    admission: &Admission,
) -> (String, Option<BucketCall>, Result<Reply, S3Error>) {
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    match route_with_headers(&parts.method, path, query, &parts.headers, node.config.domain.as_deref()) {
        Ok(route) => {
            let api = route.operation.name().to_owned();
            let call = count_on_bucket(node, &route);
            let served = match admission.reserve(memory_need(&route.operation, &parts.headers)) {
                Ok(()) => serve_route(node, parts, body, route, admission).await,
                Err(e) => Err(e),
            };
            (api, call, served)
        }
        Err(e) => ("Unknown".to_owned(), None, Err(e)),
    }
}

/// Starts counting the request on its bucket, if it names one that exists (the system's own
/// buckets are never counted: no request reaches them).
fn count_on_bucket(node: &Node, route: &Route) -> Option<BucketCall> {
    let bucket = route.bucket.as_deref().filter(|b| !b.starts_with('.'))?;
    let exists = || node.layer.bucket_info(bucket).is_ok();
    node.metrics.buckets.start(bucket, route.operation.index(), Operation::ALL.len(), exists)
}

/// Buffer memory an operation needs beyond [`REQUEST_MEMORY_BASE`], known from its request
/// alone. A GET reserves once it knows the size of what it streams (see `object::get_object`).
fn memory_need(operation: &Operation, headers: &HeaderMap) -> u64 {
    use Operation as O;
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match operation {
        O::PutObject | O::UploadPart | O::PostObject => {
            declared.map_or(REQUEST_MEMORY_STREAM, |n| n.min(REQUEST_MEMORY_STREAM))
        }
        O::CopyObject | O::UploadPartCopy => 2 * REQUEST_MEMORY_STREAM,
        O::GetObject | O::HeadObject => 0,
        // The listener's queue, held while its stream lasts.
        O::ListenBucketNotification | O::ListenNotification => LISTEN_CLIENT_MEMORY,
        // Bodies read whole into memory: XML documents, bounded.
        _ => declared.unwrap_or(0).min(XML_BODY_SIZE_MAX as u64),
    }
}

/// Does the request name one of the system's buckets (names S3 does not allow: `.strata-sys`),
/// as its bucket or as a copy's source?
fn touches_system_bucket(route: &crate::router::Route, headers: &HeaderMap) -> bool {
    let hidden = |b: &str| b.starts_with('.');
    let source = headers.get("x-amz-copy-source").and_then(|v| v.to_str().ok());
    let source_bucket = source.and_then(|s| crate::router::parse_source(s).ok()).map(|(b, _)| b);
    route.bucket.as_deref().is_some_and(hidden) || source_bucket.as_deref().is_some_and(hidden)
}

/// `x-amz-bypass-governance-retention: true`: the caller asks to lift GOVERNANCE retention
/// (granted only with `s3:BypassGovernanceRetention`).
fn bypass_asked(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-bypass-governance-retention")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

async fn serve_route(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    route: crate::router::Route,
    admission: &Admission,
) -> Result<Reply, S3Error> {
    if touches_system_bucket(&route, &parts.headers) {
        // The system's own buckets (`.strata-sys`: the IAM state): no S3 request reaches them.
        return Err(S3Error::new(S3ErrorCode::AccessDenied, "Access Denied."));
    }
    if route.operation == Operation::PostObject {
        // Authorised by the signed policy inside the form, not by the request's signature.
        return post::post_object(node, admission, parts, body, &route)
            .await
            .map_err(|e| e.with_resource(route.bucket.as_deref(), None));
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let host_bucket = route.bucket.as_deref().filter(|_| route.host_style);
    let (access, verified) = Access::authenticate(node, parts, now, host_bucket)?;
    let checked = access.authorize(node, &route, &parts.headers).await?;
    let auth = verified.unwrap_or_else(crate::access::anonymous);
    if let Err(refused) = crate::headers::check_headers(route.operation, &parts.headers) {
        // A missing bucket is named first, as AWS does, whatever else the request asks for.
        if let Some(b) = route.bucket.as_deref().filter(|_| route.operation != Operation::CreateBucket) {
            node.layer.bucket_info(b).map_err(|e| S3Error::from(e).with_resource(Some(b), None))?;
        }
        return Err(refused.with_resource(route.bucket.as_deref(), route.key.as_deref()));
    }
    let origin = crate::context::Origin::of(parts);
    let tls = parts.extensions.get::<crate::context::ConnInfo>().is_some_and(|c| c.tls);
    let req = Request { node, headers: &parts.headers, auth: &auth, admission, origin, tls };
    let call = Call { req: &req, route: &route, access: &access, checked: &checked };
    let result = match route.resolve() {
        Ok(Resolved::Service(op)) => call.service(op).await,
        Ok(Resolved::Bucket(op, bucket)) => call.bucket(op, &bucket, body).await,
        Ok(Resolved::Object(op, target)) => call.object(op, &target, body).await,
        Err(e) => Err(e),
    };
    let (bucket, key) = (route.bucket.as_deref(), route.key.as_deref());
    let result = match bucket {
        Some(b) => result.map_err(|e| access.hide_missing(node, b, &checked, e)),
        None => result,
    };
    result.map_err(|e| e.with_resource(bucket, key))
}

/// The request body as a handler reads it (each operation takes it at most once); its error
/// returns from the calling function.
macro_rules! request_body {
    ($req:expr, $body:expr) => {
        object::request_body($req, $body)?
    };
}

/// One authenticated, authorised request on its way to its handler.
struct Call<'a> {
    req: &'a Request<'a>,
    route: &'a Route,
    access: &'a Access,
    checked: &'a Checked,
}

impl Call<'_> {
    /// `x-amz-bypass-governance-retention: true` on `bucket/key`, asked and allowed.
    fn bypass(&self, bucket: &str, key: &str) -> bool {
        bypass_asked(self.req.headers)
            && self.access.may_bypass_governance(self.req.node, bucket, key, self.checked)
    }

    async fn service(&self, op: ServiceOperation) -> Result<Reply, S3Error> {
        let (req, node) = (self.req, self.req.node);
        match op {
            ServiceOperation::ListBuckets => {
                bucket::list_buckets(req, self.route, &|b| self.access.may_list(node, b, self.checked)).await
            }
            ServiceOperation::ListenNotification => listen::listen_notification(req, None, self.route).await,
        }
    }

    async fn bucket(
        &self,
        op: BucketOperation,
        bucket: &BucketName,
        body: Incoming,
    ) -> Result<Reply, S3Error> {
        use BucketOperation as O;
        let (req, route) = (self.req, self.route);
        match op {
            O::CreateBucket => bucket::create_bucket(req, bucket, request_body!(req, body)).await,
            O::DeleteBucket => bucket::delete_bucket(req, bucket).await,
            O::HeadBucket => bucket::head_bucket(req, bucket).await,
            O::GetBucketLocation => bucket::get_bucket_location(req, bucket).await,
            O::GetBucketVersioning => versioning::get_bucket_versioning(req, bucket).await,
            O::PutBucketVersioning => {
                versioning::put_bucket_versioning(req, bucket, request_body!(req, body)).await
            }
            O::ListObjectsV2 => bucket::list_objects_v2(req, bucket, route).await,
            O::ListObjects => bucket::list_objects_v1(req, bucket, route).await,
            O::ListMultipartUploads => multipart::list_uploads(req, bucket, route).await,
            O::ListObjectVersions => versioning::list_object_versions(req, bucket, route).await,
            O::PostObject => {
                Err(S3Error::new(S3ErrorCode::InternalError, "PostObject is served before authentication"))
            }
            O::GetBucketEncryption => encryption::get_bucket_encryption(req, bucket).await,
            O::PutBucketEncryption => {
                encryption::put_bucket_encryption(req, bucket, request_body!(req, body)).await
            }
            O::DeleteBucketEncryption => encryption::delete_bucket_encryption(req, bucket).await,
            O::GetBucketCors => cors::get_bucket_cors(req, bucket).await,
            O::PutBucketCors => cors::put_bucket_cors(req, bucket, request_body!(req, body)).await,
            O::DeleteBucketCors => cors::delete_bucket_cors(req, bucket).await,
            O::GetBucketTagging => tagging::get_bucket_tagging(req, bucket).await,
            O::PutBucketTagging => tagging::put_bucket_tagging(req, bucket, request_body!(req, body)).await,
            O::DeleteBucketTagging => tagging::delete_bucket_tagging(req, bucket).await,
            O::GetBucketAcl => acl::get_bucket_acl(req, bucket).await,
            O::PutBucketAcl => acl::put_bucket_acl(req, bucket, request_body!(req, body)).await,
            O::GetBucketOwnershipControls => acl::get_bucket_ownership_controls(req, bucket).await,
            O::PutBucketOwnershipControls => {
                acl::put_bucket_ownership_controls(req, bucket, request_body!(req, body)).await
            }
            O::DeleteBucketOwnershipControls => acl::delete_bucket_ownership_controls(req, bucket).await,
            O::GetPublicAccessBlock => acl::get_public_access_block(req, bucket).await,
            O::PutPublicAccessBlock => {
                acl::put_public_access_block(req, bucket, request_body!(req, body)).await
            }
            O::DeletePublicAccessBlock => acl::delete_public_access_block(req, bucket).await,
            O::GetBucketPolicy => bucket_policy::get_bucket_policy(req, bucket).await,
            O::PutBucketPolicy => {
                bucket_policy::put_bucket_policy(req, bucket, request_body!(req, body)).await
            }
            O::DeleteBucketPolicy => bucket_policy::delete_bucket_policy(req, bucket).await,
            O::GetBucketPolicyStatus => bucket_policy::get_bucket_policy_status(req, bucket).await,
            O::GetObjectLockConfiguration => object_lock::get_object_lock_configuration(req, bucket).await,
            O::PutObjectLockConfiguration => {
                object_lock::put_object_lock_configuration(req, bucket, request_body!(req, body)).await
            }
            O::GetBucketNotificationConfiguration => {
                notification::get_bucket_notification_configuration(req, bucket).await
            }
            O::PutBucketNotificationConfiguration => {
                notification::put_bucket_notification_configuration(req, bucket, request_body!(req, body))
                    .await
            }
            O::GetBucketLifecycleConfiguration => {
                lifecycle::get_bucket_lifecycle_configuration(req, bucket).await
            }
            O::PutBucketLifecycleConfiguration => {
                lifecycle::put_bucket_lifecycle_configuration(req, bucket, request_body!(req, body)).await
            }
            O::DeleteBucketLifecycle => lifecycle::delete_bucket_lifecycle(req, bucket).await,
            O::GetBucketReplication => replication::get_bucket_replication(req, bucket).await,
            O::PutBucketReplication => {
                replication::put_bucket_replication(req, bucket, request_body!(req, body)).await
            }
            O::DeleteBucketReplication => replication::delete_bucket_replication(req, bucket).await,
            O::ListenBucketNotification => listen::listen_notification(req, Some(bucket), route).await,
            O::DeleteObjects => {
                let node = req.node;
                let allowed = |k: &str, v: Option<&str>, etag: Option<&str>| {
                    self.access.may_delete(node, bucket, k, v, etag, self.checked)
                };
                let bypass = |k: &str| self.bypass(bucket, k);
                let rights = delete::Rights { allowed: &allowed, bypass: &bypass };
                delete::delete_objects(req, bucket, request_body!(req, body), &rights).await
            }
        }
    }

    async fn object(
        &self,
        op: ObjectOperation,
        target: &ObjectTarget,
        body: Incoming,
    ) -> Result<Reply, S3Error> {
        use ObjectOperation as O;
        let (req, route) = (self.req, self.route);
        match op {
            O::PutObject => object::put_object(req, target, request_body!(req, body)).await,
            O::GetObject => object::get_object(req, target, route, false).await,
            O::HeadObject => object::get_object(req, target, route, true).await,
            O::DeleteObject => {
                let bypass = self.bypass(&target.bucket, &target.key);
                object::delete_object(req, target, bypass).await
            }
            O::CreateMultipartUpload => multipart::create(req, target).await,
            O::UploadPart => multipart::upload_part(req, target, route, request_body!(req, body)).await,
            O::CompleteMultipartUpload => {
                multipart::complete(req, target, route, object::complete_body(req, body)?).await
            }
            O::AbortMultipartUpload => multipart::abort(req, target, route).await,
            O::ListParts => multipart::list_parts(req, target, route).await,
            O::CopyObject => copy::copy_object(req, target).await,
            O::UploadPartCopy => copy::upload_part_copy(req, target, route).await,
            O::GetObjectTagging => tagging::get_object_tagging(req, target).await,
            O::PutObjectTagging => {
                let allowed = |tags: &_| self.access.may_put_tags(req.node, self.checked, tags);
                tagging::put_object_tagging(req, target, request_body!(req, body), &allowed).await
            }
            O::DeleteObjectTagging => tagging::delete_object_tagging(req, target).await,
            O::GetObjectAttributes => object::get_object_attributes(req, target).await,
            O::GetObjectTorrent => object::get_object_torrent(req, target).await,
            O::GetObjectAcl => acl::get_object_acl(req, target).await,
            O::PutObjectAcl => acl::put_object_acl(req, target, request_body!(req, body)).await,
            O::GetObjectRetention => object_lock::get_object_retention(req, target).await,
            O::PutObjectRetention => {
                let bypass = self.bypass(&target.bucket, &target.key);
                object_lock::put_object_retention(req, target, request_body!(req, body), bypass).await
            }
            O::GetObjectLegalHold => object_lock::get_object_legal_hold(req, target).await,
            O::PutObjectLegalHold => {
                object_lock::put_object_legal_hold(req, target, request_body!(req, body)).await
            }
        }
    }
}
