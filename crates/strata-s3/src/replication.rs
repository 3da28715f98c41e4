//! Bucket replication's configuration on the S3 surface: PutBucketReplication (AWS's XML, both
//! schemas: V1 with `Prefix` under `Rule`, V2 with `Filter`, validated as AWS validates them),
//! GetBucketReplication and DeleteBucketReplication. The configuration lives in the bucket
//! record.
//!
//! A rule's destination is a bucket ARN: `arn:aws:s3:::name` names a bucket of this
//! deployment, which must exist with versioning enabled and be another bucket than the source.

use http::StatusCode;
use serde::Deserialize;
use strata_meta::{ReplicationConfig, ReplicationDestination, ReplicationFilter, ReplicationRule};
use strata_object::Versioning;
use strata_types::limits::{REPLICATION_RULES_MAX, REPLICATION_RULE_ID_LEN_MAX};
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::malformed_xml as malformed;
use crate::error::{S3Error, S3ErrorCode};
use crate::{rules, xml};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct ConfigXml {
    #[serde(rename = "@xmlns")]
    _namespace: Option<String>,
    role: Option<String>,
    #[serde(default)]
    rule: Vec<RuleXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RuleXml {
    #[serde(rename = "ID")]
    id: Option<String>,
    priority: Option<String>,
    status: Option<String>,
    prefix: Option<String>,
    filter: Option<FilterXml>,
    source_selection_criteria: Option<SelectionXml>,
    existing_object_replication: Option<StatusXml>,
    destination: Option<DestinationXml>,
    delete_marker_replication: Option<StatusXml>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct FilterXml {
    prefix: Option<String>,
    tag: Option<TagXml>,
    and: Option<AndXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct AndXml {
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<TagXml>,
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
struct StatusXml {
    status: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct SelectionXml {
    replica_modifications: Option<StatusXml>,
    sse_kms_encrypted_objects: Option<StatusXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct DestinationXml {
    bucket: Option<String>,
    account: Option<String>,
    storage_class: Option<String>,
    access_control_translation: Option<OwnerXml>,
    encryption_configuration: Option<EncryptionXml>,
    replication_time: Option<TimedXml>,
    metrics: Option<MetricsXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct OwnerXml {
    owner: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EncryptionXml {
    #[serde(rename = "ReplicaKmsKeyID")]
    replica_kms_key_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct TimedXml {
    status: Option<String>,
    time: Option<MinutesXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct MetricsXml {
    status: Option<String>,
    event_threshold: Option<MinutesXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct MinutesXml {
    minutes: Option<String>,
}

/// The minutes S3 Replication Time Control takes (AWS: only 15).
const RTC_MINUTES: &str = "15";

/// The storage classes a replica may be written in (those PutObject takes here).
const REPLICA_CLASSES: [&str; 2] = ["STANDARD", "REDUCED_REDUNDANCY"];

/// S3's storage classes this server has no tier for.
const OTHER_CLASSES: [&str; 8] = [
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "GLACIER_IR",
    "DEEP_ARCHIVE",
    "OUTPOSTS",
    "EXPRESS_ONEZONE",
];

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

fn invalid_request(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidRequest, message)
}

/// `Enabled` or `Disabled` (anything else, or none, is malformed).
fn status(s: Option<&str>) -> Result<bool, S3Error> {
    match s.map(str::trim) {
        Some("Enabled") => Ok(true),
        Some("Disabled") => Ok(false),
        _ => Err(malformed()),
    }
}

/// An optional `<X><Status>…</Status></X>`.
fn status_of(x: Option<StatusXml>) -> Result<Option<bool>, S3Error> {
    x.map(|x| status(x.status.as_deref())).transpose()
}

/// A `ReplicationConfiguration` document, validated on its own (what it names is checked
/// against the deployment by [`check_destinations`]).
pub(crate) fn parse(doc: &[u8]) -> Result<ReplicationConfig, S3Error> {
    let config: ConfigXml = rules::document(doc, "ReplicationConfiguration")?;
    rules::check_count(config.rule.len(), REPLICATION_RULES_MAX, "replication")?;
    let v1 = config.rule.iter().filter(|r| r.filter.is_none()).count();
    if v1 != 0 && v1 != config.rule.len() {
        return Err(invalid_request(
            "Rules with Prefix (the first schema) and rules with Filter cannot be mixed in one configuration",
        ));
    }
    let rules = config.rule.into_iter().map(rule).collect::<Result<Vec<_>, _>>()?;
    rules::check_unique_ids(rules.iter().map(|r| r.id.as_str()))?;
    let mut priorities: Vec<u32> = rules.iter().filter_map(|r| r.priority).collect();
    priorities.sort_unstable();
    if let Some(w) = priorities.windows(2).find(|w| w[0] == w[1]) {
        return Err(invalid_request(&format!(
            "Priority {} is given to more than one rule: each rule needs a priority of its own",
            w[0]
        )));
    }
    if v1 != 0 {
        // The first schema has no priorities, so no rule may take a version another takes.
        let mut prefixes: Vec<&str> = rules.iter().map(|r| r.filter.prefix.as_str()).collect();
        prefixes.sort_unstable();
        if prefixes.windows(2).any(|w| w[1].starts_with(w[0])) {
            return Err(invalid_request(
                "Rules with overlapping prefixes need the Filter schema, with a Priority each",
            ));
        }
    }
    Ok(ReplicationConfig { role: config.role.unwrap_or_default().trim().to_owned(), rules })
}

fn rule(r: RuleXml) -> Result<ReplicationRule, S3Error> {
    let enabled = status(r.status.as_deref())?;
    let Some(destination) = r.destination else { return Err(malformed()) };
    let id = rules::rule_id(r.id, REPLICATION_RULE_ID_LEN_MAX)?;
    let delete_markers = status_of(r.delete_marker_replication)?;
    let (filter, legacy_prefix) = match (r.filter, r.prefix) {
        (Some(_), Some(_)) => return Err(invalid("Rule cannot have both Prefix and Filter")),
        (None, None) => return Err(malformed()),
        (None, Some(prefix)) => (ReplicationFilter { prefix, tags: Vec::new() }, true),
        (Some(f), None) => (filter(f)?, false),
    };
    let priority = match (&r.priority, legacy_prefix) {
        (Some(_), true) => return Err(invalid_request("Priority needs the Filter schema, not Prefix")),
        (Some(p), false) => {
            let n: i64 = p.trim().parse().map_err(|_| malformed())?;
            Some(u32::try_from(n).map_err(|_| invalid("Priority must be a non-negative integer"))?)
        }
        (None, true) => None,
        (None, false) => Some(0),
    };
    let delete_markers = match (delete_markers, legacy_prefix) {
        (Some(_), true) => {
            return Err(invalid_request("DeleteMarkerReplication needs the Filter schema, not Prefix"))
        }
        // The first schema replicates delete markers.
        (None, true) => true,
        (None, false) => return Err(invalid_request(
            "A rule with a Filter must say whether delete markers are replicated (DeleteMarkerReplication)",
        )),
        (Some(on), false) => on,
    };
    if delete_markers && !filter.tags.is_empty() {
        return Err(invalid_request("Delete markers cannot be replicated by a rule whose Filter has tags"));
    }
    let (replica_modifications, sse_kms_objects) = match r.source_selection_criteria {
        Some(s) => {
            (status_of(s.replica_modifications)?.unwrap_or(false), status_of(s.sse_kms_encrypted_objects)?)
        }
        None => (false, None),
    };
    let existing_objects = status_of(r.existing_object_replication)?.unwrap_or(false);
    let destination = self::destination(destination)?;
    if sse_kms_objects == Some(true) && destination.replica_kms_key_id.is_none() {
        return Err(invalid_request(
            "SseKmsEncryptedObjects is enabled: the Destination needs an EncryptionConfiguration with a ReplicaKmsKeyID",
        ));
    }
    Ok(ReplicationRule {
        id,
        enabled,
        priority,
        legacy_prefix,
        filter,
        destination,
        delete_markers,
        replica_modifications,
        existing_objects,
        sse_kms_objects,
    })
}

/// A `Filter`: empty, or exactly one of `Prefix`, `Tag` or `And`.
fn filter(f: FilterXml) -> Result<ReplicationFilter, S3Error> {
    let given = [f.prefix.is_some(), f.tag.is_some(), f.and.is_some()].into_iter().filter(|g| *g).count();
    if given > 1 {
        return Err(malformed());
    }
    let (prefix, tags) = match f.and {
        Some(a) => (a.prefix, a.tag),
        None => (f.prefix, f.tag.into_iter().collect()),
    };
    rules::check_tag_keys(tags.iter().map(|t| t.key.as_str()))?;
    Ok(ReplicationFilter {
        prefix: prefix.unwrap_or_default(),
        tags: tags.into_iter().map(|t| (t.key, t.value)).collect(),
    })
}

fn destination(d: DestinationXml) -> Result<ReplicationDestination, S3Error> {
    let bucket_arn = d.bucket.map(|b| b.trim().to_owned()).filter(|b| !b.is_empty()).ok_or_else(malformed)?;
    destination_bucket(&bucket_arn)?;
    let storage_class = match d.storage_class.as_deref().map(str::trim) {
        None => None,
        Some(c) if REPLICA_CLASSES.contains(&c) => Some(c.to_owned()),
        Some(c) if OTHER_CLASSES.contains(&c) => {
            return Err(S3Error::new(
                S3ErrorCode::InvalidStorageClass,
                &format!("Replicas cannot be written in {c}: this server has no such storage tier"),
            ))
        }
        Some(_) => {
            return Err(S3Error::new(
                S3ErrorCode::InvalidStorageClass,
                "The storage class you specified is not valid",
            ))
        }
    };
    let owner_is_destination = match d.access_control_translation {
        None => false,
        Some(t) if t.owner.as_deref().map(str::trim) == Some("Destination") => true,
        Some(_) => return Err(malformed()),
    };
    if owner_is_destination && d.account.is_none() {
        return Err(invalid_request("AccessControlTranslation needs the destination's Account"));
    }
    let replica_kms_key_id = match d.encryption_configuration {
        None => None,
        Some(e) => Some(
            e.replica_kms_key_id
                .map(|k| k.trim().to_owned())
                .filter(|k| !k.is_empty())
                .ok_or_else(malformed)?,
        ),
    };
    let replication_time = match d.replication_time {
        None => false,
        Some(t) => {
            let on = status(t.status.as_deref())?;
            minutes(t.time)?;
            on
        }
    };
    let metrics = match d.metrics {
        None => false,
        Some(m) => {
            let on = status(m.status.as_deref())?;
            if on || m.event_threshold.is_some() {
                minutes(m.event_threshold)?;
            }
            on
        }
    };
    if replication_time && !metrics {
        return Err(invalid_request("ReplicationTime needs Metrics enabled as well"));
    }
    Ok(ReplicationDestination {
        bucket_arn,
        storage_class,
        account: d.account.map(|a| a.trim().to_owned()),
        owner_is_destination,
        replica_kms_key_id,
        replication_time,
        metrics,
    })
}

/// `<Time>` or `<EventThreshold>`: 15 minutes, the one value S3 takes.
fn minutes(m: Option<MinutesXml>) -> Result<(), S3Error> {
    match m.and_then(|m| m.minutes) {
        Some(n) if n.trim() == RTC_MINUTES => Ok(()),
        Some(_) => {
            Err(invalid(&format!("Replication time and its metrics' threshold are {RTC_MINUTES} minutes")))
        }
        None => Err(malformed()),
    }
}

/// The bucket of this deployment that a destination ARN names.
fn destination_bucket(arn: &str) -> Result<BucketName, S3Error> {
    let name = arn.strip_prefix("arn:aws:s3:::").ok_or_else(|| {
        invalid("The destination bucket must be an S3 bucket ARN: arn:aws:s3:::bucket-name")
    })?;
    BucketName::parse(name)
        .map_err(|_| invalid(&format!("The destination ARN {arn} does not name a valid bucket")))
}

/// Checks every rule's destination against this deployment: an existing bucket with versioning
/// enabled, other than `source`.
fn check_destinations(
    req: &Request<'_>,
    source: &BucketName,
    config: &ReplicationConfig,
) -> Result<(), S3Error> {
    for r in &config.rules {
        let dest = destination_bucket(&r.destination.bucket_arn)?;
        if dest == *source {
            return Err(invalid_request(
                "A bucket cannot replicate to itself: the destination must be another bucket",
            ));
        }
        match req.node.layer.versioning(&dest) {
            Ok(Versioning::Enabled) => {}
            Ok(_) => {
                return Err(invalid_request(&format!(
                    "Destination bucket {dest} must have versioning enabled"
                )))
            }
            Err(strata_object::ObjectError::BucketNotFound) => {
                return Err(invalid_request(&format!("Destination bucket {dest} does not exist")))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn on_off(on: bool) -> &'static str {
    if on {
        "Enabled"
    } else {
        "Disabled"
    }
}

fn write_status(x: &mut xml::Writer, name: &str, on: bool) {
    x.open(name);
    x.elem("Status", on_off(on));
    x.close(name);
}

fn write_filter(x: &mut xml::Writer, f: &ReplicationFilter) {
    x.open("Filter");
    let and = usize::from(!f.prefix.is_empty()) + f.tags.len() > 1;
    if and {
        x.open("And");
    }
    if !f.prefix.is_empty() || f.tags.is_empty() {
        x.elem("Prefix", &f.prefix);
    }
    for (k, v) in &f.tags {
        x.open("Tag");
        x.elem("Key", k);
        x.elem("Value", v);
        x.close("Tag");
    }
    if and {
        x.close("And");
    }
    x.close("Filter");
}

fn write_destination(x: &mut xml::Writer, d: &ReplicationDestination) {
    x.open("Destination");
    x.elem("Bucket", &d.bucket_arn);
    if let Some(a) = &d.account {
        x.elem("Account", a);
    }
    if let Some(c) = &d.storage_class {
        x.elem("StorageClass", c);
    }
    if d.owner_is_destination {
        x.open("AccessControlTranslation");
        x.elem("Owner", "Destination");
        x.close("AccessControlTranslation");
    }
    if let Some(k) = &d.replica_kms_key_id {
        x.open("EncryptionConfiguration");
        x.elem("ReplicaKmsKeyID", k);
        x.close("EncryptionConfiguration");
    }
    for (on, outer, inner) in
        [(d.replication_time, "ReplicationTime", "Time"), (d.metrics, "Metrics", "EventThreshold")]
    {
        if on {
            x.open(outer);
            x.elem("Status", "Enabled");
            x.open(inner);
            x.elem("Minutes", RTC_MINUTES);
            x.close(inner);
            x.close(outer);
        }
    }
    x.close("Destination");
}

pub(crate) fn write(config: &ReplicationConfig) -> String {
    let mut x = xml::Writer::new();
    x.root("ReplicationConfiguration");
    x.elem("Role", &config.role);
    for r in &config.rules {
        x.open("Rule");
        x.elem("ID", &r.id);
        if let Some(p) = r.priority {
            x.elem("Priority", &p.to_string());
        }
        x.elem("Status", on_off(r.enabled));
        if r.legacy_prefix {
            x.elem("Prefix", &r.filter.prefix);
        } else {
            write_filter(&mut x, &r.filter);
        }
        if r.replica_modifications || r.sse_kms_objects.is_some() {
            x.open("SourceSelectionCriteria");
            if r.replica_modifications {
                write_status(&mut x, "ReplicaModifications", true);
            }
            if let Some(on) = r.sse_kms_objects {
                write_status(&mut x, "SseKmsEncryptedObjects", on);
            }
            x.close("SourceSelectionCriteria");
        }
        if !r.legacy_prefix {
            write_status(&mut x, "ExistingObjectReplication", r.existing_objects);
        }
        write_destination(&mut x, &r.destination);
        if !r.legacy_prefix {
            write_status(&mut x, "DeleteMarkerReplication", r.delete_markers);
        }
        x.close("Rule");
    }
    x.close("ReplicationConfiguration");
    x.finish()
}

fn not_found(bucket: &BucketName) -> S3Error {
    S3Error::new(
        S3ErrorCode::ReplicationConfigurationNotFoundError,
        "The replication configuration was not found",
    )
    .with_resource(Some(bucket), None)
}

pub async fn get_bucket_replication(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let config = req.node.layer.with_bucket_record(bucket, |r| r.replication.clone())?;
    let config = config.ok_or_else(|| not_found(bucket))?;
    Ok(Reply::xml(write(&config)))
}

pub async fn put_bucket_replication(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    crate::body::check_content_md5(req.headers, &doc)?;
    let config = parse(&doc)?;
    check_destinations(req, bucket, &config)?;
    if req.node.replicator.is_none() {
        // A configuration kept here would promise copies this node never makes.
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "This node has no local drive to keep a replication queue on, so it takes no replication configuration",
        ));
    }
    req.node.layer.put_bucket_replication(bucket, config).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_bucket_replication(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.replication = None).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
#[path = "replication_tests.rs"]
mod tests;
