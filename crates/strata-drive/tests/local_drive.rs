//! LocalDrive behaviour: group commit, version replacement, listing against a model.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use strata_drive::{Drive, DriveError, DriveOps, ListEntry, ListQuery, LocalDrive};
use strata_meta::{BucketRecord, DataLocation, ErasureInfo, ObjectVersion};
use uuid::Uuid;

fn version(data: DataLocation, size: u64) -> ObjectVersion {
    ObjectVersion {
        version_id: None,
        mod_time: 1,
        delete_marker: false,
        size,
        etag: "00".into(),
        headers: Default::default(),
        user_metadata: Default::default(),
        checksums: Default::default(),
        erasure: ErasureInfo {
            bitrot: Default::default(),
            data_count: 1,
            parity_count: 0,
            block_size: 1 << 20,
            shard_index: 0,
            distribution: vec![0],
        },
        data,
        parts: vec![],
        tags: Default::default(),
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
        replication: None,
    }
}

async fn drive() -> (tempfile::TempDir, Arc<LocalDrive>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = LocalDrive::open(dir.path()).expect("open");
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    (dir, Arc::new(d))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits() {
    let (_dir, d) = drive().await;
    let stats = d.commit_stats();
    let before = stats.commits.load(Ordering::Relaxed);
    let mut tasks = Vec::new();
    for i in 0..400 {
        let d = d.clone();
        tasks.push(tokio::spawn(async move {
            let id = Uuid::new_v4();
            d.commit_version(
                "b",
                &format!("k{i:04}"),
                version(DataLocation::Inline(id), 3),
                Some(Bytes::from_static(b"abc")),
                Uuid::new_v4(),
            )
            .await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("commit");
    }
    let commits = stats.commits.load(Ordering::Relaxed) - before;
    assert!(commits < 400, "400 concurrent changes took {commits} commits: no grouping");
    let listed = d.list("b", ListQuery { limit: 1000, ..Default::default() }).await.expect("list");
    assert_eq!(listed.len(), 400);
}

#[tokio::test]
async fn replacing_a_version_frees_its_data() {
    let (dir, d) = drive().await;
    let first = Uuid::new_v4();
    let mut w = d.create_shard_file(first).await.expect("create");
    w.write_frame([0; 32], Bytes::from_static(b"hello")).await.expect("write");
    w.finish().await.expect("finish");
    d.commit_version("b", "k", version(DataLocation::File(first), 5), None, Uuid::new_v4())
        .await
        .expect("commit");
    assert!(d.open_shard_file(first).await.is_ok());
    let second = Uuid::new_v4();
    let op = Uuid::new_v4();
    d.commit_version("b", "k", version(DataLocation::Inline(second), 1), Some(Bytes::from_static(b"x")), op)
        .await
        .expect("replace");
    // Until the operation is finished, the replaced data is kept (for an undo).
    assert!(d.open_shard_file(first).await.is_ok());
    d.finish_op(op, true).await;
    let (record, inline) = d.read_record("b", "k", true).await.expect("read");
    assert_eq!(inline.as_deref(), Some(&b"x"[..]));
    assert_eq!(record.versions.len(), 1);
    assert_eq!(record.versions[0].data, DataLocation::Inline(second));
    assert!(matches!(d.open_shard_file(first).await, Err(DriveError::NotFound)));
    let op = Uuid::new_v4();
    d.delete_version("b", "k", None, op).await.expect("delete");
    d.finish_op(op, true).await;
    assert!(matches!(d.read_inline(second).await, Err(DriveError::NotFound)));
    assert!(matches!(d.read_record("b", "k", false).await, Err(DriveError::NotFound)));
    assert!(matches!(d.delete_version("b", "k", None, Uuid::new_v4()).await, Err(DriveError::NotFound)));
    drop(dir);
}

/// Two heals of one object rebuild the same data id on a drive at once: neither may write into
/// the other's file, and both commits succeed with a whole file in place.
#[tokio::test]
async fn two_writers_of_one_data_id_never_share_a_file() {
    let (dir, d) = drive().await;
    let id = Uuid::new_v4();
    let mut a = d.create_shard_file(id).await.expect("create a");
    let mut b = d.create_shard_file(id).await.expect("create b");
    for i in 0..4u8 {
        a.write_frame([i; 32], Bytes::from(vec![b'a'; 100])).await.expect("write a");
        b.write_frame([i; 32], Bytes::from(vec![b'b'; 100])).await.expect("write b");
    }
    a.finish().await.expect("finish a");
    d.commit_version("b", "k", version(DataLocation::File(id), 400), None, Uuid::new_v4())
        .await
        .expect("commit a");
    b.finish().await.expect("finish b");
    d.commit_version("b", "k", version(DataLocation::File(id), 400), None, Uuid::new_v4())
        .await
        .expect("commit b");
    // A commit whose file the other one already moved in finds it in place.
    d.commit_version("b", "k", version(DataLocation::File(id), 400), None, Uuid::new_v4())
        .await
        .expect("commit after the file moved in");
    let r = d.open_shard_file(id).await.expect("open");
    let bytes = r.read_at(0, 4 * 132).await.expect("read");
    let whole = |c: u8| (0..4u8).flat_map(|i| [[i; 32].to_vec(), vec![c; 100]].concat()).collect::<Vec<u8>>();
    assert!(bytes[..] == whole(b'a')[..] || bytes[..] == whole(b'b')[..], "the file mixes two writers");
    assert!(r.read_at(4 * 132, 1).await.is_err(), "the file is longer than one writer's frames");
    // Nothing is left in temp.
    let tmp = dir.path().join(".strata.sys/tmp");
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 0);
    // A writer dropped unfinished removes only its own file.
    let first = d.create_shard_file(id).await.expect("create");
    let second = d.create_shard_file(id).await.expect("create");
    drop(second);
    wait_until(|| std::fs::read_dir(&tmp).expect("tmp").count() == 1).await;
    drop(first);
    wait_until(|| std::fs::read_dir(&tmp).expect("tmp").count() == 0).await;
}

#[tokio::test]
async fn bucket_rules() {
    let (_dir, d) = drive().await;
    assert!(matches!(d.make_bucket("b", vec![1]).await, Err(DriveError::BucketExists)));
    d.commit_version(
        "b",
        "k",
        version(DataLocation::Inline(Uuid::new_v4()), 1),
        Some(Bytes::from_static(b"x")),
        Uuid::new_v4(),
    )
    .await
    .expect("put");
    assert!(matches!(d.delete_bucket("b").await, Err(DriveError::BucketNotEmpty)));
    assert!(matches!(
        d.commit_version("nope", "k", version(DataLocation::Inline(Uuid::new_v4()), 1), None, Uuid::new_v4())
            .await,
        Err(DriveError::BucketNotFound)
    ));
    d.make_bucket("b2", vec![1]).await.expect("b2");
    d.delete_bucket("b2").await.expect("delete empty");
    assert!(matches!(d.delete_bucket("b2").await, Err(DriveError::BucketNotFound)));
    // A bucket whose name prefixes another is not made non-empty by the other's objects.
    d.make_bucket("b-longer", vec![1]).await.expect("b-longer");
    d.delete_bucket("b-longer").await.expect("empty although b has keys");
}

/// The model of a delimiter listing: roll up at the first delimiter after the prefix.
fn model(keys: &BTreeSet<String>, q: &ListQuery) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in keys.iter().filter(|k| k.starts_with(&q.prefix)) {
        let name = match q.delimiter.as_deref().and_then(|d| k[q.prefix.len()..].find(d).map(|p| (p, d))) {
            Some((p, d)) => k[..q.prefix.len() + p + d.len()].to_owned(),
            None => k.clone(),
        };
        if name.as_str() > q.start_after.as_str() && out.last() != Some(&name) {
            out.push(name);
        }
    }
    out.truncate(q.limit);
    out
}

#[tokio::test]
async fn listing_matches_a_model() {
    let (_dir, d) = drive().await;
    let mut keys = BTreeSet::new();
    let parts = ["a", "b/", "b/c", "é", "/", "x%", "a/b/", "zz"];
    let mut rng = 12345u64;
    for _ in 0..300 {
        let mut k = String::new();
        for _ in 0..1 + rng % 4 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            k.push_str(parts[(rng >> 33) as usize % parts.len()]);
        }
        keys.insert(k);
    }
    for k in &keys {
        d.commit_version(
            "b",
            k,
            version(DataLocation::Inline(Uuid::new_v4()), 1),
            Some(Bytes::from_static(b"x")),
            Uuid::new_v4(),
        )
        .await
        .expect("put");
    }
    let mut checked = BTreeMap::new();
    for prefix in ["", "a", "b/", "/", "é"] {
        for delimiter in [None, Some("/"), Some("b/"), Some("é")] {
            for start_after in ["", "a", "b/c", "zzzz", "b/"] {
                for limit in [1, 3, 1000] {
                    let q = ListQuery {
                        prefix: prefix.into(),
                        start_after: start_after.into(),
                        delimiter: delimiter.map(String::from),
                        limit,
                        ..Default::default()
                    };
                    let got: Vec<String> = d
                        .list("b", q.clone())
                        .await
                        .expect("list")
                        .iter()
                        .map(|e| e.name().to_owned())
                        .collect();
                    assert_eq!(got, model(&keys, &q), "{q:?}");
                    checked.insert(format!("{q:?}"), got.len());
                }
            }
        }
    }
    assert!(checked.values().any(|n| *n > 10));
    let entries = d
        .list("b", ListQuery { delimiter: Some("/".into()), limit: 1000, ..Default::default() })
        .await
        .expect("list");
    assert!(entries.iter().any(|e| matches!(e, ListEntry::Prefix(p) if p == "/")));
}

#[tokio::test]
async fn undo_restores_what_a_failed_write_replaced() {
    let (_dir, d) = drive().await;
    let old = Uuid::new_v4();
    d.commit_version(
        "b",
        "k",
        version(DataLocation::Inline(old), 1),
        Some(Bytes::from_static(b"o")),
        Uuid::new_v4(),
    )
    .await
    .expect("first");
    let new = Uuid::new_v4();
    let mut v = version(DataLocation::Inline(new), 1);
    v.mod_time = 2;
    let op = Uuid::new_v4();
    d.commit_version("b", "k", v, Some(Bytes::from_static(b"n")), op).await.expect("second");
    d.finish_op(op, false).await;
    let (record, inline) = d.read_record("b", "k", true).await.expect("read");
    assert_eq!(record.versions.len(), 1);
    assert_eq!(record.versions[0].data, DataLocation::Inline(old));
    assert_eq!(inline.as_deref(), Some(&b"o"[..]));
    assert!(matches!(d.read_inline(new).await, Err(DriveError::NotFound)));
    // Undoing a delete brings the version back; undoing a first write removes the record.
    let op = Uuid::new_v4();
    d.delete_version("b", "k", None, op).await.expect("delete");
    d.finish_op(op, false).await;
    assert!(d.read_record("b", "k", false).await.is_ok());
    let op = Uuid::new_v4();
    d.commit_version(
        "b",
        "fresh",
        version(DataLocation::Inline(Uuid::new_v4()), 1),
        Some(Bytes::from_static(b"f")),
        op,
    )
    .await
    .expect("fresh");
    d.finish_op(op, false).await;
    assert!(matches!(d.read_record("b", "fresh", false).await, Err(DriveError::NotFound)));
}

#[tokio::test]
async fn temp_files_are_swept_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let d = LocalDrive::open(dir.path()).expect("open");
        d.write_format(b"{}".to_vec()).await.expect("format");
        // A writer dropped unfinished removes its own file...
        let mut w = d.create_shard_file(Uuid::new_v4()).await.expect("create");
        w.write_frame([0; 32], Bytes::from_static(b"never committed")).await.expect("write");
        drop(w);
        let tmp = dir.path().join(".strata.sys/tmp");
        wait_until(|| std::fs::read_dir(&tmp).expect("tmp").count() == 0).await;
    }
    // ...what a crash leaves behind is swept at the next open.
    let tmp = dir.path().join(".strata.sys/tmp");
    std::fs::write(tmp.join(Uuid::new_v4().simple().to_string()), b"a crash left this").expect("write");
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 1);
    let _again = LocalDrive::open(dir.path()).expect("reopen");
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 0);
}

