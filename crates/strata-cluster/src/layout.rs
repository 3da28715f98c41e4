//! Erasure sets: how a pool's drives are grouped, and each set's data/parity split.

use strata_types::limits::{SET_DRIVE_COUNT_MAX, SET_DRIVE_COUNT_MIN};

/// Why a drive list cannot form a deployment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("no drives given")]
    NoDrives,
    #[error("{0} drives cannot be split into equal erasure sets of 2 to 16 drives")]
    NoSetSize(usize),
    #[error("parity {parity} is more than half of the {set_drive_count} drives of a set")]
    ParityTooHigh { parity: usize, set_drive_count: usize },
    #[error("storage class {0:?} is not of the form EC:N")]
    BadStorageClass(String),
    #[error("pool {pool} has sets of {got} drives; every pool must use sets of {want} drives")]
    MixedSetSizes { pool: usize, got: usize, want: usize },
}

/// One erasure set: which endpoint indexes (positions in the pool's drive list) it holds, in
/// set order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetLayout {
    pub drive_indexes: Vec<usize>,
}

/// A pool's shape: its sets and their erasure split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub sets: Vec<SetLayout>,
    pub set_drive_count: usize,
    pub parity_count: usize,
}

impl Layout {
    pub fn data_count(&self) -> usize {
        self.set_drive_count - self.parity_count
    }

    /// Drives that must hold a write for it to count (k, or k+1 when k equals m so that two
    /// disjoint halves can never both accept conflicting writes).
    pub fn write_quorum(&self) -> usize {
        let k = self.data_count();
        if k == self.parity_count {
            k + 1
        } else {
            k
        }
    }

    /// Drives whose shards are needed to read.
    pub fn read_quorum(&self) -> usize {
        self.data_count()
    }
}

/// Parity by set size, after the familiar EC:N rules.
pub fn default_parity(set_drive_count: usize) -> usize {
    match set_drive_count {
        0 | 1 => 0,
        2..=3 => 1,
        4..=5 => 2,
        6..=7 => 3,
        _ => 4,
    }
}

/// Parses `EC:N` (the value of `STRATA_STORAGE_CLASS_STANDARD`).
pub fn parse_storage_class(value: &str) -> Result<usize, LayoutError> {
    value
        .trim()
        .strip_prefix("EC:")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| LayoutError::BadStorageClass(value.to_owned()))
}

/// The largest set size in 2..=16 dividing `drive_count`; 1 for a single drive.
pub fn set_drive_count(drive_count: usize) -> Result<usize, LayoutError> {
    match drive_count {
        0 => Err(LayoutError::NoDrives),
        1 => Ok(1),
        n => (SET_DRIVE_COUNT_MIN..=SET_DRIVE_COUNT_MAX)
            .rev()
            .find(|s| n % s == 0)
            .ok_or(LayoutError::NoSetSize(n)),
    }
}

/// Groups `drive_count` drives into sets. Set `j` takes drives `j, j + c, j + 2c, ...` (`c` =
/// set count), so drives listed node by node are spread over the nodes in every set.
pub fn plan(drive_count: usize, parity: Option<usize>) -> Result<Layout, LayoutError> {
    let size = set_drive_count(drive_count)?;
    let parity_count = parity.unwrap_or_else(|| default_parity(size));
    if size > 1 && parity_count > size / 2 || size == 1 && parity_count > 0 {
        return Err(LayoutError::ParityTooHigh { parity: parity_count, set_drive_count: size });
    }
    let set_count = drive_count / size;
    let sets = (0..set_count)
        .map(|j| SetLayout { drive_indexes: (0..size).map(|p| j + p * set_count).collect() })
        .collect();
    Ok(Layout { sets, set_drive_count: size, parity_count })
}

/// A pool laid out as MinIO lays one out: `set_count` sets of `set_drive_count` drives, each set
/// a consecutive run of the drive list (a MinIO deployment taken over keeps its sets).
pub fn consecutive(
    set_count: usize,
    set_drive_count: usize,
    parity: Option<usize>,
) -> Result<Layout, LayoutError> {
    if set_count == 0 || set_drive_count == 0 {
        return Err(LayoutError::NoDrives);
    }
    if !(SET_DRIVE_COUNT_MIN..=SET_DRIVE_COUNT_MAX).contains(&set_drive_count) {
        return Err(LayoutError::NoSetSize(set_count * set_drive_count));
    }
    let parity_count = parity.unwrap_or_else(|| default_parity(set_drive_count));
    if parity_count > set_drive_count / 2 {
        return Err(LayoutError::ParityTooHigh { parity: parity_count, set_drive_count });
    }
    let sets = (0..set_count)
        .map(|j| SetLayout { drive_indexes: (j * set_drive_count..(j + 1) * set_drive_count).collect() })
        .collect();
    Ok(Layout { sets, set_drive_count, parity_count })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_sizes() {
        assert_eq!(set_drive_count(1), Ok(1));
        assert_eq!(set_drive_count(4), Ok(4));
        assert_eq!(set_drive_count(16), Ok(16));
        assert_eq!(set_drive_count(32), Ok(16));
        assert_eq!(set_drive_count(24), Ok(12));
        assert_eq!(set_drive_count(18), Ok(9));
        assert_eq!(set_drive_count(17), Err(LayoutError::NoSetSize(17)));
        assert_eq!(set_drive_count(0), Err(LayoutError::NoDrives));
    }

    #[test]
    fn parity_and_quorum() {
        let expect = [(1, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3), (8, 4), (16, 4)];
        for (n, p) in expect {
            let l = plan(n, None).expect("plan");
            assert_eq!(l.parity_count, p, "{n} drives");
        }
        let l = plan(4, None).expect("plan");
        assert_eq!((l.data_count(), l.write_quorum(), l.read_quorum()), (2, 3, 2));
        let l = plan(6, Some(2)).expect("plan");
        assert_eq!((l.data_count(), l.write_quorum()), (4, 4));
        assert_eq!(plan(4, Some(3)), Err(LayoutError::ParityTooHigh { parity: 3, set_drive_count: 4 }));
        assert_eq!(parse_storage_class("EC:3"), Ok(3));
        assert!(parse_storage_class("EC3").is_err());
    }

    #[test]
    fn sets_are_strided_and_cover_every_drive_once() {
        let l = plan(32, None).expect("plan");
        assert_eq!(l.sets.len(), 2);
        assert_eq!(l.sets[0].drive_indexes[..3], [0, 2, 4]);
        let mut all: Vec<usize> = l.sets.iter().flat_map(|s| s.drive_indexes.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..32).collect::<Vec<_>>());
    }

    #[test]
    fn consecutive_sets_are_runs_of_the_drive_list() {
        let l = consecutive(2, 4, None).expect("layout");
        assert_eq!(l.sets[0].drive_indexes, [0, 1, 2, 3]);
        assert_eq!(l.sets[1].drive_indexes, [4, 5, 6, 7]);
        assert_eq!(l.parity_count, 2);
        assert_eq!(
            consecutive(1, 4, Some(3)),
            Err(LayoutError::ParityTooHigh { parity: 3, set_drive_count: 4 })
        );
        assert!(consecutive(1, 17, None).is_err());
        assert!(consecutive(0, 4, None).is_err());
    }
}
