//! Multipart upload operations: Create, UploadPart, Complete, Abort, ListParts,
//! ListMultipartUploads.

use http::StatusCode;
use strata_object::checksum::{Algorithm, ChecksumType};
use strata_object::{CompleteOptions, CompletePart, UploadRecord};
use strata_types::limits::{UPLOADS_ROUND, XML_BODY_SIZE_MAX};
use strata_types::BucketName;
use uuid::Uuid;

use crate::body::RequestBody;
use crate::bucket::Owners;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::object::{check_declared_length, checksum_elements, put_options, stored_reply};
use crate::router::{part_number, upload_id, ObjectTarget, Route};
use crate::xml;
use crate::xml::write_owner;

fn id_str(id: Uuid) -> String {
    id.simple().to_string()
}

/// `x-amz-checksum-algorithm` and `x-amz-checksum-type` of CreateMultipartUpload.
fn upload_checksum(headers: &http::HeaderMap) -> Result<Option<(Algorithm, ChecksumType)>, S3Error> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let invalid = |m: &str| S3Error::new(S3ErrorCode::InvalidRequest, m);
    let algorithm = match get("x-amz-checksum-algorithm") {
        None => None,
        Some(a) => Some(Algorithm::parse(a).ok_or_else(|| {
            S3Error::new(S3ErrorCode::InvalidArgument, "Checksum algorithm provided is unsupported.")
        })?),
    };
    let kind = match get("x-amz-checksum-type") {
        None => None,
        Some(t) => Some(ChecksumType::parse(t).ok_or_else(|| {
            S3Error::new(S3ErrorCode::InvalidArgument, "Checksum type provided is unsupported.")
        })?),
    };
    match (algorithm, kind) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(invalid(
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
        )),
        (Some(a), t) => {
            let t = t.unwrap_or(a.default_type());
            if !a.supports(t) {
                return Err(invalid(&format!(
                    "The {} checksum type cannot be used with the {} checksum algorithm.",
                    t.name(),
                    a.name().to_ascii_lowercase()
                )));
            }
            Ok(Some((a, t)))
        }
    }
}

pub async fn create(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let mut opts = put_options(req)?;
    crate::object_lock::lock_options(req.headers, &mut opts)?;
    opts.checksum = upload_checksum(req.headers)?;
    opts.acl = crate::object::new_acl(req, bucket)?;
    let checksum = opts.checksum;
    let (sse, customer) = crate::sse::for_new_object(req, bucket).await?;
    let envelope = sse.as_ref().map(|s| s.envelope.clone());
    opts.sse = sse;
    let id = req.node.layer.create_multipart_upload(bucket, key, opts).await?;
    let mut x = xml::Writer::new();
    x.root("InitiateMultipartUploadResult");
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("UploadId", &id_str(id));
    x.close("InitiateMultipartUploadResult");
    let mut reply = Reply::xml(x.finish());
    if let Some((a, t)) = checksum {
        reply = reply.header("x-amz-checksum-algorithm", a.name()).header("x-amz-checksum-type", t.name());
    }
    let reply = crate::sse::with_written_context(reply, req, envelope.as_ref());
    Ok(crate::sse::with_headers(reply, envelope.as_ref(), customer.as_ref().map(|c| c.md5())))
}
pub async fn upload_part(
    req: &Request<'_>,
    target: &ObjectTarget,
    route: &Route,
    mut body: RequestBody,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    req.node.layer.bucket_info(bucket)?;
    let number = part_number(route)?;
    let id = upload_id(route)?;
    check_declared_length(req.headers)?;
    let content_md5 = put_options(req)?.content_md5;
    let upload = req.node.layer.upload_info(bucket, key, id).await?;
    let (sse, customer_md5) = crate::sse::for_part(req, upload.sse.as_deref(), crate::sse::CUSTOMER).await?;
    let layer = &req.node.layer;
    let part =
        layer.upload_part_sealed(bucket, key, id, number, &mut body, content_md5, sse.as_ref()).await?;
    let reply = stored_reply(&part.etag, &part.checksums);
    Ok(crate::sse::with_headers(reply, upload.sse.as_deref(), customer_md5.as_deref()))
}

