//! MinIO's SSE-S3 objects, opened with the key of MinIO's built-in KMS (`MINIO_KMS_SECRET_KEY`):
//! the object's key unsealed, and its bytes, ETag and checksum decrypted.
//!
//! What MinIO keeps with such a version (`x-minio-internal-server-side-encryption-*` in its
//! internal metadata): the KMS key's name and the 76-byte data key it sealed (the key-encryption
//! key, KEK; context `{"BUCKET": "BUCKET/KEY"}`), a 32-byte IV, the seal algorithm
//! (`DAREv2-HMAC-SHA256`) and the sealed object key: one DARE package under
//! HMAC-SHA256(KEK, IV || "SSE-S3" || "DAREv2-HMAC-SHA256" || "BUCKET/KEY").
//!
//! The stored bytes are a DARE 2.0 stream under the object key (a multipart object: one stream
//! per part, under HMAC-SHA256(object key, part number as u32 LE)). A package is a 16-byte
//! header (version 0x20, cipher 0 = AES-256-GCM or 1 = ChaCha20-Poly1305, the payload length
//! less one as u16 LE, a 12-byte nonce field the same in every package of the stream but for bit
//! 0x80 of its first byte, set on the last package), the payload encrypted, and a 16-byte tag.
//! The AEAD nonce is the nonce field with its last four bytes (u32 LE) XOR-ed with the package's
//! sequence number from 0; the associated data is the header's first four bytes. Every package
//! but the last carries 64 KiB. The ETag (when longer than an MD5) and the checksum are DARE
//! streams too, under HMAC-SHA256(object key, "SSE-etag") and HMAC-SHA256(object key,
//! "object-checksum").

use std::collections::BTreeMap;
use std::path::PathBuf;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};
use base64::Engine;
use bytes::Bytes;
use strata_crypto::kms::MasterKey;
use strata_object::{BodyError, BodyReader};

use super::kms;
use super::object::ObjectCopies;
use super::takeover::{metadata, EncryptedVersion, Metadata};
use super::xlmeta::{ObjectVersion, XlVersion};

const PREFIX: &str = "x-minio-internal-server-side-encryption-";
const DARE_VERSION: u8 = 0x20;
const HEADER_LEN: usize = 16;
const TAG_LEN: usize = 16;
/// Payload bytes of every package but the last.
pub const PACKAGE_PAYLOAD: usize = 64 * 1024;
const FINAL_FLAG: u8 = 0x80;
const SEAL_ALGORITHM: &str = "DAREv2-HMAC-SHA256";

/// Why an encrypted object does not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("encrypted with a customer's key (SSE-C): only the client has it")]
    CustomerKey,
    #[error("encrypted under MinIO's KMS key '{0}': give that key as MINIO_KMS_SECRET_KEY")]
    NeedKey(String),
    #[error("its encryption record is incomplete or malformed: {0}")]
    Malformed(String),
    #[error("sealed with {0}, which this build does not open")]
    Unsupported(String),
    #[error(transparent)]
    Unseal(#[from] kms::UnsealError),
    #[error("its bytes do not decrypt (altered, truncated, or another key)")]
    NotAuthentic,
}

/// The SSE record MinIO kept with a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub kms_key_id: String,
    kms_sealed_key: Vec<u8>,
    iv: Vec<u8>,
    sealed_key: Vec<u8>,
    /// Each part is its own stream, under its own key.
    pub multipart: bool,
    /// `aws:kms` (SSE-KMS), with the encryption context the client gave (MinIO binds the data
    /// key to it and the object's path); else SSE-S3.
    pub kms: Option<Vec<(String, String)>>,
}

fn meta<'v>(version: &'v ObjectVersion, name: &str) -> Option<&'v [u8]> {
    version.meta_sys.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_slice())
}

fn b64(version: &ObjectVersion, suffix: &str) -> Result<Option<Vec<u8>>, SseError> {
    meta(version, &format!("{PREFIX}{suffix}"))
        .map(|v| {
            base64::engine::general_purpose::STANDARD
                .decode(v)
                .map_err(|_| SseError::Malformed(format!("{suffix} is not base64")))
        })
        .transpose()
}

