//! The ACL and ownership calls SDKs send routinely. Strata enforces bucket-owner ownership: every
//! object belongs to the deployment's owner and ACLs grant nothing beyond it, so the only ACL is
//! `private` (owner FULL_CONTROL). Setting `private` succeeds; any other grant is refused as AWS
//! refuses it with ownership enforced.

use http::StatusCode;
use strata_types::ObjectKey;

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
