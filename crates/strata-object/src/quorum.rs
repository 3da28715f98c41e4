//! Quorum: how many drives an operation needs, and which version a read quorum agrees on. One
//! rule, used by reads, listings, version listings, healing and the lifecycle pass.
//!
//! - A write of a `data`+`parity` object needs `data` drives (`data + 1` when the split is even,
//!   so two writes can never both reach a quorum on disjoint halves): [`write_quorum`].
//! - A read needs `data` drives to answer ([`read_quorum`]): with a write quorum of `W` drives
//!   out of `N`, any `N - W + 1` drives include one that saw the last acknowledged write.
//! - Bucket operations touch every drive of the deployment and need a majority ([`majority`]).
//! - The version a quorum agrees on ([`agreed`]): copies are the same write when their version
//!   id, data id and time agree ([`same_version`]); a write counts when at least its data count
//!   of drives hold it; of the writes that count, the newest by (time, data id) wins; of its
//!   copies, the metadata most drives hold (a drive may have missed a tag update).

use strata_meta::ObjectVersion;

/// Drives that must acknowledge a write of a `data`+`parity` object.
pub(crate) fn write_quorum(data_count: usize, parity_count: usize) -> usize {
    if data_count == parity_count {
        data_count + 1
    } else {
        data_count
    }
}

/// Drives that must answer a read (or a listing) of a set whose objects have `data_count` data
/// shards.
pub(crate) fn read_quorum(data_count: usize) -> usize {
    data_count
}

/// More than half of `n` drives.
pub(crate) fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// A version as every drive of the set holds it (the shard index is the drive's own).
pub(crate) fn normalized(v: &ObjectVersion) -> ObjectVersion {
    let mut v = v.clone();
    v.erasure.shard_index = 0;
    v
}

/// Two drives' copies of a version are the same write when their data id and time agree.
pub(crate) fn same_version(a: &ObjectVersion, b: &ObjectVersion) -> bool {
    a.data.data_id() == b.data.data_id() && a.mod_time == b.mod_time && a.version_id == b.version_id
}

/// The version a read quorum agrees on among the copies the drives hold (one per drive that has
/// one; shard indexes ignored), with how many drives hold that write; `None` when no write is
/// held by its data count of drives.
pub(crate) fn agreed(copies: impl IntoIterator<Item = ObjectVersion>) -> Option<(ObjectVersion, usize)> {
    // Per write: how many drives hold it, and each metadata variant's count.
    let mut writes: Vec<(usize, Vec<(ObjectVersion, usize)>)> = Vec::new();
    for mut copy in copies {
        copy.erasure.shard_index = 0;
        match writes.iter_mut().find(|(_, variants)| same_version(&variants[0].0, &copy)) {
            Some((held, variants)) => {
                *held += 1;
                match variants.iter_mut().find(|(m, _)| *m == copy) {
                    Some((_, c)) => *c += 1,
                    None => variants.push((copy, 1)),
                }
            }
            None => writes.push((1, vec![(copy, 1)])),
        }
    }
    writes
        .into_iter()
        .filter_map(|(held, variants)| {
            let (v, _) = variants.into_iter().max_by_key(|(_, c)| *c)?;
            (held >= read_quorum(usize::from(v.erasure.data_count))).then_some((v, held))
        })
        .max_by_key(|(v, _)| v.order_key())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_meta::{DataLocation, ErasureInfo};
    use uuid::Uuid;

    fn version(id: u128, mod_time: u64, shard_index: u8, tag: &str) -> ObjectVersion {
        let tags = if tag.is_empty() { Default::default() } else { [("t".into(), tag.into())].into() };
        ObjectVersion {
            version_id: None,
            mod_time,
            delete_marker: false,
            size: 1,
            etag: "e".into(),
            headers: Default::default(),
            user_metadata: Default::default(),
            checksums: Default::default(),
            erasure: ErasureInfo {
                bitrot: Default::default(),
                data_count: 2,
                parity_count: 2,
                block_size: 1 << 20,
                shard_index,
                distribution: vec![0, 1, 2, 3],
            },
            data: DataLocation::Inline(Uuid::from_u128(id)),
            parts: Vec::new(),
            tags,
            retention: None,
            legal_hold: false,
            sse: None,
            acl: None,
            replication: None,
        }
    }

    #[test]
    fn quorums() {
        assert_eq!((write_quorum(2, 2), write_quorum(4, 2), write_quorum(1, 1)), (3, 4, 2));
        assert_eq!(read_quorum(4), 4);
        assert_eq!((majority(4), majority(5), majority(1)), (3, 3, 1));
    }

    #[test]
    fn the_newest_write_held_by_a_read_quorum_wins_with_the_metadata_most_drives_hold() {
        // Write 1 on three drives (one missed a tag update), write 2 (newer) on one drive only.
        let copies = vec![
            version(1, 10, 0, "a"),
            version(1, 10, 1, "b"),
            version(2, 20, 2, ""),
            version(1, 10, 3, "b"),
        ];
        let (v, held) = agreed(copies).expect("write 1 has a read quorum");
        assert_eq!(
            (v.data.data_id(), held, v.tags.get("t").map(String::as_str)),
            (Uuid::from_u128(1), 3, Some("b"))
        );
        assert_eq!(v.erasure.shard_index, 0, "normalized");
        // Write 2 on two drives: the newest write with a quorum wins.
        let copies =
            vec![version(1, 10, 0, ""), version(2, 20, 1, ""), version(2, 20, 2, ""), version(1, 10, 3, "")];
        assert_eq!(agreed(copies).map(|(v, _)| v.data.data_id()), Some(Uuid::from_u128(2)));
        // Equal times: the data id breaks the tie, whatever the order the drives answered in.
        let a =
            vec![version(3, 20, 0, ""), version(3, 20, 1, ""), version(4, 20, 2, ""), version(4, 20, 3, "")];
        let mut b = a.clone();
        b.reverse();
        assert_eq!(agreed(a).map(|(v, _)| v.data.data_id()), Some(Uuid::from_u128(4)));
        assert_eq!(agreed(b).map(|(v, _)| v.data.data_id()), Some(Uuid::from_u128(4)));
        // No write on two drives: nothing agreed.
        assert!(agreed(vec![version(1, 10, 0, ""), version(2, 20, 1, "")]).is_none());
        assert!(agreed(Vec::new()).is_none());
    }
}
