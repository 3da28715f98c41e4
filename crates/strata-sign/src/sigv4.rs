//! AWS Signature Version 4's derivations, as both sides need them: the key derived from a
//! secret for a day, region and service; the canonical URI and query; the chain of chunk
//! signatures of a streaming upload. The server's checks (which headers, which time window,
//! which errors) are the S3 crate's; the client's request building is the client's.
//!
//! The path and query are decoded, then re-encoded with SigV4's rules (unreserved characters
//! kept, everything else `%XX`, `/` kept in the path), so clients that encode differently still
//! verify.

use std::sync::{Mutex, PoisonError};

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::{constant_time_eq, hmac_sha256, sha256_hex, MacKey};

pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
pub const STREAMING_SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
pub const STREAMING_SIGNED_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
pub const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Characters SigV4 leaves unencoded: `A-Z a-z 0-9 - _ . ~`.
const SIGV4_SET: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// The key derived from the secret for one day, region and service.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k = hmac_sha256(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = hmac_sha256(&k, region.as_bytes());
    let k = hmac_sha256(&k, service.as_bytes());
    hmac_sha256(&k, b"aws4_request")
}

/// How many derived keys [`signing_mac`] keeps: a key a day for each access key, region and
/// service in use. Past that, the oldest goes.
const SIGNING_KEYS_KEPT: usize = 64;

/// A key [`signing_mac`] derived.
struct Derived {
    secret: String,
    date: String,
    region: String,
    service: String,
    key: MacKey,
}

/// [`signing_key`] as a [`MacKey`], from the keys derived lately. A server checks many requests
/// signed with one key, day, region and service, and each derivation is four HMACs, each with
/// its own key schedule. Keys are kept by secret, so a changed secret derives anew.
pub fn signing_mac(secret: &str, date: &str, region: &str, service: &str) -> MacKey {
    static KEPT: Mutex<Vec<Derived>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    let same = |d: &&Derived| {
        d.date == date
            && d.region == region
            && d.service == service
            && constant_time_eq(d.secret.as_bytes(), secret.as_bytes())
    };
    if let Some(d) = kept.iter().find(same) {
        return d.key.clone();
    }
    let key = MacKey::new(&signing_key(secret, date, region, service));
    if kept.len() >= SIGNING_KEYS_KEPT {
        kept.remove(0);
    }
    kept.push(Derived {
        secret: secret.to_owned(),
        date: date.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        key: key.clone(),
    });
    key
}

fn uri_encode(s: &str, keep_slash: bool) -> String {
    if keep_slash {
        s.split('/').map(|seg| utf8_percent_encode(seg, SIGV4_SET).to_string()).collect::<Vec<_>>().join("/")
    } else {
        utf8_percent_encode(s, SIGV4_SET).to_string()
    }
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// A query or form value, every byte but the unreserved ones percent-encoded (`/` too).
pub fn encode_value(decoded: &str) -> String {
    uri_encode(decoded, false)
}

/// A decoded path (`/bucket/key`) encoded as SigV4 and S3 URLs want it (`/` kept).
pub fn encode_path(decoded: &str) -> String {
    uri_encode(decoded, true)
}

/// The path as SigV4 canonicalises it for S3 (no double encoding, no dot-segment removal).
pub fn canonical_uri(raw_path: &str) -> String {
    uri_encode(&decode(raw_path), true)
}

/// Sorted, re-encoded query, leaving out `X-Amz-Signature` (presigned URLs).
pub fn canonical_query(raw_query: &str) -> String {
    let mut pairs = query_pairs(raw_query);
    pairs.sort();
    join_pairs(&pairs)
}

/// The canonical query as Go's `url.Values.Encode` builds it, which minio-go (and so `mc`)
/// signs: sorted by name only, a repeated name keeping its values in the order sent (AWS sorts
/// them by value). It differs from [`canonical_query`] only when a name repeats with its values
/// out of order, as in the listen API's `events=…&events=…`; it covers the same parameters.
pub fn canonical_query_go(raw_query: &str) -> String {
    let mut pairs = query_pairs(raw_query);
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    join_pairs(&pairs)
}

fn query_pairs(raw_query: &str) -> Vec<(String, String)> {
    raw_query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (uri_encode(&decode(k), false), uri_encode(&decode(v), false))
        })
        .filter(|(k, _)| k != "X-Amz-Signature")
        .collect()
}

