//! The ACL, ownership and public-access calls: Get/PutBucketAcl, Get/PutObjectAcl,
//! Get/Put/DeleteBucketOwnershipControls and the public access block.
//!
//! Ownership controls decide whether ACLs count. `BucketOwnerEnforced` (AWS's default, and
//! Strata's unless `STRATA_DEFAULT_OBJECT_OWNERSHIP` says otherwise) disables them: reading an
//! ACL shows the bucket owner's full control, and setting anything more is
//! `AccessControlListNotSupported`. `BucketOwnerPreferred`, `ObjectWriter` and no controls at
//! all keep ACLs, which [`crate::grants`] models and [`crate::access`] enforces beside the
//! policies. The public access block is kept per bucket: `BlockPublicAcls` refuses public ACLs,
//! `IgnorePublicAcls` sets their public grants aside, and the policy switches act in
//! [`crate::bucket_policy`].

use http::StatusCode;
use strata_object::{
    Acl, Grant, Grantee, Group, ObjectOwnership, Owner, Permission, PublicAccessBlock, VersionRef,
};
use strata_types::limits::{ACL_GRANTS_MAX, XML_BODY_SIZE_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::grants::{self, Named, Requested, Resolver};
use crate::router::ObjectTarget;
use crate::xml;

const PERMISSIONS: [(Permission, &str); 5] = [
    (Permission::FullControl, "FULL_CONTROL"),
    (Permission::Read, "READ"),
    (Permission::Write, "WRITE"),
    (Permission::ReadAcp, "READ_ACP"),
    (Permission::WriteAcp, "WRITE_ACP"),
];

fn permission_name(p: Permission) -> &'static str {
    PERMISSIONS.iter().find(|(q, _)| *q == p).map_or("READ", |(_, n)| n)
}

fn parse_permission(name: &str) -> Option<Permission> {
    PERMISSIONS.iter().find(|(_, n)| *n == name).map(|(p, _)| *p)
}

/// An AccessControlPolicy document showing `acl`.
fn policy_reply(acl: &Acl) -> Reply {
    let mut x = xml::Writer::new();
    x.root("AccessControlPolicy");
    xml::write_owner(&mut x, "Owner", &acl.owner);
    let mut doc = x.finish();
    doc.push_str("<AccessControlList>");
    for grant in &acl.grants {
        doc.push_str("<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ");
        match &grant.grantee {
            Grantee::User(u) => doc.push_str(&format!(
                "xsi:type=\"CanonicalUser\"><ID>{}</ID><DisplayName>{}</DisplayName>",
                xml::escape(&u.id),
                xml::escape(&u.display_name)
            )),
            Grantee::Group(g) => {
                let uri = match g {
                    Group::AllUsers => grants::ALL_USERS_URI,
                    Group::AuthenticatedUsers => grants::AUTHENTICATED_USERS_URI,
                    Group::LogDelivery => grants::LOG_DELIVERY_URI,
                };
                doc.push_str(&format!("xsi:type=\"Group\"><URI>{uri}</URI>"));
            }
        }
        doc.push_str(&format!(
            "</Grantee><Permission>{}</Permission></Grant>",
            permission_name(grant.permission)
        ));
    }
    doc.push_str("</AccessControlList></AccessControlPolicy>");
    Reply::xml(doc)
}

pub async fn get_bucket_acl(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let acl = grants::bucket_acl(req.node, &record);
    if record.object_ownership.acls_enabled() {
        Ok(policy_reply(&acl))
    } else {
        Ok(policy_reply(&grants::private(acl.owner)))
    }
}

/// GetObjectAcl: of the version `versionId` names (the current one without it).
pub async fn get_object_acl(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let record = req.node.layer.bucket_record(bucket)?;
    let info = req.node.layer.open_object_version(bucket, key, which, false).await?.info;
    let bucket_acl = grants::bucket_acl(req.node, &record);
    let reply = policy_reply(&grants::object_acl(&bucket_acl, record.object_ownership, info.acl.as_ref()));
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    Ok(reply.with_version(shown, info.version_id))
}

