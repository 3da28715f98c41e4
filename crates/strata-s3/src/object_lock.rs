//! Object lock on the S3 surface: Get/PutObjectLockConfiguration, Get/PutObjectRetention,
//! Get/PutObjectLegalHold, and the `x-amz-object-lock-*` headers of writes. The rules (what may
//! be removed or shortened) live in the object layer (`strata-object/src/retention.rs`).

use http::{HeaderMap, StatusCode};
use strata_object::{DefaultRetention, ObjectLockConfig, PutOptions, Retention, RetentionMode, VersionRef};
use strata_types::limits::{OBJECT_LOCK_DAYS_MAX, OBJECT_LOCK_YEARS_MAX, XML_BODY_SIZE_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::ObjectTarget;
use crate::xml;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn invalid(msg: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, msg)
}

pub(crate) fn parse_mode(s: &str) -> Result<RetentionMode, S3Error> {
    RetentionMode::parse(s.trim()).ok_or_else(|| invalid("Unknown wormMode directive."))
}

/// An ISO 8601 date (`2030-01-02T03:04:05Z`, fractions allowed) as nanoseconds.
pub(crate) fn parse_date(s: &str) -> Result<u64, S3Error> {
    strata_types::time::parse_iso8601(s.trim())
        .map(|secs| secs.saturating_mul(1_000_000_000))
        .ok_or_else(|| invalid("The retain until date is not a valid ISO 8601 date."))
}

/// The `x-amz-object-lock-*` headers of a write into `opts`: mode and date together, a legal
/// hold `ON` or `OFF`. A bucket without object lock refuses them in the object layer.
pub(crate) fn lock_options(headers: &HeaderMap, opts: &mut PutOptions) -> Result<(), S3Error> {
    let mode = header(headers, "x-amz-object-lock-mode");
    let until = header(headers, "x-amz-object-lock-retain-until-date");
    opts.retention = match (mode, until) {
        (None, None) => None,
        (Some(m), Some(u)) => Some(Retention { mode: parse_mode(m)?, until: parse_date(u)? }),
        _ => {
            return Err(invalid(
                "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied",
            ))
        }
    };
    if opts.retention.is_some_and(|r| r.until <= strata_types::time::now_nanos()) {
        return Err(invalid("The retain until date must be in the future!"));
    }
    opts.legal_hold = match header(headers, "x-amz-object-lock-legal-hold").map(str::trim) {
        None | Some("OFF") => false,
        Some("ON") => true,
        Some(_) => return Err(invalid("Legal Hold must be either of 'ON' or 'OFF'")),
    };
    Ok(())
}

/// Whether a write asks for object lock settings (then AWS wants its body's integrity proven).
pub(crate) fn asks_for_lock(headers: &HeaderMap) -> bool {
    ["x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold"]
        .iter()
        .any(|h| headers.contains_key(*h))
}

/// A PUT with object lock settings must carry Content-MD5 or an S3 checksum (AWS's rule).
pub(crate) fn check_integrity_header(headers: &HeaderMap) -> Result<(), S3Error> {
    let proven = headers.contains_key("content-md5")
        || headers.contains_key("x-amz-sdk-checksum-algorithm")
        || headers.contains_key("x-amz-trailer")
        || headers.keys().any(|k| k.as_str().starts_with("x-amz-checksum-"));
    if asks_for_lock(headers) && !proven {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters",
        ));
    }
    Ok(())
}

fn xml_text(doc: &[u8], name: &str) -> Result<Option<String>, S3Error> {
    xml::first_text(doc, name)
        .map(|t| t.map(|t| t.trim().to_owned()))
        .map_err(|_| crate::error::malformed_xml())
}

/// A `<ObjectLockConfiguration>` document.
pub(crate) fn parse_lock_config(doc: &[u8]) -> Result<ObjectLockConfig, S3Error> {
    if !xml::has_root(doc, "ObjectLockConfiguration")?
        || xml_text(doc, "ObjectLockEnabled")?.as_deref() != Some("Enabled")
    {
        return Err(crate::error::malformed_xml());
    }
    let Some(mode) = xml_text(doc, "Mode")? else {
        if xml_text(doc, "Rule")?.is_some() {
            return Err(crate::error::malformed_xml());
        }
        return Ok(ObjectLockConfig::default());
    };
    let mode = RetentionMode::parse(&mode).ok_or_else(crate::error::malformed_xml)?;
    let number = |name: &str, max: u32| -> Result<Option<u32>, S3Error> {
        match xml_text(doc, name)? {
            None => Ok(None),
            Some(v) => match v.parse::<i64>() {
                Ok(n) if n > 0 && n <= i64::from(max) => Ok(Some(n as u32)),
                Ok(_) => Err(invalid(
                    "Default retention period must be a positive integer value within the limits.",
                )),
                Err(_) => Err(crate::error::malformed_xml()),
            },
        }
    };
    let (days, years) = (number("Days", OBJECT_LOCK_DAYS_MAX)?, number("Years", OBJECT_LOCK_YEARS_MAX)?);
    if days.is_some() == years.is_some() {
        return Err(crate::error::malformed_xml());
    }
    Ok(ObjectLockConfig { default_retention: Some(DefaultRetention { mode, days, years }) })
}

