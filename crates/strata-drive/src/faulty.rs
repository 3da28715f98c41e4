//! [`FaultyDrive`]: a [`Drive`] wrapper for tests that fails, slows, hangs, or cuts shard writes
//! short, per kind of operation.
//!
//! Faults come from explicit [`Rule`]s, added and cleared while a test runs, and from an optional
//! seeded [`Chaos`] plan that draws a fault for each operation from a deterministic generator (so
//! the same seed gives each drive the same sequence of decisions; which request meets which
//! decision still follows the interleaving of tasks). Rules are checked first, in the order they
//! were added; the first that fires decides.
//!
//! Most faults act before the operation reaches the inner drive: a failed operation never
//! happened there, a delayed or hung one happens after its wait. Three act after the fact, on
//! drive calls ([`Drive::call`]), as a drive across a network can: the call is applied and its
//! answer lost ([`Fault::LoseAnswer`]), applied and answered late ([`Fault::AnswerLate`]), or
//! applied late, after the caller may have given up on it ([`Fault::LandLate`]: the call runs
//! in a task of its own, so it lands even when the caller's future is dropped at a time-out). A hang lasts until the test calls
//! [`FaultyDrive::clear`] (or forever): the caller must give up on it, which is what per-drive
//! time-outs are for. A cut write ([`Fault::CutAfter`]) stores at most its byte budget in the
//! shard file (the frame that crosses it is written short) and fails from there on, as a full or
//! failing device does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use strata_erasure::bitrot;
use tokio::sync::watch;
use uuid::Uuid;

use crate::sim::SimRng;
use crate::{CallContext, Drive, DriveCall, DriveError, DriveReply, DriveResult, ShardReader, ShardWriter};

/// The kinds of drive operation a fault can target: one per [`Drive`] method, plus the shard
/// writer's and reader's own calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    DiskInfo,
    ReadFormat,
    WriteFormat,
    ReadState,
    WriteState,
    MakeBucket,
    DeleteBucket,
    UpdateBucket,
    ListBuckets,
    StatBucket,
    ReadRecord,
    ReadInline,
    CreateShardFile,
    /// [`ShardWriter::write_frame`].
    WriteFrame,
    /// [`ShardWriter::finish`].
    FinishShardFile,
    OpenShardFile,
    /// [`ShardReader::read_at`] and [`ShardReader::read_frame`].
    ReadShard,
    AbortShardFile,
    CommitVersion,
    UpdateVersion,
    DeleteVersion,
    FinishOp,
    PutUpload,
    ReadUpload,
    CommitPart,
    ListParts,
    CompleteUpload,
    DropUpload,
    ListUploads,
    List,
    SweepOrphans,
}

impl Op {
    /// The kind of `call`.
    pub fn of(call: &DriveCall) -> Op {
        use DriveCall as C;
        match call {
            C::DiskInfo => Op::DiskInfo,
            C::ReadFormat => Op::ReadFormat,
            C::WriteFormat(_) => Op::WriteFormat,
            C::ReadState(_) => Op::ReadState,
            C::WriteState(..) => Op::WriteState,
            C::MakeBucket(..) => Op::MakeBucket,
            C::DeleteBucket(_) => Op::DeleteBucket,
            C::UpdateBucket(..) => Op::UpdateBucket,
            C::ListBuckets => Op::ListBuckets,
            C::StatBucket(_) => Op::StatBucket,
            C::ReadRecord { .. } | C::ReadSettled { .. } | C::ReadVersion { .. } => Op::ReadRecord,
            C::ReadInline(_) => Op::ReadInline,
            C::AbortShard(_) => Op::AbortShardFile,
            C::CommitVersion { .. } => Op::CommitVersion,
            C::UpdateVersion { .. } => Op::UpdateVersion,
            C::DeleteVersion { .. } => Op::DeleteVersion,
            C::FinishOp { .. } => Op::FinishOp,
            C::PutUpload { .. } => Op::PutUpload,
            C::ReadUpload { .. } => Op::ReadUpload,
            C::CommitPart { .. } => Op::CommitPart,
            C::ListParts(_) => Op::ListParts,
            C::CompleteUpload { .. } => Op::CompleteUpload,
            C::DropUpload { .. } => Op::DropUpload,
            C::ListUploads { .. } => Op::ListUploads,
            C::List { .. } => Op::List,
            C::SweepOrphans { .. } => Op::SweepOrphans,
        }
    }

    /// Operations that change what the drive holds (the write paths' commits and their undos).
    pub const COMMITS: [Op; 7] = [
        Op::CommitVersion,
        Op::UpdateVersion,
        Op::DeleteVersion,
        Op::FinishOp,
        Op::CommitPart,
        Op::CompleteUpload,
        Op::DropUpload,
    ];
}

