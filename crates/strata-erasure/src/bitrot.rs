//! Bitrot frames: `HighwayHash-256(shard) || shard`.
//!
//! The hash key is fixed (it detects corruption, not forgery); changing it changes the on-drive
//! format, so it is part of format version 1.

use highway::{HighwayHash, HighwayHasher, Key};

/// Bytes of hash in front of every shard block.
pub const HASH_SIZE: usize = 32;

const KEY: [u64; 4] =
    [0x5374_7261_7461_2d62, 0x6974_726f_742d_6b65, 0x792d_7631_2d68_6968, 0x6768_7761_792d_3235];

/// HighwayHash-256 of `data`, as 32 little-endian bytes.
pub fn hash(data: &[u8]) -> [u8; HASH_SIZE] {
    let words = HighwayHasher::new(Key(KEY)).hash256(data);
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
    let range = shard_range(frame, shard_size)?;
    if !strata_types::constant_time_eq(&frame[..HASH_SIZE], &hash(&frame[range.clone()])) {
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
