//! `strata`: the one binary. `strata server DRIVE...` serves S3 over the given drives;
//! `strata bench OP` load-tests an S3 endpoint.
//!
//! This file wires the process: command line and environment → drives → format check →
//! object layer → S3 server, and stops cleanly on SIGINT/SIGTERM.

mod drives;
mod import;
mod import_s3;
mod log_hub;
mod minio_env;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use strata_s3::context::{ServiceAction, ServiceControl};
use strata_s3::{Node, S3Config};
use strata_types::limits::{INDEX_CACHE_SIZE, LISTEN_BACKLOG, ROOT_SECRET_LEN_MIN};

#[derive(Parser)]
#[command(name = "strata", version, about = "S3-compatible, erasure-coded object storage")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve S3 over the given drives (folders; ellipsis patterns like /mnt/disk{1...4} expand).
    // A flag given twice takes the later value: `STRATA_OPTS` (or `MINIO_OPTS`) go first, so the
    // command line overrides them.
    #[command(after_help = SERVER_HELP, args_override_self = true)]
    Server(ServerArgs),
    /// Load-test any S3 endpoint (put, get, stat, delete, list, mixed), or compare two runs.
    #[command(subcommand)]
    Bench(strata_client::BenchCommand),
    /// Administer a running deployment through its admin API (root credentials).
    #[command(subcommand)]
    Admin(strata_client::admin::AdminCommand),
    /// Take over another store's drives (MinIO's), in place.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Exit 0 when the server on this machine answers its liveness check, 1 when not (for a
    /// container's health check: the image has no shell and no curl).
    Health(HealthArgs),
}

#[derive(Args)]
struct HealthArgs {
    /// What to ask; by default the liveness path on this machine's `STRATA_ADDRESS` port, over
    /// HTTPS when `STRATA_CERTS_DIR` is set.
    #[arg(long)]
    url: Option<String>,
}

#[derive(Args)]
struct ServerArgs {
    /// Address to listen on: HOST:PORT, or :PORT for every interface.
    #[arg(long, default_value = "127.0.0.1:9000", env = "STRATA_ADDRESS", value_parser = parse_address)]
    address: SocketAddr,
    /// Domain for virtual-host-style requests (bucket.DOMAIN); several may be given,
    /// comma-separated.
    #[arg(long, env = "STRATA_DOMAIN")]
    domain: Option<String>,
    /// Region this deployment reports.
    #[arg(long, default_value = "us-east-1", env = "STRATA_REGION")]
    region: String,
    /// Serve HTTPS with the certificate chain `public.crt` and key `private.key` (PEM) in this folder.
    #[arg(long, short = 'S', env = "STRATA_CERTS_DIR")]
    certs_dir: Option<std::path::PathBuf>,
    /// Address for the web console, on an origin of its own (HOST:PORT, or :PORT for every
    /// interface; over TLS when the server has certificates). Unset: the console is on the S3
    /// address, under /_strata/console/.
    #[arg(long, env = "STRATA_CONSOLE_ADDRESS", value_parser = parse_address)]
    console_address: Option<SocketAddr>,
    /// Drives: folders or ellipsis patterns. Each ellipsis argument is one pool. None given:
    /// the space-separated list in STRATA_VOLUMES (or MINIO_VOLUMES).
    drives: Vec<String>,
}

/// The rest of `strata server --help`: what is set through the environment, and an example.
const SERVER_HELP: &str = "\
Environment:
  STRATA_ROOT_USER, STRATA_ROOT_PASSWORD   root credentials (the S3 access key and secret key;
                                           the password at least 8 characters). Unset: the
                                           built-in strataadmin/strataadmin, with a warning.
  STRATA_ROOT_USER_OLD, STRATA_ROOT_PASSWORD_OLD
                                           the previous root credentials while changing them
                                           (users and policies are sealed under them)
  STRATA_STORAGE_CLASS_STANDARD=EC:N       parity drives per erasure set for ordinary objects
                                           (default by set size: 2-3 drives 1, 4-5 2, 6-7 3,
                                           8-16 4; at most half the set)
  STRATA_STORAGE_CLASS_RRS=EC:N            parity for `x-amz-storage-class: REDUCED_REDUNDANCY`
  STRATA_VOLUMES, STRATA_OPTS              drives and options when the command line has none
                                           (space-separated, as in MinIO's /etc/default/minio)
  STRATA_DEFAULT_OBJECT_OWNERSHIP          ownership of new buckets: BucketOwnerEnforced (the
                                           default: ACLs off, as AWS), or ObjectWriter,
                                           BucketOwnerPreferred or none to turn ACLs on for
                                           tools that need them
  STRATA_LOG=debug                         log filter (tracing syntax); logs go to stderr
  MINIO_*                                  MinIO's names are read where Strata has the setting
                                           (STRATA_* wins); see docs/minio.md
  More (limits, time-outs, healing, lifecycle): docs/operations.md

Drives:
  A folder, or an ellipsis pattern with three dots: /mnt/disk{1...4}, /mnt/disk{01...16},
  /mnt/{a...d}. Quote patterns so the shell leaves them alone. Each pattern is one pool.

Example:
  STRATA_ROOT_USER=admin STRATA_ROOT_PASSWORD=change-me-now \\
    strata server --address 127.0.0.1:9000 './data/d{1...4}'
  (four drive folders, one erasure set with 2 data and 2 parity drives)";

const DEFAULT_ROOT_USER: &str = "strataadmin";
const DEFAULT_ROOT_PASSWORD: &str = "strataadmin";

fn credentials() -> Result<(String, String)> {
    let user = secret_from_env("STRATA_ROOT_USER")?;
    let password = secret_from_env("STRATA_ROOT_PASSWORD")?;
    let defaults = user.is_none() && password.is_none();
    let user = user.unwrap_or_else(|| DEFAULT_ROOT_USER.to_owned());
    let password = password.unwrap_or_else(|| DEFAULT_ROOT_PASSWORD.to_owned());
    if user.len() < 3 {
        bail!("STRATA_ROOT_USER must be at least 3 characters");
    }
    if password.len() < ROOT_SECRET_LEN_MIN {
        bail!("STRATA_ROOT_PASSWORD must be at least {ROOT_SECRET_LEN_MIN} characters");
    }
    if defaults {
        tracing::warn!(
            "using the built-in root credentials {DEFAULT_ROOT_USER}:{DEFAULT_ROOT_PASSWORD}. \
             Anyone can use them: set STRATA_ROOT_USER and STRATA_ROOT_PASSWORD before exposing this server."
        );
    }
    Ok((user, password))
}

/// `NAME`, or the content of the file `NAME_FILE` names (a container secret, as
/// `/run/secrets/...`), without its final line break.
pub(crate) fn secret_from_env(name: &str) -> Result<Option<String>> {
    if let Ok(v) = std::env::var(name) {
        return Ok(Some(v));
    }
    let Ok(path) = std::env::var(format!("{name}_FILE")) else { return Ok(None) };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("{name}_FILE={path}: cannot read it"))?;
    Ok(Some(text.trim_end_matches(['\n', '\r']).to_owned()))
}

