//! The speedtest (`POST speedtest?size=64MiB&concurrent=32&duration=10s&autotune=false`): every
//! node drives PUT then GET load against the deployment through its object layer (what the
//! drives, erasure coding and, between nodes, the network sustain; the S3 front end is measured
//! by `strata bench`), samples its CPU and memory meanwhile, removes what it wrote, and reports
//! per node and in aggregate. Objects go to a hidden bucket that S3 listings never show, so
//! normal traffic is untouched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use serde::Serialize;
use strata_object::{BytesBody, ListRequest, ObjectError, PutOptions};
use strata_rpc::peer::{Latency, PeerError, SpeedtestResult, SpeedtestShare, SpeedtestSse, Throughput};
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{Node, Reply};
use strata_types::limits::{
    SPEEDTEST_AUTOTUNE_STEP_MIN, SPEEDTEST_DURATION_DEFAULT, SPEEDTEST_DURATION_MAX, SPEEDTEST_DURATION_MIN,
    SPEEDTEST_PEER_SLACK, SPEEDTEST_SIZE_DEFAULT,
};
use tokio::sync::Mutex;

use crate::{json_reply, Admin};

/// The hidden bucket speedtests write to (not a valid S3 bucket name, so no client can make it).
pub const SPEEDTEST_BUCKET: &str = ".strata-speedtest";

/// One speedtest at a time per node.
static SPEEDTEST_RUNNING: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpeedtestParams {
    pub size: u64,
    pub concurrent: usize,
    pub duration_secs: f64,
    pub autotune: bool,
    /// Server-side encryption of the objects written, if any.
    pub sse: Option<SpeedtestSse>,
}

