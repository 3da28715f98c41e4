//! The in-place import on the MinIO fixture's drives (see `minio_fixture.rs`), where some copies
//! of `xl.meta` are unreadable: an object still readable on enough drives is imported from them
//! (the unreadable copies reported), one that is not is left to MinIO and named, and `--commit`
//! is refused while it is there.

mod common;

use std::path::{Path, PathBuf};

use strata_drive::LocalDrive;
use strata_import::minio::takeover::{commit, take_over, TakeoverReport};
use strata_import::minio::Deployment;

fn unpack() -> (tempfile::TempDir, Vec<PathBuf>) {
    let fixture = std::env::var_os("STRATA_MINIO_FIXTURE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/minio-ec4"));
    common::unpack(&fixture, 4)
}

/// Spoils the checksummed part of an `xl.meta`.
fn spoil(path: &Path) {
    let mut bytes = std::fs::read(path).expect("xl.meta");
    bytes[20] ^= 0x55;
    std::fs::write(path, bytes).expect("write");
}

fn import(drives: &[PathBuf]) -> TakeoverReport {
    let deployment = Deployment::open(drives).expect("a MinIO deployment");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(take_over(&deployment, 4, &mut |_: &TakeoverReport| {})).expect("imports")
}

#[test]
fn unreadable_copies_are_read_around_or_left_to_minio() {
    let (_dir, drives) = unpack();
    // obj-1: three of four copies spoiled (one left: fewer than the two its versions need).
    for d in &drives[..3] {
        spoil(&d.join("plain/sizes/obj-1/xl.meta"));
    }
    // obj-1000: one copy spoiled.
    spoil(&drives[3].join("plain/sizes/obj-1000/xl.meta"));
    let report = import(&drives);
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.key.as_str()).collect();
    assert!(skipped.contains(&"sizes/obj-1"), "{skipped:?}");
    let why = &report.skipped.iter().find(|s| s.key == "sizes/obj-1").expect("named").why;
    assert!(why.contains("could not be read on 3 drives"), "{why}");
    assert!(!skipped.contains(&"sizes/obj-1000"), "{skipped:?}");
    assert_eq!(report.unreadable.len(), 1, "{:?}", report.unreadable);
    assert!(report.unreadable[0].starts_with(&drives[3].display().to_string()), "{:?}", report.unreadable);

    // obj-1000 is on the three drives that could read it; not yet on the fourth (healing's
    // work), and obj-1 on none.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for (i, d) in drives.iter().enumerate() {
        let drive = LocalDrive::open(d).expect("a Strata drive now");
        let has = |key: &str| runtime.block_on(drive.read_record("plain", key, false)).is_ok();
        assert_eq!(has("sizes/obj-1000"), i < 3, "obj-1000 on drive {i}");
        assert!(!has("sizes/obj-1"), "obj-1 on drive {i}");
        assert!(has("sizes/obj-3145745"), "the rest on drive {i}");
    }
    let refused = commit(&drives).expect_err("a version left on MinIO's side");
    assert!(refused.to_string().contains("sizes/obj-1"), "{refused}");
    assert!(drives[0].join(".minio.sys").is_dir(), "nothing removed");
}
