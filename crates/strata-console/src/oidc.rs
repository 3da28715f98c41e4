//! Sign-in through the deployment's OpenID Connect provider: the authorization-code flow with
//! PKCE. `…/api/oidc/start` sends the browser to the provider's authorization endpoint with a
//! fresh `state`, `nonce` and code challenge, which it also keeps, sealed, in a short-lived
//! cookie of their own (`SameSite=Lax`, so the browser sends it when the provider sends the user
//! back). `…/api/oidc/callback` checks the `state` against that cookie, redeems the code at the
//! token endpoint (with the verifier), verifies the ID token as `AssumeRoleWithWebIdentity` does
//! (signature, issuer, audience, expiry, and here the `nonce`), and opens a console session whose
//! STS credentials hold the policies the token's policy claim names. Every failure goes back to
//! the sign-in page with its reason.

use std::collections::BTreeSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use serde::{Deserialize, Serialize};
use strata_s3::context::Node;
use strata_sign::sigv4::encode_value;
use strata_types::limits::CONSOLE_OIDC_FLOW_SECS;

use crate::session::{cookies_named, Keys};
use crate::signin::{open_session, Who};
use crate::{json_reply, Answer, PREFIX};

/// The cookie holding a sign-in in progress.
const FLOW_COOKIE: &str = "strata_console_oidc";
/// Where the flow's cookie is sent: the start and the callback only.
const FLOW_PATH: &str = "/_strata/console/api/oidc";

/// A sign-in in progress, sealed in its cookie.
#[derive(Serialize, Deserialize)]
struct Flow {
    state: String,
    nonce: String,
    verifier: String,
    /// The `redirect_uri` the authorization request named (the token request repeats it).
    redirect: String,
    /// Unix seconds.
    began: u64,
}

/// `GET …/api/signin/options[?error=CODE]`: what the sign-in page offers besides keys (the
/// provider's button, when one is configured by its discovery document with a client id), and
/// the message of a refusal the page was sent back with.
pub fn options<B>(node: &Node, req: &Request<B>) -> Answer {
    let openid = node
        .openid
        .as_ref()
        .filter(|o| o.config.client_id.is_some())
        .filter(|o| matches!(o.config.provider, strata_system::oidc::Provider::Discovery { .. }))
        .map(|o| {
            let name = o.config.display_name.clone().unwrap_or_else(|| "OpenID Connect".to_owned());
            serde_json::json!({"name": name})
        });
    let query = strata_s3::router::parse_query(req.uri().query().unwrap_or(""));
    let error = query.iter().find(|(k, _)| k == "error").and_then(|(_, code)| refusal(code));
    json_reply(StatusCode::OK, &serde_json::json!({"openid": openid, "error": error}))
}

/// `GET …/api/oidc/start`: to the provider, with the flow's cookie.
pub async fn start<B>(node: &Node, keys: &Keys, req: &Request<B>, tls: bool) -> Answer {
    let Some(openid) = node.openid.as_ref() else {
        return back_with("not-configured");
    };
    let Some(client_id) = openid.config.client_id.as_deref() else {
        return back_with("no-client-id");
    };
    let endpoints = match openid.sign_in_endpoints().await {
        Ok(Some(e)) => e,
        Ok(None) => return back_with("no-endpoints"),
        Err(_) => return back_with("unreachable"),
    };
    let redirect = match &openid.config.redirect_uri {
        Some(r) => r.clone(),
        None => match crate::proxy::host_of(req) {
            Some(host) => format!("{}://{host}{FLOW_PATH}/callback", if tls { "https" } else { "http" }),
            None => return back_with("no-host"),
        },
    };
    let (Some(state), Some(nonce), Some(verifier)) = (random(), random(), random()) else {
        return back_with("no-randomness");
    };
    let challenge =
        URL_SAFE_NO_PAD.encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes()));
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", &redirect),
        ("scope", &openid.config.scopes),
        ("state", &state),
        ("nonce", &nonce),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ];
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", encode_value(v))).collect();
    let join = if endpoints.authorization.contains('?') { '&' } else { '?' };
    let to = format!("{}{join}{}", endpoints.authorization, query.join("&"));
    let flow = Flow { state, nonce, verifier, redirect, began: now };
    let Some(sealed) = keys.seal_value(FLOW_COOKIE, &flow) else {
        return back_with("no-randomness");
    };
    let mut answer = see_other(&to);
    set(&mut answer.headers, &flow_cookie(&sealed, tls));
    answer
}

/// `GET …/api/oidc/callback?code=&state=` (or `error=`): a session, then the console.
pub async fn callback<B>(node: &Node, keys: &Keys, req: &Request<B>, tls: bool) -> Answer {
    let mut answer = match finish(node, keys, req).await {
        Ok(cookie) => {
            let mut a = see_other(&format!("{PREFIX}/#/buckets"));
            if let Ok(v) = HeaderValue::from_str(&crate::session::set_cookie(&cookie, tls)) {
                a.headers.append(http::header::SET_COOKIE, v);
            }
            a
        }
        Err(code) => {
            tracing::info!(
                why = refusal(code).unwrap_or(code),
                "console sign-in through the identity provider refused"
            );
            back_with(code)
        }
    };
    set(&mut answer.headers, &flow_cookie("", tls));
    answer
}

