//! MinIO's Prometheus paths and names, for the metrics Strata has: `/minio/v2/metrics/cluster`,
//! `/minio/v2/metrics/node` and `/minio/v2/metrics/bucket` here, the v3 paths
//! (`/minio/metrics/v3/...`) in [`crate::minio_metrics_v3`], so that MinIO's Grafana dashboards
//! and alert rules find their series (`docs/metrics.md` lists the names served and those that
//! have no Strata source).
//!
//! The series are derived when scraped, from Strata's own registry (read back from its text
//! exposition), the drive states the scrape gathers anyway, the per-bucket request counts and
//! the data usage the last full heal scan counted ([`crate::minio_buckets`]): requests pay
//! nothing for a second set of names. Their shapes follow MinIO's v2 exposition: every series
//! carries `server` (`host:port` of the node), counters keep MinIO's names (some without
//! `_total`), `api` is MinIO's name of the operation ([`minio_api`]) in lower case, and the
//! time-to-first-byte distribution is a gauge per `le` bound holding the cumulative count.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use strata_s3::body::ResponseBody;
use strata_s3::{Node, Reply};

use crate::observe;

/// The paths, and which of MinIO's groups each serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Cluster,
    Node,
    Bucket,
}

/// The MinIO path `path` names, if any.
pub fn scope_of(path: &str) -> Option<Scope> {
    match path.trim_end_matches('/') {
        "/minio/v2/metrics/cluster" => Some(Scope::Cluster),
        "/minio/v2/metrics/node" => Some(Scope::Node),
        "/minio/v2/metrics/bucket" => Some(Scope::Bucket),
        _ => None,
    }
}

/// The time-to-first-byte bounds MinIO's distribution reports (seconds), and how it writes them.
pub const TTFB_BOUNDS: [(f64, &str); 8] = [
    (0.05, "0.050"),
    (0.1, "0.100"),
    (0.25, "0.250"),
    (0.5, "0.500"),
    (1.0, "1.000"),
    (2.5, "2.500"),
    (5.0, "5.000"),
    (10.0, "10.000"),
];

/// One sample of Strata's own exposition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    labels: Vec<(String, String)>,
    pub(crate) value: f64,
}

impl Sample {
    pub(crate) fn label(&self, name: &str) -> &str {
        self.labels.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

/// Parses the text exposition Strata's registry writes (`name{a="x",b="y"} value`; `#` lines
/// skipped). A line that does not parse is skipped: this reads our own output.
pub(crate) fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let (name, rest) = match line.find('{') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => {
            let (name, value) = line.split_once(' ')?;
            return Some(Sample { name: name.to_owned(), labels: Vec::new(), value: parse_value(value)? });
        }
    };
    let mut labels = Vec::new();
    let mut chars = rest.char_indices().peekable();
    let mut key = String::new();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '}' => {
                end = Some(i + 1);
                break;
            }
            ',' | ' ' => {}
            '=' => {
                if chars.next().map(|(_, q)| q) != Some('"') {
                    return None;
                }
                let mut value = String::new();
                loop {
                    match chars.next()?.1 {
                        '\\' => match chars.next()?.1 {
                            'n' => value.push('\n'),
                            other => value.push(other),
                        },
                        '"' => break,
                        other => value.push(other),
                    }
                }
                labels.push((std::mem::take(&mut key), value));
            }
            other => key.push(other),
        }
    }
    let value = rest[end?..].trim();
    Some(Sample { name: name.to_owned(), labels, value: parse_value(value)? })
}

fn parse_value(v: &str) -> Option<f64> {
    // An OpenMetrics sample may end with a timestamp or an exemplar: the value comes first.
    let v = v.split_whitespace().next()?;
    match v {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        other => other.parse().ok(),
    }
}

/// Metric families being written: name → (type, help, lines), written grouped by name.
#[derive(Default)]
pub(crate) struct Exposition {
    families: BTreeMap<&'static str, (&'static str, &'static str, Vec<String>)>,
    /// Leave out samples that are not above 0, as MinIO's v3 exposition does.
    positive_only: bool,
}

impl Exposition {
    /// An exposition that leaves out samples not above 0 (MinIO's v3 rule).
    pub(crate) fn positive_only() -> Self {
        Self { positive_only: true, ..Self::default() }
    }

