//! MinIO's metrics v3 paths (`/minio/metrics/v3/...`), for the groups Strata has a source for,
//! derived at scrape time like the v2 paths ([`crate::minio_metrics`]): requests pay nothing.
//!
//! Paths follow MinIO's rules (`cmd/metrics-v3-handler.go`): every collector path is served by
//! itself and by each of its parents (`/system/` serves `/system/drive`, `/system/process`,
//! ...), `/minio/metrics/v3` alone serves every group except the per-bucket ones, and a path
//! under `/bucket/` names its bucket as its last part (`/bucket/api/photos`). A path that is
//! none of MinIO's answers 404, as MinIO does. A path of MinIO's whose group Strata has no
//! source for (`/debug/go`, `/audit`, `/cluster/iam`, replication, ...) answers with no series,
//! as MinIO does when a group has nothing to show.
//!
//! Shapes follow MinIO's v3 exposition: names are the collector path joined by `_` plus the
//! metric's own name (`/system/drive` + `used_bytes` = `minio_system_drive_used_bytes`); groups
//! outside `/cluster` carry `server`; request series carry `type="s3"` and `name`, MinIO's name
//! of the operation as is (`PutObject`); time-to-first-byte distributions are counters per `le`;
//! and a sample is left out unless its value is above 0.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use strata_s3::body::ResponseBody;
use strata_s3::{Node, Reply};

use crate::minio_metrics::{
    api_requests, local_drives, parse, sum, text_reply, ttfb_labels, ClusterView, Exposition, Sample, States,
};
use crate::{minio_buckets, observe};

/// Where the v3 paths start.
pub const PREFIX: &str = "/minio/metrics/v3";

/// The part of `path` after [`PREFIX`], if it is a v3 path.
pub fn path_of(path: &str) -> Option<&str> {
    path.strip_prefix(PREFIX)
}

/// What fills one of MinIO's v3 groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    ApiRequests,
    BucketApi,
    ClusterConfig,
    ErasureSet,
    ClusterHealth,
    UsageBuckets,
    UsageObjects,
    Ilm,
    Notification,
    Scanner,
    Drive,
    Process,
    /// Strata has no source for it: the path answers, with no series.
    Absent,
}

