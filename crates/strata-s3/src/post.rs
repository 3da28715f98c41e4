//! PostObject: browser uploads as `multipart/form-data`, authorised by a POST policy the
//! bucket owner signed in advance (SigV4 `x-amz-signature`, or SigV2 `signature`).
//!
//! The form's text fields come first and are kept (each at most [`POST_FIELD_SIZE_MAX`]); the `file`
//! field streams straight into the PUT path, counted against the policy's
//! `content-length-range` as it goes, so a form upload is never held in memory. Fields after
//! `file` are ignored, as S3 ignores them.

use std::collections::BTreeMap;

use async_trait::async_trait;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use strata_notify::EventName;
use strata_object::checksum::{Algorithm, Hasher};
use strata_object::{BodyError, BodyReader};
use strata_types::limits::PUT_OBJECT_SIZE_MAX;
use strata_types::ObjectKey;

use crate::context::{Node, Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{Resolved, Route};
use crate::sigv4::{Payload, SecretLookup, Verified};
use crate::xml;
use strata_types::limits::{POST_FIELDS_MAX, POST_FIELD_SIZE_MAX};

/// Form fields S3 never asks a policy condition for.
const UNCONDITIONED: [&str; 5] = ["policy", "x-amz-signature", "signature", "awsaccesskeyid", "file"];

fn malformed_post(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::MalformedPOSTRequest, msg)
}

fn denied(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::AccessDenied, msg)
}

fn policy_error(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidPolicyDocument, &format!("Invalid Policy: {msg}"))
}

/// The text fields of a form, names lowercased (S3 matches them case-insensitively).
#[derive(Debug, Default)]
pub(crate) struct Form {
    fields: BTreeMap<String, String>,
}

impl Form {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// A POST policy: when it expires and what the form must satisfy.
#[derive(Debug)]
pub(crate) struct Policy {
    expiration: u64,
    conditions: Vec<Condition>,
}

#[derive(Debug, PartialEq)]
enum Condition {
    /// `{"name": "value"}` or `["eq", "$name", "value"]`.
    Eq(String, String),
    /// `["starts-with", "$name", "prefix"]`.
    StartsWith(String, String),
    /// `["content-length-range", min, max]`.
    LengthRange(u64, u64),
}

impl Condition {
    fn describe(&self) -> String {
        match self {
            Condition::Eq(n, v) => format!("[\"eq\", \"${n}\", \"{v}\"]"),
            Condition::StartsWith(n, v) => format!("[\"starts-with\", \"${n}\", \"{v}\"]"),
            Condition::LengthRange(a, b) => format!("[\"content-length-range\", {a}, {b}]"),
        }
    }
}

/// Decodes and parses the base64 JSON policy document.
pub(crate) fn parse_policy(encoded: &str) -> Result<Policy, S3Error> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| policy_error("the policy is not base64"))?;
    let doc: Value = serde_json::from_slice(&raw).map_err(|_| policy_error("the policy is not JSON"))?;
    let expiration = doc
        .get("expiration")
        .and_then(Value::as_str)
        .and_then(strata_types::time::parse_iso8601)
        .ok_or_else(|| policy_error("expiration is missing or not an ISO 8601 time"))?;
    let list = doc
        .get("conditions")
        .and_then(Value::as_array)
        .ok_or_else(|| policy_error("conditions must be a list"))?;
    let mut conditions = Vec::with_capacity(list.len());
    let field = |v: &Value| -> Result<String, S3Error> {
        v.as_str()
            .and_then(|s| s.strip_prefix('$'))
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| policy_error("a condition must name a form field as \"$name\""))
    };
    let text = |v: &Value| {
        v.as_str().map(str::to_owned).ok_or_else(|| policy_error("a condition value must be text"))
    };
    for c in list {
        match c {
            Value::Object(map) if map.len() != 1 => {
                return Err(policy_error(
                    "Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.",
                ))
            }
            Value::Object(map) => {
                for (name, value) in map {
                    conditions.push(Condition::Eq(name.to_ascii_lowercase(), text(value)?));
                }
            }
            Value::Array(items) => match items.as_slice() {
                [op, name, value] if op.as_str().is_some_and(|o| o.eq_ignore_ascii_case("eq")) => {
                    conditions.push(Condition::Eq(field(name)?, text(value)?))
                }
                [op, name, value] if op.as_str().is_some_and(|o| o.eq_ignore_ascii_case("starts-with")) => {
                    conditions.push(Condition::StartsWith(field(name)?, text(value)?))
                }
                [op, min, max] if op.as_str() == Some("content-length-range") => {
                    let n = |v: &Value| {
                        v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).ok_or_else(|| {
                            policy_error("content-length-range takes two non-negative integers")
                        })
                    };
                    conditions.push(Condition::LengthRange(n(min)?, n(max)?))
                }
                _ => return Err(policy_error("a condition is not one S3 knows")),
            },
            _ => return Err(policy_error("a condition must be an object or a list")),
        }
    }
    Ok(Policy { expiration, conditions })
}

