//! Vocabulary shared by every Strata layer.
//!
//! - [`buffers`]: large buffers written whole and sent, kept for reuse (no zeroing, no faults).
//! - [`limits`]: every size, count and timeout limit in one place, each saying why it exists
//!   and which S3 error fires past it.
//! - [`names`]: validated [`BucketName`] and [`ObjectKey`]; outside bytes become these at the
//!   S3 boundary and nothing below re-validates them.
//! - [`time`]: the few calendar conversions S3 needs (ISO 8601 and the compact SigV4 form),
//!   written against Unix seconds so no calendar crate is needed.

pub mod buffers;
pub mod fuzz;
pub mod limits;
pub mod names;
pub mod process;
pub mod size;
pub mod time;

pub use names::{BucketName, NameError, ObjectKey};

/// Compares without an early exit, so the time taken does not tell how much of a secret (a
/// signature, a session token, a bitrot hash) matched.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
