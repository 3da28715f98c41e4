//! `strata bench compare A.json B.json`: two reports side by side, with the change.

use std::path::Path;

use anyhow::{Context, Result};

use crate::report::{OpReport, Report};

fn load(path: &Path) -> Result<Report> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a strata bench JSON report", path.display()))
}

fn change(before: f64, after: f64) -> String {
    if before == 0.0 {
        return "n/a".into();
    }
    format!("{:+.1}%", (after - before) / before * 100.0)
}

fn line(name: &str, before: f64, after: f64, unit: &str) -> String {
    format!("    {name:<12} {before:>12.2} → {after:>12.2} {unit:<6} {}", change(before, after))
}

/// The comparison as text (one block per operation present in both reports).
pub fn compare_reports(a: &Report, b: &Report) -> String {
    let mut out = format!(
        "before: {} {} B x{} ({:.1} s)\nafter:  {} {} B x{} ({:.1} s)\n",
        a.operation,
        a.object_size,
        a.concurrency,
        a.duration_secs,
        b.operation,
        b.object_size,
        b.concurrency,
        b.duration_secs
    );
    for op in &a.ops {
        let Some(other) = b.ops.iter().find(|o| o.op == op.op) else { continue };
        out.push_str(&format!("  {}\n", op.op));
        out.push_str(&line("MiB/s", op.mib_per_sec, other.mib_per_sec, ""));
        out.push('\n');
        out.push_str(&line("obj/s", op.ops_per_sec, other.ops_per_sec, ""));
        out.push('\n');
        let p =
            |r: &OpReport, f: fn(&crate::report::Percentiles) -> f64| r.latency_ms.as_ref().map_or(0.0, f);
        out.push_str(&line("p50 latency", p(op, |x| x.p50), p(other, |x| x.p50), "ms"));
        out.push('\n');
        out.push_str(&line("p99 latency", p(op, |x| x.p99), p(other, |x| x.p99), "ms"));
        out.push('\n');
        out.push_str(&format!("    errors       {:>12} → {:>12}\n", op.errors_total, other.errors_total));
    }
    out
}

pub fn compare(a: &Path, b: &Path) -> Result<()> {
    print!("{}", compare_reports(&load(a)?, &load(b)?));
    Ok(())
}
