//! Encryption at rest in the object layer: a body sealed into packages on its way to the
//! erasure coder, and a stored range opened again on its way out.
//!
//! The layer stores and heals sealed bytes like any other: `size`, part sizes, erasure blocks
//! and shard files all count sealed bytes, so healing and degraded reads never need a key. Only
//! [`SealingBody`] (PUT, UploadPart) and [`OpenObject::stream_decrypted`] (GET) see plaintext.
//! Keys are the S3 layer's business: it hands in an [`ObjectCipher`] made from the object's data
//! key.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use md5::{Digest, Md5};
use strata_crypto::package::{
    package_count, plain_size, sealed_range, ObjectCipher, SealedOut, Sealer, PACKAGE_SIZE,
    SEALED_PACKAGE_SIZE, TAG_SIZE,
};
use strata_crypto::CryptoError;
use strata_meta::SseEnvelope;
use tokio::sync::mpsc;

use crate::error::{BodyError, ObjectError};
use crate::get::{Check, ObjectStream, OpenObject};
use crate::put::BodyReader;

/// What a write encrypts with: the envelope to store, and the cipher of its data key.
#[derive(Debug, Clone)]
pub struct SsePut {
    pub envelope: SseEnvelope,
    pub cipher: ObjectCipher,
    /// The plaintext's MD5 is wanted (the ETag of SSE-S3 objects, or a Content-MD5 to check).
    pub plain_md5: bool,
}

/// A body read through a [`Sealer`]: yields sealed packages, remembers the plaintext's MD5
/// when asked to, and the MD5 of the packages' tags (16 bytes a package: nearly free).
pub(crate) struct SealingBody<'a> {
    inner: &'a mut dyn BodyReader,
    sealer: Option<Sealer>,
    /// Plaintext read from `inner` and not yet sealed: it would seal past the block being filled.
    rest: Option<Bytes>,
    md5: Option<Md5>,
    plain_md5: Option<[u8; 16]>,
    tags: Md5,
    tags_md5: Option<[u8; 16]>,
}

impl<'a> SealingBody<'a> {
    pub(crate) fn new(inner: &'a mut dyn BodyReader, sse: &SsePut, segment: u32) -> Self {
        let md5 = sse.plain_md5.then(Md5::new);
        let sealer = Some(sse.cipher.sealer(segment));
        Self { inner, sealer, rest: None, md5, plain_md5: None, tags: Md5::new(), tags_md5: None }
    }

    /// The next plaintext: what a block had no room for, else the next chunk of the body (into
    /// the plaintext's MD5 as it is read).
    async fn next_plain(&mut self) -> Result<Option<Bytes>, BodyError> {
        if let Some(c) = self.rest.take() {
            return Ok(Some(c));
        }
        let chunk = self.inner.next_chunk().await?;
        if let (Some(m), Some(c)) = (self.md5.as_mut(), &chunk) {
            m.update(c);
        }
        Ok(chunk)
    }

    /// Seals `plain` into `out` (the packages now known not to be the last), tags hashed.
    fn seal(&mut self, plain: &[u8], out: &mut impl SealedOut) {
        let start = out.len();
        if let Some(sealer) = self.sealer.as_mut() {
            sealer.update(plain, out);
        }
        hash_tags(&mut self.tags, &out[start..]);
    }

    /// The body has ended: seals the last package into `out`; the digests are final.
    fn seal_last(&mut self, out: &mut impl SealedOut) {
        let start = out.len();
        if let Some(sealer) = self.sealer.take() {
            sealer.finish(out);
        }
        hash_tags(&mut self.tags, &out[start..]);
        self.plain_md5 = self.md5.take().map(|m| m.finalize().into());
        self.tags_md5 = Some(std::mem::take(&mut self.tags).finalize().into());
    }
}

/// Hashes the tag of every package in `sealed` (whole packages, the last may be short).
fn hash_tags(tags: &mut Md5, sealed: &[u8]) {
    for package in sealed.chunks(SEALED_PACKAGE_SIZE) {
        tags.update(&package[package.len().saturating_sub(TAG_SIZE)..]);
    }
}

