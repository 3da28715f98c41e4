//! A node's listeners (MinIO's listen API, `mc watch`): the [`Hub`] every event of this node goes
//! through, how many listen streams are open, and, over several nodes, the [`Relay`] that brings
//! the other nodes' events while anyone listens here and the subscriptions other nodes keep here
//! ([`Parked`]). The first listener starts the relay, the last one to leave stops it; at shutdown
//! [`Listening::shutdown`] ends every stream cleanly. The S3 layer serves the streams themselves.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use strata_metrics::Metrics;
use strata_types::limits::{LISTEN_CLIENTS_MAX, LISTEN_PEER_SUBSCRIBE_TIMEOUT, LISTEN_SHUTDOWN_WAIT};
use tokio::sync::Notify;

use crate::listen::{Hub, Subscription};
use crate::relay::{Batch, ListenPeers, Parked, Poll, PollError, Relay};
use crate::RecordContext;

/// Past [`LISTEN_CLIENTS_MAX`] listen streams on one node, another is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many listeners on this server")]
pub struct TooManyListeners;

/// The node's listeners: the fan-out, who listens here, and other nodes' subscriptions.
pub struct Listening {
    hub: Arc<Hub>,
    listeners: Arc<Listeners>,
    parked: Arc<Parked>,
    metrics: Arc<Metrics>,
    /// The other nodes (distributed mode), set once at start-up.
    peers: OnceLock<Arc<dyn ListenPeers>>,
}

struct Listeners {
    state: Mutex<ListenersState>,
    /// Told when the last listener left.
    gone: Notify,
}

#[derive(Default)]
struct ListenersState {
    count: usize,
    /// Polls the other nodes while anyone listens here.
    relay: Option<Relay>,
}

impl Listeners {
    fn lock(&self) -> MutexGuard<'_, ListenersState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One listener, held by its response body: counted while the stream lasts.
pub struct Listener {
    listeners: Arc<Listeners>,
    metrics: Arc<Metrics>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.metrics.listen_clients.dec();
        let (last, relay) = {
            let mut state = self.listeners.lock();
            state.count = state.count.saturating_sub(1);
            let last = state.count == 0;
            (last, if last { state.relay.take() } else { None })
        };
        if let Some(relay) = relay {
            relay.stop();
        }
        if last {
            self.listeners.gone.notify_waiters();
        }
    }
}

impl Listening {
    pub fn new(ctx: RecordContext, metrics: Arc<Metrics>) -> Self {
        Self {
            hub: Arc::new(Hub::new(ctx)),
            listeners: Arc::new(Listeners { state: Mutex::default(), gone: Notify::new() }),
            parked: Arc::new(Parked::default()),
            metrics,
            peers: OnceLock::new(),
        }
    }

    /// The other nodes of the deployment, whose events listeners here receive too.
    pub fn set_peers(&self, peers: Arc<dyn ListenPeers>) {
        let _ = self.peers.set(peers);
    }

    /// Answers another node's poll of this node's events (see [`crate::relay`]).
    pub async fn serve_poll(&self, poll: Poll) -> Result<Batch, PollError> {
        self.parked.serve(&self.hub, &self.metrics, poll).await
    }

    /// The fan-out every event of this node goes through.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Listen streams open on this node.
    pub fn listener_count(&self) -> usize {
        self.listeners.lock().count
    }

    /// Ends every listen stream (their last chunk sent) without waiting for them to go.
    pub fn close(&self) {
        self.hub.close();
    }

    /// Ends every listen stream (their last chunk sent) and waits, at most
    /// [`LISTEN_SHUTDOWN_WAIT`], until they are gone. For server shutdown.
    pub async fn shutdown(&self) {
        self.hub.close();
        let gone = async {
            loop {
                let notified = self.listeners.gone.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.listener_count() == 0 {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(LISTEN_SHUTDOWN_WAIT, gone).await.is_err() {
            tracing::debug!(listeners = self.listener_count(), "listen streams still open at shutdown");
        }
    }

    /// Admits one more listener (past [`LISTEN_CLIENTS_MAX`]: `SlowDown`) and subscribes it to
    /// this node's events, then (over several nodes) to the other nodes', waiting at most
    /// [`LISTEN_PEER_SUBSCRIBE_TIMEOUT`] for them.
    pub async fn attach(&self) -> Result<(Subscription, Listener), TooManyListeners> {
        // Subscribed before it counts as a listener: once the count shows it, no event is missed.
        let subscription = self.hub.subscribe();
        let (listener, ready) = {
            let mut state = self.listeners.lock();
            if state.count >= LISTEN_CLIENTS_MAX {
                return Err(TooManyListeners);
            }
            state.count += 1;
            self.metrics.listen_clients.inc();
            let listener = Listener { listeners: self.listeners.clone(), metrics: self.metrics.clone() };
            if state.relay.is_none() {
                let peers = self.peers.get().cloned().filter(|p| p.peer_count() > 0);
                state.relay = peers.map(|p| Relay::start(p, self.hub.clone(), self.metrics.clone()));
            }
            (listener, state.relay.as_ref().map(Relay::ready))
        };
        if let Some(mut ready) = ready {
            let subscribed = tokio::time::timeout(LISTEN_PEER_SUBSCRIBE_TIMEOUT, ready.wait_for(|r| *r));
            if subscribed.await.is_err() {
                tracing::debug!(
                    "a node did not subscribe this listener in time; its events come once it answers"
                );
            }
        }
        Ok((subscription, listener))
    }
}
