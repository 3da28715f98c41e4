//! The object layer over real LocalDrives: round trips, ranges, degraded reads, corruption,
//! quorum loss, and listing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use strata_crypto::package::{sealed_size, ObjectCipher};
use strata_crypto::DataKey;
use strata_drive::{Drive, LocalDrive};
use strata_erasure::ShardLayout;
use strata_object::{
    CompleteOptions, CompletePart, DriveSlot, ListRequest, ObjectError, ObjectLayer, PutOptions,
    SEALED_BLOCK_SIZE,
};
use uuid::Uuid;

mod common;

use common::{body, pattern};

async fn open_drives(root: &Path, n: usize) -> Vec<Arc<LocalDrive>> {
    let mut drives = Vec::new();
    for i in 0..n {
        let d = LocalDrive::open(&root.join(format!("d{i}"))).expect("open drive");
        if d.read_format().await.expect("format").is_none() {
            d.write_format(b"{}".to_vec()).await.expect("write format");
        }
        drives.push(Arc::new(d));
    }
    drives
}

async fn layer(drives: &[Arc<LocalDrive>], offline: &[usize]) -> ObjectLayer {
    let slots: Vec<DriveSlot> = drives
        .iter()
        .enumerate()
        .map(|(i, d)| if offline.contains(&i) { None } else { Some(d.clone() as Arc<dyn Drive>) })
        .collect();
    let parity = strata_cluster::layout::default_parity(drives.len());
    ObjectLayer::new(Uuid::from_u128(1), vec![vec![slots]], parity).await.expect("layer")
}

async fn read_all(l: &ObjectLayer, key: &str, offset: u64, len: u64) -> Result<Vec<u8>, ObjectError> {
    let open = l.open_object("b", key, true).await?;
    let mut rx = open.stream(offset, len);
    let mut out = Vec::new();
    while let Some(chunk) = rx.recv().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

const SIZES: [usize; 7] = [0, 1, 4096, 128 * 1024, 128 * 1024 + 1, 1 << 20, 3 * (1 << 20) + 12345];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_ranges_and_degraded_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    for (i, &size) in SIZES.iter().enumerate() {
        let data = pattern(size, i as u64 + 1);
        let info =
            l.put_object("b", &format!("k{i}"), &mut body(&data), PutOptions::default()).await.expect("put");
        assert_eq!(info.size, size as u64);
        assert_eq!(info.etag, format!("{:x}", md5_of(&data)));
        assert_eq!(read_all(&l, &format!("k{i}"), 0, size as u64).await.expect("get"), &data[..]);
        if size > 10 {
            let (off, len) = (size as u64 / 3, size as u64 / 2);
            let got = read_all(&l, &format!("k{i}"), off, len).await.expect("range");
            assert_eq!(got, &data[off as usize..(off + len) as usize]);
        }
    }
    // Any two of four drives offline: every object still reads back exactly.
    for offline in [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]] {
        let degraded = layer(&drives, &offline).await;
        for (i, &size) in SIZES.iter().enumerate() {
            let data = pattern(size, i as u64 + 1);
            let got = read_all(&degraded, &format!("k{i}"), 0, size as u64).await.expect("degraded get");
            assert_eq!(got, &data[..], "k{i} with {offline:?} offline");
        }
        // Writes need 3 of 4 (2+2 → k+1): two offline refuses, never half-writes.
        let err = degraded.put_object("b", "new", &mut body(&pattern(10, 9)), PutOptions::default()).await;
        assert!(matches!(err, Err(ObjectError::WriteQuorum { .. })), "{err:?}");
    }
    let one_down = layer(&drives, &[3]).await;
    one_down
        .put_object("b", "while-down", &mut body(&pattern(2 << 20, 5)), PutOptions::default())
        .await
        .expect("put with one down");
    assert_eq!(read_all(&l, "while-down", 0, 2 << 20).await.expect("read"), &pattern(2 << 20, 5)[..]);
}