impl SpeedtestParams {
    pub(crate) fn parse(query: &[(String, String)]) -> Result<Self, S3Error> {
        let param = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let bad = |m: &str| S3Error::new(S3ErrorCode::InvalidArgument, m);
        let size = match param("size") {
            None => SPEEDTEST_SIZE_DEFAULT,
            Some(s) => strata_types::size::parse_size(s).ok_or_else(|| bad("size must be like 64MiB"))?,
        };
        let concurrent = match param("concurrent") {
            None => 32,
            Some(c) => c.parse().map_err(|_| bad("concurrent must be a number"))?,
        };
        let duration = match param("duration") {
            None => SPEEDTEST_DURATION_DEFAULT,
            Some(d) => {
                strata_types::time::parse_duration(d).ok_or_else(|| bad("duration must be like 10s"))?
            }
        };
        let autotune = param("autotune").is_some_and(|a| a == "true" || a == "1");
        let sse = match param("sse") {
            None | Some("" | "none") => None,
            Some("s3") => Some(SpeedtestSse::S3),
            Some("kms") => Some(SpeedtestSse::Kms),
            Some("dsse") => Some(SpeedtestSse::Dsse),
            Some("c") => Some(SpeedtestSse::C),
            Some(_) => return Err(bad("sse must be s3, kms, dsse, c or none")),
        };
        if !(1..=strata_types::limits::PUT_OBJECT_SIZE_MAX).contains(&size) {
            return Err(bad("size must be between 1 B and 5 GiB"));
        }
        if !(1..=1024).contains(&concurrent) {
            return Err(bad("concurrent must be between 1 and 1024"));
        }
        if !(SPEEDTEST_DURATION_MIN..=SPEEDTEST_DURATION_MAX).contains(&duration) {
            return Err(bad("duration must be between 100ms and 10m"));
        }
        Ok(Self { size, concurrent, duration_secs: duration.as_secs_f64(), autotune, sse })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SpeedtestReport {
    pub params: SpeedtestParams,
    /// With autotune: PUT MiB/s at each concurrency tried, and the one chosen.
    pub autotune: Vec<(usize, f64)>,
    pub concurrent: usize,
    pub nodes: Vec<SpeedtestResult>,
    pub aggregate_put: Throughput,
    pub aggregate_get: Throughput,
}

fn rss_mib() -> f64 {
    strata_types::process::memory_kib("self", "VmRSS:").unwrap_or(0) as f64 / 1024.0
}

fn latency(mut us: Vec<u64>) -> Latency {
    if us.is_empty() {
        return Latency::default();
    }
    us.sort_unstable();
    let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    let mean = us.iter().sum::<u64>() as f64 / us.len() as f64 / 1000.0;
    Latency {
        p50: at(0.5),
        p75: at(0.75),
        p90: at(0.9),
        p95: at(0.95),
        p99: at(0.99),
        p999: at(0.999),
        max: at(1.0),
        min: at(0.0),
        mean,
    }
}

/// Runs `concurrent` workers for `duration`; `work(worker, n)` does one operation and returns
/// the bytes it moved.
async fn phase<F, Fut>(concurrent: usize, duration: Duration, work: F) -> Throughput
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<u64, OperationError>> + Send,
{
    let work = Arc::new(work);
    let started = Instant::now();
    let deadline = started + duration;
    let cpu_before = strata_types::process::cpu_ticks("self");
    let mut tasks = Vec::new();
    for w in 0..concurrent {
        let work = work.clone();
        tasks.push(tokio::spawn(async move {
            let (mut bytes, mut errors, mut lat) = (0u64, 0u64, Vec::new());
            let mut n = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                match work(w, n).await {
                    Ok(b) => {
                        bytes += b;
                        lat.push(t.elapsed().as_micros() as u64);
                    }
                    Err(_) => errors += 1,
                }
                n += 1;
            }
            (bytes, errors, lat)
        }));
    }
    let (mut bytes, mut errors, mut lat) = (0u64, 0u64, Vec::new());
    for t in tasks {
        if let Ok((b, e, l)) = t.await {
            bytes += b;
            errors += e;
            lat.extend(l);
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let cpu_percent = match (cpu_before, strata_types::process::cpu_ticks("self")) {
        (Some(a), Some(b)) => (b - a) as f64 / strata_types::process::TICKS_PER_SEC / secs * 100.0,
        _ => 0.0,
    };
    Throughput {
        mib_per_sec: bytes as f64 / secs / (1024.0 * 1024.0),
        objects_per_sec: lat.len() as f64 / secs,
        objects: lat.len() as u64,
        errors,
        latency_ms: latency(lat),
        cpu_percent,
        rss_mib: rss_mib(),
    }
}

/// Keys written by a PUT phase, so the GET phase reads them and clean-up removes them, and how
/// many of them were stored encrypted.
type Written = Arc<Mutex<(Vec<String>, u64)>>;

async fn put_phase(
    node: &Node,
    data: &Bytes,
    prefix: &str,
    load: (usize, Duration),
    sealing: Option<&Sealing>,
) -> (Throughput, (Vec<String>, u64)) {
    let (concurrent, duration) = load;
    let written: Written = Arc::new(Mutex::new((Vec::new(), 0)));
    let (layer, data, prefix, w2) = (node.layer.clone(), data.clone(), prefix.to_owned(), written.clone());
    let sealing = sealing.cloned();
    let result = phase(concurrent, duration, move |w, n| {
        let (layer, data, written, sealing) = (layer.clone(), data.clone(), w2.clone(), sealing.clone());
        let key = format!("{prefix}/{w}-{n}");
        async move {
            let mut options = PutOptions::default();
            if let Some(s) = sealing {
                options.sse = Some(s.seal().await?);
            }
            let size = data.len() as u64;
            let mut body = BytesBody::new(data);
            let info = layer.put_object(SPEEDTEST_BUCKET, &key, &mut body, options).await?;
            let mut written = written.lock().await;
            written.0.push(key);
            written.1 += u64::from(info.sse.is_some());
            Ok(size)
        }
    })
    .await;
    let written = std::mem::take(&mut *written.lock().await);
    (result, written)
}

async fn get_phase(
    node: &Node,
    keys: Arc<Vec<String>>,
    load: (usize, Duration),
    sealing: Option<&Sealing>,
) -> Throughput {
    let (concurrent, duration) = load;
    let layer = node.layer.clone();
    let sealing = sealing.cloned();
    phase(concurrent, duration, move |w, n| {
        let (layer, keys, sealing) = (layer.clone(), keys.clone(), sealing.clone());
        async move {
            if keys.is_empty() {
                return Err(ObjectError::ObjectNotFound.into());
            }
            let key = &keys[(w * 7919 + n as usize) % keys.len()];
            let open = layer.open_object(SPEEDTEST_BUCKET, key, true).await?;
            let size = open.info.size;
            let mut stream = match sealing {
                None => open.stream(0, size),
                Some(s) => {
                    let cipher = s.open(open.info.sse.as_ref()).await?;
                    open.stream_decrypted(cipher, 0, size)
                }
            };
            let mut got = 0u64;
            while let Some(chunk) = stream.recv().await {
                got += chunk?.len() as u64;
            }
            if got != size {
                return Err(OperationError::ShortRead { got, size });
            }
            Ok(got)
        }
    })
    .await
}

/// Removes every object under `prefix` in the speedtest bucket, then the bucket if empty.
async fn clean_up(node: &Node, prefix: &str) {
    clean_up_prefix(node, prefix).await;
    let _ = node.layer.delete_bucket(SPEEDTEST_BUCKET).await;
}

pub(crate) async fn speedtest(admin: &Admin, params: SpeedtestParams) -> Result<Reply, S3Error> {
    let report = report(admin, params, S3ErrorCode::SlowDown).await?;
    Ok(json_reply(StatusCode::OK, &report))
}

/// Runs a speedtest on every node; one at a time per node (another asked meanwhile is refused
/// with `busy`: MinIO's client retries a `SlowDown` for minutes, Strata's reports it).
pub(crate) async fn report(
    admin: &Admin,
    params: SpeedtestParams,
    busy: S3ErrorCode,
) -> Result<SpeedtestReport, S3Error> {
    if SPEEDTEST_RUNNING.swap(true, Ordering::SeqCst) {
        return Err(S3Error::new(busy, "A speedtest is already running on this node."));
    }
    let result = run_speedtest(admin, params).await;
    SPEEDTEST_RUNNING.store(false, Ordering::SeqCst);
    result
}

/// `size` bytes of cheap pseudo-random data (not compressible, not all equal).
fn test_data(size: u64) -> Bytes {
    let mut x = strata_types::time::now_nanos() | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// How one node seals its speedtest objects: the kind, the node's KMS and, for SSE-C, the one
/// customer key of the run (as a client would use one key for its objects).
#[derive(Clone)]
struct Sealing {
    kind: SpeedtestSse,
    kms: Option<Arc<dyn strata_crypto::Kms>>,
    customer: Option<strata_s3::sse::CustomerKey>,
}

impl Sealing {
    fn new(node: &Node, kind: Option<SpeedtestSse>) -> Result<Option<Self>, S3Error> {
        let Some(kind) = kind else { return Ok(None) };
        let customer = match kind {
            SpeedtestSse::C => Some(strata_s3::sse::CustomerKey::generate()?),
            SpeedtestSse::S3 | SpeedtestSse::Kms | SpeedtestSse::Dsse => None,
        };
        Ok(Some(Self { kind, kms: node.kms.clone(), customer }))
    }

    /// A fresh data key for one object, as a PUT of this kind makes it.
    async fn seal(&self) -> Result<strata_object::SsePut, S3Error> {
        let asked = match (self.kind, &self.customer) {
            (SpeedtestSse::C, Some(c)) => strata_s3::sse::SseRequest::C(c.clone()),
            (kind @ (SpeedtestSse::Kms | SpeedtestSse::Dsse), _) => strata_s3::sse::SseRequest::Kms {
                key_id: None,
                context: None,
                dual: kind == SpeedtestSse::Dsse,
            },
            _ => strata_s3::sse::SseRequest::S3,
        };
        Ok(strata_s3::sse::seal_new_with(self.kms.as_ref(), asked, false).await?.0)
    }

    /// The cipher of a stored object, as a GET of this kind opens it.
    async fn open(
        &self,
        envelope: Option<&strata_object::SseEnvelope>,
    ) -> Result<strata_crypto::package::ObjectCipher, S3Error> {
        let envelope = envelope.ok_or_else(|| S3Error::new(S3ErrorCode::InternalError, "not encrypted"))?;
        strata_s3::sse::open_envelope(self.kms.as_ref(), envelope, self.customer.as_ref()).await
    }
}

/// Why one operation of a speedtest phase failed (counted as an error of its phase).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OperationError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// Sealing or opening the object failed (the KMS, a key): the S3 error a request got.
    #[error("{0}")]
    Sealing(String),
    /// A GET streamed fewer bytes than the object has.
    #[error("read {got} of {size} bytes")]
    ShortRead { got: u64, size: u64 },
}

impl From<S3Error> for OperationError {
    fn from(e: S3Error) -> Self {
        OperationError::Sealing(e.message)
    }
}

async fn run_node_part(node: &Node, part: &SpeedtestShare) -> Result<SpeedtestResult, S3Error> {
    let sealing = Sealing::new(node, part.sse)?;
    let data = test_data(part.size);
    let load = (part.concurrent, Duration::from_secs_f64(part.duration_secs));
    let (put, (keys, sealed_objects)) = put_phase(node, &data, &part.prefix, load, sealing.as_ref()).await;
    let get = get_phase(node, Arc::new(keys), load, sealing.as_ref()).await;
    clean_up_prefix(node, &part.prefix).await;
    Ok(SpeedtestResult { endpoint: node.config.endpoint.clone(), put, get, sealed_objects })
}

/// Runs this node's share of a speedtest another node started.
pub(crate) async fn serve_share(node: &Node, mut part: SpeedtestShare) -> Result<SpeedtestResult, PeerError> {
    // Every peer gets the same request: its own prefix comes from its address.
    part.prefix = format!(
        "{}-{}",
        part.prefix,
        node.config.endpoint.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    if part.size == 0
        || part.size > strata_types::limits::PUT_OBJECT_SIZE_MAX
        || part.concurrent == 0
        || part.concurrent > 256
    {
        return Err(PeerError::Refused("speedtest parameters out of range".into()));
    }
    if SPEEDTEST_RUNNING.swap(true, Ordering::SeqCst) {
        return Err(PeerError::Refused("a speedtest is already running on this node".into()));
    }
    let result = run_node_part(node, &part).await;
    SPEEDTEST_RUNNING.store(false, Ordering::SeqCst);
    result.map_err(|e| PeerError::Failed(e.message))
}

/// Sums the nodes' throughputs; latencies are the slowest node's, CPU and memory the total.
fn aggregate(results: &[Throughput]) -> Throughput {
    let mut out = Throughput::default();
    for t in results {
        out.mib_per_sec += t.mib_per_sec;
        out.objects_per_sec += t.objects_per_sec;
        out.objects += t.objects;
        out.errors += t.errors;
        out.cpu_percent += t.cpu_percent;
        out.rss_mib += t.rss_mib;
        let l = &mut out.latency_ms;
        l.p50 = l.p50.max(t.latency_ms.p50);
        l.p90 = l.p90.max(t.latency_ms.p90);
        l.p99 = l.p99.max(t.latency_ms.p99);
        l.max = l.max.max(t.latency_ms.max);
        l.p75 = l.p75.max(t.latency_ms.p75);
        l.p95 = l.p95.max(t.latency_ms.p95);
        l.p999 = l.p999.max(t.latency_ms.p999);
        // The fastest operation of any node; the mean weighted by each node's operations.
        l.min = if l.min == 0.0 { t.latency_ms.min } else { l.min.min(t.latency_ms.min) };
        l.mean += t.latency_ms.mean * t.objects as f64;
    }
    if out.objects > 0 {
        out.latency_ms.mean /= out.objects as f64;
    }
    out
}

async fn run_speedtest(admin: &Admin, params: SpeedtestParams) -> Result<SpeedtestReport, S3Error> {
    let node = admin.node.as_ref();
    if matches!(params.sse, Some(SpeedtestSse::S3 | SpeedtestSse::Kms | SpeedtestSse::Dsse))
        && node.kms.is_none()
    {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "An SSE-S3, SSE-KMS or DSSE-KMS speedtest needs a KMS: set STRATA_KMS_SECRET_KEY (or STRATA_KMS_VAULT_ENDPOINT).",
        ));
    }
    let sealing = Sealing::new(node, params.sse)?;
    match node.layer.make_bucket(SPEEDTEST_BUCKET).await {
        Ok(()) | Err(ObjectError::BucketExists) => {}
        Err(e) => return Err(e.into()),
    }
    let data = test_data(params.size);
    let prefix = format!("run-{:x}", strata_types::time::now_nanos());
    let duration = Duration::from_secs_f64(params.duration_secs);
    let mut tried = Vec::new();
    let mut concurrent = params.concurrent;
    if params.autotune {
        // Double the concurrency while PUT throughput still grows by 5 % or more.
        let (mut c, mut best) = (4usize, 0.0f64);
        let step = duration.div_f64(2.0).max(SPEEDTEST_AUTOTUNE_STEP_MIN);
        loop {
            let (t, _) =
                put_phase(node, &data, &format!("{prefix}/tune-{c}"), (c, step), sealing.as_ref()).await;
            tried.push((c, t.mib_per_sec));
            if t.mib_per_sec < best * 1.05 || c >= 256 {
                break;
            }
            (best, concurrent) = (t.mib_per_sec, c);
            c *= 2;
        }
        clean_up_prefix(node, &prefix).await;
    }
    // Every node runs its share at once, each under its own prefix.
    let part = |i: usize| SpeedtestShare {
        size: params.size,
        concurrent,
        duration_secs: params.duration_secs,
        prefix: format!("{prefix}/node-{i}"),
        sse: params.sse,
    };
    let own_part = part(0);
    let own = run_node_part(node, &own_part);
    let mut nodes = match &admin.peers {
        None => vec![own.await?],
        Some(peers) => {
            let share = part(1);
            let timeout = duration * 2 + SPEEDTEST_PEER_SLACK;
            let (own, peers) = tokio::join!(own, peers.speedtest(&share, timeout));
            let mut all = vec![own?];
            for (peer, answer) in peers {
                match answer {
                    Ok(r) => all.push(r),
                    Err(e) => {
                        clean_up(node, &prefix).await;
                        return Err(S3Error::new(
                            S3ErrorCode::InternalError,
                            &format!("node {peer} could not run its part of the speedtest: {e}"),
                        ));
                    }
                }
            }
            all
        }
    };
    clean_up(node, &prefix).await;
    nodes.sort_by(|a, b| a.endpoint.cmp(&b.endpoint));
    let aggregate_put = aggregate(&nodes.iter().map(|n| n.put.clone()).collect::<Vec<_>>());
    let aggregate_get = aggregate(&nodes.iter().map(|n| n.get.clone()).collect::<Vec<_>>());
    Ok(SpeedtestReport { params, autotune: tried, concurrent, aggregate_put, aggregate_get, nodes })
}

/// Clean-up of autotune rounds, keeping the bucket.
async fn clean_up_prefix(node: &Node, prefix: &str) {
    loop {
        let req = ListRequest { prefix: format!("{prefix}/"), max_keys: 1000, ..Default::default() };
        let Ok(page) = node.layer.list_objects(SPEEDTEST_BUCKET, &req).await else { break };
        if page.objects.is_empty() {
            break;
        }
        for o in page.objects {
            if let Err(e) = node.layer.delete_object(SPEEDTEST_BUCKET, &o.key).await {
                tracing::warn!(key = %o.key, error = %e, "speedtest clean-up");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        let p = SpeedtestParams::parse(&q(&[])).expect("defaults");
        assert_eq!((p.size, p.concurrent, p.duration_secs, p.autotune), (64 << 20, 32, 10.0, false));
        let p = SpeedtestParams::parse(&q(&[
            ("size", "1MiB"),
            ("concurrent", "4"),
            ("duration", "2s"),
            ("autotune", "true"),
        ]))
        .expect("given");
        assert_eq!((p.size, p.concurrent, p.duration_secs, p.autotune), (1 << 20, 4, 2.0, true));
        assert_eq!(p.sse, None);
        for (given, sse) in [
            ("s3", SpeedtestSse::S3),
            ("kms", SpeedtestSse::Kms),
            ("dsse", SpeedtestSse::Dsse),
            ("c", SpeedtestSse::C),
        ] {
            assert_eq!(SpeedtestParams::parse(&q(&[("sse", given)])).expect("sse").sse, Some(sse));
        }
        assert_eq!(SpeedtestParams::parse(&q(&[("sse", "none")])).expect("none").sse, None);
        for bad in [
            &[("size", "0")][..],
            &[("size", "6GiB")],
            &[("concurrent", "0")],
            &[("duration", "1h")],
            &[("size", "x")],
            &[("sse", "aes")],
        ] {
            assert!(SpeedtestParams::parse(&q(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(latency(vec![1000, 2000, 3000]).p50, 2.0);
    }
}