/// MinIO's SSE-S3 or SSE-KMS record of `version`; `None` if it is not encrypted, an error for
/// the kinds this build does not open (SSE-C, MinIO's older seals).
pub fn sealed(version: &ObjectVersion) -> Result<Option<Sealed>, SseError> {
    let encrypted = version.meta_sys.keys().any(|k| k.to_ascii_lowercase().starts_with(PREFIX));
    if !encrypted {
        return Ok(None);
    }
    if meta(version, &format!("{PREFIX}sealed-key")).is_some() {
        return Err(SseError::CustomerKey);
    }
    let (sealed_key, kms) = match (b64(version, "s3-sealed-key")?, b64(version, "kms-sealed-key")?) {
        (Some(key), None) => (key, None),
        (None, Some(key)) => {
            let context = match b64(version, "context")? {
                None => Vec::new(),
                Some(json) => {
                    let map: BTreeMap<String, String> = serde_json::from_slice(&json).map_err(|_| {
                        SseError::Malformed("an SSE-KMS context that is not a JSON object of strings".into())
                    })?;
                    map.into_iter().collect()
                }
            };
            (key, Some(context))
        }
        _ => return Err(SseError::Unsupported("a seal other than SSE-S3 or SSE-KMS".into())),
    };
    let algorithm = meta(version, &format!("{PREFIX}seal-algorithm")).unwrap_or_default();
    if algorithm != SEAL_ALGORITHM.as_bytes() {
        return Err(SseError::Unsupported(format!("the seal {:?}", String::from_utf8_lossy(algorithm))));
    }
    let kms_key_id = meta(version, &format!("{PREFIX}s3-kms-key-id"))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .ok_or_else(|| SseError::Unsupported("SSE-S3 without a KMS key (MinIO before its KMS)".into()))?;
    let kms_sealed_key =
        b64(version, "s3-kms-sealed-key")?.ok_or(SseError::Malformed("no KMS-sealed key".into()))?;
    let iv =
        b64(version, "iv")?.filter(|iv| iv.len() == 32).ok_or(SseError::Malformed("no 32-byte IV".into()))?;
    let multipart =
        version.meta_sys.keys().any(|k| k.eq_ignore_ascii_case("x-minio-internal-encrypted-multipart"));
    Ok(Some(Sealed { kms_key_id, kms_sealed_key, iv, sealed_key, multipart, kms }))
}

/// Go's `path.Join(bucket, key)`: the path MinIO binds an object's keys to (`.` and empty
/// elements dropped, `..` taking the one before it away).
pub fn object_path(bucket: &str, key: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for element in bucket.split('/').chain(key.split('/')) {
        match element {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            e => parts.push(e),
        }
    }
    parts.join("/")
}

/// The object key of `sealed` (the version of `key` in `bucket`), with MinIO's KMS key.
pub fn object_key(
    master: Option<&MasterKey>,
    bucket: &str,
    key: &str,
    sealed: &Sealed,
) -> Result<[u8; 32], SseError> {
    let master = master.ok_or_else(|| SseError::NeedKey(sealed.kms_key_id.clone()))?;
    let path = object_path(bucket, key);
    // SSE-KMS binds the data key to the client's context as well, with the object's entry
    // under the bucket's name added when the client gave none.
    let mut pairs: Vec<(&str, &str)> =
        (sealed.kms.iter().flatten()).map(|(k, v)| (k.as_str(), v.as_str())).collect();
    if !pairs.iter().any(|(k, _)| *k == bucket) {
        pairs.push((bucket, &path));
    }
    let context = kms::context(&pairs);
    let kek = kms::unseal(master, &sealed.kms_key_id, &sealed.kms_sealed_key, &context)?;
    let mut message = sealed.iv.clone();
    message.extend_from_slice(if sealed.kms.is_some() { b"SSE-KMS" } else { b"SSE-S3" });
    message.extend_from_slice(SEAL_ALGORITHM.as_bytes());
    message.extend_from_slice(path.as_bytes());
    let sealing = strata_sign::hmac_sha256(&kek, &message);
    let key = open_all(&sealing, &sealed.sealed_key)?;
    key.try_into().map_err(|_| SseError::Malformed("the object key is not 32 bytes".into()))
}

/// The key of part `number` of a multipart object.
pub fn part_key(object_key: &[u8; 32], number: u32) -> [u8; 32] {
    strata_sign::hmac_sha256(object_key, &number.to_le_bytes())
}

