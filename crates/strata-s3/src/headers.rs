//! THE decision for every `x-amz-*` request header (and POST form field) an operation takes:
//! served, ignored because it asks for no guarantee, or refused with AWS's error. Strata never
//! accepts a header that asks for a guarantee (encryption, object lock, retention, ...) and then
//! drops it: a client would believe its data is protected when it is not.
//!
//! [`RULES`] is the one table. [`check`] runs it over a request's headers after authentication
//! and before any handler (the POST form's fields run through it too, so a browser form cannot
//! ask for what a header may not), so a refused request changes nothing. The first rule naming
//! the header and the operation decides; a header no rule names for an operation is not one that
//! operation takes, and AWS ignores those too.
//!
//! To serve a header (versioning and object lock in #13): change its rows to
//! [`Outcome::Supported`] and make the handler read it. `docs/s3-compat.md` lists every row, and
//! the tests below fail when a header literal in this crate has no row or a row is not listed.

use crate::error::{S3Error, S3ErrorCode};
use crate::Operation;

/// What Strata does with a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A handler reads it and gives what it asks.
    Supported,
    /// Accepted and not acted on: it asks for no guarantee Strata does not give (the reason is
    /// in `docs/s3-compat.md`).
    Ignored,
    /// Refused with this error, before anything is stored.
    Refused(S3ErrorCode, &'static str),
}

/// One decision: `header` (lower case; a trailing `*` matches a prefix) on `operations` (empty:
/// every operation).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub header: &'static str,
    pub operations: &'static [Operation],
    pub outcome: Outcome,
}

use Operation as O;

const ANY: &[Operation] = &[];
/// Operations that create an object and so take its properties (encryption, lock, ACL, ...).
const NEW_OBJECT: &[Operation] = &[O::PutObject, O::CopyObject, O::CreateMultipartUpload, O::PostObject];
/// Operations that create an object S3 can encrypt (POST forms are not read for it yet).
const ENCRYPTABLE: &[Operation] = &[O::PutObject, O::CopyObject, O::CreateMultipartUpload, O::PostObject];
/// Operations that read or add data of an existing object or upload, with its SSE-C key.
const READS_WITH_KEY: &[Operation] = &[O::UploadPart, O::UploadPartCopy, O::GetObject, O::HeadObject];
/// Operations on an existing object or upload that touch no data.
const NO_DATA: &[Operation] = &[O::CompleteMultipartUpload, O::GetObjectAttributes];
const COPY: &[Operation] = &[O::CopyObject, O::UploadPartCopy];
/// Operations that take an ACL: set one, or give one to what they create.
const TAKE_ACL: &[Operation] = &[
    O::PutBucketAcl,
    O::PutObjectAcl,
    O::PutObject,
    O::CopyObject,
    O::CreateMultipartUpload,
    O::PostObject,
    O::CreateBucket,
];
const WITH_TAGS: &[Operation] = &[O::PutObject, O::CopyObject, O::CreateMultipartUpload];
const LISTS: &[Operation] = &[O::ListObjects, O::ListObjectsV2, O::ListObjectVersions];
const DELETES: &[Operation] = &[O::DeleteObject, O::DeleteObjects];

const fn rule(header: &'static str, operations: &'static [Operation], outcome: Outcome) -> Rule {
    Rule { header, operations, outcome }
}

const SUPPORTED: Outcome = Outcome::Supported;
const IGNORED: Outcome = Outcome::Ignored;
/// POST forms do not carry object lock settings (the bucket's default retention applies): `400
/// InvalidRequest`, which is also AWS's answer on a bucket without object lock.
const NO_LOCK_FORM: Outcome = Outcome::Refused(
    S3ErrorCode::InvalidRequest,
    "Object lock fields in a POST form are not supported; use PutObject, or the bucket's default retention.",
);
/// Writes that take object lock settings (refused by the handler on a bucket without object
/// lock, as AWS: `400 InvalidRequest`).
const LOCKED_WRITES: &[Operation] = &[O::PutObject, O::CopyObject, O::CreateMultipartUpload];
const BYPASS: &[Operation] = &[O::DeleteObject, O::DeleteObjects, O::PutObjectRetention];
const GRANTS: [&str; 5] = [
    "x-amz-grant-full-control",
    "x-amz-grant-read",
    "x-amz-grant-read-acp",
    "x-amz-grant-write",
    "x-amz-grant-write-acp",
];

