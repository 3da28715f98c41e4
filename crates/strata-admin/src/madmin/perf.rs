//! `mc support perf`: MinIO's speedtest API over Strata's own speedtest.
//!
//! - `POST speedtest?size=BYTES&duration=10s&concurrent=N[&autotune=true]` (`object`, the one
//!   `mc support perf object` makes): Strata's speedtest on every node, answered as one MinIO
//!   `SpeedTestResult` (`PUTStats`/`GETStats` with throughput in bytes/s, objects/s, response
//!   times in nanoseconds and each node's figures). Strata always writes to its hidden bucket
//!   and always removes what it wrote, so `bucket`, `noclear` and `enableSha256` change nothing.
//!   A speedtest asked for while one runs is refused with a code `mc` does not retry.
//! - `POST speedtest/client/devnull` (`client`): reads the client's stream to its end and
//!   throws it away, so `mc` measures its own upload; `…/devnull/extratime` answers no extra
//!   time.
//! - `speedtest/net` and `speedtest/drive` are refused with the reason (`strata admin
//!   speedtest` and `strata bench` measure those).
//!
//! `mc` needs `--airgap --dev` to run it without a SUBNET registration (see docs/minio.md).

use http::StatusCode;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{json, Value};
use strata_rpc::peer::{Latency, Throughput};
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::Reply;

use crate::speedtest::{SpeedtestParams, SpeedtestReport};
use crate::{json_reply, Admin};

/// `POST speedtest`: the object speedtest.
pub(super) async fn object(admin: &Admin, query: &[(String, String)]) -> Result<Reply, S3Error> {
    let params = SpeedtestParams::parse(query)?;
    let report = crate::speedtest::report(admin, params, S3ErrorCode::InvalidRequest).await?;
    let drives: usize = admin.node.layer.sets().iter().map(|s| s.drives.len()).sum();
    Ok(json_reply(StatusCode::OK, &result(&report, drives)))
}

/// MinIO's `SpeedTestResult` of a Strata speedtest over `drives` drives.
fn result(report: &SpeedtestReport, drives: usize) -> Value {
    let stats = |total: &Throughput, each: fn(&strata_rpc::peer::SpeedtestResult) -> &Throughput| {
        let servers: Vec<Value> = report
            .nodes
            .iter()
            .map(|n| {
                let t = each(n);
                let err = if t.errors > 0 { format!("{} operations failed", t.errors) } else { String::new() };
                json!({ "endpoint": n.endpoint, "throughputPerSec": bytes_per_sec(t), "objectsPerSec": t.objects_per_sec.round() as u64, "err": err })
            })
            .collect();
        json!({
            "throughputPerSec": bytes_per_sec(total),
            "objectsPerSec": total.objects_per_sec.round() as u64,
            "responseTime": timings(&total.latency_ms),
            // Strata times whole operations, not the first byte of a GET.
            "ttfb": timings(&Latency::default()),
            "servers": servers,
        })
    };
    json!({
        "version": concat!("strata-", env!("CARGO_PKG_VERSION")),
        "servers": report.nodes.len(),
        "disks": drives,
        "size": report.params.size,
        "concurrent": report.concurrent,
        "PUTStats": stats(&report.aggregate_put, |n| &n.put),
        "GETStats": stats(&report.aggregate_get, |n| &n.get),
    })
}

fn bytes_per_sec(t: &Throughput) -> u64 {
    (t.mib_per_sec * 1024.0 * 1024.0).round() as u64
}

/// MinIO's `Timings` (nanoseconds) of latencies in milliseconds; what Strata does not measure
/// (the spread of the fastest and slowest 5 %, the deviation) is 0.
fn timings(l: &Latency) -> Value {
    let ns = |ms: f64| (ms * 1e6).round() as i64;
    json!({
        "avg": ns(l.mean), "p50": ns(l.p50), "p75": ns(l.p75), "p95": ns(l.p95), "p99": ns(l.p99),
        "p999": ns(l.p999), "l5p": 0, "s5p": 0, "max": ns(l.max), "min": ns(l.min), "sdev": 0,
        "range": ns(l.max - l.min),
    })
}

/// `POST speedtest/client/devnull`: the client's stream, read to its end (or until the client
/// stops sending) and dropped. Authorized before this is called; the body is never held.
pub(super) async fn devnull(body: Incoming) -> Result<Reply, S3Error> {
    let mut body = body;
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    Ok(Reply::empty(StatusCode::OK))
}

/// `POST speedtest/client/devnull/extratime`: no time beyond the client's own.
pub(super) fn extra_time() -> Reply {
    json_reply(StatusCode::OK, &json!({ "dur": 0 }))
}

/// The tests Strata does not run for `mc`.
pub(super) fn not_served(kind: &str) -> S3Error {
    S3Error::new(
        S3ErrorCode::NotImplemented,
        &format!(
            "Strata does not run MinIO's {kind} speedtest: `mc support perf object` runs the object test, and `strata admin speedtest` and `strata bench` measure the rest"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_rpc::peer::SpeedtestResult;

    fn throughput(mib: f64, ms: f64) -> Throughput {
        let latency_ms =
            Latency { p50: ms, p99: ms * 2.0, max: ms * 3.0, min: ms / 2.0, mean: ms, ..Default::default() };
        Throughput {
            mib_per_sec: mib,
            objects_per_sec: mib / 4.0,
            objects: 10,
            errors: 0,
            latency_ms,
            ..Default::default()
        }
    }

    #[test]
    fn a_report_is_answered_in_minios_shape() {
        let node = |name: &str, mib| SpeedtestResult {
            endpoint: name.into(),
            put: throughput(mib, 10.0),
            get: Throughput { errors: 2, ..throughput(mib * 2.0, 5.0) },
            sealed_objects: 0,
        };
        let report = SpeedtestReport {
            params: SpeedtestParams {
                size: 4 << 20,
                concurrent: 8,
                duration_secs: 1.0,
                autotune: false,
                sse: None,
            },
            autotune: Vec::new(),
            concurrent: 8,
            nodes: vec![node("a:9000", 100.0), node("b:9000", 50.0)],
            aggregate_put: throughput(150.0, 10.0),
            aggregate_get: throughput(300.0, 5.0),
        };
        let r = result(&report, 8);
        assert_eq!(r["servers"], 2);
        assert_eq!(r["disks"], 8);
        assert_eq!(r["size"], 4 << 20);
        assert_eq!(r["PUTStats"]["throughputPerSec"], 150 * 1024 * 1024);
        assert_eq!(r["PUTStats"]["responseTime"]["p50"], 10_000_000);
        assert_eq!(r["PUTStats"]["responseTime"]["range"], 25_000_000);
        assert_eq!(r["GETStats"]["servers"][1]["endpoint"], "b:9000");
        assert_eq!(r["GETStats"]["servers"][1]["err"], "2 operations failed");
        assert_eq!(r["PUTStats"]["servers"][0]["err"], "");
    }
}