    pub(crate) fn add(
        &mut self,
        name: &'static str,
        kind: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        if self.positive_only && (value.is_nan() || value <= 0.0) {
            return;
        }
        let mut line = String::from(name);
        if !labels.is_empty() {
            line.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let v = v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
                let _ = write!(line, "{k}=\"{v}\"");
            }
            line.push('}');
        }
        let _ = write!(line, " {}", format_value(value));
        self.families.entry(name).or_insert((kind, help, Vec::new())).2.push(line);
    }

    pub(crate) fn render(self) -> String {
        let mut out = String::new();
        for (name, (kind, help, lines)) in self.families {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for l in lines {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out
    }
}

/// Two histogram bounds are the same one (`+Inf` included).
fn same_bound(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() < 1e-9
}

/// The user buckets (names S3 allows; `.strata-speedtest` and the like are the system's own).
pub(crate) fn user_buckets(node: &Node) -> BTreeSet<String> {
    node.layer
        .list_buckets()
        .map(|b| b.into_iter().map(|b| b.name).filter(|n| !n.starts_with('.')).collect())
        .unwrap_or_default()
}

/// MinIO's names of the S3 operations whose AWS name (Strata's) is not its handler's name:
/// MinIO labels requests by handler.
const MINIO_API_NAMES: [(&str, &str); 22] = [
    ("CreateBucket", "PutBucket"),
    ("ListObjects", "ListObjectsV1"),
    ("DeleteObjects", "DeleteMultipleObjects"),
    ("GetBucketAcl", "GetBucketACL"),
    ("PutBucketAcl", "PutBucketACL"),
    ("GetObjectAcl", "GetObjectACL"),
    ("PutObjectAcl", "PutObjectACL"),
    ("PostObject", "PostPolicyBucket"),
    ("GetObjectLockConfiguration", "GetBucketObjectLockConfig"),
    ("PutObjectLockConfiguration", "PutBucketObjectLockConfig"),
    ("GetBucketNotificationConfiguration", "GetBucketNotification"),
    ("PutBucketNotificationConfiguration", "PutBucketNotification"),
    ("GetBucketLifecycleConfiguration", "GetBucketLifecycle"),
    ("PutBucketLifecycleConfiguration", "PutBucketLifecycle"),
    ("GetBucketReplication", "GetBucketReplicationConfig"),
    ("PutBucketReplication", "PutBucketReplicationConfig"),
    ("DeleteBucketReplication", "DeleteBucketReplicationConfig"),
    ("ListenBucketNotification", "ListenNotification"),
    ("CreateMultipartUpload", "NewMultipartUpload"),
    ("UploadPart", "PutObjectPart"),
    ("ListParts", "ListObjectParts"),
    ("UploadPartCopy", "CopyObjectPart"),
];

/// MinIO's name of the S3 operation Strata calls `op` (the AWS name): its handler's name, which
/// MinIO's metrics label requests with (v3 as is, v2 in lower case).
pub fn minio_api(op: &str) -> &str {
    MINIO_API_NAMES.iter().find(|(aws, _)| *aws == op).map_or(op, |(_, minio)| minio)
}

fn format_value(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Operations that are not S3 requests in MinIO's sense (its `api` label names S3 handlers).
const NOT_S3: [&str; 3] = ["Health", "Metrics", "Unknown"];

/// Serves one of MinIO's paths.
pub async fn scrape(node: &Arc<Node>, scope: Scope) -> Reply {
    let states = observe::refresh(node).await;
    let samples = parse(&node.metrics.encode());
    let server = node.config.endpoint.as_str();
    let mut out = Exposition::default();
    match scope {
        Scope::Cluster => {
            cluster(&mut out, node, &states, server);
            requests(&mut out, &samples, server);
            process(&mut out, &samples, server);
            crate::minio_buckets::v2_cluster_usage(&mut out, node, server);
        }
        Scope::Node => {
            drives(&mut out, &states, &samples, server);
            requests(&mut out, &samples, server);
        }
        Scope::Bucket => buckets(&mut out, node, server),
    }
    text_reply(out.render())
}

/// A Prometheus text exposition as the answer.
pub(crate) fn text_reply(text: String) -> Reply {
    let len = text.len().to_string();
    let mut reply = Reply::empty(StatusCode::OK)
        .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        .header("content-length", &len);
    reply.body = ResponseBody::Full(Some(Bytes::from(text)));
    reply
}

pub(crate) fn sum(samples: &[Sample], name: &str) -> f64 {
    samples.iter().filter(|s| s.name == name).map(|s| s.value).sum()
}

/// One operation's requests, from Strata's request counters and duration histogram.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ApiRequests {
    pub(crate) all: f64,
    /// Answered 400 to 498 (4xx), or 500 and more (5xx).
    pub(crate) client: f64,
    pub(crate) server: f64,
    /// Given up by the client (499).
    pub(crate) canceled: f64,
    /// Requests whose headers left within each of MinIO's bounds ([`TTFB_BOUNDS`], then +Inf),
    /// cumulative; `None` where Strata's histogram has no such bound.
    pub(crate) ttfb: [Option<f64>; TTFB_BOUNDS.len() + 1],
}

impl ApiRequests {
    pub(crate) fn errors(&self) -> f64 {
        self.client + self.server
    }
}

/// The S3 requests of Strata's exposition by MinIO's name of their operation (operations MinIO
/// names alike are added up).
pub(crate) fn api_requests(samples: &[Sample]) -> BTreeMap<String, ApiRequests> {
    let mut by_api: BTreeMap<String, ApiRequests> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.name == "strata_s3_requests_total") {
        let api = s.label("api");
        if NOT_S3.contains(&api) {
            continue;
        }
        let code: u16 = s.label("code").parse().unwrap_or(0);
        let c = by_api.entry(minio_api(api).to_owned()).or_default();
        c.all += s.value;
        match code {
            499 => c.canceled += s.value,
            400..=498 => c.client += s.value,
            500.. => c.server += s.value,
            _ => {}
        }
    }
    // Time to the response headers, which is the first byte of the answer.
    for s in samples.iter().filter(|s| s.name == "strata_s3_request_duration_seconds_bucket") {
        let api = s.label("api");
        if NOT_S3.contains(&api) {
            continue;
        }
        let Some(le) = parse_value(s.label("le")) else { continue };
        let bounds = TTFB_BOUNDS.iter().map(|(b, _)| *b).chain([f64::INFINITY]);
        // Strata's histogram has MinIO's bounds among its own, so each count is exact.
        if let Some(i) = bounds.into_iter().position(|b| same_bound(le, b)) {
            let c = by_api.entry(minio_api(api).to_owned()).or_default();
            *c.ttfb[i].get_or_insert(0.0) += s.value;
        }
    }
    by_api
}