/// The version's ETag as the client saw it: MinIO seals an SSE-S3 object's (an MD5); a
/// multipart ETag, or a plain 32-digit one, is kept as it is.
pub fn etag(object_key: &[u8; 32], stored: &str) -> Result<String, SseError> {
    if stored.len() <= 32 || stored.contains('-') {
        return Ok(stored.to_owned());
    }
    let sealed =
        hex::decode(stored).map_err(|_| SseError::Malformed("a sealed ETag that is not hex".into()))?;
    Ok(hex::encode(open_all(&strata_sign::hmac_sha256(object_key, b"SSE-etag"), &sealed)?))
}

/// The checksum blob MinIO sealed (`x-minio-internal-crc`), opened.
pub fn checksum_blob(object_key: &[u8; 32], sealed: &[u8]) -> Result<Vec<u8>, SseError> {
    open_all(&strata_sign::hmac_sha256(object_key, b"object-checksum"), sealed)
}

/// An encrypted version opened for its import: what to keep of it, and its plaintext.
pub struct Opened {
    pub metadata: Metadata,
    /// The ETag the client saw (MinIO sealed it).
    pub etag: String,
    /// The S3 checksums the client sent (MinIO sealed them too).
    pub checksums: BTreeMap<String, String>,
    /// Bytes of the plaintext.
    pub size: u64,
    /// Bytes of the plaintext of each part, in order (a single PUT: one).
    pub part_sizes: Vec<u64>,
    /// SSE-KMS: MinIO's KMS key and the client's encryption context (`None`: SSE-S3).
    pub kms: Option<(String, Vec<(String, String)>)>,
    pub body: PlainBody,
}

impl Opened {
    /// SSE-KMS: the client's encryption context as the S3 header carries it (base64 of a JSON
    /// object); `None` for SSE-S3 or no context.
    pub fn kms_context_header(&self) -> Option<String> {
        let (_, context) = self.kms.as_ref()?;
        if context.is_empty() {
            return None;
        }
        let json: serde_json::Map<String, serde_json::Value> =
            context.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        Some(base64::engine::general_purpose::STANDARD.encode(serde_json::Value::Object(json).to_string()))
    }
}

/// Opens the version `v` of MinIO's drives `paths` (in set order) with MinIO's KMS key: its
/// plaintext is read, decrypted and checked as [`PlainBody`] is read (on a blocking thread,
/// in blocks, never whole in memory). Must run on a Tokio runtime.
pub fn open_version(
    paths: &[PathBuf],
    master: Option<&MasterKey>,
    v: &EncryptedVersion,
) -> Result<Opened, SseError> {
    let copies = ObjectCopies::read(paths, &v.bucket, &v.key);
    let found = copies.agreed_versions().into_iter().find_map(|a| match a.version {
        XlVersion::Object(o) if o.version_id == v.version_id && o.mod_time == v.mod_time => Some(o),
        _ => None,
    });
    let version = *found
        .ok_or_else(|| SseError::Malformed("the version is no longer on a read quorum of drives".into()))?;
    let sealed = sealed(&version)?.ok_or_else(|| SseError::Malformed("not encrypted".into()))?;
    let key = object_key(master, &v.bucket, &v.key, &sealed)?;
    let stored_etag =
        version.meta_user.iter().find(|(k, _)| k.eq_ignore_ascii_case("etag")).map(|(_, e)| e.as_str());
    let stored_etag = stored_etag.unwrap_or_default();
    let etag = match &sealed.kms {
        // MinIO shows an SSE-KMS object's sealed ETag by its last 32 digits (opaque, as AWS's
        // SSE-KMS ETags are), and a multipart one as it is.
        Some(_) if stored_etag.len() >= 32 && !stored_etag.contains('-') => {
            let last = stored_etag.get(stored_etag.len() - 32..);
            last.ok_or_else(|| SseError::Malformed("an ETag that is not hex".into()))?.to_owned()
        }
        Some(_) => stored_etag.to_owned(),
        None => etag(&key, stored_etag)?,
    };
    let mut opened_meta = version.clone();
    if let Some((name, blob)) =
        version.meta_sys.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-minio-internal-crc"))
    {
        opened_meta.meta_sys.insert(name.clone(), checksum_blob(&key, blob)?);
    }
    let checksums = opened_meta.checksums();
    let part_sizes: Vec<u64> =
        version.parts.iter().map(|p| u64::try_from(p.actual_size).unwrap_or(0)).collect();
    let size = part_sizes.iter().sum();
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let meta = metadata(&version);
    let kms = sealed.kms.clone().map(|context| (sealed.kms_key_id.clone(), context));
    tokio::task::spawn_blocking(move || {
        let mut stream = PartStreams::new(&key, &version, sealed.multipart);
        let failed = tx.clone();
        let read = copies.read_version(&version, |block| {
            let mut plain = Vec::with_capacity(block.len());
            stream.push(&block, &mut plain).map_err(|e| super::MinioError::Unsupported(e.to_string()))?;
            tx.blocking_send(Ok(Bytes::from(plain)))
                .map_err(|_| super::MinioError::Unsupported("the reader went away".into()))
        });
        let ended = read.map_err(|e| e.to_string()).and_then(|_| stream.finish().map_err(|e| e.to_string()));
        if let Err(e) = ended {
            let _ = failed.blocking_send(Err(e));
        }
    });
    Ok(Opened {
        metadata: meta,
        etag,
        checksums,
        size,
        part_sizes,
        kms,
        body: PlainBody { rx, checksums: opened_meta.checksums() },
    })
}

