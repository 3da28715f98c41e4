//! Encryption at rest: the sealed package format of object data, data keys and how they are
//! sealed, and the key management service (KMS) seam.
//!
//! - [`package`]: an object's data (or one multipart part of it) sealed in packages of
//!   [`package::PACKAGE_SIZE`] plaintext bytes with AES-256-GCM under the object's own random
//!   [`DataKey`]. Each package's nonce and associated data bind the segment (0, or the part
//!   number), the package number, the object's random id and whether it is the last package, so
//!   a truncated, reordered, duplicated or foreign package fails to open. [`package::Sealer`]
//!   turns a plaintext stream into sealed bytes, [`package::Opener`] the reverse;
//!   [`package::sealed_range`] maps a plaintext range to the only packages it needs.
//! - [`key`]: [`DataKey`] (random, zeroed on drop), sealing a data key under a key-encryption
//!   key (a KMS key, or an SSE-C client's key), and the salted MAC by which an SSE-C key is
//!   recognised without being stored.
//! - [`kms`]: the [`Kms`] trait every key service implements (generate a data key, decrypt one,
//!   manage named keys), and [`kms::MasterKey`], the built-in KMS's key from the environment;
//!   [`keyring`]: the built-in KMS's named, versioned keys, sealed by the master key.
//! - [`sio`]: MinIO's sealed streams: its admin API's password-sealed bodies, and its IAM and
//!   configuration files sealed under a KMS data key (read by the MinIO import).
//!
//! Everything here is synchronous and pure except the [`Kms`] trait: where bytes are stored and
//! how a KMS is reached are the callers' business. Bytes from a drive or a client are never
//! trusted: every malformed input is a [`CryptoError`], never a panic. Byte layouts are in
//! `docs/formats.md` ("Encrypted objects").

pub mod key;
pub mod keyring;
pub mod kms;
pub mod package;
pub mod sio;

pub use key::DataKey;
pub use kms::{Kms, KmsError};

/// Why sealed bytes could not be produced or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// A package or a sealed key did not authenticate: the wrong key, tampered, reordered or
    /// swapped bytes.
    #[error("sealed data does not authenticate (wrong key or tampered data)")]
    Authentication,
    /// The sealed stream ends before its last package, or has bytes after it.
    #[error("sealed data is truncated or has trailing bytes")]
    Truncated,
    /// Bytes that cannot be sealed data of this format at all (a bad length, an unknown version).
    #[error("malformed sealed data: {0}")]
    Malformed(&'static str),
    /// The system's random number generator failed.
    #[error("no randomness available")]
    Random,
}

/// Fills `out` from the system's secure random number generator.
pub fn random_fill(out: &mut [u8]) -> Result<(), CryptoError> {
    use aws_lc_rs::rand::SecureRandom;
    aws_lc_rs::rand::SystemRandom::new().fill(out).map_err(|_| CryptoError::Random)
}