/// Checks the policy's signature and returns who signed it. A SigV4 credential must name our
/// `region` and the `s3` service, as for signed requests.
fn verify_signature(form: &Form, secrets: &dyn SecretLookup, our_region: &str) -> Result<String, S3Error> {
    let policy = form.get("policy").unwrap_or("");
    let mismatch = || {
        S3Error::new(
            S3ErrorCode::SignatureDoesNotMatch,
            "The request signature we calculated does not match the signature you provided.",
        )
    };
    if let Some(signature) = form.get("x-amz-signature") {
        if form.get("x-amz-algorithm") != Some("AWS4-HMAC-SHA256") {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "x-amz-algorithm must be AWS4-HMAC-SHA256",
            ));
        }
        let credential = form
            .get("x-amz-credential")
            .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "x-amz-credential is missing"))?;
        let parts: Vec<&str> = credential.split('/').collect();
        let [access_key, date, region, service, "aws4_request"] = parts.as_slice() else {
            return Err(S3Error::new(S3ErrorCode::InvalidArgument, "x-amz-credential is malformed"));
        };
        if *region != our_region {
            let msg = format!("x-amz-credential: the region '{region}' is wrong; expecting '{our_region}'");
            return Err(S3Error::new(S3ErrorCode::InvalidArgument, &msg).with_detail("Region", our_region));
        }
        if *service != "s3" {
            let msg =
                format!("x-amz-credential: incorrect service '{service}'. This endpoint belongs to 's3'.");
            return Err(S3Error::new(S3ErrorCode::InvalidArgument, &msg));
        }
        let secret = secrets.lookup(access_key)?;
        let key = strata_sign::sigv4::signing_key(&secret, date, region, service);
        let expected = hex::encode(strata_sign::hmac_sha256(&key, policy.as_bytes()));
        if !strata_sign::constant_time_eq(expected.as_bytes(), signature.trim().as_bytes()) {
            return Err(mismatch());
        }
        return Ok((*access_key).to_owned());
    }
    if let (Some(access_key), Some(signature)) = (form.get("awsaccesskeyid"), form.get("signature")) {
        let secret = secrets.lookup(access_key)?;
        if !strata_sign::constant_time_eq(
            crate::sigv2::sign(&secret, policy).as_bytes(),
            signature.trim().as_bytes(),
        ) {
            return Err(mismatch());
        }
        return Ok(access_key.to_owned());
    }
    // A policy with no signature is a malformed form (400), as AWS answers, not a refusal (403).
    let missing = if form.get("x-amz-credential").is_some() || form.get("x-amz-algorithm").is_some() {
        "x-amz-signature"
    } else if form.get("awsaccesskeyid").is_some() {
        "Signature"
    } else {
        "AWSAccessKeyId"
    };
    Err(S3Error::new(
        S3ErrorCode::InvalidArgument,
        &format!("Bucket POST must contain a field named '{missing}'. If it is specified, please check the order of the fields."),
    ))
}