/// The callback's checks and the session: its cookie value, or the refusal's code.
async fn finish<B>(node: &Node, keys: &Keys, req: &Request<B>) -> Result<String, &'static str> {
    let openid = node.openid.as_ref().ok_or("not-configured")?;
    let query = strata_s3::router::parse_query(req.uri().query().unwrap_or(""));
    let field = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let flow: Flow = cookies_named(req.headers(), FLOW_COOKIE)
        .into_iter()
        .find_map(|c| keys.open_value(FLOW_COOKIE, c))
        .filter(|f: &Flow| now.saturating_sub(f.began) <= CONSOLE_OIDC_FLOW_SECS)
        .ok_or("stale")?;
    if field("error").is_some() {
        return Err("refused");
    }
    let state = field("state").unwrap_or_default();
    if !strata_types::constant_time_eq(state.as_bytes(), flow.state.as_bytes()) {
        return Err("state");
    }
    let code = field("code").filter(|c| !c.is_empty()).ok_or("no-code")?;
    let token = openid.redeem(code, &flow.redirect, &flow.verifier).await.map_err(|_| "redeem")?;
    let identity = openid.verify(&token, now).await.map_err(|_| "token")?;
    let nonce = identity.nonce.as_deref().unwrap_or_default();
    if !strata_types::constant_time_eq(nonce.as_bytes(), flow.nonce.as_bytes()) {
        return Err("nonce");
    }
    if identity.policies.is_empty() {
        return Err("no-policy");
    }
    let directory = node.iam.directory();
    if identity.policies.iter().any(|p| !directory.state().policy_exists(p)) {
        return Err("unknown-policy");
    }
    let who = Who { parent: identity.subject, user: identity.name, root: false };
    let policies: BTreeSet<String> = identity.policies;
    open_session(node, keys, who, Some(policies), now).await.map(|(_, cookie)| cookie).map_err(|_| "session")
}

/// 32 random bytes, base64url.
fn random() -> Option<String> {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).ok()?;
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

/// The flow's `Set-Cookie` (`value` empty: the cookie goes).
fn flow_cookie(value: &str, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    let age = if value.is_empty() { 0 } else { CONSOLE_OIDC_FLOW_SECS };
    format!("{FLOW_COOKIE}={value}; Path={FLOW_PATH}; HttpOnly; SameSite=Lax; Max-Age={age}{secure}")
}

fn set(headers: &mut HeaderMap, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        headers.append(http::header::SET_COOKIE, v);
    }
}

fn see_other(to: &str) -> Answer {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(to) {
        headers.insert(http::header::LOCATION, v);
    }
    headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Answer { status: StatusCode::SEE_OTHER, headers, body: Bytes::new() }
}

/// Why a sign-in through the provider was refused: the code the sign-in page is sent back with,
/// and the message it then shows ([`options`] gives it: the page shows only these, so a link
/// cannot put words of its own on the sign-in page).
const REFUSALS: &[(&str, &str)] = &[
    ("not-configured", "No OpenID Connect provider is configured."),
    ("no-client-id", "The OpenID Connect provider has no client id (STRATA_IDENTITY_OPENID_CLIENT_ID)."),
    ("no-endpoints", "The provider's discovery document names no authorization and token endpoints (STRATA_IDENTITY_OPENID_CONFIG_URL is needed for the console's sign-in)."),
    ("unreachable", "The identity provider cannot be reached."),
    ("no-host", "The request names no host."),
    ("no-randomness", "No randomness for the sign-in."),
    ("stale", "The sign-in took too long or was not started here: try again."),
    ("refused", "The identity provider did not sign you in."),
    ("state", "The identity provider's answer is not for this sign-in (state)."),
    ("no-code", "The identity provider gave no code."),
    ("redeem", "The identity provider did not redeem the code."),
    ("token", "The identity provider's token is not valid."),
    ("nonce", "The identity provider's token is not for this sign-in (nonce)."),
    ("no-policy", "The identity provider's token names no policy for this deployment."),
    ("unknown-policy", "The identity provider's token names a policy this deployment does not have."),
    ("session", "The session could not be opened."),
];

/// The message of refusal `code`.
fn refusal(code: &str) -> Option<&'static str> {
    REFUSALS.iter().find(|(c, _)| *c == code).map(|(_, m)| *m)
}

/// Back to the sign-in page, which shows the message of refusal `code`.
fn back_with(code: &str) -> Answer {
    see_other(&format!("{PREFIX}/#/signin?error={}", encode_value(code)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flow_cookie_is_sent_back_from_the_provider_only_to_the_flow() {
        let c = flow_cookie("v", true);
        assert!(c.contains("SameSite=Lax") && c.contains("HttpOnly") && c.contains("; Secure"), "{c}");
        assert!(c.contains(&format!("Path={FLOW_PATH};")) && c.contains("Max-Age=600"), "{c}");
        assert!(flow_cookie("", false).contains("Max-Age=0"));
        assert!(FLOW_PATH.starts_with(PREFIX));
    }

    #[test]
    fn a_flow_sealed_for_its_cookie_opens_only_there() {
        let keys = Keys::new("root", "root-password", b"deployment");
        let flow = Flow {
            state: "s".into(),
            nonce: "n".into(),
            verifier: "v".into(),
            redirect: "r".into(),
            began: 1,
        };
        let sealed = keys.seal_value(FLOW_COOKIE, &flow).expect("sealed");
        let opened: Flow = keys.open_value(FLOW_COOKIE, &sealed).expect("opens");
        assert_eq!((opened.state, opened.nonce, opened.verifier), ("s".into(), "n".into(), "v".into()));
        // Not as a session cookie, and not under another deployment's keys.
        assert!(keys.open(&sealed, 2).is_err());
        let other = Keys::new("root", "another-password", b"deployment");
        assert!(other.open_value::<Flow>(FLOW_COOKIE, &sealed).is_none());
    }

    #[test]
    fn every_refusal_has_one_message() {
        let mut codes: Vec<&str> = REFUSALS.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), REFUSALS.len());
        assert_eq!(refusal("state"), Some("The identity provider's answer is not for this sign-in (state)."));
        assert_eq!(refusal("Your secret expired, enter it at https://elsewhere"), None);
    }
}
