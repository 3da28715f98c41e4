//! One object as MinIO left it on the drives of its set: each drive's `xl.meta`, the versions a
//! read quorum of them agree on, and the bytes of a version read back through MinIO's framing
//! and erasure code.
//!
//! MinIO's shard files have Strata's shape: block `b` of part `p` is, on the drive holding shard
//! `i`, the frame `HighwayHash-256 || shard` at `b × (32 + ⌈block size / data⌉)` of `part.p`
//! (inline in `xl.meta` for small objects), the shard `⌈block length / data⌉` bytes, data shards
//! first, Reed-Solomon over GF(2⁸) for the parity (the same code as Strata's).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use strata_erasure::{bitrot, Erasure, ShardLayout};

use super::xlmeta::{ObjectVersion, XlMeta, XlVersion, HIGHWAYHASH_256S, XL_META};
use super::MinioError;

/// One object's `xl.meta` on each drive of its set (`None`: missing or unreadable there).
pub struct ObjectCopies {
    /// The object's folder on each drive, by set position.
    pub dirs: Vec<PathBuf>,
    pub metas: Vec<Option<XlMeta>>,
    /// Why a drive's `xl.meta` could not be read (missing ones are not listed).
    pub unreadable: Vec<(usize, String)>,
}

/// A version as a read quorum of drives hold it.
#[derive(Debug, Clone)]
pub struct AgreedVersion {
    pub version: XlVersion,
    /// The set positions holding it (the same id, time and data folder).
    pub positions: Vec<usize>,
}

impl ObjectCopies {
    /// Reads `<drive>/<bucket>/<key>/xl.meta` on every drive of the set.
    pub fn read(drives: &[PathBuf], bucket: &str, key: &str) -> Self {
        let dirs: Vec<PathBuf> = drives.iter().map(|d| d.join(bucket).join(key_dir(key))).collect();
        let mut unreadable = Vec::new();
        let metas = dirs
            .iter()
            .enumerate()
            .map(|(position, dir)| match XlMeta::read(&dir.join(XL_META)) {
                Ok(m) => Some(m),
                Err(MinioError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    unreadable.push((position, e.to_string()));
                    None
                }
            })
            .collect();
        Self { dirs, metas, unreadable }
    }

    /// The versions held by a read quorum of drives (an object version by as many as it has data
    /// shards, a delete marker by half the set), newest first. A version some drives lack (they
    /// missed a write) is still taken; one too few drives hold is not: MinIO would not show it.
    pub fn agreed_versions(&self) -> Vec<AgreedVersion> {
        let mut agreed: Vec<AgreedVersion> = Vec::new();
        for (position, meta) in self.metas.iter().enumerate() {
            for v in meta.iter().flat_map(|m| &m.versions) {
                match agreed.iter_mut().find(|a| same_version(&a.version, v)) {
                    Some(a) => a.positions.push(position),
                    None => agreed.push(AgreedVersion { version: v.clone(), positions: vec![position] }),
                }
            }
        }
        let half = self.dirs.len().div_ceil(2);
        agreed.retain(|a| {
            let quorum = match &a.version {
                XlVersion::Object(o) => usize::from(o.erasure.data_count),
                _ => half,
            };
            a.positions.len() >= quorum
        });
        agreed.sort_by_key(|a| std::cmp::Reverse(a.version.mod_time()));
        agreed
    }

    /// This drive's record of `version` (its own shard index) and its inline shard bytes.
    pub(crate) fn on_drive(
        &self,
        position: usize,
        version: &ObjectVersion,
    ) -> Option<(&ObjectVersion, Option<&Bytes>)> {
        let meta = self.metas.get(position)?.as_ref()?;
        let mine = meta.versions.iter().find_map(|v| match v {
            XlVersion::Object(o) if o.version_id == version.version_id && o.data_dir == version.data_dir => {
                Some(o.as_ref())
            }
            _ => None,
        })?;
        let inline = meta.inline.get(&mine.inline_key());
        Some((mine, inline))
    }

