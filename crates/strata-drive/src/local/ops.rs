//! The operations a drive takes part in: each change it applies is kept as pending until its
//! operation ends (kept: what it displaced is freed; undone: it is reverted), and operations
//! ended before their change arrived are remembered so the late change is refused.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use strata_meta::{ObjectVersion, PartInfo};
use strata_types::limits::{ENDED_OPS_MAX, ENDED_OP_MEMORY};
use uuid::Uuid;

use super::LocalDrive;
use crate::index::Change;
use crate::{DriveError, DriveResult};

/// A part commit until its operation ends: the part it put and the one it replaced.
pub(super) struct PendingPart {
    pub(super) bucket: String,
    pub(super) key: String,
    pub(super) upload_id: Uuid,
    pub(super) number: u32,
    pub(super) new_data: Uuid,
    pub(super) old: Option<PartInfo>,
    pub(super) began: Instant,
}

pub(super) struct PendingOp {
    bucket: String,
    key: String,
    added: Option<ObjectVersion>,
    displaced: Vec<ObjectVersion>,
    began: Instant,
}

/// The operations a drive is part of, under one lock so that a change and the end of its
/// operation meet in one order whichever arrives first.
///
/// A caller ends an operation (kept or undone, [`DriveCall::FinishOp`](crate::DriveCall::FinishOp))
/// on every drive it sent the change to, including drives that did not answer: the change may
/// have been applied with its answer lost, or may still be on its way. A change that arrives
/// after its operation ended is refused, and one that was being applied as the end came is
/// ended at once as told; so a write that failed never comes back later on a late drive, and a
/// late change never replaces a newer one. Ended operations are remembered for
/// [`ENDED_OP_MEMORY`] (at most [`ENDED_OPS_MAX`]): far longer than a change can wait in
/// flight, since every caller gives up within its per-drive time-out.
#[derive(Default)]
pub(super) struct Ops {
    /// Version changes: what to free or undo.
    pub(super) versions: HashMap<Uuid, PendingOp>,
    /// Part commits: what each replaced.
    pub(super) parts: HashMap<Uuid, PendingPart>,
    /// Operations ended before (or while) their change arrived: kept or undone.
    pub(super) ended: HashMap<Uuid, bool>,
    /// `ended` oldest first, for forgetting.
    pub(super) ended_order: VecDeque<(Instant, Uuid)>,
    /// By object: its changes on their way in, applied and waiting for their operation's end,
    /// or being undone. A record read while this is zero shows only settled changes
    /// ([`DriveCall::ReadSettled`](crate::DriveCall::ReadSettled)).
    /// (Bucket, then key: looked up by borrowed names.)
    unsettled: HashMap<String, HashMap<String, usize>>,
    /// When pending changes were last looked at for an end that will not come.
    looked: Option<Instant>,
}

impl Ops {
    pub(super) fn hold(&mut self, bucket: &str, key: &str) {
        let keys = match self.unsettled.get_mut(bucket) {
            Some(keys) => keys,
            None => self.unsettled.entry(bucket.to_owned()).or_default(),
        };
        match keys.get_mut(key) {
            Some(n) => *n += 1,
            None => {
                keys.insert(key.to_owned(), 1);
            }
        }
    }

