//! A drive never frees a part file that a completed version of the object references, whatever
//! later part uploads or upload drops say (a retried part racing Complete on another node, an
//! upload dropped again by expiry); a part commit that is undone puts back the part it replaced.

use std::sync::Arc;

use bytes::Bytes;
use strata_drive::{Drive, LocalDrive};
use strata_erasure::bitrot;
use strata_meta::{BucketRecord, DataLocation, ErasureInfo, ObjectVersion, PartInfo, UploadRecord};
use uuid::Uuid;

fn erasure() -> ErasureInfo {
    ErasureInfo {
        bitrot: Default::default(),
        data_count: 1,
        parity_count: 0,
        block_size: 1 << 20,
        shard_index: 0,
        distribution: vec![0],
    }
}

async fn part_file(d: &LocalDrive, number: u32) -> PartInfo {
    let id = Uuid::new_v4();
    let mut w = d.create_shard_file(id).await.expect("create");
    let shard = Bytes::from(vec![number as u8; 100]);
    w.write_frame(bitrot::hash(&shard), shard).await.expect("write");
    w.finish().await.expect("finish");
    PartInfo {
        number,
        size: 100,
        etag: "00".into(),
        data_id: id,
        mod_time: 1,
        checksums: Default::default(),
        sealed_checksums: None,
    }
}

async fn drive_with_upload() -> (tempfile::TempDir, Arc<LocalDrive>, Uuid) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Arc::new(LocalDrive::open(dir.path()).expect("open"));
    d.write_format(b"{}".to_vec()).await.expect("format");
    d.make_bucket("b", BucketRecord { created: 1, ..Default::default() }.encode()).await.expect("bucket");
    let upload_id = Uuid::new_v4();
    let upload = UploadRecord {
        upload_id,
        key: "k".into(),
        initiated: 1,
        headers: Default::default(),
        user_metadata: Default::default(),
        erasure: erasure(),
        tags: Default::default(),
        checksum_algorithm: None,
        checksum_type: None,
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
    };
    d.put_upload("b", upload).await.expect("upload");
    (dir, d, upload_id)
}

#[tokio::test]
async fn a_completed_objects_part_files_outlive_replaced_parts_and_dropped_uploads() {
    let (_dir, d, upload_id) = drive_with_upload().await;
    let part = part_file(&d, 1).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, part.clone(), op).await.expect("part");
    d.finish_op(op, true).await;
    let version = ObjectVersion {
        version_id: None,
        mod_time: 2,
        delete_marker: false,
        size: 100,
        etag: "00-1".into(),
        headers: Default::default(),
        user_metadata: Default::default(),
        checksums: Default::default(),
        erasure: erasure(),
        data: DataLocation::Multipart(upload_id),
        parts: vec![part.clone()],
        tags: Default::default(),
        retention: None,
        legal_hold: false,
        sse: None,
        acl: None,
        replication: None,
    };
    let op = Uuid::new_v4();
    d.complete_upload("b", "k", upload_id, version, op, None).await.expect("complete");
    d.finish_op(op, true).await;

    // A retried part 1 lands before the upload is dropped: it replaces the upload's part 1, but
    // the completed object still reads the old file.
    let retry = part_file(&d, 1).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, retry.clone(), op).await.expect("retried part");
    d.finish_op(op, true).await;
    assert!(
        d.open_shard_file(part.data_id).await.is_ok(),
        "a replaced part freed the completed object's file"
    );
    // Dropping the upload keeping nothing (as expiry does) frees the retry, not the object's file.
    d.drop_upload("b", "k", upload_id, Vec::new()).await.expect("drop");
    assert!(
        d.open_shard_file(part.data_id).await.is_ok(),
        "a dropped upload freed the completed object's file"
    );
    assert!(d.open_shard_file(retry.data_id).await.is_err(), "the unused retry is freed");
}

/// A part uploaded again replaces the earlier one only when its operation is kept: undone (the
/// retry missed its quorum), the earlier part is back with its data and the retry's data is
/// freed; kept, the earlier part's data is freed. A part number uploaded for the first time and
/// undone leaves no part.
#[tokio::test]
async fn an_undone_part_commit_puts_back_the_part_it_replaced() {
    let (_dir, d, upload_id) = drive_with_upload().await;
    let first = part_file(&d, 1).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, first.clone(), op).await.expect("part");
    d.finish_op(op, true).await;

    let retry = part_file(&d, 1).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, retry.clone(), op).await.expect("retry");
    assert_eq!(d.list_parts(upload_id).await.expect("parts"), vec![retry.clone()]);
    assert!(d.open_shard_file(first.data_id).await.is_ok(), "the replaced part's data waits for the end");
    d.finish_op(op, false).await;
    assert_eq!(d.list_parts(upload_id).await.expect("parts"), vec![first.clone()]);
    assert!(d.open_shard_file(first.data_id).await.is_ok());
    assert!(d.open_shard_file(retry.data_id).await.is_err(), "the undone retry's data is freed");

    let second = part_file(&d, 1).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, second.clone(), op).await.expect("again");
    d.finish_op(op, true).await;
    assert_eq!(d.list_parts(upload_id).await.expect("parts"), vec![second.clone()]);
    assert!(d.open_shard_file(first.data_id).await.is_err(), "the replaced part's data is freed");

    let new_number = part_file(&d, 2).await;
    let op = Uuid::new_v4();
    d.commit_part("b", "k", upload_id, new_number.clone(), op).await.expect("part 2");
    d.finish_op(op, false).await;
    assert_eq!(d.list_parts(upload_id).await.expect("parts"), vec![second]);
    assert!(d.open_shard_file(new_number.data_id).await.is_err());
}
