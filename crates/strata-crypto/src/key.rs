//! Data keys, and sealing one key under another.
//!
//! A sealed key is `nonce (12 random bytes) || AES-256-GCM(key-encryption key, data key) (32)
//! || tag (16)`: 60 bytes. Its associated data is the caller's (what the key belongs to), so a
//! sealed key moved to another object or context does not open.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};

use crate::{random_fill, CryptoError};

/// Bytes of an AES-256 key.
pub const KEY_SIZE: usize = 32;
/// Bytes of a sealed key.
pub const SEALED_KEY_SIZE: usize = NONCE_LEN + KEY_SIZE + TAG_SIZE;
/// The AES-GCM tag.
const TAG_SIZE: usize = 16;
/// Bytes of the random salt of an SSE-C key MAC.
pub const MAC_SALT_SIZE: usize = 16;
/// Bytes of a stored SSE-C key MAC: salt, then HMAC-SHA256.
pub const KEY_MAC_SIZE: usize = MAC_SALT_SIZE + 32;
const KEY_MAC_LABEL: &[u8] = b"strata sse-c key mac v1\0";

/// Seals `plain` under `key` with `nonce`, bound to `aad`: `nonce || ciphertext || tag`, the
/// form of every small sealed value (keys, contexts, metadata).
pub(crate) fn seal_with_nonce(
    key: &LessSafeKey,
    nonce: [u8; NONCE_LEN],
    plain: &[u8],
    aad: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let mut out = Vec::with_capacity(NONCE_LEN + plain.len() + TAG_SIZE);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(plain);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut out[NONCE_LEN..],
        )
        .map_err(|_| CryptoError::Malformed("too long to seal"))?;
    out.extend_from_slice(tag.as_ref());
    Ok(out)
}

/// Opens `nonce || ciphertext || tag` made by [`seal_with_nonce`] under `key` with the same `aad`.
pub(crate) fn open_with_nonce(key: &LessSafeKey, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
    if sealed.len() < NONCE_LEN + TAG_SIZE {
        return Err(CryptoError::Malformed("sealed bytes too short"));
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&sealed[..NONCE_LEN]);
    let mut body = sealed[NONCE_LEN..].to_vec();
    let len = key
        .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(aad), &mut body)
        .map_err(|_| CryptoError::Authentication)?
        .len();
    body.truncate(len);
    Ok(body)
}

/// A 256-bit key, zeroed when dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct DataKey([u8; KEY_SIZE]);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

impl Drop for DataKey {
    fn drop(&mut self) {
        // Volatile-free zeroing: good enough to keep keys out of freed memory in the common
        // case; the optimiser may drop it only where the memory is never read again.
        self.0.iter_mut().for_each(|b| *b = 0);
        std::hint::black_box(&self.0);
    }
}

impl DataKey {
    /// A fresh random key.
    pub fn generate() -> Result<Self, CryptoError> {
        let mut k = [0u8; KEY_SIZE];
        random_fill(&mut k)?;
        Ok(Self(k))
    }

    pub fn from_bytes(bytes: [u8; KEY_SIZE]) -> Self {
        Self(bytes)
    }

