//! THE S3 error map: every error the S3 surface returns has its code and HTTP status here, and
//! every object-layer error is mapped by one exhaustive match, so a new variant forces a decision.

use http::StatusCode;
use strata_crypto::KmsError;
use strata_iam::{IamError, PolicyError};
use strata_object::{BodyError, ObjectError};
use strata_system::credentials::NoRandomness;
use strata_system::iam::StoreError;
use strata_system::oidc::OidcError;
use strata_types::NameError;

use crate::xml::MalformedXml;

macro_rules! codes {
    ($($name:ident $(as $wire:literal)? => $status:expr),* $(,)?) => {
        /// S3 error codes, named as AWS names them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum S3ErrorCode { $($name),* }

        impl S3ErrorCode {
            pub fn as_str(self) -> &'static str {
                match self { $(S3ErrorCode::$name => codes!(@wire $name $($wire)?)),* }
            }

            pub fn status(self) -> StatusCode {
                match self { $(S3ErrorCode::$name => $status),* }
            }
        }
    };
    (@wire $name:ident $wire:literal) => { $wire };
    (@wire $name:ident) => { stringify!($name) };
}

// A code AWS sends with two statuses has a second variant named for the status, sending the
// same code (`as "..."`).
codes! {
    AccessControlListNotSupported => StatusCode::BAD_REQUEST,
    AccessForbidden => StatusCode::FORBIDDEN,
    AccessDenied => StatusCode::FORBIDDEN,
    AuthorizationHeaderMalformed => StatusCode::BAD_REQUEST,
    AuthorizationQueryParametersError => StatusCode::BAD_REQUEST,
    // X-Amz-Expires out of range (negative, past a week): AWS answers 403 with the same code.
    AuthorizationQueryParametersForbidden as "AuthorizationQueryParametersError" => StatusCode::FORBIDDEN,
    BadDigest => StatusCode::BAD_REQUEST,
    BucketAlreadyExists => StatusCode::CONFLICT,
    BucketAlreadyOwnedByYou => StatusCode::CONFLICT,
    BucketNotEmpty => StatusCode::CONFLICT,
    DeleteConflict => StatusCode::CONFLICT,
    EntityAlreadyExists => StatusCode::CONFLICT,
    EntityTooLarge => StatusCode::BAD_REQUEST,
    EntityTooSmall => StatusCode::BAD_REQUEST,
    ExpiredToken => StatusCode::BAD_REQUEST,
    ExpiredTokenException => StatusCode::BAD_REQUEST,
    IDPCommunicationError => StatusCode::BAD_REQUEST,
    IncompleteBody => StatusCode::BAD_REQUEST,
    InternalError => StatusCode::INTERNAL_SERVER_ERROR,
    InvalidAccessKeyId => StatusCode::FORBIDDEN,
    InvalidAction => StatusCode::BAD_REQUEST,
    InvalidArgument => StatusCode::BAD_REQUEST,
    InvalidBucketState => StatusCode::CONFLICT,
    InvalidBucketAclWithObjectOwnership => StatusCode::BAD_REQUEST,
    InvalidBucketName => StatusCode::BAD_REQUEST,
    InvalidDigest => StatusCode::BAD_REQUEST,
    InvalidEncryptionAlgorithmError => StatusCode::BAD_REQUEST,
    InvalidIdentityToken => StatusCode::BAD_REQUEST,
    IncorrectNumberOfFilesInPostRequest => StatusCode::BAD_REQUEST,
    InvalidPart => StatusCode::BAD_REQUEST,
    InvalidPartOrder => StatusCode::BAD_REQUEST,
    InvalidPartNumber => StatusCode::RANGE_NOT_SATISFIABLE,
    InvalidPolicyDocument => StatusCode::BAD_REQUEST,
    InvalidRange => StatusCode::RANGE_NOT_SATISFIABLE,
    InvalidRequest => StatusCode::BAD_REQUEST,
    InvalidStorageClass => StatusCode::BAD_REQUEST,
    InvalidTag => StatusCode::BAD_REQUEST,
    // SSE-KMS naming a key the KMS does not have, or one that is disabled (AWS's codes).
    KmsNotFound as "KMS.NotFoundException" => StatusCode::BAD_REQUEST,
    KmsDisabled as "KMS.DisabledException" => StatusCode::BAD_REQUEST,
    InvalidURI => StatusCode::BAD_REQUEST,
    InvalidToken => StatusCode::BAD_REQUEST,
    KeyTooLongError => StatusCode::BAD_REQUEST,
    LimitExceeded => StatusCode::CONFLICT,
    MalformedACLError => StatusCode::BAD_REQUEST,
    MalformedPOSTRequest => StatusCode::BAD_REQUEST,
    MalformedPolicy => StatusCode::BAD_REQUEST,
    MalformedXML => StatusCode::BAD_REQUEST,
    MaxPostPreDataLengthExceeded => StatusCode::BAD_REQUEST,
    MetadataTooLarge => StatusCode::BAD_REQUEST,
    MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
    MissingContentLength => StatusCode::LENGTH_REQUIRED,
    NoSuchBucket => StatusCode::NOT_FOUND,
    NoSuchBucketPolicy => StatusCode::NOT_FOUND,
    NoSuchCORSConfiguration => StatusCode::NOT_FOUND,
    NoSuchEntity => StatusCode::NOT_FOUND,
    NoSuchKey => StatusCode::NOT_FOUND,
    NoSuchLifecycleConfiguration => StatusCode::NOT_FOUND,
    NoSuchObjectLockConfiguration => StatusCode::NOT_FOUND,
    NoSuchPublicAccessBlockConfiguration => StatusCode::NOT_FOUND,
    NoSuchTagSet => StatusCode::NOT_FOUND,
    NoSuchUpload => StatusCode::NOT_FOUND,
    NoSuchVersion => StatusCode::NOT_FOUND,
    NotImplemented => StatusCode::NOT_IMPLEMENTED,
    NotModified => StatusCode::NOT_MODIFIED,
    ObjectLockConfigurationNotFoundError => StatusCode::NOT_FOUND,
    OperationAborted => StatusCode::CONFLICT,
    OwnershipControlsNotFoundError => StatusCode::NOT_FOUND,
    PreconditionFailed => StatusCode::PRECONDITION_FAILED,
    ConditionalRequestConflict => StatusCode::CONFLICT,
    ReplicationConfigurationNotFoundError => StatusCode::NOT_FOUND,
    RequestTimeout => StatusCode::BAD_REQUEST,
    RequestTimeTooSkewed => StatusCode::FORBIDDEN,
    SignatureDoesNotMatch => StatusCode::FORBIDDEN,
    ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
    SlowDown => StatusCode::SERVICE_UNAVAILABLE,
    // Not an AWS code (AWS never fills): MinIO's, which its clients and users know, with 507.
    XMinioStorageFull => StatusCode::INSUFFICIENT_STORAGE,
    ServerSideEncryptionConfigurationNotFoundError => StatusCode::NOT_FOUND,
    UnresolvableGrantByEmailAddress => StatusCode::BAD_REQUEST,
    ValidationError => StatusCode::BAD_REQUEST,
    XAmzContentSHA256Mismatch => StatusCode::BAD_REQUEST,
}