/// Checks the form against the policy's conditions; returns the allowed file size range.
fn check_policy(policy: &Policy, form: &Form, bucket: &str, now: u64) -> Result<(u64, u64), S3Error> {
    if policy.expiration <= now {
        return Err(denied("Invalid according to Policy: Policy expired."));
    }
    let value = |name: &str| if name == "bucket" { Some(bucket) } else { form.get(name) };
    let mut range = (0, PUT_OBJECT_SIZE_MAX);
    let mut covered: Vec<&str> = vec!["bucket"];
    for c in &policy.conditions {
        let ok = match c {
            Condition::Eq(name, want) => {
                covered.push(name);
                value(name).unwrap_or("") == want
            }
            Condition::StartsWith(name, prefix) => {
                covered.push(name);
                value(name).unwrap_or("").starts_with(prefix.as_str())
            }
            Condition::LengthRange(min, max) => {
                range = (*min, (*max).min(PUT_OBJECT_SIZE_MAX));
                min <= max
            }
        };
        if !ok {
            return Err(denied(&format!(
                "Invalid according to Policy: Policy Condition failed: {}",
                c.describe()
            )));
        }
    }
    let extra: Vec<&str> = form
        .fields
        .keys()
        .map(String::as_str)
        .filter(|f| !UNCONDITIONED.contains(f) && !f.starts_with("x-ignore-") && !covered.contains(f))
        .collect();
    if !extra.is_empty() {
        return Err(denied(&format!(
            "Invalid according to Policy: Extra input fields: {}",
            extra.join(", ")
        )));
    }
    Ok(range)
}

/// The file field as a request body, held to the policy's size range, and checked against the
/// form's `x-amz-checksum-*` field when it has one (as a PUT's body against its header).
struct FileBody<'r> {
    field: multer::Field<'r>,
    received: u64,
    range: (u64, u64),
    /// The checksum computed as the file is read, and the value the form gave (`None`: the form
    /// named only `x-amz-checksum-algorithm`).
    checksum: Option<(Hasher, Algorithm, Option<String>)>,
    verified: BTreeMap<String, String>,
}

/// The checksum the form asks for: an `x-amz-checksum-<algorithm>` field with its value, or
/// `x-amz-checksum-algorithm` alone (computed and kept).
fn form_checksum(form: &Form) -> Result<Option<(Hasher, Algorithm, Option<String>)>, S3Error> {
    let given: Vec<(Algorithm, &str)> =
        Algorithm::ALL.into_iter().filter_map(|a| form.get(&a.header()).map(|v| (a, v))).collect();
    let named = match form.get("x-amz-checksum-algorithm") {
        None => None,
        Some(name) => Some(Algorithm::parse(name.trim()).ok_or_else(|| {
            S3Error::new(S3ErrorCode::InvalidArgument, "unsupported x-amz-checksum-algorithm")
        })?),
    };
    let conflict = || {
        S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Expecting a single x-amz-checksum- field, of the algorithm named",
        )
    };
    match (given.as_slice(), named) {
        ([], None) => Ok(None),
        ([], Some(a)) => Ok(Some((Hasher::new(a), a, None))),
        ([(a, v)], named) if named.is_none_or(|n| n == *a) => {
            Ok(Some((Hasher::new(*a), *a, Some(v.trim().to_owned()))))
        }
        _ => Err(conflict()),
    }
}

#[async_trait]
impl BodyReader for FileBody<'_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match self.field.chunk().await {
            Ok(Some(chunk)) => {
                self.received += chunk.len() as u64;
                if self.received > self.range.1 {
                    return Err(BodyError::TooLarge);
                }
                if let Some((h, _, _)) = &mut self.checksum {
                    h.update(&chunk);
                }
                Ok(Some(chunk))
            }
            Ok(None) if self.received < self.range.0 => Err(BodyError::TooSmall),
            Ok(None) => {
                if let Some((h, a, want)) = self.checksum.take() {
                    let got = h.finish();
                    if want.is_some_and(|w| w != got) {
                        return Err(BodyError::ChecksumMismatch(a.name().into()));
                    }
                    self.verified.insert(a.name().to_owned(), got);
                }
                Ok(None)
            }
            Err(e) if stalled(&e) => Err(BodyError::TimedOut),
            Err(e) => Err(BodyError::Malformed(format!("the form does not parse: {e}"))),
        }
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        self.verified.clone()
    }

    fn checksum_algorithm(&self) -> Option<Algorithm> {
        self.checksum
            .as_ref()
            .map(|(_, a, _)| *a)
            .or_else(|| self.verified.keys().next().and_then(|n| Algorithm::parse(n)))
    }
}

