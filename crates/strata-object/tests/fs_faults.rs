//! The object layer over drives whose filesystem fails as real ones do (`FaultyFs` under real
//! `LocalDrive`s): a full device (`ENOSPC`), a file system remounted read-only (`EROFS`), and
//! syncs that fail (`EIO`) on a shard file, a folder, and the metadata index's file inside its
//! commit thread. What the client sees, and that nothing acknowledged is lost.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata_drive::faulty::{Fault, Rule};
use strata_drive::faulty_fs::{FsFault, FsOp};
use strata_object::{ObjectError, PutOptions};

use common::{body, get, pattern, Rig};

/// Five drives (3+2): a write needs three, and so does a read.
const DRIVES: usize = 5;

async fn put(rig: &Rig, key: &str, data: &Bytes) -> Result<(), ObjectError> {
    rig.layer.put_object("b", key, &mut body(data), PutOptions::default()).await.map(drop)
}

/// Reads `key` with drives `gone` failing every operation: it must come from the others.
async fn read_without(rig: &Rig, key: &str, gone: &[usize]) -> Option<Bytes> {
    for &i in gone {
        rig.faulty[i].add_rule(Rule::every(Fault::Fail));
    }
    let got = get(&rig.layer, key).await;
    rig.clear_faults();
    got
}

/// Waits (bounded) until no temp file is left on any drive.
async fn no_temp_files(rig: &Rig, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while rig.temp_files() > 0 {
        assert!(Instant::now() < deadline, "{what}: {} temp files left", rig.temp_files());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A full device: with room on a write quorum the PUT succeeds; without, it fails with
/// `StorageFull` (S3's 507, not a retryable 503 "too few drives"), the old object stays whole,
/// and no temp file is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_drive_is_named_and_the_old_object_stays() {
    let rig = Rig::on_faulty_fs(DRIVES).await;
    let old = pattern((1 << 20) + 11, 1);
    put(&rig, "k", &old).await.expect("put old");
    for full in [2, 3] {
        for fs in &rig.fs[..full] {
            fs.fail(FsOp::Append, FsFault::NoSpace);
        }
        let new = pattern((1 << 20) + 13, 2 + full as u64);
        let outcome = put(&rig, "k", &new).await;
        for fs in &rig.fs {
            fs.clear();
        }
        if full == 2 {
            outcome.expect("room on three drives is enough");
            assert_eq!(get(&rig.layer, "k").await, Some(new));
            put(&rig, "k", &old).await.expect("put old again");
        } else {
            assert!(
                matches!(outcome, Err(ObjectError::StorageFull { needed: 3, full: 3 })),
                "three full drives: {outcome:?}"
            );
            assert_eq!(get(&rig.layer, "k").await, Some(old.clone()), "the old object is intact");
        }
        no_temp_files(&rig, &format!("{full} full drives")).await;
    }
}

/// A file system remounted read-only: creating and renaming files fail with `EROFS`. Beyond
/// parity the PUT fails and the old object is intact; reads go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_system_fails_writes_cleanly() {
    let rig = Rig::on_faulty_fs(DRIVES).await;
    let old = pattern((1 << 20) + 5, 3);
    put(&rig, "k", &old).await.expect("put old");
    for fs in &rig.fs[..3] {
        fs.fail(FsOp::Create, FsFault::ReadOnly);
        fs.fail(FsOp::Rename, FsFault::ReadOnly);
    }
    let outcome = put(&rig, "k", &pattern((1 << 20) + 7, 4)).await;
    assert!(matches!(outcome, Err(ObjectError::WriteQuorum { .. })), "three read-only drives: {outcome:?}");
    assert_eq!(get(&rig.layer, "k").await, Some(old.clone()), "reads go on, the old object intact");
    for fs in &rig.fs {
        fs.clear();
    }
    no_temp_files(&rig, "read-only").await;
}

