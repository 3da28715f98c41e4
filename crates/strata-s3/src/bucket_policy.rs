//! Bucket policies: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus, and the compiled
//! policies requests are evaluated against.
//!
//! A policy is kept as the document in the bucket's record (every drive, majority quorum, peers
//! told to reload, like the bucket's tags) and compiled once per node: [`Cache`] holds each
//! bucket's compiled policy beside the document it came from, and compiles again only when the
//! record's document differs (after a put, a delete, or a peer's change).
//!
//! Public access block: `BlockPublicPolicy` refuses to put a public policy (`AccessDenied`, as S3
//! answers); `RestrictPublicBuckets` keeps a public policy from applying to anonymous callers
//! (the one account's users are still served by it, as AWS serves the bucket owner's account).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use strata_iam::{Policy, PolicyKind, BUCKET_POLICY_SIZE_MAX};
use strata_object::BodyError;

use crate::access::{Access, Identity};
use crate::body::RequestBody;
use crate::context::{Node, Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

/// A bucket's policy, compiled.
struct Compiled {
    document: String,
    policy: Arc<Policy>,
    public: bool,
}

/// Compiled bucket policies by bucket name.
#[derive(Default)]
pub struct Cache {
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bucket_policy::Cache(..)")
    }
}

impl Cache {
    /// The policy of `bucket` that applies to `access`: none when the bucket has none, or when
    /// `RestrictPublicBuckets` sets aside its public policy for an anonymous caller.
    pub fn policy_for(&self, node: &Node, bucket: &str, access: &Access) -> Option<Arc<Policy>> {
        let looked = node.layer.with_bucket_record(bucket, |record| {
            let document = record.policy.as_deref()?;
            let restrict = record.public_access_block.is_some_and(|b| b.restrict_public_buckets);
            Some((self.compiled(bucket, document), restrict))
        });
        let (compiled, restrict) = looked.ok().flatten()?;
        let compiled = compiled?;
        if restrict && compiled.public && access.identity == Identity::Anonymous {
            return None;
        }
        Some(compiled.policy.clone())
    }

    /// The compiled form of `document`, from the cache when it is the one cached.
    fn compiled(&self, bucket: &str, document: &str) -> Option<Arc<Compiled>> {
        let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(bucket).filter(|c| c.document == document) {
            return Some(c.clone());
        }
        // A stored document was checked when put; one that no longer parses grants nothing.
        let policy = match Policy::parse(document.as_bytes(), PolicyKind::Bucket(bucket)) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(bucket, error = %e, "the stored bucket policy does not parse; ignored");
                return None;
            }
        };
        let public = policy.is_public();
        let c = Arc::new(Compiled { document: document.to_owned(), policy: Arc::new(policy), public });
        cache.insert(bucket.to_owned(), c.clone());
        Some(c)
    }
}

pub async fn put_bucket_policy(req: &Request<'_>, bucket: &str, body: RequestBody) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    // One byte past the limit is enough to refuse with the policy's own size message.
    let document = body.collect_small(BUCKET_POLICY_SIZE_MAX + 1).await.map_err(|e| match e {
        BodyError::TooLarge => S3Error::new(S3ErrorCode::MalformedPolicy, "Policies must be less than 20 KB"),
        e => S3Error::from(e),
    })?;
    let policy = Policy::parse(&document, PolicyKind::Bucket(bucket))?;
    let block = record.public_access_block.is_some_and(|b| b.block_public_policy);
    if block && policy.is_public() {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Access Denied: the bucket's public access block (BlockPublicPolicy) refuses public policies.",
        ));
    }
    let document = String::from_utf8(document)
        .map_err(|_| S3Error::new(S3ErrorCode::MalformedPolicy, "The policy is not UTF-8"))?;
    req.node.layer.update_bucket(bucket, |r| r.policy = Some(document)).await?;
    Ok(Reply::empty(http::StatusCode::NO_CONTENT))
}

pub async fn get_bucket_policy(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let document = record.policy.ok_or_else(no_policy)?;
    let len = document.len().to_string();
    let mut reply = Reply::empty(http::StatusCode::OK)
        .header("content-type", "application/json")
        .header("content-length", &len);
    reply.body = crate::body::ResponseBody::Full(Some(bytes::Bytes::from(document)));
    Ok(reply)
}

pub async fn delete_bucket_policy(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    req.node.layer.update_bucket(bucket, |r| r.policy = None).await?;
    Ok(Reply::empty(http::StatusCode::NO_CONTENT))
}

pub async fn get_bucket_policy_status(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let document = record.policy.ok_or_else(no_policy)?;
    let public = Policy::parse(document.as_bytes(), PolicyKind::Bucket(bucket)).is_ok_and(|p| p.is_public());
    let mut x = xml::Writer::new();
    x.root("PolicyStatus");
    x.elem("IsPublic", if public { "true" } else { "false" });
    x.close("PolicyStatus");
    Ok(Reply::xml(x.finish()))
}

fn no_policy() -> S3Error {
    S3Error::new(S3ErrorCode::NoSuchBucketPolicy, "The bucket policy does not exist")
}
