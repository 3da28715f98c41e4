//! [`Metered`]: a [`Drive`] that reports every operation (name, duration, failure) to a
//! [`DriveObserver`] and forwards it unchanged. It wraps any drive, so local and (later) remote
//! drives are measured alike. Shard reads and writes are measured per frame.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

use crate::{CallContext, Drive, DriveCall, DriveError, DriveReply, DriveResult, ShardReader, ShardWriter};

/// Receives one call per drive operation.
pub trait DriveObserver: Send + Sync {
    /// `failed` is true for errors that say something about the drive (not for "not found" and
    /// the other answers a healthy drive gives).
    fn observe(&self, drive: &str, op: &'static str, seconds: f64, failed: bool);
}

/// Whether an error counts against the drive.
fn is_failure(e: &DriveError) -> bool {
    e.is_unavailable() || matches!(e, DriveError::Corrupt(_) | DriveError::Io(_) | DriveError::Index(_))
}

#[derive(Clone)]
struct Probe {
    drive: Arc<str>,
    observer: Arc<dyn DriveObserver>,
}

impl Probe {
    async fn time<T>(
        &self,
        op: &'static str,
        fut: impl std::future::Future<Output = DriveResult<T>>,
    ) -> DriveResult<T> {
        let started = Instant::now();
        let r = fut.await;
        let failed = r.as_ref().err().is_some_and(is_failure);
        self.observer.observe(&self.drive, op, started.elapsed().as_secs_f64(), failed);
        r
    }
}

pub struct Metered {
    inner: Arc<dyn Drive>,
    probe: Probe,
}

impl Metered {
    pub fn new(inner: Arc<dyn Drive>, observer: Arc<dyn DriveObserver>) -> Self {
        let drive: Arc<str> = inner.endpoint().into();
        Self { inner, probe: Probe { drive, observer } }
    }
}

impl std::fmt::Debug for Metered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered").field("inner", &self.inner).finish()
    }
}

struct MeteredWriter {
    inner: Box<dyn ShardWriter>,
    probe: Probe,
}

#[async_trait]
impl ShardWriter for MeteredWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        self.probe.clone().time("write_frame", self.inner.write_frame(hash, shard)).await
    }

    async fn finish(&mut self) -> DriveResult<()> {
        self.probe.clone().time("sync_shard_file", self.inner.finish()).await
    }
}

struct MeteredReader {
    inner: Box<dyn ShardReader>,
    probe: Probe,
}

#[async_trait]
impl ShardReader for MeteredReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        self.probe.time("read_frame", self.inner.read_at(offset, len)).await
    }
}

#[async_trait]
impl Drive for Metered {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    fn node(&self) -> Option<&str> {
        self.inner.node()
    }

    async fn call(&self, ctx: CallContext, call: DriveCall) -> DriveResult<DriveReply> {
        if call.answers_nothing() {
            return self.inner.call(ctx, call).await;
        }
        let name = call.name();
        self.probe.time(name, self.inner.call(ctx, call)).await
    }

    async fn create_shard_file(&self, data_id: Uuid) -> DriveResult<Box<dyn ShardWriter>> {
        let inner = self.probe.time("create_shard_file", self.inner.create_shard_file(data_id)).await?;
        Ok(Box::new(MeteredWriter { inner, probe: self.probe.clone() }))
    }

    async fn open_shard_file_first(
        &self,
        data_id: Uuid,
        first: Option<(u64, usize)>,
    ) -> DriveResult<Box<dyn ShardReader>> {
        let opened = self.inner.open_shard_file_first(data_id, first);
        let inner = self.probe.time("open_shard_file", opened).await?;
        Ok(Box::new(MeteredReader { inner, probe: self.probe.clone() }))
    }

    fn commit_totals(&self) -> Option<crate::CommitTotals> {
        self.inner.commit_totals()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{DriveOps, LocalDrive};

    #[derive(Default)]
    struct Seen(Mutex<Vec<(&'static str, bool)>>);

    impl DriveObserver for Seen {
        fn observe(&self, _drive: &str, op: &'static str, seconds: f64, failed: bool) {
            assert!(seconds >= 0.0);
            if let Ok(mut v) = self.0.lock() {
                v.push((op, failed));
            }
        }
    }

    #[tokio::test]
    async fn reports_each_operation_and_only_real_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = LocalDrive::open(dir.path()).expect("open");
        let seen = Arc::new(Seen::default());
        let drive = Metered::new(Arc::new(local), seen.clone());
        drive.write_format(b"{}".to_vec()).await.expect("format");
        drive.make_bucket("b", vec![1]).await.expect("make");
        assert!(matches!(drive.read_record("b", "nope", false).await, Err(DriveError::NotFound)));
        let id = Uuid::new_v4();
        let mut w = drive.create_shard_file(id).await.expect("create");
        w.write_frame([0; 32], Bytes::from_static(b"abc")).await.expect("write");
        w.finish().await.expect("finish");
        drop(w);
        drive.abort_shard_file(id).await;
        let seen = seen.0.lock().expect("lock").clone();
        assert!(is_failure(&DriveError::Io(std::io::Error::other("disk"))));
        assert!(!is_failure(&DriveError::BucketExists));
        assert_eq!(
            seen,
            [
                ("write_format", false),
                ("make_bucket", false),
                ("read_record", false),
                ("create_shard_file", false),
                ("write_frame", false),
                ("sync_shard_file", false),
            ]
        );
    }
}
