//! Bucket notifications: `Put/GetBucketNotificationConfiguration` (the S3 XML, validated as AWS
//! validates it), and [`Request::notify`], the one call each handler makes after a change
//! succeeded: it publishes to listeners (see [`crate::listen`]) and queues for targets.
//! Delivery is `strata-notify`'s.

use http::StatusCode;
use strata_meta::{NotificationKind, NotificationRule};
use strata_notify::{Event, EventName};
use strata_object::ObjectInfo;
use strata_types::limits::NOTIFICATION_RULES_MAX;
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Node, Reply, Request};
use crate::error::malformed_xml as malformed;
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

const KINDS: [(&[u8], &[u8], NotificationKind); 3] = [
    (b"QueueConfiguration", b"Queue", NotificationKind::Queue),
    (b"TopicConfiguration", b"Topic", NotificationKind::Topic),
    (b"CloudFunctionConfiguration", b"CloudFunction", NotificationKind::CloudFunction),
];

/// One configuration as read, before validation.
#[derive(Default)]
struct Draft {
    kind: Option<NotificationKind>,
    id: Option<String>,
    arn: Option<String>,
    events: Vec<String>,
    rules: Vec<(String, String)>,
    rule_name: Option<String>,
    rule_value: Option<String>,
}

/// Parses a NotificationConfiguration document into rules (not yet checked against targets).
pub(crate) fn parse(doc: &[u8]) -> Result<Vec<NotificationRule>, S3Error> {
    use quick_xml::events::Event as X;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    let (mut path, mut text) = (Vec::<Vec<u8>>::new(), String::new());
    let (mut drafts, mut draft, mut saw_root) = (Vec::new(), None::<Draft>, false);
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| malformed())? {
            X::Start(e) => {
                let name = e.local_name().as_ref().to_vec();
                text.clear();
                match (path.len(), name.as_slice()) {
                    (0, b"NotificationConfiguration") => saw_root = true,
                    (0, _) => return Err(malformed()),
                    (1, b"EventBridgeConfiguration") => {
                        return Err(invalid("EventBridge destinations are not supported"))
                    }
                    (1, n) => {
                        let kind = KINDS.iter().find(|k| k.0 == n).ok_or_else(malformed)?.2;
                        draft = Some(Draft { kind: Some(kind), ..Draft::default() });
                    }
                    _ => {}
                }
                path.push(name);
            }
            X::Empty(e) => {
                if path.is_empty() && e.local_name().as_ref() == b"NotificationConfiguration" {
                    saw_root = true;
                } else if path.len() == 1 {
                    return Err(malformed());
                }
            }
            ev @ (X::Text(_) | X::GeneralRef(_)) => xml::append_text(&ev, &mut text)?,
            X::End(_) => {
                let name = path.pop().ok_or_else(malformed)?;
                let value = std::mem::take(&mut text).trim().to_owned();
                if path.len() == 1 {
                    drafts.push(draft.take().ok_or_else(malformed)?);
                } else if let Some(d) = draft.as_mut() {
                    field(d, &path, &name, value)?;
                }
            }
            X::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !saw_root || !path.is_empty() {
        return Err(malformed());
    }
    if drafts.len() > NOTIFICATION_RULES_MAX {
        return Err(invalid(&format!(
            "A bucket may hold at most {NOTIFICATION_RULES_MAX} notification configurations"
        )));
    }
    let rules = drafts.into_iter().map(finish).collect::<Result<Vec<_>, _>>()?;
    if let Some((a, b)) = strata_notify::event::overlapping(&rules) {
        return Err(invalid(&format!(
            "Configurations overlap. Configurations on the same bucket cannot share a common event type. ({} and {})",
            a.id, b.id
        )));
    }
    let mut ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("Configurations must have unique IDs"));
    }
    Ok(rules)
}

/// Records the element `name` (under `path`, below the configuration) into `d`.
fn field(d: &mut Draft, path: &[Vec<u8>], name: &[u8], value: String) -> Result<(), S3Error> {
    let arn_tag = KINDS.iter().find(|k| Some(k.2) == d.kind).map(|k| k.1);
    match (path.len(), name) {
        (2, b"Id") => d.id = Some(value),
        (2, b"Event") => d.events.push(value),
        (2, b"Filter") => {}
        (2, n) if Some(n) == arn_tag => d.arn = Some(value),
        (3, b"S3Key") if path[2] == b"Filter" => {}
        (4, b"FilterRule") => {
            let (Some(n), Some(v)) = (d.rule_name.take(), d.rule_value.take()) else {
                return Err(malformed());
            };
            d.rules.push((n, v));
        }
        (5, b"Name") if path[4] == b"FilterRule" => d.rule_name = Some(value),
        (5, b"Value") if path[4] == b"FilterRule" => d.rule_value = Some(value),
        _ => return Err(malformed()),
    }
    Ok(())
}

