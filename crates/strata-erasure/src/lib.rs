//! Erasure coding and bitrot framing: pure, synchronous, no I/O.
//!
//! - [`Erasure`] cuts one erasure block (up to [`BLOCK_SIZE`](strata_types) bytes) into `data`
//!   shards, computes `parity` shards, and rebuilds data shards from any `data` survivors.
//!   The Reed-Solomon work sits behind the [`Codec`] trait so a faster kernel can replace it.
//! - [`bitrot`] frames every shard block as `HighwayHash-256 (32 bytes) || shard bytes`, and
//!   verifies a frame before its bytes are used.
//! - [`ShardLayout`] says where block `i` of an object lives inside one drive's shard file,
//!   so a ranged GET reads only the frames it needs.
//!
//! Invariants: every shard of a block has the same length (`ceil(block_len / data)`); the data
//! shards are the block's bytes in order, zero-padded at the end; the layout of a shard file is
//! a pure function of (object size, block size, data count).

pub mod bitrot;
mod codec;
mod layout;

pub use codec::{Codec, Erasure, ErasureError, ReedSolomonCodec};
pub use layout::ShardLayout;
