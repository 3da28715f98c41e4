//! Inter-node RPC: what makes several `strata` processes one deployment.
//!
//! Served on the S3 port under [`PREFIX`] (HTTP/2, TLS when the server has certificates), every
//! request signed with a key derived from the root credentials ([`auth`]). Three services:
//! - remote drives ([`RemoteDrive`] on the calling side, [`RpcServer`] on the drive's node):
//!   the whole `Drive` trait, shard files streamed; the calls of one moment to one node's drives
//!   travel in one request ([`NodeClient::drive_call`]);
//! - namespace locks granted by a quorum of nodes with leases ([`lock`]);
//! - peer calls ([`peer`]): state notices (bucket records or the IAM state changed: reload
//!   them), speedtest shares, and the polls that carry events to listeners on other nodes.
//!
//! The object layer never sees any of this: it gets `Drive`s, a `Locker` and `Peers`.

pub mod auth;
pub mod client;
mod fence;
pub mod lock;
pub mod peer;
mod remote;
mod server;
pub mod wire;

pub use auth::RpcKey;
pub use client::{ClientConfig, NodeClient};
pub use fence::FencedLocal;
pub use lock::{Admitted, LockNode, LockServer, LockTimings, QuorumLocker};
pub use peer::{PeerNodes, PeerService};
pub use remote::RemoteDrive;
pub use server::RpcServer;

/// The path prefix of every inter-node request.
pub const PREFIX: &str = "/_strata/rpc/v1/";
