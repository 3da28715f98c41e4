//! Bucket operations and listings.

use base64::Engine;
use strata_object::{Acl, BucketRecord, ListPage, ListRequest, ObjectError, Owner};
use strata_types::limits::{BUCKETS_PAGE_MAX, LIST_KEYS_MAX, XML_BODY_SIZE_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::grants;
use crate::router::Route;
use crate::xml;
use crate::xml::write_owner;

/// ListBuckets, paged as the current API pages it: `prefix`, `bucket-region`, `max-buckets`
/// (1–10,000; all buckets without it) and an opaque `continuation-token` (the last name given,
/// encoded), returned only when more buckets follow.
///
/// Only the buckets `visible` lets through are shown (the caller's rights).
pub async fn list_buckets(
    req: &Request<'_>,
    route: &Route,
    visible: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Reply, S3Error> {
    let invalid = |m: &str| S3Error::new(S3ErrorCode::InvalidArgument, m);
    let max = match route.param("max-buckets") {
        None => usize::MAX,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=BUCKETS_PAGE_MAX).contains(n))
            .ok_or_else(|| invalid("max-buckets must be an integer from 1 to 10000"))?,
    };
    let after = match route.param("continuation-token").filter(|t| !t.is_empty()) {
        None => String::new(),
        Some(t) => base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(t)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| invalid("The continuation token provided is incorrect"))?,
    };
    let prefix = route.param("prefix").unwrap_or("");
    let region = &req.node.config.region;
    let in_region = route.param("bucket-region").is_none_or(|r| r == region.as_str());
    let mut buckets = req.node.layer.list_buckets()?;
    buckets.sort_by(|a, b| a.name.cmp(&b.name));
    // Buckets whose names S3 does not allow (`.strata-speedtest`) are the system's own.
    let mut listed = buckets.iter().filter(|b| {
        in_region
            && !b.name.starts_with('.')
            && b.name.starts_with(prefix)
            && b.name > after
            && visible(&b.name)
    });
    let page: Vec<_> = listed.by_ref().take(max).collect();
    let more = listed.next().is_some();
    let mut x = xml::Writer::new();
    x.root("ListAllMyBucketsResult");
    // The caller's own name and id, as AWS shows the requester's account.
    let caller =
        grants::owner_of_key(req.node, &req.auth.access_key).unwrap_or_else(|| grants::root_owner(req.node));
    write_owner(&mut x, "Owner", &caller);
    x.open("Buckets");
    for b in &page {
        x.open("Bucket");
        x.elem("Name", &b.name);
        x.elem("CreationDate", &strata_types::time::iso8601(b.created));
        x.elem("BucketRegion", region);
        x.close("Bucket");
    }
    x.close("Buckets");
    if let Some(last) = page.last().filter(|_| more) {
        x.elem("ContinuationToken", &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&last.name));
    }
    if route.param("prefix").is_some() {
        x.elem("Prefix", prefix);
    }
    x.close("ListAllMyBucketsResult");
    Ok(Reply::xml(x.finish()))
}

/// Who owns what a bucket holds, as listings show it.
pub(crate) struct Owners {
    bucket: Owner,
    acls_enabled: bool,
}

impl Owners {
    pub(crate) fn of_bucket(req: &Request<'_>, bucket: &str) -> Result<Owners, S3Error> {
        let record = req.node.layer.bucket_record(bucket)?;
        let acl = grants::bucket_acl(req.node, &record);
        Ok(Owners { bucket: acl.owner, acls_enabled: record.object_ownership.acls_enabled() })
    }

    /// The owner of an object or upload whose stored ACL is `acl` (with ACLs disabled, the
    /// bucket owner owns everything).
    pub(crate) fn of<'a>(&'a self, acl: Option<&'a Acl>) -> &'a Owner {
        match acl {
            Some(a) if self.acls_enabled => &a.owner,
            _ => &self.bucket,
        }
    }
}

