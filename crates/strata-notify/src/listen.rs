//! The listen fan-out (MinIO's ListenBucketNotification, what `mc watch` uses): every event this
//! node emits, handed in memory to whoever listens right now, whatever the buckets'
//! notification configurations say.
//!
//! One `tokio::sync::broadcast` ring of [`LISTEN_BUFFER_EVENTS`] carries each event as its
//! finished JSON line, built once however many listen and not at all when nobody does
//! ([`Hub::is_listened`] is one atomic load). It is lossy by design: a listener that falls more
//! than the ring behind loses the oldest events ([`Next::Lost`]), and publishing never waits,
//! so a slow listener can never slow a PUT. Events other nodes relay here are published too,
//! marked [`Published::from_peer`] so they are never relayed again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use strata_types::limits::{LISTEN_BUFFER_EVENTS, NOTIFICATION_FILTER_VALUE_SIZE_MAX};
use tokio::sync::{broadcast, watch};

use crate::event::{self, Event, EventName, RecordContext};

/// One event as listeners get it.
#[derive(Debug)]
pub struct Published {
    pub name: EventName,
    pub bucket: String,
    pub key: String,
    /// The listen document and its newline: the bytes a listener's stream carries.
    pub line: Bytes,
    /// Relayed from another node: passed to this node's listeners, never to other nodes.
    pub from_peer: bool,
}

/// The node's listen fan-out.
pub struct Hub {
    ctx: RecordContext,
    tx: broadcast::Sender<Arc<Published>>,
    /// Live [`Subscription`]s: the cheap "is anyone listening" check.
    subscribers: Arc<AtomicUsize>,
    closed: watch::Sender<bool>,
}

impl Hub {
    pub fn new(ctx: RecordContext) -> Self {
        let (tx, _) = broadcast::channel(LISTEN_BUFFER_EVENTS);
        let (closed, _) = watch::channel(false);
        Self { ctx, tx, subscribers: Arc::new(AtomicUsize::new(0)), closed }
    }

    /// Whether anyone (a listener here, another node's relay) is subscribed.
    pub fn is_listened(&self) -> bool {
        self.subscribers.load(Ordering::Relaxed) > 0
    }

    /// Live subscriptions: this node's listeners' and other nodes' (a gauge's value).
    pub fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }

    /// Hands `event` to every subscription; builds its line only when someone listens.
    pub fn publish(&self, event: &Event) {
        if !self.is_listened() {
            return;
        }
        let mut line = event::listen_json(&self.ctx, event);
        line.push(b'\n');
        self.send(Published {
            name: event.name,
            bucket: event.bucket.clone(),
            key: event.key.clone(),
            line: Bytes::from(line),
            from_peer: false,
        });
    }

    /// Hands an event another node relayed (its `line` ends with its newline) to this node's
    /// subscriptions.
    pub fn publish_from_peer(&self, name: EventName, bucket: String, key: String, line: Bytes) {
        self.send(Published { name, bucket, key, line, from_peer: true });
    }

    fn send(&self, published: Published) {
        // No receiver left (the last one went since the check): nobody to tell.
        let _ = self.tx.send(Arc::new(published));
    }

    /// A subscription to every event published from now on.
    pub fn subscribe(&self) -> Subscription {
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        Subscription {
            rx: self.tx.subscribe(),
            closed: self.closed.subscribe(),
            subscribers: self.subscribers.clone(),
        }
    }

    /// Ends every subscription (server shutdown): their [`Subscription::next`] answers
    /// [`Next::Closed`], now and for any subscription made later.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}

/// What a subscription yields next.
#[derive(Debug)]
pub enum Next {
    Event(Arc<Published>),
    /// This many events were overwritten before this subscription read them.
    Lost(u64),
    /// The hub closed (shutdown).
    Closed,
}

/// A place in the hub's ring. Dropping it unsubscribes.
pub struct Subscription {
    rx: broadcast::Receiver<Arc<Published>>,
    closed: watch::Receiver<bool>,
    subscribers: Arc<AtomicUsize>,
}

impl Subscription {
    /// The next event, waiting for one.
    pub async fn next(&mut self) -> Next {
        if *self.closed.borrow() {
            return Next::Closed;
        }
        tokio::select! {
            received = self.rx.recv() => match received {
                Ok(p) => Next::Event(p),
                Err(broadcast::error::RecvError::Lagged(n)) => Next::Lost(n),
                Err(broadcast::error::RecvError::Closed) => Next::Closed,
            },
            _ = self.closed.wait_for(|c| *c) => Next::Closed,
        }
    }

