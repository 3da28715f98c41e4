//! OpenID Connect identity tokens, for STS `AssumeRoleWithWebIdentity`: a JWT signed by the
//! configured provider (RS256, its key found by `kid` in the provider's JWKS), whose `iss` is the
//! configured issuer, whose `aud` names the configured client id (when one is set), and which has
//! not expired (`exp`, `nbf` with a minute of skew). The token's policy claim (`policy` unless
//! configured otherwise: a string of comma-separated names, or an array) names the IAM policies
//! the session holds.
//!
//! The provider is found either by its discovery document (`.../.well-known/openid-configuration`,
//! `STRATA_IDENTITY_OPENID_CONFIG_URL` as MinIO's `MINIO_IDENTITY_OPENID_CONFIG_URL`), which names
//! its `issuer` and `jwks_uri`, or by both given directly (`..._JWKS_URL` and `..._ISSUER`). The
//! keys (and the discovery document) are fetched over `https://` (trusting the system's roots
//! and the server's `certs/CAs/`) or `http://` when a token names a key not known yet (at most
//! once per [`JWKS_REFETCH_MIN`]) and kept for [`JWKS_MAX_AGE`], so a provider's key rotation is
//! followed.
//!
//! The web console signs users in through the same provider by OpenID Connect's
//! authorization-code flow (with PKCE): the discovery document's `authorization_endpoint` and
//! `token_endpoint` ([`OpenId::sign_in_endpoints`]), the code redeemed for an ID token
//! ([`OpenId::redeem`]), which is then verified as any other.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use aws_lc_rs::signature::{RsaPublicKeyComponents, RSA_PKCS1_2048_8192_SHA256};
use base64::Engine;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use strata_types::limits::{JWKS_MAX_AGE, JWKS_REFETCH_MIN, JWKS_SIZE_MAX, JWKS_TIMEOUT, OIDC_CLOCK_SKEW};

/// Where the provider's issuer name and keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    /// The provider's discovery document (`issuer`, `jwks_uri`), by URL.
    Discovery { config_url: String },
    /// Both given.
    Direct { issuer: String, jwks_url: String },
}

/// The provider, as configured (`STRATA_IDENTITY_OPENID_*`).
#[derive(Clone)]
pub struct OpenIdConfig {
    pub provider: Provider,
    /// Expected in the token's `aud`, when set.
    pub client_id: Option<String>,
    /// The claim naming the session's policies.
    pub claim: String,
    /// The console's sign-in: the client's secret at the token endpoint (none for a public
    /// client, which PKCE protects), the scopes asked for, where the provider sends the browser
    /// back (by default the console's own callback on the address the browser used), and the
    /// button's name.
    pub client_secret: Option<String>,
    pub scopes: String,
    pub redirect_uri: Option<String>,
    pub display_name: Option<String>,
    /// Whom an `https://` provider URL is trusted as.
    pub tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for OpenIdConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenIdConfig")
            .field("provider", &self.provider)
            .field("client_id", &self.client_id)
            .field("claim", &self.claim)
            .field("scopes", &self.scopes)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Why a token was not accepted. The S3 layer answers each with STS's code:
/// `InvalidIdentityToken`, `ExpiredTokenException` and `IDPCommunicationError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// The token is malformed, not signed by the provider, or its claims do not hold.
    #[error("{0}")]
    Invalid(&'static str),
    #[error("Token expired")]
    Expired,
    /// The provider's keys could not be fetched (the reason is logged).
    #[error("The identity provider's keys cannot be fetched.")]
    Unreachable,
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebIdentity {
    pub subject: String,
    pub audience: String,
    pub policies: BTreeSet<String>,
    /// The `nonce` claim, which a sign-in compares with the one it sent.
    pub nonce: Option<String>,
    /// A name to show: `preferred_username`, else `email`, else the subject.
    pub name: String,
}

/// Where the console's sign-in goes at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInEndpoints {
    pub authorization: String,
    pub token: String,
}

/// An RSA public key: modulus and exponent, big-endian.
type RsaKey = (Vec<u8>, Vec<u8>);

struct Keys {
    fetched: Instant,
    /// The issuer tokens must name (from the discovery document, or as configured).
    issuer: String,
    /// From the discovery document, when it names both.
    endpoints: Option<SignInEndpoints>,
    /// By `kid`.
    rsa: HashMap<String, RsaKey>,
}

pub struct OpenId {
    pub config: OpenIdConfig,
    keys: tokio::sync::Mutex<Option<Keys>>,
}

impl std::fmt::Debug for OpenId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenId({:?})", self.config.provider)
    }
}