fn finish(d: Draft) -> Result<NotificationRule, S3Error> {
    let (Some(kind), Some(target_arn)) = (d.kind, d.arn) else { return Err(malformed()) };
    if d.events.is_empty() {
        return Err(malformed());
    }
    if let Some(e) = d.events.iter().find(|e| !strata_notify::event::is_known_event(e)) {
        return Err(invalid(&format!("The event is not supported for notifications: {e}")));
    }
    let (mut prefix, mut suffix) = (None, None);
    for (name, value) in d.rules {
        let slot = match name.to_ascii_lowercase().as_str() {
            "prefix" => &mut prefix,
            "suffix" => &mut suffix,
            _ => return Err(invalid("filter rule name must be either prefix or suffix")),
        };
        if slot.replace(value).is_some() {
            return Err(invalid(&format!("Cannot specify more than one {name} rule in a filter.")));
        }
    }
    let id = d.id.filter(|i| !i.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    Ok(NotificationRule {
        id,
        kind,
        target_arn,
        events: d.events,
        prefix: prefix.unwrap_or_default(),
        suffix: suffix.unwrap_or_default(),
    })
}

fn write(rules: &[NotificationRule]) -> String {
    let mut x = xml::Writer::new();
    x.root("NotificationConfiguration");
    for r in rules {
        let (element, arn_tag, _) = KINDS.iter().find(|k| k.2 == r.kind).copied().unwrap_or(KINDS[0]);
        let element = String::from_utf8_lossy(element);
        x.open(&element);
        x.elem("Id", &r.id);
        x.elem(&String::from_utf8_lossy(arn_tag), &r.target_arn);
        for e in &r.events {
            x.elem("Event", e);
        }
        if !r.prefix.is_empty() || !r.suffix.is_empty() {
            x.open("Filter");
            x.open("S3Key");
            for (name, value) in [("prefix", &r.prefix), ("suffix", &r.suffix)] {
                if !value.is_empty() {
                    x.open("FilterRule");
                    x.elem("Name", name);
                    x.elem("Value", value);
                    x.close("FilterRule");
                }
            }
            x.close("S3Key");
            x.close("Filter");
        }
        x.close(&element);
    }
    x.close("NotificationConfiguration");
    x.finish()
}

pub async fn get_bucket_notification_configuration(
    req: &Request<'_>,
    bucket: &BucketName,
) -> Result<Reply, S3Error> {
    let record = req.node.layer.bucket_record(bucket)?;
    Ok(Reply::xml(write(&record.notifications)))
}

pub async fn put_bucket_notification_configuration(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    let rules = parse(&doc)?;
    let unknown: Vec<&str> = rules
        .iter()
        .filter(|r| req.node.notify.as_ref().and_then(|n| n.queue(&r.target_arn)).is_none())
        .map(|r| r.target_arn.as_str())
        .collect();
    if !unknown.is_empty() {
        return Err(invalid(&format!(
            "Unable to validate the following destination configurations: {}",
            unknown.join(", ")
        )));
    }
    req.node.layer.update_bucket(bucket, |r| r.notifications = rules).await?;
    Ok(Reply::empty(StatusCode::OK))
}

impl Request<'_> {
    /// Hands the event `name` on `key` to this node's listeners, and queues it for the bucket's
    /// notification rules that want it, returning once it is durable. Call after the operation
    /// succeeded; costs nothing when nobody listens and the bucket has no rule for it.
    pub async fn notify(&self, name: EventName, bucket: &str, key: &str, object: Option<&ObjectInfo>) {
        let version = object.and_then(|o| o.version_id);
        self.notify_version(name, bucket, key, object, version).await
    }

    /// [`Request::notify`] for a removal: `ObjectRemoved:DeleteMarkerCreated` when the delete
    /// added a delete marker, else `ObjectRemoved:Delete`.
    pub async fn notify_removed(&self, bucket: &str, key: &str, done: &strata_object::DeleteOutcome) {
        let name = if done.delete_marker {
            EventName::ObjectRemovedDeleteMarkerCreated
        } else {
            EventName::ObjectRemovedDelete
        };
        let version = done.version_id.filter(|_| done.versioned);
        self.notify_version(name, bucket, key, None, version).await
    }

    /// [`Request::notify`] of an event about `version` of an object (tagging changes: the
    /// version they changed, shown in versioned buckets).
    pub async fn notify_version(
        &self,
        name: EventName,
        bucket: &str,
        key: &str,
        object: Option<&ObjectInfo>,
        version: Option<uuid::Uuid>,
    ) {
        let details = || Details {
            size: object.map(|o| o.size),
            etag: object.map(|o| o.etag.clone()),
            version_id: version.map(|v| crate::version::version_string(Some(v))),
            principal: Some(self.auth.access_key.clone()).filter(|k| !k.is_empty()),
            source_ip: self.origin.source_ip.clone(),
            request_id: self.origin.request_id.clone(),
        };
        emit(self.node, name, bucket, key, details).await;
        let replicator = self.node.replicator.as_deref();
        crate::replicate::queue_write(replicator, &self.node.layer, name, bucket, key, object, version).await;
    }
}

/// What an event says beyond its name, bucket and key.
#[derive(Debug, Default)]
pub(crate) struct Details {
    pub size: Option<u64>,
    pub etag: Option<String>,
    pub version_id: Option<String>,
    pub principal: Option<String>,
    pub source_ip: String,
    pub request_id: String,
}

