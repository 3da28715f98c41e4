//! MinIO's sealed streams (the `sio-go` format), and the bodies its admin API seals with a
//! password (what its `madmin` client calls `EncryptData`).
//!
//! A stream: the plaintext in fragments of 16 KiB, each sealed with its own nonce (an 8-byte
//! prefix and a little-endian sequence number from 1) and associated data of a flag (0x80 on the
//! last fragment, else 0) followed by the tag of an empty message sealed under sequence number
//! 0. MinIO seals its admin API bodies this way ([`seal`], [`open`]) and, under a data key from
//! its KMS, its IAM and configuration files ([`open_stream`]).
//!
//! A password-sealed body: a 32-byte salt, an algorithm id, an 8-byte nonce prefix, then the
//! stream. Ids: 0 = Argon2id and AES-256-GCM, 1 = Argon2id and ChaCha20-Poly1305, 2 =
//! PBKDF2-SHA256 and AES-256-GCM. Argon2id takes one pass over 64 MiB with four lanes: callers
//! on an async runtime run it off the runtime's threads, one at a time.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};

const SALT_LEN: usize = 32;
/// Bytes of a stream's nonce prefix.
pub const NONCE_PREFIX_LEN: usize = 8;
const HEADER_LEN: usize = SALT_LEN + 1 + NONCE_PREFIX_LEN;
/// Plaintext bytes per fragment.
const FRAGMENT: usize = 16 * 1024;
const TAG_LEN: usize = 16;
const FINAL: u8 = 0x80;
const PBKDF2_ROUNDS: u32 = 8192;

/// A body that did not open: not sealed this way, sealed with another secret, or altered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("the body is too short to be sealed")]
    Short,
    #[error("unknown encryption algorithm id {0}")]
    UnknownAlgorithm(u8),
    #[error("the body is not authentic (another secret key, or altered)")]
    NotAuthentic,
    #[error("no randomness: {0}")]
    Random(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Argon2AesGcm = 0,
    Argon2ChaCha = 1,
    Pbkdf2AesGcm = 2,
}

impl Algorithm {
    fn from_id(id: u8) -> Result<Self, SealError> {
        match id {
            0 => Ok(Self::Argon2AesGcm),
            1 => Ok(Self::Argon2ChaCha),
            2 => Ok(Self::Pbkdf2AesGcm),
            other => Err(SealError::UnknownAlgorithm(other)),
        }
    }

    fn key(self, secret: &[u8], salt: &[u8]) -> Result<LessSafeKey, SealError> {
        let mut key = [0u8; 32];
        match self {
            Self::Argon2AesGcm | Self::Argon2ChaCha => {
                let params =
                    argon2::Params::new(64 * 1024, 1, 4, Some(32)).map_err(|_| SealError::NotAuthentic)?;
                let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
                argon.hash_password_into(secret, salt, &mut key).map_err(|_| SealError::NotAuthentic)?;
            }
            Self::Pbkdf2AesGcm => {
                let rounds = std::num::NonZeroU32::new(PBKDF2_ROUNDS).ok_or(SealError::NotAuthentic)?;
                aws_lc_rs::pbkdf2::derive(
                    aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA256,
                    rounds,
                    salt,
                    secret,
                    &mut key,
                );
            }
        }
        let aead = if self == Self::Argon2ChaCha { &CHACHA20_POLY1305 } else { &AES_256_GCM };
        let unbound = UnboundKey::new(aead, &key).map_err(|_| SealError::NotAuthentic)?;
        Ok(LessSafeKey::new(unbound))
    }
}

fn nonce(prefix: &[u8; NONCE_PREFIX_LEN], sequence: u32) -> Nonce {
    let mut n = [0u8; 12];
    n[..NONCE_PREFIX_LEN].copy_from_slice(prefix);
    n[NONCE_PREFIX_LEN..].copy_from_slice(&sequence.to_le_bytes());
    Nonce::assume_unique_for_key(n)
}

/// The associated data of a fragment: its flag, then the tag of an empty message sealed under
/// sequence number 0.
fn associated(key: &LessSafeKey, prefix: &[u8; NONCE_PREFIX_LEN], last: bool) -> Result<[u8; 17], SealError> {
    let mut empty = Vec::new();
    key.seal_in_place_append_tag(nonce(prefix, 0), Aad::empty(), &mut empty)
        .map_err(|_| SealError::NotAuthentic)?;
    let mut aad = [0u8; 1 + TAG_LEN];
    aad[0] = if last { FINAL } else { 0 };
    aad[1..].copy_from_slice(&empty);
    Ok(aad)
}

