//! The phases of a run: prepare the bucket and objects, run the workers, clean up, report.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::Method;
use md5::{Digest, Md5};

use crate::client::{error_code, BodyMode, Client, Endpoint};
use crate::report::{self, OpReport, OpStats, ProcessUsage, Report, Sample};

/// `4096 B` or `4096-1048576 B`.
fn size_text((lo, hi): (u64, u64)) -> String {
    if lo == hi {
        format!("{lo} B")
    } else {
        format!("{lo}-{hi} B")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Op {
    Put,
    Get,
    Stat,
    Delete,
    List,
    Mixed,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Get => "get",
            Op::Stat => "stat",
            Op::Delete => "delete",
            Op::List => "list",
            Op::Mixed => "mixed",
        }
    }
}

/// `strata bench OP [options]` or `strata bench compare A.json B.json`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum BenchCommand {
    /// Upload new objects.
    Put(BenchArgs),
    /// Download prepared objects.
    Get(BenchArgs),
    /// HEAD prepared objects.
    Stat(BenchArgs),
    /// Delete prepared objects (until they run out or time does).
    Delete(BenchArgs),
    /// List prepared objects, 1,000 per page.
    List(BenchArgs),
    /// A weighted mix of get, stat, put and delete (--mix).
    Mixed(BenchArgs),
    /// Compare two JSON reports (--json) side by side.
    Compare { before: std::path::PathBuf, after: std::path::PathBuf },
    /// Run as an agent that generates load when a controller (`--clients`) says so.
    Serve {
        /// Address to listen on for the controller.
        #[arg(long, default_value = "127.0.0.1:7761", env = "STRATA_BENCH_AGENT_ADDRESS")]
        address: std::net::SocketAddr,
    },
}

/// Runs one bench command.
pub async fn main(cmd: BenchCommand) -> Result<()> {
    let (op, args) = match cmd {
        BenchCommand::Put(a) => (Op::Put, a),
        BenchCommand::Get(a) => (Op::Get, a),
        BenchCommand::Stat(a) => (Op::Stat, a),
        BenchCommand::Delete(a) => (Op::Delete, a),
        BenchCommand::List(a) => (Op::List, a),
        BenchCommand::Mixed(a) => (Op::Mixed, a),
        BenchCommand::Compare { before, after } => return crate::compare::compare(&before, &after),
        BenchCommand::Serve { address } => return crate::agent::serve(address).await,
    };
    run(op, args).await
}

#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct BenchArgs {
    /// Endpoints, host:port, comma-separated or an ellipsis pattern; used round-robin.
    #[arg(long, default_value = "127.0.0.1:9000", env = "STRATA_BENCH_HOST")]
    pub host: String,
    #[arg(long, default_value = "strataadmin", env = "STRATA_BENCH_ACCESS_KEY")]
    pub access_key: String,
    #[arg(long, default_value = "strataadmin", env = "STRATA_BENCH_SECRET_KEY")]
    pub secret_key: String,
    #[arg(long, default_value = "us-east-1", env = "STRATA_BENCH_REGION")]
    pub region: String,
    /// Use HTTPS.
    #[arg(long, env = "STRATA_BENCH_TLS")]
    pub tls: bool,
    /// With --tls, accept any server certificate (self-signed test deployments).
    #[arg(long, env = "STRATA_BENCH_INSECURE")]
    pub insecure: bool,
    /// Server-side encryption of the objects: s3 (SSE-S3), kms (SSE-KMS, the default key), dsse
    /// (DSSE-KMS: two layers, the default key) or c (SSE-C with a key made for the run; the
    /// server must allow it: TLS, or
    /// STRATA_SSE_C_ALLOW_HTTP=on).
    #[arg(long, env = "STRATA_BENCH_SSE")]
    pub sse: Option<String>,
    /// Bucket to use; created if missing, and emptied of this run's objects at the end.
    #[arg(long, default_value = "strata-bench", env = "STRATA_BENCH_BUCKET")]
    pub bucket: String,
    /// Object size: 4KiB, 1MiB, 16MiB, 100B, ...; or a range, 4KiB-1MiB, for objects of random
    /// sizes in it (uniform).
    #[arg(long = "obj.size", default_value = "1MiB", env = "STRATA_BENCH_OBJ_SIZE")]
    pub obj_size: String,
    /// Objects larger than this are uploaded in parts of this size (multipart upload).
    #[arg(long = "part.size", default_value = "16MiB", env = "STRATA_BENCH_PART_SIZE")]
    pub part_size: String,
    /// Upload every object with one PUT, whatever its size.
    #[arg(long, env = "STRATA_BENCH_DISABLE_MULTIPART")]
    pub disable_multipart: bool,
    /// Concurrent requests.
    #[arg(long, default_value_t = 16, env = "STRATA_BENCH_CONCURRENT")]
    pub concurrent: usize,
    /// How long to run: 10s, 1m, 500ms.
    #[arg(long, default_value = "10s", env = "STRATA_BENCH_DURATION")]
    pub duration: String,
    /// Objects prepared before get, stat, list, delete and mixed runs.
    #[arg(long, default_value_t = 1000, env = "STRATA_BENCH_OBJECTS")]
    pub objects: usize,
    /// Weights for mixed: get=45,stat=30,put=15,delete=10.
    #[arg(long, default_value = "get=45,stat=30,put=15,delete=10", env = "STRATA_BENCH_MIX")]
    pub mix: String,
    /// Check the MD5 of every GET body against the object written.
    #[arg(long)]
    pub verify: bool,
    /// Leave the objects in the bucket.
    #[arg(long)]
    pub no_clear: bool,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Draw throughput over time as an SVG chart into this file.
    #[arg(long)]
    pub chart: Option<std::path::PathBuf>,
    /// Also report CPU and memory of this local process (the server under test).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Drive these `strata bench serve` agents (host:port, comma-separated) with this run and
    /// merge their results, instead of generating load here.
    #[arg(long, env = "STRATA_BENCH_CLIENTS")]
    pub clients: Option<String>,
}

