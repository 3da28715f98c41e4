//! The sealed package format of object data.
//!
//! A segment (a whole object, or one part of a multipart object) of `n` plaintext bytes is cut
//! into packages of [`PACKAGE_SIZE`] bytes (the last one shorter, possibly empty: an empty
//! segment is one empty package), and each package is stored as its AES-256-GCM ciphertext
//! followed by its 16-byte tag. Package `i` of segment `s` of the object with id `o`:
//!
//! ```text
//! nonce (12 bytes) = s as u32 LE || i as u64 LE
//! aad   (30 bytes) = FORMAT (0x01) || o (16 bytes) || s as u32 LE || i as u64 LE || last (0 or 1)
//! ```
//!
//! A data key belongs to one object (or one upload) only, so (segment, package) never repeats a
//! nonce under a key. Opening checks all of it: a package moved elsewhere in the segment, to
//! another segment or another object, a segment cut after any package (the new last package was
//! sealed as not last), or one grown past its last, each fails as [`CryptoError`].
//!
//! Dual-layer encryption (DSSE-KMS) adds a second, independent layer: with a second data key,
//! each package's GCM ciphertext (not its tag) is encrypted again with AES-256-CTR, counter block
//! `nonce || 0u32` (big-endian counter), before it is stored; opening removes it first. Sizes and
//! offsets are those of one layer, and the GCM tag still authenticates every stored byte (a
//! changed byte of the outer layer changes the inner ciphertext).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use aws_lc_rs::cipher::{EncryptingKey, EncryptionContext, UnboundCipherKey, AES_256};
use aws_lc_rs::iv::FixedLength;
use bytes::Bytes;

use crate::{CryptoError, DataKey};

/// Plaintext bytes per package. 64 KiB keeps the tag overhead at 0.02 % and a small range read
/// decrypts at most two packages it does not return.
pub const PACKAGE_SIZE: usize = 64 * 1024;
/// The AES-GCM tag after each package's ciphertext.
pub const TAG_SIZE: usize = 16;
/// A full package as stored.
pub const SEALED_PACKAGE_SIZE: usize = PACKAGE_SIZE + TAG_SIZE;
/// The format byte that opens every package's associated data.
const FORMAT: u8 = 1;
/// The format byte that opens the associated data of metadata sealed under an object's key.
const METADATA_FORMAT: u8 = 2;
/// The first four bytes of a metadata nonce: a segment number no package has (segments are 0
/// and part numbers up to 10,000), so metadata never shares a nonce with a package.
const METADATA_SEGMENT: [u8; 4] = [0xff; 4];

/// The number of packages a segment of `plain_size` bytes is sealed in (at least one).
pub fn package_count(plain_size: u64) -> u64 {
    plain_size.div_ceil(PACKAGE_SIZE as u64).max(1)
}

/// The stored size of a segment of `plain_size` bytes.
pub fn sealed_size(plain_size: u64) -> u64 {
    plain_size + TAG_SIZE as u64 * package_count(plain_size)
}

/// The plaintext size of a stored segment of `sealed_size` bytes, or `None` when no plaintext
/// seals to exactly that size (a damaged record).
pub fn plain_size(sealed_size: u64) -> Option<u64> {
    let packages = sealed_size.div_ceil(SEALED_PACKAGE_SIZE as u64).max(1);
    let plain = sealed_size.checked_sub(TAG_SIZE as u64 * packages)?;
    (self::sealed_size(plain) == sealed_size).then_some(plain)
}

/// What to read of a stored segment to return plaintext bytes `[offset, offset + len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedRange {
    /// The first package to open.
    pub first_package: u64,
    /// Stored bytes to read: from `sealed_offset`, `sealed_len` bytes (whole packages).
    pub sealed_offset: u64,
    pub sealed_len: u64,
    /// Plaintext bytes of the first package before `offset` (to drop).
    pub skip: u64,
}

/// The packages a plaintext range of a segment of `plain_size` bytes needs. The range must lie
/// within the segment (`offset + len <= plain_size`); an empty range reads nothing.
pub fn sealed_range(plain_size: u64, offset: u64, len: u64) -> SealedRange {
    let p = PACKAGE_SIZE as u64;
    assert!(offset.saturating_add(len) <= plain_size, "range within the segment");
    if len == 0 {
        return SealedRange { first_package: offset / p, sealed_offset: 0, sealed_len: 0, skip: 0 };
    }
    let first = offset / p;
    let last = (offset + len - 1) / p;
    let sealed_offset = first * SEALED_PACKAGE_SIZE as u64;
    let sealed_end = ((last + 1) * SEALED_PACKAGE_SIZE as u64).min(sealed_size(plain_size));
    SealedRange {
        first_package: first,
        sealed_offset,
        sealed_len: sealed_end - sealed_offset,
        skip: offset - first * p,
    }
}

