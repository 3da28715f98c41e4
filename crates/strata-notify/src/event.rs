//! Event names as AWS spells them, key filters, and the event record JSON: AWS's record in
//! MinIO's envelope for targets ([`record_json`]), MinIO's form for listeners ([`listen_json`]).

use std::sync::atomic::{AtomicU64, Ordering};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use strata_meta::NotificationRule;

/// Every event Strata emits (or reserves: the lifecycle expirations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventName {
    ObjectCreatedPut,
    ObjectCreatedPost,
    ObjectCreatedCopy,
    ObjectCreatedCompleteMultipartUpload,
    ObjectRemovedDelete,
    ObjectRemovedDeleteMarkerCreated,
    ObjectTaggingPut,
    ObjectTaggingDelete,
    LifecycleExpirationDelete,
    LifecycleExpirationDeleteMarkerCreated,
}

impl EventName {
    pub const ALL: [EventName; 10] = [
        Self::ObjectCreatedPut,
        Self::ObjectCreatedPost,
        Self::ObjectCreatedCopy,
        Self::ObjectCreatedCompleteMultipartUpload,
        Self::ObjectRemovedDelete,
        Self::ObjectRemovedDeleteMarkerCreated,
        Self::ObjectTaggingPut,
        Self::ObjectTaggingDelete,
        Self::LifecycleExpirationDelete,
        Self::LifecycleExpirationDeleteMarkerCreated,
    ];

    /// The full name, `s3:ObjectCreated:Put`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ObjectCreatedPut => "s3:ObjectCreated:Put",
            Self::ObjectCreatedPost => "s3:ObjectCreated:Post",
            Self::ObjectCreatedCopy => "s3:ObjectCreated:Copy",
            Self::ObjectCreatedCompleteMultipartUpload => "s3:ObjectCreated:CompleteMultipartUpload",
            Self::ObjectRemovedDelete => "s3:ObjectRemoved:Delete",
            Self::ObjectRemovedDeleteMarkerCreated => "s3:ObjectRemoved:DeleteMarkerCreated",
            Self::ObjectTaggingPut => "s3:ObjectTagging:Put",
            Self::ObjectTaggingDelete => "s3:ObjectTagging:Delete",
            Self::LifecycleExpirationDelete => "s3:LifecycleExpiration:Delete",
            Self::LifecycleExpirationDeleteMarkerCreated => "s3:LifecycleExpiration:DeleteMarkerCreated",
        }
    }

    /// The event whose full name is `name` (`s3:ObjectCreated:Put`).
    pub fn parse(name: &str) -> Option<EventName> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the event says nothing of the object's content (no size or ETag in its record).
    fn is_removal(self) -> bool {
        matches!(
            self,
            Self::ObjectRemovedDelete
                | Self::ObjectRemovedDeleteMarkerCreated
                | Self::LifecycleExpirationDelete
                | Self::LifecycleExpirationDeleteMarkerCreated
        )
    }

    /// Whether a configuration's event entry (a name or a `…:*` pattern) covers this event.
    pub fn matches(self, pattern: &str) -> bool {
        match pattern.strip_suffix('*') {
            Some(head) => self.as_str().starts_with(head),
            None => self.as_str() == pattern,
        }
    }
}

/// Whether `name` is an event name or pattern a configuration may hold.
pub fn is_known_event(name: &str) -> bool {
    EventName::ALL.iter().any(|e| e.as_str() == name)
        || ["s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:ObjectTagging:*", "s3:LifecycleExpiration:*"]
            .contains(&name)
}

