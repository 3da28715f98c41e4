//! Multipart upload operations: Create, UploadPart, Complete, Abort, ListParts,
//! ListMultipartUploads.

use http::StatusCode;
use strata_object::CompletePart;
use strata_types::limits::{PART_NUMBER_MAX, XML_BODY_SIZE_MAX};
use strata_types::ObjectKey;
use uuid::Uuid;

use crate::body::RequestBody;
use crate::bucket::owner_as;
use crate::error::{S3Error, S3ErrorCode};
use crate::object::{check_declared_length, put_options, stored_reply};
use crate::router::Route;
use crate::server::{Reply, Request};
use crate::xml;

pub(crate) fn upload_id(route: &Route) -> Result<Uuid, S3Error> {
    route.param("uploadId").and_then(|id| Uuid::try_parse(id).ok()).ok_or_else(|| {
        S3Error::new(
            S3ErrorCode::NoSuchUpload,
            "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        )
    })
}

fn id_str(id: Uuid) -> String {
    id.simple().to_string()
}

pub async fn create(req: &Request<'_>, bucket: &str, key: &str) -> Result<Reply, S3Error> {
    ObjectKey::parse(key)?;
    let opts = put_options(req)?;
    let id = req.node.layer.create_multipart_upload(bucket, key, opts).await?;
    let mut x = xml::Writer::new();
    x.root("InitiateMultipartUploadResult");
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("UploadId", &id_str(id));
    x.close("InitiateMultipartUploadResult");
    Ok(Reply::xml(x.finish()))
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

pub async fn upload_part(
    req: &Request<'_>,
    bucket: &str,
    key: &str,
    route: &Route,
    mut body: RequestBody,
) -> Result<Reply, S3Error> {
    ObjectKey::parse(key)?;
    let number = part_number(route)?;
    let id = upload_id(route)?;
    check_declared_length(req.headers)?;
    let content_md5 = put_options(req)?.content_md5;
    let part = req.node.layer.upload_part(bucket, key, id, number, &mut body, content_md5).await?;
    Ok(stored_reply(&part.etag, &strata_object::BodyReader::checksums(&body)))
}

/// Parses `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"…"</ETag></Part>…`.
fn parse_complete(doc: &[u8]) -> Result<Vec<CompletePart>, S3Error> {
    use quick_xml::events::Event;
    let malformed = xml::malformed;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let mut parts = Vec::new();
    let (mut number, mut etag, mut field, mut text): (
        Option<u32>,
        Option<String>,
        Option<&'static str>,
        String,
    ) = (None, None, None, String::new());
    let mut saw_root = false;
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            Event::Start(e) => {
                text.clear();
                field = match e.local_name().as_ref() {
                    b"CompleteMultipartUpload" => {
                        saw_root = true;
                        None
                    }
                    b"Part" => {
                        (number, etag) = (None, None);
                        None
                    }
                    b"PartNumber" => Some("n"),
                    b"ETag" => Some("e"),
                    _ => None,
                };
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::End(e) => {
                match field.take() {
                    Some("n") => number = Some(text.trim().parse().map_err(|_| malformed())?),
                    Some("e") => etag = Some(text.trim().trim_matches('"').to_owned()),
                    _ => {}
                }
                text.clear();
                if e.local_name().as_ref() == b"Part" {
                    match (number, etag.take()) {
                        (Some(n), Some(e)) => parts.push(CompletePart { number: n, etag: e }),
                        _ => return Err(malformed()),
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root || parts.is_empty() {
        return Err(malformed());
    }
    Ok(parts)
}

pub async fn complete(
    req: &Request<'_>,
    bucket: &str,
    key: &str,
    route: &Route,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let id = upload_id(route)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let parts = parse_complete(&doc)?;
    let condition = crate::object::write_condition(req.headers)?;
    let info = req.node.layer.complete_multipart_upload(bucket, key, id, &parts, condition).await?;
    let mut x = xml::Writer::new();
    x.root("CompleteMultipartUploadResult");
    x.elem("Location", &format!("/{bucket}/{key}"));
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("ETag", &format!("\"{}\"", info.etag));
    x.close("CompleteMultipartUploadResult");
    Ok(Reply::xml(x.finish()))
}

pub async fn abort(req: &Request<'_>, bucket: &str, key: &str, route: &Route) -> Result<Reply, S3Error> {
    let id = upload_id(route)?;
    req.node.layer.abort_multipart_upload(bucket, key, id).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

fn number_param(route: &Route, name: &str, default: usize) -> Result<usize, S3Error> {
    match route.param(name) {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| {
            S3Error::new(S3ErrorCode::InvalidArgument, &format!("{name} must be a non-negative integer"))
        }),
    }
}

pub async fn list_parts(req: &Request<'_>, bucket: &str, key: &str, route: &Route) -> Result<Reply, S3Error> {
    let id = upload_id(route)?;
    let max_parts = number_param(route, "max-parts", 1000)?.min(1000);
    let marker = number_param(route, "part-number-marker", 0)?;
    let (_, parts) = req.node.layer.list_parts(bucket, key, id).await?;
    let after: Vec<_> = parts.into_iter().filter(|p| p.number as usize > marker).collect();
    let truncated = after.len() > max_parts;
    let page = &after[..after.len().min(max_parts)];
    let mut x = xml::Writer::new();
    x.root("ListPartsResult");
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("UploadId", &id_str(id));
    owner_as(&mut x, req, "Initiator");
    owner_as(&mut x, req, "Owner");
    x.elem("StorageClass", "STANDARD");
    x.elem("PartNumberMarker", &marker.to_string());
    if let Some(last) = page.last() {
        x.elem("NextPartNumberMarker", &last.number.to_string());
    }
    x.elem("MaxParts", &max_parts.to_string());
    x.elem("IsTruncated", if truncated { "true" } else { "false" });
    for p in page {
        x.open("Part");
        x.elem("PartNumber", &p.number.to_string());
        x.elem("LastModified", &strata_types::time::iso8601(p.mod_time));
        x.elem("ETag", &format!("\"{}\"", p.etag));
        x.elem("Size", &p.size.to_string());
        x.close("Part");
    }
    x.close("ListPartsResult");
    Ok(Reply::xml(x.finish()))
}

pub async fn list_uploads(req: &Request<'_>, bucket: &str, route: &Route) -> Result<Reply, S3Error> {
    let prefix = route.param("prefix").unwrap_or("");
    let max = number_param(route, "max-uploads", 1000)?.min(1000);
    let key_marker = route.param("key-marker").unwrap_or("");
    let uploads = req.node.layer.list_multipart_uploads(bucket, prefix, 10_000).await?;
    let after: Vec<_> = uploads.into_iter().filter(|u| u.key.as_str() > key_marker).collect();
    let truncated = after.len() > max;
    let page = &after[..after.len().min(max)];
    let mut x = xml::Writer::new();
    x.root("ListMultipartUploadsResult");
    x.elem("Bucket", bucket);
    x.elem("KeyMarker", key_marker);
    x.elem("UploadIdMarker", "");
    if let Some(last) = page.last().filter(|_| truncated) {
        x.elem("NextKeyMarker", &last.key);
        x.elem("NextUploadIdMarker", &id_str(last.upload_id));
    }
    x.elem("Prefix", prefix);
    x.elem("MaxUploads", &max.to_string());
    x.elem("IsTruncated", if truncated { "true" } else { "false" });
    for u in page {
        x.open("Upload");
        x.elem("Key", &u.key);
        x.elem("UploadId", &id_str(u.upload_id));
        owner_as(&mut x, req, "Initiator");
        owner_as(&mut x, req, "Owner");
        x.elem("StorageClass", "STANDARD");
        x.elem("Initiated", &strata_types::time::iso8601(u.initiated));
        x.close("Upload");
    }
    x.close("ListMultipartUploadsResult");
    Ok(Reply::xml(x.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_complete_documents() {
        let doc = br#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>"aa"</ETag><PartNumber>1</PartNumber></Part><Part><PartNumber>2</PartNumber><ETag>&quot;bb&quot;</ETag></Part></CompleteMultipartUpload>"#;
        let parts = parse_complete(doc).expect("parses");
        assert_eq!(
            parts,
            [CompletePart { number: 1, etag: "aa".into() }, CompletePart { number: 2, etag: "bb".into() }]
        );
        for bad in [
            &b"<CompleteMultipartUpload></CompleteMultipartUpload>"[..],
            b"<x><Part>",
            b"<CompleteMultipartUpload><Part><PartNumber>z</PartNumber></Part></CompleteMultipartUpload>",
        ] {
            assert!(parse_complete(bad).is_err());
        }
    }
}
