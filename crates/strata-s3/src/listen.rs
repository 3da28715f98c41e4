//! MinIO's listen API, what `mc watch` and minio-go's `ListenBucketNotification` use:
//! `GET /bucket?events=…&prefix=…&suffix=…&ping=N` (one bucket) or `GET /?events=…` (every
//! bucket) answers `200` with a stream that does not end while the client stays: one line per
//! event, `{"Records":[record]}` ([`strata_notify::event::listen_json`]), and keep-alives while
//! idle (`{"Records":[]}` every `ping` seconds, or a space every half second without `ping`).
//!
//! Each listener is a subscription to the node's [`strata_notify::listen::Hub`] read by one task (the pump), which
//! filters and queues lines for the connection; the queue is bounded and the pump never waits
//! for it, so a slow reader loses events (counted) and never slows a PUT. The client leaving
//! drops the response body, whose [`Listener`] counts listeners, and the queue's receiver, which
//! ends the pump (and with it the subscription). Who listens, and the relay of the other nodes'
//! events, are [`strata_notify::listening`]'s.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use strata_metrics::Metrics;
use strata_notify::listen::{Filter, Next, Subscription};
use strata_object::ObjectError;
use strata_types::limits::{LISTEN_CLIENT_QUEUE_EVENTS, LISTEN_KEEPALIVE_INTERVAL};
use strata_types::BucketName;
use tokio::sync::mpsc;

use crate::body::ResponseBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::Route;

/// What a listener keeps the connection open with while no event comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeepAlive {
    /// A space every [`LISTEN_KEEPALIVE_INTERVAL`] (no `ping` asked): whitespace before the next
    /// document, which JSON readers skip.
    Space,
    /// An empty document, `{"Records":[]}`, every this often (`ping`).
    EmptyRecords(Duration),
}

impl KeepAlive {
    fn period(self) -> Duration {
        match self {
            KeepAlive::Space => LISTEN_KEEPALIVE_INTERVAL,
            KeepAlive::EmptyRecords(every) => every,
        }
    }

    fn bytes(self) -> Bytes {
        match self {
            KeepAlive::Space => Bytes::from_static(b" "),
            KeepAlive::EmptyRecords(_) => Bytes::from_static(b"{\"Records\":[]}\n"),
        }
    }
}

/// A listen request's parameters.
#[derive(Debug, PartialEq, Eq)]
struct Params {
    events: Vec<String>,
    prefix: String,
    suffix: String,
    keepalive: KeepAlive,
}

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

impl Params {
    /// `events` (each one name or pattern, repeated), `prefix` and `suffix` (at most once each),
    /// `ping` (whole seconds, at least 1; above `ping_max` taken as it).
    fn parse(route: &Route, ping_max: Duration) -> Result<Self, S3Error> {
        let values = |name: &str| -> Vec<String> {
            route.query.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
        };
        let once = |name: &str| -> Result<String, S3Error> {
            let mut found = values(name);
            if found.len() > 1 {
                return Err(invalid(&format!("Cannot specify more than one {name} rule in a filter.")));
            }
            Ok(found.pop().unwrap_or_default())
        };
        let (prefix, suffix) = (once("prefix")?, once("suffix")?);
        let keepalive = match values("ping").into_iter().next().filter(|p| !p.is_empty()) {
            None => KeepAlive::Space,
            Some(p) => {
                let secs = p.parse::<u64>().ok().filter(|s| *s >= 1).ok_or_else(|| {
                    invalid(&format!("ping must be a whole number of seconds, at least 1 (got {p:?})"))
                })?;
                KeepAlive::EmptyRecords(Duration::from_secs(secs).min(ping_max))
            }
        };
        Ok(Self { events: values("events"), prefix, suffix, keepalive })
    }
}

