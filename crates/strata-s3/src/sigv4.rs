//! AWS Signature Version 4, as S3 checks it: header auth, presigned URLs, and the per-chunk and
//! trailer signatures of streaming uploads.
//!
//! The canonical request is rebuilt from what was sent: the path and query are decoded, then
//! re-encoded with SigV4's rules (unreserved characters kept, everything else `%XX`, `/` kept in
//! the path), so clients that encode differently still verify. Signatures are compared in
//! constant time.

use http::request::Parts;
use percent_encoding::percent_decode_str;
use strata_sign::sigv4::{
    canonical_query, canonical_query_go, canonical_uri, signing_mac, ChunkSigner, ALGORITHM, EMPTY_SHA256,
    STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER, UNSIGNED_PAYLOAD,
};
use strata_sign::{constant_time_eq, sha256_hex};
use strata_types::limits::{CLOCK_SKEW_MAX_SECS, PRESIGN_EXPIRES_MAX_SECS};

use crate::error::{S3Error, S3ErrorCode};

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

fn canonical_header_value(parts: &Parts, name: &str) -> Option<String> {
    let values: Vec<String> = parts
        .headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    if values.is_empty() {
        return None;
    }
    Some(values.join(","))
}

/// What the signature says about the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// `x-amz-content-sha256` is the hex SHA-256 of the body: verified as it streams.
    Sha256(String),
    Unsigned,
    /// aws-chunked with a signature per chunk (and a trailer signature when `trailer`).
    StreamingSigned {
        trailer: bool,
    },
    /// aws-chunked without signatures, with trailing checksum headers.
    StreamingUnsignedTrailer,
}

/// A verified request's identity and payload rules.
#[derive(Debug, Clone)]
pub struct Verified {
    pub access_key: String,
    pub payload: Payload,
    pub chunk_signer: Option<ChunkSigner>,
}

pub(crate) struct Credential<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
}

pub(crate) fn parse_credential(s: &str) -> Result<Credential<'_>, S3Error> {
    let mut it = s.split('/');
    let bad = || S3Error::new(S3ErrorCode::AuthorizationHeaderMalformed, "the credential is malformed");
    let (access_key, date, region, service, term) = (it.next(), it.next(), it.next(), it.next(), it.next());
    match (access_key, date, region, service, term, it.next()) {
        (Some(a), Some(d), Some(r), Some(s), Some("aws4_request"), None) if !a.is_empty() && d.len() == 8 => {
            Ok(Credential { access_key: a, date: d, region: r, service: s })
        }
        _ => Err(bad()),
    }
}

/// Looks up a secret by access key.
pub trait SecretLookup {
    fn secret(&self, access_key: &str) -> Option<String>;

    /// The secret, or why the key is refused (`InvalidAccessKeyId` for an unknown key; an IAM
    /// directory also refuses disabled and expired keys and wrong session tokens).
    fn lookup(&self, access_key: &str) -> Result<String, S3Error> {
        self.secret(access_key).ok_or_else(unknown_access_key)
    }
}

/// AWS's answer to an access key it does not know (or that is disabled).
pub fn unknown_access_key() -> S3Error {
    S3Error::new(
        S3ErrorCode::InvalidAccessKeyId,
        "The AWS Access Key Id you provided does not exist in our records.",
    )
}

struct Signed<'a> {
    credential: Credential<'a>,
    signed_headers: &'a str,
    signature: &'a str,
    amz_date: String,
    payload_hash: String,
}

fn malformed(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::AuthorizationHeaderMalformed, msg)
}

/// Where the signature came from: the `Authorization` header or the query (presigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Header,
    Query,
}

impl Carrier {
    /// The error AWS answers for a credential or scope it cannot accept, and its message prefix.
    fn scope_error(self, what: &str) -> S3Error {
        match self {
            Carrier::Header => malformed(&format!("The authorization header is malformed; {what}")),
            Carrier::Query => S3Error::new(
                S3ErrorCode::AuthorizationQueryParametersError,
                &format!("Error parsing the X-Amz-Credential parameter; {what}"),
            ),
        }
    }
}

/// The credential scope must name this server's region and the `s3` service (a signature for
/// another region or service is not meant for us), and `host` must be signed (else the request
/// could be replayed against another endpoint). AWS answers the same codes.
fn check_scope(s: &Signed<'_>, region: &str, carrier: Carrier) -> Result<(), S3Error> {
    check_scope_for(s, region, carrier, "s3")
}