/// The drives: the command line's, else the space-separated `STRATA_VOLUMES`.
fn drives(args: &ServerArgs) -> Result<Vec<String>> {
    let volumes = std::env::var("STRATA_VOLUMES").unwrap_or_default();
    if !args.drives.is_empty() {
        if !volumes.trim().is_empty() {
            // A container's default command names /data; the operator's variable is then unused.
            tracing::warn!(
                "drives from the command line ({}); STRATA_VOLUMES={volumes} is not used",
                args.drives.join(" ")
            );
        }
        return Ok(args.drives.clone());
    }
    let drives: Vec<String> = volumes.split_whitespace().map(str::to_owned).collect();
    if drives.is_empty() {
        bail!(
            "no drives to serve: give folders or ellipsis patterns (strata server /data, \
             strata server '/mnt/disk{{1...4}}'), or set STRATA_VOLUMES (or MINIO_VOLUMES)"
        );
    }
    Ok(drives)
}

/// `HOST:PORT`, `[V6]:PORT`, or MinIO's `:PORT` for every interface.
fn parse_address(s: &str) -> std::result::Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| format!("{s}: the port is not a number from 0 to 65535"))?;
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("{s}: {e} (expected HOST:PORT or :PORT)"))?
        .next()
        .ok_or_else(|| format!("{s}: the name has no address"))
}

fn parity_from_env(name: &str) -> Result<Option<usize>> {
    match std::env::var(name) {
        Ok(v) => {
            Ok(Some(strata_cluster::layout::parse_storage_class(&v).with_context(|| format!("{name}={v}"))?))
        }
        Err(_) => Ok(None),
    }
}

/// Listener limits from `STRATA_CONNECTIONS_MAX`, `STRATA_HEADER_READ_TIMEOUT` and
/// `STRATA_IDLE_TIMEOUT` (defaults in `limits.rs`).
fn connection_limits() -> Result<strata_server::ConnectionLimits> {
    let mut limits = strata_server::ConnectionLimits::default();
    if let Ok(v) = std::env::var("STRATA_CONNECTIONS_MAX") {
        limits.connections_max = v
            .trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("STRATA_CONNECTIONS_MAX={v} is not a positive number"))?;
    }
    if std::env::var("STRATA_HEADER_READ_TIMEOUT").is_ok() {
        limits.header_read_timeout = duration_from_env("STRATA_HEADER_READ_TIMEOUT", "")?;
    }
    if std::env::var("STRATA_IDLE_TIMEOUT").is_ok() {
        limits.idle_timeout = duration_from_env("STRATA_IDLE_TIMEOUT", "")?;
    }
    limits.min_transfer = min_transfer()?;
    Ok(limits)
}

/// Binds the S3 port with a backlog of [`LISTEN_BACKLOG`]: a burst of new connections waits
/// for the accept loop instead of being dropped and retried by the clients' kernels.
fn listen(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Ownership controls of buckets created without `x-amz-object-ownership`:
/// `STRATA_DEFAULT_OBJECT_OWNERSHIP` = `BucketOwnerEnforced` (the default, as AWS), `ObjectWriter`,
/// `BucketOwnerPreferred`, or `none` (no controls: ACLs on, as Ceph RGW).
fn default_object_ownership() -> Result<strata_object::ObjectOwnership> {
    let Ok(v) = std::env::var("STRATA_DEFAULT_OBJECT_OWNERSHIP") else {
        return Ok(strata_object::ObjectOwnership::BucketOwnerEnforced);
    };
    if v.trim().eq_ignore_ascii_case("none") {
        return Ok(strata_object::ObjectOwnership::NotSet);
    }
    strata_s3::grants::parse_ownership(&v).with_context(|| {
        format!("STRATA_DEFAULT_OBJECT_OWNERSHIP={v} is not BucketOwnerEnforced, BucketOwnerPreferred, ObjectWriter or none")
    })
}

/// The slowest request body accepted (`STRATA_MIN_TRANSFER_RATE`, bytes per second, `0` for no
/// floor) and the window it is measured over (`STRATA_MIN_TRANSFER_WINDOW`).
fn min_transfer() -> Result<(u64, std::time::Duration)> {
    use strata_types::limits::{MIN_TRANSFER_RATE, MIN_TRANSFER_WINDOW};
    let rate = match std::env::var("STRATA_MIN_TRANSFER_RATE") {
        Ok(v) => strata_types::size::parse_size(v.trim().trim_end_matches("/s")).with_context(|| {
            format!("STRATA_MIN_TRANSFER_RATE={v} is not a rate like 512 or 1KiB (bytes per second)")
        })?,
        Err(_) => MIN_TRANSFER_RATE,
    };
    let window = match std::env::var("STRATA_MIN_TRANSFER_WINDOW") {
        Ok(_) => duration_from_env("STRATA_MIN_TRANSFER_WINDOW", "")?,
        Err(_) => MIN_TRANSFER_WINDOW,
    };
    Ok((rate, window))
}

/// The memory ceiling: `STRATA_MEMORY_MAX` (a size like `4GiB`), else a share of RAM.
fn memory_max() -> Result<u64> {
    match std::env::var("STRATA_MEMORY_MAX") {
        Ok(v) => strata_types::size::parse_size(&v)
            .filter(|n| *n > 0)
            .with_context(|| format!("STRATA_MEMORY_MAX={v} is not a size like 512MiB or 4GiB")),
        Err(_) => Ok(strata_s3::budget::default_memory_max()),
    }
}

/// Raises the soft limit of open files to the hard one: every streaming GET holds a shard file
/// per drive open, every PUT creates one per drive, and running out turns into "too few drives
/// online" for every request at once (a default soft limit of 1,024 is soon reached).
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit { current: limit.maximum, maximum: limit.maximum };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, "cannot raise the open file limit");
        }
    }
    let now = getrlimit(Resource::Nofile).current;
    if now.is_some_and(|n| n < 4096) {
        tracing::warn!(
            open_files_max = now,
            "the open file limit is low: raise it (ulimit -n, LimitNOFILE=) or requests fail under load"
        );
    }
}

