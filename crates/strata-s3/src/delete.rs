//! DeleteObjects: up to 1,000 keys in one request, answered key by key.

use base64::Engine;
use futures_util::stream::{self, StreamExt};
use md5::{Digest, Md5};
use strata_types::limits::{DELETE_OBJECTS_KEYS_MAX, XML_BODY_SIZE_MAX};
use strata_types::ObjectKey;

use crate::body::RequestBody;
use crate::error::{S3Error, S3ErrorCode};
use crate::server::{Reply, Request};
use crate::xml;
use crate::xml::malformed;

/// The keys of a `<Delete>` document and its `<Quiet>` flag.
pub(crate) fn parse_delete(doc: &[u8]) -> Result<(Vec<String>, bool), S3Error> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let (mut keys, mut quiet, mut saw_root) = (Vec::new(), false, false);
    let mut field: Option<&'static str> = None;
    let mut text = String::new();
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            Event::Start(e) => {
                text.clear();
                field = match e.local_name().as_ref() {
                    b"Delete" => {
                        saw_root = true;
                        None
                    }
                    b"Key" => Some("key"),
                    b"Quiet" => Some("quiet"),
                    _ => None,
                };
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::End(_) => {
                match field.take() {
                    Some("key") => keys.push(std::mem::take(&mut text)),
                    Some("quiet") => quiet = text.trim().eq_ignore_ascii_case("true"),
                    _ => {}
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root || keys.is_empty() || keys.len() > DELETE_OBJECTS_KEYS_MAX {
        return Err(malformed());
    }
    Ok((keys, quiet))
}

/// DeleteObjects; `allowed(key)` says whether the caller may delete each key (a refused key is
/// that key's `AccessDenied`, the others are deleted).
pub async fn delete_objects(
    req: &Request<'_>,
    bucket: &str,
    body: RequestBody,
    allowed: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    if let Some(want) = req.headers.get("content-md5").and_then(|v| v.to_str().ok()) {
        let got = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&doc));
        if got != want.trim() {
            return Err(S3Error::new(
                S3ErrorCode::BadDigest,
                "The Content-MD5 you specified did not match what we received.",
            ));
        }
    }
    let (keys, quiet) = parse_delete(&doc)?;
    let layer = &req.node.layer;
    let results: Vec<(String, Result<(), S3Error>)> = stream::iter(keys)
        .map(|key| async move {
            let outcome = match ObjectKey::parse(&key) {
                Ok(_) if !allowed(&key) => Err(crate::access::denied()),
                Ok(_) => layer.delete_object(bucket, &key).await.map_err(S3Error::from),
                Err(e) => Err(S3Error::from(e)),
            };
            (key, outcome)
        })
        .buffered(16)
        .collect()
        .await;
    let mut x = xml::Writer::new();
    x.root("DeleteResult");
    for (key, outcome) in &results {
        match outcome {
            Ok(()) if !quiet => {
                x.open("Deleted");
                x.elem("Key", key);
                x.close("Deleted");
            }
            Ok(()) => {}
            Err(e) => {
                x.open("Error");
                x.elem("Key", key);
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
        assert_eq!(parse_delete(doc).expect("parses"), (vec!["a&b".to_owned(), "c/d".to_owned()], true));
        assert!(parse_delete(b"<Delete></Delete>").is_err());
        let many: String = (0..1001).map(|i| format!("<Object><Key>k{i}</Key></Object>")).collect();
        assert!(parse_delete(format!("<Delete>{many}</Delete>").as_bytes()).is_err());
    }
}
