//! What nodes ask each other beside drive and lock calls, as typed calls like those: a state
//! notice ([`PeerCall::Changed`]: reload what another node changed), a node's share of a
//! speedtest, a poll of a node's events for listeners elsewhere (`strata_notify::relay`), and a
//! stop or restart the admin API asks of every node.
//!
//! The calling side is [`PeerNodes`] (every other node); the answering side is this node's
//! [`PeerService`], which the admin API plugs into the [`RpcServer`](crate::RpcServer) once the
//! node serves (bucket notices are answered by the object layer from the start).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use strata_notify::relay::{Batch, ListenPeers, Poll, PollError};
use strata_object::SharedState;
use strata_types::limits::PEER_NOTICE_TIMEOUT;

use crate::client::NodeClient;

/// A call to a peer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PeerCall {
    /// State the peer caches changed: read it again.
    Changed(SharedState),
    /// Run this share of a speedtest and answer its figures.
    Speedtest(SpeedtestShare),
    /// Answer this node's events since the last poll (see `strata_notify::relay`).
    ListenPoll(Poll),
    /// Stop (or, with `restart`, stop and start again) once the requests in flight are
    /// answered, this one first.
    Service { restart: bool },
}

/// A peer's answer.
#[derive(Debug, Serialize, Deserialize)]
pub enum PeerReply {
    Done,
    Speedtest(Box<SpeedtestResult>),
    Listen(Batch),
}

/// Why a peer call failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum PeerError {
    /// The peer has not started serving yet (its deployment is still forming).
    #[error("the node is not serving yet")]
    NotReady,
    /// The peer refused the call as asked (parameters out of range, already busy).
    #[error("refused: {0}")]
    Refused(String),
    /// The peer tried and failed.
    #[error("failed: {0}")]
    Failed(String),
    /// A listen poll the peer refused.
    #[error(transparent)]
    Listen(PollError),
    /// The call did not reach the peer or its answer did not come back (client side only).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// No answer within the call's time-out (client side only).
    #[error("timed out")]
    TimedOut,
    /// The peer answered something other than the call's reply.
    #[error("unexpected answer")]
    Unexpected,
}

/// The server-side encryption a speedtest's objects get (`sse=s3|kms|dsse|c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpeedtestSse {
    S3,
    Kms,
    Dsse,
    C,
}

/// One node's share of a speedtest: PUT then GET under its own prefix, then its objects removed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedtestShare {
    pub size: u64,
    pub concurrent: usize,
    pub duration_secs: f64,
    pub prefix: String,
    #[serde(default)]
    pub sse: Option<SpeedtestSse>,
}

/// Latency percentiles of one phase.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// Also kept for MinIO's speedtest answer (`mc support perf`); absent from older nodes.
    #[serde(default)]
    pub min: f64,
    #[serde(default)]
    pub mean: f64,
    #[serde(default)]
    pub p75: f64,
    #[serde(default)]
    pub p95: f64,
    #[serde(default)]
    pub p999: f64,
}

/// Throughput of one phase (PUT or GET).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Throughput {
    pub mib_per_sec: f64,
    pub objects_per_sec: f64,
    pub objects: u64,
    pub errors: u64,
    /// Milliseconds.
    pub latency_ms: Latency,
    /// Percent of one core (200 = two cores busy) the node used during the phase.
    pub cpu_percent: f64,
    /// Resident memory at the end of the phase.
    pub rss_mib: f64,
}

/// What one node's share of a speedtest measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedtestResult {
    pub endpoint: String,
    pub put: Throughput,
    pub get: Throughput,
    /// Objects of the PUT phase that were stored encrypted (as their metadata says).
    #[serde(default)]
    pub sealed_objects: u64,
}

/// What this node answers its peers (the admin API implements it).
#[async_trait]
pub trait PeerService: Send + Sync {
    /// Reads the IAM state again.
    async fn iam_changed(&self) -> Result<(), PeerError>;
    /// Runs a share of a speedtest.
    async fn speedtest(&self, share: SpeedtestShare) -> Result<SpeedtestResult, PeerError>;
    /// Answers a poll of this node's events.
    async fn listen_poll(&self, poll: Poll) -> Result<Batch, PollError>;
    /// Stops or restarts this node (MinIO's `mc admin service`).
    async fn service(&self, restart: bool) -> Result<(), PeerError>;
}

/// Every other node of the deployment.
pub struct PeerNodes {
    nodes: Vec<Arc<NodeClient>>,
}

impl PeerNodes {
    pub fn new(nodes: Vec<Arc<NodeClient>>) -> Self {
        Self { nodes }
    }

    /// Runs `share` on every other node at once, each within `timeout`; one answer per node.
    pub async fn speedtest(
        &self,
        share: &SpeedtestShare,
        timeout: Duration,
    ) -> Vec<(String, Result<SpeedtestResult, PeerError>)> {
        let call = PeerCall::Speedtest(share.clone());
        join_all(self.nodes.iter().map(|p| {
            let call = &call;
            async move {
                let answer = match p.peer(call, timeout).await {
                    Ok(PeerReply::Speedtest(r)) => Ok(*r),
                    Ok(_) => Err(PeerError::Unexpected),
                    Err(e) => Err(e),
                };
                (p.name.clone(), answer)
            }
        }))
        .await
    }
}

impl PeerNodes {
    /// The other nodes' names.
    pub fn names(&self) -> Vec<String> {
        self.nodes.iter().map(|p| p.name.clone()).collect()
    }

    /// Asks every other node to stop or restart; one answer per node.
    pub async fn service(&self, restart: bool) -> Vec<(String, Result<(), PeerError>)> {
        let call = PeerCall::Service { restart };
        join_all(self.nodes.iter().map(|p| {
            let call = &call;
            async move {
                let answer = match p.peer(call, PEER_NOTICE_TIMEOUT).await {
                    Ok(PeerReply::Done) => Ok(()),
                    Ok(_) => Err(PeerError::Unexpected),
                    Err(e) => Err(e),
                };
                (p.name.clone(), answer)
            }
        }))
        .await
    }
}

#[async_trait]
impl strata_object::Peers for PeerNodes {
    async fn changed(&self, what: SharedState) {
        let call = PeerCall::Changed(what);
        join_all(self.nodes.iter().map(|p| {
            let call = &call;
            async move {
                if let Err(e) = p.peer(call, PEER_NOTICE_TIMEOUT).await {
                    tracing::debug!(node = %p.name, ?what, error = %e, "could not tell the node about a change");
                }
            }
        }))
        .await;
    }
}

#[async_trait]
impl ListenPeers for PeerNodes {
    fn peer_count(&self) -> usize {
        self.nodes.len()
    }

    async fn poll(&self, peer: usize, poll: Poll, timeout: Duration) -> Result<Batch, PollError> {
        let node = self.nodes.get(peer).ok_or_else(|| PollError::Unanswered(format!("no node {peer}")))?;
        match node.peer(&PeerCall::ListenPoll(poll), timeout).await {
            Ok(PeerReply::Listen(batch)) => Ok(batch),
            Ok(_) => Err(PollError::Unanswered(PeerError::Unexpected.to_string())),
            Err(PeerError::Listen(e)) => Err(e),
            Err(e) => Err(PollError::Unanswered(e.to_string())),
        }
    }
}
