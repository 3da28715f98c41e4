//! Unit tests of `lib.rs`: records, their encodings and their checks.

use super::*;

fn sample() -> ObjectRecord {
    ObjectRecord {
        versions: vec![ObjectVersion {
            version_id: None,
            mod_time: 1_700_000_000_000_000_000,
            delete_marker: false,
            size: 5,
            etag: "5d41402abc4b2a76b9719d911017c592".into(),
            headers: BTreeMap::from([("content-type".into(), "text/plain".into())]),
            user_metadata: BTreeMap::from([("a".into(), "b".into())]),
            checksums: BTreeMap::new(),
            erasure: ErasureInfo {
                bitrot: Default::default(),
                data_count: 2,
                parity_count: 2,
                block_size: 1 << 20,
                shard_index: 3,
                distribution: vec![2, 3, 0, 1],
            },
            data: DataLocation::Inline(Uuid::from_u128(7)),
            parts: vec![],
            tags: BTreeMap::from([("t".into(), "1".into())]),
            retention: None,
            legal_hold: false,
            sse: None,
            acl: None,
            replication: None,
        }],
    }
}

#[test]
fn round_trip() {
    let r = sample();
    assert_eq!(ObjectRecord::decode(&r.encode()), Ok(r));
    let b = BucketRecord {
        created: 42,
        tags: BTreeMap::from([("a".into(), "b".into())]),
        cors: vec![],
        ..Default::default()
    };
    assert_eq!(BucketRecord::decode(&b.encode()), Ok(b));
}

#[test]
fn bucket_records_with_and_before_lifecycle_read() {
    let rule = |expiration| LifecycleRule {
        id: "r".into(),
        enabled: true,
        legacy_prefix: false,
        filter: LifecycleFilter {
            prefix: "logs/".into(),
            tags: vec![("k".into(), "v".into())],
            size_greater_than: Some(1),
            size_less_than: None,
        },
        expiration,
        noncurrent_expiration: Some(NoncurrentExpiration { days: 3, newer_versions: Some(2) }),
        abort_upload_days: Some(7),
    };
    let b = BucketRecord {
        created: 1,
        lifecycle: Some(LifecycleConfig {
            rules: vec![
                rule(Some(LifecycleExpiration::Days(5))),
                rule(Some(LifecycleExpiration::Date(86_400))),
                rule(Some(LifecycleExpiration::ExpiredObjectDeleteMarker)),
                rule(None),
            ],
        }),
        ..Default::default()
    };
    assert_eq!(BucketRecord::decode(&b.encode()), Ok(b.clone()));
    // Written before lifecycle existed: no configuration.
    let old = without(&b, &["lifecycle"]);
    assert_eq!(BucketRecord::decode(&old).map(|r| r.lifecycle), Ok(None));
}

#[test]
fn a_replication_configuration_round_trips_and_older_records_have_none() {
    let rule = ReplicationRule {
        id: "r1".into(),
        enabled: true,
        priority: Some(3),
        filter: ReplicationFilter { prefix: "logs/".into(), tags: vec![("k".into(), "v".into())] },
        destination: ReplicationDestination {
            bucket_arn: "arn:aws:s3:::copy".into(),
            storage_class: Some("REDUCED_REDUNDANCY".into()),
            ..Default::default()
        },
        existing_objects: true,
        ..Default::default()
    };
    let b = BucketRecord {
        created: 1,
        replication: Some(ReplicationConfig { role: "arn:aws:iam::1:role/r".into(), rules: vec![rule] }),
        ..Default::default()
    };
    assert_eq!(BucketRecord::decode(&b.encode()), Ok(b.clone()));
    let old = without(&b, &["replication"]);
    assert_eq!(BucketRecord::decode(&old).map(|r| r.replication), Ok(None));
}

