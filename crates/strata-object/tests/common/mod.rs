//! Shared by the fault and race tests: a set of `LocalDrive`s, each behind a `FaultyDrive`, under
//! one object layer with bucket `b`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::faulty_fs::FaultyFs;
use strata_drive::{Drive, FaultyDrive, LocalDrive, OpenOptions};
use strata_object::{BodyError, BodyReader, DriveSlot, LayerOptions, ObjectError, ObjectLayer};
use uuid::Uuid;

pub struct VecBody {
    data: Bytes,
    pos: usize,
    chunk: usize,
}

#[async_trait]
impl BodyReader for VecBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let end = (self.pos + self.chunk).min(self.data.len());
        let c = self.data.slice(self.pos..end);
        self.pos = end;
        Ok(Some(c))
    }
    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

pub fn body(data: &Bytes) -> VecBody {
    VecBody { data: data.clone(), pos: 0, chunk: 65_536 + 7 }
}

/// Deterministic bytes (xorshift).
pub fn pattern(len: usize, seed: u64) -> Bytes {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

pub async fn read_all(l: &ObjectLayer, key: &str, offset: u64, len: u64) -> Result<Vec<u8>, ObjectError> {
    l.open_object("b", key, true).await?.read_range(offset, len).await
}

/// The whole of version `which` of `bucket/key`.
pub async fn read_version(
    l: &ObjectLayer,
    bucket: &str,
    key: &str,
    which: strata_object::VersionRef,
) -> Result<Vec<u8>, ObjectError> {
    l.open_object_version(bucket, key, which, true).await?.read_whole().await
}

/// The whole object, or `None` when it does not exist.
pub async fn get(l: &ObjectLayer, key: &str) -> Option<Bytes> {
    match l.open_object("b", key, false).await {
        Err(ObjectError::ObjectNotFound) => None,
        Err(e) => panic!("stat {key}: {e}"),
        Ok(open) => {
            let size = open.info.size;
            Some(read_all(l, key, 0, size).await.unwrap_or_else(|e| panic!("read {key}: {e}")).into())
        }
    }
}

pub struct Rig {
    pub dir: tempfile::TempDir,
    pub local: Vec<Arc<LocalDrive>>,
    pub faulty: Vec<Arc<FaultyDrive>>,
    /// Each drive's filesystem, when the rig was made over faulty ones ([`Rig::on_faulty_fs`]).
    pub fs: Vec<FaultyFs>,
    pub layer: ObjectLayer,
}

impl Rig {
    pub async fn new(n: usize) -> Self {
        Self::with_time_out(n, Duration::from_secs(30)).await
    }

    pub async fn with_time_out(n: usize, drive_op_timeout: Duration) -> Self {
        Self::build(n, drive_op_timeout, false).await
    }

    /// `n` drives, each on a filesystem of its own whose calls can be made to fail.
    pub async fn on_faulty_fs(n: usize) -> Self {
        Self::build(n, Duration::from_secs(30), true).await
    }

    async fn build(n: usize, drive_op_timeout: Duration, faulty_fs: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut local = Vec::new();
        let mut faulty = Vec::new();
        let mut fs = Vec::new();
        for i in 0..n {
            let root = dir.path().join(format!("d{i}"));
            let d = if faulty_fs {
                let f = FaultyFs::real();
                fs.push(f.clone());
                LocalDrive::open_on(Arc::new(f), &root, OpenOptions::default())
            } else {
                LocalDrive::open(&root)
            };
            let d = d.expect("open drive");
            d.write_format(b"{}".to_vec()).await.expect("write format");
            let d = Arc::new(d);
            faulty.push(Arc::new(FaultyDrive::new(d.clone())));
            local.push(d);
        }
        let slots: Vec<DriveSlot> = faulty.iter().map(|d| Some(d.clone() as Arc<dyn Drive>)).collect();
        let parity = strata_cluster::layout::default_parity(n);
        let options = LayerOptions { drive_op_timeout, ..Default::default() };
        let layer = ObjectLayer::new_with(Uuid::from_u128(1), vec![vec![slots]], parity, None, options)
            .await
            .expect("layer");
        layer.make_bucket("b").await.expect("bucket");
        Self { dir, local, faulty, fs, layer }
    }

    /// Temp shard files on every drive.
    pub fn temp_files(&self) -> usize {
        (0..self.local.len())
            .map(|i| {
                let tmp = self.dir.path().join(format!("d{i}/.strata.sys/tmp"));
                std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0)
            })
            .sum()
    }

    /// Shard files in place on drive `i`.
    pub fn data_files(&self, i: usize) -> usize {
        let data = self.dir.path().join(format!("d{i}/.strata.sys/data"));
        std::fs::read_dir(data)
            .map(|dirs| {
                dirs.flatten().map(|d| std::fs::read_dir(d.path()).map(|f| f.count()).unwrap_or(0)).sum()
            })
            .unwrap_or(0)
    }

    pub fn clear_faults(&self) {
        for d in &self.faulty {
            d.clear();
        }
    }
}