pub async fn get_object_lock_configuration(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let Some(config) = req.node.layer.object_lock_config(bucket)? else {
        return Err(S3Error::new(
            S3ErrorCode::ObjectLockConfigurationNotFoundError,
            "Object Lock configuration does not exist for this bucket",
        ));
    };
    let mut x = xml::Writer::new();
    x.root("ObjectLockConfiguration");
    x.elem("ObjectLockEnabled", "Enabled");
    if let Some(d) = config.default_retention {
        x.open("Rule");
        x.open("DefaultRetention");
        x.elem("Mode", d.mode.name());
        if let Some(days) = d.days {
            x.elem("Days", &days.to_string());
        }
        if let Some(years) = d.years {
            x.elem("Years", &years.to_string());
        }
        x.close("DefaultRetention");
        x.close("Rule");
    }
    x.close("ObjectLockConfiguration");
    Ok(Reply::xml(x.finish()))
}

pub async fn put_object_lock_configuration(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    req.node.layer.bucket_info(bucket)?;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await.map_err(|_| crate::error::malformed_xml())?;
    let config = parse_lock_config(&doc)?;
    req.node.layer.put_object_lock_config(bucket, config).await?;
    Ok(Reply::empty(StatusCode::OK))
}

fn missing_lock() -> S3Error {
    S3Error::new(S3ErrorCode::InvalidRequest, "Bucket is missing Object Lock Configuration")
}

pub async fn get_object_retention(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    if req.node.layer.object_lock_config(bucket)?.is_none() {
        return Err(missing_lock());
    }
    let info = req.node.layer.open_object_version(bucket, key, which, false).await?.info;
    let Some(r) = info.retention else {
        return Err(S3Error::new(
            S3ErrorCode::NoSuchObjectLockConfiguration,
            "The specified object does not have a ObjectLock configuration",
        ));
    };
    let mut x = xml::Writer::new();
    x.root("Retention");
    x.elem("Mode", r.mode.name());
    x.elem("RetainUntilDate", &strata_types::time::iso8601(r.until));
    x.close("Retention");
    Ok(Reply::xml(x.finish()).with_version(true, info.version_id))
}

/// A `<Retention>` document: a mode and a date, or neither (removes the retention).
pub(crate) fn parse_retention(doc: &[u8]) -> Result<Option<Retention>, S3Error> {
    if !xml::has_root(doc, "Retention")? {
        return Err(crate::error::malformed_xml());
    }
    match (xml_text(doc, "Mode")?, xml_text(doc, "RetainUntilDate")?) {
        (None, None) => Ok(None),
        (Some(m), Some(u)) => Ok(Some(Retention {
            mode: RetentionMode::parse(&m).ok_or_else(crate::error::malformed_xml)?,
            until: parse_date(&u)?,
        })),
        _ => Err(crate::error::malformed_xml()),
    }
}

/// PutObjectRetention; `bypass`: the caller asked to bypass GOVERNANCE and is allowed to.
pub async fn put_object_retention(
    req: &Request<'_>,
    target: &ObjectTarget,
    body: RequestBody,
    bypass: bool,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await.map_err(|_| crate::error::malformed_xml())?;
    let retention = parse_retention(&doc)?;
    let id = req.node.layer.put_object_retention(bucket, key, which, retention, bypass).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    Ok(Reply::empty(StatusCode::OK).with_version(shown, id))
}

pub async fn get_object_legal_hold(req: &Request<'_>, target: &ObjectTarget) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    if req.node.layer.object_lock_config(bucket)?.is_none() {
        return Err(missing_lock());
    }
    let info = req.node.layer.open_object_version(bucket, key, which, false).await?.info;
    let mut x = xml::Writer::new();
    x.root("LegalHold");
    x.elem("Status", if info.legal_hold { "ON" } else { "OFF" });
    x.close("LegalHold");
    Ok(Reply::xml(x.finish()).with_version(true, info.version_id))
}

