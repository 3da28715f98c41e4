//! Multi-client runs: `strata bench serve` agents generate load on command, and
//! `strata bench OP --clients a:7761,b:7761` drives them all with the same run and merges what
//! they measured (the way a cluster is benchmarked from many machines).
//!
//! The controller first asks every agent to prepare (make the bucket, write the objects reads
//! need), then gives them all one start time, so their measured windows coincide. An agent runs
//! one run at a time. It trusts whoever reaches its port (it only ever sends the requests a run
//! describes, with the credentials the run carries): bind it to a test network.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::report::{
    histogram_percentiles, merge_histograms, ClientReport, OpReport, ProcessUsage, Report, Sample,
};
use crate::run::{self, BenchArgs, Op, Prepared};
use strata_types::limits::BENCH_AGENT_COMMAND_SIZE_MAX;

#[derive(Serialize, Deserialize)]
struct PrepareCommand {
    op: Op,
    args: BenchArgs,
    /// Goes into the agent's key prefix, so agents never share objects.
    tag: String,
}

#[derive(Serialize, Deserialize)]
struct StartCommand {
    /// When to start the workers, Unix milliseconds.
    start_at_ms: u64,
}

type Slot = Arc<Mutex<Option<Prepared>>>;

fn now_ms() -> u64 {
    strata_types::time::now_nanos() / 1_000_000
}

fn reply(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

async fn handle(slot: Slot, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, BENCH_AGENT_COMMAND_SIZE_MAX).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return reply(StatusCode::BAD_REQUEST, format!("reading the command: {e}").into_bytes()),
    };
    let result: Result<Vec<u8>> = async {
        match (parts.method, parts.uri.path()) {
            (Method::POST, "/prepare") => {
                let cmd: PrepareCommand = serde_json::from_slice(&body).context("a prepare command")?;
                let mut slot = slot.lock().await;
                if let Some(old) = slot.take() {
                    run::finish(old).await?;
                }
                *slot = Some(run::prepare(cmd.op, cmd.args, &cmd.tag).await?);
                Ok(b"{\"ready\":true}".to_vec())
            }
            (Method::POST, "/start") => {
                let cmd: StartCommand = serde_json::from_slice(&body).context("a start command")?;
                let prepared = slot.lock().await.take().context("no run is prepared")?;
                let wait = cmd.start_at_ms.saturating_sub(now_ms());
                tokio::time::sleep(
                    Duration::from_millis(wait).min(strata_types::limits::BENCH_AGENT_WAIT_MAX),
                )
                .await;
                let report = run::execute(&prepared).await;
                run::finish(prepared).await?;
                Ok(serde_json::to_vec(&report?)?)
            }
            (m, p) => bail!("no such command: {m} {p}"),
        }
    }
    .await;
    match result {
        Ok(b) => reply(StatusCode::OK, b),
        Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}").into_bytes()),
    }
}

