//! Namespace locks over several nodes.
//!
//! Every node keeps a [`LockServer`]: its table of granted locks, each with a lease. A
//! [`QuorumLocker`] holds the lock when enough nodes grant it: exclusive needs a majority
//! (n/2+1), shared needs n/2, so an exclusive and a shared lock always meet on at least one node,
//! while reads keep working with half the nodes down. Either kind asks its own node and just
//! enough peers for its quorum, and the others only when one of those does not grant: a write
//! costs n/2 lock requests and a read n/2−1, not n−1 each (refreshes and releases then go to the
//! nodes asked, too). Two majorities, or a majority and a half, share a node whichever nodes
//! were asked, so asking fewer changes nothing of what the locks exclude. The holder
//! refreshes its lease while it holds the lock; a holder that dies stops refreshing and its
//! grants expire, so a node dying with a lock never blocks a key for longer than one lease. When
//! too few nodes grant, the grants are given back and the locker retries after a random pause
//! (so two contenders do not retry in lockstep); when too few nodes are even reachable it fails
//! at once.
//!
//! Fencing: the holder knows until when its quorum of leases is certain: the time it sent the
//! last request that a quorum granted (the acquire or a refresh) plus the lease, since no node
//! can have started its lease before that. A refresh that does not reach a quorum ends it at
//! once (a node that refused may have granted the lock to another). The object layer checks
//! [`LockGuard::ensure_held`] right before it commits, and the guard answers yes only while at
//! least the commit margin (the RPC time-out, which bounds each commit call) of the lease
//! remains: so the lease is longer than the RPC time-out ([`LockTimings::for_rpc_timeout`]).
//! What that check cannot see, a holder paused between it and sending its commit calls, the
//! drives' nodes see: each change made under the lock carries its identity (a
//! [`Fence`](strata_drive::Fence): resource and owner), and the node that owns the drive admits
//! it only while its own table shows no other live holder ([`LockServer::admit`]); while an
//! admitted change is applied, the node grants the resource to no one else. A new holder was
//! granted by a majority of nodes, so a stale holder's changes land only outside that majority,
//! on fewer drives than a write quorum: the write fails and is undone (the argument and the set
//! layouts it holds for: `docs/reliability.md`, Lock fencing).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::join_all;
use strata_drive::Fence;
use strata_object::{Lease, LockGuard, Locker, ObjectError};
use strata_types::limits::{LOCK_LEASE_PER_RPC_TIMEOUT, LOCK_WAIT_MIN};
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
    /// resource → (holder, count) of fenced changes being applied on this node's drives: no
    /// other owner is granted the resource until they are done.
    applying: HashMap<u64, (Uuid, usize)>,
}

/// A fenced change admitted on this node ([`LockServer::admit`]): while it lives, the resource
/// is granted to no one else here.
pub struct Admitted {
    server: Arc<LockServer>,
    fence: Fence,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let Ok(mut t) = self.server.table.lock() else { return };
        if let Some((_, n)) = t.applying.get_mut(&self.fence.resource) {
            *n -= 1;
            if *n == 0 {
                t.applying.remove(&self.fence.resource);
            }
        }
    }
}

impl LockServer {
    /// Admits a change made under the lock `fence` names, unless this node's table shows
    /// another live holder of the resource (the change's lease passed on: `None`). Until the
    /// returned guard drops, this node grants the resource to no other owner, so on this node
    /// the change and a new holder's grant are ordered: the change lands whole before the grant,
    /// or is refused after it.
    pub fn admit(self: &Arc<Self>, fence: Fence) -> Option<Admitted> {
        let Ok(mut t) = self.table.lock() else { return None };
        let now = Instant::now();
        let other_holder = t
            .resources
            .get(&fence.resource)
            .is_some_and(|holders| holders.iter().any(|h| h.0 != fence.holder && h.2 > now));
        let other_change = t.applying.get(&fence.resource).is_some_and(|(h, _)| *h != fence.holder);
        if other_holder || other_change {
            return None;
        }
        t.applying.entry(fence.resource).or_insert((fence.holder, 0)).1 += 1;
        Some(Admitted { server: self.clone(), fence })
    }

