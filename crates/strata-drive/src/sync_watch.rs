//! A drive's filesystem as the drive uses it, watched for failed syncs.
//!
//! A sync that fails leaves the file's or folder's durable state unknown: on Linux the pages a
//! failed write-back dropped are marked clean, so the same sync asked again succeeds while the
//! data is gone. A drive whose sync failed therefore takes no further change until a check of
//! its own passes ([`crate::LocalDrive::check_writes`]); it never retries as if its data were
//! safe. Reads go on: what was made durable before the failure is still there.

use std::io::{self, IoSlice};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::fs::{DirEntry, FileMeta, Fs, FsFile};

/// Why writes to a drive stopped, if they did.
#[derive(Debug, Default)]
pub(crate) struct WriteStop {
    why: Mutex<Option<String>>,
}

impl WriteStop {
    /// Stops writes for `why` (the first reason is kept), logging it once.
    pub(crate) fn stop(&self, endpoint: &str, why: String) {
        let mut slot = match self.why.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if slot.is_none() {
            tracing::error!(drive = endpoint, reason = %why, "a sync failed: the drive takes no writes until it is checked again");
            *slot = Some(why);
        }
    }

    /// Why writes stopped, if they did.
    pub(crate) fn reason(&self) -> Option<String> {
        self.why.lock().ok().and_then(|s| s.clone())
    }

    pub(crate) fn resume(&self) {
        if let Ok(mut s) = self.why.lock() {
            *s = None;
        }
    }
}

/// `inner`, reporting every failed sync to `stop`.
#[derive(Debug)]
pub(crate) struct Watched {
    pub(crate) inner: Arc<dyn Fs>,
    pub(crate) stop: Arc<WriteStop>,
    pub(crate) endpoint: String,
}

impl Watched {
    fn watch<T>(&self, what: &str, path: &Path, result: io::Result<T>) -> io::Result<T> {
        match &result {
            // A folder that is not there was not synced at all (a wiped drive: found offline).
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                self.stop.stop(&self.endpoint, format!("{what} {} failed: {e}", path.display()))
            }
            _ => {}
        }
        result
    }

    fn wrap(&self, path: &Path, file: Box<dyn FsFile>) -> Box<dyn FsFile> {
        Box::new(WatchedFile {
            inner: file,
            stop: self.stop.clone(),
            endpoint: self.endpoint.clone(),
            path: path.display().to_string(),
        })
    }
}

struct WatchedFile {
    inner: Box<dyn FsFile>,
    stop: Arc<WriteStop>,
    endpoint: String,
    path: String,
}

impl FsFile for WatchedFile {
    fn append_vectored(&self, slices: &mut [IoSlice<'_>]) -> io::Result<()> {
        self.inner.append_vectored(slices)
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(data, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        let result = self.inner.sync_data();
        if let Err(e) = &result {
            let log = crate::commit_log::is_log_path(Path::new(&self.path));
            let what = if log { "the metadata index's commit log " } else { "" };
            self.stop.stop(&self.endpoint, format!("the data sync of {what}{} failed: {e}", self.path));
        }
        result
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn drop_cache(&self) {
        self.inner.drop_cache()
    }
}

impl Fs for Watched {
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
        Ok(self.wrap(path, self.inner.create(path)?))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, self.inner.create_new(path)?))
    }

    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, self.inner.create_new_direct(path)?))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.inner.open(path)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, self.inner.open_append(path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.sync_dir(path);
        self.watch("the sync of folder", path, result)
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
        self.inner.open_database(builder, path)
    }
}
