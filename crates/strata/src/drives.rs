//! From drive arguments to formatted, opened drives grouped into pools and sets.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use strata_cluster::endpoint;
use strata_cluster::format::{resolve, DriveAction, DriveState};
use strata_cluster::layout::{plan, Layout};
use strata_cluster::placement::Placement;
use strata_cluster::{Format, FormatError};
use strata_drive::DriveOps;
use strata_drive::{Drive, LocalDrive, OpenError, OpenOptions};
use strata_object::DriveSlot;
use uuid::Uuid;

pub struct Deployment {
    pub id: Uuid,
    /// How objects find their set (Strata's, or a MinIO deployment's taken over).
    pub placement: Placement,
    /// Pools from this one on are added by this start (see `FormatPlan::known_pools`).
    pub known_pools: usize,
    /// Each pool's number in the records (see `FormatPlan::pool_numbers`).
    pub pool_numbers: Vec<usize>,
    /// Each pool's argument on the command line (MinIO's admin API names pools by it).
    pub pool_args: Vec<String>,
    /// pools → sets → drives in set order.
    pub pools: Vec<Vec<Vec<DriveSlot>>>,
    pub drive_count: usize,
    pub set_drive_count: usize,
    pub parity_count: usize,
    /// Blank drives given their slot's format at this start (replaced drives) while others
    /// already held the deployment: their sets need refilling.
    pub replaced_drives: usize,
    /// Every drive was blank: this start formed the deployment.
    pub first_start: bool,
    /// The local drives that opened, with their slot's format record (for re-formatting a
    /// drive wiped or swapped while the server runs).
    pub locals: Vec<(Arc<LocalDrive>, Vec<u8>)>,
}

/// How this node talks to the others, when the deployment spans several nodes.
pub struct Distributed {
    /// This node's `host:port` as the endpoints name it.
    pub me: String,
    /// The node that formats a new deployment and runs the background scanner: the node of the
    /// first drive.
    pub leader: bool,
    pub rpc: Arc<strata_rpc::RpcServer>,
    pub peers: Vec<Arc<strata_rpc::NodeClient>>,
    pub locks: Arc<strata_rpc::LockServer>,
}

/// Drive arguments resolved against this node: every endpoint, opened where it is local.
pub struct Prepared {
    pools: Vec<Vec<endpoint::Endpoint>>,
    /// Each pool's argument (see [`endpoint::pool_args`]).
    pool_args: Vec<String>,
    /// Per endpoint (flattened over pools): the drive, local or remote; `None` = a local drive
    /// that did not open.
    drives: Vec<Option<Arc<dyn Drive>>>,
    /// Per endpoint: the local drive, when it is on this node and opened.
    locals: Vec<Option<Arc<LocalDrive>>>,
    /// Per endpoint: why a local drive did not open, for the start-up error that names it.
    open_errors: Vec<Option<String>>,
    pub distributed: Option<Distributed>,
}

impl Prepared {
    /// The folder of this node's first local drive that opened: node-local state (the
    /// notification queues) lives in its system folder.
    pub fn first_local_folder(&self) -> Option<PathBuf> {
        let endpoints = self.pools.iter().flatten();
        endpoints.zip(&self.locals).find(|(_, l)| l.is_some()).map(|(e, _)| PathBuf::from(&e.path))
    }
}

/// Why a local drive's path cannot be a drive, said plainly (the open error of a file given as
/// a drive is an OS error code far from its cause).
fn path_problem(path: &std::path::Path) -> Option<&'static str> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => Some("not a directory"),
        _ => None,
    }
}

