//! MinIO's compressed objects (`MINIO_COMPRESSION_ENABLE`). MinIO stores each part of such a
//! version as an S2 stream (Snappy's framing around S2's blocks, `klauspost/compress/s2`; older
//! MinIO wrote Snappy's, which S2 readers read too) and records the algorithm in
//! `x-minio-internal-compression`, the plain size of each part beside the stored one. Strata
//! keeps no compressed form, so such a version cannot be taken over in place: it is read through
//! MinIO's erasure code, decompressed as it is read (the stream's CRC-32C of each chunk
//! checked), and written again as plain bytes. The plain bytes are checked against the ETag
//! MinIO gave the client (the MD5 of the bytes, or of each part's for a multipart object) and
//! their plain size before the write commits.

use std::io::Read;
use std::path::PathBuf;

use bytes::Bytes;
use md5::{Digest, Md5};
use strata_types::limits::MINIO_DECOMPRESS_CHUNK as CHUNK;

use super::object::ObjectCopies;
use super::sse::PlainBody;
use super::takeover::{metadata, EncryptedVersion, Metadata};
use super::xlmeta::{ObjectVersion, XlVersion};
use super::MinioError;

const COMPRESSION: &str = "x-minio-internal-compression";
/// MinIO's names for S2, and for Snappy (before S2).
const READ: [&str; 2] = ["klauspost/compress/s2", "golang/snappy/LZ77"];

/// The compression MinIO recorded for `v`, if any.
pub fn algorithm(v: &ObjectVersion) -> Option<String> {
    v.meta_sys
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(COMPRESSION))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
}

/// Whether the import reads a compressed version: S2 or Snappy, not encrypted as well (MinIO
/// encrypts compressed bytes only when told to; that pair is not read yet).
pub fn readable(v: &ObjectVersion, encrypted: bool) -> Result<(), String> {
    match algorithm(v) {
        Some(a) if !READ.contains(&a.as_str()) => {
            Err(format!("compressed by MinIO with {a:?}, which this build does not read"))
        }
        Some(_) if encrypted => Err("compressed and then encrypted by MinIO: not imported yet".into()),
        _ => Ok(()),
    }
}

/// A compressed version opened for its import.
pub struct Decompressed {
    pub metadata: Metadata,
    /// The ETag MinIO gave the client (checked against the plain bytes as they are read).
    pub etag: String,
    /// Bytes of the plain object.
    pub size: u64,
    /// Bytes of each part of the plain object, in order (a single PUT: one).
    pub part_sizes: Vec<u64>,
    /// The plain bytes, as they are decompressed; an error at the end if they do not match.
    pub body: PlainBody,
}

/// Opens the version `v` of MinIO's drives `paths` (its set's, in set order): its stored bytes
/// read on one blocking thread and decompressed on another, in pieces, never whole in memory.
/// Must run on a Tokio runtime.
pub fn open_version(paths: &[PathBuf], v: &EncryptedVersion) -> Result<Decompressed, MinioError> {
    let copies = ObjectCopies::read(paths, &v.bucket, &v.key);
    let found = copies.agreed_versions().into_iter().find_map(|a| match a.version {
        XlVersion::Object(o) if o.version_id == v.version_id && o.mod_time == v.mod_time => Some(o),
        _ => None,
    });
    let where_ = || paths.first().map(|p| p.join(&v.bucket).join(&v.key)).unwrap_or_default();
    let version = *found.ok_or_else(|| {
        MinioError::malformed(&where_(), "the version is no longer on a read quorum of drives")
    })?;
    let etag = version
        .meta_user
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("etag"))
        .map(|(_, e)| e.clone())
        .ok_or_else(|| MinioError::malformed(&where_(), "a compressed version without its ETag"))?;
    let part_sizes: Vec<u64> =
        version.parts.iter().map(|p| u64::try_from(p.actual_size).unwrap_or(0)).collect();
    let size = part_sizes.iter().sum();
    let checksums = version.checksums();
    let meta = metadata(&version);
    // Stored bytes, block by block, from the thread reading MinIO's shards.
    let (stored_tx, stored_rx) = std::sync::mpsc::sync_channel::<Result<Bytes, String>>(2);
    tokio::task::spawn_blocking(move || {
        let read = copies.read_version(&version, |block| {
            stored_tx.send(Ok(block)).map_err(|_| MinioError::Unsupported("the reader went away".into()))
        });
        if let Err(e) = read {
            let _ = stored_tx.send(Err(e.to_string()));
        }
    });
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let (want, sizes) = (etag.clone(), part_sizes.clone());
    tokio::task::spawn_blocking(move || {
        let mut check = PlainCheck::new(sizes);
        let mut reader = minlz::Reader::new(Stored { rx: stored_rx, current: Bytes::new() });
        let outcome = loop {
            let mut chunk = vec![0; CHUNK];
            match reader.read(&mut chunk) {
                Ok(0) => break check.finish(&want),
                Ok(n) => {
                    chunk.truncate(n);
                    let chunk = Bytes::from(chunk);
                    if let Err(e) = check.update(&chunk) {
                        break Err(e);
                    }
                    if tx.blocking_send(Ok(chunk)).is_err() {
                        return;
                    }
                }
                Err(e) => break Err(format!("decompressing MinIO's S2 stream: {e}")),
            }
        };
        if let Err(e) = outcome {
            let _ = tx.blocking_send(Err(e));
        }
    });
    Ok(Decompressed { metadata: meta, etag, size, part_sizes, body: PlainBody::new(rx, checksums) })
}

