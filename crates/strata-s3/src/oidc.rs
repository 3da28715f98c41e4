//! OpenID Connect identity tokens, for STS `AssumeRoleWithWebIdentity`: a JWT signed by the
//! configured provider (RS256, its key found by `kid` in the provider's JWKS), whose `iss` is the
//! configured issuer, whose `aud` names the configured client id (when one is set), and which has
//! not expired (`exp`, `nbf` with a minute of skew). The token's policy claim (`policy` unless
//! configured otherwise: a string of comma-separated names, or an array) names the IAM policies
//! the session holds.
//!
//! The JWKS is fetched over HTTP from `STRATA_IDENTITY_OPENID_JWKS_URL` when a token names a key
//! not known yet (at most once per [`JWKS_REFETCH_MIN`]) and kept for [`JWKS_MAX_AGE`], so a
//! provider's key rotation is followed. Plain `http://` only for now.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::BodyExt;
use ring::signature::{RsaPublicKeyComponents, RSA_PKCS1_2048_8192_SHA256};
use serde_json::Value;

use crate::error::{S3Error, S3ErrorCode};

/// How long fetched keys are trusted before they are fetched again.
pub const JWKS_MAX_AGE: Duration = Duration::from_secs(300);
/// Least time between two fetches (a token naming an unknown key cannot make us hammer the
/// provider).
pub const JWKS_REFETCH_MIN: Duration = Duration::from_secs(5);
/// Largest JWKS document read, and longest wait for it.
const JWKS_SIZE_MAX: usize = 256 * 1024;
const JWKS_TIMEOUT: Duration = Duration::from_secs(5);
/// Clock skew allowed on `nbf`.
const SKEW_SECS: u64 = 60;

/// The provider, as configured (`STRATA_IDENTITY_OPENID_*`).
#[derive(Debug, Clone)]
pub struct OpenIdConfig {
    pub issuer: String,
    pub jwks_url: String,
    /// Expected in the token's `aud`, when set.
    pub client_id: Option<String>,
    /// The claim naming the session's policies.
    pub claim: String,
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebIdentity {
    pub subject: String,
    pub audience: String,
    pub policies: BTreeSet<String>,
}

/// An RSA public key: modulus and exponent, big-endian.
type RsaKey = (Vec<u8>, Vec<u8>);

struct Keys {
    fetched: Instant,
    /// By `kid`.
    rsa: HashMap<String, RsaKey>,
}

pub struct OpenId {
    pub config: OpenIdConfig,
    keys: tokio::sync::Mutex<Option<Keys>>,
}

impl std::fmt::Debug for OpenId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenId({})", self.config.issuer)
    }
}

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidIdentityToken, message)
}

fn b64url(part: &str) -> Result<Vec<u8>, S3Error> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| invalid("The token is not base64url."))
}

impl OpenId {
    pub fn new(config: OpenIdConfig) -> OpenId {
        OpenId { config, keys: tokio::sync::Mutex::new(None) }
    }

