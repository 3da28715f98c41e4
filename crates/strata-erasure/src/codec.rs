//! Reed-Solomon behind the [`Codec`] trait, and [`Erasure`], which applies it to blocks.

use bytes::{Bytes, BytesMut};
use reed_solomon_erasure::galois_8::ReedSolomon;

use crate::bitrot;

/// Errors of encode and reconstruct; both mean a bug or too many lost shards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErasureError {
    #[error("erasure layout {data}+{parity} is not supported")]
    Layout { data: usize, parity: usize },
    #[error("only {available} of the {needed} shards needed are available")]
    TooFewShards { available: usize, needed: usize },
    #[error("shard sizes differ")]
    ShardSize,
}

/// The Reed-Solomon kernel. `encode` fills `parity` from `data`; `reconstruct` fills every
/// `None` among `shards` (data first, then parity) from the others.
pub trait Codec: Send + Sync {
    fn encode(&self, data: &[&[u8]], parity: &mut [Vec<u8>]) -> Result<(), ErasureError>;
    fn reconstruct_data(&self, shards: &mut [Option<Vec<u8>>]) -> Result<(), ErasureError>;
}

/// GF(2^8) Reed-Solomon from `reed-solomon-erasure` (SIMD-accelerated).
pub struct ReedSolomonCodec(ReedSolomon);

impl ReedSolomonCodec {
    pub fn new(data: usize, parity: usize) -> Result<Self, ErasureError> {
        ReedSolomon::new(data, parity).map(Self).map_err(|_| ErasureError::Layout { data, parity })
    }
}

impl Codec for ReedSolomonCodec {
    fn encode(&self, data: &[&[u8]], parity: &mut [Vec<u8>]) -> Result<(), ErasureError> {
        self.0.encode_sep(data, parity).map_err(|_| ErasureError::ShardSize)
    }

    fn reconstruct_data(&self, shards: &mut [Option<Vec<u8>>]) -> Result<(), ErasureError> {
        let available = shards.iter().filter(|s| s.is_some()).count();
        self.0.reconstruct_data(shards).map_err(|e| match e {
            reed_solomon_erasure::Error::TooFewShardsPresent => {
                ErasureError::TooFewShards { available, needed: self.0.data_shard_count() }
            }
            _ => ErasureError::ShardSize,
        })
    }
}

/// One erasure layout (`data` + `parity` shards) applied to blocks.
pub struct Erasure {
    data_count: usize,
    parity_count: usize,
    codec: Option<Box<dyn Codec>>,
    /// The key the shard frames are hashed under (Strata's, or MinIO's for shard files taken
    /// over from it).
    frame_key: bitrot::Key,
}

impl std::fmt::Debug for Erasure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Erasure({}+{})", self.data_count, self.parity_count)
    }
}

impl Erasure {
    /// `parity` may be 0 (a single drive, or replication off): then no codec is built.
    pub fn new(data_count: usize, parity_count: usize) -> Result<Self, ErasureError> {
        let layout_err = ErasureError::Layout { data: data_count, parity: parity_count };
        if data_count == 0 || data_count + parity_count > 256 {
            return Err(layout_err);
        }
        let codec: Option<Box<dyn Codec>> = match parity_count {
            0 => None,
            _ => Some(Box::new(ReedSolomonCodec::new(data_count, parity_count)?)),
        };
        Ok(Self { data_count, parity_count, codec, frame_key: bitrot::Key::STRATA })
    }

    /// The same layout with its frames hashed under `key`.
    pub fn with_frame_key(mut self, key: bitrot::Key) -> Self {
        self.frame_key = key;
        self
    }

    /// The key shard frames of this layout are hashed under.
    pub fn frame_key(&self) -> bitrot::Key {
        self.frame_key
    }

    pub fn data_count(&self) -> usize {
        self.data_count
    }

    pub fn parity_count(&self) -> usize {
        self.parity_count
    }

    pub fn shard_count(&self) -> usize {
        self.data_count + self.parity_count
    }

    /// Shard length for a block of `block_len` bytes.
    pub fn shard_size(&self, block_len: usize) -> usize {
        block_len.div_ceil(self.data_count)
    }

    /// Splits one block into `data + parity` shards. The data shards are slices of `block`
    /// (zero-padded in place, no copy); parity shards are new buffers.
    pub fn encode_block(&self, mut block: BytesMut) -> Result<Vec<Bytes>, ErasureError> {
        self.pad(&mut block);
        self.encode_padded(block.freeze())
    }

    /// Zero-pads `block` in place to a whole number of shards (see [`Erasure::encode_padded`]).
    pub fn pad(&self, block: &mut BytesMut) {
        let shard_size = self.shard_size(block.len());
        block.resize(shard_size * self.data_count, 0);
    }

