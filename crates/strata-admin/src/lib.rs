//! The admin API, under [`ADMIN_PREFIX`] (a path no S3 bucket can have: bucket names have no
//! `_`): the operations that manage a deployment rather than its data, for `strata admin`, the
//! console and the MinIO-compatible admin API to share. Every request must be SigV4- (or SigV2-) signed with the root credentials, or by a user
//! whose policies allow the operation's `admin:` action (`consoleAdmin`, `admin:*`); anything
//! else is `AccessDenied`. Answers are JSON. The IAM operations are in [`iam`], the KMS ones in
//! [`kms`], the speedtest in [`speedtest`]; [`observe`] serves `/metrics` and the cluster health
//! check, [`minio_metrics`] and [`minio_metrics_v3`] MinIO's metric paths and names.
//!
//! This crate stands on the S3 crate's request context (`Node`, authentication, errors) and the
//! system services; the front door (`strata-server`) routes to it. It must never import the
//! front door.
//!
//! - `GET heal/status`, `POST heal/start?bucket=&prefix=&deep=true`, `POST heal/priority?value=low`:
//!   the healer's progress (per set and drive), a heal scan, and how much I/O healing may take.
//! - `GET metrics/summary`: this node's request totals (answered, errors, bytes in and out, in
//!   flight) with the time, for rates (`admin:ServerInfo`).
//! - `GET logs/recent`: the warnings and errors this node logged last (`admin:ConsoleLog`);
//!   `GET notify/targets`: the notification targets and their undelivered records
//!   (`admin:ServerInfo`).
//! - `POST /_strata/admin/v1/speedtest?size=64MiB&concurrent=32&duration=10s&autotune=false`:
//!   see [`speedtest`].

pub mod iam;
pub mod kms;
pub mod madmin;
mod minio_buckets;
pub mod minio_metrics;
pub mod minio_metrics_v3;
pub mod observe;
pub mod speedtest;

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Serialize;
use strata_notify::relay::{Batch, Poll, PollError};
use strata_object::{BodyError, HealPriority, HealScope};
use strata_rpc::peer::{PeerError, PeerNodes, PeerService, SpeedtestResult, SpeedtestShare};
use strata_s3::access::{self, Access};
use strata_s3::body::ResponseBody;
use strata_s3::context::ServiceAction;
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::sigv4::Payload;
use strata_s3::{Node, Reply};
use strata_types::limits::ADMIN_BODY_SIZE_MAX;

pub const ADMIN_PREFIX: &str = "/_strata/admin/v1/";

/// The admin API's view of the node: its request context and, over several nodes, the others.
pub struct Admin {
    pub node: Arc<Node>,
    /// The deployment's other nodes (distributed mode), for operations that span them.
    pub peers: Option<Arc<PeerNodes>>,
}

/// What this node answers its peers.
#[async_trait]
impl PeerService for Admin {
    async fn iam_changed(&self) -> Result<(), PeerError> {
        let node = &self.node;
        node.iam.load(&node.layer).await.map(drop).map_err(|e| PeerError::Failed(e.to_string()))
    }

    async fn speedtest(&self, share: SpeedtestShare) -> Result<SpeedtestResult, PeerError> {
        speedtest::serve_share(&self.node, share).await
    }

    async fn listen_poll(&self, poll: Poll) -> Result<Batch, PollError> {
        self.node.listen.serve_poll(poll).await
    }

    async fn service(&self, restart: bool) -> Result<(), PeerError> {
        let action = if restart { ServiceAction::Restart } else { ServiceAction::Stop };
        tracing::info!(?action, "asked by another node of the deployment");
        self.node.service.request_after_answer(action);
        Ok(())
    }
}

pub(crate) fn json_reply<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    let text = serde_json::to_vec_pretty(value).unwrap_or_default();
    let mut r = Reply::empty(status)
        .header("content-type", "application/json")
        .header("content-length", &text.len().to_string());
    r.body = ResponseBody::Full(Some(Bytes::from(text)));
    r
}

