//! Where each block's frame lives in one drive's shard file.

use crate::bitrot::HASH_SIZE;

/// The shape of every shard file of one object version: a pure function of its size, the
/// erasure block size and the data shard count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardLayout {
    pub object_size: u64,
    pub block_size: u64,
    pub data_count: u64,
}

impl ShardLayout {
    pub fn new(object_size: u64, block_size: usize, data_count: usize) -> Self {
        assert!(block_size > 0 && data_count > 0);
        Self { object_size, block_size: block_size as u64, data_count: data_count as u64 }
    }

    /// Number of erasure blocks (0 for an empty object).
    pub fn block_count(&self) -> u64 {
        self.object_size.div_ceil(self.block_size)
    }

    /// Bytes of object data in block `index`.
    pub fn block_len(&self, index: u64) -> u64 {
        let start = index * self.block_size;
        self.object_size.saturating_sub(start).min(self.block_size)
    }

    /// Shard bytes (without hash) of block `index` on every drive.
    pub fn shard_size(&self, index: u64) -> u64 {
        self.block_len(index).div_ceil(self.data_count)
    }

    /// Offset of block `index`'s frame in the shard file.
    pub fn frame_offset(&self, index: u64) -> u64 {
        index * (HASH_SIZE as u64 + self.block_size.div_ceil(self.data_count))
    }

    /// Length of block `index`'s frame (hash + shard).
    pub fn frame_len(&self, index: u64) -> u64 {
        HASH_SIZE as u64 + self.shard_size(index)
    }

    /// Total size of one shard file.
    pub fn shard_file_size(&self) -> u64 {
        match self.block_count() {
            0 => 0,
            n => self.frame_offset(n - 1) + self.frame_len(n - 1),
        }
    }

    /// The blocks that hold object bytes `[offset, offset + len)` (len > 0).
    pub fn blocks_for_range(&self, offset: u64, len: u64) -> std::ops::Range<u64> {
        if len == 0 {
            return 0..0;
        }
        offset / self.block_size..(offset + len - 1) / self.block_size + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_add_up() {
        let l = ShardLayout::new(2 * 1024 * 1024 + 5, 1024 * 1024, 3);
        assert_eq!(l.block_count(), 3);
        assert_eq!(l.block_len(2), 5);
        assert_eq!(l.shard_size(0), 349_526);
        assert_eq!(l.shard_size(2), 2);
        assert_eq!(l.frame_offset(2), 2 * (32 + 349_526));
        assert_eq!(l.shard_file_size(), 2 * (32 + 349_526) + 34);
        assert_eq!(l.blocks_for_range(1024 * 1024 - 1, 2), 0..2);
        assert_eq!(l.blocks_for_range(0, 1), 0..1);
        assert_eq!(ShardLayout::new(0, 1024, 2).shard_file_size(), 0);
    }
}
