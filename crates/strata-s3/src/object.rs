//! Object operations: PutObject, GetObject, HeadObject, DeleteObject.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use http::{HeaderMap, StatusCode};
use strata_object::{ObjectInfo, PutOptions, VersionRef, WriteCondition};
use strata_types::limits::{
    BLOCK_SIZE, INLINE_SIZE_MAX, PUT_OBJECT_SIZE_MAX, REQUEST_MEMORY_STREAM, USER_METADATA_SIZE_MAX,
};

use crate::body::{ChecksumRequest, RequestBody, ResponseBody};
use crate::chunked::ChunkedDecoder;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{ObjectTarget, Route};
use crate::sigv4::Payload;
use strata_object::checksum::{Algorithm, ChecksumType};

/// Headers stored with the object and returned on GET/HEAD.
pub const STORED_HEADERS: [&str; 6] = [
    "content-type",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
];

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn invalid(code: S3ErrorCode, msg: &str) -> S3Error {
    S3Error::new(code, msg)
}

/// Builds the body reader that decodes and verifies what the signature promised.
pub fn request_body(req: &Request<'_>, incoming: hyper::body::Incoming) -> Result<RequestBody, S3Error> {
    body_reader(req, incoming, true)
}

/// CompleteMultipartUpload's body: its `x-amz-checksum-*` headers describe the object being
/// completed, not the XML document.
pub fn complete_body(req: &Request<'_>, incoming: hyper::body::Incoming) -> Result<RequestBody, S3Error> {
    body_reader(req, incoming, false)
}

fn body_reader(
    req: &Request<'_>,
    incoming: hyper::body::Incoming,
    checksum_headers: bool,
) -> Result<RequestBody, S3Error> {
    let headers = req.headers;
    let content_length = header(headers, "content-length").and_then(|v| v.parse::<u64>().ok());
    let decoded_length = header(headers, "x-amz-decoded-content-length").and_then(|v| v.parse::<u64>().ok());
    let (decoder, expected_len, sha256) = match &req.auth.payload {
        Payload::StreamingSigned { .. } => {
            (Some(ChunkedDecoder::new(req.auth.chunk_signer.clone())), decoded_length, None)
        }
        Payload::StreamingUnsignedTrailer => (Some(ChunkedDecoder::new(None)), decoded_length, None),
        Payload::Sha256(h) => (None, content_length, Some(h.clone())),
        Payload::Unsigned => (None, content_length, None),
    };
    let checksum = if checksum_headers { checksum_request(headers)? } else { None };
    let stall_timeout = req.node.config.idle_timeout;
    let (bytes_per_sec, window) = req.node.config.min_transfer;
    let min_rate =
        crate::body::MinRate { bytes_per_sec, window, cut: req.node.metrics.slow_bodies_cut.clone() };
    Ok(RequestBody::new(incoming, decoder, expected_len, sha256, checksum, stall_timeout, Some(min_rate)))
}

fn checksum_request(headers: &HeaderMap) -> Result<Option<ChecksumRequest>, S3Error> {
    for a in Algorithm::ALL {
        if let Some(v) = header(headers, &a.header()) {
            return Ok(Some(ChecksumRequest { algorithm: a, expected: Some(v.trim().to_owned()) }));
        }
    }
    let trailer = header(headers, "x-amz-trailer").map(|t| t.trim().to_ascii_lowercase());
    if let Some(t) = trailer {
        let a = Algorithm::ALL
            .into_iter()
            .find(|a| a.header() == t)
            .ok_or_else(|| invalid(S3ErrorCode::InvalidArgument, "unsupported x-amz-trailer"))?;
        return Ok(Some(ChecksumRequest { algorithm: a, expected: None }));
    }
    if let Some(name) = header(headers, "x-amz-sdk-checksum-algorithm") {
        let a = Algorithm::parse(name.trim()).ok_or_else(|| {
            invalid(S3ErrorCode::InvalidArgument, "unsupported x-amz-sdk-checksum-algorithm")
        })?;
        return Ok(Some(ChecksumRequest { algorithm: a, expected: None }));
    }
    Ok(None)
}

