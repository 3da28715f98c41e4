//! [`FaultyDrive`]: a [`Drive`] wrapper for tests that fails, slows, hangs, or cuts shard writes
//! short, per kind of operation.
//!
//! Faults come from explicit [`Rule`]s, added and cleared while a test runs, and from an optional
//! seeded [`Chaos`] plan that draws a fault for each operation from a deterministic generator (so
//! the same seed gives each drive the same sequence of decisions; which request meets which
//! decision still follows the interleaving of tasks). Rules are checked first, in the order they
//! were added; the first that fires decides.
//!
//! A fault acts before the operation reaches the inner drive: a failed operation never happened
//! there, a delayed or hung one happens after its wait. A hang lasts until the test calls
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
            C::ReadRecord { .. } | C::ReadVersion { .. } => Op::ReadRecord,
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
}

/// A decision for one call.
enum Action {
    Fail,
    OutOfFiles,
    Delay(Duration),
    Hang(watch::Receiver<u64>),
    Twist(WriteTwist),
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
            shared: Arc::new(Shared { state: Mutex::new(state), release, injected: AtomicU64::new(0) }),
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
            Fault::CutAfter(_) | Fault::Lie => return None,
        };
        self.injected.fetch_add(1, Ordering::Relaxed);
        Some(action)
    }

    /// Applies the fault drawn for `op`, if any: `Err` for a failure; `Ok(Some(_))` for what a
    /// shard write must do to its frame.
    async fn inject(&self, op: Op) -> DriveResult<Option<WriteTwist>> {
        match self.decide(op) {
            None => Ok(None),
            Some(Action::Fail) => {
                Err(DriveError::Io(std::io::Error::other(format!("injected fault: {op:?}"))))
            }
            Some(Action::OutOfFiles) => {
                Err(std::io::Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error()).into())
            }
            Some(Action::Delay(d)) => {
                tokio::time::sleep(d).await;
                Ok(None)
            }
            Some(Action::Hang(mut release)) => {
                // Err: the sender is gone (never, while the drive lives); then hang for good.
                if release.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                Ok(None)
            }
            Some(Action::Twist(t)) => Ok(Some(t)),
        }
    }
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

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        self.inject(Op::of(&call)).await?;
        self.inner.call(ctx, call).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        self.inject(Op::CreateShardFile).await?;
        let inner = self.inner.create_shard_file(data_id).await?;
        Ok(Box::new(FaultyWriter { inner, shared: self.shared.clone(), written: 0, cut: None }))
    }

    async fn open_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardReader>> {
        self.inject(Op::OpenShardFile).await?;
        let inner = self.inner.open_shard_file(data_id).await?;
        Ok(Box::new(FaultyReader { inner, shared: self.shared.clone() }))
    }

    fn commit_totals(&self) -> Option<(u64, u64)> {
        self.inner.commit_totals()
    }
}