#[tokio::test]
async fn undoing_a_metadata_update_keeps_the_data() {
    let (_dir, d) = drive().await;
    let id = Uuid::new_v4();
    let op = Uuid::new_v4();
    d.commit_version("b", "k", version(DataLocation::Inline(id), 1), Some(Bytes::from_static(b"d")), op)
        .await
        .expect("put");
    d.finish_op(op, true).await;
    let mut tagged = version(DataLocation::Inline(id), 1);
    tagged.tags.insert("t".into(), "1".into());
    for keep in [false, true] {
        let op = Uuid::new_v4();
        d.update_version("b", "k", tagged.clone(), op).await.expect("update");
        d.finish_op(op, keep).await;
        let (record, inline) = d.read_record("b", "k", true).await.expect("read");
        assert_eq!(inline.as_deref(), Some(&b"d"[..]), "data survives (keep = {keep})");
        assert_eq!(record.versions.len(), 1);
        assert_eq!(record.versions[0].tags.len(), usize::from(keep));
    }
}

/// Polls `cond` for up to 5 s (a removal runs on the blocking pool).
async fn wait_until(cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 5 s");
}

/// A wiped drive: writes refuse at once (nothing acknowledged on a drive that is gone), and a
/// refused write makes record reads check again too; left alone, record reads (one `stat` per
/// interval) notice within a quarter second.
#[tokio::test]
async fn a_wiped_drive_refuses_writes_at_once_and_reads_soon_after() {
    let (dir, d) = drive().await;
    let id = Uuid::new_v4();
    let v = version(DataLocation::Inline(id), 3);
    d.commit_version("b", "k", v.clone(), Some(Bytes::from_static(b"abc")), Uuid::new_v4())
        .await
        .expect("commit");
    d.read_record("b", "k", true).await.expect("read while present");
    for entry in std::fs::read_dir(dir.path()).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("wipe");
        } else {
            std::fs::remove_file(&path).expect("wipe");
        }
    }
    let write = d.commit_version("b", "k2", v, Some(Bytes::from_static(b"abc")), Uuid::new_v4()).await;
    assert!(matches!(write, Err(DriveError::Unreachable(_))), "{write:?}");
    let read = d.read_record("b", "k", true).await;
    assert!(matches!(read, Err(DriveError::Unreachable(_))), "{read:?}");
}