async fn server(args: ServerArgs) -> Result<()> {
    raise_open_file_limit();
    let (root_user, root_password) = credentials()?;
    let metrics = Arc::new(strata_metrics::Metrics::new());
    let mut limits = connection_limits()?;
    limits.slow_readers_cut = metrics.slow_readers_cut.clone();
    let memory_max = memory_max()?;
    let parity = parity_from_env("STRATA_STORAGE_CLASS_STANDARD")?;
    let rrs_parity = parity_from_env("STRATA_STORAGE_CLASS_RRS")?;
    let tls = match &args.certs_dir {
        Some(dir) => Some(strata_server::tls::acceptor(dir).context("setting up TLS")?),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    // The port before the drives: a second server started on the same address stops here,
    // before it has read or changed anything on a drive.
    let mut listener =
        Some(listen(args.address).with_context(|| format!("cannot listen on {}", args.address))?);
    // Stop and restart requests from the admin API end the serving as a signal does.
    let control = ServiceControl::default();
    let root = (root_user.as_str(), root_password.as_str());
    let drive_args = drives(&args)?;
    warn_if_ephemeral(&drive_args);
    let console_listener = match args.console_address {
        Some(at) => Some(listen(at).with_context(|| format!("cannot listen on {at} (--console-address)"))?),
        None => None,
    };
    let console_local = match &console_listener {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let mut prepared =
        drives::prepare(&drive_args, args.address, root, args.certs_dir.as_deref(), parity).await?;
    // Over several nodes the listener serves RPC from the start (the deployment forms over it)
    // and S3 once the deployment has formed; alone, it opens when everything is ready.
    let early = match &prepared.distributed {
        Some(d) => {
            let rpc = d.rpc.clone();
            let handler: strata_server::InternalHandler = Arc::new(move |req| {
                let rpc = rpc.clone();
                Box::pin(async move { rpc.handle(req).await })
            });
            let service = strata_server::Service::new(Some((strata_rpc::PREFIX, handler)));
            let listener = listener.take().context("the listener is bound once")?;
            tracing::info!(node = %d.me, peers = d.peers.len(), "distributed mode: serving node RPC, forming the deployment");
            let ready = service.clone();
            let stopping = control.clone();
            let stop = async move {
                shutdown_signal(stopping).await;
                if !ready.is_ready() {
                    // Still forming the deployment: nothing to finish.
                    tracing::info!("stopped before the deployment formed");
                    std::process::exit(0);
                }
            };
            let served = tokio::spawn(strata_server::serve_service(
                service.clone(),
                listener,
                tls.clone(),
                limits.clone(),
                stop,
            ));
            Some((service, served))
        }
        None => None,
    };
    let notify_folder = prepared.first_local_folder();
    let mut deployment = drives::open_deployment(&mut prepared, parity).await?;
    let drive_trouble = Arc::new(tokio::sync::Notify::new());
    drives::meter(&mut deployment, metrics.clone(), drive_trouble.clone());
    if let Some(p) = rrs_parity {
        if p > deployment.set_drive_count / 2 {
            bail!(
                "STRATA_STORAGE_CLASS_RRS=EC:{p} is more than half of the {} drives of a set",
                deployment.set_drive_count
            );
        }
    }
    // The other nodes, told about changes of what every node caches and polled for events.
    let peers = prepared.distributed.as_ref().map(|d| Arc::new(strata_rpc::PeerNodes::new(d.peers.clone())));
    let cluster = prepared.distributed.as_ref().zip(peers.clone()).map(|(d, peers)| {
        let mut nodes = vec![strata_rpc::LockNode::Local(d.locks.clone())];
        nodes.extend(d.peers.iter().map(|p| strata_rpc::LockNode::Remote(p.clone())));
        strata_object::Cluster {
            locker: Arc::new(strata_rpc::QuorumLocker::new(
                nodes,
                strata_rpc::LockTimings::for_peers(&d.peers),
            )),
            peers: peers as Arc<dyn strata_object::Peers>,
            node: d.me.clone(),
        }
    });
    let layer = Arc::new(deployment.take_layer(cluster).await.context("loading the object layer")?);
    if let Some(d) = &prepared.distributed {
        d.rpc.set_layer(layer.clone());
        spawn_bucket_refresh(layer.clone());
        if d.leader {
            // A node that was unreachable missed writes: the leader scans when it returns (after
            // the scan in progress, if one is).
            let pending = Arc::new(std::sync::atomic::AtomicBool::new(false));
            for peer in &d.peers {
                let pending = pending.clone();
                peer.on_return(move |node| {
                    tracing::info!(%node, "node returned: scanning for what it missed");
                    pending.store(true, std::sync::atomic::Ordering::Relaxed);
                });
            }
            let layer = layer.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(strata_types::limits::RETURNED_NODE_CHECK_INTERVAL).await;
                    if pending.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        layer.start_heal_scan(strata_object::HealScope::default());
                    }
                }
            });
        }
    }
    let (listener, local) = match &early {
        Some(_) => (None, args.address),
        None => {
            let listener = listener.take().context("the listener is bound once")?;
            let local = listener.local_addr()?;
            (Some(listener), local)
        }
    };
    let config = S3Config {
        region: args.region,
        domain: args.domain,
        owner_id: format!("{:x}", deployment.id.simple()),
        root_user: root_user.clone(),
        root_password: root_password.clone(),
        rrs_parity,
        prometheus_public: std::env::var("STRATA_PROMETHEUS_AUTH_TYPE")
            .is_ok_and(|v| v.eq_ignore_ascii_case("public")),
        endpoint: local.to_string(),
        memory_max,
        idle_timeout: limits.idle_timeout,
        min_transfer: limits.min_transfer,
        sse_c_allow_http: matches!(
            std::env::var("STRATA_SSE_C_ALLOW_HTTP").as_deref(),
            Ok("on" | "1" | "true")
        ),
        default_object_ownership: default_object_ownership()?,
        console_address: console_local,
    };
    let token = strata_admin::observe::prometheus_token(&config.root_user, &config.root_password);
    spawn_upload_expiry(layer.clone())?;
    let lifecycle = lifecycle_settings()?;
    let scan_every = match std::env::var("STRATA_SCANNER_INTERVAL") {
        Ok(v) if v == "0" || v == "off" => None,
        Ok(v) => Some(
            strata_types::time::parse_duration(&v).with_context(|| format!("STRATA_SCANNER_INTERVAL={v}"))?,
        ),
        Err(_) => Some(strata_types::limits::SCANNER_INTERVAL),
    };
    if deployment.replaced_drives > 0 {
        tracing::info!(drives = deployment.replaced_drives, "replaced drives found: healing their sets now");
    }
    let mut scan_config = strata_object::ScanConfig::default();
    if let Ok(v) = std::env::var("STRATA_SCANNER_DEEP_FRACTION") {
        scan_config.deep_fraction = v
            .parse::<f64>()
            .ok()
            .filter(|f| (0.0..=1.0).contains(f))
            .with_context(|| format!("STRATA_SCANNER_DEEP_FRACTION={v} is not between 0 and 1"))?;
    }
    if let Ok(v) = std::env::var("STRATA_SCANNER_ORPHAN_AGE") {
        scan_config.orphan_age = strata_types::time::parse_duration(&v)
            .with_context(|| format!("STRATA_SCANNER_ORPHAN_AGE={v}"))?;
    }
    if let Ok(v) = std::env::var("STRATA_SCANNER_SPEED") {
        scan_config.speed = match v.as_str() {
            "off" | "0" => None,
            _ => Some(v.parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0).with_context(|| {
                format!("STRATA_SCANNER_SPEED={v} is not a number of objects per second above 0 (or off)")
            })?),
        };
    }
    layer.healer().set_config(scan_config);
    if let Ok(p) = std::env::var("STRATA_HEAL_PRIORITY") {
        let priority = strata_object::HealPriority::parse(&p)
            .with_context(|| format!("STRATA_HEAL_PRIORITY={p} is not low, normal or high"))?;
        layer.healer().set_priority(priority);
    }
    // Over several nodes the leader runs the periodic scan; a node starting in an existing
    // deployment scans once, since its drives may have missed writes while it was down.
    let (leader, distributed) = prepared.distributed.as_ref().map_or((true, false), |d| (d.leader, true));
    let scan_now = deployment.replaced_drives > 0 || (distributed && !deployment.first_start);
    layer.start_healing(if leader { scan_every } else { None }, scan_now);
    let drain_speed = match std::env::var("STRATA_DRAIN_SPEED") {
        Err(_) => None,
        Ok(v) => match v.as_str() {
            "off" | "0" => None,
            _ => Some(v.parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0).with_context(|| {
                format!("STRATA_DRAIN_SPEED={v} is not a number of objects per second above 0 (or off)")
            })?),
        },
    };
    layer.start_drains(drain_speed);
    let check_every = match std::env::var("STRATA_DRIVE_CHECK_INTERVAL") {
        Ok(v) => strata_types::time::parse_duration(&v)
            .filter(|d| !d.is_zero())
            .with_context(|| format!("STRATA_DRIVE_CHECK_INTERVAL={v}"))?,
        Err(_) => strata_types::limits::DRIVE_CHECK_INTERVAL,
    };
    // Each local drive's index cache may grow to INDEX_CACHE_SIZE and counts toward the ceiling:
    // a ceiling below it would, once the caches are warm, refuse every request.
    let caches = deployment.locals.len() as u64 * INDEX_CACHE_SIZE as u64;
    if caches + caches / 2 > memory_max {
        tracing::warn!(
            memory_max_mib = memory_max >> 20,
            index_caches_mib = caches >> 20,
            "STRATA_MEMORY_MAX leaves little room beside the drives' index caches; \
             requests may get 503 SlowDown once the caches are warm"
        );
    }
    drives::spawn_drive_monitor(
        std::mem::take(&mut deployment.locals),
        layer.clone(),
        check_every,
        drive_trouble,
    );
    patiently(distributed, "creating the system bucket", || strata_system::prepare(&layer))
        .await
        .context("creating the system bucket")?;
    let mut node = Node::new(layer, config, metrics);
    node.service = control.clone();
    node.logs = log_hub::LOGS.clone();
    if let Some((user, password)) = previous_credentials(&node.config.root_user)? {
        node.iam.set_previous_root(&user, &password);
    }
    node.openid = openid_from_env(args.certs_dir.as_deref())?.map(strata_system::oidc::OpenId::new);
    node.peer_traffic = prepared.distributed.as_ref().map(|d| {
        let peers = d.peers.clone();
        Arc::new(move || {
            peers
                .iter()
                .map(|p| {
                    let (requests, bytes) = p.sent();
                    (p.name.clone(), requests, bytes)
                })
                .collect()
        }) as strata_s3::context::PeerTraffic
    });
    let loading = &node;
    patiently(distributed, "loading the IAM state", || loading.iam.load(&loading.layer))
        .await
        .context("loading the IAM state")?;
    node.notify = notifier_from_env(notify_folder.clone(), &node, args.certs_dir.as_deref())?;
    node.kms = kms_from_env(&node.layer).await?;
    node.replicator = open_replicator(notify_folder, &node)?;
    if let Some(peers) = &peers {
        node.listen.set_peers(peers.clone());
    }
    let node = Arc::new(node);
    if let Some(settings) = lifecycle {
        let events = Arc::new(strata_s3::lifecycle::LifecycleNotifier(node.clone()));
        node.layer.start_lifecycle(settings, Some(events));
    }
    if distributed {
        spawn_iam_refresh(node.clone());
    }
    let admin = Arc::new(strata_admin::Admin { node: node.clone(), peers });
    if let Some(d) = &prepared.distributed {
        d.rpc.set_peer_service(admin.clone());
    }
    println!("Strata is serving S3 at {scheme}://{local}");
    println!("   Access key: {root_user}");
    println!("   Secret key: {root_password}");
    let console_at = console_local.unwrap_or(local);
    println!(
        "   Console: {scheme}://{console_at}{}/ (sign in with these keys or an IAM user's)",
        strata_server::CONSOLE_PREFIX
    );
    let console_served = console_listener.map(|listener| {
        let stopping = control.clone();
        tokio::spawn(strata_server::serve_service(
            strata_server::Service::console(admin.clone()),
            listener,
            tls.clone(),
            limits.clone(),
            async move {
                stop_asked(&stopping).await;
            },
        ))
    });
    println!("   Metrics: {scheme}://{local}/metrics (Authorization: Bearer {token})");
    println!("   Memory ceiling: {} MiB (STRATA_MEMORY_MAX)", memory_max >> 20);
    println!(
        "   Drives: {} in sets of {} (EC {}+{})",
        deployment.drive_count,
        deployment.set_drive_count,
        deployment.set_drive_count - deployment.parity_count,
        deployment.parity_count
    );
    // Listen streams never end by themselves: at a stop they get their last chunk, so the
    // drain of the requests in flight does not wait for them.
    let listening = node.clone();
    let stopping = control.clone();
    tokio::spawn(async move {
        stop_asked(&stopping).await;
        listening.listen.close();
        listening.trace.close();
        listening.logs.close();
    });
    let serving = admin.clone();
    match (early, listener) {
        (Some((service, served)), _) => {
            service.set_node(serving);
            notify_service_manager(sd_notify::NotifyState::Ready);
            let _ = served.await;
        }
        (None, Some(listener)) => {
            notify_service_manager(sd_notify::NotifyState::Ready);
            strata_server::serve(serving, listener, tls, limits, shutdown_signal(control.clone())).await
        }
        (None, None) => bail!("no listener"),
    }
    // The console's requests in flight finish too (its listener drains as the S3 one does).
    if let Some(console) = console_served {
        let _ = console.await;
    }
    // Listen streams end with their last chunk rather than a cut connection.
    node.listen.shutdown().await;
    if control.requested() == Some(ServiceAction::Restart) {
        tracing::info!("stopped: starting again");
        return Err(restart_in_place());
    }
    tracing::info!("stopped");
    Ok(())
}

