//! `--chart FILE`: throughput over time as an SVG (MiB/s above, obj/s below), drawn by hand so
//! the bench needs no plotting library.

use std::fmt::Write;

use crate::report::{Report, Sample};

const WIDTH: f64 = 800.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const GAP: f64 = 50.0;

/// A round axis maximum at or above `v` (1, 2 or 5 times a power of ten).
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|m| *m >= v).unwrap_or(10.0 * p)
}

fn panel(
    out: &mut String,
    top: f64,
    title: &str,
    samples: &[Sample],
    value: fn(&Sample) -> f64,
    color: &str,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let t_max = samples.last().map_or(1.0, |s| s.second.max(1.0));
    let y_max = nice_max(samples.iter().map(value).fold(0.0, f64::max));
    let x = |t: f64| LEFT + t / t_max * plot_w;
    let y = |v: f64| top + PANEL - v / y_max * PANEL;
    let _ = writeln!(out, r#"<text x="{LEFT}" y="{}" font-weight="bold">{title}</text>"#, top - 8.0);
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            y0 = y(v),
        );
    }
    for i in 0..=5 {
        let t = t_max * f64::from(i) / 5.0;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{t:.0}s</text>"#,
            x(t),
            top + PANEL + 16.0
        );
    }
    let points: Vec<String> =
        samples.iter().map(|s| format!("{:.1},{:.1}", x(s.second), y(value(s)))).collect();
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
        points.join(" ")
    );
    for s in samples.iter().filter(|s| s.errors > 0) {
        let _ =
            writeln!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="red"/>"#, x(s.second), y(value(s)));
    }
}

/// The chart of one report.
pub fn svg(report: &Report) -> String {
    let height = TOP + 2.0 * PANEL + GAP + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="18" font-size="14">strata bench {}: {} on {}, {} concurrent (red: seconds with errors)</text>"#,
        report.version,
        report.operation,
        report.hosts.join(","),
        report.concurrency
    );
    panel(&mut out, TOP + 10.0, "MiB/s", &report.timeline, |s| s.mib_per_sec, "#1f77b4");
    panel(&mut out, TOP + 10.0 + PANEL + GAP, "objects/s", &report.timeline, |s| s.ops_per_sec, "#2ca02c");
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ProcessUsage;

    #[test]
    fn draws_every_second() {
        let report = Report {
            tool: "strata bench".into(),
            version: "0".into(),
            operation: "put".into(),
            hosts: vec!["h:1".into()],
            concurrency: 4,
            object_size: 1,
            object_size_max: 1,
            duration_secs: 3.0,
            ops: vec![],
            bench: ProcessUsage::default(),
            server: None,
            timeline: (1..=3u32)
                .map(|i| Sample {
                    second: f64::from(i),
                    mib_per_sec: 10.0 * f64::from(i),
                    ops_per_sec: 5.0,
                    errors: u64::from(i % 2),
                })
                .collect(),
            clients: vec![],
        };
        let svg = svg(&report);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        let first = svg.split("points=\"").nth(1).expect("points");
        assert_eq!(first.split('"').next().expect("list").split(' ').count(), 3);
        assert_eq!(svg.matches("<circle").count(), 4, "seconds 1 and 3 had errors, in both panels");
        assert_eq!((nice_max(0.0), nice_max(3.0), nice_max(30.0), nice_max(51.0)), (1.0, 5.0, 50.0, 100.0));
    }
}