pub(crate) fn put_options(req: &Request<'_>) -> Result<PutOptions, S3Error> {
    let headers = req.headers;
    let mut opts = PutOptions::default();
    for name in STORED_HEADERS {
        if let Some(v) = header(headers, name) {
            let chunked = |e: &str| e.trim().eq_ignore_ascii_case("aws-chunked");
            let v = if name == "content-encoding" && v.split(',').any(chunked) {
                // aws-chunked describes the transfer, not the object: only that token goes.
                v.split(',').filter(|e| !chunked(e)).map(str::trim).collect::<Vec<_>>().join(", ")
            } else {
                // Kept exactly as sent.
                v.to_owned()
            };
            if !v.is_empty() {
                opts.headers.insert(name.to_owned(), v);
            }
        }
    }
    let mut meta_size = 0;
    for (name, value) in headers {
        if let Some(m) = name.as_str().strip_prefix("x-amz-meta-") {
            let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
            meta_size += m.len() + v.len();
            opts.user_metadata.insert(m.to_owned(), v);
        }
    }
    if meta_size > USER_METADATA_SIZE_MAX {
        return Err(invalid(
            S3ErrorCode::MetadataTooLarge,
            "Your metadata headers exceed the maximum allowed metadata size.",
        ));
    }
    if let Some(md5) = header(headers, "content-md5") {
        let bytes = base64::engine::general_purpose::STANDARD.decode(md5.trim()).ok();
        let digest: [u8; 16] = bytes.and_then(|b| b.try_into().ok()).ok_or_else(|| {
            invalid(S3ErrorCode::InvalidDigest, "The Content-MD5 you specified was invalid.")
        })?;
        opts.content_md5 = Some(digest);
    }
    opts.condition = write_condition(headers)?;
    if let Some(t) = header(headers, "x-amz-tagging") {
        opts.tags = crate::tagging::from_header(t)?;
    }
    opts.parity_count = match header(headers, "x-amz-storage-class") {
        None | Some("STANDARD") => None,
        Some("REDUCED_REDUNDANCY") => req.node.config.rrs_parity,
        Some(_) => {
            return Err(invalid(
                S3ErrorCode::InvalidStorageClass,
                "The storage class you specified is not valid",
            ))
        }
    };
    Ok(opts)
}

/// The owner and ACL of an object the request writes into `bucket` (see
/// [`crate::grants::new_object_acl`]).
pub(crate) fn new_acl(req: &Request<'_>, bucket: &str) -> Result<Option<strata_object::Acl>, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let writer = crate::grants::owner_of_key(req.node, &req.auth.access_key);
    crate::grants::new_object_acl(req.node, req.headers, &record, writer)
}

/// `If-None-Match: *` or `If-Match: "etag"` on a write.
pub(crate) fn write_condition(headers: &HeaderMap) -> Result<Option<WriteCondition>, S3Error> {
    match (header(headers, "if-none-match"), header(headers, "if-match")) {
        (Some(_), Some(_)) => {
            Err(invalid(S3ErrorCode::NotImplemented, "If-Match with If-None-Match is not supported"))
        }
        (Some(v), None) if v.trim() == "*" => Ok(Some(WriteCondition::NoneMatchAny)),
        (Some(_), None) => Err(invalid(S3ErrorCode::NotImplemented, "If-None-Match on a write takes only *")),
        (None, Some(v)) => {
            Ok(Some(WriteCondition::Match(v.trim().trim_start_matches("W/").trim_matches('"').to_owned())))
        }
        (None, None) => Ok(None),
    }
}

