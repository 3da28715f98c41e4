//! CopyObject: the source streams through the destination's PUT path (never whole in memory).
//! An encrypted source is opened with its own key (`x-amz-copy-source-server-side-encryption-
//! customer-*` for SSE-C) and the destination sealed as its request (or bucket default) asks,
//! so any combination of plain, SSE-S3, SSE-KMS and SSE-C copies.

use http::HeaderMap;
use strata_crypto::package::ObjectCipher;
use strata_object::{ObjectError, ObjectInfo, OpenObject, PutOptions, StreamBody, VersionRef};

use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::object::{check_conditions_with, put_options};
use crate::router::ObjectTarget;
use crate::xml;

/// The `x-amz-copy-source-if-*` headers, checked as GET's conditionals are.
fn copy_conditions(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (from, to) in [
        ("x-amz-copy-source-if-match", "if-match"),
        ("x-amz-copy-source-if-none-match", "if-none-match"),
        ("x-amz-copy-source-if-modified-since", "if-modified-since"),
        ("x-amz-copy-source-if-unmodified-since", "if-unmodified-since"),
    ] {
        if let Some(v) = headers.get(from) {
            out.insert(to, v.clone());
        }
    }
    out
}

/// Opens the copy source for reading and checks its `x-amz-copy-source-if-*` conditions; with
/// the cipher of its data when it is encrypted. A delete marker cannot be copied: the current
/// one is `NoSuchKey`, one named by its id `InvalidRequest`, as AWS answers.
async fn open_source(
    req: &Request<'_>,
    bucket: &str,
    key: &str,
    which: VersionRef,
) -> Result<(OpenObject, Option<ObjectCipher>), S3Error> {
    let open = match req.node.layer.open_object_version(bucket, key, which, true).await {
        Err(ObjectError::DeleteMarker { current: false, .. }) => Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "The source of a copy request may not specifically refer to a delete marker by version id.",
        )),
        other => other.map_err(S3Error::from),
    }
    .map_err(|e| e.with_resource(Some(bucket), Some(key)))?;
    let (cipher, _) =
        crate::sse::open_stored(req, open.info.sse.as_ref(), crate::sse::COPY_SOURCE_CUSTOMER).await?;
    check_conditions_with(&copy_conditions(req.headers), &open.info, true)?;
    Ok((open, cipher))
}

/// The source's plaintext bytes `[offset, offset + len)`.
fn source_body(open: OpenObject, cipher: Option<ObjectCipher>, offset: u64, len: u64) -> StreamBody {
    StreamBody(match cipher {
        Some(c) => open.stream_decrypted(c, offset, len),
        None => open.stream(offset, len),
    })
}

/// `x-amz-copy-source-version-id` naming the version copied, when its bucket names versions.
fn source_version(
    req: &Request<'_>,
    reply: Reply,
    bucket: &str,
    which: VersionRef,
    id: Option<uuid::Uuid>,
) -> Result<Reply, S3Error> {
    if which == VersionRef::Current && !req.shows_versions(bucket)? {
        return Ok(reply);
    }
    Ok(reply.header("x-amz-copy-source-version-id", &crate::version::version_string(id)))
}