/// An S3 error response: code, message, and the resource it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    pub code: S3ErrorCode,
    pub message: String,
    pub bucket: Option<String>,
    pub key: Option<String>,
    /// Further elements AWS adds for some codes (`Region`, `HeadersNotSigned`), in order.
    pub details: Vec<(&'static str, String)>,
    /// Response headers AWS sends with this error (`x-amz-delete-marker`, ...); boxed, so an
    /// error stays small enough to return by value everywhere.
    pub headers: Box<[(&'static str, String)]>,
}

impl S3Error {
    pub fn new(code: S3ErrorCode, message: &str) -> Self {
        Self {
            code,
            message: message.to_owned(),
            bucket: None,
            key: None,
            details: Vec::new(),
            headers: Box::default(),
        }
    }

    /// Adds a response header (sent with the error document, and alone for HEAD).
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        let mut headers = std::mem::take(&mut self.headers).into_vec();
        headers.push((name, value.to_owned()));
        self.headers = headers.into_boxed_slice();
        self
    }

    /// Adds an element to the error document (e.g. `Region` with the region expected).
    pub fn with_detail(mut self, name: &'static str, value: &str) -> Self {
        self.details.push((name, value.to_owned()));
        self
    }

    pub fn with_resource(mut self, bucket: Option<&str>, key: Option<&str>) -> Self {
        self.bucket = self.bucket.or(bucket.map(str::to_owned));
        self.key = self.key.or(key.map(str::to_owned));
        self
    }

    /// The XML body AWS sends for this error.
    pub fn to_xml(&self, request_id: &str) -> String {
        let mut x = crate::xml::Writer::new();
        x.open("Error");
        x.elem("Code", self.code.as_str());
        x.elem("Message", &self.message);
        if let Some(b) = &self.bucket {
            x.elem("BucketName", b);
        }
        if let Some(k) = &self.key {
            x.elem("Key", k);
        }
        for (name, value) in &self.details {
            x.elem(name, value);
        }
        x.elem("RequestId", request_id);
        x.close("Error");
        x.finish()
    }
}

impl From<ObjectError> for S3Error {
    fn from(e: ObjectError) -> Self {
        use S3ErrorCode as C;
        let (code, msg): (C, &str) = match &e {
            ObjectError::BucketNotFound => (C::NoSuchBucket, "The specified bucket does not exist"),
            ObjectError::BucketExists => (
                C::BucketAlreadyOwnedByYou,
                "Your previous request to create the named bucket succeeded and you already own it.",
            ),
            ObjectError::BucketNotEmpty => (C::BucketNotEmpty, "The bucket you tried to delete is not empty"),
            ObjectError::ObjectNotFound => (C::NoSuchKey, "The specified key does not exist."),
            ObjectError::NoSuchVersion => {
                (C::NoSuchVersion, "The specified version does not exist.")
            }
            ObjectError::DeleteMarker { version_id, mod_time, current } => {
                let (code, msg) = match current {
                    true => (C::NoSuchKey, "The specified key does not exist."),
                    false => (C::MethodNotAllowed, "The specified method is not allowed against this resource."),
                };
                let mut e = S3Error::new(code, msg)
                    .with_header("x-amz-delete-marker", "true")
                    .with_header("x-amz-version-id", &crate::version::version_string(*version_id))
                    .with_header("last-modified", &crate::version::http_date(*mod_time));
                if !current {
                    e = e.with_header("allow", "DELETE");
                }
                return e;
            }
            ObjectError::BadDigest => {
                (C::BadDigest, "The Content-MD5 you specified did not match what we received.")
            }
            ObjectError::EntityTooLarge => {
                (C::EntityTooLarge, "Your proposed upload exceeds the maximum allowed object size.")
            }
            ObjectError::WriteQuorum { .. } | ObjectError::ReadQuorum { .. } => {
                (C::SlowDown, "Too few drives are online to serve this request; please retry later.")
            }
            ObjectError::StorageFull { .. } => {
                tracing::warn!(error = %e, "request failed");
                (C::XMinioStorageFull, "The drives have no room for this write: free space or add drives.")
            }
            ObjectError::Exhausted(m) => {
                tracing::warn!(error = %e, "request failed");
                return S3Error::new(C::SlowDown, &format!("Please reduce your request rate: {m}."));
            }
            ObjectError::LockNotHeld(_) => {
                (C::SlowDown, "The object is being changed by another request; please retry.")
            }
            ObjectError::ConditionConflict => (
                C::ConditionalRequestConflict,
                "A conflicting operation occurred. If using PutObject you can retry the request.",
            ),
            ObjectError::PreconditionFailed => {
                (C::PreconditionFailed, "At least one of the pre-conditions you specified did not hold")
            }
            ObjectError::NoSuchUpload => (
                C::NoSuchUpload,
                "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
            ),
            ObjectError::InvalidPart(_) => (
                C::InvalidPart,
                "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
            ),
            ObjectError::InvalidPartOrder => {
                (C::InvalidPartOrder, "The list of parts was not in ascending order. Parts must be ordered by part number.")
            }
            ObjectError::EntityTooSmall(_) => {
                (C::EntityTooSmall, "Your proposed upload is smaller than the minimum allowed object size.")
            }
            ObjectError::InvalidRequest(m) => return S3Error::new(C::InvalidRequest, m),
            ObjectError::InvalidArgument(m) => return S3Error::new(C::InvalidArgument, m),
            ObjectError::ObjectLocked(why) => {
                return S3Error::new(C::AccessDenied, &format!("Access Denied because object protected by object lock: {why}."))
            }
            ObjectError::NoObjectLockConfig => {
                (C::InvalidRequest, "Bucket is missing Object Lock Configuration")
            }
            ObjectError::InvalidBucketState(m) => return S3Error::new(C::InvalidBucketState, m),
            ObjectError::InvalidParity(_) => {
                (C::InvalidStorageClass, "The storage class you specified is not valid")
            }
            ObjectError::Body(b) => return S3Error::from(b.clone()),
            ObjectError::Erasure(_)
            | ObjectError::TaskFailed(_)
            | ObjectError::Poisoned(_)
            | ObjectError::Corrupt(_) => (C::InternalError, "We encountered an internal error. Please try again."),
            ObjectError::Raced(_) => (C::SlowDown, "The object changed while it was worked on; please try again."),
            ObjectError::Sealed(_) => {
                tracing::error!(error = %e, "an encrypted object does not open");
                (C::InternalError, "The object's encrypted data cannot be read: too many of its shards are damaged.")
            }
            ObjectError::CustomerKeyNeeded => (
                C::InvalidRequest,
                "The upload's part checksums are sealed under its customer-provided encryption key: the request must include that key (x-amz-server-side-encryption-customer-* headers).",
            ),
        };
        if matches!(code, C::InternalError | C::SlowDown) {
            tracing::warn!(error = %e, "request failed");
        }
        S3Error::new(code, msg)
    }
}

impl From<BodyError> for S3Error {
    fn from(e: BodyError) -> Self {
        use S3ErrorCode as C;
        let code = match &e {
            BodyError::Incomplete => C::IncompleteBody,
            BodyError::TooLarge => C::EntityTooLarge,
            BodyError::TooSmall => C::EntityTooSmall,
            BodyError::SignatureMismatch => C::SignatureDoesNotMatch,
            BodyError::ContentSha256Mismatch => C::XAmzContentSHA256Mismatch,
            BodyError::ChecksumMismatch(_) => C::BadDigest,
            BodyError::Malformed(_) => C::InvalidRequest,
            BodyError::Io(_) => C::IncompleteBody,
            BodyError::TimedOut | BodyError::TooSlow { .. } => {
                return S3Error::new(
                    C::RequestTimeout,
                    "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.",
                )
            }
        };
        S3Error::new(code, &e.to_string())
    }
}

impl From<NameError> for S3Error {
    fn from(e: NameError) -> Self {
        let code = match e {
            NameError::InvalidBucketName(_) => S3ErrorCode::InvalidBucketName,
            NameError::KeyTooLong => S3ErrorCode::KeyTooLongError,
            NameError::InvalidKey => S3ErrorCode::InvalidArgument,
        };
        S3Error::new(code, &e.to_string())
    }
}

/// A KMS call that failed: AWS's `KMS.*` codes for a key that is missing or disabled,
/// `503 ServiceUnavailable` while the KMS cannot be reached (a retry works once it is back), and
/// `500 InternalError` for a stored data key that does not decrypt (damaged metadata).
impl From<KmsError> for S3Error {
    fn from(e: KmsError) -> Self {
        use S3ErrorCode as C;
        let code = match &e {
            KmsError::NoSuchKey(_) => C::KmsNotFound,
            KmsError::KeyDisabled(_) => C::KmsDisabled,
            KmsError::KeyExists(_) => C::EntityAlreadyExists,
            KmsError::InvalidKeyId(_) => C::InvalidArgument,
            KmsError::Unsupported(_) => C::NotImplemented,
            KmsError::Unavailable(_) => {
                tracing::warn!(error = %e, "KMS unavailable");
                return S3Error::new(
                    C::ServiceUnavailable,
                    "The key management service is unavailable; please retry later.",
                );
            }
            KmsError::Decrypt | KmsError::Internal(_) => {
                tracing::error!(error = %e, "KMS");
                return S3Error::new(C::InternalError, "The object's encryption key cannot be decrypted.");
            }
        };
        S3Error::new(code, &e.to_string())
    }
}

/// A bucket policy that does not parse: `MalformedPolicy`, whose message says where it is wrong
/// (`Statement[0].Effect: must be "Allow" or "Deny"`).
impl From<PolicyError> for S3Error {
    fn from(e: PolicyError) -> Self {
        S3Error::new(S3ErrorCode::MalformedPolicy, &e.to_string())
    }
}

/// A refused IAM change (admin API): the IAM API's codes (`NoSuchEntity`, `EntityAlreadyExists`,
/// `DeleteConflict`, `LimitExceeded`, `MalformedPolicyDocument` as S3's `MalformedPolicy`).
impl From<IamError> for S3Error {
    fn from(e: IamError) -> Self {
        use S3ErrorCode as C;
        let code = match &e {
            IamError::InvalidName(_)
            | IamError::InvalidAccessKey
            | IamError::InvalidSecret
            | IamError::BuiltinPolicy(_)
            | IamError::ExpiryInPast => C::InvalidArgument,
            IamError::AccessKeyInUse(_) | IamError::PolicyExists(_) => C::EntityAlreadyExists,
            IamError::NoSuchUser(_)
            | IamError::NoSuchGroup(_)
            | IamError::NoSuchPolicy(_)
            | IamError::NoSuchServiceAccount(_) => C::NoSuchEntity,
            IamError::PolicyInUse(_) | IamError::GroupNotEmpty(_) => C::DeleteConflict,
            IamError::TooManyPolicies => C::LimitExceeded,
            IamError::MalformedPolicy(p) => return S3Error::from(p.clone()),
            IamError::UnsupportedVersion(_) | IamError::Inconsistent(_) => {
                tracing::error!(error = %e, "the stored IAM state is not usable");
                C::InternalError
            }
        };
        S3Error::new(code, &e.to_string())
    }
}

/// The IAM state could not be read or stored: the object layer's answer, the IAM API's code for
/// a refused change, `LimitExceeded` past its size, and `500` (logged) when it cannot be unsealed.
impl From<StoreError> for S3Error {
    fn from(e: StoreError) -> S3Error {
        match e {
            StoreError::Object(o) => o.into(),
            StoreError::Invalid(i) => i.into(),
            StoreError::TooLarge => S3Error::new(S3ErrorCode::LimitExceeded, &e.to_string()),
            StoreError::Random(r) => r.into(),
            StoreError::Unseal | StoreError::Damaged(_) => {
                tracing::error!(error = %e, "IAM state");
                S3Error::new(S3ErrorCode::InternalError, "The IAM state cannot be read.")
            }
        }
    }
}

/// No randomness for new credentials: `500`.
impl From<NoRandomness> for S3Error {
    fn from(_: NoRandomness) -> S3Error {
        S3Error::new(S3ErrorCode::InternalError, "no randomness available")
    }
}

/// An identity token refused: STS's codes.
impl From<OidcError> for S3Error {
    fn from(e: OidcError) -> S3Error {
        let code = match e {
            OidcError::Invalid(_) => S3ErrorCode::InvalidIdentityToken,
            OidcError::Expired => S3ErrorCode::ExpiredTokenException,
            OidcError::Unreachable => S3ErrorCode::IDPCommunicationError,
        };
        S3Error::new(code, &e.to_string())
    }
}

/// The S3 error for a request document that does not parse or does not fit its schema.
pub fn malformed_xml() -> S3Error {
    S3Error::new(
        S3ErrorCode::MalformedXML,
        "The XML you provided was not well-formed or did not validate against our published schema.",
    )
}

/// A request document that is not well-formed XML: `MalformedXML`.
impl From<MalformedXml> for S3Error {
    fn from(_: MalformedXml) -> S3Error {
        malformed_xml()
    }
}