/// Refuses a body whose declared length is missing, not a number, or above the single-PUT limit,
/// before reading any of it. A body sent with `Transfer-Encoding: chunked` and no length is
/// streamed in; the PUT path stops it at the size limit as it goes.
pub(crate) fn check_declared_length(headers: &HeaderMap) -> Result<(), S3Error> {
    let declared =
        header(headers, "x-amz-decoded-content-length").or_else(|| header(headers, "content-length"));
    let http_chunked = header(headers, "transfer-encoding")
        .is_some_and(|te| te.split(',').any(|t| t.trim().eq_ignore_ascii_case("chunked")));
    match declared.map(str::parse::<u64>) {
        None if http_chunked => Ok(()),
        None => Err(invalid(
            S3ErrorCode::MissingContentLength,
            "You must provide the Content-Length HTTP header.",
        )),
        Some(Err(_)) => Err(invalid(S3ErrorCode::InvalidArgument, "Content-Length is not a number")),
        Some(Ok(n)) if n > PUT_OBJECT_SIZE_MAX => Err(invalid(
            S3ErrorCode::EntityTooLarge,
            "Your proposed upload exceeds the maximum allowed object size.",
        )),
        Some(Ok(_)) => Ok(()),
    }
}

/// ETag and verified checksum headers of a stored body.
pub(crate) fn stored_reply(etag: &str, checksums: &BTreeMap<String, String>) -> Reply {
    with_checksums(Reply::empty(StatusCode::OK).header("etag", &format!("\"{etag}\"")), checksums)
}

/// Adds an `x-amz-checksum-*` header for each stored checksum, and `x-amz-checksum-type`.
pub(crate) fn with_checksums(mut reply: Reply, checksums: &BTreeMap<String, String>) -> Reply {
    for (algo, value) in checksums {
        if let Some(a) = Algorithm::parse(algo) {
            reply = reply
                .header(&a.header(), value)
                .header("x-amz-checksum-type", ChecksumType::of_value(value).name());
        }
    }
    reply
}

/// Writes `<ChecksumCRC32>…</ChecksumCRC32>`… for each checksum, in the order S3 uses.
pub(crate) fn checksum_elements(x: &mut crate::xml::Writer, checksums: &BTreeMap<String, String>) {
    for a in Algorithm::ALL {
        if let Some(v) = checksums.get(a.name()) {
            x.elem(&format!("Checksum{}", a.name()), v);
        }
    }
}

pub async fn put_object(
    req: &Request<'_>,
    target: &ObjectTarget,
    mut body: RequestBody,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    check_declared_length(req.headers)?;
    let mut opts = put_options(req)?;
    crate::object_lock::lock_options(req.headers, &mut opts)?;
    crate::object_lock::check_integrity_header(req.headers)?;
    let (sse, customer) = crate::sse::for_new_object(req, bucket).await?;
    opts.sse = sse;
    opts.acl = new_acl(req, bucket)?;
    let info = req.node.layer.put_object(bucket, key, &mut body, opts).await?;
    req.notify(strata_notify::EventName::ObjectCreatedPut, bucket, key, Some(&info)).await;
    let reply = version_header(stored_reply(&info.etag, &info.checksums), &info);
    let reply = crate::lifecycle::with_expiration(reply, req, bucket, &info);
    let reply = crate::sse::with_written_context(reply, req, info.sse.as_ref());
    Ok(crate::sse::with_headers(reply, info.sse.as_ref(), customer.as_ref().map(|c| c.md5())))
}

/// `x-amz-version-id` of a version just written: its id in a versioning-enabled bucket; a
/// `null` version (unversioned or suspended bucket) is not named, as AWS does not.
pub(crate) fn version_header(reply: Reply, info: &ObjectInfo) -> Reply {
    reply.with_version(info.version_id.is_some(), info.version_id)
}

/// The byte range of part `number` (`partNumber`): a part of a multipart object, or the whole
/// of any other object as its only part 1. `None` for an empty whole object.
/// `number` is already checked to be 1 to 10,000 (`InvalidArgument` otherwise); past the
/// object's part count it is `416 InvalidPartNumber`, as AWS answers.
fn part_range(number: u32, info: &ObjectInfo) -> Result<Option<(u64, u64)>, S3Error> {
    let bad = || invalid(S3ErrorCode::InvalidPartNumber, "The requested partnumber is not satisfiable");
    let n = usize::try_from(number).map_err(|_| bad())?;
    if info.parts.is_empty() {
        return if n == 1 { Ok((info.size > 0).then_some((0, info.size))) } else { Err(bad()) };
    }
    let size = info.parts.get(n - 1).ok_or_else(bad)?.size;
    let offset: u64 = info.parts[..n - 1].iter().map(|p| p.size).sum();
    Ok((size > 0).then_some((offset, size)))
}

