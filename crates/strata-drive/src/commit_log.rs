//! The metadata index's commit log: what makes a batch of index changes durable.
//!
//! A durable redb commit rewrites every B-tree page the batch touched and syncs the file: for a
//! batch of small PUTs, some forty pages and a sync. Instead, the writer appends the batch's
//! changes to this log as one frame and syncs it (one small write and one sync), then commits the
//! same changes to redb without durability (in memory). Every so often (see
//! [`crate::index::Checkpoints`]) a durable redb commit, a *checkpoint*, writes the pages once
//! for all the batches since the last, and the log starts again in a new file.
//!
//! Files: `<sys>/index-log.<log id, 32 hex>.<first batch, 20 digits>`, frames ([`crate::frame`])
//! of `[batch number u64 LE][LOG_FORMAT][changes, MessagePack]`. The index keeps the log's id and
//! the number of the last batch it applied in its `meta` table, in the same transaction as the
//! batch; so after a power cut the index holds every batch up to its last checkpoint, and a start
//! applies the frames after that, in order, as they were applied the first time. A frame is
//! synced before its batch is answered, so every batch that was answered is in one or the other.
//! A log whose id is not the index's (a wiped or set-aside index) is removed.

use std::io::{self, IoSlice};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_types::limits::INDEX_LOG_FRAME_MAX;

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
    /// Bytes in the current file.
    len: u64,
    /// Earlier files of this log since the last checkpoint (left after a failed write).
    earlier: Vec<PathBuf>,
}

impl CommitLog {
    /// Starts a new file whose first batch will be `next`; its name is durable when this returns.
    pub fn start(fs: Arc<dyn Fs>, dir: &Path, log_id: u128, next: u64) -> io::Result<Self> {
        let path = dir.join(file_name(log_id, next));
        let file = fs.create(&path)?;
        fs.sync_dir(dir)?;
        Ok(Self { fs, dir: dir.to_owned(), log_id, file, path, len: 0, earlier: Vec::new() })
    }

    /// Bytes in the current file.
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
        if let Err(e) = self.file.append_vectored(&mut [IoSlice::new(&frame)]) {
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
        Ok(())
    }

    /// After a checkpoint that made every batch before `next` durable in the index: starts a new
    /// file and removes the old ones (a power cut that keeps one only keeps batches a start
    /// skips).
    pub fn restart(&mut self, next: u64) -> io::Result<()> {
        let new = Self::start(self.fs.clone(), &self.dir, self.log_id, next)?;
        std::mem::replace(self, new).remove();
        Ok(())
    }

    /// Removes the log's files (after a checkpoint: they hold nothing the index lacks), durably
    /// (a start that finds one anyway only skips its frames).
    pub fn remove(self) {
        let mut removed = false;
        for path in self.earlier.iter().chain([&self.path]) {
            removed |= self.fs.remove_file(path).is_ok();
        }
        if removed {
            let _ = self.fs.sync_dir(&self.dir);
        }
    }
}
