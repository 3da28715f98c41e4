//! The object layer over drives that fail, hang, or cut writes short (`FaultyDrive` around real
//! `LocalDrive`s): what reaches the write quorum, what a hung drive costs, and every write path
//! with faults on up to parity drives (succeeds) and beyond (fails, old data intact).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_drive::faulty::{Fault, Op, Rule};
use strata_drive::Drive;
use strata_object::{
    CompleteOptions, CompletePart, DriveSlot, LayerOptions, ObjectError, ObjectLayer, PutOptions, StreamBody,
};
use uuid::Uuid;

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

/// A drive that answers everything but shard reads (a stalled device under a live index): a GET
/// of many blocks waits for it once, not once per block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_hung_on_reads_costs_one_time_out_per_get() {
    let time_out = Duration::from_millis(700);
    let rig = Rig::with_time_out(4, time_out).await;
    let data = pattern(8 << 20, 13);
    rig.layer.put_object("b", "k", &mut body(&data), PutOptions::default()).await.expect("put");
    let mut first_data_drive = None;
    for (i, d) in rig.local.iter().enumerate() {
        let (record, _) = d.read_record("b", "k", false).await.expect("record");
        if record.versions[0].erasure.shard_index == 0 {
            first_data_drive = Some(i);
        }
    }
    let hung = first_data_drive.expect("a drive holds shard 0");
    rig.faulty[hung].add_rule(Rule::new(Op::ReadShard, Fault::Hang));
    let started = Instant::now();
    let got = read_all(&rig.layer, "k", 0, data.len() as u64).await.expect("get");
    let took = started.elapsed();
    rig.clear_faults();
    assert!(got == data, "the GET reads whole from parity");
    // Eight blocks: a time-out per block would take 5.6 s.
    assert!(took < time_out * 4, "the GET took {took:?}");
}

/// One write path, run on `key` (its source `src` for a copy).
#[derive(Debug, Clone, Copy)]
enum WritePath {
    PutInline,
    PutFile,
    UploadPartAndComplete,
    Copy,
    Delete,
    Tags,
}

/// What `key` holds: bytes and tags (`None` = no object).
type Value = Option<(Vec<u8>, BTreeMap<String, String>)>;

async fn value(l: &ObjectLayer, key: &str) -> Value {
    let open = match l.open_object("b", key, true).await {
        Err(ObjectError::ObjectNotFound) => return None,
        other => other.unwrap_or_else(|e| panic!("open {key}: {e}")),
    };
    let (size, tags) = (open.info.size, open.info.tags.clone());
    let mut rx = open.stream(0, size);
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk.unwrap_or_else(|e| panic!("read {key}: {e}")));
    }
    Some((bytes, tags))
}

/// Runs `path` on `key`; returns what the key holds if it succeeds.
async fn write(
    l: &ObjectLayer,
    path: WritePath,
    key: &str,
    upload: Uuid,
    first: &CompletePart,
) -> Result<Value, ObjectError> {
    let none = BTreeMap::new();
    match path {
        WritePath::PutInline | WritePath::PutFile => {
            let data = pattern(if matches!(path, WritePath::PutInline) { 5_000 } else { (1 << 20) + 77 }, 9);
            l.put_object("b", key, &mut body(&data), PutOptions::default()).await?;
            Ok(Some((data.to_vec(), none)))
        }
        WritePath::UploadPartAndComplete => {
            let last = pattern(70_000, 10);
            let p = l.upload_part("b", key, upload, 2, &mut body(&last), None).await?;
            let parts = [first.clone(), CompletePart { number: 2, etag: p.etag, checksums: none.clone() }];
            l.complete_multipart_upload("b", key, upload, &parts, CompleteOptions::default()).await?;
            Ok(Some(([pattern(5 << 20, 11), last].concat(), none)))
        }
        WritePath::Copy => {
            let open = l.open_object("b", "src", true).await?;
            let size = open.info.size;
            l.put_object("b", key, &mut StreamBody(open.stream(0, size)), PutOptions::default()).await?;
            Ok(Some((pattern(300_000, 12).to_vec(), none)))
        }
        WritePath::Delete => l.delete_object("b", key).await.map(|()| None),
        WritePath::Tags => {
            let tags = BTreeMap::from([("t".to_owned(), "new".to_owned())]);
            l.put_object_tags("b", key, tags.clone()).await?;
            Ok(Some((pattern((1 << 20) + 5, 8).to_vec(), tags)))
        }
    }
}