/// Whether `node` (`host:port`) names this node listening on `address`: the same address, or,
/// when listening on all interfaces, the same port on an address of one of them.
fn is_this_node(node: &str, address: SocketAddr) -> bool {
    if node == address.to_string() {
        return true;
    }
    let Some((_, port)) = node.rsplit_once(':') else { return false };
    if port.parse::<u16>().ok() != Some(address.port()) {
        return false;
    }
    let Ok(resolved) = std::net::ToSocketAddrs::to_socket_addrs(node) else { return false };
    resolved.into_iter().any(|a| {
        if address.ip().is_unspecified() {
            // An address we can bind is one of ours.
            std::net::UdpSocket::bind((a.ip(), 0)).is_ok()
        } else {
            a.ip() == address.ip()
        }
    })
}

/// Client settings for the other nodes: signed with the key, over TLS trusting the certificate
/// folder's `public.crt` and `CAs/` when the server has certificates.
fn client_config(
    key: strata_rpc::RpcKey,
    address: SocketAddr,
    certs_dir: Option<&std::path::Path>,
) -> Result<strata_rpc::ClientConfig> {
    let tls = match certs_dir {
        None => None,
        Some(dir) => {
            use rustls::pki_types::pem::PemObject;
            use rustls::pki_types::CertificateDer;
            let mut roots = rustls::RootCertStore::empty();
            let mut files = vec![dir.join("public.crt")];
            if let Ok(entries) = std::fs::read_dir(dir.join("CAs")) {
                files.extend(entries.flatten().map(|e| e.path()));
            }
            for file in files {
                if let Ok(certs) = CertificateDer::pem_file_iter(&file) {
                    for c in certs.flatten() {
                        let _ = roots.add(c);
                    }
                }
            }
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .context("TLS for the other nodes")?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Some(Arc::new(config))
        }
    };
    let timeout = std::env::var("STRATA_RPC_TIMEOUT")
        .ok()
        .and_then(|v| strata_types::time::parse_duration(&v))
        .unwrap_or(strata_types::limits::RPC_TIMEOUT);
    Ok(strata_rpc::ClientConfig {
        key,
        tls,
        local_ip: (!address.ip().is_unspecified()).then(|| address.ip()),
        timeout,
        connect_timeout: strata_types::limits::RPC_CONNECT_TIMEOUT,
    })
}