/// The AES-256-GCM key of one object's packages, with the object's id. Cheap to clone (the key
/// schedule is shared).
#[derive(Clone)]
pub struct ObjectCipher {
    key: std::sync::Arc<LessSafeKey>,
    /// DSSE's second layer (AES-256-CTR under its own key), if any.
    outer: Option<std::sync::Arc<EncryptingKey>>,
    object_id: [u8; 16],
}

impl std::fmt::Debug for ObjectCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectCipher(..)")
    }
}

impl ObjectCipher {
    pub fn new(key: &DataKey, object_id: [u8; 16]) -> Self {
        // A 32-byte key is always a valid AES-256 key.
        let unbound = UnboundKey::new(&AES_256_GCM, key.as_bytes()).expect("AES-256 takes 32-byte keys");
        Self { key: std::sync::Arc::new(LessSafeKey::new(unbound)), outer: None, object_id }
    }

    /// This cipher with a second layer under `key` (DSSE-KMS; see the module documentation).
    pub fn with_second_layer(mut self, key: &DataKey) -> Self {
        // A 32-byte key is always a valid AES-256 key, and CTR takes it.
        let unbound = UnboundCipherKey::new(&AES_256, key.as_bytes()).expect("AES-256 takes 32-byte keys");
        self.outer = Some(std::sync::Arc::new(EncryptingKey::ctr(unbound).expect("AES-256-CTR")));
        self
    }

    /// Whether packages carry the second layer.
    pub fn is_dual_layer(&self) -> bool {
        self.outer.is_some()
    }

    /// Applies (or removes: CTR is its own inverse) the second layer to package `index` of
    /// `segment`'s ciphertext; nothing without one.
    fn outer_layer(&self, segment: u32, index: u64, ciphertext: &mut [u8]) {
        let Some(outer) = &self.outer else { return };
        let mut block = [0u8; 16];
        block[..4].copy_from_slice(&segment.to_le_bytes());
        block[4..12].copy_from_slice(&index.to_le_bytes());
        // A package is 4,096 counter blocks at most: the counter never wraps into the nonce.
        outer
            .less_safe_encrypt(ciphertext, EncryptionContext::Iv128(FixedLength::from(block)))
            .expect("CTR takes any length");
    }

