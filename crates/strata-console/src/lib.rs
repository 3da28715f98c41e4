//! The web console, served by `strata server` under [`PREFIX`] on the S3 port: its page and
//! assets (part of the binary, [`assets`]), sign-in into a sealed session cookie ([`session`],
//! [`signin`]), and its calls, which are S3 and admin API requests signed with the session's
//! credentials and answered by the server's own front door ([`proxy`]): `…/api/s3/PATH` is
//! `/PATH`, `…/api/admin/OP` Strata's admin API and `…/api/minio/OP` MinIO's (`info`).
//!
//! Every call under `…/api/` but the sign-in (with keys, or through the OpenID Connect
//! provider: [`oidc`]) needs the session cookie; every one that changes something also needs the
//! session's CSRF token in [`session::CSRF_HEADER`].

pub mod assets;
pub mod oidc;
pub mod proxy;
pub mod session;
pub mod signin;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use strata_s3::body::ResponseBody;
use strata_s3::context::{ConnInfo, Node};
use strata_types::limits::CONSOLE_SHARE_SECS_MAX;

use crate::session::{Keys, Refused, Session};

/// Where the console lives on the S3 port (no bucket is named with `_`, so no bucket's path).
pub const PREFIX: &str = "/_strata/console";
/// The header the page sends with its sign-in (a form on another site cannot).
pub const CONSOLE_HEADER: &str = "x-strata-console";
/// The header of the page's own polling, which does not keep a session from going idle.
pub const BACKGROUND_HEADER: &str = "x-strata-background";
/// Where the console's calls reach the admin API, and MinIO's (for `info`).
const ADMIN_PREFIX: &str = "/_strata/admin/v1/";
const MINIO_ADMIN_PREFIX: &str = "/minio/admin/v3/";

/// The front door, to answer a call made as the signed-in identity.
pub type Forward = Box<dyn FnOnce(Request<Incoming>) -> BoxFuture<'static, Response<ResponseBody>> + Send>;

/// Whether a request is the console's.
pub fn is_console(path: &str) -> bool {
    path == PREFIX || path.starts_with(&format!("{PREFIX}/"))
}

/// A console answer before it becomes a response.
pub struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn with_cookie(mut self, value: &str, tls: bool) -> Self {
        if let Ok(v) = HeaderValue::from_str(&session::set_cookie(value, tls)) {
            self.headers.append(http::header::SET_COOKIE, v);
        }
        self
    }

    fn into_response(self) -> Response<ResponseBody> {
        let mut resp = Response::new(ResponseBody::Full(Some(self.body)));
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers;
        resp
    }
}

fn json_reply(status: StatusCode, value: &serde_json::Value) -> Answer {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Answer { status, headers, body: Bytes::from(value.to_string()) }
}

/// The console's error document: `{"code", "message"}`.
fn json_error(status: StatusCode, code: &str, message: &str) -> Answer {
    json_reply(status, &serde_json::json!({"code": code, "message": message}))
}

/// Answers a console request; `tls`: whether it came over TLS.
pub async fn serve(
    node: &Node,
    req: Request<Incoming>,
    tls: bool,
    forward: Forward,
) -> Response<ResponseBody> {
    let salt = node.layer.deployment_id();
    let keys = Keys::of(&node.config.root_user, &node.config.root_password, salt.as_bytes());
    let path = req.uri().path().to_owned();
    let rest = path.strip_prefix(PREFIX).unwrap_or("");
    let method = req.method().clone();
    let answer = match (&method, rest) {
        (&Method::GET | &Method::HEAD, "") => redirect(&format!("{PREFIX}/")),
        (&Method::GET | &Method::HEAD, _) if !rest.starts_with("/api/") => assets::serve(rest, req.headers()),
        (&Method::POST, "/api/signin") => {
            let (parts, body) = req.into_parts();
            let from = parts.extensions.get::<ConnInfo>().and_then(|c| c.peer).map(|p| p.ip());
            signin::sign_in(node, &keys, &parts.headers, body, tls, from).await
        }
        (&Method::GET, "/api/signin/options") => oidc::options(node, &req),
        (&Method::GET, "/api/oidc/start") => oidc::start(node, &keys, &req, tls).await,
        (&Method::GET, "/api/oidc/callback") => oidc::callback(node, &keys, &req, tls).await,
        _ if rest.starts_with("/api/") => {
            return with_session(node, &keys, req, rest, tls, forward).await;
        }
        _ => json_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "Not a console call."),
    };
    secure(answer.into_response())
}

