//! Access control lists: who owns a bucket or object, what its ACL grants, and how a request's
//! ACL (canned `x-amz-acl`, `x-amz-grant-*` headers, or an AccessControlPolicy document) becomes
//! the [`Acl`] stored in the bucket's or object's record.
//!
//! - Canonical ids: the root user's is the deployment's owner id (`S3Config::owner_id`); every
//!   other user's is the hex SHA-256 of the owner id and the user name ([`canonical_id`]): 64 hex
//!   digits like AWS's, the same on every node and across restarts, different per deployment.
//!   Service accounts and temporary credentials act as (and own as) their parent user. A user
//!   removed and made again under the same name gets the same id back, as bucket policies
//!   naming the user's ARN apply to it again.
//! - Grants name users by canonical id (unknown ids are `InvalidArgument`), or the groups
//!   AllUsers, AuthenticatedUsers and LogDelivery by URI; grants by e-mail address are
//!   `UnresolvableGrantByEmailAddress`, as AWS answers where it resolves no addresses.
//! - A resource without a stored ACL is its owner's, private: a bucket from before owners
//!   existed is the root user's, an object is its bucket owner's.
//! - [`allows`]: what an ACL grants a caller. The owner always keeps READ_ACP and WRITE_ACP (it
//!   can always mend its ACL); grants to the two public groups count only when the bucket's
//!   `IgnorePublicAcls` is off. Whether ACLs count at all is the bucket's ownership controls'
//!   call (`BucketOwnerEnforced`: never), decided in [`crate::access`].

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use strata_object::{Acl, BucketRecord, Grant, Grantee, Group, ObjectOwnership, Owner, Permission};
use strata_types::limits::ACL_GRANTS_MAX;

use crate::context::Node;
use crate::error::{S3Error, S3ErrorCode};

pub const ALL_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
pub const AUTHENTICATED_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
pub const LOG_DELIVERY_URI: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// The canonical id of `user` in the deployment whose owner id is `owner_id`.
pub fn canonical_id(owner_id: &str, user: &str) -> String {
    let mut h = Sha256::new();
    h.update(owner_id.as_bytes());
    h.update(b"/");
    h.update(user.as_bytes());
    hex::encode(h.finalize())
}

/// The root user as an owner.
pub fn root_owner(node: &Node) -> Owner {
    Owner { id: node.config.owner_id.clone(), display_name: node.config.root_user.clone() }
}

/// Who signed with `access_key`, as ACLs see it: the root user, a user, or a service account's
/// or session's parent user. `None` for an anonymous request (empty key).
pub fn owner_of_key(node: &Node, access_key: &str) -> Option<Owner> {
    if access_key.is_empty() {
        return None;
    }
    if access_key == node.config.root_user {
        return Some(root_owner(node));
    }
    let directory = node.iam.directory();
    let state = directory.state();
    let user = if state.users.contains_key(access_key) {
        access_key
    } else if let Some(svc) = state.service_accounts.get(access_key) {
        svc.parent.as_str()
    } else if let Some(session) = state.sessions.get(access_key) {
        session.parent.as_str()
    } else {
        access_key
    };
    Some(Owner { id: canonical_id(&node.config.owner_id, user), display_name: user.to_owned() })
}

/// The bucket's owner and ACL (stored, or the root user's, private).
pub fn bucket_acl(node: &Node, record: &BucketRecord) -> Acl {
    record.acl.clone().unwrap_or_else(|| private(root_owner(node)))
}

/// An object's owner and ACL: stored, or its bucket owner's, private. With ACLs disabled
/// (`BucketOwnerEnforced`) the bucket owner owns every object, with full control.
pub fn object_acl(bucket: &Acl, ownership: ObjectOwnership, stored: Option<&Acl>) -> Acl {
    match stored {
        Some(acl) if ownership.acls_enabled() => acl.clone(),
        _ => private(bucket.owner.clone()),
    }
}

/// `owner` with FULL_CONTROL, nothing else.
pub fn private(owner: Owner) -> Acl {
    Acl { grants: vec![user_grant(&owner, Permission::FullControl)], owner }
}

fn user_grant(owner: &Owner, permission: Permission) -> Grant {
    Grant { grantee: Grantee::User(owner.clone()), permission }
}