/// Serves one admin request (the caller saw the path start with [`ADMIN_PREFIX`]).
pub async fn serve(
    admin: &Admin,
    parts: &http::request::Parts,
    body: Incoming,
) -> (String, Result<Reply, S3Error>) {
    let node = admin.node.as_ref();
    let Some(op) = parts.uri.path().strip_prefix(ADMIN_PREFIX) else {
        return ("Admin".into(), Err(S3Error::new(S3ErrorCode::InvalidRequest, "unknown admin path")));
    };
    let name = format!("Admin{}", op.split('/').map(capitalise).collect::<String>());
    let query = strata_s3::router::parse_query(parts.uri.query().unwrap_or(""));
    let body = match authorize(node, parts, op, &query, body).await {
        Ok(b) => b,
        Err(e) => return (name, Err(e)),
    };
    if op.starts_with("iam/") {
        return (name, crate::iam::serve(node, &parts.method, op, &query, &body).await);
    }
    if op.starts_with("kms/") {
        return (name, crate::kms::serve(node, &parts.method, op, &query).await);
    }
    let param = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let result = match (&parts.method, op) {
        (&http::Method::POST, "speedtest") => match speedtest::SpeedtestParams::parse(&query) {
            Ok(p) => speedtest::speedtest(admin, p).await,
            Err(e) => Err(e),
        },
        (&http::Method::GET, "metrics/summary") => Ok(json_reply(StatusCode::OK, &metrics_summary(node))),
        (&http::Method::GET, "logs/recent") => Ok(json_reply(StatusCode::OK, &recent_logs(node))),
        (&http::Method::GET, "notify/targets") => Ok(json_reply(StatusCode::OK, &notify_targets(node))),
        (&http::Method::GET, "heal/status") => {
            Ok(json_reply(StatusCode::OK, &node.layer.heal_status().await))
        }
        (&http::Method::POST, "heal/start") => {
            let scope = HealScope {
                bucket: param("bucket").filter(|b| !b.is_empty()).map(str::to_owned),
                prefix: param("prefix").unwrap_or("").to_owned(),
                deep: param("deep").is_some_and(|d| d == "true" || d == "1"),
            };
            match scope.bucket.as_deref().map(|b| node.layer.bucket_info(b)) {
                Some(Err(e)) => Err(e.into()),
                _ => {
                    let (id, queued) = match node.layer.start_heal_scan(scope) {
                        strata_object::ScanStart::Started(id) => (id, false),
                        strata_object::ScanStart::Queued(id) => (id, true),
                    };
                    let reply = serde_json::json!({ "id": id, "queued": queued, "status": node.layer.heal_status().await });
                    Ok(json_reply(StatusCode::OK, &reply))
                }
            }
        }
        (&http::Method::GET, "pool/status") => {
            let pools = node.layer.pool_status().await;
            let rebalance = node.layer.rebalance_status().await;
            Ok(json_reply(StatusCode::OK, &serde_json::json!({ "pools": pools, "rebalance": rebalance })))
        }
        (&http::Method::POST, "pool/rebalance") => {
            let done = match param("stop") {
                Some("true" | "1") => node.layer.stop_rebalance().await,
                _ => node.layer.start_rebalance().await,
            };
            done.map(|r| json_reply(StatusCode::OK, &r)).map_err(Into::into)
        }
        (&http::Method::POST, "pool/decommission" | "pool/cancel") => {
            match param("pool").and_then(|p| p.parse::<usize>().ok()) {
                None => Err(S3Error::new(S3ErrorCode::InvalidArgument, "pool must be a pool's number")),
                Some(pool) => {
                    let done = match op {
                        "pool/decommission" => node.layer.start_drain(pool).await,
                        _ => node.layer.cancel_drain(pool).await,
                    };
                    done.map(|d| json_reply(StatusCode::OK, &d)).map_err(Into::into)
                }
            }
        }
        (&http::Method::POST, "heal/priority") => match param("value").and_then(HealPriority::parse) {
            Some(p) => {
                node.layer.healer().set_priority(p);
                Ok(json_reply(StatusCode::OK, &node.layer.healer().status()))
            }
            None => Err(S3Error::new(S3ErrorCode::InvalidArgument, "value must be low, normal or high")),
        },
        _ => Err(S3Error::new(S3ErrorCode::InvalidRequest, &format!("unknown admin operation {op:?}"))),
    };
    (name, result)
}

/// This node's request totals now (the console's overview turns two of them into rates).
fn metrics_summary(node: &Node) -> serde_json::Value {
    let m = &node.metrics;
    serde_json::json!({
        "time": strata_types::time::now_nanos() / 1_000_000,
        "requests": m.answered.get(),
        "errors": m.answered_errors.get(),
        "receivedBytes": m.received_bytes.get(),
        "sentBytes": m.sent_bytes.get(),
        "inFlight": m.requests_in_flight.get(),
    })
}