fn check_scope_for(s: &Signed<'_>, region: &str, carrier: Carrier, service: &str) -> Result<(), S3Error> {
    let c = &s.credential;
    if c.region != region {
        let what = format!("the region '{}' is wrong; expecting '{region}'", c.region);
        return Err(carrier.scope_error(&what).with_detail("Region", region));
    }
    if c.service != service {
        let what = format!("incorrect service '{}'. This endpoint belongs to '{service}'.", c.service);
        return Err(carrier.scope_error(&what));
    }
    if !s.signed_headers.split(';').any(|h| h == "host") {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "There were headers present in the request which were not signed",
        )
        .with_detail("HeadersNotSigned", "host"));
    }
    Ok(())
}

fn header_str<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

pub fn verify_header(
    parts: &Parts,
    auth: &str,
    secrets: &dyn SecretLookup,
    region: &str,
    now: u64,
) -> Result<Verified, S3Error> {
    verify_header_for(parts, auth, secrets, region, now, None)
}

/// Verifies an STS request (service `sts`, signed in its `Authorization` header) whose body,
/// already read, hashes to `body_sha256`: STS clients sign the body's hash without sending it in
/// `x-amz-content-sha256`.
pub fn verify_sts(
    parts: &Parts,
    secrets: &dyn SecretLookup,
    region: &str,
    now: u64,
    body_sha256: &str,
) -> Result<Option<Verified>, S3Error> {
    let Some(auth) = parts.headers.get(http::header::AUTHORIZATION) else { return Ok(None) };
    let auth = auth.to_str().map_err(|_| malformed("the Authorization header is not ASCII"))?;
    verify_header_for(parts, auth, secrets, region, now, Some(body_sha256)).map(Some)
}

/// [`verify_header`] for the `s3` service, or with `sts_body` (the body's hash) for `sts`.
fn verify_header_for(
    parts: &Parts,
    auth: &str,
    secrets: &dyn SecretLookup,
    region: &str,
    now: u64,
    sts_body: Option<&str>,
) -> Result<Verified, S3Error> {
    let rest = auth.strip_prefix(ALGORITHM).ok_or_else(|| {
        S3Error::new(S3ErrorCode::AccessDenied, "only AWS4-HMAC-SHA256 signatures are supported")
    })?;
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for field in rest.split(',') {
        match field.trim().split_once('=') {
            Some(("Credential", v)) => credential = Some(v),
            Some(("SignedHeaders", v)) => signed_headers = Some(v),
            Some(("Signature", v)) => signature = Some(v),
            _ => {}
        }
    }
    let (Some(credential), Some(signed_headers), Some(signature)) = (credential, signed_headers, signature)
    else {
        return Err(malformed("the Authorization header lacks Credential, SignedHeaders or Signature"));
    };
    let amz_date = match header_str(parts, "x-amz-date") {
        Some(d) => d.to_owned(),
        None => header_str(parts, "date")
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| strata_types::time::amz_date(d.as_secs()))
            .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied, "the request has no valid date"))?,
    };
    let payload_hash = match sts_body {
        Some(h) => h.to_owned(),
        None => header_str(parts, "x-amz-content-sha256").unwrap_or(EMPTY_SHA256).to_owned(),
    };
    let signed = Signed {
        credential: parse_credential(credential)?,
        signed_headers,
        signature,
        amz_date,
        payload_hash,
    };
    check_scope_for(&signed, region, Carrier::Header, if sts_body.is_some() { "sts" } else { "s3" })?;
    check_time(&signed.amz_date, now, None)?;
    let verified = check_signature(parts, &signed, parts.uri.query().unwrap_or(""), secrets)?;
    Ok(verified)
}