/// How MinIO writes each `le` bound of its time-to-first-byte distribution, `+Inf` last.
pub(crate) fn ttfb_labels() -> impl Iterator<Item = &'static str> {
    TTFB_BOUNDS.iter().map(|(_, written)| *written).chain(["+Inf"])
}

/// `minio_s3_*`: requests by API (all, errors, 4xx, 5xx, canceled), in flight, traffic, and the
/// time-to-first-byte distribution.
fn requests(out: &mut Exposition, samples: &[Sample], server: &str) {
    let by_api = api_requests(samples);
    for (api, c) in &by_api {
        let api = api.to_ascii_lowercase();
        let labels = [("api", api.as_str()), ("server", server)];
        out.add("minio_s3_requests_total", "counter", "S3 requests answered, by API", &labels, c.all);
        out.add(
            "minio_s3_requests_errors_total",
            "counter",
            "S3 requests answered with a 4xx or 5xx status, by API",
            &labels,
            c.errors(),
        );
        out.add(
            "minio_s3_requests_4xx_errors_total",
            "counter",
            "S3 requests answered with a 4xx status, by API",
            &labels,
            c.client,
        );
        out.add(
            "minio_s3_requests_5xx_errors_total",
            "counter",
            "S3 requests answered with a 5xx status, by API",
            &labels,
            c.server,
        );
        out.add(
            "minio_s3_requests_canceled_total",
            "counter",
            "S3 requests the client gave up on (499), by API",
            &labels,
            c.canceled,
        );
    }
    for (api, c) in &by_api {
        let api = api.to_ascii_lowercase();
        for (le, count) in ttfb_labels().zip(c.ttfb) {
            if let Some(count) = count {
                out.add(
                    "minio_s3_requests_ttfb_seconds_distribution",
                    "gauge",
                    "Requests whose response headers left within le seconds (cumulative), by API",
                    &[("api", api.as_str()), ("le", le), ("server", server)],
                    count,
                );
            }
        }
    }
    let labels = [("server", server)];
    out.add(
        "minio_s3_requests_inflight_total",
        "gauge",
        "S3 requests being served now",
        &labels,
        sum(samples, "strata_s3_requests_in_flight"),
    );
    out.add(
        "minio_s3_traffic_received_bytes",
        "counter",
        "Request body bytes S3 clients declared",
        &labels,
        sum(samples, "strata_s3_received_bytes_total"),
    );
    out.add(
        "minio_s3_traffic_sent_bytes",
        "counter",
        "Response body bytes sent to S3 clients",
        &labels,
        sum(samples, "strata_s3_sent_bytes_total"),
    );
}