/// Parses `4KiB`, `1MiB`, `1.5MB`, `100`, ...
pub fn parse_size(s: &str) -> Result<u64> {
    strata_types::size::parse_size(s).with_context(|| format!("size {s:?} is not like 4KiB, 1MiB or 100"))
}

/// Parses a size or a range of sizes, `4KiB-1MiB`.
pub fn parse_size_range(s: &str) -> Result<(u64, u64)> {
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (parse_size(a)?, parse_size(b)?),
        None => {
            let n = parse_size(s)?;
            (n, n)
        }
    };
    if lo > hi {
        bail!("size range {s:?} runs backwards");
    }
    Ok((lo, hi))
}

/// Parses `10s`, `2m`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration> {
    strata_types::time::parse_duration(s)
        .with_context(|| format!("duration {s:?} is not like 10s, 2m or 500ms"))
}

fn parse_mix(s: &str) -> Result<Vec<(Op, u32)>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (name, w) = part.split_once('=').with_context(|| format!("mix entry {part:?}"))?;
        let op = match name.trim() {
            "get" => Op::Get,
            "stat" => Op::Stat,
            "put" => Op::Put,
            "delete" => Op::Delete,
            other => bail!("mix operation {other:?} is not one of get, stat, put, delete"),
        };
        out.push((op, w.trim().parse().with_context(|| format!("mix weight {w:?}"))?));
    }
    if out.iter().map(|(_, w)| w).sum::<u32>() == 0 {
        bail!("mix weights add up to zero");
    }
    Ok(out)
}

fn hosts(s: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for h in s.split(',').filter(|h| !h.is_empty()) {
        let h = h.trim_start_matches("http://").trim_end_matches('/');
        out.extend(expand(h)?);
    }
    if out.is_empty() {
        bail!("no host given");
    }
    Ok(out)
}

/// `{1...4}` ranges in host names (numbers only).
fn expand(h: &str) -> Result<Vec<String>> {
    let (Some(open), Some(close)) = (h.find('{'), h.find('}')) else { return Ok(vec![h.to_owned()]) };
    let (lo, hi) = h[open + 1..close].split_once("...").with_context(|| format!("host pattern {h:?}"))?;
    let (lo, hi): (u32, u32) = (lo.parse()?, hi.parse()?);
    let mut out = Vec::new();
    for n in lo..=hi {
        out.extend(expand(&format!("{}{n}{}", &h[..open], &h[close + 1..]))?);
    }
    Ok(out)
}