pub fn verify_presigned(
    parts: &Parts,
    query: &str,
    secrets: &dyn SecretLookup,
    region: &str,
    now: u64,
) -> Result<Verified, S3Error> {
    let mut params = std::collections::HashMap::new();
    for p in query.split('&') {
        if let Some((k, v)) = p.split_once('=') {
            params.insert(decode(k), decode(v));
        }
    }
    let get = |k: &str| {
        params.get(k).map(String::as_str).ok_or_else(|| {
            S3Error::new(S3ErrorCode::AuthorizationQueryParametersError, &format!("query lacks {k}"))
        })
    };
    if get("X-Amz-Algorithm")? != ALGORITHM {
        return Err(S3Error::new(
            S3ErrorCode::AuthorizationQueryParametersError,
            "unsupported X-Amz-Algorithm",
        ));
    }
    let expires: i64 = get("X-Amz-Expires")?.parse().map_err(|_| {
        S3Error::new(S3ErrorCode::AuthorizationQueryParametersError, "X-Amz-Expires should be a number")
    })?;
    if expires < 0 {
        return Err(S3Error::new(
            S3ErrorCode::AuthorizationQueryParametersForbidden,
            "X-Amz-Expires must be non-negative",
        ));
    }
    let expires = expires.unsigned_abs();
    if expires > PRESIGN_EXPIRES_MAX_SECS {
        return Err(S3Error::new(
            S3ErrorCode::AuthorizationQueryParametersForbidden,
            "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds",
        ));
    }
    let signed = Signed {
        credential: parse_credential(get("X-Amz-Credential")?)?,
        signed_headers: get("X-Amz-SignedHeaders")?,
        signature: get("X-Amz-Signature")?,
        amz_date: get("X-Amz-Date")?.to_owned(),
        payload_hash: params
            .get("X-Amz-Content-Sha256")
            .cloned()
            .unwrap_or_else(|| UNSIGNED_PAYLOAD.to_owned()),
    };
    check_scope(&signed, region, Carrier::Query)?;
    check_time(&signed.amz_date, now, Some(expires))?;
    check_signature(parts, &signed, query, secrets)
}

fn check_time(amz_date: &str, now: u64, expires: Option<u64>) -> Result<(), S3Error> {
    let t = strata_types::time::parse_amz_date(amz_date)
        .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied, "X-Amz-Date is not a valid date"))?;
    match expires {
        Some(e) => {
            // `X-Amz-Expires=0` is a URL that was never valid, as AWS treats it.
            if e == 0 || now > t.saturating_add(e) {
                return Err(S3Error::new(S3ErrorCode::AccessDenied, "Request has expired"));
            }
            if t > now + CLOCK_SKEW_MAX_SECS {
                return Err(S3Error::new(S3ErrorCode::AccessDenied, "Request is not valid yet"));
            }
        }
        None => {
            if t.abs_diff(now) > CLOCK_SKEW_MAX_SECS {
                return Err(S3Error::new(
                    S3ErrorCode::RequestTimeTooSkewed,
                    "The difference between the request time and the server's time is too large.",
                ));
            }
        }
    }
    Ok(())
}

fn check_signature(
    parts: &Parts,
    s: &Signed,
    query: &str,
    secrets: &dyn SecretLookup,
) -> Result<Verified, S3Error> {
    let c = &s.credential;
    let secret = secrets.lookup(c.access_key)?;
    if !s.amz_date.starts_with(c.date) {
        return Err(malformed("the credential date does not match the request date"));
    }
    let mut canonical_headers = String::new();
    for name in s.signed_headers.split(';') {
        let value = match name {
            "host" => canonical_header_value(parts, "host")
                .or_else(|| parts.uri.authority().map(|a| a.to_string()))
                .unwrap_or_default(),
            _ => canonical_header_value(parts, name).unwrap_or_default(),
        };
        canonical_headers.push_str(name);
        canonical_headers.push(':');
        canonical_headers.push_str(&value);
        canonical_headers.push('\n');
    }
    let key = signing_mac(&secret, c.date, c.region, c.service);
    let scope = format!("{}/{}/{}/aws4_request", c.date, c.region, c.service);
    let signs = |canonical_query: &str| {
        let canonical_request = format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            parts.method.as_str(),
            canonical_uri(parts.uri.path()),
            canonical_query,
            canonical_headers,
            s.signed_headers,
            s.payload_hash
        );
        let string_to_sign =
            format!("{ALGORITHM}\n{}\n{scope}\n{}", s.amz_date, sha256_hex(canonical_request.as_bytes()));
        let expected = hex::encode(key.sign(string_to_sign.as_bytes()));
        constant_time_eq(expected.as_bytes(), s.signature.as_bytes())
    };
    let aws = canonical_query(query);
    let signed = signs(&aws) || {
        let go = canonical_query_go(query);
        go != aws && signs(&go)
    };
    if !signed {
        return Err(S3Error::new(
            S3ErrorCode::SignatureDoesNotMatch,
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        ));
    }
    let payload = match s.payload_hash.as_str() {
        UNSIGNED_PAYLOAD => Payload::Unsigned,
        STREAMING_SIGNED => Payload::StreamingSigned { trailer: false },
        STREAMING_SIGNED_TRAILER => Payload::StreamingSigned { trailer: true },
        STREAMING_UNSIGNED_TRAILER => Payload::StreamingUnsignedTrailer,
        h if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Payload::Sha256(h.to_ascii_lowercase())
        }
        _ => {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "x-amz-content-sha256 is not a valid value",
            ));
        }
    };
    let chunk_signer = matches!(payload, Payload::StreamingSigned { .. }).then(|| ChunkSigner {
        key,
        amz_date: s.amz_date.clone(),
        scope,
        // The seed signature: the one just checked (equal to what we computed).
        previous: s.signature.to_owned(),
    });
    Ok(Verified { access_key: c.access_key.to_owned(), payload, chunk_signer })
}

