//! The object layer over drives that fail, hang, or cut writes short (`FaultyDrive` around real
//! `LocalDrive`s): what reaches the write quorum, what a hung drive costs, and every write path
//! with faults on up to parity drives (succeeds) and beyond (fails, old data intact).

mod common;

use std::time::{Duration, Instant};

use strata_drive::faulty::{Fault, Op, Rule};
use strata_drive::Drive;
use strata_object::{ObjectError, PutOptions};

use common::{body, pattern, read_all, Rig};

/// A record claiming a block size of 0 (or any impossible split) is corrupt: a read answers an
/// error, never a panicked reader and a silently empty body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impossible_record_is_an_error_not_a_panic() {
    let rig = Rig::new(4).await;
    let data = pattern(300_000, 3);
    rig.layer.put_object("b", "k", &mut body(&data), PutOptions::default()).await.expect("put");
    for d in &rig.local {
        let (record, _) = d.read_record("b", "k", false).await.expect("record");
        let mut v = record.versions[0].clone();
        v.erasure.block_size = 0;
        let op = uuid::Uuid::new_v4();
        d.update_version("b", "k", v, op).await.expect("rewrite");
        d.finish_op(op, true).await;
    }
    let read = tokio::time::timeout(Duration::from_secs(10), read_all(&rig.layer, "k", 0, data.len() as u64))
        .await
        .expect("a read must not hang");
    assert!(read.is_err(), "a record with block size 0 read as {} bytes", read.map(|b| b.len()).unwrap_or(0));
}

/// A shard write cut short on one drive: the PUT meets its quorum on the others, and the cut
/// drive neither gets the truncated file committed nor a record claiming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_short_is_not_committed() {
    let rig = Rig::new(4).await;
    let old = pattern(3 << 20, 1);
    rig.layer.put_object("b", "k", &mut body(&old), PutOptions::default()).await.expect("put old");
    rig.faulty[1].add_rule(Rule::new(Op::WriteFrame, Fault::CutAfter(300_000)));
    let new = pattern((3 << 20) + 5, 2);
    rig.layer.put_object("b", "k", &mut body(&new), PutOptions::default()).await.expect("put meets quorum");
    rig.faulty[1].clear();

    let (record, _) = rig.local[1].read_record("b", "k", false).await.expect("old record stays");
    assert_eq!(record.versions[0].size, old.len() as u64, "the cut drive must keep the old version");
    for (i, d) in rig.local.iter().enumerate().filter(|(i, _)| *i != 1) {
        let (record, _) = d.read_record("b", "k", false).await.expect("record");
        assert_eq!(record.versions[0].size, new.len() as u64, "drive {i} has the new version");
    }
    assert_eq!(rig.temp_files(), 0, "the cut temp file is gone");
    // The new object reads whole even with another drive gone: three good copies exist.
    rig.faulty[2].add_rule(Rule::every(Fault::Fail));
    assert_eq!(read_all(&rig.layer, "k", 0, new.len() as u64).await.expect("get"), new);
}

/// A hung drive costs one time-out, not a stuck request: PUT and GET with one drive hanging on
/// every operation answer within the per-drive time-out, and the write counts it as failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_drive_costs_a_time_out() {
    let rig = Rig::with_time_out(4, Duration::from_millis(300)).await;
    let small = pattern(10_000, 4);
    let large = pattern((2 << 20) + 3, 5);
    rig.layer.put_object("b", "small", &mut body(&small), PutOptions::default()).await.expect("put");
    rig.layer.put_object("b", "large", &mut body(&large), PutOptions::default()).await.expect("put");
    for hung in [0, 3] {
        rig.faulty[hung].add_rule(Rule::every(Fault::Hang));
        for (key, data) in [("small", &small), ("large", &large)] {
            let started = Instant::now();
            let got = tokio::time::timeout(
                Duration::from_secs(20),
                read_all(&rig.layer, key, 0, data.len() as u64),
            )
            .await
            .expect("GET must not hang")
            .expect("GET");
            assert_eq!(&got, data);
            assert!(started.elapsed() < Duration::from_secs(10), "GET took {:?}", started.elapsed());
            let started = Instant::now();
            let mut b = body(data);
            let put = rig.layer.put_object("b", key, &mut b, PutOptions::default());
            tokio::time::timeout(Duration::from_secs(20), put)
                .await
                .expect("PUT must not hang")
                .expect("PUT");
            assert!(started.elapsed() < Duration::from_secs(10), "PUT took {:?}", started.elapsed());
        }
        rig.faulty[hung].clear();
    }
    // Beyond parity: three drives hang; the PUT fails (in time) and the old data stays.
    for d in &rig.faulty[..3] {
        d.add_rule(Rule::every(Fault::Hang));
    }
    let mut b = body(&pattern(2 << 20, 6));
    let put = rig.layer.put_object("b", "large", &mut b, PutOptions::default());
    let err = tokio::time::timeout(Duration::from_secs(20), put).await.expect("PUT must not hang");
    assert!(matches!(err, Err(ObjectError::WriteQuorum { .. })), "{err:?}");
    for d in &rig.faulty {
        d.clear();
    }
    assert_eq!(read_all(&rig.layer, "large", 0, large.len() as u64).await.expect("get"), large);
}