/// Every write path with faults on up to parity drives succeeds; with faults on more it fails,
/// and the old object is intact; either way nothing stays pending and no temp file is left.
/// Faults: every operation failing, only commits failing, only commits hanging, commits applied
/// with their answers lost, and commits landing after the caller's time-out. Five drives (3+2):
/// the write quorum is the data count, so a write survives as many faults as there are parity
/// drives (in a 2+2 set the quorum is 3).
///
/// With faults after the fact, a failed write must not come back: not once the late changes
/// have landed, and not after a heal of the key (which would spread a version a drive kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_path_survives_parity_faults_and_fails_cleanly_beyond() {
    let paths = [
        WritePath::PutInline,
        WritePath::PutFile,
        WritePath::UploadPartAndComplete,
        WritePath::Copy,
        WritePath::Delete,
        WritePath::Tags,
    ];
    // The changes themselves (not the calls that end them) for the late ones: an end that
    // lands late is a different fault, covered by the lost answers.
    let changes = Op::COMMITS.iter().filter(|&&op| op != Op::FinishOp);
    let modes: [(&str, Vec<Rule>); 5] = [
        ("every operation fails", vec![Rule::every(Fault::Fail)]),
        ("commits fail", Op::COMMITS.iter().map(|&op| Rule::new(op, Fault::Fail)).collect()),
        ("commits hang", Op::COMMITS.iter().map(|&op| Rule::new(op, Fault::Hang)).collect()),
        (
            "commits applied, answers lost",
            Op::COMMITS.iter().map(|&op| Rule::new(op, Fault::LoseAnswer)).collect(),
        ),
        (
            "commits land after the time-out",
            changes.map(|&op| Rule::new(op, Fault::LandLate(Duration::from_millis(700)))).collect(),
        ),
    ];
    let mut cases = 0;
    for (mode, rules) in &modes {
        let rig = Rig::with_time_out(5, Duration::from_millis(300)).await;
        let src = pattern(300_000, 12);
        rig.layer.put_object("b", "src", &mut body(&src), PutOptions::default()).await.expect("src");
        for path in paths {
            for faulty in [2, 3] {
                let key = format!("{path:?}-{faulty}");
                let old = pattern((1 << 20) + 5, 8);
                rig.layer.put_object("b", &key, &mut body(&old), PutOptions::default()).await.expect("old");
                let upload = rig
                    .layer
                    .create_multipart_upload("b", &key, PutOptions::default())
                    .await
                    .expect("upload");
                let p1 = rig
                    .layer
                    .upload_part("b", &key, upload, 1, &mut body(&pattern(5 << 20, 11)), None)
                    .await
                    .expect("part 1");
                let first = CompletePart { number: 1, etag: p1.etag, checksums: BTreeMap::new() };
                let before = value(&rig.layer, &key).await;
                for d in &rig.faulty[..faulty] {
                    for rule in rules {
                        d.add_rule(rule.clone());
                    }
                }
                let outcome = tokio::time::timeout(
                    Duration::from_secs(30),
                    write(&rig.layer, path, &key, upload, &first),
                )
                .await
                .unwrap_or_else(|_| panic!("{mode}, {path:?}, {faulty} drives: the write hung"));
                rig.clear_faults();
                wait_late_landed(&rig, &format!("{mode}, {path:?}, {faulty} drives")).await;
                let now = value(&rig.layer, &key).await;
                if faulty <= 2 {
                    let want = outcome.unwrap_or_else(|e| panic!("{mode}, {path:?}, {faulty} drives: {e}"));
                    assert!(now == want, "{mode}, {path:?}, {faulty} drives: the new value is not there");
                } else {
                    assert!(outcome.is_err(), "{mode}, {path:?}, {faulty} drives: beyond parity succeeded");
                    assert!(now == before, "{mode}, {path:?}, {faulty} drives: the old value is not intact");
                }
                settle(&rig, &format!("{mode}, {path:?}, {faulty} drives")).await;
                if faulty > 2 {
                    rig.layer.heal_object("b", &key, false).await.expect("heal");
                    let healed = value(&rig.layer, &key).await;
                    assert!(
                        healed == before,
                        "{mode}, {path:?}, {faulty} drives: the failed write came back in a heal"
                    );
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 60);
}

/// Waits (bounded) until every change a fault delayed past its caller has landed.
async fn wait_late_landed(rig: &Rig, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while rig.faulty.iter().any(|d| d.late_in_flight() > 0) {
        assert!(Instant::now() < deadline, "{what}: late changes never landed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (bounded) until no change is pending and no temp file is left on any drive.
async fn settle(rig: &Rig, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pending: usize = rig.local.iter().map(|d| d.pending_count()).sum();
        let temp = rig.temp_files();
        if pending == 0 && temp == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {pending} changes pending, {temp} temp files");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The process out of open files (every drive's open fails with `EMFILE`) is not "too few drives
/// online": PUT and GET name the cause, and nothing is left behind or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_open_files_is_named_not_a_quorum_error() {
    let rig = Rig::new(4).await;
    let old = pattern(2 << 20, 1);
    rig.layer.put_object("b", "k", &mut body(&old), PutOptions::default()).await.expect("put");
    let named = |e: &ObjectError| matches!(e, ObjectError::Exhausted(m) if m.contains("open files"));

    for d in &rig.faulty {
        d.add_rule(Rule::new(Op::CreateShardFile, Fault::OutOfFiles));
    }
    let put = rig.layer.put_object("b", "k", &mut body(&pattern(2 << 20, 2)), PutOptions::default()).await;
    assert!(put.as_ref().is_err_and(named), "PUT answered {put:?}");
    rig.clear_faults();
    assert_eq!(rig.temp_files(), 0);

    for d in &rig.faulty {
        d.add_rule(Rule::new(Op::OpenShardFile, Fault::OutOfFiles));
    }
    let get = read_all(&rig.layer, "k", 0, old.len() as u64).await;
    assert!(get.as_ref().is_err_and(named), "GET answered {:?}", get.map(|b| b.len()));
    // One drive out of files is a drive short: the read succeeds from the others.
    rig.clear_faults();
    rig.faulty[0].add_rule(Rule::new(Op::OpenShardFile, Fault::OutOfFiles));
    assert_eq!(read_all(&rig.layer, "k", 0, old.len() as u64).await.expect("get"), old);
    rig.clear_faults();
    assert_eq!(read_all(&rig.layer, "k", 0, old.len() as u64).await.expect("get"), old);
}

/// A drive that acknowledges frames it stored corrupted is not counted as healed: the heal reads
/// back what it committed, reports the drive as failed, and a later heal onto an honest drive
/// succeeds. Reads stay exact throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_onto_a_drive_that_lies_is_reported_failed() {
    let rig = Rig::new(4).await;
    let data = pattern(3 << 20, 91);
    // Written while drive 3 refuses shard files and commits: it lacks the object.
    rig.faulty[3].add_rule(Rule::every(Fault::Fail));
    rig.layer
        .put_object("b", "k", &mut body(&data), PutOptions::default())
        .await
        .expect("put with one drive failing");
    rig.clear_faults();
    let endpoint = rig.faulty[3].endpoint().to_owned();

    rig.faulty[3].add_rule(Rule::new(Op::WriteFrame, Fault::Lie).after(1).times(1));
    let r = rig.layer.heal_object("b", "k", true).await.expect("heal runs");
    assert!(r.healed_drives.is_empty(), "{r:?}");
    assert_eq!(r.failed_drives, std::slice::from_ref(&endpoint), "the lie is found by reading back");
    assert_eq!(read_all(&rig.layer, "k", 0, data.len() as u64).await.expect("reads"), &data[..]);

    rig.clear_faults();
    let r = rig.layer.heal_object("b", "k", true).await.expect("heal again");
    assert_eq!(r.healed_drives, [endpoint], "{r:?}");
    assert!(rig.layer.heal_object("b", "k", true).await.expect("and again").was_healthy());
}

/// A scan's heal that a drive refuses for a while (as a node refuses a change while a stale
/// lock holder's lease runs out there) is tried again after a pause, through the queue, until
/// the drive takes it: the scan does not leave the object short of a shard until the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_a_drive_refuses_for_a_while_is_tried_again() {
    let rig = Rig::new(4).await;
    let data = pattern(3 << 20, 17);
    rig.layer.put_object("b", "k", &mut body(&data), PutOptions::default()).await.expect("put");
    // Drive 3 loses its record, unseen: nothing queues the object, only the scan finds it.
    let op = Uuid::new_v4();
    rig.local[3].delete_version("b", "k", None, op).await.expect("drop on drive 3");
    rig.local[3].finish_op(op, true).await;
    // The scan's heal and the first try again are refused at the commit.
    rig.faulty[3].add_rule(Rule::new(Op::CommitVersion, Fault::Fail).times(2));
    let (faulty, local, dir) = (rig.faulty, rig.local, rig.dir);
    let layer = Arc::new(rig.layer);
    layer.start_healing(None, false);
    layer.heal_scan(strata_object::HealScope::default()).await;
    let status = layer.heal_status().await;
    assert_eq!(status.scan.objects_failed, 1, "{status:?}");
    assert_eq!(status.queue_length, 1, "waiting to be tried again: {status:?}");
    let began = Instant::now();
    while layer.heal_status().await.state != "idle" {
        assert!(began.elapsed() < Duration::from_secs(20), "still healing: {:?}", layer.heal_status().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Tried again after 1 s, refused, then after 2 s more.
    assert!(began.elapsed() >= Duration::from_millis(2900), "{:?}", began.elapsed());
    assert_eq!(faulty[3].faults_injected(), 2);
    let status = layer.heal_status().await;
    assert_eq!((status.queue_failed, status.queue_healed), (1, 1), "{status:?}");
    let (record, _) = local[3].read_record("b", "k", false).await.expect("drive 3 holds the object now");
    assert_eq!(record.latest().map(|v| v.size), Some(data.len() as u64));
    // Alone, drive 3 and one other (parity 2 of 4) read it whole.
    for d in &faulty[..2] {
        d.add_rule(Rule::every(Fault::Fail));
    }
    assert_eq!(read_all(&layer, "k", 0, data.len() as u64).await.expect("reads"), &data[..]);
    drop(dir);
}

/// Heals of one object run at once on one node (a heal on read beside a scan) and on two nodes
/// (two layers over the same drives, each with its own turns): every one succeeds, none counts a
/// drive failed, and the rebuilt shards read back whole. Writes onto the healed drive are slowed
/// so the heals overlap. Before shard writers of one data id stopped sharing a temp file, the
/// second heal truncated the first's file and one of them failed its commit or its read-back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_heals_of_one_object_all_succeed() {
    let rig = Rig::new(4).await;
    let slots: Vec<DriveSlot> = rig.faulty.iter().map(|d| Some(d.clone() as Arc<dyn Drive>)).collect();
    let other = ObjectLayer::new_with(
        Uuid::from_u128(1),
        vec![vec![slots]],
        strata_cluster::layout::default_parity(4),
        None,
        LayerOptions { drive_op_timeout: Duration::from_secs(30), ..Default::default() },
    )
    .await
    .expect("second node's layer");
    let endpoint = rig.faulty[3].endpoint().to_owned();
    for round in 0..4u8 {
        let key = format!("k{round}");
        let data = pattern((3 << 20) + usize::from(round) * 1000, 100 + u64::from(round));
        rig.faulty[3].add_rule(Rule::every(Fault::Fail));
        rig.layer.put_object("b", &key, &mut body(&data), PutOptions::default()).await.expect("put");
        rig.clear_faults();
        rig.faulty[3].add_rule(Rule::new(Op::WriteFrame, Fault::Delay(Duration::from_millis(20))));
        let heals = [&rig.layer, &rig.layer, &other, &other].map(|layer| layer.heal_object("b", &key, true));
        let results = futures_util::future::join_all(heals).await;
        rig.clear_faults();
        let mut healed = 0;
        for r in results {
            let r = r.expect("every heal runs");
            assert!(r.failed_drives.is_empty(), "round {round}: {r:?}");
            healed += usize::from(r.healed_drives.contains(&endpoint));
        }
        assert!(healed >= 1, "round {round}: nobody healed the drive");
        assert!(rig.layer.heal_object("b", &key, true).await.expect("check").was_healthy(), "round {round}");
        rig.faulty[0].add_rule(Rule::every(Fault::Fail));
        rig.faulty[1].add_rule(Rule::every(Fault::Fail));
        assert_eq!(read_all(&rig.layer, &key, 0, data.len() as u64).await.expect("read"), &data[..]);
        rig.clear_faults();
    }
    assert_eq!(rig.temp_files(), 0, "a heal left a temp file");
}

/// An acknowledged change is never overtaken by an earlier one that lands late. A tag update
/// meets its quorum while two drives of five take it only after the caller's time-out; a second
/// update is acknowledged on every drive; then the first lands on those two. They must refuse it
/// (the first's operation was ended, kept, without them), so every drive, a GET and a heal show
/// the second update's tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_change_never_overtakes_a_later_acknowledged_one() {
    let rig = Rig::with_time_out(5, Duration::from_millis(300)).await;
    let data = pattern(200_000, 3);
    rig.layer.put_object("b", "k", &mut body(&data), PutOptions::default()).await.expect("put");
    let tags = |v: &str| BTreeMap::from([("t".to_owned(), v.to_owned())]);
    for d in &rig.faulty[..2] {
        d.add_rule(Rule::new(Op::UpdateVersion, Fault::LandLate(Duration::from_millis(800))).times(1));
    }
    rig.layer.put_object_tags("b", "k", tags("first")).await.expect("the first update meets its quorum");
    rig.layer.put_object_tags("b", "k", tags("second")).await.expect("the second update");
    assert!(rig.faulty[..2].iter().all(|d| d.late_in_flight() == 1), "the first update is still on its way");
    wait_late_landed(&rig, "the first update").await;
    let refused: Vec<u64> =
        rig.local.iter().map(|d| d.commit_totals().map_or(0, |t| t.refused_late)).collect();
    assert_eq!(refused, [1, 1, 0, 0, 0], "each late drive refused the late update once (the metric)");
    for (i, d) in rig.local.iter().enumerate() {
        let (record, _) = d.read_record("b", "k", false).await.expect("record");
        assert_eq!(record.versions[0].tags, tags("second"), "drive {i} holds the late update's tags");
    }
    assert_eq!(value(&rig.layer, "k").await, Some((data.to_vec(), tags("second"))));
    rig.layer.heal_object("b", "k", false).await.expect("heal");
    assert_eq!(value(&rig.layer, "k").await, Some((data.to_vec(), tags("second"))));
    settle(&rig, "after the late update").await;
}