/// What happens to an operation a rule or the chaos plan picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with an I/O error. Operations that answer nothing (`finish_op`, `abort_shard_file`)
    /// are dropped instead, as a lost message would be.
    Fail,
    /// Fails as the process does when it is out of open files (`EMFILE`): the drive is fine.
    OutOfFiles,
    /// Waits this long, then runs.
    Delay(Duration),
    /// Waits until [`FaultyDrive::clear`], then runs.
    Hang,
    /// Shard writes only ([`Op::WriteFrame`]): the file takes this many bytes in all, then every
    /// write fails. Elsewhere it is no fault.
    CutAfter(u64),
    /// Shard writes only ([`Op::WriteFrame`]): the frame is stored with one byte of its shard
    /// flipped and the write reports success, as a drive that acknowledges what it did not store.
    /// Elsewhere it is no fault.
    Lie,
    /// Drive calls only: the call is applied, and the caller gets an I/O error instead of its
    /// answer.
    LoseAnswer,
    /// Drive calls only: the call is applied at once and answered this much later.
    AnswerLate(Duration),
    /// Drive calls only: the call is applied this much later, whether or not the caller still
    /// waits for it (see [`FaultyDrive::landed_late`]).
    LandLate(Duration),
}

/// An explicit fault: which operations, what, and on which of their calls.
#[derive(Debug, Clone)]
pub struct Rule {
    /// `None` = every operation.
    pub op: Option<Op>,
    pub fault: Fault,
    /// Matching calls that pass untouched before the rule fires.
    pub skip: u64,
    /// Calls the rule fires on (`None` = every one after `skip`).
    pub times: Option<u64>,
}

impl Rule {
    /// `fault` on every call of `op`.
    pub fn new(op: Op, fault: Fault) -> Self {
        Self { op: Some(op), fault, skip: 0, times: None }
    }

    /// `fault` on every call of every operation.
    pub fn every(fault: Fault) -> Self {
        Self { op: None, fault, skip: 0, times: None }
    }

    /// Lets the first `calls` matching calls pass.
    pub fn after(mut self, calls: u64) -> Self {
        self.skip = calls;
        self
    }

    /// Fires on `calls` calls only.
    pub fn times(mut self, calls: u64) -> Self {
        self.times = Some(calls);
        self
    }
}

/// Seeded random faults: each operation of the listed kinds draws one.
#[derive(Debug, Clone)]
pub struct Chaos {
    pub seed: u64,
    /// Kinds of operation that draw (empty = all).
    pub ops: Vec<Op>,
    /// Chance of [`Fault::Fail`].
    pub fail: f64,
    /// Chance of a [`Fault::Delay`] of up to `delay_max` (uniform).
    pub delay: f64,
    pub delay_max: Duration,
    /// Chance of [`Fault::Hang`].
    pub hang: f64,
}

impl Chaos {
    /// Only delays, of up to `delay_max` with chance `delay`: widens race windows without
    /// failing anything.
    pub fn delays(seed: u64, delay: f64, delay_max: Duration) -> Self {
        Self { seed, ops: Vec::new(), fail: 0.0, delay, delay_max, hang: 0.0 }
    }
}

struct State {
    rules: Vec<Rule>,
    chaos: Option<(Chaos, SimRng)>,
}

/// A drive that injects faults into another (see the module docs).
pub struct FaultyDrive {
    inner: Arc<dyn Drive>,
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped by `clear`: hung operations wait for a change.
    release: watch::Sender<u64>,
    injected: AtomicU64,
    /// Calls a [`Fault::LandLate`] delayed, and those of them applied (after their wait),
    /// answered or not.
    late: AtomicU64,
    landed_late: AtomicU64,
}

/// A decision for one call.
enum Action {
    Fail,
    OutOfFiles,
    Delay(Duration),
    Hang(watch::Receiver<u64>),
    Twist(WriteTwist),
    After(AfterFault),
}

/// What a fault does to a drive call after (or instead of) its wait: see [`Fault::LoseAnswer`],
/// [`Fault::AnswerLate`], [`Fault::LandLate`].
#[derive(Debug, Clone, Copy)]
enum AfterFault {
    LoseAnswer,
    AnswerLate(Duration),
    LandLate(Duration),
}

/// What a fault does to a shard write that goes ahead.
#[derive(Debug, Clone, Copy)]
enum WriteTwist {
    /// The file's byte budget.
    Cut(u64),
    /// The frame is stored corrupted; the write reports success.
    Lie,
}

impl std::fmt::Debug for FaultyDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FaultyDrive({:?})", self.inner)
    }
}