#[tokio::test]
async fn record_reads_alone_notice_a_wiped_drive_within_the_recheck_interval() {
    let (dir, d) = drive().await;
    d.commit_version(
        "b",
        "k",
        version(DataLocation::Inline(Uuid::new_v4()), 3),
        Some(Bytes::from_static(b"abc")),
        Uuid::new_v4(),
    )
    .await
    .expect("commit");
    d.read_record("b", "k", true).await.expect("read while present");
    let wiped = std::time::Instant::now();
    std::fs::remove_dir_all(dir.path().join(".strata.sys")).expect("wipe");
    loop {
        match d.read_record("b", "k", true).await {
            Err(DriveError::Unreachable(_)) => break,
            other => assert!(wiped.elapsed() < std::time::Duration::from_secs(2), "still read: {other:?}"),
        }
        tokio::task::yield_now().await;
    }
    assert!(wiped.elapsed() < std::time::Duration::from_secs(2));
}

/// Wiped while the server ran, a drive may keep a state file written mid-wipe: still blank, so
/// it is formatted again in its slot; a drive that keeps its format record or index is not.
#[tokio::test]
async fn a_wipe_that_left_a_state_file_is_still_blank() {
    let (dir, d) = drive().await;
    d.write_state("heal", b"{}".to_vec()).await.expect("state");
    assert!(!d.root_is_blank());
    let sys = dir.path().join(".strata.sys");
    let keep = |name: &str| name.starts_with("state-") || name == "format.json" || name == "index.redb";
    for entry in std::fs::read_dir(&sys).expect("list") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("wipe");
        } else if !keep(&name) {
            std::fs::remove_file(&path).expect("wipe");
        }
    }
    assert!(!d.root_is_blank(), "format record and index still there");
    std::fs::remove_file(sys.join("index.redb")).expect("wipe index");
    assert!(!d.root_is_blank(), "format record still there");
    std::fs::remove_file(sys.join("format.json")).expect("wipe format");
    std::fs::create_dir(sys.join("tmp")).expect("empty tmp");
    assert!(d.root_is_blank(), "only a state file and an empty folder left");
    std::fs::write(sys.join("tmp").join("x"), b"x").expect("a temp file");
    assert!(!d.root_is_blank(), "a folder with something in it");
    std::fs::remove_file(sys.join("tmp").join("x")).expect("rm");
    d.reinitialize(b"{\"again\":1}").expect("formatted again");
    assert_eq!(d.read_format().await.expect("read"), Some(b"{\"again\":1}".to_vec()));
}

