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
    /// Writes `data` at `offset`, over what the file holds there (and past its end). Not for
    /// a file opened with [`Fs::create_new_direct`].
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
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
    /// [`Fs::create_new`] for a large file written once and then read from the drive (a shard
    /// file): on the real filesystem its appends bypass the page cache where the filesystem
    /// allows (see [`DirectFile`]). Required, so a wrapper cannot lose it to a default.
    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
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
    /// The device number of the filesystem `path` lies on; 0 when this backend has none.
    fn device(&self, _path: &Path) -> u64 {
        0
    }
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

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(data, offset)
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

/// A file whose appends go to the drive without the page cache (`O_DIRECT`), through a staging
/// buffer of [`DIRECT_WRITE_STAGE`] bytes aligned to [`DIRECT_WRITE_ALIGN`]: whole stages are
/// written straight from it, and at the sync what is left (the aligned part directly, the last
/// few bytes through the page cache). On this kind of machine every page-cache page written costs
/// the kernel about a millisecond of CPU per MiB (a 1 GiB object on EC 2+2 spent two seconds of
/// CPU there) and the flush at the end waits for all of it; direct writes cost neither, for one
/// copy into the stage (a memcpy, a tenth of that). A filesystem that refuses `O_DIRECT` (tmpfs)
/// or a direct write gets the plain buffered file.
struct DirectFile {
    file: File,
    stage: std::sync::Mutex<Stage>,
}

struct Stage {
    /// Backing memory; the stage is `buf[start..start + DIRECT_WRITE_STAGE]`, aligned.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    /// Where the stage's first byte goes in the file.
    offset: u64,
    /// Still writing directly (false once a tail or a refusal sent writes through the cache).
    direct: bool,
}

use strata_types::limits::{DIRECT_WRITE_ALIGN, DIRECT_WRITE_STAGE};

fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    let flags = if on { flags | rustix::fs::OFlags::DIRECT } else { flags - rustix::fs::OFlags::DIRECT };
    rustix::fs::fcntl_setfl(file, flags).map_err(io::Error::from)
}

impl DirectFile {
    /// `file` with direct writes, or `file` back when its filesystem refuses them.
    fn new(file: File) -> Result<Self, File> {
        if set_direct(&file, true).is_err() {
            return Err(file);
        }
        let buf = vec![0u8; DIRECT_WRITE_STAGE + DIRECT_WRITE_ALIGN];
        let start = buf.as_ptr().align_offset(DIRECT_WRITE_ALIGN);
        let stage = Stage { buf, start, filled: 0, offset: 0, direct: true };
        Ok(Self { file, stage: std::sync::Mutex::new(stage) })
    }

    fn stage(&self) -> io::Result<std::sync::MutexGuard<'_, Stage>> {
        self.stage.lock().map_err(|_| io::Error::other("a shard file's stage was poisoned"))
    }

    /// Writes the stage's first `len` bytes at its offset, which moves past them: directly while
    /// it may (an aligned length), else through the page cache from then on.
    fn write_staged(&self, st: &mut Stage, len: usize) -> io::Result<()> {
        let at = st.offset;
        let bytes = &st.buf[st.start..st.start + len];
        let direct = st.direct && len.is_multiple_of(DIRECT_WRITE_ALIGN);
        match direct.then(|| self.file.write_all_at(bytes, at)) {
            Some(Ok(())) => {}
            // Refused (an alignment this filesystem does not take): buffered from now on.
            Some(Err(e)) if e.raw_os_error() != Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                return Err(e)
            }
            _ => {
                if st.direct {
                    set_direct(&self.file, false)?;
                    st.direct = false;
                }
                self.file.write_all_at(bytes, at)?;
            }
        }
        st.offset += len as u64;
        Ok(())
    }

    /// Writes out everything staged: the aligned part directly, the rest through the cache.
    fn flush(&self, st: &mut Stage) -> io::Result<()> {
        let aligned = st.filled - st.filled % DIRECT_WRITE_ALIGN;
        let tail = st.filled - aligned;
        if aligned > 0 {
            self.write_staged(st, aligned)?;
        }
        if tail > 0 {
            st.buf.copy_within(st.start + aligned..st.start + st.filled, st.start);
            self.write_staged(st, tail)?;
        }
        st.filled = 0;
        Ok(())
    }
}