impl FaultyDrive {
    /// `inner` with no faults yet.
    pub fn new(inner: Arc<dyn Drive>) -> Self {
        let (release, _) = watch::channel(0);
        let state = State { rules: Vec::new(), chaos: None };
        Self {
            inner,
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                release,
                injected: AtomicU64::new(0),
                late: AtomicU64::new(0),
                landed_late: AtomicU64::new(0),
            }),
        }
    }

    /// `inner` with seeded random faults.
    pub fn with_chaos(inner: Arc<dyn Drive>, chaos: Chaos) -> Self {
        let d = Self::new(inner);
        d.set_chaos(Some(chaos));
        d
    }

    pub fn inner(&self) -> &Arc<dyn Drive> {
        &self.inner
    }

    pub fn add_rule(&self, rule: Rule) {
        self.shared.lock().rules.push(rule);
    }

    /// Starts (or, with `None`, stops) seeded random faults.
    pub fn set_chaos(&self, chaos: Option<Chaos>) {
        self.shared.lock().chaos = chaos.map(|c| {
            let rng = SimRng::new(c.seed);
            (c, rng)
        });
    }

    /// Removes every rule and the chaos plan, and lets hung operations go on.
    pub fn clear(&self) {
        let mut state = self.shared.lock();
        state.rules.clear();
        state.chaos = None;
        self.shared.release.send_modify(|g| *g += 1);
    }

    /// Faults injected so far (every kind).
    pub fn faults_injected(&self) -> u64 {
        self.shared.injected.load(Ordering::Relaxed)
    }

    /// Calls a [`Fault::LandLate`] delayed that have now been applied.
    pub fn landed_late(&self) -> u64 {
        self.shared.landed_late.load(Ordering::Relaxed)
    }

    /// Calls a [`Fault::LandLate`] delayed that have not been applied yet.
    pub fn late_in_flight(&self) -> u64 {
        self.shared.late.load(Ordering::Relaxed) - self.landed_late()
    }

    async fn inject(&self, op: Op) -> DriveResult<()> {
        self.shared.inject(op).await.map(drop)
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn decide(&self, op: Op) -> Option<Action> {
        let mut state = self.lock();
        let mut fault = None;
        for rule in state.rules.iter_mut().filter(|r| r.op.is_none_or(|o| o == op)) {
            if rule.skip > 0 {
                rule.skip -= 1;
                continue;
            }
            match &mut rule.times {
                Some(0) => continue,
                Some(n) => *n -= 1,
                None => {}
            }
            fault = Some(rule.fault);
            break;
        }
        if fault.is_none() {
            if let Some((chaos, rng)) = &mut state.chaos {
                if chaos.ops.is_empty() || chaos.ops.contains(&op) {
                    let draw = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    fault = if draw < chaos.fail {
                        Some(Fault::Fail)
                    } else if draw < chaos.fail + chaos.hang {
                        Some(Fault::Hang)
                    } else if draw < chaos.fail + chaos.hang + chaos.delay {
                        let max = chaos.delay_max.as_micros().max(1) as u64;
                        Some(Fault::Delay(Duration::from_micros(rng.below(max + 1))))
                    } else {
                        None
                    };
                }
            }
        }
        let action = match fault? {
            Fault::Fail => Action::Fail,
            Fault::OutOfFiles => Action::OutOfFiles,
            Fault::Delay(d) => Action::Delay(d),
            Fault::Hang => Action::Hang(self.release.subscribe()),
            Fault::CutAfter(n) if op == Op::WriteFrame => Action::Twist(WriteTwist::Cut(n)),
            Fault::Lie if op == Op::WriteFrame => Action::Twist(WriteTwist::Lie),
            Fault::LoseAnswer => Action::After(AfterFault::LoseAnswer),
            Fault::AnswerLate(d) => Action::After(AfterFault::AnswerLate(d)),
            Fault::LandLate(d) => Action::After(AfterFault::LandLate(d)),
            Fault::CutAfter(_) | Fault::Lie => return None,
        };
        self.injected.fetch_add(1, Ordering::Relaxed);
        Some(action)
    }

    /// Applies the fault drawn for `op`, if any: `Err` for a failure; `Ok(Some(_))` for what a
    /// shard write must do to its frame. Faults after the fact are no fault here.
    async fn inject(&self, op: Op) -> DriveResult<Option<WriteTwist>> {
        match self.inject_call(op).await? {
            Injected::Twist(t) => Ok(Some(t)),
            Injected::None | Injected::After(_) => Ok(None),
        }
    }

    /// [`Self::inject`] for a drive call, which may also meet a fault after the fact.
    async fn inject_call(&self, op: Op) -> DriveResult<Injected> {
        match self.decide(op) {
            None => Ok(Injected::None),
            Some(Action::Fail) => {
                Err(DriveError::Io(std::io::Error::other(format!("injected fault: {op:?}"))))
            }
            Some(Action::OutOfFiles) => {
                Err(std::io::Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error()).into())
            }
            Some(Action::Delay(d)) => {
                tokio::time::sleep(d).await;
                Ok(Injected::None)
            }
            Some(Action::Hang(mut release)) => {
                // Err: the sender is gone (never, while the drive lives); then hang for good.
                if release.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                Ok(Injected::None)
            }
            Some(Action::Twist(t)) => Ok(Injected::Twist(t)),
            Some(Action::After(a)) => Ok(Injected::After(a)),
        }
    }
}

