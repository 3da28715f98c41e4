//! New credentials: access keys, secrets and session tokens, drawn from the system's random
//! source.

/// The characters of an access key (AWS's: upper-case letters and digits).
pub const ACCESS_KEY_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// The characters of a secret or a session token.
pub const SECRET_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The system's random source failed (it does not, in practice; the caller answers 500).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no randomness available")]
pub struct NoRandomness;

/// `len` random characters from `alphabet`.
pub fn random_string(alphabet: &[u8], len: usize) -> Result<String, NoRandomness> {
    let mut bytes = vec![0u8; len];
    strata_crypto::random_fill(&mut bytes).map_err(|_| NoRandomness)?;
    // 256 is not a multiple of the alphabet's size: the small bias does not matter at 20+ chars.
    Ok(bytes.iter().map(|b| alphabet[*b as usize % alphabet.len()] as char).collect())
}