/// A parsed `Range: bytes=…` header, resolved against the object size.
pub(crate) fn parse_range(value: &str, size: u64) -> Result<Option<(u64, u64)>, S3Error> {
    let Some(spec) = value.trim().strip_prefix("bytes=") else { return Ok(None) };
    if spec.contains(',') {
        return Ok(None); // several ranges: S3 serves the whole object
    }
    let Some((a, b)) = spec.split_once('-') else { return Ok(None) };
    let (a, b) = (a.trim(), b.trim());
    let unsatisfiable = || invalid(S3ErrorCode::InvalidRange, "The requested range is not satisfiable");
    let range = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(start), Ok(end)) if a.bytes().all(|c| c.is_ascii_digit()) && start <= end => {
            if start >= size {
                return Err(unsatisfiable());
            }
            (start, end.min(size - 1) - start + 1)
        }
        (Ok(start), Err(_)) if b.is_empty() => {
            if start >= size {
                return Err(unsatisfiable());
            }
            (start, size - start)
        }
        (Err(_), Ok(suffix)) if a.is_empty() => {
            if suffix == 0 {
                return Err(unsatisfiable());
            }
            let n = suffix.min(size);
            (size - n, n)
        }
        _ => return Ok(None), // not a valid range: ignored, as RFC 9110 says
    };
    Ok(Some(range))
}

fn http_date(nanos: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(nanos / 1_000_000_000))
}