/// Parses the drive arguments, opens this node's drives and, when other nodes hold drives,
/// sets up the RPC server (to be served before the deployment forms) and the peer clients.
pub async fn prepare(
    args: &[String],
    address: SocketAddr,
    root: (&str, &str),
    certs_dir: Option<&std::path::Path>,
    parity: Option<usize>,
) -> Result<Prepared> {
    let pools = endpoint::pools(args)?;
    let flat: Vec<&endpoint::Endpoint> = pools.iter().flatten().collect();
    // Name resolution and bind probes block: keep them off the runtime's workers.
    let nodes: Vec<Option<String>> = flat.iter().map(|e| e.node.clone()).collect();
    let mine: Vec<bool> = tokio::task::spawn_blocking(move || {
        nodes.iter().map(|n| n.as_deref().is_none_or(|n| is_this_node(n, address))).collect()
    })
    .await?;
    if !mine.iter().any(|m| *m) {
        bail!(
            "none of the drives is on this node ({address}); start each node with --address set to \
             the host:port its drives are listed under"
        );
    }
    let mut locals: Vec<Option<Arc<LocalDrive>>> = Vec::new();
    let mut corrupt = Vec::new();
    let mut open_errors = vec![None; flat.len()];
    for (e, m) in flat.iter().zip(&mine) {
        if !m {
            locals.push(None);
            continue;
        }
        let p = PathBuf::from(&e.path);
        if let Some(problem) = path_problem(&p) {
            tracing::warn!(drive = %e, "drive is offline: {problem}");
            open_errors[locals.len()] = Some(problem.to_owned());
            locals.push(None);
            continue;
        }
        let opened = tokio::task::spawn_blocking(move || LocalDrive::open(&p)).await?;
        match opened {
            Ok(d) => locals.push(Some(Arc::new(d))),
            Err(e2 @ OpenError::InUse(_)) => bail!("refusing to start: {e2}"),
            Err(OpenError::IndexCorrupt { why, .. }) => {
                // Decided with the layout in view (see `set_aside_corrupt_indexes`).
                tracing::warn!(drive = %e, error = %why, "the drive's metadata index does not open");
                corrupt.push(locals.len());
                locals.push(None);
            }
            Err(e2) => {
                tracing::warn!(drive = %e, error = %e2, "drive is offline");
                open_errors[locals.len()] = Some(e2.to_string());
                locals.push(None);
            }
        }
    }
    if !corrupt.is_empty() {
        let layouts: Vec<Layout> = pools
            .iter()
            .map(|p| plan(p.len(), parity).with_context(|| format!("cannot lay out {} drives", p.len())))
            .collect::<Result<_>>()?;
        set_aside_corrupt_indexes(&pools, &mut locals, &corrupt, &layouts).await?;
    }
    let distributed = mine.iter().any(|m| !m);
    let mut drives: Vec<Option<Arc<dyn Drive>>> =
        locals.iter().map(|l| l.clone().map(|d| d as Arc<dyn Drive>)).collect();
    let mut dist = None;
    if distributed {
        // This node's lock table: it grants this node's share of every lock, and fences the
        // changes made to this node's drives, by this node's requests (here) or by peers'
        // (in the RPC server).
        let locks = Arc::new(strata_rpc::LockServer::default());
        for slot in drives.iter_mut() {
            if let Some(d) = slot.take() {
                *slot = Some(Arc::new(strata_rpc::FencedLocal::new(d, locks.clone())) as Arc<dyn Drive>);
            }
        }
        let key = strata_rpc::RpcKey::derive(root.0, root.1);
        let config = client_config(key.clone(), address, certs_dir)?;
        let mut me = String::new();
        let mut peers: Vec<Arc<strata_rpc::NodeClient>> = Vec::new();
        for (i, e) in flat.iter().enumerate() {
            let Some(node) = &e.node else { continue };
            if mine[i] {
                me = node.clone();
                continue;
            }
            let client = match peers.iter().find(|p| p.name == *node) {
                Some(p) => p.clone(),
                None => {
                    let p = strata_rpc::NodeClient::new(node, &config);
                    peers.push(p.clone());
                    p
                }
            };
            drives[i] = Some(Arc::new(strata_rpc::RemoteDrive::new(client, &e.path)) as Arc<dyn Drive>);
        }
        let served: std::collections::HashMap<String, Arc<dyn Drive>> = flat
            .iter()
            .zip(&locals)
            .filter_map(|(e, l)| l.clone().map(|d| (e.path.clone(), d as Arc<dyn Drive>)))
            .collect();
        let leader = flat.first().is_some_and(|e| e.node.as_deref() == Some(me.as_str()));
        dist = Some(Distributed {
            rpc: Arc::new(strata_rpc::RpcServer::new(key, served, locks.clone())),
            me,
            leader,
            peers,
            locks,
        });
    }
    let pool_args = endpoint::pool_args(args);
    Ok(Prepared { pools, pool_args, drives, locals, open_errors, distributed: dist })
}