/// Why the form's body stopped before its end.
#[derive(Debug, thiserror::Error)]
enum FormBodyError {
    /// The client sent nothing for the idle time-out: answered `RequestTimeout`, as a stalled
    /// PutObject body is, so a stalled form cannot hold its request (and budget) forever.
    #[error("the client sent nothing for {0:?}")]
    Stalled(std::time::Duration),
    #[error("{0}")]
    Io(hyper::Error),
}

/// Whether multer gave up because the body stalled (rather than because it does not parse).
fn stalled(e: &multer::Error) -> bool {
    matches!(e, multer::Error::StreamReadFailed(inner)
        if matches!(inner.downcast_ref::<FormBodyError>(), Some(FormBodyError::Stalled(_))))
}

/// The request body's data frames, failing with [`FormBodyError::Stalled`] when the client sends
/// nothing for `stall_timeout`.
fn stall_guarded(
    body: hyper::body::Incoming,
    stall_timeout: std::time::Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, FormBodyError>> {
    futures_util::stream::unfold(Some(body), move |body| async move {
        let mut body = body?;
        loop {
            match tokio::time::timeout(stall_timeout, body.frame()).await {
                Err(_) => return Some((Err(FormBodyError::Stalled(stall_timeout)), None)),
                Ok(None) => return None,
                Ok(Some(Err(e))) => return Some((Err(FormBodyError::Io(e)), None)),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), Some(body)));
                    }
                }
            }
        }
    })
}

/// The form fields that are object headers (`Content-Type`, `x-amz-meta-*`, ...), as headers,
/// so the PUT path reads them as it reads a PutObject's.
fn object_headers(form: &Form) -> Result<HeaderMap, S3Error> {
    const PASSED: [&str; 9] = [
        "content-type",
        "cache-control",
        "content-disposition",
        "content-encoding",
        "expires",
        "content-language",
        "x-amz-storage-class",
        "content-md5",
        "acl",
    ];
    let mut headers = HeaderMap::new();
    for (name, value) in &form.fields {
        // The encryption fields (SSE-S3, SSE-KMS with its key id and context, SSE-C) are read
        // as a PUT's headers of the same names.
        let sse = name.starts_with("x-amz-server-side-encryption");
        if PASSED.contains(&name.as_str()) || name.starts_with("x-amz-meta-") || sse {
            // The form's `acl` field is the PUT's `x-amz-acl` header.
            let name = if name == "acl" { "x-amz-acl" } else { name.as_str() };
            let bad =
                || S3Error::new(S3ErrorCode::InvalidArgument, &format!("form field {name} is not valid"));
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            headers.insert(n, HeaderValue::from_str(value).map_err(|_| bad())?);
        }
    }
    Ok(headers)
}

/// `success_action_redirect` with the object's bucket, key and ETag appended.
fn redirect_to(url: &str, bucket: &str, key: &str, etag: &str) -> String {
    const QUERY_VALUE: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, QUERY_VALUE).to_string();
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}bucket={}&key={}&etag={}", enc(bucket), enc(key), enc(&format!("\"{etag}\"")))
}

fn not_form(e: multer::Error) -> S3Error {
    if stalled(&e) {
        return S3Error::from(BodyError::TimedOut);
    }
    malformed_post(&format!("The body of your POST request is not well-formed multipart/form-data: {e}"))
}