fn join_pairs(pairs: &[(String, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

/// Who signs, where and when: the credentials, the region and service, and the time
/// (`YYYYMMDD'T'HHMMSS'Z'`).
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    pub access_key: &'a str,
    pub secret: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub amz_date: &'a str,
}

impl Signer<'_> {
    fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            &self.amz_date[..8.min(self.amz_date.len())],
            self.region,
            self.service
        )
    }

    fn signature(&self, canonical: &str) -> String {
        let date = &self.amz_date[..8.min(self.amz_date.len())];
        let sts =
            format!("{ALGORITHM}\n{}\n{}\n{}", self.amz_date, self.scope(), sha256_hex(canonical.as_bytes()));
        let key = signing_key(self.secret, date, self.region, self.service);
        hex::encode(hmac_sha256(&key, sts.as_bytes()))
    }

    /// The `Authorization` header of a request: `headers` are the signed ones (lower-case
    /// names, values as sent, `host` and `x-amz-date` among them), `payload` the body's SHA-256
    /// or [`UNSIGNED_PAYLOAD`]; `path` and `query` raw, as they go on the wire.
    pub fn authorization(
        &self,
        method: &str,
        path: &str,
        query: &str,
        headers: &[(String, String)],
        payload: &str,
    ) -> String {
        let mut sorted: Vec<&(String, String)> = headers.iter().collect();
        sorted.sort();
        let names = sorted.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
        let canonical_headers: String = sorted.iter().map(|(k, v)| format!("{k}:{}\n", v.trim())).collect();
        let canonical = format!(
            "{method}\n{}\n{}\n{canonical_headers}\n{names}\n{payload}",
            canonical_uri(path),
            canonical_query(query)
        );
        format!(
            "{ALGORITHM} Credential={}/{}, SignedHeaders={names}, Signature={}",
            self.access_key,
            self.scope(),
            self.signature(&canonical)
        )
    }

    /// A presigned URL's query: `query` (raw) with the `X-Amz-*` parameters of a GET of `path`
    /// valid for `expires` seconds from the signer's time, signed for the `host` header alone;
    /// `token`: temporary credentials' session token.
    pub fn presigned_query(
        &self,
        path: &str,
        query: &str,
        host: &str,
        expires: u64,
        token: Option<&str>,
    ) -> String {
        let enc = |s: &str| uri_encode(s, false);
        let mut q = format!(
            "X-Amz-Algorithm={ALGORITHM}&X-Amz-Credential={}&X-Amz-Date={}&X-Amz-Expires={expires}&X-Amz-SignedHeaders=host",
            enc(&format!("{}/{}", self.access_key, self.scope())),
            self.amz_date
        );
        if let Some(token) = token {
            q.push_str(&format!("&X-Amz-Security-Token={}", enc(token)));
        }
        if !query.is_empty() {
            q = format!("{query}&{q}");
        }
        let canonical = format!(
            "GET\n{}\n{}\nhost:{host}\n\nhost\n{UNSIGNED_PAYLOAD}",
            canonical_uri(path),
            canonical_query(&q)
        );
        format!("{q}&X-Amz-Signature={}", self.signature(&canonical))
    }
}

/// What a chunk signature chains from: the request's signature, key, time and scope.
#[derive(Debug, Clone)]
pub struct ChunkSigner {
    pub key: MacKey,
    pub amz_date: String,
    pub scope: String,
    pub previous: String,
}

impl ChunkSigner {
    /// Signature of the next chunk, given the SHA-256 of its data; advances the chain.
    pub fn next_chunk(&mut self, data_sha256_hex: &str) -> String {
        let sts = format!(
            "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{EMPTY_SHA256}\n{data_sha256_hex}",
            self.amz_date, self.scope, self.previous
        );
        self.previous = hex::encode(self.key.sign(sts.as_bytes()));
        self.previous.clone()
    }

    /// Signature of the trailing headers (`name:value\n` each, as sent).
    pub fn trailer(&mut self, canonical_trailers: &[u8]) -> String {
        let sts = format!(
            "AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{}\n{}",
            self.amz_date,
            self.scope,
            self.previous,
            sha256_hex(canonical_trailers)
        );
        self.previous = hex::encode(self.key.sign(sts.as_bytes()));
        self.previous.clone()
    }
}

#[cfg(test)]
mod tests {
    //! Vectors from the AWS S3 API reference ("Signature Calculations for the Authorization
    //! Header", "Query String Authentication").
    use super::*;

    const SIGNER: Signer<'static> = Signer {
        access_key: "AKIAIOSFODNN7EXAMPLE",
        secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1",
        service: "s3",
        amz_date: "20130524T000000Z",
    };

    #[test]
    fn a_get_is_signed_as_aws_documents() {
        let headers: Vec<(String, String)> = [
            ("x-amz-date", "20130524T000000Z"),
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let auth = SIGNER.authorization("GET", "/test.txt", "", &headers, EMPTY_SHA256);
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn a_presigned_get_is_signed_as_aws_documents() {
        let q = SIGNER.presigned_query("/test.txt", "", "examplebucket.s3.amazonaws.com", 86_400, None);
        assert!(
            q.ends_with("&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"),
            "{q}"
        );
        assert!(q.starts_with(
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524"
        ));
        let with_token = SIGNER.presigned_query("/test.txt", "", "h", 60, Some("a/b+c"));
        assert!(with_token.contains("&X-Amz-Security-Token=a%2Fb%2Bc&"), "{with_token}");
    }

    #[test]
    fn a_kept_signing_key_is_the_derived_one_and_a_new_secret_derives_anew() {
        let message = b"a string to sign";
        let fresh = |secret: &str, date: &str| {
            crate::hmac_sha256(&signing_key(secret, date, "us-east-1", "s3"), message)
        };
        for _ in 0..2 {
            assert_eq!(
                signing_mac("one", "20260101", "us-east-1", "s3").sign(message),
                fresh("one", "20260101")
            );
        }
        assert_eq!(signing_mac("two", "20260101", "us-east-1", "s3").sign(message), fresh("two", "20260101"));
        assert_eq!(signing_mac("one", "20260102", "us-east-1", "s3").sign(message), fresh("one", "20260102"));
        assert_ne!(fresh("one", "20260101"), fresh("two", "20260101"));
        // More keys than are kept: the first is derived again, still right.
        for i in 0..SIGNING_KEYS_KEPT + 1 {
            signing_mac(&format!("s{i}"), "20260101", "eu-west-1", "s3");
        }
        assert_eq!(signing_mac("one", "20260101", "us-east-1", "s3").sign(message), fresh("one", "20260101"));
    }
}
