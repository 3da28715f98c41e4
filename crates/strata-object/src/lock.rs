//! Per-object namespace locks: a fixed table of striped read/write locks. A stripe is picked by
//! the object's placement hash, so memory stays constant whatever the key count; two keys sharing
//! a stripe merely wait for each other's short critical sections (commit, metadata read).

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

const STRIPES: usize = 1024;

pub(crate) struct LockTable {
    stripes: Vec<RwLock<()>>,
}

impl LockTable {
    pub fn new() -> Self {
        Self { stripes: (0..STRIPES).map(|_| RwLock::new(())).collect() }
    }

    fn stripe(&self, hash: u64) -> &RwLock<()> {
        &self.stripes[(hash.rotate_left(17) % STRIPES as u64) as usize]
    }

    pub async fn shared(&self, hash: u64) -> RwLockReadGuard<'_, ()> {
        self.stripe(hash).read().await
    }

    pub async fn exclusive(&self, hash: u64) -> RwLockWriteGuard<'_, ()> {
        self.stripe(hash).write().await
    }
}