/// A new version must be stamped after every other version the drive holds: one that is not is
/// refused with the newest stamp, nothing changes, and its shard file waits in temp; stamped
/// again, it commits.
#[tokio::test]
async fn a_new_version_not_newer_than_the_drive_holds_is_refused() {
    use strata_drive::DriveOps;
    let (dir, d) = drive().await;
    let tmp = dir.path().join(".strata.sys/tmp");
    let (old, new) = (Uuid::new_v4(), Uuid::new_v4());
    let v = |data, at| ObjectVersion { mod_time: at, version_id: Some(Uuid::new_v4()), ..version(data, 100) };
    shard_file(&d, old).await;
    let op = Uuid::new_v4();
    d.commit_new_version("b", "k", v(DataLocation::File(old), 100), None, op).await.expect("first");
    d.finish_op(op, true).await;

    shard_file(&d, new).await;
    let op = Uuid::new_v4();
    let late = v(DataLocation::File(new), 100);
    let refused = d.commit_new_version("b", "k", late.clone(), None, op).await;
    assert!(matches!(refused, Err(DriveError::NotNewest { newest: 100 })), "{refused:?}");
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 1, "the refused data waits in temp");
    let (record, _) = d.read_record("b", "k", false).await.expect("read");
    assert_eq!(record.versions[0].data, DataLocation::File(old));
    let again = ObjectVersion { mod_time: 101, ..late };
    d.commit_new_version("b", "k", again.clone(), None, op).await.expect("stamped again");
    d.finish_op(op, true).await;
    let (record, _) = d.read_record("b", "k", false).await.expect("read");
    assert_eq!(record.versions[0], again);
    assert!(d.open_shard_file(new).await.is_ok() && d.open_shard_file(old).await.is_ok());
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 0);
}