    /// [`Erasure::encode_block`] of a block [`Erasure::pad`] padded: shared, so other readers of
    /// the block (its MD5) can run beside the encoding.
    pub fn encode_padded(&self, block: Bytes) -> Result<Vec<Bytes>, ErasureError> {
        let shard_size = block.len() / self.data_count.max(1);
        let mut shards: Vec<Bytes> =
            (0..self.data_count).map(|i| block.slice(i * shard_size..(i + 1) * shard_size)).collect();
        if shard_size == 0 {
            // An empty block (a zero-byte object): every shard is empty, parity included.
            shards.resize(self.shard_count(), Bytes::new());
        } else if let Some(codec) = &self.codec {
            let mut parity = vec![vec![0u8; shard_size]; self.parity_count];
            let data: Vec<&[u8]> = shards.iter().map(|s| s.as_ref()).collect();
            codec.encode(&data, &mut parity)?;
            shards.extend(parity.into_iter().map(Bytes::from));
        }
        Ok(shards)
    }

    /// Given the shards of one block that could be read (`None` = missing or corrupt), returns
    /// the `data` data shards, rebuilding missing ones from parity. Present data shards are
    /// returned as they are (no copy).
    pub fn decode_block(&self, shards: Vec<Option<Bytes>>) -> Result<Vec<Bytes>, ErasureError> {
        assert_eq!(shards.len(), self.shard_count(), "one slot per shard");
        if shards[..self.data_count].iter().all(Option::is_some) {
            return Ok(shards.into_iter().take(self.data_count).flatten().collect());
        }
        let available = shards.iter().filter(|s| s.is_some()).count();
        if available >= self.data_count && shards.iter().flatten().all(|s| s.is_empty()) {
            return Ok(vec![Bytes::new(); self.data_count]);
        }
        let Some(codec) = &self.codec else {
            return Err(ErasureError::TooFewShards { available, needed: self.data_count });
        };
        let mut work: Vec<Option<Vec<u8>>> = shards.iter().map(|s| s.as_ref().map(|b| b.to_vec())).collect();
        codec.reconstruct_data(&mut work)?;
        Ok(shards
            .into_iter()
            .zip(work)
            .take(self.data_count)
            .map(|(orig, rebuilt)| orig.unwrap_or_else(|| Bytes::from(rebuilt.unwrap_or_default())))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize, seed: u32) -> BytesMut {
        let mut b = BytesMut::with_capacity(len);
        b.extend((0..len as u32).map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8));
        b
    }

    /// Every `data` 1..=16 with every `parity` 0..=16 (up to 32 shards), and every loss
    /// pattern of up to `parity` shards (exhaustive up to 12 shards, 3,000 random patterns of
    /// every loss count above that) rebuilds the exact block.
    #[test]
    fn round_trip_every_layout_and_loss_pattern() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for data in 1..=16usize {
            for parity in 0..=16usize {
                let e = Erasure::new(data, parity).expect("layout");
                let n = data + parity;
                let len = 300 + data * 7 + parity;
                let original = block(len, (data * 100 + parity) as u32);
                let shards = e.encode_block(original.clone()).expect("encode");
                assert_eq!(shards.len(), n);
                let patterns: Vec<u32> = if n <= 12 {
                    (0..1u32 << n).filter(|m| m.count_ones() as usize <= parity).collect()
                } else {
                    (0..3000usize)
                        .map(|i| {
                            let lost = i % (parity + 1);
                            let mut m = 0u32;
                            while (m.count_ones() as usize) < lost {
                                m |= 1 << (next() as usize % n);
                            }
                            m
                        })
                        .collect()
                };
                for mask in patterns {
                    let input = shards
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (mask & (1 << i) == 0).then(|| s.clone()))
                        .collect();
                    let out = e.decode_block(input).expect("decode");
                    let joined: Vec<u8> = out.concat();
                    assert_eq!(&joined[..len], &original[..], "{data}+{parity} mask {mask:b}");
                }
            }
        }
    }

    #[test]
    fn parity_up_to_data_for_sixteen_drive_sets() {
        for (data, parity) in [(8, 8), (12, 4), (9, 7), (15, 1)] {
            let e = Erasure::new(data, parity).expect("layout");
            let original = block(4096, 7);
            let shards = e.encode_block(original.clone()).expect("encode");
            let mut input: Vec<Option<Bytes>> = shards.into_iter().map(Some).collect();
            for slot in input.iter_mut().take(parity) {
                *slot = None;
            }
            assert_eq!(&e.decode_block(input).expect("decode").concat()[..4096], &original[..]);
        }
    }

    #[test]
    fn empty_block() {
        let e = Erasure::new(2, 2).expect("layout");
        let shards = e.encode_block(BytesMut::new()).expect("encode");
        assert_eq!(shards.len(), 4);
        let out = e.decode_block(vec![None, Some(shards[1].clone()), None, Some(shards[3].clone())]);
        assert_eq!(out.expect("decode").concat(), Vec::<u8>::new());
    }

    #[test]
    fn too_many_losses_is_an_error_not_a_panic() {
        let e = Erasure::new(2, 2).expect("layout");
        let shards = e.encode_block(block(100, 1)).expect("encode");
        let input = vec![None, None, None, Some(shards[3].clone())];
        assert!(matches!(e.decode_block(input), Err(ErasureError::TooFewShards { .. })));
        let single = Erasure::new(1, 0).expect("layout");
        assert!(single.decode_block(vec![None]).is_err());
    }
}