    fn nonce_aad(&self, segment: u32, index: u64, last: bool) -> (Nonce, [u8; 30]) {
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&segment.to_le_bytes());
        nonce[4..].copy_from_slice(&index.to_le_bytes());
        let mut aad = [0u8; 30];
        aad[0] = FORMAT;
        aad[1..17].copy_from_slice(&self.object_id);
        aad[17..29].copy_from_slice(&nonce);
        aad[29] = u8::from(last);
        (Nonce::assume_unique_for_key(nonce), aad)
    }

    /// Seals a few bytes of the object's metadata (SSE-C checksums) under its data key:
    /// `nonce (12) || ciphertext || tag (16)`, the nonce `ff ff ff ff || 8 random bytes`, the
    /// associated data `METADATA_FORMAT (0x02) || object id || label`. The label says what the
    /// bytes are, so sealed metadata cannot stand in for other metadata of the object.
    pub fn seal_metadata(&self, label: &[u8], plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&METADATA_SEGMENT);
        crate::random_fill(&mut nonce[4..])?;
        crate::key::seal_with_nonce(&self.key, nonce, plain, &self.metadata_aad(label))
    }

    /// Opens metadata sealed by [`ObjectCipher::seal_metadata`] with the same label.
    pub fn open_metadata(&self, label: &[u8], sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if !sealed.starts_with(&METADATA_SEGMENT) {
            return Err(CryptoError::Malformed("sealed metadata"));
        }
        crate::key::open_with_nonce(&self.key, sealed, &self.metadata_aad(label))
    }

    fn metadata_aad(&self, label: &[u8]) -> Vec<u8> {
        [&[METADATA_FORMAT][..], &self.object_id, label].concat()
    }

    /// Appends package `index` of `segment` (plaintext `plain`, at most a package) to `out`:
    /// the plaintext is copied there once and sealed where it lies.
    pub fn seal_package(&self, segment: u32, index: u64, last: bool, plain: &[u8], out: &mut impl SealedOut) {
        assert!(plain.len() <= PACKAGE_SIZE, "a package holds at most PACKAGE_SIZE bytes");
        let (nonce, aad) = self.nonce_aad(segment, index, last);
        let start = out.len();
        out.extend_from_slice(plain);
        // Sealing fails only for inputs past GCM's size limit, far above a package.
        let tag = self
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(aad), &mut out[start..])
            .expect("a package is within AES-GCM's limits");
        self.outer_layer(segment, index, &mut out[start..]);
        out.extend_from_slice(tag.as_ref());
    }

    /// Opens package `index` of `segment` in place; returns its plaintext (`sealed` minus its
    /// tag).
    pub fn open_package<'a>(
        &self,
        segment: u32,
        index: u64,
        last: bool,
        sealed: &'a mut [u8],
    ) -> Result<&'a mut [u8], CryptoError> {
        if sealed.len() < TAG_SIZE || sealed.len() > SEALED_PACKAGE_SIZE {
            return Err(CryptoError::Malformed("package length"));
        }
        let (nonce, aad) = self.nonce_aad(segment, index, last);
        let ciphertext_len = sealed.len() - TAG_SIZE;
        self.outer_layer(segment, index, &mut sealed[..ciphertext_len]);
        self.key.open_in_place(nonce, Aad::from(aad), sealed).map_err(|_| CryptoError::Authentication)
    }

    /// Opens package `index` of `segment` from `sealed` into `plain` (its length minus the tag,
    /// written whole): decrypting is the only pass over the bytes.
    pub fn open_package_into(
        &self,
        segment: u32,
        index: u64,
        last: bool,
        sealed: &[u8],
        plain: &mut [u8],
    ) -> Result<(), CryptoError> {
        if sealed.len() < TAG_SIZE
            || sealed.len() > SEALED_PACKAGE_SIZE
            || plain.len() + TAG_SIZE != sealed.len()
        {
            return Err(CryptoError::Malformed("package length"));
        }
        let (nonce, aad) = self.nonce_aad(segment, index, last);
        let (ciphertext, tag) = sealed.split_at(sealed.len() - TAG_SIZE);
        if self.outer.is_some() {
            plain.copy_from_slice(ciphertext);
            self.outer_layer(segment, index, plain);
            return self
                .key
                .open_in_place_separate_tag(nonce, Aad::from(aad), tag, plain)
                .map(drop)
                .map_err(|_| CryptoError::Authentication);
        }
        self.key
            .open_separate_gather(nonce, Aad::from(aad), ciphertext, tag, plain)
            .map_err(|_| CryptoError::Authentication)
    }

    /// A streaming sealer for `segment`.
    pub fn sealer(&self, segment: u32) -> Sealer {
        Sealer { cipher: self.clone(), segment, index: 0, pending: Vec::with_capacity(PACKAGE_SIZE) }
    }

    /// A streaming opener for packages `first_package..` of `segment`, which has
    /// `package_count` packages in all.
    pub fn opener(&self, segment: u32, first_package: u64, package_count: u64) -> Opener {
        Opener {
            cipher: self.clone(),
            segment,
            index: first_package,
            package_count,
            buf: Vec::with_capacity(SEALED_PACKAGE_SIZE),
        }
    }
}

/// Seals a plaintext stream into packages. A full package is sealed only once more bytes follow
/// it, so [`Sealer::finish`] can mark the true last one.
pub struct Sealer {
    cipher: ObjectCipher,
    segment: u32,
    index: u64,
    /// Plaintext of the package being filled (at most a package).
    pending: Vec<u8>,
}

impl Sealer {
    /// Takes more plaintext; appends the packages now known not to be the last to `out`.
    pub fn update(&mut self, mut plain: &[u8], out: &mut impl SealedOut) {
        while !plain.is_empty() {
            if self.pending.len() == PACKAGE_SIZE {
                self.cipher.seal_package(self.segment, self.index, false, &self.pending, out);
                self.index += 1;
                self.pending.clear();
            }
            if self.pending.is_empty() && plain.len() > PACKAGE_SIZE {
                // Whole packages straight from the input, without going through `pending`.
                self.cipher.seal_package(self.segment, self.index, false, &plain[..PACKAGE_SIZE], out);
                self.index += 1;
                plain = &plain[PACKAGE_SIZE..];
                continue;
            }
            let take = (PACKAGE_SIZE - self.pending.len()).min(plain.len());
            self.pending.extend_from_slice(&plain[..take]);
            plain = &plain[take..];
        }
    }