/// A version stamped again within its operation (a second change of the same operation on the
/// same object): kept, the operation frees what its first change displaced and not its own data;
/// undone, it restores that and frees its own.
#[tokio::test]
async fn a_version_stamped_again_ends_as_one_change() {
    use strata_drive::DriveOps;
    let (_dir, d) = drive().await;
    let v = |data, at| ObjectVersion { mod_time: at, ..version(data, 100) };
    for keep in [true, false] {
        let key = format!("k-{keep}");
        let (old, new) = (Uuid::new_v4(), Uuid::new_v4());
        shard_file(&d, old).await;
        let op = Uuid::new_v4();
        d.commit_new_version("b", &key, v(DataLocation::File(old), 100), None, op).await.expect("first");
        d.finish_op(op, true).await;

        shard_file(&d, new).await;
        let op = Uuid::new_v4();
        d.commit_new_version("b", &key, v(DataLocation::File(new), 150), None, op).await.expect("second");
        d.update_version("b", &key, v(DataLocation::File(new), 160), op).await.expect("stamped again");
        d.finish_op(op, keep).await;
        let (record, _) = d.read_record("b", &key, false).await.expect("read");
        let head = &record.versions[0];
        let (current, gone) = if keep { (new, old) } else { (old, new) };
        assert_eq!(head.data, DataLocation::File(current), "keep={keep}");
        assert_eq!(head.mod_time, if keep { 160 } else { 100 });
        assert!(d.open_shard_file(current).await.is_ok(), "keep={keep}: the current version's data is there");
        assert!(matches!(d.open_shard_file(gone).await, Err(DriveError::NotFound)), "keep={keep}");
    }
}

async fn shard_file(d: &LocalDrive, id: Uuid) {
    let mut w = d.create_shard_file(id).await.expect("create");
    w.write_frame([1; 32], Bytes::from(vec![7u8; 100])).await.expect("write");
    w.finish().await.expect("finish");
}

