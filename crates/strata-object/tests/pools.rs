//! Two pools under one object layer: new keys spread over both, every operation finds the pool
//! that holds its key, and a key that ended up in both pools (two writers, or a move between
//! them) reads, lists and deletes as if it lived in one.
//!
//! The rig: eight drives, pool 0 over the first four and pool 1 over the last four, each one
//! set. Beside the two-pool layer, a one-pool layer over each pool's drives writes straight into
//! that pool, as another writer that picked it would.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use strata_drive::{Drive, LocalDrive};
use strata_object::{
    BodyError, BodyReader, CompleteOptions, CompletePart, DriveSlot, LayerOptions, ListRequest, ObjectError,
    ObjectLayer, PutOptions, VersionRef, Versioning, VersionsRequest,
};
use tokio::sync::oneshot;
use uuid::Uuid;

mod common;

use common::{body, pattern};

struct Rig {
    _dir: tempfile::TempDir,
    drives: Vec<Arc<LocalDrive>>,
    /// Both pools.
    two: ObjectLayer,
}

fn slots(drives: &[Arc<LocalDrive>]) -> Vec<DriveSlot> {
    drives.iter().map(|d| Some(d.clone() as Arc<dyn Drive>)).collect()
}

impl Rig {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut drives = Vec::new();
        for i in 0..8 {
            let d = LocalDrive::open(&dir.path().join(format!("d{i}"))).expect("open drive");
            d.write_format(b"{}".to_vec()).await.expect("format");
            drives.push(Arc::new(d));
        }
        let pools = vec![vec![slots(&drives[..4])], vec![slots(&drives[4..])]];
        let two = ObjectLayer::new(Uuid::from_u128(1), pools, 2).await.expect("layer");
        two.make_bucket("b").await.expect("bucket");
        Self { _dir: dir, drives, two }
    }

    /// A one-pool layer over pool `pool`'s drives, whose clock runs `offset_secs` off.
    async fn only(&self, pool: usize, offset_secs: i64) -> ObjectLayer {
        let clock = Arc::new(strata_types::time::SkewedClock { offset: offset_secs * 1_000_000_000 });
        let options = LayerOptions { clock, ..Default::default() };
        let drives = slots(&self.drives[pool * 4..pool * 4 + 4]);
        ObjectLayer::new_with(Uuid::from_u128(1), vec![vec![drives]], 2, None, options).await.expect("layer")
    }
}

async fn put(l: &ObjectLayer, key: &str, data: &Bytes) -> Option<Uuid> {
    l.put_object("b", key, &mut body(data), PutOptions::default()).await.expect("put").version_id
}

async fn read(l: &ObjectLayer, key: &str, which: VersionRef) -> Result<Vec<u8>, ObjectError> {
    common::read_version(l, "b", key, which).await
}

/// Every current key in the bucket, by listing pages of `page` keys.
async fn list(l: &ObjectLayer, page: usize) -> Vec<String> {
    let mut names = Vec::new();
    let mut req = ListRequest { max_keys: page, ..Default::default() };
    loop {
        let got = l.list_objects("b", &req).await.expect("list");
        names.extend(got.objects.into_iter().map(|o| o.key));
        match got.next_marker {
            Some(m) if got.truncated => req.start_after = m,
            _ => return names,
        }
    }
}