fn group_grant(group: Group, permission: Permission) -> Grant {
    Grant { grantee: Grantee::Group(group), permission }
}

/// Does `acl` grant `caller` (`None`: anonymous) `wanted`?
pub fn allows(acl: &Acl, caller: Option<&Owner>, wanted: Permission, ignore_public: bool) -> bool {
    let is_owner = caller.is_some_and(|c| c.id == acl.owner.id);
    if is_owner && matches!(wanted, Permission::ReadAcp | Permission::WriteAcp) {
        return true;
    }
    acl.grants.iter().any(|g| {
        let covers = g.permission == wanted || g.permission == Permission::FullControl;
        covers
            && match &g.grantee {
                Grantee::User(u) => caller.is_some_and(|c| c.id == u.id),
                Grantee::Group(Group::AllUsers) => !ignore_public,
                Grantee::Group(Group::AuthenticatedUsers) => !ignore_public && caller.is_some(),
                Grantee::Group(Group::LogDelivery) => false,
            }
    })
}

/// Whose ACL grants an action: the bucket's, or the object's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclOf {
    Bucket,
    Object,
}

/// The ACL permission an action needs, as AWS maps them ("Mapping of ACL permissions and access
/// policy permissions"): bucket READ lists; bucket WRITE creates, overwrites and deletes
/// objects (and aborts and lists uploads' parts); READ_ACP and WRITE_ACP read and write the
/// ACL of what they are granted on; object READ reads the object. Other actions no ACL grants.
pub fn acl_permission(action: &str) -> Option<(Permission, AclOf)> {
    use Permission as P;
    Some(match action {
        "s3:ListBucket" | "s3:ListBucketVersions" | "s3:ListBucketMultipartUploads" => {
            (P::Read, AclOf::Bucket)
        }
        "s3:PutObject"
        | "s3:DeleteObject"
        | "s3:DeleteObjectVersion"
        | "s3:AbortMultipartUpload"
        | "s3:ListMultipartUploadParts" => (P::Write, AclOf::Bucket),
        "s3:GetBucketAcl" => (P::ReadAcp, AclOf::Bucket),
        "s3:PutBucketAcl" => (P::WriteAcp, AclOf::Bucket),
        "s3:GetObject" | "s3:GetObjectVersion" | "s3:GetObjectTorrent" => (P::Read, AclOf::Object),
        "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => (P::ReadAcp, AclOf::Object),
        "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => (P::WriteAcp, AclOf::Object),
        _ => return None,
    })
}

/// Does the ACL grant anything to the public groups (AllUsers, AuthenticatedUsers)?
pub fn is_public(acl: &Acl) -> bool {
    acl.grants
        .iter()
        .any(|g| matches!(g.grantee, Grantee::Group(Group::AllUsers | Group::AuthenticatedUsers)))
}

/// The canned ACLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Canned {
    Private,
    PublicRead,
    PublicReadWrite,
    AuthenticatedRead,
    BucketOwnerRead,
    BucketOwnerFullControl,
    LogDeliveryWrite,
}

impl Canned {
    pub fn parse(value: &str) -> Result<Canned, S3Error> {
        Ok(match value.trim() {
            "private" => Canned::Private,
            "public-read" => Canned::PublicRead,
            "public-read-write" => Canned::PublicReadWrite,
            "authenticated-read" => Canned::AuthenticatedRead,
            "bucket-owner-read" => Canned::BucketOwnerRead,
            "bucket-owner-full-control" => Canned::BucketOwnerFullControl,
            "log-delivery-write" => Canned::LogDeliveryWrite,
            _ => return Err(S3Error::new(S3ErrorCode::InvalidArgument, "The canned ACL is not valid")),
        })
    }
}

/// The ACL a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    Canned(Canned),
    /// Explicit grants (headers or document), grantees resolved.
    Grants(Vec<Grant>),
}