/// The stored bytes of an encrypted version, decrypted as they come: a single PUT is one DARE
/// stream under the object key, each part of a multipart object its own stream under its part
/// key, the parts' stored sizes saying where each ends.
struct PartStreams {
    /// Each part's key and stored bytes, in order.
    parts: Vec<([u8; 32], u64)>,
    at: usize,
    left: u64,
    stream: DareStream,
}

impl PartStreams {
    fn new(object_key: &[u8; 32], version: &ObjectVersion, multipart: bool) -> Self {
        let parts: Vec<([u8; 32], u64)> = if multipart {
            version.parts.iter().map(|p| (part_key(object_key, p.number), p.size)).collect()
        } else {
            vec![(*object_key, version.size)]
        };
        Self::of(parts)
    }

    /// Streams over `parts` (each part's key and stored bytes, in order).
    fn of(parts: Vec<([u8; 32], u64)>) -> Self {
        let (key, left) = parts.first().copied().unwrap_or(([0; 32], 0));
        Self { parts, at: 0, left, stream: DareStream::new(&key) }
    }

    fn push(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) -> Result<(), SseError> {
        while !bytes.is_empty() {
            self.next_part_if_done()?;
            if self.at >= self.parts.len() {
                // More bytes than the parts hold.
                return Err(SseError::NotAuthentic);
            }
            let take = usize::try_from(self.left).unwrap_or(usize::MAX).min(bytes.len());
            self.stream.push(&bytes[..take], out)?;
            self.left -= take as u64;
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// Ends the current part's stream once all its bytes came, and starts the next.
    fn next_part_if_done(&mut self) -> Result<(), SseError> {
        while self.left == 0 && self.at < self.parts.len() {
            self.at += 1;
            let (key, left) = self.parts.get(self.at).copied().unwrap_or(([0; 32], 0));
            std::mem::replace(&mut self.stream, DareStream::new(&key)).finish()?;
            self.left = left;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), SseError> {
        self.next_part_if_done()?;
        if self.at < self.parts.len() {
            return Err(SseError::NotAuthentic);
        }
        Ok(())
    }
}

/// The plaintext of an encrypted (or compressed) version as it is opened, as a body to store.
pub struct PlainBody {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
    checksums: BTreeMap<String, String>,
}

impl PlainBody {
    /// The body of what a reading thread sends (an `Err` ends it failed) with MinIO's record of
    /// the checksums the client sent.
    pub(crate) fn new(
        rx: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
        checksums: BTreeMap<String, String>,
    ) -> Self {
        Self { rx, checksums }
    }
}

#[async_trait::async_trait]
impl BodyReader for PlainBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match self.rx.recv().await {
            Some(Ok(chunk)) => Ok(Some(chunk)),
            Some(Err(e)) => Err(BodyError::Malformed(e)),
            None => Ok(None),
        }
    }

    /// The checksums MinIO kept (sealed, so they are its own record, not a client's claim).
    fn checksums(&self) -> BTreeMap<String, String> {
        self.checksums.clone()
    }
}

/// Decrypts a whole DARE stream held in memory.
pub fn open_all(key: &[u8; 32], sealed: &[u8]) -> Result<Vec<u8>, SseError> {
    let mut stream = DareStream::new(key);
    let mut out = Vec::with_capacity(sealed.len());
    stream.push(sealed, &mut out)?;
    stream.finish()?;
    Ok(out)
}

/// A DARE 2.0 stream decrypted as its bytes arrive, in pieces of any size.
pub struct DareStream {
    key: [u8; 32],
    /// Bytes of a package not yet whole.
    pending: Vec<u8>,
    sequence: u32,
    /// The first package's nonce field (final bit cleared) and cipher: the rest must match.
    stream: Option<([u8; 12], u8)>,
    ended: bool,
}

impl DareStream {
    pub fn new(key: &[u8; 32]) -> Self {
        Self { key: *key, pending: Vec::new(), sequence: 0, stream: None, ended: false }
    }

