//! Inter-node RPC: what makes several `strata` processes one deployment.
//!
//! Served on the S3 port under [`PREFIX`] (HTTP/2, TLS when the server has certificates), every
//! request signed with a key derived from the root credentials ([`auth`]). Three services:
//! - remote drives ([`RemoteDrive`] on the calling side, [`RpcServer`] on the drive's node):
//!   the whole `Drive` trait, shard files streamed; the calls of one moment to one node's drives
//!   travel in one request ([`NodeClient::drive_call`]);
//! - namespace locks granted by a quorum of nodes with leases ([`lock`]);
//! - peer notices (bucket metadata changed: reload it).
//!
//! The object layer never sees any of this: it gets `Drive`s, a `Locker` and `Peers`.

pub mod auth;
pub mod client;
mod fence;
pub mod lock;
mod remote;
mod server;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;

pub use auth::RpcKey;
pub use client::{ClientConfig, NodeClient};
pub use fence::FencedLocal;
pub use lock::{Admitted, LockNode, LockServer, LockTimings, QuorumLocker};
pub use remote::RemoteDrive;
pub use server::{AdminHook, RpcServer};

/// The path prefix of every inter-node request.
pub const PREFIX: &str = "/_strata/rpc/v1/";

/// The other nodes, told about cluster state changes.
pub struct PeerNotifier {
    pub peers: Vec<Arc<NodeClient>>,
}

#[async_trait]
impl strata_object::Peers for PeerNotifier {
    async fn buckets_changed(&self) {
        let call = wire::encode(&wire::PeerCall::BucketsChanged);
        join_all(self.peers.iter().map(|p| {
            let call = call.clone();
            async move {
                let sent = tokio::time::timeout(
                    Duration::from_secs(5),
                    p.call::<()>(&format!("{PREFIX}peer"), call),
                )
                .await;
                if !matches!(sent, Ok(Ok(()))) {
                    tracing::debug!(node = %p.name, "could not tell the node about a bucket change");
                }
            }
        }))
        .await;
    }
}