/// Hands the event `name` on `bucket/key` to this node's listeners and queues it for the
/// bucket's notification rules that want it (returning once it is durable). Costs nothing (no
/// record built, `details` not called) when nobody listens and no rule wants it.
pub(crate) async fn emit(
    node: &Node,
    name: EventName,
    bucket: &str,
    key: &str,
    details: impl FnOnce() -> Details,
) {
    let hub = node.listen.hub();
    let listened = hub.is_listened();
    let rules = node.notify.as_ref().and_then(|notifier| {
        let record = node.layer.bucket_record(bucket).ok()?;
        let wanted = record.notifications.iter().any(|r| strata_notify::event::rule_matches(r, name, key));
        wanted.then_some((notifier, record))
    });
    if !listened && rules.is_none() {
        return;
    }
    let d = details();
    let event = Event {
        name,
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        size: d.size,
        etag: d.etag,
        version_id: d.version_id,
        principal: d.principal,
        source_ip: d.source_ip,
        request_id: d.request_id,
        time_nanos: strata_types::time::now_nanos(),
        sequencer: node.sequencer.next(),
    };
    if listened {
        hub.publish(&event);
    }
    if let Some((notifier, record)) = rules {
        notifier.emit(&record.notifications, &event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(doc: &str) -> Option<S3ErrorCode> {
        parse(doc.as_bytes()).err().map(|e| e.code)
    }

    #[test]
    fn configurations_parse_and_print_back() {
        let doc = r#"<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <QueueConfiguration><Id>images</Id><Queue>arn:minio:sqs::1:webhook</Queue>
            <Event>s3:ObjectCreated:*</Event><Event>s3:ObjectRemoved:Delete</Event>
            <Filter><S3Key><FilterRule><Name>prefix</Name><Value>img/</Value></FilterRule>
              <FilterRule><Name>Suffix</Name><Value>.jpg</Value></FilterRule></S3Key></Filter>
          </QueueConfiguration>
          <TopicConfiguration><Topic>arn:minio:sqs::n:nats</Topic><Event>s3:ObjectTagging:*</Event></TopicConfiguration>
        </NotificationConfiguration>"#;
        let rules = parse(doc.as_bytes()).expect("parses");
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].id, "images");
        assert_eq!(rules[0].kind, NotificationKind::Queue);
        assert_eq!(rules[0].target_arn, "arn:minio:sqs::1:webhook");
        assert_eq!((rules[0].prefix.as_str(), rules[0].suffix.as_str()), ("img/", ".jpg"));
        assert_eq!(rules[1].kind, NotificationKind::Topic);
        assert!(!rules[1].id.is_empty(), "an id is made when none is given");
        assert_eq!(parse(write(&rules).as_bytes()).expect("round trip"), rules);
        assert_eq!(parse(b"<NotificationConfiguration/>").expect("empty"), vec![]);
    }

    #[test]
    fn bad_configurations_get_aws_codes() {
        use S3ErrorCode::{InvalidArgument, MalformedXML};
        let q = |inner: &str| {
            format!("<NotificationConfiguration><QueueConfiguration><Queue>arn:minio:sqs::1:webhook</Queue>{inner}</QueueConfiguration></NotificationConfiguration>")
        };
        assert_eq!(code(&q("<Event>s3:ObjectCreated:Patch</Event>")), Some(InvalidArgument));
        assert_eq!(code(&q("")), Some(MalformedXML));
        assert_eq!(code(&q("<Event>s3:ObjectCreated:Put</Event><Colour>red</Colour>")), Some(MalformedXML));
        let rule = |n: &str| format!("<FilterRule><Name>{n}</Name><Value>a</Value></FilterRule>");
        let filter = |rules: &str| {
            q(&format!("<Event>s3:ObjectCreated:Put</Event><Filter><S3Key>{rules}</S3Key></Filter>"))
        };
        assert_eq!(code(&filter(&rule("middle"))), Some(InvalidArgument));
        assert_eq!(code(&filter(&(rule("prefix") + &rule("prefix")))), Some(InvalidArgument));
        assert_eq!(code(&filter("<FilterRule><Name>prefix</Name></FilterRule>")), Some(MalformedXML));
        assert_eq!(code("<Other/>"), Some(MalformedXML));
        assert_eq!(code("<NotificationConfiguration><QueueConfiguration>"), Some(MalformedXML));
        let two = |a: &str, b: &str| {
            format!("<NotificationConfiguration><QueueConfiguration><Queue>arn:minio:sqs::1:webhook</Queue><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>prefix</Name><Value>{a}</Value></FilterRule></S3Key></Filter></QueueConfiguration><QueueConfiguration><Queue>arn:minio:sqs::2:webhook</Queue><Event>s3:ObjectCreated:Put</Event><Filter><S3Key><FilterRule><Name>prefix</Name><Value>{b}</Value></FilterRule></S3Key></Filter></QueueConfiguration></NotificationConfiguration>")
        };
        assert_eq!(code(&two("logs/", "logs/2024/")), Some(InvalidArgument));
        assert_eq!(code(&two("logs/", "images/")), None);
    }
}
