//! Object placement: a keyed hash of `bucket/key` picks the set and rotates the shard order.

use std::hash::Hasher;

use siphasher::sip::SipHasher24;
use uuid::Uuid;

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