#[tokio::test]
async fn a_record_is_settled_only_once_its_change_is_kept_or_undone() {
    let (_dir, d) = drive().await;
    let settled = |s: &strata_drive::Settled| (s.settled, s.record.as_ref().map(|(r, _)| r.versions[0].data));
    // No record: settled, none.
    assert_eq!(settled(&d.read_settled("b", "k", false).await.expect("read")), (true, None));
    let first = Uuid::new_v4();
    let op = Uuid::new_v4();
    d.commit_version("b", "k", version(DataLocation::Inline(first), 1), Some(Bytes::from_static(b"o")), op)
        .await
        .expect("first");
    // Applied, its operation not ended: the record shows it, unsettled.
    let read = d.read_settled("b", "k", true).await.expect("read");
    assert_eq!(settled(&read), (false, Some(DataLocation::Inline(first))));
    assert_eq!(read.record.and_then(|(_, inline)| inline).as_deref(), Some(&b"o"[..]));
    d.finish_op(op, true).await;
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (true, Some(DataLocation::Inline(first)))
    );
    // A second write undone: unsettled until the undo, then the first version, settled.
    let second = Uuid::new_v4();
    let mut v = version(DataLocation::Inline(second), 1);
    v.mod_time = 2;
    let op = Uuid::new_v4();
    d.commit_version("b", "k", v, Some(Bytes::from_static(b"n")), op).await.expect("second");
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (false, Some(DataLocation::Inline(second)))
    );
    // Another object's pending change does not unsettle this one.
    let other = Uuid::new_v4();
    d.commit_version("b", "other", version(DataLocation::Inline(Uuid::new_v4()), 1), None, other)
        .await
        .expect("other");
    d.finish_op(op, false).await;
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (true, Some(DataLocation::Inline(first)))
    );
    assert!(!d.read_settled("b", "other", false).await.expect("read").settled);
    // A delete waiting for its end unsettles the object though its record is gone.
    d.finish_op(other, true).await;
    let op = Uuid::new_v4();
    d.delete_version("b", "other", None, op).await.expect("delete");
    assert_eq!(settled(&d.read_settled("b", "other", false).await.expect("read")), (false, None));
    d.finish_op(op, true).await;
    assert_eq!(settled(&d.read_settled("b", "other", false).await.expect("read")), (true, None));
    // A change refused by the index leaves nothing unsettled behind.
    let mut stale = version(DataLocation::Inline(Uuid::new_v4()), 1);
    stale.mod_time = 0;
    stale.version_id = Some(Uuid::new_v4());
    let refused = d.commit_new_version("b", "k", stale, None, Uuid::new_v4()).await;
    assert!(matches!(refused, Err(DriveError::NotNewest { .. })), "{refused:?}");
    assert!(d.read_settled("b", "k", false).await.expect("read").settled);
}

/// A change whose operation never ends (its writer died) is settled by the drive after
/// `pending_op_max`, as a restart would settle it: kept. A younger one is not.
#[tokio::test]
async fn a_change_whose_operation_never_ends_is_settled_in_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let max = std::time::Duration::from_millis(300);
    let options = strata_drive::OpenOptions { pending_op_max: Some(max), ..Default::default() };
    let d = LocalDrive::open_with(dir.path(), options).expect("open");
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    let settled = |s: &strata_drive::Settled| (s.settled, s.record.as_ref().map(|(r, _)| r.versions[0].data));
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    let put = |key: &'static str, data: Uuid, mod_time: u64, op: Uuid| {
        let mut v = version(DataLocation::Inline(data), 1);
        v.mod_time = mod_time;
        d.commit_version("b", key, v, Some(Bytes::from_static(b"o")), op)
    };
    let ended = Uuid::new_v4();
    put("k", first, 1, ended).await.expect("first");
    d.finish_op(ended, true).await;
    let dead = Uuid::new_v4();
    put("k", second, 2, dead).await.expect("second, its writer then gone");
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (false, Some(DataLocation::Inline(second)))
    );
    tokio::time::sleep(max / 2).await;
    put("young", first, 1, Uuid::new_v4()).await.expect("young");
    tokio::time::sleep(max / 2 + max / 5).await;
    // Past the limit: settled, the change kept. The younger change still waits for its end.
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (true, Some(DataLocation::Inline(second)))
    );
    assert!(!d.read_settled("b", "young", false).await.expect("read").settled);
    assert_eq!(d.commit_totals().map(|t| t.abandoned_ops), Some(1));
    // An end that comes after all is one for an operation the drive no longer holds.
    d.finish_op(dead, false).await;
    assert_eq!(
        settled(&d.read_settled("b", "k", false).await.expect("read")),
        (true, Some(DataLocation::Inline(second)))
    );
}

