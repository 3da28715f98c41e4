//! One erasure set: its drives, default erasure split, locks, and the quorum rules that turn
//! per-drive answers into one answer.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::{join_all, BoxFuture};
use strata_drive::DriveOps;
use strata_drive::{Drive, DriveError, DriveResult};
use strata_erasure::Erasure;
use strata_meta::{ObjectRecord, ObjectVersion};

use crate::error::ObjectError;
use crate::lock::{LockGuard, LockTable, Locks};
use crate::quorum::{agreed, read_quorum, same_version};
use crate::timed::Timed;

pub(crate) struct ErasureSet {
    /// Drives in set order; `None` = offline since start.
    pub drives: Vec<Option<Arc<dyn Drive>>>,
    /// Parity for new objects (the standard storage class).
    pub parity_count: usize,
    /// The codec for the default split, built once.
    pub erasure: Arc<Erasure>,
    pub locks: Locks,
    /// The clock new versions are stamped by (see [`ErasureSet::next_stamp`]).
    pub clock: Arc<dyn strata_types::time::Clock>,
}

/// One drive's answer to a record read.
pub(crate) type RecordRead = Result<(ObjectRecord, Option<Bytes>), DriveError>;

/// The version a read quorum agrees on, and what each drive said about it.
pub(crate) struct Resolved {
    pub version: ObjectVersion,
    /// Per drive position: `Some(inline frame bytes or None)` when the drive holds this version.
    pub holders: Vec<Option<Option<Bytes>>>,
}

impl ErasureSet {
    /// A set over `drives`, each under `drive_op_timeout` (see [`crate::timed`]).
    pub fn new(
        drives: Vec<Option<Arc<dyn Drive>>>,
        parity_count: usize,
        drive_op_timeout: std::time::Duration,
        clock: Arc<dyn strata_types::time::Clock>,
    ) -> Result<Self, ObjectError> {
        if parity_count > drives.len() / 2 {
            return Err(ObjectError::InvalidParity(parity_count));
        }
        let drives: Vec<Option<Arc<dyn Drive>>> =
            drives.into_iter().map(|d| d.map(|d| Timed::wrap(d, drive_op_timeout))).collect();
        let data_count = drives.len() - parity_count;
        let erasure = Erasure::new(data_count, parity_count)?;
        Ok(Self {
            drives,
            parity_count,
            erasure: Arc::new(erasure),
            locks: Locks(Arc::new(LockTable::new())),
            clock,
        })
    }

    /// The stamp of a new version of `key`, taken under the object's exclusive lock: later than
    /// the clock's now and than the newest version any answering drive holds
    /// ([`strata_meta::next_stamp`]). The drives' heads are read first; fewer than a read quorum
    /// of answers (a version or "none") could miss the last acknowledged write, so that is a
    /// quorum error rather than a guess.
    pub async fn next_stamp(&self, bucket: &str, key: &str) -> Result<u64, ObjectError> {
        self.stamp_after(&self.read_records(bucket, key, false).await)
    }

    /// [`Self::next_stamp`] from the drives' answers already read (under the lock).
    pub fn stamp_after(&self, reads: &[RecordRead]) -> Result<u64, ObjectError> {
        let mut answered = 0;
        let mut newest = None;
        for read in reads {
            match read {
                Ok((record, _)) => {
                    answered += 1;
                    newest = newest.max(record.latest().map(|v| v.mod_time));
                }
                Err(DriveError::NotFound) => answered += 1,
                Err(_) => {}
            }
        }
        let needed = read_quorum(self.data_count());
        if answered < needed {
            return Err(ObjectError::WriteQuorum { needed, online: answered });
        }
        Ok(strata_meta::next_stamp(self.clock.now_nanos(), newest))
    }

    /// The codec for a `data`+`parity` split: the set's own when it matches, else a new one.
    pub fn erasure_for(&self, data_count: usize, parity_count: usize) -> Result<Arc<Erasure>, ObjectError> {
        if data_count == self.erasure.data_count() && parity_count == self.erasure.parity_count() {
            return Ok(self.erasure.clone());
        }
        Ok(Arc::new(Erasure::new(data_count, parity_count)?))
    }

