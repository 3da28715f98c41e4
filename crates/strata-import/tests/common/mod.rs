//! What the tests against MinIO's drives share: unpacking a fixture's drives.

use std::path::{Path, PathBuf};

/// The drives `d1`..`d<count>` of the fixture at `folder`, unpacked from its `drives.tar.gz`
/// into a temp folder (the fixture itself is never written).
pub fn unpack(folder: &Path, count: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
    let archive = folder.join("drives.tar.gz");
    assert!(
        archive.is_file(),
        "{} is missing: the MinIO fixture is needed (set STRATA_MINIO_FIXTURE to its folder)",
        archive.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar could not unpack {}", archive.display());
    let drives = (1..=count).map(|i| dir.path().join(format!("d{i}"))).collect();
    (dir, drives)
}
