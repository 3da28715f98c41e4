//! Namespace locks over several nodes.
//!
//! Every node keeps a [`LockServer`]: its table of granted locks, each with a lease. A
//! [`QuorumLocker`] asks every node at once and holds the lock when enough of them grant it:
//! exclusive needs a majority (n/2+1), shared needs n/2, so an exclusive and a shared lock always
//! meet on at least one node, while reads keep working with half the nodes down. The holder
//! refreshes its lease while it holds the lock; a holder that dies stops refreshing and its
//! grants expire, so a node dying with a lock never blocks a key for longer than one lease. When
//! too few nodes grant, the grants are given back and the locker retries after a random pause
//! (so two contenders do not retry in lockstep); when too few nodes are even reachable it fails
//! at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::join_all;
use strata_object::{LockGuard, Locker, ObjectError};
use uuid::Uuid;

use crate::client::NodeClient;
use crate::wire::{encode, LockCall};
use crate::PREFIX;

/// One node's granted locks.
#[derive(Default)]
pub struct LockServer {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// resource → holders (owner, exclusive, lease end).
    resources: HashMap<u64, Vec<(Uuid, bool, Instant)>>,
    /// owner → resource, for refresh and release.
    owners: HashMap<Uuid, u64>,
}

impl LockServer {
    pub fn serve(&self, call: LockCall) -> bool {
        let Ok(mut t) = self.table.lock() else { return false };
        let now = Instant::now();
        match call {
            LockCall::Acquire { resource, owner, exclusive, lease_ms } => {
                let holders = t.resources.entry(resource).or_default();
                let expired: Vec<Uuid> = holders.iter().filter(|h| h.2 <= now).map(|h| h.0).collect();
                holders.retain(|h| h.2 > now);
                let granted = if exclusive { holders.is_empty() } else { holders.iter().all(|h| !h.1) };
                if granted {
                    holders.push((owner, exclusive, now + Duration::from_millis(lease_ms)));
                }
                if holders.is_empty() {
                    t.resources.remove(&resource);
                }
                for o in expired {
                    t.owners.remove(&o);
                }
                if granted {
                    t.owners.insert(owner, resource);
                }
                granted
            }
            LockCall::Refresh { owner, lease_ms } => {
                let Some(&resource) = t.owners.get(&owner) else { return false };
                let Some(holders) = t.resources.get_mut(&resource) else { return false };
                match holders.iter_mut().find(|h| h.0 == owner && h.2 > now) {
                    Some(h) => {
                        h.2 = now + Duration::from_millis(lease_ms);
                        true
                    }
                    None => false,
                }
            }
            LockCall::Release { owner } => {
                let Some(resource) = t.owners.remove(&owner) else { return false };
                if let Some(holders) = t.resources.get_mut(&resource) {
                    holders.retain(|h| h.0 != owner);
                    if holders.is_empty() {
                        t.resources.remove(&resource);
                    }
                }
                true
            }
        }
    }

    /// Locks currently granted (expired ones included until touched), for tests and metrics.
    pub fn granted(&self) -> usize {
        self.table.lock().map(|t| t.owners.len()).unwrap_or(0)
    }
}

/// Where a lock request goes: this node's table directly, or a peer over RPC.
#[derive(Clone)]
pub enum LockNode {
    Local(Arc<LockServer>),
    Remote(Arc<NodeClient>),
}

impl LockNode {
    /// `Some(granted)`, or `None` when the node did not answer.
    async fn ask(&self, call: LockCall) -> Option<bool> {
        match self {
            LockNode::Local(s) => Some(s.serve(call)),
            LockNode::Remote(n) => n.call::<bool>(&format!("{PREFIX}lock"), encode(&call)).await.ok(),
        }
    }
}

/// Lease length and waits of a [`QuorumLocker`].
#[derive(Debug, Clone, Copy)]
pub struct LockTimings {
    pub lease: Duration,
    /// How long to keep retrying a lock others hold.
    pub wait: Duration,
}

impl Default for LockTimings {
    fn default() -> Self {
        Self { lease: Duration::from_secs(10), wait: Duration::from_secs(30) }
    }
}