/// Checks or writes format records and returns the deployment. Alone, every drive is read once;
/// over several nodes this waits (saying who is missing) until the drives agree on a format and
/// every set has a write quorum of drives reachable. A new deployment is formatted by the
/// leader alone, after every drive of every node answered blank.
pub async fn open_deployment(prepared: &mut Prepared, parity: Option<usize>) -> Result<Deployment> {
    let planned: Vec<Layout> = prepared
        .pools
        .iter()
        .map(|p| plan(p.len(), parity).with_context(|| format!("cannot lay out {} drives", p.len())))
        .collect::<Result<_>>()?;
    if planned.windows(2).any(|w| w[0].parity_count != w[1].parity_count) {
        bail!("every pool must use the same parity; set STRATA_STORAGE_CLASS_STANDARD=EC:N");
    }
    // A drive that did not open is named with the reason, so the refusal says what is wrong.
    let names: Vec<String> = (prepared.pools.iter().flatten().zip(&prepared.open_errors))
        .map(|(e, why)| match why {
            Some(why) => format!("{e}: {why}"),
            None => e.to_string(),
        })
        .collect();
    let name = |i: usize| names.get(i).cloned().unwrap_or_default();
    let distributed = prepared.distributed.is_some();
    let leader = prepared.distributed.as_ref().is_none_or(|d| d.leader);
    let started = std::time::Instant::now();
    let mut last_said = None::<std::time::Instant>;
    let (plan, states, layouts) = loop {
        let states: Vec<DriveState> = futures_util::future::join_all(prepared.drives.iter().map(|d| async move {
            match d {
                None => DriveState::Offline,
                Some(d) => match d.read_format().await {
                    Ok(Some(bytes)) => DriveState::Formatted(bytes),
                    Ok(None) => DriveState::Blank,
                    Err(e) => {
                        tracing::debug!(drive = d.endpoint(), error = %e, "cannot read the format record");
                        DriveState::Offline
                    }
                },
            }
        }))
        .await;
        let offline: Vec<usize> = states
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, DriveState::Offline))
            .map(|(i, _)| i)
            .collect();
        let layouts = layouts_for(&planned, &states, parity);
        let waiting = match resolve(&layouts, &states, Uuid::new_v4) {
            Ok(plan) => {
                let first_start = states.iter().all(|s| matches!(s, DriveState::Blank));
                let short = short_sets(&layouts, &states);
                if first_start && !leader {
                    Some(
                        "every drive is blank: waiting for the first node to format the deployment"
                            .to_owned(),
                    )
                } else if !short.is_empty() && distributed {
                    Some(format!("sets without a write quorum of drives reachable: {}", short.join(", ")))
                } else {
                    break (plan, states, layouts);
                }
            }
            Err(
                e @ (FormatError::NotAllOnline(_)
                | FormatError::NoQuorum { .. }
                | FormatError::PoolOffline { .. }),
            ) if distributed => Some(e.to_string()),
            Err(e) => return Err(format_error(e, &name)),
        };
        if let Some(why) = waiting {
            if last_said.is_none_or(|t| t.elapsed() >= strata_types::limits::FORMING_LOG_INTERVAL) {
                let missing = missing_nodes(prepared, &offline);
                tracing::warn!(
                    waited_s = started.elapsed().as_secs(),
                    missing = %missing,
                    "waiting for the other nodes: {why}"
                );
                last_said = Some(std::time::Instant::now());
            }
            tokio::time::sleep(strata_types::limits::FORMING_RETRY_INTERVAL).await;
        }
    };
    // Every drive blank: a new deployment (not a pool added to one, whose records are rewritten).
    let first_start = states.iter().all(|s| matches!(s, DriveState::Blank));
    let mut local_writes = 0;
    let mut slots: Vec<DriveSlot> = Vec::new();
    let mut locals = Vec::new();
    // Drives of the pools the records already named: a blank one among them was replaced.
    let known_drives: usize = prepared.pools.iter().take(plan.known_pools).map(Vec::len).sum();
    for (i, (d, action)) in prepared.drives.iter().zip(&plan.actions).enumerate() {
        let local = prepared.locals[i].clone();
        let online = !matches!(states[i], DriveState::Offline);
        let format = match action {
            DriveAction::Use(f) => Some(f.to_json()),
            DriveAction::Write(f) => {
                // A node formats its own drives; the leader formats every drive of a new deployment.
                if local.is_some() || (first_start && leader) {
                    if let Some(d) = d {
                        write_format_patiently(d.as_ref(), f.to_json())
                            .await
                            .with_context(|| format!("formatting {}", name(i)))?;
                        if local.is_some() && i < known_drives && matches!(states[i], DriveState::Blank) {
                            local_writes += 1;
                        }
                    }
                }
                Some(f.to_json())
            }
            _ => None,
        };
        if let (Some(l), Some(f)) = (&local, &format) {
            locals.push((l.clone(), f.clone()));
        }
        // Remote drives stay in their slot even when down now: their node's health decides.
        slots.push(match (d, local.is_some()) {
            (Some(d), true) if online => Some(d.clone()),
            (Some(d), false) => Some(d.clone()),
            _ => None,
        });
    }
    let rebuilt = prepared.locals.iter().flatten().filter(|d| d.index_was_rebuilt()).count();
    let replaced_drives = if first_start { 0 } else { local_writes + rebuilt };
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
        placement: plan.placement,
        known_pools: plan.known_pools,
        pool_numbers: plan.pool_numbers.clone(),
        pool_args: prepared.pool_args.clone(),
        pools: out_pools,
        drive_count: names.len(),
        set_drive_count: layouts[0].set_drive_count,
        parity_count: layouts[0].parity_count,
        replaced_drives,
        first_start,
        locals,
    })
}