/// Event names MinIO's listen API accepts beside the ones above: events Strata never emits
/// (reads, replication, tiering, scanner findings, bucket creation), accepted so that clients
/// asking for them (`mc watch` asks for `s3:ObjectAccessed:*` by default) are served the events
/// that do happen.
const MINIO_EVENT_NAMES: [&str; 30] = [
    "s3:BucketCreated:*",
    "s3:BucketRemoved:*",
    "s3:ObjectAccessed:*",
    "s3:ObjectAccessed:Get",
    "s3:ObjectAccessed:GetRetention",
    "s3:ObjectAccessed:GetLegalHold",
    "s3:ObjectAccessed:Head",
    "s3:ObjectAccessed:Attributes",
    "s3:ObjectCreated:PutRetention",
    "s3:ObjectCreated:PutLegalHold",
    "s3:ObjectCreated:PutTagging",
    "s3:ObjectCreated:DeleteTagging",
    "s3:ObjectRemoved:NoOP",
    "s3:ObjectRemoved:DeleteAllVersions",
    "s3:LifecycleDelMarkerExpiration:Delete",
    "s3:Replication:*",
    "s3:Replication:OperationFailedReplication",
    "s3:Replication:OperationCompletedReplication",
    "s3:Replication:OperationMissedThreshold",
    "s3:Replication:OperationReplicatedAfterThreshold",
    "s3:Replication:OperationNotTracked",
    "s3:ObjectRestore:*",
    "s3:ObjectRestore:Post",
    "s3:ObjectRestore:Completed",
    "s3:ObjectTransition:*",
    "s3:ObjectTransition:Failed",
    "s3:ObjectTransition:Complete",
    "s3:Scanner:ManyVersions",
    "s3:Scanner:LargeVersions",
    "s3:Scanner:BigPrefix",
];

/// Whether a listener may ask for `name`: an event name or pattern a configuration may hold, or
/// one of MinIO's ([`MINIO_EVENT_NAMES`]).
pub fn is_listen_event(name: &str) -> bool {
    is_known_event(name) || MINIO_EVENT_NAMES.contains(&name)
}

/// Whether two event entries can name the same event.
fn events_overlap(a: &str, b: &str) -> bool {
    EventName::ALL.iter().any(|e| e.matches(a) && e.matches(b))
}

/// Whether two filters can both match one key: their prefixes are one a prefix of the other,
/// and their suffixes one a suffix of the other (an empty one matches everything).
fn filters_overlap(a: &NotificationRule, b: &NotificationRule) -> bool {
    let prefixes = a.prefix.starts_with(&b.prefix) || b.prefix.starts_with(&a.prefix);
    let suffixes = a.suffix.ends_with(&b.suffix) || b.suffix.ends_with(&a.suffix);
    prefixes && suffixes
}

/// The first pair of rules that could send one event twice (AWS refuses such configurations:
/// "Configurations overlap").
pub fn overlapping(rules: &[NotificationRule]) -> Option<(&NotificationRule, &NotificationRule)> {
    for (i, a) in rules.iter().enumerate() {
        for b in &rules[i + 1..] {
            let shared = a.events.iter().any(|x| b.events.iter().any(|y| events_overlap(x, y)));
            if shared && filters_overlap(a, b) {
                return Some((a, b));
            }
        }
    }
    None
}

/// Whether `rule` wants `event` on `key`.
pub fn rule_matches(rule: &NotificationRule, event: EventName, key: &str) -> bool {
    rule.events.iter().any(|p| event.matches(p))
        && key.starts_with(&rule.prefix)
        && key.ends_with(&rule.suffix)
}

/// What happened, as the S3 layer knows it after the operation succeeded.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: EventName,
    pub bucket: String,
    pub key: String,
    /// Size and ETag (without quotes) of the object created or tagged; `None` for removals.
    pub size: Option<u64>,
    pub etag: Option<String>,
    pub version_id: Option<String>,
    /// The access key of the requester (`None`: anonymous).
    pub principal: Option<String>,
    pub source_ip: String,
    pub request_id: String,
    /// Nanoseconds since the Unix epoch.
    pub time_nanos: u64,
    /// Orders the events of one key: a later event has a greater value.
    pub sequencer: u64,
}

/// Bytes kept as they are in an event's key: AWS's form encoding (space as `+`) with `/` kept.
const KEY_ENCODE: &AsciiSet =
    &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b'/');

/// The key as event records carry it: URL-encoded, a space as `+`.
pub fn encode_key(key: &str) -> String {
    utf8_percent_encode(key, KEY_ENCODE).to_string().replace("%20", "+")
}

