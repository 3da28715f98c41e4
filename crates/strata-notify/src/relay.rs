//! Listening across nodes: a listener connected to one node sees the events of requests every
//! node served.
//!
//! Node RPC answers whole requests, so events travel by long poll. While a node has listeners it
//! runs one [`Relay`]: a task that polls every other node ([`ListenPeers::poll`]: a [`Poll`] in,
//! a [`Batch`] out; the RPC layer carries them) and publishes what they answer into its own hub,
//! marked as relayed. The polled node keeps a [`Parked`] subscription per polling node, named by the
//! relay's random id: a poll drains what that subscription gathered since the last one, or
//! waits up to [`LISTEN_PEER_POLL_WAIT`] for something, and relayed events are never passed on
//! again (no loops, no duplicates). When its last listener leaves, a node stops its relay and
//! tells the others to drop its subscription; one not polled for [`LISTEN_PEER_IDLE_MAX`] is
//! dropped anyway (its node died, or the word was lost), so it stops costing anything. A poll the
//! stopped relay had already sent can reach a node after that word (it travels on another
//! connection), so a node remembers the ids it dropped for [`LISTEN_PEER_IDLE_MAX`] and does not
//! subscribe them again.
//!
//! Each node's events arrive in its order; events of different nodes interleave as the polls
//! bring them. Events a slow poller missed come back as a count (`lost`), added to the
//! listening node's `strata_listen_events_dropped_total`; events of a node that was unreachable
//! are not replayed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use strata_metrics::Metrics;
use strata_types::limits::{
    LISTEN_PEER_BATCH_EVENTS, LISTEN_PEER_IDLE_MAX, LISTEN_PEER_POLL_WAIT, LISTEN_PEER_RETRY_MAX,
    LISTEN_PEER_RETRY_MIN, LISTEN_PEER_SUBSCRIPTIONS_MAX, RPC_TIMEOUT,
};
use tokio::sync::watch;

use crate::listen::{Hub, Next, Subscription};
use crate::EventName;
use strata_types::limits::LISTEN_SUBSCRIPTION_ID_LEN_MAX;

/// The other nodes of the deployment, as the relay reaches them (the RPC layer implements it).
#[async_trait]
pub trait ListenPeers: Send + Sync {
    /// How many other nodes there are (numbered from 0 for [`ListenPeers::poll`]).
    fn peer_count(&self) -> usize;

    /// Sends `poll` to node `peer`, answered by its [`crate::listening::Listening::serve_poll`];
    /// the answer within `timeout`.
    async fn poll(&self, peer: usize, poll: Poll, timeout: Duration) -> Result<Batch, PollError>;
}

/// Why a poll got no batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum PollError {
    /// The subscription id is empty or longer than [`LISTEN_SUBSCRIPTION_ID_LEN_MAX`].
    #[error("a subscription id has 1 to {LISTEN_SUBSCRIPTION_ID_LEN_MAX} characters")]
    BadSubscription,
    /// The polled node keeps [`LISTEN_PEER_SUBSCRIPTIONS_MAX`] subscriptions at most.
    #[error("the node keeps {LISTEN_PEER_SUBSCRIPTIONS_MAX} subscriptions at most")]
    TooManySubscriptions,
    /// Another poll of the same subscription is being answered.
    #[error("subscription {0} is being polled already")]
    Busy(String),
    /// The poll did not reach the node, or its answer did not come back (the transport's own
    /// error, as text).
    #[error("the node did not answer the poll: {0}")]
    Unanswered(String),
}

/// One poll of a node's events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poll {
    /// The polling relay's id (its subscription on the polled node).
    pub subscription: String,
    /// Longest wait for an event when none is ready (at most [`LISTEN_PEER_POLL_WAIT`]); 0
    /// subscribes and answers at once.
    pub wait_ms: u64,
    /// The relay stopped: drop the subscription (answered with an empty batch).
    #[serde(default)]
    pub close: bool,
}