/// CreateBucket's ownership controls (`x-amz-object-ownership`, else the deployment's default)
/// and its owner's ACL; a bucket with ACLs disabled takes no ACL beyond its owner's.
fn new_bucket_record(req: &Request<'_>, owner: Owner) -> Result<BucketRecord, S3Error> {
    let ownership = match req.headers.get("x-amz-object-ownership") {
        None => req.node.config.default_object_ownership,
        Some(v) => v.to_str().ok().and_then(crate::grants::parse_ownership).ok_or_else(|| {
            S3Error::new(S3ErrorCode::InvalidArgument, "Invalid x-amz-object-ownership header")
        })?,
    };
    let requested = match grants::from_headers(req.node, req.headers) {
        // With ACLs disabled, any grant beyond the owner's is refused as such, named or not.
        Err(_) if !ownership.acls_enabled() => return Err(crate::grants::acl_with_enforced()),
        r => r?,
    };
    let acl = match requested {
        Some(r) if !ownership.acls_enabled() && !r.owner_full_control_only(&owner) => {
            return Err(crate::grants::acl_with_enforced())
        }
        Some(r) if ownership.acls_enabled() => r.expand(&owner, &owner, true),
        _ => grants::private(owner),
    };
    Ok(BucketRecord { acl: Some(acl), object_ownership: ownership, ..Default::default() })
}

pub async fn create_bucket(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let name = BucketName::parse(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await.map_err(|_| crate::error::malformed_xml())?;
    if !doc.iter().all(u8::is_ascii_whitespace) {
        // Any location is accepted: this deployment is one region, whatever the client calls it.
        xml::first_text(&doc, "LocationConstraint").map_err(|_| crate::error::malformed_xml())?;
    }
    let object_lock = req
        .headers
        .get("x-amz-bucket-object-lock-enabled")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let owner =
        grants::owner_of_key(req.node, &req.auth.access_key).unwrap_or_else(|| grants::root_owner(req.node));
    let mut record = new_bucket_record(req, owner.clone())?;
    if object_lock {
        record.versioning = strata_object::Versioning::Enabled;
        record.object_lock = Some(Default::default());
    }
    match req.node.layer.make_bucket_record(name.as_str(), record).await {
        Err(ObjectError::BucketExists)
            if Owners::of_bucket(req, bucket).is_ok_and(|o| o.bucket.id != owner.id) =>
        {
            Err(S3Error::new(
                S3ErrorCode::BucketAlreadyExists,
                "The requested bucket name is not available. Another user owns it.",
            ))
        }
        Err(e) => Err(e.into()),
        Ok(()) => Ok(Reply::empty(http::StatusCode::OK).header("location", &format!("/{bucket}"))),
    }
}

pub async fn delete_bucket(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.delete_bucket(bucket).await?;
    Ok(Reply::empty(http::StatusCode::NO_CONTENT))
}

pub async fn head_bucket(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    Ok(Reply::empty(http::StatusCode::OK).header("x-amz-bucket-region", &req.node.config.region))
}

pub async fn get_bucket_location(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    // us-east-1 is shown as an empty constraint, as AWS does.
    let region = Some(req.node.config.region.as_str()).filter(|r| *r != "us-east-1").unwrap_or("");
    Ok(Reply::xml(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{}</LocationConstraint>",
        xml::escape(region)
    )))
}

fn max_keys(route: &Route) -> Result<usize, S3Error> {
    match route.param("max-keys") {
        None => Ok(LIST_KEYS_MAX),
        Some(v) => {
            v.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| (n as usize).min(LIST_KEYS_MAX)).ok_or_else(
                || S3Error::new(S3ErrorCode::InvalidArgument, "max-keys must be a non-negative integer"),
            )
        }
    }
}

pub(crate) fn url_encoding(route: &Route) -> Result<bool, S3Error> {
    match route.param("encoding-type") {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => {
            Err(S3Error::new(S3ErrorCode::InvalidArgument, "Invalid Encoding Method specified in Request"))
        }
    }
}

/// How S3 URL-encodes names in listings with `encoding-type=url`.
pub(crate) fn encode_name(s: &str, url: bool) -> String {
    const SET: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b'/');
    if url {
        percent_encoding::utf8_percent_encode(s, SET).to_string()
    } else {
        s.to_owned()
    }
}