/// Whether `l` (a one-pool layer) holds the key at all (a delete marker counts).
async fn holds(l: &ObjectLayer, key: &str) -> bool {
    match l.open_object("b", key, false).await {
        Ok(_) | Err(ObjectError::DeleteMarker { .. }) => true,
        Err(ObjectError::ObjectNotFound) => false,
        Err(e) => panic!("{key}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_keys_spread_over_the_pools_and_stay_where_they_are() {
    let rig = Rig::new().await;
    let (only0, only1) = (rig.only(0, 0).await, rig.only(1, 0).await);
    let mut in_pool = [0usize; 2];
    let keys: Vec<String> = (0..60).map(|i| format!("k{i:03}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let size = if i % 3 == 0 { 300_000 } else { 100 };
        put(&rig.two, key, &pattern(size, i as u64)).await;
        let (a, b) = (holds(&only0, key).await, holds(&only1, key).await);
        assert!(a != b, "{key} is in exactly one pool: {a} {b}");
        let pool = usize::from(b);
        assert_eq!(pool, rig.two.new_key_pool("b", key).await, "{key} went where new keys go");
        in_pool[pool] += 1;
    }
    // The pools have the same free space (one file system), so each takes about half.
    assert!(in_pool[0] >= 15 && in_pool[1] >= 15, "{in_pool:?}");

    // An overwrite stays in the key's pool, whatever pool a new key of that name would take.
    for (i, key) in keys.iter().enumerate() {
        let was_in_1 = holds(&only1, key).await;
        put(&rig.two, key, &pattern(200, 1000 + i as u64)).await;
        assert_eq!(holds(&only1, key).await, was_in_1, "{key}");
        assert_eq!(holds(&only0, key).await, !was_in_1, "{key}");
        assert_eq!(
            read(&rig.two, key, VersionRef::Current).await.expect("read"),
            pattern(200, 1000 + i as u64)
        );
    }
    assert_eq!(list(&rig.two, 7).await, keys, "a listing merges both pools in order");

    // Multipart: the upload begins in the key's pool and completes there.
    let key = "k007";
    let was_in_1 = holds(&only1, key).await;
    let id = rig.two.create_multipart_upload("b", key, PutOptions::default()).await.expect("create");
    let part = pattern(5 << 20, 9);
    let info = rig.two.upload_part("b", key, id, 1, &mut body(&part), None).await.expect("part");
    let parts = [CompletePart { number: 1, etag: info.etag, checksums: BTreeMap::new() }];
    rig.two
        .complete_multipart_upload("b", key, id, &parts, CompleteOptions::default())
        .await
        .expect("complete");
    assert_eq!(holds(&only1, key).await, was_in_1);
    assert_eq!(read(&rig.two, key, VersionRef::Current).await.expect("read"), part);

    for key in &keys {
        rig.two.delete_object("b", key).await.expect("delete");
    }
    assert!(list(&rig.two, 100).await.is_empty());
    for key in &keys {
        assert!(!holds(&only0, key).await && !holds(&only1, key).await, "{key} is gone from both pools");
    }
}

/// A body that says when it is first read, then waits for its gate before giving its bytes:
/// the write has picked its pool, and has not yet committed.
struct Gated {
    started: Option<oneshot::Sender<()>>,
    gate: Option<oneshot::Receiver<()>>,
    data: Option<Bytes>,
}

#[async_trait::async_trait]
impl BodyReader for Gated {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        if let Some(s) = self.started.take() {
            let _ = s.send(());
        }
        if let Some(g) = self.gate.take() {
            let _ = g.await;
        }
        Ok(self.data.take())
    }
    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// Two writers of a new key pick different pools, and the one that commits last is stamped by
/// a clock an hour behind the other's. The later write is still the current version (its pool
/// moves its stamps past the other pool's newest version under the lock), and in an
/// unversioned bucket the `null` version it replaced in the other pool is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_lands_beside_a_newer_pool_stays_the_newest() {
    for (versioned, size) in [(false, 100), (false, 400_000), (true, 100)] {
        let rig = Rig::new().await;
        if versioned {
            rig.two.put_bucket_versioning("b", Versioning::Enabled).await.expect("versioning");
        }
        let key = format!("race-{versioned}-{size}");
        let pool = rig.two.new_key_pool("b", &key).await;
        // The other writer is in the other pool, with a clock an hour ahead.
        let other = rig.only(1 - pool, 3600).await;
        let own = rig.only(pool, 0).await;
        let (started_tx, started_rx) = oneshot::channel();
        let (gate_tx, gate_rx) = oneshot::channel();
        let data = pattern(size, 1);
        let mut gated = Gated { started: Some(started_tx), gate: Some(gate_rx), data: Some(data.clone()) };
        let last = rig.two.put_object("b", &key, &mut gated, PutOptions::default());
        let first = async {
            started_rx.await.expect("the write began");
            put(&other, &key, &pattern(50, 2)).await;
            gate_tx.send(()).expect("gate");
        };
        let (last, ()) = tokio::join!(last, first);
        let last = last.expect("the later write");
        assert!(holds(&own, &key).await, "{key}: the later write is in the pool it picked");
        assert_eq!(read(&rig.two, &key, VersionRef::Current).await.expect("read"), data, "{key}");
        assert_eq!(list(&rig.two, 10).await, vec![key.clone()]);
        let listed = rig.two.list_objects("b", &ListRequest { max_keys: 10, ..Default::default() }).await;
        assert_eq!(listed.expect("list").objects[0].etag, last.etag, "{key}: the listing shows the newest");
        let all = VersionsRequest { max_keys: 10, ..Default::default() };
        let versions = rig.two.list_object_versions("b", &all).await.expect("versions").entries;
        if versioned {
            assert_eq!(versions.len(), 2, "{key}: both versions, one in each pool");
            assert!(versions[0].is_latest && versions[0].info.version_id == last.version_id);
            // Removing the newest by its id leaves the other pool's version current.
            rig.two
                .delete_object_version("b", &key, VersionRef::Id(last.version_id), false)
                .await
                .expect("rm");
            assert_eq!(read(&rig.two, &key, VersionRef::Current).await.expect("read"), pattern(50, 2));
        } else {
            assert_eq!(versions.len(), 1, "{key}: the replaced null version is gone: {versions:?}");
            assert!(!holds(&other, &key).await, "{key}: nothing left in the other pool");
        }
        rig.two.delete_object("b", &key).await.expect("delete");
        assert!(matches!(
            read(&rig.two, &key, VersionRef::Current).await,
            Err(ObjectError::ObjectNotFound | ObjectError::DeleteMarker { .. })
        ));
        assert!(list(&rig.two, 10).await.is_empty(), "{key}");
    }
}

/// A key in both pools: an older version in pool 0 and a newer one (or a delete marker) in pool
/// 1. Reads, listings and deletes act on the newest, whichever pool holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_both_pools_reads_and_lists_its_newest_version() {
    let rig = Rig::new().await;
    rig.two.put_bucket_versioning("b", Versioning::Enabled).await.expect("versioning");
    let (only0, only1) = (rig.only(0, 0).await, rig.only(1, 0).await);
    let old = put(&only0, "k", &pattern(10, 1)).await;
    let new = put(&only1, "k", &pattern(20, 2)).await;
    assert_eq!(read(&rig.two, "k", VersionRef::Current).await.expect("current"), pattern(20, 2));
    assert_eq!(read(&rig.two, "k", VersionRef::Id(old)).await.expect("old by id"), pattern(10, 1));
    let missing = VersionRef::Id(Some(Uuid::now_v7()));
    assert!(matches!(read(&rig.two, "k", missing).await, Err(ObjectError::NoSuchVersion)));

    // Tags go on the version named, in the pool that holds it.
    let tags = BTreeMap::from([("t".to_owned(), "1".to_owned())]);
    rig.two.put_object_tags_version("b", "k", VersionRef::Id(old), tags.clone()).await.expect("tag old");
    assert_eq!(
        only0.open_object_version("b", "k", VersionRef::Id(old), false).await.expect("old").info.tags,
        tags
    );

    // A delete marker goes where the newest version is, and hides the key in both pools.
    rig.two.delete_object("b", "k").await.expect("marker");
    assert!(list(&rig.two, 10).await.is_empty(), "the marker hides the key");
    assert!(matches!(only1.open_object("b", "k", false).await, Err(ObjectError::DeleteMarker { .. })));
    let mut req = VersionsRequest { max_keys: 1, ..Default::default() };
    let mut seen = Vec::new();
    loop {
        let page = rig.two.list_object_versions("b", &req).await.expect("versions");
        seen.extend(page.entries.iter().map(|e| (e.info.version_id, e.is_latest)));
        if !page.truncated {
            break;
        }
        req.key_marker = page.next_key_marker.expect("key marker");
        req.version_marker = page.next_version_marker;
    }
    assert_eq!(seen.len(), 3, "marker, new, old, one page each across pools: {seen:?}");
    assert_eq!(&seen[1..], &[(new, false), (old, false)]);
    assert!(seen[0].1, "the marker is the latest");
}

/// Every version of every key, as a versions listing shows them (info, is_latest).
async fn all_versions(l: &ObjectLayer) -> Vec<(String, Option<Uuid>, u64, String, bool, bool)> {
    let req = VersionsRequest { max_keys: 1000, ..Default::default() };
    let page = l.list_object_versions("b", &req).await.expect("versions");
    assert!(!page.truncated);
    page.entries
        .into_iter()
        .map(|e| {
            (e.info.key, e.info.version_id, e.info.mod_time, e.info.etag, e.info.delete_marker, e.is_latest)
        })
        .collect()
}

/// A drained pool hands every version of every key to the other pool, with its id, time, ETag,
/// metadata and tags, in its place among the key's versions; a write to one of its
/// keys while it drains goes to the other pool; once drained it holds nothing and takes no new
/// keys; and what cannot be drained is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_pool_hands_every_version_to_the_other() {
    let rig = Rig::new().await;
    let only0 = rig.only(0, 0).await;
    let mut sizes = BTreeMap::new();
    for (i, size) in [0usize, 100, 200_000, 3 << 20].into_iter().enumerate() {
        let key = format!("plain{i}");
        let meta = BTreeMap::from([("colour".to_owned(), format!("c{i}"))]);
        let opts = PutOptions { user_metadata: meta, ..Default::default() };
        only0.put_object("b", &key, &mut body(&pattern(size, i as u64)), opts).await.expect("put");
        sizes.insert(key, (size, i as u64));
    }
    // A multipart object of two parts.
    let id = only0.create_multipart_upload("b", "mp", PutOptions::default()).await.expect("create");
    let (p1, p2) = (pattern(5 << 20, 50), pattern(1 << 20, 51));
    let e1 = only0.upload_part("b", "mp", id, 1, &mut body(&p1), None).await.expect("part 1").etag;
    let e2 = only0.upload_part("b", "mp", id, 2, &mut body(&p2), None).await.expect("part 2").etag;
    let parts = [
        CompletePart { number: 1, etag: e1, checksums: BTreeMap::new() },
        CompletePart { number: 2, etag: e2, checksums: BTreeMap::new() },
    ];
    only0
        .complete_multipart_upload("b", "mp", id, &parts, CompleteOptions::default())
        .await
        .expect("complete");
    // A versioned key: a null version, two versions (one tagged, one on legal hold), a marker.
    put(&only0, "ver", &pattern(10, 60)).await;
    rig.two.put_bucket_versioning("b", Versioning::Enabled).await.expect("versioning");
    let only0 = rig.only(0, 0).await;
    let tags = BTreeMap::from([("t".to_owned(), "1".to_owned())]);
    let opts = PutOptions { tags: tags.clone(), ..Default::default() };
    let v1 =
        only0.put_object("b", "ver", &mut body(&pattern(300_000, 61)), opts).await.expect("v1").version_id;
    let meta = BTreeMap::from([("kept".to_owned(), "yes".to_owned())]);
    let opts = PutOptions { user_metadata: meta.clone(), ..Default::default() };
    let v2 = only0.put_object("b", "ver", &mut body(&pattern(20, 62)), opts).await.expect("v2").version_id;
    only0.delete_object("b", "ver").await.expect("marker");
    let before = all_versions(&rig.two).await;
    assert_eq!(before.len(), 4 + 1 + 4, "{before:?}");

    // Refused: a pool that does not exist, and (later) the last pool taking new keys.
    assert!(matches!(rig.two.start_drain(2).await, Err(ObjectError::InvalidArgument(_))));
    let status = rig.two.start_drain(0).await.expect("drain");
    assert!(matches!(rig.two.start_drain(0).await, Err(ObjectError::InvalidRequest(_))), "twice");
    assert!(matches!(rig.two.start_drain(1).await, Err(ObjectError::InvalidRequest(_))), "the last pool");

    // While it drains: a new version of one of its keys goes to the other pool.
    let only1 = rig.only(1, 0).await;
    let v3 = put(&rig.two, "plain1", &pattern(33, 63)).await;
    assert!(holds(&only1, "plain1").await);
    for i in 0..20 {
        assert_eq!(
            rig.two.new_key_pool("b", &format!("new{i}")).await,
            1,
            "a draining pool takes no new keys"
        );
    }

    let done = rig.two.run_drain(status, None).await.expect("run");
    assert_eq!(done.state, strata_object::DrainState::Complete, "{done:?}");
    assert_eq!(done.objects_moved, 6, "{done:?}");
    assert_eq!(done.versions_moved, 4 + 1 + 4, "{done:?}");
    assert_eq!(done.failed, 0);
    for key in sizes.keys().chain(["mp".to_owned(), "ver".to_owned()].iter()) {
        assert!(!holds(&only0, key).await, "{key} left pool 0");
        assert!(holds(&only1, key).await, "{key} is in pool 1");
    }
    let after = all_versions(&rig.two).await;
    let mut expected = before.clone();
    // plain1 has its new version on top.
    let at = expected.iter().position(|v| v.0 == "plain1").expect("plain1");
    expected[at].5 = false;
    assert_eq!(after.len(), expected.len() + 1);
    let newest = after.iter().find(|v| v.0 == "plain1" && v.5).expect("plain1 latest");
    assert_eq!(newest.1, v3);
    let without_new: Vec<_> = after.iter().filter(|v| !(v.0 == "plain1" && v.1 == v3)).cloned().collect();
    assert_eq!(without_new, expected, "ids, times, ETags and order as before the move");

    for (key, (size, seed)) in &sizes {
        let which = if key == "plain1" { VersionRef::Id(None) } else { VersionRef::Current };
        assert_eq!(read(&rig.two, key, which).await.expect("read"), pattern(*size, *seed), "{key}");
        let info = rig.two.open_object_version("b", key, which, false).await.expect("head").info;
        assert_eq!(info.user_metadata.get("colour"), Some(&format!("c{seed}")), "{key}");
    }
    assert_eq!(
        read(&rig.two, "mp", VersionRef::Current).await.expect("mp"),
        [p1.to_vec(), p2.to_vec()].concat()
    );
    let mp = rig.two.open_object("b", "mp", false).await.expect("mp head").info;
    assert_eq!(mp.parts.len(), 2);
    let v1_info = rig.two.open_object_version("b", "ver", VersionRef::Id(v1), false).await.expect("v1").info;
    assert_eq!(v1_info.tags, tags);
    assert_eq!(read(&rig.two, "ver", VersionRef::Id(v1)).await.expect("v1"), pattern(300_000, 61));
    let v2_info = rig.two.open_object_version("b", "ver", VersionRef::Id(v2), false).await.expect("v2").info;
    assert_eq!(v2_info.user_metadata, meta);
    assert!(matches!(rig.two.open_object("b", "ver", false).await, Err(ObjectError::DeleteMarker { .. })));

    // Drained: status says so, and the pool takes nothing.
    let views = rig.two.pool_status().await;
    assert_eq!(views[0].state, "drained");
    assert_eq!(views[1].state, "active");
    put(&rig.two, "after", &pattern(5, 70)).await;
    assert!(holds(&only1, "after").await && !holds(&only0, "after").await);
    assert!(matches!(rig.two.cancel_drain(0).await, Err(ObjectError::InvalidRequest(_))));
}

