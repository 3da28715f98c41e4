//! Who a request is and what it may do: the signature's access key resolved through the IAM
//! [`Directory`] (the root user from the environment beside it), and each check of the
//! authorization table evaluated against the caller's policies and the bucket's policy.
//!
//! - Credentials: an unknown or disabled key (or one whose user is disabled) is
//!   `InvalidAccessKeyId` (403), as S3 answers for an inactive key; expired temporary
//!   credentials are `ExpiredToken` (400) and a wrong session token `InvalidToken` (400), as S3
//!   answers; an expired service account is `InvalidAccessKeyId` like any key that stopped
//!   working.
//! - Root passes every check without evaluation. Anonymous requests (no signature at all) are
//!   evaluated as the anonymous principal against the bucket policy alone.
//! - A refusal is `403 AccessDenied` whatever the reason, and is decided before the handler
//!   looks anything up, so it says nothing about whether the bucket or key exists.

use std::sync::Arc;

use http::request::Parts;
use http::HeaderMap;
use strata_iam::{
    evaluate, ConditionValues, CredentialError, Decision, Directory, Policy, Principal, Request,
};
use strata_object::{Owner, Permission, VersionRef};

use crate::authz::{self, AuthType, Check, Deferred, Facts};
use crate::context::{ConnInfo, Node};
use crate::error::{S3Error, S3ErrorCode};
use crate::grants::{self, AclOf};
use crate::router::{Operation, Route};
use crate::sigv2;
use crate::sigv4::{self, SecretLookup, Verified};
use strata_object::ObjectError;

/// Verifies a request signed in its `Authorization` header or its query (presigned).
/// `Ok(None)` means the request carries no signature at all (anonymous).
/// `host_bucket` is the bucket named by a virtual-host-style Host header (SigV2 signs it).
/// `region` is this server's region: a SigV4 credential scope must name it and the `s3` service.
pub fn verify_signature(
    parts: &Parts,
    secrets: &dyn SecretLookup,
    region: &str,
    now_secs: u64,
    host_bucket: Option<&str>,
) -> Result<Option<Verified>, S3Error> {
    let query = parts.uri.query().unwrap_or("");
    if let Some(auth) = parts.headers.get(http::header::AUTHORIZATION) {
        let auth = auth.to_str().map_err(|_| {
            S3Error::new(S3ErrorCode::AuthorizationHeaderMalformed, "the Authorization header is not ASCII")
        })?;
        if auth.starts_with("AWS ") {
            return sigv2::verify_header(parts, auth, secrets, now_secs, host_bucket).map(Some);
        }
        return sigv4::verify_header(parts, auth, secrets, region, now_secs).map(Some);
    }
    if query.contains("X-Amz-Signature=") {
        return sigv4::verify_presigned(parts, query, secrets, region, now_secs).map(Some);
    }
    if query.contains("AWSAccessKeyId=") {
        return sigv2::verify_query(parts, secrets, now_secs, host_bucket).map(Some);
    }
    Ok(None)
}

/// The session token of temporary credentials: `x-amz-security-token`, as a header or (in a
/// presigned URL) a query parameter.
pub fn session_token(parts: &Parts) -> Option<String> {
    if let Some(v) = parts.headers.get("x-amz-security-token").and_then(|v| v.to_str().ok()) {
        return Some(v.to_owned());
    }
    let query = parts.uri.query().unwrap_or("");
    crate::router::parse_query(query)
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-security-token"))
        .map(|(_, v)| v)
}

/// Secrets as the signature check needs them: the root user, then the directory.
pub struct Credentials<'a> {
    pub node: &'a Node,
    pub directory: &'a Directory,
    pub token: Option<&'a str>,
    pub now: u64,
}

impl SecretLookup for Credentials<'_> {
    fn secret(&self, access_key: &str) -> Option<String> {
        self.lookup(access_key).ok()
    }

    fn lookup(&self, access_key: &str) -> Result<String, S3Error> {
        if access_key == self.node.config.root_user {
            return Ok(self.node.config.root_password.clone());
        }
        match self.directory.caller(access_key, self.token, self.now) {
            Ok(caller) => Ok(caller.secret.to_owned()),
            Err(e) => Err(refusal(e, self.directory.state().sessions.contains_key(access_key))),
        }
    }
}

