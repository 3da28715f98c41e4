//! Bucket CORS: the configuration calls, preflight (`OPTIONS`), and the CORS headers on actual
//! requests. Rules are matched in order; the first whose origin, method and headers all match
//! wins, as S3 does.

use http::{HeaderMap, Method, StatusCode};
use strata_object::CorsRule;
use strata_types::limits::CORS_RULES_MAX;
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Node, Reply, Request};
use crate::error::malformed_xml as malformed;
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];

/// `pattern` with at most one `*`, matched case-sensitively (origins) or not (headers).
fn wildcard(pattern: &str, value: &str, ignore_case: bool) -> bool {
    let (p, v) = if ignore_case {
        (pattern.to_ascii_lowercase(), value.to_ascii_lowercase())
    } else {
        (pattern.to_owned(), value.to_owned())
    };
    match p.split_once('*') {
        None => p == v,
        Some((head, tail)) => v.len() >= head.len() + tail.len() && v.starts_with(head) && v.ends_with(tail),
    }
}

/// The first rule allowing `origin` to use `method` with `headers`.
pub fn find_rule<'a>(
    rules: &'a [CorsRule],
    origin: &str,
    method: &str,
    headers: &[String],
) -> Option<&'a CorsRule> {
    rules.iter().find(|r| {
        r.allowed_origins.iter().any(|o| wildcard(o, origin, false))
            && r.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| r.allowed_headers.iter().any(|a| wildcard(a, h, true)))
    })
}

fn allow_origin(rule: &CorsRule, origin: &str) -> String {
    if rule.allowed_origins.iter().any(|o| o == "*") {
        "*".to_owned()
    } else {
        origin.to_owned()
    }
}