fn malformed_acl() -> S3Error {
    S3Error::new(
        S3ErrorCode::MalformedACLError,
        "The XML you provided was not well-formed or did not validate against our published schema",
    )
}

/// An AccessControlPolicy document as sent: its owner's id and its grants, unresolved.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyDocument {
    pub owner_id: Option<String>,
    pub grants: Vec<(Named, Permission)>,
}

/// One grant being read.
#[derive(Default)]
struct GrantFields {
    kind: Option<String>,
    id: Option<String>,
    uri: Option<String>,
    email: Option<String>,
    permission: Option<Permission>,
}

impl GrantFields {
    fn finish(&mut self) -> Result<(Named, Permission), S3Error> {
        let f = std::mem::take(self);
        let named = match f.kind.as_deref() {
            Some("CanonicalUser") => Named::Id(f.id.ok_or_else(malformed_acl)?),
            Some("Group") => Named::Uri(f.uri.ok_or_else(malformed_acl)?),
            Some("AmazonCustomerByEmail") => Named::Email(f.email.ok_or_else(malformed_acl)?),
            _ => return Err(malformed_acl()),
        };
        Ok((named, f.permission.ok_or_else(malformed_acl)?))
    }
}

/// Parses an AccessControlPolicy document; anything off the schema is `MalformedACLError`.
pub(crate) fn parse_policy_document(doc: &[u8]) -> Result<PolicyDocument, S3Error> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let (mut buf, mut path, mut text) = (Vec::new(), Vec::<String>::new(), String::new());
    let mut out = PolicyDocument::default();
    let mut grant = GrantFields::default();
    let mut seen_root = false;
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|_| malformed_acl())?;
        match &event {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if (path.is_empty() && (seen_root || name != "AccessControlPolicy")) || path.len() > 5 {
                    return Err(malformed_acl());
                }
                seen_root = true;
                if name == "Grantee" {
                    grant.kind = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == b"type")
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(e) if e.local_name().as_ref() == b"Grantee" || path.is_empty() => {
                return Err(malformed_acl())
            }
            Event::Text(_) | Event::GeneralRef(_) => {
                xml::append_text(&event, &mut text).map_err(|_| malformed_acl())?
            }
            Event::End(_) => {
                let value = || Some(text.trim().to_owned());
                match path.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                    ["AccessControlPolicy", "Owner", "ID"] => out.owner_id = value(),
                    [.., "Grant", "Grantee", "ID"] => grant.id = value(),
                    [.., "Grant", "Grantee", "URI"] => grant.uri = value(),
                    [.., "Grant", "Grantee", "EmailAddress"] => grant.email = value(),
                    [.., "Grant", "Permission"] => {
                        grant.permission = Some(parse_permission(text.trim()).ok_or_else(malformed_acl)?)
                    }
                    ["AccessControlPolicy", "AccessControlList", "Grant"] => {
                        out.grants.push(grant.finish()?);
                        if out.grants.len() > ACL_GRANTS_MAX {
                            return Err(grants::too_many_grants());
                        }
                    }
                    _ => {}
                }
                path.pop();
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !seen_root || !path.is_empty() {
        return Err(malformed_acl());
    }
    Ok(out)
}

/// The ACL a PutBucketAcl or PutObjectAcl asks for: in its headers or in an AccessControlPolicy
/// body (whose `Owner` must be the resource's `owner`), not both.
async fn requested(req: &Request<'_>, body: RequestBody, owner: &Owner) -> Result<Requested, S3Error> {
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let from_headers = grants::from_headers(req.node, req.headers)?;
    let has_body = !doc.iter().all(u8::is_ascii_whitespace);
    match (from_headers, has_body) {
        (Some(_), true) => Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Specify an ACL in the x-amz-acl or x-amz-grant-* headers or in the body, not both",
        )),
        (Some(r), false) => Ok(r),
        (None, false) => Err(malformed_acl()),
        (None, true) => {
            let document = parse_policy_document(&doc)?;
            match document.owner_id.as_deref() {
                None => return Err(malformed_acl()),
                Some(id) if id != owner.id => {
                    return Err(S3Error::new(
                        S3ErrorCode::AccessDenied,
                        "Access Denied: the ACL's Owner is not the resource's owner.",
                    ))
                }
                Some(_) => {}
            }
            let mut resolver = Resolver::new(req.node);
            let mut out = Vec::with_capacity(document.grants.len());
            for (named, permission) in &document.grants {
                out.push(Grant { grantee: resolver.resolve(named)?, permission: *permission });
            }
            Ok(Requested::Grants(out))
        }
    }
}

