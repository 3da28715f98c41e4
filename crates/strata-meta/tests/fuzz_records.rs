//! Never-panic fuzzing of the record decoders (bytes read from a drive or a peer): a decoded
//! record either is refused or satisfies the invariants the layers above rely on.

use std::collections::BTreeMap;

use strata_meta::{DataLocation, ErasureInfo, ObjectRecord, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

fn erasure() -> ErasureInfo {
    ErasureInfo {
        bitrot: Default::default(),
        data_count: 2,
        parity_count: 2,
        block_size: 1 << 20,
        shard_index: 1,
        distribution: vec![2, 3, 4, 1],
    }
}

fn part(number: u32) -> PartInfo {
    PartInfo {
        number,
        size: 5 << 20,
        etag: "0123456789abcdef0123456789abcdef".into(),
        data_id: Uuid::from_u128(u128::from(number)),
        mod_time: 1_700_000_000,
        checksums: BTreeMap::from([("CRC32".to_owned(), "AAAAAA==".to_owned())]),
        sealed_checksums: None,
    }
}

fn record() -> ObjectRecord {
    let v = |data, parts| ObjectVersion {
        version_id: Some(Uuid::from_u128(9)),
        mod_time: 1_700_000_000_000_000_000,
        delete_marker: false,
        size: 10 << 20,
        etag: "abc-2".into(),
        headers: BTreeMap::from([("content-type".to_owned(), "text/plain".to_owned())]),
        user_metadata: BTreeMap::from([("a".to_owned(), "b".to_owned())]),
        checksums: BTreeMap::new(),
        erasure: erasure(),
        data,
        parts,
        tags: BTreeMap::from([("t".to_owned(), "1".to_owned())]),
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
        replication: None,
    };
    ObjectRecord {
        versions: vec![
            v(DataLocation::Multipart(Uuid::from_u128(3)), vec![part(1), part(2)]),
            v(DataLocation::File(Uuid::from_u128(4)), vec![]),
            v(DataLocation::Inline(Uuid::from_u128(5)), vec![]),
        ],
    }
}

/// What the object layer assumes of a record it was handed.
fn sound(e: &ErasureInfo) -> bool {
    let n = usize::from(e.data_count) + usize::from(e.parity_count);
    e.data_count >= 1 && e.block_size > 0 && usize::from(e.shard_index) < n && e.distribution.len() == n
}

#[test]
fn fuzz_object_records() {
    let good = record().encode();
    strata_types::fuzz::run("object record", &[&good], |bytes| {
        if let Ok(r) = ObjectRecord::decode(bytes) {
            assert!(!r.versions.is_empty(), "a stored record has a version");
            for v in &r.versions {
                assert!(sound(&v.erasure), "unsound erasure info accepted: {:?}", v.erasure);
            }
            assert_eq!(ObjectRecord::decode(&r.encode()).as_ref(), Ok(&r), "round trip");
        }
    });
}

#[test]
fn fuzz_upload_records_and_parts() {
    let upload = UploadRecord {
        upload_id: Uuid::from_u128(1),
        key: "photos/2026/cat.jpg".into(),
        initiated: 1_700_000_000,
        headers: BTreeMap::new(),
        user_metadata: BTreeMap::new(),
        erasure: erasure(),
        tags: BTreeMap::new(),
        checksum_algorithm: Some("CRC32C".into()),
        checksum_type: Some("COMPOSITE".into()),
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
    }
    .encode();
    strata_types::fuzz::run("upload record", &[&upload], |bytes| {
        if let Ok(u) = UploadRecord::decode(bytes) {
            assert!(sound(&u.erasure), "unsound erasure info accepted: {:?}", u.erasure);
        }
    });
    let p = part(7).encode();
    strata_types::fuzz::run("part record", &[&p], |bytes| {
        let _ = PartInfo::decode(bytes);
    });
}