/// Bytes kept as they are by a query escape: letters, digits and `-_.~`.
const QUERY_ENCODE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// The key query-escaped, as MinIO's listen records carry it: `/` as `%2F`, a space as `+`.
pub fn query_escape(key: &str) -> String {
    utf8_percent_encode(key, QUERY_ENCODE).to_string().replace("%20", "+")
}

/// Settings every record of this server carries.
#[derive(Debug, Clone)]
pub struct RecordContext {
    pub region: String,
    /// The bucket owner's canonical id.
    pub owner_id: String,
}

/// Hands out event sequencers: each greater than every one before (event time in nanoseconds
/// when the clock allows), so the events of one key are ordered.
#[derive(Debug, Default)]
pub struct Sequencer(AtomicU64);

impl Sequencer {
    pub fn next(&self) -> u64 {
        let now = strata_types::time::now_nanos();
        let prev = self.0.fetch_max(now, Ordering::Relaxed);
        if prev >= now {
            self.0.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            now
        }
    }
}

/// How a record names its event and key: AWS's way for targets, MinIO's for listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `eventName` without `s3:`; the key URL-encoded with `/` kept.
    Aws,
    /// `eventName` with `s3:` and the key query-escaped (`/` as `%2F`), as MinIO's listen API
    /// sends them: `mc watch` tells creations by the `s3:ObjectCreated:` prefix and decodes
    /// keys holding `%2F`.
    Minio,
}

/// The record AWS sends for `event` under the configuration `rule_id`, wrapped as MinIO's
/// targets send it (`EventName` and `Key` beside `Records`, which is AWS's document).
pub fn record_json(ctx: &RecordContext, rule_id: &str, event: &Event) -> Vec<u8> {
    let doc = serde_json::json!({
        "EventName": event.name.as_str(),
        "Key": format!("{}/{}", event.bucket, event.key),
        "Records": [record(ctx, rule_id, event, Form::Aws)],
    });
    doc.to_string().into_bytes()
}

/// The configuration id listeners' records carry (MinIO's).
const LISTEN_CONFIGURATION_ID: &str = "Config";

/// The document a listener receives for `event`, as MinIO's listen API sends it:
/// `{"Records":[record]}` with the record in MinIO's form and the client's address as
/// `source.host`. No newline: the stream adds it.
pub fn listen_json(ctx: &RecordContext, event: &Event) -> Vec<u8> {
    let mut record = record(ctx, LISTEN_CONFIGURATION_ID, event, Form::Minio);
    record["source"] = serde_json::json!({ "host": event.source_ip });
    serde_json::json!({ "Records": [record] }).to_string().into_bytes()
}