fn md5_of(data: &[u8]) -> u128 {
    use md5::{Digest, Md5};
    u128::from_be_bytes(Md5::digest(data).into())
}

/// Flip a byte in every shard file / inline record on one or two drives: reads stay exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bitrot_is_detected_and_repaired_from_parity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    let big = pattern(5 << 20, 77);
    l.put_object("b", "big", &mut body(&big), PutOptions::default()).await.expect("put");
    for victim in ["d0", "d2"] {
        for entry in walk(&dir.path().join(victim).join(".strata.sys/data")) {
            let mut bytes = std::fs::read(&entry).expect("read shard");
            for i in (0..bytes.len()).step_by(100_003) {
                bytes[i] ^= 0x5a;
            }
            std::fs::write(&entry, bytes).expect("write shard");
        }
    }
    assert_eq!(read_all(&l, "big", 0, 5 << 20).await.expect("get"), &big[..]);
    // A third corrupted drive is more than parity: the read fails, it never returns wrong bytes.
    for entry in walk(&dir.path().join("d1").join(".strata.sys/data")) {
        let mut bytes = std::fs::read(&entry).expect("read shard");
        bytes[40] ^= 1;
        std::fs::write(&entry, bytes).expect("write shard");
    }
    let res = read_all(&l, "big", 0, 5 << 20).await;
    assert!(res.is_err() || res.as_deref().ok() == Some(&big[..]));
    assert!(matches!(res, Err(ObjectError::ReadQuorum { .. })));
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_delete_and_buckets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 6).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    assert!(matches!(l.make_bucket("b").await, Err(ObjectError::BucketExists)));
    let mut keys = Vec::new();
    for i in 0..120 {
        let key = format!("dir{}/file{i:03}", i % 3);
        l.put_object("b", &key, &mut body(&pattern(10, i)), PutOptions::default()).await.expect("put");
        keys.push(key);
    }
    keys.sort();
    let mut seen = Vec::new();
    let mut req = ListRequest { max_keys: 7, ..Default::default() };
    loop {
        let page = l.list_objects("b", &req).await.expect("list");
        seen.extend(page.objects.iter().map(|o| o.key.clone()));
        if !page.truncated {
            break;
        }
        req.start_after = page.next_marker.expect("marker");
    }
    assert_eq!(seen, keys);
    let page = l
        .list_objects("b", &ListRequest { delimiter: Some("/".into()), max_keys: 1000, ..Default::default() })
        .await
        .expect("list");
    assert_eq!(page.prefixes, ["dir0/", "dir1/", "dir2/"]);
    assert!(matches!(l.delete_bucket("b").await, Err(ObjectError::BucketNotEmpty)));
    for k in &keys {
        l.delete_object("b", k).await.expect("delete");
    }
    assert!(matches!(l.open_object("b", &keys[0], false).await, Err(ObjectError::ObjectNotFound)));
    l.delete_object("b", "never-existed").await.expect("idempotent delete");
    l.delete_bucket("b").await.expect("delete bucket");
    assert!(matches!(l.bucket_info("b"), Err(ObjectError::BucketNotFound)));
    // The bucket list survives a restart of the layer.
    l.make_bucket("kept").await.expect("bucket");
    let again = layer(&drives, &[]).await;
    assert_eq!(again.list_buckets().expect("list").len(), 1);
}

/// A write that reached one drive only (a crash mid-commit) is invisible to GET and LIST alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_and_reads_agree_on_a_partial_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    let data = pattern(100_000, 3);
    l.put_object("b", "k", &mut body(&data), PutOptions::default()).await.expect("put");
    let (record, _) = drives[0].read_record("b", "k", false).await.expect("record");
    let mut partial = record.versions[0].clone();
    partial.mod_time += 1_000_000_000;
    partial.size = 0;
    partial.data = strata_meta::DataLocation::Inline(Uuid::new_v4());
    drives[0]
        .commit_version("b", "k", partial, Some(Bytes::new()), Uuid::new_v4())
        .await
        .expect("partial commit on one drive");
    let page = l.list_objects("b", &ListRequest { max_keys: 10, ..Default::default() }).await.expect("list");
    assert_eq!(page.objects.len(), 1);
    assert_eq!(page.objects[0].size, 100_000);
    assert_eq!(read_all(&l, "k", 0, 100_000).await.expect("get"), &data[..]);
}