/// A sync that fails (of a shard file, or of the folder a shard file was renamed into): the
/// write meets its quorum on the other drives, and the drive takes no change from then on,
/// though its next syncs would succeed, until a check of it passes; then writes resume and a
/// heal gives it what it missed. Every acknowledged object reads back from the other drives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_stops_the_drives_writes_until_it_is_checked() {
    for op in [FsOp::SyncData, FsOp::SyncDir] {
        let rig = Rig::on_faulty_fs(DRIVES).await;
        let first = pattern((1 << 20) + 3, 5);
        rig.fs[0].fail_times(op, FsFault::Io, 1);
        put(&rig, "first", &first)
            .await
            .unwrap_or_else(|e| panic!("{op:?}: the write meets its quorum: {e}"));
        assert_eq!(rig.fs[0].faults_injected(), 1, "{op:?}: the fault fired");
        let why = rig.local[0].writes_stopped().unwrap_or_else(|| panic!("{op:?}: writes did not stop"));
        assert!(why.contains("failed"), "{op:?}: {why}");
        assert!(
            rig.local[0].read_record("b", "first", false).await.is_err(),
            "{op:?}: the failed drive has no record"
        );

        // The fault is gone, but the drive is not trusted with a write before a check.
        let second = pattern((1 << 20) + 9, 6);
        put(&rig, "second", &second).await.expect("the next write, without the drive");
        assert!(
            rig.local[0].read_record("b", "second", false).await.is_err(),
            "{op:?}: a stopped drive took a write"
        );
        for key in ["first", "second"] {
            let want = if key == "first" { &first } else { &second };
            assert_eq!(
                read_without(&rig, key, &[1]).await.as_ref(),
                Some(want),
                "{op:?}: {key} from the rest"
            );
        }

        assert_eq!(rig.local[0].check_writes(), Some(true), "{op:?}: the check passes");
        assert!(rig.local[0].writes_stopped().is_none());
        for key in ["first", "second"] {
            rig.layer.heal_object("b", key, false).await.expect("heal");
            let want = if key == "first" { &first } else { &second };
            // Drive 0 now holds its shard: read with two others gone.
            assert_eq!(
                read_without(&rig, key, &[1, 2]).await.as_ref(),
                Some(want),
                "{op:?}: {key} after the heal"
            );
        }
        put(&rig, "third", &pattern(40_000, 7)).await.expect("writes resume");
        assert!(
            rig.local[0].read_record("b", "third", false).await.is_ok(),
            "{op:?}: the drive takes writes again"
        );
        assert_eq!(rig.local[0].check_writes(), None, "{op:?}: nothing to check any more");
    }
}

/// A sync of the metadata index's file that fails inside its commit thread: that commit's
/// changes fail, the write meets its quorum elsewhere, and the drive takes no write again
/// until the server restarts (the index is not trusted after a failed commit); a check does not
/// bring it back. What the drive held before stays readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_index_sync_stops_the_drives_writes_for_good() {
    let rig = Rig::on_faulty_fs(DRIVES).await;
    let before = pattern(30_000, 8);
    put(&rig, "before", &before).await.expect("put");
    rig.fs[0].fail_times(FsOp::IndexSync, FsFault::Io, 1);
    let small = pattern(20_000, 9);
    put(&rig, "k", &small).await.expect("the write meets its quorum");
    assert_eq!(rig.fs[0].faults_injected(), 1, "the index sync failed");
    let why = rig.local[0].writes_stopped().expect("writes stopped");
    assert!(why.contains("metadata index"), "{why}");
    assert_eq!(rig.local[0].check_writes(), Some(false), "a check does not bring the index back");
    put(&rig, "later", &pattern(10_000, 10)).await.expect("writes go on without the drive");
    assert_eq!(read_without(&rig, "k", &[1]).await, Some(small), "from the three other drives");
    assert_eq!(get(&rig.layer, "before").await, Some(before));
}