pub(crate) fn parse_cors(doc: &[u8]) -> Result<Vec<CorsRule>, S3Error> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let (mut rules, mut rule, mut saw_root) = (Vec::new(), None::<CorsRule>, false);
    let (mut field, mut text) = (None::<Vec<u8>>, String::new());
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            Event::Start(e) => {
                text.clear();
                match e.local_name().as_ref() {
                    b"CORSConfiguration" => saw_root = true,
                    b"CORSRule" => rule = Some(CorsRule::default()),
                    other => field = Some(other.to_vec()),
                }
            }
            ev @ (Event::Text(_) | Event::GeneralRef(_)) if field.is_some() => {
                xml::append_text(&ev, &mut text)?
            }
            Event::End(e) => {
                if e.local_name().as_ref() == b"CORSRule" {
                    rules.push(rule.take().ok_or_else(malformed)?);
                } else if let (Some(f), Some(r)) = (field.take(), rule.as_mut()) {
                    let value = std::mem::take(&mut text).trim().to_owned();
                    match f.as_slice() {
                        b"AllowedOrigin" => r.allowed_origins.push(value),
                        b"AllowedMethod" => r.allowed_methods.push(value),
                        b"AllowedHeader" => r.allowed_headers.push(value),
                        b"ExposeHeader" => r.expose_headers.push(value),
                        b"MaxAgeSeconds" => r.max_age_secs = Some(value.parse().map_err(|_| malformed())?),
                        b"ID" => r.id = Some(value),
                        _ => return Err(malformed()),
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root || rules.is_empty() || rules.len() > CORS_RULES_MAX {
        return Err(malformed());
    }
    for r in &rules {
        if r.allowed_origins.is_empty() || r.allowed_methods.is_empty() {
            return Err(malformed());
        }
        if let Some(m) = r.allowed_methods.iter().find(|m| !METHODS.contains(&m.as_str())) {
            return Err(S3Error::new(
                S3ErrorCode::InvalidRequest,
                &format!("Found unsupported HTTP method in CORS config. Unsupported method is {m}"),
            ));
        }
        if r.allowed_origins.iter().chain(&r.allowed_headers).any(|p| p.matches('*').count() > 1) {
            return Err(S3Error::new(
                S3ErrorCode::InvalidRequest,
                "An AllowedOrigin or AllowedHeader may contain at most one wildcard",
            ));
        }
    }
    Ok(rules)
}

pub async fn get_bucket_cors(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    if record.cors.is_empty() {
        return Err(S3Error::new(
            S3ErrorCode::NoSuchCORSConfiguration,
            "The CORS configuration does not exist",
        ));
    }
    let mut x = xml::Writer::new();
    x.root("CORSConfiguration");
    for r in &record.cors {
        x.open("CORSRule");
        if let Some(id) = &r.id {
            x.elem("ID", id);
        }
        for (tag, values) in [
            ("AllowedHeader", &r.allowed_headers),
            ("AllowedMethod", &r.allowed_methods),
            ("AllowedOrigin", &r.allowed_origins),
            ("ExposeHeader", &r.expose_headers),
        ] {
            for v in values {
                x.elem(tag, v);
            }
        }
        if let Some(age) = r.max_age_secs {
            x.elem("MaxAgeSeconds", &age.to_string());
        }
        x.close("CORSRule");
    }
    x.close("CORSConfiguration");
    Ok(Reply::xml(x.finish()))
}

pub async fn put_bucket_cors(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    let rules = parse_cors(&doc)?;
    req.node.layer.update_bucket(bucket, |r| r.cors = rules).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_bucket_cors(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.cors.clear()).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Answers an `OPTIONS` preflight for `bucket` (no authentication, as browsers send none).
pub fn preflight(node: &Node, bucket: Option<&str>, headers: &HeaderMap) -> Result<Reply, S3Error> {
    let forbidden = || {
        S3Error::new(S3ErrorCode::AccessForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.")
    };
    let (Some(origin), Some(method)) =
        (header(headers, "origin"), header(headers, "access-control-request-method"))
    else {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Insufficient information. Origin request header needed.",
        ));
    };
    let bucket = bucket.ok_or_else(forbidden)?;
    let record = node.layer.bucket_record(bucket).map_err(|_| forbidden())?;
    let requested: Vec<String> = header(headers, "access-control-request-headers")
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect();
    let rule = find_rule(&record.cors, origin, method, &requested).ok_or_else(forbidden)?;
    let mut reply = Reply::empty(StatusCode::OK)
        .header("access-control-allow-origin", &allow_origin(rule, origin))
        .header("access-control-allow-methods", &rule.allowed_methods.join(", "))
        .header("vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
    if !requested.is_empty() {
        reply = reply.header("access-control-allow-headers", &requested.join(", "));
    }
    if !rule.expose_headers.is_empty() {
        reply = reply.header("access-control-expose-headers", &rule.expose_headers.join(", "));
    }
    if let Some(age) = rule.max_age_secs {
        reply = reply.header("access-control-max-age", &age.to_string());
    }
    if !rule.allowed_origins.iter().any(|o| o == "*") {
        reply = reply.header("access-control-allow-credentials", "true");
    }
    Ok(reply.header("content-length", "0"))
}

/// Adds CORS headers to the answer of an actual request from a browser (`Origin` present).
pub fn decorate(
    node: &Node,
    bucket: Option<&str>,
    method: &Method,
    headers: &HeaderMap,
    mut reply: Reply,
) -> Reply {
    let (Some(origin), Some(bucket)) = (header(headers, "origin"), bucket) else { return reply };
    let Ok(record) = node.layer.bucket_record(bucket) else { return reply };
    if let Some(rule) = find_rule(&record.cors, origin, method.as_str(), &[]) {
        reply =
            reply.header("access-control-allow-origin", &allow_origin(rule, origin)).header("vary", "Origin");
        if !rule.expose_headers.is_empty() {
            reply = reply.header("access-control-expose-headers", &rule.expose_headers.join(", "));
        }
        if !rule.allowed_origins.iter().any(|o| o == "*") {
            reply = reply.header("access-control-allow-credentials", "true");
        }
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_as_s3_matches_them() {
        let doc = br#"<CORSConfiguration><CORSRule><AllowedOrigin>https://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>300</MaxAgeSeconds></CORSRule><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule></CORSConfiguration>"#;
        let rules = parse_cors(doc).expect("parses");
        assert_eq!(rules.len(), 2);
        assert!(find_rule(&rules, "https://app.example.com", "PUT", &["x-amz-date".into()]).is_some());
        assert!(find_rule(&rules, "https://app.example.com", "DELETE", &[]).is_none());
        assert!(find_rule(&rules, "https://evil.com", "GET", &[]).is_none());
        assert!(find_rule(&rules, "https://app.example.com", "GET", &["authorization".into()]).is_none());
        assert!(find_rule(&rules, "https://anything", "HEAD", &[]).is_some());
        assert!(parse_cors(b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>").is_err());
        assert!(parse_cors(b"<CORSConfiguration></CORSConfiguration>").is_err());
    }
}