impl Requested {
    /// The ACL this request gives a resource owned by `owner` in a bucket owned by
    /// `bucket_owner` (`for_bucket`: the ACL is the bucket's own, where the bucket-owner canned
    /// ACLs mean `private`, as AWS reads them).
    pub fn expand(&self, owner: &Owner, bucket_owner: &Owner, for_bucket: bool) -> Acl {
        use Permission as P;
        let grants = match self {
            Requested::Grants(g) => g.clone(),
            Requested::Canned(c) => {
                let mut g = vec![user_grant(owner, P::FullControl)];
                let other_owner = !for_bucket && bucket_owner.id != owner.id;
                match c {
                    Canned::Private => {}
                    Canned::PublicRead => g.push(group_grant(Group::AllUsers, P::Read)),
                    Canned::PublicReadWrite => {
                        g.push(group_grant(Group::AllUsers, P::Read));
                        g.push(group_grant(Group::AllUsers, P::Write));
                    }
                    Canned::AuthenticatedRead => g.push(group_grant(Group::AuthenticatedUsers, P::Read)),
                    Canned::BucketOwnerRead if other_owner => g.push(user_grant(bucket_owner, P::Read)),
                    Canned::BucketOwnerFullControl if other_owner => {
                        g.push(user_grant(bucket_owner, P::FullControl))
                    }
                    Canned::BucketOwnerRead | Canned::BucketOwnerFullControl => {}
                    Canned::LogDeliveryWrite => {
                        g.push(group_grant(Group::LogDelivery, P::Write));
                        g.push(group_grant(Group::LogDelivery, P::ReadAcp));
                    }
                }
                g
            }
        };
        Acl { owner: owner.clone(), grants }
    }

    /// Is this what a bucket with ACLs disabled still accepts: nothing beyond the bucket
    /// owner's full control?
    pub fn owner_full_control_only(&self, bucket_owner: &Owner) -> bool {
        match self {
            Requested::Canned(c) => matches!(c, Canned::Private | Canned::BucketOwnerFullControl),
            Requested::Grants(g) => g.iter().all(|g| {
                g.permission == Permission::FullControl
                    && matches!(&g.grantee, Grantee::User(u) if u.id == bucket_owner.id)
            }),
        }
    }
}

/// The `x-amz-grant-*` headers and the permission each grants.
pub const GRANT_HEADERS: [(&str, Permission); 5] = [
    ("x-amz-grant-full-control", Permission::FullControl),
    ("x-amz-grant-read", Permission::Read),
    ("x-amz-grant-read-acp", Permission::ReadAcp),
    ("x-amz-grant-write", Permission::Write),
    ("x-amz-grant-write-acp", Permission::WriteAcp),
];

/// Does the request carry any ACL header?
pub fn has_acl_headers(headers: &http::HeaderMap) -> bool {
    headers.contains_key("x-amz-acl") || GRANT_HEADERS.iter().any(|(h, _)| headers.contains_key(*h))
}

/// A grantee as a request names it, before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    Id(String),
    Uri(String),
    Email(String),
}

/// Resolves named grantees against the deployment's users (built once per request).
pub struct Resolver<'n> {
    node: &'n Node,
    users: Option<HashMap<String, String>>,
}

impl<'n> Resolver<'n> {
    pub fn new(node: &'n Node) -> Self {
        Self { node, users: None }
    }

    fn user(&mut self, id: &str) -> Option<Owner> {
        if id == self.node.config.owner_id {
            return Some(root_owner(self.node));
        }
        let node = self.node;
        let users = self.users.get_or_insert_with(|| {
            let directory = node.iam.directory();
            let names = directory.state().users.keys();
            names.map(|n| (canonical_id(&node.config.owner_id, n), n.clone())).collect()
        });
        users.get(id).map(|name| Owner { id: id.to_owned(), display_name: name.clone() })
    }

    pub fn resolve(&mut self, named: &Named) -> Result<Grantee, S3Error> {
        match named {
            Named::Id(id) => self
                .user(id.trim())
                .map(Grantee::User)
                .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "Invalid id")),
            Named::Uri(uri) => match uri.trim() {
                ALL_USERS_URI => Ok(Grantee::Group(Group::AllUsers)),
                AUTHENTICATED_USERS_URI => Ok(Grantee::Group(Group::AuthenticatedUsers)),
                LOG_DELIVERY_URI => Ok(Grantee::Group(Group::LogDelivery)),
                _ => Err(S3Error::new(S3ErrorCode::InvalidArgument, "Invalid group uri")),
            },
            Named::Email(_) => Err(S3Error::new(
                S3ErrorCode::UnresolvableGrantByEmailAddress,
                "The e-mail address you provided does not match any account on record.",
            )),
        }
    }
}