/// The keys of bucket `b`'s objects (at most ten).
async fn object_keys(d: &LocalDrive) -> Vec<String> {
    let listed = d.list("b", ListQuery { limit: 10, ..Default::default() }).await.expect("list");
    listed
        .into_iter()
        .filter_map(|e| match e {
            ListEntry::Object { key, .. } => Some(key),
            _ => None,
        })
        .collect()
}

/// The commit log's files in a drive's system folder on `fs`, with their bytes.
fn log_files(fs: &strata_drive::sim::SimFs, root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let sys = root.join(".strata.sys");
    fs.contents()
        .into_iter()
        .filter(|(path, _)| {
            path.parent() == Some(sys.as_path())
                && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index-log."))
        })
        .filter_map(|(path, bytes)| Some((path, bytes?)))
        .collect()
}

#[tokio::test]
async fn batches_are_durable_through_the_log_and_reach_the_index_at_checkpoints() {
    use strata_drive::sim::SimFs;
    use strata_drive::{Checkpoints, OpenOptions};
    let root = std::path::Path::new("/d0");
    let index = root.join(".strata.sys/index.redb");
    // No checkpoint but at close.
    let never = Checkpoints { interval: std::time::Duration::from_secs(3600), ..Checkpoints::default() };
    let options = OpenOptions { index_checkpoints: never, ..OpenOptions::default() };
    let keys = |d: Arc<LocalDrive>| async move {
        let listed = d.list("b", ListQuery { limit: 1000, ..Default::default() }).await.expect("list");
        listed.len()
    };

    let fs = SimFs::new();
    let d = Arc::new(LocalDrive::open_on(Arc::new(fs.clone()), root, options).expect("open"));
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    let index_before = fs.contents().get(&index).cloned();
    let (syncs, logged) = (fs.syncs(), log_files(&fs, root)[0].1.len());
    for i in 0..20 {
        let v = version(DataLocation::Inline(Uuid::new_v4()), 3);
        let bytes = Some(Bytes::from_static(b"abc"));
        d.commit_version("b", &format!("k{i:02}"), v, bytes, Uuid::new_v4()).await.expect("commit");
    }
    assert_eq!(fs.syncs() - syncs, 20, "one sync per batch, of the log");
    assert_eq!(fs.contents().get(&index).cloned(), index_before, "the index's file waits for a checkpoint");
    let files = log_files(&fs, root);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].1.len() > logged, "the batches are in the log");

    // A power cut: only the log holds the 20 changes, and the next start applies it.
    let booted = fs.power_cut().boot(None);
    drop(d);
    let d =
        Arc::new(LocalDrive::open_on(Arc::new(booted.clone()), root, options).expect("open after the cut"));
    assert_eq!(keys(d.clone()).await, 20, "every answered change survives the cut");
    let files = log_files(&booted, root);
    assert_eq!(files.len(), 1, "the applied log is removed and a new one begun: {files:?}");
    assert!(files[0].1.is_empty());

    // Closing checkpoints: the index then holds everything, and no log is left.
    drop(d);
    let booted = booted.power_cut().boot(None);
    assert!(log_files(&booted, root).is_empty());
    let d = Arc::new(LocalDrive::open_on(Arc::new(booted), root, options).expect("open after the close"));
    assert_eq!(keys(d).await, 20);
}

