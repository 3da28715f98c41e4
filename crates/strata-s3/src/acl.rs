//! The ACL, ownership and public-access calls SDKs send routinely. Strata enforces bucket-owner
//! ownership: every object belongs to the deployment's owner and ACLs grant nothing beyond it, so
//! the only ACL is `private` (owner FULL_CONTROL). Setting `private` succeeds; any other grant is
//! refused as AWS refuses it with ownership enforced. Ownership controls can be set only to what
//! is enforced. A public access block is kept per bucket and shown back; nothing in Strata grants
//! anonymous access yet, so it has nothing more to block until bucket policies arrive.

use http::StatusCode;
use strata_object::PublicAccessBlock;
use strata_types::limits::XML_BODY_SIZE_MAX;
use strata_types::ObjectKey;

use crate::body::RequestBody;
use crate::bucket::owner_as;
use crate::error::{S3Error, S3ErrorCode};
use crate::server::{Reply, Request};
use crate::xml;

fn policy(req: &Request<'_>) -> Reply {
    let mut x = xml::Writer::new();
    x.root("AccessControlPolicy");
    owner_as(&mut x, req, "Owner");
    x.open("AccessControlList");
    x.open("Grant");
    let mut grantee = String::from(
        "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">",
    );
    grantee.push_str(&format!(
        "<ID>{}</ID><DisplayName>{}</DisplayName></Grantee>",
        xml::escape(&req.node.config.owner_id),
        xml::escape(&req.node.config.root_user)
    ));
    let mut doc = x.finish();
    doc.push_str(&grantee);
    doc.push_str("<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>");
    Reply::xml(doc)
}

pub async fn get_bucket_acl(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    Ok(policy(req))
}

pub async fn get_object_acl(req: &Request<'_>, bucket: &str, key: &str) -> Result<Reply, S3Error> {
    ObjectKey::parse(key)?;
    req.node.layer.open_object(bucket, key, false).await?;
    Ok(policy(req))
}

/// Accepts the canned `private` ACL (what ownership enforcement means anyway); refuses the rest.
fn check_canned(req: &Request<'_>) -> Result<(), S3Error> {
    let grants = [
        "x-amz-grant-read",
        "x-amz-grant-write",
        "x-amz-grant-read-acp",
        "x-amz-grant-write-acp",
        "x-amz-grant-full-control",
    ];
    let canned = req.headers.get("x-amz-acl").and_then(|v| v.to_str().ok());
    if grants.iter().any(|g| req.headers.contains_key(*g)) || canned.is_some_and(|c| c != "private") {
        return Err(S3Error::new(
            S3ErrorCode::AccessControlListNotSupported,
            "The bucket does not allow ACLs",
        ));
    }
    Ok(())
}

pub async fn put_bucket_acl(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    check_canned(req)?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn put_object_acl(req: &Request<'_>, bucket: &str, key: &str) -> Result<Reply, S3Error> {
    ObjectKey::parse(key)?;
    req.node.layer.open_object(bucket, key, false).await?;
    check_canned(req)?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn get_bucket_ownership_controls(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let mut x = xml::Writer::new();
    x.root("OwnershipControls");
    x.open("Rule");
    x.elem("ObjectOwnership", "BucketOwnerEnforced");
    x.close("Rule");
    x.close("OwnershipControls");
    Ok(Reply::xml(x.finish()))
}

pub async fn put_bucket_ownership_controls(
    req: &Request<'_>,
    bucket: &str,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    match xml::first_text(&doc, "ObjectOwnership").map_err(|_| xml::malformed())?.as_deref() {
        Some("BucketOwnerEnforced") => Ok(Reply::empty(StatusCode::OK)),
        Some("BucketOwnerPreferred" | "ObjectWriter") => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Only BucketOwnerEnforced object ownership is supported: objects always belong to the bucket owner",
        )),
        _ => Err(xml::malformed()),
    }
}

const PUBLIC_ACCESS_FIELDS: [&str; 4] =
    ["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"];

fn no_public_access_block() -> S3Error {
    S3Error::new(
        S3ErrorCode::NoSuchPublicAccessBlockConfiguration,
        "The public access block configuration was not found",
    )
}

pub async fn get_public_access_block(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    let block =
        req.node.layer.bucket_record(bucket)?.public_access_block.ok_or_else(no_public_access_block)?;
    let values = [
        block.block_public_acls,
        block.ignore_public_acls,
        block.block_public_policy,
        block.restrict_public_buckets,
    ];
    let mut x = xml::Writer::new();
    x.root("PublicAccessBlockConfiguration");
    for (name, on) in PUBLIC_ACCESS_FIELDS.iter().zip(values) {
        x.elem(name, if on { "true" } else { "false" });
    }
    x.close("PublicAccessBlockConfiguration");
    Ok(Reply::xml(x.finish()))
}

/// Parses a PublicAccessBlockConfiguration document (absent switches are false).
pub(crate) fn parse_public_access_block(doc: &[u8]) -> Result<PublicAccessBlock, S3Error> {
    if xml::first_text(doc, "PublicAccessBlockConfiguration").map_err(|_| xml::malformed())?.is_none() {
        return Err(xml::malformed());
    }
    let mut values = [false; 4];
    for (name, value) in PUBLIC_ACCESS_FIELDS.iter().zip(values.iter_mut()) {
        *value = match xml::first_text(doc, name).map_err(|_| xml::malformed())?.as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(xml::malformed()),
        };
    }
    let [block_public_acls, ignore_public_acls, block_public_policy, restrict_public_buckets] = values;
    Ok(PublicAccessBlock {
        block_public_acls,
        ignore_public_acls,
        block_public_policy,
        restrict_public_buckets,
    })
}

pub async fn put_public_access_block(
    req: &Request<'_>,
    bucket: &str,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let block = parse_public_access_block(&doc)?;
    req.node.layer.update_bucket(bucket, |r| r.public_access_block = Some(block)).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_public_access_block(req: &Request<'_>, bucket: &str) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.public_access_block = None).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_access_block_documents() {
        let doc = br#"<PublicAccessBlockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><BlockPublicAcls>true</BlockPublicAcls><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>"#;
        assert_eq!(
            parse_public_access_block(doc).expect("parses"),
            PublicAccessBlock {
                block_public_acls: true,
                restrict_public_buckets: true,
                ..Default::default()
            }
        );
        for bad in [
            &b"<Other/>"[..],
            b"<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls></PublicAccessBlockConfiguration>",
            b"<PublicAccessBlockConfiguration><x>",
        ] {
            assert!(parse_public_access_block(bad).is_err());
        }
    }
}