/// Lifecycle passes: `STRATA_LIFECYCLE_INTERVAL` between them (default 6h; `0` or `off`: none),
/// and the test-only fast clock `STRATA_LIFECYCLE_DAY_SECONDS` (seconds a lifecycle day lasts;
/// passes then run at least every quarter of such a day).
fn lifecycle_settings() -> Result<Option<strata_object::LifecycleSettings>> {
    let mut settings = strata_object::LifecycleSettings::default();
    match std::env::var("STRATA_LIFECYCLE_INTERVAL") {
        Ok(v) if v == "0" || v == "off" => return Ok(None),
        Ok(v) => {
            settings.interval = strata_types::time::parse_duration(&v)
                .filter(|d| !d.is_zero())
                .with_context(|| format!("STRATA_LIFECYCLE_INTERVAL={v}"))?;
        }
        Err(_) => {}
    }
    if let Ok(v) = std::env::var("STRATA_LIFECYCLE_DAY_SECONDS") {
        let secs =
            v.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.001).with_context(|| {
                format!("STRATA_LIFECYCLE_DAY_SECONDS={v} is not a positive number of seconds")
            })?;
        settings.day = std::time::Duration::from_secs_f64(secs);
        settings.interval = settings.interval.min(settings.day / 4);
        tracing::warn!(
            day_seconds = secs,
            "STRATA_LIFECYCLE_DAY_SECONDS is set: lifecycle days are short (a test-only setting)"
        );
    }
    Ok(Some(settings))
}