pub(crate) fn parse_http_date(v: &str) -> Option<u64> {
    httpdate::parse_http_date(v).ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

fn etag_matches(list: &str, etag: &str) -> bool {
    list.split(',')
        .map(|t| t.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|t| t == "*" || t == etag)
}

/// If-Match / If-Unmodified-Since / If-None-Match / If-Modified-Since, in S3's precedence.
fn check_conditions(headers: &HeaderMap, info: &ObjectInfo) -> Result<(), S3Error> {
    check_conditions_with(headers, info, false)
}

/// As [`check_conditions`]; for a copy source (`copy`), a failed "not modified" condition is a
/// 412 like the others, since a copy has nothing to answer 304 with.
pub(crate) fn check_conditions_with(
    headers: &HeaderMap,
    info: &ObjectInfo,
    copy: bool,
) -> Result<(), S3Error> {
    let modified = info.mod_time / 1_000_000_000;
    let if_match = header(headers, "if-match");
    if let Some(m) = if_match {
        if !etag_matches(m, &info.etag) {
            return Err(invalid(
                S3ErrorCode::PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold",
            ));
        }
    }
    if let (None, Some(t)) = (if_match, header(headers, "if-unmodified-since").and_then(parse_http_date)) {
        if modified > t {
            return Err(invalid(
                S3ErrorCode::PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold",
            ));
        }
    }
    let if_none_match = header(headers, "if-none-match");
    if let Some(m) = if_none_match {
        if etag_matches(m, &info.etag) {
            return Err(not_modified(copy));
        }
    }
    if let (None, Some(t)) = (if_none_match, header(headers, "if-modified-since").and_then(parse_http_date)) {
        if modified <= t {
            return Err(not_modified(copy));
        }
    }
    Ok(())
}

fn not_modified(copy: bool) -> S3Error {
    if copy {
        invalid(
            S3ErrorCode::PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold",
        )
    } else {
        invalid(S3ErrorCode::NotModified, "Not Modified")
    }
}

fn object_headers(mut reply: Reply, info: &ObjectInfo, route: &Route, checksum_mode: bool) -> Reply {
    reply = reply
        .header("etag", &format!("\"{}\"", info.etag))
        .header("last-modified", &http_date(info.mod_time))
        .header("accept-ranges", "bytes");
    let mut stored: BTreeMap<&str, &str> =
        info.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    stored.entry("content-type").or_insert("binary/octet-stream");
    for name in STORED_HEADERS {
        let override_value = route.param(&format!("response-{name}"));
        if let Some(v) = override_value.or(stored.get(name).copied()) {
            reply = reply.header(name, v);
        }
    }
    for (k, v) in &info.user_metadata {
        reply = reply.header(&format!("x-amz-meta-{k}"), v);
    }
    if !info.tags.is_empty() {
        reply = reply.header("x-amz-tagging-count", &info.tags.len().to_string());
    }
    if let Some(r) = info.retention {
        reply = reply
            .header("x-amz-object-lock-mode", r.mode.name())
            .header("x-amz-object-lock-retain-until-date", &strata_types::time::iso8601(r.until));
    }
    if info.legal_hold {
        reply = reply.header("x-amz-object-lock-legal-hold", "ON");
    }
    if let Some(r) = &info.replication {
        reply = reply.header("x-amz-replication-status", r.name());
    }
    if checksum_mode {
        reply = with_checksums(reply, &info.checksums);
    }
    reply
}

pub async fn get_object(
    req: &Request<'_>,
    target: &ObjectTarget,
    route: &Route,
    head: bool,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let part_number = route.param("partNumber").map(|_| crate::router::part_number(route)).transpose()?;
    let which = target.version;
    let open = req.node.layer.open_object_version(bucket, key, which, !head).await?;
    let mut info = open.info.clone();
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    let (cipher, customer_md5) =
        crate::sse::open_stored(req, info.sse.as_ref(), crate::sse::CUSTOMER).await?;
    // SSE-C: the checksums are sealed under the key the request just proved.
    if let Some(c) = &cipher {
        info.open_checksums(c)?;
    }
    if let Err(e) = check_conditions(req.headers, &info) {
        if e.code == S3ErrorCode::NotModified {
            let reply = Reply::empty(StatusCode::NOT_MODIFIED)
                .header("etag", &format!("\"{}\"", info.etag))
                .header("last-modified", &http_date(info.mod_time));
            return Ok(reply);
        }
        return Err(e);
    }
    let part = part_number.map(|n| part_range(n, &info)).transpose()?;
    let range = match (header(req.headers, "range"), part) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                S3ErrorCode::InvalidRequest,
                "Cannot specify both Range header and partNumber query parameter",
            ))
        }
        (Some(r), None) => parse_range(r, info.size).map_err(|e| e.with_resource(Some(bucket), Some(key)))?,
        (None, Some(p)) => p,
        (None, None) => None,
    };
    let checksum_mode =
        header(req.headers, "x-amz-checksum-mode").is_some_and(|m| m.eq_ignore_ascii_case("enabled"));
    let (status, offset, len) = match range {
        Some((offset, len)) => (StatusCode::PARTIAL_CONTENT, offset, len),
        None => (StatusCode::OK, 0, info.size),
    };
    let mut reply = Reply::empty(status);
    // Checksums describe the whole object, or with `partNumber` that part.
    let part_checksums = route
        .param("partNumber")
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| info.parts.get(n.wrapping_sub(1)))
        .map(|p| &p.checksums);
    let show_checksums = checksum_mode && (range.is_none() || part_checksums.is_some());
    reply = object_headers(reply, &info, route, show_checksums && part_checksums.is_none());
    if let Some(c) = part_checksums.filter(|_| show_checksums) {
        reply = with_checksums(reply, c);
    }
    reply = crate::sse::with_headers(reply, info.sse.as_ref(), customer_md5.as_deref());
    reply = reply.header("content-length", &len.to_string());
    reply = reply.with_version(shown, info.version_id);
    if which == VersionRef::Current {
        reply = crate::lifecycle::with_expiration(reply, req, bucket, &info);
    }
    if part.is_some() && !info.parts.is_empty() {
        reply = reply.header("x-amz-mp-parts-count", &info.parts.len().to_string());
    }
    if range.is_some() {
        reply = reply.header("content-range", &format!("bytes {offset}-{}/{}", offset + len - 1, info.size));
    }
    if !head {
        // Blocks are read whole: a small range of a large object still buffers a block or two.
        let buffers =
            if info.size > INLINE_SIZE_MAX { len.saturating_add(2 * BLOCK_SIZE as u64) } else { len };
        req.admission.reserve(buffers.min(REQUEST_MEMORY_STREAM))?;
        let mut stream = match cipher {
            Some(cipher) => open.stream_decrypted(cipher, offset, len),
            None => open.stream(offset, len),
        };
        // The first chunk before the status line: a GET whose first block cannot be read (too
        // few good shards, a package that does not open) is answered with its S3 error, which
        // clients retry, rather than a 200 whose body breaks off. Later blocks still can only
        // cut the body short.
        let first = match stream.recv().await {
            Some(Ok(chunk)) => Some(chunk),
            Some(Err(e)) => return Err(e.into()),
            None => None,
        };
        reply.body = ResponseBody::Stream(first, stream);
    }
    Ok(reply)
}