    /// Ends one [`Self::hold`] (one that a reinitialized drive forgot is ignored).
    pub(super) fn release(&mut self, bucket: &str, key: &str) {
        let Some(keys) = self.unsettled.get_mut(bucket) else { return };
        if let Some(n) = keys.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                keys.remove(key);
            }
        }
        if keys.is_empty() {
            self.unsettled.remove(bucket);
        }
    }

    pub(super) fn is_settled(&self, bucket: &str, key: &str) -> bool {
        !self.unsettled.get(bucket).is_some_and(|keys| keys.contains_key(key))
    }

    /// Forgets the pending changes older than `max` (see [`PENDING_OP_MAX`]), at most every
    /// tenth of `max`; answers how many.
    ///
    /// [`PENDING_OP_MAX`]: strata_types::limits::PENDING_OP_MAX
    pub(super) fn abandon_old(&mut self, now: Instant, max: Duration, endpoint: &str) -> u64 {
        if self.looked.is_some_and(|at| now.saturating_duration_since(at) < max / 10) {
            return 0;
        }
        self.looked = Some(now);
        let old = |began: Instant| now.saturating_duration_since(began) >= max;
        let gone: Vec<Uuid> = self.versions.iter().filter(|(_, p)| old(p.began)).map(|(op, _)| *op).collect();
        let parts: Vec<Uuid> = self.parts.iter().filter(|(_, p)| old(p.began)).map(|(op, _)| *op).collect();
        for op in &gone {
            if let Some(p) = self.versions.remove(op) {
                self.release(&p.bucket, &p.key);
                tracing::warn!(drive = %endpoint, %op, bucket = %p.bucket, key = %p.key, "an operation never ended: its change is settled as kept");
            }
        }
        for op in &parts {
            if let Some(p) = self.parts.remove(op) {
                tracing::warn!(drive = %endpoint, %op, upload = %p.upload_id, part = p.number, "an operation never ended: its part is kept");
            }
        }
        (gone.len() + parts.len()) as u64
    }

    pub(super) fn clear(&mut self) {
        self.versions.clear();
        self.parts.clear();
        self.unsettled.clear();
    }

    /// Remembers that `op` ended (`keep`) before its change came, forgetting the oldest ends.
    fn end_early(&mut self, op: Uuid, keep: bool) {
        let now = Instant::now();
        while let Some((at, old)) = self.ended_order.front().copied() {
            if self.ended_order.len() < ENDED_OPS_MAX && now.duration_since(at) < ENDED_OP_MEMORY {
                break;
            }
            self.ended_order.pop_front();
            self.ended.remove(&old);
        }
        if self.ended.insert(op, keep).is_none() {
            self.ended_order.push_back((now, op));
        }
    }
}

/// The refusal of a change whose operation ended before it came.
fn ended_before(op: Uuid, keep: bool) -> DriveError {
    let outcome = if keep { "kept without it" } else { "undone" };
    DriveError::Refused(format!("operation {op} ended ({outcome}) before this change arrived"))
}

impl LocalDrive {
    /// Refuses a change of an operation that already ended (see [`Ops`]).
    pub(super) fn refuse_ended(&self, op: Uuid) -> DriveResult<()> {
        match self.ops.lock().ok().and_then(|o| o.ended.get(&op).copied()) {
            Some(keep) => Err(self.refused_late(op, keep)),
            None => Ok(()),
        }
    }

    /// Counts, logs and answers the refusal of a change that came after its operation ended.
    fn refused_late(&self, op: Uuid, keep: bool) -> DriveError {
        self.refused_late.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let e = ended_before(op, keep);
        tracing::warn!(drive = %self.endpoint, error = %e, "a late change was refused");
        e
    }

    /// After a change of `op` was applied: if the operation ended meanwhile, ends it now as
    /// told and refuses the change.
    pub(super) async fn settle_late(&self, op: Uuid, ended: Option<bool>) -> DriveResult<()> {
        let Some(keep) = ended else { return Ok(()) };
        self.finish_op(op, keep).await;
        Err(self.refused_late(op, keep))
    }

    /// Keeps what change `op` added and displaced, for its [`DriveCall::FinishOp`]. A second
    /// change of the same operation on the same object (a version stamped again) replaces the
    /// first one's version: the operation still displaces what the first change displaced, and
    /// the first change's own version, displaced by the second, is no longer part of it.
    ///
    /// Then settles the change if its operation ended while it was applied ([`Self::settle_late`]).
    pub(super) async fn remember(
        &self,
        op: Uuid,
        bucket: &str,
        key: &str,
        added: Option<ObjectVersion>,
        mut displaced: Vec<ObjectVersion>,
    ) -> DriveResult<()> {
        let ended = {
            let Ok(mut ops) = self.ops.lock() else { return Ok(()) };
            if let Some(earlier) = ops.versions.remove(&op) {
                ops.release(&earlier.bucket, &earlier.key);
                if earlier.bucket == bucket && earlier.key == key {
                    if let Some(first) = &earlier.added {
                        displaced.retain(|v| !(v.version_id == first.version_id && v.data == first.data));
                    }
                    displaced.extend(earlier.displaced);
                }
            }
            let began = Instant::now();
            let pending =
                PendingOp { bucket: bucket.to_owned(), key: key.to_owned(), added, displaced, began };
            self.abandon_old(&mut ops, began);
            ops.hold(bucket, key);
            ops.versions.insert(op, pending);
            ops.ended.get(&op).copied()
        };
        self.settle_late(op, ended).await
    }

