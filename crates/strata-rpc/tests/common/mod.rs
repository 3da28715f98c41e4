//! Several nodes in one process: each an [`RpcServer`] with its own drives and lock table,
//! served over HTTP/2 on a port of 127.0.0.1, reached through real [`NodeClient`]s. An object
//! layer can be built on any node, as the binary wires it.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use strata_drive::{Drive, LocalDrive};
use strata_object::{BodyError, BodyReader, Cluster, DriveSlot, LayerOptions, ObjectLayer, Peers};
use strata_rpc::{
    ClientConfig, FencedLocal, LockNode, LockServer, LockTimings, NodeClient, QuorumLocker, RemoteDrive,
    RpcKey, RpcServer,
};
use uuid::Uuid;

pub struct Node {
    pub addr: String,
    pub rpc: Arc<RpcServer>,
    pub locks: Arc<LockServer>,
    /// Drive paths, as peers name them.
    pub paths: Vec<String>,
    pub drives: Vec<Arc<LocalDrive>>,
    serving: tokio::task::JoinHandle<()>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

pub struct TestCluster {
    pub dir: tempfile::TempDir,
    pub key: RpcKey,
    pub nodes: Vec<Node>,
}

struct NoPeers;

#[async_trait]
impl Peers for NoPeers {
    async fn changed(&self, _: strata_object::SharedState) {}
}

async fn serve(listener: tokio::net::TcpListener, rpc: Arc<RpcServer>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { return };
        let rpc = rpc.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let rpc = rpc.clone();
                async move { Ok::<_, std::convert::Infallible>(rpc.handle(req).await.map(Full::new)) }
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl TestCluster {
    pub async fn start(node_count: usize, drives_per_node: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = RpcKey::derive("admin", "admin-password");
        let mut nodes = Vec::new();
        for n in 0..node_count {
            let mut drives = Vec::new();
            let mut paths = Vec::new();
            let mut by_path: HashMap<String, Arc<dyn Drive>> = HashMap::new();
            for d in 0..drives_per_node {
                let path = dir.path().join(format!("n{n}d{d}"));
                let drive = Arc::new(LocalDrive::open(&path).expect("open drive"));
                drive.write_format(b"{}".to_vec()).await.expect("format");
                let path = path.to_string_lossy().into_owned();
                by_path.insert(path.clone(), drive.clone());
                paths.push(path);
                drives.push(drive);
            }
            let locks = Arc::new(LockServer::default());
            let rpc = Arc::new(RpcServer::new(key.clone(), by_path, locks.clone()));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("address").to_string();
            let serving = tokio::spawn(serve(listener, rpc.clone()));
            nodes.push(Node { addr, rpc, locks, paths, drives, serving });
        }
        Self { dir, key, nodes }
    }

    /// A new client of node `to`, as another node reaches it.
    pub fn client(&self, to: usize, timeout: Duration) -> Arc<NodeClient> {
        let config = ClientConfig {
            key: self.key.clone(),
            tls: None,
            local_ip: None,
            timeout,
            connect_timeout: Duration::from_secs(2),
        };
        NodeClient::new(&self.nodes[to].addr, &config)
    }

    /// The object layer of node `on` (its own drives local, the others' remote), with bucket `b`
    /// when `make_bucket`; and its clients of the other nodes, by node index (`None` for itself).
    pub async fn layer(
        &self,
        on: usize,
        timeout: Duration,
        make_bucket: bool,
    ) -> (ObjectLayer, Vec<Option<Arc<NodeClient>>>) {
        self.layer_with(on, timeout, make_bucket, |d| d).await
    }

    /// [`Self::layer`] with each drive passed through `wrap` (a `FaultyDrive`, say).
    pub async fn layer_with(
        &self,
        on: usize,
        timeout: Duration,
        make_bucket: bool,
        wrap: impl Fn(Arc<dyn Drive>) -> Arc<dyn Drive>,
    ) -> (ObjectLayer, Vec<Option<Arc<NodeClient>>>) {
        let clients: Vec<Option<Arc<NodeClient>>> =
            (0..self.nodes.len()).map(|n| (n != on).then(|| self.client(n, timeout))).collect();
        let mut slots: Vec<DriveSlot> = Vec::new();
        let mut lock_nodes = Vec::new();
        for (node, client) in self.nodes.iter().zip(&clients) {
            match client {
                None => {
                    // As the binary wires them: this node's drives fenced by its lock table.
                    slots.extend(node.drives.iter().map(|d| {
                        Some(
                            wrap(Arc::new(FencedLocal::new(d.clone(), node.locks.clone())) as Arc<dyn Drive>),
                        )
                    }));
                    lock_nodes.push(LockNode::Local(node.locks.clone()));
                }
                Some(c) => {
                    slots.extend(
                        node.paths
                            .iter()
                            .map(|p| Some(wrap(Arc::new(RemoteDrive::new(c.clone(), p)) as Arc<dyn Drive>))),
                    );
                    lock_nodes.push(LockNode::Remote(c.clone()));
                }
            }
        }
        let parity = slots.len() / 2;
        let cluster = Cluster {
            locker: Arc::new(QuorumLocker::new(lock_nodes, LockTimings::for_rpc_timeout(timeout))),
            peers: Arc::new(NoPeers),
            node: self.nodes[on].addr.clone(),
        };
        let options = LayerOptions { drive_op_timeout: Duration::from_secs(30), ..Default::default() };
        let layer =
            ObjectLayer::new_with(Uuid::from_u128(7), vec![vec![slots]], parity, Some(cluster), options)
                .await
                .expect("object layer");
        if make_bucket {
            layer.make_bucket("b").await.expect("bucket");
        }
        (layer, clients)
    }
}

pub struct VecBody(pub Option<Bytes>);

#[async_trait]
impl BodyReader for VecBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        Ok(self.0.take())
    }
    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

pub async fn read_all(l: &ObjectLayer, key: &str) -> Result<Vec<u8>, strata_object::ObjectError> {
    read_in(l, "b", key).await
}

/// The current version of `bucket`/`key`, whole.
pub async fn read_in(
    l: &ObjectLayer,
    bucket: &str,
    key: &str,
) -> Result<Vec<u8>, strata_object::ObjectError> {
    l.open_object(bucket, key, true).await?.read_whole().await
}