pub async fn put_bucket_acl(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let current = grants::bucket_acl(req.node, &record);
    let requested = requested(req, body, &current.owner).await?;
    if !record.object_ownership.acls_enabled() {
        return match requested.owner_full_control_only(&current.owner) {
            true => Ok(Reply::empty(StatusCode::OK)),
            false => Err(grants::acls_disabled()),
        };
    }
    let acl = requested.expand(&current.owner, &current.owner, true);
    grants::check_public(&record, &acl)?;
    req.node.layer.update_bucket(bucket, |r| r.acl = Some(acl)).await?;
    Ok(Reply::empty(StatusCode::OK))
}

/// PutObjectAcl: of the version `versionId` names (the current one without it).
pub async fn put_object_acl(
    req: &Request<'_>,
    target: &ObjectTarget,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let record = req.node.layer.bucket_record(bucket)?;
    let info = req.node.layer.open_object_version(bucket, key, which, false).await?.info;
    let bucket_acl = grants::bucket_acl(req.node, &record);
    let current = grants::object_acl(&bucket_acl, record.object_ownership, info.acl.as_ref());
    let requested = requested(req, body, &current.owner).await?;
    if !record.object_ownership.acls_enabled() {
        return match requested.owner_full_control_only(&bucket_acl.owner) {
            true => Ok(Reply::empty(StatusCode::OK)),
            false => Err(grants::acls_disabled()),
        };
    }
    let acl = requested.expand(&current.owner, &bucket_acl.owner, false);
    grants::check_public(&record, &acl)?;
    let id = req.node.layer.put_object_acl_version(bucket, key, which, acl).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    Ok(Reply::empty(StatusCode::OK).with_version(shown, id))
}

pub async fn get_bucket_ownership_controls(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let ownership = req.node.layer.bucket_record(bucket)?.object_ownership;
    let name =
        grants::OWNERSHIPS.iter().find(|(o, _)| *o == ownership).map(|(_, n)| *n).ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::OwnershipControlsNotFoundError,
                "The bucket ownership controls were not found",
            )
        })?;
    let mut x = xml::Writer::new();
    x.root("OwnershipControls");
    x.open("Rule");
    x.elem("ObjectOwnership", name);
    x.close("Rule");
    x.close("OwnershipControls");
    Ok(Reply::xml(x.finish()))
}

