//! AWS Signature Version 2 (header `AWS key:sig` and query `AWSAccessKeyId/Signature/Expires`),
//! still what boto3 and the aws cli use for presigned URLs unless told otherwise.
//!
//! StringToSign = verb, Content-MD5, Content-Type, Date (or Expires), the `x-amz-*` headers,
//! then the resource: `/bucket/key` plus the sub-resources that select an operation.

use base64::Engine;
use http::request::Parts;
use percent_encoding::percent_decode_str;
use strata_types::limits::{CLOCK_SKEW_MAX_SECS, PRESIGN_EXPIRES_MAX_SECS};

use crate::error::{S3Error, S3ErrorCode};
use strata_sign::constant_time_eq;

use crate::sigv4::{Payload, SecretLookup, Verified};

/// Query parameters that are part of the signed resource.
const SIGNED_SUBRESOURCES: &[&str] = &[
    "acl",
    "cors",
    "delete",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "partNumber",
    "policy",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

fn header<'a>(parts: &'a Parts, name: &str) -> &'a str {
    parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn string_to_sign(parts: &Parts, date_or_expires: &str, bucket_from_host: Option<&str>) -> String {
    let mut amz: Vec<(String, String)> = Vec::new();
    for (name, value) in &parts.headers {
        let n = name.as_str();
        if n.starts_with("x-amz-") {
            let v = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
            match amz.iter_mut().find(|(k, _)| k == n) {
                Some((_, existing)) => {
                    existing.push(',');
                    existing.push_str(&v);
                }
                None => amz.push((n.to_owned(), v)),
            }
        }
    }
    amz.sort();
    let mut resource = String::new();
    if let Some(b) = bucket_from_host {
        resource.push('/');
        resource.push_str(b);
    }
    resource.push_str(parts.uri.path());
    // A bucket named without a key is signed as `/bucket/`, the path-style form as well.
    if resource.len() > 1 && resource.matches('/').count() == 1 {
        resource.push('/');
    }
    let mut subs: Vec<(String, Option<String>)> = parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|p| {
            let (k, v) = p.split_once('=').map_or((p, None), |(k, v)| (k, Some(v)));
            let k = percent_decode_str(k).decode_utf8_lossy().into_owned();
            SIGNED_SUBRESOURCES
                .contains(&k.as_str())
                .then(|| (k, v.map(|v| percent_decode_str(v).decode_utf8_lossy().into_owned())))
        })
        .collect();
    subs.sort();
    for (i, (k, v)) in subs.iter().enumerate() {
        resource.push(if i == 0 { '?' } else { '&' });
        resource.push_str(k);
        if let Some(v) = v {
            resource.push('=');
            resource.push_str(v);
        }
    }
    let mut s = format!(
        "{}\n{}\n{}\n{}\n",
        parts.method.as_str(),
        header(parts, "content-md5"),
        header(parts, "content-type"),
        date_or_expires
    );
    for (k, v) in amz {
        s.push_str(&format!("{k}:{v}\n"));
    }
    s.push_str(&resource);
    s
}

pub(crate) fn sign(secret: &str, sts: &str) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(strata_sign::hmac_sha1(secret.as_bytes(), sts.as_bytes()))
}

fn check(
    parts: &Parts,
    secrets: &dyn SecretLookup,
    access_key: &str,
    signature: &str,
    date: &str,
    bucket: Option<&str>,
) -> Result<Verified, S3Error> {
    let secret = secrets.lookup(access_key)?;
    let expected = sign(&secret, &string_to_sign(parts, date, bucket));
    if !constant_time_eq(expected.as_bytes(), signature.as_bytes()) {
        return Err(S3Error::new(
            S3ErrorCode::SignatureDoesNotMatch,
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        ));
    }
    Ok(Verified { access_key: access_key.to_owned(), payload: Payload::Unsigned, chunk_signer: None })
}

/// `Authorization: AWS key:signature`.
pub fn verify_header(
    parts: &Parts,
    auth: &str,
    secrets: &dyn SecretLookup,
    now: u64,
    bucket: Option<&str>,
) -> Result<Verified, S3Error> {
    let (key, sig) = auth
        .strip_prefix("AWS ")
        .and_then(|r| r.split_once(':'))
        .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied, "the Authorization header is malformed"))?;
    let amz_date = header(parts, "x-amz-date");
    let date = if amz_date.is_empty() { header(parts, "date") } else { amz_date };
    let t = httpdate::parse_http_date(date)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied, "the request has no valid date"))?;
    if t.as_secs().abs_diff(now) > CLOCK_SKEW_MAX_SECS {
        return Err(S3Error::new(
            S3ErrorCode::RequestTimeTooSkewed,
            "The difference between the request time and the server's time is too large.",
        ));
    }
    // With x-amz-date, the Date line of the string to sign is empty (the header is signed instead).
    let date_line = if amz_date.is_empty() { date } else { "" };
    check(parts, secrets, key, sig, date_line, bucket)
}

