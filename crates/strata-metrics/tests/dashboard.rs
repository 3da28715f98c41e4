//! The Grafana dashboard in `docs/grafana/` only queries metrics that Strata exports, and every
//! exported metric family is on it or in `docs/metrics.md`.

use std::collections::BTreeSet;

/// Metric names in a PromQL expression (`strata_...`), with series suffixes removed.
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("strata_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        out.push(family(&tail[..end]));
        rest = &tail[end..];
    }
    out
}

fn family(series: &str) -> String {
    for suffix in ["_bucket", "_count", "_sum", "_total"] {
        if let Some(f) = series.strip_suffix(suffix) {
            return f.to_owned();
        }
    }
    series.to_owned()
}

fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

/// Metrics with one series in every family (empty families are not exported).
fn populated() -> strata_metrics::Metrics {
    use strata_metrics::{ApiLabels, DriveLabels, RequestLabels, SetLabels};
    let m = strata_metrics::Metrics::new();
    m.requests.get_or_create(&RequestLabels { api: "GetObject".into(), code: "200".into() }).inc();
    m.request_duration.get_or_create(&ApiLabels { api: "GetObject".into() }).observe(0.01);
    let d = DriveLabels { drive: "/d1".into(), pool: "0".into(), set: "0".into() };
    for g in [
        &m.drive_online,
        &m.drive_total_bytes,
        &m.drive_free_bytes,
        &m.drive_total_inodes,
        &m.drive_free_inodes,
    ] {
        g.get_or_create(&d).set(1);
    }
    m.drive_index_commits.get_or_create(&d).inc();
    m.drive_index_changes.get_or_create(&d).inc();
    m.observe_drive_op("/d1", "read_record", 0.001, true);
    let s = SetLabels { pool: "0".into(), set: "0".into() };
    for g in [&m.set_online_drives, &m.set_read_quorum_ok, &m.set_write_quorum_ok] {
        g.get_or_create(&s).set(1);
    }
    m.lifecycle_expired
        .get_or_create(&strata_metrics::LifecycleLabels { action: "abort_upload".into() })
        .inc();
    let target = strata_metrics::TargetLabels { target: "arn:aws:s3:::copy".into() };
    for c in [&m.replication_versions, &m.replication_bytes, &m.replication_failed_versions] {
        c.get_or_create(&target).inc();
    }
    m.refresh_process();
    m
}

#[test]
fn dashboard_queries_exported_metrics() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/grafana/strata-dashboard.json")).expect("dashboard");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("dashboard is JSON");
    let exported: BTreeSet<String> = populated()
        .encode()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(family)
        .collect();
    assert!(exported.len() >= 15, "{exported:?}");
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    assert!(all.len() >= 15, "the dashboard has {} queries", all.len());
    let mut used = BTreeSet::new();
    for e in &all {
        assert_eq!(e.matches('(').count(), e.matches(')').count(), "unbalanced: {e}");
        for name in names_in(e) {
            assert!(exported.contains(&name), "the dashboard queries {name}, which Strata does not export");
            used.insert(name);
        }
    }
    let documented = std::fs::read_to_string(root.join("docs/metrics.md")).expect("metrics doc");
    for name in &exported {
        assert!(documented.contains(name.as_str()), "{name} is not in docs/metrics.md");
    }
    let unused: Vec<_> = exported.difference(&used).collect();
    assert!(unused.is_empty(), "exported but not on the dashboard: {unused:?}");
}