fn list_request(route: &Route, start_after: String) -> Result<ListRequest, S3Error> {
    Ok(ListRequest {
        prefix: route.param("prefix").unwrap_or("").to_owned(),
        start_after,
        delimiter: route.param("delimiter").filter(|d| !d.is_empty()).map(str::to_owned),
        max_keys: max_keys(route)?,
    })
}

fn write_entries(x: &mut xml::Writer, page: &ListPage, url: bool, owners: Option<&Owners>) {
    for o in &page.objects {
        x.open("Contents");
        x.elem("Key", &encode_name(&o.key, url));
        x.elem("LastModified", &strata_types::time::iso8601(o.mod_time));
        x.elem("ETag", &format!("\"{}\"", o.etag));
        x.elem("Size", &o.size.to_string());
        if let Some(owners) = owners {
            write_owner(x, "Owner", owners.of(o.acl.as_ref()));
        }
        x.elem("StorageClass", "STANDARD");
        x.close("Contents");
    }
    for p in &page.prefixes {
        x.open("CommonPrefixes");
        x.elem("Prefix", &encode_name(p, url));
        x.close("CommonPrefixes");
    }
}

const TOKEN: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub async fn list_objects_v2(
    req: &Request<'_>,
    bucket: &BucketName,
    route: &Route,
) -> Result<Reply, S3Error> {
    let url = url_encoding(route)?;
    let token = route.param("continuation-token");
    let from_token = match token {
        Some(t) => String::from_utf8(TOKEN.decode(t).map_err(|_| bad_token())?).map_err(|_| bad_token())?,
        None => String::new(),
    };
    let start_after = route.param("start-after").unwrap_or("");
    let request = list_request(route, from_token.max(start_after.to_owned()))?;
    let page = req.node.layer.list_objects(bucket, &request).await?;
    let mut x = xml::Writer::new();
    x.root("ListBucketResult");
    x.elem("Name", bucket);
    x.elem("Prefix", &encode_name(&request.prefix, url));
    if let Some(t) = token {
        x.elem("ContinuationToken", t);
    }
    if !start_after.is_empty() {
        x.elem("StartAfter", &encode_name(start_after, url));
    }
    x.elem("KeyCount", &(page.objects.len() + page.prefixes.len()).to_string());
    x.elem("MaxKeys", &request.max_keys.to_string());
    if let Some(d) = &request.delimiter {
        x.elem("Delimiter", &encode_name(d, url));
    }
    x.elem("IsTruncated", if page.truncated { "true" } else { "false" });
    if let Some(next) = &page.next_marker {
        x.elem("NextContinuationToken", &TOKEN.encode(next));
    }
    if url {
        x.elem("EncodingType", "url");
    }
    let owners = match route.param("fetch-owner") == Some("true") {
        true => Some(Owners::of_bucket(req, bucket)?),
        false => None,
    };
    write_entries(&mut x, &page, url, owners.as_ref());
    x.close("ListBucketResult");
    Ok(Reply::xml(x.finish()))
}

fn bad_token() -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, "The continuation token provided is incorrect")
}

pub async fn list_objects_v1(
    req: &Request<'_>,
    bucket: &BucketName,
    route: &Route,
) -> Result<Reply, S3Error> {
    let url = url_encoding(route)?;
    let marker = route.param("marker").unwrap_or("").to_owned();
    let request = list_request(route, marker.clone())?;
    let page = req.node.layer.list_objects(bucket, &request).await?;
    let mut x = xml::Writer::new();
    x.root("ListBucketResult");
    x.elem("Name", bucket);
    x.elem("Prefix", &encode_name(&request.prefix, url));
    x.elem("Marker", &encode_name(&marker, url));
    x.elem("MaxKeys", &request.max_keys.to_string());
    if let Some(d) = &request.delimiter {
        x.elem("Delimiter", &encode_name(d, url));
    }
    x.elem("IsTruncated", if page.truncated { "true" } else { "false" });
    if let Some(next) = &page.next_marker {
        x.elem("NextMarker", &encode_name(next, url));
    }
    if url {
        x.elem("EncodingType", "url");
    }
    write_entries(&mut x, &page, url, Some(&Owners::of_bucket(req, bucket)?));
    x.close("ListBucketResult");
    Ok(Reply::xml(x.finish()))
}
