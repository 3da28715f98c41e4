//! Errors of the object layer. The S3 layer maps each variant to an S3 code in one place.

/// The request body could not be used; raised by the S3 layer's body reader, carried through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body ended before its declared length")]
    Incomplete,
    #[error("the body is longer than allowed")]
    TooLarge,
    #[error("the body is shorter than allowed")]
    TooSmall,
    #[error("a chunk signature does not match")]
    SignatureMismatch,
    #[error("x-amz-content-sha256 does not match the body")]
    ContentSha256Mismatch,
    #[error("the {0} checksum does not match the body")]
    ChecksumMismatch(String),
    #[error("the chunked body is malformed: {0}")]
    Malformed(String),
    #[error("reading the body failed: {0}")]
    Io(String),
    #[error("the client sent no body data within the time-out")]
    TimedOut,
    /// The body moved slower than the minimum transfer rate over its window.
    #[error("the client sent {bytes} bytes of body in {seconds} s, under the minimum of {rate} B/s")]
    TooSlow { bytes: u64, seconds: u64, rate: u64 },
}

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("bucket not found")]
    BucketNotFound,
    #[error("bucket already exists")]
    BucketExists,
    #[error("bucket is not empty")]
    BucketNotEmpty,
    #[error("object not found")]
    ObjectNotFound,
    /// A version id the object does not have (no read quorum holds it).
    #[error("no such version")]
    NoSuchVersion,
    /// The version asked for is a delete marker: the current version (the key reads as absent)
    /// or one named by its id (which cannot be read).
    #[error("the version is a delete marker")]
    DeleteMarker { version_id: Option<uuid::Uuid>, mod_time: u64, current: bool },
    #[error("Content-MD5 does not match the body")]
    BadDigest,
    #[error("object is larger than allowed")]
    EntityTooLarge,
    #[error("too few drives online to write (need {needed}, have {online})")]
    WriteQuorum { needed: usize, online: usize },
    /// Too few drives had room for the write (`ENOSPC`): it would have met its quorum had
    /// they not been full.
    #[error("too few drives have room for this write (need {needed}, {full} full)")]
    StorageFull { needed: usize, full: usize },
    #[error("too few drives online to read (need {needed}, have {online})")]
    ReadQuorum { needed: usize, online: usize },
    #[error("a condition of the write did not hold")]
    PreconditionFailed,
    /// A conditional write lost a race: the object changed between the check of its condition
    /// and its commit.
    #[error("the object changed while the conditional write was committed")]
    ConditionConflict,
    #[error("the multipart upload does not exist")]
    NoSuchUpload,
    #[error("part {0} was not uploaded or its ETag does not match")]
    InvalidPart(u32),
    #[error("the list of parts was not in ascending order")]
    InvalidPartOrder,
    #[error("part {0} is smaller than the minimum part size")]
    EntityTooSmall(u32),
    #[error("{0}")]
    InvalidRequest(String),
    /// A value of the request is out of its range (`400 InvalidArgument`).
    #[error("{0}")]
    InvalidArgument(String),
    /// Object lock keeps the version (retention or legal hold): refused to everyone, root
    /// included (a governance retention yields only to a bypass by a caller allowed it).
    #[error("object lock: {0}")]
    ObjectLocked(String),
    /// Object lock settings on a bucket that does not have object lock.
    #[error("the bucket has no object lock configuration")]
    NoObjectLockConfig,
    /// The bucket's state forbids the change (suspending versioning under object lock, ...).
    #[error("{0}")]
    InvalidBucketState(String),
    #[error("invalid storage class parity {0}")]
    InvalidParity(usize),
    #[error(transparent)]
    Body(#[from] BodyError),
    /// The object's lock could not be had in time, or its lease ran out before the commit
    /// (another node may hold it now): nothing was changed; retryable.
    #[error("object lock not held: {0}")]
    LockNotHeld(String),
    /// The server process ran out of a resource (open files, memory) while the drives are fine:
    /// retryable, and the operator is told which.
    #[error("{0}")]
    Exhausted(String),
    /// The erasure codec refused a split or a block (a bug, or a record with an impossible
    /// layout).
    #[error(transparent)]
    Erasure(#[from] strata_erasure::ErasureError),
    /// A task the operation ran on (a commit, an encode on the blocking pool) did not finish:
    /// it panicked or the runtime is shutting down.
    #[error("a task failed: {0}")]
    TaskFailed(String),
    /// A lock of this process was poisoned by a panic while held.
    #[error("{0} lock poisoned")]
    Poisoned(&'static str),
    /// What the drives agree on is inconsistent (a part ETag that is not hex, part checksums
    /// that do not combine, a part sealed unlike its upload, a rebuilt object that does not
    /// match its ETag): the record is damaged, not the request.
    #[error("record damaged: {0}")]
    Corrupt(String),
    /// Another write changed the object while this operation worked on it (a heal overtaken
    /// by a newer version): nothing was changed; retryable.
    #[error("overtaken by another write: {0}")]
    Raced(String),
    /// An encrypted object's stored packages do not open (tampered beyond what healing
    /// repairs, or a damaged record): no byte of them is returned.
    #[error("sealed data does not open: {0}")]
    Sealed(String),
    /// An SSE-C upload's sealed part checksums are needed (CompleteMultipartUpload of an upload
    /// with a checksum algorithm, or naming part checksums) and the request has no customer key.
    #[error("the SSE-C key is needed to read the upload's checksums")]
    CustomerKeyNeeded,
}
