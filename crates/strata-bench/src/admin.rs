//! `strata admin ...`: the admin API from the command line, signed with the root credentials.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::Method;
use serde_json::Value;

use crate::client::{error_code, BodyMode, Client, Endpoint};

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AdminCommand {
    /// Every node drives PUT then GET load against the deployment; per-node and aggregate results.
    Speedtest(SpeedtestArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct SpeedtestArgs {
    /// A node of the deployment, host:port.
    #[arg(long, default_value = "127.0.0.1:9000", env = "STRATA_ADMIN_HOST")]
    pub host: String,
    #[arg(long, default_value = "strataadmin", env = "STRATA_ROOT_USER")]
    pub access_key: String,
    #[arg(long, default_value = "strataadmin", env = "STRATA_ROOT_PASSWORD")]
    pub secret_key: String,
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Use HTTPS.
    #[arg(long)]
    pub tls: bool,
    /// With --tls, accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Object size.
    #[arg(long, default_value = "64MiB")]
    pub size: String,
    /// Concurrent operations per node.
    #[arg(long, default_value_t = 32)]
    pub concurrent: usize,
    /// Length of each phase (PUT, then GET).
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Find the concurrency where PUT throughput stops growing, then test with it.
    #[arg(long)]
    pub autotune: bool,
    /// Print the raw JSON answer instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub async fn main(cmd: AdminCommand) -> Result<()> {
    match cmd {
        AdminCommand::Speedtest(a) => speedtest(a).await,
    }
}

fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_f64).unwrap_or(0.0)
}

fn line(name: &str, t: &Value) -> String {
    format!(
        "{name:<24} {:>9.1} MiB/s {:>8.1} obj/s  p50 {:>7.1} / p99 {:>7.1} ms  CPU {:>4.0}%  RSS {:>5.0} MiB  errors {}",
        f(t, &["mib_per_sec"]),
        f(t, &["objects_per_sec"]),
        f(t, &["latency_ms", "p50"]),
        f(t, &["latency_ms", "p99"]),
        f(t, &["cpu_percent"]),
        f(t, &["rss_mib"]),
        f(t, &["errors"]),
    )
}

async fn speedtest(a: SpeedtestArgs) -> Result<()> {
    let endpoint = Endpoint {
        hosts: vec![a.host.trim_start_matches("http://").trim_end_matches('/').to_owned()],
        access_key: a.access_key,
        secret_key: a.secret_key,
        region: a.region,
        tls: a.tls,
        insecure: a.insecure,
    };
    let client = Client::new(endpoint, 1)?;
    let query = format!(
        "autotune={}&concurrent={}&duration={}&size={}",
        a.autotune, a.concurrent, a.duration, a.size
    );
    eprintln!("speedtest: {} objects, {} concurrent, {} per phase ...", a.size, a.concurrent, a.duration);
    let o = client
        .request(Method::POST, "_strata", "admin/v1/speedtest", &query, Bytes::new(), BodyMode::Keep)
        .await
        .context("calling the admin API")?;
    if !o.status.is_success() {
        bail!("speedtest failed: {}", error_code(&o));
    }
    let body = o.body.unwrap_or_default();
    if a.json {
        println!("{}", String::from_utf8_lossy(&body));
        return Ok(());
    }
    let report: Value = serde_json::from_slice(&body).context("the speedtest answer is not JSON")?;
    if let Some(tried) = report.get("autotune").and_then(Value::as_array).filter(|t| !t.is_empty()) {
        for t in tried {
            let (c, mib) = (t.get(0).and_then(Value::as_u64), t.get(1).and_then(Value::as_f64));
            println!("autotune: {:>4} concurrent → PUT {:.1} MiB/s", c.unwrap_or(0), mib.unwrap_or(0.0));
        }
    }
    println!(
        "concurrency {} per node, {} B objects",
        report.get("concurrent").and_then(Value::as_u64).unwrap_or(0),
        f(&report, &["params", "size"])
    );
    for node in report.get("nodes").and_then(Value::as_array).into_iter().flatten() {
        let name = node.get("endpoint").and_then(Value::as_str).unwrap_or("?");
        println!("{}", line(&format!("PUT {name}"), &node["put"]));
        println!("{}", line(&format!("GET {name}"), &node["get"]));
    }
    println!("{}", line("PUT all nodes", &report["aggregate_put"]));
    println!("{}", line("GET all nodes", &report["aggregate_get"]));
    Ok(())
}