pub async fn copy_object(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let source = req.headers.get("x-amz-copy-source").and_then(|v| v.to_str().ok()).unwrap_or("");
    let (src_bucket, src_key, which) = crate::router::parse_source_version(source)?;
    let replace = match req.headers.get("x-amz-metadata-directive").and_then(|v| v.to_str().ok()) {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(_) => return Err(S3Error::new(S3ErrorCode::InvalidArgument, "Unknown metadata directive.")),
    };
    let encrypting = ["x-amz-server-side-encryption", "x-amz-server-side-encryption-customer-algorithm"]
        .iter()
        .any(|h| req.headers.contains_key(*h));
    if src_bucket == bucket.as_str()
        && src_key == key.as_str()
        && !replace
        && !encrypting
        && which == VersionRef::Current
    {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
        ));
    }
    let layer = &req.node.layer;
    let (open, cipher) = open_source(req, &src_bucket, &src_key, which).await?;
    let source_info: ObjectInfo = open.info.clone();
    let mut opts = put_options(req)?;
    crate::object_lock::lock_options(req.headers, &mut opts)?;
    opts.content_md5 = None;
    let (sse, customer) = crate::sse::for_new_object(req, bucket).await?;
    // A copy is a new object: its writer owns it, with the ACL its headers ask (not the source's).
    opts.acl = crate::object::new_acl(req, bucket)?;
    // If-Match/If-None-Match on a copy concern the destination, as on a PUT.
    if !replace {
        opts = PutOptions {
            headers: source_info.headers.clone(),
            user_metadata: source_info.user_metadata.clone(),
            ..opts
        };
    }
    match req.headers.get("x-amz-tagging-directive").and_then(|v| v.to_str().ok()) {
        None | Some("COPY") => opts.tags = source_info.tags.clone(),
        Some("REPLACE") => {}
        Some(_) => return Err(S3Error::new(S3ErrorCode::InvalidArgument, "Unknown tagging directive.")),
    }
    opts.sse = sse;
    let mut body = source_body(open, cipher, 0, source_info.size);
    let info = layer.put_object(bucket, key, &mut body, opts).await?;
    req.notify(strata_notify::EventName::ObjectCreatedCopy, bucket, key, Some(&info)).await;
    let mut x = xml::Writer::new();
    x.root("CopyObjectResult");
    x.elem("LastModified", &strata_types::time::iso8601(info.mod_time));
    x.elem("ETag", &format!("\"{}\"", info.etag));
    x.close("CopyObjectResult");
    let md5 = customer.as_ref().map(|c| c.md5());
    let reply = crate::sse::with_headers(Reply::xml(x.finish()), info.sse.as_ref(), md5);
    let reply = crate::sse::with_written_context(reply, req, info.sse.as_ref());
    let reply = crate::object::version_header(reply, &info);
    let reply = crate::lifecycle::with_expiration(reply, req, bucket, &info);
    source_version(req, reply, &src_bucket, which, source_info.version_id)
}

/// `bytes=first-last` of `x-amz-copy-source-range`, checked against the source size.
fn copy_range(value: &str, size: u64) -> Result<(u64, u64), S3Error> {
    let bad = || {
        S3Error::new(S3ErrorCode::InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
    };
    let (a, b) = value.trim().strip_prefix("bytes=").and_then(|r| r.split_once('-')).ok_or_else(bad)?;
    let (first, last): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if first > last {
        return Err(bad());
    }
    if last >= size {
        return Err(S3Error::new(S3ErrorCode::InvalidRange, "The requested range is not satisfiable"));
    }
    Ok((first, last - first + 1))
}

/// UploadPartCopy: a part whose bytes come from (a range of) an existing object.
pub async fn upload_part_copy(
    req: &Request<'_>,
    target: &ObjectTarget,
    route: &crate::router::Route,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let number = crate::router::part_number(route)?;
    let upload_id = crate::router::upload_id(route)?;
    let source = req.headers.get("x-amz-copy-source").and_then(|v| v.to_str().ok()).unwrap_or("");
    let (src_bucket, src_key, which) = crate::router::parse_source_version(source)?;
    let layer = &req.node.layer;
    let (open, cipher) = open_source(req, &src_bucket, &src_key, which).await?;
    let (size, source_id) = (open.info.size, open.info.version_id);
    let (offset, len) = match req.headers.get("x-amz-copy-source-range").and_then(|v| v.to_str().ok()) {
        Some(r) => copy_range(r, size)?,
        None => (0, size),
    };
    let upload = layer.upload_info(bucket, key, upload_id).await?;
    let (sse, customer_md5) = crate::sse::for_part(req, upload.sse.as_deref(), crate::sse::CUSTOMER).await?;
    let mut body = source_body(open, cipher, offset, len);
    let part =
        layer.upload_part_sealed(bucket, key, upload_id, number, &mut body, None, sse.as_ref()).await?;
    let mut x = xml::Writer::new();
    x.root("CopyPartResult");
    x.elem("LastModified", &strata_types::time::iso8601(part.mod_time));
    x.elem("ETag", &format!("\"{}\"", part.etag));
    x.close("CopyPartResult");
    let reply =
        crate::sse::with_headers(Reply::xml(x.finish()), upload.sse.as_deref(), customer_md5.as_deref());
    source_version(req, reply, &src_bucket, which, source_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(copy_range("bytes=0-9", 100).expect("ok"), (0, 10));
        assert_eq!(copy_range("bytes=10-10", 100).expect("ok"), (10, 1));
        assert!(copy_range("bytes=5-1", 100).is_err());
        assert_eq!(copy_range("bytes=0-100", 100).map_err(|e| e.code).err(), Some(S3ErrorCode::InvalidRange));
        assert!(copy_range("0-1", 100).is_err());
    }
}
