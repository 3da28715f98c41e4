//! Signing, for everything that signs or checks a signature: the S3 server verifying SigV4 and
//! SigV2, the client (`strata bench`, `strata admin`) signing its requests, the RPC layer's
//! request and frame MACs, and the keys derived from the root credentials.
//!
//! - [`hmac_sha256`] and [`MacKey`] (a key whose pads are computed once, for keys that sign
//!   many messages), [`hmac_sha1`] for SigV2 only; [`sha256_hex`].
//! - [`sigv4`]: AWS Signature Version 4's derivations: the signing key, the canonical URI and
//!   query, the string to sign, and the chain of chunk signatures.
//! - Comparisons of secrets use [`constant_time_eq`] (`strata_types`'s, re-exported).
//!
//! One HMAC implementation (aws-lc-rs, the crypto library of TLS and of encryption at rest).
//! This crate knows no HTTP server, no S3 error and no drive: it must never import any other
//! Strata crate but `strata-types`.

pub mod sigv4;

use aws_lc_rs::{digest, hmac};

pub use strata_types::constant_time_eq;

/// HMAC-SHA256 of `data` under `key`.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    MacKey::new(key).sign(data)
}

/// HMAC-SHA512 of `data` under `key`: the HS512 tokens MinIO's `mc admin prometheus generate`
/// makes.
pub fn hmac_sha512(key: &[u8], data: &[u8]) -> [u8; 64] {
    let key = hmac::Key::new(hmac::HMAC_SHA512, key);
    let mut out = [0u8; 64];
    out.copy_from_slice(hmac::sign(&key, data).as_ref());
    out
}

/// HMAC-SHA1 of `data` under `key`: SigV2's signatures only.
pub fn hmac_sha1(key: &[u8], data: &[u8]) -> [u8; 20] {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
    let mut out = [0u8; 20];
    out.copy_from_slice(hmac::sign(&key, data).as_ref());
    out
}

/// The lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(digest::digest(&digest::SHA256, data))
}

/// An HMAC-SHA256 key, its inner and outer pads computed once: a message signed with it costs
/// no key schedule.
#[derive(Clone)]
pub struct MacKey(hmac::Key);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(..)")
    }
}

impl MacKey {
    pub fn new(key: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, key))
    }

    /// A MAC of a message given in pieces.
    pub fn start(&self) -> Mac {
        Mac(hmac::Context::with_key(&self.0))
    }

    /// The MAC of `data`.
    pub fn sign(&self, data: &[u8]) -> [u8; 32] {
        let mut m = self.start();
        m.update(data);
        m.finish()
    }
}

/// An HMAC-SHA256 being computed.
#[derive(Clone)]
pub struct Mac(hmac::Context);

impl Mac {
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    pub fn finish(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.0.sign().as_ref());
        out
    }

    /// Whether `tag` is this MAC (compared in constant time).
    pub fn verify(self, tag: &[u8]) -> bool {
        constant_time_eq(&self.finish(), tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmacs_match_the_rfc_4231_and_2202_vectors() {
        // RFC 4231, test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex::encode(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // In pieces, and verified.
        let mut m = MacKey::new(b"Jefe").start();
        m.update(b"what do ya want ");
        m.update(b"for nothing?");
        assert!(m.clone().verify(&mac));
        let mut wrong = mac;
        wrong[31] ^= 1;
        assert!(!m.verify(&wrong));
        // RFC 2202, test case 2.
        let mac = hmac_sha1(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex::encode(mac), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