/// The calls that need a session.
async fn with_session(
    node: &Node,
    keys: &Keys,
    req: Request<Incoming>,
    rest: &str,
    tls: bool,
    forward: Forward,
) -> Response<ResponseBody> {
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    // Calls come from the console's own page: a browser says where a request comes from, and
    // one from another site (even a host of the same site) is refused.
    let from = req.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if from.is_some_and(|f| f != "same-origin" && f != "none") {
        let e = json_error(
            StatusCode::FORBIDDEN,
            "CrossSiteRequest",
            "Console calls come from the console's own page.",
        );
        return secure(e.into_response());
    }
    // The first cookie that opens (another host of the site may have set one of its own).
    let mut opened = Err(Refused::Missing);
    for c in session::cookies_of(req.headers()) {
        opened = keys.open(c, now);
        if opened.is_ok() {
            break;
        }
    }
    let mut session = match opened {
        Ok(s) if signin::still_valid(node, &s, now) => s,
        Ok(_) => return signed_out(Refused::Expired, tls),
        Err(why) => return signed_out(why, tls),
    };
    let given = req.headers().get(session::CSRF_HEADER).and_then(|v| v.to_str().ok());
    if !proxy::is_safe(req.method()) && !keys.csrf_ok(&session.access_key, given) {
        let e = json_error(
            StatusCode::FORBIDDEN,
            "InvalidCsrfToken",
            "The request's CSRF token is missing or wrong: reload the page.",
        );
        return secure(e.into_response());
    }
    // The idle clock restarts with each call the user makes, written back into the cookie now
    // and then; the page's own polling (the overview's samples) says so and does not count.
    let background = req.headers().contains_key(BACKGROUND_HEADER);
    let refreshed = (!background && session.needs_refresh(now)).then(|| {
        session.seen = now;
        keys.seal(&session)
    });
    let mut resp = match (req.method().clone(), rest) {
        (Method::GET, "/api/session") => {
            json_reply(StatusCode::OK, &signin::describe(keys, &session)).into_response()
        }
        (Method::POST, "/api/signout") => {
            return secure(signin::sign_out(node, &session, tls).await.into_response())
        }
        (Method::GET, "/api/share") => share(node, &session, &req, tls).await.into_response(),
        (_, _) if ["/api/s3/", "/api/admin/", "/api/minio/"].iter().any(|p| rest.starts_with(p)) => {
            let query = req.uri().query();
            let (target, query) = if let Some(s3) = rest.strip_prefix("/api/s3") {
                proxy::s3_target(s3, query)
            } else if let Some(op) = rest.strip_prefix("/api/admin/") {
                (format!("{ADMIN_PREFIX}{op}"), query.map(str::to_owned))
            } else {
                let op = rest.strip_prefix("/api/minio/").unwrap_or("");
                (format!("{MINIO_ADMIN_PREFIX}{op}"), query.map(str::to_owned))
            };
            match proxy::signed(node, &session, req, &target, query) {
                Ok(signed) => sandboxed(forward(signed).await),
                Err(e) => json_error(StatusCode::BAD_REQUEST, "InvalidRequest", &e).into_response(),
            }
        }
        _ => json_error(StatusCode::NOT_FOUND, "NoSuchCall", "Not a console call.").into_response(),
    };
    if let Some(Some(cookie)) = refreshed {
        if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&cookie, tls)) {
            resp.headers_mut().append(http::header::SET_COOKIE, v);
        }
    }
    secure(resp)
}

/// `401` with the reason, and the cookie cleared.
fn signed_out(why: Refused, tls: bool) -> Response<ResponseBody> {
    let code = match why {
        Refused::Missing => "NotSignedIn",
        Refused::Expired | Refused::Idle => "SessionExpired",
    };
    secure(json_error(StatusCode::UNAUTHORIZED, code, why.message()).with_cookie("", tls).into_response())
}

/// `GET …/api/share?bucket=&key=[&versionId=]&expires=SECONDS`: a presigned GET, valid for at
/// most 7 days and never past the session's own end (its credentials sign it). Whether the
/// identity may read the object is decided when the link is used.
async fn share(node: &Node, session: &Session, req: &Request<Incoming>, tls: bool) -> Answer {
    let query = strata_s3::router::parse_query(req.uri().query().unwrap_or(""));
    let field = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let (Some(bucket), Some(key)) = (field("bucket"), field("key")) else {
        return json_error(StatusCode::BAD_REQUEST, "InvalidRequest", "Name the bucket and the key.");
    };
    if strata_types::names::BucketName::parse(bucket).is_err() {
        return json_error(StatusCode::BAD_REQUEST, "InvalidBucketName", "The bucket name is not valid.");
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let asked: u64 = match field("expires").map(str::parse) {
        None => 3600,
        Some(Ok(n)) if n >= 1 => n,
        Some(_) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "expires must be a number of seconds.",
            )
        }
    };
    let expires = asked.min(CONSOLE_SHARE_SECS_MAX).min(session.expiry.saturating_sub(now));
    let path = strata_sign::sigv4::encode_path(&format!("/{bucket}/{key}"));
    let version = field("versionId").map(|v| format!("versionId={}", strata_sign::sigv4::encode_path(v)));
    let Some(host) = proxy::host_of(req) else {
        return json_error(StatusCode::BAD_REQUEST, "InvalidRequest", "The request names no host.");
    };
    let host = proxy::s3_host(node, &host);
    let url = proxy::share_url(node, session, &host, tls, &path, version.as_deref().unwrap_or(""), expires);
    json_reply(
        StatusCode::OK,
        &serde_json::json!({"url": url, "expires": now + expires, "shortened": expires < asked}),
    )
}

fn redirect(to: &str) -> Answer {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(to) {
        headers.insert(http::header::LOCATION, v);
    }
    Answer { status: StatusCode::SEE_OTHER, headers, body: Bytes::new() }
}

/// The headers every console answer carries: its page runs only its own scripts, is never
/// framed, and sends no referrer (a share link in the page's URL stays there).
fn secure(mut resp: Response<ResponseBody>) -> Response<ResponseBody> {
    let h = resp.headers_mut();
    h.entry(http::header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(
        "default-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; object-src 'none'; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    resp
}

/// An object's bytes, answered on the console's origin, never run as a page of it (an HTML
/// object someone uploaded must not script the console), and never kept by a cache (they were
/// read with the session's rights).
fn sandboxed(mut resp: Response<ResponseBody>) -> Response<ResponseBody> {
    let h = resp.headers_mut();
    h.insert(http::header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    h.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    resp
}
