//! From drive arguments to formatted, opened drives grouped into pools and sets.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use strata_cluster::endpoint;
use strata_cluster::format::{resolve, DriveAction, DriveState};
use strata_cluster::layout::{plan, Layout};
use strata_drive::{Drive, LocalDrive};
use strata_object::DriveSlot;
use uuid::Uuid;

pub struct Deployment {
    pub id: Uuid,
    /// pools → sets → drives in set order.
    pub pools: Vec<Vec<Vec<DriveSlot>>>,
    pub drive_count: usize,
    pub set_drive_count: usize,
    pub parity_count: usize,
    /// Blank drives given their slot's format at this start (replaced drives) while others
    /// already held the deployment: their sets need refilling.
    pub replaced_drives: usize,
    /// The local drives that opened, with their slot's format record (for re-formatting a
    /// drive wiped or swapped while the server runs).
    pub locals: Vec<(Arc<LocalDrive>, Vec<u8>)>,
}

/// The pools of drive folders the arguments describe. URL endpoints of this node (`--address`)
/// are its folders; drives on other nodes need distributed mode.
fn pools_of(args: &[String], address: SocketAddr) -> Result<Vec<Vec<PathBuf>>> {
    let pools = endpoint::pools(args)?;
    let me = address.to_string();
    let mut remote: Vec<String> = Vec::new();
    for n in pools.iter().flat_map(|p| endpoint::nodes(p)).filter(|n| *n != me) {
        if !remote.contains(&n) {
            remote.push(n);
        }
    }
    if !remote.is_empty() {
        bail!(
            "drives on {} are on other nodes than this one ({me}); distributed mode is not available in this build yet",
            remote.join(", ")
        );
    }
    Ok(pools.into_iter().map(|p| p.into_iter().map(|e| PathBuf::from(e.path)).collect()).collect())
}

/// Opens every drive, checks or writes format records, and returns the deployment.
pub async fn open_deployment(
    args: &[String],
    address: SocketAddr,
    parity: Option<usize>,
) -> Result<Deployment> {
    let pools = pools_of(args, address)?;
    let layouts: Vec<Layout> = pools
        .iter()
        .map(|p| plan(p.len(), parity).with_context(|| format!("cannot lay out {} drives", p.len())))
        .collect::<Result<_>>()?;
    if layouts.windows(2).any(|w| w[0].parity_count != w[1].parity_count) {
        bail!("every pool must use the same parity; set STRATA_STORAGE_CLASS_STANDARD=EC:N");
    }
    let paths: Vec<PathBuf> = pools.iter().flatten().cloned().collect();
    let mut drives: Vec<Option<Arc<LocalDrive>>> = Vec::new();
    for path in &paths {
        let p = path.clone();
        let opened = tokio::task::spawn_blocking(move || LocalDrive::open(&p)).await?;
        match opened {
            Ok(d) => drives.push(Some(Arc::new(d))),
            Err(e) => {
                tracing::warn!(drive = %path.display(), error = %e, "drive is offline");
                drives.push(None);
            }
        }
    }
    let mut states = Vec::new();
    for d in &drives {
        states.push(match d {
            None => DriveState::Offline,
            Some(d) => match d.read_format().await {
                Ok(Some(bytes)) => DriveState::Formatted(bytes),
                Ok(None) => DriveState::Blank,
                Err(e) => {
                    tracing::warn!(drive = d.endpoint(), error = %e, "cannot read the format record");
                    DriveState::Offline
                }
            },
        });
    }
    let plan = resolve(&layouts, &states, Uuid::new_v4).map_err(|e| {
        let name = |i: usize| paths.get(i).map(|p| p.display().to_string()).unwrap_or_default();
        use strata_cluster::FormatError as F;
        let detail = match &e {
            F::Corrupt(i, _)
            | F::ForeignDrive(i, _)
            | F::LayoutChanged(i)
            | F::WrongSlot { index: i, .. } => {
                format!(" (drive {})", name(*i))
            }
            F::NotAllOnline(list) => {
                format!(" (offline: {})", list.iter().map(|i| name(*i)).collect::<Vec<_>>().join(", "))
            }
            F::NoQuorum { .. } => String::new(),
        };
        anyhow::anyhow!("refusing to start: {e}{detail}")
    })?;
    let writes = plan.actions.iter().filter(|a| matches!(a, DriveAction::Write(_))).count();
    let rebuilt = drives.iter().flatten().filter(|d| d.index_was_rebuilt()).count();
    let replaced_drives = if writes < plan.actions.len() { writes + rebuilt } else { 0 };
    let mut slots: Vec<DriveSlot> = Vec::new();
    let mut locals = Vec::new();
    for (d, action) in drives.into_iter().zip(&plan.actions) {
        slots.push(match (d, action) {
            (Some(d), DriveAction::Use(f)) => {
                locals.push((d.clone(), f.to_json()));
                Some(d as Arc<dyn Drive>)
            }
            (Some(d), DriveAction::Write(f)) => {
                d.write_format(f.to_json()).await.with_context(|| format!("formatting {}", d.endpoint()))?;
                locals.push((d.clone(), f.to_json()));
                Some(d as Arc<dyn Drive>)
            }
            _ => None,
        });
    }
    let mut out_pools = Vec::new();
    let mut offset = 0;
    for layout in &layouts {
        let pool_slots = &slots[offset..offset + layout.sets.len() * layout.set_drive_count];
        out_pools.push(
            layout
                .sets
                .iter()
                .map(|s| s.drive_indexes.iter().map(|&i| pool_slots[i].clone()).collect())
                .collect(),
        );
        offset += pool_slots.len();
    }
    Ok(Deployment {
        id: plan.deployment_id,
        pools: out_pools,
        drive_count: paths.len(),
        set_drive_count: layouts[0].set_drive_count,
        parity_count: layouts[0].parity_count,
        replaced_drives,
        locals,
    })
}

