//! Versions another store kept, written in with their own ids and times (`strata import`): a
//! single piece as [`ObjectLayer::put_object`] writes it, or part by part as a multipart upload,
//! so a version of more than the single-PUT limit goes in as the parts it was uploaded in.
//!
//! Nothing is stamped: these are for an import into a deployment no client writes to yet.

use std::collections::BTreeMap;

use bytes::Bytes;
use strata_meta::ReplicationStatus;
use uuid::Uuid;

use crate::error::{BodyError, ObjectError};
use crate::layer::ObjectLayer;
use crate::multipart::{CompleteOptions, CompletePart};
use crate::put::{put_object_sealing, BodyReader, PutOptions, PutTarget};
use crate::ObjectInfo;

/// An imported version's own identity, kept instead of a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// `None`: the `null` version.
    pub version_id: Option<Uuid>,
    /// Nanoseconds since the epoch.
    pub mod_time: u64,
    /// The ETag the other store showed, kept where it is not the MD5 of the bytes.
    pub etag: Option<String>,
    /// A copy replication makes: shown as `REPLICA`.
    pub replica: bool,
}

impl Imported {
    /// The upload an import of this version writes its parts under: the same on every run, so a
    /// run that stopped half-way leaves an upload the next one finds and replaces.
    fn upload_id(&self, bucket: &str, key: &str) -> Uuid {
        let mut seed = Vec::with_capacity(bucket.len() + key.len() + 40);
        for field in [bucket.as_bytes(), key.as_bytes()] {
            seed.extend_from_slice(&(field.len() as u64).to_le_bytes());
            seed.extend_from_slice(field);
        }
        seed.extend_from_slice(self.version_id.unwrap_or_default().as_bytes());
        seed.extend_from_slice(&self.mod_time.to_le_bytes());
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&seed);
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

impl ObjectLayer {
    /// Writes a version another store kept: `body` stored as [`Self::put_object`] stores it,
    /// but with the version's own id and time, committed in its place among the object's
    /// versions rather than as the newest. A version with that id and time already there is
    /// replaced by the same.
    pub async fn import_version(
        &self,
        bucket: &str,
        key: &str,
        imported: Imported,
        body: &mut dyn BodyReader,
        mut opts: PutOptions,
    ) -> Result<ObjectInfo, ObjectError> {
        self.bucket_info(bucket)?;
        let pool = self.key_pool(bucket, key).await?;
        let (set, hash) = (self.set_in(pool, bucket, key), self.hash_of(bucket, key));
        let target = PutTarget {
            pool: self.pool_check(pool),
            set,
            bucket,
            key,
            hash,
            healer: &self.healer,
            version_id: imported.version_id,
            imported_at: Some(imported.mod_time),
        };
        opts.imported_etag = imported.etag;
        opts.replication = imported.replica.then_some(ReplicationStatus::Replica);
        put_object_sealing(target, body, opts).await
    }

    /// [`Self::import_version`] of a version uploaded in parts: `body` is cut into parts of
    /// `part_sizes` bytes (its own part boundaries, each within the single-PUT limit), each
    /// stored (and sealed, with `opts.sse`) as an uploaded part is, then completed as one version.
    /// The body must hold exactly the parts' bytes; anything else fails and leaves no upload.
    pub async fn import_parts(
        &self,
        bucket: &str,
        key: &str,
        imported: Imported,
        part_sizes: &[u64],
        body: &mut dyn BodyReader,
        opts: PutOptions,
    ) -> Result<ObjectInfo, ObjectError> {
        self.bucket_info(bucket)?;
        let upload_id = imported.upload_id(bucket, key);
        // An earlier run's upload of this version, if one stopped half-way.
        match self.abort_multipart_upload(bucket, key, upload_id).await {
            Ok(()) | Err(ObjectError::NoSuchUpload) => {}
            Err(e) => return Err(e),
        }
        let sse = opts.sse.clone();
        self.create_upload(bucket, key, opts, upload_id).await?;
        let written = self.write_parts(bucket, key, upload_id, part_sizes, body, sse.as_ref()).await;
        let completed = match written {
            Ok(parts) => {
                let opts = CompleteOptions { imported: Some(imported), ..Default::default() };
                self.complete_multipart_upload(bucket, key, upload_id, &parts, opts).await
            }
            Err(e) => Err(e),
        };
        if completed.is_err() {
            // Best effort: a later run replaces it (the same upload id) in any case.
            let _ = self.abort_multipart_upload(bucket, key, upload_id).await;
        }
        completed
    }

    async fn write_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        part_sizes: &[u64],
        body: &mut dyn BodyReader,
        sse: Option<&crate::sse::SsePut>,
    ) -> Result<Vec<CompletePart>, ObjectError> {
        if part_sizes.is_empty() {
            return Err(ObjectError::InvalidPart(0));
        }
        let mut pieces = Pieces { body, held: Bytes::new() };
        let mut parts = Vec::with_capacity(part_sizes.len());
        for (i, &size) in part_sizes.iter().enumerate() {
            let number = u32::try_from(i + 1).map_err(|_| ObjectError::InvalidPart(u32::MAX))?;
            let last = i + 1 == part_sizes.len();
            let mut piece = Piece { from: &mut pieces, left: size, last };
            let part = self.upload_part_sealed(bucket, key, upload_id, number, &mut piece, None, sse).await?;
            parts.push(CompletePart { number, etag: part.etag, checksums: BTreeMap::new() });
        }
        Ok(parts)
    }
}