/// The S3 answer to refused credentials (`session`: the key is temporary credentials').
fn refusal(e: CredentialError, session: bool) -> S3Error {
    match e {
        CredentialError::Expired if session => {
            S3Error::new(S3ErrorCode::ExpiredToken, "The provided token has expired.")
        }
        CredentialError::InvalidToken => {
            S3Error::new(S3ErrorCode::InvalidToken, "The provided token is malformed or otherwise invalid.")
        }
        CredentialError::UnknownAccessKey | CredentialError::Disabled | CredentialError::Expired => {
            sigv4::unknown_access_key()
        }
    }
}

/// Who an authenticated request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    Root,
    /// A user, service account or session, by access key (with the session token it sent).
    Key {
        access_key: String,
        token: Option<String>,
    },
    Anonymous,
}

/// An authenticated request's identity with the directory snapshot it was resolved in.
pub struct Access {
    pub directory: Arc<Directory>,
    pub identity: Identity,
    pub now: u64,
    pub facts: Facts,
}

impl Access {
    /// Authenticates `parts` (any signature kind; none = anonymous). `host_bucket` as for
    /// [`verify_signature`].
    pub fn authenticate(
        node: &Node,
        parts: &Parts,
        now: u64,
        host_bucket: Option<&str>,
    ) -> Result<(Access, Option<Verified>), S3Error> {
        Self::authenticate_in(node, parts, now, host_bucket, &node.config.region)
    }

    /// [`Self::authenticate`] of a request signed for `region` (MinIO's admin client signs for
    /// the empty region).
    pub fn authenticate_in(
        node: &Node,
        parts: &Parts,
        now: u64,
        host_bucket: Option<&str>,
        region: &str,
    ) -> Result<(Access, Option<Verified>), S3Error> {
        let directory = node.iam.directory();
        let token = session_token(parts);
        let credentials = Credentials { node, directory: &directory, token: token.as_deref(), now };
        let verified = verify_signature(parts, &credentials, region, now, host_bucket)?;
        let identity = match &verified {
            None => Identity::Anonymous,
            Some(v) if v.access_key == node.config.root_user => Identity::Root,
            Some(v) => Identity::Key { access_key: v.access_key.clone(), token },
        };
        let conn = parts.extensions.get::<ConnInfo>().copied();
        let facts = Facts {
            source_ip: conn.and_then(|c| c.peer).map(|p| p.ip()),
            secure_transport: conn.is_some_and(|c| c.tls),
            now_unix_secs: now,
            auth: auth_type(parts, verified.is_some()),
        };
        Ok((Access { directory, identity, now, facts }, verified))
    }

    /// The secret key of `access_key`, the request's signer (MinIO's admin API seals bodies
    /// with it).
    pub fn secret_of(&self, node: &Node, parts: &Parts, access_key: &str) -> Option<String> {
        let token = session_token(parts);
        let credentials =
            Credentials { node, directory: &self.directory, token: token.as_deref(), now: self.now };
        credentials.secret(access_key)
    }

    pub fn is_root(&self) -> bool {
        self.identity == Identity::Root
    }

    /// May this request do `action` on `resource`, by the policies alone?
    pub fn allows(
        &self,
        action: &str,
        resource: Option<&str>,
        values: &ConditionValues,
        bucket_policy: Option<&Policy>,
    ) -> bool {
        self.decide(action, resource, values, bucket_policy).is_allowed()
    }

    /// What the identity's policies and the bucket policy say about `action` on `resource`.
    fn decide(
        &self,
        action: &str,
        resource: Option<&str>,
        values: &ConditionValues,
        bucket_policy: Option<&Policy>,
    ) -> Decision {
        match &self.identity {
            Identity::Root => Decision::Allow,
            Identity::Key { access_key, token } => {
                match self.directory.caller(access_key, token.as_deref(), self.now) {
                    Ok(caller) => caller.authorize(action, resource, values, bucket_policy),
                    Err(_) => Decision::ExplicitDeny,
                }
            }
            Identity::Anonymous => {
                let principal = Principal::anonymous();
                let request = Request { action, resource, principal: &principal, values };
                evaluate(&request, std::iter::empty(), bucket_policy)
            }
        }
    }

