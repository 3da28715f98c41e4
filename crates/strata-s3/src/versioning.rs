//! Versioning on the S3 surface: Put/GetBucketVersioning, ListObjectVersions, and the
//! `versionId` parameter and `x-amz-version-id` / `x-amz-delete-marker` headers every object
//! operation shares.
//!
//! Version ids are UUIDv7s written as 32 lower-case hex digits; `null` names the `null` version.
//! Anything else in `versionId` is `400 InvalidArgument`, an id the object does not have
//! `404 NoSuchVersion`.

use strata_object::{Versioning, VersionsRequest};
use strata_types::limits::{LIST_KEYS_MAX, XML_BODY_SIZE_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::bucket::{encode_name, url_encoding};
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{parse_version_id, Route};
use crate::version::version_string;
use crate::xml;

pub async fn get_bucket_versioning(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let state = req.node.layer.versioning(bucket)?;
    let mut x = xml::Writer::new();
    x.root("VersioningConfiguration");
    match state {
        Versioning::Unversioned => {}
        Versioning::Enabled => x.elem("Status", "Enabled"),
        Versioning::Suspended => x.elem("Status", "Suspended"),
    }
    x.close("VersioningConfiguration");
    Ok(Reply::xml(x.finish()))
}

/// The state a `<VersioningConfiguration>` document asks for (`None`: no `Status`, no change).
pub(crate) fn parse_versioning(doc: &[u8]) -> Result<Option<Versioning>, S3Error> {
    if xml::first_text(doc, "VersioningConfiguration").map_err(|_| crate::error::malformed_xml())?.is_none() {
        return Err(crate::error::malformed_xml());
    }
    if let Some(mfa) = xml::first_text(doc, "MfaDelete").map_err(|_| crate::error::malformed_xml())? {
        match mfa.trim() {
            "Disabled" => {}
            "Enabled" => {
                return Err(S3Error::new(
                    S3ErrorCode::NotImplemented,
                    "MFA delete is not supported; versioning is configured without it.",
                ))
            }
            _ => return Err(crate::error::malformed_xml()),
        }
    }
    match xml::first_text(doc, "Status").map_err(|_| crate::error::malformed_xml())?.as_deref().map(str::trim)
    {
        None => Ok(None),
        Some("Enabled") => Ok(Some(Versioning::Enabled)),
        Some("Suspended") => Ok(Some(Versioning::Suspended)),
        Some(_) => Err(crate::error::malformed_xml()),
    }
}

pub async fn put_bucket_versioning(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await.map_err(|_| crate::error::malformed_xml())?;
    if let Some(state) = parse_versioning(&doc)? {
        req.node.layer.put_bucket_versioning(bucket, state).await?;
    }
    Ok(Reply::empty(http::StatusCode::OK))
}

fn versions_request(route: &Route) -> Result<VersionsRequest, S3Error> {
    let max_keys = match route.param("max-keys") {
        None => LIST_KEYS_MAX,
        Some(v) => {
            v.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| (n as usize).min(LIST_KEYS_MAX)).ok_or_else(
                || S3Error::new(S3ErrorCode::InvalidArgument, "max-keys must be a non-negative integer"),
            )?
        }
    };
    let key_marker = route.param("key-marker").unwrap_or("").to_owned();
    let version_marker = match route.param("version-id-marker").filter(|v| !v.is_empty()) {
        None => None,
        Some(_) if key_marker.is_empty() => {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "A version-id marker cannot be specified without a key marker.",
            ))
        }
        Some(v) => Some(parse_version_id(v)?),
    };
    Ok(VersionsRequest {
        prefix: route.param("prefix").unwrap_or("").to_owned(),
        delimiter: route.param("delimiter").filter(|d| !d.is_empty()).map(str::to_owned),
        key_marker,
        version_marker,
        max_keys,
    })
}

/// ListObjectVersions: versions and delete markers, key ascending then newest first.
pub async fn list_object_versions(
    req: &Request<'_>,
    bucket: &BucketName,
    route: &Route,
) -> Result<Reply, S3Error> {
    let url = url_encoding(route)?;
    let request = versions_request(route)?;
    let page = req.node.layer.list_object_versions(bucket, &request).await?;
    let owners = crate::bucket::Owners::of_bucket(req, bucket)?;
    let mut x = xml::Writer::new();
    x.root("ListVersionsResult");
    x.elem("Name", bucket);
    x.elem("Prefix", &encode_name(&request.prefix, url));
    x.elem("KeyMarker", &encode_name(&request.key_marker, url));
    x.elem("VersionIdMarker", &request.version_marker.map(version_string).unwrap_or_default());
    x.elem("MaxKeys", &request.max_keys.to_string());
    if let Some(d) = &request.delimiter {
        x.elem("Delimiter", &encode_name(d, url));
    }
    x.elem("IsTruncated", if page.truncated { "true" } else { "false" });
    if let Some(next) = &page.next_key_marker {
        x.elem("NextKeyMarker", &encode_name(next, url));
    }
    if let Some(next) = page.next_version_marker {
        x.elem("NextVersionIdMarker", &version_string(next));
    }
    if url {
        x.elem("EncodingType", "url");
    }
    for e in &page.entries {
        let o = &e.info;
        let tag = if o.delete_marker { "DeleteMarker" } else { "Version" };
        x.open(tag);
        x.elem("Key", &encode_name(&o.key, url));
        x.elem("VersionId", &version_string(o.version_id));
        x.elem("IsLatest", if e.is_latest { "true" } else { "false" });
        x.elem("LastModified", &strata_types::time::iso8601(o.mod_time));
        if !o.delete_marker {
            x.elem("ETag", &format!("\"{}\"", o.etag));
            x.elem("Size", &o.size.to_string());
        }
        crate::xml::write_owner(&mut x, "Owner", owners.of(o.acl.as_ref()));
        if !o.delete_marker {
            x.elem("StorageClass", "STANDARD");
        }
        x.close(tag);
    }
    for p in &page.prefixes {
        x.open("CommonPrefixes");
        x.elem("Prefix", &encode_name(p, url));
        x.close("CommonPrefixes");
    }
    x.close("ListVersionsResult");
    Ok(Reply::xml(x.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioning_documents() {
        let doc = |s: &str| {
            format!("<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{s}</VersioningConfiguration>")
        };
        assert_eq!(
            parse_versioning(doc("<Status>Enabled</Status>").as_bytes()).ok(),
            Some(Some(Versioning::Enabled))
        );
        assert_eq!(
            parse_versioning(doc("<Status>Suspended</Status><MfaDelete>Disabled</MfaDelete>").as_bytes())
                .ok(),
            Some(Some(Versioning::Suspended))
        );
        assert_eq!(parse_versioning(doc("").as_bytes()).ok(), Some(None));
        let code = |s: &str| parse_versioning(s.as_bytes()).map_err(|e| e.code).err();
        assert_eq!(code(&doc("<Status>On</Status>")), Some(S3ErrorCode::MalformedXML));
        assert_eq!(code("<Other/>"), Some(S3ErrorCode::MalformedXML));
        assert_eq!(code(&doc("<MfaDelete>Enabled</MfaDelete>")), Some(S3ErrorCode::NotImplemented));
    }
}
