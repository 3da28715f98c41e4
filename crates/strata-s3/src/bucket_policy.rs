//! Bucket policies: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus, and the compiled
//! policies requests are evaluated against.
//!
//! A policy is kept as the document in the bucket's record (every drive, majority quorum, peers
//! told to reload, like the bucket's tags) and compiled once per node
//! ([`strata_system::bucket_policy::Cache`]).
//!
//! Public access block: `BlockPublicPolicy` refuses to put a public policy (`AccessDenied`, as S3
//! answers); `RestrictPublicBuckets` keeps a public policy from applying to anonymous callers
//! (the one account's users are still served by it, as AWS serves the bucket owner's account).

use strata_iam::{Policy, PolicyKind, BUCKET_POLICY_SIZE_MAX};
use strata_object::BodyError;
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

pub async fn put_bucket_policy(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
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

pub async fn get_bucket_policy(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let document = record.policy.ok_or_else(no_policy)?;
    let len = document.len().to_string();
    let mut reply = Reply::empty(http::StatusCode::OK)
        .header("content-type", "application/json")
        .header("content-length", &len);
    reply.body = crate::body::ResponseBody::Full(Some(bytes::Bytes::from(document)));
    Ok(reply)
}

pub async fn delete_bucket_policy(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    req.node.layer.update_bucket(bucket, |r| r.policy = None).await?;
    Ok(Reply::empty(http::StatusCode::NO_CONTENT))
}

pub async fn get_bucket_policy_status(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
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