    pub fn serve(&self, call: LockCall) -> bool {
        let call = match call {
            LockCall::ReleaseThen { releases, then } => {
                for owner in releases {
                    self.serve(LockCall::Release { owner });
                }
                *then
            }
            call => call,
        };
        let Ok(mut t) = self.table.lock() else { return false };
        let now = Instant::now();
        match call {
            LockCall::Acquire { resource, owner, exclusive, lease_ms } => {
                // A fenced change of another owner being applied here: wait for it.
                if t.applying.get(&resource).is_some_and(|(h, _)| *h != owner) {
                    return false;
                }
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
            // One level only: releases carried by releases carry nothing more.
            LockCall::ReleaseThen { .. } => false,
        }
    }

    /// Every grant here as (resource, owner), expired leases included until touched, for tests.
    pub fn grants(&self) -> Vec<(u64, Uuid)> {
        let Ok(t) = self.table.lock() else { return Vec::new() };
        t.resources.iter().flat_map(|(r, h)| h.iter().map(move |h| (*r, h.0))).collect()
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
    /// A node whose answers a test can cut off or hang.
    #[cfg(test)]
    Switched(Arc<LockServer>, Arc<std::sync::atomic::AtomicU8>),
}

#[cfg(test)]
const SWITCH_ANSWERS: u8 = 0;
#[cfg(test)]
const SWITCH_UNREACHABLE: u8 = 1;
#[cfg(test)]
const SWITCH_HANGS: u8 = 2;

impl LockNode {
    /// `Some(granted)`, or `None` when the node did not answer.
    async fn ask(&self, call: LockCall) -> Option<bool> {
        match self {
            LockNode::Local(s) => Some(s.serve(call)),
            LockNode::Remote(n) => {
                let releases = match call {
                    LockCall::Acquire { .. } => n.undelivered_releases(),
                    _ => Vec::new(),
                };
                let call = match releases.is_empty() {
                    true => call,
                    false => LockCall::ReleaseThen { releases, then: Box::new(call) },
                };
                n.call::<bool>(&format!("{PREFIX}lock"), encode(&call)).await.ok()
            }
            #[cfg(test)]
            LockNode::Switched(s, mode) => match mode.load(Ordering::Relaxed) {
                SWITCH_ANSWERS => Some(s.serve(call)),
                SWITCH_UNREACHABLE => None,
                _ => std::future::pending().await,
            },
        }
    }
}

/// Lease length and waits of a [`QuorumLocker`].
#[derive(Debug, Clone, Copy)]
pub struct LockTimings {
    pub lease: Duration,
    /// How long to keep retrying a lock others hold.
    pub wait: Duration,
    /// How much of its lease a holder must have left to commit: the longest a commit call may
    /// take (the RPC time-out). Less than the lease.
    pub commit_margin: Duration,
}

impl LockTimings {
    /// Timings for peers called with `rpc_timeout`: a lease of
    /// [`LOCK_LEASE_PER_RPC_TIMEOUT`] time-outs, a commit margin of one, and a wait that outlasts
    /// a lease and a commit.
    pub fn for_rpc_timeout(rpc_timeout: Duration) -> Self {
        let rpc_timeout = rpc_timeout.max(strata_types::limits::LOCK_RPC_TIMEOUT_MIN);
        let lease = rpc_timeout * LOCK_LEASE_PER_RPC_TIMEOUT;
        Self { lease, wait: LOCK_WAIT_MIN.max(lease + rpc_timeout), commit_margin: rpc_timeout }
    }
}

impl LockTimings {
    /// Timings for these peers: for the longest of their RPC time-outs.
    pub fn for_peers(peers: &[Arc<NodeClient>]) -> Self {
        let rpc_timeout = peers.iter().map(|p| p.timeout()).max();
        Self::for_rpc_timeout(rpc_timeout.unwrap_or(strata_types::limits::RPC_TIMEOUT))
    }
}

impl Default for LockTimings {
    fn default() -> Self {
        Self::for_rpc_timeout(strata_types::limits::RPC_TIMEOUT)
    }
}

pub struct QuorumLocker {
    nodes: Vec<LockNode>,
    timings: LockTimings,
}

impl QuorumLocker {
    pub fn new(nodes: Vec<LockNode>, timings: LockTimings) -> Self {
        // Otherwise no holder could ever commit.
        assert!(timings.commit_margin < timings.lease, "lock lease must be longer than its commit margin");
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
                #[cfg(test)]
                LockNode::Switched(s, _) => {
                    s.serve(LockCall::Release { owner });
                }
            }
        }
    }
}

