//! The metadata index's commit log: what makes a batch of index changes durable.
//!
//! A durable redb commit rewrites every B-tree page the batch touched and syncs the file: for a
//! batch of small PUTs, some forty pages and a sync. Instead, the writer appends the batch's
//! changes to this log as one frame and syncs it (one small write and one sync), then commits the
//! same changes to redb without durability (in memory). Every so often (see
//! [`crate::index::Checkpoints`]) a durable redb commit, a *checkpoint*, writes the pages once
//! for all the batches since the last, and the log starts again from the start of its file.
//!
//! Files: `<sys>/index-log.<log id, 32 hex>.<number, 20 digits>`, frames ([`crate::frame`])
//! of `[batch number u64 LE][LOG_FORMAT][changes, MessagePack]`. A file's number orders the
//! files of one log: it is the first batch the file was begun with.
//!
//! **The file is written over, not begun again.** After a checkpoint, the next batches are
//! written from the start of the same file, over the frames the checkpoint made unneeded. A
//! write over blocks the file already has changes no metadata of the file, so its sync is only
//! the data's: on this machine's ext4 it took a third of the CPU and a third of the time of a sync
//! that grows the file (which writes the file's inode too). The old frames past the new ones are harmless:
//! every one holds a batch the index has (a number at most the last checkpoint's), which a start
//! skips, and the new frames end where the first torn or old one begins. A file that grew past
//! [`INDEX_LOG_SIZE_MAX`] is cut back to nothing instead, so a burst does not hold its space.
//!
//! The index keeps the log's id and
//! the number of the last batch it applied in its `meta` table, in the same transaction as the
//! batch; so after a power cut the index holds every batch up to its last checkpoint, and a start
//! applies the frames after that, in order, as they were applied the first time. A frame is
//! synced before its batch is answered, so every batch that was answered is in one or the other.
//! A log whose id is not the index's (a wiped or set-aside index) is removed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_types::limits::{INDEX_LOG_FRAME_MAX, INDEX_LOG_SIZE_MAX};

use crate::frame::{read_frame, seal_frame, FRAME_HEADER_SIZE};
use crate::fs::{FileReader, Fs, FsFile};

const PREFIX: &str = "index-log.";
/// The encoding of a frame's changes; a start refuses a frame of another.
pub(crate) const LOG_FORMAT: u8 = 1;

/// Bytes a batch's encoding leaves at its start for the frame's header and the batch number
/// ([`CommitLog::append`] fills them in place).
pub(crate) const FRAME_ROOM: usize = FRAME_HEADER_SIZE as usize + BATCH_CHANGES;

fn file_name(log_id: u128, first: u64) -> String {
    format!("{PREFIX}{log_id:032x}.{first:020}")
}

/// Whether `name` is a file of some commit log (a drive's folder holding only such leftovers
/// next to nothing else is blank).
pub(crate) fn is_log_file(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Whether `path` names a file of some commit log.
pub(crate) fn is_log_path(path: &Path) -> bool {
    path.file_name().is_some_and(|n| is_log_file(&n.to_string_lossy()))
}

/// What a start finds in a folder: the batches after `applied`, in order, and every log file
/// there (to remove once they are applied and a new log has begun).
pub(crate) struct Recovered {
    /// Each batch's number and its frame's record (the number, then the changes from
    /// [`BATCH_CHANGES`] on: kept whole, so its inline data is not copied again).
    pub batches: Vec<(u64, Vec<u8>)>,
    pub files: Vec<PathBuf>,
}

/// Where a frame's record holds the batch's changes (after its number).
pub(crate) const BATCH_CHANGES: usize = 8;

/// Reads the log `log_id` in `dir`: the batches numbered after `applied`. Files of other logs are
/// listed to be removed. A missing batch between `applied` and a later one is an error (the log
/// does not hold what the index needs).
pub(crate) fn recover(fs: &dyn Fs, dir: &Path, log_id: u128, applied: u64) -> io::Result<Recovered> {
    let own = format!("{PREFIX}{log_id:032x}.");
    let mut files = Vec::new();
    let mut mine: Vec<(u64, PathBuf)> = Vec::new();
    for entry in fs.read_dir(dir)? {
        if !entry.meta.is_file || !is_log_file(&entry.name) {
            continue;
        }
        let path = dir.join(&entry.name);
        if let Some(first) = entry.name.strip_prefix(&own).and_then(|n| n.parse::<u64>().ok()) {
            mine.push((first, path.clone()));
        }
        files.push(path);
    }
    mine.sort();
    let mut batches = Vec::new();
    let mut next = applied + 1;
    for (_, path) in mine {
        let len = fs.metadata(&path)?.len;
        let mut reader = io::BufReader::new(FileReader::new(fs.open(&path)?, 0, len));
        // Frames end at the first that is not whole and intact: a torn last append.
        while let Some(frame) = read_frame(&mut reader, INDEX_LOG_FRAME_MAX)? {
            let Some(number) = frame.first_chunk::<BATCH_CHANGES>() else {
                return Err(corrupt(&path, "a frame without its batch number"));
            };
            let number = u64::from_le_bytes(*number);
            if number < next {
                continue;
            }
            if number > next {
                return Err(corrupt(&path, &format!("batches {next} to {} are missing", number - 1)));
            }
            batches.push((number, frame));
            next += 1;
        }
    }
    Ok(Recovered { batches, files })
}

fn corrupt(path: &Path, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("commit log {}: {why}", path.display()))
}

