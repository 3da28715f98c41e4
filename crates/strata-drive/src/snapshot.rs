//! Shared read snapshots of a drive's metadata index (see [`Snapshots`]).

use std::sync::{Arc, Mutex, PoisonError};

use redb::{Database, ReadableDatabase};

use crate::index::{index_err, INLINE, OBJECTS};
use crate::DriveResult;

/// A read transaction of the index with its hot tables open, shared by the reads that come
/// before the next commit. Beginning a transaction and opening its tables (each a lookup in
/// redb's table of tables) cost a small GET's record read as much as the lookups themselves.
pub(crate) struct Snapshot {
    pub(crate) txn: redb::ReadTransaction,
    pub(crate) objects: redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
    pub(crate) inline: redb::ReadOnlyTable<u128, &'static [u8]>,
}

/// The index's current [`Snapshot`]. The writer forgets it after every commit, before it answers
/// the batch's changes: a read that starts after a change is acknowledged takes a new snapshot,
/// which holds the change. (A snapshot is made under the lock, so one begun before a commit
/// cannot be kept after the writer forgot it.) Forgetting it also lets redb reuse the pages
/// the next commits free, which a snapshot kept for long would hold.
pub(crate) struct Snapshots {
    db: Arc<Database>,
    current: Mutex<Option<Arc<Snapshot>>>,
}

impl Snapshots {
    pub(crate) fn new(db: Arc<Database>) -> Self {
        Self { db, current: Mutex::new(None) }
    }

    pub(crate) fn get(&self) -> DriveResult<Arc<Snapshot>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = current.as_ref() {
            return Ok(s.clone());
        }
        let txn = self.db.begin_read().map_err(index_err)?;
        let objects = txn.open_table(OBJECTS).map_err(index_err)?;
        let inline = txn.open_table(INLINE).map_err(index_err)?;
        let snapshot = Arc::new(Snapshot { txn, objects, inline });
        *current = Some(snapshot.clone());
        Ok(snapshot)
    }

    pub(crate) fn forget(&self) {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}