/// Seals `plain` for a reader holding `secret`, with a fresh salt and nonce (algorithm 0).
pub fn seal(secret: &str, plain: &[u8]) -> Result<Vec<u8>, SealError> {
    let mut salt = [0u8; SALT_LEN];
    let mut prefix = [0u8; NONCE_PREFIX_LEN];
    aws_lc_rs::rand::fill(&mut salt).map_err(|e| SealError::Random(e.to_string()))?;
    aws_lc_rs::rand::fill(&mut prefix).map_err(|e| SealError::Random(e.to_string()))?;
    seal_with(secret, plain, &salt, &prefix)
}

fn seal_with(
    secret: &str,
    plain: &[u8],
    salt: &[u8; SALT_LEN],
    prefix: &[u8; NONCE_PREFIX_LEN],
) -> Result<Vec<u8>, SealError> {
    let algorithm = Algorithm::Argon2AesGcm;
    let key = algorithm.key(secret.as_bytes(), salt)?;
    let fragments = plain.len().div_ceil(FRAGMENT).max(1);
    let mut out = Vec::with_capacity(HEADER_LEN + plain.len() + fragments * TAG_LEN);
    out.extend_from_slice(salt);
    out.push(algorithm as u8);
    out.extend_from_slice(prefix);
    let (middle, last) = (associated(&key, prefix, false)?, associated(&key, prefix, true)?);
    for i in 0..fragments {
        let chunk = &plain[i * FRAGMENT..((i + 1) * FRAGMENT).min(plain.len())];
        let mut sealed = chunk.to_vec();
        let aad = if i + 1 == fragments { last } else { middle };
        let sequence = u32::try_from(i + 1).map_err(|_| SealError::NotAuthentic)?;
        key.seal_in_place_append_tag(nonce(prefix, sequence), Aad::from(aad), &mut sealed)
            .map_err(|_| SealError::NotAuthentic)?;
        out.extend_from_slice(&sealed);
    }
    Ok(out)
}

/// Opens a body sealed for `secret` (any of the three algorithms).
pub fn open(secret: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    if sealed.len() < HEADER_LEN + TAG_LEN {
        return Err(SealError::Short);
    }
    let (salt, rest) = sealed.split_at(SALT_LEN);
    let algorithm = Algorithm::from_id(rest[0])?;
    let mut prefix = [0u8; NONCE_PREFIX_LEN];
    prefix.copy_from_slice(&rest[1..=NONCE_PREFIX_LEN]);
    let key = algorithm.key(secret.as_bytes(), salt)?;
    open_with(&key, &prefix, &rest[1 + NONCE_PREFIX_LEN..])
}

/// The AEADs a stream may be sealed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCipher {
    AesGcm,
    ChaCha20Poly1305,
}

/// Opens a stream sealed under the 32-byte `key` with nonce prefix `prefix` (no header).
pub fn open_stream(
    cipher: StreamCipher,
    key: &[u8],
    prefix: &[u8; NONCE_PREFIX_LEN],
    body: &[u8],
) -> Result<Vec<u8>, SealError> {
    let aead = match cipher {
        StreamCipher::AesGcm => &AES_256_GCM,
        StreamCipher::ChaCha20Poly1305 => &CHACHA20_POLY1305,
    };
    let unbound = UnboundKey::new(aead, key).map_err(|_| SealError::NotAuthentic)?;
    open_with(&LessSafeKey::new(unbound), prefix, body)
}