/// The KMS: an OpenBao / Vault transit engine when `STRATA_KMS_VAULT_ENDPOINT` is set, a KES
/// server when `STRATA_KMS_KES_ENDPOINT` is, else the built-in one when `STRATA_KMS_SECRET_KEY`
/// (or `MINIO_KMS_SECRET_KEY`) holds a master key `name:base64key`; with a cache of decrypted
/// data keys in front (`STRATA_KMS_CACHE_TTL`).
pub(crate) async fn kms_from_env(
    layer: &Arc<strata_object::ObjectLayer>,
) -> Result<Option<Arc<dyn strata_crypto::Kms>>> {
    let vault = strata_system::vault::VaultConfig::from_env().map_err(anyhow::Error::msg)?;
    let kes = strata_system::kes::KesConfig::from_env().map_err(anyhow::Error::msg)?;
    let kms: Arc<dyn strata_crypto::Kms> = match (vault, kes) {
        (Some(_), Some(_)) => {
            bail!("both STRATA_KMS_VAULT_ENDPOINT and STRATA_KMS_KES_ENDPOINT are set: choose one KMS")
        }
        (Some(config), None) => {
            let vault = strata_system::vault::VaultKms::start(config)
                .await
                .map_err(anyhow::Error::msg)
                .context("starting the KMS client (STRATA_KMS_VAULT_*)")?;
            tracing::info!(kms = ?vault, "external KMS ready");
            Arc::new(vault)
        }
        (None, Some(config)) => {
            let kes = strata_system::kes::KesKms::start(config)
                .await
                .map_err(anyhow::Error::msg)
                .context("starting the KMS client (STRATA_KMS_KES_*)")?;
            tracing::info!(kms = ?kes, "external KMS ready");
            Arc::new(kes)
        }
        (None, None) => {
            let (var, value) =
                match (std::env::var("STRATA_KMS_SECRET_KEY"), std::env::var("MINIO_KMS_SECRET_KEY")) {
                    (Ok(v), _) => ("STRATA_KMS_SECRET_KEY", v),
                    (Err(_), Ok(v)) => ("MINIO_KMS_SECRET_KEY", v),
                    _ => return Ok(None),
                };
            let master =
                strata_crypto::kms::MasterKey::parse(&value).map_err(|e| anyhow::anyhow!("{var}: {e}"))?;
            let name = master.name.clone();
            let kms = strata_system::kms::BuiltinKms::start(layer.clone(), master)
                .await
                .with_context(|| format!("starting the built-in KMS ({var})"))?;
            tracing::info!(default_key = %name, "built-in KMS ready");
            Arc::new(kms)
        }
    };
    let ttl = match std::env::var("STRATA_KMS_CACHE_TTL") {
        Ok(v) if v == "0" || v == "off" => std::time::Duration::ZERO,
        Ok(v) => {
            strata_types::time::parse_duration(&v).with_context(|| format!("STRATA_KMS_CACHE_TTL={v}"))?
        }
        Err(_) => strata_types::limits::KMS_KEY_CACHE_TTL,
    };
    let entries = strata_types::limits::KMS_KEY_CACHE_ENTRIES_MAX;
    Ok(Some(Arc::new(strata_system::kms_cache::CachedKms::new(kms, ttl, entries))))
}

