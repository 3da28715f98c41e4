//! The console's calls, made as the signed-in identity: a request under `…/api/s3/` is an S3
//! request and one under `…/api/admin/` an admin API request, signed here with the session's
//! credentials (SigV4, the body unsigned and streamed as it comes) and answered by the server's
//! own front door. So the console can do exactly what its identity may, checked by the same
//! code as any client's request, and an upload streams through without being held.

use http::{HeaderMap, HeaderName, HeaderValue, Method, Request};
use hyper::body::Incoming;
use strata_s3::context::Node;
use strata_sign::sigv4::{Signer, UNSIGNED_PAYLOAD};

use crate::session::Session;

/// Headers of the browser's request that are not passed on: the session's cookie and CSRF
/// token, any credentials of its own, and what only the page's origin means.
const DROPPED: [&str; 8] = [
    "cookie",
    crate::session::CSRF_HEADER,
    crate::CONSOLE_HEADER,
    "authorization",
    "x-amz-security-token",
    "x-amz-date",
    "x-amz-content-sha256",
    "origin",
];

/// `req` (already stripped of the console's prefix: `path` is the S3 or admin path) made into
/// a request signed with `session`'s credentials.
pub fn signed(
    node: &Node,
    session: &Session,
    mut req: Request<Incoming>,
    path: &str,
    query: Option<String>,
) -> Result<Request<Incoming>, String> {
    let uri = match &query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let host = host_of(&req).ok_or("the request names no host")?;
    *req.uri_mut() = uri.parse().map_err(|_| "the path is not a valid URI".to_owned())?;
    let headers = req.headers_mut();
    for name in DROPPED {
        headers.remove(name);
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let amz_date = strata_types::time::amz_date(now);
    set(headers, "host", &host)?;
    set(headers, "x-amz-date", &amz_date)?;
    set(headers, "x-amz-content-sha256", UNSIGNED_PAYLOAD)?;
    set(headers, "x-amz-security-token", &session.token)?;
    let to_sign = signed_headers(headers);
    let signer = signer_of(node, session, &amz_date);
    let method = req.method().as_str().to_owned();
    let auth =
        signer.authorization(&method, path, query.as_deref().unwrap_or(""), &to_sign, UNSIGNED_PAYLOAD);
    set(req.headers_mut(), "authorization", &auth)?;
    Ok(req)
}

/// The S3 path and query of a console call under `…/api/s3` (`rest`: what follows it): as they
/// are, or, for a key the page sent as `console-key` (one with `.` or `..` segments, which
/// browsers resolve away in a path), with that key put back into the path.
pub fn s3_target(rest: &str, query: Option<&str>) -> (String, Option<String>) {
    let Some(query) = query else { return (rest.to_owned(), None) };
    let mut key = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("console-key=") {
            Some(v) if key.is_none() => key = Some(percent_decode(v)),
            _ => kept.push(pair),
        }
    }
    let kept = (!kept.is_empty()).then(|| kept.join("&"));
    match key {
        Some(k) => {
            let bucket = rest.trim_end_matches('/');
            (format!("{bucket}/{}", strata_sign::sigv4::encode_path(&k)), kept)
        }
        None => (rest.to_owned(), Some(query.to_owned())),
    }
}

fn percent_decode(v: &str) -> String {
    let bytes: Vec<u8> = v.bytes().map(|b| if b == b'+' { b' ' } else { b }).collect();
    let plus_free = String::from_utf8_lossy(&bytes).into_owned();
    percent_encoding::percent_decode_str(&plus_free).decode_utf8_lossy().into_owned()
}

/// The headers signed: `host`, every `x-amz-*`, and the content headers S3 reads.
fn signed_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for name in headers.keys() {
        let n = name.as_str();
        let wanted = n == "host" || n.starts_with("x-amz-") || matches!(n, "content-type" | "content-md5");
        if !wanted {
            continue;
        }
        let values: Vec<&str> = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
        out.push((n.to_owned(), values.join(",")));
    }
    out
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) -> Result<(), String> {
    let value = HeaderValue::from_str(value).map_err(|_| format!("{name} is not a header value"))?;
    headers.insert(HeaderName::from_static(name), value);
    Ok(())
}

/// The host the browser reached the server by (`Host`, or HTTP/2's authority).
pub fn host_of<B>(req: &Request<B>) -> Option<String> {
    req.headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()))
}

/// Where a share link points: the host the browser used, and with the console on its own
/// address (`--console-address`), that host's name with the S3 address's port (objects are
/// never served on the console's origin).
pub fn s3_host(node: &Node, host: &str) -> String {
    if node.config.console_address.is_none() {
        return host.to_owned();
    }
    match node.config.endpoint.rsplit_once(':') {
        Some((_, port)) => with_port(host, port),
        None => host.to_owned(),
    }
}

/// `host` (`name:port`, `[v6]:port` or a bare name) with its port replaced by `port`.
fn with_port(host: &str, port: &str) -> String {
    let name = match host.rsplit_once(':') {
        Some((name, p)) if !p.contains(']') => name,
        _ => host,
    };
    format!("{name}:{port}")
}

/// A share link: a presigned GET of `path` (already encoded) with `query` (a version), valid for
/// `expires` seconds, for the host and scheme the browser used.
pub fn share_url(
    node: &Node,
    session: &Session,
    host: &str,
    tls: bool,
    path: &str,
    query: &str,
    expires: u64,
) -> String {
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let amz_date = strata_types::time::amz_date(now);
    let signer = signer_of(node, session, &amz_date);
    let q = signer.presigned_query(path, query, host, expires, Some(&session.token));
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{host}{path}?{q}")
}

/// The session's credentials signing for this node's region at `amz_date`.
fn signer_of<'a>(node: &'a Node, session: &'a Session, amz_date: &'a str) -> Signer<'a> {
    Signer {
        access_key: &session.access_key,
        secret: &session.secret,
        region: &node.config.region,
        service: "s3",
        amz_date,
    }
}

/// Whether the method changes nothing (and so needs no CSRF token).
pub fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
}

#[cfg(test)]
mod tests {
    use super::{s3_target, with_port};

    #[test]
    fn a_share_link_keeps_the_host_name_and_takes_the_s3_port() {
        assert_eq!(with_port("console.example:9001", "9000"), "console.example:9000");
        assert_eq!(with_port("console.example", "9000"), "console.example:9000");
        assert_eq!(with_port("[::1]:9001", "9000"), "[::1]:9000");
        assert_eq!(with_port("[::1]", "9000"), "[::1]:9000");
    }

    #[test]
    fn a_key_sent_in_the_query_goes_back_into_the_path() {
        assert_eq!(s3_target("/b/k", Some("tagging=")), ("/b/k".to_owned(), Some("tagging=".to_owned())));
        assert_eq!(s3_target("/b/k", None), ("/b/k".to_owned(), None));
        let (path, query) = s3_target("/b", Some("versionId=7&console-key=dots%2F..%2Fup%2F%2541%20x.txt"));
        assert_eq!(path, "/b/dots/../up/%2541%20x.txt");
        assert_eq!(query.as_deref(), Some("versionId=7"));
        assert_eq!(s3_target("/b/", Some("console-key=.")), ("/b/.".to_owned(), None));
    }
}