/// A drive that was down during a write, a drive that missed a tag update, and records left
/// behind on one drive are all put right by `heal_object`; a second heal finds nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_object_fills_missing_stale_and_dangling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let full = layer(&drives, &[]).await;
    full.make_bucket("b").await.expect("bucket");
    // Written while drive 3 was down: inline, single file and empty objects.
    let down = layer(&drives, &[3]).await;
    let sizes = [100usize, 3 << 20, 0];
    for (i, &size) in sizes.iter().enumerate() {
        down.put_object(
            "b",
            &format!("k{i}"),
            &mut body(&pattern(size, 40 + i as u64)),
            PutOptions::default(),
        )
        .await
        .expect("put with one drive down");
        assert!(matches!(
            drives[3].read_record("b", &format!("k{i}"), false).await,
            Err(strata_drive::DriveError::NotFound)
        ));
    }
    for (i, &size) in sizes.iter().enumerate() {
        let key = format!("k{i}");
        let r = full.heal_object("b", &key, true).await.expect("heal");
        assert_eq!(r.healed_drives, [drives[3].endpoint().to_owned()], "{key}");
        assert!(full.heal_object("b", &key, true).await.expect("heal again").was_healthy(), "{key}");
        // Drive 3 now serves its share: read with two others offline.
        let two_down = layer(&drives, &[0, 1]).await;
        assert_eq!(
            read_all(&two_down, &key, 0, size as u64).await.expect("read"),
            &pattern(size, 40 + i as u64)[..]
        );
    }
    // Drive 2 misses a tag update; the majority's tags win, on reads and after healing.
    let no_2 = layer(&drives, &[2]).await;
    let tags = BTreeMap::from([("team".to_owned(), "storage".to_owned())]);
    no_2.put_object_tags("b", "k0", tags.clone()).await.expect("tags");
    assert_eq!(full.open_object("b", "k0", false).await.expect("head").info.tags, tags);
    let r = full.heal_object("b", "k0", false).await.expect("heal tags");
    assert_eq!(r.healed_drives, [drives[2].endpoint().to_owned()]);
    let (record, _) = drives[2].read_record("b", "k0", false).await.expect("record");
    assert_eq!(record.latest().expect("version").tags, tags);
    // A record left on one drive (the others deleted it) is dangling and goes.
    for d in &drives[..3] {
        let op = Uuid::new_v4();
        d.delete_version("b", "k1", None, op).await.expect("delete");
        d.finish_op(op, true).await;
    }
    let r = full.heal_object("b", "k1", false).await.expect("heal dangling");
    assert_eq!(r.dangling_removed, 1);
    assert!(matches!(drives[3].read_record("b", "k1", false).await, Err(strata_drive::DriveError::NotFound)));
    assert!(matches!(full.open_object("b", "k1", false).await, Err(ObjectError::ObjectNotFound)));
}

