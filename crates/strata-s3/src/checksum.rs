//! S3 additional checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256): computed over the body in
//! the same pass that stores it, compared with the header or trailer value, stored base64.

use base64::Engine;
use sha1::Sha1;
use sha2::{Digest, Sha256};

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
}