/// Until when a holder's quorum of leases is certain.
struct LeaseState {
    /// The instant the times below count from.
    base: Instant,
    /// Nanoseconds after `base` when the last lease a quorum granted ends.
    deadline: AtomicU64,
    /// A refresh did not reach a quorum: the lock may be another's.
    lost: AtomicBool,
    commit_margin: Duration,
}

impl LeaseState {
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// A quorum granted a lease asked for at `sent`.
    fn renewed(&self, sent: Instant, lease: Duration) {
        self.deadline.fetch_max(self.nanos(sent + lease), Ordering::AcqRel);
    }

    fn held_at(&self, now: Instant) -> bool {
        !self.lost.load(Ordering::Acquire)
            && self.nanos(now + self.commit_margin) < self.deadline.load(Ordering::Acquire)
    }
}

impl QuorumLocker {
    /// Refreshes `owner`'s leases every third of a lease until a refresh fails to reach a
    /// quorum (the lock is then lost for good) or the guard is dropped.
    async fn refresh(
        nodes: Vec<LockNode>,
        owner: Uuid,
        quorum: usize,
        lease: Duration,
        state: Arc<LeaseState>,
    ) {
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        loop {
            tokio::time::sleep(lease / 3).await;
            let sent = Instant::now();
            let kept = Self::ask_all(&nodes, || LockCall::Refresh { owner, lease_ms }).await;
            if kept.iter().filter(|a| **a == Some(true)).count() < quorum {
                state.lost.store(true, Ordering::Release);
                tracing::warn!("a held lock lost its quorum of leases: its holder will not commit");
                return;
            }
            state.renewed(sent, lease);
        }
    }
}

/// Releases on drop and refreshes the lease while held.
struct Held {
    resource: u64,
    owner: Uuid,
    nodes: Vec<LockNode>,
    refresher: tokio::task::JoinHandle<()>,
    lease: Arc<LeaseState>,
}

impl Lease for Held {
    fn still_held(&self) -> bool {
        self.lease.held_at(Instant::now())
    }

    fn fence(&self) -> Option<Fence> {
        Some(Fence { resource: self.resource, holder: self.owner })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.refresher.abort();
        QuorumLocker::release(&self.nodes, self.owner);
    }
}

impl QuorumLocker {
    /// The nodes in the order a lock of `hash` asks them: this node's table first (no round
    /// trip), then the peers from one picked by the hash, so reads of different keys spread
    /// over the peers.
    fn ordered(&self, hash: u64) -> Vec<LockNode> {
        let (mut local, remote): (Vec<&LockNode>, Vec<&LockNode>) =
            self.nodes.iter().partition(|n| !matches!(n, LockNode::Remote(_)));
        if !remote.is_empty() {
            let first = (hash % remote.len() as u64) as usize;
            local.extend(remote[first..].iter().chain(&remote[..first]));
        }
        local.into_iter().cloned().collect()
    }