/// A drain cancelled half-way stops at once, the pool takes new keys again, and what moved
/// stays readable; a drain started again finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_drain_stops_and_a_new_one_finishes() {
    let rig = Rig::new().await;
    let only0 = rig.only(0, 0).await;
    for i in 0..30 {
        put(&only0, &format!("k{i:02}"), &pattern(1000, i)).await;
    }
    let status = rig.two.start_drain(0).await.expect("drain");
    let cancelled = rig.two.cancel_drain(0).await.expect("cancel");
    assert_eq!(cancelled.state, strata_object::DrainState::Cancelled);
    let stopped = rig.two.run_drain(status, None).await.expect("run");
    assert_eq!(stopped.state, strata_object::DrainState::Cancelled);
    assert_eq!(stopped.objects_moved, 0, "the cancelled drain stopped before its first key: {stopped:?}");
    assert_eq!(rig.two.pool_status().await[0].state, "cancelled");
    let status = rig.two.start_drain(0).await.expect("again");
    let done = rig.two.run_drain(status, None).await.expect("run");
    assert_eq!(done.state, strata_object::DrainState::Complete);
    for i in 0..30 {
        let key = format!("k{i:02}");
        assert_eq!(read(&rig.two, &key, VersionRef::Current).await.expect("read"), pattern(1000, i));
        assert!(!holds(&only0, &key).await);
    }
}