/// Parses one `x-amz-grant-*` value: `id="…", uri="…", emailAddress="…"`, comma-separated.
pub fn parse_grant_header(value: &str) -> Result<Vec<Named>, S3Error> {
    let bad = || S3Error::new(S3ErrorCode::InvalidArgument, "The grant header is not valid");
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (kind, v) = entry.split_once('=').ok_or_else(bad)?;
        let v = v.trim();
        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v).to_owned();
        out.push(match kind.trim().to_ascii_lowercase().as_str() {
            "id" => Named::Id(v),
            "uri" => Named::Uri(v),
            "emailaddress" => Named::Email(v),
            _ => return Err(bad()),
        });
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

pub(crate) fn too_many_grants() -> S3Error {
    S3Error::new(S3ErrorCode::MalformedACLError, "An access control list can hold at most 100 grants.")
}

/// The ACL a request's headers ask for: `None` without ACL headers. A canned ACL with grant
/// headers is `InvalidRequest`, as AWS answers.
pub fn from_headers(node: &Node, headers: &http::HeaderMap) -> Result<Option<Requested>, S3Error> {
    let text = |name: &str| {
        headers.get(name).map(|v| {
            v.to_str()
                .map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument, &format!("{name} is not valid text")))
        })
    };
    let canned = text("x-amz-acl").transpose()?;
    let mut resolver = Resolver::new(node);
    let mut grants = Vec::new();
    for (name, permission) in GRANT_HEADERS {
        for value in headers.get_all(name) {
            let value = value.to_str().map_err(|_| {
                S3Error::new(S3ErrorCode::InvalidArgument, &format!("{name} is not valid text"))
            })?;
            for named in parse_grant_header(value)? {
                grants.push(Grant { grantee: resolver.resolve(&named)?, permission });
                if grants.len() > ACL_GRANTS_MAX {
                    return Err(too_many_grants());
                }
            }
        }
    }
    match (canned, grants.is_empty()) {
        (Some(_), false) => Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Specifying both Canned ACLs and Header Grants is not allowed",
        )),
        (Some(c), true) => Ok(Some(Requested::Canned(Canned::parse(c)?))),
        (None, false) => Ok(Some(Requested::Grants(grants))),
        (None, true) => Ok(None),
    }
}

/// The ACL a new object gets from its request's headers, written by `writer` (`None`:
/// anonymous) into a bucket with `record`: `None` for the bucket owner's private default.
/// Ownership decides the owner; a public ACL is refused under `BlockPublicAcls`.
pub fn new_object_acl(
    node: &Node,
    headers: &http::HeaderMap,
    record: &BucketRecord,
    writer: Option<Owner>,
) -> Result<Option<Acl>, S3Error> {
    let ownership = record.object_ownership;
    let requested = match from_headers(node, headers) {
        Err(_) if !ownership.acls_enabled() => return Err(acls_disabled()),
        r => r?,
    };
    let bucket = bucket_acl(node, record);
    if !ownership.acls_enabled() {
        return match requested {
            Some(r) if !r.owner_full_control_only(&bucket.owner) => Err(acls_disabled()),
            _ => Ok(None),
        };
    }
    let requested = requested.unwrap_or(Requested::Canned(Canned::Private));
    let to_bucket_owner = ownership == ObjectOwnership::BucketOwnerPreferred
        && requested == Requested::Canned(Canned::BucketOwnerFullControl);
    let owner = match writer {
        Some(w) if !to_bucket_owner => w,
        // Anonymous writes belong to the bucket owner.
        _ => bucket.owner.clone(),
    };
    let acl = requested.expand(&owner, &bucket.owner, false);
    check_public(record, &acl)?;
    Ok(Some(acl))
}

/// `BlockPublicAcls` refuses an ACL that grants to the public groups (`403 AccessDenied`, as
/// S3 answers).
pub fn check_public(record: &BucketRecord, acl: &Acl) -> Result<(), S3Error> {
    if record.public_access_block.is_some_and(|b| b.block_public_acls) && is_public(acl) {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Access Denied: the bucket's public access block (BlockPublicAcls) refuses public ACLs.",
        ));
    }
    Ok(())
}