    /// The caller as ACLs name it (`None`: anonymous).
    fn acl_caller(&self, node: &Node) -> Option<Owner> {
        match &self.identity {
            Identity::Root => Some(grants::root_owner(node)),
            Identity::Key { access_key, .. } => grants::owner_of_key(node, access_key),
            Identity::Anonymous => None,
        }
    }

    /// What ACLs say about a check the policies neither allowed nor denied. Bucket permissions
    /// are answered from the bucket's record; object permissions need the object's record,
    /// which [`ObjectAclQuestion::ask`] reads. `creating`: the request writes a new object,
    /// whose ACL the writer sets with the write itself (bucket WRITE covers `s3:PutObjectAcl`).
    fn acl_verdict(&self, node: &Node, route: Option<&Route>, check: &Check, creating: bool) -> AclVerdict {
        let Some((bucket, key)) = check.resource.as_deref().and_then(arn_parts) else {
            return AclVerdict::Refused;
        };
        let Some((mut permission, mut of)) = grants::acl_permission(check.action) else {
            return AclVerdict::Refused;
        };
        if creating && check.action == "s3:PutObjectAcl" {
            (permission, of) = (Permission::Write, AclOf::Bucket);
        }
        let caller = self.acl_caller(node);
        let verdict = node.layer.with_bucket_record(bucket, |record| {
            if !record.object_ownership.acls_enabled() {
                return AclVerdict::Refused;
            }
            let ignore_public = record.public_access_block.is_some_and(|b| b.ignore_public_acls);
            match (of, key) {
                (AclOf::Bucket, _) => {
                    let acl = grants::bucket_acl(node, record);
                    match grants::allows(&acl, caller.as_ref(), permission, ignore_public) {
                        true => AclVerdict::Granted,
                        false => AclVerdict::Refused,
                    }
                }
                (AclOf::Object, Some(key)) => AclVerdict::AskObject(ObjectAclQuestion {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                    which: request_version(route, bucket, key),
                    permission,
                    ignore_public,
                    caller,
                }),
                (AclOf::Object, None) => AclVerdict::Refused,
            }
        });
        verdict.unwrap_or(AclVerdict::Refused)
    }
}

/// What ACLs say about one check.
enum AclVerdict {
    Granted,
    Refused,
    /// The object's own ACL decides.
    AskObject(ObjectAclQuestion),
}

/// The version of `bucket`/`key` a request names: its `versionId` when the request's own object
/// is asked about (a malformed id is the handler's to refuse; the current version is asked then).
fn request_version(route: Option<&Route>, bucket: &str, key: &str) -> VersionRef {
    match route {
        Some(r) if r.bucket.as_deref() == Some(bucket) && r.key.as_deref() == Some(key) => {
            crate::router::version_ref(r).unwrap_or_default()
        }
        _ => VersionRef::Current,
    }
}

/// Does an object's ACL grant `permission` to `caller`?
struct ObjectAclQuestion {
    bucket: String,
    key: String,
    /// The version whose ACL decides (`versionId`).
    which: VersionRef,
    permission: Permission,
    ignore_public: bool,
    caller: Option<Owner>,
}

impl ObjectAclQuestion {
    /// Reads the object's record: `Ok(granted)`, or the error reading it (a missing object
    /// grants nothing; what the caller is told of it is [`Access::authorize`]'s call).
    async fn ask(&self, node: &Node) -> Result<bool, S3Error> {
        let record = node.layer.bucket_record(&self.bucket)?;
        let object = node.layer.open_object_version(&self.bucket, &self.key, self.which, false).await?;
        let bucket = grants::bucket_acl(node, &record);
        let acl = grants::object_acl(&bucket, record.object_ownership, object.info.acl.as_ref());
        Ok(grants::allows(&acl, self.caller.as_ref(), self.permission, self.ignore_public))
    }
}

/// What [`Access::authorize`] leaves for checks decided later (DeleteObjects' keys, the buckets
/// ListBuckets shows): the request's condition values. Empty for root, who is not evaluated.
pub struct Checked {
    pub values: ConditionValues,
    /// PutObjectTagging's check when a policy in play conditions on the request's tags: decided
    /// once the body is read ([`Access::may_put_tags`]).
    pub pending: Option<Check>,
}

