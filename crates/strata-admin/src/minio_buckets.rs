//! MinIO's per-bucket and usage series, for its v2 and v3 paths: requests per bucket (from
//! `strata_metrics::bucket`, counted as requests end) and the data usage the last full heal
//! scan counted (`strata_object::usage`: objects and bytes per bucket, and their sizes).
//!
//! v2 (`/minio/v2/metrics/bucket`, `/minio/v2/metrics/cluster`) shows at most
//! [`METRICS_BUCKETS_MAX`] buckets, the first by name, as MinIO does; v3 shows the bucket its
//! path names (`/minio/metrics/v3/bucket/api/NAME`) and every bucket's usage. Usage series are
//! absent until a full scan has run, as MinIO's are until its first scan. Only what the scan
//! knows is shown: current versions (no version counts, no version distribution).

use std::collections::BTreeSet;

use strata_metrics::bucket::BucketSnapshot;
use strata_object::usage::{BucketUsage, SIZE_RANGES};
use strata_object::DataUsage;
use strata_s3::router::Operation;
use strata_s3::Node;
use strata_types::limits::METRICS_BUCKETS_MAX;

use crate::minio_metrics::{minio_api, ttfb_labels, Exposition};

/// MinIO's names of the size ranges of [`BucketUsage::sizes`] (the bounds are
/// `USAGE_SIZE_BOUNDS`, MinIO's).
const SIZE_RANGE_NAMES: [&str; SIZE_RANGES] = [
    "LESS_THAN_1024_B",
    "BETWEEN_1024_B_AND_64_KB",
    "BETWEEN_64_KB_AND_256_KB",
    "BETWEEN_256_KB_AND_512_KB",
    "BETWEEN_512_KB_AND_1_MB",
    "BETWEEN_1_MB_AND_10_MB",
    "BETWEEN_10_MB_AND_64_MB",
    "BETWEEN_64_MB_AND_128_MB",
    "BETWEEN_128_MB_AND_512_MB",
    "GREATER_THAN_512_MB",
];

/// MinIO's range that spans those from 1 KiB to 1 MiB (its ranges overlap): its name, and the
/// ranges it adds up.
const KIB_TO_MIB: (&str, std::ops::RangeInclusive<usize>) = ("BETWEEN_1024B_AND_1_MB", 1..=4);

/// The object counts by size range as MinIO reports them: its eleven ranges, in its order.
pub(crate) fn size_distribution(sizes: &[u64; SIZE_RANGES]) -> Vec<(&'static str, u64)> {
    let (name, spanned) = KIB_TO_MIB;
    let mut out: Vec<(&'static str, u64)> =
        SIZE_RANGE_NAMES.iter().copied().zip(sizes.iter().copied()).collect();
    out.insert(*spanned.end() + 1, (name, sizes[spanned].iter().sum()));
    out
}

/// The data usage of the buckets in `names` (those that still exist), and its age in
/// nanoseconds; `None` before the first full scan.
fn usage(node: &Node, names: &BTreeSet<String>) -> Option<(DataUsage, u64)> {
    let mut usage = node.layer.healer().usage();
    if usage.updated == 0 {
        return None;
    }
    usage.buckets.retain(|b, _| names.contains(b));
    let age = strata_types::time::now_nanos().saturating_sub(usage.updated);
    Some((usage, age))
}

/// The totals over every bucket.
fn total(usage: &DataUsage) -> BucketUsage {
    let mut all = BucketUsage::default();
    for b in usage.buckets.values() {
        all.objects += b.objects;
        all.bytes += b.bytes;
        all.delete_markers += b.delete_markers;
        for (sum, n) in all.sizes.iter_mut().zip(b.sizes) {
            *sum += n;
        }
    }
    all
}

/// The requests counted per bucket, of buckets that still exist (the slots of the others freed).
fn requests(node: &Node, names: &BTreeSet<String>) -> Vec<BucketSnapshot> {
    node.metrics.buckets.retain(|b| names.contains(b));
    node.metrics.buckets.snapshot()
}

/// The MinIO name of an operation counted by index.
fn api_name(index: usize) -> &'static str {
    Operation::ALL.get(index).map_or("Unknown", |op| minio_api(op.name()))
}