/// GetObjectAttributes' `ObjectParts`: the count, and a page of parts after
/// `x-amz-part-number-marker` (up to `x-amz-max-parts`, default 1,000).
fn object_parts(x: &mut crate::xml::Writer, info: &ObjectInfo, req: &Request<'_>) -> Result<(), S3Error> {
    let number = |name: &str, default: usize| match header(req.headers, name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map_err(|_| invalid(S3ErrorCode::InvalidArgument, &format!("{name} must be a number"))),
    };
    let marker = number("x-amz-part-number-marker", 0)?;
    let max = number("x-amz-max-parts", 1000)?.min(1000);
    let after: Vec<_> = info.parts.iter().filter(|p| p.number as usize > marker).collect();
    let page = &after[..after.len().min(max)];
    x.open("ObjectParts");
    // Named TotalPartsCount in the API model, PartsCount on the wire.
    x.elem("PartsCount", &info.parts.len().to_string());
    x.elem("PartNumberMarker", &marker.to_string());
    if let Some(last) = page.last() {
        x.elem("NextPartNumberMarker", &last.number.to_string());
    }
    x.elem("MaxParts", &max.to_string());
    x.elem("IsTruncated", if after.len() > page.len() { "true" } else { "false" });
    for p in page {
        x.open("Part");
        x.elem("PartNumber", &p.number.to_string());
        x.elem("Size", &p.size.to_string());
        checksum_elements(x, &p.checksums);
        x.close("Part");
    }
    x.close("ObjectParts");
    Ok(())
}

/// GetObjectAttributes: the attributes named in `x-amz-object-attributes`.
pub async fn get_object_attributes(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let wanted: Vec<String> = header(req.headers, "x-amz-object-attributes")
        .unwrap_or("")
        .split(',')
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(invalid(
            S3ErrorCode::InvalidArgument,
            "x-amz-object-attributes must name at least one attribute",
        ));
    }
    let which = target.version;
    let mut info = req.node.layer.open_object_version(bucket, key, which, false).await?.info;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    // An SSE-C object's attributes need its key, as its metadata does on HEAD (AWS); its
    // checksums are sealed under it.
    if info.sse.as_ref().is_some_and(|e| e.kind == strata_object::SseKind::C) {
        let (cipher, _) = crate::sse::open_stored(req, info.sse.as_ref(), crate::sse::CUSTOMER).await?;
        if let Some(c) = &cipher {
            info.open_checksums(c)?;
        }
    }
    let mut x = crate::xml::Writer::new();
    x.root("GetObjectAttributesResponse");
    for attribute in &wanted {
        match attribute.as_str() {
            "ETag" => x.elem("ETag", &info.etag),
            "Checksum" if !info.checksums.is_empty() => {
                x.open("Checksum");
                checksum_elements(&mut x, &info.checksums);
                if let Some(v) = info.checksums.values().next() {
                    x.elem("ChecksumType", ChecksumType::of_value(v).name());
                }
                x.close("Checksum");
            }
            "ObjectParts" if !info.parts.is_empty() => object_parts(&mut x, &info, req)?,
            "StorageClass" => x.elem("StorageClass", "STANDARD"),
            "ObjectSize" => x.elem("ObjectSize", &info.size.to_string()),
            "Checksum" | "ObjectParts" => {}
            other => {
                return Err(invalid(
                    S3ErrorCode::InvalidArgument,
                    &format!("Invalid attribute name specified: {other}"),
                ))
            }
        }
    }
    x.close("GetObjectAttributesResponse");
    let reply = Reply::xml(x.finish()).header("last-modified", &http_date(info.mod_time));
    Ok(reply.with_version(shown, info.version_id))
}