    /// Verifies `token` at `now` (Unix seconds).
    pub async fn verify(&self, token: &str, now: u64) -> Result<WebIdentity, S3Error> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid("The token is not a JWT (header.payload.signature)."));
        };
        let header: Value =
            serde_json::from_slice(&b64url(h)?).map_err(|_| invalid("The token's header is not JSON."))?;
        if header["alg"].as_str() != Some("RS256") {
            return Err(invalid("Only RS256-signed tokens are accepted."));
        }
        let (n, e) = self.key(header["kid"].as_str()).await?;
        let signed = &token[..h.len() + 1 + p.len()];
        RsaPublicKeyComponents { n: &n, e: &e }
            .verify(&RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &b64url(s)?)
            .map_err(|_| invalid("The token's signature does not verify."))?;
        let claims: Value =
            serde_json::from_slice(&b64url(p)?).map_err(|_| invalid("The token's payload is not JSON."))?;
        self.check_claims(&claims, now)
    }

    fn check_claims(&self, claims: &Value, now: u64) -> Result<WebIdentity, S3Error> {
        if claims["iss"].as_str() != Some(self.config.issuer.as_str()) {
            return Err(invalid("The token was not issued by the configured provider."));
        }
        let exp = claims["exp"].as_u64().ok_or_else(|| invalid("The token has no expiry (exp)."))?;
        if exp <= now {
            return Err(S3Error::new(S3ErrorCode::ExpiredTokenException, "Token expired"));
        }
        if claims["nbf"].as_u64().is_some_and(|nbf| nbf > now + SKEW_SECS) {
            return Err(invalid("The token is not valid yet (nbf)."));
        }
        let audiences: Vec<&str> = match &claims["aud"] {
            Value::String(a) => vec![a.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if let Some(client) = &self.config.client_id {
            if !audiences.contains(&client.as_str()) {
                return Err(invalid("The token's audience (aud) is not this deployment's client id."));
            }
        }
        let subject = claims["sub"].as_str().filter(|s| !s.is_empty());
        let subject = subject.ok_or_else(|| invalid("The token has no subject (sub)."))?.to_owned();
        let policies: BTreeSet<String> = match &claims[self.config.claim.as_str()] {
            Value::String(s) => {
                s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect()
            }
            Value::Array(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => BTreeSet::new(),
        };
        let audience = audiences.first().copied().unwrap_or_default().to_owned();
        Ok(WebIdentity { subject, audience, policies })
    }

    /// The key named `kid` (or the only key, for a token naming none), fetching the JWKS when
    /// it is not known or too old.
    async fn key(&self, kid: Option<&str>) -> Result<RsaKey, S3Error> {
        let mut keys = self.keys.lock().await;
        let pick = |k: &Keys| match kid {
            Some(kid) => k.rsa.get(kid).cloned(),
            None if k.rsa.len() == 1 => k.rsa.values().next().cloned(),
            None => None,
        };
        if let Some(k) = keys.as_ref().filter(|k| k.fetched.elapsed() < JWKS_MAX_AGE).and_then(pick) {
            return Ok(k);
        }
        if keys.as_ref().is_none_or(|k| k.fetched.elapsed() >= JWKS_REFETCH_MIN) {
            *keys = Some(Keys { fetched: Instant::now(), rsa: self.fetch().await? });
        }
        keys.as_ref()
            .and_then(pick)
            .ok_or_else(|| invalid("The token's key (kid) is not in the provider's JWKS."))
    }

    async fn fetch(&self) -> Result<HashMap<String, RsaKey>, S3Error> {
        let fail = |what: &str| {
            tracing::warn!(url = %self.config.jwks_url, what, "cannot fetch the OpenID provider's keys");
            S3Error::new(
                S3ErrorCode::IDPCommunicationError,
                "The identity provider's keys cannot be fetched.",
            )
        };
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<http_body_util::Empty<Bytes>>();
        let uri: http::Uri = self.config.jwks_url.parse().map_err(|_| fail("bad URL"))?;
        let get = async {
            let resp = client.get(uri).await.map_err(|_| fail("request failed"))?;
            if !resp.status().is_success() {
                return Err(fail("error status"));
            }
            let body = http_body_util::Limited::new(resp.into_body(), JWKS_SIZE_MAX);
            body.collect().await.map(|c| c.to_bytes()).map_err(|_| fail("body unreadable or too large"))
        };
        let body = tokio::time::timeout(JWKS_TIMEOUT, get).await.map_err(|_| fail("timed out"))??;
        parse_jwks(&body).ok_or_else(|| fail("not a JWKS"))
    }
}

/// The RSA keys of a JWKS document, by `kid` (keys of other types are skipped).
fn parse_jwks(body: &[u8]) -> Option<HashMap<String, RsaKey>> {
    let doc: Value = serde_json::from_slice(body).ok()?;
    let mut out = HashMap::new();
    for key in doc["keys"].as_array()? {
        if key["kty"].as_str() != Some("RSA") {
            continue;
        }
        let (Some(n), Some(e)) = (key["n"].as_str(), key["e"].as_str()) else { continue };
        let (Ok(n), Ok(e)) = (b64url(n), b64url(e)) else { continue };
        out.insert(key["kid"].as_str().unwrap_or_default().to_owned(), (n, e));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openid() -> OpenId {
        OpenId::new(OpenIdConfig {
            issuer: "http://idp".into(),
            jwks_url: "http://127.0.0.1:1/jwks".into(),
            client_id: Some("strata".into()),
            claim: "policy".into(),
        })
    }

    #[test]
    fn claims_are_checked() {
        let o = openid();
        let good = serde_json::json!({"iss": "http://idp", "aud": ["x", "strata"], "exp": 200, "sub": "u1",
                                      "policy": "readonly, readwrite"});
        let id = o.check_claims(&good, 100).expect("valid");
        assert_eq!(id.subject, "u1");
        assert_eq!(id.policies, ["readonly", "readwrite"].iter().map(|s| s.to_string()).collect());
        let with = |k: &str, v: Value| {
            let mut c = good.clone();
            c[k] = v;
            o.check_claims(&c, 100).map_err(|e| e.code)
        };
        assert_eq!(with("iss", "http://other".into()), Err(S3ErrorCode::InvalidIdentityToken));
        assert_eq!(with("exp", 100.into()), Err(S3ErrorCode::ExpiredTokenException));
        assert_eq!(with("exp", Value::Null), Err(S3ErrorCode::InvalidIdentityToken));
        assert_eq!(with("nbf", 1000.into()), Err(S3ErrorCode::InvalidIdentityToken));
        assert_eq!(with("aud", "other".into()), Err(S3ErrorCode::InvalidIdentityToken));
        assert_eq!(with("sub", "".into()), Err(S3ErrorCode::InvalidIdentityToken));
        assert_eq!(with("policy", serde_json::json!(["a", "b"])).map(|i| i.policies.len()), Ok(2));
    }

    #[test]
    fn bad_tokens_and_key_sets_are_refused() {
        let o = openid();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        for token in ["", "a.b", "a.b.c.d", "!!.e30.sig", "e30.e30.sig"] {
            let got = rt.block_on(o.verify(token, 0)).map_err(|e| e.code);
            assert_eq!(got, Err(S3ErrorCode::InvalidIdentityToken), "{token}");
        }
        assert!(parse_jwks(b"{}").is_none());
        let keys =
            parse_jwks(br#"{"keys":[{"kty":"EC","kid":"e"},{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}"#)
                .expect("jwks");
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["r"]);
    }
}