/// `minio_node_process_*`, `minio_node_file_descriptor_*`, `minio_node_io_*`,
/// `minio_node_syscall_*`, the scanner and the healer.
fn process(out: &mut Exposition, samples: &[Sample], server: &str) {
    let labels = [("server", server)];
    out.add(
        "minio_node_process_resident_memory_bytes",
        "gauge",
        "Resident memory of the server process",
        &labels,
        sum(samples, "strata_process_resident_memory_bytes"),
    );
    out.add(
        "minio_node_process_cpu_total_seconds",
        "counter",
        "User and system CPU seconds of the server process",
        &labels,
        sum(samples, "strata_process_cpu_seconds_total"),
    );
    out.add(
        "minio_node_file_descriptor_open_total",
        "gauge",
        "Open file descriptors of the server process",
        &labels,
        sum(samples, "strata_process_open_fds"),
    );
    if let Some(limit) = strata_types::process::open_files_limit() {
        out.add(
            "minio_node_file_descriptor_limit_total",
            "gauge",
            "The open file limit of the server process",
            &labels,
            limit as f64,
        );
    }
    if let Some(start) = strata_types::process::start_time_unix("self") {
        let now = strata_types::time::now_nanos() as f64 / 1e9;
        out.add(
            "minio_node_process_starttime_seconds",
            "gauge",
            "When the server process started (Unix seconds)",
            &labels,
            start,
        );
        out.add(
            "minio_node_process_uptime_seconds",
            "gauge",
            "Seconds since the server process started",
            &labels,
            (now - start).max(0.0),
        );
    }
    if let Some(io) = strata_types::process::io_counters("self") {
        for (name, help, v) in [
            (
                "minio_node_io_rchar_bytes",
                "Bytes the process read through system calls (page cache included)",
                io.rchar,
            ),
            (
                "minio_node_io_wchar_bytes",
                "Bytes the process wrote through system calls (page cache included)",
                io.wchar,
            ),
            ("minio_node_io_read_bytes", "Bytes the process read from storage devices", io.read_bytes),
            ("minio_node_io_write_bytes", "Bytes the process wrote to storage devices", io.write_bytes),
            ("minio_node_syscall_read_total", "Read system calls of the process", io.syscr),
            ("minio_node_syscall_write_total", "Write system calls of the process", io.syscw),
        ] {
            out.add(name, "counter", help, &labels, v as f64);
        }
    }
    // Strata's scanner is its heal scan: every object it checks is an object scanned.
    let scanned = sum(samples, "strata_heal_objects_scanned_total");
    out.add(
        "minio_node_scanner_objects_scanned",
        "counter",
        "Objects the heal scan checked since the server started",
        &labels,
        scanned,
    );
    out.add(
        "minio_heal_objects_total",
        "counter",
        "Objects the healer checked since the server started",
        &labels,
        scanned,
    );
    out.add(
        "minio_heal_objects_heal_total",
        "counter",
        "Objects the healer repaired since the server started",
        &labels,
        sum(samples, "strata_heal_objects_healed_total"),
    );
    out.add(
        "minio_heal_objects_errors_heal_total",
        "counter",
        "Objects the healer could not fully repair since the server started",
        &labels,
        sum(samples, "strata_heal_objects_failed_total"),
    );
}

pub(crate) type States = [(strata_object::SetView, Vec<Option<strata_drive::DiskInfo>>)];

/// The node (`host:port`) a drive belongs to: its URL's authority, or this node for a folder.
pub(crate) fn node_of<'a>(endpoint: &'a str, this: &'a str) -> &'a str {
    match endpoint.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(this),
        None => this,
    }
}

/// One erasure set's health.
pub(crate) struct SetHealth {
    pub(crate) pool: String,
    pub(crate) set: String,
    /// Drives that answer.
    pub(crate) online: usize,
    pub(crate) read_quorum: usize,
    pub(crate) write_quorum: usize,
}

impl SetHealth {
    pub(crate) fn healthy(&self) -> bool {
        self.online >= self.write_quorum
    }
}

/// The deployment's drives, nodes, capacity and sets, from the drive states a scrape gathered.
#[derive(Default)]
pub(crate) struct ClusterView {
    pub(crate) raw_total: f64,
    pub(crate) raw_free: f64,
    /// Capacity with parity removed.
    pub(crate) usable_total: f64,
    pub(crate) usable_free: f64,
    pub(crate) drives_online: u64,
    pub(crate) drives_offline: u64,
    pub(crate) nodes_online: usize,
    pub(crate) nodes_offline: usize,
    pub(crate) sets: Vec<SetHealth>,
}