fn duration_from_env(name: &str, default: &str) -> Result<std::time::Duration> {
    let value = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    strata_types::time::parse_duration(&value)
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{name}={value} is not a duration like 30s, 10m or 24h"))
}

/// The root credentials before a rotation (`STRATA_ROOT_USER_OLD`, which defaults to the current
/// user, and `STRATA_ROOT_PASSWORD_OLD`): the IAM state sealed under them is sealed again.
fn previous_credentials(current_user: &str) -> Result<Option<(String, String)>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("STRATA_ROOT_USER_OLD"), var("STRATA_ROOT_PASSWORD_OLD")) {
        (None, None) => Ok(None),
        (user, Some(password)) => Ok(Some((user.unwrap_or_else(|| current_user.to_owned()), password))),
        (Some(_), None) => bail!("STRATA_ROOT_USER_OLD needs STRATA_ROOT_PASSWORD_OLD"),
    }
}

/// The OpenID Connect provider for `AssumeRoleWithWebIdentity`, by MinIO's names or ours
/// (`STRATA_IDENTITY_OPENID_*` first, then `MINIO_IDENTITY_OPENID_*`): `..._CONFIG_URL` (the
/// provider's discovery document), or `..._JWKS_URL` with `..._ISSUER`; `..._CLIENT_ID` (checked
/// against the token's audience when set), `..._CLAIM_NAME` (the policy claim, `policy`); for the
/// console's sign-in button, `..._CLIENT_SECRET`, `..._SCOPES` (`openid`), `..._REDIRECT_URI`
/// and `..._DISPLAY_NAME`.
/// `https://` providers are trusted by the system's roots and the certificate folder's `CAs/`.
/// This node's replication queue, in the system folder of its first local drive (none without
/// one: such a node takes no replication configuration).
fn open_replicator(
    folder: Option<std::path::PathBuf>,
    node: &Node,
) -> Result<Option<Arc<dyn strata_s3::context::ReplicationQueue>>> {
    let Some(folder) = folder else { return Ok(None) };
    let dir = folder.join(".strata.sys").join("replication");
    let fs = Arc::new(strata_drive::fs::RealFs);
    let replicator = strata_s3::replicate::Replicator::open(
        fs,
        &dir,
        node.layer.clone(),
        node.kms.clone(),
        node.metrics.clone(),
        node.config.rrs_parity,
    )
    .with_context(|| format!("opening the replication queue in {}", dir.display()))?;
    Ok(Some(replicator))
}

/// The notification targets the environment configures (`MINIO_NOTIFY_*`, `STRATA_NOTIFY_*`),
/// with their queues in the system folder of this node's first local drive.
fn notifier_from_env(
    folder: Option<std::path::PathBuf>,
    node: &Node,
    certs_dir: Option<&std::path::Path>,
) -> Result<Option<Arc<strata_notify::Notifier>>> {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let targets = strata_notify::target::targets_from_env(&vars).map_err(|e| anyhow::anyhow!(e.0))?;
    if targets.is_empty() {
        return Ok(None);
    }
    let folder = folder.context("notification targets need a local drive on this node for their queues")?;
    let ctx = strata_notify::RecordContext {
        region: node.config.region.clone(),
        owner_id: node.config.owner_id.clone(),
    };
    let dir = folder.join(".strata.sys").join("notify");
    let fs = Arc::new(strata_drive::fs::RealFs);
    let notifier =
        strata_notify::Notifier::open(fs, &dir, targets, outbound_tls(certs_dir)?, ctx, node.metrics.clone())
            .with_context(|| format!("opening the notification queues in {}", dir.display()))?;
    for arn in notifier.arns() {
        println!("   Notification target: {arn}");
    }
    Ok(Some(Arc::new(notifier)))
}