/// The grant headers: served wherever an ACL is (whether the bucket's ownership controls let
/// ACLs count is the handler's call: `AccessControlListNotSupported` or
/// `InvalidBucketAclWithObjectOwnership` when they do not).
const GRANT_RULES: [Rule; 5] = [
    rule(GRANTS[0], TAKE_ACL, SUPPORTED),
    rule(GRANTS[1], TAKE_ACL, SUPPORTED),
    rule(GRANTS[2], TAKE_ACL, SUPPORTED),
    rule(GRANTS[3], TAKE_ACL, SUPPORTED),
    rule(GRANTS[4], TAKE_ACL, SUPPORTED),
];

/// Every decision. Keep the order: the first row naming a header and an operation decides.
pub const RULES: &[Rule] = &[
    // Signing and transport.
    rule("x-amz-date", ANY, SUPPORTED),
    rule("x-amz-content-sha256", ANY, SUPPORTED),
    rule("x-amz-decoded-content-length", ANY, SUPPORTED),
    rule("x-amz-trailer", ANY, SUPPORTED),
    rule("x-amz-sdk-checksum-algorithm", ANY, SUPPORTED),
    rule("x-amz-algorithm", &[O::PostObject], SUPPORTED),
    rule("x-amz-credential", &[O::PostObject], SUPPORTED),
    rule("x-amz-signature", &[O::PostObject], SUPPORTED),
    rule("x-amz-security-token", ANY, IGNORED),
    rule("x-amz-user-agent", ANY, IGNORED),
    rule("x-amz-expected-bucket-owner", ANY, IGNORED),
    rule("x-amz-source-expected-bucket-owner", COPY, IGNORED),
    rule("x-amz-request-payer", ANY, IGNORED),
    // Checksums: CopyObject would have to compute a new one, which it does not yet.
    rule(
        "x-amz-checksum-algorithm",
        &[O::CopyObject],
        Outcome::Refused(
            S3ErrorCode::NotImplemented,
            "CopyObject does not compute a new checksum yet; copy without x-amz-checksum-algorithm.",
        ),
    ),
    rule("x-amz-checksum-*", ANY, SUPPORTED),
    rule(
        "x-amz-mp-object-size",
        &[O::CompleteMultipartUpload],
        Outcome::Refused(
            S3ErrorCode::NotImplemented,
            "x-amz-mp-object-size is not checked yet, so it is refused rather than ignored.",
        ),
    ),
    // Object properties.
    rule("x-amz-meta-*", NEW_OBJECT, SUPPORTED),
    rule("x-amz-storage-class", NEW_OBJECT, SUPPORTED),
    rule("x-amz-tagging", WITH_TAGS, SUPPORTED),
    rule("x-amz-tagging-directive", &[O::CopyObject], SUPPORTED),
    rule("x-amz-metadata-directive", &[O::CopyObject], SUPPORTED),
    rule(
        "x-amz-website-redirect-location",
        NEW_OBJECT,
        Outcome::Refused(
            S3ErrorCode::NotImplemented,
            "Website redirects are not implemented; the redirect would be lost.",
        ),
    ),
    rule(
        "x-amz-write-offset-bytes",
        &[O::PutObject],
        Outcome::Refused(S3ErrorCode::NotImplemented, "Appending to an object is not implemented."),
    ),
    // Copy source.
    rule("x-amz-copy-source", COPY, SUPPORTED),
    rule("x-amz-copy-source-if-match", COPY, SUPPORTED),
    rule("x-amz-copy-source-if-none-match", COPY, SUPPORTED),
    rule("x-amz-copy-source-if-modified-since", COPY, SUPPORTED),
    rule("x-amz-copy-source-if-unmodified-since", COPY, SUPPORTED),
    rule("x-amz-copy-source-range", &[O::UploadPartCopy], SUPPORTED),
    // Reads.
    rule("x-amz-checksum-mode", &[O::GetObject, O::HeadObject], SUPPORTED),
    rule("x-amz-object-attributes", &[O::GetObjectAttributes], SUPPORTED),
    rule("x-amz-max-parts", &[O::GetObjectAttributes], SUPPORTED),
    rule("x-amz-part-number-marker", &[O::GetObjectAttributes], SUPPORTED),
    rule("x-amz-optional-object-attributes", LISTS, IGNORED),
    // Server-side encryption: SSE-S3, SSE-KMS, SSE-C (see `crate::sse`); a browser form's
    // fields of the same names count as these headers.
    rule("x-amz-server-side-encryption", ENCRYPTABLE, SUPPORTED),
    rule("x-amz-server-side-encryption-aws-kms-key-id", ENCRYPTABLE, SUPPORTED),
    rule("x-amz-server-side-encryption-context", ENCRYPTABLE, SUPPORTED),
    // S3 Bucket Keys cut KMS calls; every key still comes from the KMS: no guarantee is lost.
    rule("x-amz-server-side-encryption-bucket-key-enabled", ENCRYPTABLE, IGNORED),
    rule("x-amz-server-side-encryption-customer-algorithm", ENCRYPTABLE, SUPPORTED),
    rule("x-amz-server-side-encryption-customer-key", ENCRYPTABLE, SUPPORTED),
    rule("x-amz-server-side-encryption-customer-key-md5", ENCRYPTABLE, SUPPORTED),
    // The key of an existing SSE-C object or upload: checked against its stored MAC.
    rule("x-amz-server-side-encryption-customer-algorithm", READS_WITH_KEY, SUPPORTED),
    rule("x-amz-server-side-encryption-customer-key", READS_WITH_KEY, SUPPORTED),
    rule("x-amz-server-side-encryption-customer-key-md5", READS_WITH_KEY, SUPPORTED),
    // Complete and GetObjectAttributes read no object data: the key is not needed.
    rule("x-amz-server-side-encryption-customer-algorithm", NO_DATA, IGNORED),
    rule("x-amz-server-side-encryption-customer-key", NO_DATA, IGNORED),
    rule("x-amz-server-side-encryption-customer-key-md5", NO_DATA, IGNORED),
    rule("x-amz-copy-source-server-side-encryption-customer-algorithm", COPY, SUPPORTED),
    rule("x-amz-copy-source-server-side-encryption-customer-key", COPY, SUPPORTED),
    rule("x-amz-copy-source-server-side-encryption-customer-key-md5", COPY, SUPPORTED),
    // Object lock, retention and legal hold (issue #13).
    rule("x-amz-bucket-object-lock-enabled", &[O::CreateBucket], SUPPORTED),
    rule("x-amz-object-lock-mode", LOCKED_WRITES, SUPPORTED),
    rule("x-amz-object-lock-retain-until-date", LOCKED_WRITES, SUPPORTED),
    rule("x-amz-object-lock-legal-hold", LOCKED_WRITES, SUPPORTED),
    rule("x-amz-object-lock-mode", &[O::PostObject], NO_LOCK_FORM),
    rule("x-amz-object-lock-retain-until-date", &[O::PostObject], NO_LOCK_FORM),
    rule("x-amz-object-lock-legal-hold", &[O::PostObject], NO_LOCK_FORM),
    rule("x-amz-bypass-governance-retention", BYPASS, SUPPORTED),
    rule("x-amz-mfa", DELETES, IGNORED),
    // Conditional deletes: `If-Match` as general purpose buckets take it; the directory
    // buckets' size and time conditions are not.
    rule(
        "x-amz-if-match-last-modified-time",
        &[O::DeleteObject],
        Outcome::Refused(S3ErrorCode::NotImplemented, "Conditional deletes are not implemented."),
    ),
    rule(
        "x-amz-if-match-size",
        &[O::DeleteObject],
        Outcome::Refused(S3ErrorCode::NotImplemented, "Conditional deletes are not implemented."),
    ),
    rule("if-match", &[O::DeleteObject], SUPPORTED),
    // ACLs and ownership controls: the handlers decide by the bucket's ownership controls.
    rule("x-amz-acl", TAKE_ACL, SUPPORTED),
    rule("x-amz-object-ownership", &[O::CreateBucket], SUPPORTED),
];