    /// Decrypts what `bytes` completes, appending the plaintext to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) -> Result<(), SseError> {
        while !bytes.is_empty() {
            if self.ended {
                return Err(SseError::NotAuthentic);
            }
            // The header says how long the package is.
            let need = if self.pending.len() < HEADER_LEN {
                HEADER_LEN
            } else {
                HEADER_LEN + usize::from(u16::from_le_bytes([self.pending[2], self.pending[3]])) + 1 + TAG_LEN
            };
            let take = (need - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == need && need > HEADER_LEN {
                self.open_package(out)?;
                self.pending.clear();
            }
        }
        Ok(())
    }

    fn open_package(&mut self, out: &mut Vec<u8>) -> Result<(), SseError> {
        let p = &self.pending;
        let (header, body) = p.split_at(HEADER_LEN);
        if header[0] != DARE_VERSION {
            return Err(SseError::Unsupported(format!("DARE version {:#x}", header[0])));
        }
        let cipher = header[1];
        let mut field = [0u8; 12];
        field.copy_from_slice(&header[4..16]);
        let last = field[0] & FINAL_FLAG != 0;
        let mut plain_field = field;
        plain_field[0] &= !FINAL_FLAG;
        match self.stream {
            None => self.stream = Some((plain_field, cipher)),
            Some(s) if s == (plain_field, cipher) => {}
            Some(_) => return Err(SseError::NotAuthentic),
        }
        let payload = body.len() - TAG_LEN;
        if !last && payload != PACKAGE_PAYLOAD {
            return Err(SseError::NotAuthentic);
        }
        let aead = match cipher {
            0 => &AES_256_GCM,
            1 => &CHACHA20_POLY1305,
            other => return Err(SseError::Unsupported(format!("DARE cipher {other}"))),
        };
        let mut nonce = field;
        let seq = u32::from_le_bytes([nonce[8], nonce[9], nonce[10], nonce[11]]) ^ self.sequence;
        nonce[8..].copy_from_slice(&seq.to_le_bytes());
        let key = LessSafeKey::new(UnboundKey::new(aead, &self.key).map_err(|_| SseError::NotAuthentic)?);
        let mut buf = body.to_vec();
        let plain = key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(&header[..4]), &mut buf)
            .map_err(|_| SseError::NotAuthentic)?;
        out.extend_from_slice(plain);
        self.sequence = self.sequence.checked_add(1).ok_or(SseError::NotAuthentic)?;
        self.ended = last;
        Ok(())
    }