/// A full scan finds what no listing shows (a record left on one drive) and sweeps shard and
/// temp files no record refers to once they are old, leaving young and referenced files alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_remove_dangling_records_and_old_orphans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    let big = pattern(2 << 20, 77);
    l.put_object("b", "kept", &mut body(&big), PutOptions::default()).await.expect("put");
    l.put_object("b", "left", &mut body(&pattern(50, 78)), PutOptions::default()).await.expect("put");
    for d in &drives[..3] {
        let op = Uuid::new_v4();
        d.delete_version("b", "left", None, op).await.expect("delete");
        d.finish_op(op, true).await;
    }
    let data = dir.path().join("d0/.strata.sys/data/ab");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let orphan = data.join(Uuid::new_v4().simple().to_string());
    let young = data.join(Uuid::new_v4().simple().to_string());
    let temp = dir.path().join("d0/.strata.sys/tmp").join(Uuid::new_v4().simple().to_string());
    for (path, time) in [(&orphan, Some(old)), (&young, None), (&temp, Some(old))] {
        std::fs::write(path, b"nobody refers to me").expect("write");
        if let Some(t) = time {
            std::fs::File::options().write(true).open(path).expect("open").set_modified(t).expect("mtime");
        }
    }
    let referenced_before = walk(&dir.path().join("d0/.strata.sys/data")).len();
    l.heal_scan(strata_object::HealScope::default()).await;
    let scan = l.healer().status().scan;
    assert_eq!((scan.objects_scanned, scan.dangling_removed), (2, 1), "{scan:?}");
    assert_eq!((scan.orphans_removed, scan.orphan_bytes_removed), (2, 38), "{scan:?}");
    assert!(matches!(
        drives[3].read_record("b", "left", false).await,
        Err(strata_drive::DriveError::NotFound)
    ));
    assert!(!orphan.exists() && !temp.exists() && young.exists());
    assert_eq!(walk(&dir.path().join("d0/.strata.sys/data")).len(), referenced_before - 1);
    assert_eq!(read_all(&l, "kept", 0, big.len() as u64).await.expect("read"), &big[..]);
}

fn sealing(seed: u8) -> strata_object::SsePut {
    let envelope = strata_object::SseEnvelope {
        kind: strata_object::SseKind::S3,
        object_id: Uuid::from_bytes([seed; 16]),
        sealed_key: vec![],
        kms_key_id: None,
        context: None,
        sealed_context: None,
        sealed_outer_key: None,
        key_mac: None,
        sealed_checksums: None,
    };
    strata_object::SsePut { envelope, cipher: cipher(seed), plain_md5: true }
}

fn cipher(seed: u8) -> ObjectCipher {
    ObjectCipher::new(&DataKey::from_bytes([seed; 32]), [seed; 16])
}

async fn read_plain(l: &ObjectLayer, key: &str, seed: u8, offset: u64, len: u64) -> Vec<u8> {
    let open = l.open_object("b", key, true).await.expect("open");
    let mut rx = open.stream_decrypted(cipher(seed), offset, len);
    let mut out = Vec::new();
    while let Some(chunk) = rx.recv().await {
        out.extend_from_slice(&chunk.expect("opens"));
    }
    out
}