/// Node RPC encodes structs as arrays (`rmp_serde::to_vec`), where a field left out of the
/// encoding shifts every one after it into the wrong place: only a struct's last field may
/// be left out (`skip_serializing_if`). Every struct a drive call carries round-trips here
/// with each optional field given and not.
#[test]
fn records_cross_the_compact_encoding_whatever_is_left_out() {
    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: &T) {
        let bytes = rmp_serde::to_vec(v).expect("encodes");
        assert_eq!(&rmp_serde::from_slice::<T>(&bytes).expect("decodes"), v);
    }
    let erasure = ErasureInfo {
        data_count: 1,
        parity_count: 0,
        block_size: 1,
        shard_index: 0,
        distribution: vec![0],
        bitrot: Default::default(),
    };
    let acl = Acl { owner: Owner { id: "o".into(), display_name: String::new() }, grants: Vec::new() };
    let sse_c = SseEnvelope {
        kind: SseKind::C,
        object_id: Uuid::nil(),
        sealed_key: vec![1],
        kms_key_id: None,
        context: None,
        sealed_context: None,
        sealed_outer_key: None,
        key_mac: Some(vec![2]),
        sealed_checksums: Some(vec![3]),
    };
    let dsse = SseEnvelope {
        kind: SseKind::Dsse,
        kms_key_id: Some("k".into()),
        sealed_context: Some(vec![4]),
        sealed_outer_key: Some(vec![5]),
        key_mac: None,
        sealed_checksums: None,
        ..sse_c.clone()
    };
    for e in [&sse_c, &dsse] {
        round_trip(e);
    }
    let base = ObjectVersion::delete_marker(None, 1, erasure.clone(), Uuid::nil());
    for sse in [None, Some(Box::new(sse_c.clone())), Some(Box::new(dsse))] {
        for acl in [None, Some(acl.clone())] {
            for replication in [None, Some(ReplicationStatus::Failed { reason: "r".into() })] {
                let v = ObjectVersion { sse: sse.clone(), acl: acl.clone(), replication, ..base.clone() };
                round_trip(&v);
                round_trip(&ObjectRecord { versions: vec![v] });
            }
        }
    }
    for (sse, acl) in [(None, Some(acl.clone())), (Some(Box::new(sse_c)), None), (None, None)] {
        let upload = UploadRecord {
            upload_id: Uuid::nil(),
            key: "k".into(),
            initiated: 1,
            headers: BTreeMap::new(),
            user_metadata: BTreeMap::new(),
            erasure: erasure.clone(),
            tags: BTreeMap::new(),
            checksum_algorithm: None,
            checksum_type: None,
            retention: None,
            legal_hold: false,
            sse,
            acl,
        };
        round_trip(&upload);
    }
    for sealed_checksums in [None, Some(vec![1])] {
        round_trip(&PartInfo {
            number: 1,
            size: 1,
            etag: "e".into(),
            data_id: Uuid::nil(),
            mod_time: 1,
            checksums: BTreeMap::new(),
            sealed_checksums,
        });
    }
}

#[test]
fn the_highest_priority_enabled_rule_decides() {
    let rule = |id: &str, priority, prefix: &str, enabled, delete_markers| ReplicationRule {
        id: id.into(),
        enabled,
        priority: Some(priority),
        filter: ReplicationFilter { prefix: prefix.into(), tags: Vec::new() },
        delete_markers,
        ..Default::default()
    };
    let config = ReplicationConfig {
        role: String::new(),
        rules: vec![
            rule("all", 1, "", true, true),
            rule("logs", 5, "logs/", true, false),
            rule("off", 9, "logs/old/", false, true),
        ],
    };
    let none = BTreeMap::new();
    let id = |key, marker| config.rule_for(key, &none, marker).map(|r| r.id.as_str());
    assert_eq!(id("a", false), Some("all"));
    assert_eq!(id("logs/x", false), Some("logs"));
    // A disabled rule does not decide, whatever its priority.
    assert_eq!(id("logs/old/x", false), Some("logs"));
    // The deciding rule does not replicate delete markers: none goes, though a lower rule would.
    assert_eq!(id("logs/x", true), None);
    assert_eq!(id("a", true), Some("all"));
}

#[test]
fn a_replication_filter_takes_its_prefix_with_all_its_tags() {
    let f = ReplicationFilter { prefix: "a/".into(), tags: vec![("k".into(), "v".into())] };
    let tags = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert!(f.matches("a/x", &tags(&[("k", "v"), ("o", "p")])));
    assert!(!f.matches("b/x", &tags(&[("k", "v")])));
    assert!(!f.matches("a/x", &tags(&[("k", "w")])));
    assert!(!f.matches("a/x", &tags(&[])));
    assert!(ReplicationFilter::default().matches("anything", &tags(&[])));
}

