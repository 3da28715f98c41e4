//! [`FaultyFs`]: a filesystem for tests whose calls fail with the errors a real device or
//! filesystem gives (`ENOSPC`, `EIO`, `EROFS`), per kind of call, under a [`crate::LocalDrive`].
//!
//! Where [`crate::FaultyDrive`] fails a drive's operations from outside, this fails the
//! filesystem under a real drive, so the drive's own handling is what is tested: a shard write
//! that meets a full disk, a rename on a file system remounted read-only, a folder or file sync
//! that fails, and a sync of the metadata index's file that fails inside its commit thread.

use std::fs::OpenOptions;
use std::io::{self, IoSlice};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::fs::{DirEntry, FileMeta, Fs, FsFile, RealFs};

/// The kinds of filesystem call a fault can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsOp {
    /// Writing to a file: appending (shard files, state files), or over what it holds (a
    /// recycled commit log).
    Append,
    /// `fdatasync` of a file written through [`Fs`].
    SyncData,
    /// `fsync` of a folder.
    SyncDir,
    /// Creating a file.
    Create,
    Rename,
    /// `fdatasync` that makes the metadata index's changes durable: of its commit log (after
    /// each batch), or of the index's own file (at a checkpoint; the real filesystem only).
    IndexSync,
}

/// The error a fault answers, as the kernel does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsFault {
    /// `ENOSPC`: the device is full.
    NoSpace,
    /// `EIO`: the device failed.
    Io,
    /// `EROFS`: the file system is read-only (remounted after errors, say).
    ReadOnly,
}

impl FsFault {
    fn error(self, op: FsOp) -> io::Error {
        let errno = match self {
            FsFault::NoSpace => rustix::io::Errno::NOSPC,
            FsFault::Io => rustix::io::Errno::IO,
            FsFault::ReadOnly => rustix::io::Errno::ROFS,
        };
        tracing::debug!(?op, fault = ?self, "injected filesystem fault");
        io::Error::from_raw_os_error(errno.raw_os_error())
    }
}

#[derive(Debug, Clone, Copy)]
struct FsRule {
    op: FsOp,
    fault: FsFault,
    /// Calls the rule still fires on (`None` = every one).
    times: Option<u64>,
}

#[derive(Debug, Default)]
struct Rules {
    rules: Mutex<Vec<FsRule>>,
    injected: AtomicU64,
}

impl Rules {
    fn check(&self, op: FsOp) -> io::Result<()> {
        let mut rules = match self.rules.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        for rule in rules.iter_mut().filter(|r| r.op == op) {
            match &mut rule.times {
                Some(0) => continue,
                Some(n) => *n -= 1,
                None => {}
            }
            self.injected.fetch_add(1, Ordering::Relaxed);
            return Err(rule.fault.error(op));
        }
        Ok(())
    }
}

/// A filesystem whose calls fail by rule (see the module docs).
#[derive(Debug, Clone)]
pub struct FaultyFs {
    inner: Arc<dyn Fs>,
    /// `inner` is the real filesystem: the index's file is opened here, its syncs faulty.
    real: bool,
    rules: Arc<Rules>,
}

impl FaultyFs {
    /// The machine's filesystem, with no faults yet.
    pub fn real() -> Self {
        Self { inner: Arc::new(RealFs), real: true, rules: Arc::default() }
    }

    /// `inner`, with no faults yet. Faults of [`FsOp::IndexSync`] act only over the real
    /// filesystem (the index's file is then opened here).
    pub fn over(inner: Arc<dyn Fs>) -> Self {
        Self { inner, real: false, rules: Arc::default() }
    }

    /// `fault` on every call of `op` from now on.
    pub fn fail(&self, op: FsOp, fault: FsFault) {
        self.add(FsRule { op, fault, times: None });
    }

    /// `fault` on the next `times` calls of `op`.
    pub fn fail_times(&self, op: FsOp, fault: FsFault, times: u64) {
        self.add(FsRule { op, fault, times: Some(times) });
    }

    fn add(&self, rule: FsRule) {
        match self.rules.rules.lock() {
            Ok(mut r) => r.push(rule),
            Err(poisoned) => poisoned.into_inner().push(rule),
        }
    }

    /// Removes every rule.
    pub fn clear(&self) {
        match self.rules.rules.lock() {
            Ok(mut r) => r.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
    }

    /// Faults injected so far.
    pub fn faults_injected(&self) -> u64 {
        self.rules.injected.load(Ordering::Relaxed)
    }

    fn wrap(&self, file: Box<dyn FsFile>, path: &Path) -> Box<dyn FsFile> {
        let sync = match crate::commit_log::is_log_path(path) {
            true => FsOp::IndexSync,
            false => FsOp::SyncData,
        };
        Box::new(FaultyFile { inner: file, rules: self.rules.clone(), sync })
    }
}

struct FaultyFile {
    inner: Box<dyn FsFile>,
    rules: Arc<Rules>,
    /// What a sync of this file is ([`FsOp::IndexSync`] for a commit log's).
    sync: FsOp,
}

impl FsFile for FaultyFile {
    fn append_vectored(&self, slices: &mut [IoSlice<'_>]) -> io::Result<()> {
        self.rules.check(FsOp::Append)?;
        self.inner.append_vectored(slices)
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.rules.check(FsOp::Append)?;
        self.inner.write_at(data, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.rules.check(self.sync)?;
        self.inner.sync_data()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.rules.check(FsOp::Append)?;
        self.inner.set_len(len)
    }

    fn drop_cache(&self) {
        self.inner.drop_cache()
    }
}

impl Fs for FaultyFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.inner.read_dir(path)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        self.inner.metadata(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.rules.check(FsOp::Create)?;
        Ok(self.wrap(self.inner.create(path)?, path))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.rules.check(FsOp::Create)?;
        Ok(self.wrap(self.inner.create_new(path)?, path))
    }

    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.rules.check(FsOp::Create)?;
        Ok(self.wrap(self.inner.create_new_direct(path)?, path))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(self.inner.open(path)?, path))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.rules.check(FsOp::Create)?;
        Ok(self.wrap(self.inner.open_append(path)?, path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.rules.check(FsOp::Rename)?;
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.rules.check(FsOp::SyncDir)?;
        self.inner.sync_dir(path)
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn Send + Sync>>> {
        self.inner.lock(path)
    }

    fn capacity(&self, path: &Path) -> io::Result<(u64, u64, u64, u64)> {
        self.inner.capacity(path)
    }

    fn device(&self, path: &Path) -> u64 {
        self.inner.device(path)
    }

    fn open_database(
        &self,
        builder: &mut redb::Builder,
        path: &Path,
    ) -> Result<redb::Database, redb::DatabaseError> {
        if !self.real {
            return self.inner.open_database(builder, path);
        }
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let inner = redb::backends::FileBackend::new(file)?;
        builder.create_with_backend(FaultyBackend { inner, rules: self.rules.clone() })
    }
}

/// The index's file, whose syncs fail by rule.
#[derive(Debug)]
struct FaultyBackend {
    inner: redb::backends::FileBackend,
    rules: Arc<Rules>,
}

impl redb::StorageBackend for FaultyBackend {
    fn len(&self) -> Result<u64, io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        self.rules.check(FsOp::IndexSync)?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.inner.close()
    }
}
