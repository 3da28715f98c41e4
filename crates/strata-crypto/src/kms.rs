//! The key management service seam, and the built-in KMS's master key.
//!
//! A [`Kms`] holds named keys that never leave it. It generates data keys (returning the key and
//! an opaque ciphertext of it, to store beside the object) and decrypts such ciphertexts again;
//! an encryption context (bytes the caller chooses) is bound to each ciphertext and must be
//! given again to decrypt. The built-in KMS (`strata-s3`'s `kms` module over [`crate::keyring`])
//! and an external one (an OpenBao / Vault transit engine) both implement it.

use base64::Engine;

use crate::{CryptoError, DataKey};

/// Why a KMS call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KmsError {
    /// The named key does not exist.
    #[error("the KMS key '{0}' does not exist")]
    NoSuchKey(String),
    /// Creating a key that exists.
    #[error("the KMS key '{0}' already exists")]
    KeyExists(String),
    /// The key exists but may not be used.
    #[error("the KMS key '{0}' is disabled")]
    KeyDisabled(String),
    /// Not a name a key may have.
    #[error("'{0}' is not a valid KMS key id")]
    InvalidKeyId(String),
    /// The ciphertext does not decrypt under the key with this context (tampered, another key,
    /// another context).
    #[error("the data key does not decrypt")]
    Decrypt,
    /// The KMS cannot be reached or answered with an error of its own; retrying later may work.
    #[error("the KMS is unavailable: {0}")]
    Unavailable(String),
    /// The KMS's own state is unusable (sealed by another master key, damaged).
    #[error("the KMS state is unusable: {0}")]
    Internal(String),
    /// This KMS cannot do what was asked (it is done in the KMS's own tools).
    #[error("{0}")]
    Unsupported(String),
}

impl From<CryptoError> for KmsError {
    fn from(e: CryptoError) -> Self {
        match e {
            CryptoError::Authentication | CryptoError::Truncated | CryptoError::Malformed(_) => {
                KmsError::Decrypt
            }
            CryptoError::Random => KmsError::Internal(e.to_string()),
        }
    }
}

/// A data key just generated: the key, and its ciphertext to store.
#[derive(Debug)]
pub struct GeneratedKey {
    pub key: DataKey,
    pub ciphertext: Vec<u8>,
}

/// A named key as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: String,
    /// The version new data keys are sealed with (1 for a key never rotated).
    pub version: u32,
    /// Unix seconds.
    pub created: u64,
    pub enabled: bool,
}

/// A KMS's state, for `strata admin kms key status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsStatus {
    /// `builtin`, `vault-transit`.
    pub kind: &'static str,
    /// Where it is (an endpoint), or empty.
    pub endpoint: String,
    /// The key SSE-S3 uses (and SSE-KMS when a request names none).
    pub default_key: String,
    pub online: bool,
}

/// A key management service.
#[async_trait::async_trait]
pub trait Kms: Send + Sync + std::fmt::Debug {
    /// The key SSE-S3 objects use, and SSE-KMS ones whose request names no key.
    fn default_key_id(&self) -> &str;
    /// A new data key sealed by `key_id`, bound to `context`.
    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError>;
    /// The data key of a ciphertext [`Kms::generate_key`] returned for `key_id` and `context`.
    async fn decrypt_key(&self, key_id: &str, ciphertext: &[u8], context: &[u8])
        -> Result<DataKey, KmsError>;
    async fn create_key(&self, key_id: &str) -> Result<(), KmsError>;
    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError>;
    /// Makes a new version of `key_id` the one new data keys use; older versions still decrypt.
    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError>;
    /// Enables or disables `key_id`: a disabled key neither generates nor decrypts data keys
    /// (objects sealed under it cannot be read until it is enabled again).
    async fn set_key_enabled(&self, key_id: &str, enabled: bool) -> Result<KeyInfo, KmsError>;
    async fn status(&self) -> KmsStatus;
}

/// Whether `name` may name a KMS key: 1 to 64 of `A-Z a-z 0-9 - _ .`, not starting with `.`.
pub fn valid_key_id(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// The built-in KMS's master key, from `STRATA_KMS_SECRET_KEY` (or MinIO's
/// `MINIO_KMS_SECRET_KEY`) in MinIO's form `name:base64(32 bytes)`. The name becomes the default
/// key; the master key itself only seals the key ring.
pub struct MasterKey {
    pub name: String,
    pub key: DataKey,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey({})", self.name)
    }
}

impl MasterKey {
    /// Parses `name:base64key`; the message says what is wrong without echoing the key.
    pub fn parse(value: &str) -> Result<Self, String> {
        let (name, encoded) = value.trim().split_once(':').ok_or(
            "the KMS secret key must be NAME:BASE64KEY (e.g. my-key:$(head -c 32 /dev/urandom | base64))",
        )?;
        if !valid_key_id(name) {
            return Err(format!(
                "the KMS secret key's name '{name}' is not a valid key id (1-64 of A-Z a-z 0-9 - _ .)"
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| "the KMS secret key is not valid base64".to_owned())?;
        let key = DataKey::from_slice(&bytes)
            .map_err(|_| format!("the KMS secret key must be 32 bytes, not {}", bytes.len()))?;
        Ok(Self { name: name.to_owned(), key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_keys_parse_in_minio_form() {
        let k =
            MasterKey::parse("my-minio-key:OSMM+vkKUTCvQs9YL/CVMIMt43HFhkUpqJxTmGl6rYw=").expect("parses");
        assert_eq!(k.name, "my-minio-key");
        for bad in [
            "",
            "no-colon",
            ":OSMM+vkKUTCvQs9YL/CVMIMt43HFhkUpqJxTmGl6rYw=",
            "bad name:OSMM+vkKUTCvQs9YL/CVMIMt43HFhkUpqJxTmGl6rYw=",
            "k:not base64!",
            "k:AAAA",
        ] {
            let e = MasterKey::parse(bad).expect_err(bad);
            assert!(!e.contains("OSMM"), "the key is not echoed: {e}");
        }
    }

    #[test]
    fn key_ids() {
        for ok in ["a", "my-key_1.2", &"k".repeat(64)] {
            assert!(valid_key_id(ok), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "a b", &"k".repeat(65), "é"] {
            assert!(!valid_key_id(bad), "{bad}");
        }
    }
}
