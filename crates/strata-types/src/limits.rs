//! Limits, in one place. Each says why it exists and what happens past it.

/// Size of one erasure block: the unit the PUT path cuts a body into before it is split into
/// shards. 1 MiB keeps per-request memory small while amortising per-block overhead
/// (hashing setup, one write per drive per block).
pub const BLOCK_SIZE: usize = 1 << 20;

/// Objects up to this size live inline in the metadata record on each drive: one metadata
/// write per drive and no shard file, so small PUTs cost no inode and no extra sync.
pub const INLINE_SIZE_MAX: u64 = 128 * 1024;

/// Erasure blocks a single PUT or GET keeps in flight (being read, coded, or written).
/// Bounds request memory to about `BLOCKS_IN_FLIGHT * BLOCK_SIZE * (1 + parity/data)`.
pub const BLOCKS_IN_FLIGHT: usize = 2;

/// Largest object a single PutObject may carry (AWS: 5 GiB). Past it: `EntityTooLarge`.
pub const PUT_OBJECT_SIZE_MAX: u64 = 5 * 1024 * 1024 * 1024;

/// Smallest part of a multipart upload, except the last (AWS: 5 MiB). Else: `EntityTooSmall`.
pub const PART_SIZE_MIN: u64 = 5 * 1024 * 1024;

/// Highest part number (AWS: 10,000). Past it: `InvalidArgument`.
pub const PART_NUMBER_MAX: u32 = 10_000;

/// Longest object key in bytes (AWS: 1,024). Past it: `KeyTooLongError`.
pub const OBJECT_KEY_LEN_MAX: usize = 1024;

/// Bucket names are 3 to 63 characters (AWS bucket naming rules). Else: `InvalidBucketName`.
pub const BUCKET_NAME_LEN_MIN: usize = 3;
/// See [`BUCKET_NAME_LEN_MIN`].
pub const BUCKET_NAME_LEN_MAX: usize = 63;

/// User metadata (`x-amz-meta-*` names and values) may total 2 KiB (AWS).
/// Past it: `MetadataTooLarge`.
pub const USER_METADATA_SIZE_MAX: usize = 2 * 1024;

/// Largest `max-keys` a listing returns in one page (AWS: 1,000); larger requests are capped.
pub const LIST_KEYS_MAX: usize = 1000;

/// Keys one DeleteObjects request may name (AWS: 1,000). Past it: `MalformedXML`.
pub const DELETE_OBJECTS_KEYS_MAX: usize = 1000;

/// Tags per object (AWS: 10), and the length of a tag key and value in characters (128, 256).
/// Past them: `InvalidTag`.
pub const OBJECT_TAGS_MAX: usize = 10;
/// See [`OBJECT_TAGS_MAX`].
pub const TAG_KEY_LEN_MAX: usize = 128;
/// Tags per bucket (AWS: 50). Past it: `InvalidTag`.
pub const BUCKET_TAGS_MAX: usize = 50;
/// See [`OBJECT_TAGS_MAX`].
pub const TAG_VALUE_LEN_MAX: usize = 256;

/// CORS rules per bucket (AWS: 100). Past it: `MalformedXML`.
pub const CORS_RULES_MAX: usize = 100;

/// Largest request body we parse as XML (bucket configuration, multi-delete).
/// Past it: `MalformedXML` (the AWS limit for these documents is far below).
pub const XML_BODY_SIZE_MAX: usize = 2 * 1024 * 1024;

/// Drives per erasure set (2 to 16). A pool whose drive count has no divisor in range is refused.
pub const SET_DRIVE_COUNT_MIN: usize = 2;
/// See [`SET_DRIVE_COUNT_MIN`].
pub const SET_DRIVE_COUNT_MAX: usize = 16;

/// Allowed difference between a request's signing time and ours (AWS: 15 minutes).
/// Past it: `RequestTimeTooSkewed`.
pub const CLOCK_SKEW_MAX_SECS: u64 = 15 * 60;

/// Longest validity of a presigned URL (AWS: 7 days). Past it: `AuthorizationQueryParametersError`.
pub const PRESIGN_EXPIRES_MAX_SECS: u64 = 7 * 24 * 3600;

/// Largest header block we accept for a chunk in aws-chunked encoding (the hex size,
/// the signature extension and CRLF). Past it: `IncompleteBody`/`InvalidRequest`.
pub const CHUNK_HEADER_LEN_MAX: usize = 4096;

/// Metadata changes one drive commits in one transaction (group commit). A batch never waits
/// to fill: it takes what is pending, up to this many, so one sync serves them all.
pub const GROUP_COMMIT_BATCH_MAX: usize = 256;

/// Page cache of each drive's metadata index (redb). redb's own default is 1 GiB per database,
/// which on a 16-drive node could claim 16 GiB; hot metadata of a drive fits far below this.
pub const INDEX_CACHE_SIZE: usize = 64 * 1024 * 1024;

/// Pending metadata changes queued per drive before writers wait (back-pressure).
pub const DRIVE_COMMIT_QUEUE_DEPTH: usize = 1024;

/// Concurrent S3 requests served before new ones get `503 SlowDown`.
pub const REQUESTS_IN_FLIGHT_MAX: usize = 1024;

/// Shortest root secret we accept: a shorter one is refused at start.
pub const ROOT_SECRET_LEN_MIN: usize = 8;