/// Encodes `value` as a record without the fields named in `drop` (what an older release
/// wrote, before they existed).
fn without<T: Serialize>(value: &T, drop: &[&str]) -> Vec<u8> {
    fn strip(v: &mut serde_json::Value, drop: &[&str]) {
        match v {
            serde_json::Value::Object(map) => {
                for d in drop {
                    map.remove(*d);
                }
                map.values_mut().for_each(|v| strip(v, drop));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| strip(v, drop)),
            _ => {}
        }
    }
    let mut json = serde_json::to_value(value).expect("to json");
    strip(&mut json, drop);
    encode(&json)
}

/// The sample record (one version of 16 fields) as a release that did not have the nil
/// field `name` wrote it: the field's bytes cut out and the version's map one smaller
/// (MessagePack: map16 of 16 → fixmap of 15).
fn sample_without(name: &str) -> Vec<u8> {
    let mut field = vec![0xa0 | name.len() as u8];
    field.extend_from_slice(name.as_bytes());
    field.push(0xc0);
    let mut old = sample().encode();
    let at = old.windows(field.len()).position(|w| w == field.as_slice()).expect("the field, nil");
    old.drain(at..at + field.len());
    let map = old.windows(4).position(|w| w == [0x91, 0xde, 0x00, 0x10]).expect("one version of 16 fields");
    old.splice(map + 1..map + 4, [0x8f]);
    old
}

#[test]
fn records_from_before_acls_read() {
    let old = sample_without("acl");
    assert!(!old.windows(3).any(|w| w == b"acl"));
    assert_eq!(ObjectRecord::decode(&old), Ok(sample()));
    let bucket = BucketRecord { created: 5, ..Default::default() };
    let old = without(&bucket, &["acl", "object_ownership"]);
    let read = BucketRecord::decode(&old).expect("decodes");
    assert_eq!(read.object_ownership, ObjectOwnership::BucketOwnerEnforced);
    assert_eq!(read.acl, None);
    let owned = BucketRecord {
        acl: Some(Acl {
            owner: Owner { id: "ab".into(), display_name: "alice".into() },
            grants: vec![Grant { grantee: Grantee::Group(Group::AllUsers), permission: Permission::Read }],
        }),
        object_ownership: ObjectOwnership::NotSet,
        ..bucket
    };
    assert_eq!(BucketRecord::decode(&owned.encode()), Ok(owned));
}

