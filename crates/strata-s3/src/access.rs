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

use std::net::SocketAddr;
use std::sync::Arc;

use http::request::Parts;
use strata_iam::{evaluate, ConditionValues, CredentialError, Directory, Policy, Principal, Request};

use crate::authz::{AuthType, Facts};
use crate::error::{S3Error, S3ErrorCode};
use crate::server::Node;
use crate::sigv4::{self, SecretLookup, Verified};

/// What the connection tells about a request; the server puts it in each request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    pub tls: bool,
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
            Err(CredentialError::Expired) if self.directory.state().sessions.contains_key(access_key) => {
                Err(S3Error::new(S3ErrorCode::ExpiredToken, "The provided token has expired."))
            }
            Err(CredentialError::InvalidToken) => Err(S3Error::new(
                S3ErrorCode::InvalidToken,
                "The provided token is malformed or otherwise invalid.",
            )),
            Err(_) => Err(sigv4::unknown_access_key()),
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
    /// [`sigv4::verify`].
    pub fn authenticate(
        node: &Node,
        parts: &Parts,
        now: u64,
        host_bucket: Option<&str>,
    ) -> Result<(Access, Option<Verified>), S3Error> {
        let directory = node.iam.directory();
        let token = session_token(parts);
        let credentials = Credentials { node, directory: &directory, token: token.as_deref(), now };
        let verified = sigv4::verify(parts, &credentials, &node.config.region, now, host_bucket)?;
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

    pub fn is_root(&self) -> bool {
        self.identity == Identity::Root
    }

    /// May this request do `action` on `resource`?
    pub fn allows(
        &self,
        action: &str,
        resource: Option<&str>,
        values: &ConditionValues,
        bucket_policy: Option<&Policy>,
    ) -> bool {
        match &self.identity {
            Identity::Root => true,
            Identity::Key { access_key, token } => {
                match self.directory.caller(access_key, token.as_deref(), self.now) {
                    Ok(caller) => caller.authorize(action, resource, values, bucket_policy).is_allowed(),
                    Err(_) => false,
                }
            }
            Identity::Anonymous => {
                let principal = Principal::anonymous();
                let request = Request { action, resource, principal: &principal, values };
                evaluate(&request, std::iter::empty(), bucket_policy).is_allowed()
            }
        }
    }
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
