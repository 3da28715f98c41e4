//! Versioning and object lock in the object layer over four real drives: versions by id, delete
//! markers, ListObjectVersions, healing every version of a key, and locked versions that no
//! delete and no heal removes.

mod common;

use bytes::Bytes;
use common::{body, pattern, read_version as read, Rig};
use strata_drive::faulty::{Fault, Op, Rule};
use strata_object::{
    Imported, ObjectError, ObjectLayer, PutOptions, Retention, RetentionMode, VersionRef, Versioning,
    VersionsRequest,
};
use uuid::Uuid;

async fn put(l: &ObjectLayer, bucket: &str, key: &str, data: &Bytes, opts: PutOptions) -> Option<Uuid> {
    l.put_object(bucket, key, &mut body(data), opts).await.expect("put").version_id
}

fn imported(version_id: Option<Uuid>, mod_time: u64) -> Imported {
    Imported { version_id, mod_time, etag: None, replica: false }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_markers_and_listing() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    let null = pattern(10, 0);
    assert_eq!(put(l, "b", "k", &null, PutOptions::default()).await, None);
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    let datas = [pattern(10, 1), pattern(300_000, 2), pattern(20, 3)];
    let mut ids = Vec::new();
    for d in &datas {
        ids.push(put(l, "b", "k", d, PutOptions::default()).await.expect("an id"));
    }
    for (id, d) in ids.iter().zip(&datas) {
        assert_eq!(read(l, "b", "k", VersionRef::Id(Some(*id))).await.expect("read"), d.to_vec());
    }
    assert_eq!(read(l, "b", "k", VersionRef::Id(None)).await.expect("null"), null.to_vec());
    let missing = VersionRef::Id(Some(Uuid::now_v7()));
    assert!(matches!(read(l, "b", "k", missing).await, Err(ObjectError::NoSuchVersion)));

    let marker = l.delete_object_version("b", "k", VersionRef::Current, false).await.expect("delete");
    assert!(marker.delete_marker && marker.version_id.is_some());
    assert!(matches!(
        l.open_object("b", "k", false).await,
        Err(ObjectError::DeleteMarker { current: true, version_id, .. }) if version_id == marker.version_id
    ));
    assert!(matches!(
        read(l, "b", "k", VersionRef::Id(marker.version_id)).await,
        Err(ObjectError::DeleteMarker { current: false, .. })
    ));
    let current =
        l.list_objects("b", &strata_object::ListRequest { max_keys: 10, ..Default::default() }).await;
    assert!(current.expect("list").objects.is_empty());

    let page = l.list_object_versions("b", &VersionsRequest { max_keys: 100, ..Default::default() }).await;
    let page = page.expect("versions");
    let listed: Vec<(Option<Uuid>, bool, bool)> =
        page.entries.iter().map(|e| (e.info.version_id, e.info.delete_marker, e.is_latest)).collect();
    let mut want = vec![(marker.version_id, true, true)];
    want.extend(ids.iter().rev().map(|id| (Some(*id), false, false)));
    want.push((None, false, false));
    assert_eq!(listed, want);
    // Paged two at a time, through the markers, the same entries.
    let mut seen = Vec::new();
    let mut req = VersionsRequest { max_keys: 2, ..Default::default() };
    loop {
        let page = l.list_object_versions("b", &req).await.expect("page");
        seen.extend(page.entries.iter().map(|e| e.info.version_id));
        if !page.truncated {
            break;
        }
        req.key_marker = page.next_key_marker.expect("key marker");
        req.version_marker = page.next_version_marker;
    }
    assert_eq!(seen, want.iter().map(|w| w.0).collect::<Vec<_>>());

    // Removing the marker makes the newest version current again; a bucket with history is
    // not empty.
    l.delete_object_version("b", "k", VersionRef::Id(marker.version_id), false).await.expect("unmark");
    assert_eq!(read(l, "b", "k", VersionRef::Current).await.expect("current"), datas[2].to_vec());
    assert!(matches!(l.delete_bucket("b").await, Err(ObjectError::BucketNotEmpty)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_restores_every_version() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    // Drive 0 misses every write: its commits fail.
    for op in Op::COMMITS {
        rig.faulty[0].add_rule(Rule::new(op, Fault::Fail));
    }
    let datas = [pattern(10, 1), pattern(300_000, 2)];
    let mut ids = Vec::new();
    for d in &datas {
        ids.push(put(l, "b", "k", d, PutOptions::default()).await);
    }
    let marker = l.delete_object_version("b", "k", VersionRef::Current, false).await.expect("marker");
    rig.faulty[0].clear();
    for id in &ids {
        assert!(rig.local[0].read_version("b", "k", *id, false).await.is_err());
    }
    let healed = l.heal_object("b", "k", false).await.expect("heal");
    assert!(!healed.healed_drives.is_empty());
    // Drive 0 now holds every version, the marker current.
    for id in ids.iter().chain([&marker.version_id]) {
        rig.local[0].read_version("b", "k", *id, false).await.expect("healed version");
    }
    let (head, _) = rig.local[0].read_record("b", "k", false).await.expect("head");
    assert_eq!(head.latest().map(|v| (v.version_id, v.delete_marker)), Some((marker.version_id, true)));
    // And the versions read back with drives 1 and 2 gone (parity 2 of 4: drive 0 is needed).
    for op in [Op::ReadRecord, Op::OpenShardFile, Op::ReadShard] {
        rig.faulty[1].add_rule(Rule::new(op, Fault::Fail));
        rig.faulty[2].add_rule(Rule::new(op, Fault::Fail));
    }
    for (id, d) in ids.iter().zip(&datas) {
        assert_eq!(read(l, "b", "k", VersionRef::Id(*id)).await.expect("read"), d.to_vec());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning_is_not_suspended_under_a_replication_configuration() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.make_bucket("src").await.expect("bucket");
    l.put_bucket_versioning("src", Versioning::Enabled).await.expect("enabled");
    let config = strata_meta::ReplicationConfig { role: String::new(), rules: Vec::new() };
    l.update_bucket("src", |r| r.replication = Some(config)).await.expect("configured");
    assert!(matches!(
        l.put_bucket_versioning("src", Versioning::Suspended).await,
        Err(ObjectError::InvalidBucketState(m)) if m.contains("replication")
    ));
    assert_eq!(l.versioning("src").expect("state"), Versioning::Enabled);
    // Enabling it again changes nothing and is allowed; without the configuration it suspends.
    l.put_bucket_versioning("src", Versioning::Enabled).await.expect("enabled again");
    l.update_bucket("src", |r| r.replication = None).await.expect("removed");
    l.put_bucket_versioning("src", Versioning::Suspended).await.expect("suspended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_versions_are_never_removed() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.make_bucket_with("lock", true).await.expect("lock bucket");
    assert_eq!(l.versioning("lock").expect("state"), Versioning::Enabled);
    assert!(matches!(
        l.put_bucket_versioning("lock", Versioning::Suspended).await,
        Err(ObjectError::InvalidBucketState(_))
    ));
    let until = strata_types::time::now_nanos() + 3_600_000_000_000;
    let lock = |mode| PutOptions { retention: Some(Retention { mode, until }), ..Default::default() };
    let data = pattern(10, 1);
    let compliance = put(l, "lock", "c", &data, lock(RetentionMode::Compliance)).await;
    let governance = put(l, "lock", "g", &data, lock(RetentionMode::Governance)).await;
    let held = put(l, "lock", "h", &data, PutOptions { legal_hold: true, ..Default::default() }).await;
    for bypass in [false, true] {
        let refused = l.delete_object_version("lock", "c", VersionRef::Id(compliance), bypass).await;
        assert!(matches!(refused, Err(ObjectError::ObjectLocked(_))));
        let refused = l.delete_object_version("lock", "h", VersionRef::Id(held), bypass).await;
        assert!(matches!(refused, Err(ObjectError::ObjectLocked(_))));
    }
    let refused = l.put_object_retention("lock", "c", VersionRef::Id(compliance), None, true).await;
    assert!(matches!(refused, Err(ObjectError::ObjectLocked(_))));
    let refused = l.delete_object_version("lock", "g", VersionRef::Id(governance), false).await;
    assert!(matches!(refused, Err(ObjectError::ObjectLocked(_))));
    l.delete_object_version("lock", "g", VersionRef::Id(governance), true).await.expect("bypassed");
    assert_eq!(read(l, "lock", "c", VersionRef::Id(compliance)).await.expect("kept"), data.to_vec());

    // A locked version that only one drive holds (no quorum) is kept by healing; an unlocked one
    // in the same state is removed.
    let mut stray = l.open_object_version("lock", "h", VersionRef::Id(held), false).await.expect("h").info;
    stray.version_id = Some(Uuid::now_v7());
    for (key, legal_hold) in [("stray-locked", true), ("stray", false)] {
        let v = strata_meta::ObjectVersion {
            version_id: stray.version_id,
            mod_time: strata_types::time::now_nanos(),
            delete_marker: true,
            size: 0,
            etag: String::new(),
            headers: Default::default(),
            user_metadata: Default::default(),
            checksums: Default::default(),
            erasure: strata_meta::ErasureInfo {
                bitrot: Default::default(),
                data_count: 2,
                parity_count: 2,
                block_size: 1 << 20,
                shard_index: 0,
                distribution: vec![0, 1, 2, 3],
            },
            data: strata_meta::DataLocation::Inline(Uuid::new_v4()),
            parts: vec![],
            tags: Default::default(),
            retention: None,
            legal_hold,
            sse: None,
            acl: None,
            replication: None,
        };
        rig.local[0].commit_version("lock", key, v, None, Uuid::new_v4()).await.expect("stray");
        l.heal_object("lock", key, false).await.expect("heal");
        let left = rig.local[0].read_version("lock", key, stray.version_id, false).await;
        assert_eq!(left.is_ok(), legal_hold, "{key}");
    }
}

/// A layer over the rig's drives whose clock runs `offset_secs` off: another node.
async fn node_with_clock(rig: &Rig, offset_secs: i64) -> ObjectLayer {
    use std::sync::Arc;
    let slots: Vec<strata_object::DriveSlot> =
        rig.faulty.iter().map(|d| Some(d.clone() as Arc<dyn strata_drive::Drive>)).collect();
    let clock = Arc::new(strata_types::time::SkewedClock { offset: offset_secs * 1_000_000_000 });
    let options = strata_object::LayerOptions { clock, ..Default::default() };
    let parity = strata_cluster::layout::default_parity(slots.len());
    ObjectLayer::new_with(Uuid::from_u128(1), vec![vec![slots]], parity, None, options).await.expect("layer")
}

/// A PUT or a delete marker coordinated by a node whose clock is 30 s behind, after a version
/// stamped by a node on time, becomes the current version: the drives refuse its first stamp,
/// and it is stamped again after the version they hold. A drive that missed that version took
/// the first stamp, and gets the second. Every drive ends with the same head and stamp, and no
/// data is left in temp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_a_slow_clock_is_stamped_after_the_current_version() {
    let rig = Rig::new(4).await;
    let on_time = &rig.layer;
    on_time.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    let behind = node_with_clock(&rig, -30).await;
    let stamp_of = |key: &str, id: Option<Uuid>| {
        let key = key.to_owned();
        async move {
            let open =
                on_time.open_object_version("b", &key, VersionRef::Id(id), false).await.expect("version");
            open.info.mod_time
        }
    };
    // Inline and file data: a refused file commit keeps its shard file for the second stamp.
    for (i, size) in [10usize, 300_000].into_iter().enumerate() {
        let key = format!("k{i}");
        let first = put(on_time, "b", &key, &pattern(size, 1), PutOptions::default()).await;
        // Drive 3 misses the first version (as a drive that was down for that write).
        let op = Uuid::new_v4();
        rig.local[3].delete_version("b", &key, first, op).await.expect("drop on drive 3");
        rig.local[3].finish_op(op, true).await;

        let second = put(&behind, "b", &key, &pattern(size, 2), PutOptions::default()).await;
        assert_eq!(
            read(on_time, "b", &key, VersionRef::Current).await.expect("get"),
            pattern(size, 2).to_vec()
        );
        let (s1, s2) = (stamp_of(&key, first).await, stamp_of(&key, second).await);
        assert!(s2 > s1, "the later write is stamped after the current version: {s2} <= {s1}");
        for (i, d) in rig.local.iter().enumerate() {
            let (record, _) = d.read_record("b", &key, false).await.expect("record");
            let head = record.latest().expect("a head");
            assert_eq!((head.version_id, head.mod_time), (second, s2), "drive {i}");
        }

        let marker =
            behind.delete_object_version("b", &key, VersionRef::Current, false).await.expect("delete");
        assert!(marker.delete_marker);
        let current = read(on_time, "b", &key, VersionRef::Current).await;
        assert!(
            matches!(current, Err(ObjectError::DeleteMarker { version_id, current: true, .. }) if version_id == marker.version_id),
            "{current:?}"
        );
        let page = on_time
            .list_object_versions(
                "b",
                &VersionsRequest { prefix: key.clone(), max_keys: 10, ..Default::default() },
            )
            .await
            .expect("versions");
        let ids: Vec<Option<Uuid>> = page.entries.iter().map(|e| e.info.version_id).collect();
        assert_eq!(
            ids,
            vec![marker.version_id, second, first],
            "versions in the order they were acknowledged"
        );
    }
    assert_eq!(rig.temp_files(), 0, "a refused commit's data was committed or removed");
}

/// A full heal scan counts each bucket's current objects, their bytes and sizes, and current
/// delete markers (the data usage the metrics report); a scan of one bucket leaves it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_scans_count_the_data_usage() {
    use strata_object::usage::size_range;
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.make_bucket("other").await.expect("bucket");
    put(l, "b", "small", &pattern(10, 1), PutOptions::default()).await;
    put(l, "b", "big", &pattern(300_000, 2), PutOptions::default()).await;
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    put(l, "b", "gone", &pattern(20, 3), PutOptions::default()).await;
    l.delete_object_version("b", "gone", VersionRef::Current, false).await.expect("marker");
    assert_eq!(l.healer().usage().updated, 0, "no scan yet");
    let one_bucket = strata_object::HealScope { bucket: Some("b".into()), ..Default::default() };
    l.heal_scan(one_bucket).await;
    assert_eq!(l.healer().usage().updated, 0, "a scan of one bucket counts no usage");
    l.heal_scan(strata_object::HealScope::default()).await;
    let usage = l.healer().usage();
    assert!(usage.updated > 0);
    let b = &usage.buckets["b"];
    assert_eq!((b.objects, b.bytes, b.delete_markers), (2, 300_010, 1), "{b:?}");
    assert_eq!((b.sizes[size_range(10)], b.sizes[size_range(300_000)]), (1, 1), "{b:?}");
    assert_eq!(usage.buckets["other"], strata_object::BucketUsage::default());
}

/// An imported version (another store's, with its own id and time) goes into its place among
/// the versions: behind a newer one, it is not current; read by its id it is whole, with its
/// time; a small one inline and a large one in shard files alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_version_takes_its_own_place_among_the_versions() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    let newer = pattern(100, 1);
    let current = put(l, "b", "k", &newer, PutOptions::default()).await.expect("an id");
    let now = l.open_object("b", "k", false).await.expect("open").info.mod_time;
    for (i, data) in [pattern(50, 2), pattern(400_000, 3)].into_iter().enumerate() {
        let id = Uuid::new_v4();
        let at = now - 1_000_000_000 * (i as u64 + 1);
        let info = l
            .import_version("b", "k", imported(Some(id), at), &mut body(&data), PutOptions::default())
            .await
            .expect("imported");
        assert_eq!((info.version_id, info.mod_time), (Some(id), at));
        assert_eq!(read(l, "b", "k", VersionRef::Id(Some(id))).await.expect("read"), data.to_vec());
        let open = l.open_object_version("b", "k", VersionRef::Id(Some(id)), false).await.expect("open");
        assert_eq!(open.info.mod_time, at);
        // The newer version stays current.
        assert_eq!(read(l, "b", "k", VersionRef::Current).await.expect("current"), newer.to_vec());
    }
    let listed = l
        .list_object_versions("b", &VersionsRequest { max_keys: 10, ..Default::default() })
        .await
        .expect("list");
    let ids: Vec<Option<Uuid>> = listed.entries.iter().map(|v| v.info.version_id).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], Some(current), "the newest first");
    assert!(listed.entries.windows(2).all(|w| w[0].info.mod_time > w[1].info.mod_time), "in time order");
    assert_eq!(rig.temp_files(), 0, "no data left in temp");
}

