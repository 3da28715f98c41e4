//! Every RPC request carries the time and an HMAC-SHA256 of its method, path and query and that
//! time, keyed by a key derived from the root credentials. Nodes started with the same
//! credentials accept each other; anything else gets 403.

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;

pub const TIME_HEADER: &str = "x-strata-rpc-time";
pub const SIGNATURE_HEADER: &str = "x-strata-rpc-signature";
/// How far a request's time may be from ours.
const SKEW_MAX_SECS: u64 = 900;

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length; this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC accepts any key length")
}

/// The inter-node key: HMAC-SHA256(root password, "strata-rpc-v1" + root user).
#[derive(Clone)]
pub struct RpcKey([u8; 32]);

impl std::fmt::Debug for RpcKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RpcKey(..)")
    }
}

impl RpcKey {
    pub fn derive(root_user: &str, root_password: &str) -> Self {
        let mut m = mac(root_password.as_bytes());
        m.update(b"strata-rpc-v1\n");
        m.update(root_user.as_bytes());
        Self(m.finalize().into_bytes().into())
    }

    fn mac_for(&self, method: &str, path_and_query: &str, time: u64) -> HmacSha256 {
        let mut m = mac(&self.0);
        m.update(method.as_bytes());
        m.update(b"\n");
        m.update(path_and_query.as_bytes());
        m.update(b"\n");
        m.update(time.to_string().as_bytes());
        m
    }

    /// The signature header value for a request sent at `time` (Unix seconds).
    pub fn sign(&self, method: &str, path_and_query: &str, time: u64) -> String {
        hex::encode(self.mac_for(method, path_and_query, time).finalize().into_bytes())
    }

    /// Whether the request's signature is ours and its time within the allowed skew of `now`.
    pub fn verify(&self, headers: &HeaderMap, method: &str, path_and_query: &str, now: u64) -> bool {
        let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let (Some(time), Some(sig)) = (header(TIME_HEADER), header(SIGNATURE_HEADER)) else {
            return false;
        };
        let Ok(time) = time.parse::<u64>() else { return false };
        if time.abs_diff(now) > SKEW_MAX_SECS {
            return false;
        }
        let Ok(sig) = hex::decode(sig) else { return false };
        // Constant-time comparison.
        self.mac_for(method, path_and_query, time).verify_slice(&sig).is_ok()
    }
}

pub fn unix_now() -> u64 {
    strata_types::time::now_nanos() / 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(time: u64, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(TIME_HEADER, time.to_string().parse().expect("header"));
        h.insert(SIGNATURE_HEADER, sig.parse().expect("header"));
        h
    }

    #[test]
    fn signatures_bind_key_method_path_and_time() {
        let key = RpcKey::derive("admin", "secret-password");
        let now = 1_700_000_000;
        let sig = key.sign("POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now);
        let ok = headers(now, &sig);
        assert!(key.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now + 10));
        assert!(!key.verify(&ok, "GET", "/_strata/rpc/v1/drive/call?d=%2Fa", now));
        assert!(!key.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fb", now));
        assert!(!key.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now + 901));
        assert!(!key.verify(&headers(now + 1, &sig), "POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now));
        let other = RpcKey::derive("admin", "another-password");
        assert!(!other.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now));
        let other_user = RpcKey::derive("admin2", "secret-password");
        assert!(!other_user.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fa", now));
        assert!(!key.verify(&HeaderMap::new(), "POST", "/x", now));
    }
}
