//! Request traces for whoever watches them live (MinIO's `mc admin trace`): each answered S3
//! request, as the front door saw it, handed to every watcher. Nothing is built or sent while
//! no one watches ([`TraceHub::wanted`] is one atomic load), so requests pay nothing then.
//!
//! A watcher that falls behind loses the oldest entries (a bounded queue) rather than slowing
//! requests; the hub is closed at a stop, so watchers' streams end and the drain of requests in
//! flight does not wait for them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata_types::limits::TRACE_QUEUE_ENTRIES;
use tokio::sync::{broadcast, watch};

/// One answered request.
#[derive(Debug, Clone)]
pub struct TraceEntry {
    /// The operation (`PutObject`).
    pub api: String,
    /// When the request arrived, Unix nanoseconds.
    pub time: u64,
    pub method: String,
    pub path: String,
    pub query: String,
    /// Request headers, credentials hidden.
    pub headers: Vec<(String, String)>,
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    /// Until the answer's headers were ready.
    pub duration: Duration,
    /// Body bytes the request declared, and the answer's.
    pub input_bytes: u64,
    pub output_bytes: u64,
}

/// Headers whose values a trace never shows.
const HIDDEN: [&str; 3] =
    ["authorization", "x-amz-security-token", "x-amz-server-side-encryption-customer-key"];

/// A request header's value as a trace shows it.
pub fn shown(name: &str, value: &str) -> String {
    if HIDDEN.iter().any(|h| name.eq_ignore_ascii_case(h)) {
        "*REDACTED*".to_owned()
    } else {
        value.to_owned()
    }
}

/// The watchers of this node's requests.
#[derive(Debug)]
pub struct TraceHub {
    tx: broadcast::Sender<Arc<TraceEntry>>,
    closed: watch::Sender<bool>,
    /// Watchers now (the channel's own count takes a lock; every request reads this).
    watchers: Arc<AtomicUsize>,
}

impl Default for TraceHub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(TRACE_QUEUE_ENTRIES).0,
            closed: watch::channel(false).0,
            watchers: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// One watcher: the entries from its start on, and word of the hub's close. It stops counting
/// as a watcher when dropped.
pub struct Watcher {
    pub entries: broadcast::Receiver<Arc<TraceEntry>>,
    pub closed: watch::Receiver<bool>,
    watchers: Arc<AtomicUsize>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.watchers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl TraceHub {
    /// Whether anyone watches (build no entry otherwise): one atomic load.
    pub fn wanted(&self) -> bool {
        self.watchers.load(Ordering::Relaxed) > 0
    }

    pub fn publish(&self, entry: TraceEntry) {
        let _ = self.tx.send(Arc::new(entry));
    }

    /// A new watcher.
    pub fn watch(&self) -> Watcher {
        self.watchers.fetch_add(1, Ordering::Relaxed);
        Watcher {
            entries: self.tx.subscribe(),
            closed: self.closed.subscribe(),
            watchers: self.watchers.clone(),
        }
    }

    /// Ends every watcher's stream (the server is stopping).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: u16) -> TraceEntry {
        TraceEntry {
            api: "GetObject".into(),
            time: 0,
            method: "GET".into(),
            path: "/b/k".into(),
            query: String::new(),
            headers: vec![],
            status,
            response_headers: vec![],
            duration: Duration::ZERO,
            input_bytes: 0,
            output_bytes: 0,
        }
    }

    #[tokio::test]
    async fn watchers_are_counted_and_hear_what_is_published_after_they_came() {
        let hub = TraceHub::default();
        assert!(!hub.wanted());
        hub.publish(entry(200)); // no one hears it
        let mut a = hub.watch();
        let b = hub.watch();
        assert!(hub.wanted());
        hub.publish(entry(404));
        assert_eq!(a.entries.recv().await.expect("an entry").status, 404);
        drop(b);
        assert!(hub.wanted());
        hub.close();
        a.closed.changed().await.expect("told");
        assert!(*a.closed.borrow());
        drop(a);
        assert!(!hub.wanted());
        assert_eq!(shown("Authorization", "AWS4 secret"), "*REDACTED*");
        assert_eq!(shown("x-amz-date", "20261127T000000Z"), "20261127T000000Z");
    }
}
