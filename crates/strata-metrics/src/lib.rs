//! Every metric Strata exports, named, typed and documented in one place (`docs/metrics.md`
//! lists them). Request metrics are updated as requests finish; drive, set and process gauges are
//! refreshed by the scrape handler just before encoding, so scrapes cost nothing between them.
//! Requests are also counted per bucket ([`bucket`]) for MinIO's per-bucket metrics; those
//! counts are read by the scrape of MinIO's paths, not written to this registry.

pub mod bucket;

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
pub use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The S3 operation (`PutObject`, …), `Health`, `Metrics` or `Unknown`.
    pub api: String,
    /// The HTTP status code.
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    pub api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DriveLabels {
    pub drive: String,
    pub pool: String,
    pub set: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DriveOpLabels {
    pub drive: String,
    pub op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabels {
    /// The other node's `host:port`.
    pub peer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SetLabels {
    pub pool: String,
    pub set: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LifecycleLabels {
    /// `expire_current`, `expire_noncurrent`, `expire_delete_marker` or `abort_upload`.
    pub action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    /// The notification target's ARN (`arn:minio:sqs::1:webhook`).
    pub target: String,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub request_duration: Family<ApiLabels, Histogram>,
    pub received_bytes: Counter,
    /// Request bodies cut for moving slower than the minimum transfer rate.
    pub slow_bodies_cut: Counter,
    /// Connections closed because the client took responses slower than the minimum rate.
    pub slow_readers_cut: Counter,
    pub sent_bytes: Counter,
    /// Requests answered, and of them those answered with an error status (4xx, 5xx): totals
    /// for the console's overview, not exported (`requests` has them by operation and status).
    pub answered: Counter,
    pub answered_errors: Counter,
    pub requests_in_flight: Gauge,
    pub drive_online: Family<DriveLabels, Gauge>,
    pub drive_total_bytes: Family<DriveLabels, Gauge>,
    pub drive_free_bytes: Family<DriveLabels, Gauge>,
    pub drive_total_inodes: Family<DriveLabels, Gauge>,
    pub drive_free_inodes: Family<DriveLabels, Gauge>,
    pub drive_index_commits: Family<DriveLabels, Counter>,
    pub drive_index_changes: Family<DriveLabels, Counter>,
    pub drive_late_changes_refused: Family<DriveLabels, Counter>,
    pub drive_operations_abandoned: Family<DriveLabels, Counter>,
    pub drive_operation_duration: Family<DriveOpLabels, Histogram>,
    pub drive_operation_errors: Family<DriveOpLabels, Counter>,
    pub node_rpc_requests: Family<PeerLabels, Counter>,
    pub node_rpc_request_bytes: Family<PeerLabels, Counter>,
    pub heal_objects_scanned: Counter,
    pub heal_objects_healed: Counter,
    pub heal_objects_failed: Counter,
    pub heal_bytes_healed: Counter,
    pub heal_dangling_removed: Counter,
    pub heal_queue_length: Gauge,
    pub heal_scan_objects_remaining: Gauge,
    pub lifecycle_objects_scanned: Counter,
    pub lifecycle_expired: Family<LifecycleLabels, Counter>,
    pub lifecycle_passes: Counter,
    pub lifecycle_last_pass_seconds: Gauge<f64, AtomicU64>,
    pub lifecycle_last_pass_timestamp_seconds: Gauge,
    pub notify_queue_depth: Family<TargetLabels, Gauge>,
    pub notify_deliveries: Family<TargetLabels, Counter>,
    pub notify_failures: Family<TargetLabels, Counter>,
    pub notify_dropped: Family<TargetLabels, Counter>,
    pub replication_queue_depth: Gauge,
    pub replication_queue_worked: Counter,
    pub replication_queue_retries: Counter,
    pub replication_queue_dropped: Counter,
    pub replication_versions: Family<TargetLabels, Counter>,
    pub replication_bytes: Family<TargetLabels, Counter>,
    pub replication_failed_versions: Family<TargetLabels, Counter>,
    pub listen_clients: Gauge,
    pub listen_peer_subscriptions: Gauge,
    pub listen_subscriptions: Gauge,
    pub listen_events_sent: Counter,
    pub listen_events_dropped: Counter,
    pub set_online_drives: Family<SetLabels, Gauge>,
    pub set_read_quorum_ok: Family<SetLabels, Gauge>,
    pub set_write_quorum_ok: Family<SetLabels, Gauge>,
    pub process_cpu_seconds: Counter<f64, AtomicU64>,
    pub process_resident_memory_bytes: Gauge,
    pub process_open_fds: Gauge,
    /// Requests per bucket (MinIO's per-bucket metrics).
    pub buckets: bucket::BucketStats,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut r = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        r.register("strata_s3_requests", "S3 requests answered, by API and HTTP status", requests.clone());
        let request_duration =
            Family::<ApiLabels, Histogram>::new_with_constructor(
                || Histogram::new(request_duration_bounds()),
            );
        r.register(
            "strata_s3_request_duration_seconds",
            "Time from request arrival to response headers, by API",
            request_duration.clone(),
        );
        let received_bytes = Counter::default();
        r.register(
            "strata_s3_received_bytes",
            "Request body bytes declared by S3 clients",
            received_bytes.clone(),
        );
        let slow_bodies_cut = Counter::default();
        r.register(
            "strata_s3_slow_request_bodies_cut",
            "Request bodies cut for moving slower than STRATA_MIN_TRANSFER_RATE",
            slow_bodies_cut.clone(),
        );
        let slow_readers_cut = Counter::default();
        r.register(
            "strata_s3_slow_readers_cut",
            "Connections closed because the client read responses slower than STRATA_MIN_TRANSFER_RATE",
            slow_readers_cut.clone(),
        );
        let sent_bytes = Counter::default();
        r.register("strata_s3_sent_bytes", "Response body bytes sent to S3 clients", sent_bytes.clone());
        let requests_in_flight = Gauge::default();
        r.register("strata_s3_requests_in_flight", "S3 requests being served", requests_in_flight.clone());
        let drive = |r: &mut Registry, name: &str, help: &str| {
            let f = Family::<DriveLabels, Gauge>::default();
            r.register(name, help, f.clone());
            f
        };
        let drive_online =
            drive(&mut r, "strata_drive_online", "1 when the drive answers, 0 when it is offline");
        let drive_total_bytes = drive(&mut r, "strata_drive_total_bytes", "Size of the drive's filesystem");
        let drive_free_bytes =
            drive(&mut r, "strata_drive_free_bytes", "Bytes free on the drive's filesystem");
        let drive_total_inodes =
            drive(&mut r, "strata_drive_total_inodes", "Inodes of the drive's filesystem");
        let drive_free_inodes =
            drive(&mut r, "strata_drive_free_inodes", "Inodes free on the drive's filesystem");
        let drive_index_commits = Family::<DriveLabels, Counter>::default();
        r.register(
            "strata_drive_index_commits",
            "Durable metadata commits (group commits) on the drive",
            drive_index_commits.clone(),
        );
        let drive_index_changes = Family::<DriveLabels, Counter>::default();
        r.register(
            "strata_drive_index_changes",
            "Metadata changes applied by those commits",
            drive_index_changes.clone(),
        );
        let drive_late_changes_refused = Family::<DriveLabels, Counter>::default();
        r.register(
            "strata_drive_late_changes_refused",
            "Changes refused because their operation had ended (failed or kept without this drive) before they arrived",
            drive_late_changes_refused.clone(),
        );
        let drive_operations_abandoned = Family::<DriveLabels, Counter>::default();
        r.register(
            "strata_drive_operations_abandoned",
            "Changes whose operation never ended (its writer gone), settled by the drive as kept after PENDING_OP_MAX",
            drive_operations_abandoned.clone(),
        );
        let node_rpc_requests = Family::<PeerLabels, Counter>::default();
        r.register(
            "strata_node_rpc_requests",
            "Requests this node sent to another node of the deployment (node round trips)",
            node_rpc_requests.clone(),
        );
        let node_rpc_request_bytes = Family::<PeerLabels, Counter>::default();
        r.register(
            "strata_node_rpc_request_bytes",
            "Header and body bytes of those requests",
            node_rpc_request_bytes.clone(),
        );
        let set = |r: &mut Registry, name: &str, help: &str| {
            let f = Family::<SetLabels, Gauge>::default();
            r.register(name, help, f.clone());
            f
        };
        let set_online_drives =
            set(&mut r, "strata_set_online_drives", "Drives of the erasure set that are online");
        let set_read_quorum_ok =
            set(&mut r, "strata_set_read_quorum_ok", "1 when enough drives are online to read the set");
        let set_write_quorum_ok =
            set(&mut r, "strata_set_write_quorum_ok", "1 when enough drives are online to write to the set");
        let drive_operation_duration = Family::<DriveOpLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.00005, 2.5, 14))
        });
        r.register(
            "strata_drive_operation_duration_seconds",
            "Time of each drive operation, by drive and operation (its _count is the operation count)",
            drive_operation_duration.clone(),
        );
        let drive_operation_errors = Family::<DriveOpLabels, Counter>::default();
        r.register(
            "strata_drive_operation_errors",
            "Drive operations that failed with an I/O, corruption or offline error, by drive and operation",
            drive_operation_errors.clone(),
        );
        let counter = |r: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            r.register(name, help, c.clone());
            c
        };
        let heal_objects_scanned =
            counter(&mut r, "strata_heal_objects_scanned", "Objects the healer checked (queue and scans)");
        let heal_objects_healed = counter(
            &mut r,
            "strata_heal_objects_healed",
            "Objects the healer repaired on at least one drive",
        );
        let heal_objects_failed =
            counter(&mut r, "strata_heal_objects_failed", "Objects the healer could not fully repair");
        let heal_bytes_healed =
            counter(&mut r, "strata_heal_bytes_healed", "Object bytes rebuilt, once per drive repaired");
        let heal_dangling_removed = counter(
            &mut r,
            "strata_heal_dangling_removed",
            "Records removed because no read quorum held their object",
        );
        let heal_queue_length = Gauge::default();
        r.register(
            "strata_heal_queue_length",
            "Objects waiting in the heal queue",
            heal_queue_length.clone(),
        );
        let heal_scan_objects_remaining = Gauge::default();
        r.register(
            "strata_heal_scan_objects_remaining",
            "Objects the running heal scan has still to check (0 when idle)",
            heal_scan_objects_remaining.clone(),
        );
        let lifecycle_objects_scanned =
            counter(&mut r, "strata_lifecycle_objects_scanned", "Object versions lifecycle passes looked at");
        let lifecycle_expired = Family::<LifecycleLabels, Counter>::default();
        r.register(
            "strata_lifecycle_expired",
            "Lifecycle actions carried out, by action",
            lifecycle_expired.clone(),
        );
        let lifecycle_passes = counter(&mut r, "strata_lifecycle_passes", "Lifecycle passes finished");
        let lifecycle_last_pass_seconds = Gauge::<f64, AtomicU64>::default();
        r.register(
            "strata_lifecycle_last_pass_seconds",
            "How long the last finished lifecycle pass took",
            lifecycle_last_pass_seconds.clone(),
        );
        let lifecycle_last_pass_timestamp_seconds = Gauge::default();
        r.register(
            "strata_lifecycle_last_pass_timestamp_seconds",
            "When the last lifecycle pass finished (Unix seconds; 0: none yet)",
            lifecycle_last_pass_timestamp_seconds.clone(),
        );
        let notify_queue_depth = Family::<TargetLabels, Gauge>::default();
        r.register(
            "strata_notify_queue_depth",
            "Events queued for a notification target and not yet delivered",
            notify_queue_depth.clone(),
        );
        let notify_deliveries = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_notify_deliveries",
            "Events a notification target accepted",
            notify_deliveries.clone(),
        );
        let notify_failures = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_notify_failures",
            "Delivery attempts a notification target refused or did not answer (each is retried)",
            notify_failures.clone(),
        );
        let notify_dropped = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_notify_events_dropped",
            "Events not queued: the target's queue was full or its drive failed",
            notify_dropped.clone(),
        );
        let replication_queue_depth = Gauge::default();
        r.register(
            "strata_replication_queue_depth",
            "Versions this node queued for replication and has not yet replicated (its backlog)",
            replication_queue_depth.clone(),
        );
        let replication_queue_worked = Counter::default();
        r.register(
            "strata_replication_queue_worked",
            "Replication records this node worked to an end (copied, failed for good, or nothing to do)",
            replication_queue_worked.clone(),
        );
        let replication_queue_retries = Counter::default();
        r.register(
            "strata_replication_queue_retries",
            "Replication attempts that failed for a while (each is retried with back-off)",
            replication_queue_retries.clone(),
        );
        let replication_queue_dropped = Counter::default();
        r.register(
            "strata_replication_queue_dropped",
            "Versions not queued for replication: the queue was full or its drive failed (they stay PENDING)",
            replication_queue_dropped.clone(),
        );
        let replication_versions = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_replication_versions",
            "Versions and delete markers replicated, by destination",
            replication_versions.clone(),
        );
        let replication_bytes = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_replication_bytes",
            "Object bytes replicated, by destination",
            replication_bytes.clone(),
        );
        let replication_failed_versions = Family::<TargetLabels, Counter>::default();
        r.register(
            "strata_replication_failed_versions",
            "Versions left FAILED (not replicable: SSE-C, a missing destination), by destination",
            replication_failed_versions.clone(),
        );
        let listen_clients = Gauge::default();
        r.register(
            "strata_listen_clients",
            "Listen streams (mc watch, ListenBucketNotification) open on this node",
            listen_clients.clone(),
        );
        let listen_peer_subscriptions = Gauge::default();
        r.register(
            "strata_listen_peer_subscriptions",
            "Other nodes subscribed to this node's events (each has listeners of its own)",
            listen_peer_subscriptions.clone(),
        );
        let listen_subscriptions = Gauge::default();
        r.register(
            "strata_listen_subscriptions",
            "Live subscriptions to this node's events: its listen streams' and other nodes' (refreshed when scraped)",
            listen_subscriptions.clone(),
        );
        let listen_events_sent = Counter::default();
        r.register(
            "strata_listen_events_sent",
            "Events queued to listen streams on this node",
            listen_events_sent.clone(),
        );
        let listen_events_dropped = Counter::default();
        r.register(
            "strata_listen_events_dropped",
            "Events a listen stream missed: it fell behind (its queue full or the shared buffer overrun) or another node's events were lost on the way",
            listen_events_dropped.clone(),
        );
        let process_cpu_seconds = Counter::<f64, AtomicU64>::default();
        r.register(
            "strata_process_cpu_seconds",
            "User and system CPU time of the process",
            process_cpu_seconds.clone(),
        );
        let process_resident_memory_bytes = Gauge::default();
        r.register(
            "strata_process_resident_memory_bytes",
            "Resident memory of the process",
            process_resident_memory_bytes.clone(),
        );
        let process_open_fds = Gauge::default();
        r.register(
            "strata_process_open_fds",
            "Open file descriptors of the process",
            process_open_fds.clone(),
        );
        Self {
            registry: r,
            requests,
            request_duration,
            received_bytes,
            slow_bodies_cut,
            slow_readers_cut,
            sent_bytes,
            answered: Counter::default(),
            answered_errors: Counter::default(),
            requests_in_flight,
            drive_online,
            drive_total_bytes,
            drive_free_bytes,
            drive_total_inodes,
            drive_free_inodes,
            drive_index_commits,
            drive_index_changes,
            drive_late_changes_refused,
            drive_operations_abandoned,
            drive_operation_duration,
            drive_operation_errors,
            node_rpc_requests,
            node_rpc_request_bytes,
            heal_objects_scanned,
            heal_objects_healed,
            heal_objects_failed,
            heal_bytes_healed,
            heal_dangling_removed,
            heal_queue_length,
            heal_scan_objects_remaining,
            lifecycle_objects_scanned,
            lifecycle_expired,
            lifecycle_passes,
            lifecycle_last_pass_seconds,
            lifecycle_last_pass_timestamp_seconds,
            notify_queue_depth,
            notify_deliveries,
            notify_failures,
            notify_dropped,
            replication_queue_depth,
            replication_queue_worked,
            replication_queue_retries,
            replication_queue_dropped,
            replication_versions,
            replication_bytes,
            replication_failed_versions,
            listen_clients,
            listen_peer_subscriptions,
            listen_subscriptions,
            listen_events_sent,
            listen_events_dropped,
            set_online_drives,
            set_read_quorum_ok,
            set_write_quorum_ok,
            process_cpu_seconds,
            process_resident_memory_bytes,
            process_open_fds,
            buckets: bucket::BucketStats::default(),
        }
    }

    /// Records one drive operation (see `strata_drive::Metered`).
    pub fn observe_drive_op(&self, drive: &str, op: &str, seconds: f64, failed: bool) {
        let labels = DriveOpLabels { drive: drive.to_owned(), op: op.to_owned() };
        if failed {
            self.drive_operation_errors.get_or_create(&labels).inc();
        }
        self.drive_operation_duration.get_or_create(&labels).observe(seconds);
    }

    /// The Prometheus/OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Refreshes the process gauges from `/proc/self`.
    pub fn refresh_process(&self) {
        use strata_types::process;
        if let Some(ticks) = process::cpu_ticks("self") {
            let secs = ticks as f64 / process::TICKS_PER_SEC;
            let before = self.process_cpu_seconds.get();
            if secs > before {
                self.process_cpu_seconds.inc_by(secs - before);
            }
        }
        if let Some(kib) = process::memory_kib("self", "VmRSS:") {
            self.process_resident_memory_bytes.set(i64::try_from(kib * 1024).unwrap_or(i64::MAX));
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.process_open_fds.set(dir.count() as i64);
        }
    }
}

