//! STS: temporary credentials, served at `POST /` with a form-encoded body
//! (`Action=AssumeRole&Version=2011-06-15&...`).
//!
//! `AssumeRole` is SigV4-signed for the `sts` service as AWS SDKs sign it (the body's hash
//! signed, not sent).
//!
//! The caller must be an enabled IAM user signing with its own long-term keys (not root, which is
//! no IAM user, nor a service account or a session). The credentials act as that user, narrowed
//! by the optional session `Policy`, until `DurationSeconds` (15 minutes to 12 hours, default one
//! hour) have passed; every request made with them must carry the session token
//! (`x-amz-security-token`), checked in constant time. `RoleArn` is accepted and not interpreted:
//! a deployment has no roles, the user is the role (as MinIO serves it). Sessions are stored with
//! the rest of the IAM state, so they work on every node, and are dropped after their expiry.
//!
//! `AssumeRoleWithWebIdentity` is unsigned: its `WebIdentityToken`, an OpenID Connect ID token
//! verified by [`strata_system::oidc`], is the credential. The session's parent is the token's subject
//! (no IAM user) and its rights are the policies the token's policy claim names (each must
//! exist), narrowed by the optional session `Policy`.
//!
//! Errors are STS's `ErrorResponse` documents.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use strata_system::sts::{Issued, SessionRequest};
use strata_types::limits::{
    STS_BODY_SIZE_MAX, STS_DURATION_DEFAULT_SECS, STS_DURATION_MAX_SECS, STS_DURATION_MIN_SECS,
};

use crate::access::Credentials;
use crate::context::{Node, Reply};
use crate::error::{S3Error, S3ErrorCode};
use crate::{sigv4, xml};

const NAMESPACE: &str = "https://sts.amazonaws.com/doc/2011-06-15/";

/// Is this request for STS (rather than S3)? `POST /` with a form body: S3 has no such operation.
pub fn is_sts(parts: &http::request::Parts) -> bool {
    let form = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    parts.method == http::Method::POST && parts.uri.path() == "/" && form
}

fn validation(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::ValidationError, message)
}

/// Serves one STS request; the answer is always an STS document.
pub async fn serve(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    request_id: &str,
) -> (String, Reply) {
    let body = match read_body(node, body).await {
        Ok(b) => b,
        Err(e) => return ("STS".to_owned(), error_reply(&e, request_id)),
    };
    let form = match std::str::from_utf8(&body) {
        Ok(text) => crate::router::parse_query(text),
        Err(_) => return ("STS".to_owned(), error_reply(&validation("The body is not UTF-8."), request_id)),
    };
    let action = form.iter().find(|(k, _)| k == "Action").map(|(_, v)| v.clone()).unwrap_or_default();
    let answered = match action.as_str() {
        "AssumeRole" => assume_role(node, parts, &body, &form).await,
        "AssumeRoleWithWebIdentity" => assume_role_with_web_identity(node, &form).await,
        "" => Err(validation("The request names no Action.")),
        other => Err(S3Error::new(S3ErrorCode::InvalidAction, &format!("Could not find operation {other}"))),
    };
    let name = if action.is_empty() { "STS".to_owned() } else { action.clone() };
    match answered {
        Ok(answer) => (name, answer.reply(&action, request_id)),
        Err(e) => (name, error_reply(&e, request_id)),
    }
}

async fn read_body(node: &Node, body: Incoming) -> Result<Bytes, S3Error> {
    let limited = http_body_util::Limited::new(body, STS_BODY_SIZE_MAX);
    match tokio::time::timeout(node.config.idle_timeout, limited.collect()).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(_)) => Err(S3Error::new(S3ErrorCode::EntityTooLarge, "The request body is too large.")),
        Err(_) => Err(strata_object::BodyError::TimedOut.into()),
    }
}

type Form = [(String, String)];

fn field<'f>(form: &'f Form, name: &str) -> Option<&'f str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The parameters both actions share: lifetime, session name, session policy.
fn session_request(form: &Form) -> Result<SessionRequest, S3Error> {
    let duration_secs = match field(form, "DurationSeconds") {
        None => STS_DURATION_DEFAULT_SECS,
        Some(d) => d
            .parse::<u64>()
            .ok()
            .filter(|d| (STS_DURATION_MIN_SECS..=STS_DURATION_MAX_SECS).contains(d))
            .ok_or_else(|| validation("DurationSeconds must be between 900 and 43200."))?,
    };
    let name = field(form, "RoleSessionName").unwrap_or("session").to_owned();
    let name_ok = (2..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b));
    if !name_ok {
        return Err(validation("RoleSessionName must be 2 to 64 of A-Z a-z 0-9 and _+=,.@-"));
    }
    let policy = field(form, "Policy").filter(|p| !p.is_empty()).map(str::to_owned);
    Ok(SessionRequest { duration_secs, name, policy })
}

/// What an action answers: the credentials, and for AssumeRoleWithWebIdentity the token's
/// subject and audience.
struct Answer {
    issued: Issued,
    web: Option<(String, String)>,
}