/// `?AWSAccessKeyId=…&Expires=…&Signature=…`.
pub fn verify_query(
    parts: &Parts,
    secrets: &dyn SecretLookup,
    now: u64,
    bucket: Option<&str>,
) -> Result<Verified, S3Error> {
    let mut key = None;
    let mut sig = None;
    let mut expires = None;
    for p in parts.uri.query().unwrap_or("").split('&') {
        if let Some((k, v)) = p.split_once('=') {
            let v = percent_decode_str(v).decode_utf8_lossy().into_owned();
            match k {
                "AWSAccessKeyId" => key = Some(v),
                "Signature" => sig = Some(v),
                "Expires" => expires = Some(v),
                _ => {}
            }
        }
    }
    let (Some(key), Some(sig), Some(expires)) = (key, sig, expires) else {
        return Err(S3Error::new(S3ErrorCode::AccessDenied, "the query string authentication is incomplete"));
    };
    let t: u64 =
        expires.parse().map_err(|_| S3Error::new(S3ErrorCode::AccessDenied, "Expires is not a number"))?;
    if now > t {
        return Err(S3Error::new(S3ErrorCode::AccessDenied, "Request has expired"));
    }
    // Like SigV4's X-Amz-Expires: at most a week ahead (with the signer's clock allowed to run
    // ahead of ours by the usual skew), so a leaked URL does not stay valid for years.
    if t > now + PRESIGN_EXPIRES_MAX_SECS + CLOCK_SKEW_MAX_SECS {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Expires must be at most 604800 seconds (7 days) in the future",
        ));
    }
    check(parts, secrets, &key, &sig, &expires, bucket)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct One;
    impl SecretLookup for One {
        fn secret(&self, k: &str) -> Option<String> {
            (k == "AKIAIOSFODNN7EXAMPLE").then(|| "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned())
        }
    }

    /// The "Object GET" example of the S3 SigV2 documentation.
    #[test]
    fn aws_example() {
        let parts = http::Request::builder()
            .method("GET")
            .uri("/photos/puppy.jpg")
            .header("host", "johnsmith.s3.amazonaws.com")
            .header("date", "Tue, 27 Mar 2007 19:36:42 +0000")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        let sts = string_to_sign(&parts, "Tue, 27 Mar 2007 19:36:42 +0000", Some("johnsmith"));
        assert_eq!(sts, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg");
        let now = 1_175_024_202; // the example's date
        let v = check(
            &parts,
            &One,
            "AKIAIOSFODNN7EXAMPLE",
            "bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
            "Tue, 27 Mar 2007 19:36:42 +0000",
            Some("johnsmith"),
        );
        assert!(v.is_ok());
        let bad = check(
            &parts,
            &One,
            "AKIAIOSFODNN7EXAMPLE",
            "bWq2s1WEIj+Ydj0vQ697zp+IXMV=",
            "Tue, 27 Mar 2007 19:36:42 +0000",
            Some("johnsmith"),
        );
        assert_eq!(bad.map_err(|e| e.code).err(), Some(S3ErrorCode::SignatureDoesNotMatch));
        let _ = now;
    }

    /// A bucket without a key is the resource `/bucket/`, virtual-host or path style (the
    /// documentation's "List" example, and what SDKs sign for CreateBucket and the like).
    #[test]
    fn bucket_resources_end_with_a_slash() {
        let sts = |uri: &str, host_bucket: Option<&str>| {
            let parts =
                http::Request::builder().method("GET").uri(uri).body(()).expect("request").into_parts().0;
            string_to_sign(&parts, "D", host_bucket)
        };
        assert!(sts("/?prefix=photos&max-keys=50&marker=puppy", Some("johnsmith")).ends_with("\n/johnsmith/"));
        assert!(sts("/johnsmith?prefix=photos", None).ends_with("\n/johnsmith/"));
        assert!(sts("/johnsmith/", None).ends_with("\n/johnsmith/"));
        assert!(sts("/johnsmith?acl", None).ends_with("\n/johnsmith/?acl"));
        assert!(sts("/", None).ends_with("\n/"));
        assert!(sts("/johnsmith/k", None).ends_with("\n/johnsmith/k"));
    }

    fn presigned(expires: u64) -> Result<Verified, S3Error> {
        let unsigned = http::Request::builder()
            .method("GET")
            .uri("/bucket/key")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        let sig = sign(
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            &string_to_sign(&unsigned, &expires.to_string(), None),
        );
        let sig: String =
            percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC).to_string();
        let uri =
            format!("/bucket/key?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires={expires}&Signature={sig}");
        let parts = http::Request::builder().method("GET").uri(uri).body(()).expect("request").into_parts().0;
        verify_query(&parts, &One, NOW, None)
    }

    const NOW: u64 = 1_700_000_000;

    #[test]
    fn presigned_expiry_at_most_a_week() {
        assert!(presigned(NOW + 60).is_ok());
        assert!(presigned(NOW + PRESIGN_EXPIRES_MAX_SECS).is_ok());
        assert_eq!(presigned(NOW - 1).map_err(|e| e.code).err(), Some(S3ErrorCode::AccessDenied));
        let far = presigned(NOW + PRESIGN_EXPIRES_MAX_SECS + CLOCK_SKEW_MAX_SECS + 1).expect_err("too far");
        assert_eq!(far.code, S3ErrorCode::AccessDenied);
        assert_eq!(far.code.status(), http::StatusCode::FORBIDDEN);
        assert!(presigned(NOW + 10 * 365 * 24 * 3600).is_err());
    }
}