impl Deployment {
    /// The object layer over the deployment's drives (taken out of it), placing objects by the
    /// rule its format records name.
    pub async fn take_layer(
        &mut self,
        cluster: Option<strata_object::Cluster>,
    ) -> Result<strata_object::ObjectLayer> {
        let options = strata_object::LayerOptions {
            placement: self.placement,
            added_pools_from: (self.known_pools < self.pools.len()).then_some(self.known_pools),
            pool_numbers: self.pool_numbers.clone(),
            pool_args: self.pool_args.clone(),
            ..Default::default()
        };
        let pools = std::mem::take(&mut self.pools);
        Ok(strata_object::ObjectLayer::new_with(self.id, pools, self.parity_count, cluster, options).await?)
    }
}

/// Opens `drives` as a Strata deployment in this process alone (formatting blank ones, as a
/// first start does), its system bucket ready: what the imports write through. `root` only
/// keys node RPC, which one local process does not use.
pub async fn open_alone(drives: &[String], root: (&str, &str)) -> Result<Arc<strata_object::ObjectLayer>> {
    let address = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut prepared = prepare(drives, address, root, None, None).await?;
    let mut deployment = open_deployment(&mut prepared, None).await?;
    let layer = deployment.take_layer(None).await.context("opening the drives")?;
    strata_system::prepare(&layer).await.context("the system bucket")?;
    Ok(Arc::new(layer))
}

/// The pools' layouts: as planned from the drive list, unless the drives' format records are
/// those of a MinIO deployment taken over, whose sets stay MinIO's (consecutive runs of the
/// list). The deployment is the one most drives' records name (a stray drive of another does not
/// decide it). A record whose shape does not fit the drive list keeps the plan, which then
/// refuses the drives as a changed layout.
fn layouts_for(planned: &[Layout], states: &[DriveState], parity: Option<usize>) -> Vec<Layout> {
    let Some(format) = majority_format(states).filter(|f| !f.placement.is_strata()) else {
        return planned.to_vec();
    };
    if format.pools.len() != planned.len() {
        return planned.to_vec();
    }
    (format.pools.iter().zip(planned))
        .map(|(sets, plan)| {
            let size = sets.first().map_or(0, Vec::len);
            let fits = sets.len() * size == plan.sets.len() * plan.set_drive_count;
            match strata_cluster::layout::consecutive(sets.len(), size, parity) {
                Ok(layout) if fits => layout,
                _ => plan.clone(),
            }
        })
        .collect()
}

