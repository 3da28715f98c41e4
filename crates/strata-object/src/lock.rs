//! Per-object namespace locks behind [`Locker`]: shared for reads, exclusive for commits.
//!
//! One node uses [`LockTable`], a fixed table of striped read/write locks: a stripe is picked by
//! the object's placement hash, so memory stays constant whatever the key count; two keys sharing
//! a stripe merely wait for each other's short critical sections (commit, metadata read).
//! Distributed mode plugs in a locker granted by a quorum of nodes (`strata-rpc`); the object
//! layer only sees this trait.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::RwLock;

use crate::error::ObjectError;
use strata_types::limits::LOCK_STRIPES;

/// A held lock; dropping it releases the lock.
pub struct LockGuard(Box<dyn Lease>);

/// What a held lock can say about itself. A lock of this process is held until dropped; a lock
/// granted by other nodes holds only while its leases are certain, and a writer checks
/// [`LockGuard::ensure_held`] right before it commits.
pub trait Lease: Send + Sync {
    /// Whether the lock is certainly still ours, for long enough to commit.
    fn still_held(&self) -> bool;

    /// The lock's identity, for the drives' nodes to check changes made under it against their
    /// own lock tables ([`strata_drive::fenced`]); `None` for a
    /// lock of this process.
    fn fence(&self) -> Option<strata_drive::Fence> {
        None
    }
}

/// A lock held until dropped.
struct Local<T>(#[allow(dead_code)] T);

impl<T: Send + Sync> Lease for Local<T> {
    fn still_held(&self) -> bool {
        true
    }
}

impl LockGuard {
    /// A lock held until dropped.
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Self(Box::new(Local(held)))
    }

    /// A lock held while `lease` says so.
    pub fn leased(lease: impl Lease + 'static) -> Self {
        Self(Box::new(lease))
    }

    pub fn still_held(&self) -> bool {
        self.0.still_held()
    }

    /// This lock as `n` guards for `n` changes made under it (one per pool holding a key): each
    /// holds while this one would, and the lock goes when the last of them is dropped.
    pub(crate) fn split(self, n: usize) -> Vec<LockGuard> {
        let shared = Arc::new(self);
        (0..n).map(|_| LockGuard::leased(Shared(shared.clone()))).collect()
    }

    /// This lock for one change, and `spares` more guards of it for changes after that one (see
    /// [`Self::split`]); without spares, this guard itself, unwrapped.
    pub(crate) fn with_spares(self, spares: usize) -> (LockGuard, Vec<LockGuard>) {
        if spares == 0 {
            return (self, Vec::new());
        }
        let mut guards = self.split(1 + spares);
        let first = guards.remove(0);
        (first, guards)
    }

    /// The lock's identity, when the drives' nodes can check it (see [`Lease::fence`]).
    pub fn fence(&self) -> Option<strata_drive::Fence> {
        self.0.fence()
    }

    /// `drives` with their changes fenced by this lock (unchanged for a lock of this process).
    pub(crate) fn fenced(&self, drives: &[Option<Arc<dyn strata_drive::Drive>>]) -> crate::set::Drives {
        match self.fence() {
            Some(f) => drives.iter().map(|d| d.clone().map(|d| strata_drive::fenced(d, f))).collect(),
            None => drives.to_vec(),
        }
    }

    /// `LockNotHeld` (503, retryable) when the lock may have passed to another holder: the
    /// caller must not commit.
    pub fn ensure_held(&self) -> Result<(), ObjectError> {
        if self.still_held() {
            Ok(())
        } else {
            Err(ObjectError::LockNotHeld("the object lock's lease ran out before the commit".into()))
        }
    }
}

/// One of the guards [`LockGuard::split`] makes.
struct Shared(Arc<LockGuard>);

impl Lease for Shared {
    fn still_held(&self) -> bool {
        self.0.still_held()
    }

    fn fence(&self) -> Option<strata_drive::Fence> {
        self.0.fence()
    }
}

/// Grants namespace locks on an object, named by its placement hash (the same on every node).
#[async_trait]
pub trait Locker: Send + Sync {
    /// Waits for the lock; an error when it cannot be had (too few nodes grant it, or it stays
    /// taken too long).
    async fn lock(&self, hash: u64, exclusive: bool) -> Result<LockGuard, ObjectError>;
}

pub struct LockTable {
    stripes: Vec<Arc<RwLock<()>>>,
}

impl Default for LockTable {
    fn default() -> Self {
        Self::new()
    }
}

impl LockTable {
    pub fn new() -> Self {
        Self { stripes: (0..LOCK_STRIPES).map(|_| Arc::new(RwLock::new(()))).collect() }
    }

    fn stripe(&self, hash: u64) -> Arc<RwLock<()>> {
        self.stripes[(hash.rotate_left(17) % LOCK_STRIPES as u64) as usize].clone()
    }
}

#[async_trait]
impl Locker for LockTable {
    async fn lock(&self, hash: u64, exclusive: bool) -> Result<LockGuard, ObjectError> {
        let stripe = self.stripe(hash);
        Ok(if exclusive {
            LockGuard::new(stripe.write_owned().await)
        } else {
            LockGuard::new(stripe.read_owned().await)
        })
    }
}

/// The set's view: shorthand for shared and exclusive locks.
#[derive(Clone)]
pub(crate) struct Locks(pub Arc<dyn Locker>);

impl Locks {
    pub async fn shared(&self, hash: u64) -> Result<LockGuard, ObjectError> {
        self.0.lock(hash, false).await
    }

    pub async fn exclusive(&self, hash: u64) -> Result<LockGuard, ObjectError> {
        self.0.lock(hash, true).await
    }
}