    /// Checks the stream ended with its last package (an empty stream has none).
    pub fn finish(self) -> Result<(), SseError> {
        let empty = self.stream.is_none() && self.pending.is_empty();
        if (self.ended && self.pending.is_empty()) || empty {
            Ok(())
        } else {
            Err(SseError::NotAuthentic)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seals `plain` as MinIO's DARE 2.0 writer does (AES-256-GCM), for the tests.
    fn seal(key: &[u8; 32], field: [u8; 12], plain: &[u8]) -> Vec<u8> {
        let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("key"));
        let mut out = Vec::new();
        let chunks: Vec<&[u8]> = plain.chunks(PACKAGE_PAYLOAD).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let mut header = [0u8; HEADER_LEN];
            header[0] = DARE_VERSION;
            header[2..4].copy_from_slice(&((chunk.len() - 1) as u16).to_le_bytes());
            header[4..].copy_from_slice(&field);
            if last {
                header[4] |= FINAL_FLAG;
            }
            let mut nonce = [0u8; 12];
            nonce.copy_from_slice(&header[4..]);
            let seq = u32::from_le_bytes([nonce[8], nonce[9], nonce[10], nonce[11]]) ^ i as u32;
            nonce[8..].copy_from_slice(&seq.to_le_bytes());
            let mut buf = chunk.to_vec();
            k.seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&header[..4]),
                &mut buf,
            )
            .expect("seals");
            out.extend_from_slice(&header);
            out.extend_from_slice(&buf);
        }
        out
    }

    #[test]
    fn streams_open_in_pieces_of_any_size_and_refuse_changes() {
        let key = [7u8; 32];
        let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = seal(&key, [3u8; 12], &plain);
        assert_eq!(open_all(&key, &sealed).expect("opens"), plain);
        for piece in [1, 15, 16, 17, 65_568, 100_000] {
            let mut s = DareStream::new(&key);
            let mut out = Vec::new();
            for chunk in sealed.chunks(piece) {
                s.push(chunk, &mut out).expect("opens");
            }
            s.finish().expect("ended");
            assert_eq!(out, plain, "pieces of {piece}");
        }
        // Truncated at a package boundary (no last package), cut inside one, a byte flipped,
        // packages swapped, another key: all refused.
        assert!(open_all(&key, &sealed[..65_568]).is_err());
        assert!(open_all(&key, &sealed[..sealed.len() - 1]).is_err());
        let mut flipped = sealed.clone();
        flipped[70_000] ^= 1;
        assert!(open_all(&key, &flipped).is_err());
        let mut swapped = sealed[65_568..131_136].to_vec();
        swapped.extend_from_slice(&sealed[..65_568]);
        swapped.extend_from_slice(&sealed[131_136..]);
        assert!(open_all(&key, &swapped).is_err());
        assert!(open_all(&[8u8; 32], &sealed).is_err());
        // Bytes after the last package.
        let mut longer = sealed.clone();
        longer.extend_from_slice(&sealed[..20]);
        assert!(open_all(&key, &longer).is_err());
        assert_eq!(open_all(&key, &[]).expect("empty"), Vec::<u8>::new());
    }

    #[test]
    fn object_paths_are_gos_path_join() {
        assert_eq!(object_path("plain", "encrypted/sse-s3"), "plain/encrypted/sse-s3");
        assert_eq!(object_path("b", "a//c/./d/"), "b/a/c/d");
        assert_eq!(object_path("b", "x/../y"), "b/y");
    }

    #[test]
    fn multipart_streams_open_part_by_part_with_their_keys() {
        let object_key = [7u8; 32];
        let plain: Vec<Vec<u8>> = vec![vec![1; 70_000], vec![2; 10], Vec::new(), vec![3; 5]];
        let sealed: Vec<Vec<u8>> = (plain.iter().enumerate())
            .map(|(i, p)| seal(&part_key(&object_key, i as u32 + 1), [i as u8; 12], p))
            .collect();
        let parts = || {
            let sizes = sealed.iter().map(|s| s.len() as u64);
            (1..).zip(sizes).map(|(n, size)| (part_key(&object_key, n), size)).collect::<Vec<_>>()
        };
        let all = sealed.concat();
        // In pieces that straddle the parts' ends.
        let mut streams = PartStreams::of(parts());
        let mut out = Vec::new();
        for piece in all.chunks(999) {
            streams.push(piece, &mut out).expect("opens");
        }
        streams.finish().expect("every part whole");
        assert_eq!(out, plain.concat());

        // A part cut short, bytes beyond the last part, and a part under another's key fail.
        let mut short = PartStreams::of(parts());
        assert!(short.push(&all[..all.len() - 1], &mut Vec::new()).is_ok());
        assert!(short.finish().is_err());
        let mut long = PartStreams::of(parts());
        assert!(long.push(&[all.clone(), vec![0]].concat(), &mut Vec::new()).is_err());
        let mut swapped = parts();
        swapped.swap(0, 1);
        let mut wrong = PartStreams::of(swapped);
        assert!(wrong.push(&all, &mut Vec::new()).is_err());
    }
}
