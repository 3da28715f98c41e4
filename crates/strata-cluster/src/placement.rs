//! Object placement: a keyed hash of `bucket/key` picks the set and rotates the shard order.
//! A MinIO deployment taken over in place keeps MinIO's rule (its `SIPMOD`: a hash of the key
//! alone), so every object stays in the set MinIO wrote it to.

use std::hash::Hasher;

use serde::{Deserialize, Serialize};
use siphasher::sip::SipHasher24;
use uuid::Uuid;

/// How a deployment picks an object's set, and how its sets group the drive list; kept in every
/// drive's format record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Strata's: SipHash-2-4 of `bucket/key` keyed by the deployment id; a pool's sets take
    /// every n-th drive of its list, so a set spans the nodes.
    #[default]
    Strata,
    /// A MinIO deployment taken over (its `SIPMOD` and `SIPMOD+PARITY`): SipHash-2-4 of the key
    /// alone, keyed by the deployment id's bytes read as two little-endian words; a pool's sets
    /// are consecutive runs of its drive list, as MinIO groups them.
    MinioSipmod,
}

impl Placement {
    pub fn is_strata(&self) -> bool {
        *self == Placement::Strata
    }

    /// Which of `set_count` sets holds `bucket/key`.
    pub fn set_index(self, deployment_id: Uuid, bucket: &str, key: &str, set_count: usize) -> usize {
        match self {
            Placement::Strata => set_index(object_hash(deployment_id, bucket, key), set_count),
            Placement::MinioSipmod => minio_set_index(deployment_id, key, set_count),
        }
    }
}

/// What MinIO names a folder object (a key ending in `/`) before it places it: the key without
/// its `/`, then this.
const MINIO_DIR_SUFFIX: &str = "__XLDIR__";

/// MinIO's choice of set for an object named `key` (in any bucket). A folder object `dir/` is
/// placed by the name MinIO gives it, `dir__XLDIR__`.
pub fn minio_set_index(deployment_id: Uuid, key: &str, set_count: usize) -> usize {
    let id = deployment_id.as_bytes();
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&id[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut h = SipHasher24::new_with_keys(word(0), word(8));
    match key.strip_suffix('/') {
        Some(folder) => {
            h.write(folder.as_bytes());
            h.write(MINIO_DIR_SUFFIX.as_bytes());
        }
        None => h.write(key.as_bytes()),
    }
    set_index(h.finish(), set_count)
}

/// SipHash-2-4 of `bucket/key`, keyed by the deployment id: stable for the deployment's life,
/// different between deployments.
pub fn object_hash(deployment_id: Uuid, bucket: &str, key: &str) -> u64 {
    let id = deployment_id.as_u128();
    let mut h = SipHasher24::new_with_keys(id as u64, (id >> 64) as u64);
    h.write(bucket.as_bytes());
    h.write(b"/");
    h.write(key.as_bytes());
    h.finish()
}

/// Which set of `set_count` holds the object.
pub fn set_index(hash: u64, set_count: usize) -> usize {
    (hash % set_count as u64) as usize
}

/// `distribution[drive_position]` = the shard index that drive holds; a rotation by the hash,
/// so parity shards land on every drive of the set in turn.
pub fn distribution(hash: u64, drive_count: usize) -> Vec<u8> {
    let rotation = ((hash >> 32) % drive_count as u64) as usize;
    (0..drive_count).map(|p| ((p + rotation) % drive_count) as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_objects_and_parity() {
        let id = Uuid::from_u128(99);
        let mut per_set = [0usize; 4];
        let mut parity_on = [0usize; 4];
        for i in 0..4000 {
            let h = object_hash(id, "b", &format!("key-{i}"));
            per_set[set_index(h, 4)] += 1;
            let d = distribution(h, 4);
            let mut sorted = d.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3]);
            parity_on[d.iter().position(|s| *s == 3).expect("shard 3")] += 1;
        }
        assert!(per_set.iter().all(|n| *n > 800), "{per_set:?}");
        assert!(parity_on.iter().all(|n| *n > 800), "{parity_on:?}");
        assert_ne!(object_hash(id, "b", "k"), object_hash(Uuid::from_u128(98), "b", "k"));
    }
}