/// Reports every drive operation of the deployment to the metrics.
struct DriveMetrics(Arc<strata_metrics::Metrics>);

impl strata_drive::DriveObserver for DriveMetrics {
    fn observe(&self, drive: &str, op: &'static str, seconds: f64, failed: bool) {
        self.0.observe_drive_op(drive, op, seconds, failed);
    }
}

/// Wraps every drive so its operations are counted, timed and their errors recorded.
pub fn meter(deployment: &mut Deployment, metrics: Arc<strata_metrics::Metrics>) {
    let observer: Arc<dyn strata_drive::DriveObserver> = Arc::new(DriveMetrics(metrics));
    for slot in deployment.pools.iter_mut().flatten().flatten() {
        if let Some(d) = slot.take() {
            *slot = Some(Arc::new(strata_drive::Metered::new(d, observer.clone())) as Arc<dyn Drive>);
        }
    }
}

/// Watches the local drives: one whose folder turns up empty while the server runs (wiped, or a
/// new drive mounted in its place) is given its slot's format again, gets the buckets, and a
/// heal scan refills it; a drive that comes back after being offline also gets a heal scan (it
/// missed the writes made meanwhile).
pub fn spawn_drive_monitor(
    locals: Vec<(Arc<LocalDrive>, Vec<u8>)>,
    layer: Arc<strata_object::ObjectLayer>,
    every: std::time::Duration,
) {
    tokio::spawn(async move {
        let mut refill_pending = false;
        let mut online: Vec<bool> = vec![true; locals.len()];
        loop {
            tokio::time::sleep(every).await;
            for (i, (drive, _)) in locals.iter().enumerate() {
                let now = matches!(drive.read_format().await, Ok(Some(_)));
                if now && !online[i] {
                    tracing::info!(drive = drive.endpoint(), "drive is back: healing what it missed");
                    refill_pending = true;
                }
                online[i] = now;
            }
            for (drive, format) in &locals {
                let (d, f) = (drive.clone(), format.clone());
                let reformatted = tokio::task::spawn_blocking(move || {
                    if !d.root_is_blank() {
                        return None;
                    }
                    Some(d.reinitialize(&f))
                })
                .await
                .ok()
                .flatten();
                match reformatted {
                    Some(Ok(())) => {
                        tracing::warn!(
                            drive = drive.endpoint(),
                            "blank drive in its slot: formatted again; refilling it"
                        );
                        layer.heal_buckets_now().await;
                        refill_pending = true;
                    }
                    Some(Err(e)) => {
                        tracing::warn!(drive = drive.endpoint(), error = %e, "cannot format the replaced drive")
                    }
                    None => {}
                }
            }
            if refill_pending && layer.start_heal_scan(strata_object::HealScope::default()) {
                refill_pending = false;
            }
        }
    });
}