/// What a poll answers: the polled node's own events since the last poll.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub events: Vec<RemoteEvent>,
    /// Events the subscription lost (it fell more than the hub's buffer behind).
    pub lost: u64,
}

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteEvent {
    /// `s3:ObjectCreated:Put`.
    pub name: String,
    pub bucket: String,
    pub key: String,
    /// The listen document, without its newline.
    pub line: String,
}

/// A node's relay of the other nodes' events (see the module documentation).
pub(crate) struct Relay {
    task: tokio::task::JoinHandle<()>,
    ready: watch::Receiver<bool>,
    peers: Arc<dyn ListenPeers>,
    subscription: String,
}

impl Relay {
    /// Starts polling every node of `peers` into `hub`.
    pub(crate) fn start(peers: Arc<dyn ListenPeers>, hub: Arc<Hub>, metrics: Arc<Metrics>) -> Self {
        let (ready_tx, ready) = watch::channel(false);
        let subscription = uuid::Uuid::new_v4().to_string();
        let (polled, id) = (peers.clone(), subscription.clone());
        let task = tokio::spawn(async move {
            let (nodes, subscription) = (polled, id);
            let peers = 0..nodes.peer_count();
            let relay =
                Polling { nodes: nodes.as_ref(), subscription: &subscription, hub: &hub, metrics: &metrics };
            // Subscribe on every node first (a poll that does not wait), then let listeners in.
            join_all(peers.clone().map(|peer| relay.poll(peer, Duration::ZERO))).await;
            let _ = ready_tx.send(true);
            join_all(peers.map(|peer| relay.keep_polling(peer))).await;
        });
        Self { task, ready, peers, subscription }
    }

    /// Becomes `true` once every node answered (or failed) the first poll.
    pub(crate) fn ready(&self) -> watch::Receiver<bool> {
        self.ready.clone()
    }

    /// Stops polling, and tells every node to drop this relay's subscription (a task that ends
    /// within one RPC time-out; a node it misses drops it once idle).
    pub(crate) fn stop(self) {
        self.task.abort();
        let close = Poll { subscription: self.subscription, wait_ms: 0, close: true };
        let nodes = self.peers;
        tokio::spawn(async move {
            let peers = 0..nodes.peer_count();
            join_all(peers.map(|peer| nodes.poll(peer, close.clone(), RPC_TIMEOUT))).await;
        });
    }
}

struct Polling<'a> {
    nodes: &'a dyn ListenPeers,
    subscription: &'a str,
    hub: &'a Hub,
    metrics: &'a Metrics,
}

impl Polling<'_> {
    /// One poll of node `peer`; its events published here.
    async fn poll(&self, peer: usize, wait: Duration) -> Result<(), PollError> {
        let poll = Poll {
            subscription: self.subscription.to_owned(),
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            close: false,
        };
        let batch = self.nodes.poll(peer, poll, wait + RPC_TIMEOUT).await?;
        deliver(self.hub, self.metrics, batch);
        Ok(())
    }

    /// Polls node `peer` until the relay stops; after a failure, again after a growing pause.
    async fn keep_polling(&self, peer: usize) {
        let mut pause = LISTEN_PEER_RETRY_MIN;
        loop {
            match self.poll(peer, LISTEN_PEER_POLL_WAIT).await {
                Ok(()) => pause = LISTEN_PEER_RETRY_MIN,
                Err(e) => {
                    tracing::debug!(peer, error = %e, "listen poll failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LISTEN_PEER_RETRY_MAX);
                }
            }
        }
    }
}

/// Publishes a node's batch into this node's hub. A line holding a newline would break the
/// stream's framing and is dropped, as is an event name this node does not know.
fn deliver(hub: &Hub, metrics: &Metrics, batch: Batch) {
    metrics.listen_events_dropped.inc_by(batch.lost);
    for e in batch.events {
        let Some(name) = EventName::parse(&e.name) else { continue };
        if e.line.contains('\n') {
            continue;
        }
        let mut line = e.line.into_bytes();
        line.push(b'\n');
        hub.publish_from_peer(name, e.bucket, e.key, Bytes::from(line));
    }
}

/// Other nodes' subscriptions to this node's events, by relay id.
#[derive(Default)]
pub(crate) struct Parked {
    state: Mutex<ParkedState>,
}