/// Cumulative counts per `le` bound from counts per range.
fn cumulative(ranges: &[u64]) -> Vec<u64> {
    ranges
        .iter()
        .scan(0, |sum, n| {
            *sum += n;
            Some(*sum)
        })
        .collect()
}

/// `minio_cluster_usage_*`, `minio_cluster_objects_size_distribution` and
/// `minio_usage_last_activity_nano_seconds` (cluster path), once a full scan has run.
pub(crate) fn v2_cluster_usage(out: &mut Exposition, node: &Node, server: &str) {
    let Some((usage, age)) = usage(node, &crate::minio_metrics::user_buckets(node)) else { return };
    let all = total(&usage);
    let labels = [("server", server)];
    out.add(
        "minio_usage_last_activity_nano_seconds",
        "gauge",
        "Nanoseconds since the last full scan counted the data usage",
        &labels,
        age as f64,
    );
    out.add(
        "minio_cluster_usage_object_total",
        "gauge",
        "Objects (current versions) at the last full scan",
        &labels,
        all.objects as f64,
    );
    out.add(
        "minio_cluster_usage_total_bytes",
        "gauge",
        "Bytes of the objects (current versions) at the last full scan",
        &labels,
        all.bytes as f64,
    );
    for (range, n) in size_distribution(&all.sizes) {
        out.add(
            "minio_cluster_objects_size_distribution",
            "gauge",
            "Objects per size range at the last full scan",
            &[("range", range), ("server", server)],
            n as f64,
        );
    }
}

/// The bucket path's per-bucket series: requests and traffic, time to first byte, and usage,
/// for the first [`METRICS_BUCKETS_MAX`] buckets by name.
pub(crate) fn v2_buckets(out: &mut Exposition, node: &Node, names: &BTreeSet<String>, server: &str) {
    let shown: BTreeSet<String> = names.iter().take(METRICS_BUCKETS_MAX).cloned().collect();
    for b in requests(node, names).iter().filter(|b| shown.contains(&b.bucket)) {
        v2_bucket_requests(out, b, server);
    }
    let Some((usage, age)) = usage(node, &shown) else { return };
    out.add(
        "minio_bucket_usage_last_activity_nano_seconds",
        "gauge",
        "Nanoseconds since the last full scan counted the data usage",
        &[("server", server)],
        age as f64,
    );
    for (bucket, u) in &usage.buckets {
        let labels = [("bucket", bucket.as_str()), ("server", server)];
        out.add(
            "minio_bucket_usage_object_total",
            "gauge",
            "Objects (current versions) in the bucket at the last full scan",
            &labels,
            u.objects as f64,
        );
        out.add(
            "minio_bucket_usage_total_bytes",
            "gauge",
            "Bytes of the bucket's objects (current versions) at the last full scan",
            &labels,
            u.bytes as f64,
        );
        for (range, n) in size_distribution(&u.sizes) {
            out.add(
                "minio_bucket_objects_size_distribution",
                "gauge",
                "Objects of the bucket per size range at the last full scan",
                &[("bucket", bucket.as_str()), ("range", range), ("server", server)],
                n as f64,
            );
        }
    }
}