/// The condition keys a PutObjectTagging body gives values to (a prefix of both).
const REQUEST_TAG_KEYS: &str = "s3:RequestObjectTag";

/// The condition keys of an existing object's tags: `s3:ExistingObjectTag/<key>`.
const EXISTING_TAG: &str = "s3:ExistingObjectTag/";

/// Adds the tags of `bucket`/`key` (version `which`) to `values` as
/// `s3:ExistingObjectTag/<key>`. A missing object has no tags: conditions on them then fail as
/// on any absent key (and `...IfExists` ones hold). An object that cannot be read (too few
/// drives) is that error: a policy that asks for its tags is never decided without them.
async fn add_tags_of(
    node: &Node,
    bucket: &str,
    key: &str,
    which: VersionRef,
    values: &mut ConditionValues,
) -> Result<(), S3Error> {
    match node.layer.open_object_version(bucket, key, which, false).await {
        Ok(object) => {
            for (k, v) in &object.info.tags {
                values.insert(&format!("{EXISTING_TAG}{k}"), v);
            }
            Ok(())
        }
        Err(
            ObjectError::ObjectNotFound
            | ObjectError::NoSuchVersion
            | ObjectError::DeleteMarker { .. }
            | ObjectError::BucketNotFound,
        ) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The bucket an S3 ARN names (`arn:aws:s3:::bucket/key` → `bucket`).
fn arn_bucket(arn: &str) -> Option<&str> {
    arn_parts(arn).map(|(b, _)| b)
}

/// The bucket and key an S3 ARN names (`arn:aws:s3:::bucket/key` → `bucket`, `key`).
fn arn_parts(arn: &str) -> Option<(&str, Option<&str>)> {
    let rest = arn.strip_prefix("arn:aws:s3:::")?;
    let (bucket, key) = match rest.split_once('/') {
        Some((b, k)) => (b, Some(k)),
        None => (rest, None),
    };
    Some((bucket, key)).filter(|(b, _)| !b.is_empty())
}

impl Access {
    /// Evaluates the authorization table's checks for `route`, each against the policy of the
    /// bucket its resource lies in, and where no policy decides, against the ACLs;
    /// `AccessDenied` unless every one is allowed.
    pub async fn authorize(
        &self,
        node: &Node,
        route: &Route,
        headers: &HeaderMap,
    ) -> Result<Checked, S3Error> {
        if self.is_root() {
            return Ok(Checked { values: ConditionValues::new(), pending: None });
        }
        let mut table = authz::authorization(route, headers, &self.facts).map_err(|_| denied())?;
        self.add_existing_object_tags(node, route, &mut table.values).await?;
        if route.operation == Operation::ListBuckets {
            // Shown bucket by bucket (see `may_list`); anonymous callers have no buckets.
            return match self.identity {
                Identity::Anonymous => Err(denied()),
                _ => Ok(Checked { values: table.values, pending: None }),
            };
        }
        let creating = matches!(
            route.operation,
            Operation::PutObject | Operation::CopyObject | Operation::CreateMultipartUpload
        );
        let mut pending = None;
        if table.deferred == Deferred::RequestTags {
            let bucket = route.bucket.as_deref().unwrap_or_default();
            if self.conditions_on(node, bucket, REQUEST_TAG_KEYS) {
                pending = table.checks.pop();
            }
        }
        let source = self.copy_source_values(node, &table).await?;
        for check in &table.checks {
            let values = match &source {
                Some((arn, values)) if check.resource.as_deref() == Some(arn.as_str()) => values,
                _ => &table.values,
            };
            let allowed = match self.policy_decision(node, check, values) {
                Decision::Allow => true,
                Decision::ExplicitDeny => false,
                Decision::ImplicitDeny => match self.acl_verdict(node, Some(route), check, creating) {
                    AclVerdict::Granted => true,
                    AclVerdict::Refused => false,
                    AclVerdict::AskObject(question) => match question.ask(node).await {
                        Ok(granted) => granted,
                        // A missing key is told only to a caller that may list the bucket.
                        Err(e) => {
                            let checked = Checked { values: table.values.clone(), pending: None };
                            return Err(self.hide_missing(node, &question.bucket, &checked, e));
                        }
                    },
                },
            };
            if !allowed {
                return Err(denied());
            }
        }
        if table.deferred == Deferred::EachDeletedKey {
            // Refusals come per key; a missing bucket is not told to a caller that cannot know.
            let bucket = route.bucket.as_deref().unwrap_or_default();
            if node.layer.bucket_info(bucket).is_err() {
                return Err(denied());
            }
        }
        Ok(Checked { values: table.values, pending })
    }

    /// Does the bucket's policy, or the caller's own, condition on keys starting `prefix`?
    fn conditions_on(&self, node: &Node, bucket: &str, prefix: &str) -> bool {
        let anonymous = self.identity == Identity::Anonymous;
        let in_bucket_policy =
            node.bucket_policy_for(bucket, anonymous).is_some_and(|p| p.conditions_on(prefix));
        in_bucket_policy
            || match &self.identity {
                Identity::Key { access_key, token } => self
                    .directory
                    .caller(access_key, token.as_deref(), self.now)
                    .is_ok_and(|c| c.conditions_on(prefix)),
                _ => false,
            }
    }

    /// PutObjectTagging's check, if [`Access::authorize`] left it for the body: decided with
    /// the body's `tags` as `s3:RequestObjectTag/<key>` and `s3:RequestObjectTagKeys`.
    pub fn may_put_tags(
        &self,
        node: &Node,
        checked: &Checked,
        tags: &std::collections::BTreeMap<String, String>,
    ) -> bool {
        let Some(check) = &checked.pending else { return true };
        let mut values = checked.values.clone();
        for (k, v) in tags {
            values.insert(&format!("{REQUEST_TAG_KEYS}/{k}"), v);
            values.insert("s3:RequestObjectTagKeys", k);
        }
        self.allows_check(node, check, &values)
    }

    /// `s3:ExistingObjectTag/<key>`: the tags of the object the request acts on, read only for
    /// the operations S3 gives the key to and only when a policy in play conditions on it (the
    /// bucket's, or the caller's own); see [`add_tags_of`].
    async fn add_existing_object_tags(
        &self,
        node: &Node,
        route: &Route,
        values: &mut ConditionValues,
    ) -> Result<(), S3Error> {
        use Operation as O;
        let takes_it = matches!(
            route.operation,
            O::GetObject
                | O::HeadObject
                | O::GetObjectAcl
                | O::PutObjectAcl
                | O::GetObjectTagging
                | O::PutObjectTagging
                | O::DeleteObjectTagging
                | O::GetObjectAttributes
                | O::GetObjectRetention
                | O::PutObjectRetention
                | O::GetObjectLegalHold
                | O::PutObjectLegalHold
        );
        let (Some(bucket), Some(key)) = (route.bucket.as_deref(), route.key.as_deref()) else {
            return Ok(());
        };
        if !takes_it {
            return Ok(());
        }
        if !self.conditions_on(node, bucket, EXISTING_TAG) {
            return Ok(());
        }
        let which = crate::router::version_ref(route).unwrap_or_default();
        add_tags_of(node, bucket, key, which, values).await
    }

    /// A copy's source is read with `s3:GetObject`, judged (as a GET of it would be) with the
    /// source's own tags as `s3:ExistingObjectTag/<key>`: the request's values and those, with
    /// the source's ARN, when a policy in play conditions on them. So a Deny on tagged objects
    /// cannot be passed by copying one somewhere readable.
    async fn copy_source_values(
        &self,
        node: &Node,
        table: &authz::Authorization,
    ) -> Result<Option<(String, ConditionValues)>, S3Error> {
        let Some(source) = &table.source else { return Ok(None) };
        if !self.conditions_on(node, &source.bucket, EXISTING_TAG) {
            return Ok(None);
        }
        let which = match source.version.as_deref().map(crate::router::parse_version_id) {
            None => VersionRef::Current,
            Some(Ok(id)) => VersionRef::Id(id),
            // The copy itself refuses a malformed version id.
            Some(Err(_)) => return Ok(None),
        };
        let mut values = table.values.clone();
        add_tags_of(node, &source.bucket, &source.key, which, &mut values).await?;
        Ok(Some((source.arn(), values)))
    }

    /// What the policies say about one check, with the policy of the bucket its resource lies in.
    fn policy_decision(&self, node: &Node, check: &Check, values: &ConditionValues) -> Decision {
        let bucket = check.resource.as_deref().and_then(arn_bucket);
        let anonymous = self.identity == Identity::Anonymous;
        let policy = bucket.and_then(|b| node.bucket_policy_for(b, anonymous));
        self.decide(check.action, check.resource.as_deref(), values, policy.as_deref())
    }

    /// One check, against the policies and the bucket's ACL (checks an object's own ACL would
    /// decide are refused here: see [`Access::authorize`]).
    fn allows_check(&self, node: &Node, check: &Check, values: &ConditionValues) -> bool {
        self.allows_check_creating(node, check, values, false)
    }

    fn allows_check_creating(
        &self,
        node: &Node,
        check: &Check,
        values: &ConditionValues,
        creating: bool,
    ) -> bool {
        match self.policy_decision(node, check, values) {
            Decision::Allow => true,
            Decision::ExplicitDeny => false,
            Decision::ImplicitDeny => {
                matches!(self.acl_verdict(node, None, check, creating), AclVerdict::Granted)
            }
        }
    }

    /// Does ListBuckets show `bucket`? With `s3:ListAllMyBuckets` every bucket, else those the
    /// caller may `s3:ListBucket`.
    pub fn may_list(&self, node: &Node, bucket: &str, checked: &Checked) -> bool {
        if self.is_root() {
            return true;
        }
        let all = Check { action: "s3:ListAllMyBuckets", resource: None };
        let one = Check { action: "s3:ListBucket", resource: Some(authz::bucket_arn(bucket)) };
        self.allows_check(node, &all, &checked.values) || self.allows_check(node, &one, &checked.values)
    }

    /// A missing key is `NoSuchKey` only to a caller that may list the bucket (it could learn
    /// so anyway); to others it is `AccessDenied`, as S3 answers.
    pub fn hide_missing(&self, node: &Node, bucket: &str, checked: &Checked, e: S3Error) -> S3Error {
        let may_list = || {
            let check = Check { action: "s3:ListBucket", resource: Some(authz::bucket_arn(bucket)) };
            self.allows_check(node, &check, &checked.values)
        };
        if e.code == S3ErrorCode::NoSuchKey && !self.is_root() && !may_list() {
            return denied();
        }
        e
    }

    /// May the caller lift a GOVERNANCE retention of `key` (`s3:BypassGovernanceRetention`)?
    /// Asked only when the request says `x-amz-bypass-governance-retention: true`.
    pub fn may_bypass_governance(&self, node: &Node, bucket: &str, key: &str, checked: &Checked) -> bool {
        let check =
            Check { action: "s3:BypassGovernanceRetention", resource: Some(authz::object_arn(bucket, key)) };
        self.is_root() || self.allows_check(node, &check, &checked.values)
    }

    /// May the caller delete `key` of `bucket` (one key of DeleteObjects, with the version it
    /// names and its `<ETag>` condition, which needs `s3:GetObject` too unless it is `*`)?
    pub fn may_delete(
        &self,
        node: &Node,
        bucket: &str,
        key: &str,
        version: Option<&str>,
        etag: Option<&str>,
        checked: &Checked,
    ) -> bool {
        if self.is_root() {
            return true;
        }
        let mut values = checked.values.clone();
        if let Some(etag) = etag {
            values.insert("s3:if-match", etag);
        }
        let reads = etag.is_some_and(|e| e.trim() != "*");
        let read = Check { action: "s3:GetObject", resource: Some(authz::object_arn(bucket, key)) };
        self.allows_check(node, &authz::delete_objects_entry(bucket, key, version), &values)
            && (!reads || self.allows_check(node, &read, &values))
    }
}

/// Who signed a browser POST form.
#[derive(Debug, Clone, Copy)]
pub struct PostSigner<'a> {
    pub access_key: &'a str,
    pub token: Option<&'a str>,
    /// SigV4 (`x-amz-signature`) rather than SigV2.
    pub v4: bool,
}

/// Authorizes a POST object upload once its form is read: the form's signer (`None`: a form
/// with no policy, anonymous) needs `s3:PutObject` (and the actions its `acl` and `tagging`
/// fields call for) on the object.
pub fn authorize_post(
    node: &Node,
    parts: &Parts,
    directory: &Arc<Directory>,
    signer: Option<PostSigner<'_>>,
    bucket: &str,
    key: &str,
    fields: &[(String, String)],
) -> Result<(), S3Error> {
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let identity = match signer {
        None => Identity::Anonymous,
        Some(s) if s.access_key == node.config.root_user => Identity::Root,
        Some(s) => Identity::Key { access_key: s.access_key.to_owned(), token: s.token.map(str::to_owned) },
    };
    let auth = match signer {
        None => AuthType::Anonymous,
        Some(s) => AuthType::Post { v4: s.v4 },
    };
    let conn = parts.extensions.get::<ConnInfo>().copied();
    let facts = Facts {
        source_ip: conn.and_then(|c| c.peer).map(|p| p.ip()),
        secure_transport: conn.is_some_and(|c| c.tls),
        now_unix_secs: now,
        auth,
    };
    let access = Access { directory: directory.clone(), identity, now, facts };
    if access.is_root() {
        return Ok(());
    }
    let mut values = ConditionValues::new();
    let route = Route {
        operation: Operation::PostObject,
        bucket: Some(bucket.to_owned()),
        key: None,
        query: Vec::new(),
        host_style: false,
    };
    if let Ok(table) = authz::authorization(&route, &parts.headers, &access.facts) {
        values = table.values;
    }
    let checks = authz::post_object(bucket, key, fields, &mut values);
    if checks.iter().all(|c| access.allows_check_creating(node, c, &values, true)) {
        Ok(())
    } else {
        Err(denied())
    }
}

/// The identity handlers see for an unsigned request.
pub fn anonymous() -> Verified {
    Verified { access_key: String::new(), payload: sigv4::Payload::Unsigned, chunk_signer: None }
}

/// How the request was signed (`s3:authType`, `s3:signatureversion`).
fn auth_type(parts: &Parts, signed: bool) -> AuthType {
    if !signed {
        return AuthType::Anonymous;
    }
    match parts.headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        Some(h) => AuthType::Header { v4: !h.starts_with("AWS ") },
        None => AuthType::Query { v4: parts.uri.query().unwrap_or("").contains("X-Amz-Signature=") },
    }
}

