//! S3 additional checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256): computed over the body in
//! the same pass that stores it, compared with the header or trailer value, stored base64.
//!
//! A multipart object's checksum is made from its parts' checksums, in one of two ways
//! ([`ChecksumType`]): COMPOSITE hashes the concatenated part checksums (shown as `value-N`);
//! FULL_OBJECT combines part CRCs into the CRC of the whole object, as if it had been one PUT.

use std::collections::BTreeMap;

use async_trait::async_trait;
use base64::Engine;
use bytes::Bytes;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::{BodyError, BodyReader};
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Crc32,
    Crc32c,
    Crc64Nvme,
    Sha1,
    Sha256,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] =
        [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme, Algorithm::Sha1, Algorithm::Sha256];

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// As S3 spells it in `x-amz-sdk-checksum-algorithm`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Crc32 => "CRC32",
            Algorithm::Crc32c => "CRC32C",
            Algorithm::Crc64Nvme => "CRC64NVME",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
        }
    }

    /// `x-amz-checksum-crc32`, ...
    pub fn header(self) -> String {
        format!("x-amz-checksum-{}", self.name().to_ascii_lowercase())
    }

    fn crc(self) -> Option<crc_fast::CrcAlgorithm> {
        use crc_fast::CrcAlgorithm as C;
        match self {
            Algorithm::Crc32 => Some(C::Crc32IsoHdlc),
            Algorithm::Crc32c => Some(C::Crc32Iscsi),
            Algorithm::Crc64Nvme => Some(C::Crc64Nvme),
            Algorithm::Sha1 | Algorithm::Sha256 => None,
        }
    }

    /// Whether a multipart upload may use this algorithm with this type: FULL_OBJECT needs a
    /// CRC (they combine), and CRC64NVME is only ever FULL_OBJECT.
    pub fn supports(self, t: ChecksumType) -> bool {
        match t {
            ChecksumType::FullObject => self.crc().is_some(),
            ChecksumType::Composite => self != Algorithm::Crc64Nvme,
        }
    }

    /// The type a multipart upload gets when it names only the algorithm.
    pub fn default_type(self) -> ChecksumType {
        if self == Algorithm::Crc64Nvme {
            ChecksumType::FullObject
        } else {
            ChecksumType::Composite
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumType {
    Composite,
    FullObject,
}

impl ChecksumType {
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "COMPOSITE" => Some(ChecksumType::Composite),
            "FULL_OBJECT" => Some(ChecksumType::FullObject),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ChecksumType::Composite => "COMPOSITE",
            ChecksumType::FullObject => "FULL_OBJECT",
        }
    }

    /// The type of a stored checksum value: composite ones end in `-N`.
    pub fn of_value(value: &str) -> Self {
        if value.contains('-') {
            ChecksumType::Composite
        } else {
            ChecksumType::FullObject
        }
    }
}

/// The checksum of a multipart object from its parts' checksums (base64) and sizes, in order.
/// `None` if a part checksum does not decode to the algorithm's width.
pub fn combine_parts(a: Algorithm, t: ChecksumType, parts: &[(&str, u64)]) -> Option<String> {
    let b64 = &base64::engine::general_purpose::STANDARD;
    match (t, a.crc()) {
        (ChecksumType::FullObject, Some(crc)) => {
            let width = if a == Algorithm::Crc64Nvme { 8 } else { 4 };
            let mut total: Option<u64> = None;
            for (value, size) in parts {
                let raw = b64.decode(value).ok().filter(|r| r.len() == width)?;
                let v = raw.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
                total = Some(match total {
                    None => v,
                    Some(t) => crc_fast::checksum_combine(crc, t, v, *size),
                });
            }
            // An upload of no parts does not complete, but its CRC would be that of nothing.
            let v = total.unwrap_or_else(|| crc_fast::checksum(crc, b""));
            let bytes = v.to_be_bytes();
            Some(b64.encode(&bytes[8 - width..]))
        }
        (ChecksumType::FullObject, None) => None,
        (ChecksumType::Composite, _) => {
            let mut h = Hasher::new(a);
            for (value, _) in parts {
                h.update(&b64.decode(value).ok()?);
            }
            Some(format!("{}-{}", h.finish(), parts.len()))
        }
    }
}

pub enum Hasher {
    Crc(Algorithm, crc_fast::Digest),
    Sha1(Sha1),
    Sha256(Sha256),
}

