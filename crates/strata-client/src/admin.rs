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
    /// Healing: progress, scans, priority.
    #[command(subcommand)]
    Heal(HealCommand),
    /// Pools: their space and state; drain one onto the others (decommission), or stop a drain.
    #[command(subcommand)]
    Pool(PoolCommand),
    /// IAM users: add, remove, enable, disable, list, info.
    #[command(subcommand)]
    User(crate::admin_iam::UserCommand),
    /// IAM groups: add or remove members, enable, disable, list, info.
    #[command(subcommand)]
    Group(crate::admin_iam::GroupCommand),
    /// Named policies: create, remove, list, info, attach, detach.
    #[command(subcommand)]
    Policy(crate::admin_iam::PolicyCommand),
    /// Service accounts: add, remove, list, info.
    #[command(subcommand)]
    Svcacct(crate::admin_iam::SvcacctCommand),
    /// The KMS: keys (create, list, rotate) and status.
    #[command(subcommand)]
    Kms(crate::admin_kms::KmsCommand),
}

/// Where the admin API is and who calls it.
#[derive(Debug, Clone, clap::Args)]
pub struct AdminConn {
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
}

impl AdminConn {
    /// Calls admin operation `op` (`speedtest`, `heal/status`, ...) and returns its JSON.
    async fn call(&self, method: Method, op: &str, query: &str) -> Result<Value> {
        self.call_body(method, op, query, String::new()).await
    }

    /// [`AdminConn::call`] with a request body (its hash signed). A refusal is an error saying
    /// the S3 code and message.
    pub async fn call_body(&self, method: Method, op: &str, query: &str, body: String) -> Result<Value> {
        let endpoint = Endpoint {
            hosts: vec![self
                .host
                .trim_start_matches("http://")
                .trim_start_matches("https://")
                .trim_end_matches('/')
                .to_owned()],
            access_key: self.access_key.clone(),
            secret_key: self.secret_key.clone(),
            region: self.region.clone(),
            tls: self.tls,
            insecure: self.insecure,
            object_headers: Vec::new(),
        };
        let client = Client::new(endpoint, 1)?;
        let o = client
            .request_hashed(
                method,
                "_strata",
                &format!("admin/v1/{op}"),
                query,
                Bytes::from(body),
                BodyMode::Keep,
                true,
            )
            .await
            .context("calling the admin API")?;
        if !o.status.is_success() {
            let text = o.body.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            let message = match (text.find("<Message>"), text.find("</Message>")) {
                (Some(a), Some(b)) if a + 9 <= b => format!(": {}", xml_unescape(&text[a + 9..b])),
                _ => String::new(),
            };
            bail!("{op} failed: {}{message}", error_code(&o));
        }
        serde_json::from_slice(&o.body.unwrap_or_default()).context("the admin API answered no JSON")
    }
}