/// Why an append failed.
pub(crate) enum AppendError {
    /// Nothing of the batch will ever be read back (a write that failed, the full disk's
    /// `ENOSPC`, went to a file that the log has since left): the batch's number is free again.
    NotWritten(io::Error),
    /// The batch may or may not be durable (a failed sync), or the log cannot go on.
    Broken(io::Error),
}

/// The appending end of a commit log (owned by the index's writer thread).
pub(crate) struct CommitLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    log_id: u128,
    file: Box<dyn FsFile>,
    path: PathBuf,
    /// Bytes of frames written since the file was begun or written over.
    len: u64,
    /// The file's size: `len`, or more where older frames are left past it.
    size: u64,
    /// Earlier files of this log since the last checkpoint (left after a failed write).
    earlier: Vec<PathBuf>,
}

impl CommitLog {
    /// Starts a new file whose first batch will be `next`; its name is durable when this returns.
    pub fn start(fs: Arc<dyn Fs>, dir: &Path, log_id: u128, next: u64) -> io::Result<Self> {
        let path = dir.join(file_name(log_id, next));
        let file = fs.create(&path)?;
        fs.sync_dir(dir)?;
        Ok(Self { fs, dir: dir.to_owned(), log_id, file, path, len: 0, size: 0, earlier: Vec::new() })
    }

    /// Bytes of frames since the last checkpoint in the current file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Appends batch `number` durably: one write and one data sync. `frame` holds the batch's
    /// encoded changes after [`FRAME_ROOM`] bytes left for the frame's header and the number.
    pub fn append(&mut self, number: u64, mut frame: Vec<u8>) -> Result<(), AppendError> {
        let at = FRAME_HEADER_SIZE as usize;
        match frame.get_mut(at..FRAME_ROOM) {
            Some(room) => room.copy_from_slice(&number.to_le_bytes()),
            None => {
                return Err(AppendError::NotWritten(io::Error::other("a frame without room for its header")))
            }
        }
        seal_frame(&mut frame);
        if let Err(e) = self.file.write_at(&frame, self.len) {
            // What reached the file is a torn frame, where a reader stops: the log goes on in a
            // new file, which the next batch (taking this one's number) begins.
            let next =
                Self::start(self.fs.clone(), &self.dir, self.log_id, number).map_err(AppendError::Broken)?;
            let left = std::mem::replace(self, next);
            self.earlier = left.earlier;
            self.earlier.push(left.path);
            return Err(AppendError::NotWritten(e));
        }
        self.file.sync_data().map_err(AppendError::Broken)?;
        self.len += frame.len() as u64;
        self.size = self.size.max(self.len);
        Ok(())
    }