impl ClusterView {
    pub(crate) fn new(states: &States, server: &str) -> Self {
        let mut v = ClusterView::default();
        let mut nodes: BTreeMap<&str, bool> = BTreeMap::new();
        for (view, infos) in states {
            let data_share = view.read_quorum as f64 / view.drives.len().max(1) as f64;
            for (drive, info) in view.drives.iter().zip(infos) {
                if let Some(d) = drive {
                    let answered = nodes.entry(node_of(d.endpoint(), server)).or_insert(false);
                    *answered |= info.is_some();
                }
                match info {
                    Some(i) => {
                        v.drives_online += 1;
                        v.raw_total += i.total_bytes as f64;
                        v.raw_free += i.free_bytes as f64;
                        v.usable_total += i.total_bytes as f64 * data_share;
                        v.usable_free += i.free_bytes as f64 * data_share;
                    }
                    None => v.drives_offline += 1,
                }
            }
            v.sets.push(SetHealth {
                pool: view.pool.to_string(),
                set: view.set.to_string(),
                online: infos.iter().filter(|i| i.is_some()).count(),
                read_quorum: view.read_quorum,
                write_quorum: view.write_quorum,
            });
        }
        v.nodes_online = nodes.values().filter(|up| **up).count();
        v.nodes_offline = nodes.len() - v.nodes_online;
        v
    }

    /// Every erasure set has its write quorum.
    pub(crate) fn healthy(&self) -> bool {
        self.sets.iter().all(SetHealth::healthy)
    }
}

/// `minio_cluster_*`: capacity, drives, nodes, health per erasure set, buckets.
fn cluster(out: &mut Exposition, node: &Node, states: &States, server: &str) {
    let v = ClusterView::new(states, server);
    for set in &v.sets {
        let labels = [("pool", set.pool.as_str()), ("set", set.set.as_str()), ("server", server)];
        out.add(
            "minio_cluster_health_erasure_set_online_drives",
            "gauge",
            "Drives of the erasure set that answer",
            &labels,
            set.online as f64,
        );
        out.add(
            "minio_cluster_health_erasure_set_read_quorum",
            "gauge",
            "Drives the erasure set needs to read",
            &labels,
            set.read_quorum as f64,
        );
        out.add(
            "minio_cluster_health_erasure_set_write_quorum",
            "gauge",
            "Drives the erasure set needs to write",
            &labels,
            set.write_quorum as f64,
        );
        out.add(
            "minio_cluster_health_erasure_set_status",
            "gauge",
            "1 when the erasure set has its write quorum, else 0",
            &labels,
            f64::from(u8::from(set.healthy())),
        );
        out.add(
            "minio_cluster_health_erasure_set_tolerance",
            "gauge",
            "Drives the erasure set can still lose and keep its write quorum",
            &labels,
            set.online.saturating_sub(set.write_quorum) as f64,
        );
    }
    let labels = [("server", server)];
    let gauges = [
        ("minio_cluster_capacity_raw_total_bytes", "Size of every drive together", v.raw_total),
        ("minio_cluster_capacity_raw_free_bytes", "Free space of every drive together", v.raw_free),
        (
            "minio_cluster_capacity_usable_total_bytes",
            "Size of every drive together, parity removed",
            v.usable_total,
        ),
        (
            "minio_cluster_capacity_usable_free_bytes",
            "Free space of every drive together, parity removed",
            v.usable_free,
        ),
        ("minio_cluster_drive_online_total", "Drives that answer", v.drives_online as f64),
        ("minio_cluster_drive_offline_total", "Drives that do not answer", v.drives_offline as f64),
        (
            "minio_cluster_drive_total",
            "Drives of the deployment",
            (v.drives_online + v.drives_offline) as f64,
        ),
        ("minio_cluster_nodes_online_total", "Nodes with a drive that answers", v.nodes_online as f64),
        ("minio_cluster_nodes_offline_total", "Nodes none of whose drives answer", v.nodes_offline as f64),
        (
            "minio_cluster_health_status",
            "1 when every erasure set has its write quorum, else 0",
            f64::from(u8::from(v.healthy())),
        ),
        ("minio_cluster_bucket_total", "Buckets of the deployment", user_buckets(node).len() as f64),
    ];
    for (name, help, v) in gauges {
        out.add(name, "gauge", help, &labels, v);
    }
}