/// After a checkpoint the log is written over from the start of its file. The frames of the
/// last round are left past the new ones, and holding changes the index already has, they must
/// never be applied again: here a round of PUTs, a round deleting them and putting one more, a
/// last round deleting that one and putting another. After any power cut only the last key is
/// there.
#[tokio::test]
async fn a_log_written_over_after_a_checkpoint_never_brings_back_its_old_frames() {
    use strata_drive::sim::SimFs;
    use strata_drive::{Checkpoints, OpenOptions};
    let root = std::path::Path::new("/d0");
    let every_four =
        Checkpoints { interval: std::time::Duration::from_secs(3600), batches: 4, ..Checkpoints::default() };
    let options = OpenOptions { index_checkpoints: every_four, ..OpenOptions::default() };
    let fs = SimFs::new();
    let d = LocalDrive::open_on(Arc::new(fs.clone()), root, options).expect("open");
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    // The bucket took one batch: three PUTs end the first round.
    for key in ["k1", "k2", "k3"] {
        let v = version(DataLocation::Inline(Uuid::new_v4()), 3);
        d.commit_version("b", key, v, Some(Bytes::from_static(b"abc")), Uuid::new_v4()).await.expect("put");
    }
    let (first_file, first_round) = log_files(&fs, root).remove(0);
    let delete = |key: &'static str| {
        let d = &d;
        async move {
            let op = Uuid::new_v4();
            d.delete_version("b", key, None, op).await.expect("delete");
            d.finish_op(op, true).await;
        }
    };
    let put = |key: &'static str| {
        let v = version(DataLocation::Inline(Uuid::new_v4()), 3);
        d.commit_version("b", key, v, Some(Bytes::from_static(b"abc")), Uuid::new_v4())
    };
    for key in ["k1", "k2", "k3"] {
        delete(key).await;
    }
    put("k4").await.expect("put k4");
    delete("k4").await;
    put("z").await.expect("put z");
    let files = log_files(&fs, root);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].0, first_file, "the same file, written over");
    assert!(files[0].1.len() >= first_round.len(), "older frames are left past the new one");
    assert_ne!(files[0].1[..40], first_round[..40], "the new frame is at the start");

    let cut = fs.power_cut();
    drop(d);
    for seed in [None, Some(1), Some(2), Some(3), Some(4)] {
        let booted = cut.boot(seed);
        let d = LocalDrive::open_on(Arc::new(booted), root, options).expect("open after the cut");
        assert_eq!(object_keys(&d).await, ["z"], "after the cut with seed {seed:?}");
    }
}

/// A full disk refuses a batch's log write: that batch fails as the disk being full and leaves
/// nothing behind; the drive goes on, and after a power cut the next batch, logged in a new file,
/// is applied (the failed one's torn frame ends the old file).
#[tokio::test]
async fn a_full_disk_fails_a_batch_and_the_log_goes_on() {
    use strata_drive::faulty_fs::{FaultyFs, FsFault, FsOp};
    use strata_drive::sim::SimFs;
    use strata_drive::{Checkpoints, OpenOptions};
    let root = std::path::Path::new("/d0");
    let never = Checkpoints { interval: std::time::Duration::from_secs(3600), ..Checkpoints::default() };
    let options = OpenOptions { index_checkpoints: never, ..OpenOptions::default() };
    let sim = SimFs::new();
    let faulty = FaultyFs::over(Arc::new(sim.clone()));
    let d = LocalDrive::open_on(Arc::new(faulty.clone()), root, options).expect("open");
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    let commit = |key: &'static str| {
        let v = version(DataLocation::Inline(Uuid::new_v4()), 3);
        d.commit_version("b", key, v, Some(Bytes::from_static(b"abc")), Uuid::new_v4())
    };
    faulty.fail_times(FsOp::Append, FsFault::NoSpace, 1);
    let refused = commit("full").await;
    let full = matches!(&refused, Err(DriveError::Io(e)) if e.kind() == std::io::ErrorKind::StorageFull);
    assert!(full, "the drive answers that it is full: {refused:?}");
    assert!(d.writes_stopped().is_none(), "a full disk does not stop the drive");
    commit("after").await.expect("the next batch commits");
    assert_eq!(log_files(&sim, root).len(), 2, "the log went on in a new file");

    let booted = sim.power_cut().boot(None);
    drop(d);
    let d = LocalDrive::open_on(Arc::new(booted), root, options).expect("open after the cut");
    assert_eq!(object_keys(&d).await, ["after"]);
}
