//! Dispatch: one S3 request, already admitted by the front door, routed to its operation,
//! authenticated, authorized, its headers checked, and handed to the handler the operation
//! names. This module imports every handler; nothing in this crate imports it.

use http::HeaderMap;
use hyper::body::Incoming;
use strata_types::limits::{LISTEN_CLIENT_MEMORY, REQUEST_MEMORY_STREAM, XML_BODY_SIZE_MAX};

use crate::access::Access;
use crate::budget::Admission;
use crate::context::{Node, Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{route_with_headers, Operation};
use crate::{
    acl, bucket, bucket_policy, copy, cors, delete, encryption, lifecycle, listen, multipart, notification,
    object, object_lock, post, tagging, versioning,
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

/// Serves one S3 request: the operation's name (for metrics) and its reply or error.
pub async fn dispatch(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    admission: &Admission,
) -> (String, Result<Reply, S3Error>) {
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    match route_with_headers(&parts.method, path, query, &parts.headers, node.config.domain.as_deref()) {
        Ok(route) => {
            let api = route.operation.name().to_owned();
            let served = match admission.reserve(memory_need(&route.operation, &parts.headers)) {
                Ok(()) => serve_route(node, parts, body, route, admission).await,
                Err(e) => Err(e),
            };
            (api, served)
        }
        Err(e) => ("Unknown".to_owned(), Err(e)),
    }
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
        let bucket = route.bucket.as_deref().unwrap_or("");
        return post::post_object(node, admission, parts, body, bucket)
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
    let bucket = route.bucket.as_deref().unwrap_or("");
    let key = route.key.as_deref().unwrap_or("");
    let resource = (route.bucket.clone(), route.key.clone());
    use Operation as O;
    let result = match route.operation {
        O::ListBuckets => bucket::list_buckets(&req, &route, &|b| access.may_list(node, b, &checked)).await,
        O::CreateBucket => bucket::create_bucket(&req, bucket, object::request_body(&req, body)?).await,
        O::DeleteBucket => bucket::delete_bucket(&req, bucket).await,
        O::HeadBucket => bucket::head_bucket(&req, bucket).await,
        O::GetBucketLocation => bucket::get_bucket_location(&req, bucket).await,
        O::GetBucketVersioning => versioning::get_bucket_versioning(&req, bucket).await,
        O::PutBucketVersioning => {
            versioning::put_bucket_versioning(&req, bucket, object::request_body(&req, body)?).await
        }
        O::ListObjectsV2 => bucket::list_objects_v2(&req, bucket, &route).await,
        O::ListObjects => bucket::list_objects_v1(&req, bucket, &route).await,
        O::PutObject => object::put_object(&req, bucket, key, object::request_body(&req, body)?).await,
        O::GetObject => object::get_object(&req, bucket, key, &route, false).await,
        O::HeadObject => object::get_object(&req, bucket, key, &route, true).await,
        O::DeleteObject => {
            let bypass =
                bypass_asked(&parts.headers) && access.may_bypass_governance(node, bucket, key, &checked);
            object::delete_object(&req, bucket, key, &route, bypass).await
        }
        O::CreateMultipartUpload => multipart::create(&req, bucket, key).await,
        O::UploadPart => {
            multipart::upload_part(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::CompleteMultipartUpload => {
            multipart::complete(&req, bucket, key, &route, object::complete_body(&req, body)?).await
        }
        O::AbortMultipartUpload => multipart::abort(&req, bucket, key, &route).await,
        O::ListParts => multipart::list_parts(&req, bucket, key, &route).await,
        O::ListMultipartUploads => multipart::list_uploads(&req, bucket, &route).await,
        O::CopyObject => copy::copy_object(&req, bucket, key).await,
        O::UploadPartCopy => copy::upload_part_copy(&req, bucket, key, &route).await,
        O::PostObject => {
            Err(S3Error::new(S3ErrorCode::InternalError, "PostObject is served before authentication"))
        }
        O::GetObjectTagging => tagging::get_object_tagging(&req, bucket, key, &route).await,
        O::GetObjectAttributes => object::get_object_attributes(&req, bucket, key, &route).await,
        O::GetObjectTorrent => object::get_object_torrent(&req, bucket, key).await,
        O::GetBucketEncryption => encryption::get_bucket_encryption(&req, bucket).await,
        O::PutBucketEncryption => {
            encryption::put_bucket_encryption(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketEncryption => encryption::delete_bucket_encryption(&req, bucket).await,
        O::GetBucketCors => cors::get_bucket_cors(&req, bucket).await,
        O::PutBucketCors => cors::put_bucket_cors(&req, bucket, object::request_body(&req, body)?).await,
        O::DeleteBucketCors => cors::delete_bucket_cors(&req, bucket).await,
        O::GetBucketTagging => tagging::get_bucket_tagging(&req, bucket).await,
        O::PutBucketTagging => {
            tagging::put_bucket_tagging(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketTagging => tagging::delete_bucket_tagging(&req, bucket).await,
        O::PutObjectTagging => {
            tagging::put_object_tagging(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::DeleteObjectTagging => tagging::delete_object_tagging(&req, bucket, key, &route).await,
        O::ListObjectVersions => versioning::list_object_versions(&req, bucket, &route).await,
        O::GetBucketAcl => acl::get_bucket_acl(&req, bucket).await,
        O::PutBucketAcl => acl::put_bucket_acl(&req, bucket, object::request_body(&req, body)?).await,
        O::GetObjectAcl => acl::get_object_acl(&req, bucket, key, &route).await,
        O::PutObjectAcl => {
            acl::put_object_acl(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::GetBucketOwnershipControls => acl::get_bucket_ownership_controls(&req, bucket).await,
        O::PutBucketOwnershipControls => {
            acl::put_bucket_ownership_controls(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketOwnershipControls => acl::delete_bucket_ownership_controls(&req, bucket).await,
        O::GetPublicAccessBlock => acl::get_public_access_block(&req, bucket).await,
        O::PutPublicAccessBlock => {
            acl::put_public_access_block(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeletePublicAccessBlock => acl::delete_public_access_block(&req, bucket).await,
        O::GetBucketPolicy => bucket_policy::get_bucket_policy(&req, bucket).await,
        O::PutBucketPolicy => {
            bucket_policy::put_bucket_policy(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketPolicy => bucket_policy::delete_bucket_policy(&req, bucket).await,
        O::GetBucketPolicyStatus => bucket_policy::get_bucket_policy_status(&req, bucket).await,
        O::GetObjectLockConfiguration => object_lock::get_object_lock_configuration(&req, bucket).await,
        O::PutObjectLockConfiguration => {
            object_lock::put_object_lock_configuration(&req, bucket, object::request_body(&req, body)?).await
        }
        O::GetObjectRetention => object_lock::get_object_retention(&req, bucket, key, &route).await,
        O::PutObjectRetention => {
            let bypass =
                bypass_asked(&parts.headers) && access.may_bypass_governance(node, bucket, key, &checked);
            let body = object::request_body(&req, body)?;
            object_lock::put_object_retention(&req, bucket, key, &route, body, bypass).await
        }
        O::GetObjectLegalHold => object_lock::get_object_legal_hold(&req, bucket, key, &route).await,
        O::PutObjectLegalHold => {
            object_lock::put_object_legal_hold(&req, bucket, key, &route, object::request_body(&req, body)?)
                .await
        }
        O::GetBucketNotificationConfiguration => {
            notification::get_bucket_notification_configuration(&req, bucket).await
        }
        O::PutBucketNotificationConfiguration => {
            let body = object::request_body(&req, body)?;
            notification::put_bucket_notification_configuration(&req, bucket, body).await
        }
        O::GetBucketLifecycleConfiguration => {
            lifecycle::get_bucket_lifecycle_configuration(&req, bucket).await
        }
        O::PutBucketLifecycleConfiguration => {
            let body = object::request_body(&req, body)?;
            lifecycle::put_bucket_lifecycle_configuration(&req, bucket, body).await
        }
        O::DeleteBucketLifecycle => lifecycle::delete_bucket_lifecycle(&req, bucket).await,
        O::ListenBucketNotification => listen::listen_notification(&req, Some(bucket), &route).await,
        O::ListenNotification => listen::listen_notification(&req, None, &route).await,
        O::DeleteObjects => {
            let allowed = |k: &str, v: Option<&str>| access.may_delete(node, bucket, k, v, &checked);
            let asked = bypass_asked(&parts.headers);
            let bypass = |k: &str| asked && access.may_bypass_governance(node, bucket, k, &checked);
            let rights = delete::Rights { allowed: &allowed, bypass: &bypass };
            delete::delete_objects(&req, bucket, object::request_body(&req, body)?, &rights).await
        }
    };
    let result = result.map_err(|e| access.hide_missing(node, bucket, &checked, e));
    result.map_err(|e| e.with_resource(resource.0.as_deref(), resource.1.as_deref()))
}