/// GetObjectTorrent: Strata serves no torrents. AWS stopped serving them too, and answers
/// `404 NoSuchKey`, which clients take as "no torrent" (a 501 reads as a broken server).
pub async fn get_object_torrent(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let bucket = &target.bucket;
    req.node.layer.bucket_info(bucket)?;
    Err(invalid(
        S3ErrorCode::NoSuchKey,
        "The specified key does not exist: no torrent is served for any object.",
    ))
}

/// DeleteObject: the `null` version, a new delete marker, or (`versionId`) one version.
/// `bypass`: the caller asked to lift GOVERNANCE retention and may.
/// A conditional delete's ETag (DeleteObject's `If-Match`, a DeleteObjects entry's `<ETag>`):
/// the current object must have it (`*`: must exist). S3 evaluates the condition on the current
/// version only, so with a `versionId` it is refused rather than read some other way.
pub(crate) fn delete_condition<'a>(
    etag: Option<&'a str>,
    which: &VersionRef,
) -> Result<Option<strata_object::DeleteIf<'a>>, S3Error> {
    let Some(etag) = etag else { return Ok(None) };
    if !matches!(which, VersionRef::Current) {
        return Err(invalid(S3ErrorCode::NotImplemented, "If-Match with a versionId is not implemented"));
    }
    let etag = etag.trim();
    Ok(Some(match etag {
        "*" => strata_object::DeleteIf::Exists,
        _ => strata_object::DeleteIf::ETag(etag.trim_start_matches("W/").trim_matches('"')),
    }))
}

pub async fn delete_object(req: &Request<'_>, target: &ObjectTarget, bypass: bool) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let if_match = delete_condition(header(req.headers, "if-match"), &which)?;
    let done = req.node.layer.delete_object_version_if(bucket, key, which, bypass, if_match).await?;
    req.notify_removed(bucket, key, &done).await;
    let mut reply = Reply::empty(StatusCode::NO_CONTENT);
    if done.delete_marker {
        reply = reply.header("x-amz-delete-marker", "true");
    }
    Ok(reply.with_version(done.versioned, done.version_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9", 100).expect("ok"), Some((0, 10)));
        assert_eq!(parse_range("bytes=90-200", 100).expect("ok"), Some((90, 10)));
        assert_eq!(parse_range("bytes=95-", 100).expect("ok"), Some((95, 5)));
        assert_eq!(parse_range("bytes=-10", 100).expect("ok"), Some((90, 10)));
        assert_eq!(parse_range("bytes=-500", 100).expect("ok"), Some((0, 100)));
        assert_eq!(parse_range("bytes=5-1", 100).expect("ok"), None);
        assert_eq!(parse_range("items=0-1", 100).expect("ok"), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 100).expect("ok"), None);
        assert_eq!(parse_range("bytes=100-", 100).map_err(|e| e.code), Err(S3ErrorCode::InvalidRange));
        assert_eq!(parse_range("bytes=0-0", 0).map_err(|e| e.code), Err(S3ErrorCode::InvalidRange));
        assert_eq!(parse_range("bytes=-0", 10).map_err(|e| e.code), Err(S3ErrorCode::InvalidRange));
    }
}