#[async_trait]
impl BodyReader for SealingBody<'_> {
    /// The packages sealed from the next chunk(s) of plaintext, in a buffer of their own: what
    /// [`Self::fill_block`] cuts blocks from when they are not whole packages.
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        while self.sealer.is_some() {
            let mut out = Vec::new();
            match self.next_plain().await? {
                Some(chunk) => {
                    out.reserve(chunk.len() + SEALED_PACKAGE_SIZE);
                    self.seal(&chunk, &mut out);
                }
                None => self.seal_last(&mut out),
            }
            if !out.is_empty() {
                return Ok(Some(Bytes::from(out)));
            }
        }
        Ok(None)
    }

    /// Seals the plaintext straight into `block` when blocks are whole packages (every sealed
    /// upload and object since blocks became 16 packages): the PUT encodes the block where it
    /// lies. An upload begun before then records 1 MiB blocks: for it, packages are sealed
    /// chunk by chunk ([`Self::next_chunk`]) and the blocks cut from them, with `rest`.
    async fn fill_block(
        &mut self,
        block: &mut BytesMut,
        block_size: usize,
        rest: &mut Option<Bytes>,
    ) -> Result<bool, BodyError> {
        if !block_size.is_multiple_of(SEALED_PACKAGE_SIZE) || !block.len().is_multiple_of(SEALED_PACKAGE_SIZE)
        {
            return crate::put::copy_chunks(self, block, block_size, rest).await;
        }
        while block.len() < block_size && self.sealer.is_some() {
            let Some(chunk) = self.next_plain().await? else {
                self.seal_last(block);
                return Ok(false);
            };
            // Feed no more than seals the packages the block has room for (the sealer seals a
            // full package once a byte follows it); the last package, at the end, fits too.
            let room = (block_size - block.len()) / SEALED_PACKAGE_SIZE;
            let pending = self.sealer.as_ref().map_or(0, Sealer::pending);
            let take = chunk.len().min((room + 1) * PACKAGE_SIZE - pending);
            self.seal(&chunk[..take], block);
            if take < chunk.len() {
                self.rest = Some(chunk.slice(take..));
            }
        }
        Ok(self.sealer.is_some())
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        self.inner.checksums()
    }

    fn checksum_algorithm(&self) -> Option<crate::checksum::Algorithm> {
        self.inner.checksum_algorithm()
    }

    fn plain_md5(&self) -> Option<[u8; 16]> {
        self.plain_md5
    }

    fn seals(&self) -> bool {
        true
    }

    fn tags_md5(&self) -> Option<[u8; 16]> {
        self.tags_md5
    }
}

/// The ETag digest and the digest a Content-MD5 is checked against, for `body` whose stored
/// bytes hash to `stored` (computed for unsealed bodies only): SSE-S3 objects show the
/// plaintext's MD5 like unencrypted ones; SSE-C and SSE-KMS ones the MD5 of their packages'
/// tags (AWS: "not an MD5 of the data"), so neither kind hashes its sealed bytes, and SSE-KMS and
/// SSE-C hash nothing whole unless a Content-MD5 asks for the plaintext's.
pub(crate) fn digests(
    sse: Option<&SsePut>,
    stored: Option<[u8; 16]>,
    body: &dyn BodyReader,
) -> ([u8; 16], [u8; 16]) {
    // Each digest below is computed whenever its case needs it (the body's own digests once it
    // has ended, the stored bytes' MD5 for unsealed bodies); the fallbacks never serve.
    let (plain, tags) = (body.plain_md5(), body.tags_md5());
    let etag = match sse {
        None => stored,
        Some(s) if s.envelope.kind == strata_meta::SseKind::S3 => plain,
        Some(_) => tags,
    };
    let checked = if sse.is_some() { plain.or(etag) } else { etag };
    let etag = etag.unwrap_or_default();
    (etag, checked.unwrap_or(etag))
}

/// What sealed checksums are bound to: the object's (segment 0) or a part's.
fn checksums_label(segment: u32) -> Vec<u8> {
    [&b"checksums\0"[..], &segment.to_le_bytes()].concat()
}

