//! Object tagging: Get/Put/DeleteObjectTagging and the `x-amz-tagging` header.

use std::collections::BTreeMap;

use http::StatusCode;
use strata_types::limits::{
    BUCKET_TAGS_MAX, OBJECT_TAGS_MAX, TAG_KEY_LEN_MAX, TAG_VALUE_LEN_MAX, XML_BODY_SIZE_MAX,
};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::ObjectTarget;
use crate::xml;
use strata_object::VersionRef;

fn invalid(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidTag, msg)
}

/// Checks an object's tag set against the S3 rules and builds it; duplicate keys are refused.
pub fn validate(pairs: Vec<(String, String)>) -> Result<BTreeMap<String, String>, S3Error> {
    validate_at_most(pairs, OBJECT_TAGS_MAX)
}

fn validate_at_most(pairs: Vec<(String, String)>, max: usize) -> Result<BTreeMap<String, String>, S3Error> {
    if pairs.len() > max {
        return Err(invalid(&format!("Tags cannot be more than {max}")));
    }
    let mut tags = BTreeMap::new();
    for (k, v) in pairs {
        if k.is_empty() || k.chars().count() > TAG_KEY_LEN_MAX {
            return Err(invalid("The TagKey you have provided is invalid"));
        }
        if v.chars().count() > TAG_VALUE_LEN_MAX {
            return Err(invalid("The TagValue you have provided is invalid"));
        }
        if k.starts_with("aws:") {
            return Err(invalid("System tags cannot be added/updated by requester"));
        }
        if tags.insert(k, v).is_some() {
            return Err(invalid("Cannot provide multiple Tags with the same key"));
        }
    }
    Ok(tags)
}

/// An object's tag set as a `<Tagging>` document (PostObject's `tagging` field).
pub(crate) fn parse_document(doc: &[u8]) -> Result<BTreeMap<String, String>, S3Error> {
    validate(parse_tagging(doc)?)
}

/// The `x-amz-tagging` header: `k1=v1&k2=v2`, URL-encoded.
pub fn from_header(value: &str) -> Result<BTreeMap<String, String>, S3Error> {
    validate(crate::router::parse_query(value))
}

pub(crate) fn parse_tagging(doc: &[u8]) -> Result<Vec<(String, String)>, S3Error> {
    use quick_xml::events::Event;
    let malformed = crate::error::malformed_xml;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let (mut pairs, mut saw_root) = (Vec::new(), false);
    let (mut key, mut value, mut field, mut text) = (None, None, None::<&'static str>, String::new());
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            Event::Start(e) => {
                text.clear();
                field = match e.local_name().as_ref() {
                    b"Tagging" => {
                        saw_root = true;
                        None
                    }
                    b"Tag" => {
                        (key, value) = (None, None);
                        None
                    }
                    b"Key" => Some("k"),
                    b"Value" => Some("v"),
                    _ => None,
                };
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::Empty(e) if e.local_name().as_ref() == b"Value" => value = Some(String::new()),
            Event::End(e) => {
                match field.take() {
                    Some("k") => key = Some(std::mem::take(&mut text)),
                    Some("v") => value = Some(std::mem::take(&mut text)),
                    _ => {}
                }
                if e.local_name().as_ref() == b"Tag" {
                    match (key.take(), value.take()) {
                        (Some(k), Some(v)) => pairs.push((k, v)),
                        _ => return Err(malformed()),
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root {
        return Err(malformed());
    }
    Ok(pairs)
}

fn tag_document(tags: &BTreeMap<String, String>) -> Reply {
    let mut x = xml::Writer::new();
    x.root("Tagging");
    x.open("TagSet");
    for (k, v) in tags {
        x.open("Tag");
        x.elem("Key", k);
        x.elem("Value", v);
        x.close("Tag");
    }
    x.close("TagSet");
    x.close("Tagging");
    Reply::xml(x.finish())
}

pub async fn get_object_tagging(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let open = req.node.layer.open_object_version(bucket, key, which, false).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    Ok(tag_document(&open.info.tags).with_version(shown, open.info.version_id))
}

pub async fn get_bucket_tagging(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let info = req.node.layer.bucket_info(bucket)?;
    if info.tags.is_empty() {
        return Err(S3Error::new(S3ErrorCode::NoSuchTagSet, "The TagSet does not exist"));
    }
    Ok(tag_document(&info.tags))
}

pub async fn put_bucket_tagging(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    let tags = validate_at_most(parse_tagging(&doc)?, BUCKET_TAGS_MAX)?;
    req.node.layer.put_bucket_tags(bucket, tags).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

pub async fn delete_bucket_tagging(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.put_bucket_tags(bucket, BTreeMap::new()).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

/// PutObjectTagging. `allowed` decides what a policy conditioned on the request's tags says
/// of these ones (the check waits for the body; see [`crate::access::Access::may_put_tags`]).
pub async fn put_object_tagging(
    req: &Request<'_>,
    target: &ObjectTarget,
    body: RequestBody,
    allowed: &(dyn Fn(&BTreeMap<String, String>) -> bool + Sync),
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let tags = validate(parse_tagging(&doc)?)?;
    if !allowed(&tags) {
        return Err(S3Error::new(S3ErrorCode::AccessDenied, "Access Denied."));
    }
    let id = req.node.layer.put_object_tags_version(bucket, key, which, tags).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    let version = id.filter(|_| shown);
    req.notify_version(strata_notify::EventName::ObjectTaggingPut, bucket, key, None, version).await;
    Ok(Reply::empty(StatusCode::OK).with_version(shown, id))
}

pub async fn delete_object_tagging(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let id = req.node.layer.put_object_tags_version(bucket, key, which, BTreeMap::new()).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    let version = id.filter(|_| shown);
    req.notify_version(strata_notify::EventName::ObjectTaggingDelete, bucket, key, None, version).await;
    Ok(Reply::empty(StatusCode::NO_CONTENT).with_version(shown, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_rules() {
        let doc = br#"<Tagging><TagSet><Tag><Key>a&amp;b</Key><Value>1</Value></Tag><Tag><Key>e</Key><Value/></Tag></TagSet></Tagging>"#;
        let tags = validate(parse_tagging(doc).expect("parses")).expect("valid");
        assert_eq!(tags, BTreeMap::from([("a&b".into(), "1".into()), ("e".into(), String::new())]));
        let dup = br#"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>"#;
        assert_eq!(
            validate(parse_tagging(dup).expect("parses")).map_err(|e| e.code).err(),
            Some(S3ErrorCode::InvalidTag)
        );
        let eleven: Vec<(String, String)> = (0..11).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(validate(eleven).is_err());
        assert!(validate(vec![("k".repeat(129), String::new())]).is_err());
        assert!(validate(vec![("k".into(), "v".repeat(257))]).is_err());
        assert!(validate(vec![("aws:x".into(), String::new())]).is_err());
        assert_eq!(from_header("a=1&b=x%20y").expect("ok").get("b").map(String::as_str), Some("x y"));
    }
}
