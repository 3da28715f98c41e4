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
use bytes::Bytes;
use md5::{Digest, Md5};
use strata_crypto::package::{
    package_count, plain_size, sealed_range, ObjectCipher, Sealer, SEALED_PACKAGE_SIZE,
};
use strata_meta::SseEnvelope;
use tokio::sync::mpsc;

use crate::error::{BodyError, ObjectError};
use crate::get::{ObjectStream, OpenObject};
use crate::put::BodyReader;

/// What a write encrypts with: the envelope to store, and the cipher of its data key.
#[derive(Debug, Clone)]
pub struct SsePut {
    pub envelope: SseEnvelope,
    pub cipher: ObjectCipher,
    /// The plaintext's MD5 is wanted (the ETag of SSE-S3 objects, or a Content-MD5 to check).
    pub plain_md5: bool,
}

/// A body read through a [`Sealer`]: yields sealed packages, and remembers the plaintext's MD5
/// when asked to.
pub(crate) struct SealingBody<'a> {
    inner: &'a mut dyn BodyReader,
    sealer: Option<Sealer>,
    md5: Option<Md5>,
    plain_md5: Option<[u8; 16]>,
}

impl<'a> SealingBody<'a> {
    pub(crate) fn new(inner: &'a mut dyn BodyReader, sse: &SsePut, segment: u32) -> Self {
        let md5 = sse.plain_md5.then(Md5::new);
        Self { inner, sealer: Some(sse.cipher.sealer(segment)), md5, plain_md5: None }
    }
}

#[async_trait]
impl BodyReader for SealingBody<'_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            let Some(sealer) = self.sealer.as_mut() else { return Ok(None) };
            match self.inner.next_chunk().await? {
                Some(chunk) => {
                    if let Some(m) = self.md5.as_mut() {
                        m.update(&chunk);
                    }
                    let mut out = Vec::with_capacity(chunk.len() + SEALED_PACKAGE_SIZE);
                    sealer.update(&chunk, &mut out);
                    if !out.is_empty() {
                        return Ok(Some(Bytes::from(out)));
                    }
                }
                None => {
                    let mut out = Vec::with_capacity(SEALED_PACKAGE_SIZE);
                    if let Some(sealer) = self.sealer.take() {
                        sealer.finish(&mut out);
                    }
                    self.plain_md5 = self.md5.take().map(|m| m.finalize().into());
                    return Ok(Some(Bytes::from(out)));
                }
            }
        }
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
}

/// The ETag digest and the digest a Content-MD5 is checked against, for a body whose stored
/// (possibly sealed) bytes hash to `stored`: SSE-S3 objects show the plaintext's MD5 like
/// unencrypted ones; SSE-C and SSE-KMS ones the sealed bytes' (AWS: "not an MD5 of the data").
pub(crate) fn digests(
    sse: Option<&SsePut>,
    stored: [u8; 16],
    plain: Option<[u8; 16]>,
) -> ([u8; 16], [u8; 16]) {
    match sse {
        None => (stored, stored),
        Some(s) => {
            let plain = plain.unwrap_or(stored);
            let etag = if s.envelope.kind == strata_meta::SseKind::S3 { plain } else { stored };
            (etag, plain)
        }
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
                let sealed = self.stream_shared(sealed_start + r.sealed_offset, r.sealed_len);
                let window = Window { skip: r.skip, left: to - from };
                let end_package = r.first_package + r.sealed_len.div_ceil(SEALED_PACKAGE_SIZE as u64);
                let opener = cipher.opener(segment, r.first_package, package_count(plain));
                if !open_stream(sealed, opener, end_package, window, tx).await? {
                    return Ok(());
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
    fn take(&mut self, plain: Vec<u8>) -> Option<Bytes> {
        let mut bytes = Bytes::from(plain);
        let skip = self.skip.min(bytes.len() as u64);
        self.skip -= skip;
        bytes = bytes.slice(skip as usize..);
        let keep = self.left.min(bytes.len() as u64);
        self.left -= keep;
        bytes.truncate(keep as usize);
        (!bytes.is_empty()).then_some(bytes)
    }
}

/// Opens a stream of sealed bytes and sends its window of plaintext; `false` when the client
/// went away.
async fn open_stream(
    mut sealed: ObjectStream,
    mut opener: strata_crypto::package::Opener,
    end_package: u64,
    mut window: Window,
    tx: &mpsc::Sender<Result<Bytes, ObjectError>>,
) -> Result<bool, ObjectError> {
    let fail = |e: strata_crypto::CryptoError| damaged(&e.to_string());
    while let Some(chunk) = sealed.recv().await {
        let chunk = chunk?;
        let mut out = Vec::with_capacity(chunk.len());
        opener.update(&chunk, &mut out).map_err(fail)?;
        if let Some(b) = window.take(out) {
            if tx.send(Ok(b)).await.is_err() {
                return Ok(false);
            }
        }
    }
    let mut out = Vec::new();
    opener.finish(end_package, &mut out).map_err(fail)?;
    if let Some(b) = window.take(out) {
        if tx.send(Ok(b)).await.is_err() {
            return Ok(false);
        }
    }
    Ok(true)
}