/// A collector path of MinIO's, and what serves it here.
type Collector = (&'static str, Group);

/// MinIO's collector paths (`cmd/metrics-v3.go`), and what serves each here.
const COLLECTORS: [Collector; 21] = [
    ("/api/requests", Group::ApiRequests),
    ("/audit", Group::Absent),
    ("/bucket/api", Group::BucketApi),
    ("/bucket/replication", Group::Absent),
    ("/cluster/config", Group::ClusterConfig),
    ("/cluster/erasure-set", Group::ErasureSet),
    ("/cluster/health", Group::ClusterHealth),
    ("/cluster/iam", Group::Absent),
    ("/cluster/usage/buckets", Group::UsageBuckets),
    ("/cluster/usage/objects", Group::UsageObjects),
    ("/debug/go", Group::Absent),
    ("/ilm", Group::Ilm),
    ("/logger/webhook", Group::Absent),
    ("/notification", Group::Notification),
    ("/replication", Group::Absent),
    ("/scanner", Group::Scanner),
    ("/system/cpu", Group::Absent),
    ("/system/drive", Group::Drive),
    ("/system/memory", Group::Absent),
    ("/system/network/internode", Group::Absent),
    ("/system/process", Group::Process),
];

/// Whether a request for `asked` serves the collector at `path`: the path itself or one of its
/// parents (`/a` serves `/a/b`, `/ab` does not).
fn serves(asked: &str, path: &str) -> bool {
    if asked == path {
        return true;
    }
    if asked.len() >= path.len() {
        return false;
    }
    match asked.strip_suffix('/') {
        Some(_) => path.starts_with(asked),
        None => path.starts_with(asked) && path.as_bytes()[asked.len()] == b'/',
    }
}

/// The collectors a v3 path (the part after [`PREFIX`]) asks for, with the bucket it names for
/// the per-bucket groups; `None` when MinIO answers 404.
fn resolve(rest: &str) -> Option<(Vec<Collector>, Option<&str>)> {
    let (asked, bucket) = match rest.starts_with("/bucket/") {
        true => rest.rsplit_once('/').map(|(asked, bucket)| (asked, Some(bucket)))?,
        false => (rest, None),
    };
    if asked == "/" {
        return None;
    }
    let groups: Vec<Collector> = COLLECTORS
        .into_iter()
        .filter(|(path, _)| serves(asked, path))
        // Per-bucket groups only for a bucket.
        .filter(|(path, _)| !path.starts_with("/bucket/") || bucket.is_some())
        .collect();
    (!groups.is_empty()).then_some((groups, bucket))
}

/// Serves a v3 path (the part after [`PREFIX`]).
pub async fn scrape(node: &Arc<Node>, rest: &str) -> Reply {
    let Some((groups, bucket)) = resolve(rest) else {
        let text = "Metrics Resource Not found\n";
        let mut reply = Reply::empty(StatusCode::NOT_FOUND)
            .header("content-type", "text/plain; charset=utf-8")
            .header("content-length", &text.len().to_string());
        reply.body = ResponseBody::Full(Some(Bytes::from_static(text.as_bytes())));
        return reply;
    };
    let states = observe::refresh(node).await;
    let samples = parse(&node.metrics.encode());
    let server = node.config.endpoint.as_str();
    let mut out = Exposition::positive_only();
    for (_, group) in groups {
        match group {
            Group::ApiRequests => requests(&mut out, &samples, server),
            Group::BucketApi => minio_buckets::v3_bucket_api(&mut out, node, bucket.unwrap_or(""), server),
            Group::ClusterConfig => config(&mut out, node),
            Group::ErasureSet => erasure_sets(&mut out, &ClusterView::new(&states, server)),
            Group::ClusterHealth => health(&mut out, &ClusterView::new(&states, server)),
            Group::UsageBuckets => minio_buckets::v3_usage_buckets(&mut out, node),
            Group::UsageObjects => minio_buckets::v3_usage_objects(&mut out, node),
            Group::Ilm => ilm(&mut out, &samples, server),
            Group::Notification => notification(&mut out, &samples, server),
            Group::Scanner => scanner(&mut out, node, &samples, server),
            Group::Drive => drives(&mut out, &states, &samples, server),
            Group::Process => process(&mut out, &samples, server),
            Group::Absent => {}
        }
    }
    text_reply(out.render())
}

/// `/api/requests`: `minio_api_requests_*`.
fn requests(out: &mut Exposition, samples: &[Sample], server: &str) {
    for (name, c) in &api_requests(samples) {
        let labels = [("name", name.as_str()), ("server", server), ("type", "s3")];
        let counters = [
            ("minio_api_requests_total", "S3 requests answered", c.all),
            ("minio_api_requests_errors_total", "S3 requests answered with a 4xx or 5xx status", c.errors()),
            ("minio_api_requests_4xx_errors_total", "S3 requests answered with a 4xx status", c.client),
            ("minio_api_requests_5xx_errors_total", "S3 requests answered with a 5xx status", c.server),
            ("minio_api_requests_canceled_total", "S3 requests the client gave up on (499)", c.canceled),
        ];
        for (metric, help, v) in counters {
            out.add(metric, "counter", help, &labels, v);
        }
        for (le, count) in ttfb_labels().zip(c.ttfb) {
            out.add(
                "minio_api_requests_ttfb_seconds_distribution",
                "counter",
                "Requests whose response headers left within le seconds (cumulative)",
                &[("le", le), ("name", name.as_str()), ("server", server), ("type", "s3")],
                count.unwrap_or(0.0),
            );
        }
    }
    let labels = [("server", server), ("type", "s3")];
    out.add(
        "minio_api_requests_traffic_sent_bytes",
        "counter",
        "Response body bytes sent to S3 clients",
        &labels,
        sum(samples, "strata_s3_sent_bytes_total"),
    );
    out.add(
        "minio_api_requests_traffic_received_bytes",
        "counter",
        "Request body bytes S3 clients declared",
        &labels,
        sum(samples, "strata_s3_received_bytes_total"),
    );
}

/// `/cluster/config`: the storage classes' parity.
fn config(out: &mut Exposition, node: &Node) {
    let standard = node.layer.sets().first().map_or(0, |v| v.drives.len() - v.read_quorum);
    let rrs = node.config.rrs_parity.unwrap_or(standard);
    out.add(
        "minio_cluster_config_standard_parity",
        "gauge",
        "Parity of the STANDARD storage class",
        &[],
        standard as f64,
    );
    out.add(
        "minio_cluster_config_rrs_parity",
        "gauge",
        "Parity of the REDUCED_REDUNDANCY storage class",
        &[],
        rrs as f64,
    );
}

/// `/cluster/erasure-set`: quorums, drives online, health and tolerance per set.
fn erasure_sets(out: &mut Exposition, v: &ClusterView) {
    let write_quorum = v.sets.iter().map(|s| s.write_quorum).max().unwrap_or(0);
    out.add(
        "minio_cluster_erasure_set_overall_write_quorum",
        "gauge",
        "The largest write quorum of the erasure sets",
        &[],
        write_quorum as f64,
    );
    out.add(
        "minio_cluster_erasure_set_overall_health",
        "gauge",
        "1 when every erasure set has its write quorum",
        &[],
        f64::from(u8::from(v.healthy())),
    );
    for s in &v.sets {
        let labels = [("pool_id", s.pool.as_str()), ("set_id", s.set.as_str())];
        let online = s.online as f64;
        let (read, write) = (s.read_quorum as f64, s.write_quorum as f64);
        let gauges = [
            ("minio_cluster_erasure_set_read_quorum", "Drives the erasure set needs to read", read),
            ("minio_cluster_erasure_set_write_quorum", "Drives the erasure set needs to write", write),
            (
                "minio_cluster_erasure_set_online_drives_count",
                "Drives of the erasure set that answer",
                online,
            ),
            (
                "minio_cluster_erasure_set_health",
                "1 when the erasure set has its write quorum",
                f64::from(u8::from(s.healthy())),
            ),
            (
                "minio_cluster_erasure_set_read_tolerance",
                "Drives the erasure set can lose and still read",
                online - read,
            ),
            (
                "minio_cluster_erasure_set_write_tolerance",
                "Drives the erasure set can lose and still write",
                online - write,
            ),
            (
                "minio_cluster_erasure_set_read_health",
                "1 when the erasure set has its read quorum",
                f64::from(u8::from(online >= read)),
            ),
            (
                "minio_cluster_erasure_set_write_health",
                "1 when the erasure set has its write quorum",
                f64::from(u8::from(online >= write)),
            ),
        ];
        for (name, help, value) in gauges {
            out.add(name, "gauge", help, &labels, value);
        }
    }
}

/// `/cluster/health`: drives, nodes and capacity.
fn health(out: &mut Exposition, v: &ClusterView) {
    let gauges = [
        ("minio_cluster_health_drives_offline_count", "Drives that do not answer", v.drives_offline as f64),
        ("minio_cluster_health_drives_online_count", "Drives that answer", v.drives_online as f64),
        (
            "minio_cluster_health_drives_count",
            "Drives of the deployment",
            (v.drives_online + v.drives_offline) as f64,
        ),
        (
            "minio_cluster_health_nodes_offline_count",
            "Nodes none of whose drives answer",
            v.nodes_offline as f64,
        ),
        ("minio_cluster_health_nodes_online_count", "Nodes with a drive that answers", v.nodes_online as f64),
        ("minio_cluster_health_capacity_raw_total_bytes", "Size of every drive together", v.raw_total),
        ("minio_cluster_health_capacity_raw_free_bytes", "Free space of every drive together", v.raw_free),
        (
            "minio_cluster_health_capacity_usable_total_bytes",
            "Size of every drive together, parity removed",
            v.usable_total,
        ),
        (
            "minio_cluster_health_capacity_usable_free_bytes",
            "Free space of every drive together, parity removed",
            v.usable_free,
        ),
    ];
    for (name, help, value) in gauges {
        out.add(name, "gauge", help, &[], value);
    }
}

/// `/ilm`: the versions lifecycle passes looked at.
fn ilm(out: &mut Exposition, samples: &[Sample], server: &str) {
    out.add(
        "minio_ilm_versions_scanned",
        "counter",
        "Object versions lifecycle passes looked at since the server started",
        &[("server", server)],
        sum(samples, "strata_lifecycle_objects_scanned_total"),
    );
}

/// `/notification`: events delivered to the notification targets, refused, dropped.
fn notification(out: &mut Exposition, samples: &[Sample], server: &str) {
    let labels = [("server", server)];
    for (name, help, source) in [
        (
            "minio_notification_events_sent_total",
            "Events the targets accepted",
            "strata_notify_deliveries_total",
        ),
        (
            "minio_notification_events_errors_total",
            "Deliveries the targets refused or did not answer (each is retried)",
            "strata_notify_failures_total",
        ),
        (
            "minio_notification_events_skipped_total",
            "Events not queued: the queue was full or its drive failed",
            "strata_notify_events_dropped_total",
        ),
    ] {
        out.add(name, "counter", help, &labels, sum(samples, source));
    }
}

/// `/scanner`: objects the heal scans checked, and the time since the last full scan.
fn scanner(out: &mut Exposition, node: &Node, samples: &[Sample], server: &str) {
    let labels = [("server", server)];
    out.add(
        "minio_scanner_objects_scanned",
        "counter",
        "Objects the healer checked since the server started",
        &labels,
        sum(samples, "strata_heal_objects_scanned_total"),
    );
    let updated = node.layer.healer().usage().updated;
    if updated > 0 {
        let age = strata_types::time::now_nanos().saturating_sub(updated);
        out.add(
            "minio_scanner_last_activity_seconds",
            "gauge",
            "Seconds since the last full scan counted the data usage",
            &labels,
            age as f64 / 1e9,
        );
    }
}

/// `/system/drive`: this node's drives.
fn drives(out: &mut Exposition, states: &States, samples: &[Sample], server: &str) {
    let local = local_drives(states, samples, server);
    for d in &local {
        let (index, pool, set) = (d.index.to_string(), d.pool.to_string(), d.set.to_string());
        let labels = [
            ("drive", d.path()),
            ("drive_index", index.as_str()),
            ("pool_index", pool.as_str()),
            ("server", server),
            ("set_index", set.as_str()),
        ];
        if let Some(i) = d.info {
            let gauges = [
                (
                    "minio_system_drive_used_bytes",
                    "Used space on the drive's file system",
                    i.total_bytes.saturating_sub(i.free_bytes),
                ),
                ("minio_system_drive_free_bytes", "Free space on the drive's file system", i.free_bytes),
                ("minio_system_drive_total_bytes", "Size of the drive's file system", i.total_bytes),
                (
                    "minio_system_drive_used_inodes",
                    "Used inodes of the drive's file system",
                    i.total_inodes.saturating_sub(i.free_inodes),
                ),
                ("minio_system_drive_free_inodes", "Free inodes of the drive's file system", i.free_inodes),
                ("minio_system_drive_total_inodes", "Inodes of the drive's file system", i.total_inodes),
                ("minio_system_drive_health", "1 when the drive answers (0, left out, when it does not)", 1),
            ];
            for (name, help, v) in gauges {
                out.add(name, "gauge", help, &labels, v as f64);
            }
        }
        out.add(
            "minio_system_drive_availability_errors_total",
            "counter",
            "Drive operations that failed since the server started",
            &labels,
            d.errors,
        );
        for (op, micros) in &d.latency_us {
            let api = format!("storage.{op}");
            let mut with_api = vec![("api", api.as_str())];
            with_api.extend(labels);
            out.add(
                "minio_system_drive_api_latency_micros",
                "gauge",
                "Mean time of each drive operation since the server started, in microseconds",
                &with_api,
                *micros,
            );
        }
    }
    let online = local.iter().filter(|d| d.info.is_some()).count();
    let labels = [("server", server)];
    for (name, help, v) in [
        ("minio_system_drive_offline_count", "Drives of this node that do not answer", local.len() - online),
        ("minio_system_drive_online_count", "Drives of this node that answer", online),
        ("minio_system_drive_count", "Drives of this node", local.len()),
    ] {
        out.add(name, "gauge", help, &labels, v as f64);
    }
}

/// `/system/process`: the server process.
fn process(out: &mut Exposition, samples: &[Sample], server: &str) {
    use strata_types::process;
    let labels = [("server", server)];
    out.add(
        "minio_system_process_cpu_total_seconds",
        "counter",
        "User and system CPU seconds of the server process",
        &labels,
        sum(samples, "strata_process_cpu_seconds_total"),
    );
    out.add(
        "minio_system_process_resident_memory_bytes",
        "gauge",
        "Resident memory of the server process",
        &labels,
        sum(samples, "strata_process_resident_memory_bytes"),
    );
    out.add(
        "minio_system_process_file_descriptor_open_total",
        "gauge",
        "Open file descriptors of the server process",
        &labels,
        sum(samples, "strata_process_open_fds"),
    );
    if let Some(limit) = process::open_files_limit() {
        out.add(
            "minio_system_process_file_descriptor_limit_total",
            "gauge",
            "The open file limit of the server process",
            &labels,
            limit as f64,
        );
    }
    if let Some(kib) = process::memory_kib("self", "VmSize:") {
        out.add(
            "minio_system_process_virtual_memory_bytes",
            "gauge",
            "Virtual memory of the server process",
            &labels,
            (kib * 1024) as f64,
        );
    }
    if let Some(start) = process::start_time_unix("self") {
        let now = strata_types::time::now_nanos() as f64 / 1e9;
        out.add(
            "minio_system_process_start_time_seconds",
            "gauge",
            "When the server process started (Unix seconds)",
            &labels,
            start,
        );
        out.add(
            "minio_system_process_uptime_seconds",
            "gauge",
            "Seconds since the server process started",
            &labels,
            now - start,
        );
    }
    if let Some(io) = process::io_counters("self") {
        for (name, help, v) in [
            ("minio_system_process_io_rchar_bytes", "Bytes the process read through system calls", io.rchar),
            (
                "minio_system_process_io_read_bytes",
                "Bytes the process read from storage devices",
                io.read_bytes,
            ),
            ("minio_system_process_io_wchar_bytes", "Bytes the process wrote through system calls", io.wchar),
            (
                "minio_system_process_io_write_bytes",
                "Bytes the process wrote to storage devices",
                io.write_bytes,
            ),
            ("minio_system_process_syscall_read_total", "Read system calls of the process", io.syscr),
            ("minio_system_process_syscall_write_total", "Write system calls of the process", io.syscw),
        ] {
            out.add(name, "counter", help, &labels, v as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(rest: &str) -> Option<(Vec<&'static str>, Option<&str>)> {
        resolve(rest).map(|(groups, bucket)| (groups.into_iter().map(|(path, _)| path).collect(), bucket))
    }

    #[test]
    fn collectors_are_sorted_and_each_has_its_own_group() {
        assert!(COLLECTORS.windows(2).all(|w| w[0].0 < w[1].0));
        let served: Vec<_> = COLLECTORS.iter().map(|(_, g)| g).filter(|g| **g != Group::Absent).collect();
        for (i, g) in served.iter().enumerate() {
            assert!(!served[i + 1..].contains(g), "{g:?} serves two paths");
        }
    }

    #[test]
    fn paths_resolve_as_minio_resolves_them() {
        // A group, its parent (with or without the slash), and everything.
        assert_eq!(paths("/system/drive"), Some((vec!["/system/drive"], None)));
        let system = vec![
            "/system/cpu",
            "/system/drive",
            "/system/memory",
            "/system/network/internode",
            "/system/process",
        ];
        assert_eq!(paths("/system"), Some((system.clone(), None)));
        assert_eq!(paths("/system/"), Some((system, None)));
        assert_eq!(paths("/cluster/usage").map(|p| p.0.len()), Some(2));
        let all = paths("").expect("everything");
        assert!(all.0.contains(&"/api/requests") && all.0.contains(&"/cluster/health"));
        assert!(!all.0.contains(&"/bucket/api"), "per-bucket groups need a bucket");
        // The bucket is the last part of a path under /bucket/.
        assert_eq!(paths("/bucket/api/photos"), Some((vec!["/bucket/api"], Some("photos"))));
        assert_eq!(
            paths("/bucket/photos"),
            Some((vec!["/bucket/api", "/bucket/replication"], Some("photos")))
        );
        assert_eq!(paths("/bucket/api/"), Some((vec!["/bucket/api"], Some(""))));
        // Known paths without a source answer (with no series); others are 404.
        assert_eq!(resolve("/debug/go"), Some((vec![("/debug/go", Group::Absent)], None)));
        for missing in
            ["/", "/nope", "/systemx", "/system/drive/", "/api/requests/extra", "x", "/bucket/nope/b"]
        {
            assert_eq!(paths(missing), None, "{missing}");
        }
        assert_eq!(path_of("/minio/metrics/v3/api/requests"), Some("/api/requests"));
        assert_eq!(path_of("/minio/metrics/v3"), Some(""));
        assert_eq!(path_of("/minio/v2/metrics/node"), None);
    }

    #[test]
    fn v3_leaves_out_what_is_not_above_zero() {
        let samples = parse(
            "strata_s3_requests_total{api=\"CreateBucket\",code=\"200\"} 1\n\
             strata_s3_requests_total{api=\"GetObject\",code=\"404\"} 2\n\
             strata_s3_request_duration_seconds_bucket{api=\"GetObject\",le=\"0.05\"} 0\n\
             strata_s3_request_duration_seconds_bucket{api=\"GetObject\",le=\"0.1\"} 2\n\
             strata_s3_request_duration_seconds_bucket{api=\"GetObject\",le=\"+Inf\"} 2\n\
             strata_s3_received_bytes_total 7\n",
        );
        let mut out = Exposition::positive_only();
        requests(&mut out, &samples, "n:9000");
        let text = out.render();
        for line in [
            "# TYPE minio_api_requests_total counter",
            "minio_api_requests_total{name=\"PutBucket\",server=\"n:9000\",type=\"s3\"} 1",
            "minio_api_requests_4xx_errors_total{name=\"GetObject\",server=\"n:9000\",type=\"s3\"} 2",
            "# TYPE minio_api_requests_ttfb_seconds_distribution counter",
            "minio_api_requests_ttfb_seconds_distribution{le=\"0.100\",name=\"GetObject\",server=\"n:9000\",type=\"s3\"} 2",
            "minio_api_requests_traffic_received_bytes{server=\"n:9000\",type=\"s3\"} 7",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
        for absent in ["le=\"0.050\"", "minio_api_requests_5xx", "traffic_sent", "name=\"CreateBucket\""] {
            assert!(!text.contains(absent), "{absent} in\n{text}");
        }
    }
}
