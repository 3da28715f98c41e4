//! Data usage: objects, bytes and sizes per bucket, counted by full heal scans while they list
//! every key anyway (the scan's counting pass), so the metrics know them without a pass of
//! their own and requests pay nothing for them.
//!
//! The numbers are those of the current versions when the counting pass ran: an object whose
//! current version is a delete marker counts as a delete marker, not an object; noncurrent
//! versions are not counted. [`DataUsage::updated`] says when; it is 0 until a full scan ran.
//! The healer saves the last [`DataUsage`] on a few drives (`state-usage.json`, beside its heal
//! state), so a restart keeps it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strata_types::limits::USAGE_SIZE_BOUNDS;

/// Ranges of the size histogram: below the first bound, between two bounds, at or past the last.
pub const SIZE_RANGES: usize = USAGE_SIZE_BOUNDS.len() + 1;

/// One bucket's usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BucketUsage {
    /// Keys whose current version is an object.
    pub objects: u64,
    /// Bytes of those current versions.
    pub bytes: u64,
    /// Keys whose current version is a delete marker.
    pub delete_markers: u64,
    /// Objects per size range: range `i` holds sizes from `USAGE_SIZE_BOUNDS[i - 1]` (0 for the
    /// first) up to, not including, `USAGE_SIZE_BOUNDS[i]` (no end for the last).
    pub sizes: [u64; SIZE_RANGES],
}

impl BucketUsage {
    /// Counts one key: its current version's size, or that it is a delete marker.
    pub fn add(&mut self, size: u64, delete_marker: bool) {
        if delete_marker {
            self.delete_markers += 1;
            return;
        }
        self.objects += 1;
        self.bytes += size;
        self.sizes[size_range(size)] += 1;
    }
}

/// The usage of every bucket, as of one full scan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DataUsage {
    /// When the counting pass ended (nanoseconds since the Unix epoch); 0: no full scan yet.
    pub updated: u64,
    pub buckets: BTreeMap<String, BucketUsage>,
}

/// The size range `size` falls in (an index into [`BucketUsage::sizes`]).
pub fn size_range(size: u64) -> usize {
    USAGE_SIZE_BOUNDS.iter().take_while(|bound| size >= **bound).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_fall_in_the_range_of_their_size() {
        let first = USAGE_SIZE_BOUNDS[0];
        let last = USAGE_SIZE_BOUNDS[USAGE_SIZE_BOUNDS.len() - 1];
        assert_eq!(size_range(0), 0);
        assert_eq!(size_range(first - 1), 0);
        assert_eq!(size_range(first), 1);
        assert_eq!(size_range(last - 1), SIZE_RANGES - 2);
        assert_eq!(size_range(last), SIZE_RANGES - 1);
        assert_eq!(size_range(u64::MAX), SIZE_RANGES - 1);
        let mut b = BucketUsage::default();
        b.add(first, false);
        b.add(3, false);
        b.add(0, true);
        assert_eq!((b.objects, b.bytes, b.delete_markers), (2, first + 3, 1));
        assert_eq!((b.sizes[0], b.sizes[1]), (1, 1));
        assert_eq!(b.sizes.iter().sum::<u64>(), b.objects);
    }
}