pub async fn put_object_legal_hold(
    req: &Request<'_>,
    target: &ObjectTarget,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let ObjectTarget { bucket, key, .. } = target;
    let which = target.version;
    let doc = body.collect_small(XML_BODY_SIZE_MAX).await.map_err(|_| crate::error::malformed_xml())?;
    if !xml::has_root(&doc, "LegalHold")? {
        return Err(crate::error::malformed_xml());
    }
    let on = match xml_text(&doc, "Status")?.as_deref() {
        Some("ON") => true,
        Some("OFF") => false,
        _ => return Err(crate::error::malformed_xml()),
    };
    let id = req.node.layer.put_object_legal_hold(bucket, key, which, on).await?;
    let shown = which != VersionRef::Current || req.shows_versions(bucket)?;
    Ok(Reply::empty(StatusCode::OK).with_version(shown, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T: std::fmt::Debug>(r: Result<T, S3Error>) -> Option<S3ErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn lock_configurations() {
        let doc = |rule: &str| {
            format!("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>{rule}</ObjectLockConfiguration>")
        };
        assert_eq!(parse_lock_config(doc("").as_bytes()).ok(), Some(ObjectLockConfig::default()));
        let rule = |inner: &str| doc(&format!("<Rule><DefaultRetention>{inner}</DefaultRetention></Rule>"));
        let got = parse_lock_config(rule("<Mode>COMPLIANCE</Mode><Days>3</Days>").as_bytes()).ok();
        let want = DefaultRetention { mode: RetentionMode::Compliance, days: Some(3), years: None };
        assert_eq!(got, Some(ObjectLockConfig { default_retention: Some(want) }));
        use S3ErrorCode::{InvalidArgument, MalformedXML};
        assert_eq!(
            code(parse_lock_config(rule("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>").as_bytes())),
            Some(MalformedXML)
        );
        assert_eq!(code(parse_lock_config(rule("<Mode>GOVERNANCE</Mode>").as_bytes())), Some(MalformedXML));
        assert_eq!(
            code(parse_lock_config(rule("<Mode>STRICT</Mode><Days>1</Days>").as_bytes())),
            Some(MalformedXML)
        );
        assert_eq!(
            code(parse_lock_config(rule("<Mode>GOVERNANCE</Mode><Days>0</Days>").as_bytes())),
            Some(InvalidArgument)
        );
        assert_eq!(
            code(parse_lock_config(rule("<Mode>GOVERNANCE</Mode><Days>-4</Days>").as_bytes())),
            Some(InvalidArgument)
        );
        assert_eq!(
            code(parse_lock_config(rule("<Mode>GOVERNANCE</Mode><Days>x</Days>").as_bytes())),
            Some(MalformedXML)
        );
        assert_eq!(code(parse_lock_config(b"<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>")), Some(MalformedXML));
    }

    #[test]
    fn retention_documents_and_headers() {
        let r = parse_retention(b"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-02T03:04:05.000Z</RetainUntilDate></Retention>");
        assert_eq!(r.ok().flatten().map(|r| r.mode), Some(RetentionMode::Governance));
        assert_eq!(parse_retention(b"<Retention></Retention>").ok(), Some(None));
        assert_eq!(
            parse_retention(b"<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>").ok(),
            Some(None)
        );
        assert_eq!(code(parse_retention(b"<Other/>")), Some(S3ErrorCode::MalformedXML));
        assert_eq!(
            code(parse_retention(b"<Retention><Mode>GOVERNANCE</Mode></Retention>")),
            Some(S3ErrorCode::MalformedXML)
        );
        assert_eq!(code(parse_retention(b"<Retention><Mode>X</Mode><RetainUntilDate>2030-01-02T03:04:05Z</RetainUntilDate></Retention>")), Some(S3ErrorCode::MalformedXML));
        let mut h = HeaderMap::new();
        h.insert("x-amz-object-lock-mode", "COMPLIANCE".parse().expect("value"));
        let mut opts = PutOptions::default();
        assert_eq!(code(lock_options(&h, &mut opts)), Some(S3ErrorCode::InvalidArgument));
        h.insert("x-amz-object-lock-retain-until-date", "2001-01-01T00:00:00Z".parse().expect("value"));
        assert_eq!(code(lock_options(&h, &mut opts)), Some(S3ErrorCode::InvalidArgument));
        h.insert("x-amz-object-lock-retain-until-date", "2099-01-01T00:00:00Z".parse().expect("value"));
        assert!(lock_options(&h, &mut opts).is_ok());
        assert_eq!(opts.retention.map(|r| r.mode), Some(RetentionMode::Compliance));
        assert_eq!(code(check_integrity_header(&h)), Some(S3ErrorCode::InvalidRequest));
        h.insert("content-md5", "x".parse().expect("value"));
        assert!(check_integrity_header(&h).is_ok());
        h.insert("x-amz-object-lock-legal-hold", "MAYBE".parse().expect("value"));
        assert_eq!(code(lock_options(&h, &mut opts)), Some(S3ErrorCode::InvalidArgument));
    }
}