#[test]
fn garbage_is_an_error() {
    assert_eq!(ObjectRecord::decode(&[]), Err(DecodeError::Empty));
    assert_eq!(ObjectRecord::decode(&[9, 1, 2]), Err(DecodeError::UnknownVersion(9)));
    let mut bytes = sample().encode();
    for cut in 1..bytes.len() {
        assert!(ObjectRecord::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    bytes[5] ^= 0xff;
    let _ = ObjectRecord::decode(&bytes); // must not panic, whatever it returns
}

#[test]
fn encrypted_versions_round_trip_and_check_their_sizes() {
    let envelope = SseEnvelope {
        kind: SseKind::C,
        object_id: Uuid::from_u128(5),
        sealed_key: vec![1; 60],
        kms_key_id: None,
        context: None,
        sealed_context: None,
        sealed_outer_key: None,
        key_mac: Some(vec![2; 48]),
        sealed_checksums: Some(vec![3; 40]),
    };
    let mut r = sample();
    r.versions[0].sse = Some(Box::new(envelope));
    r.versions[0].size = 5 + 16; // 5 plaintext bytes, one package
    assert_eq!(ObjectRecord::decode(&r.encode()), Ok(r.clone()));
    assert_eq!(r.versions[0].plain_size(), 5);
    // A record written before encryption existed has no `sse` and reads as unencrypted.
    let old = sample_without("sse");
    assert!(!old.windows(3).any(|w| w == b"sse"));
    assert_eq!(ObjectRecord::decode(&old).map(|r| r.versions[0].plain_size()), Ok(5));
    for bad in [0, 15, 65_553] {
        r.versions[0].size = bad;
        assert!(matches!(ObjectRecord::decode(&r.encode()), Err(DecodeError::Invalid(_))), "{bad}");
    }
}

/// Each impossible record, encoded as a drive would store it, must decode to `Invalid`.
#[test]
fn impossible_records_are_invalid() {
    let part = |number: u32, size: u64| PartInfo {
        number,
        size,
        etag: "00".into(),
        data_id: Uuid::from_u128(u128::from(number)),
        mod_time: 1,
        checksums: BTreeMap::new(),
        sealed_checksums: None,
    };
    let multipart = |parts: Vec<PartInfo>, size: u64| {
        let mut r = sample();
        r.versions[0].data = DataLocation::Multipart(Uuid::from_u128(9));
        r.versions[0].size = size;
        r.versions[0].parts = parts;
        r
    };
    let mut ok = multipart(vec![part(1, 6 << 20), part(2, 3)], (6 << 20) + 3);
    assert!(ObjectRecord::decode(&ok.encode()).is_ok());
    ok.versions[0].data = DataLocation::File(Uuid::from_u128(3));
    ok.versions[0].parts.clear();
    assert!(ObjectRecord::decode(&ok.encode()).is_ok());

    type Edit<'a> = Box<dyn Fn(&mut ObjectRecord) + 'a>;
    let edits: Vec<(&str, Edit<'_>)> = vec![
        ("block size 0", Box::new(|r| r.versions[0].erasure.block_size = 0)),
        ("block size huge", Box::new(|r| r.versions[0].erasure.block_size = u32::MAX)),
        ("no data shards", Box::new(|r| r.versions[0].erasure.data_count = 0)),
        ("parity over data", Box::new(|r| r.versions[0].erasure.parity_count = 3)),
        ("too many shards", Box::new(|r| r.versions[0].erasure.data_count = 200)),
        ("shard index out of range", Box::new(|r| r.versions[0].erasure.shard_index = 4)),
        ("short distribution", Box::new(|r| r.versions[0].erasure.distribution.truncate(3))),
        ("distribution repeats", Box::new(|r| r.versions[0].erasure.distribution = vec![0, 0, 1, 2])),
        ("distribution out of range", Box::new(|r| r.versions[0].erasure.distribution[0] = 9)),
        ("no versions", Box::new(|r| r.versions.clear())),
        ("inline larger than a block", Box::new(|r| r.versions[0].size = (1 << 20) + 1)),
        ("parts on a file version", Box::new(|r| r.versions[0].parts = vec![part(1, 5)])),
        ("parts do not add up", Box::new(|r| *r = multipart(vec![part(1, 6), part(2, 3)], 10))),
        ("parts out of order", Box::new(|r| *r = multipart(vec![part(2, 6), part(1, 3)], 9))),
        ("part number 0", Box::new(|r| *r = multipart(vec![part(0, 6)], 6))),
        ("part number too high", Box::new(|r| *r = multipart(vec![part(10_001, 6)], 6))),
    ];
    for (what, edit) in edits {
        let mut r = sample();
        edit(&mut r);
        assert!(matches!(ObjectRecord::decode(&r.encode()), Err(DecodeError::Invalid(_))), "{what} decoded");
    }

    let upload = UploadRecord {
        upload_id: Uuid::from_u128(1),
        key: "k".into(),
        initiated: 1,
        headers: BTreeMap::new(),
        user_metadata: BTreeMap::new(),
        erasure: sample().versions[0].erasure.clone(),
        tags: BTreeMap::new(),
        checksum_algorithm: None,
        checksum_type: None,
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
    };
    assert_eq!(UploadRecord::decode(&upload.encode()), Ok(upload.clone()));
    let mut bad = upload;
    bad.erasure.block_size = 0;
    assert!(matches!(UploadRecord::decode(&bad.encode()), Err(DecodeError::Invalid(_))));
    assert!(PartInfo::decode(&part(3, 7).encode()).is_ok());
    assert!(matches!(PartInfo::decode(&part(0, 7).encode()), Err(DecodeError::Invalid(_))));
    let huge = part(1, PUT_OBJECT_SIZE_MAX + 1);
    assert!(matches!(PartInfo::decode(&huge.encode()), Err(DecodeError::Invalid(_))));
}