fn v2_bucket_requests(out: &mut Exposition, b: &BucketSnapshot, server: &str) {
    let bucket = b.bucket.as_str();
    for a in &b.apis {
        let api = api_name(a.api).to_ascii_lowercase();
        let labels = [("api", api.as_str()), ("bucket", bucket), ("server", server)];
        let counters = [
            ("minio_bucket_requests_total", "S3 requests on the bucket, by API", a.total),
            (
                "minio_bucket_requests_4xx_errors_total",
                "S3 requests on the bucket answered with a 4xx status, by API",
                a.client_errors,
            ),
            (
                "minio_bucket_requests_5xx_errors_total",
                "S3 requests on the bucket answered with a 5xx status, by API",
                a.server_errors,
            ),
            (
                "minio_bucket_requests_canceled_total",
                "S3 requests on the bucket the client gave up on (499), by API",
                a.canceled,
            ),
        ];
        for (name, help, v) in counters {
            out.add(name, "counter", help, &labels, v as f64);
        }
        out.add(
            "minio_bucket_requests_inflight_total",
            "gauge",
            "S3 requests on the bucket being served now, by API",
            &labels,
            a.in_flight as f64,
        );
        for (le, n) in ttfb_labels().zip(cumulative(&a.ttfb)) {
            out.add(
                "minio_bucket_requests_ttfb_seconds_distribution",
                "gauge",
                "Requests on the bucket whose response headers left within le seconds (cumulative), by API",
                &[("api", api.as_str()), ("bucket", bucket), ("le", le), ("server", server)],
                n as f64,
            );
        }
    }
    // MinIO writes these only when above 0, and types them as gauges.
    let labels = [("bucket", bucket), ("server", server)];
    if b.received_bytes > 0 {
        out.add(
            "minio_bucket_traffic_received_bytes",
            "gauge",
            "Request body bytes S3 clients declared for the bucket",
            &labels,
            b.received_bytes as f64,
        );
    }
    if b.sent_bytes > 0 {
        out.add(
            "minio_bucket_traffic_sent_bytes",
            "gauge",
            "Response body bytes sent to S3 clients for the bucket",
            &labels,
            b.sent_bytes as f64,
        );
    }
}

/// v3 `/bucket/api` for one bucket: `minio_bucket_api_*`.
pub(crate) fn v3_bucket_api(out: &mut Exposition, node: &Node, bucket: &str, server: &str) {
    let names = crate::minio_metrics::user_buckets(node);
    let Some(b) = requests(node, &names).into_iter().find(|b| b.bucket == bucket) else { return };
    for a in &b.apis {
        let name = api_name(a.api);
        let labels = [("bucket", bucket), ("name", name), ("server", server), ("type", "s3")];
        let counters = [
            ("minio_bucket_api_total", "S3 requests on the bucket", a.total),
            (
                "minio_bucket_api_4xx_errors_total",
                "S3 requests on the bucket answered with a 4xx status",
                a.client_errors,
            ),
            (
                "minio_bucket_api_5xx_errors_total",
                "S3 requests on the bucket answered with a 5xx status",
                a.server_errors,
            ),
            (
                "minio_bucket_api_canceled_total",
                "S3 requests on the bucket the client gave up on (499)",
                a.canceled,
            ),
        ];
        for (metric, help, v) in counters {
            out.add(metric, "counter", help, &labels, v as f64);
        }
        out.add(
            "minio_bucket_api_inflight_total",
            "gauge",
            "S3 requests on the bucket being served now",
            &labels,
            a.in_flight as f64,
        );
        for (le, n) in ttfb_labels().zip(cumulative(&a.ttfb)) {
            out.add(
                "minio_bucket_api_ttfb_seconds_distribution",
                "counter",
                "Requests on the bucket whose response headers left within le seconds (cumulative)",
                &[("bucket", bucket), ("le", le), ("name", name), ("server", server), ("type", "s3")],
                n as f64,
            );
        }
    }
    let labels = [("bucket", bucket), ("server", server), ("type", "s3")];
    out.add(
        "minio_bucket_api_traffic_received_bytes",
        "counter",
        "Request body bytes S3 clients declared for the bucket",
        &labels,
        b.received_bytes as f64,
    );
    out.add(
        "minio_bucket_api_traffic_sent_bytes",
        "counter",
        "Response body bytes sent to S3 clients for the bucket",
        &labels,
        b.sent_bytes as f64,
    );
}