pub async fn put_bucket_ownership_controls(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await?;
    let value = xml::first_text(&doc, "ObjectOwnership").map_err(|_| crate::error::malformed_xml())?;
    let ownership =
        value.as_deref().and_then(grants::parse_ownership).ok_or_else(crate::error::malformed_xml)?;
    if ownership == ObjectOwnership::BucketOwnerEnforced {
        // Disabling ACLs must not silently take away what the bucket's ACL grants others.
        let acl = grants::bucket_acl(req.node, &record);
        if !Requested::Grants(acl.grants).owner_full_control_only(&acl.owner) {
            return Err(grants::acl_with_enforced());
        }
    }
    req.node.layer.update_bucket(bucket, |r| r.object_ownership = ownership).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_bucket_ownership_controls(
    req: &Request<'_>,
    bucket: &BucketName,
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    req.node.layer.update_bucket(bucket, |r| r.object_ownership = ObjectOwnership::NotSet).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

const PUBLIC_ACCESS_FIELDS: [&str; 4] =
    ["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"];

fn no_public_access_block() -> S3Error {
    S3Error::new(
        S3ErrorCode::NoSuchPublicAccessBlockConfiguration,
        "The public access block configuration was not found",
    )
}

pub async fn get_public_access_block(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
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
    if xml::first_text(doc, "PublicAccessBlockConfiguration")
        .map_err(|_| crate::error::malformed_xml())?
        .is_none()
    {
        return Err(crate::error::malformed_xml());
    }
    let mut values = [false; 4];
    for (name, value) in PUBLIC_ACCESS_FIELDS.iter().zip(values.iter_mut()) {
        *value = match xml::first_text(doc, name)
            .map_err(|_| crate::error::malformed_xml())?
            .as_deref()
            .map(str::trim)
        {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(crate::error::malformed_xml()),
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
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    let block = parse_public_access_block(&doc)?;
    req.node.layer.update_bucket(bucket, |r| r.public_access_block = Some(block)).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_public_access_block(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.public_access_block = None).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    const XSI: &str = "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"";

    fn document(grants: &str) -> String {
        format!(
            "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>abc</ID><DisplayName>alice</DisplayName></Owner><AccessControlList>{grants}</AccessControlList></AccessControlPolicy>"
        )
    }

    fn grant(kind: &str, inner: &str, permission: &str) -> String {
        format!("<Grant><Grantee {XSI} xsi:type=\"{kind}\">{inner}</Grantee><Permission>{permission}</Permission></Grant>")
    }

    #[test]
    fn access_control_policies_parse() {
        let doc = document(&format!(
            "{}{}{}",
            grant("CanonicalUser", "<ID> abc </ID><DisplayName>alice</DisplayName>", "FULL_CONTROL"),
            grant("Group", &format!("<URI>{}</URI>", grants::ALL_USERS_URI), "READ"),
            grant("AmazonCustomerByEmail", "<EmailAddress>a@b</EmailAddress>", "WRITE_ACP"),
        ));
        let parsed = parse_policy_document(doc.as_bytes()).expect("parses");
        assert_eq!(parsed.owner_id.as_deref(), Some("abc"));
        assert_eq!(
            parsed.grants,
            vec![
                (Named::Id("abc".into()), Permission::FullControl),
                (Named::Uri(grants::ALL_USERS_URI.into()), Permission::Read),
                (Named::Email("a@b".into()), Permission::WriteAcp),
            ]
        );
        let empty = parse_policy_document(document("").as_bytes()).expect("parses");
        assert!(empty.grants.is_empty());
    }

    #[test]
    fn malformed_access_control_policies_are_refused() {
        let code = |doc: &str| parse_policy_document(doc.as_bytes()).map(|_| ()).map_err(|e| e.code);
        let many = grant("Group", &format!("<URI>{}</URI>", grants::ALL_USERS_URI), "READ").repeat(101);
        let hundred = grant("Group", &format!("<URI>{}</URI>", grants::ALL_USERS_URI), "READ").repeat(100);
        assert_eq!(code(&document(&hundred)), Ok(()));
        for bad in [
            document(&many),
            document(&grant("Martian", "<ID>abc</ID>", "READ")),
            document(&grant("CanonicalUser", "<URI>x</URI>", "READ")),
            document(&grant("CanonicalUser", "<ID>abc</ID>", "EVERYTHING")),
            document("<Grant><Grantee><ID>abc</ID></Grantee><Permission>READ</Permission></Grant>"),
            document(&format!(
                "<Grant><Grantee {XSI} xsi:type=\"Group\"/><Permission>READ</Permission></Grant>"
            )),
            document("<Grant><Permission>READ</Permission>"),
            "<Other/>".to_owned(),
            "<AccessControlPolicy/>".to_owned(),
            "<AccessControlPolicy></AccessControlPolicy><AccessControlPolicy></AccessControlPolicy>"
                .to_owned(),
            "not xml at all".to_owned(),
            String::new(),
        ] {
            assert_eq!(code(&bad), Err(S3ErrorCode::MalformedACLError), "{bad}");
        }
    }

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
