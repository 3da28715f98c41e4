//! [`Timed`]: every drive operation of the object layer under a time-out.
//!
//! A drive that stops answering (a stalled device, a hung mount, a node that takes requests and
//! never replies) must cost a request one time-out, not the request: each set wraps its drives in
//! [`Timed`] at start, and an operation (or a shard writer's or reader's call) that has not
//! answered within [`LayerOptions::drive_op_timeout`](crate::LayerOptions) fails with
//! `DriveError::TimedOut`, which every quorum rule counts as a failed drive. Operations that answer
//! nothing (`finish_op`, `abort_shard_file`) are given up on the same way. `sweep_orphans` walks
//! a whole drive and runs in the background, so it has no time-out.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::{
    CallContext, Drive, DriveCall, DriveError, DriveReply, DriveResult, ShardReader, ShardWriter,
};
use uuid::Uuid;

/// A drive whose every operation fails past a time-out.
#[derive(Debug)]
pub(crate) struct Timed {
    inner: Arc<dyn Drive>,
    timeout: Duration,
}

impl Timed {
    pub fn wrap(inner: Arc<dyn Drive>, timeout: Duration) -> Arc<dyn Drive> {
        Arc::new(Self { inner, timeout })
    }
}

/// Runs `fut`; past `timeout`, drops it and answers the drive offline.
async fn within<T>(
    endpoint: &str,
    timeout: Duration,
    op: &'static str,
    fut: impl Future<Output = DriveResult<T>>,
) -> DriveResult<T> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(drive = endpoint, op, ?timeout, "drive operation timed out");
            Err(DriveError::TimedOut { op: format!("{endpoint}: {op}"), after: timeout })
        }
    }
}

struct TimedWriter {
    inner: Box<dyn ShardWriter>,
    endpoint: String,
    timeout: Duration,
}

#[async_trait]
impl ShardWriter for TimedWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        within(&self.endpoint, self.timeout, "write_frame", self.inner.write_frame(hash, shard)).await
    }

    async fn finish(&mut self) -> DriveResult<()> {
        within(&self.endpoint, self.timeout, "finish", self.inner.finish()).await
    }
}

struct TimedReader {
    inner: Box<dyn ShardReader>,
    endpoint: String,
    timeout: Duration,
}

#[async_trait]
impl ShardReader for TimedReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        within(&self.endpoint, self.timeout, "read_at", self.inner.read_at(offset, len)).await
    }

    async fn read_frame(
        &self,
        offset: u64,
        shard_size: usize,
        key: strata_erasure::bitrot::Key,
    ) -> DriveResult<Bytes> {
        within(&self.endpoint, self.timeout, "read_frame", self.inner.read_frame(offset, shard_size, key))
            .await
    }
}

impl Timed {
    async fn run<T>(&self, op: &'static str, fut: impl Future<Output = DriveResult<T>>) -> DriveResult<T> {
        within(self.inner.endpoint(), self.timeout, op, fut).await
    }
}

#[async_trait]
impl Drive for Timed {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn node(&self) -> Option<&str> {
        self.inner.node()
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        if let DriveCall::SweepOrphans { .. } = call {
            // Walks a whole drive, in the background: no time-out.
            return self.inner.call(ctx, call).await;
        }
        let name = call.name();
        self.run(name, self.inner.call(ctx, call)).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let inner = self.run("create_shard_file", self.inner.create_shard_file(data_id)).await?;
        let endpoint = self.inner.endpoint().to_owned();
        Ok(Box::new(TimedWriter { inner, endpoint, timeout: self.timeout }))
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        let opened = self.inner.open_shard_file_first(data_id, first);
        let inner = self.run("open_shard_file", opened).await?;
        let endpoint = self.inner.endpoint().to_owned();
        Ok(Box::new(TimedReader { inner, endpoint, timeout: self.timeout }))
    }

    fn commit_totals(&self) -> Option<strata_drive::CommitTotals> {
        self.inner.commit_totals()
    }
}