/// The format record of the deployment most drives belong to (by deployment id, sets and
/// placement; on a tie, the first in the drive list), if any drive has one.
fn majority_format(states: &[DriveState]) -> Option<Format> {
    let formats: Vec<Format> = states
        .iter()
        .filter_map(|s| match s {
            DriveState::Formatted(bytes) => Format::from_json(bytes).ok(),
            _ => None,
        })
        .collect();
    let same = |a: &Format, b: &Format| {
        (a.deployment_id, &a.pools, &a.placement) == (b.deployment_id, &b.pools, &b.placement)
    };
    let count = |f: &Format| formats.iter().filter(|g| same(f, g)).count();
    let most = formats.iter().map(count).max()?;
    formats.iter().find(|f| count(f) == most).cloned()
}

/// Opens the local drives whose metadata index did not open, setting each index aside to be
/// refilled by healing, but only where that is what bit rot looks like: one drive of a set, in a
/// set with parity to rebuild it. Several drives of one set failing at once point at something
/// else (another program on the drives, a filesystem fault); setting their indexes aside would
/// forget the set's objects, so the start is refused and nothing is changed.
async fn set_aside_corrupt_indexes(
    pools: &[Vec<endpoint::Endpoint>],
    locals: &mut [Option<Arc<LocalDrive>>],
    corrupt: &[usize],
    layouts: &[Layout],
) -> Result<()> {
    let flat: Vec<&endpoint::Endpoint> = pools.iter().flatten().collect();
    let name = |i: usize| flat.get(i).map(|e| e.to_string()).unwrap_or_default();
    let mut offset = 0;
    for (p, layout) in layouts.iter().enumerate() {
        for (s, set) in layout.sets.iter().enumerate() {
            let bad: Vec<String> = set
                .drive_indexes
                .iter()
                .map(|&i| offset + i)
                .filter(|i| corrupt.contains(i))
                .map(name)
                .collect();
            if bad.len() > 1 || (!bad.is_empty() && layout.parity_count == 0) {
                bail!(
                    "refusing to start: the metadata index does not open on {} of set {p}/{s} ({}); \
                     that is not bit rot one drive's healing could repair. Nothing was changed. Check \
                     that no other program uses these drives and that their filesystems are sound",
                    if bad.len() > 1 { "several drives" } else { "the only copy" },
                    bad.join(", ")
                );
            }
        }
        offset += layout.sets.len() * layout.set_drive_count;
    }
    for &i in corrupt {
        let Some(e) = flat.get(i) else { continue };
        let path = PathBuf::from(&e.path);
        let options = OpenOptions { set_aside_corrupt_index: true, ..OpenOptions::default() };
        match tokio::task::spawn_blocking(move || LocalDrive::open_with(&path, options)).await? {
            Ok(d) => locals[i] = Some(Arc::new(d)),
            Err(e2) => tracing::warn!(drive = %e, error = %e2, "drive is offline"),
        }
    }
    Ok(())
}