    /// The next event if one is waiting.
    pub fn try_next(&mut self) -> Option<Next> {
        if *self.closed.borrow() {
            return Some(Next::Closed);
        }
        match self.rx.try_recv() {
            Ok(p) => Some(Next::Event(p)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Next::Lost(n)),
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
            Err(broadcast::error::TryRecvError::Empty) => None,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a listener's filter was refused (each is `InvalidArgument`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("A specified event is not supported for notifications: {0:?}")]
    UnknownEvent(String),
    #[error("The {0} of a filter rule is longer than {NOTIFICATION_FILTER_VALUE_SIZE_MAX} bytes")]
    ValueTooLong(&'static str),
}

/// What one listener wants: events of one bucket (or all), named by its patterns, on keys with
/// its prefix and suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    bucket: Option<String>,
    events: Vec<String>,
    prefix: String,
    suffix: String,
}

impl Filter {
    /// Checks every event name ([`event::is_listen_event`]) and the prefix and suffix lengths.
    pub fn new(
        bucket: Option<String>,
        events: Vec<String>,
        prefix: String,
        suffix: String,
    ) -> Result<Self, FilterError> {
        if let Some(bad) = events.iter().find(|e| !event::is_listen_event(e)) {
            return Err(FilterError::UnknownEvent(bad.clone()));
        }
        if prefix.len() > NOTIFICATION_FILTER_VALUE_SIZE_MAX {
            return Err(FilterError::ValueTooLong("prefix"));
        }
        if suffix.len() > NOTIFICATION_FILTER_VALUE_SIZE_MAX {
            return Err(FilterError::ValueTooLong("suffix"));
        }
        Ok(Self { bucket, events, prefix, suffix })
    }

    pub fn matches(&self, p: &Published) -> bool {
        self.bucket.as_ref().is_none_or(|b| *b == p.bucket)
            && p.key.starts_with(&self.prefix)
            && p.key.ends_with(&self.suffix)
            && self.events.iter().any(|e| p.name.matches(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> Hub {
        Hub::new(RecordContext { region: "us-east-1".into(), owner_id: "owner".into() })
    }

    fn event(name: EventName, bucket: &str, key: &str) -> Event {
        Event {
            name,
            bucket: bucket.into(),
            key: key.into(),
            size: Some(3),
            etag: Some("acbd18db4cc2f85cedef654fccc4a4d8".into()),
            version_id: None,
            principal: Some("AKIA".into()),
            source_ip: "127.0.0.1".into(),
            request_id: "REQ".into(),
            time_nanos: 1_700_000_000_000_000_000,
            sequencer: 7,
        }
    }

    #[test]
    fn nothing_is_built_or_kept_without_subscribers() {
        let hub = hub();
        assert!(!hub.is_listened());
        hub.publish(&event(EventName::ObjectCreatedPut, "b", "k"));
        let mut sub = hub.subscribe();
        assert!(hub.is_listened());
        assert!(sub.try_next().is_none(), "an event before the subscription is not seen");
        drop(sub);
        assert!(!hub.is_listened(), "dropping the subscription unsubscribes");
    }

    #[test]
    fn each_subscriber_gets_one_line_per_event() {
        let hub = hub();
        let (mut a, mut b) = (hub.subscribe(), hub.subscribe());
        hub.publish(&event(EventName::ObjectCreatedPut, "b", "dir/a b.txt"));
        for sub in [&mut a, &mut b] {
            let Some(Next::Event(p)) = sub.try_next() else { panic!("an event") };
            assert_eq!(
                (p.name, p.bucket.as_str(), p.key.as_str()),
                (EventName::ObjectCreatedPut, "b", "dir/a b.txt")
            );
            assert!(!p.from_peer);
            let text = std::str::from_utf8(&p.line).expect("UTF-8");
            assert_eq!(text.matches('\n').count(), 1, "one line");
            assert!(text.ends_with('\n'));
            let doc: serde_json::Value = serde_json::from_str(text).expect("JSON");
            let r = &doc["Records"][0];
            assert_eq!(r["eventName"], "s3:ObjectCreated:Put");
            assert_eq!(r["s3"]["object"]["key"], "dir%2Fa+b.txt");
            assert_eq!(r["s3"]["object"]["size"], 3);
            assert_eq!(r["source"]["host"], "127.0.0.1");
            assert!(sub.try_next().is_none());
        }
    }

    #[test]
    fn a_subscriber_that_falls_behind_loses_the_oldest_and_is_told() {
        let hub = hub();
        let mut sub = hub.subscribe();
        let extra = 5;
        for i in 0..LISTEN_BUFFER_EVENTS + extra {
            hub.publish(&event(EventName::ObjectCreatedPut, "b", &format!("k{i}")));
        }
        let Some(Next::Lost(n)) = sub.try_next() else { panic!("told it lost events") };
        assert_eq!(n, extra as u64);
        let Some(Next::Event(p)) = sub.try_next() else { panic!("then the oldest kept") };
        assert_eq!(p.key, format!("k{extra}"));
    }

    #[tokio::test]
    async fn closing_ends_waiting_and_later_subscriptions() {
        let hub = Arc::new(hub());
        let mut sub = hub.subscribe();
        let waiting = tokio::spawn(async move { matches!(sub.next().await, Next::Closed) });
        tokio::task::yield_now().await;
        hub.close();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await;
        assert!(matches!(ended, Ok(Ok(true))), "a waiting subscription ends");
        let mut late = hub.subscribe();
        assert!(matches!(late.next().await, Next::Closed));
        assert!(matches!(late.try_next(), Some(Next::Closed)));
    }

    #[test]
    fn filters_check_names_and_match_bucket_prefix_suffix_and_patterns() {
        let f = |bucket: Option<&str>, events: &[&str], prefix: &str, suffix: &str| {
            Filter::new(
                bucket.map(str::to_owned),
                events.iter().map(|e| (*e).to_owned()).collect(),
                prefix.into(),
                suffix.into(),
            )
        };
        let hub = hub();
        let mut sub = hub.subscribe();
        let mut published = |name, bucket, key| {
            hub.publish(&event(name, bucket, key));
            match sub.try_next() {
                Some(Next::Event(p)) => p,
                other => panic!("an event, got {other:?}"),
            }
        };
        let put = published(EventName::ObjectCreatedPut, "b", "photos/a.jpg");
        let other_bucket = published(EventName::ObjectCreatedPut, "c", "photos/a.jpg");
        let delete = published(EventName::ObjectRemovedDelete, "b", "photos/a.jpg");
        let png = published(EventName::ObjectCreatedPut, "b", "photos/a.png");
        let outside = published(EventName::ObjectCreatedPut, "b", "docs/a.jpg");

        let wanted = f(Some("b"), &["s3:ObjectCreated:*"], "photos/", ".jpg").expect("valid");
        assert!(wanted.matches(&put));
        for p in [&other_bucket, &delete, &png, &outside] {
            assert!(!wanted.matches(p), "{p:?}");
        }
        let everywhere = f(None, &["s3:ObjectCreated:Put", "s3:ObjectRemoved:*"], "", "").expect("valid");
        for p in [&put, &other_bucket, &delete, &png, &outside] {
            assert!(everywhere.matches(p), "{p:?}");
        }
        // MinIO's names are accepted and match nothing Strata emits.
        let reads = f(Some("b"), &["s3:ObjectAccessed:*", "s3:Replication:*"], "", "").expect("valid");
        assert!(!reads.matches(&put));

        assert_eq!(
            f(None, &["s3:ObjectCreated:Patch"], "", ""),
            Err(FilterError::UnknownEvent("s3:ObjectCreated:Patch".into()))
        );
        assert_eq!(f(None, &[""], "", ""), Err(FilterError::UnknownEvent(String::new())));
        assert_eq!(f(None, &["s3:*"], "", ""), Err(FilterError::UnknownEvent("s3:*".into())));
        let long = "p".repeat(NOTIFICATION_FILTER_VALUE_SIZE_MAX + 1);
        assert_eq!(f(None, &["s3:ObjectCreated:*"], &long, ""), Err(FilterError::ValueTooLong("prefix")));
        assert_eq!(f(None, &["s3:ObjectCreated:*"], "", &long), Err(FilterError::ValueTooLong("suffix")));
        let longest = "p".repeat(NOTIFICATION_FILTER_VALUE_SIZE_MAX);
        assert!(f(None, &["s3:ObjectCreated:*"], &longest, &longest).is_ok());
    }
}