#[cfg(test)]
mod tests {
    //! Vectors from the AWS S3 API reference, "Signature Calculations for the Authorization
    //! Header" and "Query String Authentication", and the streaming upload example.
    use super::*;
    use crate::access::verify_signature as verify;
    use strata_sign::hmac_sha256;
    use strata_sign::sigv4::signing_key;

    const AK: &str = "AKIAIOSFODNN7EXAMPLE";
    const SK: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const NOW: u64 = 1_369_353_600; // 2013-05-24T00:00:00Z
    const REGION: &str = "us-east-1";

    struct One;
    impl SecretLookup for One {
        fn secret(&self, access_key: &str) -> Option<String> {
            (access_key == AK).then(|| SK.to_owned())
        }
    }

    fn request(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).expect("request").into_parts().0
    }

    fn auth(signed: &str, sig: &str) -> String {
        format!("AWS4-HMAC-SHA256 Credential={AK}/20130524/us-east-1/s3/aws4_request,SignedHeaders={signed},Signature={sig}")
    }

    #[test]
    fn get_object_vector() {
        let sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
        let a = auth("host;range;x-amz-content-sha256;x-amz-date", sig);
        let p = request(
            "GET",
            "/test.txt",
            &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("range", "bytes=0-9"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("x-amz-date", "20130524T000000Z"),
                ("authorization", &a),
            ],
        );
        let v = verify(&p, &One, REGION, NOW, None).expect("valid").expect("signed");
        assert_eq!(v.access_key, AK);
        // One changed byte anywhere fails.
        let p = request(
            "GET",
            "/test.txt",
            &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("range", "bytes=0-8"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("x-amz-date", "20130524T000000Z"),
                ("authorization", &a),
            ],
        );
        assert_eq!(
            verify(&p, &One, REGION, NOW, None).expect_err("tampered").code,
            S3ErrorCode::SignatureDoesNotMatch
        );
    }

    #[test]
    fn put_object_vector() {
        let sig = "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd";
        let a = auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", sig);
        let p = request(
            "PUT",
            "/test%24file.text",
            &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
                ("x-amz-date", "20130524T000000Z"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ("authorization", &a),
            ],
        );
        let v = verify(&p, &One, REGION, NOW, None).expect("valid").expect("signed");
        assert_eq!(
            v.payload,
            Payload::Sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072".into())
        );
    }

    #[test]
    fn get_lifecycle_and_list_vectors() {
        let a = auth(
            "host;x-amz-content-sha256;x-amz-date",
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
        );
        let h = [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", "20130524T000000Z"),
        ];
        let mut headers = h.to_vec();
        headers.push(("authorization", &a));
        assert!(verify(&request("GET", "/?lifecycle", &headers), &One, REGION, NOW, None).is_ok());
        let a = auth(
            "host;x-amz-content-sha256;x-amz-date",
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
        );
        let mut headers = h.to_vec();
        headers.push(("authorization", &a));
        assert!(verify(&request("GET", "/?max-keys=2&prefix=J", &headers), &One, REGION, NOW, None).is_ok());
    }

    #[test]
    fn repeated_names_may_be_signed_in_the_order_sent() {
        // minio-go (mc) signs Go's `url.Values.Encode()`: names sorted, the values of a repeated
        // name in the order sent; AWS sorts the values too. Either is accepted, no other order.
        let (a, b, c) = ("s3%3AObjectAccessed%3A%2A", "s3%3AObjectCreated%3A%2A", "s3%3AObjectRemoved%3A%2A");
        let sent = format!("events={b}&events={c}&events={a}&ping=10");
        let sign = |canonical_query: &str| {
            let canonical_request = format!(
                "GET\n/\n{canonical_query}\nhost:h\nx-amz-content-sha256:{EMPTY_SHA256}\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n{EMPTY_SHA256}"
            );
            let string_to_sign = format!(
                "{ALGORITHM}\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n{}",
                sha256_hex(canonical_request.as_bytes())
            );
            hex::encode(hmac_sha256(
                &signing_key(SK, "20130524", "us-east-1", "s3"),
                string_to_sign.as_bytes(),
            ))
        };
        let check = |sig: &str| {
            let a = auth("host;x-amz-content-sha256;x-amz-date", sig);
            let headers = [
                ("host", "h"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("x-amz-date", "20130524T000000Z"),
                ("authorization", a.as_str()),
            ];
            verify(&request("GET", &format!("/?{sent}"), &headers), &One, REGION, NOW, None).map(|_| ())
        };
        assert!(check(&sign(&format!("events={a}&events={b}&events={c}&ping=10"))).is_ok(), "AWS's order");
        assert!(check(&sign(&sent)).is_ok(), "the order sent, names sorted");
        let neither = sign(&format!("events={c}&events={a}&events={b}&ping=10"));
        assert_eq!(check(&neither).expect_err("another order").code, S3ErrorCode::SignatureDoesNotMatch);
        let unsorted_names = sign(&format!("ping=10&events={b}&events={c}&events={a}"));
        assert_eq!(
            check(&unsorted_names).expect_err("names unsorted").code,
            S3ErrorCode::SignatureDoesNotMatch
        );
    }

    #[test]
    fn presigned_vector_and_expiry() {
        let uri = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
        let p = request("GET", uri, &[("host", "examplebucket.s3.amazonaws.com")]);
        assert!(verify(&p, &One, REGION, NOW + 100, None).expect("valid").is_some());
        let err = verify(&p, &One, REGION, NOW + 86_401, None).expect_err("expired");
        assert_eq!(err.code, S3ErrorCode::AccessDenied);
    }

    #[test]
    fn skew_and_unknown_key() {
        let a = auth("host;x-amz-date", "00");
        let p =
            request("GET", "/", &[("host", "h"), ("x-amz-date", "20130524T000000Z"), ("authorization", &a)]);
        assert_eq!(
            verify(&p, &One, REGION, NOW + 16 * 60, None).expect_err("skew").code,
            S3ErrorCode::RequestTimeTooSkewed
        );
        let a = a.replace(AK, "NOPE");
        let p =
            request("GET", "/", &[("host", "h"), ("x-amz-date", "20130524T000000Z"), ("authorization", &a)]);
        assert_eq!(
            verify(&p, &One, REGION, NOW, None).expect_err("key").code,
            S3ErrorCode::InvalidAccessKeyId
        );
    }

    #[test]
    fn streaming_chunk_vector() {
        let a = auth(
            "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
            "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        );
        let p = request(
            "PUT",
            "/examplebucket/chunkObject.txt",
            &[
                ("host", "s3.amazonaws.com"),
                ("x-amz-date", "20130524T000000Z"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ("x-amz-content-sha256", STREAMING_SIGNED),
                ("content-encoding", "aws-chunked"),
                ("x-amz-decoded-content-length", "66560"),
                ("content-length", "66824"),
                ("authorization", &a),
            ],
        );
        let v = verify(&p, &One, REGION, NOW, None).expect("valid").expect("signed");
        let mut signer = v.chunk_signer.expect("streaming");
        assert_eq!(
            signer.next_chunk(&sha256_hex(&[b'a'; 65_536])),
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        );
        assert_eq!(
            signer.next_chunk(&sha256_hex(&[b'a'; 1024])),
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
        );
        assert_eq!(
            signer.next_chunk(EMPTY_SHA256),
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        );
    }

    /// Headers of the scope tests' requests.
    const SCOPE_HEADERS: [(&str, &str); 3] =
        [("host", "h.example"), ("x-amz-content-sha256", EMPTY_SHA256), ("x-amz-date", "20130524T000000Z")];

    /// Signs `GET /` the way a client would, independently of the verifier.
    fn client_signature(signed_headers: &str, query: &str, scope: &str) -> String {
        let mut canonical_headers = String::new();
        for name in signed_headers.split(';') {
            let value = SCOPE_HEADERS.iter().find(|(n, _)| *n == name).map_or("", |(_, v)| *v);
            canonical_headers.push_str(&format!("{name}:{value}\n"));
        }
        let payload = if query.is_empty() { EMPTY_SHA256 } else { UNSIGNED_PAYLOAD };
        let creq = format!("GET\n/\n{query}\n{canonical_headers}\n{signed_headers}\n{payload}");
        let sts = format!("{ALGORITHM}\n20130524T000000Z\n{scope}\n{}", sha256_hex(creq.as_bytes()));
        let mut it = scope.split('/');
        let (date, region, service) =
            (it.next().unwrap_or(""), it.next().unwrap_or(""), it.next().unwrap_or(""));
        hex::encode(hmac_sha256(&signing_key(SK, date, region, service), sts.as_bytes()))
    }

    fn header_signed(signed_headers: &str, region: &str, service: &str) -> Result<Option<Verified>, S3Error> {
        let scope = format!("20130524/{region}/{service}/aws4_request");
        let sig = client_signature(signed_headers, "", &scope);
        let a = format!("{ALGORITHM} Credential={AK}/{scope},SignedHeaders={signed_headers},Signature={sig}");
        let mut headers = SCOPE_HEADERS.to_vec();
        headers.push(("authorization", &a));
        verify(&request("GET", "/", &headers), &One, REGION, NOW, None)
    }

    fn presigned(signed_headers: &str, region: &str, service: &str) -> Result<Option<Verified>, S3Error> {
        let scope = format!("20130524/{region}/{service}/aws4_request");
        let query = format!(
            "X-Amz-Algorithm={ALGORITHM}&X-Amz-Credential={AK}%2F{}&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders={}",
            scope.replace('/', "%2F"),
            signed_headers.replace(';', "%3B")
        );
        let sig = client_signature(signed_headers, &query, &scope);
        let uri = format!("/?{query}&X-Amz-Signature={sig}");
        verify(&request("GET", &uri, &SCOPE_HEADERS), &One, REGION, NOW, None)
    }

    #[test]
    fn host_must_be_signed() {
        assert!(header_signed("host;x-amz-content-sha256;x-amz-date", REGION, "s3").is_ok());
        assert!(presigned("host", REGION, "s3").is_ok());
        for e in [
            header_signed("x-amz-content-sha256;x-amz-date", REGION, "s3").expect_err("host unsigned"),
            presigned("x-amz-date", REGION, "s3").expect_err("host unsigned"),
        ] {
            assert_eq!(e.code, S3ErrorCode::AccessDenied);
            assert_eq!(e.details, [("HeadersNotSigned", "host".to_owned())]);
        }
    }

    #[test]
    fn scope_must_name_our_region_and_s3() {
        let e = header_signed("host;x-amz-date", "eu-west-1", "s3").expect_err("wrong region");
        assert_eq!(e.code, S3ErrorCode::AuthorizationHeaderMalformed);
        assert_eq!(e.code.status(), http::StatusCode::BAD_REQUEST);
        assert!(
            e.message.contains("the region 'eu-west-1' is wrong; expecting 'us-east-1'"),
            "{}",
            e.message
        );
        assert_eq!(e.details, [("Region", REGION.to_owned())]);
        let e = header_signed("host;x-amz-date", REGION, "iam").expect_err("wrong service");
        assert_eq!(e.code, S3ErrorCode::AuthorizationHeaderMalformed);
        let e = presigned("host", "eu-west-1", "s3").expect_err("wrong region");
        assert_eq!(e.code, S3ErrorCode::AuthorizationQueryParametersError);
        assert!(e.message.contains("expecting 'us-east-1'"), "{}", e.message);
        assert_eq!(e.details, [("Region", REGION.to_owned())]);
        let e = presigned("host", REGION, "sts").expect_err("wrong service");
        assert_eq!(e.code, S3ErrorCode::AuthorizationQueryParametersError);
    }
}