impl FsFile for DirectFile {
    fn append_vectored(&self, slices: &mut [IoSlice<'_>]) -> io::Result<()> {
        let mut st = self.stage()?;
        for slice in slices.iter() {
            let mut rest: &[u8] = slice;
            while !rest.is_empty() {
                let n = rest.len().min(DIRECT_WRITE_STAGE - st.filled);
                let at = st.start + st.filled;
                st.buf[at..at + n].copy_from_slice(&rest[..n]);
                st.filled += n;
                rest = &rest[n..];
                if st.filled == DIRECT_WRITE_STAGE {
                    self.write_staged(&mut st, DIRECT_WRITE_STAGE)?;
                    st.filled = 0;
                }
            }
        }
        Ok(())
    }

    fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        // Its stage holds the file's end: a write elsewhere would go around it.
        Err(io::Error::new(io::ErrorKind::Unsupported, "a shard file is only appended to"))
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut st = self.stage()?;
        self.flush(&mut st)?;
        self.file.sync_data()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        // What is staged is part of the file.
        let mut st = self.stage()?;
        self.flush(&mut st)?;
        drop(st);
        self.file.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.stage()?;
        self.flush(&mut st)?;
        if st.direct {
            set_direct(&self.file, false)?;
            st.direct = false;
        }
        self.file.set_len(len)?;
        st.offset = len;
        Ok(())
    }

    fn drop_cache(&self) {
        let _ = rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed);
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

    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        match DirectFile::new(File::create_new(path)?) {
            Ok(direct) => Ok(Box::new(direct)),
            Err(file) => Ok(Box::new(RealFile(file))),
        }
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

    fn device(&self, path: &Path) -> u64 {
        std::os::unix::fs::MetadataExt::dev(&match std::fs::metadata(path) {
            Ok(m) => m,
            Err(_) => return 0,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of a shard file (a 32-byte hash, then shard bytes of uneven lengths) appended in
    /// many calls, some larger than the stage, some crossing its end: the file holds exactly
    /// them, read back before and after the sync.
    fn frames() -> Vec<Vec<u8>> {
        [
            0usize,
            1,
            4095,
            4096,
            4097,
            DIRECT_WRITE_STAGE - 32,
            DIRECT_WRITE_STAGE,
            3 * DIRECT_WRITE_STAGE + 17,
            100,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (j * 31 + i * 7) as u8).collect())
        .collect()
    }

    fn write_and_check(file: &dyn FsFile) -> Vec<u8> {
        let mut want = Vec::new();
        for (i, shard) in frames().iter().enumerate() {
            let hash = [i as u8; 32];
            file.append_vectored(&mut [IoSlice::new(&hash), IoSlice::new(shard)]).expect("append");
            want.extend_from_slice(&hash);
            want.extend_from_slice(shard);
        }
        let mut got = vec![0u8; want.len()];
        file.read_exact_at(&mut got, 0).expect("read before the sync");
        assert!(got == want, "read before the sync");
        file.sync_data().expect("sync");
        want
    }

    #[test]
    fn a_direct_file_holds_exactly_what_was_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("shard");
        let file = DirectFile::new(File::create_new(&path).expect("create"))
            .unwrap_or_else(|_| panic!("{} (ext4 here) takes O_DIRECT", dir.path().display()));
        assert!(file.stage().expect("stage").direct, "writing directly");
        let want = write_and_check(&file);
        let st = file.stage().expect("stage");
        assert!(!st.direct, "the tail went through the page cache");
        assert_eq!(st.offset, want.len() as u64);
        drop(st);
        drop(file);
        assert!(fs::read(&path).expect("read") == want, "the file on disk");
    }

    /// On tmpfs (which takes O_DIRECT from Linux 6.6 and refuses it before), either way the file
    /// holds the same.
    #[test]
    fn a_direct_file_on_tmpfs_holds_exactly_what_was_appended() {
        let dir = tempfile::tempdir_in("/dev/shm").expect("a tempdir on tmpfs (/dev/shm)");
        let path = dir.path().join("shard");
        let file = RealFs.create_new_direct(&path).expect("create");
        let want = write_and_check(file.as_ref());
        assert!(fs::read(&path).expect("read") == want);
    }
}