fn record(ctx: &RecordContext, rule_id: &str, event: &Event, form: Form) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let key = match form {
        Form::Aws => encode_key(&event.key),
        Form::Minio => query_escape(&event.key),
    };
    let name = match form {
        Form::Aws => event.name.as_str().trim_start_matches("s3:"),
        Form::Minio => event.name.as_str(),
    };
    let mut object = Map::new();
    object.insert("key".into(), Value::String(key));
    if !event.name.is_removal() {
        if let Some(size) = event.size {
            object.insert("size".into(), json!(size));
        }
        if let Some(etag) = &event.etag {
            object.insert("eTag".into(), json!(etag));
        }
    }
    if let Some(v) = &event.version_id {
        object.insert("versionId".into(), json!(v));
    }
    object.insert("sequencer".into(), json!(format!("{:016X}", event.sequencer)));
    let principal = event.principal.clone().unwrap_or_else(|| "anonymous".into());
    json!({
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": ctx.region,
        "eventTime": strata_types::time::iso8601(event.time_nanos),
        "eventName": name,
        "userIdentity": { "principalId": principal },
        "requestParameters": { "sourceIPAddress": event.source_ip },
        "responseElements": { "x-amz-request-id": event.request_id, "x-amz-id-2": event.request_id },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": rule_id,
            "bucket": {
                "name": event.bucket,
                "ownerIdentity": { "principalId": ctx.owner_id },
                "arn": format!("arn:aws:s3:::{}", event.bucket),
            },
            "object": Value::Object(object),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_meta::NotificationKind;

    fn rule(events: &[&str], prefix: &str, suffix: &str) -> NotificationRule {
        NotificationRule {
            id: "r".into(),
            kind: NotificationKind::Queue,
            target_arn: "arn:minio:sqs::1:webhook".into(),
            events: events.iter().map(|e| (*e).to_owned()).collect(),
            prefix: prefix.into(),
            suffix: suffix.into(),
        }
    }

    #[test]
    fn names_and_patterns_match_as_aws_defines_them() {
        use EventName as E;
        assert!(E::ObjectCreatedPut.matches("s3:ObjectCreated:*"));
        assert!(E::ObjectCreatedCompleteMultipartUpload.matches("s3:ObjectCreated:*"));
        assert!(!E::ObjectRemovedDelete.matches("s3:ObjectCreated:*"));
        assert!(E::ObjectRemovedDeleteMarkerCreated.matches("s3:ObjectRemoved:DeleteMarkerCreated"));
        assert!(!E::ObjectRemovedDelete.matches("s3:ObjectRemoved:DeleteMarkerCreated"));
        assert!(is_known_event("s3:ObjectTagging:*") && is_known_event("s3:LifecycleExpiration:Delete"));
        assert!(!is_known_event("s3:ObjectCreated:Patch") && !is_known_event("s3:*"));
        assert!(!is_known_event("ObjectCreated:Put"));
    }

    #[test]
    fn filters_select_keys_and_overlaps_are_found() {
        let r = rule(&["s3:ObjectCreated:*"], "images/", ".jpg");
        assert!(rule_matches(&r, EventName::ObjectCreatedPut, "images/a.jpg"));
        assert!(!rule_matches(&r, EventName::ObjectCreatedPut, "images/a.png"));
        assert!(!rule_matches(&r, EventName::ObjectCreatedPut, "docs/a.jpg"));
        assert!(!rule_matches(&r, EventName::ObjectRemovedDelete, "images/a.jpg"));
        // Same event type, one prefix inside the other: overlap.
        let rules = [r.clone(), rule(&["s3:ObjectCreated:Put"], "images/2024/", "")];
        assert!(overlapping(&rules).is_some());
        // Disjoint prefixes, or different event types: no overlap.
        let rules = [r.clone(), rule(&["s3:ObjectCreated:Put"], "docs/", ".jpg")];
        assert!(overlapping(&rules).is_none());
        let rules = [r.clone(), rule(&["s3:ObjectRemoved:*"], "images/", ".jpg")];
        assert!(overlapping(&rules).is_none());
        let rules = [r, rule(&["s3:ObjectCreated:Copy"], "images/", ".png")];
        assert!(overlapping(&rules).is_none());
    }

    #[test]
    fn the_record_carries_aws_fields() {
        let ctx = RecordContext { region: "us-east-1".into(), owner_id: "owner".into() };
        let mut event = Event {
            name: EventName::ObjectCreatedPut,
            bucket: "b".into(),
            key: "dir/a b+c.txt".into(),
            size: Some(5),
            etag: Some("5d41402abc4b2a76b9719d911017c592".into()),
            version_id: None,
            principal: Some("AKIA".into()),
            source_ip: "127.0.0.1".into(),
            request_id: "REQ1".into(),
            time_nanos: 1_700_000_000_123_000_000,
            sequencer: 0x1234,
        };
        let doc: serde_json::Value =
            serde_json::from_slice(&record_json(&ctx, "cfg", &event)).expect("valid JSON");
        assert_eq!(doc["EventName"], "s3:ObjectCreated:Put");
        assert_eq!(doc["Key"], "b/dir/a b+c.txt");
        let r = &doc["Records"][0];
        assert_eq!(r["eventVersion"], "2.1");
        assert_eq!(r["eventSource"], "aws:s3");
        assert_eq!(r["eventName"], "ObjectCreated:Put");
        assert_eq!(r["eventTime"], "2023-11-14T22:13:20.123Z");
        assert_eq!(r["userIdentity"]["principalId"], "AKIA");
        assert_eq!(r["requestParameters"]["sourceIPAddress"], "127.0.0.1");
        assert_eq!(r["responseElements"]["x-amz-request-id"], "REQ1");
        assert_eq!(r["s3"]["configurationId"], "cfg");
        assert_eq!(r["s3"]["bucket"]["arn"], "arn:aws:s3:::b");
        assert_eq!(r["s3"]["bucket"]["ownerIdentity"]["principalId"], "owner");
        assert_eq!(r["s3"]["object"]["key"], "dir/a+b%2Bc.txt");
        assert_eq!(r["s3"]["object"]["size"], 5);
        assert_eq!(r["s3"]["object"]["eTag"], "5d41402abc4b2a76b9719d911017c592");
        assert_eq!(r["s3"]["object"]["sequencer"], "0000000000001234");
        event.name = EventName::ObjectRemovedDelete;
        let doc: serde_json::Value =
            serde_json::from_slice(&record_json(&ctx, "cfg", &event)).expect("valid JSON");
        let object = &doc["Records"][0]["s3"]["object"];
        assert!(object.get("size").is_none() && object.get("eTag").is_none());
    }

    #[test]
    fn listeners_get_minio_names_and_escaped_keys() {
        let ctx = RecordContext { region: "us-east-1".into(), owner_id: "owner".into() };
        let event = Event {
            name: EventName::ObjectRemovedDeleteMarkerCreated,
            bucket: "b".into(),
            key: "dir/a b+c~.txt".into(),
            size: None,
            etag: None,
            version_id: Some("v1".into()),
            principal: None,
            source_ip: "10.0.0.9".into(),
            request_id: "REQ2".into(),
            time_nanos: 1_700_000_000_000_000_000,
            sequencer: 0xABC,
        };
        let doc: serde_json::Value = serde_json::from_slice(&listen_json(&ctx, &event)).expect("valid JSON");
        let keys: Vec<&String> = doc.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["Records"], "a listener's document is MinIO's: Records alone");
        let r = &doc["Records"][0];
        assert_eq!(r["eventName"], "s3:ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(r["s3"]["object"]["key"], "dir%2Fa+b%2Bc~.txt");
        assert_eq!(r["s3"]["object"]["versionId"], "v1");
        assert_eq!(r["s3"]["configurationId"], "Config");
        assert_eq!(r["userIdentity"]["principalId"], "anonymous");
        assert_eq!(r["source"]["host"], "10.0.0.9");
        // The target's record of the same event keeps AWS's forms.
        let doc: serde_json::Value =
            serde_json::from_slice(&record_json(&ctx, "cfg", &event)).expect("valid JSON");
        assert_eq!(doc["Records"][0]["eventName"], "ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(doc["Records"][0]["s3"]["object"]["key"], "dir/a+b%2Bc~.txt");
        assert!(doc["Records"][0].get("source").is_none());
    }

    #[test]
    fn names_parse_and_listeners_may_ask_for_minio_names() {
        for e in EventName::ALL {
            assert_eq!(EventName::parse(e.as_str()), Some(e));
        }
        assert_eq!(EventName::parse("ObjectCreated:Put"), None);
        assert!(is_listen_event("s3:ObjectCreated:*") && is_listen_event("s3:ObjectTagging:Put"));
        assert!(is_listen_event("s3:ObjectAccessed:*") && is_listen_event("s3:Scanner:LargeVersions"));
        assert!(is_listen_event("s3:BucketCreated:*") && is_listen_event("s3:ObjectTransition:*"));
        assert!(!is_known_event("s3:ObjectAccessed:*"), "configurations keep AWS's names");
        assert!(
            !is_listen_event("s3:*") && !is_listen_event("") && !is_listen_event("s3:ObjectAccessed:Put")
        );
    }

    #[test]
    fn sequencers_always_grow() {
        let s = Sequencer::default();
        let mut last = 0;
        for _ in 0..1000 {
            let n = s.next();
            assert!(n > last);
            last = n;
        }
    }
}