pub fn acls_disabled() -> S3Error {
    S3Error::new(S3ErrorCode::AccessControlListNotSupported, "The bucket does not allow ACLs")
}

pub const OWNERSHIPS: [(ObjectOwnership, &str); 3] = [
    (ObjectOwnership::BucketOwnerEnforced, "BucketOwnerEnforced"),
    (ObjectOwnership::BucketOwnerPreferred, "BucketOwnerPreferred"),
    (ObjectOwnership::ObjectWriter, "ObjectWriter"),
];

/// `BucketOwnerEnforced`, `BucketOwnerPreferred` or `ObjectWriter`.
pub fn parse_ownership(name: &str) -> Option<ObjectOwnership> {
    OWNERSHIPS.iter().find(|(_, n)| *n == name.trim()).map(|(o, _)| *o)
}

/// The error for ACLs other than the owner's on a bucket whose ownership is enforced.
pub fn acl_with_enforced() -> S3Error {
    S3Error::new(
        S3ErrorCode::InvalidBucketAclWithObjectOwnership,
        "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Owner { id: canonical_id("dep", name), display_name: name.into() }
    }

    #[test]
    fn canonical_ids_are_stable_and_distinct() {
        assert_eq!(canonical_id("dep", "alice"), canonical_id("dep", "alice"));
        assert_ne!(canonical_id("dep", "alice"), canonical_id("dep", "bob"));
        assert_ne!(canonical_id("dep", "alice"), canonical_id("other", "alice"));
        assert_eq!(canonical_id("dep", "alice").len(), 64);
    }

    #[test]
    fn grant_headers_parse() {
        assert_eq!(
            parse_grant_header(r#"id="abc", uri=http://x, emailAddress="a@b""#).expect("parses"),
            vec![Named::Id("abc".into()), Named::Uri("http://x".into()), Named::Email("a@b".into())]
        );
        for bad in ["", "abc", "name=abc", " , "] {
            assert!(parse_grant_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn canned_acls_expand_and_grant() {
        use Permission as P;
        let (alice, bob, carol) = (owner("alice"), owner("bob"), owner("carol"));
        let acl = Requested::Canned(Canned::PublicRead).expand(&alice, &bob, false);
        assert!(allows(&acl, None, P::Read, false));
        assert!(!allows(&acl, None, P::Read, true), "IgnorePublicAcls sets the grant aside");
        assert!(!allows(&acl, Some(&bob), P::Write, false));
        assert!(allows(&acl, Some(&alice), P::Write, false));
        let acl = Requested::Canned(Canned::AuthenticatedRead).expand(&alice, &bob, false);
        assert!(!allows(&acl, None, P::Read, false));
        assert!(allows(&acl, Some(&carol), P::Read, false));
        let acl = Requested::Canned(Canned::BucketOwnerRead).expand(&alice, &bob, false);
        assert!(allows(&acl, Some(&bob), P::Read, false));
        assert!(!allows(&acl, Some(&bob), P::ReadAcp, false));
        let acl = Requested::Canned(Canned::BucketOwnerFullControl).expand(&alice, &bob, false);
        assert!(allows(&acl, Some(&bob), P::WriteAcp, false));
        let acl = Requested::Canned(Canned::BucketOwnerFullControl).expand(&alice, &bob, true);
        assert_eq!(acl, private(alice.clone()), "on a bucket it means private");
        // An owner whose grants were all given away can still read and mend its ACL.
        let acl = Requested::Grants(vec![user_grant(&bob, P::Read)]).expand(&alice, &alice, false);
        assert!(!allows(&acl, Some(&alice), P::Read, false));
        assert!(allows(&acl, Some(&alice), P::WriteAcp, false));
        assert!(allows(&acl, Some(&bob), P::Read, false));
        assert!(!is_public(&acl));
        assert!(Requested::Canned(Canned::BucketOwnerFullControl).owner_full_control_only(&bob));
        assert!(!Requested::Canned(Canned::PublicRead).owner_full_control_only(&bob));
        assert!(Requested::Grants(vec![user_grant(&bob, P::FullControl)]).owner_full_control_only(&bob));
        assert!(!Requested::Grants(vec![user_grant(&alice, P::FullControl)]).owner_full_control_only(&bob));
        assert!(Canned::parse("aws-exec-read").is_err());
    }
}