fn openid_from_env(certs_dir: Option<&std::path::Path>) -> Result<Option<strata_system::oidc::OpenIdConfig>> {
    use strata_system::oidc::Provider;
    let var = |name: &str| {
        [format!("STRATA_IDENTITY_OPENID_{name}"), format!("MINIO_IDENTITY_OPENID_{name}")]
            .into_iter()
            .find_map(|n| std::env::var(&n).ok().filter(|v| !v.is_empty()))
    };
    let provider = match (var("CONFIG_URL"), var("JWKS_URL"), var("ISSUER")) {
        (None, None, None) => return Ok(None),
        (Some(config_url), None, None) => Provider::Discovery { config_url },
        (None, Some(jwks_url), Some(issuer)) => Provider::Direct { issuer, jwks_url },
        (None, Some(_), None) => bail!("STRATA_IDENTITY_OPENID_JWKS_URL needs STRATA_IDENTITY_OPENID_ISSUER"),
        (None, None, Some(_)) => bail!("STRATA_IDENTITY_OPENID_ISSUER needs STRATA_IDENTITY_OPENID_JWKS_URL"),
        (Some(_), _, _) => bail!(
            "STRATA_IDENTITY_OPENID_CONFIG_URL names the provider's issuer and keys: give it alone, \
             or JWKS_URL and ISSUER instead"
        ),
    };
    let urls = match &provider {
        Provider::Discovery { config_url } => vec![config_url],
        Provider::Direct { jwks_url, .. } => vec![jwks_url],
    };
    for url in urls {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("OpenID provider URL {url}: http:// or https:// expected");
        }
    }
    Ok(Some(strata_system::oidc::OpenIdConfig {
        provider,
        client_id: var("CLIENT_ID"),
        claim: var("CLAIM_NAME").unwrap_or_else(|| "policy".to_owned()),
        client_secret: var("CLIENT_SECRET"),
        scopes: var("SCOPES").map(|s| s.replace(',', " ")).unwrap_or_else(|| "openid".to_owned()),
        redirect_uri: var("REDIRECT_URI"),
        display_name: var("DISPLAY_NAME"),
        tls: Arc::new(outbound_tls(certs_dir)?),
    }))
}

/// TLS for calls this server makes to services of the operator's (an identity provider): the
/// system's root certificates and those in the certificate folder's `CAs/`.
fn outbound_tls(certs_dir: Option<&std::path::Path>) -> Result<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    let (_, unreadable) = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if unreadable > 0 {
        tracing::debug!(unreadable, "system root certificates skipped");
    }
    if let Some(Ok(entries)) = certs_dir.map(|d| std::fs::read_dir(d.join("CAs"))) {
        for path in entries.flatten().map(|e| e.path()) {
            for cert in CertificateDer::pem_file_iter(&path).into_iter().flatten().flatten() {
                roots.add(cert).with_context(|| format!("CA certificate {}", path.display()))?;
            }
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS for outbound calls")?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Runs a start-up step that reads or writes the deployment's own state (the system bucket, the
/// IAM state). Over several nodes, a node may get here while the others are still forming (a
/// node that started late, with a pool being added, formats its share and goes on while the
/// others wait out their retry), so a failure is tried again for up to
/// [`strata_types::limits::FORMAT_WRITE_PATIENCE`], as the format step does, before the start fails.
async fn patiently<T, E, Fut>(distributed: bool, what: &str, mut step: impl FnMut() -> Fut) -> Result<T, E>
where
    E: std::fmt::Display,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    use strata_types::limits::{FORMAT_WRITE_PATIENCE, FORMING_LOG_INTERVAL, FORMING_RETRY_INTERVAL};
    let began = std::time::Instant::now();
    let mut last_said: Option<std::time::Instant> = None;
    loop {
        match step().await {
            Ok(v) => return Ok(v),
            Err(e) if distributed && began.elapsed() < FORMAT_WRITE_PATIENCE => {
                if last_said.is_none_or(|t| t.elapsed() >= FORMING_LOG_INTERVAL) {
                    tracing::warn!(error = %e, waited_s = began.elapsed().as_secs(), "{what}: waiting for the other nodes");
                    last_said = Some(std::time::Instant::now());
                }
                tokio::time::sleep(FORMING_RETRY_INTERVAL).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads the IAM state again now and then, for a change whose notice this node missed.
fn spawn_iam_refresh(node: Arc<Node>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(strata_system::iam::IAM_RELOAD_INTERVAL).await;
            if let Err(e) = node.iam.load(&node.layer).await {
                tracing::warn!(error = %e, "cannot reload the IAM state");
            }
        }
    });
}

/// Reloads the bucket list now and then, for a change whose notice this node missed (it was
/// unreachable when another node made it).
fn spawn_bucket_refresh(layer: Arc<strata_object::ObjectLayer>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(strata_types::limits::BUCKET_RELOAD_INTERVAL).await;
            if let Err(e) = layer.reload_buckets().await {
                tracing::debug!(error = %e, "cannot reload the bucket list");
            }
        }
    });
}

/// Aborts multipart uploads left unfinished longer than `STRATA_MULTIPART_EXPIRY` (default 24h),
/// checking every `STRATA_MULTIPART_CLEANUP_INTERVAL` (default 1h).
fn spawn_upload_expiry(layer: Arc<strata_object::ObjectLayer>) -> Result<()> {
    let expiry = duration_from_env("STRATA_MULTIPART_EXPIRY", "24h")?;
    let interval = duration_from_env("STRATA_MULTIPART_CLEANUP_INTERVAL", "1h")?;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let n = layer.expire_uploads(expiry).await;
            if n > 0 {
                tracing::info!(uploads = n, "expired abandoned multipart uploads");
            }
        }
    });
    Ok(())
}

