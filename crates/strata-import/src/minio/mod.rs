//! MinIO's on-drive format, read-only (see the crate docs).

pub mod bucket;
pub mod compressed;
pub mod format;
pub mod iam;
pub mod kms;
pub mod object;
pub mod sse;
pub mod survey;
pub mod takeover;
pub mod xlmeta;

pub use format::{Deployment, DriveFormat, MinioDrive};

/// Why MinIO's drives cannot be read as asked.
#[derive(Debug, thiserror::Error)]
pub enum MinioError {
    #[error("{path}: not a MinIO drive ({why})")]
    NotMinio { path: String, why: String },
    #[error("{path} belongs to MinIO deployment {found}, the others to {expected}")]
    ForeignDrive { path: String, found: uuid::Uuid, expected: uuid::Uuid },
    #[error("{first} and {second} are the same MinIO drive ({id})")]
    SameDrive { first: String, second: String, id: uuid::Uuid },
    #[error("drives of the deployment not given: {0}")]
    MissingDrives(String),
    #[error("not supported yet: {0}")]
    Unsupported(String),
    #[error("{path}: {why}")]
    Malformed { path: String, why: String },
    /// Strata's side of a drive refused (its format, its index).
    #[error("{path}: {why}")]
    Strata { path: String, why: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

impl MinioError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        MinioError::Io { path: path.display().to_string(), source }
    }

    pub(crate) fn malformed(path: &std::path::Path, why: impl Into<String>) -> Self {
        MinioError::Malformed { path: path.display().to_string(), why: why.into() }
    }
}
