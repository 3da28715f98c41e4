//! Statistics of a run, printed as a table and written as JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the workers measured for one operation.
#[derive(Debug, Default, Clone)]
pub struct OpStats {
    pub count: u64,
    pub bytes: u64,
    /// Entries listed (list only).
    pub items: u64,
    pub errors: BTreeMap<String, u64>,
    pub latencies_us: Vec<u32>,
    pub ttfb_us: Vec<u32>,
}

impl OpStats {
    pub fn merge(&mut self, other: OpStats) {
        self.count += other.count;
        self.bytes += other.bytes;
        self.items += other.items;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.latencies_us.extend(other.latencies_us);
        self.ttfb_us.extend(other.ttfb_us);
    }

    pub fn error(&mut self, code: String) {
        *self.errors.entry(code).or_default() += 1;
    }
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

impl OpStats {
    pub fn record(&mut self, latency: Duration, ttfb: Option<Duration>, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.latencies_us.push(micros(latency));
        if let Some(t) = ttfb {
            self.ttfb_us.push(micros(t));
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// Percentiles in milliseconds.
pub fn percentiles(samples: &mut [u32]) -> Option<Percentiles> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let at = |q: f64| f64::from(samples[((samples.len() - 1) as f64 * q).round() as usize]) / 1000.0;
    let mean = samples.iter().map(|&s| f64::from(s)).sum::<f64>() / samples.len() as f64 / 1000.0;
    Some(Percentiles { mean, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1.0) })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpReport {
    pub op: String,
    pub count: u64,
    pub errors_total: u64,
    pub errors: BTreeMap<String, u64>,
    pub seconds: f64,
    pub mib_per_sec: f64,
    pub ops_per_sec: f64,
    pub items_per_sec: f64,
    pub latency_ms: Option<Percentiles>,
    pub ttfb_ms: Option<Percentiles>,
    /// Latencies as a sparse log histogram (see [`histogram`]), so runs of several clients merge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_histogram: Vec<(u32, u64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttfb_histogram: Vec<(u32, u64)>,
}

impl OpReport {
    pub fn new(op: &str, mut s: OpStats, elapsed: Duration) -> Self {
        let secs = elapsed.as_secs_f64().max(1e-9);
        Self {
            op: op.to_owned(),
            count: s.count,
            errors_total: s.errors.values().sum(),
            errors: s.errors.clone(),
            seconds: secs,
            mib_per_sec: s.bytes as f64 / secs / (1024.0 * 1024.0),
            ops_per_sec: s.count as f64 / secs,
            items_per_sec: s.items as f64 / secs,
            latency_ms: percentiles(&mut s.latencies_us),
            ttfb_ms: percentiles(&mut s.ttfb_us),
            latency_histogram: histogram(&s.latencies_us),
            ttfb_histogram: histogram(&s.ttfb_us),
        }
    }
}

/// Growth factor between histogram buckets: values are kept within 1 %.
const BUCKET_GROWTH: f64 = 1.02;

fn bucket_of(us: u32) -> u32 {
    if us == 0 {
        0
    } else {
        (f64::from(us).ln() / BUCKET_GROWTH.ln()) as u32 + 1
    }
}

/// The middle of a bucket, in microseconds.
fn bucket_value(b: u32) -> f64 {
    if b == 0 {
        0.0
    } else {
        BUCKET_GROWTH.powi(b as i32 - 1) * (1.0 + BUCKET_GROWTH) / 2.0
    }
}

/// Microsecond samples as sparse (bucket, count) pairs, buckets growing by 2 %.
pub fn histogram(samples_us: &[u32]) -> Vec<(u32, u64)> {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for &s in samples_us {
        *counts.entry(bucket_of(s)).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// Adds histogram `b` into `a`.
pub fn merge_histograms(a: &[(u32, u64)], b: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut counts: BTreeMap<u32, u64> = a.iter().copied().collect();
    for &(k, n) in b {
        *counts.entry(k).or_default() += n;
    }
    counts.into_iter().collect()
}

/// Percentiles (milliseconds) of a histogram, each within 1 % of the exact value.
pub fn histogram_percentiles(h: &[(u32, u64)]) -> Option<Percentiles> {
    let total: u64 = h.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let at = |q: f64| {
        let rank = ((total - 1) as f64 * q).round() as u64;
        let mut seen = 0;
        for &(b, n) in h {
            seen += n;
            if seen > rank {
                return bucket_value(b) / 1000.0;
            }
        }
        h.last().map_or(0.0, |&(b, _)| bucket_value(b) / 1000.0)
    };
    let mean = h.iter().map(|&(b, n)| bucket_value(b) * n as f64).sum::<f64>() / total as f64 / 1000.0;
    Some(Percentiles { mean, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1.0) })
}

/// CPU and memory of a process over the run.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ProcessUsage {
    /// Percent of one core (200 = two cores busy).
    pub cpu_percent: f64,
    pub rss_mib: Option<f64>,
    pub peak_rss_mib: Option<f64>,
}

/// Throughput over one second of the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    /// Seconds since the run started, at the end of this sample.
    pub second: f64,
    pub mib_per_sec: f64,
    pub ops_per_sec: f64,
    pub errors: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    pub operation: String,
    pub hosts: Vec<String>,
    pub concurrency: usize,
    /// The smallest object size (the only one unless a range was asked for).
    pub object_size: u64,
    #[serde(default)]
    pub object_size_max: u64,
    pub duration_secs: f64,
    pub ops: Vec<OpReport>,
    pub bench: ProcessUsage,
    pub server: Option<ProcessUsage>,
    /// Throughput second by second.
    #[serde(default)]
    pub timeline: Vec<Sample>,
    /// A multi-client run: what each `strata bench serve` agent measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientReport>,
}

/// One agent's part of a multi-client run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientReport {
    pub address: String,
    pub ops: Vec<OpReport>,
    pub bench: ProcessUsage,
}

/// The server's CPU per operation of the run: microseconds per operation, and milliseconds per
/// MiB moved when the run moved bytes (`--server-pid`; item 4 of the scale-out figures).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerCost {
    pub us_per_op: f64,
    pub ms_per_mib: Option<f64>,
}