/// Makes credentials for `parent` (a user, or with `federated` the named policies), stores
/// them, and tells the other nodes.
async fn issue(
    node: &Node,
    parent: String,
    form: &Form,
    federated: Option<std::collections::BTreeSet<String>>,
) -> Result<Answer, S3Error> {
    let request = session_request(form)?;
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let issued = strata_system::sts::issue(&node.iam, &node.layer, parent, request, federated, now).await?;
    node.layer.tell_peers(strata_object::SharedState::Iam).await;
    Ok(Answer { issued, web: None })
}

async fn assume_role(
    node: &Node,
    parts: &http::request::Parts,
    body: &[u8],
    form: &Form,
) -> Result<Answer, S3Error> {
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let directory = node.iam.directory();
    let token = crate::access::session_token(parts);
    let credentials = Credentials { node, directory: &directory, token: token.as_deref(), now };
    let hash = strata_sign::sha256_hex(body);
    let verified = sigv4::verify_sts(parts, &credentials, &node.config.region, now, &hash)?
        .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied, "STS requests must be signed."))?;
    if !directory.state().users.contains_key(&verified.access_key) {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Only IAM users (with their own keys) can assume roles; root, service accounts and sessions cannot.",
        ));
    }
    issue(node, verified.access_key, form, None).await
}

/// AssumeRoleWithWebIdentity: unsigned; the identity token is the credential.
async fn assume_role_with_web_identity(node: &Node, form: &Form) -> Result<Answer, S3Error> {
    let Some(openid) = &node.openid else {
        return Err(S3Error::new(
            S3ErrorCode::InvalidIdentityToken,
            "No OpenID Connect provider is configured (STRATA_IDENTITY_OPENID_CONFIG_URL or _JWKS_URL).",
        ));
    };
    let token = field(form, "WebIdentityToken").ok_or_else(|| validation("WebIdentityToken is required."))?;
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let identity = openid.verify(token, now).await?;
    if identity.policies.is_empty() {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            &format!("The token's {} claim names no policy.", openid.config.claim),
        ));
    }
    let state = node.iam.directory();
    if let Some(missing) = identity.policies.iter().find(|p| !state.state().policy_exists(p)) {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            &format!("The token names unknown policy {missing:?}."),
        ));
    }
    let mut answer = issue(node, identity.subject.clone(), form, Some(identity.policies)).await?;
    answer.web = Some((identity.subject, identity.audience));
    Ok(answer)
}

impl Answer {
    /// The action's response document.
    fn reply(&self, action: &str, request_id: &str) -> Reply {
        let issued = &self.issued;
        let mut x = xml::Writer::new();
        x.open_ns(&format!("{action}Response"), NAMESPACE);
        x.open(&format!("{action}Result"));
        if let Some((subject, audience)) = &self.web {
            x.elem("SubjectFromWebIdentityToken", subject);
            x.elem("Audience", audience);
        }
        x.open("AssumedRoleUser");
        x.elem("Arn", &format!("arn:aws:sts:::assumed-role/{}/{}", issued.parent, issued.name));
        x.elem("AssumedRoleId", &format!("{}:{}", issued.access_key, issued.name));
        x.close("AssumedRoleUser");
        x.open("Credentials");
        x.elem("AccessKeyId", &issued.access_key);
        x.elem("SecretAccessKey", &issued.secret);
        x.elem("SessionToken", &issued.token);
        x.elem("Expiration", &strata_types::time::iso8601(issued.expiry * 1_000_000_000));
        x.close("Credentials");
        x.close(&format!("{action}Result"));
        x.open("ResponseMetadata");
        x.elem("RequestId", request_id);
        x.close("ResponseMetadata");
        x.close(&format!("{action}Response"));
        Reply::xml(x.finish())
    }
}

/// STS's error document (`ErrorResponse`), which STS clients parse.
fn error_reply(e: &S3Error, request_id: &str) -> Reply {
    let mut x = xml::Writer::new();
    x.open_ns("ErrorResponse", NAMESPACE);
    x.open("Error");
    let sender = e.code.status().is_client_error();
    x.elem("Type", if sender { "Sender" } else { "Receiver" });
    x.elem("Code", e.code.as_str());
    x.elem("Message", &e.message);
    x.close("Error");
    x.elem("RequestId", request_id);
    x.close("ErrorResponse");
    let mut reply = Reply::xml(x.finish());
    reply.status = e.code.status();
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn sts_requests_are_form_posts_to_the_root() {
        let req = |method: &str, path: &str, ct: &str| {
            let (parts, ()) = http::Request::builder()
                .method(method)
                .uri(path)
                .header("content-type", ct)
                .body(())
                .expect("request")
                .into_parts();
            is_sts(&parts)
        };
        assert!(req("POST", "/", "application/x-www-form-urlencoded; charset=utf-8"));
        assert!(!req("POST", "/bucket", "application/x-www-form-urlencoded"));
        assert!(!req("POST", "/", "multipart/form-data; boundary=x"));
        assert!(!req("GET", "/", "application/x-www-form-urlencoded"));
        let reply = error_reply(&validation("bad"), "R1");
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    }
}