/// An imported delete marker (another store's, with its own id and time) goes into its place
/// as well: between two versions it hides the older one only for reads of the current version
/// when it is the newest; importing it again changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_delete_marker_takes_its_own_place_among_the_versions() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    let newer = pattern(100, 1);
    let current = put(l, "b", "k", &newer, PutOptions::default()).await.expect("an id");
    let now = l.open_object("b", "k", false).await.expect("open").info.mod_time;
    let (older, marker) = (Uuid::new_v4(), Uuid::new_v4());
    l.import_version(
        "b",
        "k",
        imported(Some(older), now - 2_000),
        &mut body(&pattern(10, 2)),
        PutOptions::default(),
    )
    .await
    .expect("an older version");
    for _ in 0..2 {
        l.import_delete_marker("b", "k", Some(marker), now - 1_000).await.expect("the marker");
    }
    let listed = l
        .list_object_versions("b", &VersionsRequest { max_keys: 10, ..Default::default() })
        .await
        .expect("list");
    let shape: Vec<(Option<Uuid>, bool, bool)> =
        listed.entries.iter().map(|v| (v.info.version_id, v.info.delete_marker, v.is_latest)).collect();
    assert_eq!(
        shape,
        [(Some(current), false, true), (Some(marker), true, false), (Some(older), false, false)]
    );
    assert_eq!(read(l, "b", "k", VersionRef::Current).await.expect("current"), newer.to_vec());
    // A marker imported as the newest is current: the key reads as deleted.
    let newest = Uuid::new_v4();
    l.import_delete_marker("b", "k", Some(newest), now + 1_000).await.expect("the newest marker");
    assert!(matches!(l.open_object("b", "k", false).await, Err(ObjectError::DeleteMarker { .. })));
}