fn invalid(message: &'static str) -> OidcError {
    OidcError::Invalid(message)
}

fn b64url(part: &str) -> Result<Vec<u8>, OidcError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| invalid("The token is not base64url."))
}

impl OpenId {
    pub fn new(config: OpenIdConfig) -> OpenId {
        OpenId { config, keys: tokio::sync::Mutex::new(None) }
    }

    /// Verifies `token` at `now` (Unix seconds).
    pub async fn verify(&self, token: &str, now: u64) -> Result<WebIdentity, OidcError> {
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
        let (issuer, (n, e)) = self.key(header["kid"].as_str()).await?;
        let signed = &token[..h.len() + 1 + p.len()];
        RsaPublicKeyComponents { n: &n, e: &e }
            .verify(&RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &b64url(s)?)
            .map_err(|_| invalid("The token's signature does not verify."))?;
        let claims: Value =
            serde_json::from_slice(&b64url(p)?).map_err(|_| invalid("The token's payload is not JSON."))?;
        self.check_claims(&claims, &issuer, now)
    }

    fn check_claims(&self, claims: &Value, issuer: &str, now: u64) -> Result<WebIdentity, OidcError> {
        if claims["iss"].as_str() != Some(issuer) {
            return Err(invalid("The token was not issued by the configured provider."));
        }
        let exp = claims["exp"].as_u64().ok_or_else(|| invalid("The token has no expiry (exp)."))?;
        if exp <= now {
            return Err(OidcError::Expired);
        }
        if claims["nbf"].as_u64().is_some_and(|nbf| nbf > now + OIDC_CLOCK_SKEW.as_secs()) {
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
            // A token for several audiences names the one it was issued to (OpenID Connect
            // Core, the `azp` claim): it must be this deployment.
            if claims["azp"].as_str().is_some_and(|azp| azp != client) {
                return Err(invalid("The token was issued to another party (azp)."));
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
        let nonce = claims["nonce"].as_str().map(str::to_owned);
        let name = ["preferred_username", "email"]
            .iter()
            .find_map(|c| claims[*c].as_str().filter(|n| !n.is_empty()))
            .unwrap_or(&subject)
            .to_owned();
        Ok(WebIdentity { subject, audience, policies, nonce, name })
    }

    /// The provider's authorization and token endpoints, for the console's sign-in: `None` when
    /// the provider was configured without a discovery document, or its document names none.
    pub async fn sign_in_endpoints(&self) -> Result<Option<SignInEndpoints>, OidcError> {
        if !matches!(self.config.provider, Provider::Discovery { .. }) {
            return Ok(None);
        }
        let mut keys = self.keys.lock().await;
        if keys.as_ref().is_none_or(|k| k.fetched.elapsed() >= JWKS_MAX_AGE) {
            let fetched = tokio::time::timeout(JWKS_TIMEOUT, self.fetch()).await;
            *keys = Some(fetched.map_err(|_| unreachable_provider("provider", "timed out"))??);
        }
        Ok(keys.as_ref().and_then(|k| k.endpoints.clone()))
    }

    /// Redeems an authorization `code` at the token endpoint (with the PKCE `verifier`, and the
    /// client's id and secret), answering the ID token it gives; not yet verified.
    pub async fn redeem(&self, code: &str, redirect_uri: &str, verifier: &str) -> Result<String, OidcError> {
        let endpoints = self.sign_in_endpoints().await?;
        let token_url = endpoints.map(|e| e.token).ok_or(invalid("The provider has no token endpoint."))?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        if let Some(id) = &self.config.client_id {
            form.push(("client_id", id));
        }
        if let Some(secret) = &self.config.client_secret {
            form.push(("client_secret", secret));
        }
        let body: Vec<String> =
            form.iter().map(|(k, v)| format!("{k}={}", strata_sign::sigv4::encode_value(v))).collect();
        let post = Some(("application/x-www-form-urlencoded", Bytes::from(body.join("&"))));
        let answer = tokio::time::timeout(JWKS_TIMEOUT, self.request(&token_url, post))
            .await
            .map_err(|_| unreachable_provider(&token_url, "timed out"))??;
        let doc: Value = serde_json::from_slice(&answer)
            .map_err(|_| unreachable_provider(&token_url, "the answer is not JSON"))?;
        doc["id_token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| unreachable_provider(&token_url, "the answer has no id_token"))
    }

    /// The issuer and the key named `kid` (or the only key, for a token naming none), fetching
    /// the keys when they are not known or too old.
    async fn key(&self, kid: Option<&str>) -> Result<(String, RsaKey), OidcError> {
        let mut keys = self.keys.lock().await;
        let pick = |k: &Keys| {
            let key = match kid {
                Some(kid) => k.rsa.get(kid).cloned(),
                None if k.rsa.len() == 1 => k.rsa.values().next().cloned(),
                None => None,
            };
            key.map(|key| (k.issuer.clone(), key))
        };
        if let Some(k) = keys.as_ref().filter(|k| k.fetched.elapsed() < JWKS_MAX_AGE).and_then(pick) {
            return Ok(k);
        }
        if keys.as_ref().is_none_or(|k| k.fetched.elapsed() >= JWKS_REFETCH_MIN) {
            let fetched = tokio::time::timeout(JWKS_TIMEOUT, self.fetch()).await;
            *keys = Some(fetched.map_err(|_| unreachable_provider("provider", "timed out"))??);
        }
        keys.as_ref()
            .and_then(pick)
            .ok_or_else(|| invalid("The token's key (kid) is not in the provider's JWKS."))
    }

    /// The issuer and keys: from the discovery document first when configured so.
    async fn fetch(&self) -> Result<Keys, OidcError> {
        let (discovered, jwks_url) = match &self.config.provider {
            Provider::Direct { issuer, jwks_url } => {
                (Discovered { issuer: issuer.clone(), endpoints: None }, jwks_url.clone())
            }
            Provider::Discovery { config_url } => {
                let body = self.request(config_url, None).await?;
                parse_discovery(&body)
                    .ok_or_else(|| unreachable_provider(config_url, "not a discovery document"))?
            }
        };
        let body = self.request(&jwks_url, None).await?;
        let rsa = parse_jwks(&body).ok_or_else(|| unreachable_provider(&jwks_url, "not a JWKS"))?;
        Ok(Keys { fetched: Instant::now(), issuer: discovered.issuer, endpoints: discovered.endpoints, rsa })
    }

    /// GET `url` (`http://` or `https://`), or POST `body` (content type, bytes) to it: its
    /// body up to [`JWKS_SIZE_MAX`].
    async fn request(&self, url: &str, body: Option<(&str, Bytes)>) -> Result<Bytes, OidcError> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*self.config.tls).clone())
            .https_or_http()
            .enable_http1()
            .build();
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build::<_, http_body_util::Full<Bytes>>(connector);
        let uri: http::Uri = url.parse().map_err(|_| unreachable_provider(url, "bad URL"))?;
        let mut req = http::Request::builder().uri(uri).header(http::header::ACCEPT, "application/json");
        req = match &body {
            Some((content_type, _)) => {
                req.method(http::Method::POST).header(http::header::CONTENT_TYPE, *content_type)
            }
            None => req.method(http::Method::GET),
        };
        let req = req
            .body(http_body_util::Full::new(body.map(|(_, b)| b).unwrap_or_default()))
            .map_err(|_| unreachable_provider(url, "bad request"))?;
        let resp = client
            .request(req)
            .await
            .map_err(|e| unreachable_provider(url, &format!("request failed: {e}")))?;
        if !resp.status().is_success() {
            return Err(unreachable_provider(url, &format!("answered {}", resp.status())));
        }
        let body = http_body_util::Limited::new(resp.into_body(), JWKS_SIZE_MAX);
        body.collect()
            .await
            .map(|c| c.to_bytes())
            .map_err(|_| unreachable_provider(url, "body unreadable or too large"))
    }
}

