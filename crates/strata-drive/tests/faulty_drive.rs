//! FaultyDrive itself: rules fire on the calls they name, cuts store at most their budget,
//! hangs last until cleared, and a chaos seed replays the same decisions.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_drive::faulty::{Chaos, Fault, Op, Rule};
use strata_drive::DriveOps;
use strata_drive::{Drive, DriveError, FaultyDrive, LocalDrive};
use strata_erasure::bitrot;
use strata_meta::BucketRecord;
use uuid::Uuid;

async fn drive() -> (tempfile::TempDir, Arc<LocalDrive>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = LocalDrive::open(dir.path()).expect("open");
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    (dir, Arc::new(d))
}

#[tokio::test]
async fn rules_fire_on_the_calls_they_name() {
    let (_dir, local) = drive().await;
    let d = FaultyDrive::new(local);
    d.add_rule(Rule::new(Op::StatBucket, Fault::Fail).after(1).times(2));
    let outcomes: Vec<bool> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(d.stat_bucket("b").await.is_ok());
        }
        v
    };
    assert_eq!(outcomes, [true, false, false, true, true]);
    assert!(d.list_buckets().await.is_ok(), "other operations are untouched");
    assert_eq!(d.faults_injected(), 2);
    d.add_rule(Rule::every(Fault::Fail));
    assert!(d.list_buckets().await.is_err());
    d.clear();
    assert!(d.list_buckets().await.is_ok());
}

#[tokio::test]
async fn a_cut_write_stores_at_most_its_budget() {
    let (dir, local) = drive().await;
    let d = FaultyDrive::new(local);
    let budget = 2 * (bitrot::HASH_SIZE as u64 + 1000) + 100;
    d.add_rule(Rule::new(Op::WriteFrame, Fault::CutAfter(budget)));
    let id = Uuid::new_v4();
    let mut w = d.create_shard_file(id).await.expect("create");
    let shard = Bytes::from(vec![7u8; 1000]);
    w.write_frame(bitrot::hash(&shard), shard.clone()).await.expect("frame 1 fits");
    w.write_frame(bitrot::hash(&shard), shard.clone()).await.expect("frame 2 fits");
    assert!(w.write_frame(bitrot::hash(&shard), shard.clone()).await.is_err(), "frame 3 crosses the cut");
    assert!(w.write_frame(bitrot::hash(&shard), shard).await.is_err(), "and the writer stays failed");
    // Checked while the writer lives: dropped unfinished, it removes its temp file. What the
    // file holds may still be in its write stage (shard files bypass the page cache a stage at
    // a time), so the disk holds at most the budget.
    let tmp = dir.path().join(".strata.sys/tmp").join(id.simple().to_string());
    let len = std::fs::metadata(&tmp).expect("temp file").len();
    assert!(len <= budget, "{len} bytes stored past a budget of {budget}");
    drop(w);
}

#[tokio::test]
async fn a_hang_lasts_until_cleared() {
    let (_dir, local) = drive().await;
    let d = Arc::new(FaultyDrive::new(local));
    d.add_rule(Rule::new(Op::StatBucket, Fault::Hang));
    let hung = tokio::spawn({
        let d = d.clone();
        async move { d.stat_bucket("b").await.map(drop) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!hung.is_finished(), "a hung call must not return");
    d.clear();
    let answer = tokio::time::timeout(Duration::from_secs(5), hung).await.expect("released").expect("task");
    assert!(answer.is_ok(), "a released call runs");
}

#[tokio::test]
async fn a_chaos_seed_replays_the_same_faults() {
    let (_dir, local) = drive().await;
    let run = |seed: u64| {
        let local = local.clone();
        async move {
            let chaos = Chaos {
                seed,
                ops: vec![Op::StatBucket],
                fail: 0.3,
                delay: 0.2,
                delay_max: Duration::from_millis(2),
                hang: 0.0,
            };
            let d = FaultyDrive::with_chaos(local, chaos);
            let mut outcomes = Vec::new();
            for _ in 0..64 {
                outcomes.push(match d.stat_bucket("b").await {
                    Ok(_) => 'o',
                    Err(DriveError::Io(_)) => 'f',
                    Err(e) => panic!("unexpected {e}"),
                });
            }
            (outcomes, d.faults_injected())
        }
    };
    let (a, fa) = run(7).await;
    let (b, fb) = run(7).await;
    let (c, _) = run(8).await;
    assert_eq!(a, b, "same seed, same faults");
    assert_eq!(fa, fb);
    assert_ne!(a, c, "another seed, other faults");
    let failed = a.iter().filter(|&&o| o == 'f').count();
    assert!((8..=32).contains(&failed), "about 30% fail: {failed}");
}