/// The first rule for `header` (lower case) on `operation`, if the operation takes it.
pub fn decide(operation: Operation, header: &str) -> Option<&'static Rule> {
    let grants = GRANT_RULES.iter();
    RULES.iter().chain(grants).find(|r| {
        let named = match r.header.strip_suffix('*') {
            Some(prefix) => header.starts_with(prefix),
            None => header == r.header,
        };
        named && (r.operations.is_empty() || r.operations.contains(&operation))
    })
}

/// Refuses the request when one of its headers (or form fields) asks for what Strata does not
/// give. Names are matched case-insensitively.
pub fn check<'a>(
    operation: Operation,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<(), S3Error> {
    for (name, _) in headers {
        // HTTP header names arrive lower case; form field names may not.
        let name: std::borrow::Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            name.to_ascii_lowercase().into()
        } else {
            name.into()
        };
        let Some(rule) = decide(operation, &name) else { continue };
        let Outcome::Refused(code, message) = rule.outcome else { continue };
        return Err(S3Error::new(code, message).with_detail("ArgumentName", &name));
    }
    Ok(())
}

/// [`check`] over an HTTP request's headers.
pub fn check_headers(operation: Operation, headers: &http::HeaderMap) -> Result<(), S3Error> {
    check(operation, headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers Strata only sends, and names that are not request headers.
    const NOT_REQUEST_HEADERS: &[&str] = &[
        "x-amz-request-id",
        "x-amz-bucket-region",
        "x-amz-mp-parts-count",
        "x-amz-tagging-count",
        "x-amz-trailer-signature",
        "x-amz-version-id",
        "x-amz-delete-marker",
        "x-amz-copy-source-version-id",
        "x-amz-expiration",
        "x-amz-replication-status",
        // Prefixes `crate::sse` builds the SSE-C header names from (each name has its row).
        "x-amz-server-side-encryption-customer-",
        "x-amz-copy-source-server-side-encryption-customer-",
    ];

    fn literals(source: &str) -> Vec<String> {
        source
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|s| s.starts_with("x-amz-") && s.len() > "x-amz-".len())
            .filter(|s| s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
            .map(str::to_owned)
            .collect()
    }

    /// Every source file of this crate, read at test time so a new file is covered too: a
    /// header literal in any of them must have a decision.
    #[test]
    fn every_header_the_crate_reads_has_a_decision() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("entry").path();
            let source = std::fs::read_to_string(&path).expect("source is readable");
            files += 1;
            for name in literals(&source) {
                if NOT_REQUEST_HEADERS.contains(&name.as_str()) {
                    continue;
                }
                let decided =
                    RULES.iter().chain(GRANT_RULES.iter()).any(|r| match r.header.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => name == r.header,
                    });
                assert!(decided, "{} reads {name}, which has no row in headers::RULES", path.display());
            }
        }
        assert!(files > 20, "read only {files} files");
    }

    #[test]
    fn every_row_is_in_the_compat_doc() {
        let doc = include_str!("../../../docs/s3-compat.md");
        for r in RULES.iter().chain(GRANT_RULES.iter()) {
            let shown = format!("`{}`", r.header);
            assert!(doc.contains(&shown), "docs/s3-compat.md does not list {shown}");
        }
    }

    fn outcome(op: Operation, name: &str, value: &str) -> Result<(), S3ErrorCode> {
        check(op, [(name, value.as_bytes())]).map_err(|e| e.code)
    }

    #[test]
    fn guarantees_are_refused() {
        use S3ErrorCode as C;
        for op in NEW_OBJECT {
            // Encryption is served, POST forms included (the handlers check the values).
            assert_eq!(outcome(*op, "x-amz-server-side-encryption", "AES256"), Ok(()));
            assert_eq!(outcome(*op, "x-amz-server-side-encryption-customer-key", "k"), Ok(()));
            // Whether the bucket takes ACLs is the handler's call.
            assert_eq!(outcome(*op, "x-amz-acl", "public-read"), Ok(()));
            assert_eq!(outcome(*op, "x-amz-acl", "bucket-owner-full-control"), Ok(()));
            assert_eq!(outcome(*op, "x-amz-meta-a", "b"), Ok(()));
        }
        let lock = "x-amz-bucket-object-lock-enabled";
        assert_eq!(outcome(O::CreateBucket, lock, "true"), Ok(()));
        assert_eq!(outcome(O::CreateBucket, lock, "False"), Ok(()));
        assert_eq!(outcome(O::PutObject, "X-Amz-Object-Lock-Mode", "COMPLIANCE"), Ok(()));
        assert_eq!(outcome(O::PostObject, "x-amz-object-lock-legal-hold", "ON"), Err(C::InvalidRequest));
        assert_eq!(outcome(O::CreateBucket, "x-amz-grant-read", "id=x"), Ok(()));
        assert_eq!(outcome(O::CreateBucket, "x-amz-object-ownership", "ObjectWriter"), Ok(()));
        assert_eq!(outcome(O::GetObject, "x-amz-server-side-encryption-customer-key", "k"), Ok(()));
        assert_eq!(
            outcome(O::UploadPartCopy, "x-amz-copy-source-server-side-encryption-customer-key", "k"),
            Ok(())
        );
        // A header an operation does not take is ignored, as AWS ignores it.
        assert_eq!(outcome(O::ListBuckets, "x-amz-server-side-encryption", "AES256"), Ok(()));
        assert_eq!(outcome(O::PutObject, "x-amz-checksum-crc32", "AAAAAA=="), Ok(()));
        let e = check(O::PostObject, [("x-amz-object-lock-legal-hold", b"ON".as_slice())]).err();
        assert_eq!(
            e.map(|e| e.details),
            Some(vec![("ArgumentName", "x-amz-object-lock-legal-hold".to_owned())])
        );
    }

    #[test]
    fn every_refusal_has_an_s3_status_of_4xx_or_501() {
        for r in RULES.iter().chain(GRANT_RULES.iter()) {
            if let Outcome::Refused(code, _) = r.outcome {
                let s = code.status().as_u16();
                assert!(s == 400 || s == 501, "{} refused with {s}", r.header);
            }
        }
    }
}
