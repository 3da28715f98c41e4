//! Multipart races: two uploads of one part number at once, and a retried part racing
//! CompleteMultipartUpload. Drive delays (`FaultyDrive`) force the interleavings; afterwards the
//! completed object must be whole on every drive: each drive's record names part files it holds.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use strata_drive::faulty::{Fault, Op, Rule};
use strata_drive::Drive;
use strata_object::{CompleteOptions, CompletePart, ObjectError, PutOptions};

use common::{body, pattern, read_all, Rig};

/// Every drive's record of `key` names part files that drive holds.
async fn parts_on_every_drive(rig: &Rig, key: &str) {
    for (i, d) in rig.local.iter().enumerate() {
        let (record, _) = d.read_record("b", key, false).await.expect("record");
        for part in &record.versions[0].parts {
            assert!(
                d.open_shard_file(part.data_id).await.is_ok(),
                "drive {i}: part {} file {} of the completed object is gone",
                part.number,
                part.data_id
            );
        }
    }
}

/// The object reads whole with any two of the four drives failing.
async fn reads_with_two_drives_down(rig: &Rig, key: &str, want: &Bytes) {
    for down in [[0, 1], [2, 3], [0, 3]] {
        for &i in &down {
            rig.faulty[i].add_rule(Rule::every(Fault::Fail));
        }
        let got = read_all(&rig.layer, key, 0, want.len() as u64).await;
        rig.clear_faults();
        assert_eq!(got.expect("read"), want.as_ref(), "drives {down:?} down");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_uploads_of_one_part_agree_on_every_drive() {
    let rig = Rig::new(4).await;
    let upload = rig.layer.create_multipart_upload("b", "k", PutOptions::default()).await.expect("create");
    // Whichever commit reaches a drive first waits on drives 0 and 1, the second on drives 2
    // and 3: without a lock the drives record the two uploads in opposite orders.
    for i in [0, 1] {
        rig.faulty[i].add_rule(Rule::new(Op::CommitPart, Fault::Delay(Duration::from_millis(300))).times(1));
    }
    for i in [2, 3] {
        rig.faulty[i]
            .add_rule(Rule::new(Op::CommitPart, Fault::Delay(Duration::from_millis(300))).after(1).times(1));
    }
    let (a, b) = (pattern(300_000, 1), pattern(300_000, 2));
    let (mut body_a, mut body_b) = (body(&a), body(&b));
    let (ra, rb) = tokio::join!(
        rig.layer.upload_part("b", "k", upload, 1, &mut body_a, None),
        rig.layer.upload_part("b", "k", upload, 1, &mut body_b, None),
    );
    rig.clear_faults();
    let (pa, pb) = (ra.expect("part a"), rb.expect("part b"));
    let (_, listed) = rig.layer.list_parts("b", "k", upload).await.expect("list parts");
    assert_eq!(listed.len(), 1, "one part 1");
    let winner = if listed[0].etag == pa.etag { a } else { b };
    assert!(listed[0].etag == pa.etag || listed[0].etag == pb.etag);
    let parts = [CompletePart { number: 1, etag: listed[0].etag.clone(), checksums: BTreeMap::new() }];
    rig.layer
        .complete_multipart_upload("b", "k", upload, &parts, CompleteOptions::default())
        .await
        .expect("complete");
    parts_on_every_drive(&rig, "k").await;
    reads_with_two_drives_down(&rig, "k", &winner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_part_racing_complete_never_frees_the_completed_data() {
    let rig = Rig::new(4).await;
    let upload = rig.layer.create_multipart_upload("b", "k", PutOptions::default()).await.expect("create");
    let first = pattern(200_000, 3);
    let part = rig.layer.upload_part("b", "k", upload, 1, &mut body(&first), None).await.expect("part");
    // Complete stalls at its commit; the retried part arrives meanwhile.
    for d in &rig.faulty {
        d.add_rule(Rule::new(Op::CompleteUpload, Fault::Delay(Duration::from_millis(400))).times(1));
    }
    let parts = [CompletePart { number: 1, etag: part.etag.clone(), checksums: BTreeMap::new() }];
    let retry_data = pattern(200_000, 4);
    let (completed, retried) = tokio::join!(
        rig.layer.complete_multipart_upload("b", "k", upload, &parts, CompleteOptions::default()),
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            rig.layer.upload_part("b", "k", upload, 1, &mut body(&retry_data), None).await
        }
    );
    rig.clear_faults();
    completed.expect("complete");
    // The retry lands after the upload is complete: there is no upload left to add it to.
    assert!(matches!(retried, Err(ObjectError::NoSuchUpload)), "{retried:?}");
    parts_on_every_drive(&rig, "k").await;
    reads_with_two_drives_down(&rig, "k", &first).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rig.temp_files(), 0, "the refused retry leaves no temp file");
}

/// Listing uploads goes in bounded rounds: more uploads than a round holds, with one drive
/// missing some (so rounds end at different places per drive), list whole and in order, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_list_in_bounded_rounds() {
    let rig = Rig::new(4).await;
    let count = strata_types::limits::UPLOADS_ROUND * 2 + 150;
    let keys: Vec<String> = (0..count).map(|i| format!("k{:02}/{i:05}", i % 7)).collect();
    let mut want = Vec::new();
    for chunk in keys.chunks(200) {
        if want.len() == 1000 {
            // Drive 2 misses this second half: each record is still on three drives.
            rig.faulty[2].add_rule(Rule::new(Op::PutUpload, Fault::Fail));
        }
        let created = futures_util::future::join_all(
            chunk.iter().map(|k| rig.layer.create_multipart_upload("b", k, PutOptions::default())),
        )
        .await;
        for (k, id) in chunk.iter().zip(created) {
            want.push((k.clone(), id.expect("create upload")));
        }
    }
    rig.clear_faults();
    want.sort();

    let mut after = Vec::new();
    let (mut got, mut rounds) = (Vec::new(), 0);
    loop {
        let page = rig.layer.list_multipart_uploads("b", "", &after, 300).await.expect("list");
        assert!(page.uploads.len() <= 4 * 300);
        got.extend(page.uploads.into_iter().map(|u| (u.key, u.upload_id)));
        rounds += 1;
        match page.next {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(got, want, "every upload once, in (key, id) order");
    assert!(rounds >= count / 300, "{rounds} rounds");
    // Uploads of one key list in the order they were started.
    let first =
        rig.layer.create_multipart_upload("b", "k00/00000", PutOptions::default()).await.expect("create");
    let second =
        rig.layer.create_multipart_upload("b", "k00/00000", PutOptions::default()).await.expect("create");
    let page = rig.layer.list_multipart_uploads("b", "k00/00000", &[], 10).await.expect("list");
    let ids: Vec<_> = page.uploads.iter().map(|u| u.upload_id).collect();
    assert_eq!(ids[1..], [first, second]);
}

/// A retried UploadPart whose commit fails on two of the four drives (short of the write quorum
/// of 3) fails, and leaves the part acknowledged before it in place on every drive: ListParts
/// shows its ETag, Complete with that ETag succeeds, and the object reads as that part. The
/// retry's data is gone from every drive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_retry_of_a_part_leaves_the_acknowledged_part() {
    let rig = Rig::new(4).await;
    let upload = rig.layer.create_multipart_upload("b", "k", PutOptions::default()).await.expect("create");
    let acknowledged = pattern(300_000, 1);
    let part =
        rig.layer.upload_part("b", "k", upload, 1, &mut body(&acknowledged), None).await.expect("part");
    for i in [2, 3] {
        rig.faulty[i].add_rule(Rule::new(Op::CommitPart, Fault::Fail).times(1));
    }
    let retry = pattern(300_000, 2);
    let failed = rig.layer.upload_part("b", "k", upload, 1, &mut body(&retry), None).await;
    rig.clear_faults();
    assert!(failed.is_err(), "the retry met its quorum: {failed:?}");
    for (i, d) in rig.local.iter().enumerate() {
        let parts = d.list_parts(upload).await.expect("parts");
        assert_eq!(parts.len(), 1, "drive {i}");
        assert_eq!(
            (parts[0].data_id, &parts[0].etag),
            (part.data_id, &part.etag),
            "drive {i} holds the retry"
        );
        assert!(d.open_shard_file(part.data_id).await.is_ok(), "drive {i} lost the acknowledged part's data");
    }
    let (_, listed) = rig.layer.list_parts("b", "k", upload).await.expect("list");
    assert_eq!(listed.iter().map(|p| &p.etag).collect::<Vec<_>>(), vec![&part.etag]);
    let parts = [CompletePart { number: 1, etag: part.etag.clone(), checksums: BTreeMap::new() }];
    rig.layer
        .complete_multipart_upload("b", "k", upload, &parts, CompleteOptions::default())
        .await
        .expect("complete");
    assert_eq!(
        read_all(&rig.layer, "k", 0, acknowledged.len() as u64).await.expect("read"),
        acknowledged.as_ref()
    );
    parts_on_every_drive(&rig, "k").await;
    assert_eq!(rig.temp_files(), 0);
    // Only the completed object's data is left: the retry's shard files were freed.
    assert_eq!((0..4).map(|i| rig.data_files(i)).sum::<usize>(), 4);
}