/// Reads the form's text fields, each bounded in size and all in count, up to its `file` field,
/// which is returned unread.
pub(crate) async fn read_fields<'r>(
    multipart: &mut multer::Multipart<'r>,
) -> Result<(Form, multer::Field<'r>), S3Error> {
    let mut form = Form::default();
    while let Some(mut field) = multipart.next_field().await.map_err(not_form)? {
        let name = field.name().unwrap_or("").to_ascii_lowercase();
        if name == "file" {
            return Ok((form, field));
        }
        if form.fields.len() == POST_FIELDS_MAX {
            return Err(malformed_post("The form has too many fields."));
        }
        let mut value = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(not_form)? {
            if value.len() + chunk.len() > POST_FIELD_SIZE_MAX {
                return Err(S3Error::new(
                    S3ErrorCode::MaxPostPreDataLengthExceeded,
                    "Your POST request fields preceding the upload file were too large.",
                ));
            }
            value.extend_from_slice(&chunk);
        }
        let value = String::from_utf8(value).map_err(|_| malformed_post("A form field is not UTF-8."))?;
        form.fields.insert(name, value);
    }
    Err(S3Error::new(
        S3ErrorCode::IncorrectNumberOfFilesInPostRequest,
        "POST requires exactly one file upload per request.",
    ))
}

