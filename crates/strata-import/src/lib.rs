//! Taking over another store's data: `strata import minio` (its drives, in place) and
//! `strata import s3` (any S3 endpoint, live, over S3; see [`s3`]).
//!
//! [`minio`] reads the drives of a stopped MinIO deployment as MinIO left them: its drive
//! format records (`.minio.sys/format.json`), each object's `xl.meta` (versions, delete markers,
//! metadata, small objects' shard bytes inline), its shard files (`part.N`, HighwayHash-framed
//! like Strata's own, under MinIO's hash key) and its bucket settings. Nothing here writes to
//! those drives: the reader is what a dry run reports from and what the import turns into Strata
//! records.
//!
//! Invariants: bytes from the drives are outside input (a malformed `xl.meta` is a value that
//! names the file, never a panic); a version MinIO wrote in a form this reader does not know is
//! reported and left alone, never guessed at.

pub mod minio;
pub mod s3;