/// The warnings and errors this node logged last (newest last).
fn recent_logs(node: &Node) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = node
        .logs
        .recent(strata_types::limits::CONSOLE_RECENT_LOGS)
        .iter()
        .map(|e| serde_json::json!({ "time": e.time / 1_000_000, "level": e.level.name(), "source": e.target, "message": e.message }))
        .collect();
    serde_json::json!({ "entries": entries })
}

/// The notification targets and the records each still has to deliver.
fn notify_targets(node: &Node) -> serde_json::Value {
    let targets: Vec<serde_json::Value> = match &node.notify {
        None => Vec::new(),
        Some(n) => n
            .arns()
            .into_iter()
            .map(|arn| {
                let depth = n.queue(&arn).map_or(0, |q| q.depth());
                serde_json::json!({ "arn": arn, "queued": depth })
            })
            .collect(),
    };
    serde_json::json!({ "targets": targets })
}

/// The admin action of a non-IAM operation.
fn action(op: &str) -> Option<&'static str> {
    match op {
        "speedtest" => Some("admin:Speedtest"),
        "heal/status" | "heal/start" | "heal/priority" => Some("admin:Heal"),
        "pool/status" => Some("admin:ServerInfo"),
        "pool/decommission" | "pool/cancel" => Some("admin:Decommission"),
        "pool/rebalance" => Some("admin:Rebalance"),
        "metrics/summary" | "notify/targets" => Some("admin:ServerInfo"),
        "logs/recent" => Some("admin:ConsoleLog"),
        _ => None,
    }
}

/// Authenticates an admin request, checks the caller may do the operation (root, or a policy
/// allowing its `admin:` action), and reads its body (small; its signed hash checked).
async fn authorize(
    node: &Node,
    parts: &http::request::Parts,
    op: &str,
    query: &[(String, String)],
    body: Incoming,
) -> Result<Bytes, S3Error> {
    let action = crate::iam::action(&parts.method, op, query)
        .or_else(|| crate::kms::action(&parts.method, op))
        .or_else(|| action(op));
    let authorized = authorize_in(node, parts, action, &node.config.region, body).await?;
    Ok(authorized.body)
}

/// An admin request authenticated and allowed, with its body.
pub(crate) struct Authorized {
    pub body: Bytes,
    /// The signer's access key and secret key.
    pub access_key: String,
    pub secret: String,
}

/// [`authorize`] for the admin `action` of a request signed for `region`.
pub(crate) async fn authorize_in(
    node: &Node,
    parts: &http::request::Parts,
    action: Option<&str>,
    region: &str,
    body: Incoming,
) -> Result<Authorized, S3Error> {
    let (access_key, secret, payload) = authorize_caller(node, parts, action, region)?;
    let limited = http_body_util::Limited::new(body, ADMIN_BODY_SIZE_MAX);
    let collected = tokio::time::timeout(node.config.idle_timeout, limited.collect()).await;
    let body = match collected {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(_)) => {
            return Err(S3Error::new(S3ErrorCode::EntityTooLarge, "The admin request body is too large."))
        }
        Err(_) => return Err(BodyError::TimedOut.into()),
    };
    match &payload {
        Payload::Unsigned => Ok(Authorized { body, access_key, secret }),
        Payload::Sha256(h) if *h == strata_sign::sha256_hex(&body) => {
            Ok(Authorized { body, access_key, secret })
        }
        Payload::Sha256(_) => Err(BodyError::ContentSha256Mismatch.into()),
        _ => Err(S3Error::new(S3ErrorCode::InvalidRequest, "The admin API takes no streaming bodies.")),
    }
}

/// The request's signer, when it may do the admin `action` (the root user, or a policy
/// allowing it): its access key, secret key, and the payload its signature covers. The body
/// is not read.
pub(crate) fn authorize_caller(
    node: &Node,
    parts: &http::request::Parts,
    action: Option<&str>,
    region: &str,
) -> Result<(String, String, Payload), S3Error> {
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let (access, verified) = Access::authenticate_in(node, parts, now, None, region)?;
    let Some(verified) = verified else { return Err(access::denied()) };
    let secret = access.secret_of(node, parts, &verified.access_key).ok_or_else(access::denied)?;
    let allowed = access.is_root()
        || action.is_some_and(|a| access.allows(a, None, &strata_iam::ConditionValues::new(), None));
    if !allowed {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "The admin API needs the root credentials or a policy allowing the operation's admin: action.",
        ));
    }
    Ok((verified.access_key.clone(), secret, verified.payload.clone()))
}

pub(crate) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}