/// ListenBucketNotification (`bucket` given) and ListenNotification (every bucket).
pub async fn listen_notification(
    req: &Request<'_>,
    bucket: Option<&BucketName>,
    route: &Route,
) -> Result<Reply, S3Error> {
    // Keep-alives at least twice per idle time-out, or the server's own watchdog would cut the
    // connection of a listener that asked for a long `ping`.
    let params = Params::parse(route, req.node.config.idle_timeout / 2)?;
    let filter = Filter::new(bucket.map(|b| b.to_string()), params.events, params.prefix, params.suffix)
        .map_err(|e| invalid(&e.to_string()))?;
    if let Some(b) = bucket {
        req.node.layer.bucket_info(b)?;
    }
    let (subscription, listener) = req.node.listen.attach().await.map_err(|_| {
        S3Error::new(S3ErrorCode::SlowDown, "Too many listeners on this server; please retry later.")
    })?;
    let (tx, rx) = mpsc::channel(LISTEN_CLIENT_QUEUE_EVENTS);
    let metrics = req.node.metrics.clone();
    tokio::spawn(pump(Pump { subscription, filter, tx, keepalive: params.keepalive, metrics }));
    let reply =
        Reply { status: StatusCode::OK, headers: HeaderMap::new(), body: ResponseBody::Listen(rx, listener) };
    // MinIO's event-stream headers: no caching, and no buffering by a proxy (nginx) in front.
    Ok(reply
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("x-accel-buffering", "no"))
}

/// One listener's task: its subscription in, its connection's queue out.
struct Pump {
    subscription: Subscription,
    filter: Filter,
    tx: mpsc::Sender<Result<Bytes, ObjectError>>,
    keepalive: KeepAlive,
    metrics: Arc<Metrics>,
}

impl Pump {
    /// Queues `bytes` for the connection without waiting: a full queue drops them.
    fn offer(&self, bytes: Bytes, is_event: bool) {
        let counter = match self.tx.try_send(Ok(bytes)) {
            Ok(()) => &self.metrics.listen_events_sent,
            Err(mpsc::error::TrySendError::Full(_)) => &self.metrics.listen_events_dropped,
            Err(mpsc::error::TrySendError::Closed(_)) => return,
        };
        if is_event {
            counter.inc();
        }
    }
}