/// Writes a format record, retrying for a while: once the leader has begun formatting a new
/// deployment it must finish (a minority of formatted drives would leave no quorum), and a
/// peer's connection may need a moment to come back after that peer restarted.
async fn write_format_patiently(d: &dyn Drive, format: Vec<u8>) -> Result<()> {
    let deadline = std::time::Instant::now() + strata_types::limits::FORMAT_WRITE_PATIENCE;
    loop {
        match d.write_format(format.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) if std::time::Instant::now() < deadline => {
                tracing::warn!(drive = d.endpoint(), error = %e, "cannot write the format record yet; retrying");
                tokio::time::sleep(strata_types::limits::FORMING_RETRY_INTERVAL).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `pool/set` of every set with fewer reachable drives than its write quorum.
fn short_sets(layouts: &[Layout], states: &[DriveState]) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (p, layout) in layouts.iter().enumerate() {
        for (s, set) in layout.sets.iter().enumerate() {
            let up = set
                .drive_indexes
                .iter()
                .filter(|&&i| !matches!(states.get(offset + i), Some(DriveState::Offline) | None))
                .count();
            if up < layout.write_quorum() {
                out.push(format!(
                    "{p}/{s} ({up} of {}, need {})",
                    layout.set_drive_count,
                    layout.write_quorum()
                ));
            }
        }
        offset += layout.sets.len() * layout.set_drive_count;
    }
    out
}

/// The nodes with drives among `offline`, for the waiting message.
fn missing_nodes(prepared: &Prepared, offline: &[usize]) -> String {
    let flat: Vec<&endpoint::Endpoint> = prepared.pools.iter().flatten().collect();
    let mut nodes: Vec<String> = Vec::new();
    for &i in offline {
        let n = flat.get(i).map(|e| e.node.clone().unwrap_or_else(|| e.path.clone())).unwrap_or_default();
        if !nodes.contains(&n) {
            nodes.push(n);
        }
    }
    if nodes.is_empty() {
        "none".into()
    } else {
        nodes.join(", ")
    }
}

fn format_error(e: FormatError, name: &dyn Fn(usize) -> String) -> anyhow::Error {
    use strata_cluster::FormatError as F;
    let detail = match &e {
        F::Corrupt(i, _) | F::ForeignDrive(i, _) | F::LayoutChanged(i) | F::WrongSlot { index: i, .. } => {
            format!(" (drive {})", name(*i))
        }
        F::NotAllOnline(list) => {
            // The names say more than the indexes in the error's own text.
            let named: Vec<String> = list.iter().map(|i| name(*i)).collect();
            return anyhow::anyhow!(
                "refusing to start: first start needs every drive online to format; offline: {}",
                named.join("; ")
            );
        }
        F::PoolNotBlank { pool, drives } | F::PoolOffline { pool, drives } => {
            let named: Vec<String> = drives.iter().map(|i| name(*i)).collect();
            return anyhow::anyhow!(
                "refusing to start: pool {pool} is new to the deployment (its drives' records do not name it), \
                 and a pool is added with every drive online and blank; not so: {}",
                named.join("; ")
            );
        }
        F::NoQuorum { .. } | F::PoolRemoved { .. } => String::new(),
    };
    anyhow::anyhow!("refusing to start: {e}{detail}")
}

/// Reports every drive operation of the deployment to the metrics, and wakes the drive monitor
/// on a failure (a wiped drive is taken back at its first failed operation, not at the next
/// check).
struct DriveMetrics {
    metrics: Arc<strata_metrics::Metrics>,
    trouble: Arc<tokio::sync::Notify>,
}

impl strata_drive::DriveObserver for DriveMetrics {
    fn observe(&self, drive: &str, op: &'static str, seconds: f64, failed: bool) {
        self.metrics.observe_drive_op(drive, op, seconds, failed);
        if failed {
            self.trouble.notify_one();
        }
    }
}

/// Wraps every drive so its operations are counted, timed and their errors recorded; a failed
/// operation wakes `trouble`.
pub fn meter(
    deployment: &mut Deployment,
    metrics: Arc<strata_metrics::Metrics>,
    trouble: Arc<tokio::sync::Notify>,
) {
    let observer: Arc<dyn strata_drive::DriveObserver> = Arc::new(DriveMetrics { metrics, trouble });
    for slot in deployment.pools.iter_mut().flatten().flatten() {
        if let Some(d) = slot.take() {
            *slot = Some(Arc::new(strata_drive::Metered::new(d, observer.clone())) as Arc<dyn Drive>);
        }
    }
}

/// Watches the local drives: one whose folder turns up empty while the server runs (wiped, or a
/// new drive mounted in its place) is given its slot's format again, gets the buckets, and a
/// heal scan refills it; a drive that comes back after being offline, or whose writes resume
/// after a failed sync, also gets a heal scan (it missed the writes made meanwhile).
pub fn spawn_drive_monitor(
    locals: Vec<(Arc<LocalDrive>, Vec<u8>)>,
    layer: Arc<strata_object::ObjectLayer>,
    every: std::time::Duration,
    trouble: Arc<tokio::sync::Notify>,
) {
    tokio::spawn(async move {
        let mut refill_pending = false;
        let mut online: Vec<bool> = vec![true; locals.len()];
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                // A drive operation failed: look now (at most every 200 ms, however many fail).
                _ = trouble.notified() => tokio::time::sleep(strata_types::limits::DRIVE_TROUBLE_CHECK_DELAY).await,
            }
            for (i, (drive, _)) in locals.iter().enumerate() {
                let now = matches!(drive.read_format().await, Ok(Some(_)));
                if now && !online[i] {
                    tracing::info!(drive = drive.endpoint(), "drive is back: healing what it missed");
                    refill_pending = true;
                }
                online[i] = now;
            }
            // A drive whose writes stopped on a failed sync is checked again; when the check
            // passes it takes writes again, and a heal brings what it missed.
            for (drive, _) in &locals {
                let d = drive.clone();
                if let Ok(Some(true)) = tokio::task::spawn_blocking(move || d.check_writes()).await {
                    refill_pending = true;
                }
            }
            for (i, (drive, format)) in locals.iter().enumerate() {
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
                        layer.heal_buckets().await;
                        refill_pending = true;
                        // Refilled by this scan: its coming back is not news to the next look.
                        online[i] = true;
                    }
                    Some(Err(e)) => {
                        tracing::warn!(drive = drive.endpoint(), error = %e, "cannot format the replaced drive")
                    }
                    None => {}
                }
            }
            if refill_pending {
                layer.start_heal_scan(strata_object::HealScope::default());
                refill_pending = false;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{is_this_node, layouts_for};
    use strata_cluster::format::{DriveState, Format, FORMAT_VERSION};
    use strata_cluster::layout::consecutive;
    use strata_cluster::placement::Placement;
    use uuid::Uuid;

    /// The record of drive `i` of a MinIO deployment taken over: `sets` sets of `size` drives.
    fn taken_over(deployment: u128, sets: usize, size: usize, i: usize) -> DriveState {
        let ids: Vec<Vec<Uuid>> = (0..sets)
            .map(|s| (0..size).map(|d| Uuid::from_u128(deployment << 16 | (s * size + d) as u128)).collect())
            .collect();
        let drive_id = ids[i / size][i % size];
        let format = Format {
            version: FORMAT_VERSION,
            deployment_id: Uuid::from_u128(deployment),
            drive_id,
            pools: vec![ids],
            placement: Placement::MinioSipmod,
            retired: Vec::new(),
        };
        DriveState::Formatted(format.to_json())
    }

    #[test]
    fn a_stray_drive_does_not_decide_a_taken_over_layout() {
        let planned = vec![consecutive(1, 8, None).expect("plan")];
        // The first drive in the list is a stray of another deployment (four sets of two).
        let mut states = vec![taken_over(2, 4, 2, 0)];
        states.extend((1..8).map(|i| taken_over(1, 2, 4, i)));
        let layouts = layouts_for(&planned, &states, None);
        assert_eq!(layouts, vec![consecutive(2, 4, None).expect("two sets of four")]);
        // Strata's own records keep the plan.
        assert_eq!(layouts_for(&planned, &[DriveState::Blank], None), planned);
    }

    #[test]
    fn a_node_knows_its_endpoints_by_address_or_interface() {
        let exact: std::net::SocketAddr = "127.0.0.1:9000".parse().expect("address");
        assert!(is_this_node("127.0.0.1:9000", exact));
        assert!(!is_this_node("127.0.0.1:9001", exact));
        assert!(!is_this_node("127.0.0.2:9000", exact));
        let any: std::net::SocketAddr = "0.0.0.0:9000".parse().expect("address");
        assert!(is_this_node("127.0.0.1:9000", any));
        assert!(is_this_node("localhost:9000", any));
        assert!(!is_this_node("localhost:9001", any));
        // An address no interface of this machine has (TEST-NET-2).
        assert!(!is_this_node("198.51.100.7:9000", any));
        assert!(!is_this_node("no-port", any));
    }
}