pub async fn post_object(
    node: &Node,
    admission: &crate::budget::Admission,
    parts: &http::request::Parts,
    body: hyper::body::Incoming,
    route: &Route,
) -> Result<Reply, S3Error> {
    // The bucket as the form's policy and the caller's rights name it; validated once they hold.
    let Some(named) = route.bucket.as_deref() else {
        return Err(S3Error::new(S3ErrorCode::InternalError, "PostObject was routed without a bucket"));
    };
    let content_type =
        parts.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        malformed_post("The body of your POST request is not well-formed multipart/form-data.")
    })?;
    let stream = stall_guarded(body, node.config.idle_timeout);
    let mut multipart = multer::Multipart::new(stream, boundary);
    let (form, field) = read_fields(&mut multipart).await?;
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let directory = node.iam.directory();
    let token = form.get("x-amz-security-token");
    // A form with no policy is anonymous: served only where the bucket policy allows it.
    let signed = form.get("policy").is_some();
    let (access_key, range) = if signed {
        let credentials = crate::access::Credentials { node, directory: &directory, token, now };
        let access_key = verify_signature(&form, &credentials, &node.config.region)?;
        let policy = parse_policy(form.get("policy").unwrap_or(""))?;
        (access_key, check_policy(&policy, &form, named, now)?)
    } else {
        (String::new(), (0, PUT_OBJECT_SIZE_MAX))
    };
    let key_field = form.get("key").ok_or_else(|| {
        S3Error::new(S3ErrorCode::InvalidArgument, "Bucket POST must contain a field named 'key'.")
    })?;
    crate::headers::check(
        crate::Operation::PostObject,
        form.fields.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
    )?;
    let key = ObjectKey::parse(&key_field.replace("${filename}", field.file_name().unwrap_or("")))?;
    let signer = signed.then(|| crate::access::PostSigner {
        access_key: &access_key,
        token,
        v4: form.get("x-amz-signature").is_some(),
    });
    let fields: Vec<(String, String)> = form.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // Authorized before the bucket is looked up: a caller who may not write learns nothing of
    // whether it exists.
    crate::access::authorize_post(node, parts, &directory, signer, named, &key, &fields)?;
    let Resolved::Bucket(_, bucket) = route.resolve()? else {
        return Err(S3Error::new(S3ErrorCode::InternalError, "PostObject was routed as an object"));
    };
    let bucket = &bucket;
    node.layer.bucket_info(bucket)?;
    let headers = object_headers(&form)?;
    let auth = Verified { access_key, payload: Payload::Unsigned, chunk_signer: None };
    let origin = crate::context::Origin::of(parts);
    let tls = parts.extensions.get::<crate::context::ConnInfo>().is_some_and(|c| c.tls);
    let req = Request { node, headers: &headers, auth: &auth, admission, origin, tls };
    let mut opts = crate::object::put_options(&req)?;
    // The form's encryption fields, or else the bucket's default.
    let (sse, customer) = crate::sse::for_new_object(&req, bucket).await?;
    opts.sse = sse;
    opts.acl = crate::object::new_acl(&req, bucket)?;
    if let Some(doc) = form.get("tagging") {
        opts.tags = crate::tagging::parse_document(doc.as_bytes())?;
    }
    let checksum = form_checksum(&form)?;
    let mut file_body = FileBody { field, received: 0, range, checksum, verified: BTreeMap::new() };
    let info = node.layer.put_object(bucket, &key, &mut file_body, opts).await?;
    req.notify(EventName::ObjectCreatedPost, bucket, &key, Some(&info)).await;
    let host = parts.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    let location = format!("http://{host}/{bucket}/{}", crate::bucket::encode_name(&key, true));
    let redirect = form.get("success_action_redirect").or(form.get("redirect")).filter(|u| !u.is_empty());
    let etag = format!("\"{}\"", info.etag);
    if let Some(url) = redirect {
        let to = redirect_to(url, bucket, &key, &info.etag);
        return Ok(Reply::empty(StatusCode::SEE_OTHER).header("location", &to).header("etag", &etag));
    }
    let reply = {
        match form.get("success_action_status") {
            Some("200") => Reply::empty(StatusCode::OK),
            Some("201") => {
                let mut x = xml::Writer::new();
                x.root("PostResponse");
                x.elem("Location", &location);
                x.elem("Bucket", bucket);
                x.elem("Key", &key);
                x.elem("ETag", &format!("\"{}\"", info.etag));
                x.close("PostResponse");
                let mut r = Reply::xml(x.finish());
                r.status = StatusCode::CREATED;
                r
            }
            _ => Reply::empty(StatusCode::NO_CONTENT),
        }
    };
    let reply = crate::sse::with_headers(reply, info.sse.as_ref(), customer.as_ref().map(|c| c.md5()));
    Ok(reply.header("etag", &etag).header("location", &location))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn form(pairs: &[(&str, &str)]) -> Form {
        Form { fields: pairs.iter().map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned())).collect() }
    }

    #[test]
    fn policies() {
        let p = parse_policy(&b64(r#"{"expiration": "2030-01-01T00:00:00.000Z", "conditions": [
            {"bucket": "b"}, ["starts-with", "$key", "user/"], {"acl": "private"},
            ["eq", "$Content-Type", "image/png"], ["content-length-range", 1, 100]]}"#))
        .expect("parses");
        assert_eq!(p.conditions.len(), 5);
        let now = 1_800_000_000;
        let good =
            form(&[("key", "user/a"), ("acl", "private"), ("Content-Type", "image/png"), ("policy", "x")]);
        assert_eq!(check_policy(&p, &good, "b", now).expect("holds"), (1, 100));
        let code = |f: &Form, b: &str, now| check_policy(&p, f, b, now).map_err(|e| e.code);
        assert_eq!(code(&good, "other", now), Err(S3ErrorCode::AccessDenied));
        assert_eq!(code(&good, "b", 1_900_000_000), Err(S3ErrorCode::AccessDenied));
        let wrong_key = form(&[("key", "admin/a"), ("acl", "private"), ("content-type", "image/png")]);
        assert_eq!(code(&wrong_key, "b", now), Err(S3Error::new(S3ErrorCode::AccessDenied, "").code));
        let extra = form(&[
            ("key", "user/a"),
            ("acl", "private"),
            ("content-type", "image/png"),
            ("x-amz-meta-a", "1"),
        ]);
        let e = check_policy(&p, &extra, "b", now).expect_err("extra field");
        assert!(e.message.contains("x-amz-meta-a"), "{}", e.message);
        let ignored = form(&[
            ("key", "user/a"),
            ("acl", "private"),
            ("content-type", "image/png"),
            ("x-ignore-me", "1"),
        ]);
        assert!(check_policy(&p, &ignored, "b", now).is_ok());
        for bad in [
            "not base64!",
            &b64("[]"),
            &b64(r#"{"conditions": []}"#),
            &b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [{}]}"#),
            &b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [{"key": "a", "acl": "private"}]}"#),
            &b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["in", "$key", "a"]]}"#),
            &b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["eq", "key", "a"]]}"#),
            &b64(
                r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["content-length-range", -1, 5]]}"#,
            ),
        ] {
            assert_eq!(
                parse_policy(bad).map(|_| ()).map_err(|e| e.code),
                Err(S3ErrorCode::InvalidPolicyDocument),
                "{bad}"
            );
        }
    }

    struct Root;
    impl SecretLookup for Root {
        fn secret(&self, access_key: &str) -> Option<String> {
            (access_key == "AKIA").then(|| "secret".to_owned())
        }
    }

    #[test]
    fn signatures() {
        let policy = b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": []}"#);
        let key = strata_sign::sigv4::signing_key("secret", "20260101", "us-east-1", "s3");
        let sig = hex::encode(strata_sign::hmac_sha256(&key, policy.as_bytes()));
        let v4 = |sig: &str, cred: &str| {
            form(&[
                ("policy", &policy),
                ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
                ("x-amz-credential", cred),
                ("x-amz-signature", sig),
            ])
        };
        assert_eq!(
            verify_signature(&v4(&sig, "AKIA/20260101/us-east-1/s3/aws4_request"), &Root, "us-east-1").ok(),
            Some("AKIA".into())
        );
        let code = |f: &Form| verify_signature(f, &Root, "us-east-1").map_err(|e| e.code);
        assert_eq!(
            code(&v4(&sig, "AKIA/20260102/us-east-1/s3/aws4_request")),
            Err(S3ErrorCode::SignatureDoesNotMatch)
        );
        assert_eq!(
            code(&v4(&sig, "NOPE/20260101/us-east-1/s3/aws4_request")),
            Err(S3ErrorCode::InvalidAccessKeyId)
        );
        assert_eq!(code(&v4(&sig, "AKIA/20260101")), Err(S3ErrorCode::InvalidArgument));
        // Signed correctly, but for another region or service.
        for (region, service) in [("eu-west-1", "s3"), ("us-east-1", "iam")] {
            let key = strata_sign::sigv4::signing_key("secret", "20260101", region, service);
            let sig = hex::encode(strata_sign::hmac_sha256(&key, policy.as_bytes()));
            let cred = format!("AKIA/20260101/{region}/{service}/aws4_request");
            assert_eq!(code(&v4(&sig, &cred)), Err(S3ErrorCode::InvalidArgument), "{region} {service}");
        }
        let v2 = crate::sigv2::sign("secret", &policy);
        let f = form(&[("policy", &policy), ("AWSAccessKeyId", "AKIA"), ("signature", &v2)]);
        assert_eq!(verify_signature(&f, &Root, "us-east-1").ok(), Some("AKIA".into()));
        let f = form(&[("policy", &policy), ("AWSAccessKeyId", "AKIA"), ("signature", "AAAA")]);
        assert_eq!(code(&f), Err(S3ErrorCode::SignatureDoesNotMatch));
        // A policy without its signature is a malformed form, naming the missing field.
        let missing =
            |f: &Form| verify_signature(f, &Root, "us-east-1").map_err(|e| (e.code, e.message)).err();
        for (fields, name) in [
            (&[("policy", policy.as_str())][..], "'AWSAccessKeyId'"),
            (&[("policy", policy.as_str()), ("AWSAccessKeyId", "AKIA")][..], "'Signature'"),
            (
                &[
                    ("policy", policy.as_str()),
                    ("x-amz-credential", "AKIA/20260101/us-east-1/s3/aws4_request"),
                ][..],
                "'x-amz-signature'",
            ),
        ] {
            let (c, message) = missing(&form(fields)).expect("refused");
            assert_eq!(c, S3ErrorCode::InvalidArgument);
            assert!(message.contains(name), "{message}");
        }
    }

    #[test]
    fn redirects() {
        assert_eq!(
            redirect_to("https://app/done?x=1", "b-1", "a b/c.txt", "abc"),
            "https://app/done?x=1&bucket=b-1&key=a%20b%2Fc.txt&etag=%22abc%22"
        );
    }
}