/// Checksums by algorithm name, base64 values.
type Checksums = BTreeMap<String, String>;

/// How a record keeps `checksums` (the plaintext's) of `segment` (0: the whole object; a part
/// number): for SSE-C (`sse` its envelope and cipher) sealed under the data key, the map in clear
/// then empty, since AWS shows them only to a caller with the key; otherwise in clear. Returns
/// (the map in clear, the sealed bytes).
pub(crate) fn seal_checksums(
    sse: Option<(&SseEnvelope, &ObjectCipher)>,
    segment: u32,
    checksums: &Checksums,
) -> Result<(Checksums, Option<Vec<u8>>), ObjectError> {
    let Some((_, cipher)) = sse.filter(|(e, _)| e.kind == strata_meta::SseKind::C && !checksums.is_empty())
    else {
        return Ok((checksums.clone(), None));
    };
    // A map of strings always encodes; an error here could only be a bug.
    let text = serde_json::to_vec(checksums).map_err(|e| ObjectError::Corrupt(format!("checksums: {e}")))?;
    let sealed =
        cipher.seal_metadata(&checksums_label(segment), &text).map_err(|e| damaged(&e.to_string()))?;
    Ok((BTreeMap::new(), Some(sealed)))
}

/// Opens checksums sealed by [`seal_checksums`].
fn open_checksums(
    cipher: &ObjectCipher,
    segment: u32,
    sealed: &[u8],
) -> Result<BTreeMap<String, String>, ObjectError> {
    let text = cipher
        .open_metadata(&checksums_label(segment), sealed)
        .map_err(|e| damaged(&format!("sealed checksums: {e}")))?;
    serde_json::from_slice(&text).map_err(|e| damaged(&format!("sealed checksums: {e}")))
}

/// A part's checksums in clear: opened with `cipher` when sealed (an error without it).
pub(crate) fn part_checksums(
    part: &strata_meta::PartInfo,
    cipher: Option<&ObjectCipher>,
) -> Result<BTreeMap<String, String>, ObjectError> {
    match (&part.sealed_checksums, cipher) {
        (None, _) => Ok(part.checksums.clone()),
        (Some(sealed), Some(c)) => open_checksums(c, part.number, sealed),
        (Some(_), None) => Err(ObjectError::CustomerKeyNeeded),
    }
}

/// Opens the sealed checksums (SSE-C) of `parts` in place with their object's (upload's) cipher.
pub fn open_part_checksums(
    parts: &mut [strata_meta::PartInfo],
    cipher: &ObjectCipher,
) -> Result<(), ObjectError> {
    for p in parts {
        if let Some(sealed) = &p.sealed_checksums {
            p.checksums = open_checksums(cipher, p.number, sealed)?;
        }
    }
    Ok(())
}

impl crate::ObjectInfo {
    /// Opens the object's and its parts' sealed checksums (SSE-C) with the object's cipher.
    pub fn open_checksums(&mut self, cipher: &ObjectCipher) -> Result<(), ObjectError> {
        if let Some(sealed) = self.sse.as_ref().and_then(|e| e.sealed_checksums.as_deref()) {
            self.checksums = open_checksums(cipher, 0, sealed)?;
        }
        open_part_checksums(&mut self.parts, cipher)
    }
}

fn damaged(what: &str) -> ObjectError {
    ObjectError::Sealed(what.to_owned())
}

