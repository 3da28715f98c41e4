//! AWS Signature Version 4's derivations, as both sides need them: the key derived from a
//! secret for a day, region and service; the canonical URI and query; the chain of chunk
//! signatures of a streaming upload. The server's checks (which headers, which time window,
//! which errors) are the S3 crate's; the client's request building is the client's.
//!
//! The path and query are decoded, then re-encoded with SigV4's rules (unreserved characters
//! kept, everything else `%XX`, `/` kept in the path), so clients that encode differently still
//! verify.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::{hmac_sha256, sha256_hex};

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

/// What a chunk signature chains from: the request's signature, key, time and scope.
#[derive(Debug, Clone)]
pub struct ChunkSigner {
    pub key: [u8; 32],
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
        self.previous = hex::encode(hmac_sha256(&self.key, sts.as_bytes()));
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
        self.previous = hex::encode(hmac_sha256(&self.key, sts.as_bytes()));
        self.previous.clone()
    }
}