/// Waits for SIGTERM or SIGINT, then says the server is stopping (log, service manager).
async fn shutdown_signal(control: ServiceControl) {
    let why = stop_asked(&control).await;
    tracing::info!("stopping ({why}): finishing the requests in flight");
    notify_service_manager(sd_notify::NotifyState::Stopping);
}

/// Waits for SIGTERM or SIGINT, or a stop or restart asked through the admin API (every waiter
/// hears it); says which.
async fn stop_asked(control: &ServiceControl) -> &'static str {
    tokio::select! {
        _ = stop_signal() => "signal",
        action = control.wait() => match action {
            ServiceAction::Stop => "asked to stop",
            ServiceAction::Restart => "asked to restart",
        },
    }
}

/// Starts this program again in this process (same id, command line and environment), as
/// `mc admin service restart` asks; only returns if that failed.
fn restart_in_place() -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    let program = std::env::current_exe()
        .map(std::path::PathBuf::into_os_string)
        .unwrap_or_else(|_| std::env::args_os().next().unwrap_or_default());
    let error = std::process::Command::new(program).args(std::env::args_os().skip(1)).exec();
    anyhow::anyhow!("restarting: {error}")
}

/// Waits for SIGTERM or SIGINT (every waiter hears it).
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Tells systemd (a `Type=notify` unit: `NOTIFY_SOCKET` is set) that the server is ready or
/// stopping. Without a service manager it does nothing.
fn notify_service_manager(state: sd_notify::NotifyState) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, &[state]) {
        tracing::warn!("cannot tell the service manager this server's state: {e}");
    }
}

/// A drive folder on a container's own writable layer loses its data with the container: say
/// so at start (the image declares `/data` a volume; a runtime that ignores it lands here).
fn warn_if_ephemeral(drives: &[String]) {
    use std::os::unix::fs::MetadataExt;
    let in_container = ["/run/.containerenv", "/.dockerenv"].iter().any(|p| std::path::Path::new(p).exists())
        || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let Ok(root) = std::fs::metadata("/") else { return };
    if !in_container {
        return;
    }
    for drive in drives {
        // A pattern's prefix up to its first brace is a folder that exists when the drives do.
        let folder = drive.split('{').next().unwrap_or(drive);
        if let Ok(m) = std::fs::metadata(folder) {
            if m.dev() == root.dev() {
                tracing::warn!(
                    "{drive} is on the container's own file system, not a volume: its data is lost \
                     with the container. Mount a volume there."
                );
            }
        }
    }
}

/// `strata health`: 0 when the liveness check answers 200, 1 with the reason otherwise.
async fn health(args: HealthArgs) -> Result<()> {
    let url = match args.url {
        Some(url) => url,
        None => {
            // The address and certificates the server reads: its options (STRATA_OPTS) over
            // STRATA_ADDRESS and STRATA_CERTS_DIR, parsed by the server's own parser.
            let opts = match std::env::var("STRATA_OPTS") {
                Ok(o) => minio_env::split_options(&o).map_err(anyhow::Error::msg)?,
                Err(_) => Vec::new(),
            };
            let server = ["strata", "server"].into_iter().map(String::from).chain(opts);
            let Command::Server(server) = Cli::try_parse_from(server)?.command else {
                bail!("STRATA_OPTS does not parse as server options")
            };
            let mut address = server.address;
            if address.ip().is_unspecified() {
                address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            let scheme = if server.certs_dir.is_some() { "https" } else { "http" };
            format!("{scheme}://{address}/minio/health/live")
        }
    };
    let status = strata_client::client::probe(&url, strata_types::limits::HEALTH_PROBE_TIMEOUT).await?;
    if status != 200 {
        bail!("{url} answered {status}");
    }
    Ok(())
}

fn main() -> Result<()> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG").unwrap_or_else(|_| "info".into()))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colours for a person at a terminal; a file or a pipe gets plain text.
                .with_ansi(std::io::stderr().is_terminal()),
        )
        // Warnings and errors also go to the node's log for `mc admin logs`.
        .with(log_hub::ToHub)
        .init();
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Before any thread starts: MinIO's names become environment variables of Strata's.
    let serving = argv.get(1).is_some_and(|a| a == "server");
    if serving || argv.get(1).is_some_and(|a| a == "health" || a == "import") {
        minio_env::apply(serving);
    }
    if let (true, Ok(opts)) = (serving, std::env::var("STRATA_OPTS")) {
        let opts = minio_env::split_options(&opts).map_err(anyhow::Error::msg)?;
        argv.splice(2..2, opts.into_iter().map(std::ffi::OsString::from));
    }
    let cli = Cli::parse_from(argv);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match cli.command {
        Command::Server(args) => runtime.block_on(server(args)),
        Command::Bench(cmd) => runtime.block_on(strata_client::main(cmd)),
        Command::Admin(cmd) => runtime.block_on(strata_client::admin::main(cmd)),
        Command::Health(args) => runtime.block_on(health(args)),
        Command::Import(cmd) => {
            drop(runtime);
            import::main(cmd)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn server_help_documents_credentials_storage_classes_and_an_example() {
        let mut cli = Cli::command();
        let server = cli.find_subcommand_mut("server").expect("a server subcommand");
        let help = server.render_long_help().to_string();
        for said in [
            "STRATA_ROOT_USER",
            "STRATA_ROOT_PASSWORD",
            "STRATA_STORAGE_CLASS_STANDARD=EC:N",
            "STRATA_STORAGE_CLASS_RRS=EC:N",
            "Example:",
            "strata server --address 127.0.0.1:9000 './data/d{1...4}'",
        ] {
            assert!(help.contains(said), "`strata server --help` does not say {said:?}:\n{help}");
        }
    }
}