/// One of this node's drives, as a scrape finds it.
pub(crate) struct LocalDrive<'a> {
    /// Its endpoint: a folder, or a URL in a deployment of several nodes.
    pub(crate) endpoint: &'a str,
    pub(crate) pool: usize,
    pub(crate) set: usize,
    /// Its place in its set.
    pub(crate) index: usize,
    /// `None`: it does not answer.
    pub(crate) info: Option<strata_drive::DiskInfo>,
    /// Drive operations that failed since the server started.
    pub(crate) errors: f64,
    /// Mean time of each drive operation since the server started, in microseconds.
    pub(crate) latency_us: BTreeMap<String, f64>,
}

impl LocalDrive<'_> {
    /// Its folder (a URL's path).
    pub(crate) fn path(&self) -> &str {
        match self.endpoint.split_once("://") {
            Some((_, rest)) => rest.find('/').map_or(rest, |i| &rest[i..]),
            None => self.endpoint,
        }
    }
}

/// This node's drives (each once), with their errors and latencies from Strata's exposition.
pub(crate) fn local_drives<'a>(states: &'a States, samples: &[Sample], server: &str) -> Vec<LocalDrive<'a>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (view, infos) in states {
        for (index, (drive, info)) in view.drives.iter().zip(infos).enumerate() {
            let Some(d) = drive else { continue };
            // Only this node's drives: the cluster endpoint covers the others.
            if node_of(d.endpoint(), server) != server || !seen.insert(d.endpoint()) {
                continue;
            }
            let endpoint = d.endpoint();
            let mine = || samples.iter().filter(move |s| s.label("drive") == endpoint);
            let errors =
                mine().filter(|s| s.name == "strata_drive_operation_errors_total").map(|s| s.value).sum();
            let mut per_op: BTreeMap<String, (f64, f64)> = BTreeMap::new();
            for s in mine() {
                match s.name.as_str() {
                    "strata_drive_operation_duration_seconds_sum" => {
                        per_op.entry(s.label("op").to_owned()).or_default().0 += s.value
                    }
                    "strata_drive_operation_duration_seconds_count" => {
                        per_op.entry(s.label("op").to_owned()).or_default().1 += s.value
                    }
                    _ => {}
                }
            }
            let latency_us = per_op
                .into_iter()
                .filter(|(_, (_, count))| *count > 0.0)
                .map(|(op, (seconds, count))| (op, seconds / count * 1e6))
                .collect();
            out.push(LocalDrive {
                endpoint,
                pool: view.pool,
                set: view.set,
                index,
                info: *info,
                errors,
                latency_us,
            });
        }
    }
    out
}

/// `minio_node_drive_*`: this node's drives.
fn drives(out: &mut Exposition, states: &States, samples: &[Sample], server: &str) {
    let local = local_drives(states, samples, server);
    for d in &local {
        let labels = [("drive", d.endpoint), ("server", server)];
        let Some(i) = d.info else { continue };
        let pairs = [
            ("minio_node_drive_total_bytes", "Size of the drive's file system", i.total_bytes),
            ("minio_node_drive_free_bytes", "Free space on the drive's file system", i.free_bytes),
            (
                "minio_node_drive_used_bytes",
                "Used space on the drive's file system",
                i.total_bytes.saturating_sub(i.free_bytes),
            ),
            ("minio_node_drive_total_inodes", "Inodes of the drive's file system", i.total_inodes),
            ("minio_node_drive_free_inodes", "Free inodes of the drive's file system", i.free_inodes),
            (
                "minio_node_drive_used_inodes",
                "Used inodes of the drive's file system",
                i.total_inodes.saturating_sub(i.free_inodes),
            ),
        ];
        for (name, help, v) in pairs {
            out.add(name, "gauge", help, &labels, v as f64);
        }
        out.add(
            "minio_node_drive_errors_availability",
            "counter",
            "Drive operations that failed since the server started",
            &labels,
            d.errors,
        );
        for (op, micros) in &d.latency_us {
            let api = format!("storage.{op}");
            out.add(
                "minio_node_drive_latency_us",
                "gauge",
                "Mean time of each drive operation since the server started, in microseconds",
                &[("api", &api), ("drive", d.endpoint), ("server", server)],
                *micros,
            );
        }
    }
    let total = local.len();
    let online = local.iter().filter(|d| d.info.is_some()).count();
    let labels = [("server", server)];
    out.add("minio_node_drive_total", "gauge", "Drives of this node", &labels, total as f64);
    out.add(
        "minio_node_drive_online_total",
        "gauge",
        "Drives of this node that answer",
        &labels,
        online as f64,
    );
    out.add(
        "minio_node_drive_offline_total",
        "gauge",
        "Drives of this node that do not answer",
        &labels,
        (total - online) as f64,
    );
}