    /// After a checkpoint that made every batch so far durable in the index: the next frame goes
    /// at the start of the current file, and files left by failed writes are removed (a power
    /// cut that keeps one only keeps batches a start skips). A file grown past
    /// [`INDEX_LOG_SIZE_MAX`] is cut to nothing first.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.size > INDEX_LOG_SIZE_MAX {
            self.file.set_len(0)?;
            self.size = 0;
        }
        self.len = 0;
        let earlier = std::mem::take(&mut self.earlier);
        self.remove_files(&earlier);
        Ok(())
    }

    /// Removes the log's files (after a checkpoint: they hold nothing the index lacks), durably
    /// (a start that finds one anyway only skips its frames).
    pub fn remove(self) {
        self.remove_files(self.earlier.iter().chain([&self.path]));
    }

    /// Removes `paths`, then syncs the folder if any went (a start that finds one anyway only
    /// skips its frames).
    fn remove_files<'p>(&self, paths: impl IntoIterator<Item = &'p PathBuf>) {
        let mut removed = false;
        for path in paths {
            removed |= self.fs.remove_file(path).is_ok();
        }
        if removed {
            let _ = self.fs.sync_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;

    fn frame(fill: u8) -> Vec<u8> {
        let mut f = vec![0; FRAME_ROOM];
        f.extend_from_slice(&[fill; 100]);
        f
    }

    /// The batch numbers and first change byte a start would apply after `applied`.
    fn recovered(fs: &SimFs, dir: &Path, applied: u64) -> Vec<(u64, u8)> {
        let found = recover(fs, dir, 7, applied).expect("recover");
        found.batches.iter().map(|(n, f)| (*n, f[BATCH_CHANGES])).collect()
    }

    /// Frames of one size, so the new frames end exactly where an old one begins: a start reads
    /// on into the old frames, and must skip them all.
    #[test]
    fn a_log_written_over_reads_back_only_its_new_frames() {
        let fs = SimFs::new();
        let dir = Path::new("/sys");
        crate::fs::create_dir_all_durably(&fs, dir).expect("dir");
        let mut log = CommitLog::start(Arc::new(fs.clone()), dir, 7, 1).expect("start");
        for n in 1..=5 {
            log.append(n, frame(n as u8)).map_err(|_| "append").expect("append");
        }
        assert_eq!(recovered(&fs, dir, 0), (1..=5).map(|n| (n, n as u8)).collect::<Vec<_>>());
        // A checkpoint made batches 1 to 5 durable in the index.
        log.restart().expect("restart");
        assert_eq!(log.len(), 0);
        log.append(6, frame(60)).map_err(|_| "append").expect("append");
        log.append(7, frame(70)).map_err(|_| "append").expect("append");
        let files = fs.read_dir(dir).expect("list");
        assert_eq!(files.len(), 1, "one file, written over");
        assert_eq!(recovered(&fs, dir, 5), [(6, 60), (7, 70)]);
        // A power cut, plain or harsh: never an old frame.
        let cut = fs.power_cut();
        for seed in [None, Some(1), Some(2), Some(3)] {
            assert_eq!(recovered(&cut.boot(seed), dir, 5), [(6, 60), (7, 70)], "seed {seed:?}");
        }
    }

    /// A file that grew past the size limit is cut back at the checkpoint, not kept.
    #[test]
    fn a_log_grown_past_its_limit_is_cut_back_at_a_checkpoint() {
        let fs = SimFs::new();
        let dir = Path::new("/sys");
        crate::fs::create_dir_all_durably(&fs, dir).expect("dir");
        let mut log = CommitLog::start(Arc::new(fs.clone()), dir, 7, 1).expect("start");
        let mut big = vec![0; FRAME_ROOM];
        big.resize(FRAME_ROOM + INDEX_LOG_SIZE_MAX as usize, 1);
        log.append(1, big).map_err(|_| "append").expect("append");
        log.restart().expect("restart");
        log.append(2, frame(2)).map_err(|_| "append").expect("append");
        let name = dir.join(file_name(7, 1));
        assert_eq!(fs.metadata(&name).expect("meta").len, (FRAME_ROOM + 100) as u64);
        assert_eq!(recovered(&fs, dir, 1), [(2, 2)]);
    }
}