#[derive(Default)]
struct ParkedState {
    subscriptions: HashMap<String, ParkedSubscription>,
    /// Subscriptions closed by their relay in the last [`LISTEN_PEER_IDLE_MAX`], oldest first
    /// (at most [`LISTEN_PEER_SUBSCRIPTIONS_MAX`]): a late poll of one is not subscribed again.
    closed: VecDeque<(Instant, String)>,
    /// A task drops idle subscriptions while there are any.
    sweeping: bool,
}

impl ParkedState {
    /// Drops subscription `id` for good: its relay stopped.
    fn close(&mut self, id: String) {
        self.subscriptions.remove(&id);
        self.forget_closed();
        if self.closed.len() >= LISTEN_PEER_SUBSCRIPTIONS_MAX {
            self.closed.pop_front();
        }
        self.closed.push_back((Instant::now(), id));
    }

    /// Whether the relay of `id` stopped lately.
    fn was_closed(&mut self, id: &str) -> bool {
        self.forget_closed();
        self.closed.iter().any(|(_, closed)| closed == id)
    }

    fn forget_closed(&mut self) {
        while self.closed.front().is_some_and(|(at, _)| at.elapsed() >= LISTEN_PEER_IDLE_MAX) {
            self.closed.pop_front();
        }
    }
}

struct ParkedSubscription {
    /// Locked by the poll reading it (one at a time).
    subscription: Arc<tokio::sync::Mutex<Subscription>>,
    last_poll: Instant,
}

impl Parked {
    fn lock(&self) -> MutexGuard<'_, ParkedState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers one poll: the subscription `poll` names (made now if this node does not know
    /// it) drained, or waited on up to the poll's wait.
    pub(crate) async fn serve(
        self: &Arc<Self>,
        hub: &Hub,
        metrics: &Arc<Metrics>,
        poll: Poll,
    ) -> Result<Batch, PollError> {
        let id = poll.subscription;
        if id.is_empty() || id.len() > LISTEN_SUBSCRIPTION_ID_LEN_MAX {
            return Err(PollError::BadSubscription);
        }
        if poll.close {
            let mut state = self.lock();
            state.close(id);
            metrics.listen_peer_subscriptions.set(gauge(state.subscriptions.len()));
            return Ok(Batch::default());
        }
        let wait = Duration::from_millis(poll.wait_ms).min(LISTEN_PEER_POLL_WAIT);
        let Some(shared) = self.check_in(hub, metrics, &id)? else {
            return Ok(Batch::default()); // the relay stopped; nobody reads this answer
        };
        let Ok(mut subscription) = shared.try_lock_owned() else {
            return Err(PollError::Busy(id));
        };
        let batch = collect(&mut subscription, wait).await;
        drop(subscription);
        if let Some(p) = self.lock().subscriptions.get_mut(&id) {
            p.last_poll = Instant::now();
        }
        Ok(batch)
    }

    /// The subscription `id`, made if new (at most [`LISTEN_PEER_SUBSCRIPTIONS_MAX`]); `None`
    /// when its relay closed it lately.
    fn check_in(
        self: &Arc<Self>,
        hub: &Hub,
        metrics: &Arc<Metrics>,
        id: &str,
    ) -> Result<Option<Arc<tokio::sync::Mutex<Subscription>>>, PollError> {
        let mut state = self.lock();
        if !state.subscriptions.contains_key(id) {
            if state.was_closed(id) {
                return Ok(None);
            }
            if state.subscriptions.len() >= LISTEN_PEER_SUBSCRIPTIONS_MAX {
                return Err(PollError::TooManySubscriptions);
            }
        }
        let parked = state.subscriptions.entry(id.to_owned()).or_insert_with(|| ParkedSubscription {
            subscription: Arc::new(tokio::sync::Mutex::new(hub.subscribe())),
            last_poll: Instant::now(),
        });
        parked.last_poll = Instant::now();
        let shared = parked.subscription.clone();
        metrics.listen_peer_subscriptions.set(gauge(state.subscriptions.len()));
        if !state.sweeping {
            state.sweeping = true;
            tokio::spawn(sweep(self.clone(), metrics.clone()));
        }
        Ok(Some(shared))
    }