/// The request-duration histogram's bounds: doubling from 0.5 ms to 16 s, plus the bounds of
/// MinIO's time-to-first-byte distribution (0.05 to 10 s), which its dashboards read.
fn request_duration_bounds() -> Vec<f64> {
    let mut bounds: Vec<f64> = exponential_buckets(0.0005, 2.0, 16).collect();
    bounds.extend(bucket::TTFB_BOUNDS);
    bounds.sort_by(f64::total_cmp);
    bounds
}

/// Moves a counter up to `value` (for totals kept elsewhere, such as group-commit counts).
pub fn advance(counter: &Counter, value: u64) {
    let now = counter.get();
    if value > now {
        counter.inc_by(value - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_registered_metrics() {
        let m = Metrics::new();
        m.requests.get_or_create(&RequestLabels { api: "GetObject".into(), code: "200".into() }).inc();
        m.request_duration.get_or_create(&ApiLabels { api: "GetObject".into() }).observe(0.003);
        m.refresh_process();
        let text = m.encode();
        assert!(text.contains("strata_s3_requests_total{api=\"GetObject\",code=\"200\"} 1"), "{text}");
        assert!(text.contains("# TYPE strata_s3_request_duration_seconds histogram"));
        assert!(text.contains("strata_process_resident_memory_bytes "));
        assert!(text.trim_end().ends_with("# EOF"));
        let c = Counter::default();
        advance(&c, 5);
        advance(&c, 3);
        assert_eq!(c.get(), 5);
    }
}