    /// Reads every byte of `version` (as stored: sealed bytes for an encrypted object), part by
    /// part, calling `sink` with each block in order. Shards that are missing or fail their hash
    /// are rebuilt from the others while a read quorum remains.
    pub fn read_version(
        &self,
        version: &ObjectVersion,
        mut sink: impl FnMut(Bytes) -> Result<(), MinioError>,
    ) -> Result<ReadStats, MinioError> {
        let e = &version.erasure;
        if e.checksum_algo != HIGHWAYHASH_256S {
            return Err(MinioError::Unsupported(format!("bitrot algorithm {}", e.checksum_algo)));
        }
        let (data, parity) = (usize::from(e.data_count), usize::from(e.parity_count));
        let erasure = Erasure::new(data, parity).map_err(|err| MinioError::Unsupported(err.to_string()))?;
        // Per shard index: where its frames are.
        let mut sources: Vec<Option<Source>> = (0..data + parity).map(|_| None).collect();
        for position in 0..self.dirs.len() {
            let Some((mine, inline)) = self.on_drive(position, version) else { continue };
            let slot = usize::from(mine.erasure.index) - 1;
            let dir = self.dirs[position].join(mine.data_dir.to_string());
            let source = match (version.is_inline(), inline) {
                (true, Some(bytes)) => Source::Inline(bytes.clone()),
                (true, None) => continue,
                (false, _) => Source::Parts(dir),
            };
            if let Some(s) = sources.get_mut(slot) {
                *s = Some(source);
            }
        }
        let mut stats = ReadStats::default();
        for part in &version.parts {
            let layout = ShardLayout::new(part.size, e.block_size as usize, data);
            let files: Vec<Option<std::fs::File>> = sources
                .iter()
                .map(|s| match s {
                    Some(Source::Parts(dir)) => {
                        std::fs::File::open(dir.join(format!("part.{}", part.number))).ok()
                    }
                    _ => None,
                })
                .collect();
            for block in 0..layout.block_count() {
                let (shard_size, offset) = (layout.shard_size(block) as usize, layout.frame_offset(block));
                let shards: Vec<Option<Bytes>> = sources
                    .iter()
                    .zip(&files)
                    .map(|(source, file)| {
                        let frame = match (source, file) {
                            (Some(Source::Inline(all)), _) => {
                                let start = usize::try_from(offset).ok()?;
                                all.get(start..start + bitrot::HASH_SIZE + shard_size)
                                    .map(|_| all.slice(start..start + bitrot::HASH_SIZE + shard_size))?
                            }
                            (_, Some(f)) => read_at(f, offset, bitrot::HASH_SIZE + shard_size).ok()?,
                            _ => return None,
                        };
                        let range = bitrot::verify_with(bitrot::Key::MINIO, &frame, shard_size).ok()?;
                        Some(frame.slice(range))
                    })
                    .collect();
                let missing = shards[..data].iter().filter(|s| s.is_none()).count();
                stats.shards_rebuilt += missing as u64;
                let data_shards = erasure.decode_block(shards).map_err(|err| MinioError::Malformed {
                    path: self.dirs.first().map(|d| d.display().to_string()).unwrap_or_default(),
                    why: format!("part {} block {block}: {err}", part.number),
                })?;
                let mut left = layout.block_len(block) as usize;
                for shard in data_shards {
                    let take = left.min(shard.len());
                    if take > 0 {
                        sink(shard.slice(..take))?;
                    }
                    left -= take;
                }
                stats.bytes += layout.block_len(block);
            }
        }
        Ok(stats)
    }
}

/// What a read of a version did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    pub bytes: u64,
    /// Data shards that were missing or failed their hash and were rebuilt from parity.
    pub shards_rebuilt: u64,
}

enum Source {
    Inline(Bytes),
    Parts(PathBuf),
}

fn read_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(Bytes::from(buf))
}

/// Two drives' records of one version: the same id and time, and for data the same folder.
fn same_version(a: &XlVersion, b: &XlVersion) -> bool {
    match (a, b) {
        (XlVersion::Object(x), XlVersion::Object(y)) => {
            x.version_id == y.version_id && x.mod_time == y.mod_time && x.data_dir == y.data_dir
        }
        _ => {
            std::mem::discriminant(a) == std::mem::discriminant(b)
                && a.version_id() == b.version_id()
                && a.mod_time() == b.mod_time()
        }
    }
}

/// What MinIO stores a key ending in `/` under, in place of the slash.
pub const DIR_OBJECT_SUFFIX: &str = "__XLDIR__";

/// The folder of `key` under a bucket's folder (see [`DIR_OBJECT_SUFFIX`]).
pub fn key_dir(key: &str) -> String {
    match key.strip_suffix('/') {
        Some(folder) => format!("{folder}{DIR_OBJECT_SUFFIX}"),
        None => key.to_owned(),
    }
}

/// Every object key of `bucket` on any of `drives` (a drive without the bucket's folder has
/// none), sorted, each once.
pub fn list_all_keys(drives: &[PathBuf], bucket: &str) -> Result<Vec<String>, MinioError> {
    let mut keys: Vec<String> = Vec::new();
    for drive in drives {
        match list_keys(drive, bucket) {
            Ok(k) => keys.extend(k),
            Err(MinioError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// Every object key of `bucket` on the drive at `root`: the folders holding an `xl.meta`, as
/// keys (`/`-separated, relative to the bucket), sorted.
pub fn list_keys(root: &Path, bucket: &str) -> Result<Vec<String>, MinioError> {
    let mut keys = Vec::new();
    let base = root.join(bucket);
    let mut stack = vec![base.clone()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| MinioError::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| MinioError::io(&dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| MinioError::io(&path, e))?;
            if !kind.is_dir() {
                continue;
            }
            if path.join(XL_META).is_file() {
                let relative = path
                    .strip_prefix(&base)
                    .map_err(|_| MinioError::malformed(&path, "outside its bucket"))?;
                let key = relative
                    .to_str()
                    .ok_or_else(|| MinioError::malformed(&path, "a key that is not UTF-8"))?;
                // A key ending in `/` (a folder object) is stored under this suffix instead.
                let key = match key.strip_suffix(DIR_OBJECT_SUFFIX) {
                    Some(folder) => format!("{folder}/"),
                    None => key.to_owned(),
                };
                keys.push(key);
                // An object's folder holds only its data folders: MinIO refuses a key under
                // another object's name.
                continue;
            }
            stack.push(path);
        }
    }
    keys.sort();
    Ok(keys)
}