impl OpenObject {
    /// Streams plaintext bytes `[offset, offset + len)` (already checked against the plain
    /// size) of an encrypted object: only the packages the range needs are read and opened.
    /// Bytes that do not open (tampered beyond what healing repairs, the wrong key) end the
    /// stream with [`ObjectError::Sealed`]; no unauthenticated byte is ever sent.
    pub fn stream_decrypted(self, cipher: ObjectCipher, offset: u64, len: u64) -> ObjectStream {
        let (tx, rx) = mpsc::channel(4);
        let this = Arc::new(self);
        tokio::spawn(async move {
            if let Err(e) = this.produce_plain(&cipher, offset, len, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        rx
    }

    /// The segments of the stored object: (segment number, sealed offset, sealed size).
    fn segments(&self) -> Vec<(u32, u64, u64)> {
        if self.version.parts.is_empty() {
            return vec![(0, 0, self.version.size)];
        }
        let mut start = 0;
        self.version
            .parts
            .iter()
            .map(|p| {
                let s = (p.number, start, p.size);
                start += p.size;
                s
            })
            .collect()
    }

    async fn produce_plain(
        self: &Arc<Self>,
        cipher: &ObjectCipher,
        offset: u64,
        len: u64,
        tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
    ) -> Result<(), ObjectError> {
        let end = offset + len;
        let mut plain_start = 0u64;
        for (segment, sealed_start, sealed_size) in self.segments() {
            let plain = plain_size(sealed_size).ok_or_else(|| damaged("a sealed size no plaintext has"))?;
            let (from, to) = (offset.max(plain_start), end.min(plain_start + plain));
            if from < to {
                let r = sealed_range(plain, from - plain_start, to - from);
                let mut window = Window { skip: r.skip, left: to - from };
                let sealed_end = r.sealed_offset + r.sealed_len;
                let end_package = r.first_package + r.sealed_len.div_ceil(SEALED_PACKAGE_SIZE as u64);
                // The tags check every byte, so the shards are first read without their hashes;
                // from a package that does not open, they are read again checked, which finds
                // and skips a rotten shard (and queues its healing) as any read does.
                let (mut first, mut check) = (r.first_package, Check::Tags);
                loop {
                    let from_sealed = first * SEALED_PACKAGE_SIZE as u64;
                    let sealed =
                        self.stream_shared(sealed_start + from_sealed, sealed_end - from_sealed, check);
                    let opener = cipher.opener(segment, first, package_count(plain));
                    match open_stream(sealed, opener, end_package, &mut window, tx).await? {
                        Opened::All => break,
                        Opened::ClientGone => return Ok(()),
                        Opened::Failed { package, .. } if check == Check::Tags && package < end_package => {
                            (first, check) = (package, Check::Hashes);
                        }
                        Opened::Failed { error, .. } => return Err(damaged(&error.to_string())),
                    }
                }
            }
            plain_start += plain;
        }
        Ok(())
    }
}

/// The plaintext bytes of a run of packages to send: drop `skip`, then send `left`.
struct Window {
    skip: u64,
    left: u64,
}

impl Window {
    /// The part of `plain` (the next opened bytes) to send.
    fn take(&mut self, mut bytes: Bytes) -> Option<Bytes> {
        let skip = self.skip.min(bytes.len() as u64);
        self.skip -= skip;
        bytes = bytes.slice(skip as usize..);
        let keep = self.left.min(bytes.len() as u64);
        self.left -= keep;
        bytes.truncate(keep as usize);
        (!bytes.is_empty()).then_some(bytes)
    }
}

/// How far [`open_stream`] got.
enum Opened {
    /// Every package of the stream opened and its plaintext was sent.
    All,
    /// The client went away.
    ClientGone,
    /// `package` did not open; the plaintext of every package before it was sent.
    Failed { package: u64, error: CryptoError },
}

/// Opens a stream of sealed bytes and sends its window of plaintext.
async fn open_stream(
    mut sealed: ObjectStream,
    mut opener: strata_crypto::package::Opener,
    end_package: u64,
    window: &mut Window,
    tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
) -> Result<Opened, ObjectError> {
    let mut out = Vec::new();
    while let Some(chunk) = sealed.recv().await {
        let opened = opener.update(&chunk?, &mut out);
        if !send_plain(window, &mut out, tx).await {
            return Ok(Opened::ClientGone);
        }
        if let Err(error) = opened {
            return Ok(Opened::Failed { package: opener.next_package(), error });
        }
    }
    // `finish` opens a short last package still being gathered: the next one.
    let package = opener.next_package();
    let opened = opener.finish(end_package, &mut out);
    if !send_plain(window, &mut out, tx).await {
        return Ok(Opened::ClientGone);
    }
    Ok(match opened {
        Ok(()) => Opened::All,
        Err(error) => Opened::Failed { package, error },
    })
}

/// Sends the window's share of the opened pieces in `out` (emptied); `false` when the client
/// went away.
async fn send_plain(
    window: &mut Window,
    out: &mut Vec<Bytes>,
    tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
) -> bool {
    for piece in out.drain(..) {
        if let Some(b) = window.take(piece) {
            if tx.send(Ok(b)).await.is_err() {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::put::BlockReader;
    use strata_crypto::DataKey;
    use strata_meta::SseKind;

    /// A body served from memory in the given chunks.
    struct Chunks(Vec<Bytes>);

    #[async_trait]
    impl BodyReader for Chunks {
        async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
            Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
        }

        fn checksums(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
    }

    fn sse(kind: SseKind, plain_md5: bool) -> SsePut {
        let envelope = SseEnvelope {
            kind,
            object_id: uuid::Uuid::from_bytes([7; 16]),
            sealed_key: vec![],
            kms_key_id: None,
            context: None,
            sealed_context: None,
            sealed_outer_key: None,
            key_mac: None,
            sealed_checksums: None,
        };
        SsePut { envelope, cipher: ObjectCipher::new(&DataKey::from_bytes([3; 32]), [7; 16]), plain_md5 }
    }

    /// Reads `plain` through a sealing body in uneven chunks; the sealed bytes and the body.
    async fn seal_all(plain: &[u8], sse: &SsePut) -> (Vec<u8>, Option<[u8; 16]>, Option<[u8; 16]>) {
        let mut body = Chunks(plain.chunks(70_001).map(Bytes::copy_from_slice).collect());
        let mut sealing = SealingBody::new(&mut body, sse, 0);
        assert!(sealing.seals());
        let mut sealed = Vec::new();
        while let Some(c) = sealing.next_chunk().await.expect("reads") {
            sealed.extend_from_slice(&c);
        }
        let (etag, checked) = digests(Some(sse), None, &sealing);
        assert!(
            BlockReader::new(&mut sealing, 2, crate::put::SEALED_BLOCK_SIZE).take_md5().is_none(),
            "sealed bytes are not hashed"
        );
        (sealed, Some(etag), Some(checked))
    }

    #[tokio::test]
    async fn sealed_bodies_take_their_etags_from_tags_or_plaintext_never_from_sealed_bytes() {
        let plain: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let plain_md5: [u8; 16] = Md5::digest(&plain).into();
        // SSE-KMS / SSE-C: the MD5 of the package tags, and no MD5 of the plaintext unless asked.
        let (sealed, etag, checked) = seal_all(&plain, &sse(SseKind::Kms, false)).await;
        let mut tags = Md5::new();
        for package in sealed.chunks(SEALED_PACKAGE_SIZE) {
            tags.update(&package[package.len() - TAG_SIZE..]);
        }
        let tags: [u8; 16] = tags.finalize().into();
        assert_eq!(sealed.len() as u64, strata_crypto::package::sealed_size(plain.len() as u64));
        assert_eq!((etag, checked), (Some(tags), Some(tags)));
        assert_ne!(etag, Some(Md5::digest(&sealed).into()));
        // With a Content-MD5 to check, the plaintext's MD5 is what it is checked against.
        let (_, etag, checked) = seal_all(&plain, &sse(SseKind::C, true)).await;
        assert_eq!((etag, checked), (Some(tags), Some(plain_md5)));
        // SSE-S3: the plaintext's MD5, as an unencrypted object's.
        let (_, etag, checked) = seal_all(&plain, &sse(SseKind::S3, true)).await;
        assert_eq!((etag, checked), (Some(plain_md5), Some(plain_md5)));
    }

    /// A PUT's blocks, sealed in place: every block but the last exactly full, whole packages,
    /// never reallocated, and together the bytes a sealer makes of the whole plaintext, for
    /// objects ending at and around every package and block boundary and chunks of any size.
    #[tokio::test]
    async fn blocks_are_sealed_in_place_and_equal_the_whole_stream_sealed() {
        let p = PACKAGE_SIZE;
        let block_plain = crate::put::SEALED_BLOCK_SIZE / SEALED_PACKAGE_SIZE * p;
        let sse = sse(SseKind::S3, true);
        for size in
            [0, 1, p - 1, p, p + 1, block_plain - 1, block_plain, block_plain + 1, 2 * block_plain + 17]
        {
            let plain: Vec<u8> = (0..size as u32).map(|i| (i * 31 + i / 7) as u8).collect();
            let mut whole = Vec::new();
            let mut sealer = sse.cipher.sealer(0);
            sealer.update(&plain, &mut whole);
            sealer.finish(&mut whole);
            for step in [1000, 70_001, p, block_plain, block_plain + 1, 3 * block_plain] {
                let mut body = Chunks(plain.chunks(step).map(Bytes::copy_from_slice).collect());
                let mut sealing = SealingBody::new(&mut body, &sse, 0);
                let mut reader = BlockReader::new(&mut sealing, 2, crate::put::SEALED_BLOCK_SIZE);
                let mut blocks = Vec::new();
                loop {
                    let block = reader.next_block().await.expect("reads");
                    if block.is_empty() {
                        break;
                    }
                    assert_eq!(block.capacity(), crate::put::SEALED_BLOCK_SIZE + 2, "sealed where it lies");
                    blocks.push(block);
                }
                let (last, full) = blocks.split_last().expect("an object has a block");
                assert!(full.iter().all(|b| b.len() == crate::put::SEALED_BLOCK_SIZE), "{size}/{step}");
                assert!(!last.is_empty() && last.len() <= crate::put::SEALED_BLOCK_SIZE, "{size}/{step}");
                assert_eq!(blocks.concat(), whole, "{size} bytes in chunks of {step}");
                assert_eq!(sealing.plain_md5(), Some(Md5::digest(&plain).into()), "{size}/{step}");
                let mut tags = Md5::new();
                for package in whole.chunks(SEALED_PACKAGE_SIZE) {
                    tags.update(&package[package.len() - TAG_SIZE..]);
                }
                assert_eq!(sealing.tags_md5(), Some(tags.finalize().into()), "{size}/{step}");
            }
        }
    }

    /// Uploads begun before sealed blocks were whole packages record 1 MiB blocks (or any size
    /// a record allows): their parts are cut into blocks of exactly that size, as the stream
    /// sealed whole, with the same digests, and never hang.
    #[tokio::test]
    async fn blocks_of_any_recorded_size_are_cut_from_the_sealed_stream() {
        let block_plain = crate::put::SEALED_BLOCK_SIZE / SEALED_PACKAGE_SIZE * PACKAGE_SIZE;
        let plain: Vec<u8> = (0..(3 * block_plain + 5) as u32).map(|i| (i * 13 + i / 5) as u8).collect();
        let sse = sse(SseKind::Kms, true);
        let mut whole = Vec::new();
        let mut sealer = sse.cipher.sealer(0);
        sealer.update(&plain, &mut whole);
        sealer.finish(&mut whole);
        let mut tags = Md5::new();
        for package in whole.chunks(SEALED_PACKAGE_SIZE) {
            tags.update(&package[package.len() - TAG_SIZE..]);
        }
        let tags: [u8; 16] = tags.finalize().into();
        for block_size in [strata_types::limits::BLOCK_SIZE, 1000, SEALED_PACKAGE_SIZE + 1] {
            for step in [65_536, 1_000_003] {
                let mut body = Chunks(plain.chunks(step).map(Bytes::copy_from_slice).collect());
                let mut sealing = SealingBody::new(&mut body, &sse, 0);
                let mut reader = BlockReader::new(&mut sealing, 2, block_size);
                let mut blocks = Vec::new();
                loop {
                    let block = reader.next_block().await.expect("reads");
                    if block.is_empty() {
                        break;
                    }
                    blocks.push(block);
                }
                let (_, full) = blocks.split_last().expect("an object has a block");
                assert!(full.iter().all(|b| b.len() == block_size), "{block_size}/{step}");
                assert_eq!(blocks.concat(), whole, "blocks of {block_size} from chunks of {step}");
                assert_eq!(sealing.plain_md5(), Some(Md5::digest(&plain).into()));
                assert_eq!(sealing.tags_md5(), Some(tags));
            }
        }
    }
}