/// Runs until the client leaves (the queue's receiver is dropped with the response body) or
/// the hub closes (shutdown: the queue's sender is dropped here, which ends the stream).
async fn pump(mut p: Pump) {
    let period = p.keepalive.period();
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = p.tx.closed() => return,
            next = p.subscription.next() => match next {
                Next::Event(e) if p.filter.matches(&e) => p.offer(e.line.clone(), true),
                Next::Event(_) => {}
                Next::Lost(n) => {
                    p.metrics.listen_events_dropped.inc_by(n);
                }
                Next::Closed => return,
            },
            _ = keepalive.tick() => p.offer(p.keepalive.bytes(), false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_notify::listen::Hub;
    use strata_notify::{Event, EventName, RecordContext};

    fn route(query: &str) -> Route {
        crate::router::route(&http::Method::GET, "/b", query, None, None).expect("routes")
    }

    const PING_MAX: Duration = Duration::from_secs(30);

    fn parse(query: &str) -> Result<Params, S3Error> {
        Params::parse(&route(query), PING_MAX)
    }

    fn code(query: &str) -> Option<S3ErrorCode> {
        parse(query).err().map(|e| e.code)
    }

    #[test]
    fn parameters_are_read_as_minio_sends_them() {
        let p = parse(
            "events=s3%3AObjectCreated%3A%2A&events=s3%3AObjectRemoved%3A%2A&prefix=photos%2F&suffix=.jpg&ping=10",
        )
        .expect("valid");
        assert_eq!(p.events, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]);
        assert_eq!((p.prefix.as_str(), p.suffix.as_str()), ("photos/", ".jpg"));
        assert_eq!(p.keepalive, KeepAlive::EmptyRecords(Duration::from_secs(10)));
        let p = parse("events=s3:ObjectCreated:Put&ping=").expect("valid");
        assert_eq!(p.keepalive, KeepAlive::Space, "an empty ping is no ping");
        assert_eq!((p.prefix.as_str(), p.suffix.as_str()), ("", ""));
        let p = parse("events=s3:ObjectCreated:Put&ping=18446744073709551615").expect("valid");
        assert_eq!(p.keepalive, KeepAlive::EmptyRecords(PING_MAX), "a long ping is cut to the most");
        for bad in ["ping=0", "ping=-1", "ping=x", "ping=1.5", "prefix=a&prefix=b", "suffix=a&suffix=b"] {
            assert_eq!(
                code(&format!("events=s3:ObjectCreated:Put&{bad}")),
                Some(S3ErrorCode::InvalidArgument),
                "{bad}"
            );
        }
    }

    #[test]
    fn keep_alives_are_whitespace_or_an_empty_document() {
        assert_eq!(KeepAlive::Space.bytes(), Bytes::from_static(b" "));
        assert_eq!(KeepAlive::Space.period(), LISTEN_KEEPALIVE_INTERVAL);
        let ping = KeepAlive::EmptyRecords(Duration::from_secs(3));
        assert_eq!(ping.period(), Duration::from_secs(3));
        let doc: serde_json::Value = serde_json::from_slice(&ping.bytes()).expect("JSON");
        assert_eq!(doc, serde_json::json!({"Records": []}));
        assert!(ping.bytes().ends_with(b"\n"), "one line");
    }

    fn event(key: &str) -> Event {
        Event {
            name: EventName::ObjectCreatedPut,
            bucket: "b".into(),
            key: key.into(),
            size: Some(1),
            etag: Some("e".into()),
            version_id: None,
            principal: None,
            source_ip: String::new(),
            request_id: String::new(),
            time_nanos: 1_700_000_000_000_000_000,
            sequencer: 1,
        }
    }

    /// A pump over a fresh hub, with a queue of `queue` entries; the hub, the queue's receiver,
    /// the metrics and the pump's task.
    fn started(
        filter: Filter,
        queue: usize,
        keepalive: KeepAlive,
    ) -> (Hub, strata_object::ObjectStream, Arc<Metrics>, tokio::task::JoinHandle<()>) {
        let hub = Hub::new(RecordContext { region: "us-east-1".into(), owner_id: "o".into() });
        let (tx, rx) = mpsc::channel(queue);
        let metrics = Arc::new(Metrics::new());
        let p = Pump { subscription: hub.subscribe(), filter, tx, keepalive, metrics: metrics.clone() };
        (hub, rx, metrics, tokio::spawn(pump(p)))
    }

    fn jpg_filter() -> Filter {
        Filter::new(Some("b".into()), vec!["s3:ObjectCreated:*".into()], String::new(), ".jpg".into())
            .expect("valid")
    }

    #[tokio::test]
    async fn a_slow_reader_loses_events_and_they_are_counted() {
        let hours = KeepAlive::EmptyRecords(Duration::from_secs(3600));
        let (hub, mut rx, metrics, task) = started(jpg_filter(), 2, hours);
        for key in ["1.jpg", "skipped.png", "2.jpg", "3.jpg", "4.jpg"] {
            hub.publish(&event(key));
        }
        let dropped = || metrics.listen_events_dropped.get();
        for _ in 0..1000 {
            if dropped() == 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(dropped(), 2, "two of four matching events found the queue full");
        assert_eq!(metrics.listen_events_sent.get(), 2);
        for want in ["1.jpg", "2.jpg"] {
            let line = rx.recv().await.expect("a line").expect("bytes");
            let doc: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
            assert_eq!(doc["Records"][0]["s3"]["object"]["key"], want);
        }
        drop(rx);
        let ended = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(matches!(ended, Ok(Ok(()))), "the pump ends once the reader is gone");
        assert!(!hub.is_listened(), "and its subscription with it");
    }

    #[tokio::test]
    async fn the_stream_ends_when_the_hub_closes_and_keeps_alive_meanwhile() {
        let (hub, mut rx, _metrics, task) =
            started(jpg_filter(), 8, KeepAlive::EmptyRecords(Duration::from_millis(20)));
        let first = rx.recv().await.expect("a keep-alive").expect("bytes");
        assert_eq!(first, KeepAlive::EmptyRecords(Duration::ZERO).bytes());
        hub.close();
        let ended = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(matches!(ended, Ok(Ok(()))), "the pump ends");
        while let Some(item) = rx.recv().await {
            item.expect("only keep-alives were queued");
        }
    }
}