/// `minio_bucket_*`: requests per bucket and the data usage ([`crate::minio_buckets`]), and
/// the bucket count.
fn buckets(out: &mut Exposition, node: &Node, server: &str) {
    let names = user_buckets(node);
    out.add(
        "minio_cluster_bucket_total",
        "gauge",
        "Buckets of the deployment",
        &[("server", server)],
        names.len() as f64,
    );
    crate::minio_buckets::v2_buckets(out, node, &names, server);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MinIO's S3 handlers (the names its `api` labels take: `cmd/api-router.go`).
    const MINIO_HANDLERS: [&str; 76] = [
        "AbortMultipartUpload",
        "CompleteMultipartUpload",
        "CopyObject",
        "CopyObjectPart",
        "DeleteBucket",
        "DeleteBucketCors",
        "DeleteBucketEncryption",
        "DeleteBucketLifecycle",
        "DeleteBucketPolicy",
        "DeleteBucketReplicationConfig",
        "DeleteBucketTagging",
        "DeleteBucketWebsite",
        "DeleteMultipleObjects",
        "DeleteObject",
        "DeleteObjectTagging",
        "GetBucketACL",
        "GetBucketAccelerate",
        "GetBucketCors",
        "GetBucketEncryption",
        "GetBucketLifecycle",
        "GetBucketLocation",
        "GetBucketLogging",
        "GetBucketNotification",
        "GetBucketObjectLockConfig",
        "GetBucketPolicy",
        "GetBucketPolicyStatus",
        "GetBucketReplicationConfig",
        "GetBucketReplicationMetrics",
        "GetBucketReplicationMetricsV2",
        "GetBucketRequestPayment",
        "GetBucketTagging",
        "GetBucketVersioning",
        "GetBucketWebsite",
        "GetObject",
        "GetObjectACL",
        "GetObjectAttributes",
        "GetObjectLambda",
        "GetObjectLegalHold",
        "GetObjectRetention",
        "GetObjectTagging",
        "HeadBucket",
        "HeadObject",
        "ListBuckets",
        "ListMultipartUploads",
        "ListObjectParts",
        "ListObjectVersions",
        "ListObjectVersionsM",
        "ListObjectsV1",
        "ListObjectsV2",
        "ListObjectsV2M",
        "ListenNotification",
        "NewMultipartUpload",
        "PostPolicyBucket",
        "PostRestoreObject",
        "PutBucket",
        "PutBucketACL",
        "PutBucketCors",
        "PutBucketEncryption",
        "PutBucketLifecycle",
        "PutBucketNotification",
        "PutBucketObjectLockConfig",
        "PutBucketPolicy",
        "PutBucketReplicationConfig",
        "PutBucketTagging",
        "PutBucketVersioning",
        "PutObject",
        "PutObjectACL",
        "PutObjectExtract",
        "PutObjectLegalHold",
        "PutObjectPart",
        "PutObjectRetention",
        "PutObjectTagging",
        "ResetBucketReplicationStart",
        "ResetBucketReplicationStatus",
        "SelectObjectContent",
        "ValidateBucketReplicationCreds",
    ];

    /// Strata's operations MinIO has no handler for: they keep their AWS names.
    const STRATA_ONLY: [&str; 7] = [
        "GetBucketOwnershipControls",
        "PutBucketOwnershipControls",
        "DeleteBucketOwnershipControls",
        "GetPublicAccessBlock",
        "PutPublicAccessBlock",
        "DeletePublicAccessBlock",
        "GetObjectTorrent",
    ];

    #[test]
    fn every_operation_takes_minio_s_name() {
        use strata_s3::router::Operation;
        let ours: Vec<&str> = Operation::ALL.iter().map(|op| op.name()).collect();
        for (aws, minio) in MINIO_API_NAMES {
            assert!(ours.contains(&aws), "{aws} is not an operation of Strata's");
            assert!(MINIO_HANDLERS.contains(&minio), "{minio} is not a handler of MinIO's");
        }
        for op in ours {
            let name = minio_api(op);
            assert!(
                MINIO_HANDLERS.contains(&name) || STRATA_ONLY.contains(&op),
                "{op} is labelled {name}, which MinIO has no handler for"
            );
        }
        assert_eq!(minio_api("CreateMultipartUpload"), "NewMultipartUpload");
        assert_eq!(minio_api("GetObject"), "GetObject");
        let bounds: Vec<f64> = TTFB_BOUNDS.iter().map(|(b, _)| *b).collect();
        assert_eq!(
            bounds,
            strata_metrics::bucket::TTFB_BOUNDS,
            "the per-bucket counts use MinIO's bounds too"
        );
    }

    #[test]
    fn reads_back_our_own_exposition() {
        let m = strata_metrics::Metrics::new();
        m.requests
            .get_or_create(&strata_metrics::RequestLabels { api: "Put\"Object".into(), code: "200".into() })
            .inc_by(3);
        m.request_duration
            .get_or_create(&strata_metrics::ApiLabels { api: "GetObject".into() })
            .observe(0.07);
        let samples = parse(&m.encode());
        let put = samples.iter().find(|s| s.name == "strata_s3_requests_total").expect("requests");
        assert_eq!(put.label("api"), "Put\"Object");
        assert_eq!(put.value, 3.0);
        let buckets: Vec<_> =
            samples.iter().filter(|s| s.name == "strata_s3_request_duration_seconds_bucket").collect();
        for (bound, _) in TTFB_BOUNDS {
            assert!(
                buckets.iter().any(|s| parse_value(s.label("le")).is_some_and(|le| same_bound(le, bound))),
                "the request histogram has no bound at {bound}: MinIO's distribution would be inexact"
            );
        }
        let at = |b: f64| {
            buckets
                .iter()
                .find(|s| parse_value(s.label("le")).is_some_and(|le| same_bound(le, b)))
                .map(|s| s.value)
        };
        assert_eq!(at(0.05), Some(0.0));
        assert_eq!(at(0.1), Some(1.0));
        assert_eq!(at(f64::INFINITY), Some(1.0));
    }

    #[test]
    fn requests_become_minio_series() {
        let samples = parse(
            "strata_s3_requests_total{api=\"GetObject\",code=\"200\"} 5\n\
             strata_s3_requests_total{api=\"GetObject\",code=\"404\"} 2\n\
             strata_s3_requests_total{api=\"GetObject\",code=\"503\"} 1\n\
             strata_s3_requests_total{api=\"GetObject\",code=\"499\"} 1\n\
             strata_s3_requests_total{api=\"Metrics\",code=\"200\"} 9\n\
             strata_s3_received_bytes_total 100\n",
        );
        let mut out = Exposition::default();
        requests(&mut out, &samples, "node1:9000");
        let text = out.render();
        for line in [
            "minio_s3_requests_total{api=\"getobject\",server=\"node1:9000\"} 9",
            "minio_s3_requests_errors_total{api=\"getobject\",server=\"node1:9000\"} 3",
            "minio_s3_requests_4xx_errors_total{api=\"getobject\",server=\"node1:9000\"} 2",
            "minio_s3_requests_5xx_errors_total{api=\"getobject\",server=\"node1:9000\"} 1",
            "minio_s3_requests_canceled_total{api=\"getobject\",server=\"node1:9000\"} 1",
            "minio_s3_traffic_received_bytes{server=\"node1:9000\"} 100",
            "# TYPE minio_s3_requests_total counter",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("api=\"metrics\""), "{text}");
        // Operations MinIO names alike add up, their time-to-first-byte counts too.
        let samples = parse(
            "strata_s3_requests_total{api=\"ListenNotification\",code=\"200\"} 1\n\
             strata_s3_requests_total{api=\"ListenBucketNotification\",code=\"200\"} 2\n\
             strata_s3_request_duration_seconds_bucket{api=\"ListenNotification\",le=\"0.05\"} 1\n\
             strata_s3_request_duration_seconds_bucket{api=\"ListenBucketNotification\",le=\"0.05\"} 2\n\
             strata_s3_requests_total{api=\"CreateBucket\",code=\"200\"} 1\n",
        );
        let mut out = Exposition::default();
        requests(&mut out, &samples, "n:9000");
        let text = out.render();
        for line in [
            "minio_s3_requests_total{api=\"listennotification\",server=\"n:9000\"} 3",
            "minio_s3_requests_ttfb_seconds_distribution{api=\"listennotification\",le=\"0.050\",server=\"n:9000\"} 3",
            "minio_s3_requests_total{api=\"putbucket\",server=\"n:9000\"} 1",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
        assert_eq!(node_of("http://10.0.0.2:9000/mnt/d1", "me:9000"), "10.0.0.2:9000");
        assert_eq!(node_of("/mnt/d1", "me:9000"), "me:9000");
    }
}