pub struct QuorumLocker {
    nodes: Vec<LockNode>,
    timings: LockTimings,
}

impl QuorumLocker {
    pub fn new(nodes: Vec<LockNode>, timings: LockTimings) -> Self {
        Self { nodes, timings }
    }

    fn quorum(&self, exclusive: bool) -> usize {
        let n = self.nodes.len();
        if exclusive {
            n / 2 + 1
        } else {
            n.div_ceil(2)
        }
    }

    async fn ask_all(nodes: &[LockNode], call: impl Fn() -> LockCall) -> Vec<Option<bool>> {
        join_all(nodes.iter().map(|n| n.ask(call()))).await
    }

    /// Gives `owner`'s grants back: at once here, batched with other releases for peers.
    fn release(nodes: &[LockNode], owner: Uuid) {
        for n in nodes {
            match n {
                LockNode::Local(s) => {
                    s.serve(LockCall::Release { owner });
                }
                LockNode::Remote(c) => c.defer(|b| b.releases.push(owner)),
            }
        }
    }
}

/// Releases on drop and refreshes the lease while held.
struct Held {
    owner: Uuid,
    nodes: Vec<LockNode>,
    refresher: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.refresher.abort();
        QuorumLocker::release(&self.nodes, self.owner);
    }
}

#[async_trait]
impl Locker for QuorumLocker {
    async fn lock(&self, hash: u64, exclusive: bool) -> Result<LockGuard, ObjectError> {
        let quorum = self.quorum(exclusive);
        let lease_ms = u64::try_from(self.timings.lease.as_millis()).unwrap_or(u64::MAX);
        let deadline = Instant::now() + self.timings.wait;
        let mut attempt = 0u32;
        loop {
            let owner = Uuid::new_v4();
            let answers = Self::ask_all(&self.nodes, || LockCall::Acquire {
                resource: hash,
                owner,
                exclusive,
                lease_ms,
            })
            .await;
            let granted = answers.iter().filter(|a| **a == Some(true)).count();
            let reachable = answers.iter().filter(|a| a.is_some()).count();
            if granted >= quorum {
                let nodes = self.nodes.clone();
                let refresh = self.timings.lease / 3;
                let refresher = tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(refresh).await;
                        let kept = Self::ask_all(&nodes, || LockCall::Refresh { owner, lease_ms }).await;
                        if kept.iter().filter(|a| **a == Some(true)).count() < quorum {
                            tracing::warn!("a held lock lost its quorum of leases");
                        }
                    }
                });
                return Ok(LockGuard::new(Held { owner, nodes: self.nodes.clone(), refresher }));
            }
            if granted > 0 {
                Self::release(&self.nodes, owner);
            }
            if reachable < quorum {
                return Err(ObjectError::WriteQuorum { needed: quorum, online: reachable });
            }
            if Instant::now() >= deadline {
                return Err(ObjectError::Internal("timed out waiting for an object lock".into()));
            }
            attempt = attempt.saturating_add(1);
            // Random pause, growing with the attempts up to ~100 ms.
            let cap = 5u64 << attempt.min(5);
            let pause = (u64::from(Uuid::new_v4().as_u128() as u16) % cap.max(1)) + 1;
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(n: usize) -> (Vec<Arc<LockServer>>, Vec<LockNode>) {
        let s: Vec<Arc<LockServer>> = (0..n).map(|_| Arc::new(LockServer::default())).collect();
        let nodes = s.iter().map(|s| LockNode::Local(s.clone())).collect();
        (s, nodes)
    }

    #[test]
    fn table_grants_shared_together_and_exclusive_alone() {
        let t = LockServer::default();
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let acq = |owner, exclusive| LockCall::Acquire { resource: 7, owner, exclusive, lease_ms: 60_000 };
        assert!(t.serve(acq(a, false)));
        assert!(t.serve(acq(b, false)));
        assert!(!t.serve(acq(c, true)));
        assert!(t.serve(LockCall::Release { owner: a }));
        assert!(t.serve(LockCall::Release { owner: b }));
        assert!(t.serve(acq(c, true)));
        assert!(!t.serve(acq(a, false)));
        assert!(!t.serve(LockCall::Acquire { resource: 7, owner: b, exclusive: true, lease_ms: 1 }));
        // Another resource is independent.
        assert!(t.serve(LockCall::Acquire { resource: 8, owner: b, exclusive: true, lease_ms: 1 }));
    }

    #[test]
    fn expired_leases_free_the_lock_and_refresh_keeps_it() {
        let t = LockServer::default();
        let (dead, alive, next) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        assert!(t.serve(LockCall::Acquire { resource: 1, owner: dead, exclusive: true, lease_ms: 30 }));
        assert!(t.serve(LockCall::Acquire { resource: 2, owner: alive, exclusive: true, lease_ms: 30 }));
        std::thread::sleep(Duration::from_millis(15));
        assert!(t.serve(LockCall::Refresh { owner: alive, lease_ms: 60_000 }));
        std::thread::sleep(Duration::from_millis(30));
        // The holder that stopped refreshing lost it; the one that refreshed kept it.
        assert!(t.serve(LockCall::Acquire { resource: 1, owner: next, exclusive: true, lease_ms: 30 }));
        assert!(!t.serve(LockCall::Refresh { owner: dead, lease_ms: 30 }));
        assert!(!t.serve(LockCall::Acquire { resource: 2, owner: next, exclusive: true, lease_ms: 30 }));
    }

    #[tokio::test]
    async fn quorum_locks_exclude_each_other_and_release_on_drop() {
        let (servers, nodes) = servers(4);
        let timings = LockTimings { lease: Duration::from_secs(10), wait: Duration::from_millis(200) };
        let a = QuorumLocker::new(nodes.clone(), timings);
        let b = QuorumLocker::new(nodes, timings);
        let held = a.lock(42, true).await.expect("free lock");
        assert!(matches!(b.lock(42, true).await, Err(ObjectError::Internal(_))));
        assert!(matches!(b.lock(42, false).await, Err(ObjectError::Internal(_))));
        // Failed attempts gave their grants back: only the holder's 4 remain.
        assert_eq!(servers.iter().map(|s| s.granted()).sum::<usize>(), 4);
        drop(held);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let r1 = b.lock(42, false).await.expect("shared after release");
        let _r2 = a.lock(42, false).await.expect("shared with shared");
        drop(r1);
    }

    #[tokio::test]
    async fn a_dead_holders_lock_expires() {
        let (servers, nodes) = servers(3);
        let owner = Uuid::new_v4();
        // A holder that died: its grants on two of three nodes, never refreshed.
        for s in &servers[..2] {
            assert!(s.serve(LockCall::Acquire { resource: 9, owner, exclusive: true, lease_ms: 150 }));
        }
        let timings = LockTimings { lease: Duration::from_secs(10), wait: Duration::from_secs(5) };
        let started = Instant::now();
        let _held = QuorumLocker::new(nodes, timings).lock(9, true).await.expect("after the lease");
        assert!(started.elapsed() >= Duration::from_millis(100), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn too_few_nodes_fail_at_once() {
        let (_servers, mut nodes) = servers(2);
        // Two more nodes that never answer.
        let dead = crate::client::ClientConfig {
            key: crate::auth::RpcKey::derive("u", "password1"),
            tls: None,
            local_ip: None,
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_millis(200),
        };
        for port in [1, 2] {
            let n = NodeClient::new(&format!("127.0.0.1:{port}"), &dead);
            n.mark_offline("test");
            nodes.push(LockNode::Remote(n));
        }
        let timings = LockTimings { lease: Duration::from_secs(10), wait: Duration::from_secs(30) };
        let locker = QuorumLocker::new(nodes, timings);
        let started = Instant::now();
        // Exclusive needs 3 of 4: refused fast, with the quorum error.
        assert!(matches!(locker.lock(1, true).await, Err(ObjectError::WriteQuorum { needed: 3, online: 2 })));
        assert!(started.elapsed() < Duration::from_secs(1));
        // Shared needs 2 of 4: granted.
        locker.lock(1, false).await.expect("shared with half the nodes");
    }
}