/// `strata bench serve`: waits for runs from a controller.
pub async fn serve(address: SocketAddr) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    println!("strata bench agent listening on {}", listener.local_addr()?);
    let slot: Slot = Arc::new(Mutex::new(None));
    loop {
        let (stream, _) = listener.accept().await?;
        let slot = slot.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let slot = slot.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(slot, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn call(
    client: &HyperClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    agent: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<Bytes> {
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{agent}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))?;
    let resp = client.request(req).await.with_context(|| format!("agent {agent}"))?;
    let status = resp.status();
    let body = resp.into_body().collect().await.with_context(|| format!("agent {agent}"))?.to_bytes();
    if !status.is_success() {
        bail!("agent {agent}: {}", String::from_utf8_lossy(&body));
    }
    Ok(body)
}

/// Drives every agent in `clients` with one run and merges their reports.
pub async fn drive_clients(op: Op, args: BenchArgs, clients: &str) -> Result<Report> {
    let agents: Vec<String> =
        clients.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect();
    if agents.is_empty() {
        bail!("--clients names no agent");
    }
    let client = HyperClient::builder(TokioExecutor::new()).build_http();
    let mut agent_args = args.clone();
    (agent_args.clients, agent_args.json, agent_args.chart, agent_args.server_pid) = (None, None, None, None);
    eprintln!("preparing {} agents ...", agents.len());
    let prepares = agents.iter().enumerate().map(|(i, a)| {
        let cmd = PrepareCommand { op, args: agent_args.clone(), tag: format!("c{i}-") };
        let (client, a) = (&client, a.clone());
        async move { call(client, &a, "/prepare", serde_json::to_vec(&cmd)?).await }
    });
    for r in futures_util::future::join_all(prepares).await {
        r?;
    }
    let start = StartCommand { start_at_ms: now_ms() + 500 };
    let body = serde_json::to_vec(&start)?;
    eprintln!("running on {} agents ...", agents.len());
    let server_pid = args.server_pid.map(|p| p.to_string());
    let server_before = server_pid.as_deref().and_then(crate::run::cpu_ticks);
    let started = std::time::Instant::now();
    let runs = agents.iter().map(|a| {
        let (client, body) = (&client, body.clone());
        async move {
            let bytes = call(client, a, "/start", body).await?;
            let report: Report =
                serde_json::from_slice(&bytes).with_context(|| format!("agent {a}'s report"))?;
            Ok::<_, anyhow::Error>((a.clone(), report))
        }
    });
    let mut reports = Vec::new();
    for r in futures_util::future::join_all(runs).await {
        reports.push(r?);
    }
    let mut merged = merge(op, &args, reports)?;
    merged.server =
        server_pid.as_deref().map(|p| crate::run::process_usage(server_before, p, started.elapsed()));
    Ok(merged)
}

/// One report of the whole run: throughputs add up, latencies merge through their histograms.
fn merge(op: Op, args: &BenchArgs, reports: Vec<(String, Report)>) -> Result<Report> {
    let first = reports.first().map(|(_, r)| r.clone()).context("no agent reported")?;
    let mut ops: BTreeMap<String, OpReport> = BTreeMap::new();
    let mut timeline: Vec<Sample> = Vec::new();
    let mut clients = Vec::new();
    let mut bench = ProcessUsage::default();
    for (address, r) in reports {
        for o in &r.ops {
            let m = ops.entry(o.op.clone()).or_insert_with(|| OpReport {
                count: 0,
                errors_total: 0,
                errors: BTreeMap::new(),
                seconds: 0.0,
                mib_per_sec: 0.0,
                ops_per_sec: 0.0,
                items_per_sec: 0.0,
                latency_histogram: vec![],
                ttfb_histogram: vec![],
                ..o.clone()
            });
            m.count += o.count;
            m.errors_total += o.errors_total;
            for (code, n) in &o.errors {
                *m.errors.entry(code.clone()).or_default() += n;
            }
            m.seconds = m.seconds.max(o.seconds);
            m.mib_per_sec += o.mib_per_sec;
            m.ops_per_sec += o.ops_per_sec;
            m.items_per_sec += o.items_per_sec;
            m.latency_histogram = merge_histograms(&m.latency_histogram, &o.latency_histogram);
            m.ttfb_histogram = merge_histograms(&m.ttfb_histogram, &o.ttfb_histogram);
        }
        for (i, s) in r.timeline.iter().enumerate() {
            match timeline.get_mut(i) {
                Some(t) => {
                    t.mib_per_sec += s.mib_per_sec;
                    t.ops_per_sec += s.ops_per_sec;
                    t.errors += s.errors;
                }
                None => timeline.push(s.clone()),
            }
        }
        bench.cpu_percent += r.bench.cpu_percent;
        clients.push(ClientReport { address, ops: r.ops, bench: r.bench });
    }
    let ops = ops
        .into_values()
        .map(|mut o| {
            o.latency_ms = histogram_percentiles(&o.latency_histogram);
            o.ttfb_ms = histogram_percentiles(&o.ttfb_histogram);
            o
        })
        .collect();
    Ok(Report {
        operation: op.name().into(),
        concurrency: args.concurrent * clients.len(),
        duration_secs: clients.iter().flat_map(|c| c.ops.iter().map(|o| o.seconds)).fold(0.0, f64::max),
        ops,
        bench,
        server: None,
        timeline,
        clients,
        ..first
    })
}
