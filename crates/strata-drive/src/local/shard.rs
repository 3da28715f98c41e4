//! A local drive's shard files: the writer of a new one (removed if it never finishes), the
//! reader of a committed one, and the claim that settles a create whose caller went away.

use std::io::IoSlice;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use strata_erasure::bitrot;

use super::blocking;
use crate::fs::{Fs, FsFile};
use crate::{DriveError, DriveResult, ShardReader, ShardWriter};

/// Who of a shard file's creation and its cancelled caller comes last (see `create_shard_file`).
#[derive(Default)]
pub(super) struct CreateClaim {
    /// The file the create made, once it made one.
    pub(super) created: Option<PathBuf>,
    pub(super) abandoned: bool,
}

/// Armed while `create_shard_file` waits for its create: dropped armed, the call was cancelled.
pub(super) struct AbandonedCreate {
    pub(super) claim: Arc<Mutex<CreateClaim>>,
    pub(super) fs: Arc<dyn Fs>,
    pub(super) armed: bool,
}

impl Drop for AbandonedCreate {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(mut c) = self.claim.lock() else { return };
        c.abandoned = true;
        if let Some(path) = c.created.take() {
            remove_in_background(self.fs.clone(), path);
        }
    }
}

pub(super) struct LocalShardWriter {
    pub(super) file: Option<Box<dyn FsFile>>,
    /// The temp file, removed when the writer is dropped before it finished (a request that
    /// failed or was cancelled half way): nothing will ever commit it.
    pub(super) path: PathBuf,
    /// Where the finished file goes when `path` is a name of its own (see `create_shard_file`).
    pub(super) rename_to: Option<PathBuf>,
    pub(super) fs: Arc<dyn Fs>,
    pub(super) finished: bool,
}

impl Drop for LocalShardWriter {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        remove_in_background(self.fs.clone(), std::mem::take(&mut self.path));
    }
}

/// Removes a file from a `Drop`, off the async threads when there is a runtime.
fn remove_in_background(fs: Arc<dyn Fs>, path: PathBuf) {
    let remove = move || {
        let _ = fs.remove_file(&path);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(remove)),
        Err(_) => remove(),
    }
}

#[async_trait]
impl ShardWriter for LocalShardWriter {
    async fn write_frame(&mut self, hash: [u8; 32], shard: Bytes) -> DriveResult<()> {
        let file =
            self.file.take().ok_or_else(|| DriveError::Stopped("the shard writer failed before".into()))?;
        let file = blocking(move || {
            file.append_vectored(&mut [IoSlice::new(&hash), IoSlice::new(&shard)])?;
            Ok(file)
        })
        .await?;
        self.file = Some(file);
        Ok(())
    }

    async fn finish(&mut self) -> DriveResult<()> {
        let file =
            self.file.take().ok_or_else(|| DriveError::Stopped("the shard writer failed before".into()))?;
        let (fs, from, to) = (self.fs.clone(), self.path.clone(), self.rename_to.clone());
        blocking(move || {
            file.sync_data()?;
            // The bytes are durable; keeping them in the page cache only displaces hotter pages
            // (and on this VM kind every fresh page-cache page is a costly host fault). Reads of
            // new objects come from the drive.
            file.drop_cache();
            if let Some(to) = to {
                fs.rename(&from, &to)?;
            }
            Ok(())
        })
        .await?;
        self.finished = true;
        Ok(())
    }
}

pub(super) struct LocalShardReader {
    pub(super) file: Arc<dyn FsFile>,
}

#[async_trait]
impl ShardReader for LocalShardReader {
    async fn read_at(&self, offset: u64, len: usize) -> DriveResult<Bytes> {
        let file = self.file.clone();
        blocking(move || Ok(strata_types::buffers::into_bytes(read_exact(file.as_ref(), offset, len)?))).await
    }

    /// Verifies on the blocking thread that read the frame, so hashing never runs on the async
    /// core threads.
    async fn read_frame(&self, offset: u64, shard_size: usize, key: bitrot::Key) -> DriveResult<Bytes> {
        let file = self.file.clone();
        blocking(move || {
            let frame = read_exact(file.as_ref(), offset, bitrot::HASH_SIZE + shard_size)?;
            let range = bitrot::verify_with(key, &frame, shard_size)
                .map_err(|e| DriveError::Corrupt(e.to_string()))?;
            Ok(strata_types::buffers::into_bytes(frame).slice(range))
        })
        .await
    }
}

/// `len` bytes of `file` at `offset`, into a buffer of the pool; a file that ends before is
/// `Corrupt`.
fn read_exact(file: &dyn FsFile, offset: u64, len: usize) -> DriveResult<Vec<u8>> {
    let mut buf = strata_types::buffers::take(len);
    file.read_exact_at(&mut buf, offset).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => DriveError::Corrupt("shard file is short".into()),
        _ => DriveError::from(e),
    })?;
    Ok(buf)
}
