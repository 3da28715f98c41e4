//! Bucket lifecycle: PutBucketLifecycleConfiguration (the S3 XML, validated as AWS validates it),
//! GetBucketLifecycleConfiguration, DeleteBucketLifecycle, the `x-amz-expiration` header of
//! current versions a rule expires, and the notifier the lifecycle pass announces its removals
//! through. The configuration lives in the bucket record; the rules run in
//! `strata_object::lifecycle` (decisions) and the object layer's lifecycle pass (execution).

use std::sync::Arc;

use http::StatusCode;
use serde::Deserialize;
use strata_meta::{
    LifecycleConfig, LifecycleExpiration, LifecycleFilter, LifecycleRule, NoncurrentExpiration,
};
use strata_notify::EventName;
use strata_object::{LifecycleEvent, LifecycleEvents, ObjectInfo};
use strata_types::limits::{LIFECYCLE_NEWER_NONCURRENT_MAX, LIFECYCLE_RULES_MAX, LIFECYCLE_RULE_ID_LEN_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Node, Reply, Request};
use crate::error::malformed_xml as malformed;
use crate::error::{S3Error, S3ErrorCode};
use crate::{rules, xml};

#[derive(Deserialize)]
struct ConfigXml {
    #[serde(rename = "Rule", default)]
    rules: Vec<RuleXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RuleXml {
    #[serde(rename = "ID")]
    id: Option<String>,
    status: Option<String>,
    filter: Option<FilterXml>,
    prefix: Option<String>,
    expiration: Option<ExpirationXml>,
    noncurrent_version_expiration: Option<NoncurrentXml>,
    abort_incomplete_multipart_upload: Option<AbortXml>,
    #[serde(default)]
    transition: Vec<TransitionXml>,
    #[serde(default)]
    noncurrent_version_transition: Vec<NoncurrentTransitionXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct TransitionXml {
    days: Option<String>,
    date: Option<String>,
    storage_class: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct NoncurrentTransitionXml {
    noncurrent_days: Option<String>,
    newer_noncurrent_versions: Option<String>,
    storage_class: Option<String>,
}

/// The storage classes S3 transitions to.
const TRANSITION_CLASSES: [&str; 6] =
    ["STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER", "GLACIER_IR", "DEEP_ARCHIVE"];
/// The fewest days before a transition to the infrequent-access classes.
const INFREQUENT_ACCESS_DAYS_MIN: u32 = 30;

/// A transition's storage class, and its days when it names them (checked as S3 checks them).
fn transition_class(class: Option<&str>, days: Option<u32>, what: &str) -> Result<(), S3Error> {
    let class = class.map(str::trim).ok_or_else(malformed)?;
    if !TRANSITION_CLASSES.contains(&class) {
        return Err(S3Error::new(
            S3ErrorCode::InvalidStorageClass,
            "The storage class you specified is not valid",
        ));
    }
    if matches!(class, "STANDARD_IA" | "ONEZONE_IA") && days.is_some_and(|d| d < INFREQUENT_ACCESS_DAYS_MIN) {
        return Err(invalid(&format!(
            "'{what}' in Transition action must be greater than or equal to {INFREQUENT_ACCESS_DAYS_MIN} for storageClass '{class}'"
        )));
    }
    Ok(())
}

/// Checks a rule's transitions as S3 would take them (this server has no tiers to move to).
fn check_transitions(r: &RuleXml) -> Result<(), S3Error> {
    for t in &r.transition {
        let days = match (&t.days, &t.date) {
            (Some(_), Some(_)) => return Err(invalid("Transition cannot have both Days and Date")),
            (None, None) => return Err(malformed()),
            (Some(days), None) => {
                let n: i64 = days.trim().parse().map_err(|_| malformed())?;
                Some(
                    u32::try_from(n)
                        .map_err(|_| invalid("'Days' in Transition action must be nonnegative"))?,
                )
            }
            (None, Some(date)) => {
                if strata_types::time::parse_iso8601(date.trim()).is_none() {
                    return Err(invalid("'Date' in Transition action must be a date in ISO 8601 format"));
                }
                date_at_midnight(date.trim())?;
                None
            }
        };
        transition_class(t.storage_class.as_deref(), days, "Days")?;
    }
    for t in &r.noncurrent_version_transition {
        let days = positive(t.noncurrent_days.as_deref().ok_or_else(malformed)?, "NoncurrentDays")?;
        if let Some(n) = &t.newer_noncurrent_versions {
            positive(n, "NewerNoncurrentVersions")?;
        }
        transition_class(t.storage_class.as_deref(), Some(days), "NoncurrentDays")?;
    }
    Ok(())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct FilterXml {
    prefix: Option<String>,
    tag: Option<TagXml>,
    object_size_greater_than: Option<String>,
    object_size_less_than: Option<String>,
    and: Option<AndXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct AndXml {
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<TagXml>,
    object_size_greater_than: Option<String>,
    object_size_less_than: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct TagXml {
    key: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct ExpirationXml {
    days: Option<String>,
    date: Option<String>,
    expired_object_delete_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct NoncurrentXml {
    noncurrent_days: Option<String>,
    newer_noncurrent_versions: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct AbortXml {
    days_after_initiation: Option<String>,
}

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

/// A count of days: not a number is `MalformedXML`, not positive `InvalidArgument`.
fn positive(text: &str, what: &str) -> Result<u32, S3Error> {
    let n: i64 = text.trim().parse().map_err(|_| malformed())?;
    u32::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(&format!("'{what}' must be a positive integer")))
}

fn size(text: &Option<String>, what: &str) -> Result<Option<u64>, S3Error> {
    let Some(text) = text else { return Ok(None) };
    let n: i64 = text.trim().parse().map_err(|_| malformed())?;
    u64::try_from(n).map(Some).map_err(|_| invalid(&format!("'{what}' must be a non-negative integer")))
}

/// A `LifecycleConfiguration` document, validated.
pub(crate) fn parse(doc: &[u8]) -> Result<LifecycleConfig, S3Error> {
    let config: ConfigXml = rules::document(doc, "LifecycleConfiguration")?;
    rules::check_count(config.rules.len(), LIFECYCLE_RULES_MAX, "lifecycle")?;
    // A document S3 would refuse is refused as S3 refuses it; one it would take with
    // transitions is refused as what this server cannot do.
    let transitions =
        config.rules.iter().any(|r| !r.transition.is_empty() || !r.noncurrent_version_transition.is_empty());
    for r in &config.rules {
        check_transitions(r)?;
    }
    let rules = config.rules.into_iter().map(rule).collect::<Result<Vec<_>, _>>()?;
    rules::check_unique_ids(rules.iter().map(|r| r.id.as_str()))?;
    if transitions {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "Transition and NoncurrentVersionTransition are not implemented: this server has no storage tiers",
        ));
    }
    Ok(LifecycleConfig { rules })
}

fn rule(r: RuleXml) -> Result<LifecycleRule, S3Error> {
    let transitions = !r.transition.is_empty() || !r.noncurrent_version_transition.is_empty();
    let enabled = match r.status.as_deref().map(str::trim) {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => return Err(malformed()),
    };
    let id = rules::rule_id(r.id, LIFECYCLE_RULE_ID_LEN_MAX)?;
    let (filter, legacy_prefix) = match (r.filter, r.prefix) {
        (Some(_), Some(_)) => return Err(invalid("Rule cannot have both Prefix and Filter")),
        (None, None) => return Err(malformed()),
        (None, Some(prefix)) => (LifecycleFilter { prefix, ..Default::default() }, true),
        (Some(f), None) => (filter(f)?, false),
    };
    let expiration = r.expiration.map(expiration).transpose()?.flatten();
    let noncurrent_expiration = r.noncurrent_version_expiration.map(noncurrent).transpose()?;
    let abort_upload_days = match r.abort_incomplete_multipart_upload {
        Some(a) => {
            Some(positive(a.days_after_initiation.as_deref().ok_or_else(malformed)?, "DaysAfterInitiation")?)
        }
        None => None,
    };
    if expiration.is_none() && noncurrent_expiration.is_none() && abort_upload_days.is_none() && !transitions
    {
        return Err(invalid("At least one action needs to be specified in a rule"));
    }
    if !filter.tags.is_empty() && abort_upload_days.is_some() {
        return Err(invalid("AbortIncompleteMultipartUpload cannot be specified with Tags"));
    }
    if !filter.tags.is_empty() && expiration == Some(LifecycleExpiration::ExpiredObjectDeleteMarker) {
        return Err(invalid("ExpiredObjectDeleteMarker cannot be specified with Tags"));
    }
    Ok(LifecycleRule {
        id,
        enabled,
        legacy_prefix,
        filter,
        expiration,
        noncurrent_expiration,
        abort_upload_days,
    })
}

/// A `Filter`: empty, or exactly one of `Prefix`, `Tag`, the sizes, or `And`.
fn filter(f: FilterXml) -> Result<LifecycleFilter, S3Error> {
    let given = [f.prefix.is_some(), f.tag.is_some(), f.object_size_greater_than.is_some()]
        .into_iter()
        .chain([f.object_size_less_than.is_some(), f.and.is_some()])
        .filter(|g| *g)
        .count();
    if given > 1 {
        return Err(malformed());
    }
    let (prefix, tags, greater, less) = match f.and {
        Some(a) => (a.prefix, a.tag, a.object_size_greater_than, a.object_size_less_than),
        None => (f.prefix, f.tag.into_iter().collect(), f.object_size_greater_than, f.object_size_less_than),
    };
    rules::check_tag_keys(tags.iter().map(|t| t.key.as_str()))?;
    let size_greater_than = size(&greater, "ObjectSizeGreaterThan")?;
    let size_less_than = size(&less, "ObjectSizeLessThan")?;
    if let (Some(g), Some(l)) = (size_greater_than, size_less_than) {
        if g >= l {
            return Err(invalid("ObjectSizeGreaterThan must be less than ObjectSizeLessThan"));
        }
    }
    Ok(LifecycleFilter {
        prefix: prefix.unwrap_or_default(),
        tags: tags.into_iter().map(|t| (t.key, t.value)).collect(),
        size_greater_than,
        size_less_than,
    })
}

/// An `Expiration`: Days, Date, or ExpiredObjectDeleteMarker (`false` alone is no action).
fn expiration(e: ExpirationXml) -> Result<Option<LifecycleExpiration>, S3Error> {
    let marker = match e.expired_object_delete_marker.as_deref().map(str::trim) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(malformed()),
    };
    if e.days.is_some() && e.date.is_some() {
        return Err(invalid("Expiration cannot have both Days and Date"));
    }
    if (e.days.is_some() || e.date.is_some()) && marker.is_some() {
        return Err(invalid(
            "ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle Expiration Policy",
        ));
    }
    match (e.days, e.date, marker) {
        (Some(days), _, _) => Ok(Some(LifecycleExpiration::Days(positive(&days, "Days")?))),
        (None, Some(date), _) => {
            date_at_midnight(date.trim()).map(|secs| Some(LifecycleExpiration::Date(secs)))
        }
        (None, None, Some(true)) => Ok(Some(LifecycleExpiration::ExpiredObjectDeleteMarker)),
        (None, None, Some(false)) => Ok(None),
        (None, None, None) => Err(malformed()),
    }
}

/// An ISO 8601 date-time at midnight UTC (`2030-01-01T00:00:00Z`, fractions zero), as Unix seconds.
fn date_at_midnight(date: &str) -> Result<u64, S3Error> {
    let secs = strata_types::time::parse_iso8601(date).ok_or_else(malformed)?;
    let fraction_zero = date
        .strip_suffix('Z')
        .and_then(|d| d.split_once('.'))
        .is_none_or(|(_, f)| f.bytes().all(|b| b == b'0'));
    if secs % 86_400 != 0 || !fraction_zero {
        return Err(invalid("'Date' must be at midnight GMT"));
    }
    // Times are nanoseconds in a u64: the year 2554 at most.
    if secs.checked_mul(1_000_000_000).is_none() {
        return Err(invalid("'Date' is too far in the future"));
    }
    Ok(secs)
}

fn noncurrent(n: NoncurrentXml) -> Result<NoncurrentExpiration, S3Error> {
    let days = positive(n.noncurrent_days.as_deref().ok_or_else(malformed)?, "NoncurrentDays")?;
    let newer_versions = match n.newer_noncurrent_versions {
        Some(v) => {
            let v = positive(&v, "NewerNoncurrentVersions")?;
            if v > LIFECYCLE_NEWER_NONCURRENT_MAX {
                return Err(invalid(&format!(
                    "'NewerNoncurrentVersions' must be at most {LIFECYCLE_NEWER_NONCURRENT_MAX}"
                )));
            }
            Some(v)
        }
        None => None,
    };
    Ok(NoncurrentExpiration { days, newer_versions })
}

fn write_filter(x: &mut xml::Writer, f: &LifecycleFilter) {
    let conditions = usize::from(!f.prefix.is_empty())
        + f.tags.len()
        + usize::from(f.size_greater_than.is_some())
        + usize::from(f.size_less_than.is_some());
    x.open("Filter");
    if conditions > 1 {
        x.open("And");
    }
    if !f.prefix.is_empty() {
        x.elem("Prefix", &f.prefix);
    }
    for (k, v) in &f.tags {
        x.open("Tag");
        x.elem("Key", k);
        x.elem("Value", v);
        x.close("Tag");
    }
    if let Some(n) = f.size_greater_than {
        x.elem("ObjectSizeGreaterThan", &n.to_string());
    }
    if let Some(n) = f.size_less_than {
        x.elem("ObjectSizeLessThan", &n.to_string());
    }
    if conditions > 1 {
        x.close("And");
    }
    x.close("Filter");
}

pub(crate) fn write(config: &LifecycleConfig) -> String {
    let mut x = xml::Writer::new();
    x.root("LifecycleConfiguration");
    for r in &config.rules {
        x.open("Rule");
        x.elem("ID", &r.id);
        if r.legacy_prefix {
            x.elem("Prefix", &r.filter.prefix);
        } else {
            write_filter(&mut x, &r.filter);
        }
        x.elem("Status", if r.enabled { "Enabled" } else { "Disabled" });
        if let Some(e) = r.expiration {
            x.open("Expiration");
            match e {
                LifecycleExpiration::Days(d) => x.elem("Days", &d.to_string()),
                LifecycleExpiration::Date(secs) => {
                    x.elem("Date", &strata_types::time::iso8601(secs.saturating_mul(1_000_000_000)))
                }
                LifecycleExpiration::ExpiredObjectDeleteMarker => x.elem("ExpiredObjectDeleteMarker", "true"),
            }
            x.close("Expiration");
        }
        if let Some(n) = r.noncurrent_expiration {
            x.open("NoncurrentVersionExpiration");
            x.elem("NoncurrentDays", &n.days.to_string());
            if let Some(v) = n.newer_versions {
                x.elem("NewerNoncurrentVersions", &v.to_string());
            }
            x.close("NoncurrentVersionExpiration");
        }
        if let Some(d) = r.abort_upload_days {
            x.open("AbortIncompleteMultipartUpload");
            x.elem("DaysAfterInitiation", &d.to_string());
            x.close("AbortIncompleteMultipartUpload");
        }
        x.close("Rule");
    }
    x.close("LifecycleConfiguration");
    x.finish()
}

pub async fn get_bucket_lifecycle_configuration(
    req: &Request<'_>,
    bucket: &BucketName,
) -> Result<Reply, S3Error> {
    let config = req.node.layer.with_bucket_record(bucket, |r| r.lifecycle.clone())?;
    let Some(config) = config else {
        return Err(S3Error::new(
            S3ErrorCode::NoSuchLifecycleConfiguration,
            "The lifecycle configuration does not exist",
        )
        .with_resource(Some(bucket), None));
    };
    Ok(Reply::xml(write(&config)))
}

pub async fn put_bucket_lifecycle_configuration(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    crate::body::check_content_md5(req.headers, &doc)?;
    let config = parse(&doc)?;
    req.node.layer.update_bucket(bucket, |r| r.lifecycle = Some(config)).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_bucket_lifecycle(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.lifecycle = None).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

/// `reply` with `x-amz-expiration` when a Days or Date rule of the bucket expires `info` (a
/// current version).
pub(crate) fn with_expiration(reply: Reply, req: &Request<'_>, bucket: &str, info: &ObjectInfo) -> Reply {
    match req.node.layer.lifecycle_expiration(bucket, info) {
        Some((at, rule_id)) => {
            let date = httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(at));
            let rule_id = rule_id.replace('\\', "\\\\").replace('"', "\\\"");
            reply.header("x-amz-expiration", &format!("expiry-date=\"{date}\", rule-id=\"{rule_id}\""))
        }
        None => reply,
    }
}

/// Announces the lifecycle pass's removals as `s3:LifecycleExpiration:*` events, to the node's
/// listeners and notification targets (the binary hands it to the object layer).
pub struct LifecycleNotifier(pub Arc<Node>);

#[async_trait::async_trait]
impl LifecycleEvents for LifecycleNotifier {
    async fn expired(&self, e: LifecycleEvent) {
        let name = if e.delete_marker_created {
            EventName::LifecycleExpirationDeleteMarkerCreated
        } else {
            EventName::LifecycleExpirationDelete
        };
        let details = || crate::notification::Details {
            version_id: e.versioned.then(|| crate::version::version_string(e.version_id)),
            ..Default::default()
        };
        crate::notification::emit(&self.0, name, &e.bucket, &e.key, details).await;
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