/// The provider could not be asked (logged with the reason; the client sees the STS code only).
fn unreachable_provider(url: &str, what: &str) -> OidcError {
    tracing::warn!(url, what, "cannot reach the OpenID provider");
    OidcError::Unreachable
}

/// What a discovery document says of the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Discovered {
    issuer: String,
    endpoints: Option<SignInEndpoints>,
}

/// The issuer, the sign-in endpoints and `jwks_uri` of an OpenID discovery document.
fn parse_discovery(body: &[u8]) -> Option<(Discovered, String)> {
    let doc: Value = serde_json::from_slice(body).ok()?;
    let text = |name: &str| doc[name].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let issuer = text("issuer")?;
    let jwks = text("jwks_uri")?;
    let endpoints = match (text("authorization_endpoint"), text("token_endpoint")) {
        (Some(authorization), Some(token)) => Some(SignInEndpoints { authorization, token }),
        _ => None,
    };
    Some((Discovered { issuer, endpoints }, jwks))
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
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        OpenId::new(OpenIdConfig {
            provider: Provider::Direct {
                issuer: "http://idp".into(),
                jwks_url: "http://127.0.0.1:1/jwks".into(),
            },
            client_id: Some("strata".into()),
            claim: "policy".into(),
            client_secret: None,
            scopes: "openid".into(),
            redirect_uri: None,
            display_name: None,
            tls: Arc::new(tls),
        })
    }

    #[test]
    fn claims_are_checked() {
        let o = openid();
        let good = serde_json::json!({"iss": "http://idp", "aud": ["x", "strata"], "exp": 200, "sub": "u1",
                                      "policy": "readonly, readwrite"});
        let id = o.check_claims(&good, "http://idp", 100).expect("valid");
        assert_eq!(id.subject, "u1");
        assert_eq!(id.policies, ["readonly", "readwrite"].iter().map(|s| s.to_string()).collect());
        let with = |k: &str, v: Value| {
            let mut c = good.clone();
            c[k] = v;
            o.check_claims(&c, "http://idp", 100).map_err(|e| matches!(e, OidcError::Invalid(_)))
        };
        let invalid = Err(true);
        assert_eq!(with("iss", "http://other".into()), invalid);
        assert_eq!(with("azp", "someone-else".into()), invalid);
        assert!(with("azp", "strata".into()).is_ok());
        assert_eq!(
            o.check_claims(
                &serde_json::json!({"iss": "http://idp", "aud": "strata", "exp": 100, "sub": "u"}),
                "http://idp",
                100
            ),
            Err(OidcError::Expired)
        );
        assert_eq!(with("exp", Value::Null), invalid);
        assert_eq!(with("nbf", 1000.into()), invalid);
        assert_eq!(with("aud", "other".into()), invalid);
        assert_eq!(with("sub", "".into()), invalid);
        assert_eq!(with("policy", serde_json::json!(["a", "b"])).map(|i| i.policies.len()), Ok(2));
    }

    #[test]
    fn bad_tokens_and_key_sets_are_refused() {
        let o = openid();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        for token in ["", "a.b", "a.b.c.d", "!!.e30.sig", "e30.e30.sig"] {
            let got = rt.block_on(o.verify(token, 0));
            assert!(matches!(got, Err(OidcError::Invalid(_))), "{token}: {got:?}");
        }
        assert!(parse_jwks(b"{}").is_none());
        let keys =
            parse_jwks(br#"{"keys":[{"kty":"EC","kid":"e"},{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}"#)
                .expect("jwks");
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["r"]);
        let doc = br#"{"issuer":"https://idp","jwks_uri":"https://idp/keys","id_token_signing_alg_values_supported":["RS256"]}"#;
        let issuer_only = Discovered { issuer: "https://idp".into(), endpoints: None };
        assert_eq!(parse_discovery(doc), Some((issuer_only, "https://idp/keys".into())));
        let full = br#"{"issuer":"https://idp","jwks_uri":"https://idp/keys",
            "authorization_endpoint":"https://idp/auth","token_endpoint":"https://idp/token"}"#;
        let endpoints =
            SignInEndpoints { authorization: "https://idp/auth".into(), token: "https://idp/token".into() };
        assert_eq!(parse_discovery(full).and_then(|(d, _)| d.endpoints), Some(endpoints));
        assert_eq!(parse_discovery(br#"{"issuer":"https://idp"}"#), None);
        assert_eq!(parse_discovery(br#"{"issuer":"","jwks_uri":"x"}"#), None);
    }
}