    /// A key of exactly [`KEY_SIZE`] bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, CryptoError> {
        let k: [u8; KEY_SIZE] = bytes.try_into().map_err(|_| CryptoError::Malformed("key length"))?;
        Ok(Self(k))
    }

    pub fn as_bytes(&self) -> &[u8; KEY_SIZE] {
        &self.0
    }

    fn aead(&self) -> LessSafeKey {
        // A 32-byte key is always a valid AES-256 key.
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &self.0).expect("AES-256 takes 32-byte keys"))
    }

    /// Seals `plain` under this key, bound to `aad`: `nonce || ciphertext || tag`.
    pub fn seal(&self, plain: &[u8], aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let mut nonce = [0u8; NONCE_LEN];
        random_fill(&mut nonce)?;
        seal_with_nonce(&self.aead(), nonce, plain, aad)
    }

    /// Opens bytes sealed by [`DataKey::seal`] under this key with the same `aad`.
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
        open_with_nonce(&self.aead(), sealed, aad)
    }

    /// Seals `key` under this key (as a key-encryption key), bound to `aad`.
    pub fn seal_key(&self, key: &DataKey, aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.seal(key.as_bytes(), aad)
    }

    /// Opens a key sealed by [`DataKey::seal_key`] under this key with the same `aad`.
    pub fn open_key(&self, sealed: &[u8], aad: &[u8]) -> Result<DataKey, CryptoError> {
        if sealed.len() != SEALED_KEY_SIZE {
            return Err(CryptoError::Malformed("sealed key length"));
        }
        let mut plain = self.open(sealed, aad)?;
        let key = DataKey::from_slice(&plain);
        plain.iter_mut().for_each(|b| *b = 0);
        key
    }

    /// A salted MAC of this key (an SSE-C client's key): what is stored to recognise the key
    /// later without storing it. `salt || HMAC-SHA256(key, label || salt)`.
    pub fn key_mac(&self) -> Result<Vec<u8>, CryptoError> {
        let mut salt = [0u8; MAC_SALT_SIZE];
        random_fill(&mut salt)?;
        Ok(self.key_mac_with(&salt))
    }

    fn key_mac_with(&self, salt: &[u8; MAC_SALT_SIZE]) -> Vec<u8> {
        let mut mac = strata_sign::MacKey::new(&self.0).start();
        mac.update(KEY_MAC_LABEL);
        mac.update(salt);
        let mut out = salt.to_vec();
        out.extend_from_slice(&mac.finish());
        out
    }

    /// Whether `stored` (from [`DataKey::key_mac`]) is this key's MAC (compared in constant
    /// time). A malformed MAC matches no key.
    pub fn matches_mac(&self, stored: &[u8]) -> bool {
        let Some(salt) = stored.get(..MAC_SALT_SIZE).and_then(|s| <[u8; MAC_SALT_SIZE]>::try_from(s).ok())
        else {
            return false;
        };
        stored.len() == KEY_MAC_SIZE && strata_sign::constant_time_eq(&self.key_mac_with(&salt), stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_keys_open_only_with_their_key_and_aad() {
        let kek = DataKey::generate().expect("random");
        let key = DataKey::generate().expect("random");
        let sealed = kek.seal_key(&key, b"object a").expect("seal");
        assert_eq!(sealed.len(), SEALED_KEY_SIZE);
        assert_eq!(kek.open_key(&sealed, b"object a").expect("open"), key);
        assert_eq!(kek.open_key(&sealed, b"object b"), Err(CryptoError::Authentication));
        let other = DataKey::generate().expect("random");
        assert_eq!(other.open_key(&sealed, b"object a"), Err(CryptoError::Authentication));
        for i in [0, 12, 40, SEALED_KEY_SIZE - 1] {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert_eq!(kek.open_key(&bad, b"object a"), Err(CryptoError::Authentication), "byte {i}");
        }
        assert!(matches!(kek.open_key(&sealed[..59], b"object a"), Err(CryptoError::Malformed(_))));
        // Two seals of one key differ (random nonce).
        assert_ne!(kek.seal_key(&key, b"x").expect("seal"), kek.seal_key(&key, b"x").expect("seal"));
    }

    #[test]
    fn key_macs_recognise_only_their_key() {
        let key = DataKey::from_bytes([7; 32]);
        let mac = key.key_mac().expect("random");
        assert_eq!(mac.len(), KEY_MAC_SIZE);
        assert!(!mac.windows(32).any(|w| w == key.as_bytes()), "the key is not in the MAC");
        assert!(key.matches_mac(&mac));
        assert!(!DataKey::from_bytes([8; 32]).matches_mac(&mac));
        assert_ne!(key.key_mac().expect("random"), mac, "salted");
        let mut bad = mac.clone();
        bad[20] ^= 1;
        assert!(!key.matches_mac(&bad));
        assert!(!key.matches_mac(&mac[..10]));
        assert!(!key.matches_mac(&[]));
    }
}