/// `403 AccessDenied`, the one answer to every refusal.
pub fn denied() -> S3Error {
    S3Error::new(S3ErrorCode::AccessDenied, "Access Denied.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_iam::state::Session;
    use strata_iam::{IamState, Secret};

    #[test]
    fn refused_credentials_answer_as_s3_does() {
        let code = |e, session| refusal(e, session).code;
        assert_eq!(code(CredentialError::Expired, true), S3ErrorCode::ExpiredToken);
        assert_eq!(code(CredentialError::Expired, false), S3ErrorCode::InvalidAccessKeyId);
        assert_eq!(code(CredentialError::InvalidToken, true), S3ErrorCode::InvalidToken);
        assert_eq!(code(CredentialError::Disabled, false), S3ErrorCode::InvalidAccessKeyId);
        assert_eq!(code(CredentialError::UnknownAccessKey, false), S3ErrorCode::InvalidAccessKeyId);
        assert_eq!(refusal(CredentialError::Expired, false).code.status(), http::StatusCode::FORBIDDEN);
    }

    #[test]
    fn an_expired_session_is_refused_once_its_time_passed() {
        let mut state = IamState::new();
        state.add_user("kate", "kate-secret").expect("user");
        let session = Session {
            secret: Secret::new("session-secret").expect("secret"),
            token: Secret::new("session-token").expect("token"),
            parent: "kate".into(),
            name: "s".into(),
            policy: None,
            expiry: 2_000,
            federated_policies: None,
        };
        state.add_session("TEMPKEY", session, 1_000).expect("session");
        let dir = Directory::new(state).expect("directory");
        let at = |now| {
            dir.caller("TEMPKEY", Some("session-token"), now).map(|_| ()).map_err(|e| refusal(e, true).code)
        };
        assert_eq!(at(1_999), Ok(()));
        assert_eq!(at(2_000), Err(S3ErrorCode::ExpiredToken));
    }
}