/// After a pool is added, a rebalance moves objects off the full pool until each holds about its
/// share; every object still reads, none is in both pools; it is refused while one runs, and a
/// stopped one moves nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_evens_out_the_pools() {
    let rig = Rig::new().await;
    let only0 = rig.only(0, 0).await;
    let only1 = rig.only(1, 0).await;
    let keys: Vec<String> = (0..40).map(|i| format!("r{i:02}")).collect();
    for (i, key) in keys.iter().enumerate() {
        put(&only0, key, &pattern(256 << 10, i as u64)).await;
    }
    let plan = rig.two.start_rebalance().await.expect("start");
    assert_eq!(plan.pools.len(), 2);
    assert_eq!(plan.pools[0].stored_bytes, 40 * (256 << 10));
    assert_eq!(plan.pools[1].stored_bytes, 0);
    // The pools have the same capacity (one file system, four drives each): half each.
    assert_eq!(plan.pools[0].target_bytes, 20 * (256 << 10));
    assert!(matches!(rig.two.start_rebalance().await, Err(ObjectError::InvalidRequest(_))), "running");
    assert!(
        matches!(rig.two.start_drain(1).await, Err(ObjectError::InvalidRequest(_))),
        "no drain meanwhile"
    );
    rig.two.stop_rebalance().await.expect("stop");
    let stopped = rig.two.run_rebalance(plan, None).await.expect("run");
    assert_eq!(stopped.state, strata_object::RebalanceState::Stopped);
    assert_eq!(stopped.objects_moved, 0);

    let plan = rig.two.start_rebalance().await.expect("again");
    let done = rig.two.run_rebalance(plan, None).await.expect("run");
    assert_eq!(done.state, strata_object::RebalanceState::Complete, "{done:?}");
    assert_eq!(done.failed, 0);
    let mut in_pool1 = 0;
    for (i, key) in keys.iter().enumerate() {
        let (a, b) = (holds(&only0, key).await, holds(&only1, key).await);
        assert!(a != b, "{key} is in one pool");
        in_pool1 += usize::from(b);
        assert_eq!(
            read(&rig.two, key, VersionRef::Current).await.expect("read"),
            pattern(256 << 10, i as u64)
        );
    }
    // 20 keys' worth is each pool's share; the rebalance stops within its slack (1 MiB: 4 keys).
    assert!((16..=20).contains(&in_pool1), "{in_pool1} keys moved to pool 1: {done:?}");
    assert_eq!(done.objects_moved as usize, in_pool1);
    assert_eq!(
        rig.two.rebalance_status().await.expect("saved").state,
        strata_object::RebalanceState::Complete
    );
}