impl Hasher {
    pub fn new(a: Algorithm) -> Self {
        use crc_fast::CrcAlgorithm as C;
        match a {
            Algorithm::Crc32 => Hasher::Crc(a, crc_fast::Digest::new(C::Crc32IsoHdlc)),
            Algorithm::Crc32c => Hasher::Crc(a, crc_fast::Digest::new(C::Crc32Iscsi)),
            Algorithm::Crc64Nvme => Hasher::Crc(a, crc_fast::Digest::new(C::Crc64Nvme)),
            Algorithm::Sha1 => Hasher::Sha1(Sha1::new()),
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc(_, d) => d.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    /// The base64 value S3 shows.
    pub fn finish(self) -> String {
        let bytes: Vec<u8> = match self {
            Hasher::Crc(Algorithm::Crc64Nvme, d) => d.finalize().to_be_bytes().to_vec(),
            Hasher::Crc(_, d) => (d.finalize() as u32).to_be_bytes().to_vec(),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        };
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// A body that computes one more checksum than the client sent (a multipart upload's
/// algorithm, for a part that came without it).
pub(crate) struct WithChecksum<'a> {
    inner: &'a mut dyn BodyReader,
    algorithm: Algorithm,
    hasher: Option<Hasher>,
    value: Option<String>,
}

impl<'a> WithChecksum<'a> {
    pub(crate) fn new(inner: &'a mut dyn BodyReader, algorithm: Algorithm) -> Self {
        Self { inner, algorithm, hasher: Some(Hasher::new(algorithm)), value: None }
    }
}

#[async_trait]
impl BodyReader for WithChecksum<'_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        let chunk = self.inner.next_chunk().await?;
        match &chunk {
            Some(b) => {
                if let Some(h) = &mut self.hasher {
                    h.update(b);
                }
            }
            None => {
                if let Some(h) = self.hasher.take() {
                    self.value = Some(h.finish());
                }
            }
        }
        Ok(chunk)
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        let mut all = self.inner.checksums();
        if let Some(v) = &self.value {
            all.insert(self.algorithm.name().to_owned(), v.clone());
        }
        all
    }

    fn checksum_algorithm(&self) -> Option<Algorithm> {
        Some(self.algorithm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let check = |a, want: &str| {
            let mut h = Hasher::new(a);
            h.update(b"hello ");
            h.update(b"world");
            assert_eq!(h.finish(), want, "{a:?}");
        };
        check(Algorithm::Crc32, "DUoRhQ==");
        check(Algorithm::Crc32c, "yZRlqg==");
        check(Algorithm::Sha1, "Kq5sNclPz7QV2+lfQIuc6R7oRu0=");
        check(Algorithm::Sha256, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
        assert_eq!(Algorithm::parse("crc64nvme"), Some(Algorithm::Crc64Nvme));
    }

    fn of(a: Algorithm, data: &[u8]) -> String {
        let mut h = Hasher::new(a);
        h.update(data);
        h.finish()
    }

    #[test]
    fn full_object_is_the_checksum_of_the_whole() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for a in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
            for cuts in [vec![0, 100_000], vec![0, 1, 100_000], vec![0, 33_333, 66_666, 99_999, 100_000]] {
                let parts: Vec<(String, u64)> =
                    cuts.windows(2).map(|w| (of(a, &data[w[0]..w[1]]), (w[1] - w[0]) as u64)).collect();
                let refs: Vec<(&str, u64)> = parts.iter().map(|(v, n)| (v.as_str(), *n)).collect();
                assert_eq!(
                    combine_parts(a, ChecksumType::FullObject, &refs),
                    Some(of(a, &data)),
                    "{a:?} {cuts:?}"
                );
            }
        }
        assert_eq!(combine_parts(Algorithm::Sha256, ChecksumType::FullObject, &[("AAAA", 1)]), None);
        assert_eq!(combine_parts(Algorithm::Crc32, ChecksumType::FullObject, &[("AAAAAAAA", 1)]), None);
    }

    #[test]
    fn composite_hashes_the_part_checksums() {
        let b64 = &base64::engine::general_purpose::STANDARD;
        let (p1, p2) = (of(Algorithm::Sha256, b"part one"), of(Algorithm::Sha256, b"part two"));
        let mut raw = b64.decode(&p1).expect("b64");
        raw.extend(b64.decode(&p2).expect("b64"));
        let want = format!("{}-2", of(Algorithm::Sha256, &raw));
        let got = combine_parts(Algorithm::Sha256, ChecksumType::Composite, &[(&p1, 8), (&p2, 8)]);
        assert_eq!(got, Some(want.clone()));
        assert_eq!(ChecksumType::of_value(&want), ChecksumType::Composite);
        assert_eq!(ChecksumType::of_value(&p1), ChecksumType::FullObject);
        assert!(!Algorithm::Crc64Nvme.supports(ChecksumType::Composite));
        assert!(!Algorithm::Sha1.supports(ChecksumType::FullObject));
    }
}
