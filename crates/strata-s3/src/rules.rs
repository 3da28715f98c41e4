//! What the rule-based bucket configurations (lifecycle, replication) check alike: the document
//! itself, how many rules it holds, their IDs and their tag filters.

use serde::de::DeserializeOwned;

use crate::error::malformed_xml as malformed;
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

/// The document under `root`, deserialized (anything else is `MalformedXML`). XML cannot carry
/// NUL: the parser is lenient about it, and a configuration holding one could not be printed
/// back.
pub(crate) fn document<T: DeserializeOwned>(doc: &[u8], root: &str) -> Result<T, S3Error> {
    let text = std::str::from_utf8(doc).map_err(|_| malformed())?;
    if text.contains('\0') || !xml::has_root(doc, root)? {
        return Err(malformed());
    }
    quick_xml::de::from_str(text).map_err(|_| malformed())
}

/// At least one rule (none is `MalformedXML`) and at most `max` (`InvalidArgument`).
pub(crate) fn check_count(count: usize, max: usize, what: &str) -> Result<(), S3Error> {
    if count == 0 {
        return Err(malformed());
    }
    if count > max {
        return Err(invalid(&format!("A {what} configuration may hold at most {max} rules")));
    }
    Ok(())
}

/// A rule's `ID`: as given, at most `max` characters; one is made when it is absent or empty.
pub(crate) fn rule_id(id: Option<String>, max: usize) -> Result<String, S3Error> {
    match id.filter(|i| !i.is_empty()) {
        Some(id) if id.chars().count() > max => {
            Err(invalid(&format!("ID length should not exceed allowed limit of {max}")))
        }
        Some(id) => Ok(id),
        None => Ok(uuid::Uuid::new_v4().simple().to_string()),
    }
}

/// Every rule's ID differs from the others'.
pub(crate) fn check_unique_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Result<(), S3Error> {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("Rule ID must be unique. Found same ID for more than one rule"));
    }
    Ok(())
}

/// A filter's tag keys: none empty (`InvalidTag`), none twice (`InvalidArgument`).
pub(crate) fn check_tag_keys<'a>(keys: impl Iterator<Item = &'a str>) -> Result<(), S3Error> {
    let mut keys: Vec<&str> = keys.collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("Duplicate Tag Keys are not allowed."));
    }
    if keys.iter().any(|k| k.is_empty()) {
        return Err(S3Error::new(S3ErrorCode::InvalidTag, "The TagKey you have provided is invalid"));
    }
    Ok(())
}