/// A version imported part by part keeps its parts, id, time and ETag, and takes its place among
/// the versions; a body that does not fill its parts fails and leaves no upload behind, and the
/// next run of the same version succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_imported_in_parts_keeps_its_parts() {
    let rig = Rig::new(4).await;
    let l = &rig.layer;
    l.put_bucket_versioning("b", Versioning::Enabled).await.expect("enable");
    let newer = pattern(100, 1);
    put(l, "b", "k", &newer, PutOptions::default()).await.expect("an id");
    let now = l.open_object("b", "k", false).await.expect("open").info.mod_time;
    let min = strata_types::limits::PART_SIZE_MIN;
    let sizes = [min, min, 12_345];
    let data = pattern(sizes.iter().sum::<u64>() as usize, 4);
    let id = Uuid::new_v4();
    let version = Imported {
        version_id: Some(id),
        mod_time: now - 1_000,
        etag: Some("ab".repeat(16) + "-3"),
        replica: false,
    };
    let short = data.slice(..data.len() - 1);
    let failed =
        l.import_parts("b", "k", version.clone(), &sizes, &mut body(&short), PutOptions::default()).await;
    assert!(failed.is_err(), "a body a byte short of its parts: {:?}", failed.map(|i| i.etag));
    let uploads = l.list_multipart_uploads("b", "", &[], 10).await.expect("uploads");
    assert!(uploads.uploads.is_empty(), "the failed import left no upload");
    let info = l
        .import_parts("b", "k", version.clone(), &sizes, &mut body(&data), PutOptions::default())
        .await
        .expect("imported in parts");
    assert_eq!((info.version_id, info.mod_time), (Some(id), now - 1_000));
    assert_eq!(info.etag, "ab".repeat(16) + "-3", "the other store's ETag kept");
    let open = l.open_object_version("b", "k", VersionRef::Id(Some(id)), false).await.expect("open");
    let part_sizes: Vec<u64> = open.info.parts.iter().map(|p| p.size).collect();
    assert_eq!(part_sizes, sizes.to_vec(), "its own part boundaries");
    assert_eq!(read(l, "b", "k", VersionRef::Id(Some(id))).await.expect("read"), data.to_vec());
    assert_eq!(read(l, "b", "k", VersionRef::Current).await.expect("current"), newer.to_vec());
    let uploads = l.list_multipart_uploads("b", "", &[], 10).await.expect("uploads");
    assert!(uploads.uploads.is_empty(), "no upload left once completed");
    assert_eq!(rig.temp_files(), 0, "no data left in temp");
}