/// The stored bytes as a reader for the S2 decoder.
struct Stored {
    rx: std::sync::mpsc::Receiver<Result<Bytes, String>>,
    current: Bytes,
}

impl Read for Stored {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.recv() {
                Ok(Ok(block)) => self.current = block,
                Ok(Err(e)) => return Err(std::io::Error::other(e)),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// The plain bytes' MD5s, whole and by part (MinIO's part boundaries in plain bytes), and size.
struct PlainCheck {
    part_sizes: Vec<u64>,
    part: usize,
    left_in_part: u64,
    whole: Md5,
    current: Md5,
    part_md5s: Vec<u8>,
    size: u64,
}

impl PlainCheck {
    fn new(part_sizes: Vec<u64>) -> Self {
        let left_in_part = part_sizes.first().copied().unwrap_or(0);
        Self {
            part_sizes,
            part: 0,
            left_in_part,
            whole: Md5::new(),
            current: Md5::new(),
            part_md5s: Vec::new(),
            size: 0,
        }
    }

    /// Counts `bytes`; more than the parts hold is refused at once, not at the end.
    fn update(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        self.size += bytes.len() as u64;
        let most: u64 = self.part_sizes.iter().sum();
        if self.size > most {
            return Err(format!("more plain bytes than the {most} MinIO recorded"));
        }
        self.whole.update(bytes);
        while !bytes.is_empty() {
            let take = usize::try_from(self.left_in_part).unwrap_or(usize::MAX).min(bytes.len());
            self.current.update(&bytes[..take]);
            self.left_in_part -= take as u64;
            bytes = &bytes[take..];
            if self.left_in_part == 0 {
                self.end_part();
                if self.part >= self.part_sizes.len() {
                    break;
                }
            }
        }
        Ok(())
    }

    fn end_part(&mut self) {
        if self.part < self.part_sizes.len() {
            self.part_md5s.extend_from_slice(&std::mem::take(&mut self.current).finalize());
            self.part += 1;
            self.left_in_part = self.part_sizes.get(self.part).copied().unwrap_or(0);
        }
    }

    /// Checks the bytes against MinIO's `etag` and the parts' plain sizes.
    fn finish(mut self, etag: &str) -> Result<(), String> {
        let want: u64 = self.part_sizes.iter().sum();
        if self.size != want {
            return Err(format!("{} plain bytes where MinIO recorded {want}", self.size));
        }
        // Parts of no bytes end here.
        while self.part < self.part_sizes.len() {
            self.end_part();
        }
        let got = match etag.rsplit_once('-') {
            Some((_, n)) if n.parse::<usize>().is_ok_and(|n| n == self.part_sizes.len()) => {
                format!("{}-{n}", hex::encode(Md5::digest(&self.part_md5s)))
            }
            _ => hex::encode(self.whole.finalize()),
        };
        if got != etag {
            return Err(format!("the plain bytes give ETag {got}, MinIO recorded {etag}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_bytes_are_checked_whole_and_by_part() {
        let (a, b) = (vec![1u8; 10], vec![2u8; 7]);
        let md5 = |x: &[u8]| Md5::digest(x).to_vec();
        let multipart = format!("{}-2", hex::encode(Md5::digest([md5(&a), md5(&b)].concat())));
        let mut c = PlainCheck::new(vec![10, 7]);
        // Pieces that straddle the part boundary.
        c.update(&[a.clone(), b[..3].to_vec()].concat()).expect("fits");
        c.update(&b[3..]).expect("fits");
        assert_eq!(c.finish(&multipart), Ok(()));

        let whole = hex::encode(Md5::digest([a.clone(), b.clone()].concat()));
        let mut c = PlainCheck::new(vec![17]);
        c.update(&[a.clone(), b.clone()].concat()).expect("fits");
        assert_eq!(c.finish(&whole), Ok(()));
        // A byte past the recorded size is refused as it comes.
        let mut c = PlainCheck::new(vec![17]);
        assert!(c.update(&[a.clone(), b.clone(), vec![0]].concat()).is_err());

        let mut c = PlainCheck::new(vec![17]);
        c.update(&[a.clone(), b[..6].to_vec(), vec![9]].concat()).expect("fits");
        assert!(c.finish(&whole).is_err_and(|e| e.contains("ETag")));
        let mut c = PlainCheck::new(vec![17]);
        c.update(&a).expect("fits");
        assert!(c.finish(&whole).is_err_and(|e| e.contains("plain bytes where")));
    }
}