    /// Drops the subscriptions not polled for [`LISTEN_PEER_IDLE_MAX`] (and not being polled);
    /// `true` when none is left.
    fn sweep_idle(&self, metrics: &Metrics) -> bool {
        let mut state = self.lock();
        state.subscriptions.retain(|_, p| {
            Arc::strong_count(&p.subscription) > 1 || p.last_poll.elapsed() < LISTEN_PEER_IDLE_MAX
        });
        metrics.listen_peer_subscriptions.set(gauge(state.subscriptions.len()));
        if state.subscriptions.is_empty() {
            state.sweeping = false;
            return true;
        }
        false
    }
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Runs while subscriptions are parked, dropping idle ones.
async fn sweep(parked: Arc<Parked>, metrics: Arc<Metrics>) {
    loop {
        tokio::time::sleep(LISTEN_PEER_IDLE_MAX / 2).await;
        if parked.sweep_idle(&metrics) {
            return;
        }
    }
}

/// This node's own events from `subscription`: those ready now, else the first to come within
/// `wait` and those ready with it; at most [`LISTEN_PEER_BATCH_EVENTS`].
async fn collect(subscription: &mut Subscription, wait: Duration) -> Batch {
    let mut batch = Batch::default();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        while batch.events.len() < LISTEN_PEER_BATCH_EVENTS {
            match subscription.try_next() {
                Some(next) => {
                    if !take(&mut batch, next) {
                        return batch;
                    }
                }
                None => break,
            }
        }
        if !batch.events.is_empty() || batch.lost > 0 || wait.is_zero() {
            return batch;
        }
        match tokio::time::timeout_at(deadline, subscription.next()).await {
            Ok(next) => {
                if !take(&mut batch, next) {
                    return batch;
                }
            }
            Err(_) => return batch,
        }
    }
}