/// v3 `/cluster/usage/objects`: `minio_cluster_usage_objects_*`.
pub(crate) fn v3_usage_objects(out: &mut Exposition, node: &Node) {
    let names = crate::minio_metrics::user_buckets(node);
    let Some((usage, age)) = usage(node, &names) else { return };
    let all = total(&usage);
    let gauges = [
        (
            "minio_cluster_usage_objects_since_last_update_seconds",
            "Seconds since the last full scan counted the data usage",
            age as f64 / 1e9,
        ),
        (
            "minio_cluster_usage_objects_total_bytes",
            "Bytes of the objects (current versions)",
            all.bytes as f64,
        ),
        ("minio_cluster_usage_objects_count", "Objects (current versions)", all.objects as f64),
        ("minio_cluster_usage_objects_buckets_count", "Buckets counted", usage.buckets.len() as f64),
    ];
    for (name, help, v) in gauges {
        out.add(name, "gauge", help, &[], v);
    }
    for (range, n) in size_distribution(&all.sizes) {
        out.add(
            "minio_cluster_usage_objects_size_distribution",
            "gauge",
            "Objects per size range",
            &[("range", range)],
            n as f64,
        );
    }
}

/// v3 `/cluster/usage/buckets`: `minio_cluster_usage_buckets_*`.
pub(crate) fn v3_usage_buckets(out: &mut Exposition, node: &Node) {
    let names = crate::minio_metrics::user_buckets(node);
    let Some((usage, age)) = usage(node, &names) else { return };
    out.add(
        "minio_cluster_usage_buckets_since_last_update_seconds",
        "gauge",
        "Seconds since the last full scan counted the data usage",
        &[],
        age as f64 / 1e9,
    );
    for (bucket, u) in &usage.buckets {
        let labels = [("bucket", bucket.as_str())];
        out.add(
            "minio_cluster_usage_buckets_total_bytes",
            "gauge",
            "Bytes of the bucket's objects (current versions)",
            &labels,
            u.bytes as f64,
        );
        out.add(
            "minio_cluster_usage_buckets_objects_count",
            "gauge",
            "Objects (current versions) in the bucket",
            &labels,
            u.objects as f64,
        );
        for (range, n) in size_distribution(&u.sizes) {
            out.add(
                "minio_cluster_usage_buckets_object_size_distribution",
                "gauge",
                "Objects of the bucket per size range",
                &[("bucket", bucket.as_str()), ("range", range)],
                n as f64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ranges_are_minio_s() {
        // MinIO's bounds (cmd/object-api-datatypes.go, ObjectsHistogramIntervals).
        assert_eq!(
            strata_types::limits::USAGE_SIZE_BOUNDS,
            [1024, 65_536, 262_144, 524_288, 1_048_576, 10_485_760, 67_108_864, 134_217_728, 536_870_912]
        );
        let mut sizes = [0; SIZE_RANGES];
        for (i, n) in sizes.iter_mut().enumerate() {
            *n = i as u64 + 1;
        }
        let got = size_distribution(&sizes);
        assert_eq!(got.len(), 11);
        assert_eq!(got[0], ("LESS_THAN_1024_B", 1));
        assert_eq!(got[4], ("BETWEEN_512_KB_AND_1_MB", 5));
        // The overlapping range adds up 1 KiB to 1 MiB, and follows them as in MinIO's list.
        assert_eq!(got[5], ("BETWEEN_1024B_AND_1_MB", 2 + 3 + 4 + 5));
        assert_eq!(got[6], ("BETWEEN_1_MB_AND_10_MB", 6));
        assert_eq!(got[10], ("GREATER_THAN_512_MB", 10));
        assert_eq!(cumulative(&[1, 0, 2, 3]), [1, 1, 3, 6]);
    }
}