/// A body being cut into parts: the bytes of a chunk past the end of one part wait for the next.
struct Pieces<'a> {
    body: &'a mut dyn BodyReader,
    held: Bytes,
}

/// The next `left` bytes of [`Pieces`], as a body of its own. The last piece also checks that
/// the body ends with it (and passes on an error the body reports at its end).
struct Piece<'p, 'a> {
    from: &'p mut Pieces<'a>,
    left: u64,
    last: bool,
}

#[async_trait::async_trait]
impl BodyReader for Piece<'_, '_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        if self.left == 0 {
            if self.last && !self.from.held.is_empty() {
                return Err(BodyError::TooLarge);
            }
            while self.last {
                match self.from.body.next_chunk().await? {
                    None => break,
                    Some(chunk) if chunk.is_empty() => {}
                    Some(_) => return Err(BodyError::TooLarge),
                }
            }
            return Ok(None);
        }
        while self.from.held.is_empty() {
            match self.from.body.next_chunk().await? {
                Some(chunk) => self.from.held = chunk,
                None => return Err(BodyError::Incomplete),
            }
        }
        let n = usize::try_from(self.left).unwrap_or(usize::MAX).min(self.from.held.len());
        self.left -= n as u64;
        Ok(Some(self.from.held.split_to(n)))
    }

    /// The other store's checksums are of the whole version, not of a part.
    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of the given chunks, then `end` (`Some`: an error reported after the bytes).
    struct Chunks(Vec<Result<Bytes, BodyError>>);

    #[async_trait::async_trait]
    impl BodyReader for Chunks {
        async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
            if self.0.is_empty() {
                return Ok(None);
            }
            self.0.remove(0).map(Some)
        }
        fn checksums(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
    }

    fn chunks(parts: &[&[u8]]) -> Chunks {
        Chunks(parts.iter().map(|p| Ok(Bytes::copy_from_slice(p))).collect())
    }

    /// Reads `sizes` pieces of `body`: each piece's bytes, or the first error.
    async fn cut(body: &mut dyn BodyReader, sizes: &[u64]) -> Result<Vec<Vec<u8>>, BodyError> {
        let mut pieces = Pieces { body, held: Bytes::new() };
        let mut out = Vec::new();
        for (i, &left) in sizes.iter().enumerate() {
            let mut piece = Piece { from: &mut pieces, left, last: i + 1 == sizes.len() };
            let mut bytes = Vec::new();
            while let Some(chunk) = piece.next_chunk().await? {
                bytes.extend_from_slice(&chunk);
            }
            out.push(bytes);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_body_is_cut_at_the_part_boundaries_across_its_chunks() {
        let mut body = chunks(&[b"abc", b"", b"defgh", b"ij"]);
        let pieces = cut(&mut body, &[4, 0, 5, 1]).await.expect("cut");
        assert_eq!(pieces, vec![b"abcd".to_vec(), Vec::new(), b"efghi".to_vec(), b"j".to_vec()]);
    }

    #[tokio::test]
    async fn a_body_longer_or_shorter_than_its_parts_fails() {
        let long = cut(&mut chunks(&[b"abcdef"]), &[2, 3]).await;
        assert!(matches!(long, Err(BodyError::TooLarge)), "{long:?}");
        let longer_chunk = cut(&mut chunks(&[b"abcde", b"f"]), &[2, 3]).await;
        assert!(matches!(longer_chunk, Err(BodyError::TooLarge)), "{longer_chunk:?}");
        let short = cut(&mut chunks(&[b"abcd"]), &[2, 3]).await;
        assert!(matches!(short, Err(BodyError::Incomplete)), "{short:?}");
    }

    #[tokio::test]
    async fn an_error_the_body_reports_at_its_end_fails_the_last_part() {
        let mut body =
            Chunks(vec![Ok(Bytes::from_static(b"abcde")), Err(BodyError::Malformed("bad".into()))]);
        let ended = cut(&mut body, &[2, 3]).await;
        assert!(matches!(ended, Err(BodyError::Malformed(_))), "{ended:?}");
    }

    #[test]
    fn an_import_upload_id_is_the_same_on_every_run_and_its_own_per_version() {
        let v = Imported { version_id: Some(Uuid::from_u128(7)), mod_time: 5, etag: None, replica: false };
        assert_eq!(v.upload_id("b", "k"), v.upload_id("b", "k"));
        assert_ne!(v.upload_id("b", "k"), v.upload_id("b", "k2"));
        assert_ne!(v.upload_id("b", "k"), v.upload_id("bk", ""));
        let later = Imported { mod_time: 6, ..v.clone() };
        assert_ne!(v.upload_id("b", "k"), later.upload_id("b", "k"));
    }
}