/// The five XML entities back to their characters.
fn xml_unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum HealCommand {
    /// What healing is doing: the current or last scan per set and drive, the queue, the priority.
    Status {
        #[command(flatten)]
        conn: AdminConn,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check and heal every object (of one bucket, under a prefix).
    Start {
        #[command(flatten)]
        conn: AdminConn,
        #[arg(long)]
        bucket: Option<String>,
        #[arg(long, default_value = "")]
        prefix: String,
        /// Verify every shard frame's hash, not only that shards are there and end well.
        #[arg(long)]
        deep: bool,
    },
    /// How much I/O healing may take while foreground requests run: low, normal or high.
    Priority {
        #[command(flatten)]
        conn: AdminConn,
        value: String,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum PoolCommand {
    /// Every pool's drives, space and state, and a drain's progress and ETA.
    Status {
        #[command(flatten)]
        conn: AdminConn,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Move every object of a pool onto the other pools, so it can leave the drive list.
    Decommission {
        #[command(flatten)]
        conn: AdminConn,
        /// The pool's number, as `pool status` shows it (0 is the first on the command line).
        pool: usize,
    },
    /// Stop a pool's drain: it takes new objects again (what moved stays moved).
    Cancel {
        #[command(flatten)]
        conn: AdminConn,
        pool: usize,
    },
    /// Move objects from the pools holding more than their share of the data (in proportion to
    /// capacity) onto the others: after a pool is added.
    Rebalance {
        #[command(flatten)]
        conn: AdminConn,
        /// Stop the running rebalance instead (what moved stays moved).
        #[arg(long)]
        stop: bool,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct SpeedtestArgs {
    #[command(flatten)]
    pub conn: AdminConn,
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
    /// Also run the test with server-side encryption (s3: SSE-S3, kms: SSE-KMS with the default
    /// key, dsse: DSSE-KMS with the default key, c: SSE-C with a random key) and report it beside
    /// the plain run.
    #[arg(long, value_parser = ["s3", "kms", "dsse", "c"])]
    pub sse: Option<String>,
}

pub async fn main(cmd: AdminCommand) -> Result<()> {
    match cmd {
        AdminCommand::User(c) => crate::admin_iam::user(c).await,
        AdminCommand::Group(c) => crate::admin_iam::group(c).await,
        AdminCommand::Policy(c) => crate::admin_iam::policy(c).await,
        AdminCommand::Svcacct(c) => crate::admin_iam::svcacct(c).await,
        AdminCommand::Kms(c) => crate::admin_kms::main(c).await,
        AdminCommand::Speedtest(a) => speedtest(a).await,
        AdminCommand::Heal(HealCommand::Status { conn, json }) => {
            let status = conn.call(Method::GET, "heal/status", "").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                print_heal_status(&status);
            }
            Ok(())
        }
        AdminCommand::Heal(HealCommand::Start { conn, bucket, prefix, deep }) => {
            let enc = |s: &str| {
                percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
            };
            let query = format!(
                "bucket={}&deep={deep}&prefix={}",
                enc(bucket.as_deref().unwrap_or("")),
                enc(&prefix)
            );
            let answer = conn.call(Method::POST, "heal/start", &query).await?;
            let id = answer["id"].as_u64().unwrap_or(0);
            if answer["queued"].as_bool().unwrap_or(false) {
                println!("heal scan {id} queued: it starts when the running scan ends; follow it with `strata admin heal status`");
            } else {
                println!("heal scan {id} started; follow it with `strata admin heal status`");
            }
            Ok(())
        }
        AdminCommand::Pool(PoolCommand::Status { conn, json }) => {
            let status = conn.call(Method::GET, "pool/status", "").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                print_pool_status(&status);
            }
            Ok(())
        }
        AdminCommand::Pool(PoolCommand::Decommission { conn, pool }) => {
            conn.call(Method::POST, "pool/decommission", &format!("pool={pool}")).await?;
            println!("pool {pool} is draining; follow it with `strata admin pool status`");
            Ok(())
        }
        AdminCommand::Pool(PoolCommand::Rebalance { conn, stop }) => {
            let plan = conn.call(Method::POST, "pool/rebalance", &format!("stop={stop}")).await?;
            if stop {
                println!("the rebalance stopped");
            } else {
                for p in plan["pools"].as_array().into_iter().flatten() {
                    println!(
                        "pool {}: holds {} bytes, its share is {} bytes",
                        p["pool"].as_u64().unwrap_or(0),
                        p["stored_bytes"].as_u64().unwrap_or(0),
                        p["target_bytes"].as_u64().unwrap_or(0)
                    );
                }
                println!("rebalancing; follow it with `strata admin pool status`");
            }
            Ok(())
        }
        AdminCommand::Pool(PoolCommand::Cancel { conn, pool }) => {
            conn.call(Method::POST, "pool/cancel", &format!("pool={pool}")).await?;
            println!("pool {pool} stopped draining and takes new objects again");
            Ok(())
        }
        AdminCommand::Heal(HealCommand::Priority { conn, value }) => {
            let enc =
                percent_encoding::utf8_percent_encode(&value, percent_encoding::NON_ALPHANUMERIC).to_string();
            let status = conn.call(Method::POST, "heal/priority", &format!("value={enc}")).await?;
            println!("heal priority: {}", status["priority"].as_str().unwrap_or("?"));
            Ok(())
        }
    }
}

fn print_pool_status(s: &Value) {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let gib = |v: &Value| n(v) as f64 / (1u64 << 30) as f64;
    for p in s["pools"].as_array().into_iter().flatten() {
        println!(
            "pool {}: {} ({} sets, {} drives, {:.1} GiB free of {:.1} GiB)",
            n(&p["pool"]),
            p["state"].as_str().unwrap_or("?"),
            n(&p["sets"]),
            n(&p["drives"]),
            gib(&p["free_bytes"]),
            gib(&p["total_bytes"]),
        );
        let d = &p["drain"];
        if d.is_null() {
            continue;
        }
        let eta = match d["eta_seconds"].as_u64() {
            Some(s) => format!("{s} s"),
            None => "unknown".into(),
        };
        println!(
            "  drain: {}, pass {}, {} of {} objects moved ({} versions, {} bytes), {} failed, ETA {eta}",
            d["state"].as_str().unwrap_or("?"),
            n(&d["pass"]),
            n(&d["objects_moved"]),
            n(&d["objects_total"]),
            n(&d["versions_moved"]),
            n(&d["bytes_moved"]),
            n(&d["failed"]),
        );
        if n(&d["uploads_left"]) > 0 {
            println!("  waiting for {} uploads to complete or be aborted", n(&d["uploads_left"]));
        }
        if let Some(e) = d["last_error"].as_str() {
            println!("  last error: {e}");
        }
    }
    let r = &s["rebalance"];
    if !r.is_null() {
        println!(
            "rebalance: {}, {} objects moved ({} bytes), {} failed",
            r["state"].as_str().unwrap_or("?"),
            n(&r["objects_moved"]),
            n(&r["bytes_moved"]),
            n(&r["failed"])
        );
        for p in r["pools"].as_array().into_iter().flatten() {
            println!(
                "  pool {}: held {} bytes, share {} bytes, {} moved out, {} moved in",
                n(&p["pool"]),
                n(&p["stored_bytes"]),
                n(&p["target_bytes"]),
                n(&p["moved_out_bytes"]),
                n(&p["moved_in_bytes"])
            );
        }
        if let Some(e) = r["last_error"].as_str() {
            println!("  last error: {e}");
        }
    }
}

fn print_heal_status(s: &Value) {
    let scan = &s["scan"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    println!("healing: {}", s["state"].as_str().unwrap_or("?"));
    if let Some(drives) = s["unavailable_drives"].as_array() {
        for d in drives {
            let short = match d["objects_short"].as_u64() {
                Some(count) => format!("{count} objects of its set are"),
                None => "objects of its set (how many: unknown until a scan counts the set) are".to_owned(),
            };
            println!(
                "  drive {} (set {}) UNAVAILABLE: {}; {short} short of a shard until it is back",
                d["drive"].as_str().unwrap_or("?"),
                d["set"].as_str().unwrap_or("?"),
                d["reason"].as_str().unwrap_or("?"),
            );
        }
    }
    if let Some(q) = s["scan_queued"].as_object() {
        println!("scan {} queued behind the running one", q.get("id").and_then(Value::as_u64).unwrap_or(0));
    }
    println!(
        "scan {}: {} (priority {}), {} of {} objects checked, {} healed, {} failed, {} remaining",
        n(&scan["id"]),
        scan["state"].as_str().unwrap_or("?"),
        s["priority"].as_str().unwrap_or("?"),
        n(&scan["objects_scanned"]),
        n(&scan["objects_total"]),
        n(&scan["objects_healed"]),
        n(&scan["objects_failed"]),
        n(&scan["objects_remaining"]),
    );
    println!(
        "      {:.1} objects/s, {:.1} MiB/s checked{}",
        f(scan, &["objects_per_sec"]),
        f(scan, &["bytes_per_sec"]) / (1024.0 * 1024.0),
        scan["eta_secs"].as_f64().map(|e| format!(", ETA {e:.0} s")).unwrap_or_default()
    );
    if let Some(sets) = scan["sets"].as_object() {
        for (name, p) in sets {
            println!(
                "  set {name}: {} checked, {} healed, {} failed",
                n(&p["objects_scanned"]),
                n(&p["objects_healed"]),
                n(&p["objects_failed"])
            );
        }
    }
    if let Some(drives) = s["drives"].as_object() {
        for (name, d) in drives {
            println!(
                "  drive {name}: {} objects healed onto it ({} bytes)",
                n(&d["objects"]),
                n(&d["bytes"])
            );
        }
    }
    println!(
        "queue: {} waiting, {} healed, {} failed",
        n(&s["queue_length"]),
        n(&s["queue_healed"]),
        n(&s["queue_failed"])
    );
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
    let query = format!(
        "autotune={}&concurrent={}&duration={}&size={}",
        a.autotune, a.concurrent, a.duration, a.size
    );
    eprintln!("speedtest: {} objects, {} concurrent, {} per phase ...", a.size, a.concurrent, a.duration);
    let plain = a.conn.call(Method::POST, "speedtest", &query).await?;
    let Some(sse) = a.sse.as_deref() else {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&plain)?);
        } else {
            print_speedtest(&plain);
        }
        return Ok(());
    };
    let label = if sse == "dsse" { "DSSE-KMS".to_owned() } else { format!("SSE-{}", sse.to_uppercase()) };
    eprintln!("speedtest: the same with {label} ...");
    let sealed = a.conn.call(Method::POST, "speedtest", &format!("{query}&sse={sse}")).await?;
    if a.json {
        let both = serde_json::json!({ "plain": plain, "encrypted": sealed });
        println!("{}", serde_json::to_string_pretty(&both)?);
        return Ok(());
    }
    println!("plain:");
    print_speedtest(&plain);
    println!("{label}:");
    print_speedtest(&sealed);
    for (op, phase) in [("PUT", "aggregate_put"), ("GET", "aggregate_get")] {
        let mib = |r: &Value| r[phase]["mib_per_sec"].as_f64().unwrap_or(0.0);
        let share = if mib(&plain) > 0.0 { mib(&sealed) / mib(&plain) * 100.0 } else { 0.0 };
        println!("{label} {op}: {share:.0} % of plain");
    }
    Ok(())
}

/// The table of one speedtest answer.
fn print_speedtest(report: &Value) {
    if let Some(tried) = report.get("autotune").and_then(Value::as_array).filter(|t| !t.is_empty()) {
        for t in tried {
            let (c, mib) = (t.get(0).and_then(Value::as_u64), t.get(1).and_then(Value::as_f64));
            println!("autotune: {:>4} concurrent → PUT {:.1} MiB/s", c.unwrap_or(0), mib.unwrap_or(0.0));
        }
    }
    println!(
        "concurrency {} per node, {} B objects",
        report.get("concurrent").and_then(Value::as_u64).unwrap_or(0),
        f(report, &["params", "size"])
    );
    for node in report.get("nodes").and_then(Value::as_array).into_iter().flatten() {
        let name = node.get("endpoint").and_then(Value::as_str).unwrap_or("?");
        println!("{}", line(&format!("PUT {name}"), &node["put"]));
        println!("{}", line(&format!("GET {name}"), &node["get"]));
    }
    println!("{}", line("PUT all nodes", &report["aggregate_put"]));
    println!("{}", line("GET all nodes", &report["aggregate_get"]));
}