    /// Ends operation `op` on this drive: frees what its change displaced (`keep`) or reverts
    /// it; an operation whose change has not arrived is remembered as ended.
    pub async fn finish_op(&self, op: Uuid, keep: bool) {
        let (part, pending) = {
            let Ok(mut ops) = self.ops.lock() else { return };
            let (part, pending) = (ops.parts.remove(&op), ops.versions.remove(&op));
            if part.is_none() && pending.is_none() {
                ops.end_early(op, keep);
            }
            (part, pending)
        };
        if let Some(p) = part {
            let change = Change::EndPart {
                bucket: p.bucket,
                key: p.key,
                upload_id: p.upload_id,
                number: p.number,
                old: p.old.map(Box::new),
                new_data: p.new_data,
                keep,
            };
            if let Err(e) = self.index().apply(change).await {
                tracing::warn!(drive = %self.endpoint, error = %e, keep, "ending a part commit failed");
            }
            return;
        }
        let Some(p) = pending else { return };
        let object = (p.bucket.clone(), p.key.clone());
        let change = if keep {
            // Kept: the record is final now; freeing what it displaced changes no record.
            self.release_change(&object.0, &object.1);
            let kept_id = p.added.as_ref().map(|v| v.data.data_id());
            let versions: Vec<ObjectVersion> =
                p.displaced.into_iter().filter(|v| Some(v.data.data_id()) != kept_id).collect();
            if versions.is_empty() {
                return;
            }
            Change::FreeData { versions }
        } else {
            Change::Restore {
                bucket: p.bucket,
                key: p.key,
                remove: p.added.map(Box::new),
                restore: p.displaced,
            }
        };
        if let Err(e) = self.index().apply(change).await {
            tracing::warn!(drive = %self.endpoint, error = %e, keep, "finishing a change failed");
        }
        if !keep {
            // Undone: settled once the record is back.
            self.release_change(&object.0, &object.1);
        }
    }

    /// [`Ops::abandon_old`], counted.
    fn abandon_old(&self, ops: &mut Ops, now: Instant) {
        let n = ops.abandon_old(now, self.pending_op_max, &self.endpoint);
        if n > 0 {
            self.abandoned_ops.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn release_change(&self, bucket: &str, key: &str) {
        if let Ok(mut ops) = self.ops.lock() {
            ops.release(bucket, key);
        }
    }

    /// Marks a change of the object as on its way until the returned guard drops: the change's
    /// caller holds it from before the change is applied until after [`Self::remember`], so the
    /// object never looks settled in between.
    pub(super) fn begin_change<'a>(&'a self, bucket: &'a str, key: &'a str) -> Changing<'a> {
        if let Ok(mut ops) = self.ops.lock() {
            ops.hold(bucket, key);
        }
        Changing { drive: self, bucket, key }
    }

    /// See [`DriveCall::ReadSettled`](crate::DriveCall::ReadSettled): the lookup is made under
    /// the operations' lock, so no change can start, be remembered or end in between.
    pub(super) fn read_settled_now(
        &self,
        bucket: &str,
        key: &str,
        inline: bool,
    ) -> DriveResult<crate::Settled> {
        let mut ops =
            self.ops.lock().map_err(|_| DriveError::Stopped("the operations' lock is poisoned".into()))?;
        self.abandon_old(&mut ops, Instant::now());
        let settled = ops.is_settled(bucket, key);
        let record = match self.index().read_record(bucket, key, inline) {
            Ok(r) => Some(r),
            Err(DriveError::NotFound) => None,
            Err(e) => return Err(e),
        };
        drop(ops);
        Ok(crate::Settled { record, settled })
    }
}

/// A change of one object on its way (see [`LocalDrive::begin_change`]).
pub(super) struct Changing<'a> {
    drive: &'a LocalDrive,
    bucket: &'a str,
    key: &'a str,
}

impl Drop for Changing<'_> {
    fn drop(&mut self) {
        self.drive.release_change(self.bucket, self.key);
    }
}
