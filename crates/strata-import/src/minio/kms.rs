//! What MinIO sealed with its built-in KMS (`MINIO_KMS_SECRET_KEY`), opened with the same key:
//! the data keys of its sealed configuration files (IAM) today.
//!
//! A data key sealed by MinIO's built-in KMS is 76 bytes: the AES-256-GCM ciphertext and tag of
//! the 32-byte key (48 bytes), then a 16-byte IV and the 12-byte GCM nonce. The sealing key is
//! HMAC-SHA256(master key, IV); the associated data is the encryption context as MinIO writes
//! it: a JSON object with sorted keys and MinIO's own escaping ([`context`]).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use strata_crypto::kms::MasterKey;

/// Bytes of a data key sealed by MinIO's built-in KMS.
pub const SEALED_KEY_LEN: usize = 48 + 16 + 12;

/// Why a sealed data key did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsealError {
    #[error("sealed by MinIO's KMS key '{sealed_by}', but the key given is '{given}'")]
    OtherKey { sealed_by: String, given: String },
    #[error("the sealed data key is {0} bytes, not {SEALED_KEY_LEN}")]
    Length(usize),
    #[error("the data key does not open with the key given (another key of the same name, or altered)")]
    NotAuthentic,
}

/// Opens the data key `sealed` that MinIO's built-in KMS key `key_id` sealed under `context`.
pub fn unseal(
    master: &MasterKey,
    key_id: &str,
    sealed: &[u8],
    context: &[u8],
) -> Result<[u8; 32], UnsealError> {
    if key_id != master.name {
        return Err(UnsealError::OtherKey { sealed_by: key_id.to_owned(), given: master.name.clone() });
    }
    if sealed.len() != SEALED_KEY_LEN {
        return Err(UnsealError::Length(sealed.len()));
    }
    let (ciphertext, rest) = sealed.split_at(48);
    let (iv, nonce) = rest.split_at(16);
    let sealing = strata_sign::hmac_sha256(master.key.as_bytes(), iv);
    let key = UnboundKey::new(&AES_256_GCM, &sealing).map_err(|_| UnsealError::NotAuthentic)?;
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| UnsealError::NotAuthentic)?;
    let mut buf = ciphertext.to_vec();
    let plain = LessSafeKey::new(key)
        .open_in_place(nonce, Aad::from(context), &mut buf)
        .map_err(|_| UnsealError::NotAuthentic)?;
    plain.try_into().map_err(|_| UnsealError::NotAuthentic)
}

/// An encryption context as MinIO serialises it: a JSON object, keys sorted, `"` and `\`
/// escaped, `\n` `\r` `\t` as such, other control characters and `<` `>` `&` as `\u00XX`,
/// U+2028 and U+2029 as `\u2028` and `\u2029`, everything else as it is.
pub fn context(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut sorted: Vec<&(&str, &str)> = pairs.iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    let mut out = String::from("{");
    for (i, (k, v)) in sorted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        quote(&mut out, k);
        out.push(':');
        quote(&mut out, v);
    }
    out.push('}');
    out.into_bytes()
}

fn quote(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_are_written_as_minio_writes_them() {
        assert_eq!(context(&[]), b"{}");
        assert_eq!(
            context(&[("plain", "plain/encrypted/sse-s3"), (".minio.sys", "x")]),
            br#"{".minio.sys":"x","plain":"plain/encrypted/sse-s3"}"#
        );
        assert_eq!(
            String::from_utf8(context(&[("b", "a\"\\\n<&>\u{1}é\u{2028}")])).expect("utf-8"),
            r#"{"b":"a\"\\\n\u003c\u0026\u003e\u0001é\u2028"}"#
        );
    }

    #[test]
    fn sealed_keys_open_with_the_same_key_only() {
        let master =
            MasterKey::parse("fixture-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").expect("key");
        // Sealed the way MinIO's built-in KMS seals: HMAC-SHA256(master, iv) as the GCM key.
        let (iv, nonce, plain) = ([7u8; 16], [9u8; 12], [42u8; 32]);
        let ctx = context(&[(".minio.sys", ".minio.sys/config/iam/format.json")]);
        let sealing = strata_sign::hmac_sha256(master.key.as_bytes(), &iv);
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &sealing).expect("key"));
        let mut sealed = plain.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(&ctx), &mut sealed)
            .expect("seals");
        sealed.extend_from_slice(&iv);
        sealed.extend_from_slice(&nonce);
        assert_eq!(unseal(&master, "fixture-key", &sealed, &ctx), Ok(plain));
        assert_eq!(unseal(&master, "fixture-key", &sealed, b"{}"), Err(UnsealError::NotAuthentic));
        assert!(matches!(unseal(&master, "other", &sealed, &ctx), Err(UnsealError::OtherKey { .. })));
        assert_eq!(unseal(&master, "fixture-key", &sealed[1..], &ctx), Err(UnsealError::Length(75)));
        let mut flipped = sealed.clone();
        flipped[3] ^= 1;
        assert_eq!(unseal(&master, "fixture-key", &flipped, &ctx), Err(UnsealError::NotAuthentic));
    }
}
