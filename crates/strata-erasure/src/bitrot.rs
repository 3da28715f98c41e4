//! Bitrot frames: `HighwayHash-256(shard) || shard`.
//!
//! The hash key is fixed (it detects corruption, not forgery); changing it changes the on-drive
//! format, so it is part of format version 1. Shard files MinIO wrote have the same framing
//! under MinIO's own key ([`Key::MINIO`]): a drive taken over from MinIO keeps them as they are.

use highway::{HighwayHash, HighwayHasher};

/// Bytes of hash in front of every shard block.
pub const HASH_SIZE: usize = 32;

/// The HighwayHash key a shard file's frames were hashed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key([u64; 4]);

impl Key {
    /// Strata's own.
    pub const STRATA: Key =
        Key([0x5374_7261_7461_2d62, 0x6974_726f_742d_6b65, 0x792d_7631_2d68_6968, 0x6768_7761_792d_3235]);
    /// MinIO's (its `HighwayHash256S` bitrot algorithm): the 32 bytes
    /// `4be734fa8e238acd263e83e6bb968552040f935da39f441497e09d1322de36a0` read as four
    /// little-endian words.
    pub const MINIO: Key =
        Key([0xcd8a_238e_fa34_e74b, 0x5285_96bb_e683_3e26, 0x1444_9fa3_5d93_0f04, 0xa036_de22_139d_e097]);
}

/// HighwayHash-256 of `data` under Strata's key, as 32 little-endian bytes.
pub fn hash(data: &[u8]) -> [u8; HASH_SIZE] {
    hash_with(Key::STRATA, data)
}

/// HighwayHash-256 of `data` under `key`, as 32 little-endian bytes.
pub fn hash_with(key: Key, data: &[u8]) -> [u8; HASH_SIZE] {
    let words = HighwayHasher::new(highway::Key(key.0)).hash256(data);
    let mut out = [0u8; HASH_SIZE];
    for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    out
}

/// A frame failed its check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("shard frame is {0} bytes, expected {1}")]
    Length(usize, usize),
    #[error("shard block hash mismatch (bitrot)")]
    HashMismatch,
}

/// Checks a frame holding `shard_size` bytes of shard and returns the range of the shard bytes.
pub fn verify(frame: &[u8], shard_size: usize) -> Result<std::ops::Range<usize>, FrameError> {
    verify_with(Key::STRATA, frame, shard_size)
}

/// [`verify`] of a frame hashed under `key`.
pub fn verify_with(key: Key, frame: &[u8], shard_size: usize) -> Result<std::ops::Range<usize>, FrameError> {
    let range = shard_range(frame, shard_size)?;
    if !strata_types::constant_time_eq(&frame[..HASH_SIZE], &hash_with(key, &frame[range.clone()])) {
        return Err(FrameError::HashMismatch);
    }
    Ok(range)
}

/// The range of the shard bytes in a frame holding `shard_size` bytes of shard, its length
/// checked but not its hash: for readers that authenticate every byte another way (the AES-GCM
/// tags of an encrypted object's packages).
pub fn shard_range(frame: &[u8], shard_size: usize) -> Result<std::ops::Range<usize>, FrameError> {
    if frame.len() != HASH_SIZE + shard_size {
        return Err(FrameError::Length(frame.len(), HASH_SIZE + shard_size));
    }
    Ok(HASH_SIZE..frame.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_flipped_byte_is_detected() {
        let shard: Vec<u8> = (0..997u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut frame = hash(&shard).to_vec();
        frame.extend_from_slice(&shard);
        assert_eq!(verify(&frame, shard.len()), Ok(HASH_SIZE..frame.len()));
        for i in 0..frame.len() {
            for bit in [0x01u8, 0x80] {
                frame[i] ^= bit;
                assert_eq!(verify(&frame, shard.len()), Err(FrameError::HashMismatch), "byte {i}");
                frame[i] ^= bit;
            }
        }
        assert!(matches!(verify(&frame[1..], shard.len()), Err(FrameError::Length(..))));
        frame[0] ^= 1;
        assert_eq!(shard_range(&frame, shard.len()), Ok(HASH_SIZE..frame.len()), "hash not checked");
        assert!(matches!(shard_range(&frame[1..], shard.len()), Err(FrameError::Length(..))));
    }
}