struct Shared {
    client: Client,
    bucket: String,
    prefix: String,
    /// As large as the largest object; every body is a slice of it.
    payload: Bytes,
    sizes: (u64, u64),
    /// Multipart above this size (`None`: never).
    part_size: Option<u64>,
    /// MD5 of each prepared object (one entry when all have the same size), when verifying.
    prepared_md5: Vec<[u8; 16]>,
    prepared: usize,
    verify: bool,
    /// Set when the workers start.
    deadline: std::sync::OnceLock<Instant>,
    next_delete: AtomicUsize,
    ops: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

impl Shared {
    fn running(&self) -> bool {
        self.deadline.get().is_some_and(|d| Instant::now() < *d)
    }

    fn prepared_key(&self, i: usize) -> String {
        format!("{}/obj-{i:08}", self.prefix)
    }

    /// The size of prepared object `i` (fixed, so reads know what to expect).
    fn prepared_size(&self, i: usize) -> u64 {
        let (lo, hi) = self.sizes;
        lo + Rng((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).next() % (hi - lo + 1)
    }

    fn prepared_md5(&self, i: usize) -> Option<[u8; 16]> {
        match self.prepared_md5.len() {
            0 => None,
            1 => Some(self.prepared_md5[0]),
            _ => self.prepared_md5.get(i).copied(),
        }
    }

    /// PUTs `size` bytes at `key`, in parts above the part size; the last response.
    async fn put(&self, key: &str, size: u64) -> Result<crate::client::Outcome> {
        let body = self.payload.slice(..size as usize);
        match self.part_size {
            Some(part) if size > part => self.put_multipart(key, body, part).await,
            _ => self.client.request(Method::PUT, &self.bucket, key, "", body, BodyMode::Keep).await,
        }
    }

    async fn put_multipart(&self, key: &str, body: Bytes, part: u64) -> Result<crate::client::Outcome> {
        let c = &self.client;
        let created =
            c.request(Method::POST, &self.bucket, key, "uploads", Bytes::new(), BodyMode::Keep).await?;
        if !created.status.is_success() {
            return Ok(created);
        }
        let text = String::from_utf8_lossy(created.body.as_deref().unwrap_or_default()).into_owned();
        let id = xml_text(&text, "UploadId").context("CreateMultipartUpload answered no UploadId")?;
        let mut doc = String::from("<CompleteMultipartUpload>");
        for (i, start) in (0..body.len()).step_by(part as usize).enumerate() {
            let chunk = body.slice(start..(start + part as usize).min(body.len()));
            let query = format!("partNumber={}&uploadId={id}", i + 1);
            let o = c.request(Method::PUT, &self.bucket, key, &query, chunk, BodyMode::Keep).await;
            let etag = match &o {
                Ok(o) if o.status.is_success() => o.headers.get("etag").and_then(|v| v.to_str().ok()),
                _ => None,
            };
            let Some(etag) = etag else {
                let q = format!("uploadId={id}");
                let _ = c.request(Method::DELETE, &self.bucket, key, &q, Bytes::new(), BodyMode::Keep).await;
                return o;
            };
            doc.push_str(&format!("<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>", i + 1));
        }
        doc.push_str("</CompleteMultipartUpload>");
        let query = format!("uploadId={id}");
        c.request(Method::POST, &self.bucket, key, &query, Bytes::from(doc), BodyMode::Keep).await
    }
}

/// The text of the first `<name>` element.
fn xml_text(text: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find('<')? + start;
    Some(text[start..end].to_owned())
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

type Stats = HashMap<Op, OpStats>;

async fn do_put(s: &Shared, key: &str, size: u64, stats: &mut Stats) {
    let start = Instant::now();
    let r = s.put(key, size).await;
    account(s, stats.entry(Op::Put).or_default(), r, start, size, |_| None);
}

async fn do_get(s: &Shared, i: usize, stats: &mut Stats) {
    let start = Instant::now();
    let mode = if s.verify { BodyMode::Md5 } else { BodyMode::Discard };
    let r = s.client.request(Method::GET, &s.bucket, &s.prepared_key(i), "", Bytes::new(), mode).await;
    let want = s.prepared_size(i);
    account(s, stats.entry(Op::Get).or_default(), r, start, want, |o| {
        if o.size != want {
            return Some("WrongSize".into());
        }
        if o.md5.is_some() && o.md5 != s.prepared_md5(i) {
            return Some("WrongContent".into());
        }
        None
    });
}

async fn do_stat(s: &Shared, i: usize, stats: &mut Stats) {
    let start = Instant::now();
    let key = s.prepared_key(i);
    let r = s.client.request(Method::HEAD, &s.bucket, &key, "", Bytes::new(), BodyMode::Discard).await;
    let want = s.prepared_size(i).to_string();
    account(s, stats.entry(Op::Stat).or_default(), r, start, 0, |o| {
        (o.headers.get("content-length").and_then(|v| v.to_str().ok()) != Some(want.as_str()))
            .then(|| "WrongSize".into())
    });
}

async fn do_delete(s: &Shared, key: &str, stats: &mut Stats) {
    let start = Instant::now();
    let r = s.client.request(Method::DELETE, &s.bucket, key, "", Bytes::new(), BodyMode::Keep).await;
    account(s, stats.entry(Op::Delete).or_default(), r, start, 0, |_| None);
}

async fn do_list(s: &Shared, stats: &mut Stats) {
    let mut token = String::new();
    loop {
        let start = Instant::now();
        let mut query = format!("list-type=2&max-keys=1000&prefix={}%2F", s.prefix);
        if !token.is_empty() {
            query.push_str(&format!("&continuation-token={token}"));
        }
        let r = s.client.request(Method::GET, &s.bucket, "", &query, Bytes::new(), BodyMode::Keep).await;
        let mut next = None;
        let st = stats.entry(Op::List).or_default();
        account(s, st, r, start, 0, |o| {
            let text = String::from_utf8_lossy(o.body.as_deref().unwrap_or_default()).into_owned();
            st_items(&text, &mut next);
            None
        });
        if let Some((items, t)) = next {
            st.items += items;
            match t {
                Some(t) if s.running() => token = t,
                _ => break,
            }
        } else {
            break;
        }
    }
}

/// Counts `<Key>` entries and finds the continuation token of a listing page.
fn st_items(text: &str, out: &mut Option<(u64, Option<String>)>) {
    let items = text.matches("<Key>").count() as u64;
    let token = text.find("<NextContinuationToken>").and_then(|a| {
        let rest = &text[a + 23..];
        rest.find('<').map(|b| {
            percent_encoding::utf8_percent_encode(&rest[..b], percent_encoding::NON_ALPHANUMERIC).to_string()
        })
    });
    *out = Some((items, token));
}

fn account(
    s: &Shared,
    st: &mut OpStats,
    r: Result<crate::client::Outcome>,
    start: Instant,
    bytes: u64,
    check: impl FnOnce(&crate::client::Outcome) -> Option<String>,
) {
    let latency = start.elapsed();
    let failure = match &r {
        Err(e) => Some(format!("transport: {}", e.root_cause())),
        Ok(o) if !o.status.is_success() => Some(error_code(o)),
        Ok(o) => check(o),
    };
    match failure {
        Some(code) => {
            st.error(code);
            s.errors.fetch_add(1, Ordering::Relaxed);
        }
        None => {
            let ttfb = r.ok().map(|o| o.ttfb);
            st.record(latency, ttfb, bytes);
            s.ops.fetch_add(1, Ordering::Relaxed);
            s.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

async fn worker(s: Arc<Shared>, id: usize, op: Op, mix: Arc<Vec<(Op, u32)>>) -> Stats {
    let mut stats = Stats::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut own: Vec<String> = Vec::new();
    let mut n = 0usize;
    let total: u32 = mix.iter().map(|(_, w)| w).sum();
    while s.running() {
        let this = if op == Op::Mixed {
            let mut pick = (rng.next() % u64::from(total)) as u32;
            let mut chosen = Op::Get;
            for (o, w) in mix.iter() {
                if pick < *w {
                    chosen = *o;
                    break;
                }
                pick -= w;
            }
            chosen
        } else {
            op
        };
        let (lo, hi) = s.sizes;
        let size = lo + rng.next() % (hi - lo + 1);
        match this {
            Op::Put => {
                let key = format!("{}/put-{id}-{n}", s.prefix);
                n += 1;
                do_put(&s, &key, size, &mut stats).await;
                if op == Op::Mixed {
                    own.push(key);
                }
            }
            Op::Get | Op::Stat if s.prepared > 0 => {
                let i = (rng.next() % s.prepared as u64) as usize;
                if this == Op::Get {
                    do_get(&s, i, &mut stats).await;
                } else {
                    do_stat(&s, i, &mut stats).await;
                }
            }
            Op::Delete if op == Op::Mixed => match own.pop() {
                Some(key) => do_delete(&s, &key, &mut stats).await,
                None => {
                    let key = format!("{}/put-{id}-{n}", s.prefix);
                    n += 1;
                    do_put(&s, &key, size, &mut stats).await;
                    own.push(key);
                }
            },
            Op::Delete => {
                let i = s.next_delete.fetch_add(1, Ordering::Relaxed);
                if i >= s.prepared {
                    break;
                }
                do_delete(&s, &s.prepared_key(i), &mut stats).await;
            }
            Op::List => do_list(&s, &mut stats).await,
            _ => break,
        }
    }
    stats
}

/// CPU (since `before` ticks, over `elapsed`) and memory of a process.
pub(crate) fn process_usage(before: Option<u64>, pid: &str, elapsed: Duration) -> ProcessUsage {
    ProcessUsage {
        cpu_percent: match (before, cpu_ticks(pid)) {
            (Some(a), Some(b)) => (b - a) as f64 / TICKS_PER_SEC / elapsed.as_secs_f64().max(1e-9) * 100.0,
            _ => 0.0,
        },
        rss_mib: memory_mib(pid, "VmRSS:"),
        peak_rss_mib: memory_mib(pid, "VmHWM:"),
    }
}

pub(crate) use strata_types::process::cpu_ticks;
use strata_types::process::TICKS_PER_SEC;

fn memory_mib(pid: &str, field: &str) -> Option<f64> {
    strata_types::process::memory_kib(pid, field).map(|k| k as f64 / 1024.0)
}

async fn for_all(
    shared: &Arc<Shared>,
    keys: Vec<(String, Option<u64>)>,
    concurrency: usize,
    put: bool,
) -> Result<()> {
    let queue = Arc::new(std::sync::Mutex::new(keys));
    let failures = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (s, q, f) = (shared.clone(), queue.clone(), failures.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let key = match q.lock() {
                    Ok(mut q) => q.pop(),
                    Err(_) => None,
                };
                let Some((key, size)) = key else { break };
                let outcome = match size {
                    Some(size) => s.put(&key, size).await,
                    None => {
                        s.client
                            .request(Method::DELETE, &s.bucket, &key, "", Bytes::new(), BodyMode::Keep)
                            .await
                    }
                };
                match outcome {
                    Ok(o) if o.status.is_success() => {}
                    _ => {
                        f.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        bail!("{failed} requests failed while {}", if put { "preparing objects" } else { "cleaning up" });
    }
    Ok(())
}

async fn list_all(s: &Shared) -> Result<Vec<String>> {
    let mut keys = Vec::new();
    let mut token = String::new();
    loop {
        let mut query = format!("list-type=2&max-keys=1000&prefix={}%2F", s.prefix);
        if !token.is_empty() {
            query.push_str(&format!("&continuation-token={token}"));
        }
        let o = s.client.request(Method::GET, &s.bucket, "", &query, Bytes::new(), BodyMode::Keep).await?;
        if !o.status.is_success() {
            bail!("listing for clean-up failed: {}", error_code(&o));
        }
        let text = String::from_utf8_lossy(o.body.as_deref().unwrap_or_default()).into_owned();
        for part in text.split("<Key>").skip(1) {
            if let Some(end) = part.find("</Key>") {
                keys.push(part[..end].replace("&amp;", "&"));
            }
        }
        let mut next = None;
        st_items(&text, &mut next);
        match next.and_then(|(_, t)| t) {
            Some(t) => token = t,
            None => break,
        }
    }
    Ok(keys)
}

/// A run made ready: bucket made, objects prepared, workers not started.
pub struct Prepared {
    op: Op,
    args: BenchArgs,
    hosts: Vec<String>,
    sizes: (u64, u64),
    duration: Duration,
    mix: Arc<Vec<(Op, u32)>>,
    shared: Arc<Shared>,
}

/// Checks the arguments, makes the bucket and prepares the objects reads need. `tag` goes into
/// the key prefix (agents of one multi-client run each get their own).
pub async fn prepare(op: Op, args: BenchArgs, tag: &str) -> Result<Prepared> {
    let sizes = parse_size_range(&args.obj_size)?;
    let part_size = if args.disable_multipart { None } else { Some(parse_size(&args.part_size)?) };
    if part_size.is_some_and(|p| p < strata_types::limits::PART_SIZE_MIN) {
        bail!("--part.size must be at least 5MiB (S3's smallest part)");
    }
    let duration = parse_duration(&args.duration)?;
    let mix = Arc::new(parse_mix(&args.mix)?);
    let hosts = hosts(&args.host)?;
    if args.concurrent == 0 {
        bail!("--concurrent must be at least 1");
    }
    let endpoint = Endpoint {
        hosts: hosts.clone(),
        access_key: args.access_key.clone(),
        secret_key: args.secret_key.clone(),
        region: args.region.clone(),
        tls: args.tls,
        insecure: args.insecure,
        object_headers: crate::client::sse_headers(args.sse.as_deref())?,
    };
    let client = Client::new(endpoint, args.concurrent)?;
    let made = client.request(Method::PUT, &args.bucket, "", "", Bytes::new(), BodyMode::Keep).await?;
    if !made.status.is_success() && error_code(&made) != "BucketAlreadyOwnedByYou" {
        bail!("cannot create bucket {}: {}", args.bucket, error_code(&made));
    }
    let payload: Bytes = {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1 ^ strata_types::time::now_nanos());
        (0..sizes.1).map(|_| rng.next() as u8).collect::<Vec<u8>>().into()
    };
    let prefix = format!("bench-{tag}{:x}", strata_types::time::now_nanos() & 0xffff_ffff);
    let prepared = if matches!(op, Op::Put) { 0 } else { args.objects };
    let mut shared = Shared {
        client,
        bucket: args.bucket.clone(),
        prefix,
        payload,
        sizes,
        part_size,
        prepared_md5: Vec::new(),
        prepared,
        verify: args.verify,
        deadline: std::sync::OnceLock::new(),
        next_delete: AtomicUsize::new(0),
        ops: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    };
    if args.verify {
        let md5 = |size: u64| -> [u8; 16] { Md5::digest(&shared.payload[..size as usize]).into() };
        shared.prepared_md5 = if sizes.0 == sizes.1 {
            vec![md5(sizes.0)]
        } else {
            (0..prepared).map(|i| md5(shared.prepared_size(i))).collect()
        };
    }
    let shared = Arc::new(shared);
    if prepared > 0 {
        eprintln!("preparing {prepared} objects of {} ...", size_text(sizes));
        let keys = (0..prepared).map(|i| (shared.prepared_key(i), Some(shared.prepared_size(i)))).collect();
        for_all(&shared, keys, args.concurrent, true).await?;
    }
    Ok(Prepared { op, args, hosts, sizes, duration, mix, shared })
}

/// Runs the workers for the run's duration and reports what they measured.
pub async fn execute(p: &Prepared) -> Result<Report> {
    let (shared, args) = (&p.shared, &p.args);
    if shared.deadline.set(Instant::now() + p.duration).is_err() {
        bail!("a prepared run executes once");
    }
    let server_pid = args.server_pid.map(|p| p.to_string());
    let (bench_before, server_before) = (cpu_ticks("self"), server_pid.as_deref().and_then(cpu_ticks));
    let started = Instant::now();
    let timeline = Arc::new(std::sync::Mutex::new(Vec::<Sample>::new()));
    let ticker = {
        let (s, timeline) = (shared.clone(), timeline.clone());
        tokio::spawn(async move {
            let mut last = (0u64, 0u64, 0u64);
            let mut tick = tokio::time::interval_at(
                tokio::time::Instant::now() + strata_types::limits::BENCH_REPORT_INTERVAL,
                strata_types::limits::BENCH_REPORT_INTERVAL,
            );
            loop {
                tick.tick().await;
                let (ops, bytes) = (s.ops.load(Ordering::Relaxed), s.bytes.load(Ordering::Relaxed));
                let errors = s.errors.load(Ordering::Relaxed);
                if let Ok(mut t) = timeline.lock() {
                    t.push(Sample {
                        second: started.elapsed().as_secs_f64(),
                        mib_per_sec: (bytes - last.1) as f64 / (1024.0 * 1024.0),
                        ops_per_sec: (ops - last.0) as f64,
                        errors: errors - last.2,
                    });
                }
                eprint!(
                    "\r[{:>4.0}s] {:>8} ops {:>9.1} MiB/s {:>9.0} obj/s  {} errors   ",
                    started.elapsed().as_secs_f64(),
                    ops,
                    (bytes - last.1) as f64 / (1024.0 * 1024.0),
                    (ops - last.0) as f64,
                    errors
                );
                last = (ops, bytes, errors);
            }
        })
    };
    let mut tasks = Vec::new();
    for id in 0..args.concurrent {
        tasks.push(tokio::spawn(worker(shared.clone(), id, p.op, p.mix.clone())));
    }
    let mut totals: Stats = HashMap::new();
    for t in tasks {
        for (op, st) in t.await? {
            totals.entry(op).or_default().merge(st);
        }
    }
    let elapsed = started.elapsed();
    ticker.abort();
    eprintln!();
    let bench_usage = process_usage(bench_before, "self", elapsed);
    let server_usage = server_pid.as_deref().map(|p| process_usage(server_before, p, elapsed));
    let order = [Op::Put, Op::Get, Op::Stat, Op::Delete, Op::List];
    let ops = order
        .iter()
        .filter_map(|op| totals.remove(op).map(|st| OpReport::new(op.name(), st, elapsed)))
        .collect();
    Ok(Report {
        tool: "strata bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        operation: p.op.name().into(),
        hosts: p.hosts.clone(),
        concurrency: args.concurrent,
        object_size: p.sizes.0,
        object_size_max: p.sizes.1,
        duration_secs: elapsed.as_secs_f64(),
        ops,
        bench: bench_usage,
        server: server_usage,
        timeline: timeline.lock().map(|t| t.clone()).unwrap_or_default(),
        clients: Vec::new(),
    })
}

/// Deletes what the run wrote (unless `--no-clear`).
pub async fn finish(p: Prepared) -> Result<()> {
    if !p.args.no_clear {
        let keys = list_all(&p.shared).await?;
        eprintln!("cleaning up {} objects ...", keys.len());
        let keys = keys.into_iter().map(|k| (k, None)).collect();
        for_all(&p.shared, keys, p.args.concurrent, false).await?;
    }
    Ok(())
}

/// Prints the report, writes `--json` and `--chart`, and fails if any operation failed.
pub fn publish(report: &Report, args: &BenchArgs) -> Result<()> {
    report::print(report);
    if let Some(path) = &args.chart {
        std::fs::write(path, crate::chart::svg(report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let errors: u64 = report.ops.iter().map(|o| o.errors_total).sum();
    if errors > 0 {
        bail!("{errors} operations failed");
    }
    Ok(())
}

pub async fn run(op: Op, args: BenchArgs) -> Result<()> {
    if let Some(clients) = args.clients.clone() {
        let report = crate::agent::drive_clients(op, args.clone(), &clients).await?;
        return publish(&report, &args);
    }
    let prepared = prepare(op, args.clone(), "").await?;
    let report = execute(&prepared).await;
    let cleaned = finish(prepared).await;
    let report = report?;
    let published = publish(&report, &args);
    cleaned?;
    published
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_durations_mixes_hosts() {
        assert_eq!(parse_size("4KiB").expect("size"), 4096);
        assert_eq!(parse_size("1MiB").expect("size"), 1 << 20);
        assert_eq!(parse_size("1.5MB").expect("size"), 1_500_000);
        assert_eq!(parse_size("100").expect("size"), 100);
        assert_eq!(parse_size_range("4KiB-1MiB").expect("range"), (4096, 1 << 20));
        assert_eq!(parse_size_range("4KiB").expect("range"), (4096, 4096));
        assert!(parse_size_range("1MiB-4KiB").is_err());
        assert!(parse_size("1XB").is_err());
        assert_eq!(parse_duration("500ms").expect("d"), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").expect("d"), Duration::from_secs(120));
        assert_eq!(parse_mix("get=1,put=2").expect("mix"), vec![(Op::Get, 1), (Op::Put, 2)]);
        assert!(parse_mix("get=0").is_err());
        assert_eq!(hosts("h{1...3}:9000").expect("hosts"), ["h1:9000", "h2:9000", "h3:9000"]);
        assert_eq!(hosts("a:1,b:2").expect("hosts"), ["a:1", "b:2"]);
    }
}
