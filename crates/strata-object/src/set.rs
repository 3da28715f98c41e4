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
    /// Where new versions' stamps come from (see [`Stamps`]).
    pub stamps: Arc<Stamps>,
}

/// This node's hybrid logical clock for version stamps: every stamp it gives is later than the
/// clock's now and than every stamp it gave or saw before. A node whose clock is behind, once
/// it has seen a later stamp (a drive refusing its version names one), stamps after that from
/// then on instead of being refused again.
#[derive(Debug)]
pub(crate) struct Stamps {
    clock: Arc<dyn strata_types::time::Clock>,
    last: std::sync::atomic::AtomicU64,
}

impl Stamps {
    pub fn new(clock: Arc<dyn strata_types::time::Clock>) -> Self {
        Self { clock, last: std::sync::atomic::AtomicU64::new(0) }
    }

    /// A stamp later than now, than `newest` (a stamp the drives hold) and than every stamp
    /// given before ([`strata_meta::next_stamp`]).
    pub fn after(&self, newest: Option<u64>) -> u64 {
        use std::sync::atomic::Ordering;
        let now = self.clock.now_nanos();
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let stamp = strata_meta::next_stamp(now, Some(last.max(newest.unwrap_or(0))));
            match self.last.compare_exchange_weak(last, stamp, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return stamp,
                Err(seen) => last = seen,
            }
        }
    }
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
            stamps: Arc::new(Stamps::new(clock)),
        })
    }

    /// The stamp of a new version after the drives' answers `reads` (taken under the object's
    /// exclusive lock): later than the clock's now and than the newest version any answering
    /// drive holds ([`Stamps::after`]). Fewer than a read quorum of answers (a version or
    /// "none") could miss the last acknowledged write, so that is a quorum error rather than a
    /// guess. Writes that need no read commit with [`commit_stamped`] instead.
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
        Ok(self.stamps.after(newest))
    }

    /// The codec for a `data`+`parity` split: the set's own when it matches, else a new one.
    pub fn erasure_for(&self, data_count: usize, parity_count: usize) -> Result<Arc<Erasure>, ObjectError> {
        if data_count == self.erasure.data_count() && parity_count == self.erasure.parity_count() {
            return Ok(self.erasure.clone());
        }
        Ok(Arc::new(Erasure::new(data_count, parity_count)?))
    }

    /// The codec of a version's split, its frames hashed under the version's key.
    pub fn erasure_of(&self, info: &strata_meta::ErasureInfo) -> Result<Arc<Erasure>, ObjectError> {
        let erasure = self.erasure_for(usize::from(info.data_count), usize::from(info.parity_count))?;
        let key = info.bitrot.key();
        if key == erasure.frame_key() {
            return Ok(erasure);
        }
        let fresh = Erasure::new(erasure.data_count(), erasure.parity_count())?;
        Ok(Arc::new(fresh.with_frame_key(key)))
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

/// Whether a drive's error says it is full (`ENOSPC`, or a quota).
pub(crate) fn is_full(e: &DriveError) -> bool {
    matches!(e, DriveError::Io(io) if matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded))
}