    /// Asks for the lock: first just a quorum of the nodes, and the others only when one of
    /// those did not grant (what a holder needs is a quorum of grants, from whichever nodes).
    /// Returns the nodes asked and their answers.
    async fn acquire(&self, hash: u64, owner: Uuid, exclusive: bool) -> (Vec<LockNode>, Vec<Option<bool>>) {
        let lease_ms = u64::try_from(self.timings.lease.as_millis()).unwrap_or(u64::MAX);
        let nodes = self.ordered(hash);
        let quorum = self.quorum(exclusive);
        let call = || LockCall::Acquire { resource: hash, owner, exclusive, lease_ms };
        let first = quorum.min(nodes.len());
        let mut answers = Self::ask_all(&nodes[..first], call).await;
        if answers.iter().filter(|a| **a == Some(true)).count() < quorum {
            answers.extend(Self::ask_all(&nodes[first..], call).await);
        }
        let asked = nodes.into_iter().take(answers.len()).collect();
        (asked, answers)
    }
}

#[async_trait]
impl Locker for QuorumLocker {
    async fn lock(&self, hash: u64, exclusive: bool) -> Result<LockGuard, ObjectError> {
        let quorum = self.quorum(exclusive);
        let deadline = Instant::now() + self.timings.wait;
        let mut attempt = 0u32;
        loop {
            let owner = Uuid::new_v4();
            let sent = Instant::now();
            let (asked, answers) = self.acquire(hash, owner, exclusive).await;
            let granted = answers.iter().filter(|a| **a == Some(true)).count();
            let reachable = answers.iter().filter(|a| a.is_some()).count();
            if granted >= quorum {
                let lease = Arc::new(LeaseState {
                    base: sent,
                    deadline: AtomicU64::new(0),
                    lost: AtomicBool::new(false),
                    commit_margin: self.timings.commit_margin,
                });
                lease.renewed(sent, self.timings.lease);
                let refresher = tokio::spawn(Self::refresh(
                    asked.clone(),
                    owner,
                    quorum,
                    self.timings.lease,
                    lease.clone(),
                ));
                return Ok(LockGuard::leased(Held { resource: hash, owner, nodes: asked, refresher, lease }));
            }
            if granted > 0 {
                Self::release(&asked, owner);
            }
            if reachable < quorum {
                return Err(ObjectError::WriteQuorum { needed: quorum, online: reachable });
            }
            if Instant::now() >= deadline {
                return Err(ObjectError::LockNotHeld("timed out waiting for the object lock".into()));
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
    fn fenced_changes_are_refused_past_another_holder_and_hold_off_new_grants() {
        let t = Arc::new(LockServer::default());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let acq = |owner, lease_ms| LockCall::Acquire { resource: 7, owner, exclusive: true, lease_ms };
        assert!(t.serve(acq(a, 60_000)));
        // The holder's own change, and a change where no one holds the lock, are admitted.
        let fence_a = Fence { resource: 7, holder: a };
        let applying = t.admit(fence_a).expect("the holder's change");
        assert!(t.admit(Fence { resource: 8, holder: b }).is_some());
        // While A's change is applied, nobody else is granted the lock, even once A's lease is gone.
        assert!(t.serve(LockCall::Release { owner: a }));
        assert!(!t.serve(acq(b, 60_000)), "granted while another owner's change was applied");
        drop(applying);
        assert!(t.serve(acq(b, 60_000)));
        // B holds it now: A's late change is refused, B's admitted.
        assert!(t.admit(fence_a).is_none(), "a stale holder's change was admitted");
        assert!(t.admit(Fence { resource: 7, holder: b }).is_some());
        // An expired holder does not fence anyone.
        assert!(t.serve(LockCall::Release { owner: b }));
        assert!(t.serve(acq(b, 1)));
        std::thread::sleep(Duration::from_millis(5));
        assert!(t.admit(fence_a).is_some());
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
        let timings = LockTimings {
            lease: Duration::from_secs(10),
            wait: Duration::from_millis(200),
            commit_margin: Duration::ZERO,
        };
        let a = QuorumLocker::new(nodes.clone(), timings);
        let b = QuorumLocker::new(nodes, timings);
        let held = a.lock(42, true).await.expect("free lock");
        assert!(matches!(b.lock(42, true).await, Err(ObjectError::LockNotHeld(_))));
        assert!(matches!(b.lock(42, false).await, Err(ObjectError::LockNotHeld(_))));
        // The holder asked just a majority (3 of 4); failed attempts gave their grants back.
        assert_eq!(servers.iter().map(|s| s.granted()).sum::<usize>(), 3);
        drop(held);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let r1 = b.lock(42, false).await.expect("shared after release");
        let _r2 = a.lock(42, false).await.expect("shared with shared");
        drop(r1);
    }

    #[tokio::test]
    async fn an_exclusive_lock_asks_a_majority_and_the_rest_only_when_refused() {
        let (servers, nodes) = servers(4);
        let timings = LockTimings {
            lease: Duration::from_secs(10),
            wait: Duration::from_secs(5),
            commit_margin: Duration::ZERO,
        };
        let locker = QuorumLocker::new(nodes, timings);
        let held = locker.lock(3, true).await.expect("free lock");
        let granted: Vec<usize> = servers.iter().map(|s| s.granted()).collect();
        assert_eq!(granted, [1, 1, 1, 0], "a free lock takes three requests, not four");
        drop(held);
        // A node of the first three holds it for another owner: the fourth is asked too.
        let other = Uuid::new_v4();
        assert!(servers[1].serve(LockCall::Acquire {
            resource: 3,
            owner: other,
            exclusive: true,
            lease_ms: 60_000
        }));
        let _held = locker.lock(3, true).await.expect("a majority without node 1");
        let granted: Vec<usize> = servers.iter().map(|s| s.granted()).collect();
        assert_eq!(granted, [1, 1, 1, 1], "nodes 0, 2 and 3 grant; node 1 keeps the other owner");
        assert!(servers[1].grants().iter().all(|(_, o)| *o == other));
    }

    #[tokio::test]
    async fn a_dead_holders_lock_expires() {
        let (servers, nodes) = servers(3);
        let owner = Uuid::new_v4();
        // A holder that died: its grants on two of three nodes, never refreshed.
        for s in &servers[..2] {
            assert!(s.serve(LockCall::Acquire { resource: 9, owner, exclusive: true, lease_ms: 150 }));
        }
        let timings = LockTimings {
            lease: Duration::from_secs(10),
            wait: Duration::from_secs(5),
            commit_margin: Duration::ZERO,
        };
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
        let timings = LockTimings {
            lease: Duration::from_secs(10),
            wait: Duration::from_secs(30),
            commit_margin: Duration::ZERO,
        };
        let locker = QuorumLocker::new(nodes, timings);
        let started = Instant::now();
        // Exclusive needs 3 of 4: refused fast, with the quorum error.
        assert!(matches!(locker.lock(1, true).await, Err(ObjectError::WriteQuorum { needed: 3, online: 2 })));
        assert!(started.elapsed() < Duration::from_secs(1));
        // Shared needs 2 of 4: granted.
        locker.lock(1, false).await.expect("shared with half the nodes");
    }

    fn switched(servers: &[Arc<LockServer>]) -> (Vec<Arc<std::sync::atomic::AtomicU8>>, Vec<LockNode>) {
        let modes: Vec<_> =
            servers.iter().map(|_| Arc::new(std::sync::atomic::AtomicU8::new(SWITCH_ANSWERS))).collect();
        let nodes =
            servers.iter().zip(&modes).map(|(s, m)| LockNode::Switched(s.clone(), m.clone())).collect();
        (modes, nodes)
    }

    const FENCED: LockTimings = LockTimings {
        lease: Duration::from_millis(600),
        wait: Duration::from_secs(5),
        commit_margin: Duration::from_millis(150),
    };

    /// Locks `hash` exclusively through `locker` as soon as it can; the instant it got it.
    async fn lock_when_free(locker: &QuorumLocker, hash: u64) -> (LockGuard, Instant) {
        let guard = locker.lock(hash, true).await.expect("granted once the holder's leases ran out");
        (guard, Instant::now())
    }

    #[tokio::test]
    async fn a_guard_whose_refreshes_miss_the_quorum_is_lost_before_another_is_granted() {
        let (servers, _) = servers(3);
        let (modes, nodes) = switched(&servers);
        let holder = QuorumLocker::new(nodes, FENCED);
        let guard = holder.lock(5, true).await.expect("free lock");
        // While refreshes reach a quorum the lock stays held over several leases.
        for _ in 0..9 {
            tokio::time::sleep(FENCED.lease / 4).await;
            assert!(guard.still_held(), "a refreshed lock must stay held");
        }
        guard.ensure_held().expect("held");
        // The holder is cut off from two of three nodes: its refreshes reach one.
        modes[0].store(SWITCH_UNREACHABLE, Ordering::Relaxed);
        modes[1].store(SWITCH_UNREACHABLE, Ordering::Relaxed);
        // Another node's locker reaches those two, where the holder's leases run out.
        let other = QuorumLocker::new(servers.iter().map(|s| LockNode::Local(s.clone())).collect(), FENCED);
        let watch = async {
            loop {
                if !guard.still_held() {
                    return Instant::now();
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let (lost_at, (other_guard, granted_at)) = tokio::join!(watch, lock_when_free(&other, 5));
        assert!(lost_at < granted_at, "the guard must know it is lost before another holder is granted");
        assert!(matches!(guard.ensure_held(), Err(ObjectError::LockNotHeld(_))));
        // Lost for good, even once the nodes answer again.
        modes[0].store(SWITCH_ANSWERS, Ordering::Relaxed);
        modes[1].store(SWITCH_ANSWERS, Ordering::Relaxed);
        tokio::time::sleep(FENCED.lease / 2).await;
        assert!(!guard.still_held());
        assert!(other_guard.still_held());
    }

    #[tokio::test]
    async fn a_guard_whose_refreshes_hang_is_lost_a_margin_before_its_lease_ends() {
        let (servers, _) = servers(3);
        let (modes, nodes) = switched(&servers);
        let holder = QuorumLocker::new(nodes, FENCED);
        let started = Instant::now();
        let guard = holder.lock(6, true).await.expect("free lock");
        // Every node stops answering without failing: the refresh never returns.
        for m in &modes {
            m.store(SWITCH_HANGS, Ordering::Relaxed);
        }
        tokio::time::sleep(FENCED.lease - FENCED.commit_margin - Duration::from_millis(100)).await;
        assert!(guard.still_held(), "held while more than the margin of the lease remains");
        tokio::time::sleep(Duration::from_millis(110)).await;
        assert!(!guard.still_held(), "lost once less than the margin remains ({:?})", started.elapsed());
        // And before any node would grant the lock to another.
        let other = QuorumLocker::new(servers.iter().map(|s| LockNode::Local(s.clone())).collect(), FENCED);
        let (_g, granted_at) = lock_when_free(&other, 6).await;
        assert!(granted_at >= started + FENCED.lease, "{:?}", granted_at - started);
    }

    #[test]
    fn the_lease_outlasts_a_commit_and_the_wait_outlasts_the_lease() {
        let t = LockTimings::default();
        assert_eq!(t.commit_margin, strata_types::limits::RPC_TIMEOUT);
        assert!(t.lease > t.commit_margin && t.wait > t.lease, "{t:?}");
        let short = LockTimings::for_rpc_timeout(Duration::from_secs(1));
        assert_eq!((short.lease, short.commit_margin), (Duration::from_secs(2), Duration::from_secs(1)));
    }
}