    /// Seals the last package (possibly empty) into `out`.
    pub fn finish(self, out: &mut impl SealedOut) {
        self.cipher.seal_package(self.segment, self.index, true, &self.pending, out);
    }

    /// Plaintext bytes taken but not sealed yet (at most a package). Feeding `n` more seals
    /// `(pending + n - 1) / PACKAGE_SIZE` packages: a full one only once a byte follows it.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// A buffer sealed packages are appended to: a `Vec<u8>`, or the `BytesMut` of an erasure block
/// being filled (so a PUT seals its data where it will be encoded from).
pub trait SealedOut: std::ops::DerefMut<Target = [u8]> {
    fn extend_from_slice(&mut self, bytes: &[u8]);
}

impl SealedOut for Vec<u8> {
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
}

impl SealedOut for bytes::BytesMut {
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        bytes::BytesMut::extend_from_slice(self, bytes);
    }
}

/// Opens a stream of sealed packages, in order from a given package to the segment's end or to
/// wherever the caller stops.
pub struct Opener {
    cipher: ObjectCipher,
    segment: u32,
    /// The next package to open.
    index: u64,
    package_count: u64,
    /// Sealed bytes of the package being gathered.
    buf: Vec<u8>,
}

impl Opener {
    /// Takes more sealed bytes; appends the plaintext of every package completed to `out`, as
    /// pieces of buffers opened in place: the sealed bytes are copied once, the plaintext never.
    /// When a package fails to open, `out` has the plaintext of every package before it and
    /// [`Opener::next_package`] is the one that failed, so a caller can read it again (from
    /// elsewhere) and go on from there.
    pub fn update(&mut self, mut sealed: &[u8], out: &mut Vec<Bytes>) -> Result<(), CryptoError> {
        if !self.buf.is_empty() {
            let take = (SEALED_PACKAGE_SIZE - self.buf.len()).min(sealed.len());
            self.buf.extend_from_slice(&sealed[..take]);
            sealed = &sealed[take..];
            if self.buf.len() < SEALED_PACKAGE_SIZE {
                return Ok(());
            }
            let package = std::mem::replace(&mut self.buf, Vec::with_capacity(SEALED_PACKAGE_SIZE));
            self.open_run(package, out)?;
        }
        let whole = sealed.len() / SEALED_PACKAGE_SIZE * SEALED_PACKAGE_SIZE;
        if whole > 0 {
            self.open_whole(&sealed[..whole], out)?;
        }
        self.buf.extend_from_slice(&sealed[whole..]);
        Ok(())
    }

    /// Opens whole packages straight from `sealed` into one plaintext buffer.
    fn open_whole(&mut self, sealed: &[u8], out: &mut Vec<Bytes>) -> Result<(), CryptoError> {
        let packages = sealed.len() / SEALED_PACKAGE_SIZE;
        // A reused buffer: decrypting writes all of it, so it need not be zeroed (nor faulted in).
        let mut plain = strata_types::buffers::take(packages * PACKAGE_SIZE);
        let first = self.index;
        let result = sealed.chunks(SEALED_PACKAGE_SIZE).zip(plain.chunks_mut(PACKAGE_SIZE)).try_for_each(
            |(package, into)| {
                let (index, last) = self.next()?;
                self.cipher.open_package_into(self.segment, index, last, package, into)?;
                self.index += 1;
                Ok(())
            },
        );
        // Only the packages before one that failed, none of them the last: each a full package.
        plain.truncate((self.index - first) as usize * PACKAGE_SIZE);
        if !plain.is_empty() {
            out.push(strata_types::buffers::into_bytes(plain));
        }
        result
    }

    /// The next package's index and whether it is the segment's last; past the last,
    /// [`CryptoError::Truncated`].
    fn next(&self) -> Result<(u64, bool), CryptoError> {
        if self.index >= self.package_count {
            return Err(CryptoError::Truncated);
        }
        Ok((self.index, self.index + 1 == self.package_count))
    }

    /// Opens `run` (whole packages; the segment's last may be short) package by package in
    /// place and appends each one's plaintext to `out`.
    fn open_run(&mut self, mut run: Vec<u8>, out: &mut Vec<Bytes>) -> Result<(), CryptoError> {
        let mut lens = Vec::with_capacity(run.len().div_ceil(SEALED_PACKAGE_SIZE));
        let result = run.chunks_mut(SEALED_PACKAGE_SIZE).try_for_each(|package| {
            let (index, last) = self.next()?;
            lens.push(self.cipher.open_package(self.segment, index, last, package)?.len());
            self.index += 1;
            Ok(())
        });
        let run = Bytes::from(run);
        let pieces = lens
            .into_iter()
            .enumerate()
            .map(|(i, len)| i * SEALED_PACKAGE_SIZE..i * SEALED_PACKAGE_SIZE + len);
        out.extend(pieces.filter(|r| !r.is_empty()).map(|r| run.slice(r)));
        result
    }