/// A drive that reports the capacity it is given (free bytes and file system) instead of its
/// own: a small disk under the tests' large one.
#[derive(Debug)]
struct Sized(Arc<dyn Drive>, strata_drive::DiskInfo);

#[async_trait::async_trait]
impl Drive for Sized {
    fn endpoint(&self) -> &str {
        self.0.endpoint()
    }

    async fn call(
        &self,
        ctx: strata_drive::CallContext,
        call: strata_drive::DriveCall,
    ) -> strata_drive::DriveResult<strata_drive::DriveReply> {
        match call {
            strata_drive::DriveCall::DiskInfo => Ok(strata_drive::DriveReply::DiskInfo(self.1)),
            call => self.0.call(ctx, call).await,
        }
    }

    async fn create_shard_file(
        &self,
        data_id: Uuid,
    ) -> strata_drive::DriveResult<Box<dyn strata_drive::ShardWriter>> {
        self.0.create_shard_file(data_id).await
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> strata_drive::DriveResult<Box<dyn strata_drive::ShardReader>> {
        self.0.open_shard_file_first(data_id, first).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_counts_a_file_system_the_other_pool_shares_once() {
    let rig = Rig::new().await;
    // Pool 0 holds 1 MiB (2 MiB once the other pool's parity is on top).
    let data = pattern(1 << 20, 7);
    put(&rig.only(0, 0).await, "k", &data).await;
    // Pool 1's four drives each see 1 MiB free: on one file system that is 1 MiB, on four 4 MiB.
    let with = |device: fn(usize) -> u64| {
        let small = |i: usize| {
            let info = strata_drive::DiskInfo {
                total_bytes: 8 << 20,
                free_bytes: 1 << 20,
                device: device(i),
                ..Default::default()
            };
            Some(Arc::new(Sized(rig.drives[i].clone(), info)) as Arc<dyn Drive>)
        };
        vec![vec![slots(&rig.drives[..4])], vec![(4..8).map(small).collect()]]
    };
    let shared = ObjectLayer::new(Uuid::from_u128(1), with(|_| 42), 2).await.expect("layer");
    let refused = shared.start_drain(0).await;
    assert!(
        matches!(&refused, Err(ObjectError::InvalidRequest(m)) if m.contains("1048576 bytes free")),
        "{refused:?}"
    );
    let apart = ObjectLayer::new(Uuid::from_u128(1), with(|i| 42 + i as u64), 2).await.expect("layer");
    apart.start_drain(0).await.expect("four file systems of 1 MiB hold it");
    apart.cancel_drain(0).await.expect("cancel");
}