    pub fn data_count(&self) -> usize {
        self.drives.len() - self.parity_count
    }

    pub fn online_count(&self) -> usize {
        self.drives.iter().filter(|d| d.is_some()).count()
    }

    /// Reads the object's record from every drive in parallel.
    pub async fn read_records(&self, bucket: &str, key: &str, inline: bool) -> Vec<RecordRead> {
        join_all(self.drives.iter().map(|d| async move {
            match d {
                Some(d) => d.read_record(bucket, key, inline).await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }))
        .await
    }

    /// Reads one version of the object (`which`) from every drive in parallel: each answer a
    /// record of that version alone.
    pub async fn read_which(
        &self,
        bucket: &str,
        key: &str,
        which: crate::VersionRef,
        inline: bool,
    ) -> Vec<RecordRead> {
        let crate::VersionRef::Id(id) = which else { return self.read_records(bucket, key, inline).await };
        join_all(self.drives.iter().map(|d| async move {
            match d {
                Some(d) => d.read_version(bucket, key, id, inline).await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }))
        .await
    }

    /// [`Self::resolve_any`] where a delete marker is `ObjectNotFound` (the key does not exist).
    pub fn resolve(&self, reads: Vec<RecordRead>) -> Result<Resolved, ObjectError> {
        let resolved = self.resolve_any(reads)?;
        if resolved.version.delete_marker {
            return Err(ObjectError::ObjectNotFound);
        }
        Ok(resolved)
    }

    /// The version a read quorum agrees on ([`crate::quorum::agreed`]; a delete marker too),
    /// and which drives hold it.
    pub fn resolve_any(&self, reads: Vec<RecordRead>) -> Result<Resolved, ObjectError> {
        let not_found = reads
            .iter()
            .filter(|r| match r {
                Ok((record, _)) => record.latest().is_none(),
                Err(e) => matches!(e, DriveError::NotFound),
            })
            .count();
        let copies =
            reads.iter().filter_map(|r| r.as_ref().ok().and_then(|(record, _)| record.latest().cloned()));
        let chosen = agreed(copies).map(|(v, _)| v);
        let Some(version) = chosen else {
            if not_found >= read_quorum(self.data_count()) {
                return Err(ObjectError::ObjectNotFound);
            }
            if let Some(e) = exhausted(&reads) {
                return Err(e);
            }
            return Err(ObjectError::ReadQuorum {
                needed: read_quorum(self.data_count()),
                online: reads.iter().filter(|r| r.is_ok()).count(),
            });
        };
        let holders = reads
            .into_iter()
            .map(|r| match r {
                Ok((record, inline)) => record.latest().filter(|v| same_version(v, &version)).map(|_| inline),
                Err(_) => None,
            })
            .collect();
        Ok(Resolved { version, holders })
    }
}

/// For a quorum that failed: the process running out of a resource (open files, memory) on
/// any drive, which names the real cause (the drives are fine; waiting for them would not help).
pub(crate) fn exhausted<'a, T: 'a>(
    results: impl IntoIterator<Item = &'a Result<T, DriveError>>,
) -> Option<ObjectError> {
    results.into_iter().find_map(|r| match r {
        Err(DriveError::Exhausted(m)) => Some(ObjectError::Exhausted(format!("the server ran out of {m}"))),
        _ => None,
    })
}

/// Maps per-drive write results to one: success with a quorum, else the most telling error.
pub(crate) fn reduce_writes(results: &[Result<(), DriveError>], quorum: usize) -> Result<(), ObjectError> {
    let ok = results.iter().filter(|r| r.is_ok()).count();
    if ok >= quorum {
        return Ok(());
    }
    if let Some(e) = exhausted(results) {
        return Err(e);
    }
    // Nodes refused the change because the object's lock has passed on: the write lost its
    // lock, not its drives (retryable, 503).
    if results.iter().any(|r| matches!(r, Err(DriveError::Fenced(_)))) {
        return Err(ObjectError::LockNotHeld(format!(
            "the object's lock passed to another holder during the commit ({ok} of {quorum} drives took it)"
        )));
    }
    let answered = results
        .iter()
        .filter(|r| !matches!(r, Err(e) if e.is_unavailable() || matches!(e, DriveError::Io(_))));
    let missing_bucket = results.iter().filter(|r| matches!(r, Err(DriveError::BucketNotFound))).count();
    if missing_bucket > 0 && missing_bucket * 2 > answered.count() {
        return Err(ObjectError::BucketNotFound);
    }
    Err(ObjectError::WriteQuorum { needed: quorum, online: ok })
}

/// Whether a write that met its quorum missed a drive that is online (so a heal can fix it now;
/// an offline drive is caught up by the scan its return starts).
pub(crate) fn missed_answering_drive(results: &[Result<(), DriveError>]) -> bool {
    results.iter().any(|r| matches!(r, Err(e) if !e.is_unavailable()))
}

/// A set's drives, owned: what a commit task needs to outlive its request.
pub(crate) type Drives = Vec<Option<Arc<dyn Drive>>>;

/// Runs `work` in a task of its own and waits for it. The request's future may be dropped at any
/// await (a client that goes away drops it): the task still runs `work` to its end, so a commit
/// is never left half applied, without its undo, or with its changes pending on the drives.
pub(crate) async fn to_completion<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, ObjectError> {
    tokio::spawn(work).await.map_err(|e| ObjectError::TaskFailed(format!("a commit: {e}")))
}

/// One drive's part of a commit: `commit(position, drive)`.
pub(crate) type CommitFn =
    Box<dyn Fn(usize, Arc<dyn Drive>) -> BoxFuture<'static, DriveResult<()>> + Send + Sync>;

/// Applies a change on every drive (`commit`), reduces the answers with `quorum`, and ends `op`
/// on the drives that applied it: kept with a quorum, undone without. Runs to completion in its
/// own task (see [`to_completion`]), holding `guard` (the object's lock) until the undo is done;
/// the changes carry the lock's fence ([`LockGuard::fenced`]).
pub(crate) async fn commit_on_quorum(
    drives: Drives,
    quorum: usize,
    op: uuid::Uuid,
    guard: LockGuard,
    commit: CommitFn,
) -> Result<(Vec<DriveResult<()>>, Result<(), ObjectError>), ObjectError> {
    to_completion(async move {
        let drives = guard.fenced(&drives);
        let done = apply_and_finish(&drives, quorum, op, &commit).await;
        drop(guard);
        done
    })
    .await
}

/// The body of [`commit_on_quorum`], for commits that do more under the same task.
pub(crate) async fn apply_and_finish(
    drives: &Drives,
    quorum: usize,
    op: uuid::Uuid,
    commit: &CommitFn,
) -> (Vec<DriveResult<()>>, Result<(), ObjectError>) {
    let results = join_all(drives.iter().enumerate().map(|(pos, d)| {
        let fut = d.clone().map(|d| commit(pos, d));
        async move {
            match fut {
                Some(fut) => fut.await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }
    }))
    .await;
    let outcome = reduce_writes(&results, quorum);
    finish_op(drives, &results, op, outcome.is_ok()).await;
    (results, outcome)
}

/// Ends operation `op` on the drives that applied it: frees what it displaced when it met its
/// quorum (in the background: the client need not wait), undoes it otherwise (before answering,
/// so a failed write or delete never replaces what was there).
pub(crate) async fn finish_op(
    drives: &Drives,
    results: &[Result<(), DriveError>],
    op: uuid::Uuid,
    keep: bool,
) {
    let applied: Vec<Arc<dyn Drive>> =
        drives.iter().zip(results).filter(|(_, r)| r.is_ok()).filter_map(|(d, _)| d.clone()).collect();
    let work = async move {
        join_all(applied.iter().map(|d| d.finish_op(op, keep))).await;
    };
    if keep {
        tokio::spawn(work);
    } else {
        work.await;
    }
}