    /// Ends the stream: a partly gathered package must be the segment's last (a short final
    /// package); `end_package` is the package the stream was meant to stop before.
    pub fn finish(mut self, end_package: u64, out: &mut Vec<Bytes>) -> Result<(), CryptoError> {
        if !self.buf.is_empty() {
            if self.index + 1 != self.package_count {
                return Err(CryptoError::Truncated);
            }
            let package = std::mem::take(&mut self.buf);
            self.open_run(package, out)?;
        }
        if self.index != end_package {
            return Err(CryptoError::Truncated);
        }
        Ok(())
    }

    /// The next package this opener expects.
    pub fn next_package(&self) -> u64 {
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(seed: u8, id: u8) -> ObjectCipher {
        ObjectCipher::new(&DataKey::from_bytes([seed; 32]), [id; 16])
    }

    fn plaintext(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    /// Seals `plain` in chunks of `step` bytes.
    fn seal(c: &ObjectCipher, segment: u32, plain: &[u8], step: usize) -> Vec<u8> {
        let mut s = c.sealer(segment);
        let mut out = Vec::new();
        for chunk in plain.chunks(step.max(1)) {
            s.update(chunk, &mut out);
        }
        s.finish(&mut out);
        out
    }

    fn open_all(
        c: &ObjectCipher,
        segment: u32,
        sealed: &[u8],
        plain_size: u64,
    ) -> Result<Vec<u8>, CryptoError> {
        let count = package_count(plain_size);
        let mut o = c.opener(segment, 0, count);
        let mut out = Vec::new();
        for chunk in sealed.chunks(7919) {
            o.update(chunk, &mut out)?;
        }
        o.finish(count, &mut out)?;
        Ok(out.concat())
    }

    const P: usize = PACKAGE_SIZE;
    const SIZES: [usize; 10] = [0, 1, P - 1, P, P + 1, 2 * P - 1, 2 * P, 2 * P + 1, 3 * P, 5 * P + 17];

    #[test]
    fn every_package_boundary_round_trips() {
        let c = cipher(1, 2);
        for n in SIZES {
            let plain = plaintext(n);
            for step in [1usize, 1000, P - 1, P, P + 1, 3 * P, usize::MAX] {
                if step == 1 && n > 2 * P + 1 {
                    continue; // byte-by-byte over many packages proves nothing new and is slow
                }
                let sealed = seal(&c, 0, &plain, step.min(n.max(1)));
                assert_eq!(sealed.len() as u64, sealed_size(n as u64), "size {n} step {step}");
                assert_eq!(plain_size(sealed.len() as u64), Some(n as u64));
                assert_eq!(open_all(&c, 0, &sealed, n as u64).expect("opens"), plain, "size {n}");
            }
        }
    }

    #[test]
    fn metadata_opens_only_under_its_key_object_and_label() {
        let c = cipher(1, 2);
        let sealed = c.seal_metadata(b"checksums\0", b"CRC32=abc").expect("seal");
        assert_eq!(c.open_metadata(b"checksums\0", &sealed).expect("opens"), b"CRC32=abc");
        assert!(!sealed.windows(3).any(|w| w == b"abc"), "sealed in clear");
        // Two seals of the same bytes differ (random nonces), and both open.
        let again = c.seal_metadata(b"checksums\0", b"CRC32=abc").expect("seal");
        assert_ne!(sealed, again);
        assert!(c.open_metadata(b"checksums\0", &again).is_ok());
        // Another label, object or key, a flipped bit, a cut: all refused.
        assert!(c.open_metadata(b"checksums\x01", &sealed).is_err());
        assert!(cipher(1, 3).open_metadata(b"checksums\0", &sealed).is_err());
        assert!(cipher(9, 2).open_metadata(b"checksums\0", &sealed).is_err());
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(c.open_metadata(b"checksums\0", &bad).is_err(), "bit flipped in byte {i}");
        }
        assert!(c.open_metadata(b"checksums\0", &sealed[..sealed.len() - 1]).is_err());
        // Its nonce is never a package's: packages' segments are below 0xffffffff.
        assert_eq!(sealed[..4], [0xff; 4]);
    }

    #[test]
    fn size_math() {
        assert_eq!(sealed_size(0), 16);
        assert_eq!(sealed_size(P as u64), (P + 16) as u64);
        assert_eq!(sealed_size(P as u64 + 1), (P + 1 + 32) as u64);
        for bad in [0, 15, SEALED_PACKAGE_SIZE as u64 + 1, SEALED_PACKAGE_SIZE as u64 + 16] {
            assert_eq!(plain_size(bad), None, "{bad}");
        }
        for n in 0..(3 * P as u64 + 40) {
            if n % 997 == 0 || (n % P as u64) < 3 || (n % P as u64) > P as u64 - 3 {
                assert_eq!(plain_size(sealed_size(n)), Some(n));
            }
        }
    }

    /// Every range over several sizes decrypts exactly its bytes from only its packages.
    #[test]
    fn ranges_open_only_their_packages() {
        let c = cipher(3, 4);
        for n in SIZES {
            let plain = plaintext(n);
            let sealed = seal(&c, 9, &plain, usize::MAX);
            let points = [0, 1, P - 1, P, P + 1, 2 * P, n.saturating_sub(1), n];
            for &from in &points {
                for &to in &points {
                    if from >= to || to > n {
                        continue;
                    }
                    let r = sealed_range(n as u64, from as u64, (to - from) as u64);
                    assert_eq!(r.sealed_offset % SEALED_PACKAGE_SIZE as u64, 0);
                    let bytes = &sealed[r.sealed_offset as usize..(r.sealed_offset + r.sealed_len) as usize];
                    let end_package = r.first_package + r.sealed_len.div_ceil(SEALED_PACKAGE_SIZE as u64);
                    assert_eq!(end_package - r.first_package, ((to - 1) / P - from / P + 1) as u64);
                    let mut o = c.opener(9, r.first_package, package_count(n as u64));
                    let mut out = Vec::new();
                    o.update(bytes, &mut out).expect("opens");
                    o.finish(end_package, &mut out).expect("ends");
                    let out = out.concat();
                    let got = &out[r.skip as usize..r.skip as usize + (to - from)];
                    assert_eq!(got, &plain[from..to], "size {n} range {from}..{to}");
                }
            }
        }
    }

    /// Sealed bytes in chunks of whole packages and not, held elsewhere too or not, open to the
    /// plaintext (whole packages in one chunk as one piece): every size, one and two layers; a
    /// flipped bit, a package moved or a foreign key fail.
    #[test]
    fn chunks_of_any_size_open_like_one_piece() {
        let single = cipher(1, 2);
        let dual = cipher(1, 2).with_second_layer(&DataKey::from_bytes([9; 32]));
        let open_owned = |c: &ObjectCipher, sealed: &[u8], n: usize, step: usize, share: bool| {
            let count = package_count(n as u64);
            let (mut o, mut out) = (c.opener(5, 0, count), Vec::new());
            let mut kept = Vec::new();
            for chunk in sealed.chunks(step) {
                let chunk = Bytes::copy_from_slice(chunk);
                if share {
                    kept.push(chunk.clone()); // another holder of the chunk
                }
                o.update(&chunk, &mut out)?;
            }
            o.finish(count, &mut out)?;
            Ok::<_, CryptoError>((out.concat(), out.len()))
        };
        for c in [&single, &dual] {
            for n in SIZES {
                let plain = plaintext(n);
                let sealed = seal(c, 5, &plain, usize::MAX);
                for step in [
                    SEALED_PACKAGE_SIZE,
                    3 * SEALED_PACKAGE_SIZE,
                    16 * SEALED_PACKAGE_SIZE,
                    1000,
                    P + 7,
                    usize::MAX,
                ] {
                    let step = step.min(sealed.len()).max(1);
                    for share in [false, true] {
                        let (got, pieces) = open_owned(c, &sealed, n, step, share).expect("opens");
                        assert_eq!(got, plain, "size {n} step {step} shared {share}");
                        if !share && step == sealed.len() && n % P == 0 && n > 0 {
                            assert_eq!(pieces, 1, "whole packages in one owned chunk: one piece");
                        }
                    }
                }
                if n > P {
                    for i in [0, 17, P + 16, sealed.len() - 1] {
                        let mut bad = sealed.clone();
                        bad[i] ^= 0x04;
                        assert!(open_owned(c, &bad, n, sealed.len(), false).is_err(), "size {n} bit {i}");
                    }
                    if sealed.len() >= 2 * SEALED_PACKAGE_SIZE {
                        let mut swapped = sealed.clone();
                        swapped.copy_within(0..SEALED_PACKAGE_SIZE, SEALED_PACKAGE_SIZE);
                        assert!(
                            open_owned(c, &swapped, n, sealed.len(), false).is_err(),
                            "size {n} reordered"
                        );
                    }
                    assert!(open_owned(&cipher(7, 2), &sealed, n, sealed.len(), false).is_err());
                }
            }
        }
    }

    /// A package that does not open leaves the plaintext of every package before it and names
    /// itself, whatever the chunks; an opener from it over good bytes finishes the stream.
    #[test]
    fn a_failed_package_keeps_those_before_it_and_the_stream_resumes_there() {
        let dual = cipher(1, 2).with_second_layer(&DataKey::from_bytes([9; 32]));
        for c in [&cipher(1, 2), &dual] {
            let n = 5 * P + 17;
            let plain = plaintext(n);
            let sealed = seal(c, 3, &plain, usize::MAX);
            let count = package_count(n as u64);
            for bad_package in [0usize, 2, 5] {
                let mut bad = sealed.clone();
                bad[bad_package * SEALED_PACKAGE_SIZE + 10] ^= 0x10;
                for step in [sealed.len(), 3 * SEALED_PACKAGE_SIZE, SEALED_PACKAGE_SIZE, 1000, P + 7] {
                    let (mut o, mut out) = (c.opener(3, 0, count), Vec::new());
                    let failed = bad.chunks(step).try_for_each(|chunk| o.update(chunk, &mut out));
                    // `finish` opens a last package still being gathered: the one it names.
                    let at = o.next_package();
                    let failed = failed
                        .map_err(|e| (e, at))
                        .and_then(|()| o.finish(count, &mut out).map_err(|e| (e, at)));
                    let what = format!("package {bad_package} step {step}");
                    assert_eq!(failed, Err((CryptoError::Authentication, bad_package as u64)), "{what}");
                    let before = out.concat();
                    assert_eq!(before, &plain[..bad_package * P], "{what}");
                    let (mut o, mut out) = (c.opener(3, bad_package as u64, count), Vec::new());
                    o.update(&sealed[bad_package * SEALED_PACKAGE_SIZE..], &mut out).expect("opens");
                    o.finish(count, &mut out).expect("ends");
                    assert_eq!([before, out.concat()].concat(), plain, "package {bad_package} step {step}");
                }
            }
        }
    }

    #[test]
    fn truncation_is_detected() {
        let c = cipher(5, 6);
        for n in [0, 1, P, P + 1, 2 * P, 3 * P + 5] {
            let sealed = seal(&c, 0, &plaintext(n), usize::MAX);
            // Cut at each package boundary and inside packages; each claimed size is what a
            // damaged record would say.
            let mut cuts: Vec<usize> = (0..=sealed.len()).step_by(SEALED_PACKAGE_SIZE).collect();
            cuts.extend([1, 15, 16, 17, sealed.len() - 1]);
            for cut in cuts {
                if cut >= sealed.len() {
                    continue;
                }
                let short = &sealed[..cut];
                let claimed = plain_size(cut as u64).unwrap_or(0);
                assert!(open_all(&c, 0, short, claimed).is_err(), "size {n} cut {cut}");
                assert!(open_all(&c, 0, short, n as u64).is_err(), "size {n} cut {cut} as whole");
            }
            let mut long = sealed.clone();
            long.extend_from_slice(&sealed[..16]);
            assert!(open_all(&c, 0, &long, n as u64).is_err(), "size {n} with trailing bytes");
        }
    }

    #[test]
    fn reordered_and_duplicated_packages_fail() {
        let c = cipher(7, 8);
        let n = 3 * P + 100;
        let sealed = seal(&c, 0, &plaintext(n), usize::MAX);
        let pk =
            |i: usize| &sealed[i * SEALED_PACKAGE_SIZE..((i + 1) * SEALED_PACKAGE_SIZE).min(sealed.len())];
        let swapped = [pk(1), pk(0), pk(2), pk(3)].concat();
        assert_eq!(open_all(&c, 0, &swapped, n as u64), Err(CryptoError::Authentication));
        let repeated = [pk(0), pk(0), pk(2), pk(3)].concat();
        assert_eq!(open_all(&c, 0, &repeated, n as u64), Err(CryptoError::Authentication));
        // The last full package dropped and the short last one moved up: fails on its number.
        let dropped = [pk(0), pk(1), pk(3)].concat();
        assert!(open_all(&c, 0, &dropped, plain_size(dropped.len() as u64).unwrap_or(0)).is_err());
    }

    #[test]
    fn packages_do_not_move_between_segments_or_objects() {
        let (a, b) = (cipher(9, 1), cipher(9, 2));
        let plain = plaintext(P + 10);
        let sealed = seal(&a, 1, &plain, usize::MAX);
        assert!(open_all(&a, 1, &sealed, plain.len() as u64).is_ok());
        assert_eq!(open_all(&a, 2, &sealed, plain.len() as u64), Err(CryptoError::Authentication));
        // Same key, another object id (as two parts of one upload would share a key).
        assert_eq!(open_all(&b, 1, &sealed, plain.len() as u64), Err(CryptoError::Authentication));
        // A package from another object at the same place.
        let other = seal(&b, 1, &plain, usize::MAX);
        let mixed = [&sealed[..SEALED_PACKAGE_SIZE], &other[SEALED_PACKAGE_SIZE..]].concat();
        assert_eq!(open_all(&a, 1, &mixed, plain.len() as u64), Err(CryptoError::Authentication));
    }

    #[test]
    fn wrong_key_and_flipped_bits_fail() {
        let plain = plaintext(2 * P + 3);
        let sealed = seal(&cipher(1, 1), 0, &plain, usize::MAX);
        assert_eq!(open_all(&cipher(2, 1), 0, &sealed, plain.len() as u64), Err(CryptoError::Authentication));
        for i in [0, 100, P, P + 15, P + 16, sealed.len() - 1] {
            let mut bad = sealed.clone();
            bad[i] ^= 0x40;
            assert_eq!(
                open_all(&cipher(1, 1), 0, &bad, plain.len() as u64),
                Err(CryptoError::Authentication),
                "bit at {i}"
            );
        }
    }

    #[test]
    fn the_second_layer_round_trips_and_needs_both_keys() {
        let single = cipher(1, 2);
        let dual = cipher(1, 2).with_second_layer(&DataKey::from_bytes([9; 32]));
        let other_outer = cipher(1, 2).with_second_layer(&DataKey::from_bytes([8; 32]));
        assert!(dual.is_dual_layer() && !single.is_dual_layer());
        for n in SIZES {
            let plain = plaintext(n);
            let sealed = seal(&dual, 3, &plain, 1000.min(n.max(1)));
            assert_eq!(sealed.len() as u64, sealed_size(n as u64), "one layer's sizes, size {n}");
            // Gathered packages open in place, whole ones straight into the output: both paths.
            assert_eq!(open_all(&dual, 3, &sealed, n as u64).expect("opens"), plain, "size {n}");
            let count = package_count(n as u64);
            let (mut o, mut out) = (dual.opener(3, 0, count), Vec::new());
            o.update(&sealed, &mut out).expect("whole packages open");
            o.finish(count, &mut out).expect("ends");
            assert_eq!(out.concat(), plain, "size {n} in one piece");
            let inner_only = seal(&single, 3, &plain, usize::MAX);
            if n > 0 {
                assert_ne!(sealed, inner_only, "the stored bytes are not the inner layer's");
                assert_eq!(open_all(&single, 3, &sealed, n as u64), Err(CryptoError::Authentication));
                assert_eq!(open_all(&other_outer, 3, &sealed, n as u64), Err(CryptoError::Authentication));
            }
            for (d, s) in sealed.chunks(SEALED_PACKAGE_SIZE).zip(inner_only.chunks(SEALED_PACKAGE_SIZE)) {
                assert_eq!(
                    d[d.len() - TAG_SIZE..],
                    s[s.len() - TAG_SIZE..],
                    "the tags are the inner layer's"
                );
            }
        }
        let plain = plaintext(2 * P + 3);
        let sealed = seal(&dual, 0, &plain, usize::MAX);
        for i in [0, 100, P, P + 15, P + 16, sealed.len() - 1] {
            let mut bad = sealed.clone();
            bad[i] ^= 0x40;
            assert_eq!(open_all(&dual, 0, &bad, plain.len() as u64), Err(CryptoError::Authentication), "{i}");
        }
    }

    #[test]
    fn a_package_sealed_as_not_last_cannot_end_a_segment() {
        let c = cipher(4, 4);
        let mut out = Vec::new();
        c.seal_package(0, 0, false, &plaintext(10), &mut out);
        assert_eq!(open_all(&c, 0, &out, 10), Err(CryptoError::Authentication));
        let mut bad = out.clone();
        assert!(c.open_package(0, 0, false, &mut bad).is_ok());
        let mut tiny = vec![0u8; 5];
        assert_eq!(c.open_package(0, 0, true, &mut tiny), Err(CryptoError::Malformed("package length")));
    }
}
