//! How version ids and dates look on the S3 surface (headers, listings, error documents).

use std::time::{Duration, UNIX_EPOCH};

use uuid::Uuid;

/// A version id as S3 shows it.
pub fn version_string(id: Option<Uuid>) -> String {
    id.map_or_else(|| "null".to_owned(), |id| id.simple().to_string())
}

/// A date in an HTTP header (`Last-Modified`), from Unix nanoseconds.
pub fn http_date(nanos: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(nanos / 1_000_000_000))
}
