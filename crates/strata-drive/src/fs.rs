//! The filesystem under a [`crate::LocalDrive`]: every call the drive makes to its folder goes
//! through [`Fs`], so the same drive code runs on the real filesystem ([`RealFs`]) or on a model
//! that keeps what was made durable apart from what was only written ([`crate::sim::SimFs`]),
//! where a simulated power cut loses exactly what no sync protected.
//!
//! The calls are blocking; the drive makes them on tokio's blocking pool.

use std::fmt::Debug;
use std::fs::{self, File};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

/// What a listing or a stat tells of a file.
#[derive(Debug, Clone)]
pub struct FileMeta {
    pub is_file: bool,
    pub len: u64,
    pub modified: SystemTime,
}

/// One entry of a folder.
#[derive(Debug, Clone)]
pub struct DirEntry {
    pub name: String,
    pub meta: FileMeta,
}

/// An open file: written by appending (shard files) or read at offsets.
pub trait FsFile: Send + Sync {
    /// Appends every slice (one `writev` on the real filesystem when the kernel takes it all).
    fn append_vectored(&self, slices: &mut [IoSlice<'_>]) -> io::Result<()>;
    /// Makes the file's data durable (not its name: that is the folder's, see [`Fs::sync_dir`]).
    fn sync_data(&self) -> io::Result<()>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Cuts the file to `len` bytes (or extends it with zeros); later appends go at the new end.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// A hint that the file's cached pages will not be read soon.
    fn drop_cache(&self) {}
}

/// The folder operations a drive needs. Paths are absolute or relative to the process, as the
/// drive was given.
pub trait Fs: Send + Sync + Debug + 'static {
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    fn metadata(&self, path: &Path) -> io::Result<FileMeta>;
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Creates a file for appending; `AlreadyExists` when the name is taken.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens a file for reading.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens a file for appending to what it holds, creating it (empty) when missing.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes the folder's entries durable: names created, renamed in or removed.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Takes the exclusive lock on a drive's folder for as long as the guard lives; `Ok(None)`
    /// when someone else holds it.
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn Send + Sync>>>;
    /// (total bytes, free bytes, total inodes, free inodes).
    fn capacity(&self, path: &Path) -> io::Result<(u64, u64, u64, u64)>;
    /// Opens (or creates) the redb database at `path` on this filesystem.
    fn open_database(
        &self,
        builder: &mut redb::Builder,
        path: &Path,
    ) -> Result<redb::Database, redb::DatabaseError>;
}

/// Writes `bytes` as the file at `path`, durably, replacing what was there in one step: a temp
/// file, its data synced, renamed over the old one, and the folder synced so the new name
/// survives a power cut.
pub fn write_file_durably(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("a file path has a folder"))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let file = fs.create(&tmp)?;
    file.append_vectored(&mut [IoSlice::new(bytes)])?;
    file.sync_data()?;
    drop(file);
    fs.rename(&tmp, path)?;
    fs.sync_dir(dir)
}

/// Creates the folder `path` and every missing folder above it so that they survive a power cut:
/// each new folder's name is made durable by a sync of the folder holding it.
pub fn create_dir_all_durably(fs: &dyn Fs, path: &Path) -> io::Result<()> {
    match fs.metadata(path) {
        Ok(m) if !m.is_file => return Ok(()),
        Ok(_) => return Err(io::Error::other(format!("{}: a file, not a folder", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        create_dir_all_durably(fs, parent)?;
    }
    fs.create_dir_all(path)?;
    fs.sync_dir(parent.unwrap_or(Path::new(".")))
}

/// Reads an open file from `from` to `len` (its length when opened) as a stream.
pub struct FileReader {
    file: Box<dyn FsFile>,
    position: u64,
    len: u64,
}

impl FileReader {
    pub fn new(file: Box<dyn FsFile>, from: u64, len: u64) -> Self {
        Self { file, position: from, len }
    }
}

impl io::Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.position);
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        self.file.read_exact_at(&mut buf[..n], self.position)?;
        self.position += n as u64;
        Ok(n)
    }
}

/// The machine's own filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(File);

impl FsFile for RealFile {
    fn append_vectored(&self, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
        let mut file = &self.0;
        while !slices.is_empty() {
            match file.write_vectored(slices) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut slices, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn drop_cache(&self) {
        let _ = rustix::fs::fadvise(&self.0, 0, None, rustix::fs::Advice::DontNeed);
    }
}

fn meta(m: &fs::Metadata) -> FileMeta {
    FileMeta { is_file: m.is_file(), len: m.len(), modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH) }
}

impl Fs for RealFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            // An entry removed between the listing and its stat is simply gone.
            let Ok(m) = entry.metadata() else { continue };
            out.push(DirEntry { name: entry.file_name().to_string_lossy().into_owned(), meta: meta(&m) });
        }
        Ok(out)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        fs::metadata(path).map(|m| meta(&m))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(File::create(path)?)))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(File::create_new(path)?)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(File::open(path)?)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = fs::OpenOptions::new().read(true).append(true).create(true).open(path)?;
        Ok(Box::new(RealFile(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn Send + Sync>>> {
        let dir = File::open(path)?;
        match rustix::fs::flock(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(Box::new(dir))),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn capacity(&self, path: &Path) -> io::Result<(u64, u64, u64, u64)> {
        let st = rustix::fs::statvfs(path).map_err(io::Error::from)?;
        Ok((
            st.f_blocks.saturating_mul(st.f_frsize),
            st.f_bavail.saturating_mul(st.f_frsize),
            st.f_files,
            st.f_favail,
        ))
    }

    fn open_database(
        &self,
        builder: &mut redb::Builder,
        path: &Path,
    ) -> Result<redb::Database, redb::DatabaseError> {
        builder.create(path)
    }
}