/// Parses `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"…"</ETag></Part>…`.
pub(crate) fn parse_complete(doc: &[u8]) -> Result<Vec<CompletePart>, S3Error> {
    use quick_xml::events::Event;
    let malformed = crate::error::malformed_xml;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let mut parts = Vec::new();
    let (mut number, mut etag, mut field, mut text): (
        Option<u32>,
        Option<String>,
        Option<&'static str>,
        String,
    ) = (None, None, None, String::new());
    let mut checksums = std::collections::BTreeMap::new();
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
                        checksums.clear();
                        None
                    }
                    b"PartNumber" => Some("n"),
                    b"ETag" => Some("e"),
                    name => name
                        .strip_prefix(b"Checksum")
                        .and_then(|a| Algorithm::parse(std::str::from_utf8(a).ok()?))
                        .map(Algorithm::name),
                };
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::End(e) => {
                match field.take() {
                    Some("n") => number = Some(text.trim().parse().map_err(|_| malformed())?),
                    Some("e") => etag = Some(text.trim().trim_matches('"').to_owned()),
                    Some(algorithm) => {
                        checksums.insert(algorithm.to_owned(), text.trim().to_owned());
                    }
                    None => {}
                }
                text.clear();
                if e.local_name().as_ref() == b"Part" {
                    match (number, etag.take()) {
                        (Some(n), Some(e)) => parts.push(CompletePart {
                            number: n,
                            etag: e,
                            checksums: std::mem::take(&mut checksums),
                        }),
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
    target: &ObjectTarget,
    route: &Route,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    req.node.layer.bucket_info(bucket)?;
    let id = upload_id(route)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let parts = parse_complete(&doc)?;
    let checksum = Algorithm::ALL.into_iter().find_map(|a| {
        let v = req.headers.get(a.header())?.to_str().ok()?;
        Some((a, v.trim().to_owned()))
    });
    // SSE-C: the parts' checksums are sealed under the upload's key, which the request must
    // then carry (as AWS asks of an upload with checksums).
    let customer = match crate::sse::customer_key(req, crate::sse::CUSTOMER)? {
        Some(_) => match req.node.layer.upload_info(bucket, key, id).await {
            Ok(upload) => crate::sse::customer_cipher(req, upload.sse.as_deref()).await?,
            // Completed before: the object's own envelope opens below.
            Err(strata_object::ObjectError::NoSuchUpload) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let opts = CompleteOptions {
        condition: crate::object::write_condition(req.headers)?,
        checksum,
        customer_cipher: customer.as_ref().map(|(c, _)| c.clone()),
        imported: None,
    };
    let mut info = req.node.layer.complete_multipart_upload(bucket, key, id, &parts, opts).await?;
    let customer = match customer {
        Some(c) => Some(c),
        None => crate::sse::customer_cipher(req, info.sse.as_ref()).await?,
    };
    if let Some((cipher, _)) = &customer {
        info.open_checksums(cipher)?;
    }
    req.notify(strata_notify::EventName::ObjectCreatedCompleteMultipartUpload, bucket, key, Some(&info))
        .await;
    let mut x = xml::Writer::new();
    x.root("CompleteMultipartUploadResult");
    x.elem("Location", &format!("/{bucket}/{key}"));
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("ETag", &format!("\"{}\"", info.etag));
    checksum_elements(&mut x, &info.checksums);
    if let Some(v) = info.checksums.values().next() {
        x.elem("ChecksumType", ChecksumType::of_value(v).name());
    }
    x.close("CompleteMultipartUploadResult");
    let reply = crate::object::version_header(Reply::xml(x.finish()), &info);
    let reply = crate::lifecycle::with_expiration(reply, req, bucket, &info);
    Ok(crate::sse::with_headers(reply, info.sse.as_ref(), customer.as_ref().map(|(_, md5)| md5.as_str())))
}

pub async fn abort(req: &Request<'_>, target: &ObjectTarget, route: &Route) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    // NoSuchBucket before NoSuchUpload, as AWS answers.
    req.node.layer.bucket_info(bucket)?;
    let id = upload_id(route)?;
    req.node.layer.abort_multipart_upload(bucket, key, id).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

fn upload_checksum_elements(x: &mut xml::Writer, upload: &UploadRecord) {
    if let (Some(a), Some(t)) = (&upload.checksum_algorithm, &upload.checksum_type) {
        x.elem("ChecksumAlgorithm", a);
        x.elem("ChecksumType", t);
    }
}

fn number_param(route: &Route, name: &str, default: usize) -> Result<usize, S3Error> {
    match route.param(name) {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| {
            S3Error::new(S3ErrorCode::InvalidArgument, &format!("{name} must be a non-negative integer"))
        }),
    }
}

pub async fn list_parts(req: &Request<'_>, target: &ObjectTarget, route: &Route) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    // NoSuchBucket before NoSuchUpload, as AWS answers.
    req.node.layer.bucket_info(bucket)?;
    let id = upload_id(route)?;
    let max_parts = number_param(route, "max-parts", 1000)?.min(1000);
    let marker = number_param(route, "part-number-marker", 0)?;
    let (upload, mut parts) = req.node.layer.list_parts(bucket, key, id).await?;
    // SSE-C: the parts' checksums are sealed; shown only when the request carries the key.
    if let Some((cipher, _)) = crate::sse::customer_cipher(req, upload.sse.as_deref()).await? {
        strata_object::open_part_checksums(&mut parts, &cipher)?;
    }
    let owners = Owners::of_bucket(req, bucket)?;
    let after: Vec<_> = parts.into_iter().filter(|p| p.number as usize > marker).collect();
    let truncated = after.len() > max_parts;
    let page = &after[..after.len().min(max_parts)];
    let mut x = xml::Writer::new();
    x.root("ListPartsResult");
    x.elem("Bucket", bucket);
    x.elem("Key", key);
    x.elem("UploadId", &id_str(id));
    write_owner(&mut x, "Initiator", owners.of(upload.acl.as_ref()));
    write_owner(&mut x, "Owner", owners.of(upload.acl.as_ref()));
    x.elem("StorageClass", "STANDARD");
    x.elem("PartNumberMarker", &marker.to_string());
    if let Some(last) = page.last() {
        x.elem("NextPartNumberMarker", &last.number.to_string());
    }
    x.elem("MaxParts", &max_parts.to_string());
    x.elem("IsTruncated", if truncated { "true" } else { "false" });
    upload_checksum_elements(&mut x, &upload);
    for p in page {
        x.open("Part");
        x.elem("PartNumber", &p.number.to_string());
        x.elem("LastModified", &strata_types::time::iso8601(p.mod_time));
        x.elem("ETag", &format!("\"{}\"", p.etag));
        let size = match upload.sse {
            Some(_) => strata_crypto::package::plain_size(p.size).unwrap_or(0),
            None => p.size,
        };
        x.elem("Size", &size.to_string());
        checksum_elements(&mut x, &p.checksums);
        x.close("Part");
    }
    x.close("ListPartsResult");
    Ok(Reply::xml(x.finish()))
}

/// One entry of a ListMultipartUploads page.
#[derive(Debug, PartialEq)]
enum UploadEntry {
    Upload(Box<UploadRecord>),
    Prefix(String),
}

/// Gathers one ListMultipartUploads page from rounds of uploads in position order (key, then
/// upload id): keys under `prefix` rolled up at `delimiter`, at most `max` entries, and whether
/// more follow. It holds one page, never the bucket's whole list.
struct UploadsPager<'a> {
    prefix: &'a str,
    delimiter: Option<&'a str>,
    key_marker: &'a str,
    max: usize,
    entries: Vec<UploadEntry>,
    truncated: bool,
    /// Positions up to here are inside a common prefix already rolled up.
    skip_to: Option<Vec<u8>>,
}

impl<'a> UploadsPager<'a> {
    fn new(prefix: &'a str, delimiter: Option<&'a str>, key_marker: &'a str, max: usize) -> Self {
        Self { prefix, delimiter, key_marker, max, entries: Vec::new(), truncated: false, skip_to: None }
    }

    /// Where the listing starts: past the upload-id marker's upload of the key marker, or past
    /// every upload of the key marker.
    fn start(key_marker: &str, upload_id_marker: Option<Uuid>) -> Vec<u8> {
        match upload_id_marker {
            Some(id) => strata_object::upload_position(key_marker, id),
            None if key_marker.is_empty() => Vec::new(),
            None => [key_marker.as_bytes(), &[1]].concat(),
        }
    }

    /// Takes one round; `false` once the page is full (and known to be truncated).
    fn take(&mut self, round: Vec<UploadRecord>) -> bool {
        for u in round {
            let at = strata_object::upload_position(&u.key, u.upload_id);
            if self.skip_to.as_ref().is_some_and(|s| at <= *s) {
                continue;
            }
            let Some(rest) = u.key.strip_prefix(self.prefix) else { continue };
            let entry = match self.delimiter.and_then(|d| rest.find(d).map(|at| at + d.len())) {
                Some(end) => {
                    let common = format!("{}{}", self.prefix, &rest[..end]);
                    self.skip_to = Some([common.as_bytes(), &[0xff]].concat());
                    if common.as_str() <= self.key_marker {
                        continue;
                    }
                    UploadEntry::Prefix(common)
                }
                None => UploadEntry::Upload(Box::new(u)),
            };
            if self.entries.len() == self.max {
                self.truncated = true;
                return false;
            }
            self.entries.push(entry);
        }
        true
    }

    /// Where the next round starts, given where the last one ended.
    fn next_after(&self, round_end: Vec<u8>) -> Vec<u8> {
        match &self.skip_to {
            Some(s) if *s > round_end => s.clone(),
            _ => round_end,
        }
    }
}

pub async fn list_uploads(req: &Request<'_>, bucket: &BucketName, route: &Route) -> Result<Reply, S3Error> {
    let prefix = route.param("prefix").unwrap_or("");
    let delimiter = route.param("delimiter").filter(|d| !d.is_empty());
    let max = number_param(route, "max-uploads", 1000)?.min(1000);
    let key_marker = route.param("key-marker").unwrap_or("");
    let upload_id_marker = match route.param("upload-id-marker").filter(|m| !m.is_empty()) {
        None => None,
        // Without a key marker S3 ignores the upload-id marker.
        Some(_) if key_marker.is_empty() => None,
        Some(m) => Some(
            Uuid::try_parse(m)
                .map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument, "Invalid uploadId marker"))?,
        ),
    };
    let url = crate::bucket::url_encoding(route)?;
    let enc = |s: &str| crate::bucket::encode_name(s, url);
    let owners = Owners::of_bucket(req, bucket)?;
    let mut pager = UploadsPager::new(prefix, delimiter, key_marker, max);
    let mut after = UploadsPager::start(key_marker, upload_id_marker);
    loop {
        let round = req.node.layer.list_multipart_uploads(bucket, prefix, &after, UPLOADS_ROUND).await?;
        if !pager.take(round.uploads) {
            break;
        }
        match round.next {
            Some(end) => after = pager.next_after(end),
            None => break,
        }
    }
    let (page, truncated) = (pager.entries, pager.truncated);
    let mut x = xml::Writer::new();
    x.root("ListMultipartUploadsResult");
    x.elem("Bucket", bucket);
    x.elem("KeyMarker", &enc(key_marker));
    x.elem("UploadIdMarker", &upload_id_marker.map(id_str).unwrap_or_default());
    match page.last().filter(|_| truncated) {
        Some(UploadEntry::Upload(u)) => {
            x.elem("NextKeyMarker", &enc(&u.key));
            x.elem("NextUploadIdMarker", &id_str(u.upload_id));
        }
        Some(UploadEntry::Prefix(p)) => x.elem("NextKeyMarker", &enc(p)),
        None => {}
    }
    if let Some(d) = delimiter {
        x.elem("Delimiter", &enc(d));
    }
    x.elem("Prefix", &enc(prefix));
    x.elem("MaxUploads", &max.to_string());
    x.elem("IsTruncated", if truncated { "true" } else { "false" });
    if url {
        x.elem("EncodingType", "url");
    }
    for entry in &page {
        if let UploadEntry::Upload(u) = entry {
            x.open("Upload");
            x.elem("Key", &enc(&u.key));
            x.elem("UploadId", &id_str(u.upload_id));
            write_owner(&mut x, "Initiator", owners.of(u.acl.as_ref()));
            write_owner(&mut x, "Owner", owners.of(u.acl.as_ref()));
            x.elem("StorageClass", "STANDARD");
            x.elem("Initiated", &strata_types::time::iso8601(u.initiated));
            upload_checksum_elements(&mut x, u);
            x.close("Upload");
        }
    }
    for entry in &page {
        if let UploadEntry::Prefix(p) = entry {
            x.open("CommonPrefixes");
            x.elem("Prefix", &enc(p));
            x.close("CommonPrefixes");
        }
    }
    x.close("ListMultipartUploadsResult");
    Ok(Reply::xml(x.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(key: &str, n: u128) -> UploadRecord {
        UploadRecord {
            upload_id: Uuid::from_u128(n),
            key: key.to_owned(),
            initiated: n as u64,
            headers: Default::default(),
            user_metadata: Default::default(),
            erasure: strata_meta::ErasureInfo {
                bitrot: Default::default(),
                data_count: 1,
                parity_count: 0,
                block_size: 1,
                shard_index: 0,
                distribution: vec![0],
            },
            tags: Default::default(),
            checksum_algorithm: None,
            checksum_type: None,
            retention: None,
            legal_hold: false,
            sse: None,
            acl: None,
        }
    }

    fn names(entries: &[UploadEntry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| match e {
                UploadEntry::Upload(u) => format!("{}#{}", u.key, u.upload_id.as_u128()),
                UploadEntry::Prefix(p) => p.clone(),
            })
            .collect()
    }

    /// One ListMultipartUploads page gathered as the server does, from rounds of `round`
    /// uploads of `all` (sorted by position) past each round's end.
    fn page(
        all: &[UploadRecord],
        prefix: &str,
        delimiter: Option<&str>,
        key_marker: &str,
        upload_id_marker: Option<Uuid>,
        max: usize,
        round: usize,
    ) -> (Vec<UploadEntry>, bool) {
        let mut pager = UploadsPager::new(prefix, delimiter, key_marker, max);
        let mut after = UploadsPager::start(key_marker, upload_id_marker);
        loop {
            let rest: Vec<UploadRecord> = all
                .iter()
                .filter(|u| u.key.starts_with(prefix))
                .filter(|u| strata_object::upload_position(&u.key, u.upload_id) > after)
                .take(round)
                .cloned()
                .collect();
            let end = (rest.len() == round)
                .then(|| rest.last().map(|u| strata_object::upload_position(&u.key, u.upload_id)))
                .flatten();
            if !pager.take(rest) {
                break;
            }
            match end {
                Some(end) => after = pager.next_after(end),
                None => break,
            }
        }
        (pager.entries, pager.truncated)
    }

    /// Pages through every upload and prefix exactly once, whatever the page and round sizes.
    #[test]
    fn upload_pages() {
        let all = [
            upload("a", 1),
            upload("a", 2),
            upload("a", 3),
            upload("b/1", 4),
            upload("b/2", 5),
            upload("b/3", 6),
            upload("c", 7),
            upload("d/x/y", 8),
        ];
        let want = ["a#1", "a#2", "a#3", "b/", "c#7", "d/"];
        for round in 1..=9 {
            let (entries, more) = page(&all, "", Some("/"), "", None, 100, round);
            assert_eq!(names(&entries), want, "round {round}");
            assert!(!more);
            let (entries, _) = page(&all, "b/", Some("/"), "", None, 100, round);
            assert_eq!(names(&entries), ["b/1#4", "b/2#5", "b/3#6"]);
            for max in 1..=7 {
                let (mut key_marker, mut id_marker, mut seen) = (String::new(), None, Vec::new());
                loop {
                    let (entries, more) = page(&all, "", Some("/"), &key_marker, id_marker, max, round);
                    assert!(entries.len() <= max);
                    seen.extend(names(&entries));
                    if !more {
                        break;
                    }
                    (key_marker, id_marker) = match entries.last() {
                        Some(UploadEntry::Upload(u)) => (u.key.clone(), Some(u.upload_id)),
                        Some(UploadEntry::Prefix(p)) => (p.clone(), None),
                        None => panic!("a truncated page is not empty"),
                    };
                }
                assert_eq!(seen, want, "max {max} round {round}");
            }
            // A key marker alone skips every upload of that key.
            let (entries, _) = page(&all, "", None, "a", None, 100, round);
            assert_eq!(names(&entries)[0], "b/1#4");
        }
    }

    #[test]
    fn parses_complete_documents() {
        let doc = br#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>"aa"</ETag><PartNumber>1</PartNumber></Part><Part><PartNumber>2</PartNumber><ChecksumCRC32>DUoRhQ==</ChecksumCRC32><ETag>&quot;bb&quot;</ETag></Part></CompleteMultipartUpload>"#;
        let parts = parse_complete(doc).expect("parses");
        assert_eq!(
            parts,
            [
                CompletePart { number: 1, etag: "aa".into(), ..Default::default() },
                CompletePart {
                    number: 2,
                    etag: "bb".into(),
                    checksums: [("CRC32".to_owned(), "DUoRhQ==".to_owned())].into()
                }
            ]
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