/// Encrypted objects (single and multipart) are stored in blocks of whole sealed packages, so a
/// 1 MiB object is one block, not a full one and a 256-byte one; healing rebuilds them in those
/// blocks without a key, and they read back exactly, whole and by range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_objects_are_stored_in_blocks_of_whole_packages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let full = layer(&drives, &[]).await;
    full.make_bucket("b").await.expect("bucket");
    let down = layer(&drives, &[3]).await;
    let mib = 1usize << 20;
    let sizes = [mib, 3 * mib + 12345];
    for (i, &size) in sizes.iter().enumerate() {
        let key = format!("s{i}");
        let seed = 60 + i as u8;
        let plain = pattern(size, u64::from(seed));
        let opts = PutOptions { sse: Some(sealing(seed)), ..Default::default() };
        down.put_object("b", &key, &mut body(&plain), opts).await.expect("sealed put");
        let (record, _) = drives[0].read_record("b", &key, false).await.expect("record");
        let v = record.latest().expect("version");
        assert_eq!(v.erasure.block_size as usize, SEALED_BLOCK_SIZE);
        assert_eq!(v.size, sealed_size(size as u64));
        let layout = ShardLayout::new(v.size, SEALED_BLOCK_SIZE, 2);
        assert_eq!(layout.block_count(), size.div_ceil(mib) as u64, "a block per MiB of plaintext");

        let r = full.heal_object("b", &key, true).await.expect("heal");
        assert_eq!(r.healed_drives, [drives[3].endpoint().to_owned()], "{key}");
        let two_down = layer(&drives, &[0, 1]).await;
        assert_eq!(read_plain(&two_down, &key, seed, 0, size as u64).await, &plain[..], "{key}");
        let (off, len) = (size / 3, size / 2);
        let got = read_plain(&two_down, &key, seed, off as u64, len as u64).await;
        assert_eq!(got, &plain[off..off + len], "{key} range");
    }

    // A sealed upload's parts go in the same blocks (written with drive 3 down, then healed onto
    // it); the object reads back whole, with two drives offline.
    let opts = PutOptions { sse: Some(sealing(70)), ..Default::default() };
    let upload = down.create_multipart_upload("b", "m", opts).await.expect("create");
    let parts = [pattern(5 * mib, 71), pattern(mib + 1, 72)];
    let mut done = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let number = i as u32 + 1;
        let sse = sealing(70);
        let info = down
            .upload_part_sealed("b", "m", upload, number, &mut body(part), None, Some(&sse))
            .await
            .expect("part");
        done.push(CompletePart { number, etag: info.etag, checksums: BTreeMap::new() });
    }
    down.complete_multipart_upload("b", "m", upload, &done, CompleteOptions::default())
        .await
        .expect("complete");
    let (record, _) = drives[0].read_record("b", "m", false).await.expect("record");
    assert_eq!(record.latest().expect("version").erasure.block_size as usize, SEALED_BLOCK_SIZE);
    let r = full.heal_object("b", "m", true).await.expect("heal");
    assert_eq!(r.healed_drives, [drives[3].endpoint().to_owned()]);
    let whole: Vec<u8> = parts.concat();
    let two_down = layer(&drives, &[0, 1]).await;
    assert_eq!(read_plain(&two_down, "m", 70, 0, whole.len() as u64).await, whole);
}

/// The plaintext a decrypting read sends before it ends, and how it ended.
async fn read_plain_until(
    l: &ObjectLayer,
    key: &str,
    seed: u8,
    offset: u64,
    len: u64,
) -> (Vec<u8>, Result<(), ObjectError>) {
    let open = l.open_object("b", key, true).await.expect("open");
    let mut rx = open.stream_decrypted(cipher(seed), offset, len);
    let mut out = Vec::new();
    while let Some(chunk) = rx.recv().await {
        match chunk {
            Ok(c) => out.extend_from_slice(&c),
            Err(e) => return (out, Err(e)),
        }
    }
    (out, Ok(()))
}

/// Changes every frame of every shard file on drive `name`: `damage` gets each frame's bytes
/// (the 32-byte hash, then the shard bytes).
fn damage_frames(root: &Path, name: &str, frame_size: usize, damage: impl Fn(&mut [u8])) {
    for entry in walk(&root.join(name).join(".strata.sys/data")) {
        let mut bytes = std::fs::read(&entry).expect("read shard");
        for frame in bytes.chunks_mut(frame_size) {
            damage(frame);
        }
        std::fs::write(&entry, bytes).expect("write shard");
    }
}