/// Adds `next` to `batch` (an event relayed from another node is not passed on); `false` once
/// the hub closed.
fn take(batch: &mut Batch, next: Next) -> bool {
    match next {
        Next::Event(p) if !p.from_peer => {
            let line = p.line.strip_suffix(b"\n").unwrap_or(&p.line);
            batch.events.push(RemoteEvent {
                name: p.name.as_str().to_owned(),
                bucket: p.bucket.clone(),
                key: p.key.clone(),
                line: String::from_utf8_lossy(line).into_owned(),
            });
        }
        Next::Event(_) => {}
        Next::Lost(n) => batch.lost += n,
        Next::Closed => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, RecordContext};

    fn hub() -> Hub {
        Hub::new(RecordContext { region: "us-east-1".into(), owner_id: "o".into() })
    }

    fn event(key: &str) -> Event {
        Event {
            name: EventName::ObjectRemovedDelete,
            bucket: "b".into(),
            key: key.into(),
            size: None,
            etag: None,
            version_id: None,
            principal: None,
            source_ip: String::new(),
            request_id: String::new(),
            time_nanos: 1_700_000_000_000_000_000,
            sequencer: 1,
        }
    }

    fn poll(id: &str, wait_ms: u64) -> Poll {
        Poll { subscription: id.into(), wait_ms, close: false }
    }

    #[tokio::test]
    async fn a_poll_subscribes_then_drains_own_events_only() {
        let (hub, parked, metrics) = (hub(), Arc::new(Parked::default()), Arc::new(Metrics::new()));
        let first = parked.serve(&hub, &metrics, poll("r1", 0)).await.expect("subscribed");
        assert_eq!(first, Batch::default());
        assert_eq!(metrics.listen_peer_subscriptions.get(), 1);
        hub.publish(&event("mine"));
        hub.publish_from_peer(
            EventName::ObjectCreatedPut,
            "b".into(),
            "relayed".into(),
            Bytes::from_static(b"{}\n"),
        );
        let batch = parked.serve(&hub, &metrics, poll("r1", 0)).await.expect("answered");
        assert_eq!(batch.events.len(), 1, "a relayed event is not relayed again");
        let e = &batch.events[0];
        assert_eq!(
            (e.name.as_str(), e.bucket.as_str(), e.key.as_str()),
            ("s3:ObjectRemoved:Delete", "b", "mine")
        );
        assert!(!e.line.contains('\n'));
        let doc: serde_json::Value = serde_json::from_str(&e.line).expect("JSON");
        assert_eq!(doc["Records"][0]["s3"]["object"]["key"], "mine");

        // What the poller does with it: published here as relayed, with its newline back.
        let there = self::hub();
        let mut listener = there.subscribe();
        deliver(&there, &metrics, Batch { events: batch.events, lost: 3 });
        let Some(Next::Event(p)) = listener.try_next() else { panic!("published") };
        assert!(p.from_peer && p.line.ends_with(b"\n") && p.key == "mine");
        assert_eq!(metrics.listen_events_dropped.get(), 3, "lost events are counted where they were missed");
    }

    #[tokio::test]
    async fn a_poll_waits_for_the_next_event_or_its_time() {
        let (hub, parked, metrics) = (Arc::new(hub()), Arc::new(Parked::default()), Arc::new(Metrics::new()));
        parked.serve(&hub, &metrics, poll("r1", 0)).await.expect("subscribed");
        let started = Instant::now();
        let empty = parked.serve(&hub, &metrics, poll("r1", 50)).await.expect("answered");
        assert!(empty.events.is_empty() && started.elapsed() >= Duration::from_millis(50));
        let waiting = {
            let (hub, parked, metrics) = (hub.clone(), parked.clone(), metrics.clone());
            tokio::spawn(async move { parked.serve(&hub, &metrics, poll("r1", 60_000)).await })
        };
        // The poll is waiting: a second poll of the same subscription is refused meanwhile.
        let mut refused = false;
        for _ in 0..1000 {
            if parked.serve(&hub, &metrics, poll("r1", 0)).await.is_err() {
                refused = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(refused, "one poll at a time per subscription");
        hub.publish(&event("k"));
        let batch = waiting.await.expect("joined").expect("answered");
        assert_eq!(batch.events.len(), 1, "the waiting poll answers with the event");
    }

    #[tokio::test]
    async fn bad_polls_are_refused_and_idle_subscriptions_dropped() {
        let (hub, parked, metrics) = (hub(), Arc::new(Parked::default()), Arc::new(Metrics::new()));
        assert!(parked.serve(&hub, &metrics, poll("", 0)).await.is_err());
        assert!(parked.serve(&hub, &metrics, poll(&"x".repeat(65), 0)).await.is_err());
        for i in 0..LISTEN_PEER_SUBSCRIPTIONS_MAX {
            parked.serve(&hub, &metrics, poll(&format!("r{i}"), 0)).await.expect("subscribed");
        }
        assert!(parked.serve(&hub, &metrics, poll("one-too-many", 0)).await.is_err());
        let close = Poll { close: true, ..poll("r0", 0) };
        assert_eq!(parked.serve(&hub, &metrics, close).await, Ok(Batch::default()));
        assert_eq!(metrics.listen_peer_subscriptions.get(), gauge(LISTEN_PEER_SUBSCRIPTIONS_MAX - 1));
        // A poll the stopped relay sent before its close, arriving after it: not subscribed again.
        assert_eq!(parked.serve(&hub, &metrics, poll("r0", 10_000)).await, Ok(Batch::default()));
        assert_eq!(metrics.listen_peer_subscriptions.get(), gauge(LISTEN_PEER_SUBSCRIPTIONS_MAX - 1));
        parked.serve(&hub, &metrics, poll("one-more", 0)).await.expect("room again");
        assert!(hub.is_listened());
        for p in parked.lock().subscriptions.values_mut() {
            p.last_poll = Instant::now() - LISTEN_PEER_IDLE_MAX;
        }
        assert!(parked.sweep_idle(&metrics), "every subscription was idle");
        assert!(!hub.is_listened(), "this node stops building events for them");
        assert_eq!(metrics.listen_peer_subscriptions.get(), 0);
    }
}