impl Report {
    /// See [`ServerCost`]; `None` without a server to measure or without operations.
    pub fn server_cost(&self) -> Option<ServerCost> {
        let server = self.server.as_ref()?;
        let ops: u64 = self.ops.iter().map(|o| o.count.saturating_sub(o.errors_total)).sum();
        if ops == 0 || self.duration_secs <= 0.0 {
            return None;
        }
        let cpu_secs = server.cpu_percent / 100.0 * self.duration_secs;
        let mib: f64 = self.ops.iter().map(|o| o.mib_per_sec * o.seconds).sum();
        Some(ServerCost {
            us_per_op: cpu_secs * 1e6 / ops as f64,
            ms_per_mib: (mib > 0.0).then(|| cpu_secs * 1e3 / mib),
        })
    }
}

fn fmt_p(p: &Option<Percentiles>) -> String {
    match p {
        Some(p) => format!("p50 {:.2} / p90 {:.2} / p99 {:.2} / max {:.2} ms", p.p50, p.p90, p.p99, p.max),
        None => "-".into(),
    }
}

pub fn print(report: &Report) {
    println!(
        "strata bench {}: {} on {} ({} concurrent, {} B objects, {:.1} s)",
        report.version,
        report.operation,
        report.hosts.join(","),
        report.concurrency,
        if report.object_size_max > report.object_size {
            format!("{}-{}", report.object_size, report.object_size_max)
        } else {
            report.object_size.to_string()
        },
        report.duration_secs
    );
    for op in &report.ops {
        println!(
            "  {:<7} {:>9.1} MiB/s {:>10.1} obj/s  ({} ops, {} errors){}",
            op.op,
            op.mib_per_sec,
            op.ops_per_sec,
            op.count,
            op.errors_total,
            if op.items_per_sec > 0.0 {
                format!("  {:.0} entries/s", op.items_per_sec)
            } else {
                String::new()
            }
        );
        println!("          latency {}", fmt_p(&op.latency_ms));
        if op.ttfb_ms.is_some() && op.op == "get" {
            println!("          ttfb    {}", fmt_p(&op.ttfb_ms));
        }
        for (code, n) in &op.errors {
            println!("          error   {code}: {n}");
        }
    }
    println!("  bench CPU {:.0}%", report.bench.cpu_percent);
    if let Some(s) = &report.server {
        println!(
            "  server CPU {:.0}%, RSS {:.0} MiB (peak {:.0} MiB)",
            s.cpu_percent,
            s.rss_mib.unwrap_or(0.0),
            s.peak_rss_mib.unwrap_or(0.0)
        );
        if let Some(cost) = report.server_cost() {
            match cost.ms_per_mib {
                Some(ms) => {
                    println!("  server CPU per op {:.0} µs, per MiB {:.2} ms", cost.us_per_op, ms)
                }
                None => println!("  server CPU per op {:.0} µs", cost.us_per_op),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_cost_is_cpu_seconds_over_operations_and_bytes() {
        let op = |count, errors_total, mib_per_sec| OpReport {
            op: "get".into(),
            count,
            errors_total,
            errors: Default::default(),
            seconds: 10.0,
            mib_per_sec,
            ops_per_sec: count as f64 / 10.0,
            items_per_sec: 0.0,
            latency_ms: None,
            ttfb_ms: None,
            latency_histogram: vec![],
            ttfb_histogram: vec![],
        };
        let usage = |cpu_percent| ProcessUsage { cpu_percent, rss_mib: None, peak_rss_mib: None };
        let mut report = Report {
            tool: "strata bench".into(),
            version: "0".into(),
            operation: "get".into(),
            hosts: vec![],
            concurrency: 16,
            object_size: 1 << 20,
            object_size_max: 0,
            duration_secs: 10.0,
            // 10,000 answered of 10,100 and 1,000 MiB in 10 s, at 150 % of a core: 15 CPU
            // seconds, so 1,500 µs per operation and 15 ms per MiB.
            ops: vec![op(10_100, 100, 100.0)],
            bench: usage(5.0),
            server: Some(usage(150.0)),
            timeline: vec![],
            clients: vec![],
        };
        let cost = report.server_cost().expect("cost");
        assert!((cost.us_per_op - 1500.0).abs() < 1e-6, "{cost:?}");
        assert!((cost.ms_per_mib.expect("bytes") - 15.0).abs() < 1e-9, "{cost:?}");
        report.ops = vec![op(100, 0, 0.0)];
        assert_eq!(report.server_cost().and_then(|c| c.ms_per_mib), None);
        report.server = None;
        assert_eq!(report.server_cost(), None);
    }

    #[test]
    fn percentiles_of_known_samples() {
        let mut s: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        let p = percentiles(&mut s).expect("samples");
        assert_eq!((p.p50, p.p90, p.p99, p.max), (51.0, 90.0, 99.0, 100.0));
        assert!(percentiles(&mut []).is_none());
    }

    #[test]
    fn merged_histograms_give_percentiles_within_one_percent() {
        let a: Vec<u32> = (1..=5000).map(|i| i * 37).collect();
        let b: Vec<u32> = (1..=5000).map(|i| 200_000 + i * 11).collect();
        let merged = merge_histograms(&histogram(&a), &histogram(&b));
        let mut all: Vec<u32> = a.iter().chain(&b).copied().collect();
        let exact = percentiles(&mut all).expect("samples");
        let approx = histogram_percentiles(&merged).expect("samples");
        for (e, x) in [
            (exact.p50, approx.p50),
            (exact.p90, approx.p90),
            (exact.p99, approx.p99),
            (exact.max, approx.max),
        ] {
            assert!((x - e).abs() <= e * 0.011, "{x} vs {e}");
        }
        assert!((approx.mean - exact.mean).abs() <= exact.mean * 0.011);
        assert!(histogram_percentiles(&[]).is_none());
        assert_eq!(histogram(&[0, 0]), [(0, 2)]);
    }
}