fn open_with(
    key: &LessSafeKey,
    prefix: &[u8; NONCE_PREFIX_LEN],
    mut body: &[u8],
) -> Result<Vec<u8>, SealError> {
    let (middle, last) = (associated(key, prefix, false)?, associated(key, prefix, true)?);
    let mut plain = Vec::with_capacity(body.len());
    let mut sequence: u32 = 1;
    loop {
        // A fragment followed by more bytes is a middle one; what remains at the end is the last.
        let is_last = body.len() <= FRAGMENT + TAG_LEN;
        let (fragment, rest) = body.split_at(if is_last { body.len() } else { FRAGMENT + TAG_LEN });
        if fragment.len() < TAG_LEN {
            return Err(SealError::NotAuthentic);
        }
        let mut buf = fragment.to_vec();
        let aad = if is_last { last } else { middle };
        let opened = key
            .open_in_place(nonce(prefix, sequence), Aad::from(aad), &mut buf)
            .map_err(|_| SealError::NotAuthentic)?;
        plain.extend_from_slice(opened);
        if is_last {
            return Ok(plain);
        }
        body = rest;
        sequence = sequence.checked_add(1).ok_or(SealError::NotAuthentic)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
    }

    /// Bodies sealed by MinIO's own client library (its tests' vectors).
    #[test]
    fn opens_what_minios_client_sealed() {
        let empty = unhex("828aa81599df0651c0461adb82283e8b89956baee9f6e719947ef9cddc849028001dc9d3ac0938f66b07bacc9751437e1985f8a9763c240e81");
        assert_eq!(open("", &empty).expect("opens"), Vec::<u8>::new());
        let zeros = unhex("b5c016e93b84b473fc8a37af94936563630c36d6df1841d23a86ee51ca161f9e00ac19116b32f643ff6a56a212b265d8c56195bb0d12ce199e13dfdc5272f80c1564da2c6fc2fa18da91d8062de02af5cdafea491c6f3cae1f");
        assert_eq!(open("xPl.8/rhR\"Q_1xLt", &zeros).expect("opens"), vec![0u8; 32]);
        assert_eq!(open("another secret", &zeros), Err(SealError::NotAuthentic));
    }

    /// Known answers for the three algorithms: fixed salt and nonce.
    #[test]
    fn known_answers_for_every_algorithm() {
        let plain = br#"{"secretKey":"secret123","status":"enabled"}"#;
        let header = |id: u8| {
            let mut h: Vec<u8> = (0u8..32).collect();
            h.push(id);
            h.extend(0xa0u8..=0xa7);
            h
        };
        let cases = [
            (0u8, "e632c97399fdcc3854b5758af1d2263e1d7e6b80b0745212e26f7f5f2b0310a0139d906d0257d45092d8c3ed2ec1f774a59417eb77b9cc40d39372a8"),
            (1, "bcceed27365043565d0d5cfa3dcde6e84de93ad22df51d53da1f2de887b7f30ce758789373f9ec836866286fec99837ff6a1b9d5806f12b3e3bf76f2"),
            (2, "06383db07aa956bebee231ada6b5af4e7ae1c6f5191de884fda09085cb2e99bc237ea42eebdbe504a5e6a084aa48bea6c32e6a541b1135c5c25be7a6"),
        ];
        for (id, body) in cases {
            let sealed = [header(id), unhex(body)].concat();
            assert_eq!(open("minio123", &sealed).expect("opens"), plain.to_vec(), "id {id}");
        }
        let salt: [u8; 32] = core::array::from_fn(|i| i as u8);
        let prefix: [u8; 8] = core::array::from_fn(|i| 0xa0 + i as u8);
        let mine = seal_with("minio123", plain, &salt, &prefix).expect("seals");
        assert_eq!(mine, [header(0), unhex(cases[0].1)].concat());
    }

    #[test]
    fn fragments_round_trip_and_refuse_changes() {
        for len in [0, 1, FRAGMENT - 1, FRAGMENT, FRAGMENT + 1, 2 * FRAGMENT, 40_000] {
            let plain: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let sealed = seal("s3cret", &plain).expect("seals");
            assert_eq!(sealed.len(), HEADER_LEN + len + TAG_LEN * len.div_ceil(FRAGMENT).max(1));
            assert_eq!(open("s3cret", &sealed).expect("opens"), plain, "{len} bytes");
            let mut flipped = sealed.clone();
            let at = flipped.len() - 1;
            flipped[at] ^= 1;
            assert_eq!(open("s3cret", &flipped), Err(SealError::NotAuthentic));
            if len > FRAGMENT {
                // Cut at a fragment boundary: the last fragment is gone, and the one now last
                // was sealed as a middle one.
                let cut = &sealed[..HEADER_LEN + FRAGMENT + TAG_LEN];
                assert_eq!(open("s3cret", cut), Err(SealError::NotAuthentic));
            }
            let mut longer = sealed.clone();
            longer.push(0);
            assert!(open("s3cret", &longer).is_err());
        }
        assert_eq!(open("s", &[0u8; 40]), Err(SealError::Short));
        let mut unknown = seal("s", b"x").expect("seals");
        unknown[32] = 7;
        assert_eq!(open("s", &unknown), Err(SealError::UnknownAlgorithm(7)));
    }
}