/// What a call meets once its wait, if any, is over.
enum Injected {
    None,
    Twist(WriteTwist),
    After(AfterFault),
}

struct FaultyWriter {
    inner: Box<dyn ShardWriter>,
    shared: Arc<Shared>,
    written: u64,
    /// Byte budget of the file once a cut fired.
    cut: Option<u64>,
}

#[async_trait]
impl ShardWriter for FaultyWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        let mut shard = shard;
        match self.shared.inject(Op::WriteFrame).await? {
            Some(WriteTwist::Cut(n)) => self.cut = Some(self.cut.map_or(n, |c| c.min(n))),
            Some(WriteTwist::Lie) if !shard.is_empty() => {
                let mut bad = shard.to_vec();
                bad[0] ^= 0x01;
                shard = Bytes::from(bad);
            }
            _ => {}
        }
        let frame_size = (bitrot::HASH_SIZE + shard.len()) as u64;
        if let Some(budget) = self.cut {
            if self.written + frame_size > budget {
                let room = budget.saturating_sub(self.written) as usize;
                if room > bitrot::HASH_SIZE {
                    self.inner.write_frame(hash, shard.slice(..room - bitrot::HASH_SIZE)).await?;
                    self.written += room as u64;
                }
                return Err(DriveError::Io(std::io::Error::other("injected fault: write cut short")));
            }
        }
        self.inner.write_frame(hash, shard).await?;
        self.written += frame_size;
        Ok(())
    }

    async fn finish(&mut self) -> DriveResult<()> {
        self.shared.inject(Op::FinishShardFile).await?;
        self.inner.finish().await
    }
}

struct FaultyReader {
    inner: Box<dyn ShardReader>,
    shared: Arc<Shared>,
}

#[async_trait]
impl ShardReader for FaultyReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        self.shared.inject(Op::ReadShard).await?;
        self.inner.read_at(offset, len).await
    }

    async fn read_frame(
        &self,
        offset: u64,
        shard_size: usize,
        key: strata_erasure::bitrot::Key,
    ) -> DriveResult<Bytes> {
        self.shared.inject(Op::ReadShard).await?;
        self.inner.read_frame(offset, shard_size, key).await
    }
}

#[async_trait]
impl Drive for FaultyDrive {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn node(&self) -> Option<&str> {
        self.inner.node()
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        let op = Op::of(&call);
        let after = match self.shared.inject_call(op).await? {
            Injected::After(a) => a,
            Injected::None | Injected::Twist(_) => return self.inner.call(ctx, call).await,
        };
        match after {
            AfterFault::LoseAnswer => {
                let applied = self.inner.call(ctx, call).await;
                tracing::debug!(?op, ok = applied.is_ok(), "injected fault: answer lost");
                Err(DriveError::Io(std::io::Error::other(format!(
                    "injected fault: the answer to {op:?} was lost"
                ))))
            }
            AfterFault::AnswerLate(d) => {
                let answer = self.inner.call(ctx, call).await;
                tokio::time::sleep(d).await;
                answer
            }
            AfterFault::LandLate(d) => {
                let (inner, shared) = (self.inner.clone(), self.shared.clone());
                shared.late.fetch_add(1, Ordering::Relaxed);
                let landing = tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    let answer = inner.call(ctx, call).await;
                    shared.landed_late.fetch_add(1, Ordering::Relaxed);
                    answer
                });
                landing.await.unwrap_or_else(|e| Err(DriveError::Stopped(format!("a late call failed: {e}"))))
            }
        }
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.inject(Op::CreateShardFile).await?;
        let inner = self.inner.create_shard_file(data_id).await?;
        Ok(Box::new(FaultyWriter { inner, shared: self.shared.clone(), written: 0, cut: None }))
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        self.inject(Op::OpenShardFile).await?;
        let inner = self.inner.open_shard_file_first(data_id, first).await?;
        Ok(Box::new(FaultyReader { inner, shared: self.shared.clone() }))
    }

    fn commit_totals(&self) -> Option<crate::CommitTotals> {
        self.inner.commit_totals()
    }
}