/// A decrypting read trusts the packages' tags, not the frames' hashes: frames whose hashes are
/// damaged but whose bytes are intact read (where a plain object's do not), and rotten bytes
/// make a package fail to open, from which the read goes on with the hashes checked: it skips
/// the rotten shards (queueing a heal) and sends exact plaintext, or, with more rot than parity,
/// ends with an error after a correct prefix, never a wrong byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_reads_trust_the_tags_and_check_the_hashes_only_after_a_failed_package() {
    let mib = 1usize << 20;
    let size = 3 * mib + 12345;
    let plain = pattern(size, 80);
    let frame_size = 32 + SEALED_BLOCK_SIZE / 2;
    async fn put(l: &ObjectLayer, key: &str, data: &Bytes, sealed: bool) {
        let opts = PutOptions { sse: sealed.then(|| sealing(80)), ..Default::default() };
        l.put_object("b", key, &mut body(data), opts).await.expect("put");
    }

    // Hashes damaged, bytes intact, on the two drives left when the other two are offline.
    for sealed in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        let drives = open_drives(dir.path(), 4).await;
        let l = layer(&drives, &[]).await;
        l.make_bucket("b").await.expect("bucket");
        put(&l, "k", &plain, sealed).await;
        let frame = if sealed { frame_size } else { 32 + (1 << 20) / 2 };
        for name in ["d0", "d1"] {
            damage_frames(dir.path(), name, frame, |f| f[3] ^= 0x40);
        }
        let two_down = layer(&drives, &[2, 3]).await;
        if sealed {
            assert_eq!(
                read_plain(&two_down, "k", 80, 0, size as u64).await,
                plain,
                "tags checked, not hashes"
            );
            assert_eq!(two_down.healer().queue_length(), 0, "nothing noticed");
        } else {
            let res = read_all(&two_down, "k", 0, size as u64).await;
            assert!(matches!(res, Err(ObjectError::ReadQuorum { .. })), "plain reads check hashes: {res:?}");
        }
    }

    // Rotten bytes (hashes intact) on two drives: exact plaintext, whole and by range, and the
    // object is queued for healing.
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    put(&l, "k", &plain, true).await;
    for name in ["d0", "d2"] {
        damage_frames(dir.path(), name, frame_size, |f| {
            let i = f.len() / 2;
            f[i] ^= 0x08;
        });
    }
    assert_eq!(l.healer().queue_length(), 0);
    assert_eq!(read_plain(&l, "k", 80, 0, size as u64).await, plain);
    assert_eq!(l.healer().queue_length(), 1, "the rot was noticed");
    for (off, len) in [(0, 1), (mib - 5, 10), (size / 3, size / 2), (size - 7, 7)] {
        let got = read_plain(&l, "k", 80, off as u64, len as u64).await;
        assert_eq!(got, &plain[off..off + len], "range {off}+{len}");
    }
    // A third rotten drive is more than parity: a correct prefix, then an error.
    damage_frames(dir.path(), "d1", frame_size, |f| f[40] ^= 1);
    let (sent, end) = read_plain_until(&l, "k", 80, 0, size as u64).await;
    assert!(matches!(end, Err(ObjectError::ReadQuorum { .. })), "{end:?}");
    assert_eq!(sent, &plain[..sent.len()], "only authenticated bytes are sent");
}

/// The background scan keeps to its speed (objects per second), so its cost per second stays
/// bounded however many objects there are; a scan asked for is not held to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_scan_keeps_to_its_speed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drives = open_drives(dir.path(), 4).await;
    let l = layer(&drives, &[]).await;
    l.make_bucket("b").await.expect("bucket");
    for i in 0..30 {
        l.put_object("b", &format!("k{i:02}"), &mut body(&pattern(100, i)), PutOptions::default())
            .await
            .expect("put");
    }
    l.healer().set_config(strata_object::ScanConfig { speed: Some(20.0), ..Default::default() });
    let began = std::time::Instant::now();
    l.heal_scan_paced().await;
    let paced = began.elapsed();
    let scan = l.healer().status().scan;
    assert_eq!(scan.objects_scanned, 30, "{scan:?}");
    assert!(scan.paced, "{scan:?}");
    assert_eq!(scan.position, Some(("b".to_owned(), "k29".to_owned())));
    // 30 objects at 20 a second: the last one's turn comes 1.5 s after the start.
    assert!(paced >= std::time::Duration::from_millis(1450), "paced scan took {paced:?}");
    let began = std::time::Instant::now();
    l.heal_scan(strata_object::HealScope::default()).await;
    let asked = began.elapsed();
    assert_eq!(l.healer().status().scan.objects_scanned, 30);
    assert!(asked < paced, "a scan asked for took {asked:?}, the paced one {paced:?}");
}
