//! Validated bucket names and object keys.

use std::fmt;

use crate::limits::{BUCKET_NAME_LEN_MAX, BUCKET_NAME_LEN_MIN, OBJECT_KEY_LEN_MAX};

/// Why a name was refused; the S3 layer maps each to its error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The rule the name breaks, then the rules in full.
    #[error(
        "The specified bucket is not valid: {0}. Bucket names are 3 to 63 characters of lowercase \
         letters, digits, dots and hyphens, begin and end with a letter or digit, have no two \
         adjacent dots, are not an IP address, and do not start with xn-- or end with -s3alias."
    )]
    InvalidBucketName(&'static str),
    #[error("your key is too long")]
    KeyTooLong,
    #[error("object key is empty or not valid")]
    InvalidKey,
}

/// A bucket name that follows the AWS general purpose bucket naming rules.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BucketName(String);

impl BucketName {
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let bytes = name.as_bytes();
        let len_ok = (BUCKET_NAME_LEN_MIN..=BUCKET_NAME_LEN_MAX).contains(&bytes.len());
        let chars_ok =
            bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.' || *b == b'-');
        let ends_ok = bytes.first().is_some_and(|b| b.is_ascii_alphanumeric())
            && bytes.last().is_some_and(|b| b.is_ascii_alphanumeric());
        let looks_like_ip = name.split('.').count() == 4
            && name.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        // Names starting with '.strata' are reserved for the system bucket (and fail `ends_ok`).
        let broken = [
            (!len_ok, "it is not 3 to 63 characters long"),
            (!chars_ok, "it holds a character other than a lowercase letter, a digit, a dot or a hyphen"),
            (!ends_ok, "it does not begin and end with a letter or digit"),
            (name.contains(".."), "it has two adjacent dots"),
            (looks_like_ip, "it is formatted as an IP address"),
            (name.starts_with("xn--"), "it starts with xn--"),
            (name.ends_with("-s3alias"), "it ends with -s3alias"),
        ];
        match broken.iter().find(|(broken, _)| *broken) {
            Some((_, why)) => Err(NameError::InvalidBucketName(why)),
            None => Ok(Self(name.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A validated name reads as the string it is (`&BucketName` passes where `&str` is asked).
impl std::ops::Deref for BucketName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BucketName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An object key: 1 to 1,024 bytes of UTF-8. Any characters are allowed (including `..`,
/// `//`, a leading `/`); keys are never used as file paths, only as index keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    pub fn parse(key: &str) -> Result<Self, NameError> {
        if key.is_empty() {
            return Err(NameError::InvalidKey);
        }
        if key.len() > OBJECT_KEY_LEN_MAX {
            return Err(NameError::KeyTooLong);
        }
        Ok(Self(key.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for ObjectKey {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names() {
        for ok in [
            "abc",
            "my-bucket",
            "my.bucket.1",
            "a23456789012345678901234567890123456789012345678901234567890123",
        ] {
            assert!(BucketName::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "-abc",
            "abc-",
            "a..b",
            "192.168.1.1",
            "a_b",
            "xn--abc",
            "",
            "a".repeat(64).as_str(),
        ] {
            assert!(matches!(BucketName::parse(bad), Err(NameError::InvalidBucketName(_))), "{bad}");
        }
        // The message says which rule the name breaks, then every rule.
        let said = |name: &str| BucketName::parse(name).map(drop).map_err(|e| e.to_string()).expect_err(name);
        assert!(said("My_Bucket").contains("other than a lowercase letter"), "{}", said("My_Bucket"));
        assert!(said("a..b").contains("two adjacent dots"));
        assert!(said("ab").contains("not 3 to 63 characters long"));
        assert!(said("ab").contains("lowercase letters, digits, dots and hyphens"));
    }

    #[test]
    fn object_keys() {
        assert!(ObjectKey::parse("../a//b %+ é").is_ok());
        assert_eq!(ObjectKey::parse(""), Err(NameError::InvalidKey));
        assert_eq!(ObjectKey::parse(&"k".repeat(1025)), Err(NameError::KeyTooLong));
        assert!(ObjectKey::parse(&"k".repeat(1024)).is_ok());
    }
}