/// A write that missed its quorum with `ok` drives, `full` more of them full: full drives made
/// the difference, or not.
pub(crate) fn quorum_missed(quorum: usize, ok: usize, full: usize) -> ObjectError {
    if full > 0 && ok + full >= quorum {
        ObjectError::StorageFull { needed: quorum, full }
    } else {
        ObjectError::WriteQuorum { needed: quorum, online: ok }
    }
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
    // A conditional write that drives refused because the object changed after its condition
    // was checked: another write won (409, AWS's answer to a write that lost such a race).
    if results.iter().any(|r| matches!(r, Err(DriveError::ConditionChanged { .. }))) {
        return Err(ObjectError::ConditionConflict);
    }
    let full = results.iter().filter(|r| matches!(r, Err(e) if is_full(e))).count();
    if full > 0 && ok + full >= quorum {
        return Err(quorum_missed(quorum, ok, full));
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
/// on every drive it went to: kept with a quorum, undone without. Runs to completion in its
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

/// One drive's part of a stamped commit: `commit(position, drive, stamp, again)` commits the
/// new version stamped `stamp` ([`DriveOps::commit_new_version`]); with `again`, the drive
/// already took it at an earlier stamp and only the stamp changes
/// ([`DriveOps::update_version`]).
pub(crate) type StampedCommitFn =
    Box<dyn Fn(usize, Arc<dyn Drive>, u64, bool) -> BoxFuture<'static, DriveResult<()>> + Send + Sync>;

/// [`commit_on_quorum`] of a new version stamped without reading the drives first. The stamp
/// comes from this node's clock ([`Stamps`]), and a drive takes the version only if it holds
/// nothing stamped at or after it; a drive that refuses names its newest stamp. Then, still
/// under the lock, the version is stamped after every stamp named and committed once more:
/// where a drive took the first stamp only the stamp changes, where a drive refused the version
/// is committed in full (its data waited in temp).
///
/// Why nothing newer can be missed: the last acknowledged version of the object is on a write
/// quorum of drives, and two write quorums share a drive (a write quorum is more than half the
/// set). So either one of those drives answers this commit, and refuses a stamp not after that
/// version, or too few drives take it for a quorum and the write fails. The common case costs
/// nothing: no read before the commit, no second round.
///
/// Answers each drive's result, and the stamp the version was committed with or the error.
pub(crate) async fn commit_stamped(
    drives: Drives,
    quorum: usize,
    op: uuid::Uuid,
    guard: LockGuard,
    stamps: Arc<Stamps>,
    commit: StampedCommitFn,
) -> Result<(Vec<DriveResult<()>>, Result<u64, ObjectError>), ObjectError> {
    to_completion(async move {
        let drives = guard.fenced(&drives);
        let first = stamps.after(None);
        let mut results = on_each(&drives, |pos, d| commit(pos, d, first, false)).await;
        let newest = results
            .iter()
            .filter_map(|r| match r {
                Err(DriveError::NotNewest { newest }) => Some(*newest),
                _ => None,
            })
            .max();
        let mut stamp = first;
        if let Some(newest) = newest {
            stamp = stamps.after(Some(newest));
            tracing::debug!(
                first,
                newest,
                stamp,
                "a new version stamped again after a drive's newer version"
            );
            let again: Vec<_> = drives
                .iter()
                .zip(&results)
                .enumerate()
                .map(|(pos, (d, r))| match (d, r) {
                    (Some(d), Ok(())) => Some(commit(pos, d.clone(), stamp, true)),
                    (Some(d), Err(DriveError::NotNewest { .. })) => {
                        Some(commit(pos, d.clone(), stamp, false))
                    }
                    _ => None,
                })
                .collect();
            let answers = join_all(again.into_iter().map(|fut| async move {
                match fut {
                    Some(fut) => Some(fut.await),
                    None => None,
                }
            }))
            .await;
            for (slot, answer) in results.iter_mut().zip(answers) {
                if let Some(answer) = answer {
                    // A drive that took the first stamp and not the second still holds the
                    // version stamped too early: its operation is ended like every drive's
                    // (kept, a heal brings the agreed stamp; or undone), but it does not count.
                    *slot = answer;
                }
            }
        }
        let outcome = reduce_writes(&results, quorum);
        finish_op(&drives, op, outcome.is_ok()).await;
        drop(guard);
        (results, outcome.map(|()| stamp))
    })
    .await
}

/// Runs `commit` on every drive of the set at once; a drive offline since start answers
/// `Unreachable`.
async fn on_each(
    drives: &Drives,
    commit: impl Fn(usize, Arc<dyn Drive>) -> BoxFuture<'static, DriveResult<()>>,
) -> Vec<DriveResult<()>> {
    join_all(drives.iter().enumerate().map(|(pos, d)| {
        let fut = d.clone().map(|d| commit(pos, d));
        async move {
            match fut {
                Some(fut) => fut.await,
                None => Err(DriveError::Unreachable("offline at start".into())),
            }
        }
    }))
    .await
}

/// The body of [`commit_on_quorum`], for commits that do more under the same task.
pub(crate) async fn apply_and_finish(
    drives: &Drives,
    quorum: usize,
    op: uuid::Uuid,
    commit: &CommitFn,
) -> (Vec<DriveResult<()>>, Result<(), ObjectError>) {
    let results = on_each(drives, |pos, d| commit(pos, d)).await;
    let outcome = reduce_writes(&results, quorum);
    finish_op(drives, op, outcome.is_ok()).await;
    (results, outcome)
}

/// Ends operation `op` on every drive the change went to: frees what it displaced when it met
/// its quorum (in the background: the client need not wait), undoes it otherwise (before
/// answering, so a failed write or delete never replaces what was there, not even for a
/// moment). The drives that did not answer yes are told too: a drive may have applied the
/// change and lost its answer, or may be applying it late, after this caller gave up; told
/// first, it refuses the change when it comes (see `LocalDrive`'s record of ended operations).
/// So a write that failed never surfaces later on a late drive, and a late change never
/// replaces a newer one.
pub(crate) async fn finish_op(drives: &Drives, op: uuid::Uuid, keep: bool) {
    let told: Vec<Arc<dyn Drive>> = drives.iter().flatten().cloned().collect();
    let work = async move {
        join_all(told.iter().map(|d| d.finish_op(op, keep))).await;
    };
    if keep {
        tokio::spawn(work);
    } else {
        work.await;
    }
}
