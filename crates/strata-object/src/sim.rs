//! Object layers on simulated drives, for power-cut tests: [`layer_on`] opens (or formats) a
//! set of drives on one [`SimFs`] and the layer over them, as the server does on real folders,
//! so a test can run a workload, take power cuts and open what each cut boots into.

use std::path::PathBuf;
use std::sync::Arc;

use strata_drive::sim::SimFs;
use strata_drive::{Checkpoints, Drive, LocalDrive, OpenOptions};
use uuid::Uuid;

use crate::{DriveSlot, ObjectLayer};

/// Batches between checkpoints of a simulated drive's index (see `strata_drive::Checkpoints`).
pub const CHECKPOINT_BATCHES: u64 = 3;

/// The folder of simulated drive `i`.
pub fn drive_root(i: usize) -> PathBuf {
    PathBuf::from(format!("/d{i}"))
}

/// Opens `drives` drives on `fs` (formatting blank ones) and one erasure set over them with the
/// default parity. Errors say which drive did not open. Each drive's index is checkpointed every
/// [`CHECKPOINT_BATCHES`] batches, so power cuts fall before, during and after checkpoints.
pub async fn layer_on(fs: &SimFs, drives: usize) -> Result<(ObjectLayer, Vec<Arc<LocalDrive>>), String> {
    let options = OpenOptions {
        index_checkpoints: Checkpoints { batches: CHECKPOINT_BATCHES, ..Checkpoints::default() },
        ..OpenOptions::default()
    };
    let mut opened = Vec::new();
    for i in 0..drives {
        let d = LocalDrive::open_on(Arc::new(fs.clone()), &drive_root(i), options)
            .map_err(|e| format!("drive {i} does not open: {e}"))?;
        if d.read_format().await.map_err(|e| e.to_string())?.is_none() {
            d.write_format(b"{}".to_vec()).await.map_err(|e| e.to_string())?;
        }
        opened.push(Arc::new(d));
    }
    let slots: Vec<DriveSlot> = opened.iter().map(|d| Some(d.clone() as Arc<dyn Drive>)).collect();
    let parity = strata_cluster::layout::default_parity(drives);
    let layer = ObjectLayer::new(Uuid::from_u128(7), vec![vec![slots]], parity)
        .await
        .map_err(|e| format!("object layer: {e}"))?;
    Ok((layer, opened))
}
