//! DeleteObjects: up to 1,000 keys in one request, answered key by key.

use futures_util::stream::{self, StreamExt};
use strata_types::limits::DELETE_OBJECTS_KEYS_MAX;
use strata_types::ObjectKey;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::malformed_xml as malformed;
use crate::error::S3Error;
use crate::xml;
use strata_object::{DeleteOutcome, VersionRef};
use strata_types::BucketName;

/// One `<Object>` of a `<Delete>` document: its key, the version named and the `<ETag>` the
/// object must have (a conditional delete), if any.
pub(crate) type DeleteEntry = (String, Option<String>, Option<String>);

/// The objects of a `<Delete>` document and its `<Quiet>` flag.
pub(crate) fn parse_delete(doc: &[u8]) -> Result<(Vec<DeleteEntry>, bool), S3Error> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let (mut entries, mut quiet, mut saw_root) = (Vec::new(), false, false);
    let mut field: Option<&'static str> = None;
    let mut text = String::new();
    let mut object: Option<(Option<String>, Option<String>, Option<String>)> = None;
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            Event::Start(e) => {
                text.clear();
                field = match e.local_name().as_ref() {
                    b"Delete" => {
                        saw_root = true;
                        None
                    }
                    b"Object" => {
                        object = Some((None, None, None));
                        None
                    }
                    b"Key" => Some("key"),
                    b"ETag" => Some("etag"),
                    b"VersionId" => Some("version"),
                    b"Quiet" => Some("quiet"),
                    _ => None,
                };
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::End(e) => {
                match (field.take(), object.as_mut()) {
                    (Some("key"), Some(o)) => o.0 = Some(std::mem::take(&mut text)),
                    (Some("version"), Some(o)) => o.1 = Some(std::mem::take(&mut text)),
                    (Some("etag"), Some(o)) => o.2 = Some(std::mem::take(&mut text)),
                    (Some("quiet"), _) => quiet = text.trim().eq_ignore_ascii_case("true"),
                    _ => {}
                }
                if e.local_name().as_ref() == b"Object" {
                    match object.take() {
                        Some((Some(key), version, etag)) => entries.push((key, version, etag)),
                        _ => return Err(malformed()),
                    }
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root || entries.is_empty() || entries.len() > DELETE_OBJECTS_KEYS_MAX {
        return Err(malformed());
    }
    Ok((entries, quiet))
}

/// May the caller delete a key (its name, the version named, the `<ETag>` condition)?
pub type MayDelete<'a> = dyn Fn(&str, Option<&str>, Option<&str>) -> bool + Sync + 'a;

/// What the caller may do to each key of a DeleteObjects.
pub struct Rights<'a> {
    /// May the caller delete this key (and version, with this `<ETag>` condition)? A refused
    /// key is that key's `AccessDenied`, the others are deleted.
    pub allowed: &'a MayDelete<'a>,
    /// Did the caller ask to lift GOVERNANCE retention on this key, and may it?
    pub bypass: &'a (dyn Fn(&str) -> bool + Sync),
}

/// DeleteObjects, key by key, within the caller's `rights`.
pub async fn delete_objects(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
    rights: &Rights<'_>,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    crate::body::check_content_md5(req.headers, &doc)?;
    let (entries, quiet) = parse_delete(&doc)?;
    let layer = &req.node.layer;
    type Done = ((String, Option<String>), Result<DeleteOutcome, S3Error>);
    let results: Vec<Done> = stream::iter(entries)
        .map(|(key, version, etag)| async move {
            let outcome: Result<DeleteOutcome, S3Error> = async {
                ObjectKey::parse(&key)?;
                let which = match version.as_deref() {
                    None => VersionRef::Current,
                    Some(v) => VersionRef::Id(crate::router::parse_version_id(v)?),
                };
                if !(rights.allowed)(&key, version.as_deref(), etag.as_deref()) {
                    return Err(crate::access::denied());
                }
                // `<ETag>`: deleted only if the current object has it (DeleteObject's If-Match).
                let if_match = crate::object::delete_condition(etag.as_deref(), &which)?;
                let bypass = (rights.bypass)(&key);
                let done = layer.delete_object_version_if(bucket, &key, which, bypass, if_match).await?;
                req.notify_removed(bucket, &key, &done).await;
                Ok(done)
            }
            .await;
            ((key, version), outcome)
        })
        .buffered(16)
        .collect()
        .await;
    let mut x = xml::Writer::new();
    x.root("DeleteResult");
    for ((key, version), outcome) in &results {
        match outcome {
            Ok(done) if !quiet => {
                x.open("Deleted");
                x.elem("Key", key);
                if let Some(v) = version {
                    x.elem("VersionId", v);
                }
                if done.delete_marker {
                    x.elem("DeleteMarker", "true");
                    if version.is_none() {
                        x.elem("DeleteMarkerVersionId", &crate::version::version_string(done.version_id));
                    }
                }
                x.close("Deleted");
            }
            Ok(_) => {}
            Err(e) => {
                x.open("Error");
                x.elem("Key", key);
                if let Some(v) = version {
                    x.elem("VersionId", v);
                }
                x.elem("Code", e.code.as_str());
                x.elem("Message", &e.message);
                x.close("Error");
            }
        }
    }
    x.close("DeleteResult");
    Ok(Reply::xml(x.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_delete_documents() {
        let doc = br#"<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object><Object><Key>c/d</Key><VersionId>null</VersionId></Object></Delete>"#;
        assert_eq!(
            parse_delete(doc).expect("parses"),
            (vec![("a&b".to_owned(), None, None), ("c/d".to_owned(), Some("null".to_owned()), None)], true)
        );
        assert!(parse_delete(b"<Delete><Object><VersionId>null</VersionId></Object></Delete>").is_err());
        assert!(parse_delete(b"<Delete></Delete>").is_err());
        let many: String = (0..1001).map(|i| format!("<Object><Key>k{i}</Key></Object>")).collect();
        assert!(parse_delete(format!("<Delete>{many}</Delete>").as_bytes()).is_err());
    }
}
